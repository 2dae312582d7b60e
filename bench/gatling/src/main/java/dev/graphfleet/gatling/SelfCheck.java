package dev.graphfleet.gatling;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Checks the simulation's pure parts against the files the Rust modules and scenario.js are
 * checked on, and its own rules; scripts/gatling.sh runs it after each build.
 * Usage: SelfCheck TESTDATA_DIR (bench/k6/testdata). Exits 1 naming every mismatch.
 */
public final class SelfCheck {
  private static final List<String> FAILED = new ArrayList<>();

  private SelfCheck() {}

  private static void expect(boolean ok, String what) {
    if (!ok) {
      FAILED.add(what);
    }
  }

  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: SelfCheck TESTDATA_DIR");
      System.exit(2);
    }
    ObjectMapper json = new ObjectMapper();
    Path dir = Path.of(args[0]);
    int cases = 0;
    for (JsonNode c : json.readTree(dir.resolve("buckets.json").toFile())) {
      double ms = Double.parseDouble(c.get(0).asText());
      int got = LatencyHistogram.bucketOf(ms);
      expect(got == c.get(1).asInt(), "bucketOf(" + c.get(0).asText() + ") = " + got + ", want " + c.get(1));
      cases++;
    }
    for (JsonNode c : json.readTree(dir.resolve("durations.json").toFile())) {
      double got = Durations.seconds(c.get(0).asText());
      boolean ok =
          c.get(1).isNull()
              ? Double.isNaN(got)
              : Math.abs(got - c.get(1).asDouble()) <= 1e-9 * Math.max(1, c.get(1).asDouble());
      expect(ok, "seconds(" + c.get(0) + ") = " + got + ", want " + c.get(1));
      cases++;
    }
    cases += checkSchedules();
    cases += checkVerdicts();
    cases += checkSummary(json);
    cases += checkSettings();
    if (!FAILED.isEmpty()) {
      FAILED.forEach(f -> System.err.println("MISMATCH " + f));
      System.err.println(FAILED.size() + " of " + cases + " checks failed");
      System.exit(1);
    }
    System.out.println("gatling self-check: " + cases + " checks passed");
  }

  /** The segments' users add up to the whole test's, each segment every n-th arrival. */
  private static int checkSchedules() {
    int n = 0;
    int[][] cases = {{40, 10, 1}, {40, 10, 2}, {40, 10, 3}, {10, 1, 7}, {7, 3, 100}, {1, 1, 4}};
    for (int[] c : cases) {
      long sum = 0;
      for (int i = 0; i < c[2]; i++) {
        Schedule s = Schedule.of(c[0], c[1], i, c[2]);
        sum += s.users();
        expect(s.offsetNanos() == Math.round(i * 1e9 / c[0]), "offset of segment " + i + " of " + c[2]);
        expect(s.spacingNanos() == Math.round(c[2] * 1e9 / c[0]), "spacing of " + c[2] + " segments");
      }
      expect(sum == (long) c[0] * c[1], c[0] + "/s for " + c[1] + " s in " + c[2] + " segments: " + sum + " users");
      n++;
    }
    expect(Schedule.of(10, 0.25, 0, 1).users() == 3, "10/s for 250ms: arrivals at 0, 100 and 200 ms");
    return n + 1;
  }

  private static int checkVerdicts() {
    Map<String, String> cases =
        Map.of(
            "{\"data\":{\"a\":1}}", GraphQlVerdict.OK,
            "{\"data\":{\"a\":[1,{\"errors\":2}]},\"errors\":[]}", GraphQlVerdict.OK,
            "{\"data\":{\"a\":1},\"errors\":[{\"message\":\"x\"}]}", "the answer has GraphQL errors",
            "{\"errors\":[{\"message\":\"x\"}],\"data\":null}", "the answer has GraphQL errors",
            "{\"data\":null}", "the answer has no data",
            "{}", "the answer has no data",
            "[1]", "the body is not a JSON object",
            "", "the body is not a JSON object");
    cases.forEach(
        (body, want) -> {
          String got = GraphQlVerdict.of(body.getBytes(StandardCharsets.UTF_8));
          expect(got.equals(want), "verdict of " + body + ": " + got + ", want " + want);
        });
    String cut = GraphQlVerdict.of("{\"data\":{\"a\":".getBytes(StandardCharsets.UTF_8));
    expect(cut.startsWith("the body is not JSON"), "verdict of a cut body: " + cut);
    return cases.size() + 1;
  }

  /** A recorded run becomes scenario.js's summary: counts, lateness from the schedule, histogram. */
  private static int checkSummary(ObjectMapper json) {
    Settings s = new Settings("http://127.0.0.1:1/graphql", new byte[0], 10, "1s", 1.0, 1, 2, "-", 0, true);
    Schedule schedule = s.schedule();
    expect(schedule.users() == 5 && schedule.spacingNanos() == 200_000_000L, "10/s over 2 segments: " + schedule);
    Recorder r = new Recorder(schedule);
    long t = 1_000_000_000L;
    // Users start on time except the third, 50 ms late; answers take 2 ms; the last is unanswered.
    long[] starts = {t, t + 200_000_000L, t + 450_000_000L, t + 600_000_000L, t + 800_000_000L};
    for (int k = 0; k < 5; k++) {
      int slot = r.start(starts[k]);
      if (k < 4) {
        r.end(slot, starts[k] + 2_000_000L, k != 1);
      }
    }
    ObjectNode sum = Summary.of(s, r.result(), 0);
    expect(sum.get("requests").asLong() == 4, "requests " + sum);
    expect(sum.get("failures").asLong() == 1 && sum.get("ok").asLong() == 3, "failures " + sum);
    expect(sum.get("dropped_iterations").asLong() == 1, "dropped " + sum);
    JsonNode late = sum.get("scheduled_latency_ms");
    expect(Math.abs(late.get("max").asDouble() - 52.0) < 1e-9, "late user: 52 ms from its due time " + late);
    expect(Math.abs(late.get("min").asDouble() - 2.0) < 1e-9, "on-time users: 2 ms " + late);
    expect(Math.abs(sum.get("latency_ms").get("max").asDouble() - 2.0) < 1e-9, "as sent: 2 ms " + sum);
    // Segment 1's first arrival is 100 ms after the test's start.
    expect(Math.abs(sum.get("started_at_ms").asDouble() - 900.0) < 1e-9, "started_at_ms " + sum);
    long histTotal = 0;
    JsonNode hist = sum.get("hist");
    for (int i = 1; i < hist.size(); i += 2) {
      histTotal += hist.get(i).asLong();
    }
    expect(histTotal == 4, "histogram counts every answered request " + hist);
    expect(hist.get(0).asInt() == LatencyHistogram.bucketOf(2.0), "first bucket " + hist);
    String small = Summary.limited(sum, 64);
    expect(small.contains("\"hist_dropped\":true") && !small.contains("\"hist\""), "limited " + small);
    expect(Summary.limited(sum, 0).equals(sum.toString()), "no limit");
    return 10;
  }

  private static int checkSettings() throws IOException {
    Path payload = Files.createTempFile("gf-payload", ".json");
    payload.toFile().deleteOnExit();
    int n = 0;
    String[][] bad = {
      {"GF_PAYLOAD", "/nonexistent", "GF_PAYLOAD=/nonexistent: cannot read it"},
      {"GF_DURATION", "0s", "GF_DURATION=0s: expected a duration above 0"},
      {"GF_RATE", "x", "GF_RATE=x is not a non-negative integer"},
      {"GF_SEGMENT_INDEX", "2", "GF_SEGMENT_INDEX=2, GF_SEGMENT_COUNT=2"},
      {"GF_CHECK", "length", "GF_CHECK=length: comparing answers with the monolith's is k6-only"},
      {"GF_THRESHOLDS", "{}", "GF_THRESHOLDS is k6-only"},
    };
    for (String[] c : bad) {
      Map<String, String> env =
          new java.util.HashMap<>(
              Map.of("GF_URL", "http://127.0.0.1:1/graphql", "GF_PAYLOAD", payload.toString(), "GF_SEGMENT_COUNT", "2"));
      env.put(c[0], c[1]);
      try {
        Settings.fromEnv(env);
        expect(false, c[0] + "=" + c[1] + " accepted");
      } catch (Settings.Invalid e) {
        expect(e.getMessage().startsWith(c[2]), c[0] + "=" + c[1] + ": " + e.getMessage());
      }
      n++;
    }
    return n;
  }
}
