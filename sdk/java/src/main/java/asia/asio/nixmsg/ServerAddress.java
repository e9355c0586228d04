package asia.asio.nixmsg;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;

/**
 * Address derivation (spec 6.9, 9): {@code ws}, {@code wss}, {@code http}, {@code https},
 * {@code mqtt} and {@code mqtts} URLs all name the same server; the transport decides how to
 * connect, and the registration URL is derived from the same URL.
 *
 * <pre>{@code
 * ServerAddress.parse("https://relay.example:7443", Transport.WEBSOCKET).url();
 * // "wss://relay.example:7443/mqtt"
 * ServerAddress.registerUrl("mqtt://10.0.0.5:7443");
 * // "http://10.0.0.5:7443/api/client/register"
 * }</pre>
 */
public final class ServerAddress {
  private final boolean secure;
  private final String host;
  private final int port;
  private final String basePath;
  private final Transport transport;

  private ServerAddress(
      boolean secure, String host, int port, String basePath, Transport transport) {
    this.secure = secure;
    this.host = host;
    this.port = port;
    this.basePath = basePath;
    this.transport = transport;
  }

  /** True for TLS ({@code wss}, {@code https}, {@code mqtts}). */
  public boolean secure() {
    return secure;
  }

  /** Host name or address, without brackets for IPv6. */
  public String host() {
    return host;
  }

  /** Port; the scheme's default when the URL has none. */
  public int port() {
    return port;
  }

  /** The path in front of {@code /mqtt}, without a trailing slash ("" for the usual one). */
  public String basePath() {
    return basePath;
  }

  public Transport transport() {
    return transport;
  }

  /** The WebSocket path, {@code <base>/mqtt}. */
  public String webSocketPath() {
    return basePath + "/mqtt";
  }

  /** The URL connected to: {@code ws(s)://host:port<base>/mqtt} or {@code mqtt(s)://host:port}. */
  public String url() {
    String h = host.indexOf(':') >= 0 ? "[" + host + "]" : host;
    if (transport == Transport.TCP) return (secure ? "mqtts" : "mqtt") + "://" + h + ":" + port;
    return (secure ? "wss" : "ws") + "://" + h + ":" + port + webSocketPath();
  }

  /** Parses a server URL for {@code transport}; throws {@code bad_request} when invalid. */
  public static ServerAddress parse(String url, Transport transport) {
    URI u = uri(url);
    String scheme = u.getScheme().toLowerCase(Locale.ROOT);
    boolean secure = secure(scheme);
    int port = u.getPort();
    if (port < 0) port = secure ? 443 : 80;
    String base = scheme.startsWith("mqtt") ? "" : basePath(u.getRawPath());
    return new ServerAddress(
        secure, hostOf(u), port, base, transport == null ? Transport.WEBSOCKET : transport);
  }

  /**
   * The registration endpoint for a connection URL (spec 6.9): {@code wss} and {@code mqtts}
   * map to {@code https}, {@code ws} and {@code mqtt} to {@code http}.
   */
  public static String registerUrl(String url) {
    URI u = uri(url);
    String scheme = u.getScheme().toLowerCase(Locale.ROOT);
    String base = scheme.startsWith("mqtt") ? "" : basePath(u.getRawPath());
    return (secure(scheme) ? "https" : "http")
        + "://"
        + u.getRawAuthority()
        + base
        + "/api/client/register";
  }

  private static URI uri(String url) {
    URI u;
    try {
      u = new URI(url);
    } catch (URISyntaxException e) {
      throw new NixMsgException(ErrorCodes.BAD_REQUEST, "Cannot parse server URL: " + url, e);
    }
    String scheme = u.getScheme();
    if (scheme == null || u.getHost() == null) {
      throw NixMsgException.config("Cannot parse server URL: " + url);
    }
    secure(scheme.toLowerCase(Locale.ROOT));
    return u;
  }

  private static boolean secure(String scheme) {
    switch (scheme) {
      case "wss":
      case "https":
      case "mqtts":
        return true;
      case "ws":
      case "http":
      case "mqtt":
        return false;
      default:
        throw NixMsgException.config("Unsupported server URL scheme: " + scheme);
    }
  }

  private static String hostOf(URI u) {
    String h = u.getHost();
    return h.startsWith("[") && h.endsWith("]") ? h.substring(1, h.length() - 1) : h;
  }

  private static String basePath(String rawPath) {
    String path = rawPath == null ? "" : rawPath;
    while (path.endsWith("/")) path = path.substring(0, path.length() - 1);
    if (path.endsWith("/mqtt")) path = path.substring(0, path.length() - "/mqtt".length());
    return path;
  }
}
