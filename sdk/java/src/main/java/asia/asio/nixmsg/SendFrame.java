package asia.asio.nixmsg;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.Map;

/** Builds the {@code send} frame of spec 6.2 from the options, with the local checks of spec 9. */
final class SendFrame {
  /** A rid as long as any the client makes, for the size check before queueing. */
  static final String RID_PLACEHOLDER = "rrrrrrrrrrrr";

  private SendFrame() {}

  /**
   * The frame content of one send (without {@code v}, {@code type}, {@code rid}), fixed at call
   * time: the id, and {@code send_at_ms} converted from the local {@code sendAt} with the clock
   * offset once, so that a resend has the same fingerprint (spec 7.3, 9). Throws
   * {@code bad_request}, {@code body_too_large}, {@code meta_too_large} or
   * {@code frame_too_large}.
   */
  static JsonObject build(
      Target to,
      Object body,
      SendOptions options,
      int maxBodyBytes,
      int maxMetaBytes,
      int maxFrameBytes,
      long offsetMs) {
    SendOptions o = options == null ? SendOptions.none() : options;
    if (to == null) throw new NixMsgException("bad_request", "The recipient is missing");
    JsonObject frame = new JsonObject();
    frame.addProperty("id", o.id != null ? o.id : Uuid7.next());
    JsonObject target = new JsonObject();
    target.addProperty("kind", to.kind());
    target.addProperty("id", to.id());
    frame.add("to", target);
    frame.add("body", Body.encode(body, o.contentType, maxBodyBytes));
    if (o.meta != null) {
      JsonElement meta = metaTree(o.meta);
      Body.checkMeta(meta, maxMetaBytes);
      frame.add("meta", meta);
    }
    if (o.sendAtMs != null) frame.addProperty("send_at_ms", Math.max(0, o.sendAtMs + offsetMs));
    if (o.delayMs != null) frame.addProperty("delay_ms", o.delayMs);
    if (o.keep != null || o.ttlSeconds != null) {
      // A ttl alone means "keep for that long".
      boolean keep = o.keep == null || o.keep;
      JsonObject offline = new JsonObject();
      offline.addProperty("keep", keep);
      if (keep && o.ttlSeconds != null) offline.addProperty("ttl_seconds", o.ttlSeconds);
      frame.add("offline", offline);
    }
    if (o.receipt != null) frame.addProperty("receipt", o.receipt);
    if (o.talkPassword != null && !o.talkPassword.isEmpty()) {
      frame.addProperty("talk_password", o.talkPassword);
    }
    Body.encodeFrame(wire(RID_PLACEHOLDER, frame), maxFrameBytes);
    return frame;
  }

  /** The wire frame of a queued send under {@code rid}: the same content on every publish. */
  static JsonObject wire(String rid, JsonObject frame) {
    JsonObject out = new JsonObject();
    out.addProperty("v", 1);
    out.addProperty("type", "send");
    out.addProperty("rid", rid);
    for (Map.Entry<String, JsonElement> e : frame.entrySet()) out.add(e.getKey(), e.getValue());
    return out;
  }

  private static JsonElement metaTree(Map<String, Object> meta) {
    try {
      return Json.toTree(meta);
    } catch (RuntimeException e) {
      throw new NixMsgException("bad_request", "meta must hold JSON values only");
    }
  }
}
