package asia.asio.nixmsg;

import com.google.gson.JsonObject;
import com.hivemq.client.mqtt.MqttClient;
import com.hivemq.client.mqtt.MqttClientTransportConfig;
import com.hivemq.client.mqtt.MqttClientTransportConfigBuilder;
import com.hivemq.client.mqtt.datatypes.MqttQos;
import com.hivemq.client.mqtt.mqtt5.Mqtt5AsyncClient;
import com.hivemq.client.mqtt.mqtt5.Mqtt5ClientBuilder;
import com.hivemq.client.mqtt.mqtt5.exceptions.Mqtt5ConnAckException;
import com.hivemq.client.mqtt.mqtt5.exceptions.Mqtt5DisconnectException;
import com.hivemq.client.mqtt.mqtt5.message.subscribe.suback.Mqtt5SubAckReasonCode;
import io.reactivex.Scheduler;
import io.reactivex.schedulers.Schedulers;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.HostnameVerifier;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManagerFactory;

/**
 * One logical connection to the server and its reconnect loop (spec 5, 6.1, 9 "连接"). Each
 * attempt is a new HiveMQ client with Clean Start and session expiry 0; HiveMQ's automatic
 * reconnect is not used, this class decides when and how to connect again. Everything here runs
 * on the client's core thread; HiveMQ callbacks are passed to it.
 */
final class Link {
  /** MQTT 5 DISCONNECT reason: another connection took the session over (spec 5). */
  static final int SESSION_TAKEN_OVER = 0x8E;
  /** Online this long resets the backoff (spec 9 step 4). */
  static final long STABLE_MS = 60_000;
  /** Longest wait for a clean MQTT close. */
  static final long CLOSE_WAIT_MS = 2000;
  /** Netty event loop threads shared by every client of the JVM (HiveMQ counts its users). */
  private static final int NETTY_THREADS = 2;

  private static final AtomicInteger NETTY_SEQ = new AtomicInteger();

  /**
   * The executor HiveMQ's Netty event loops run on: daemon threads (HiveMQ 1.3.7's own are not),
   * so a client that was never closed does not keep the JVM alive. HiveMQ shuts the event loop
   * group down when its last client has disconnected; its threads end then.
   */
  private static final Executor NETTY =
      r -> {
        Thread t = new Thread(r, "nixmsg-netty-" + NETTY_SEQ.incrementAndGet());
        t.setDaemon(true);
        t.start();
      };

  /** What ended an attempt, for the {@code reconnecting} reason. */
  static String reasonOf(Throwable cause) {
    for (Throwable t = cause; t != null; t = t.getCause()) {
      if (t instanceof SSLException) return "tls_error";
    }
    for (Throwable t = cause; t != null; t = t.getCause()) {
      if (t instanceof IOException
          || t instanceof com.hivemq.client.mqtt.exceptions.ConnectionFailedException) {
        return "network_error";
      }
    }
    return "connection_closed";
  }

  /** CONNACK codes that end reconnecting (spec 9 step 6). */
  static boolean authRefused(int connAckCode) {
    return connAckCode == 0x86 || connAckCode == 0x87 || connAckCode == 0x8A;
  }

  /**
   * Server clock minus local clock (spec 9 "时间"): {@code server_time_ms} minus the middle of
   * the hello round trip, {@code (hello sent + response received) / 2}, in local time.
   */
  static long clockOffset(long serverTimeMs, long helloSentAt, long respReceivedAt) {
    return Math.round(serverTimeMs - (helloSentAt + respReceivedAt) / 2.0);
  }

  /**
   * The delay before the next attempt (spec 9 step 4): the backoff starts again at 1 s when the
   * lost connection had been online for 60 s or more.
   */
  static long retryDelay(Backoff backoff, boolean wasOnline, long onlineSince, long now) {
    if (wasOnline && now - onlineSince >= STABLE_MS) backoff.reset();
    return backoff.next();
  }

  /** Settings of a link. */
  static final class Options {
    ServerAddress address;
    String endpointId;
    Credential credential;
    int keepaliveSeconds;
    long connectTimeoutMs;
    int maxReceiveBytes;
    String clientName;
    TrustManagerFactory trustManagerFactory;
    HostnameVerifier hostnameVerifier;
    Supplier<String> nextRid;
    /** Where HiveMQ completes its futures (its "application scheduler"); ends with the client. */
    Executor mqttCallbacks;
  }

