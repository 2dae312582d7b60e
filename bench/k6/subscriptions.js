// The subscription fan-out (scenario `subscriptions`): GF_RATE subscribers, one VU each, hold
// the scenario's subscription over graphql-transport-ws (k6/websockets) for GF_DURATION.
// Every event is checked (a `next` with data.reviewAdded and no errors) and its end-to-end
// latency taken from the subgraph's emission (`publishedAt`, Unix ms) to its receipt
// (Date.now(), so the load generator's clock must be the subgraph's: the same machine, or
// synchronised nodes). The summary has scenario.js's shape with events for requests: the
// operator and graphfleet-bench read it the same way (see bench/k6/README.md).
// Offline by design: only k6 built-in modules and open() of local files.
import { WebSocket } from "k6/websockets";
import { setTimeout, clearTimeout } from "k6/timers";
import exec from "k6/execution";
import { Counter, Gauge, Rate, Trend } from "k6/metrics";

function env(name, fallback) {
  const v = __ENV[name];
  if (v === undefined || v === "") {
    if (fallback === undefined) throw new Error(`environment variable ${name} is required`);
    return fallback;
  }
  return v;
}

function int(name, fallback) {
  const raw = env(name, fallback === undefined ? undefined : String(fallback));
  const n = parseInt(raw, 10);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name}=${raw} is not a non-negative integer`);
  return n;
}

// BEGIN durations: graphfleet_bench_model::duration::parse's grammar (the LoadTest CRD's):
// <number><unit> parts, units h, m, s, ms ("250ms", "30s", "1m30s", "1h2m3.5s").
// bench/model/tests/scenario_js.rs runs this block under node on k6/testdata/durations.json.
// A duration in seconds; NaN if malformed.
function seconds(duration) {
  const unit = { h: 3600, m: 60, s: 1, ms: 0.001 };
  const part = /([0-9]+(?:\.[0-9]+)?)(ms|h|m|s)/y;
  let total = 0;
  let at = 0;
  while (at < duration.length) {
    part.lastIndex = at;
    const m = part.exec(duration);
    if (!m) return NaN;
    total += parseFloat(m[1]) * unit[m[2]];
    at = part.lastIndex;
  }
  return at > 0 ? total : NaN;
}
// END durations

// BEGIN latency histogram: graphfleet_bench_model::latency_histogram's buckets, which the
// operator merges across segments; the same constants and formula
// (bench/model/tests/scenario_js.rs runs this block under node on k6/testdata/buckets.json,
// as the Rust module is checked on it).
const HIST_MIN_MS = 0.01;
const HIST_LN_GAMMA = 0.01980262729617973;
const HIST_BUCKETS = 910;
// Bucket 0: <= HIST_MIN_MS (or not a positive number); bucket i: (MIN·γ^(i-1), MIN·γ^i].
function bucketOf(ms) {
  if (!(ms > HIST_MIN_MS)) return 0;
  const i = Math.ceil(Math.log(ms / HIST_MIN_MS) / HIST_LN_GAMMA);
  return Math.min(HIST_BUCKETS - 1, Math.max(1, i));
}
// Only the non-empty buckets: [first index, its count, gap to the next index, its count, ...].
function encodeHistogram(counts) {
  const out = [];
  let last = 0;
  for (let i = 0; i < counts.length; i++) {
    if (counts[i] > 0) {
      out.push(i - last, counts[i]);
      last = i;
    }
  }
  return out;
}
// END latency histogram

// The gateway's GraphQL URL (http or https); the socket goes to the same URL as ws or wss.
const URL = env("GF_URL");
if (!/^https?:\/\//.test(URL)) throw new Error(`GF_URL=${URL}: expected an http:// or https:// URL`);
const WS_URL = URL.replace(/^http/, "ws");
// The subscribe payload ({"query", "variables"?, "operationName"?}).
const PAYLOAD = JSON.parse(open(env("GF_PAYLOAD")));
// The LoadTest's rate is the number of subscribers (one VU and one connection each).
const SUBSCRIBERS = int("GF_RATE", 10);
if (SUBSCRIBERS < 1) throw new Error("GF_RATE (subscribers) must be at least 1");
const DURATION = env("GF_DURATION", "10s");
const DURATION_S = seconds(DURATION);
if (!(DURATION_S > 0)) throw new Error(`GF_DURATION=${DURATION}: expected a duration above 0 such as 250ms, 30s, 1m30s or 1h2m3.5s`);
// The subgraph's event interval, when known: the expected events/s (target_rate).
const EVENT_INTERVAL_MS = int("GF_EVENT_INTERVAL_MS", 0);
// Longest wait for connection_ack.
const OPEN_TIMEOUT_MS = int("GF_OPEN_TIMEOUT_MS", 20000);
const SUMMARY = env("GF_SUMMARY", "summary.json");
const SUMMARY_LIMIT = int("GF_SUMMARY_LIMIT", 0);
const SUMMARY_STDOUT = env("GF_SUMMARY_STDOUT", "0") === "1";
const SUMMARY_MARKER = "graphfleet-summary ";

