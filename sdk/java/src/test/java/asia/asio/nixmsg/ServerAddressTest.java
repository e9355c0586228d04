package asia.asio.nixmsg;

import static asia.asio.nixmsg.testing.Checks.codeOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** Address derivation (spec 6.9, 9), as the TypeScript SDK's url.ts. */
class ServerAddressTest {
  @Test
  void transportDecidesTheConnection() {
    assertEquals(
        "wss://relay.example:7443/mqtt",
        ServerAddress.parse("https://relay.example:7443", Transport.WEBSOCKET).url());
    assertEquals(
        "mqtts://relay.example:7443",
        ServerAddress.parse("wss://relay.example:7443/mqtt", Transport.TCP).url());
    assertEquals(
        "ws://10.0.0.5:80/base/mqtt",
        ServerAddress.parse("ws://10.0.0.5/base/mqtt/", null).url());
    assertEquals("/base/mqtt", ServerAddress.parse("http://h/base", null).webSocketPath());
    assertEquals(443, ServerAddress.parse("wss://h/mqtt", null).port());
  }

  @Test
  void registrationUrlIsDerived() {
    assertEquals(
        "https://relay.example:7443/api/client/register",
        ServerAddress.registerUrl("wss://relay.example:7443/mqtt"));
    assertEquals(
        "http://10.0.0.5:7443/api/client/register", ServerAddress.registerUrl("mqtt://10.0.0.5:7443"));
    assertEquals(
        "http://h:1/base/api/client/register", ServerAddress.registerUrl("ws://h:1/base/mqtt"));
  }

  @Test
  void unsupportedUrlsAreRefused() {
    assertEquals(
        ErrorCodes.BAD_REQUEST,
        codeOf(assertThrows(NixMsgException.class, () -> ServerAddress.parse("ftp://h/", null))));
    assertEquals(
        ErrorCodes.BAD_REQUEST,
        codeOf(assertThrows(NixMsgException.class, () -> ServerAddress.parse("not a url", null))));
  }
}
