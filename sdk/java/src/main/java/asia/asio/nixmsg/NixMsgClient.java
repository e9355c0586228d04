package asia.asio.nixmsg;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import javax.net.ssl.TrustManagerFactory;

/**
 * A connection to a NixMsg server as one endpoint (spec 9). Create it with {@link #connect}; it
 * connects in the background and reconnects until it is closed, logged out, taken over, or
 * refused. Methods return {@link CompletableFuture}s that fail with {@link NixMsgException}.
 * Callbacks run serially on one executor; futures complete on the SDK's own threads.
 *
 * <pre>{@code
 * NixMsgClient client = NixMsgClient.connect(
 *     "wss://relay.example/mqtt", "door-1", Credential.password(password), ConnectOptions.defaults());
 * client.onSession(token -> saveToken(token));
 * client.onMessage(msg -> System.out.println(msg.from() + ": " + msg.text()));
 * client.ready().get(30, TimeUnit.SECONDS);
 * client.send("app-1", "opened").join();
 * }</pre>
 */
public final class NixMsgClient {
  /** The {@code client} name sent in {@code hello} (spec 6.1). */
  public static final String CLIENT_NAME = "java-sdk/0.1.0";

  private static final AtomicInteger THREADS = new AtomicInteger();
  /** Where futures returned to the application complete: never the core or callback thread. */
  private static final ExecutorService COMPLETIONS =
      Executors.newCachedThreadPool(daemon("nixmsg-futures"));

  private final String endpointId;
  private final ScheduledExecutorService core;
  private final ExecutorService ownCallbackThread;
  private final SerialExecutor callbacks;
  private final java.util.function.Consumer<Throwable> onCallbackError;
  private final Link link;
  private final SendQueue queue;
  private final Receiver receiver;
  private final PendingRequests pending;
  /** onSession callbacks with the last token each was given (callback thread only). */
  private final java.util.concurrent.CopyOnWriteArrayList<SessionListener> sessions =
      new java.util.concurrent.CopyOnWriteArrayList<>();
  private final Listeners<ConnectionEvent> connections = new Listeners<>();
  private final List<CompletableFuture<ServerInfo>> readyWaiters = new ArrayList<>();
  private final GroupApi groups;

  // Read from any thread, written on the core thread.
  private volatile ConnectionState state = ConnectionState.CONNECTING;
  private volatile ServerInfo info;
  private volatile long offsetMs;
  // Callback thread only: the last session token passed to the onSession callbacks.
  private String dispatchedToken;
  private volatile NixMsgException stopError;
  private volatile String sessionToken;
  // Core thread only.
  private long rid;
  private ScheduledFuture<?> pumpTimer;
  private JsonObject watching;

