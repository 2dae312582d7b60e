package dev.graphfleet.gatling;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * graphfleet_bench_model::duration's grammar (the LoadTest CRD's): {@code <number><unit>} parts,
 * units h, m, s, ms ("250ms", "30s", "1m30s", "1h2m3.5s"). SelfCheck runs this on
 * bench/k6/testdata/durations.json, as scenario.js's seconds() is checked.
 */
public final class Durations {
  private static final Pattern PART = Pattern.compile("([0-9]+(?:\\.[0-9]+)?)(ms|h|m|s)");

  private Durations() {}

  /** A duration in seconds; NaN if malformed. */
  public static double seconds(String duration) {
    Matcher m = PART.matcher(duration);
    double total = 0;
    int at = 0;
    while (at < duration.length()) {
      m.region(at, duration.length());
      if (!m.lookingAt()) {
        return Double.NaN;
      }
      double unit =
          switch (m.group(2)) {
            case "h" -> 3600;
            case "m" -> 60;
            case "s" -> 1;
            default -> 0.001;
          };
      total += Double.parseDouble(m.group(1)) * unit;
      at = m.end();
    }
    return at > 0 ? total : Double.NaN;
  }
}
