/**
 * Strict readers for the fields of a request frame (spec 6). Every reader throws a
 * `ProtocolError("bad_request")` naming the field; `parseRequest` turns it into a result.
 *
 * Optional fields treat `null` like an absent field, so SDKs whose JSON encoders write `null`
 * for unset values need no special casing. Unknown extra fields are ignored.
 */
import { type ErrorCode, errorInfo, ProtocolError } from "./errors.ts";
import type { RequestOf, RequestType } from "./frames.ts";
import {
  DEFAULT_PAGE_LIMIT,
  MAX_CURSOR_CHARS,
  MAX_PAGE_LIMIT,
  type ProtocolLimits,
} from "./limits.ts";
import { charCount } from "./text.ts";

/** Endpoint, group and message ids: 1–64 letters, digits, `_`, `.`, `-`, case-sensitive (spec 6.2). */
export const ID_PATTERN: RegExp = /^[A-Za-z0-9_.-]{1,64}$/;

/** Returns true when `value` is a valid endpoint, group or message id (spec 6.2). */
export function isValidId(value: unknown): value is string {
  // An id of only dots ("." or "..") cannot be addressed in a URL path, so it is refused.
  return typeof value === "string" && ID_PATTERN.test(value) && !/^\.+$/.test(value);
}

/** Returns the `bad_request` error for one field, with the reason in the message. */
export function badField(path: string, reason: string): ProtocolError {
  return new ProtocolError("bad_request", `字段不合法：${path} ${reason}`);
}

/** Length bounds in characters (code points). */
export interface StringBounds {
  readonly min?: number;
  readonly max: number;
}

/** Returns true when `value` is a non-array object. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Reads the fields of one JSON object; nested objects get their own reader with a path prefix. */
export class Fields {
  readonly #obj: Record<string, unknown>;
  readonly #prefix: string;

  /** `prefix` is the path of `obj` inside the frame, e.g. `"to"`, used in error messages. */
  constructor(obj: Record<string, unknown>, prefix = "") {
    this.#obj = obj;
    this.#prefix = prefix;
  }

  /** The full path of `key`, for error messages. */
  path(key: string): string {
    return this.#prefix === "" ? key : `${this.#prefix}.${key}`;
  }

