// One k6 script for every graphfleet benchmark scenario, parameterised by environment
// variables (the runner `graphfleet-bench` sets them; see bench/k6/README.md).
// Offline by design: only k6 built-in modules and open() of local files.
import http from "k6/http";
import { check } from "k6";
import crypto from "k6/crypto";
import { SharedArray } from "k6/data";
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

const URL = env("GF_URL");
// The POST body ({"query", "variables", "operationName"}), written by the runner.
const PAYLOAD = open(env("GF_PAYLOAD"));
// none: status only; graphql: status + a GraphQL answer with `data` and no `errors` (what a
// client counts as failed, as the Gatling simulation checks; the operator's LoadTests, which
// have no monolith answer in-cluster); length: status + body length (UTF-16 units) equal to
// the monolith's; full: status + SHA-256 of the body equal to the monolith's. A body that
// differs in bytes but has no errors and the same `data` as the monolith (e.g. float
// formatting) also passes.
const CHECK = env("GF_CHECK", "length");
if (!["none", "graphql", "length", "full"].includes(CHECK)) throw new Error(`GF_CHECK=${CHECK}: expected none, graphql, length or full`);
const EXPECTED_LEN = int("GF_EXPECTED_LEN", 0);
const EXPECTED_SHA = env("GF_EXPECTED_SHA256", "");
const EXPECTED_FILE = env("GF_EXPECTED_FILE", "");
// Loaded once and shared by every VU (an 8 MiB answer times hundreds of VUs would not fit);
// read only when a body differs in bytes.
const EXPECTED = new SharedArray("expected", () =>
  CHECK !== "none" && EXPECTED_FILE !== "" ? [open(EXPECTED_FILE)] : [],
);

// constant-arrival-rate (open model, the default) or constant-vus (closed model, N sequential users).
const EXECUTOR = env("GF_EXECUTOR", "constant-arrival-rate");
const RATE = int("GF_RATE", 10);
const DURATION = env("GF_DURATION", "10s");
const DURATION_S = seconds(DURATION);
if (!(DURATION_S > 0)) throw new Error(`GF_DURATION=${DURATION}: expected a duration above 0 such as 250ms, 30s, 1m30s or 1h2m3.5s`);
const VUS = int("GF_VUS", 10);
const MAX_VUS = int("GF_MAX_VUS", Math.max(VUS, 100));
const SUMMARY = env("GF_SUMMARY", "summary.json");
// Most bytes the summary may take (0: no limit); the operator passes the kubelet's 4096-byte
// termination-message limit. Past it the histogram is left out (and `hist_dropped` set), as a
// cut-off summary would not parse at all.
const SUMMARY_LIMIT = int("GF_SUMMARY_LIMIT", 0);
const SUMMARY_STDOUT = env("GF_SUMMARY_STDOUT", "0") === "1";
// Starts the log line carrying the whole summary (graphfleet_operator::k6_summary::LOG_MARKER).
const SUMMARY_MARKER = "graphfleet-summary ";
// No-cache scenarios: the payload carries ZERO_TOKEN (operation name, root-field alias); each
// iteration sends its own token of the same width ("gfnc" + 6-digit nonce + 9-digit
// iteration), so every document is new to the gateway and the answer keeps its length.
const UNIQUE = env("GF_UNIQUE", "");
if (UNIQUE !== "" && !/^[0-9]{1,6}$/.test(UNIQUE)) throw new Error(`GF_UNIQUE=${UNIQUE}: expected a nonce of at most 6 digits`);
const ZERO_TOKEN = "gfnc000000000000000";
const PAYLOAD_PARTS = PAYLOAD.split(ZERO_TOKEN);
if (UNIQUE !== "" && PAYLOAD_PARTS.length < 2) throw new Error(`GF_UNIQUE is set but the payload has no ${ZERO_TOKEN}`);

