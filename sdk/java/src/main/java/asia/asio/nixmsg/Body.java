package asia.asio.nixmsg;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.nio.charset.StandardCharsets;

/** Message bodies on the wire and the local size checks of spec 9 ("本地检查"). */
final class Body {
  /** Limits used before the first handshake: the spec defaults (spec 6.1, 11.1). */
  static final int DEFAULT_MAX_BODY_BYTES = 262_144;

  static final int DEFAULT_MAX_META_BYTES = 4096;
  static final int DEFAULT_MAX_FRAME_BYTES = 786_432;

  private Body() {}

  /** Number of bytes of {@code text} in UTF-8 (unpaired surrogates count as 3). */
  static int utf8Length(String text) {
    int n = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x80) n += 1;
      else if (c < 0x800) n += 2;
      else if (Character.isHighSurrogate(c)
          && i + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(i + 1))) {
        n += 4;
        i++;
      } else n += 3;
    }
    return n;
  }

  /** True when {@code text} has no unpaired surrogate (it is valid Unicode). */
  static boolean wellFormed(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= text.length() || !Character.isLowSurrogate(text.charAt(i + 1))) return false;
        i++;
      } else if (Character.isLowSurrogate(c)) return false;
    }
    return true;
  }

  /**
   * The wire body of spec 6.2: text as {@code utf8}, bytes as padded standard {@code base64}.
   * Throws {@code body_too_large} when the decoded size exceeds {@code maxBodyBytes}, exactly as
   * the server would.
   */
  static JsonObject encode(Object body, String contentType, int maxBodyBytes) {
    JsonObject wire = new JsonObject();
    if (body instanceof String) {
      String text = (String) body;
      if (!wellFormed(text)) {
        throw new NixMsgException("bad_request", "Body text contains an unpaired surrogate");
      }
      checkBodySize(utf8Length(text), maxBodyBytes);
      wire.addProperty("enc", "utf8");
      wire.addProperty("data", text);
    } else if (body instanceof byte[]) {
      byte[] bytes = (byte[]) body;
      checkBodySize(bytes.length, maxBodyBytes);
      wire.addProperty("enc", "base64");
      wire.addProperty("data", Base64Codec.encode(bytes));
    } else {
      throw new NixMsgException("bad_request", "Body must be a String or a byte[]");
    }
    if (contentType != null && !contentType.isEmpty()) {
      wire.addProperty("content_type", contentType);
    }
    return wire;
  }

  /** Throws {@code body_too_large} when {@code size} bytes exceed {@code maxBodyBytes}. */
  static void checkBodySize(long size, long maxBodyBytes) {
    if (size > maxBodyBytes) {
      throw new NixMsgException(
          "body_too_large",
          "Body is " + size + " bytes, more than max_body_bytes " + maxBodyBytes);
    }
  }

  /**
   * Serializes a frame and throws {@code frame_too_large} when it exceeds {@code maxFrameBytes}:
   * the server closes the connection on an oversized packet without a {@code resp}, so resending
   * it after the reconnect would loop forever (spec 6.10, 9).
   */
  static String encodeFrame(JsonElement frame, long maxFrameBytes) {
    String json = Json.stringify(frame);
    int size = utf8Length(json);
    if (size > maxFrameBytes) {
      throw new NixMsgException(
          "frame_too_large",
          "Frame is " + size + " bytes, more than max_frame_bytes " + maxFrameBytes);
    }
    return json;
  }

  /** Throws {@code meta_too_large} when {@code meta} serializes to more than the limit. */
  static void checkMeta(JsonElement meta, long maxMetaBytes) {
    if (meta == null || !meta.isJsonObject()) {
      throw new NixMsgException("bad_request", "meta must be a JSON object");
    }
    int size = utf8Length(Json.stringify(meta));
    if (size > maxMetaBytes) {
      throw new NixMsgException(
          "meta_too_large", "meta is " + size + " bytes, more than max_meta_bytes " + maxMetaBytes);
    }
  }

  /** Decodes a received body: text for {@code utf8}, bytes for {@code base64}. */
  static Object decode(JsonObject body) {
    String data = Json.str(body, "data");
    if ("base64".equals(Json.str(body, "enc"))) return Base64Codec.decode(data);
    return data;
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
