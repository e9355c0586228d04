package asia.asio.nixmsg;

import java.util.Objects;

/** Limits and facts from the handshake response (spec 6.1). */
public final class ServerInfo {
  private final long serverTimeMs;
  private final String serverVersion;
  private final int maxBodyBytes;
  private final int maxMetaBytes;
  private final int maxFrameBytes;
  private final long maxTtlSeconds;
  private final long maxScheduleSeconds;
  private final long ackTimeoutSeconds;

  ServerInfo(long serverTimeMs, String serverVersion, int maxBodyBytes, int maxMetaBytes, int maxFrameBytes, long maxTtlSeconds, long maxScheduleSeconds, long ackTimeoutSeconds) {
    this.serverTimeMs = serverTimeMs;
    this.serverVersion = serverVersion;
    this.maxBodyBytes = maxBodyBytes;
    this.maxMetaBytes = maxMetaBytes;
    this.maxFrameBytes = maxFrameBytes;
    this.maxTtlSeconds = maxTtlSeconds;
    this.maxScheduleSeconds = maxScheduleSeconds;
    this.ackTimeoutSeconds = ackTimeoutSeconds;
  }

  /** Server clock at the handshake, Unix ms. */
  public long serverTimeMs() {
    return serverTimeMs;
  }

  /** Server version. */
  public String serverVersion() {
    return serverVersion;
  }

  /** Largest body, decoded bytes. */
  public int maxBodyBytes() {
    return maxBodyBytes;
  }

  /** Largest serialized meta. */
  public int maxMetaBytes() {
    return maxMetaBytes;
  }

  /** Largest frame (MQTT payload). */
  public int maxFrameBytes() {
    return maxFrameBytes;
  }

  /** Longest offline keep time. */
  public long maxTtlSeconds() {
    return maxTtlSeconds;
  }

  /** Furthest schedule ahead. */
  public long maxScheduleSeconds() {
    return maxScheduleSeconds;
  }

  /** Time the server waits for an ack. */
  public long ackTimeoutSeconds() {
    return ackTimeoutSeconds;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) return true;
    if (!(o instanceof ServerInfo)) return false;
    ServerInfo x = (ServerInfo) o;
    return serverTimeMs == x.serverTimeMs
        && Objects.equals(serverVersion, x.serverVersion)
        && maxBodyBytes == x.maxBodyBytes
        && maxMetaBytes == x.maxMetaBytes
        && maxFrameBytes == x.maxFrameBytes
        && maxTtlSeconds == x.maxTtlSeconds
        && maxScheduleSeconds == x.maxScheduleSeconds
        && ackTimeoutSeconds == x.ackTimeoutSeconds;
  }

  @Override
  public int hashCode() {
    return Objects.hash(serverTimeMs, serverVersion, maxBodyBytes, maxMetaBytes, maxFrameBytes, maxTtlSeconds, maxScheduleSeconds, ackTimeoutSeconds);
  }

  @Override
  public String toString() {
    return "ServerInfo{" + "serverTimeMs=" + serverTimeMs + ", " + "serverVersion=" + serverVersion + ", " + "maxBodyBytes=" + maxBodyBytes + ", " + "maxMetaBytes=" + maxMetaBytes + ", " + "maxFrameBytes=" + maxFrameBytes + ", " + "maxTtlSeconds=" + maxTtlSeconds + ", " + "maxScheduleSeconds=" + maxScheduleSeconds + ", " + "ackTimeoutSeconds=" + ackTimeoutSeconds + "}";
  }
}
