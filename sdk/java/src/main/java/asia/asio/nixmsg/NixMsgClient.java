package asia.asio.nixmsg;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.TrustManagerFactory;

/**
 * A connection to a NixMsg server as one endpoint (spec 9). Create it with {@link #connect}; it
 * connects in the background and reconnects until it is closed, logged out, taken over, or
 * refused. Methods return {@link CompletableFuture}s that fail with {@link NixMsgException}.
 * Callbacks run serially on one executor; futures complete on the client's own bounded pool (or
 * {@link ConnectOptions.Builder#completionExecutor}).
 *
 * <p>Threads: every thread the client starts is a daemon and ends when the client has stopped
 * for good ({@link #close()}, {@link #logout()}, {@code KICKED}, {@code AUTH_FAILED}). HiveMQ's
 * Netty event loop runs on daemon threads the SDK gives it, shared by the clients of the JVM,
 * and ends when the last of them has disconnected. RxJava, which HiveMQ uses, starts a few
 * daemon threads once per JVM ({@code RxSchedulerPurge-1} and its computation pool when used)
 * that do not end; they never keep the JVM alive.
 *
 * <pre>{@code
 * try (NixMsgClient client = NixMsgClient.connect(
 *     "wss://relay.example/mqtt", "door-1", Credential.password(password))) {
 *   client.onSession(token -> saveToken(token));
 *   client.onMessage(msg -> System.out.println(msg.from() + ": " + msg.text()));
 *   client.ready(30, TimeUnit.SECONDS).join();
 *   client.send("app-1", "opened").join();
 * }
 * }</pre>
 */
public final class NixMsgClient implements AutoCloseable {
  /** The {@code client} name sent in {@code hello} (spec 6.1). */
  public static final String CLIENT_NAME = "java-sdk/0.1.0";

  /** The default bound of {@link #close()}, in ms (checklist 17). */
  public static final long CLOSE_TIMEOUT_MS = 5000;

  /** How long a blocking close waits for the threads beyond its bound. */
  private static final long THREADS_WAIT_MS = Link.CLOSE_WAIT_MS + 1000;

  private final ClientCore core;
  private final GroupApi groups;

  private NixMsgClient(
      String url, String endpointId, Credential credential, ConnectOptions options) {
    this.core = new ClientCore(url, endpointId, credential, options);
    this.groups = new GroupApi(core::call);
  }

  /**
   * Creates a client and starts connecting: WebSocket to {@code <url path>/mqtt} unless the
   * transport is {@code TCP}. {@code url} may be {@code ws(s)://}, {@code http(s)://} or
   * {@code mqtt(s)://}. Add callbacks right away; messages wait (unacked) until
   * {@code onMessage} has one. Connection events that happen before a callback is added are not
   * replayed to it: use {@link #create} and {@link #start()} to see every one.
   */
  public static NixMsgClient connect(
      String url, String endpointId, Credential credential, ConnectOptions options) {
    NixMsgClient client = create(url, endpointId, credential, options);
    client.start();
    return client;
  }

  /** {@link #connect} with the default options. */
  public static NixMsgClient connect(String url, String endpointId, Credential credential) {
    return connect(url, endpointId, credential, ConnectOptions.defaults());
  }

  /**
   * Creates a client without connecting it: add callbacks, then call {@link #start()}. Unlike
   * {@link #connect}, no event (not even the first {@code CONNECTING}) can happen before the
   * callbacks are in place.
   */
  public static NixMsgClient create(
      String url, String endpointId, Credential credential, ConnectOptions options) {
    return new NixMsgClient(url, endpointId, credential, options);
  }

  /** Starts connecting (once; later calls do nothing). */
  public void start() {
    core.start();
  }

  /**
   * Registers a new endpoint over HTTP (spec 6.9); no connection needed. {@code url} is the
   * connection URL; the HTTP address is derived from it. A generated login password is returned
   * once and not kept by the SDK.
   */
  public static CompletableFuture<RegisterResult> register(
      String url, String registrationCode, RegisterOptions options) {
    return register(url, registrationCode, options, null);
  }

  /** {@link #register} over HTTPS with a caller-supplied trust (a private CA). */
  public static CompletableFuture<RegisterResult> register(
      String url, String registrationCode, RegisterOptions options, TrustManagerFactory trust) {
    return Register.register(url, registrationCode, options, trust, Futures.orInline(Futures.REGISTER));
  }

  /** The endpoint id this client logs in as. */
  public String endpointId() {
    return core.endpointId();
  }

  /** The current connection state. */
  public ConnectionState state() {
    return core.state();
  }

  /** Limits from the last handshake, or null before the first. */
  public ServerInfo serverInfo() {
    return core.serverInfo();
  }

  /** Server clock minus local clock, in ms, measured at the last handshake (spec 9). */
  public long clockOffsetMs() {
    return core.clockOffsetMs();
  }

  /** The session token reconnects use; null until a password login completes. */
  public String sessionToken() {
    return core.sessionToken();
  }

  /** The server's current time as this client estimates it, Unix ms. */
  public long serverNow() {
    return core.serverNow();
  }

