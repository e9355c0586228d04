/** `GET /api/admin/metrics/history`: the live overview's figures (server/metrics/history.ts). */
import type { MetricsHistory } from "../metrics/history.ts";
import type { AdminRequest } from "./guards.ts";
import { ok, queryTime } from "./request.ts";

/** The history handler; `?since=<Unix ms>` returns only the newer samples. */
export function historyHandler(history: MetricsHistory) {
  return async (req: AdminRequest): Promise<void> => {
    ok(req.ctx, await history.view(queryTime(req.ctx.url, "since")));
  };
}
