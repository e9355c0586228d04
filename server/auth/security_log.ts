/**
 * Security events as log lines and metrics (issue 18): every failed or refused secret check at
 * info with the id, source IP and reason, every lock start and end at warn. Lines never carry a
 * password, token or code (spec 12); metrics carry only the kind, rule and reason, never ids.
 */
import type { Logger } from "../log/log.ts";
import { type AuditSink, recordAudit } from "../app/audit.ts";
import { LogThrottle } from "../log/throttle.ts";
import { countAuthFailure, countLockout } from "../metrics/metrics.ts";
import type { LockKind, LockoutEvents, LockRule, LockSubject, UnlockReason } from "./lockout.ts";

/** The secrets whose failures are reported: the lockout families plus MQTT session tokens. */
export type AuthKind = LockKind | "session_token";

/**
 * Failure lines of one kind and reason written per 10 s before the rest are only counted
 * (issue 28: a flood of guesses must not write a line per guess).
 */
const FAILURE_LINES_PER_WINDOW = 20;

/** Reports security events to the log and `/metrics`. */
export class SecurityLog implements LockoutEvents {
  readonly #log: Logger;
  readonly #audit: AuditSink | undefined;
  readonly #throttle: LogThrottle;

  /** With `audit`, lock starts and ends also become audit rows (操作日志, actor `system`). */
  constructor(log: Logger, audit?: AuditSink) {
    this.#log = log;
    this.#audit = audit;
    this.#throttle = new LogThrottle(log, { burst: FAILURE_LINES_PER_WINDOW });
  }

  /**
   * One failed or refused secret check; `reason` is a fixed word such as `wrong_password`. The
   * metric counts every one; past 20 a kind and reason in 10 s, lines give way to one count.
   */
  failure(kind: AuthKind, reason: string, who: LockSubject): void {
    this.#throttle.line("info", "auth failure", `${kind}/${reason}`, { kind, reason, ...who }, {
      kind,
      reason,
    });
    countAuthFailure(kind, reason);
  }

  /** Stops the throttle's timers. */
  close(): void {
    this.#throttle.close();
  }

  lockStarted(kind: LockKind, rule: LockRule, who: LockSubject, until: number): void {
    this.#log.warn("lockout started", {
      kind,
      rule,
      ...who,
      until: new Date(until).toISOString(),
    });
    countLockout(kind, rule, "start");
    this.#record("lockout.start", who, `${kind}/${rule}`);
  }

  lockEnded(kind: LockKind, rule: LockRule, who: LockSubject, reason: UnlockReason): void {
    this.#log.warn("lockout ended", { kind, rule, ...who, reason });
    countLockout(kind, rule, "end");
    this.#record("lockout.end", who, `${kind}/${rule}/${reason}`);
  }

  #record(action: string, who: LockSubject, result: string): void {
    if (this.#audit === undefined) return;
    const target = who.sender !== undefined && who.target !== undefined
      ? `${who.sender}/${who.target}`
      : who.endpoint ?? who.target ?? who.sender ?? who.account ?? who.ip ?? "";
    void recordAudit(this.#audit, { actor: "system", action, target, result, ip: who.ip ?? "" });
  }
}