  /** Why the link stopped for good. */
  static final class StopCause {
    final ConnectionState state;
    final String reason;

    StopCause(ConnectionState state, String reason) {
      this.state = state;
      this.reason = reason;
    }
  }

  /** What the link reports to its owner, on the core thread. */
  interface Events {
    /**
     * CONNECTING, ONLINE or RECONNECTING; stops are reported by {@link #stopped} only. {@code
     * cause} is what ended the last attempt, when it was an error (refused, DNS, TLS).
     */
    void state(ConnectionState state, String reason, Long retryInMs, Throwable cause);

    /** The handshake succeeded; {@code token} is the new session token of a password login. */
    void online(JsonObject hello, long offsetMs, String token);

    /** A downlink frame other than the hello response and {@code fatal}, while online. */
    void frame(JsonObject frame);

    /** An online connection was lost; requests in flight will get no response. */
    void down();

    /** The link stopped for good; it will not connect again. */
    void stopped(StopCause cause);
  }

  private final Options o;
  private final Events events;
  private final ScheduledExecutorService core;
  private final Backoff backoff = new Backoff();
  /** HiveMQ's callback thread (one): the messages of a connection reach the core through it. */
  private final Executor mqttCallbacks;

  private final Scheduler mqttScheduler;
  private final String upTopic;
  private final String downTopic;
  private String password;
  private String token;
  private Mqtt5AsyncClient client;
  private boolean online;
  private long onlineSince;
  private boolean stopped;
  private boolean started;
  private StopCause closeMeans;
  private ScheduledFuture<?> attemptTimer;
  private ScheduledFuture<?> retryTimer;
  private String helloRid = "";
  private long helloSentAt;
  private CompletableFuture<Void> ended = CompletableFuture.completedFuture(null);

  Link(Options options, Events events, ScheduledExecutorService core) {
    this.o = options;
    this.events = events;
    this.core = core;
    this.password = options.credential.passwordValue();
    this.token = options.credential.tokenValue();
    this.upTopic = "nix/c/" + options.endpointId + "/up";
    this.downTopic = "nix/c/" + options.endpointId + "/down";
    this.mqttCallbacks = Futures.orInline(options.mqttCallbacks);
    this.mqttScheduler = Schedulers.from(mqttCallbacks);
  }

  /** Runs {@code task} on the core thread; dropped once the client has ended. */
  private void post(Runnable task) {
    try {
      core.execute(task);
    } catch (RejectedExecutionException e) {
      // The client has ended: late HiveMQ events have nobody to tell.
    }
  }

  /** Completes once the MQTT client of the last stop has ended (bounded by the close wait). */
  CompletableFuture<Void> ended() {
    return ended;
  }

  /** True between a successful hello and the loss of that connection. */
  boolean online() {
    return online;
  }

  boolean stopped() {
    return stopped;
  }

  /** The session token reconnects use, if any. */
  String sessionToken() {
    return token;
  }

  /** Replaces the session token (after {@code self.login_password}, spec 6.6). */
  void setSessionToken(String newToken) {
    token = newToken;
    password = null;
  }

  /** Starts the first connection attempt. */
  void start() {
    if (stopped || started) return;
    started = true;
    events.state(ConnectionState.CONNECTING, null, null, null);
    open();
  }

  /** Publishes a frame on the up topic, in order; false when not online. */
  boolean publish(String json) {
    if (!online || client == null) return false;
    client.publishWith().topic(upTopic).qos(MqttQos.AT_LEAST_ONCE).payload(Body.utf8(json)).send();
    return true;
  }

  /** When the current connection closes, stop with {@code cause} instead of reconnecting. */
  void stopOnClose(StopCause cause) {
    closeMeans = cause;
  }

  /** Stops for good; the future completes once the MQTT client has ended. */
  CompletableFuture<Void> stop(StopCause cause) {
    if (stopped) return ended;
    stopped = true;
    cancel(attemptTimer);
    cancel(retryTimer);
    Mqtt5AsyncClient c = client;
    client = null;
    online = false;
    if (c != null) {
      CompletableFuture<Void> done = new CompletableFuture<>();
      // A graceful end sends DISCONNECT; a stalled connection must not hang close().
      ScheduledFuture<?> timer =
          core.schedule(() -> done.complete(null), CLOSE_WAIT_MS, TimeUnit.MILLISECONDS);
      disconnect(c).whenComplete((v, e) -> {
        timer.cancel(false);
        done.complete(null);
      });
      ended = done;
    }
    events.stopped(cause);
    return ended;
  }

