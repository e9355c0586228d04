/**
 * Checks a CSV endpoint import as a whole before anything is hashed or written (spec 8: "先整体
 * 校验，任何一行出错就一行都不建，返回出错的行号和原因").
 */
import { loginPasswordProblem } from "../app/endpoint_rules.ts";
import { charCount, isValidId } from "../protocol/mod.ts";
import type { CsvRecord } from "./csv.ts";
import { REMARK_MAX } from "./endpoint_fields.ts";

/** spec 8: the header, in any order. */
export const IMPORT_COLUMNS = [
  "id",
  "name",
  "login_password",
  "talk_password",
  "default_delay_seconds",
  "remark",
] as const;

/** spec 8: at most 1000 rows. */
export const IMPORT_MAX_ROWS = 1000;

type Column = typeof IMPORT_COLUMNS[number];

/** One problem of the file; `row` counts records with the header as 1, `column` "" = the row. */
export interface RowProblem {
  row: number;
  column: string;
  message: string;
}

/** A checked row. Empty `id` or `loginPassword` mean "generate one". */
export interface ImportRow {
  row: number;
  id: string;
  name: string;
  loginPassword: string;
  talkPassword: string;
  defaultDelayMs: number;
  remark: string;
}

/** What {@link checkImport} needs besides the records. */
export interface ImportContext {
  /** `limits.max_schedule_seconds`: the longest default delay (spec 6.6). */
  maxScheduleSeconds: number;
  /** Whether an endpoint with this id exists now. */
  exists(id: string): boolean;
}

/** The rows when every one is valid, else every problem found. */
export type ImportCheck = { ok: true; rows: ImportRow[] } | { ok: false; problems: RowProblem[] };

function headerProblems(header: CsvRecord | undefined): RowProblem[] | Map<Column, number> {
  const problem = (message: string) => [{ row: 1, column: "", message }];
  if (header === undefined) return problem("文件是空的");
  const index = new Map<Column, number>();
  for (const [i, raw] of header.fields.entries()) {
    const name = raw.trim();
    if (!(IMPORT_COLUMNS as readonly string[]).includes(name)) {
      return problem(`表头里有不认识的列：${name}`);
    }
    if (index.has(name as Column)) return problem(`表头里的列重复：${name}`);
    index.set(name as Column, i);
  }
  const missing = IMPORT_COLUMNS.filter((c) => !index.has(c));
  if (missing.length > 0) return problem(`表头缺少列：${missing.join(",")}`);
  return index;
}

/** The non-empty ids of the data rows (nothing when the header is bad): what `exists` is asked. */
export function importIds(records: readonly CsvRecord[]): string[] {
  if (records.length === 0) return [];
  const index = headerProblems(records[0]);
  if (Array.isArray(index)) return [];
  const at = index.get("id")!;
  const ids = records.slice(1, IMPORT_MAX_ROWS + 1).map((r) => r.fields[at] ?? "");
  return [...new Set(ids.filter((id) => id !== ""))];
}

/**
 * Checks the header, the row count and every field of every row (docs/admin-api.md "CSV
 * import"). Ids must be unique within the file and must not exist.
 */
export function checkImport(records: readonly CsvRecord[], ctx: ImportContext): ImportCheck {
  const index = headerProblems(records[0]);
  if (Array.isArray(index)) return { ok: false, problems: index };
  const data = records.slice(1);
  if (data.length === 0) {
    return { ok: false, problems: [{ row: 1, column: "", message: "文件里没有数据行" }] };
  }
  if (data.length > IMPORT_MAX_ROWS) {
    const row = data[IMPORT_MAX_ROWS].row;
    return {
      ok: false,
      problems: [{
        row,
        column: "",
        message: `最多 ${IMPORT_MAX_ROWS} 行，文件有 ${data.length} 行`,
      }],
    };
  }
  const problems: RowProblem[] = [];
  const rows: ImportRow[] = [];
  const firstRowOf = new Map<string, number>();
  for (const rec of data) {
    if (rec.fields.length !== IMPORT_COLUMNS.length) {
      problems.push({
        row: rec.row,
        column: "",
        message: `需要 ${IMPORT_COLUMNS.length} 个字段，这一行有 ${rec.fields.length} 个`,
      });
      continue;
    }
    const get = (c: Column) => rec.fields[index.get(c)!];
    const bad = (column: Column, message: string) =>
      problems.push({ row: rec.row, column, message });
    const before = problems.length;

    const id = get("id");
    if (id !== "") {
      const first = firstRowOf.get(id);
      if (!isValidId(id)) bad("id", "编号需要 1 到 64 个字符，只能用字母、数字、_ . -");
      else if (first !== undefined) bad("id", `编号与第 ${first} 行重复`);
      else if (ctx.exists(id)) bad("id", "编号已存在");
      if (first === undefined) firstRowOf.set(id, rec.row);
    }
    const name = get("name");
    if (charCount(name) > 64) bad("name", "名称最多 64 个字符");
    const loginPassword = get("login_password");
    const pwProblem = loginPassword === "" ? null : loginPasswordProblem(loginPassword);
    if (pwProblem !== null) bad("login_password", pwProblem);
    const talkPassword = get("talk_password");
    if (charCount(talkPassword) > 128) bad("talk_password", "对话密码最多 128 个字符");
    const delay = get("default_delay_seconds");
    const seconds = delay === "" ? 0 : /^\d{1,12}$/.test(delay) ? Number(delay) : NaN;
    if (!(seconds <= ctx.maxScheduleSeconds)) {
      bad("default_delay_seconds", `默认延迟需要是 0 到 ${ctx.maxScheduleSeconds} 的整数秒`);
    }
    const remark = get("remark");
    if (charCount(remark) > REMARK_MAX) bad("remark", `备注最多 ${REMARK_MAX} 个字符`);

    if (problems.length === before) {
      rows.push({
        row: rec.row,
        id,
        name,
        loginPassword,
        talkPassword,
        defaultDelayMs: seconds * 1000,
        remark,
      });
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, rows };
}