// Thresholds that always hold: they make k6 keep each histogram bucket's series for handleSummary.
const histogramThresholds = {};
for (let i = 0; i < HIST_BUCKETS; i++) histogramThresholds[`gf_hist{b:${i}}`] = ["count>=0"];
// The LoadTest's abortOnFail bounds (GF_THRESHOLDS): latency bounds apply to the event latency
// here, the error rate to events and subscriptions; a subscription has no arrivals to drop.
const ABORT_THRESHOLDS = JSON.parse(env("GF_THRESHOLDS", "{}"));
const LATENCY = "gf_event_latency";
if (ABORT_THRESHOLDS.gf_scheduled_latency !== undefined) {
  ABORT_THRESHOLDS[LATENCY] = ABORT_THRESHOLDS.gf_scheduled_latency;
  delete ABORT_THRESHOLDS.gf_scheduled_latency;
}
delete ABORT_THRESHOLDS.dropped_iterations;

export const options = {
  scenarios: {
    main: {
      executor: "per-vu-iterations",
      vus: SUBSCRIBERS,
      iterations: 1,
      // Opening, the held subscription, and closing.
      maxDuration: `${Math.ceil(DURATION_S + OPEN_TIMEOUT_MS / 1000 + 10)}s`,
      gracefulStop: "10s",
    },
  },
  thresholds: Object.assign({}, histogramThresholds, ABORT_THRESHOLDS),
  summaryTrendStats: ["min", "med", "avg", "p(90)", "p(95)", "p(99)", "max", "count"],
};

const events = new Counter("gf_events");
const ok = new Counter("gf_ok");
const failures = new Counter("gf_failures");
const errorRate = new Rate("gf_error_rate");
const opened = new Counter("gf_subscriptions_opened");
const latency = new Trend(LATENCY, true);
const histogram = new Counter("gf_hist");
const startedAt = new Gauge("gf_started_at_ms");
let reported = 0;

function fail(why) {
  failures.add(1);
  errorRate.add(true);
  if (reported < 3) {
    reported += 1;
    console.warn(`failure: ${why}`);
  }
}

// Why an event's payload is bad, or "" when it is good.
function badEvent(payload) {
  if (payload === undefined || payload === null) return "no payload";
  if (payload.errors !== undefined) return `errors: ${JSON.stringify(payload.errors).slice(0, 300)}`;
  const review = payload.data ? payload.data.reviewAdded : undefined;
  if (review === undefined || review === null || typeof review !== "object") return "no data.reviewAdded";
  if (typeof review.publishedAt !== "number") return "no publishedAt";
  return "";
}

