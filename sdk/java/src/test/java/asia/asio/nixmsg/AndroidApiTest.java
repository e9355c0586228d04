package asia.asio.nixmsg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.codehaus.mojo.animal_sniffer.SignatureChecker;
import org.codehaus.mojo.animal_sniffer.logging.Logger;
import org.junit.jupiter.api.Test;

/**
 * Android API 24 for the SDK and what it brings (issue 31): animal-sniffer's checker, with the
 * {@code android-api-level-24} signature, over the SDK's classes and every runtime dependency jar.
 * The build's animal-sniffer execution covers the SDK's own classes; this test covers the
 * dependencies. A reference above API 24 in a dependency class is allowed only when that class is
 * listed in {@code android-api-24-exclusions.txt} with the reason the SDK never loads it on
 * Android; an unlisted one fails the test, and so does a listed class that no longer needs it.
 */
class AndroidApiTest {
  /** The runtime dependencies, by path in the local Maven repository. */
  static final List<String> DEPENDENCY_PATHS =
      Arrays.asList(
          "/com/hivemq/",
          "/io/netty/",
          "/io/reactivex/",
          "/org/reactivestreams/",
          "/org/jctools/",
          "/com/google/dagger/",
          "/javax/inject/",
          "/com/google/code/gson/",
          "/org/jetbrains/",
          "/com/google/errorprone/");

  /** Packages of the jars checked: references between them are not API references. */
  static final Set<String> OWN_PACKAGES =
      new HashSet<>(
          Arrays.asList(
              "asia.asio.nixmsg.*",
              "com.hivemq.*",
              "io.netty.*",
              "io.reactivex.*",
              "org.reactivestreams.*",
              "org.jctools.*",
              "dagger.*",
              "javax.inject.*",
              "com.google.gson.*",
              "org.jetbrains.annotations.*",
              "com.google.errorprone.*",
              // Optional at run time (Netty loads them only when present): not on Android.
              "org.slf4j.*",
              "org.apache.commons.logging.*",
              "org.apache.log4j.*",
              "org.apache.logging.log4j.*",
              "reactor.blockhound.*",
              "com.aayushatharva.brotli4j.*",
              "com.github.luben.zstd.*",
              "com.jcraft.jzlib.*",
              "com.ning.compress.*",
              "lzma.sdk.*",
              "net.jpountz.*",
              "com.oracle.svm.*",
              "org.conscrypt.*",
              "org.jboss.marshalling.*",
              "com.google.protobuf.*",
              "org.eclipse.jetty.*",
              "org.bouncycastle.*",
              "io.netty.internal.tcnative.*",
              "sun.security.*",
              "sun.misc.*",
              "sun.nio.ch.*",
              "jdk.internal.misc.*"));

  static File signature() {
    String m2 = System.getProperty("nixmsg.m2");
    assertTrue(m2 != null && !m2.isEmpty(), "nixmsg.m2 (the local Maven repository) is set by the pom");
    return new File(
        m2,
        "net/sf/androidscents/signature/android-api-level-24/7.0_r2/android-api-level-24-7.0_r2.signature");
  }

  static List<File> dependencyJars() {
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<File> out = new ArrayList<>();
    for (String p : cp.split(File.pathSeparator)) {
      String unix = p.replace(File.separatorChar, '/');
      if (!unix.endsWith(".jar")) continue;
      for (String d : DEPENDENCY_PATHS) {
        if (unix.contains(d)) out.add(new File(p));
      }
    }
    return out;
  }

  /** {@code class-prefix  # reason} lines; the prefixes. */
  static Map<String, String> exclusions() throws Exception {
    Map<String, String> out = new LinkedHashMap<>();
    try (InputStream in = AndroidApiTest.class.getResourceAsStream("/android-api-24-exclusions.txt");
        BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
      for (String line; (line = r.readLine()) != null; ) {
        String t = line.trim();
        if (t.isEmpty() || t.startsWith("#")) continue;
        int hash = t.indexOf('#');
        assertTrue(hash > 0, "every exclusion gives its reason after '#': " + t);
        out.put(t.substring(0, hash).trim(), t.substring(hash + 1).trim());
      }
    }
    return out;
  }

  @Test
  void dependenciesReachNoApiAboveAndroid24OutsideTheDocumentedExclusions() throws Exception {
    List<File> jars = dependencyJars();
    assertTrue(jars.size() >= 8, "the runtime dependency jars are on the test class path: " + jars);
    // class (a/b/C) -> the APIs it references that API 24 lacks
    Map<String, Set<String>> violations = new TreeMap<>();
    Logger logger =
        new Logger() {
          @Override
          public void info(String s) {}

          @Override
          public void info(String s, Throwable t) {}

          @Override
          public void debug(String s) {}

          @Override
          public void debug(String s, Throwable t) {}

          @Override
          public void warn(String s) {}

          @Override
          public void warn(String s, Throwable t) {}

          @Override
          public void error(String s) {
            record(s);
          }

          @Override
          public void error(String s, Throwable t) {
            record(s);
          }

          private void record(String s) {
            // "<jar>:<class path>.class:<line>: Undefined reference: <api>"
            int ref = s.indexOf(": Undefined reference: ");
            String where = ref < 0 ? s : s.substring(0, ref);
            String api = ref < 0 ? s : s.substring(ref + ": Undefined reference: ".length());
            String cls = where.replaceAll("^.*?\\.jar:", "").replaceAll("\\.class(:\\d+)?$", "");
            cls = cls.replaceAll("^META-INF/versions/\\d+/", "META-INF/versions/");
            violations.computeIfAbsent(cls.replace('/', '.'), k -> new TreeSet<>()).add(api);
          }
        };
    for (File jar : jars) {
      try (InputStream sig = new FileInputStream(signature())) {
        SignatureChecker checker = new SignatureChecker(sig, OWN_PACKAGES, logger);
        checker.setCheckJars(true);
        checker.setSourcePath(new ArrayList<File>());
        checker.process(jar);
      }
    }
    Map<String, String> excluded = exclusions();
    Map<String, Set<String>> unexplained = new TreeMap<>();
    Set<String> used = new HashSet<>();
    for (Map.Entry<String, Set<String>> v : violations.entrySet()) {
      String hit = null;
      for (String prefix : excluded.keySet()) {
        if (v.getKey().startsWith(prefix)) hit = prefix;
      }
      if (hit == null) unexplained.put(v.getKey(), v.getValue());
      else used.add(hit);
    }
    StringBuilder report = new StringBuilder();
    for (Map.Entry<String, Set<String>> u : unexplained.entrySet()) {
      report.append("\n  ").append(u.getKey()).append(" -> ").append(u.getValue());
    }
    assertEquals("", report.toString(), "dependency classes above Android API 24, not excluded");
    Set<String> stale = new TreeSet<>(excluded.keySet());
    stale.removeAll(used);
    assertEquals(new TreeSet<String>(), stale, "exclusions that match no violation any more");
  }
}
