package asia.asio.nixmsg;

import static asia.asio.nixmsg.testing.Checks.await;
import static asia.asio.nixmsg.testing.Checks.failsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import asia.asio.nixmsg.testing.Harness;
import asia.asio.nixmsg.testing.Proxy;
import asia.asio.nixmsg.testing.Tracked;
import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * TLS with a caller-supplied trust store: wss, mqtts and https registration through a local
 * TLS-terminating proxy whose certificate (for 127.0.0.1) comes from keytool.
 */
class TlsTest {
  static final char[] PASS = "test-pass".toCharArray();
  static Harness h;
  static Path dir;
  static SSLContext serverTls;
  static TrustManagerFactory trust;

  @BeforeAll
  static void start() throws Exception {
    h = Harness.start();
    dir = Files.createTempDirectory("nixmsg-tls");
    File server = dir.resolve("server.p12").toFile();
    File cert = dir.resolve("server.crt").toFile();
    File trustStore = dir.resolve("trust.p12").toFile();
    String keytool = new File(System.getProperty("java.home"), "bin/keytool").getPath();
    String pass = new String(PASS);
    run(keytool, "-genkeypair", "-alias", "server", "-keyalg", "RSA", "-keysize", "2048",
        "-validity", "2", "-dname", "CN=127.0.0.1", "-ext", "SAN=ip:127.0.0.1,dns:localhost",
        "-storetype", "PKCS12", "-keystore", server.getPath(), "-storepass", pass);
    run(keytool, "-exportcert", "-alias", "server", "-keystore", server.getPath(),
        "-storepass", pass, "-file", cert.getPath());
    run(keytool, "-importcert", "-noprompt", "-alias", "relay-ca", "-file", cert.getPath(),
        "-storetype", "PKCS12", "-keystore", trustStore.getPath(), "-storepass", pass);

    KeyStore ks = load(server);
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(ks, PASS);
    serverTls = SSLContext.getInstance("TLS");
    serverTls.init(kmf.getKeyManagers(), null, null);
    trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    trust.init(load(trustStore));
  }

  @AfterAll
  static void stop() throws Exception {
    Tracked.closeAll();
    if (h != null) h.close();
    if (dir != null) {
      for (File f : dir.toFile().listFiles()) f.delete();
      Files.delete(dir);
    }
  }

  static KeyStore load(File f) throws Exception {
    KeyStore ks = KeyStore.getInstance("PKCS12");
    try (InputStream in = new FileInputStream(f)) {
      ks.load(in, PASS);
    }
    return ks;
  }

  static void run(String... cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    byte[] out = p.getInputStream().readAllBytes();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "keytool finished");
    assertEquals(0, p.exitValue(), new String(out));
  }

  @Test
  void websocketAndTcpOverTlsWithTheCallersTrustStore() throws Exception {
    try (Proxy tls = Proxy.startTls(h.address(), serverTls)) {
      Harness.Endpoint ep = h.endpoint();
      Tracked wss =
          Tracked.online(
              "wss://" + tls.address() + "/mqtt", ep, ConnectOptions.builder().trustManagerFactory(trust));
      assertEquals(ep.id, await(wss.client.getSelf()).id());
      wss.client.close();
      Tracked mqtts =
          Tracked.online(
              "https://" + tls.address(),
              ep,
              ConnectOptions.builder().transport(Transport.TCP).trustManagerFactory(trust));
      assertEquals(ep.id, await(mqtts.client.getSelf()).id());
      assertTrue(tls.accepted.count() >= 2, "both went through the TLS proxy");
    }
  }

  @Test
  void anUntrustedCertificateIsANetworkErrorThatIsRetried() throws Exception {
    try (Proxy tls = Proxy.startTls(h.address(), serverTls)) {
      Harness.Endpoint ep = h.endpoint();
      Tracked a = Tracked.track("wss://" + tls.address() + "/mqtt", ep.id, Credential.password(ep.password));
      ConnectionEvent ev = a.waitState(ConnectionState.RECONNECTING);
      assertEquals("tls_error", ev.reason());
      assertEquals(ErrorCodes.NETWORK, ev.error().code());
      Throwable t = ev.error().getCause();
      while (t != null && !(t instanceof javax.net.ssl.SSLException)) t = t.getCause();
      assertTrue(t != null, "the SSLException is the cause: " + ev.error().getCause());
      NixMsgException late =
          asia.asio.nixmsg.testing.Checks.failsWith(
              ErrorCodes.TIMEOUT, a.client.ready(500, java.util.concurrent.TimeUnit.MILLISECONDS));
      assertTrue(late.getCause() instanceof NixMsgException, "the last attempt is the cause");
      assertNotEquals(ConnectionState.ONLINE, a.client.state());
      assertTrue(ev.retryInMs() >= 700 && ev.retryInMs() <= 1300, "first delay " + ev.retryInMs());
      tls.accepted.waitCount(2, x -> true, "a second attempt");
      List<ConnectionState> states =
          Arrays.asList(ConnectionState.ONLINE, ConnectionState.AUTH_FAILED, ConnectionState.KICKED);
      assertEquals(0, a.states.count(s -> states.contains(s.state())));
    }
  }

  @Test
  void registrationOverHttpsWithTheCallersTrustStore() throws Exception {
    try (Proxy tls = Proxy.startTls(h.address(), serverTls)) {
      h.registration(true, "code-tls-1234");
      RegisterResult r =
          await(
              NixMsgClient.register(
                  "wss://" + tls.address() + "/mqtt", "code-tls-1234", RegisterOptions.none(), trust));
      assertTrue(r.id().startsWith("e_"), r.id());
      NixMsgException untrusted =
          failsWith(
              "network",
              NixMsgClient.register(
                  "wss://" + tls.address() + "/mqtt", "code-tls-1234", RegisterOptions.none()));
      assertTrue(untrusted.getCause() != null, "the TLS failure is the cause");
    }
  }
}
