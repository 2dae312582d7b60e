package dev.graphfleet.gatling;

/**
 * One segment's arrivals. The whole test's are due at k/rate seconds, k = 0, 1, ... while
 * below the duration (as k6's constant-arrival-rate); segment i of n takes every k with
 * k mod n = i: its first at i/rate, then one every n/rate. The segments' users add up to the
 * whole test's, whatever n.
 */
public record Schedule(long users, long offsetNanos, long spacingNanos) {

  public static Schedule of(int rate, double durationS, int index, int count) {
    // Arrivals k with k/rate < duration; the epsilon keeps 10 s × 40/s at 400, not 401.
    long total = (long) Math.ceil(rate * durationS - 1e-9);
    long users = index < total ? (total - index + count - 1) / count : 0;
    long offset = Math.round(index * 1e9 / rate);
    long spacing = Math.round(count * 1e9 / rate);
    return new Schedule(users, offset, spacing);
  }

  /** When user {@code k} of this segment is due, after the segment's first. */
  public long dueAfterFirst(long k) {
    return k * spacingNanos;
  }
}
