package asia.asio.nixmsg;

import com.google.gson.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/** Self-registration over HTTP (spec 6.9), with HttpURLConnection (Java 8 and Android). */
final class Register {
  private Register() {}

  static CompletableFuture<RegisterResult> register(
      String url,
      String registrationCode,
      RegisterOptions options,
      TrustManagerFactory trust,
      Executor executor) {
    RegisterOptions o = options == null ? RegisterOptions.none() : options;
    CompletableFuture<RegisterResult> out = new CompletableFuture<>();
    String target;
    try {
      target = ServerAddress.registerUrl(url);
    } catch (NixMsgException e) {
      out.completeExceptionally(e);
      return out;
    }
    executor.execute(
        () -> {
          try {
            out.complete(call(target, registrationCode, o, trust));
          } catch (Throwable t) {
            out.completeExceptionally(t);
          }
        });
    return out;
  }

  private static RegisterResult call(
      String target, String code, RegisterOptions o, TrustManagerFactory trust) {
    JsonObject req = new JsonObject();
    req.addProperty("registration_code", code == null ? "" : code);
    req.addProperty("id", o.id);
    req.addProperty("login_password", o.loginPassword);
    req.addProperty("name", o.name);
    req.addProperty("talk_password", o.talkPassword);
    byte[] payload = Body.utf8(Json.stringify(req));
    int status;
    byte[] answer;
    HttpURLConnection conn = null;
    try {
      conn = (HttpURLConnection) new URL(target).openConnection();
      if (trust != null && conn instanceof HttpsURLConnection) {
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, trust.getTrustManagers(), null);
        ((HttpsURLConnection) conn).setSSLSocketFactory(ctx.getSocketFactory());
      }
      conn.setConnectTimeout(o.timeoutMs);
      conn.setReadTimeout(o.timeoutMs);
      conn.setRequestMethod("POST");
      conn.setDoOutput(true);
      conn.setRequestProperty("Content-Type", "application/json");
      conn.setFixedLengthStreamingMode(payload.length);
      try (OutputStream os = conn.getOutputStream()) {
        os.write(payload);
      }
      status = conn.getResponseCode();
      InputStream in = status >= 400 ? conn.getErrorStream() : conn.getInputStream();
      answer = in == null ? new byte[0] : readAll(in);
    } catch (IOException | java.security.GeneralSecurityException e) {
      throw new NixMsgException(
          "network", "Registration request failed: " + e, null, 0, null, e);
    } finally {
      if (conn != null) conn.disconnect();
    }
    JsonObject body = Json.parseObject(answer);
    if (body == null) {
      throw new NixMsgException(
          "bad_response", "Registration answered HTTP " + status + " without JSON", null, status, null, null);
    }
    JsonObject data = Json.obj(body, "data");
    if (Json.bool(body, "ok") && Json.isString(data, "id")) {
      String pw = Json.isString(data, "login_password") ? Json.str(data, "login_password") : null;
      return new RegisterResult(Json.str(data, "id"), pw);
    }
    throw Wire.error(body, status);
  }

  private static byte[] readAll(InputStream in) throws IOException {
    try (InputStream s = in) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buf = new byte[8192];
      for (int n; (n = s.read(buf)) > 0; ) out.write(buf, 0, n);
      return out.toByteArray();
    }
  }
}
