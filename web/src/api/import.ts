/**
 * The CSV import with progress (docs/admin-api.md, CSV import): the file goes up as `text/csv`,
 * the answer comes back as NDJSON progress lines ending in one `result` line.
 */
import { ApiError, apiUrl, changeHeaders, errorOf, sessionExpired } from "./http.ts";
import type { ImportResult } from "./types.ts";
import { splitLines } from "../lib/ndjson.ts";

/** A line of the NDJSON answer. */
type ImportLine =
  | { type: "progress"; done: number; total: number }
  | { type: "result"; ok: true; data: ImportResult }
  | { type: "result"; ok: false; error: { code: string; message: string; data?: unknown } };

/**
 * Uploads `csv` and reports hashing progress through `onProgress`. Resolves with the result;
 * rejects with an {@linkcode ApiError} (a refused file carries `data.rows`).
 */
export async function importEndpoints(
  csv: Blob,
  onProgress: (done: number, total: number) => void,
  signal?: AbortSignal,
  retried = false,
): Promise<ImportResult> {
  let res: Response;
  try {
    res = await fetch(apiUrl("endpoints/import"), {
      method: "POST",
      headers: changeHeaders({ "Content-Type": "text/csv", Accept: "application/x-ndjson" }),
      body: csv,
      signal,
    });
  } catch {
    throw new ApiError(0, "network", "无法连接服务器");
  }
  if (!res.ok) {
    const err = await errorOf(res);
    // The session ended: log in again over the dialog, then send the same file once more.
    if (res.status === 401 && !retried && await sessionExpired()) {
      return importEndpoints(csv, onProgress, signal, true);
    }
    throw err;
  }
  const type = res.headers.get("Content-Type") ?? "";
  if (!type.includes("ndjson") || res.body === null) {
    // A server that ignored Accept answers once with the plain envelope.
    const env = (await res.json()) as { data: ImportResult };
    return env.data;
  }
  const lines = splitLines(res.body.pipeThrough(new TextDecoderStream()));
  for await (const raw of lines) {
    const line = JSON.parse(raw) as ImportLine;
    if (line.type === "progress") onProgress(line.done, line.total);
    else if (line.ok) return line.data;
    else throw new ApiError(res.status, line.error.code, line.error.message, line.error.data);
  }
  throw new ApiError(0, "network", "导入的响应中断了，请刷新列表确认结果");
}
