package example;

import asia.asio.nixmsg.Credential;
import asia.asio.nixmsg.NixMsgClient;
import asia.asio.nixmsg.NixMsgException;
import asia.asio.nixmsg.SendResult;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

public final class Quickstart {
  public static void main(String[] args) {
    // java example.Quickstart ws://127.0.0.1:7443/mqtt my-id my-password other-id
    try {
      System.out.println(talk(args[0], args[1], args[2], args[3]));
    } catch (Exception e) {
      NixMsgException error = NixMsgException.from(e);
      System.err.println("failed: " + (error != null ? error.code() : e.toString()));
      System.exit(1);
    }
  }

  /** Sends one message to {@code peer} and returns the text of its answer to that message. */
  public static String talk(String url, String id, String password, String peer)
      throws Exception {
    // A marker makes this run's answer recognizable: an earlier run's answer may still arrive.
    String text = "hello from Java, 你好 " + UUID.randomUUID().toString().substring(0, 8);
    CompletableFuture<String> reply = new CompletableFuture<>();
    try (NixMsgClient client = NixMsgClient.connect(url, id, Credential.password(password))) {
      client.onSession(token -> System.out.println("new session token (save it to log in later)"));
      client.onConnection(event -> System.out.println("connection: " + event.state().wireName()));
      client.onMessage(
          msg -> {
            if (msg.from().equals(peer) && msg.text().equals("echo: " + text)) {
              reply.complete(msg.text());
            }
          });

      client.ready(30, TimeUnit.SECONDS).get();
      SendResult sent = client.send(peer, text).get(30, TimeUnit.SECONDS);
      System.out.println("sent " + sent.id() + ", state " + sent.state());
      return reply.get(30, TimeUnit.SECONDS);
    } // close() waits (5 s at most) for the ack of the answer
  }
}
