package asia.asio.nixmsg;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Options of {@code send} (spec 6.2, 9); build with {@link #builder()}.
 *
 * <pre>{@code
 * client.send("door-1", "open", SendOptions.builder().keep(true).ttl(3600).build());
 * client.send(Target.group(groupId), bytes, SendOptions.builder().delayMs(10_000).build());
 * }</pre>
 */
public final class SendOptions {
  final Long sendAtMs;
  final Long delayMs;
  final Boolean keep;
  final Long ttlSeconds;
  final Boolean receipt;
  final String talkPassword;
  final String contentType;
  final Map<String, Object> meta;
  final String id;

  private SendOptions(Builder b) {
    sendAtMs = b.sendAtMs;
    delayMs = b.delayMs;
    keep = b.keep;
    ttlSeconds = b.ttlSeconds;
    receipt = b.receipt;
    talkPassword = b.talkPassword;
    contentType = b.contentType;
    meta = b.meta == null ? null : new LinkedHashMap<>(b.meta);
    id = b.id;
  }

  /** No options: the endpoint's default delay, not kept, with receipts. */
  public static SendOptions none() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builder of {@link SendOptions}. */
  public static final class Builder {
    private Long sendAtMs;
    private Long delayMs;
    private Boolean keep;
    private Long ttlSeconds;
    private Boolean receipt;
    private String talkPassword;
    private String contentType;
    private Map<String, ?> meta;
    private String id;

    private Builder() {}

    /**
     * When to send, local clock in Unix ms; converted to server time once, at the call (spec 9).
     * Not together with {@link #delayMs}.
     */
    public Builder sendAt(long localEpochMs) {
      this.sendAtMs = localEpochMs;
      return this;
    }

    /**
     * Delay in ms; 0 sends at once. Without sendAt and delay the endpoint default applies. A
     * negative delay fails here with {@code bad_request}.
     */
    public Builder delayMs(long ms) {
      if (ms < 0) throw NixMsgException.config("delayMs must not be negative (got " + ms + ")");
      this.delayMs = ms;
      return this;
    }

    /** Keep the message for an offline recipient (default false). */
    public Builder keep(boolean keep) {
      this.keep = keep;
      return this;
    }

    /** Seconds to keep it; alone it means keep = true (server default 86,400). */
    public Builder ttl(long seconds) {
      if (seconds < 1) throw NixMsgException.config("ttl must be at least 1 second (got " + seconds + ")");
      this.ttlSeconds = seconds;
      return this;
    }

    /** Ask for receipts (default true). */
    public Builder receipt(boolean receipt) {
      this.receipt = receipt;
      return this;
    }

    /** The recipient's talk password, when needed (spec 6.6). */
    public Builder talkPassword(String talkPassword) {
      this.talkPassword = talkPassword;
      return this;
    }

    /** Content type; the server defaults it by the body's encoding. */
    public Builder contentType(String contentType) {
      this.contentType = contentType;
      return this;
    }

    /** Application metadata, at most {@code max_meta_bytes} serialized (JSON values only). */
    public Builder meta(Map<String, ?> meta) {
      this.meta = meta;
      return this;
    }

    /** The message id; default a new UUIDv7. Reusing an id makes the send idempotent. */
    public Builder id(String id) {
      this.id = id;
      return this;
    }

    /** The options; {@code bad_request} when both {@code sendAt} and {@code delayMs} are set. */
    public SendOptions build() {
      if (sendAtMs != null && delayMs != null) {
        throw NixMsgException.config("Give sendAt or delayMs, not both");
      }
      return new SendOptions(this);
    }
  }
}
