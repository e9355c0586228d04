import type { DatabaseSync } from "node:sqlite";
import { frameSource } from "../../store/queries/status.ts";
import { encodeBodyData, encodeFrame } from "../../protocol/mod.ts";
import type { ReceiptRow } from "../../store/ops/receipts.ts";
import type { RevokedNotice } from "./effects.ts";

/** Most bytes of encoded `msg` frames kept for reuse across recipients (spec 7.5). */
const CACHE_BYTES = 64 * 1024 * 1024;

/**
 * Encoded `msg` frames by message seq. A group message's frame is the same for every member, so
 * it is serialized once and shared (spec 6.3, 7.5); an LRU bound keeps memory flat.
 */
export class MsgFrameCache {
  #db: DatabaseSync;
  #frames = new Map<number, Uint8Array>();
  #bytes = 0;

  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  /** The frame of `seq`, or null when the message body is gone (completed meanwhile). */
  get(seq: number): Uint8Array | null {
    const hit = this.#frames.get(seq);
    if (hit) {
      this.#frames.delete(seq);
      this.#frames.set(seq, hit); // most recently used last
      return hit;
    }
    const src = frameSource(this.#db, seq);
    if (!src) return null;
    const bytes = encodeFrame({
      v: 1,
      type: "msg",
      id: src.id,
      from: src.senderId,
      to: { kind: src.destKind, id: src.destId },
      body: {
        enc: src.bodyEnc,
        content_type: src.contentType,
        data: encodeBodyData(src.bodyEnc, src.body),
      },
      meta: JSON.parse(src.meta),
      send_at_ms: src.sendAt,
    });
    this.#frames.set(seq, bytes);
    this.#bytes += bytes.length;
    for (const [k, v] of this.#frames) {
      if (this.#bytes <= CACHE_BYTES) break;
      this.#frames.delete(k);
      this.#bytes -= v.length;
    }
    return bytes;
  }
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
