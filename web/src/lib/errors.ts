/** One sentence for people from any failure of an API call. */
import { ApiError } from "../api/http.ts";
import { errorCodeLabel } from "./labels.ts";

const HAN = /\p{Script=Han}/u;

/**
 * The server's own message when it is written in Chinese (the admin API's messages are), else the
 * Chinese meaning of the error code. A 429 adds how long the lock lasts.
 */
export function describeError(err: unknown): string {
  if (!(err instanceof ApiError)) return err instanceof Error ? err.message : String(err);
  let text = HAN.test(err.message) ? err.message : errorCodeLabel(err.code);
  if (err.code === "rate_limited" && err.retryAfter !== null) {
    text += `，请 ${err.retryAfter} 秒后再试`;
  }
  return text;
}
