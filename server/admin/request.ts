/**
 * Request parsing and response helpers shared by the admin handlers (docs/admin-api.md
 * "Conventions"): strict JSON bodies, typed field readers, cursor pagination and the mapping of
 * op errors onto the catalogue's HTTP statuses.
 */
import type { HttpContext } from "../http/types.ts";
import { HttpError } from "../http/router.ts";
import { charCount, type ErrorCode, errorInfo, isErrorCode } from "../protocol/mod.ts";
import { OpError } from "../store/op_error.ts";

/** JSON request bodies are at most 64 KiB. */
export const JSON_BODY_LIMIT = 64 * 1024;
/** spec 6.4 and the admin lists: at most 200 rows a page. */
export const MAX_PAGE = 200;
/** The page size when `limit` is absent. */
export const DEFAULT_PAGE = 50;

/** A JSON object body. */
export type JsonObject = Record<string, unknown>;

/** The HTTP status of a catalogue code, as every NixMsg HTTP API renders it. */
export function statusOf(code: ErrorCode): number {
  return errorInfo(code).status;
}

/** An {@linkcode HttpError} for a catalogue code, with its default or a given message. */
export function httpFail(code: ErrorCode, message?: string): HttpError {
  return new HttpError(statusOf(code), code, message ?? errorInfo(code).message);
}

/** A 400 `bad_request` with `message`. */
export function bad(message: string): HttpError {
  return httpFail("bad_request", message);
}

/**
 * Maps an op failure onto an {@linkcode HttpError}: an {@linkcode OpError} with a catalogue code
 * keeps it, with `messages[code]` when given. Anything else is rethrown (the router answers it
 * as `busy` and logs it).
 */
export function opFailure(err: unknown, messages: Partial<Record<ErrorCode, string>> = {}): never {
  if (err instanceof OpError && isErrorCode(err.code)) throw httpFail(err.code, messages[err.code]);
  throw err;
}

/** Sends `{"ok":true,"data":…}` with status 200. */
export function ok(ctx: HttpContext, data: unknown): void {
  ctx.json(200, { ok: true, data });
}

/**
 * Reads the body as a JSON object. An empty body is `{}`. Anything but an object, and any key not
 * in `allowed`, is `bad_request` (docs: unknown fields are refused).
 */
export async function readJson(ctx: HttpContext, allowed: readonly string[]): Promise<JsonObject> {
  const raw = await ctx.body(JSON_BODY_LIMIT);
  if (raw.byteLength === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(raw));
  } catch {
    throw bad("请求体不是合法的 JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw bad("请求体必须是 JSON 对象");
  }
  const o = value as JsonObject;
  for (const key of Object.keys(o)) {
    if (!allowed.includes(key)) throw bad(`不认识的字段：${key}`);
  }
  return o;
}

/** Requires at least one of `keys` to be present. */
export function requireSome(o: JsonObject, keys: readonly string[]): void {
  if (!keys.some((k) => o[k] !== undefined)) throw bad(`至少需要一个字段：${keys.join("、")}`);
}

/** Length bounds of a string field, in characters. */
export interface StringRule {
  min?: number;
  max: number;
}

/** A string field, or undefined when absent. Wrong type or length is `bad_request`. */
export function optString(o: JsonObject, key: string, rule: StringRule): string | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw bad(`字段不合法：${key} 必须是字符串`);
  const n = charCount(v);
  const min = rule.min ?? 0;
  if (n < min || n > rule.max) {
    throw bad(
      min === 0
        ? `字段不合法：${key} 最多 ${rule.max} 个字符`
        : `字段不合法：${key} 需要 ${min} 到 ${rule.max} 个字符`,
    );
  }
  return v;
}

/** A required string field. */
export function reqString(o: JsonObject, key: string, rule: StringRule): string {
  const v = optString(o, key, rule);
  if (v === undefined) throw bad(`缺少字段：${key}`);
  return v;
}

/** A boolean field, or undefined when absent. */
export function optBool(o: JsonObject, key: string): boolean | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== "boolean") throw bad(`字段不合法：${key} 必须是 true 或 false`);
  return v;
}

/** An integer field within [min, max], or undefined when absent. */
export function optInt(o: JsonObject, key: string, min: number, max: number): number | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max) {
    throw bad(`字段不合法：${key} 必须是 ${min} 到 ${max} 的整数`);
  }
  return v;
}

/** A list of distinct strings with 1..max items, each checked by `valid`. */
export function reqIdList(
  o: JsonObject,
  key: string,
  max: number,
  valid: (id: string) => boolean,
): string[] {
  const v = o[key];
  if (!Array.isArray(v) || v.length === 0 || v.length > max) {
    throw bad(`字段不合法：${key} 必须是 1 到 ${max} 个编号的数组`);
  }
  const seen = new Set<string>();
  for (const id of v) {
    if (typeof id !== "string" || !valid(id)) throw bad(`字段不合法：${key} 含无效编号`);
    if (seen.has(id)) throw bad(`字段不合法：${key} 含重复编号 ${id}`);
    seen.add(id);
  }
  return [...seen];
}

/** `cursor` and `limit` of a list request (docs: "Pagination"). */
export interface PageQuery {
  cursor: string;
  limit: number;
}

/** Reads `?cursor=&limit=`; `limit` is 1–200, default 50. */
export function pageQuery(url: URL): PageQuery {
  const raw = url.searchParams.get("limit");
  let limit = DEFAULT_PAGE;
  if (raw !== null && raw !== "") {
    limit = Number(raw);
    if (!/^\d+$/.test(raw) || limit < 1 || limit > MAX_PAGE) {
      throw bad(`limit 必须是 1 到 ${MAX_PAGE} 的整数`);
    }
  }
  return { cursor: url.searchParams.get("cursor") ?? "", limit };
}

/**
 * Cuts a `limit + 1` row fetch to a page: `next` is the cursor of the last row kept when another
 * page exists, else "".
 */
export function pageOf<T>(
  rows: T[],
  limit: number,
  cursorOf: (row: T) => string,
): { items: T[]; next: string } {
  if (rows.length <= limit) return { items: rows, next: "" };
  const items = rows.slice(0, limit);
  return { items, next: cursorOf(items[items.length - 1]) };
}

/** A query-string boolean: `true`, `false` or absent. */
export function queryBool(url: URL, key: string): boolean | undefined {
  const v = url.searchParams.get(key);
  if (v === null || v === "") return undefined;
  if (v === "true") return true;
  if (v === "false") return false;
  throw bad(`${key} 必须是 true 或 false`);
}

/** A query-string value from a fixed set, or undefined when absent. */
export function queryEnum<T extends string>(
  url: URL,
  key: string,
  values: readonly T[],
): T | undefined {
  const v = url.searchParams.get(key);
  if (v === null || v === "") return undefined;
  if (!(values as readonly string[]).includes(v)) {
    throw bad(`${key} 必须是 ${values.join("、")} 之一`);
  }
  return v as T;
}

/** A query-string Unix-ms time, or undefined when absent. */
export function queryTime(url: URL, key: string): number | undefined {
  const v = url.searchParams.get(key);
  if (v === null || v === "") return undefined;
  if (!/^\d{1,16}$/.test(v)) throw bad(`${key} 必须是 Unix 毫秒`);
  return Number(v);
}

/** A plain query-string value, or undefined when absent or empty. */
export function queryText(url: URL, key: string, max = 256): string | undefined {
  const v = url.searchParams.get(key);
  if (v === null || v === "") return undefined;
  if (charCount(v) > max) throw bad(`${key} 最多 ${max} 个字符`);
  return v;
}