  private void open() {
    final boolean usingToken = token != null;
    final String secret = token != null ? token : (password != null ? password : "");
    ServerAddress a = o.address;
    final Mqtt5AsyncClient[] self = new Mqtt5AsyncClient[1];
    // TLS and WebSocket are set on the transport config itself. Set through the client builder
    // after transportConfig(), the TLS settings never reached a raw TCP connection (TlsTest).
    MqttClientTransportConfigBuilder t =
        MqttClientTransportConfig.builder()
            .serverHost(a.host())
            .serverPort(a.port())
            .socketConnectTimeout(o.connectTimeoutMs, TimeUnit.MILLISECONDS)
            .mqttConnectTimeout(o.connectTimeoutMs, TimeUnit.MILLISECONDS);
    if (a.secure()) {
      t =
          t.sslConfig()
              .trustManagerFactory(o.trustManagerFactory)
              .hostnameVerifier(o.hostnameVerifier)
              .applySslConfig();
    }
    if (a.transport() == Transport.WEBSOCKET) {
      // spec 9 step 1: WebSocket to <path>/mqtt with subprotocol mqtt.
      t =
          t.webSocketConfig()
              .serverPath(a.webSocketPath().substring(1))
              .subprotocol("mqtt")
              .applyWebSocketConfig();
    }
    Mqtt5ClientBuilder b =
        MqttClient.builder()
            .useMqttVersion5()
            .identifier(o.endpointId)
            .transportConfig(t.build())
            .executorConfig()
            .nettyExecutor(NETTY)
            .nettyThreads(NETTY_THREADS)
            .applicationScheduler(mqttScheduler)
            .applyExecutorConfig()
            .addDisconnectedListener(
                ctx -> {
                  Throwable cause = ctx.getCause();
                  // Through the callback thread, behind the messages read before the close:
                  // HiveMQ may acknowledge a message (so the server may close, as after
                  // logout) before that thread has handed it on to the core.
                  mqttCallbacks.execute(() -> post(() -> closed(self[0], cause, usingToken)));
                });
    Mqtt5AsyncClient c = b.buildAsync();
    self[0] = c;
    client = c;
    helloRid = "";
    // spec 9 step 3: CONNECT, SUBSCRIBE and hello within the connect timeout (30 s).
    attemptTimer =
        core.schedule(() -> drop(c, "timeout"), o.connectTimeoutMs, TimeUnit.MILLISECONDS);
    c.connectWith()
        // spec 9 step 2: Clean Start and session expiry 0 on every connection, reconnects too.
        .cleanStart(true)
        .sessionExpiryInterval(0)
        .keepAlive(o.keepaliveSeconds)
        .simpleAuth()
        .username(o.endpointId)
        .password(Body.utf8(secret))
        .applySimpleAuth()
        .send()
        .whenComplete(
            (ack, err) ->
                post(
                    () -> {
                      if (err != null) closed(c, err, usingToken);
                      else connected(c);
                    }));
  }

  private void connected(Mqtt5AsyncClient c) {
    if (c != client) {
      // An attempt given up on (timeout, stop) that connected late: end it.
      disconnect(c);
      return;
    }
    c.subscribeWith()
        .topicFilter(downTopic)
        .qos(MqttQos.AT_LEAST_ONCE)
        .callback(p -> {
          byte[] payload = p.getPayloadAsBytes();
          post(() -> message(c, payload));
        })
        .send()
        .whenComplete(
            (subAck, err) ->
                post(
                    () -> {
                      if (c != client) return;
                      boolean refused = err != null;
                      if (!refused) {
                        for (Mqtt5SubAckReasonCode rc : subAck.getReasonCodes()) {
                          if (rc.isError()) refused = true;
                        }
                      }
                      if (refused) {
                        drop(c, "subscribe_failed");
                        return;
                      }
                      helloRid = o.nextRid.get();
                      helloSentAt = System.currentTimeMillis();
                      JsonObject hello = new JsonObject();
                      hello.addProperty("v", 1);
                      hello.addProperty("type", "hello");
                      hello.addProperty("rid", helloRid);
                      hello.addProperty("max_receive_bytes", o.maxReceiveBytes);
                      hello.addProperty("client", o.clientName);
                      c.publishWith()
                          .topic(upTopic)
                          .qos(MqttQos.AT_LEAST_ONCE)
                          .payload(Body.utf8(Json.stringify(hello)))
                          .send();
                    }));
  }