  private NixMsgClient(
      String url, String endpointId, Credential credential, ConnectOptions options) {
    ConnectOptions o = options == null ? ConnectOptions.defaults() : options;
    if (endpointId == null || endpointId.isEmpty()) {
      throw new IllegalArgumentException("endpointId is empty");
    }
    if (credential == null) throw new IllegalArgumentException("credential is missing");
    ServerAddress address = ServerAddress.parse(url, o.transport);
    this.endpointId = endpointId;
    ScheduledThreadPoolExecutor coreExec =
        new ScheduledThreadPoolExecutor(1, daemon("nixmsg-core-" + endpointId));
    coreExec.setRemoveOnCancelPolicy(true);
    this.core = coreExec;
    if (o.callbackExecutor != null) {
      ownCallbackThread = null;
      callbacks = new SerialExecutor(o.callbackExecutor);
    } else {
      ownCallbackThread =
          Executors.newSingleThreadExecutor(daemon("nixmsg-callbacks-" + endpointId));
      callbacks = new SerialExecutor(ownCallbackThread);
    }
    this.onCallbackError =
        o.onCallbackError != null
            ? o.onCallbackError
            : err -> {
              System.err.println("nixmsg: callback failed: " + err);
              err.printStackTrace();
            };
    this.pending = new PendingRequests(o.requestTimeoutMs, core);
    this.queue = new SendQueue(o.queueCapacity, o.maxInFlight, null);
    this.receiver =
        new Receiver(
            new Receiver.Host() {
              @Override
              public CompletableFuture<String> sendAck(String from, String id) {
                return NixMsgClient.this.sendAck(from, id);
              }

              @Override
              public void sendReceiptAck(String receiptId) {
                JsonObject f = new JsonObject();
                f.addProperty("receipt_id", receiptId);
                core.execute(
                    () -> {
                      if (link.online()) request("receipt_ack", f);
                    });
              }

              @Override
              public void onCallbackError(Throwable error) {
                reportCallbackError(error);
              }
            },
            o.ackMode,
            o.dedupCapacity,
            callbacks);
    Link.Options lo = new Link.Options();
    lo.address = address;
    lo.endpointId = endpointId;
    lo.credential = credential;
    lo.keepaliveSeconds = o.keepaliveSeconds;
    lo.connectTimeoutMs = o.connectTimeoutMs;
    lo.maxReceiveBytes = o.maxReceiveBytes;
    lo.clientName = CLIENT_NAME;
    lo.trustManagerFactory = o.trustManagerFactory;
    lo.hostnameVerifier = o.hostnameVerifier;
    lo.nextRid = this::nextRid;
    this.link =
        new Link(
            lo,
            new Link.Events() {
              @Override
              public void state(ConnectionState s, String reason, Long retryInMs) {
                setState(new ConnectionEvent(s, reason, retryInMs, null));
              }

              @Override
              public void online(JsonObject hello, long offset, String token) {
                handshaken(hello, offset, token);
              }

              @Override
              public void frame(JsonObject frame) {
                inbound(frame);
              }

              @Override
              public void down() {
                NixMsgClient.this.down(new NixMsgException("not_connected", "Connection lost"));
              }

              @Override
              public void stopped(Link.StopCause cause) {
                NixMsgClient.this.stopped(cause);
              }
            },
            core);
    this.sessionToken = credential.tokenValue();
    this.groups = new GroupApi((type, fields) -> relay(callOnCore(() -> request(type, fields))));
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
    try {
      core.execute(link::start);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // Closed before it started: nothing to do.
    }
  }

  /** {@link #connect} with the default options. */
  public static NixMsgClient connect(String url, String endpointId, Credential credential) {
    return connect(url, endpointId, credential, ConnectOptions.defaults());
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
    return Register.register(url, registrationCode, options, trust, COMPLETIONS);
  }

  /** The endpoint id this client logs in as. */
  public String endpointId() {
    return endpointId;
  }

  /** The current connection state. */
  public ConnectionState state() {
    return state;
  }

  /** Limits from the last handshake, or null before the first. */
  public ServerInfo serverInfo() {
    return info;
  }

  /** Server clock minus local clock, in ms, measured at the last handshake (spec 9). */
  public long clockOffsetMs() {
    return offsetMs;
  }

  /** The session token reconnects use; null until a password login completes. */
  public String sessionToken() {
    return sessionToken;
  }

  /** The server's current time as this client estimates it, Unix ms. */
  public long serverNow() {
    return System.currentTimeMillis() + offsetMs;
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
    return relay(
        callOnCore(
            () -> {
              CompletableFuture<ServerInfo> f = new CompletableFuture<>();
              if (state == ConnectionState.ONLINE && info != null) f.complete(info);
              else if (stopError != null) f.completeExceptionally(stopError);
              else readyWaiters.add(f);
              return f;
            }));
  }

  /**
   * Called with each new session token (spec 5, 9): after a password login and after
   * {@code changeLoginPassword}. Save it and connect with {@link Credential#sessionToken} next
   * time. A token issued before the callback was added is passed to it at once.
   */
  public Subscription onSession(Listener<String> listener) {
    if (listener == null) throw new NullPointerException("listener");
    SessionListener entry = new SessionListener(listener);
    sessions.add(entry);
    // On the callback thread, after any token dispatch already queued: a token the callback has
    // not seen yet is passed to it once.
    callbacks.execute(
        () -> {
          String t = dispatchedToken;
          if (t != null) deliverSession(entry, t);
        });
    return () -> sessions.remove(entry);
  }

  /** Called on every connection state change. */
  public Subscription onConnection(Listener<ConnectionEvent> listener) {
    return connections.add(listener);
  }

