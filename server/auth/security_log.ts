/**
 * Security events as log lines and metrics (issue 18): every failed or refused secret check at
 * info with the id, source IP and reason, every lock start and end at warn. Lines never carry a
 * password, token or code (spec 12); metrics carry only the kind, rule and reason, never ids.
 */
import type { Logger } from "../log/log.ts";
import { type AuditSink, recordAudit } from "../app/audit.ts";
import { countAuthFailure, countLockout } from "../metrics/metrics.ts";
import type { LockKind, LockoutEvents, LockRule, LockSubject, UnlockReason } from "./lockout.ts";

/** The secrets whose failures are reported: the lockout families plus MQTT session tokens. */
export type AuthKind = LockKind | "session_token";

/** Reports security events to the log and `/metrics`. */
export class SecurityLog implements LockoutEvents {
  readonly #log: Logger;
  readonly #audit: AuditSink | undefined;

  /** With `audit`, lock starts and ends also become audit rows (操作日志, actor `system`). */
  constructor(log: Logger, audit?: AuditSink) {
    this.#log = log;
    this.#audit = audit;
  }

  /** One failed or refused secret check; `reason` is a fixed word such as `wrong_password`. */
  failure(kind: AuthKind, reason: string, who: LockSubject): void {
    this.#log.info("auth failure", { kind, reason, ...who });
    countAuthFailure(kind, reason);
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
      : who.endpoint ?? who.target ?? who.sender ?? who.ip ?? "";
    void recordAudit(this.#audit, { actor: "system", action, target, result, ip: who.ip ?? "" });
  }
}
