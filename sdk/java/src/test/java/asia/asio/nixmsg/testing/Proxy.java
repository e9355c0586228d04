package asia.asio.nixmsg.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP proxy on 127.0.0.1 in front of the server that a test can cut, stall or close, to
 * simulate network failures with real sockets; it counts accepted connections (to prove that an
 * SDK does not reconnect). It forwards WebSocket and raw MQTT alike. Mirrors
 * sdk/ts/test/helpers/proxy.ts.
 */
public final class Proxy implements AutoCloseable {
  /** One entry (the time) per accepted client connection. */
  public final Events<Long> accepted = new Events<>();

  private final ServerSocket server;
  private final String host;
  private final int port;
  private final Set<Socket[]> pairs = ConcurrentHashMap.newKeySet();
  private volatile boolean refuse;
  private volatile boolean holdDown;

  private Proxy(ServerSocket server, String host, int port) {
    this.server = server;
    this.host = host;
    this.port = port;
    Thread t = new Thread(this::acceptLoop, "proxy-accept");
    t.setDaemon(true);
    t.start();
  }

  /** Starts a proxy forwarding to {@code target} ("host:port"). */
  public static Proxy start(String target) throws IOException {
    return start(target, new ServerSocket());
  }

  /** Starts a proxy that terminates TLS with {@code tls} and forwards plaintext to the target. */
  public static Proxy startTls(String target, javax.net.ssl.SSLContext tls) throws IOException {
    return start(target, tls.getServerSocketFactory().createServerSocket());
  }

  private static Proxy start(String target, ServerSocket s) throws IOException {
    int i = target.lastIndexOf(':');
    s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
    return new Proxy(s, target.substring(0, i), Integer.parseInt(target.substring(i + 1)));
  }

  /** "127.0.0.1:port" of the proxy. */
  public String address() {
    return "127.0.0.1:" + server.getLocalPort();
  }

  /** New connections are closed at once while true. */
  public void refuse(boolean value) {
    refuse = value;
  }

  /** Server-to-client bytes are dropped (not forwarded) while true: responses get "lost". */
  public void holdDown(boolean value) {
    holdDown = value;
  }

  /** Destroys every open connection. */
  public void cut() {
    for (Socket[] p : pairs) {
      closeQuietly(p[0]);
      closeQuietly(p[1]);
    }
    pairs.clear();
  }

  @Override
  public void close() {
    cut();
    closeQuietly(server);
  }

  private void acceptLoop() {
    while (!server.isClosed()) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return;
      }
      accepted.push(System.currentTimeMillis());
      if (refuse) {
        closeQuietly(client);
        continue;
      }
      Socket upstream;
      try {
        upstream = new Socket(host, port);
        upstream.setTcpNoDelay(true);
        client.setTcpNoDelay(true);
      } catch (IOException e) {
        closeQuietly(client);
        continue;
      }
      Socket[] pair = {client, upstream};
      pairs.add(pair);
      pump(pair, client, upstream, false);
      pump(pair, upstream, client, true);
    }
  }

  private void pump(Socket[] pair, Socket from, Socket to, boolean down) {
    Thread t =
        new Thread(
            () -> {
              byte[] buf = new byte[65536];
              try (InputStream in = from.getInputStream()) {
                OutputStream out = to.getOutputStream();
                for (int n; (n = in.read(buf)) > 0; ) {
                  if (down && holdDown) continue;
                  out.write(buf, 0, n);
                  out.flush();
                }
              } catch (IOException ignored) {
                // cut or closed
              } finally {
                pairs.remove(pair);
                closeQuietly(pair[0]);
                closeQuietly(pair[1]);
              }
            },
            "proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception ignored) {
      // already closed
    }
  }
}