  /**
   * Called once per received message, serially. In auto mode the message is acked when the
   * callback returns; a throw leaves it unacked for a re-push (spec 9).
   */
  public Subscription onMessage(Listener<Message> listener) {
    Subscription s = receiver.messages.add(listener);
    receiver.flushHeld();
    return s;
  }

  /** Called once per receipt (spec 6.4); receipts are acked after the callback returns. */
  public Subscription onReceipt(Listener<Receipt> listener) {
    return receiver.receipts.add(listener);
  }

  /** Called when a message handed to the app was withdrawn before its ack (spec 6.4, 9). */
  public Subscription onRevoked(Listener<Revoked> listener) {
    return receiver.revoked.add(listener);
  }

  /** Called with online/offline notices of watched endpoints (spec 6.5). */
  public Subscription onPresence(Listener<PresenceEvent> listener) {
    return receiver.presence.add(listener);
  }

  /** Called with changes of groups this endpoint is in (spec 6.7). */
  public Subscription onGroupEvent(Listener<GroupEvent> listener) {
    return receiver.groupEvents.add(listener);
  }

  /** Sends text to an endpoint with no options. */
  public CompletableFuture<SendResult> send(String endpointId, String text) {
    return send(Target.endpoint(endpointId), (Object) text, null);
  }

  /** Sends text to an endpoint. */
  public CompletableFuture<SendResult> send(String endpointId, String text, SendOptions options) {
    return send(Target.endpoint(endpointId), (Object) text, options);
  }

  /** Sends bytes to an endpoint (base64 on the wire). */
  public CompletableFuture<SendResult> send(String endpointId, byte[] bytes, SendOptions options) {
    return send(Target.endpoint(endpointId), (Object) bytes, options);
  }

  /** Sends text to an endpoint or a group. */
  public CompletableFuture<SendResult> send(Target to, String text, SendOptions options) {
    return send(to, (Object) text, options);
  }

  /** Sends bytes to an endpoint or a group. */
  public CompletableFuture<SendResult> send(Target to, byte[] bytes, SendOptions options) {
    return send(to, (Object) bytes, options);
  }

  /**
   * Sends a message (spec 6.2). Works while disconnected: the send waits in the queue and is
   * resent with the same id and content after a reconnect. Fails locally, without a server
   * round trip, with {@code body_too_large}, {@code meta_too_large}, {@code frame_too_large} or
   * {@code queue_full}.
   */
  private CompletableFuture<SendResult> send(Target to, Object body, SendOptions options) {
    // Size checks run on the caller's thread: large bodies do not hold up the core thread.
    ServerInfo limits = info;
    JsonObject frame;
    try {
      frame =
          SendFrame.build(
              to,
              body,
              options,
              limits == null ? Body.DEFAULT_MAX_BODY_BYTES : limits.maxBodyBytes(),
              limits == null ? Body.DEFAULT_MAX_META_BYTES : limits.maxMetaBytes(),
              limits == null ? Body.DEFAULT_MAX_FRAME_BYTES : limits.maxFrameBytes(),
              offsetMs);
    } catch (NixMsgException e) {
      return failed(e);
    }
    return relay(
        callOnCore(
            () -> {
              if (stopError != null) return failed(stopError);
              CompletableFuture<SendResult> result = queue.add(frame);
              pump();
              return result;
            }));
  }

  /** Recalls a sent message (spec 6.4). */
  public CompletableFuture<RecallResult> recall(String id) {
    JsonObject f = new JsonObject();
    f.addProperty("id", id);
    return call("recall", f).thenApply(Wire::recall);
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
    return call("status", f).thenApply(Wire::status);
  }

  /** Proves the talk password of {@code endpointId} so later sends need none (spec 6.6). */
  public CompletableFuture<Void> unlock(String endpointId, String talkPassword) {
    JsonObject f = new JsonObject();
    f.addProperty("endpoint_id", endpointId);
    f.addProperty("talk_password", talkPassword);
    return call("unlock", f).thenApply(d -> null);
  }

  /**
   * Acks a message in manual mode (spec 6.3). When disconnected, the ack is sent when the server
   * pushes the message again after the reconnect.
   */
  public CompletableFuture<Void> ack(Message message) {
    return relay(receiver.ack(message.from(), message.id()));
  }

