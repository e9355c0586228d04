package asia.asio.nixmsg;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/** A received message (spec 6.3). */
public final class Message {
  private final String id;
  private final String from;
  private final Target to;
  private final Object body;
  private final String contentType;
  private final Map<String, Object> meta;
  private final long sendAtMs;

  Message(
      String id,
      String from,
      Target to,
      Object body,
      String contentType,
      Map<String, Object> meta,
      long sendAtMs) {
    this.id = id;
    this.from = from;
    this.to = to;
    this.body = body;
    this.contentType = contentType;
    this.meta = meta;
    this.sendAtMs = sendAtMs;
  }

  public String id() {
    return id;
  }

  /** The sender's endpoint id. */
  public String from() {
    return from;
  }

  /** This endpoint, or the group the message was sent to. */
  public Target to() {
    return to;
  }

  /** True when the body was sent as text ({@code utf8}); false for bytes ({@code base64}). */
  public boolean isText() {
    return body instanceof String;
  }

  /** The body as text (bytes are decoded as UTF-8). */
  public String text() {
    return body instanceof String ? (String) body : new String((byte[]) body, StandardCharsets.UTF_8);
  }

  /** The body as bytes (text is encoded as UTF-8); a copy. */
  public byte[] bytes() {
    return body instanceof String
        ? ((String) body).getBytes(StandardCharsets.UTF_8)
        : ((byte[]) body).clone();
  }

  /** Content type; "" when the sender gave none. */
  public String contentType() {
    return contentType;
  }

  /** Application metadata: maps, lists, String, Long or Double, Boolean, null. */
  public Map<String, Object> meta() {
    return meta;
  }

  /** When it was due, server time. */
  public long sendAtMs() {
    return sendAtMs;
  }

  @Override
  public String toString() {
    // No body: message bodies are not logged (spec 12).
    return "Message{id=" + id + ", from=" + from + ", to=" + to + "}";
  }
}
