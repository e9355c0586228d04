package example;

import asia.asio.nixmsg.Credential;
import asia.asio.nixmsg.NixMsgClient;
import asia.asio.nixmsg.NixMsgException;
import asia.asio.nixmsg.SendResult;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

public final class Quickstart {
  public static void main(String[] args) throws Exception {
    // java example.Quickstart ws://127.0.0.1:7443/mqtt my-id my-password other-id
    System.out.println(talk(args[0], args[1], args[2], args[3]));
  }

  /** Sends one message to {@code peer} and returns the text of the first message received. */
  public static String talk(String url, String id, String password, String peer)
      throws Exception {
    CompletableFuture<String> firstReply = new CompletableFuture<>();
    NixMsgClient client = NixMsgClient.connect(url, id, Credential.password(password));
    try {
      client.onSession(token -> System.out.println("new session token (save it to log in later)"));
      client.onConnection(event -> System.out.println("connection: " + event.state().wireName()));
      client.onMessage(msg -> firstReply.complete(msg.text()));

      client.ready().get(30, TimeUnit.SECONDS);
      SendResult sent = client.send(peer, "hello from Java, 你好").get(30, TimeUnit.SECONDS);
      System.out.println("sent " + sent.id() + ", state " + sent.state());
      return firstReply.get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      NixMsgException error = NixMsgException.from(e);
      if (error != null) System.err.println("failed: " + error.code());
      throw e;
    } finally {
      client.close().get(10, TimeUnit.SECONDS);
    }
  }
}