  /** Online state of up to 200 endpoints (spec 6.5). */
  public CompletableFuture<List<PresenceInfo>> presence(Collection<String> ids) {
    JsonObject f = new JsonObject();
    f.add("ids", Json.array(ids));
    return call("presence.get", f).thenApply(Wire::presenceList);
  }

  /** The first page of the endpoint directory. */
  public CompletableFuture<Page<DirectoryEntry>> directory() {
    return directory("", "", 100);
  }

  /** One page of the endpoint directory, by id; {@code query} matches id prefix or name (spec 6.5). */
  public CompletableFuture<Page<DirectoryEntry>> directory(String cursor, String query, int limit) {
    JsonObject f = new JsonObject();
    f.addProperty("cursor", cursor == null ? "" : cursor);
    f.addProperty("limit", limit);
    f.addProperty("query", query == null ? "" : query);
    return call("directory.list", f).thenApply(Wire::directory);
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
    return watch(f, !ids.isEmpty());
  }

  /** Subscribes to presence notices of every endpoint (spec 6.5). */
  public CompletableFuture<Void> watchAllPresence() {
    JsonObject f = new JsonObject();
    f.add("ids", new com.google.gson.JsonArray());
    f.addProperty("all", true);
    return watch(f, true);
  }

  private CompletableFuture<Void> watch(JsonObject f, boolean keep) {
    return relay(
        callOnCore(() -> request("presence.watch", f))
            .thenCompose(
                d -> callOnCore(
                    () -> {
                      watching = keep ? f : null;
                      return CompletableFuture.<Void>completedFuture(null);
                    })));
  }

  /** This endpoint's profile (spec 6.6). */
  public CompletableFuture<SelfInfo> getSelf() {
    return call("self.get", new JsonObject()).thenApply(Wire::self);
  }

  /** Changes the name and/or the default delay (spec 6.6). */
  public CompletableFuture<Void> updateSelf(SelfUpdate update) {
    JsonObject f = new JsonObject();
    if (update.name != null) f.addProperty("name", update.name);
    if (update.defaultDelayMs != null) f.addProperty("default_delay_ms", update.defaultDelayMs);
    return call("self.update", f).thenApply(d -> null);
  }

  /** Sets the talk password; "" clears it. Earlier grants stop working (spec 6.6). */
  public CompletableFuture<Void> setTalkPassword(String talkPassword) {
    JsonObject f = new JsonObject();
    f.addProperty("talk_password", talkPassword == null ? "" : talkPassword);
    return call("self.talk_password", f).thenApply(d -> null);
  }

  /**
   * Changes the login password (spec 6.6). The server issues a new session token, which is
   * passed to {@code onSession} and used for reconnects; the old one stops working.
   */
  public CompletableFuture<Void> changeLoginPassword(String oldPassword, String newPassword) {
    JsonObject f = new JsonObject();
    f.addProperty("old_password", oldPassword);
    f.addProperty("new_password", newPassword);
    return relay(
        callOnCore(() -> request("self.login_password", f))
            .thenCompose(
                d -> callOnCore(
                    () -> {
                      if (Json.isString(d, "session_token")) {
                        String t = Json.str(d, "session_token");
                        link.setSessionToken(t);
                        sessionToken = t;
                        issued(t);
                      }
                      return CompletableFuture.<Void>completedFuture(null);
                    })));
  }

  /**
   * Invalidates the session token on the server and stops for good (spec 6.6). Pending sends
   * fail with {@code closed}.
   */
  public CompletableFuture<Void> logout() {
    Link.StopCause cause = new Link.StopCause(ConnectionState.OFFLINE, "logout");
    return relay(
        callOnCore(
            () -> {
              // The server closes the connection after its response: that close must not
              // reconnect.
              if (link.online()) link.stopOnClose(cause);
              CompletableFuture<JsonObject> answer = request("self.logout", new JsonObject());
              CompletableFuture<Void> done = new CompletableFuture<>();
              answer.whenComplete(
                  (d, err) ->
                      core.execute(
                          () ->
                              link.stop(cause)
                                  .whenComplete(
                                      (v, e) -> {
                                        shutdownLater();
                                        if (err != null) done.completeExceptionally(err);
                                        else done.complete(null);
                                      })));
              return done;
            }));
  }

