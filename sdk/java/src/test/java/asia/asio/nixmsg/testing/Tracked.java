package asia.asio.nixmsg.testing;

import asia.asio.nixmsg.ConnectOptions;
import asia.asio.nixmsg.ConnectionEvent;
import asia.asio.nixmsg.ConnectionState;
import asia.asio.nixmsg.Credential;
import asia.asio.nixmsg.GroupEvent;
import asia.asio.nixmsg.Message;
import asia.asio.nixmsg.NixMsgClient;
import asia.asio.nixmsg.PresenceEvent;
import asia.asio.nixmsg.Receipt;
import asia.asio.nixmsg.Revoked;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/** A client with every callback recorded, for the integration tests. */
public final class Tracked {
  private static final List<NixMsgClient> OPEN = new CopyOnWriteArrayList<>();

  public final NixMsgClient client;
  public final Events<Message> messages = new Events<>();
  public final Events<Receipt> receipts = new Events<>();
  public final Events<Revoked> revoked = new Events<>();
  public final Events<PresenceEvent> presence = new Events<>();
  public final Events<GroupEvent> groupEvents = new Events<>();
  public final Events<ConnectionEvent> states = new Events<>();
  public final Events<String> sessions = new Events<>();
  public final Events<Throwable> callbackErrors = new Events<>();

  private Tracked(String url, String id, Credential credential, ConnectOptions.Builder options) {
    client =
        NixMsgClient.create(
            url, id, credential, options.onCallbackError(callbackErrors::push).build());
    OPEN.add(client);
    client.onMessage(messages::push);
    client.onReceipt(receipts::push);
    client.onRevoked(revoked::push);
    client.onPresence(presence::push);
    client.onGroupEvent(groupEvents::push);
    client.onConnection(states::push);
    client.onSession(sessions::push);
    client.start();
  }

  /** Connects and records every callback; does not wait for the handshake. */
  public static Tracked track(String url, String id, Credential credential, ConnectOptions.Builder options) {
    return new Tracked(url, id, credential, options);
  }

  public static Tracked track(String url, String id, Credential credential) {
    return track(url, id, credential, ConnectOptions.builder());
  }

  /** Connects with the password and waits until online (the state event included). */
  public static Tracked online(String url, Harness.Endpoint ep, ConnectOptions.Builder options)
      throws Exception {
    Tracked t = track(url, ep.id, Credential.password(ep.password), options);
    t.client.ready().get(Events.WAIT_MS, TimeUnit.MILLISECONDS);
    t.states.waitFor(s -> s.state() == ConnectionState.ONLINE, ep.id + " online");
    return t;
  }

  public static Tracked online(String url, Harness.Endpoint ep) throws Exception {
    return online(url, ep, ConnectOptions.builder());
  }

  public ConnectionEvent waitState(ConnectionState s) throws InterruptedException {
    return states.waitFor(e -> e.state() == s, s.wireName());
  }

  public static Predicate<Message> byId(String id) {
    return m -> m.id().equals(id);
  }

  /** Closes every client created so far (call in {@code @AfterAll}). */
  public static void closeAll() {
    List<java.util.concurrent.CompletableFuture<Void>> closing = new java.util.ArrayList<>();
    for (NixMsgClient c : OPEN) closing.add(c.closeAsync());
    try {
      java.util.concurrent.CompletableFuture.allOf(closing.toArray(new java.util.concurrent.CompletableFuture<?>[0]))
          .get(NixMsgClient.CLOSE_TIMEOUT_MS + 5000, TimeUnit.MILLISECONDS);
    } catch (Exception ignored) {
      // best effort
    }
    OPEN.clear();
  }
}
