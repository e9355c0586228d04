package asia.asio.nixmsg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import asia.asio.nixmsg.testing.Harness;
import asia.asio.nixmsg.testing.HarnessTest;
import asia.asio.nixmsg.testing.Tracked;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Issue 27 item 5: the README's Install section, run as written in a scratch project outside the
 * SDK folder. {@code mvn install} of sdk/java, a project that depends on the installed artifact
 * with the README's {@code pom.xml} and the README's example, built and run against a real
 * server: with the right password it prints the peer's answer, with a wrong one {@code failed:
 * auth_failed} and status 1.
 *
 * <p>The only addition to the README's commands is a shell function {@code mvn} that passes the
 * test build's local repository (the cache run_tests.sh uses) and a build directory of its own
 * for sdk/java, so that the install does not write into the {@code target/} this test runs from.
 */
class InstallFromRepositoryTest extends HarnessTest {
  static final long MVN_TIMEOUT_S = 600;

  static String readme() throws IOException {
    return new String(Files.readAllBytes(new File("README.md").toPath()), StandardCharsets.UTF_8);
  }

  /** The fenced blocks of {@code lang} in the README section that starts with {@code heading}. */
  static List<String> blocks(String readme, String heading, String lang) {
    int from = readme.indexOf("\n" + heading + "\n");
    assertTrue(from >= 0, "README has " + heading);
    int to = readme.indexOf("\n## ", from + heading.length() + 2);
    String section = readme.substring(from, to < 0 ? readme.length() : to);
    List<String> out = new ArrayList<>();
    Matcher m = Pattern.compile("```" + lang + "\n(.*?)```", Pattern.DOTALL).matcher(section);
    while (m.find()) out.add(m.group(1));
    return out;
  }

  static final class Run {
    final int status;
    final String out;
    final String err;

    Run(int status, String out, String err) {
      this.status = status;
      this.out = out;
      this.err = err;
    }
  }

  static Run bash(Path dir, String script, Map<String, String> env, long timeoutS) throws Exception {
    String m2 = System.getProperty("nixmsg.m2");
    assertTrue(m2 != null && !m2.isEmpty(), "nixmsg.m2 is set by the pom");
    String preamble =
        "mvn() { command mvn -Dmaven.repo.local=\"$NIXMSG_M2\""
            + " -Dnixmsg.buildDirectory=\"$NIXMSG_SDK_BUILD\" -Dstyle.color=never \"$@\"; }\n";
    ProcessBuilder pb = new ProcessBuilder("bash", "-euo", "pipefail", "-c", preamble + script);
    pb.directory(dir.toFile());
    pb.environment().putAll(env);
    pb.environment().put("NIXMSG_M2", m2);
    pb.environment().put("NIXMSG_REPO", Harness.REPO_ROOT.getPath());
    pb.environment().put("NIXMSG_SDK_BUILD", dir.resolve("sdk-build").toString());
    File out = dir.resolve("stdout.txt").toFile();
    File err = dir.resolve("stderr.txt").toFile();
    pb.redirectOutput(out).redirectError(err);
    Process p = pb.start();
    if (!p.waitFor(timeoutS, TimeUnit.SECONDS)) {
      p.destroyForcibly().waitFor();
      throw new AssertionError("timed out after " + timeoutS + " s: " + script);
    }
    return new Run(
        p.exitValue(),
        new String(Files.readAllBytes(out.toPath()), StandardCharsets.UTF_8),
        new String(Files.readAllBytes(err.toPath()), StandardCharsets.UTF_8));
  }

  @Test
  void theReadmeInstallsTheSdkIntoAScratchProjectAndItsExampleRuns() throws Exception {
    String readme = readme();
    List<String> sh = blocks(readme, "## Install", "sh");
    List<String> xml = blocks(readme, "## Install", "xml");
    List<String> java = blocks(readme, "## Example", "java");
    assertEquals(2, sh.size(), "two shell blocks: the install, then build and run");
    assertEquals(1, xml.size(), "the scratch project's pom.xml");
    assertEquals(1, java.size(), "the example");

    Path project = Files.createTempDirectory("nixmsg-java-scratch");
    try {
      run(readme, sh, xml, java, project);
    } finally {
      deleteTree(project);
    }
  }

  static void deleteTree(Path root) throws IOException {
    try (java.util.stream.Stream<Path> paths = Files.walk(root)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }

  private void run(String readme, List<String> sh, List<String> xml, List<String> java, Path project)
      throws Exception {
    assertFalse(
        project.toAbsolutePath().startsWith(new File(".").getAbsoluteFile().toPath().normalize()),
        "the scratch project is outside the SDK folder");

    Run install = bash(project, sh.get(0), new HashMap<>(), MVN_TIMEOUT_S);
    assertEquals(0, install.status, install.out + install.err);
    File installed =
        new File(System.getProperty("nixmsg.m2"), "asia/asio/nixmsg/nixmsg-sdk/0.1.0");
    for (String suffix : new String[] {".jar", "-sources.jar", "-javadoc.jar", ".pom"}) {
      assertTrue(new File(installed, "nixmsg-sdk-0.1.0" + suffix).isFile(), "installed " + suffix);
    }
    try (JarFile jar = new JarFile(new File(installed, "nixmsg-sdk-0.1.0.jar"))) {
      assertEquals(
          "asia.asio.nixmsg",
          jar.getManifest().getMainAttributes().getValue("Automatic-Module-Name"));
    }

    Files.write(project.resolve("pom.xml"), xml.get(0).getBytes(StandardCharsets.UTF_8));
    Path src = project.resolve("src/main/java/example");
    Files.createDirectories(src);
    Files.write(src.resolve("Quickstart.java"), java.get(0).getBytes(StandardCharsets.UTF_8));

    // The peer answers "echo: <text>", as the README says.
    Harness.Endpoint me = h.endpoint();
    Harness.Endpoint peerEp = h.endpoint();
    Tracked peer = Tracked.online(h.wsUrl(), peerEp);
    peer.client.onMessage(m -> peer.client.send(m.from(), "echo: " + m.text()));
    Map<String, String> env = new HashMap<>();
    env.put("NIXMSG_URL", h.wsUrl());
    env.put("NIXMSG_ID", me.id);
    env.put("NIXMSG_PASSWORD", me.password);
    env.put("NIXMSG_PEER", peerEp.id);
    Run ok = bash(project, sh.get(1), env, MVN_TIMEOUT_S);
    assertEquals(0, ok.status, ok.out + ok.err);
    assertTrue(
        ok.out.matches("(?s).*\\necho: hello from Java, 你好 [0-9a-f]{8}\\n.*"), "the answer: " + ok.out);
    assertTrue(ok.out.contains("connection: online"), ok.out);

    // The example's run line alone, with a wrong password: a clean exit 1 naming the error.
    String[] lines = sh.get(1).trim().split("\n");
    env.put("NIXMSG_PASSWORD", "not-the-password");
    Run wrong = bash(project, lines[lines.length - 1], env, 60);
    assertEquals(1, wrong.status, wrong.out + wrong.err);
    assertEquals("failed: auth_failed", wrong.err.trim(), "stderr");
    assertFalse(wrong.out.contains("Exception"), wrong.out);
  }
}
