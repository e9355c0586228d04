/**
 * The webhook dispatcher (issue 34): POSTs each endpoint's events to its webhook, driven from the
 * store's outbox (`hook_due`, server/store/ops/webhooks.ts).
 *
 * - Claims come from the store (`webhook.claim`, committed before any POST), so a crash or restart
 *   loses nothing and never sends an event for an uncommitted state; a claim's lease runs out and
 *   the event is sent again with the same `webhook-id`.
 * - A 2xx is the application's `ack` (spec 6.3) through the same `delivery.ack` op as MQTT, or its
 *   `receipt_ack` through `receipt.ack`; anything else is retried with exponential backoff and
 *   jitter until the message's TTL or grace period ends (the cleanup loop then ends it, spec 7.5).
 * - Precedence: while the endpoint has a handshaken MQTT session it gets everything over MQTT and
 *   the webhook waits (the push loop owns the deliveries; one channel at a time keeps one order).
 * - At most `webhooks.concurrency` requests per webhook; requests never run on the writer or the
 *   MQTT path, so a slow webhook holds only its own slots.
 */
import type { App } from "../app/app_context.ts";
import type { Effects } from "../app/messaging/effects.ts";
import { MsgFrameCache, receiptFrame, revokedFrame } from "../app/messaging/frames.ts";
import type { ReceiptRow } from "../store/ops/receipts.ts";
import type { ClaimedHookMsg, ClaimedHookRevoked, WebhookRow } from "../store/ops/webhooks.ts";
import { countWebhookAttempt } from "../metrics/metrics.ts";
import { type AllowList, allowListOf, parseWebhookUrl } from "./address_policy.ts";
import { type PostOptions, type PostResult, postWebhook } from "./http_post.ts";
import { sign } from "./signature.ts";

/** How often the store is asked which webhooks have due events (retries, missed wakes). */
const POLL_MS = 1000;
/** How often the webhook list is re-read (changes made on another node). */
const REFRESH_MS = 5000;
/** Attempts kept per webhook for the console. */
const RECENT = 20;
/** A `revoked` event is best effort (spec 6.4): it is given up after this many failures. */
const REVOKED_MAX_TRIES = 8;
/** Failure counts kept for receipts and `revoked` events (a receipt may be deleted meanwhile). */
const MAX_TRIES_KEPT = 100_000;

/** The kinds of event a webhook receives. */
export type WebhookEventKind = "msg" | "receipt" | "revoked" | "test";

/** One attempt, as the console lists it (no body, no secret). */
export interface WebhookAttempt {
  at: number;
  kind: WebhookEventKind;
  eventId: string;
  ok: boolean;
  status: number;
  error: string;
  ms: number;
}

type HookEvent =
  | { kind: "msg"; id: string; ev: ClaimedHookMsg }
  | { kind: "receipt"; id: string; ev: ReceiptRow }
  | { kind: "revoked"; id: string; ev: ClaimedHookRevoked };

interface Hook {
  row: WebhookRow;
  url: URL | null;
  inflight: number;
  claiming: boolean;
  again: boolean;
  recent: WebhookAttempt[];
  failing: boolean;
}

/** The event id (`webhook-id`) of each kind: stable across retries, so receivers can dedup. */
export function eventIdOf(kind: "msg" | "revoked" | "receipt", key: number): string {
  return `${kind === "msg" ? "msg" : kind === "revoked" ? "rvk" : "rcpt"}_${key}`;
}

/** The pause before attempt `n + 1` after `n` failures: doubling, capped, with jitter (50–100 %). */
export function backoffMs(n: number, initialMs: number, maxMs: number, rand = Math.random): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.min(30, Math.max(0, n - 1)));
  return Math.round(base * (0.5 + rand() * 0.5));
}

/** See the module comment. */
export class WebhookDispatcher {
  #app: App;
  #frames: MsgFrameCache;
  #allow: AllowList;
  #post: PostOptions;
  #hooks = new Map<string, Hook>();
  #loaded = "";
  #tries = new Map<string, number>();
  #due = new Set<string>();
  #flushQueued = false;
  #pollTimer: ReturnType<typeof setInterval> | null = null;
  #refreshTimer: ReturnType<typeof setInterval> | null = null;
  #polling = false;
  #stopped = false;