  /** Disconnects and stops for good. Pending sends fail with {@code closed}. */
  public CompletableFuture<Void> close() {
    if (core.isShutdown()) return CompletableFuture.completedFuture(null);
    return relay(
        callOnCore(
            () ->
                link.stop(new Link.StopCause(ConnectionState.OFFLINE, "closed"))
                    .whenComplete((v, e) -> shutdownLater())));
  }

  // ---- internals, on the core thread unless said otherwise ----

  private String nextRid() {
    return Long.toString(++rid, 36);
  }

  private void issued(String token) {
    callbacks.execute(
        () -> {
          dispatchedToken = token;
          for (SessionListener entry : sessions) deliverSession(entry, token);
        });
  }

  /** Callback thread: passes {@code token} to the callback unless it already had it. */
  private void deliverSession(SessionListener entry, String token) {
    if (token.equals(entry.lastToken)) return;
    entry.lastToken = token;
    runListener(entry.listener, token);
  }

  private static final class SessionListener {
    final Listener<String> listener;
    String lastToken;

    SessionListener(Listener<String> listener) {
      this.listener = listener;
    }
  }

  private void setState(ConnectionEvent event) {
    state = event.state();
    callbacks.execute(() -> runAll(connections, event));
  }

  private void handshaken(JsonObject hello, long offset, String token) {
    offsetMs = offset;
    if (token != null) {
      sessionToken = token;
      issued(token);
    }
    boolean first = info == null;
    info = Wire.serverInfo(hello);
    ServerInfo now = info;
    core.execute(
        () -> {
          if (state != ConnectionState.ONLINE) return;
          for (CompletableFuture<ServerInfo> w : readyWaiters) w.complete(now);
          readyWaiters.clear();
        });
    pump();
    if (!first && watching != null) request("presence.watch", watching);
  }

  private void inbound(JsonObject f) {
    switch (Json.str(f, "type")) {
      case "resp":
        resp(f);
        return;
      case "msg":
        Message m = Wire.message(f);
        if (m != null) receiver.message(m);
        return;
      case "receipt":
        receiver.receipt(Wire.receipt(f));
        return;
      case "revoked":
        receiver.revoke(Wire.revoked(f));
        return;
      case "presence":
        receiver.presenceEvent(Wire.presence(f));
        return;
      case "group_event":
        receiver.groupEvent(Wire.groupEvent(f));
        return;
      default:
    }
  }

  private void resp(JsonObject f) {
    JsonElement r = f.get("rid");
    String respRid = r == null || r.isJsonNull() ? "" : r.getAsString();
    boolean ok = Json.bool(f, "ok");
    NixMsgException error = ok ? null : Wire.error(f, 0);
    JsonObject data = Json.obj(f, "data");
    if (queue.has(respRid)) {
      queue.settle(respRid, ok, data, error, System.currentTimeMillis());
      pump();
      return;
    }
    pending.settle(respRid, ok, data, error);
  }

  /** Sends a request frame and completes with its resp.data (spec 6). Core thread. */
  private CompletableFuture<JsonObject> request(String type, JsonObject fields) {
    if (stopError != null) return failed(stopError);
    if (!link.online()) {
      return failed(new NixMsgException("not_connected", "Not connected to the server"));
    }
    String id = nextRid();
    JsonObject frame = new JsonObject();
    frame.addProperty("v", 1);
    frame.addProperty("type", type);
    frame.addProperty("rid", id);
    for (Map.Entry<String, JsonElement> e : fields.entrySet()) frame.add(e.getKey(), e.getValue());
    String json;
    try {
      json = Body.encodeFrame(frame, info == null ? Body.DEFAULT_MAX_FRAME_BYTES : info.maxFrameBytes());
    } catch (NixMsgException e) {
      return failed(e);
    }
    CompletableFuture<JsonObject> answer = pending.await(id, type);
    link.publish(json);
    return answer;
  }

  private CompletableFuture<JsonObject> call(String type, JsonObject fields) {
    return relay(callOnCore(() -> request(type, fields)));
  }