  /** Group operations (spec 6.7). */
  public GroupApi groups() {
    return groups;
  }

  /**
   * Completes with the server limits once online (at once when already online); fails when the
   * client stops for good first ({@code kicked}, {@code auth_failed}, {@code closed}).
   */
  public CompletableFuture<ServerInfo> ready() {
    return core.ready();
  }

  /**
   * {@link #ready()} with a bound: fails with {@code timeout} when not online within it. Its
   * {@link Throwable#getCause() cause} is the last failed attempt ({@code network}, itself caused
   * by the {@code ConnectException}, {@code UnknownHostException} or {@code SSLException}), so a
   * wrong host or an untrusted certificate shows instead of a silent retry.
   */
  public CompletableFuture<ServerInfo> ready(long timeout, TimeUnit unit) {
    return core.ready(unit.toMillis(timeout));
  }

  /**
   * Called with each new session token (spec 5, 9): after a password login and after
   * {@code changeLoginPassword}. Save it and connect with {@link Credential#sessionToken} next
   * time. A token issued before the callback was added is passed to it at once.
   */
  public Subscription onSession(Listener<String> listener) {
    return core.onSession(listener);
  }

  /** Called on every connection state change. */
  public Subscription onConnection(Listener<ConnectionEvent> listener) {
    return core.onConnection(listener);
  }

  /**
   * Called once per received message, serially. In auto mode the message is acked when the
   * callback returns; a throw leaves it unacked for a re-push (spec 9).
   */
  public Subscription onMessage(Listener<Message> listener) {
    return core.onMessage(listener);
  }

  /** Called once per receipt (spec 6.4); receipts are acked after the callback returns. */
  public Subscription onReceipt(Listener<Receipt> listener) {
    return core.onReceipt(listener);
  }

  /** Called when a message handed to the app was withdrawn before its ack (spec 6.4, 9). */
  public Subscription onRevoked(Listener<Revoked> listener) {
    return core.onRevoked(listener);
  }

  /** Called with online/offline notices of watched endpoints (spec 6.5). */
  public Subscription onPresence(Listener<PresenceEvent> listener) {
    return core.onPresence(listener);
  }

  /** Called with changes of groups this endpoint is in (spec 6.7). */
  public Subscription onGroupEvent(Listener<GroupEvent> listener) {
    return core.onGroupEvent(listener);
  }

  /** Sends text to an endpoint with no options; see {@link #send(Target, String, SendOptions)}. */
  public CompletableFuture<SendResult> send(String endpointId, String text) {
    return core.send(Target.endpoint(endpointId), text, null);
  }

  /** Sends text to an endpoint; see {@link #send(Target, String, SendOptions)}. */
  public CompletableFuture<SendResult> send(String endpointId, String text, SendOptions options) {
    return core.send(Target.endpoint(endpointId), text, options);
  }

  /** Sends bytes to an endpoint (base64 on the wire). */
  public CompletableFuture<SendResult> send(String endpointId, byte[] bytes, SendOptions options) {
    return core.send(Target.endpoint(endpointId), bytes, options);
  }

  /**
   * Sends a message (spec 6.2). Works while disconnected: the send waits in the queue and is
   * resent with the same id and content after a reconnect. Fails locally, without a server
   * round trip, with {@code body_too_large}, {@code meta_too_large}, {@code frame_too_large} or
   * {@code queue_full}.
   */
  public CompletableFuture<SendResult> send(Target to, String text, SendOptions options) {
    return core.send(to, text, options);
  }

  /** Sends bytes to an endpoint or a group (base64 on the wire). */
  public CompletableFuture<SendResult> send(Target to, byte[] bytes, SendOptions options) {
    return core.send(to, bytes, options);
  }

  /** Recalls a sent message (spec 6.4). */
  public CompletableFuture<RecallResult> recall(String id) {
    JsonObject f = new JsonObject();
    f.addProperty("id", id);
    return core.call("recall", f).thenApply(Wire::recall);
  }

  /** Status of a sent message with the first page of recipients (spec 6.4). */
  public CompletableFuture<StatusResult> status(String id) {
    return status(id, "", 100);
  }

  /** Status of a sent message, one page of recipients at a time. */
  public CompletableFuture<StatusResult> status(String id, String cursor, int limit) {
    JsonObject f = new JsonObject();
    f.addProperty("id", id);
    f.addProperty("cursor", cursor == null ? "" : cursor);
    f.addProperty("limit", limit);
    return core.call("status", f).thenApply(Wire::status);
  }

  /** Proves the talk password of {@code endpointId} so later sends need none (spec 6.6). */
  public CompletableFuture<Void> unlock(String endpointId, String talkPassword) {
    JsonObject f = new JsonObject();
    f.addProperty("endpoint_id", endpointId);
    f.addProperty("talk_password", talkPassword);
    return core.call("unlock", f).thenApply(d -> null);
  }

  /**
   * Acks a message in manual mode (spec 6.3). When disconnected, the ack is sent when the server
   * pushes the message again after the reconnect.
   */
  public CompletableFuture<Void> ack(Message message) {
    return core.ack(message);
  }