  private void message(Mqtt5AsyncClient c, byte[] payload) {
    if (c != client) return;
    JsonObject frame = Json.parseObject(payload);
    if (frame == null || !Json.isString(frame, "type")) return;
    String type = Json.str(frame, "type");
    if (type.equals("fatal")) {
      // spec 6.8: disabled, deleted, password_reset, protocol -> stop reconnecting.
      String reason = Json.str(frame, "reason");
      stop(new StopCause(ConnectionState.KICKED, reason.isEmpty() ? "fatal" : reason));
    } else if (type.equals("resp") && !helloRid.isEmpty() && helloRid.equals(Json.str(frame, "rid"))) {
      helloRid = "";
      handshaken(c, frame);
    } else if (online) {
      events.frame(frame);
    }
  }

  private void handshaken(Mqtt5AsyncClient c, JsonObject frame) {
    if (!Json.bool(frame, "ok")) {
      String code = Json.str(Json.obj(frame, "error"), "code");
      drop(c, code.isEmpty() ? "hello_failed" : code);
      return;
    }
    cancel(attemptTimer);
    JsonObject hello = Json.obj(frame, "data");
    if (hello == null) hello = new JsonObject();
    long now = System.currentTimeMillis();
    long offset = clockOffset(Json.num(hello, "server_time_ms"), helloSentAt, now);
    String newToken = Json.isString(hello, "session_token") ? Json.str(hello, "session_token") : null;
    if (newToken != null) setSessionToken(newToken);
    online = true;
    onlineSince = now;
    events.online(hello, offset, newToken);
    if (!stopped) events.state(ConnectionState.ONLINE, null, null, null);
  }

  /** The connection (or the attempt) ended with {@code cause}. */
  private void closed(Mqtt5AsyncClient c, Throwable cause, boolean usingToken) {
    if (c == null || c != client) return;
    Throwable t = cause;
    if (t instanceof java.util.concurrent.CompletionException && t.getCause() != null) {
      t = t.getCause();
    }
    if (t instanceof Mqtt5ConnAckException) {
      int code = ((Mqtt5ConnAckException) t).getMqttMessage().getReasonCode().getCode();
      if (authRefused(code)) {
        // spec 9 step 6: which credential was refused decides the reason.
        stop(
            new StopCause(
                ConnectionState.AUTH_FAILED, usingToken ? "session_invalid" : "bad_credentials"));
        return;
      }
      drop(c, "connack_0x" + Integer.toHexString(code));
      return;
    }
    if (t instanceof Mqtt5DisconnectException) {
      int code = ((Mqtt5DisconnectException) t).getMqttMessage().getReasonCode().getCode();
      if (code == SESSION_TAKEN_OVER) {
        stop(new StopCause(ConnectionState.KICKED, "taken_over"));
        return;
      }
      drop(c, "disconnect_0x" + Integer.toHexString(code));
      return;
    }
    drop(c, reasonOf(t), t);
  }

  private void drop(Mqtt5AsyncClient c, String reason) {
    drop(c, reason, null);
  }

  private void drop(Mqtt5AsyncClient c, String reason, Throwable cause) {
    if (c != client) return;
    client = null;
    cancel(attemptTimer);
    disconnect(c);
    boolean wasOnline = online;
    online = false;
    // Requests not answered yet are re-sent by the owner on the next connection (spec 9 发送).
    if (wasOnline) events.down();
    if (stopped) return;
    if (closeMeans != null) {
      stop(closeMeans);
      return;
    }
    long delay = retryDelay(backoff, wasOnline, onlineSince, System.currentTimeMillis());
    events.state(ConnectionState.RECONNECTING, reason, delay, cause);
    retryTimer =
        core.schedule(
            () -> {
              if (!stopped) open();
            },
            delay,
            TimeUnit.MILLISECONDS);
  }

  private static CompletableFuture<Void> disconnect(Mqtt5AsyncClient c) {
    try {
      return c.disconnect().handle((v, e) -> null);
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(null);
    }
  }

  private static void cancel(ScheduledFuture<?> f) {
    if (f != null) f.cancel(false);
  }
}
