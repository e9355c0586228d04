package asia.asio.nixmsg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The local checks of spec 9 ("本地检查") and the JSON of spec 6. */
class LocalChecksTest {
  static final int BODY = 262_144;
  static final int META = 4096;
  static final int FRAME = 786_432;

  private static String code(Object body, SendOptions o) {
    NixMsgException e =
        assertThrows(
            NixMsgException.class,
            () -> SendFrame.build(Target.endpoint("b"), body, o, BODY, META, FRAME, 0));
    return e.code();
  }

  private static JsonObject build(Object body, SendOptions o) {
    return SendFrame.build(Target.endpoint("b"), body, o, BODY, META, FRAME, 0);
  }

  private static String repeat(String s, int n) {
    StringBuilder b = new StringBuilder(s.length() * n);
    for (int i = 0; i < n; i++) b.append(s);
    return b.toString();
  }

  @Test
  void bodyLimitCountsDecodedBytes() {
    assertEquals("body_too_large", code(new byte[BODY + 1], null));
    assertEquals("body_too_large", code(repeat("x", BODY + 1), null));
    // 87,382 × 3 bytes = 262,146 bytes of UTF-8 in 87,382 characters.
    assertEquals("body_too_large", code(repeat("你", 87_382), null));
    // A surrogate pair is 4 bytes: 65,536 × 4 = 262,144 passes, one more character fails.
    build(repeat("😀", 65_536), null);
    assertEquals("body_too_large", code(repeat("😀", 65_536) + "x", null));
    JsonObject exact = build(new byte[BODY], null);
    assertEquals("base64", exact.getAsJsonObject("body").get("enc").getAsString());
    build(repeat("x", BODY), null);
  }

  @Test
  void frameLimitCountsJsonEscaping() {
    // Each control character becomes \\u0001 (6 bytes): 262,144 of them exceed 786,432.
    assertEquals("frame_too_large", code(repeat("\u0001", BODY), null));
  }

  @Test
  void metaLimitAndShape() {
    Map<String, Object> big = Collections.singletonMap("k", repeat("v", 4100));
    assertEquals("meta_too_large", code("x", SendOptions.builder().meta(big).build()));
    Map<String, Object> ok = new LinkedHashMap<>();
    ok.put("n", 1);
    ok.put("list", Arrays.asList("a", true));
    JsonObject f = build("x", SendOptions.builder().meta(ok).build());
    assertEquals("{\"n\":1,\"list\":[\"a\",true]}", Json.stringify(f.get("meta")));
  }

  @Test
  void invalidInputIsBadRequest() {
    assertEquals("bad_request", code("\uD800 lone surrogate", null));
    assertEquals("bad_request", code(42, null));
  }

  @Test
  void invalidOptionsFailWhenTheyAreBuilt() {
    String[] codes = {
      assertThrows(NixMsgException.class, () -> SendOptions.builder().sendAt(1).delayMs(1).build()).code(),
      assertThrows(NixMsgException.class, () -> SendOptions.builder().delayMs(-1)).code(),
      assertThrows(NixMsgException.class, () -> SendOptions.builder().ttl(0)).code(),
      assertThrows(NixMsgException.class, () -> ConnectOptions.builder().keepaliveSeconds(5)).code(),
      assertThrows(NixMsgException.class, () -> ConnectOptions.builder().completionExecutor(null)).code(),
      assertThrows(
              NixMsgException.class,
              () -> NixMsgClient.create("ws://127.0.0.1:1/mqtt", "", Credential.password("p"), null))
          .code(),
      assertThrows(
              NixMsgException.class,
              () -> NixMsgClient.create("ftp://h", "a", Credential.password("p"), null))
          .code(),
    };
    for (String c : codes) assertEquals(ErrorCodes.BAD_REQUEST, c);
    NixMsgClient client =
        NixMsgClient.create("ws://127.0.0.1:1/mqtt", "a", Credential.password("p"), null);
    try {
      assertEquals(
          ErrorCodes.BAD_REQUEST,
          assertThrows(NixMsgException.class, () -> client.onMessage(null)).code());
      assertEquals(
          ErrorCodes.BAD_REQUEST,
          assertThrows(NixMsgException.class, () -> client.onConnection(null)).code());
    } finally {
      client.close();
    }
  }

  @Test
  void jsonKeepsNonAsciiAndHtmlCharactersUnescaped() {
    JsonObject f = build("你好 <b>&'=", SendOptions.builder().meta(Collections.singletonMap("名", "<i>")).build());
    String json = Json.stringify(SendFrame.wire("r1", f));
    assertTrue(json.contains("\"data\":\"你好 <b>&'=\""), json);
    assertTrue(json.contains("\"meta\":{\"名\":\"<i>\"}"), json);
    assertFalse(json.contains("\\u"), json);
  }

  @Test
  void offlineOptionsFollowTheTypeScriptRules() {
    assertEquals(
        "{\"keep\":true,\"ttl_seconds\":60}",
        Json.stringify(build("x", SendOptions.builder().ttl(60).build()).get("offline")),
        "a ttl alone means keep");
    assertEquals(
        "{\"keep\":false}",
        Json.stringify(build("x", SendOptions.builder().keep(false).ttl(60).build()).get("offline")));
    JsonObject plain = build("x", null);
    assertFalse(plain.has("offline"));
    assertEquals(36, plain.get("id").getAsString().length());
    assertEquals('7', plain.get("id").getAsString().charAt(14), "a UUIDv7");
  }
}
