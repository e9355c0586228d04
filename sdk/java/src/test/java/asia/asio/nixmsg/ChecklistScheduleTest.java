package asia.asio.nixmsg;

import static asia.asio.nixmsg.testing.Checks.await;
import static asia.asio.nixmsg.testing.Tracked.byId;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import asia.asio.nixmsg.testing.Harness;
import asia.asio.nixmsg.testing.HarnessTest;
import asia.asio.nixmsg.testing.Tracked;
import org.junit.jupiter.api.Test;

/**
 * Checklist items 5, 6 and 7 (spec 9 接入清单): recall within a delay, scheduled sends, and
 * keeping messages for offline recipients.
 */
class ChecklistScheduleTest extends HarnessTest {
  @Test
  void checklist05RecallWithinDelay() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ea);
    Tracked b = Tracked.online(h.wsUrl(), eb);
    SendOptions delayed = SendOptions.builder().delayMs(10_000).build();
    SendResult recalled = await(a.client.send(eb.id, "recall me", delayed));
    // Due no earlier than the recalled one: it would have been pushed first (spec 7.5 order).
    SendResult marker = await(a.client.send(eb.id, "marker", delayed));
    assertEquals("scheduled", recalled.state());
    RecallResult r = await(a.client.recall(recalled.id()));
    assertEquals(new RecallResult("recalled", 0, 0, 0), r);
    StatusResult status = await(a.client.status(recalled.id()));
    assertEquals("completed", status.state());
    assertEquals("recalled", status.reason());
    b.messages.waitFor(byId(marker.id()), "the marker after its delay", 20_000);
    assertEquals(0, b.messages.count(byId(recalled.id())), "no callback for the recalled message");
    assertEquals(0, a.receipts.count(x -> x.id().equals(recalled.id())), "a recall sends no receipt");
  }

  @Test
  void checklist06ScheduledTwoSecondsAhead() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ea);
    Tracked b = Tracked.online(h.wsUrl(), eb);
    long at = System.currentTimeMillis() + 2000;
    SendResult sent = await(a.client.send(eb.id, "at time", SendOptions.builder().sendAt(at).build()));
    assertEquals("scheduled", sent.state());
    assertTrue(
        Math.abs(sent.sendAtMs() - (at + a.client.clockOffsetMs())) <= 1,
        "sendAt converted with the clock offset");
    Message got = b.messages.waitFor(byId(sent.id()), "the scheduled message", 10_000);
    long arrivedServerTime = b.client.serverNow();
    assertEquals(sent.sendAtMs(), got.sendAtMs());
    assertTrue(
        arrivedServerTime >= sent.sendAtMs() - 100,
        "arrived " + (sent.sendAtMs() - arrivedServerTime) + " ms early");
    assertTrue(arrivedServerTime <= sent.sendAtMs() + 3000, "arrived late");
  }

  @Test
  void checklist07KeptForOfflineRecipientExpiredNeverArrives() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ea);
    // B is offline. A message that is not kept is dropped; a kept one waits.
    SendResult dropped = await(a.client.send(eb.id, "not kept"));
    SendResult kept =
        await(a.client.send(eb.id, "kept", SendOptions.builder().keep(true).ttl(60).build()));
    SendResult shortLived =
        await(a.client.send(eb.id, "kept 1 s", SendOptions.builder().keep(true).ttl(1).build()));
    Receipt d = a.receipts.waitFor(r -> r.id().equals(dropped.id()), "the dropped receipt");
    assertEquals("dropped", d.state());
    Receipt e = a.receipts.waitFor(r -> r.id().equals(shortLived.id()), "the expired receipt", 10_000);
    assertEquals("expired", e.state());
    assertEquals(eb.id, e.endpointId());

    // B comes online later: it gets the kept message, not the dropped or the expired one.
    Tracked b = Tracked.online(h.wsUrl(), eb);
    Message got = b.messages.waitFor(byId(kept.id()), "the kept message");
    assertEquals("kept", got.text());
    SendResult marker = await(a.client.send(eb.id, "marker"));
    b.messages.waitFor(byId(marker.id()), "the marker");
    assertEquals(0, b.messages.count(byId(dropped.id())));
    assertEquals(0, b.messages.count(byId(shortLived.id())));
    Receipt accepted = a.receipts.waitFor(r -> r.id().equals(kept.id()), "the kept receipt");
    assertEquals("accepted", accepted.state());
  }
}
