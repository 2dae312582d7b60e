package dev.graphfleet.gatling;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Arrays;

/**
 * The segment's summary in scenario.js's JSON form (graphfleet_operator::k6_summary reads it):
 * counts, latency trends, and the histogram of the latency from each user's scheduled start.
 */
public final class Summary {
  private static final ObjectMapper JSON = new ObjectMapper();

  private Summary() {}

  /** The summary of a run; {@code epochOffsetNanos} turns nanoTime into Unix time. */
  public static ObjectNode of(Settings s, Recorder.Recorded r, long epochOffsetNanos) {
    Schedule schedule = r.schedule();
    long origin = r.origin();
    int finished = 0;
    int good = 0;
    long lastEnd = origin;
    for (int k = 0; k < r.ends().length; k++) {
      if (r.ends()[k] != 0) {
        finished++;
        if (r.ok()[k]) {
          good++;
        }
        lastEnd = Math.max(lastEnd, r.ends()[k]);
      }
    }
    double[] sent = new double[finished];
    double[] scheduled = new double[finished];
    LatencyHistogram hist = new LatencyHistogram();
    int i = 0;
    for (int k = 0; k < r.ends().length; k++) {
      long end = r.ends()[k];
      if (end == 0) {
        continue;
      }
      sent[i] = (end - r.starts()[k]) / 1e6;
      scheduled[i] = Math.max(0, end - (origin + schedule.dueAfterFirst(k))) / 1e6;
      hist.add(scheduled[i]);
      i++;
    }
    ObjectNode out = JSON.createObjectNode();
    out.put("executor", "gatling");
    out.put("target_rate", s.rate());
    out.putNull("vus");
    out.putNull("max_vus");
    out.put("duration_s", s.durationS());
    out.put("run_duration_s", finished == 0 ? 0 : (lastEnd - origin) / 1e9);
    out.put("requests", finished);
    out.put("ok", good);
    out.put("failures", finished - good);
    // Planned arrivals that were never sent or never answered before the stop.
    out.put("dropped_iterations", schedule.users() - finished);
    out.put("achieved_rate", finished / s.durationS());
    out.set("latency_ms", trend(sent));
    out.set("scheduled_latency_ms", trend(scheduled));
    out.putNull("data_received_bytes");
    out.putArray("thresholds_failed");
    if (r.starts().length > 0) {
      // When the whole test's schedule began (the first segment's first arrival), as k6's
      // exec.scenario.startTime: segment i's own first arrival is i/rate later.
      long testStart = origin - schedule.offsetNanos();
      out.put("started_at_ms", (testStart + epochOffsetNanos) / 1e6);
    } else {
      out.putNull("started_at_ms");
    }
    ArrayNode encoded = out.putArray("hist");
    hist.encode().forEach(encoded::add);
    return out;
  }

  /** The summary as written to GF_SUMMARY: without the histogram past {@code limit} bytes (0: none). */
  public static String limited(ObjectNode summary, int limit) {
    String full = summary.toString();
    if (limit <= 0 || full.length() <= limit) {
      return full;
    }
    ObjectNode cut = summary.deepCopy();
    cut.remove("hist");
    cut.put("hist_dropped", true);
    return cut.toString();
  }

  /** min/med/avg/p90/p95/p99/max/count as k6 computes its trends (linear interpolation). */
  static ObjectNode trend(double[] values) {
    if (values.length == 0) {
      return null;
    }
    double[] v = values.clone();
    Arrays.sort(v);
    ObjectNode t = JSON.createObjectNode();
    t.put("min", v[0]);
    t.put("med", percentile(v, 0.5));
    t.put("avg", Arrays.stream(v).average().orElse(0));
    t.put("p90", percentile(v, 0.9));
    t.put("p95", percentile(v, 0.95));
    t.put("p99", percentile(v, 0.99));
    t.put("max", v[v.length - 1]);
    t.put("count", v.length);
    return t;
  }

  static double percentile(double[] sorted, double p) {
    double at = p * (sorted.length - 1);
    int lo = (int) Math.floor(at);
    int hi = Math.min(sorted.length - 1, lo + 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo);
  }
}
