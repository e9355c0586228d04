package asia.asio.nixmsg;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * The receiving rules of spec 9 ("接收") and spec 6.4 ({@code revoked}): dedup by from + id,
 * serial callbacks, acks in auto or manual mode, receipts deduped by {@code receipt_id} and acked.
 * The dedup records are guarded by this object's lock; callbacks run on the serial executor
 * without it.
 */
final class Receiver {
  /** What the receiver needs from the client. */
  interface Host {
    /**
     * Sends {@code ack} and completes with {@code data.result}, or null when it could not be sent
     * or answered (the server pushes the message again and it is acked again then).
     */
    CompletableFuture<String> sendAck(String from, String id);

    /** Sends {@code receipt_ack}, best effort. */
    void sendReceiptAck(String receiptId);

    void onCallbackError(Throwable error);
  }

  private enum MsgState {
    QUEUED,
    DELIVERED,
    ACKED,
    REVOKED
  }

  private enum ReceiptState {
    HANDLING,
    DONE
  }

  final Listeners<Message> messages = new Listeners<>();
  final Listeners<Receipt> receipts = new Listeners<>();
  final Listeners<Revoked> revoked = new Listeners<>();
  final Listeners<PresenceEvent> presence = new Listeners<>();
  final Listeners<GroupEvent> groupEvents = new Listeners<>();
  private final Host host;
  private final AckMode ackMode;
  private final Executor callbacks;
  private final DedupCache<MsgState> seen;
  private final DedupCache<ReceiptState> receiptsSeen;
  private final List<Message> held = new ArrayList<>();
  /**
   * Set when close begins: messages not handed to the application yet stay unacked (the server
   * pushes them again at the next login); nothing new reaches the callbacks.
   */
  volatile boolean closing;

  Receiver(Host host, AckMode ackMode, int dedupCapacity, Executor callbacks) {
    this.host = host;
    this.ackMode = ackMode;
    this.callbacks = callbacks;
    this.seen = new DedupCache<>(dedupCapacity);
    this.receiptsSeen = new DedupCache<>(dedupCapacity);
  }

  /** A {@code msg} arrived (spec 6.3, 9). */
  void message(Message msg) {
    if (closing) return;
    String key = DedupCache.messageKey(msg.from(), msg.id());
    synchronized (this) {
      MsgState state = seen.get(key);
      if (state == null) {
        seen.set(key, MsgState.QUEUED);
      } else {
        // Acked before: the earlier ack may have been lost; without a new one the server pushes
        // forever. Queued, delivered but not acked, or revoked: ignore.
        if (state == MsgState.ACKED) sendAck(msg.from(), msg.id());
        return;
      }
    }
    enqueue(msg);
  }

  private void enqueue(Message msg) {
    callbacks.execute(() -> deliver(msg));
  }

  private void deliver(Message msg) {
    String key = DedupCache.messageKey(msg.from(), msg.id());
    synchronized (this) {
      // Withdrawn before the app saw it, or closing: left unacked.
      if (seen.get(key) == MsgState.REVOKED || closing) return;
      if (messages.size() == 0) {
        // Without an onMessage callback, messages wait (unacked) without blocking other events.
        held.add(msg);
        return;
      }
      seen.set(key, MsgState.DELIVERED);
    }
    try {
      messages.run(msg);
    } catch (Throwable t) {
      host.onCallbackError(t);
      // No ack: forget it, so that the server's next push is processed again.
      synchronized (this) {
        if (seen.get(key) == MsgState.DELIVERED) seen.delete(key);
      }
      return;
    }
    boolean ack;
    synchronized (this) {
      ack = ackMode == AckMode.AUTO && seen.get(key) == MsgState.DELIVERED;
      if (ack) seen.set(key, MsgState.ACKED);
    }
    if (ack) sendAck(msg.from(), msg.id());
  }

  /** An onMessage callback was added: messages held for lack of one are delivered now. */
  void flushHeld() {
    List<Message> all;
    synchronized (this) {
      all = new ArrayList<>(held);
      held.clear();
    }
    for (Message m : all) enqueue(m);
  }

  /**
   * Acks a message the application has handled (manual mode). A message already revoked is not
   * acked. When the ack cannot be sent now, the next push of the message is acked at once.
   */
  CompletableFuture<Void> ack(String from, String id) {
    synchronized (this) {
      String key = DedupCache.messageKey(from, id);
      if (seen.get(key) == MsgState.REVOKED) return CompletableFuture.completedFuture(null);
      seen.set(key, MsgState.ACKED);
    }
    return sendAck(from, id);
  }

  private CompletableFuture<Void> sendAck(String from, String id) {
    return host.sendAck(from, id)
        .thenAccept(
            result -> {
              // spec 9: an ack whose result is not "accepted" counts as "revoked".
              if (result != null && !"accepted".equals(result)) {
                Revoked r = new Revoked(id, from, result);
                callbacks.execute(() -> run(revoked, r));
              }
            });
  }

  /** A {@code revoked} frame arrived (spec 6.4). */
  void revoke(Revoked frame) {
    String key = DedupCache.messageKey(frame.from(), frame.id());
    boolean notify = false;
    synchronized (this) {
      MsgState state = seen.get(key);
      if (state == MsgState.QUEUED) {
        seen.set(key, MsgState.REVOKED); // dropped when its turn comes
      } else if (state == MsgState.DELIVERED) {
        seen.set(key, MsgState.REVOKED); // not acked any more; tell the application
        notify = true;
      }
      // acked, revoked or unknown: nothing to do.
    }
    if (notify) callbacks.execute(() -> run(revoked, frame));
  }

  /** A {@code receipt} arrived (spec 6.4): deduped by {@code receipt_id}, always acked. */
  void receipt(Receipt r) {
    synchronized (this) {
      ReceiptState state = receiptsSeen.get(r.receiptId());
      if (state == ReceiptState.HANDLING) return;
      if (state == null) receiptsSeen.set(r.receiptId(), ReceiptState.HANDLING);
      else {
        host.sendReceiptAck(r.receiptId());
        return;
      }
    }
    callbacks.execute(
        () -> {
          try {
            receipts.run(r);
          } catch (Throwable t) {
            host.onCallbackError(t);
            synchronized (this) {
              receiptsSeen.delete(r.receiptId());
            }
            return;
          }
          synchronized (this) {
            receiptsSeen.set(r.receiptId(), ReceiptState.DONE);
          }
          host.sendReceiptAck(r.receiptId());
        });
  }

  /** A {@code presence} notice (spec 6.5), best effort, no ack. */
  void presenceEvent(PresenceEvent e) {
    callbacks.execute(() -> run(presence, e));
  }

  /** A {@code group_event} (spec 6.7), best effort, no ack. */
  void groupEvent(GroupEvent e) {
    callbacks.execute(() -> run(groupEvents, e));
  }

  private <T> void run(Listeners<T> listeners, T event) {
    try {
      listeners.run(event);
    } catch (Throwable t) {
      host.onCallbackError(t);
    }
  }
}
