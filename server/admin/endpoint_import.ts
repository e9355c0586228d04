/**
 * `POST /api/admin/endpoints/import` (spec 8): check the whole CSV, hash the passwords in the
 * argon2 pool (progress streamed as NDJSON when asked), then create every row in one writer op,
 * so in one transaction. Generated passwords are in the response only (docs/admin-api.md).
 */
import { randomPassword } from "../auth/generate.ts";
import { errorInfo, isErrorCode } from "../protocol/mod.ts";
import { OpError } from "../store/op_error.ts";
import type { CreateEndpointArgs } from "../store/ops/endpoints.ts";
import type { HttpContext } from "../http/types.ts";
import type { AdminDeps } from "./deps.ts";
import type { AdminRequest } from "./guards.ts";
import { CsvError, parseCsv } from "./csv.ts";
import { checkImport, importIds, type ImportRow, type RowProblem } from "./import_rows.ts";
import { GENERATED_PASSWORD_LENGTH, generateEndpointId } from "./endpoint_fields.ts";

/** The CSV body is at most 2 MiB (1000 rows of generous fields). */
export const IMPORT_BODY_LIMIT = 2 * 1024 * 1024;
/** The media type of the streamed progress (docs: "Progress"). */
export const NDJSON = "application/x-ndjson";
const PROGRESS_EVERY_MS = 200;

/** A failed import, streamed as the `result` line or sent as plain JSON. */
interface Failure {
  status: number;
  ok: false;
  error: { code: string; message: string; data?: Record<string, unknown> };
}

/** The outcome of an import. */
type Outcome = { status: 200; ok: true; data: unknown } | Failure;

function rejected(problems: RowProblem[], code = "bad_request", status = 400): Failure {
  const rows = new Set(problems.map((p) => p.row)).size;
  return {
    status,
    ok: false,
    error: { code, message: `${rows} 行有错，没有创建任何端`, data: { rows: problems } },
  };
}

/** Writes the progress lines, at most every 200 ms plus the first and the last. */
class Progress {
  #ctx: HttpContext;
  #total: number;
  #done = 0;
  #lastAt = 0;

  constructor(ctx: HttpContext, total: number) {
    this.#ctx = ctx;
    this.#total = total;
    ctx.res.writeHead(200, {
      "Content-Type": `${NDJSON}; charset=utf-8`,
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
    });
    this.#write();
  }

  step(): void {
    this.#done++;
    const now = performance.now();
    if (this.#done === this.#total || now - this.#lastAt >= PROGRESS_EVERY_MS) this.#write();
  }

  line(value: unknown): void {
    this.#ctx.res.write(JSON.stringify(value) + "\n");
  }

  #write(): void {
    this.#lastAt = performance.now();
    this.line({ type: "progress", done: this.#done, total: this.#total });
  }
}

/** The import handler. */
export function importHandler(d: AdminDeps) {
  const { app } = d;
  const writer = app.store;

  /**
   * Hashes every row's passwords. At most as many hashes as there are CPUs are queued at once, so
   * MQTT password logins arriving meanwhile wait behind a few rows, not behind the whole file.
   */
  async function hashRows(
    rows: ImportRow[],
    passwords: (string | null)[],
    onRow: () => void,
    gone: () => boolean,
  ): Promise<CreateEndpointArgs[] | null> {
    const out: CreateEndpointArgs[] = new Array(rows.length);
    let next = 0;
    const worker = async () => {
      while (next < rows.length && !gone()) {
        const i = next++;
        const r = rows[i];
        const loginHash = await app.pool.hash(passwords[i] ?? r.loginPassword);
        const talkHash = r.talkPassword === "" ? null : await app.pool.hash(r.talkPassword);
        out[i] = {
          id: r.id,
          name: r.name,
          remark: r.remark,
          source: "admin",
          loginHash,
          talkHash,
          defaultDelayMs: r.defaultDelayMs,
        };
        onRow();
      }
    };
    const parallel = Math.max(1, Math.min(rows.length, navigator.hardwareConcurrency ?? 1));
    await Promise.all(Array.from({ length: parallel }, worker));
    return gone() ? null : out;
  }

  async function create(
    rows: ImportRow[],
    args: CreateEndpointArgs[],
    passwords: (string | null)[],
  ): Promise<Outcome> {
    try {
      await writer.run("admin.endpoint_import", { rows: args });
    } catch (err) {
      if (err instanceof OpError && err.code === "id_taken") {
        // Someone created one of the ids since the check.
        const taken = new Set((err.data?.ids as string[] | undefined) ?? []);
        const problems = rows.filter((r) => taken.has(r.id))
          .map((r) => ({ row: r.row, column: "id", message: "编号已存在" }));
        return rejected(problems, "id_taken", 409);
      }
      const code = err instanceof OpError && isErrorCode(err.code) ? err.code : "busy";
      if (code === "busy") app.log.error("endpoint import failed", { error: String(err) });
      const { status, message } = errorInfo(code);
      return { status, ok: false, error: { code, message } };
    }
    const items = rows.map((r, i) =>
      passwords[i] === null
        ? { row: r.row, id: r.id }
        : { row: r.row, id: r.id, login_password: passwords[i] }
    );
    return { status: 200, ok: true, data: { created: rows.length, items } };
  }

  /** POST /api/admin/endpoints/import. */
  return async function importEndpoints(req: AdminRequest): Promise<void> {
    const { ctx } = req;
    const raw = await ctx.body(IMPORT_BODY_LIMIT);
    let check;
    try {
      const records = parseCsv(raw);
      const existing = new Set(
        await app.store.query("endpoint.existing", { ids: importIds(records) }),
      );
      check = checkImport(records, {
        maxScheduleSeconds: app.config.limits.max_schedule_seconds,
        exists: (id) => existing.has(id),
      });
    } catch (err) {
      if (!(err instanceof CsvError)) throw err;
      check = {
        ok: false as const,
        problems: [{ row: err.row, column: "", message: err.message }],
      };
    }
    if (!check.ok) {
      const out = rejected(check.problems);
      req.result = "bad_request";
      ctx.json(out.status, { ok: false, error: out.error });
      return;
    }
    const rows = check.rows;
    req.object = `${rows.length} rows`;
    const reserved = new Set(rows.map((r) => r.id).filter((id) => id !== ""));
    for (const r of rows) {
      if (r.id !== "") continue;
      r.id = await generateEndpointId(app.store, reserved);
      reserved.add(r.id);
    }
    const passwords = rows.map((r) =>
      r.loginPassword === "" ? randomPassword(GENERATED_PASSWORD_LENGTH) : null
    );

    let closed = false;
    ctx.res.once("close", () => {
      if (!ctx.res.writableFinished) closed = true;
    });
    const gone = () => closed || ctx.res.destroyed;
    const streaming = (ctx.req.headers.accept ?? "").includes(NDJSON);
    const progress = streaming ? new Progress(ctx, rows.length) : null;

    const args = await hashRows(rows, passwords, () => progress?.step(), gone);
    if (args === null) {
      // The generated passwords could never be shown: create nothing (docs: "abandoned").
      req.result = "aborted";
      app.log.warn("endpoint import abandoned: the client went away", { rows: rows.length });
      return;
    }
    const out = await create(rows, args, passwords);
    req.result = out.ok ? "ok" : out.error.code;
    const body = out.ok ? { ok: true, data: out.data } : { ok: false, error: out.error };
    if (progress === null) {
      ctx.json(out.status, body);
      return;
    }
    progress.line({ type: "result", ...body });
    ctx.res.end();
  };
}
