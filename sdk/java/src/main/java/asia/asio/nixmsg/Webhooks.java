package asia.asio.nixmsg;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Verifying NixMsg webhook requests (docs/protocol.md "Webhooks"): Standard Webhooks signatures,
 * {@code v1,} + base64 HMAC-SHA256 of {@code <webhook-id>.<webhook-timestamp>.<body>} keyed with
 * the bytes of the {@code whsec_} secret.
 *
 * <pre>{@code
 * byte[] body = readAll(request.getInputStream());
 * if (!Webhooks.verify(secret, request.getHeader("webhook-id"),
 *     request.getHeader("webhook-timestamp"), request.getHeader("webhook-signature"), body,
 *     System.currentTimeMillis())) {
 *   response.setStatus(401);
 *   return;
 * }
 * }</pre>
 */
public final class Webhooks {
  /** How far a timestamp may be from now, in seconds, before it is refused (a replay). */
  public static final long TOLERANCE_SECONDS = 300;

  private Webhooks() {}

  /**
   * The {@code webhook-signature} value NixMsg sends for one request.
   *
   * @throws IllegalArgumentException when the secret is not base64 after {@code whsec_}
   */
  public static String sign(String secret, String id, long timestampSeconds, byte[] body) {
    byte[] key = Base64Codec.decode(secret.startsWith("whsec_") ? secret.substring(6) : secret);
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      mac.update((id + "." + timestampSeconds + ".").getBytes(StandardCharsets.UTF_8));
      return "v1," + Base64Codec.encode(mac.doFinal(body));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is not available", e);
    }
  }

  /**
   * True when the request is signed with {@code secret} and its timestamp is within {@link
   * #TOLERANCE_SECONDS} of {@code nowMs}. Pass the body exactly as received; deduplicate accepted
   * events by {@code webhook-id}, which a retry repeats.
   */
  public static boolean verify(
      String secret, String id, String timestamp, String signatures, byte[] body, long nowMs) {
    if (id == null || id.isEmpty() || timestamp == null || signatures == null) return false;
    long ts;
    try {
      ts = Long.parseLong(timestamp);
    } catch (NumberFormatException e) {
      return false;
    }
    if (Math.abs(nowMs / 1000 - ts) > TOLERANCE_SECONDS) return false;
    byte[] want;
    try {
      want = sign(secret, id, ts, body).getBytes(StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return false;
    }
    for (String s : signatures.split(" ")) {
      if (MessageDigest.isEqual(s.getBytes(StandardCharsets.UTF_8), want)) return true;
    }
    return false;
  }
}
