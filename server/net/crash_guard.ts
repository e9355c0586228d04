/**
 * The last-resort guard of `nixmsg serve` (issue 10 item 1): an error that escapes every
 * connection's own handlers is logged instead of ending the process.
 *
 * Each socket, TLS session and WebSocket the listener creates has its own 'error' listener that
 * closes that connection; this guard only catches what a future code path forgets, so that one
 * broken peer cannot stop the server for everyone else.
 */
import type { Logger } from "../log/log.ts";

/**
 * Installs the guard for this process; returns a function that removes it.
 *
 * @example
 * const uninstall = installCrashGuard(log);
 * // ... serve ...
 * uninstall();
 */
export function installCrashGuard(log: Logger): () => void {
  const onError = (e: ErrorEvent) => {
    e.preventDefault();
    const err = e.error;
    log.error("Uncaught error kept from ending the process", {
      error: err instanceof Error ? err.message : String(err),
      stack: err instanceof Error ? err.stack?.split("\n").slice(0, 4).join(" | ") : undefined,
    });
  };
  const onRejection = (e: PromiseRejectionEvent) => {
    e.preventDefault();
    const err = e.reason;
    log.error("Unhandled rejection kept from ending the process", {
      error: err instanceof Error ? err.message : String(err),
      stack: err instanceof Error ? err.stack?.split("\n").slice(0, 4).join(" | ") : undefined,
    });
  };
  globalThis.addEventListener("error", onError);
  globalThis.addEventListener("unhandledrejection", onRejection);
  return () => {
    globalThis.removeEventListener("error", onError);
    globalThis.removeEventListener("unhandledrejection", onRejection);
  };
}
