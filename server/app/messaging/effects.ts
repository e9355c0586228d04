import type { ReceiptRow } from "../../store/ops/receipts.ts";
import type { RevokeReason } from "../../protocol/frames.ts";
import type { Bookkeeping } from "./bookkeeping.ts";
import type { MsgFrameFields } from "./frames.ts";
import type { ClaimTicket } from "./push_loop.ts";

/** A `revoked` frame owed to a connection that was pushed a delivery (spec 6.4, 7.6). */
export interface RevokedNotice {
  /** The recipient endpoint. */
  readonly endpointId: string;
  /** The connection the delivery was pushed to; the notice goes only there (best effort). */
  readonly connCode: string | null;
  readonly msgId: string;
  /** The sender of the message. */
  readonly from: string;
  readonly reason: RevokeReason;
}

/**
 * What a committed writer op asks of the live side: push loops to wake, receipts to push to
 * their senders, `revoked` frames to send. Every use case hands its op result's effects to
 * `Messaging.apply` after the commit.
 */
export interface Effects {
  /** Endpoints that got new pending deliveries. */
  readonly wake?: readonly string[];
  /** Receipts written by the op. */
  readonly receipts?: readonly ReceiptRow[];
  readonly revoked?: readonly RevokedNotice[];
  /**
   * The op already told the frame cache whether the messages of `receipts` ended
   * ({@link Messaging.acked}), so their frames need no check against the database.
   */
  readonly framesSettled?: boolean;
}

/** The messaging runtime as other use cases (groups, admin) see it. */
export interface Messaging {
  /** Applies the live side effects of a committed op. Never throws. */
  apply(fx: Effects): void;
  /** A message was scheduled: re-arm the scheduler timer. */
  scheduled(sendAt: number): void;
  /**
   * A recipient acked `from`/`id`; frees the window slot where it was pushed (spec 6.3).
   * `completed`: the ack ended the message's last pending delivery, so its frame can go.
   * `lentBy`: the connection whose push loop lent its claim to this ack (it needs no wake).
   */
  acked(
    endpointId: string,
    from: string,
    id: string,
    pushedTo: string | null,
    completed: boolean,
    lentBy?: string | null,
  ): void;
  /**
   * The push loop of connection `connCode` lends its claim to the ack of `from`/`id` arriving
   * there (see {@link ClaimTicket}); null when it cannot.
   */
  lendClaim(connCode: string, from: string, id: string): ClaimTicket | null;
  /**
   * The current push loop of `endpointId` lends its claim to a `message.submit` to it, which
   * then marks the new delivery in its own transaction (issue 33); null when it cannot.
   */
  lendClaimTo(endpointId: string): ClaimTicket | null;
  /** A `send` just committed message `seq` as dispatched: cache its frame for the push. */
  prime(seq: number, msg: MsgFrameFields): void;
  /** A sender acked a receipt on connection `connCode` (spec 6.4). */
  receiptAcked(connCode: string, receiptId: number): void;
  /** Runs connection and delivery bookkeeping ops until they commit (spec 7.5). */
  readonly bookkeeping: Bookkeeping;
}
