/**
 * The send panel's "发送时刻" (spec 6.2): now is `delay_ms: 0`; a delay in seconds; or a time,
 * `send_at_ms`, which must lie ahead.
 */

/** The timing fields of a send, or why they cannot be built. */
export interface SendTiming {
  fields: { delay_ms?: number; send_at_ms?: number };
  /** Chinese, for the form; "" when the fields are good. */
  problem: string;
}

export function sendTiming(
  when: "now" | "delay" | "at",
  delaySeconds: number | null,
  sendAt: number | null,
  now: number,
): SendTiming {
  if (when === "now") return { fields: { delay_ms: 0 }, problem: "" };
  if (when === "delay") {
    if (delaySeconds === null || !Number.isInteger(delaySeconds) || delaySeconds < 1) {
      return { fields: {}, problem: "延迟至少 1 秒" };
    }
    return { fields: { delay_ms: delaySeconds * 1000 }, problem: "" };
  }
  if (sendAt === null) return { fields: {}, problem: "请选择发送时刻" };
  if (sendAt <= now) return { fields: {}, problem: "发送时刻必须晚于现在" };
  return { fields: { send_at_ms: sendAt }, problem: "" };
}