  /** Online state of up to 200 endpoints (spec 6.5). */
  public CompletableFuture<List<PresenceInfo>> presence(Collection<String> ids) {
    JsonObject f = new JsonObject();
    f.add("ids", Json.array(ids));
    return core.call("presence.get", f).thenApply(Wire::presenceList);
  }

  /** The first page of the endpoint directory. */
  public CompletableFuture<Page<DirectoryEntry>> directory() {
    return directory("", "", 100);
  }

  /** One page of the directory, by id; {@code query} matches id prefix or name (spec 6.5). */
  public CompletableFuture<Page<DirectoryEntry>> directory(String cursor, String query, int limit) {
    JsonObject f = new JsonObject();
    f.addProperty("cursor", cursor == null ? "" : cursor);
    f.addProperty("limit", limit);
    f.addProperty("query", query == null ? "" : query);
    return core.call("directory.list", f).thenApply(Wire::directory);
  }

  /**
   * Subscribes to presence notices of {@code ids}; replaces the previous call (spec 6.5). The
   * server forgets it when the connection drops, so the client sends it again after each
   * reconnect.
   */
  public CompletableFuture<Void> watchPresence(Collection<String> ids) {
    JsonObject f = new JsonObject();
    f.add("ids", Json.array(ids));
    f.addProperty("all", false);
    return core.watch(f, !ids.isEmpty());
  }

  /** Subscribes to presence notices of every endpoint (spec 6.5). */
  public CompletableFuture<Void> watchAllPresence() {
    JsonObject f = new JsonObject();
    f.add("ids", new JsonArray());
    f.addProperty("all", true);
    return core.watch(f, true);
  }

  /** This endpoint's profile (spec 6.6). */
  public CompletableFuture<SelfInfo> getSelf() {
    return core.call("self.get", new JsonObject()).thenApply(Wire::self);
  }

  /** Changes the name and/or the default delay (spec 6.6). */
  public CompletableFuture<Void> updateSelf(SelfUpdate update) {
    JsonObject f = new JsonObject();
    if (update.name != null) f.addProperty("name", update.name);
    if (update.defaultDelayMs != null) f.addProperty("default_delay_ms", update.defaultDelayMs);
    return core.call("self.update", f).thenApply(d -> null);
  }

  /** Sets the talk password; "" clears it. Earlier grants stop working (spec 6.6). */
  public CompletableFuture<Void> setTalkPassword(String talkPassword) {
    JsonObject f = new JsonObject();
    f.addProperty("talk_password", talkPassword == null ? "" : talkPassword);
    return core.call("self.talk_password", f).thenApply(d -> null);
  }

  /**
   * Changes the login password (spec 6.6). The server issues a new session token, which is
   * passed to {@code onSession} and used for reconnects; the old one stops working.
   */
  public CompletableFuture<Void> changeLoginPassword(String oldPassword, String newPassword) {
    return core.changeLoginPassword(oldPassword, newPassword);
  }

  /**
   * Invalidates the session token on the server and stops for good (spec 6.6). Pending sends
   * fail with {@code closed}.
   */
  public CompletableFuture<Void> logout() {
    return core.logout();
  }

  /**
   * Disconnects and stops for good, waiting at most {@link #CLOSE_TIMEOUT_MS} for what is in
   * flight; see {@link #close(long, TimeUnit)}. Never throws.
   */
  @Override
  public void close() {
    close(CLOSE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
  }

  /**
   * Disconnects and stops for good (checklist 17), and blocks until the client's threads have
   * ended (within {@code timeout} plus a few seconds):
   *
   * <ul>
   *   <li>messages not handed to {@code onMessage} yet stay unacked and come again at the next
   *       login;
   *   <li>the callback running now may finish, and its message is acked: a message the
   *       application handled is not delivered again, even when closed right after;
   *   <li>acks, requests and sends on the wire get until {@code timeout} for their answers; what
   *       is left then fails with {@code closed};
   *   <li>idempotent, from any state (also after {@code KICKED}, {@code AUTH_FAILED} or {@link
   *       #logout()}); every later call fails with {@code closed} at once.
   * </ul>
   *
   * Inside a callback it starts the close and returns at once (the close completes after the
   * callback returns). An interrupt ends the wait early and keeps the interrupt flag.
   */
  public void close(long timeout, TimeUnit unit) {
    long ms = unit.toMillis(timeout);
    CompletableFuture<Void> done = core.closeAsync(ms);
    if (core.inCallback()) return;
    long deadline = System.currentTimeMillis() + ms + THREADS_WAIT_MS;
    try {
      done.get(Math.max(0, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
      core.awaitEnded(deadline);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      // Bounded: the client has been told to end, its daemon threads finish on their own.
    }
  }

  /** {@link #close()} without blocking: completes once the client has released its threads. */
  public CompletableFuture<Void> closeAsync() {
    return core.closeAsync(CLOSE_TIMEOUT_MS);
  }

  /** {@link #close(long, TimeUnit)} without blocking. */
  public CompletableFuture<Void> closeAsync(long timeout, TimeUnit unit) {
    return core.closeAsync(unit.toMillis(timeout));
  }
}
