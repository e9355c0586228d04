package asia.asio.nixmsg.testing;

import com.google.gson.Gson;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Starts {@code sdk/conformance/harness.ts} (a fresh real server) for a test class and talks to
 * it over its JSON-line stdin/stdout protocol.
 */
public final class Harness implements AutoCloseable {
  private static final Gson GSON = new Gson();
  private static final AtomicInteger SEQ = new AtomicInteger();

  /** The repository root: the first parent of the working directory with the harness. */
  public static final File REPO_ROOT = findRoot();

  public final JsonObject info;
  private final Process process;
  private final BufferedReader out;
  private final Writer in;
  private final String prefix;

  /** An endpoint with its login password. */
  public static final class Endpoint {
    public final String id;
    public final String password;

    public Endpoint(String id, String password) {
      this.id = id;
      this.password = password;
    }
  }

  private Harness(Process process, BufferedReader out, JsonObject info, String prefix) {
    this.process = process;
    this.out = out;
    this.in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    this.info = info;
    this.prefix = prefix;
  }

  private static File findRoot() {
    File dir = new File("").getAbsoluteFile();
    while (dir != null && !new File(dir, "sdk/conformance/harness.ts").exists()) {
      dir = dir.getParentFile();
    }
    if (dir == null) throw new IllegalStateException("Cannot find the repository root");
    return dir;
  }

  /** The Deno binary: $DENO, deno on PATH, or the repository's .tools copy. */
  public static String deno() {
    String env = System.getenv("DENO");
    if (env != null && !env.isEmpty()) return env;
    String path = System.getenv("PATH");
    if (path != null) {
      for (String p : path.split(File.pathSeparator)) {
        File f = new File(p, "deno");
        if (f.canExecute()) return f.getPath();
      }
    }
    File local = new File(REPO_ROOT, ".tools/node_modules/.bin/deno");
    if (local.canExecute()) return local.getPath();
    throw new IllegalStateException("Deno not found: set DENO or put deno on PATH");
  }

  /** Spawns the harness; {@code set} entries become {@code --set key=value} overrides. */
  public static Harness start(Map<String, Object> set) throws Exception {
    String prefix = "j" + Long.toString(ProcessHandle.current().pid(), 36) + "x" + SEQ.incrementAndGet() + "n";
    List<String> args = new ArrayList<>();
    args.add(deno());
    args.add("run");
    args.add("--quiet");
    // permissions: not the shipped command: the conformance harness spawns the server (with the shipped set) and toxiproxy.
    args.add("--allow-all");
    args.add("--frozen");
    args.add("--config");
    args.add(new File(REPO_ROOT, "deno.json").getPath());
    args.add(new File(REPO_ROOT, "sdk/conformance/harness.ts").getPath());
    args.add("--endpoints");
    args.add("0");
    args.add("--prefix");
    args.add(prefix);
    if (set != null) {
      for (Map.Entry<String, Object> e : set.entrySet()) {
        args.add("--set");
        args.add(e.getKey() + "=" + GSON.toJson(e.getValue()));
      }
    }
    Process p =
        new ProcessBuilder(args)
            .directory(REPO_ROOT)
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    BufferedReader reader =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    CompletableFuture<String> first = CompletableFuture.supplyAsync(() -> readLine(reader));
    String line;
    try {
      line = first.get(90, TimeUnit.SECONDS);
    } catch (Exception e) {
      p.destroyForcibly();
      throw new IllegalStateException("The harness did not start in 90 s", e);
    }
    if (line == null) {
      p.destroyForcibly();
      throw new IllegalStateException("The harness exited before it was ready");
    }
    return new Harness(p, reader, JsonParser.parseString(line).getAsJsonObject(), prefix);
  }

  public static Harness start() throws Exception {
    return start(null);
  }

  private static String readLine(BufferedReader r) {
    try {
      return r.readLine();
    } catch (IOException e) {
      return null;
    }
  }

  public String wsUrl() {
    return info.get("ws_url").getAsString();
  }

  public String tcpUrl() {
    return info.get("tcp_url").getAsString();
  }

  /** "127.0.0.1:port" of the server. */
  public String address() {
    return info.get("http_url").getAsString().replaceFirst("^http://", "");
  }

  /** Sends one command and returns its data; throws with its error. */
  public synchronized JsonElement command(JsonObject cmd) throws Exception {
    in.write(GSON.toJson(cmd) + "\n");
    in.flush();
    CompletableFuture<String> reply = CompletableFuture.supplyAsync(() -> readLine(out));
    String line = reply.get(60, TimeUnit.SECONDS);
    if (line == null) throw new IllegalStateException("The harness exited");
    JsonObject r = JsonParser.parseString(line).getAsJsonObject();
    if (!r.get("ok").getAsBoolean()) {
      throw new IllegalStateException(
          "Harness command " + cmd.get("cmd") + " failed: " + r.get("error"));
    }
    return r.get("data");
  }

  /** Creates an endpoint with a unique id. */
  public Endpoint endpoint() throws Exception {
    JsonObject cmd = new JsonObject();
    cmd.addProperty("cmd", "endpoint");
    cmd.addProperty("id", prefix + SEQ.incrementAndGet());
    JsonObject d = command(cmd).getAsJsonObject();
    return new Endpoint(d.get("id").getAsString(), d.get("password").getAsString());
  }

  /** Creates an endpoint with a unique id and a display name. */
  public Endpoint endpoint(String name) throws Exception {
    JsonObject cmd = new JsonObject();
    cmd.addProperty("cmd", "endpoint");
    cmd.addProperty("id", prefix + SEQ.incrementAndGet());
    cmd.addProperty("name", name);
    JsonObject d = command(cmd).getAsJsonObject();
    return new Endpoint(d.get("id").getAsString(), d.get("password").getAsString());
  }

  /** A raw admin API call (docs/admin-api.md); returns the HTTP status. */
  public int admin(String method, String path, JsonObject body) throws Exception {
    JsonObject cmd = new JsonObject();
    cmd.addProperty("cmd", "admin");
    cmd.addProperty("method", method);
    cmd.addProperty("path", path);
    if (body != null) cmd.add("body", body);
    return command(cmd).getAsJsonObject().get("status").getAsInt();
  }

  /** Sets the registration switch and (when not null) the code. */
  public void registration(boolean enabled, String code) throws Exception {
    JsonObject cmd = new JsonObject();
    cmd.addProperty("cmd", "registration");
    cmd.addProperty("enabled", enabled);
    if (code != null) cmd.addProperty("code", code);
    command(cmd);
  }

  /** Closes stdin, which stops the server and removes its directory. */
  @Override
  public void close() {
    try {
      in.close();
    } catch (IOException ignored) {
      // already gone
    }
    try {
      if (!process.waitFor(20, TimeUnit.SECONDS)) process.destroyForcibly();
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }
}