  constructor(app: App) {
    this.#app = app;
    this.#frames = new MsgFrameCache(app.store);
    const w = app.config.webhooks;
    this.#allow = allowListOf(w.allow);
    this.#post = {
      allow: this.#allow,
      connectTimeoutMs: w.connect_timeout_seconds * 1000,
      responseTimeoutMs: w.response_timeout_seconds * 1000,
      maxResponseBytes: w.max_response_bytes,
    };
  }

  /** The parsed `webhooks.allow`, for the admin API's check at configuration time. */
  get allow(): AllowList {
    return this.#allow;
  }

  get #leaseMs(): number {
    return this.#post.connectTimeoutMs + this.#post.responseTimeoutMs + 5000;
  }

  /** Loads the webhooks, tells the writer which count as connections, starts polling. */
  async start(): Promise<void> {
    await this.refresh();
    this.#pollTimer = setInterval(() => void this.#poll(), POLL_MS);
    this.#refreshTimer = setInterval(() => void this.refresh(), REFRESH_MS);
    void this.#poll();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#pollTimer) clearInterval(this.#pollTimer);
    if (this.#refreshTimer) clearInterval(this.#refreshTimer);
  }

  /**
   * Re-reads the webhooks (after an admin change, or periodically for other nodes' changes) and,
   * when the set of enabled ones changed, reloads the writer's view (`webhook.load`).
   */
  async refresh(): Promise<void> {
    if (this.#stopped) return;
    let rows: WebhookRow[];
    try {
      rows = await this.#app.store.query("webhook.list", {});
    } catch (err) {
      this.#app.log.warn("webhooks: list failed", { error: (err as Error).message });
      return;
    }
    const seen = new Set<string>();
    // Only new or changed webhooks are claimed for at once; the others wait for their wakes and
    // the poll, so an idle server writes nothing per webhook.
    const changed: string[] = [];
    for (const row of rows) {
      seen.add(row.endpointId);
      const h = this.#hooks.get(row.endpointId);
      let url: URL | null = null;
      try {
        url = parseWebhookUrl(row.url);
      } catch {
        url = null;
      }
      if (h === undefined || h.row.updatedAt !== row.updatedAt) changed.push(row.endpointId);
      if (h === undefined) {
        this.#hooks.set(row.endpointId, {
          row,
          url,
          inflight: 0,
          claiming: false,
          again: false,
          recent: [],
          failing: false,
        });
      } else {
        h.row = row;
        h.url = url;
      }
    }
    for (const id of [...this.#hooks.keys()]) if (!seen.has(id)) this.#hooks.delete(id);
    const enabled = rows.filter((r) => r.enabled).map((r) => r.endpointId).join("\n");
    if (enabled !== this.#loaded) {
      try {
        await this.#app.store.run("webhook.load", {});
        this.#loaded = enabled;
      } catch (err) {
        this.#app.log.warn("webhooks: load failed", { error: (err as Error).message });
      }
    }
    for (const id of changed) this.#schedule(id);
  }

  /** Live side effects of a committed op: new deliveries or receipts may be due for a webhook. */
  notify(fx: Effects): void {
    if (this.#stopped || this.#hooks.size === 0) return;
    for (const id of fx.wake ?? []) if (this.#hooks.has(id)) this.#schedule(id);
    for (const r of fx.receipts ?? []) if (this.#hooks.has(r.senderId)) this.#schedule(r.senderId);
  }

  /** The last attempts of the endpoint's webhook on this node, newest first. */
  recent(endpointId: string): WebhookAttempt[] {
    return [...(this.#hooks.get(endpointId)?.recent ?? [])].reverse();
  }

  /**
   * Sends a `test` event at once, outside the outbox (the console's "send test event").
   */
  async sendTest(row: WebhookRow): Promise<WebhookAttempt> {
    const url = parseWebhookUrl(row.url);
    const id = `test_${crypto.randomUUID()}`;
    const body = JSON.stringify({
      v: 1,
      type: "test",
      endpoint_id: row.endpointId,
      at_ms: this.#app.clock(),
    });
    const r = await this.#request(url, row.secret, id, body);
    const attempt = this.#record(row.endpointId, "test", id, r);
    return attempt;
  }

  #schedule(endpointId: string): void {
    if (this.#stopped) return;
    this.#due.add(endpointId);
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    queueMicrotask(() => {
      this.#flushQueued = false;
      const ids = [...this.#due];
      this.#due.clear();
      for (const id of ids) void this.#claim(id);
    });
  }

  async #poll(): Promise<void> {
    if (this.#stopped || this.#polling || this.#hooks.size === 0) return;
    this.#polling = true;
    try {
      const ids = await this.#app.store.query("webhook.due", { now: this.#app.clock() });
      for (const id of ids) this.#schedule(id);
    } catch (err) {
      this.#app.log.warn("webhooks: due check failed", { error: (err as Error).message });
    } finally {
      this.#polling = false;
    }
  }

  async #claim(endpointId: string): Promise<void> {
    const h = this.#hooks.get(endpointId);
    if (this.#stopped || h === undefined || !h.row.enabled || h.url === null) return;
    // An online MQTT session takes precedence (module comment), on this node or (a cluster node,
    // issue 30) on another one by the store's login state.
    const presence = this.#app.presence;
    if (presence !== undefined && (await presence.onlineAmong([endpointId]))(endpointId)) return;
    if (this.#stopped) return;
    const room = this.#app.config.webhooks.concurrency - h.inflight;
    if (room <= 0) return;
    if (h.claiming) {
      h.again = true;
      return;
    }
    h.claiming = true;
    try {
      const c = await this.#app.store.run("webhook.claim", {
        endpointId,
        limit: room,
        leaseMs: this.#leaseMs,
      });
      const events: HookEvent[] = [
        ...c.revoked.map((ev) => ({
          kind: "revoked" as const,
          id: eventIdOf("revoked", ev.seq),
          ev,
        })),
        ...c.receipts.map((ev) => ({
          kind: "receipt" as const,
          id: eventIdOf("receipt", ev.receiptId),
          ev,
        })),
        ...c.msgs.map((ev) => ({ kind: "msg" as const, id: eventIdOf("msg", ev.seq), ev })),
      ];
      const full = events.length >= room;
      for (const e of events) {
        h.inflight++;
        void this.#send(h, e).finally(() => {
          h.inflight--;
          if (full) this.#schedule(endpointId);
        });
      }
    } catch (err) {
      this.#app.log.warn("webhooks: claim failed", {
        endpoint_id: endpointId,
        error: (err as Error).message,
      });
    } finally {
      h.claiming = false;
      if (h.again) {
        h.again = false;
        this.#schedule(endpointId);
      }
    }
  }

  async #body(e: HookEvent): Promise<string | null> {
    if (e.kind === "receipt") return new TextDecoder().decode(receiptFrame(e.ev));
    if (e.kind === "revoked") {
      return new TextDecoder().decode(revokedFrame({
        endpointId: "",
        connCode: null,
        msgId: e.ev.msgId,
        from: e.ev.senderId,
        reason: e.ev.reason,
      }));
    }
    const frame = await this.#frames.get(e.ev);
    return frame === null ? null : new TextDecoder().decode(frame);
  }

  #request(url: URL, secret: string, id: string, body: string): Promise<PostResult> {
    const ts = Math.floor(this.#app.clock() / 1000);
    return postWebhook(url, body, {
      "webhook-id": id,
      "webhook-timestamp": String(ts),
      "webhook-signature": sign(secret, id, ts, body),
    }, this.#post);
  }

  async #send(h: Hook, e: HookEvent): Promise<void> {
    const endpointId = h.row.endpointId;
    const store = this.#app.store;
    try {
      const body = await this.#body(e);
      if (body === null && e.kind === "msg") {
        // The message ended meanwhile (its body is gone): release the mark; a `revoked` is owed.
        await store.run("webhook.retry", {
          endpointId,
          kind: "msg",
          key: e.ev.seq,
          dueAt: this.#app.clock(),
        });
        return;
      }
      if (body === null || h.url === null) return;
      const r = await this.#request(h.url, h.row.secret, e.id, body);
      this.#record(endpointId, e.kind, e.id, r);
      if (r.ok) await this.#succeeded(endpointId, e);
      else await this.#failed(endpointId, e);
    } catch (err) {
      // The store refused (busy, closing): the lease runs out and the event is sent again.
      this.#app.log.warn("webhooks: event bookkeeping failed", {
        endpoint_id: endpointId,
        event_id: e.id,
        error: (err as Error).message,
      });
    }
  }

  async #succeeded(endpointId: string, e: HookEvent): Promise<void> {
    const store = this.#app.store;
    this.#tries.delete(e.id);
    if (e.kind === "msg") {
      const a = await store.run("delivery.ack", {
        endpointId,
        from: e.ev.senderId,
        id: e.ev.msgId,
      });
      // The receipts go to the sender (MQTT or its webhook); applying them also drops the frames
      // of messages that ended.
      this.#app.messaging.apply({ receipts: a.receipts });
      if (a.completed || a.result !== "accepted") {
        void this.#frames.release(e.ev.senderId, e.ev.msgId);
      }
      // Acked after it ended (recalled, expired…): the receiver must hear `revoked` (spec 6.3).
      if (a.result !== "accepted") {
        await store.run("webhook.retry", {
          endpointId,
          kind: "revoked",
          key: e.ev.seq,
          dueAt: this.#app.clock(),
        });
        this.#schedule(endpointId);
      }
    } else if (e.kind === "receipt") {
      await store.run("receipt.ack", { senderId: endpointId, receiptId: e.ev.receiptId });
    } else {
      await store.run("webhook.retry", { endpointId, kind: "revoked", key: e.ev.seq, dueAt: null });
    }
  }

  async #failed(endpointId: string, e: HookEvent): Promise<void> {
    const w = this.#app.config.webhooks;
    const n = e.kind === "msg" ? e.ev.attempts : (this.#tries.get(e.id) ?? 0) + 1;
    const wait = backoffMs(n, w.retry_initial_ms, w.retry_max_seconds * 1000);
    let dueAt: number | null = this.#app.clock() + wait;
    if (e.kind === "revoked" && n >= REVOKED_MAX_TRIES) dueAt = null;
    if (e.kind !== "msg") {
      if (dueAt === null) this.#tries.delete(e.id);
      else {
        if (this.#tries.size >= MAX_TRIES_KEPT) this.#tries.clear();
        this.#tries.set(e.id, n);
      }
    }
    const key = e.kind === "receipt" ? e.ev.receiptId : e.ev.seq;
    const r = await this.#app.store.run("webhook.retry", { endpointId, kind: e.kind, key, dueAt });
    if (e.kind === "msg" && !r.changed) {
      // It ended while the POST was out (recalled, expired…): the `revoked` is due now.
      await this.#app.store.run("webhook.retry", {
        endpointId,
        kind: "revoked",
        key,
        dueAt: this.#app.clock(),
      });
      this.#schedule(endpointId);
    }
  }

  #record(endpointId: string, kind: WebhookEventKind, eventId: string, r: PostResult) {
    countWebhookAttempt(kind, r.error, r.status, r.ms);
    const attempt: WebhookAttempt = {
      at: this.#app.clock(),
      kind,
      eventId,
      ok: r.ok,
      status: r.status,
      error: r.error,
      ms: r.ms,
    };
    const h = this.#hooks.get(endpointId);
    if (h !== undefined) {
      h.recent.push(attempt);
      if (h.recent.length > RECENT) h.recent.shift();
      // One line when a webhook starts failing and one when it recovers; never the body or URL.
      if (!r.ok && !h.failing && kind !== "test") {
        h.failing = true;
        this.#app.log.warn("webhook failing", {
          endpoint_id: endpointId,
          status: r.status,
          error: r.error,
        });
      } else if (r.ok && h.failing) {
        h.failing = false;
        this.#app.log.info("webhook recovered", { endpoint_id: endpointId });
      }
    }
    return attempt;
  }
}
