package asia.asio.nixmsg;

import java.util.concurrent.Executor;
import java.util.function.Consumer;
import javax.net.ssl.HostnameVerifier;
import javax.net.ssl.TrustManagerFactory;

/**
 * Options of {@link NixMsgClient#connect}; build with {@link #builder()}.
 *
 * <pre>{@code
 * ConnectOptions options = ConnectOptions.builder()
 *     .transport(Transport.TCP)
 *     .ackMode(AckMode.MANUAL)
 *     .build();
 * }</pre>
 */
public final class ConnectOptions {
  final Transport transport;
  final AckMode ackMode;
  final int keepaliveSeconds;
  final long connectTimeoutMs;
  final int maxReceiveBytes;
  final int queueCapacity;
  final int maxInFlight;
  final int dedupCapacity;
  final long requestTimeoutMs;
  final TrustManagerFactory trustManagerFactory;
  final HostnameVerifier hostnameVerifier;
  final Executor callbackExecutor;
  final Executor completionExecutor;
  final Consumer<Throwable> onCallbackError;

  private ConnectOptions(Builder b) {
    transport = b.transport;
    ackMode = b.ackMode;
    keepaliveSeconds = b.keepaliveSeconds;
    connectTimeoutMs = b.connectTimeoutMs;
    maxReceiveBytes = b.maxReceiveBytes;
    queueCapacity = b.queueCapacity;
    maxInFlight = b.maxInFlight;
    dedupCapacity = b.dedupCapacity;
    requestTimeoutMs = b.requestTimeoutMs;
    trustManagerFactory = b.trustManagerFactory;
    hostnameVerifier = b.hostnameVerifier;
    callbackExecutor = b.callbackExecutor;
    completionExecutor = b.completionExecutor;
    onCallbackError = b.onCallbackError;
  }

  /** The defaults of spec 9. */
  public static ConnectOptions defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builder of {@link ConnectOptions}; every setting has the spec's default. */
  public static final class Builder {
    private Transport transport = Transport.WEBSOCKET;
    private AckMode ackMode = AckMode.AUTO;
    private int keepaliveSeconds = 30;
    private long connectTimeoutMs = 30_000;
    private int maxReceiveBytes = Body.DEFAULT_MAX_FRAME_BYTES;
    private int queueCapacity = 1000;
    private int maxInFlight = 100;
    private int dedupCapacity = 10_000;
    private long requestTimeoutMs = 30_000;
    private TrustManagerFactory trustManagerFactory;
    private HostnameVerifier hostnameVerifier;
    private Executor callbackExecutor;
    private Executor completionExecutor;
    private Consumer<Throwable> onCallbackError;

    private Builder() {}

    /** {@code WEBSOCKET} (default) or {@code TCP}; raw TCP is used only when asked for. */
    public Builder transport(Transport transport) {
      this.transport = transport == null ? Transport.WEBSOCKET : transport;
      return this;
    }

    /** {@code AUTO} (default) acks after {@code onMessage} returns; {@code MANUAL} on ack(). */
    public Builder ackMode(AckMode ackMode) {
      this.ackMode = ackMode == null ? AckMode.AUTO : ackMode;
      return this;
    }

    /** MQTT keep alive in seconds, 10–600 (default 30, spec 5). */
    public Builder keepaliveSeconds(int seconds) {
      if (seconds < 10 || seconds > 600) {
        throw NixMsgException.config("keepaliveSeconds must be 10-600");
      }
      this.keepaliveSeconds = seconds;
      return this;
    }

    /** Time for CONNECT, SUBSCRIBE and {@code hello} together, in ms (default 30,000). */
    public Builder connectTimeoutMs(long ms) {
      if (ms < 1) throw NixMsgException.config("connectTimeoutMs must be positive");
      this.connectTimeoutMs = ms;
      return this;
    }

    /** {@code max_receive_bytes} declared in {@code hello}, at least 1024 (default 786,432). */
    public Builder maxReceiveBytes(int bytes) {
      if (bytes < 1024) throw NixMsgException.config("maxReceiveBytes must be >= 1024");
      this.maxReceiveBytes = bytes;
      return this;
    }

    /** Sends held in memory, in flight included (default 1,000). */
    public Builder queueCapacity(int n) {
      if (n < 1) throw NixMsgException.config("queueCapacity must be positive");
      this.queueCapacity = n;
      return this;
    }

    /** Sends published without a response yet (default 100). */
    public Builder maxInFlight(int n) {
      if (n < 1) throw NixMsgException.config("maxInFlight must be positive");
      this.maxInFlight = n;
      return this;
    }

    /** Received messages remembered for deduplication (default 10,000). */
    public Builder dedupCapacity(int n) {
      if (n < 1) throw NixMsgException.config("dedupCapacity must be positive");
      this.dedupCapacity = n;
      return this;
    }

    /** How long a request other than {@code send} waits for its response (default 30 s). */
    public Builder requestTimeoutMs(long ms) {
      if (ms < 1) throw NixMsgException.config("requestTimeoutMs must be positive");
      this.requestTimeoutMs = ms;
      return this;
    }

    /**
     * The trust for TLS ({@code wss}, {@code mqtts}), e.g. from a private CA's key store:
     * {@code tmf.init(keyStore)}. Without it the JVM's (or Android's) default trust is used.
     */
    public Builder trustManagerFactory(TrustManagerFactory tmf) {
      this.trustManagerFactory = tmf;
      return this;
    }

    /** Host name check for TLS; the default checks the certificate against the host. */
    public Builder hostnameVerifier(HostnameVerifier verifier) {
      this.hostnameVerifier = verifier;
      return this;
    }

    /**
     * Where callbacks run, e.g. {@code ContextCompat.getMainExecutor(context)} on Android. The
     * SDK still runs them one at a time, in order. Default: one daemon thread per client.
     */
    public Builder callbackExecutor(Executor executor) {
      this.callbackExecutor = executor;
      return this;
    }

    /**
     * Where the futures the client returns complete (and so where {@code thenAccept} and friends
     * run without an executor of their own). Default: the client's own pool of at most two
     * daemon threads, which end with the client. Never the callback thread.
     */
    public Builder completionExecutor(Executor executor) {
      if (executor == null) throw NixMsgException.config("completionExecutor is null");
      this.completionExecutor = executor;
      return this;
    }

    /** Called with errors thrown by callbacks; default: printed to stderr. */
    public Builder onCallbackError(Consumer<Throwable> handler) {
      this.onCallbackError = handler;
      return this;
    }

    public ConnectOptions build() {
      return new ConnectOptions(this);
    }
  }
}
