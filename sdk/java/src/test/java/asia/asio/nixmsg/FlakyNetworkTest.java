package asia.asio.nixmsg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import asia.asio.nixmsg.testing.Harness;
import asia.asio.nixmsg.testing.HarnessTest;
import asia.asio.nixmsg.testing.Proxy;
import asia.asio.nixmsg.testing.Tracked;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Exactly once across repeated connection cuts (spec 9 "发送" and "接收"): sends in flight are
 * replayed with the same id, pushes repeated after a lost ack are deduplicated, and every send
 * resolves.
 */
class FlakyNetworkTest extends HarnessTest {
  @Test
  void everyMessageArrivesOnceWhileBothSidesAreCutRepeatedly() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    int n = 150;
    int cuts = 4;
    try (Proxy pa = Proxy.start(h.address());
        Proxy pb = Proxy.start(h.address())) {
      Tracked a = Tracked.online("ws://" + pa.address() + "/mqtt", ea);
      Tracked b =
          Tracked.online(
              "mqtt://" + pb.address(), eb, ConnectOptions.builder().transport(Transport.TCP));
      SendOptions keep = SendOptions.builder().keep(true).build();
      List<CompletableFuture<SendResult>> sends = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        sends.add(a.client.send(eb.id, "m" + i, keep));
        // Cut the sender or the receiver each time another batch has arrived.
        if (i > 0 && i % (n / (cuts + 1)) == 0) {
          int arrived = i / 2;
          b.messages.waitFor(m -> b.messages.count() >= arrived, arrived + " messages", 30_000);
          if ((i / (n / (cuts + 1))) % 2 == 1) pa.cut();
          else pb.cut();
        }
      }
      Map<String, String> sentIds = new HashMap<>();
      for (int i = 0; i < n; i++) {
        sentIds.put(sends.get(i).get(60, TimeUnit.SECONDS).id(), "m" + i);
      }
      assertEquals(n, sentIds.size(), "every send resolved with its own id");
      b.messages.waitFor(m -> b.messages.count() >= n, "all messages", 60_000);
      SendResult marker = a.client.send(eb.id, "marker", keep).get(30, TimeUnit.SECONDS);
      b.messages.waitFor(Tracked.byId(marker.id()), "the marker", 30_000);
      Map<String, Integer> seen = new HashMap<>();
      for (Message m : b.messages.items()) seen.merge(m.id(), 1, Integer::sum);
      for (Map.Entry<String, String> e : sentIds.entrySet()) {
        assertEquals(1, seen.getOrDefault(e.getKey(), 0), "message " + e.getValue() + " once");
      }
      assertEquals(n + 1, b.messages.count(), "no duplicate callbacks");
      assertTrue(
          a.states.count(s -> s.state() == ConnectionState.RECONNECTING) >= 2, "A was cut");
      assertTrue(
          b.states.count(s -> s.state() == ConnectionState.RECONNECTING) >= 2, "B was cut");
    }
  }
}