function scenario() {
  if (EXECUTOR === "constant-arrival-rate") {
    return {
      executor: EXECUTOR,
      rate: RATE,
      timeUnit: "1s",
      duration: DURATION,
      preAllocatedVUs: Math.max(1, Math.min(VUS, MAX_VUS)),
      maxVUs: Math.max(1, MAX_VUS),
      gracefulStop: "10s",
    };
  }
  if (EXECUTOR === "constant-vus") {
    return { executor: EXECUTOR, vus: Math.max(1, VUS), duration: DURATION, gracefulStop: "10s" };
  }
  throw new Error(`GF_EXECUTOR=${EXECUTOR}: expected constant-arrival-rate or constant-vus`);
}

// Thresholds that always hold: they make k6 keep each histogram bucket's series for handleSummary.
const histogramThresholds = {};
for (let i = 0; i < HIST_BUCKETS; i++) histogramThresholds[`gf_hist{b:${i}}`] = ["count>=0"];

// The LoadTest's bounds as k6 thresholds with abortOnFail (thresholds.abortOnFail): k6 stops
// this segment, runs handleSummary and exits with code 99, and the operator stops the others.
const ABORT_THRESHOLDS = JSON.parse(env("GF_THRESHOLDS", "{}"));

export const options = {
  scenarios: { main: scenario() },
  thresholds: Object.assign({}, histogramThresholds, ABORT_THRESHOLDS),
  discardResponseBodies: CHECK === "none",
  summaryTrendStats: ["min", "med", "avg", "p(90)", "p(95)", "p(99)", "max", "count"],
  // The runner reads the summary file; k6's own end-of-test text is replaced by one line.
};

const ok = new Counter("gf_ok");
const failures = new Counter("gf_failures");
// The share of failed requests, for an error-rate threshold (GF_THRESHOLDS).
const errorRate = new Rate("gf_error_rate");
// Latency counted from the moment the open model scheduled the request, not from when a VU
// got around to sending it (coordinated omission): late sends show up here.
const scheduled = new Trend("gf_scheduled_latency", true);
// The reported latency (scheduled when open model, else as sent) per histogram bucket: one
// Counter whose samples carry their bucket as tag `b`. Only metrics reach handleSummary from
// every VU, and a tagged series only as a threshold's submetric, so each bucket has a
// threshold that always holds (options.thresholds). A Counter per bucket would cost every VU
// its 910 metric objects (measured: 2.6 MB per VU, 1.3 GB at 500 VUs).
const histogram = new Counter("gf_hist");
// When this k6 started its scenario (Unix ms, its own clock): the operator compares the
// segments' to report how far apart they started. Set once per VU.
const startedAt = new Gauge("gf_started_at_ms");
let startRecorded = false;

const params = {
  headers: { "Content-Type": "application/json", Accept: "application/json" },
  timeout: "60s",
  responseType: CHECK === "none" ? "none" : "text",
};

let expectedData; // parsed lazily, only when a body differs in bytes
let reported = 0;

function sameData(body) {
  // The runner checked the answer's structure once before the load; here a byte mismatch on a
  // big body is a failure (re-parsing megabytes in the VM would stall k6 itself).
  if (EXPECTED.length === 0 || body.length > 1 << 20) return false;
  let got;
  try {
    got = JSON.parse(body);
  } catch (_) {
    return false;
  }
  if (got.errors !== undefined) return false;
  if (expectedData === undefined) expectedData = JSON.stringify(JSON.parse(EXPECTED[0]).data);
  return JSON.stringify(got.data) === expectedData;
}

function token(iteration) {
  return "gfnc" + UNIQUE.padStart(6, "0") + String(iteration % 1e9).padStart(9, "0");
}

// BEGIN graphql check
// An answer with data and without errors. Parsed only when the text could hold a top-level
// `errors` (a field of that name in `data` is rare), so big answers cost a scan, not a parse.
function graphqlOk(body) {
  if (!body.startsWith('{"data":{') || !body.endsWith("}")) return false;
  if (!body.includes('"errors"')) return true;
  try {
    const got = JSON.parse(body);
    return got.errors === undefined && got.data !== null && typeof got.data === "object";
  } catch (_) {
    return false;
  }
}
// END graphql check

