package asia.asio.nixmsg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import asia.asio.nixmsg.testing.Harness;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import example.Quickstart;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The "done when": the README's Java program exchanges messages with a TypeScript SDK
 * client (src/test/ts/ts_peer.ts, run by Deno) through a running server.
 */
class InteropTest {
  static Harness h;

  @BeforeAll
  static void start() throws Exception {
    h = Harness.start();
  }

  @AfterAll
  static void stop() throws Exception {
    if (h != null) h.close();
  }

  @Test
  void readmeExampleIsTheQuickstartSource() throws Exception {
    String readme = new String(Files.readAllBytes(new File("README.md").toPath()), StandardCharsets.UTF_8);
    String example =
        new String(
            Files.readAllBytes(new File("src/test/java/example/Quickstart.java").toPath()),
            StandardCharsets.UTF_8);
    assertTrue(readme.contains("```java\n" + example + "```"), "README shows Quickstart.java as it is");
  }

  @Test
  void javaClientExchangesMessagesWithTypeScriptClient() throws Exception {
    Harness.Endpoint javaEp = h.endpoint();
    Harness.Endpoint tsEp = h.endpoint();
    // permissions: not the shipped command: a TypeScript SDK client, not the server.
    List<String> args =
        Arrays.asList(
            Harness.deno(),
            "run",
            "--quiet",
            "--allow-all",
            "--frozen",
            "--config",
            new File(Harness.REPO_ROOT, "deno.json").getPath(),
            new File("src/test/ts/ts_peer.ts").getAbsolutePath(),
            h.wsUrl(),
            tsEp.id,
            tsEp.password);
    Process peer =
        new ProcessBuilder(args).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    LinkedBlockingQueue<JsonObject> events = new LinkedBlockingQueue<>();
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader r =
                  new BufferedReader(
                      new InputStreamReader(peer.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                  events.add(JsonParser.parseString(line).getAsJsonObject());
                }
              } catch (Exception ignored) {
                // the peer ended
              }
            });
    reader.setDaemon(true);
    reader.start();
    try {
      JsonObject online = events.poll(60, TimeUnit.SECONDS);
      assertTrue(online != null && online.get("event").getAsString().equals("online"), "TS peer online");

      String reply = Quickstart.talk(h.wsUrl(), javaEp.id, javaEp.password, tsEp.id);
      assertTrue(reply.matches("echo: hello from Java, 你好 [0-9a-f]{8}"), reply);

      JsonObject got = events.poll(15, TimeUnit.SECONDS);
      assertEquals("message", got.get("event").getAsString());
      assertEquals(javaEp.id, got.get("from").getAsString());
      assertEquals(reply, "echo: " + got.get("text").getAsString(), "the answer to this message");
    } finally {
      peer.getOutputStream().close();
      if (!peer.waitFor(15, TimeUnit.SECONDS)) peer.destroyForcibly().waitFor();
    }
  }
}
