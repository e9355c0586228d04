package asia.asio.nixmsg;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * The machinery behind {@link NixMsgClient} (spec 9): the connection loop, the send queue, the
 * receiver and the request matching. State changes happen on one "core" thread; callbacks run on
 * the serial callback executor; futures handed to the application complete on the completion
 * executor (the client's own bounded pool unless the application gives one).
 *
 * <p>Lifecycle (checklist 17): close stops new deliveries, lets the running callback finish (its
 * automatic ack is sent), waits for acks, requests and sends in flight until its bound, then
 * stops the link and fails what is left with {@code closed}. Any stop for good (close, logout,
 * kicked, auth_failed) then releases the client: the final callbacks run (bounded), and every
 * thread the client started ends.
 */
final class ClientCore {
  private static final AtomicInteger THREADS = new AtomicInteger();
  /** How long a stopping client waits for its final callbacks (the last state change) to run. */
  private static final long CALLBACKS_WAIT_MS = 5000;

  private final String endpointId;
  private final ScheduledThreadPoolExecutor core;
  private final ExecutorService ownCallbackThread;
  private final ExecutorService ownCompletions;
  private final ExecutorService mqttCallbacks;
  /** Where futures handed to the application complete. */
  private final Executor completions;
  private final AtomicReference<CompletableFuture<Void>> closing = new AtomicReference<>();
  private final AtomicBoolean releasing = new AtomicBoolean();
  private final CompletableFuture<Void> released = new CompletableFuture<>();
  /** The threads this client started (core, callbacks, completions, HiveMQ completions). */
  private final java.util.Set<Thread> ownThreads =
      java.util.Collections.newSetFromMap(new java.util.concurrent.ConcurrentHashMap<Thread, Boolean>());
  /** The last failed attempt's error (cleared online); {@code ready(timeout)} reports it. */
  private volatile NixMsgException lastError;
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

  ClientCore(
      String url, String endpointId, Credential credential, ConnectOptions options) {
    ConnectOptions o = options == null ? ConnectOptions.defaults() : options;
    if (endpointId == null || endpointId.isEmpty()) {
      throw NixMsgException.config("The endpoint id is empty");
    }
    if (credential == null) throw NixMsgException.config("The credential is missing");
    ServerAddress address = ServerAddress.parse(url, o.transport);
    this.endpointId = endpointId;
    ScheduledThreadPoolExecutor coreExec =
        new ScheduledThreadPoolExecutor(1, owned("nixmsg-core-" + endpointId));
    coreExec.setRemoveOnCancelPolicy(true);
    // Timers (retries, request timeouts) must not keep an ended client's thread alive.
    coreExec.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    coreExec.setContinueExistingPeriodicTasksAfterShutdownPolicy(false);
    this.core = coreExec;
    if (o.completionExecutor != null) {
      ownCompletions = null;
      completions = Futures.orInline(o.completionExecutor);
    } else {
      ownCompletions = Futures.pool(owned("nixmsg-futures-" + endpointId), Futures.COMPLETION_THREADS);
      completions = Futures.orInline(ownCompletions);
    }
    mqttCallbacks = Futures.pool(owned("nixmsg-mqtt-" + endpointId), 1);
    if (o.callbackExecutor != null) {
      ownCallbackThread = null;
      callbacks = new SerialExecutor(o.callbackExecutor);
    } else {
      ownCallbackThread =
          Executors.newSingleThreadExecutor(owned("nixmsg-callbacks-" + endpointId));
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
                return ClientCore.this.sendAck(from, id);
              }

              @Override
              public void sendReceiptAck(String receiptId) {
                JsonObject f = new JsonObject();
                f.addProperty("receipt_id", receiptId);
                post(
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
    lo.clientName = NixMsgClient.CLIENT_NAME;
    lo.trustManagerFactory = o.trustManagerFactory;
    lo.hostnameVerifier = o.hostnameVerifier;
    lo.nextRid = this::nextRid;
    lo.mqttCallbacks = mqttCallbacks;
    this.link =
        new Link(
            lo,
            new Link.Events() {
              @Override
              public void state(
                  ConnectionState s, String reason, Long retryInMs, Throwable cause) {
                NixMsgException error = null;
                if (s == ConnectionState.RECONNECTING) {
                  error =
                      new NixMsgException(
                          ErrorCodes.NETWORK, "Connection attempt failed: " + reason, cause);
                  lastError = error;
                } else if (s == ConnectionState.ONLINE) {
                  lastError = null;
                }
                setState(new ConnectionEvent(s, reason, retryInMs, error));
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
                ClientCore.this.down(new NixMsgException("not_connected", "Connection lost"));
              }

              @Override
              public void stopped(Link.StopCause cause) {
                ClientCore.this.stopped(cause);
              }
            },
            core);
    this.sessionToken = credential.tokenValue();
  }

  /** Starts connecting (once; later calls do nothing, also after close). */
  void start() {
    if (closing.get() != null) return;
    post(link::start);
  }

  /** Runs {@code task} on the core thread; dropped once the client has ended. */
  private void post(Runnable task) {
    try {
      core.execute(task);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // The client has ended.
    }
  }

  /** The error every call fails with once close has begun or the client stopped. */
  private NixMsgException stoppedError() {
    NixMsgException err = stopError;
    if (err != null) return err;
    return new NixMsgException(ErrorCodes.CLOSED, "Client closed", "closed", 0, null, null);
  }

  /** Fails at once when close has begun: later calls never reach the server. */
  private boolean refused() {
    return closing.get() != null || stopError != null;
  }

  /**
   * True on a thread a blocking close must not wait on: an application callback of this client,
   * or one of its own threads (a future's continuation on its completion pool).
   */
  boolean inCallback() {
    return callbacks.inTask() || ownThreads.contains(Thread.currentThread());
  }

  /** Daemon threads named {@code name-N}, remembered as this client's own. */
  private ThreadFactory owned(String name) {
    ThreadFactory base = daemon(name);
    return r -> {
      Thread t = base.newThread(r);
      ownThreads.add(t);
      return t;
    };
  }

  /** The endpoint id this client logs in as. */
  String endpointId() {
    return endpointId;
  }

  /** The current connection state. */
  ConnectionState state() {
    return state;
  }

  /** Limits from the last handshake, or null before the first. */
  ServerInfo serverInfo() {
    return info;
  }

  /** Server clock minus local clock, in ms, measured at the last handshake (spec 9). */
  long clockOffsetMs() {
    return offsetMs;
  }

  /** The session token reconnects use; null until a password login completes. */
  String sessionToken() {
    return sessionToken;
  }

  /** The server's current time as this client estimates it, Unix ms. */
  long serverNow() {
    return System.currentTimeMillis() + offsetMs;
  }

  /**
   * Completes with the server limits once online (at once when already online); fails when the
   * client stops for good first ({@code kicked}, {@code auth_failed}, {@code closed}).
   */
  CompletableFuture<ServerInfo> ready() {
    if (refused()) return Futures.relay(Futures.failed(stoppedError()), completions);
    return Futures.relay(
        callOnCore(
            () -> {
              CompletableFuture<ServerInfo> f = new CompletableFuture<>();
              if (state == ConnectionState.ONLINE && info != null) f.complete(info);
              else if (stopError != null) f.completeExceptionally(stopError);
              else readyWaiters.add(f);
              return f;
            }), completions);
  }

  /**
   * {@link #ready()} with a bound: fails with {@code timeout} after {@code timeoutMs}, with the
   * last failed attempt's error (refused, DNS, TLS) as its cause.
   */
  CompletableFuture<ServerInfo> ready(long timeoutMs) {
    CompletableFuture<ServerInfo> f = ready();
    CompletableFuture<ServerInfo> out = new CompletableFuture<>();
    ScheduledFuture<?> timer;
    try {
      timer =
          core.schedule(
              () -> {
                NixMsgException last = lastError;
                String why = last == null ? "" : "; last error: " + last.getMessage();
                out.completeExceptionally(
                    new NixMsgException(
                        ErrorCodes.TIMEOUT,
                        "Not online within " + timeoutMs + " ms" + why,
                        last));
              },
              timeoutMs,
              TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      timer = null;
    }
    ScheduledFuture<?> t = timer;
    f.whenComplete(
        (v, e) -> {
          if (t != null) t.cancel(false);
          if (e != null) out.completeExceptionally(Futures.unwrap(e));
          else out.complete(v);
        });
    return Futures.relay(out, completions);
  }

  /**
   * Called with each new session token (spec 5, 9): after a password login and after
   * {@code changeLoginPassword}. Save it and connect with {@link Credential#sessionToken} next
   * time. A token issued before the callback was added is passed to it at once.
   */
  Subscription onSession(Listener<String> listener) {
    if (listener == null) throw NixMsgException.config("The callback is null");
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
  Subscription onConnection(Listener<ConnectionEvent> listener) {
    return connections.add(listener);
  }

  /**
   * Called once per received message, serially. In auto mode the message is acked when the
   * callback returns; a throw leaves it unacked for a re-push (spec 9).
   */
  Subscription onMessage(Listener<Message> listener) {
    Subscription s = receiver.messages.add(listener);
    receiver.flushHeld();
    return s;
  }

  /** Called once per receipt (spec 6.4); receipts are acked after the callback returns. */
  Subscription onReceipt(Listener<Receipt> listener) {
    return receiver.receipts.add(listener);
  }

  /** Called when a message handed to the app was withdrawn before its ack (spec 6.4, 9). */
  Subscription onRevoked(Listener<Revoked> listener) {
    return receiver.revoked.add(listener);
  }

  /** Called with online/offline notices of watched endpoints (spec 6.5). */
  Subscription onPresence(Listener<PresenceEvent> listener) {
    return receiver.presence.add(listener);
  }

  /** Called with changes of groups this endpoint is in (spec 6.7). */
  Subscription onGroupEvent(Listener<GroupEvent> listener) {
    return receiver.groupEvents.add(listener);
  }

  /**
   * Sends a message (spec 6.2). Works while disconnected: the send waits in the queue and is
   * resent with the same id and content after a reconnect. Fails locally, without a server
   * round trip, with {@code body_too_large}, {@code meta_too_large}, {@code frame_too_large} or
   * {@code queue_full}.
   */
  CompletableFuture<SendResult> send(Target to, Object body, SendOptions options) {
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
      return Futures.failed(e);
    }
    if (refused()) return Futures.relay(Futures.failed(stoppedError()), completions);
    return Futures.relay(
        callOnCore(
            () -> {
              if (stopError != null) return Futures.failed(stopError);
              CompletableFuture<SendResult> result = queue.add(frame);
              pump();
              return result;
            }),
        completions);
  }

  /**
   * Acks a message in manual mode (spec 6.3). When disconnected, the ack is sent when the server
   * pushes the message again after the reconnect.
   */
  CompletableFuture<Void> ack(Message message) {
    if (refused()) return Futures.relay(Futures.failed(stoppedError()), completions);
    return Futures.relay(receiver.ack(message.from(), message.id()), completions);
  }

  /** Sends {@code presence.watch} and, once accepted, repeats it after each reconnect. */
  CompletableFuture<Void> watch(JsonObject f, boolean keep) {
    if (refused()) return Futures.relay(Futures.failed(stoppedError()), completions);
    return Futures.relay(
        callOnCore(() -> request("presence.watch", f))
            .thenCompose(
                d -> callOnCore(
                    () -> {
                      watching = keep ? f : null;
                      return CompletableFuture.<Void>completedFuture(null);
                    })),
        completions);
  }

  /**
   * Changes the login password (spec 6.6). The server issues a new session token, which is
   * passed to {@code onSession} and used for reconnects; the old one stops working.
   */
  CompletableFuture<Void> changeLoginPassword(String oldPassword, String newPassword) {
    JsonObject f = new JsonObject();
    f.addProperty("old_password", oldPassword);
    f.addProperty("new_password", newPassword);
    if (refused()) return Futures.relay(Futures.failed(stoppedError()), completions);
    return Futures.relay(
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
                    })),
        completions);
  }

  /**
   * Invalidates the session token on the server and stops for good (spec 6.6). Pending sends
   * fail with {@code closed}.
   */
  CompletableFuture<Void> logout() {
    if (refused()) return Futures.relay(Futures.failed(stoppedError()), completions);
    Link.StopCause cause = new Link.StopCause(ConnectionState.OFFLINE, "logout");
    return Futures.relay(
        callOnCore(
            () -> {
              // The server closes the connection after its response: that close must not
              // reconnect.
              if (link.online()) link.stopOnClose(cause);
              CompletableFuture<JsonObject> answer = request("self.logout", new JsonObject());
              CompletableFuture<Void> done = new CompletableFuture<>();
              answer.whenComplete(
                  (d, err) ->
                      post(
                          () ->
                              link.stop(cause)
                                  .whenComplete(
                                      (v, e) -> {
                                        if (err != null) done.completeExceptionally(err);
                                        else done.complete(null);
                                      })));
              return done;
            }),
        completions);
  }

  /**
   * Stops for good (checklist 17): nothing new reaches the callbacks; the callback running now
   * may finish (its message is acked); acks, requests and sends in flight get until {@code
   * timeoutMs} for their answers; then the connection closes and what is left fails with {@code
   * closed}. Completes when the client's threads have been told to end. Idempotent, from any
   * state and any thread.
   */
  CompletableFuture<Void> closeAsync(long timeoutMs) {
    if (timeoutMs < 0) throw NixMsgException.config("The close timeout must not be negative");
    CompletableFuture<Void> mine = new CompletableFuture<>();
    if (!closing.compareAndSet(null, mine)) return closing.get();
    receiver.closing = true;
    long deadline = System.currentTimeMillis() + timeoutMs;
    try {
      core.execute(() -> beginClose(deadline));
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // The core has ended: the client had stopped for good and released itself.
    }
    released.whenComplete((v, e) -> completions.execute(() -> mine.complete(null)));
    return mine;
  }

  /**
   * Blocks until the client's threads have ended (bounded by {@code deadline}, epoch ms). Not
   * from a callback or completion: those threads are the ones waited for.
   */
  void awaitEnded(long deadline) throws InterruptedException {
    for (ExecutorService e : new ExecutorService[] {core, ownCallbackThread, ownCompletions, mqttCallbacks}) {
      if (e == null) continue;
      long left = deadline - System.currentTimeMillis();
      if (left <= 0) return;
      e.awaitTermination(left, TimeUnit.MILLISECONDS);
    }
  }

  private void beginClose(long deadline) {
    if (link.stopped()) {
      release();
      return;
    }
    Runnable stop = () -> link.stop(new Link.StopCause(ConnectionState.OFFLINE, "closed"));
    if (!link.online()) {
      stop.run();
      return;
    }
    // The callback running now returns first, so that its automatic ack is sent (and queued on
    // this thread before the drain looks at what is in flight).
    within(callbacks.idle(), deadline, () -> drain(deadline, stop));
  }

  /** Runs {@code then} on the core thread once {@code f} is done or {@code deadline} passed. */
  private void within(CompletableFuture<?> f, long deadline, Runnable then) {
    AtomicBoolean once = new AtomicBoolean();
    Runnable next =
        () -> {
          if (once.compareAndSet(false, true)) post(then);
        };
    long left = Math.max(0, deadline - System.currentTimeMillis());
    ScheduledFuture<?> timer;
    try {
      timer = core.schedule(next, left, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      return;
    }
    f.whenComplete(
        (v, e) -> {
          timer.cancel(false);
          next.run();
        });
  }

  /** Waits (until {@code deadline}) for every ack, request and published send to be answered. */
  private void drain(long deadline, Runnable then) {
    List<CompletableFuture<?>> waiting = new ArrayList<>();
    waiting.addAll(pending.futures());
    waiting.addAll(queue.inFlightFutures());
    if (waiting.isEmpty() || !link.online() || System.currentTimeMillis() >= deadline) {
      then.run();
      return;
    }
    CompletableFuture<Object> any =
        CompletableFuture.anyOf(waiting.toArray(new CompletableFuture<?>[0]));
    within(any, deadline, () -> drain(deadline, then));
  }

  /**
   * After a stop for good: the final callbacks run (bounded), then every executor of the client
   * shuts down; their threads end.
   */
  private void release() {
    if (!releasing.compareAndSet(false, true)) return;
    CompletableFuture<Void> idle = callbacks.idle();
    long deadline = System.currentTimeMillis() + CALLBACKS_WAIT_MS;
    within(
        CompletableFuture.allOf(link.ended(), idle),
        deadline,
        () -> {
          if (ownCallbackThread != null) ownCallbackThread.shutdown();
          mqttCallbacks.shutdown();
          core.shutdown();
          if (ownCompletions != null) ownCompletions.shutdown();
          released.complete(null);
        });
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
    if (stopError != null) return Futures.failed(stopError);
    if (!link.online()) {
      return Futures.failed(new NixMsgException("not_connected", "Not connected to the server"));
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
      return Futures.failed(e);
    }
    CompletableFuture<JsonObject> answer = pending.await(id, type);
    link.publish(json);
    return answer;
  }

  /** Sends a request from any thread; the future completes on the completion executor. */
  CompletableFuture<JsonObject> call(String type, JsonObject fields) {
    if (refused()) return Futures.relay(Futures.failed(stoppedError()), completions);
    return Futures.relay(callOnCore(() -> request(type, fields)), completions);
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
    // Stopped for good (close, logout, kicked, auth_failed): the client releases its threads.
    release();
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
                  if (e != null) out.completeExceptionally(Futures.unwrap(e));
                  else out.complete(v);
                });
          });
    } catch (java.util.concurrent.RejectedExecutionException e) {
      NixMsgException err = stopError;
      out.completeExceptionally(err != null ? err : new NixMsgException("closed", "Client closed"));
    }
    return out;
  }

  static ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name + "-" + THREADS.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