  /** The own value of `key`, or undefined when absent or null. */
  raw(key: string): unknown {
    if (!Object.hasOwn(this.#obj, key)) return undefined;
    const value = this.#obj[key];
    return value === null ? undefined : value;
  }

  /** True when `key` is present and not null. */
  has(key: string): boolean {
    return this.raw(key) !== undefined;
  }

  /** A required string of `bounds` characters. */
  string(key: string, bounds: StringBounds): string {
    const value = this.optString(key, bounds);
    if (value === null) throw badField(this.path(key), "缺少");
    return value;
  }

  /** An optional string of `bounds` characters; null when absent. */
  optString(key: string, bounds: StringBounds): string | null {
    const value = this.raw(key);
    if (value === undefined) return null;
    if (typeof value !== "string") throw badField(this.path(key), "必须是字符串");
    if (!value.isWellFormed()) throw badField(this.path(key), "含有不成对的代理字符");
    const min = bounds.min ?? 0;
    const count = charCount(value);
    if (count < min || count > bounds.max) {
      throw badField(this.path(key), `长度必须是 ${min}–${bounds.max} 个字符`);
    }
    return value;
  }

  /** A required id (`ID_PATTERN`). */
  id(key: string): string {
    const value = this.optId(key);
    if (value === null) throw badField(this.path(key), "缺少");
    return value;
  }

  /** An optional id; null when absent or "". */
  optId(key: string): string | null {
    const value = this.raw(key);
    if (value === undefined || value === "") return null;
    if (!isValidId(value)) {
      throw badField(this.path(key), "必须是 1–64 个字母、数字、_、.、-");
    }
    return value;
  }

  /** A required integer in [min, max]. */
  int(key: string, min: number, max: number): number {
    const value = this.optInt(key, min, max);
    if (value === null) throw badField(this.path(key), "缺少");
    return value;
  }

  /** An optional integer in [min, max]; null when absent. */
  optInt(key: string, min: number, max: number): number | null {
    const value = this.raw(key);
    if (value === undefined) return null;
    if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) {
      throw badField(this.path(key), `必须是 ${min}–${max} 的整数`);
    }
    return value as number;
  }

  /** An optional boolean with a default. */
  bool(key: string, fallback: boolean): boolean {
    const value = this.raw(key);
    if (value === undefined) return fallback;
    if (typeof value !== "boolean") throw badField(this.path(key), "必须是 true 或 false");
    return value;
  }

  /** A required nested object. */
  object(key: string): Fields {
    const value = this.optObject(key);
    if (value === null) throw badField(this.path(key), "缺少");
    return value;
  }

  /** An optional nested object; null when absent. */
  optObject(key: string): Fields | null {
    const value = this.raw(key);
    if (value === undefined) return null;
    if (!isPlainObject(value)) throw badField(this.path(key), "必须是对象");
    return new Fields(value, this.path(key));
  }

  /** The raw nested object of `key`, or null when absent. */
  rawObject(key: string): Record<string, unknown> | null {
    const value = this.raw(key);
    if (value === undefined) return null;
    if (!isPlainObject(value)) throw badField(this.path(key), "必须是对象");
    return value;
  }

  /**
   * An optional array of at most `maxItems` items, each read by `item`; `[]` when absent.
   * Too many items fails with `tooMany` (default `bad_request`).
   */
  array<T>(
    key: string,
    maxItems: number,
    item: (value: unknown, path: string) => T,
    tooMany: ErrorCode = "bad_request",
  ): T[] {
    const value = this.raw(key);
    if (value === undefined) return [];
    if (!Array.isArray(value)) throw badField(this.path(key), "必须是数组");
    if (value.length > maxItems) {
      const reason = `最多 ${maxItems} 项`;
      throw tooMany === "bad_request"
        ? badField(this.path(key), reason)
        : new ProtocolError(tooMany, `${errorInfo(tooMany).message}：${this.path(key)} ${reason}`);
    }
    return value.map((v, i) => item(v, `${this.path(key)}[${i}]`));
  }
}

/** Reads one array item as an id (`ID_PATTERN`). */
export function idItem(value: unknown, path: string): string {
  if (!isValidId(value)) throw badField(path, "必须是 1–64 个字母、数字、_、.、-");
  return value;
}

/** Paging fields shared by status, directory.list, group.list and group.get (spec 6.4–6.7). */
export interface Paging {
  readonly cursor: string;
  readonly limit: number;
}

/** Reads `cursor` (default "") and `limit` (1–200, default 100) (spec 6.4, 6.5, 6.7). */
export function readPaging(f: Fields): Paging {
  return {
    cursor: f.optString("cursor", { max: MAX_CURSOR_CHARS }) ?? "",
    limit: f.optInt("limit", 1, MAX_PAGE_LIMIT) ?? DEFAULT_PAGE_LIMIT,
  };
}

/** The fields a per-type parser returns; `parseRequest` adds `v`, `type` and `rid`. */
export type FrameFields<T extends RequestType> = Omit<RequestOf<T>, "v" | "type" | "rid">;

/** Reads the fields of one request type, throwing `ProtocolError` on the first bad field. */
export type FrameParser<T extends RequestType> = (
  f: Fields,
  limits: ProtocolLimits,
) => FrameFields<T>;

/**
 * The keys an object may carry: `true` for a leaf (or a free-form value such as `meta`), a
 * nested shape for an object whose keys are checked too.
 */
export interface FieldShape {
  readonly [key: string]: true | FieldShape;
}

/**
 * The path of the first key of `value` not in `shape`, at any level (`offline.kep`), or null.
 * Values that are not objects where `shape` nests are left to the parser to refuse.
 *
 * @example
 * unknownField({ to: { kind: "endpoint", id: "b", extra: 1 } }, { to: { kind: true, id: true } });
 * // "to.extra"
 */
export function unknownField(value: unknown, shape: FieldShape, prefix = ""): string | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  for (const [key, child] of Object.entries(value)) {
    const path = prefix === "" ? key : `${prefix}.${key}`;
    const rule = Object.hasOwn(shape, key) ? shape[key] : undefined;
    if (rule === undefined) return path;
    if (rule !== true) {
      const inner = unknownField(child, rule, path);
      if (inner !== null) return inner;
    }
  }
  return null;
}
