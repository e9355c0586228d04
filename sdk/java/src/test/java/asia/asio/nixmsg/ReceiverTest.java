package asia.asio.nixmsg;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The receiving rules of spec 9 ("接收"), with callbacks run inline. */
class ReceiverTest {
  final List<String> acks = new ArrayList<>();
  final List<String> receiptAcks = new ArrayList<>();
  final List<Throwable> errors = new ArrayList<>();
  String ackResult = "accepted";

  Receiver receiver(AckMode mode) {
    return new Receiver(
        new Receiver.Host() {
          @Override
          public CompletableFuture<String> sendAck(String from, String id) {
            acks.add(from + "/" + id);
            return CompletableFuture.completedFuture(ackResult);
          }

          @Override
          public void sendReceiptAck(String receiptId) {
            receiptAcks.add(receiptId);
          }

          @Override
          public void onCallbackError(Throwable error) {
            errors.add(error);
          }
        },
        mode,
        100,
        Runnable::run);
  }

  static Message msg(String from, String id) {
    return new Message(id, from, Target.endpoint("me"), "x", "", Collections.emptyMap(), 0);
  }

  @Test
  void aRepushIsDeliveredOnceAndAckedAgain() {
    Receiver r = receiver(AckMode.AUTO);
    List<String> seen = new ArrayList<>();
    r.messages.add(m -> seen.add(m.id()));
    r.message(msg("a", "1"));
    r.message(msg("a", "1"));
    r.message(msg("b", "1"));
    assertEquals(List.of("1", "1"), seen, "a/1 once, b/1 once");
    assertEquals(List.of("a/1", "a/1", "b/1"), acks, "the repeated a/1 is acked again");
  }

  @Test
  void aThrowingCallbackLeavesTheMessageUnackedForTheRepush() {
    Receiver r = receiver(AckMode.AUTO);
    int[] calls = {0};
    r.messages.add(
        m -> {
          if (++calls[0] == 1) throw new IllegalStateException("app failure");
        });
    r.message(msg("a", "1"));
    assertEquals(0, acks.size());
    assertEquals(1, errors.size());
    r.message(msg("a", "1"));
    assertEquals(2, calls[0], "processed again");
    assertEquals(List.of("a/1"), acks);
  }

  @Test
  void manualModeAcksOnlyOnAckAndANonAcceptedResultIsRevoked() {
    Receiver r = receiver(AckMode.MANUAL);
    List<Revoked> revoked = new ArrayList<>();
    r.revoked.add(revoked::add);
    r.messages.add(m -> {});
    r.message(msg("a", "1"));
    assertEquals(0, acks.size());
    ackResult = "expired";
    r.ack("a", "1").join();
    assertEquals(List.of("a/1"), acks);
    assertEquals(1, revoked.size());
    assertEquals("expired", revoked.get(0).reason());
  }

  @Test
  void messagesWaitForAnOnMessageCallbackAndRevokedOnesAreDropped() {
    Receiver r = receiver(AckMode.AUTO);
    r.message(msg("a", "1"));
    r.message(msg("a", "2"));
    r.revoke(new Revoked("2", "a", "recalled"));
    List<String> seen = new ArrayList<>();
    r.messages.add(m -> seen.add(m.id()));
    r.flushHeld();
    assertEquals(List.of("1"), seen);
    assertEquals(List.of("a/1"), acks);
  }

  @Test
  void receiptsAreDedupedAndAlwaysAcked() {
    Receiver r = receiver(AckMode.AUTO);
    List<String> seen = new ArrayList<>();
    r.receipts.add(x -> seen.add(x.receiptId()));
    Receipt rc = new Receipt("7", "m", "b", "accepted", "", 0);
    r.receipt(rc);
    r.receipt(rc);
    assertEquals(List.of("7"), seen);
    assertEquals(List.of("7", "7"), receiptAcks);
  }
}
