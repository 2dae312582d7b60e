package dev.graphfleet.gatling;

import static io.gatling.javaapi.core.CoreDsl.ByteArrayBody;
import static io.gatling.javaapi.core.CoreDsl.bodyBytes;
import static io.gatling.javaapi.core.CoreDsl.nothingFor;
import static io.gatling.javaapi.core.CoreDsl.rampUsers;
import static io.gatling.javaapi.core.CoreDsl.scenario;
import static io.gatling.javaapi.http.HttpDsl.http;
import static io.gatling.javaapi.http.HttpDsl.status;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatling.javaapi.core.OpenInjectionStep;
import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Session;
import io.gatling.javaapi.core.Simulation;
import io.gatling.javaapi.http.HttpProtocolBuilder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A graphfleet benchmark scenario under Gatling's open workload model: one user per arrival,
 * each sending the scenario's POST once, started at its scheduled time (this segment's share
 * of {@code GF_RATE} over {@code GF_DURATION}). At the end it prints scenario.js's summary
 * line, {@code graphfleet-summary <json>}, so the operator merges and judges Gatling
 * segments as it does k6's. Inputs: bench/gatling/README.md.
 */
public class GraphfleetSimulation extends Simulation {
  /** Starts the log line carrying the whole summary (graphfleet_operator::k6_summary::LOG_MARKER). */
  static final String SUMMARY_MARKER = "graphfleet-summary ";
  /** How long in-flight requests may finish after the last arrival (k6's gracefulStop). */
  static final Duration GRACEFUL_STOP = Duration.ofSeconds(10);
  /** Failures printed with their cause (the rest are counted). */
  static final int REPORTED_FAILURES = 3;

  private final Settings settings = Settings.fromEnv(System.getenv());
  private final Schedule schedule = settings.schedule();
  private final Recorder recorder = new Recorder(schedule);
  private final AtomicInteger reported = new AtomicInteger();
  // nanoTime + this = Unix time in nanoseconds.
  private final long epochOffsetNanos = System.currentTimeMillis() * 1_000_000L - System.nanoTime();

  {
    HttpProtocolBuilder protocol =
        http
            // Gatling's warm-up request goes to an address outside the test: never sent.
            .disableWarmUp()
            // One connection pool for every user, as k6's VUs keep theirs: a new TCP
            // connection per arrival would measure connection set-up, not the gateway.
            .shareConnections()
            .contentTypeHeader("application/json")
            .acceptHeader("application/json");

    ScenarioBuilder scenario =
        scenario("graphfleet")
            .exec(session -> session.set("gfSlot", recorder.start(System.nanoTime())))
            .exec(
                http("graphql")
                    .post(settings.url())
                    // Raw bytes: the payload is not a Gatling template ("#{...}" stays as is).
                    .body(ByteArrayBody(settings.payload()))
                    // Saved, not asserted: the verdict below names the cause of a failure.
                    .check(status().saveAs("gfStatus"))
                    .check(bodyBytes().transform(GraphQlVerdict::of).saveAs("gfVerdict")))
            .exec(this::finish);

    List<OpenInjectionStep> steps = new ArrayList<>();
    if (schedule.offsetNanos() > 0) {
      steps.add(nothingFor(Duration.ofNanos(schedule.offsetNanos())));
    }
    if (schedule.users() > 0) {
      // rampUsers(n) over n spacings: user k starts k spacings after the first.
      steps.add(
          rampUsers((int) schedule.users())
              .during(Duration.ofNanos(schedule.users() * schedule.spacingNanos())));
    }
    if (steps.isEmpty()) {
      steps.add(nothingFor(Duration.ofMillis(1)));
    }
    Duration last =
        Duration.ofNanos(schedule.offsetNanos() + schedule.users() * schedule.spacingNanos());
    setUp(scenario.injectOpen(steps)).protocols(protocol).maxDuration(last.plus(GRACEFUL_STOP));
  }

  private Session finish(Session session) {
    long end = System.nanoTime();
    Integer status = session.contains("gfStatus") ? session.getInt("gfStatus") : null;
    String verdict = session.contains("gfVerdict") ? session.getString("gfVerdict") : null;
    String why = null;
    if (session.isFailed() || status == null) {
      why = "no answer (connection or timeout failure)";
    } else if (status != 200) {
      why = "status " + status;
    } else if (!GraphQlVerdict.OK.equals(verdict)) {
      why = verdict;
    }
    recorder.end(session.getInt("gfSlot"), end, why == null);
    if (why != null && reported.getAndIncrement() < REPORTED_FAILURES) {
      System.err.println("failure: " + why);
    }
    return why == null ? session : session.markAsFailed();
  }

  @Override
  public void after() {
    ObjectNode summary = Summary.of(settings, recorder.result(), epochOffsetNanos);
    String text = Summary.limited(summary, settings.summaryLimit());
    try {
      Files.writeString(Path.of(settings.summaryPath()), text, StandardCharsets.UTF_8);
    } catch (IOException e) {
      System.err.println("could not write the summary to " + settings.summaryPath() + ": " + e.getMessage());
    }
    var l = summary.get("scheduled_latency_ms");
    StringBuilder out = new StringBuilder();
    out.append(
        String.format(
            "gatling: %d requests, %d failures, %d dropped, %.1f req/s, p99 %.2f ms%n",
            summary.get("requests").asLong(),
            summary.get("failures").asLong(),
            summary.get("dropped_iterations").asLong(),
            summary.get("achieved_rate").asDouble(),
            l.isNull() ? 0.0 : l.get("p99").asDouble()));
    // The whole summary, histogram included, as one marked line of the log, where the
    // operator reads it: a log line has no 4 KiB ceiling.
    if (settings.summaryStdout()) {
      out.append(SUMMARY_MARKER).append(summary.toString()).append('\n');
    }
    System.out.print(out);
    System.out.flush();
  }
}
