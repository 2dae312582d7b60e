package dev.graphfleet.gatling;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Runs {@link GraphfleetSimulation} with Gatling's runner, keeping the run to its target:
 * the runner looks up Gatling's latest release on Maven Central's search service at every
 * start (whatever its settings), through the JVM's own HTTP client. Pointing that client's
 * HTTPS proxy at a closed loopback port makes the lookup fail at once, on this machine; the
 * load's requests go through Gatling's Netty client, which ignores these properties. Usage
 * analytics are off in gatling.conf. Extra arguments go to Gatling. Exits 2 on bad inputs.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    // Bad inputs end here with one line (the simulation would fail the same way, deep in a
    // stack trace whose last lines, the pod's termination message, do not name the cause).
    try {
      Settings.fromEnv(System.getenv()).schedule();
    } catch (Settings.Invalid e) {
      System.err.println("graphfleet-gatling: " + e.getMessage());
      System.exit(2);
    }
    // Port 9 (discard) on loopback: nothing listens there, so the connection is refused.
    System.setProperty("https.proxyHost", "127.0.0.1");
    System.setProperty("https.proxyPort", "9");
    System.setProperty("http.proxyHost", "127.0.0.1");
    System.setProperty("http.proxyPort", "9");
    // Where the lookup would record its outcome; the image's home is read-only.
    String tmp = System.getProperty("java.io.tmpdir");
    System.setProperty("java.util.prefs.userRoot", Path.of(tmp, "java-prefs").toString());
    List<String> gatling =
        new ArrayList<>(
            List.of(
                "--simulation",
                GraphfleetSimulation.class.getName(),
                "--results-folder",
                Path.of(tmp, "gatling").toString(),
                "--no-reports"));
    gatling.addAll(Arrays.asList(args));
    io.gatling.app.Gatling.main(gatling.toArray(String[]::new));
  }
}
