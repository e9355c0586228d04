import type { Store } from "../../store/store.ts";
import { encodeBodyData, encodeFrame, type RequestOf } from "../../protocol/mod.ts";
import type { ReceiptRow } from "../../store/ops/receipts.ts";
import type { RevokedNotice } from "./effects.ts";

/** Most bytes of encoded `msg` frames kept for reuse across recipients (spec 7.5). */
const CACHE_BYTES = 64 * 1024 * 1024;

/** The message a claimed delivery expects at `seq` (a `ClaimedDelivery` fits). */
export interface FrameKey {
  readonly seq: number;
  readonly senderId: string;
  readonly msgId: string;
  readonly sendAt: number;
}

interface CachedFrame {
  readonly bytes: Uint8Array;
  readonly senderId: string;
  readonly msgId: string;
  readonly sendAt: number;
}

type Identity = Pick<FrameKey, "senderId" | "msgId" | "sendAt">;

/** What a `msg` frame says (spec 6.3), the body already in its wire form. */
export interface MsgFrameFields {
  readonly id: string;
  readonly senderId: string;
  readonly destKind: "endpoint" | "group";
  readonly destId: string;
  readonly bodyEnc: "utf8" | "base64";
  readonly contentType: string;
  /** The body as `body.data` carries it: text for utf8, canonical base64 otherwise. */
  readonly data: string;
  readonly meta: Record<string, unknown>;
  readonly sendAt: number;
}

function sameMessage(a: Identity, b: Identity): boolean {
  return a.senderId === b.senderId && a.msgId === b.msgId && a.sendAt === b.sendAt;
}

function msgKey(senderId: string, msgId: string): string {
  return `${senderId}\u0000${msgId}`;
}

/**
 * Encoded `msg` frames by message seq. A group message's frame is the same for every member, so
 * it is serialized once and shared (spec 6.3, 7.5). A frame is dropped when the last delivery of
 * its message ends ({@link MsgFrameCache.release}); an LRU bound caps the rest.
 *
 * Since migration 2 `seq` is AUTOINCREMENT and never handed out twice; every lookup still states
 * which message it expects, so a frame of another message is never returned.
 */
export class MsgFrameCache {
  #store: Pick<Store, "query">;
  #frames = new Map<number, CachedFrame>();
  /** sender + message id -> seq of the cached frame. */
  #seqs = new Map<string, number>();
  #bytes = 0;

  constructor(store: Pick<Store, "query">) {
    this.#store = store;
  }

  /** Bytes of frames held. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Frames held. */
  get size(): number {
    return this.#frames.size;
  }

  /**
   * A delivery of `senderId`/`msgId` ended (acked, dropped, expired, recalled): drops the frame
   * when no delivery of that message is pending any more. Call after the ending op committed.
   * Resolves once decided; a failed read keeps the frame (the LRU bound still applies).
   */
  async release(senderId: string, msgId: string): Promise<void> {
    const seq = this.#seqs.get(msgKey(senderId, msgId));
    if (seq === undefined) return;
    let pending: boolean;
    try {
      pending = await this.#store.query("message.any_pending", { seq });
    } catch {
      return;
    }
    if (!pending) this.#drop(seq);
  }

  /** The message `senderId`/`msgId` completed (an op said so): drops its frame, no read. */
  completed(senderId: string, msgId: string): void {
    const seq = this.#seqs.get(msgKey(senderId, msgId));
    if (seq !== undefined) this.#drop(seq);
  }

  #drop(seq: number): void {
    const hit = this.#frames.get(seq);
    if (hit === undefined) return;
    this.#frames.delete(seq);
    this.#seqs.delete(msgKey(hit.senderId, hit.msgId));
    this.#bytes -= hit.bytes.length;
  }

  /**
   * The cached frame of `key`, or undefined when it must be read ({@link MsgFrameCache.get}).
   * Synchronous, so a push of a cached frame waits for nothing.
   */
  cached(key: FrameKey): Uint8Array | undefined {
    const hit = this.#frames.get(key.seq);
    if (hit) {
      if (sameMessage(hit, key)) {
        this.#frames.delete(key.seq);
        this.#frames.set(key.seq, hit); // most recently used last
        return hit.bytes;
      }
      this.#drop(key.seq);
    }
    return undefined;
  }

  /** The frame of `key`, or null when that message or its body is gone (completed meanwhile). */
  async get(key: FrameKey): Promise<Uint8Array | null> {
    const hit = this.cached(key);
    if (hit !== undefined) return hit;
    const src = await this.#store.query("message.frame_source", { seq: key.seq });
    if (!src) return null;
    const found: Identity = { senderId: src.senderId, msgId: src.id, sendAt: src.sendAt };
    if (!sameMessage(found, key)) return null;
    return this.#put(key.seq, {
      ...src,
      data: encodeBodyData(src.bodyEnc, src.body),
      meta: JSON.parse(src.meta),
    });
  }

  /**
   * Caches the frame of message `seq` from the `send` request that just committed it, so the
   * first push of a fresh message needs no read of its body (issue 19). Same bytes as
   * {@link MsgFrameCache.get} would build from the stored row.
   */
  prime(seq: number, msg: MsgFrameFields): void {
    if (this.#frames.has(seq)) return;
    this.#put(seq, msg);
  }

  #put(seq: number, msg: MsgFrameFields): Uint8Array {
    const bytes = encodeFrame({
      v: 1,
      type: "msg",
      id: msg.id,
      from: msg.senderId,
      to: { kind: msg.destKind, id: msg.destId },
      body: { enc: msg.bodyEnc, content_type: msg.contentType, data: msg.data },
      meta: msg.meta,
      send_at_ms: msg.sendAt,
    });
    this.#frames.set(seq, { bytes, senderId: msg.senderId, msgId: msg.id, sendAt: msg.sendAt });
    this.#seqs.set(msgKey(msg.senderId, msg.id), seq);
    this.#bytes += bytes.length;
    for (const k of this.#frames.keys()) {
      if (this.#bytes <= CACHE_BYTES) break;
      this.#drop(k);
    }
    return bytes;
  }
}

/**
 * The `msg` frame fields of a `send` request as committed: `meta` is its stored (canonical)
 * text and `sendAt` the committed send time.
 */
export function msgFieldsOfSend(
  senderId: string,
  frame: RequestOf<"send">,
  meta: string,
  sendAt: number,
): MsgFrameFields {
  return {
    id: frame.id,
    senderId,
    destKind: frame.to.kind,
    destId: frame.to.id,
    bodyEnc: frame.body.enc,
    contentType: frame.body.content_type,
    data: frame.body.data,
    meta: JSON.parse(meta),
    sendAt,
  };
}

/** The `receipt` frame of a receipt row (spec 6.4). */
export function receiptFrame(r: ReceiptRow): Uint8Array {
  return encodeFrame({
    v: 1,
    type: "receipt",
    receipt_id: String(r.receiptId),
    id: r.msgId,
    endpoint_id: r.endpointId,
    state: r.state,
    reason: r.reason,
    at_ms: r.atMs,
  });
}

/** The `revoked` frame of a notice (spec 6.4). */
export function revokedFrame(n: RevokedNotice): Uint8Array {
  return encodeFrame({ v: 1, type: "revoked", id: n.msgId, from: n.from, reason: n.reason });
}