  /** Called from the receiver (any thread): sends ack and completes with data.result or null. */
  private CompletableFuture<String> sendAck(String from, String id) {
    JsonObject f = new JsonObject();
    f.addProperty("from", from);
    f.addProperty("id", id);
    return callOnCore(
            () -> {
              if (!link.online()) return CompletableFuture.<JsonObject>completedFuture(null);
              return request("ack", f);
            })
        .handle(
            (d, err) -> err != null || d == null || !Json.isString(d, "result") ? null : Json.str(d, "result"));
  }

  private void pump() {
    if (pumpTimer != null) pumpTimer.cancel(false);
    pumpTimer = null;
    if (!link.online()) return;
    long now = System.currentTimeMillis();
    Supplier<String> rids = this::nextRid;
    for (SendQueue.Taken next; (next = queue.take(now, rids)) != null; ) {
      link.publish(Json.stringify(SendFrame.wire(next.rid, next.frame)));
    }
    Long due = queue.nextDueAt(now);
    if (due != null) pumpTimer = core.schedule(this::pump, due - now, TimeUnit.MILLISECONDS);
  }

  private void down(NixMsgException error) {
    queue.requeueInFlight();
    pending.failAll(error);
  }

  private void stopped(Link.StopCause cause) {
    if (pumpTimer != null) pumpTimer.cancel(false);
    String code = cause.state == ConnectionState.OFFLINE ? "closed" : cause.state.wireName();
    NixMsgException error =
        new NixMsgException(code, "Client stopped: " + cause.reason, cause.reason, 0, null, null);
    stopError = error;
    down(error);
    queue.close(error);
    for (CompletableFuture<ServerInfo> w : readyWaiters) w.completeExceptionally(error);
    readyWaiters.clear();
    setState(
        new ConnectionEvent(
            cause.state, cause.reason, null, cause.state == ConnectionState.OFFLINE ? null : error));
    if (cause.state != ConnectionState.OFFLINE) shutdownLater();
  }

  /** Ends the client's threads once the queued callbacks have run. */
  private void shutdownLater() {
    callbacks.execute(
        () -> {
          if (ownCallbackThread != null) ownCallbackThread.shutdown();
        });
    core.schedule(core::shutdown, 3, TimeUnit.SECONDS);
  }

  private void reportCallbackError(Throwable error) {
    try {
      onCallbackError.accept(error);
    } catch (RuntimeException ignored) {
      // The error handler itself failed; nothing more to do.
    }
  }

  private <T> void runAll(Listeners<T> listeners, T event) {
    try {
      listeners.run(event);
    } catch (Throwable t) {
      reportCallbackError(t);
    }
  }

  private <T> void runListener(Listener<T> listener, T event) {
    try {
      listener.on(event);
    } catch (Throwable t) {
      reportCallbackError(t);
    }
  }

  /** Runs {@code task} on the core thread; fails with {@code closed} after the client ended. */
  private <T> CompletableFuture<T> callOnCore(Supplier<CompletableFuture<T>> task) {
    CompletableFuture<T> out = new CompletableFuture<>();
    try {
      core.execute(
          () -> {
            CompletableFuture<T> f;
            try {
              f = task.get();
            } catch (RuntimeException e) {
              out.completeExceptionally(e);
              return;
            }
            f.whenComplete(
                (v, e) -> {
                  if (e != null) out.completeExceptionally(unwrap(e));
                  else out.complete(v);
                });
          });
    } catch (java.util.concurrent.RejectedExecutionException e) {
      NixMsgException err = stopError;
      out.completeExceptionally(err != null ? err : new NixMsgException("closed", "Client closed"));
    }
    return out;
  }

  /** A future that completes on the completion pool, never on an SDK thread. */
  private static <T> CompletableFuture<T> relay(CompletableFuture<T> f) {
    CompletableFuture<T> out = new CompletableFuture<>();
    f.whenCompleteAsync(
        (v, e) -> {
          if (e != null) out.completeExceptionally(unwrap(e));
          else out.complete(v);
        },
        COMPLETIONS);
    return out;
  }

  private static <T> CompletableFuture<T> failed(Throwable e) {
    CompletableFuture<T> f = new CompletableFuture<>();
    f.completeExceptionally(e);
    return f;
  }

  private static Throwable unwrap(Throwable e) {
    Throwable t = e;
    while ((t instanceof java.util.concurrent.CompletionException
            || t instanceof java.util.concurrent.ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  private static ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name + "-" + THREADS.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