export default function () {
  startedAt.add(exec.scenario.startTime);
  const ws = new WebSocket(WS_URL, "graphql-transport-ws");
  let ended = false;
  let holding;
  const finish = () => {
    if (ended) return;
    ended = true;
    clearTimeout(opening);
    if (holding !== undefined) clearTimeout(holding);
    try {
      ws.send(JSON.stringify({ type: "complete", id: "1" }));
    } catch (_) {
      // Already closing.
    }
    ws.close();
  };
  const opening = setTimeout(() => {
    fail(`no connection_ack within ${OPEN_TIMEOUT_MS} ms`);
    finish();
  }, OPEN_TIMEOUT_MS);
  ws.onopen = () => ws.send(JSON.stringify({ type: "connection_init" }));
  ws.onmessage = (e) => {
    const received = Date.now();
    let msg;
    try {
      msg = JSON.parse(e.data);
    } catch (_) {
      events.add(1);
      fail(`not JSON: ${String(e.data).slice(0, 300)}`);
      return;
    }
    switch (msg.type) {
      case "connection_ack":
        clearTimeout(opening);
        opened.add(1);
        ws.send(JSON.stringify({ type: "subscribe", id: "1", payload: PAYLOAD }));
        holding = setTimeout(finish, DURATION_S * 1000);
        return;
      case "next": {
        events.add(1);
        const why = badEvent(msg.payload);
        if (why !== "") {
          fail(why);
          return;
        }
        ok.add(1);
        errorRate.add(false);
        const ms = Math.max(0, received - msg.payload.data.reviewAdded.publishedAt);
        latency.add(ms);
        histogram.add(1, { b: String(bucketOf(ms)) });
        return;
      }
      case "ping":
        ws.send(JSON.stringify({ type: "pong" }));
        return;
      case "pong":
        return;
      default:
        // error, complete or anything else ends the subscription before its time.
        fail(`ended early: ${String(e.data).slice(0, 300)}`);
        finish();
    }
  };
  ws.onerror = (e) => {
    if (!ended) fail(`socket error: ${e.error}`);
    finish();
  };
  ws.onclose = () => {
    if (!ended) {
      fail("the socket closed early");
      ended = true;
      clearTimeout(opening);
      if (holding !== undefined) clearTimeout(holding);
    }
  };
}

function trend(metric) {
  if (!metric) return null;
  const v = metric.values;
  return { min: v.min, med: v.med, avg: v.avg, p90: v["p(90)"], p95: v["p(95)"], p99: v["p(99)"], max: v.max, count: v.count };
}

function count(metric) {
  return metric ? metric.values.count : 0;
}

function brokenThresholds(metrics) {
  const out = [];
  for (const name of Object.keys(ABORT_THRESHOLDS)) {
    const t = (metrics[name] || {}).thresholds || {};
    for (const expr of Object.keys(t)) if (!t[expr].ok) out.push(`${name} ${expr}`);
  }
  return out;
}

export function handleSummary(data) {
  const m = data.metrics;
  const received = count(m.gf_events);
  const summary = {
    executor: "subscriptions",
    // Expected events/s when the event interval is known.
    target_rate: EVENT_INTERVAL_MS > 0 ? (SUBSCRIBERS * 1000) / EVENT_INTERVAL_MS : null,
    vus: SUBSCRIBERS,
    max_vus: m.vus_max ? m.vus_max.values.max : null,
    duration_s: DURATION_S,
    run_duration_s: data.state.testRunDurationMs / 1000,
    requests: received,
    ok: count(m.gf_ok),
    failures: count(m.gf_failures),
    dropped_iterations: 0,
    achieved_rate: DURATION_S > 0 ? received / DURATION_S : null,
    latency_ms: trend(m[LATENCY]),
    scheduled_latency_ms: null,
    data_received_bytes: count(m.data_received),
    thresholds_failed: brokenThresholds(m),
    started_at_ms: m.gf_started_at_ms ? m.gf_started_at_ms.values.min : null,
    subscriptions_opened: count(m.gf_subscriptions_opened),
    hist: encodeHistogram(Array.from({ length: HIST_BUCKETS }, (_, i) => count(m[`gf_hist{b:${i}}`]))),
  };
  const full = JSON.stringify(summary);
  let text = full;
  if (SUMMARY_LIMIT > 0 && text.length > SUMMARY_LIMIT) {
    delete summary.hist;
    summary.hist_dropped = true;
    text = JSON.stringify(summary);
  }
  const l = summary.latency_ms || {};
  const line =
    `k6: ${summary.subscriptions_opened}/${SUBSCRIBERS} subscriptions, ${received} events, ${summary.failures} failures, ` +
    `${(summary.achieved_rate || 0).toFixed(1)} events/s, p50 ${(l.med || 0).toFixed(2)} ms, p99 ${(l.p99 || 0).toFixed(2)} ms\n`;
  const logged = SUMMARY_STDOUT ? `${SUMMARY_MARKER}${full}\n` : "";
  return { [SUMMARY]: text, stdout: line + logged };
}
