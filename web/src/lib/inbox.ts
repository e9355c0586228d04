/**
 * The live inbox list (issue 32): events in arrival order, newest first, at most
 * {@link INBOX_LIMIT}; while paused, new events wait and are counted, and resume shows them.
 */
import type { InboxFrame, InboxState } from "../api/inbox.ts";

/** At most this many rows are kept; the oldest go. */
export const INBOX_LIMIT = 500;

/** One row of the list. */
export type InboxEntry =
  | ({ kind: "frame" } & InboxFrame)
  | ({ kind: "state" } & InboxState);

/** The Chinese name of a frame type (docs/protocol.md, downlink frames). */
export function frameTypeLabel(type: string): string {
  const names: Record<string, string> = {
    msg: "消息",
    receipt: "回执",
    revoked: "撤回",
    presence: "在线状态",
    group_event: "群变动",
    resp: "响应",
    fatal: "致命错误",
  };
  return names[type] ?? (type || "无法解析");
}

const str = (v: unknown) => (typeof v === "string" ? v : v === undefined ? "" : String(v));

/** A one-line summary of an entry, in Chinese. */
export function entrySummary(e: InboxEntry): string {
  if (e.kind === "state") return e.online ? "本端上线" : "本端下线";
  const f = e.frame ?? {};
  switch (e.type) {
    case "msg": {
      const to = f.to as { kind?: string; id?: string } | undefined;
      const via = to?.kind === "group" ? `（群 ${str(to.id)}）` : "";
      const body = e.body === null ? "" : ` · 正文 ${e.body.length} 字符`;
      return `来自 ${str(f.from)}${via} · 消息号 ${str(f.id)}${body}`;
    }
    case "receipt":
      return `消息 ${str(f.id)} · ${str(f.endpoint_id) || "整条消息"} ${str(f.state)}`;
    case "revoked":
      return `撤回 ${str(f.from)} 的 ${str(f.id)} · ${str(f.reason)}`;
    case "presence":
      return `${str(f.id)} ${f.online === true ? "上线" : "下线"}`;
    case "group_event":
      return `群 ${str(f.group_id)} · ${str(f.event)} ${str(f.endpoint_id)}`;
    case "resp": {
      const err = f.error as { code?: string } | undefined;
      return `请求 ${str(f.rid)} · ${f.ok === true ? "成功" : str(err?.code) || "失败"}`;
    }
    case "fatal":
      return str(f.reason);
    default:
      return "";
  }
}

/** The list with pause and clear. */
export class InboxList {
  entries: InboxEntry[] = [];
  waiting: InboxEntry[] = [];
  paused = false;
  lost = 0;

  add(e: InboxEntry): void {
    if (this.paused) {
      this.waiting.unshift(e);
      this.waiting.length = Math.min(this.waiting.length, INBOX_LIMIT);
      return;
    }
    this.entries.unshift(e);
    this.entries.length = Math.min(this.entries.length, INBOX_LIMIT);
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.entries = [...this.waiting, ...this.entries].slice(0, INBOX_LIMIT);
    this.waiting = [];
  }

  clear(): void {
    this.entries = [];
    this.waiting = [];
    this.lost = 0;
  }
}
