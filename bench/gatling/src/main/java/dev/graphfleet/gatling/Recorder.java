package dev.graphfleet.gatling;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Each user's start and end (System.nanoTime) in the order users started, 17 bytes per
 * planned user. Slot k is the k-th user to start, so it is due k spacings after the first.
 */
public final class Recorder {
  private final Schedule schedule;
  private final long[] starts;
  private final long[] ends;
  private final boolean[] ok;
  private final AtomicInteger next = new AtomicInteger();

  public Recorder(Schedule schedule) {
    if (schedule.users() > Integer.MAX_VALUE - 8) {
      throw new Settings.Invalid(schedule.users() + " requests in one segment is more than it can record");
    }
    this.schedule = schedule;
    int n = (int) schedule.users();
    starts = new long[n];
    ends = new long[n];
    ok = new boolean[n];
  }

  /** A user starts: its slot, or -1 past the planned users (never, with our injection). */
  public int start(long nanos) {
    int k = next.getAndIncrement();
    if (k >= starts.length) {
      return -1;
    }
    starts[k] = nanos;
    return k;
  }

  /** The user in slot {@code k} got its answer (or gave up) at {@code nanos}. */
  public void end(int k, long nanos, boolean good) {
    if (k < 0 || k >= ends.length) {
      return;
    }
    ok[k] = good;
    // 0 marks "no answer": a real nanoTime of 0 is nudged.
    ends[k] = nanos == 0 ? 1 : nanos;
  }

  /** What was recorded, once the run is over. */
  public Recorded result() {
    int started = Math.min(next.get(), starts.length);
    return new Recorded(
        schedule,
        Arrays.copyOf(starts, started),
        Arrays.copyOf(ends, started),
        Arrays.copyOf(ok, started));
  }

  /** The users that started, by slot; {@code ends[k] == 0}: no answer before the stop. */
  public record Recorded(Schedule schedule, long[] starts, long[] ends, boolean[] ok) {
    /**
     * When the segment's first user was due (nanoTime). Gatling exposes no injection start,
     * so the schedule is aligned on the least late user: min over k of start − due offset.
     * A delay every user shares is not counted; each user's lateness beyond it is.
     */
    public long origin() {
      long origin = Long.MAX_VALUE;
      for (int k = 0; k < starts.length; k++) {
        origin = Math.min(origin, starts[k] - schedule.dueAfterFirst(k));
      }
      return origin;
    }
  }
}