function bodyOk(body, tok) {
  if (CHECK === "none") return true;
  if (typeof body !== "string") return false;
  if (CHECK === "graphql") return graphqlOk(body);
  // The answer names the request's token where the monolith's has the zero token.
  if (tok !== undefined) body = body.split(tok).join(ZERO_TOKEN);
  if (CHECK === "length" && body.length === EXPECTED_LEN) return true;
  if (CHECK === "full" && crypto.sha256(body, "hex") === EXPECTED_SHA) return true;
  return sameData(body);
}

export default function () {
  if (!startRecorded) {
    startRecorded = true;
    startedAt.add(exec.scenario.startTime);
  }
  const tok = UNIQUE === "" ? undefined : token(exec.scenario.iterationInTest);
  const res = http.post(URL, tok === undefined ? PAYLOAD : PAYLOAD_PARTS.join(tok), params);
  const end = Date.now();
  const good = check(res, {
    "status is 200": (r) => r.status === 200,
    "body matches the monolith": (r) => r.status === 200 && bodyOk(r.body, tok),
  });
  errorRate.add(!good);
  if (good) {
    ok.add(1);
  } else {
    failures.add(1);
    if (reported < 3) {
      reported += 1;
      const body = typeof res.body === "string" ? res.body.slice(0, 300) : "";
      console.warn(`failure: status ${res.status} ${res.error || ""} len ${typeof res.body === "string" ? res.body.length : "-"}: ${body}`);
    }
  }
  if (EXECUTOR === "constant-arrival-rate" && RATE > 0) {
    const due = exec.scenario.startTime + (exec.scenario.iterationInTest * 1000) / RATE;
    const late = Math.max(0, end - due);
    scheduled.add(late);
    histogram.add(1, { b: String(bucketOf(late)) });
  } else {
    histogram.add(1, { b: String(bucketOf(res.timings.duration)) });
  }
}

function trend(metric) {
  if (!metric) return null;
  const v = metric.values;
  return { min: v.min, med: v.med, avg: v.avg, p90: v["p(90)"], p95: v["p(95)"], p99: v["p(99)"], max: v.max, count: v.count };
}

function count(metric) {
  return metric ? metric.values.count : 0;
}

// The GF_THRESHOLDS bounds k6 found broken, as "metric expression" (the histogram's always hold).
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
  const requests = count(m.http_reqs);
  const planned = DURATION_S;
  const summary = {
    executor: EXECUTOR,
    target_rate: EXECUTOR === "constant-arrival-rate" ? RATE : null,
    vus: VUS,
    max_vus: m.vus_max ? m.vus_max.values.max : null,
    duration_s: planned,
    run_duration_s: data.state.testRunDurationMs / 1000,
    requests,
    ok: count(m.gf_ok),
    failures: count(m.gf_failures),
    dropped_iterations: count(m.dropped_iterations),
    achieved_rate: planned > 0 ? requests / planned : null,
    latency_ms: trend(m.http_req_duration),
    scheduled_latency_ms: trend(m.gf_scheduled_latency),
    data_received_bytes: count(m.data_received),
    thresholds_failed: brokenThresholds(m),
    started_at_ms: m.gf_started_at_ms ? m.gf_started_at_ms.values.min : null,
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
    `k6: ${requests} requests, ${summary.failures} failures, ${summary.dropped_iterations} dropped, ` +
    `${(summary.achieved_rate || 0).toFixed(1)} req/s, p99 ${(l.p99 || 0).toFixed(2)} ms\n`;
  // The whole summary, histogram included, also as one marked line of the log, where the
  // operator reads it (GF_SUMMARY_STDOUT=1): a log line has no 4 KiB ceiling.
  const logged = SUMMARY_STDOUT ? `${SUMMARY_MARKER}${full}\n` : "";
  return { [SUMMARY]: text, stdout: line + logged };
}
