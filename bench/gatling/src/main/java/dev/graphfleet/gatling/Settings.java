package dev.graphfleet.gatling;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The simulation's inputs, from the environment: scenario.js's variables where they mean the
 * same (bench/gatling/README.md lists them), plus this segment's index and count.
 */
public record Settings(
    String url,
    byte[] payload,
    int rate,
    String duration,
    double durationS,
    int segmentIndex,
    int segmentCount,
    String summaryPath,
    int summaryLimit,
    boolean summaryStdout) {

  /** A bad input, with a message naming the variable. */
  public static final class Invalid extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    Invalid(String message) {
      super(message);
    }
  }

  public static Settings fromEnv(Map<String, String> env) {
    String url = required(env, "GF_URL");
    if (!url.startsWith("http://") && !url.startsWith("https://")) {
      throw new Invalid("GF_URL=" + url + ": expected an http:// or https:// URL");
    }
    String payloadFile = required(env, "GF_PAYLOAD");
    byte[] payload;
    try {
      payload = Files.readAllBytes(Path.of(payloadFile));
    } catch (IOException e) {
      throw new Invalid("GF_PAYLOAD=" + payloadFile + ": cannot read it: " + e.getMessage());
    }
    // Only the open model: Gatling has no constant-vus twin of scenario.js's closed model here.
    String executor = get(env, "GF_EXECUTOR", "constant-arrival-rate");
    if (!executor.equals("constant-arrival-rate")) {
      throw new Invalid("GF_EXECUTOR=" + executor + ": the Gatling simulation runs only constant-arrival-rate");
    }
    // k6-only features of scenario.js: refused rather than silently ignored.
    String check = get(env, "GF_CHECK", "none");
    if (!check.equals("none")) {
      throw new Invalid(
          "GF_CHECK="
              + check
              + ": comparing answers with the monolith's is k6-only; the Gatling simulation checks status 200,"
              + " no GraphQL errors and data present");
    }
    for (String k6Only : new String[] {"GF_UNIQUE", "GF_THRESHOLDS"}) {
      if (!get(env, k6Only, "").isEmpty()) {
        throw new Invalid(k6Only + " is k6-only (scenario.js); the Gatling simulation does not support it");
      }
    }
    int rate = integer(env, "GF_RATE", 10);
    if (rate < 1) {
      throw new Invalid("GF_RATE=" + rate + ": expected at least 1 request per second");
    }
    String duration = get(env, "GF_DURATION", "10s");
    double durationS = Durations.seconds(duration);
    if (!(durationS > 0)) {
      throw new Invalid(
          "GF_DURATION=" + duration + ": expected a duration above 0 such as 250ms, 30s, 1m30s or 1h2m3.5s");
    }
    int count = integer(env, "GF_SEGMENT_COUNT", 1);
    int index = integer(env, "GF_SEGMENT_INDEX", 0);
    if (count < 1 || index >= count) {
      throw new Invalid(
          "GF_SEGMENT_INDEX=" + index + ", GF_SEGMENT_COUNT=" + count + ": expected 0 <= index < count");
    }
    return new Settings(
        url,
        payload,
        rate,
        duration,
        durationS,
        index,
        count,
        get(env, "GF_SUMMARY", "summary.json"),
        integer(env, "GF_SUMMARY_LIMIT", 0),
        get(env, "GF_SUMMARY_STDOUT", "0").equals("1"));
  }

  /** This segment's share of the whole test's arrivals. */
  public Schedule schedule() {
    return Schedule.of(rate, durationS, segmentIndex, segmentCount);
  }

  private static String get(Map<String, String> env, String name, String fallback) {
    String v = env.get(name);
    return v == null || v.isEmpty() ? fallback : v;
  }

  private static String required(Map<String, String> env, String name) {
    String v = env.get(name);
    if (v == null || v.isEmpty()) {
      throw new Invalid("environment variable " + name + " is required");
    }
    return v;
  }

  private static int integer(Map<String, String> env, String name, int fallback) {
    String raw = get(env, name, Integer.toString(fallback));
    try {
      int n = Integer.parseInt(raw);
      if (n < 0) {
        throw new NumberFormatException();
      }
      return n;
    } catch (NumberFormatException e) {
      throw new Invalid(name + "=" + raw + " is not a non-negative integer");
    }
  }
}
