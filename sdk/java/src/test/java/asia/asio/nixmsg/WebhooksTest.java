package asia.asio.nixmsg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

/** Webhook signatures against the example of the Standard Webhooks specification. */
class WebhooksTest {
  private static final String SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  private static final String ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
  private static final long TS = 1614265330L;
  private static final byte[] BODY = "{\"test\": 2432232314}".getBytes(StandardCharsets.UTF_8);
  private static final String SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

  @Test
  void signMakesTheStandardWebhooksSignature() {
    assertEquals(SIG, Webhooks.sign(SECRET, ID, TS, BODY));
  }

  @Test
  void verifyAcceptsAValidRequestAndRefusesTheRest() {
    long now = TS * 1000;
    String ts = Long.toString(TS);
    assertTrue(Webhooks.verify(SECRET, ID, ts, "v1,AAAA " + SIG, BODY, now));
    byte[] changed = "{\"test\": 2432232315}".getBytes(StandardCharsets.UTF_8);
    assertFalse(Webhooks.verify(SECRET, ID, ts, SIG, changed, now));
    assertFalse(Webhooks.verify(SECRET, ID, ts, SIG, BODY, now + 301_000));
    assertFalse(Webhooks.verify("whsec_%%%", ID, ts, SIG, BODY, now));
    assertFalse(Webhooks.verify(SECRET, null, ts, SIG, BODY, now));
  }

  /** The server's own signatures (sdk/conformance/webhook_vectors.json). */
  @Test
  void verifyAcceptsTheServersOwnSignatures() throws IOException {
    String text =
        new String(
            Files.readAllBytes(Paths.get("..", "conformance", "webhook_vectors.json")),
            StandardCharsets.UTF_8);
    int n = 0;
    for (JsonElement e :
        JsonParser.parseString(text).getAsJsonObject().getAsJsonArray("vectors")) {
      JsonObject v = e.getAsJsonObject();
      String secret = v.get("secret").getAsString();
      String id = v.get("id").getAsString();
      long ts = v.get("timestamp").getAsLong();
      byte[] body = v.get("body").getAsString().getBytes(StandardCharsets.UTF_8);
      String sig = v.get("signature").getAsString();
      assertEquals(sig, Webhooks.sign(secret, id, ts, body), id);
      assertTrue(Webhooks.verify(secret, id, Long.toString(ts), sig, body, ts * 1000), id);
      n++;
    }
    assertTrue(n >= 3, n + " vectors");
  }
}
