package dev.graphfleet.gatling;

import java.util.ArrayList;
import java.util.List;

/**
 * graphfleet_bench_model::latency_histogram's buckets, which the operator merges across
 * segments: the same constants and formula as the Rust module and scenario.js's bucketOf
 * (SelfCheck runs this on bench/k6/testdata/buckets.json, as the others are checked).
 */
public final class LatencyHistogram {
  public static final double MIN_MS = 0.01;
  public static final double LN_GAMMA = 0.01980262729617973;
  public static final int BUCKETS = 910;

  private final long[] counts = new long[BUCKETS];
  private long total;

  /** Bucket 0: at most MIN_MS (or not a positive number); bucket i: (MIN·γ^(i-1), MIN·γ^i]. */
  public static int bucketOf(double ms) {
    if (!(ms > MIN_MS)) {
      return 0;
    }
    double i = Math.ceil(Math.log(ms / MIN_MS) / LN_GAMMA);
    return (int) Math.min(BUCKETS - 1, Math.max(1, i));
  }

  public void add(double ms) {
    counts[bucketOf(ms)]++;
    total++;
  }

  public long total() {
    return total;
  }

  /** Only the non-empty buckets: [first index, its count, gap to the next index, its count, ...]. */
  public List<Long> encode() {
    List<Long> out = new ArrayList<>();
    int last = 0;
    for (int i = 0; i < BUCKETS; i++) {
      if (counts[i] > 0) {
        out.add((long) (i - last));
        out.add(counts[i]);
        last = i;
      }
    }
    return out;
  }
}
