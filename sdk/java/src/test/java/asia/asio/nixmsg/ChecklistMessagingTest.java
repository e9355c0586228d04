package asia.asio.nixmsg;

import static asia.asio.nixmsg.testing.Checks.await;
import static asia.asio.nixmsg.testing.Checks.failsWith;
import static asia.asio.nixmsg.testing.Tracked.byId;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import asia.asio.nixmsg.testing.Harness;
import asia.asio.nixmsg.testing.HarnessTest;
import asia.asio.nixmsg.testing.Proxy;
import asia.asio.nixmsg.testing.Tracked;
import java.util.Collections;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Checklist items 2, 3, 4 and 11 (spec 9 接入清单): one-to-one messages, sends across a
 * disconnect, resends and lost acks, and the local size limit.
 */
class ChecklistMessagingTest extends HarnessTest {
  static Proxy proxy() throws Exception {
    return closeAtEnd(Proxy.start(h.address()));
  }

  static String via(Proxy p) {
    return "ws://" + p.address() + "/mqtt";
  }

  static SendOptions keep() {
    return SendOptions.builder().keep(true).build();
  }

  @Test
  void checklist02OneToOneDeliveredOnce() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ea);
    Tracked b = Tracked.online(h.wsUrl(), eb, ConnectOptions.builder().transport(Transport.TCP));
    SendResult sent =
        await(
            a.client.send(
                eb.id,
                "你好 <b>&",
                SendOptions.builder().meta(Collections.singletonMap("k", "v")).build()));
    assertTrue(sent.id().matches("^[0-9a-f-]{36}$"), sent.id());
    assertEquals("dispatched", sent.state());
    Message got = b.messages.waitFor(byId(sent.id()), "the message");
    assertTrue(got.isText());
    assertEquals("你好 <b>&", got.text());
    assertEquals(ea.id, got.from());
    assertEquals(Target.endpoint(eb.id), got.to());
    assertEquals(Collections.singletonMap("k", "v"), got.meta());
    assertEquals(sent.sendAtMs(), got.sendAtMs());
    Receipt receipt = a.receipts.waitFor(r -> r.id().equals(sent.id()), "receipt");
    assertEquals("accepted", receipt.state());
    assertEquals(eb.id, receipt.endpointId());

    byte[] bytes = {0, 1, 2, (byte) 253, (byte) 254, (byte) 255};
    SendResult bin =
        await(
            a.client.send(
                eb.id, bytes, SendOptions.builder().contentType("application/x-test").build()));
    Message gotBin = b.messages.waitFor(byId(bin.id()), "the binary message");
    assertFalse(gotBin.isText());
    assertArrayEquals(bytes, gotBin.bytes());
    assertEquals("application/x-test", gotBin.contentType());
    assertEquals(1, b.messages.count(byId(sent.id())), "the callback ran once");
  }

  @Test
  void checklist03SendWhileDisconnectedDeliveredOnceAfterReconnect() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Proxy p = proxy();
    Tracked a = Tracked.online(via(p), ea);
    Tracked b = Tracked.online(h.wsUrl(), eb);
    p.refuse(true);
    p.cut();
    a.waitState(ConnectionState.RECONNECTING);
    CompletableFuture<SendResult> pending = a.client.send(eb.id, "sent while offline", keep());
    assertEquals(0, b.messages.count());
    assertFalse(pending.isDone(), "the send waits for the connection");
    p.refuse(false);
    SendResult sent = await(pending);
    assertEquals(2, a.states.count(s -> s.state() == ConnectionState.ONLINE), "back online");
    b.messages.waitFor(byId(sent.id()), "the queued message");
    SendResult marker = await(a.client.send(eb.id, "marker"));
    b.messages.waitFor(byId(marker.id()), "the marker");
    assertEquals(1, b.messages.count(byId(sent.id())), "delivered once");
    assertEquals(2, b.messages.count());
  }

  @Test
  void checklist04aLostResponseResentWithSameId() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Proxy p = proxy();
    Tracked a = Tracked.online(via(p), ea);
    Tracked b = Tracked.online(h.wsUrl(), eb);
    p.holdDown(true); // the server commits the send, its resp never reaches A
    CompletableFuture<SendResult> pending = a.client.send(eb.id, "resp lost", keep());
    Message got = b.messages.waitFor(m -> m.text().equals("resp lost"), "the message");
    assertFalse(pending.isDone(), "no response reached A");
    p.cut();
    p.holdDown(false);
    SendResult sent = await(pending); // resent after the reconnect; the server answers the original
    assertEquals(got.id(), sent.id(), "the same message id");
    assertTrue(a.states.count(s -> s.state() == ConnectionState.RECONNECTING) >= 1);
    SendResult marker = await(a.client.send(eb.id, "marker"));
    b.messages.waitFor(byId(marker.id()), "the marker");
    assertEquals(1, b.messages.count(byId(sent.id())), "delivered once");
    StatusResult status = await(a.client.status(sent.id()));
    assertEquals(1, status.items().size(), "one delivery");
    assertEquals(eb.id, status.items().get(0).endpointId());
  }

  @Test
  void checklist04bLostAckReackedWithoutSecondCallback() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Proxy p = proxy();
    Tracked a = Tracked.online(h.wsUrl(), ea);
    Tracked b = Tracked.online(via(p), eb);
    AtomicInteger calls = new AtomicInteger();
    b.client.onMessage(
        m -> {
          // The connection dies while the app handles the message: its ack is lost.
          if (calls.incrementAndGet() == 1) p.cut();
        });
    SendResult sent = await(a.client.send(eb.id, "ack lost", keep()));
    b.waitState(ConnectionState.RECONNECTING);
    Receipt receipt = a.receipts.waitFor(r -> r.id().equals(sent.id()), "the receipt");
    assertEquals("accepted", receipt.state(), "the re-ack reached the server");
    assertTrue(p.accepted.count() >= 2, "B reconnected");
    assertEquals(1, calls.get(), "the application saw the message once");
    assertEquals(1, b.messages.count(byId(sent.id())));
  }

  @Test
  void checklist11OverLimitFailsLocally() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ea);
    Tracked b = Tracked.online(h.wsUrl(), eb);
    failsWith("body_too_large", a.client.send(eb.id, new byte[262_145], SendOptions.none()));
    failsWith("body_too_large", a.client.send(eb.id, repeat('x', 262_145)));
    failsWith("frame_too_large", a.client.send(eb.id, repeat('\u0001', 262_144)));
    assertEquals(ConnectionState.ONLINE, a.client.state(), "nothing was published");
    byte[] big = new byte[262_144];
    for (int i = 0; i < big.length; i++) big[i] = (byte) i;
    SendResult sent = await(a.client.send(eb.id, big, SendOptions.none()));
    Message got = b.messages.waitFor(byId(sent.id()), "the 256 KiB message");
    assertArrayEquals(big, got.bytes());
    assertEquals(0, a.states.count(s -> s.state() == ConnectionState.RECONNECTING));
  }

  static String repeat(char c, int n) {
    char[] chars = new char[n];
    java.util.Arrays.fill(chars, c);
    return new String(chars);
  }
}
