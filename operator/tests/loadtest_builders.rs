//! LoadTest builders (snapshots per fixture in `fixtures/loadtests/`) and the aggregation of
//! k6 summaries (fixtures in `fixtures/k6-summaries/`). No cluster needed.

use std::path::PathBuf;

use graphfleet_api::{LatencyAggregation, LoadTest, LoadTestPhase};
use graphfleet_operator::k6_summary;
use graphfleet_operator::resources::loadtest::{self, DEFAULT_K6_IMAGE, SpecError};
use graphfleet_operator::status;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use graphfleet_bench_model::K6_SCENARIO_JS as SCENARIO_JS;
use graphfleet_bench_model::latency_histogram::{Histogram, RELATIVE_ERROR};

fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn read(dir: &str, file: &str) -> String {
    std::fs::read_to_string(fixture_dir(dir).join(file)).expect("readable fixture")
}

fn loadtests() -> Vec<(String, LoadTest)> {
    let mut out: Vec<_> = std::fs::read_dir(fixture_dir("loadtests"))
        .expect("fixture dir exists")
        .map(|entry| entry.expect("readable dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable fixture");
            let lt: LoadTest = serde_yaml_ng::from_str(&text).expect("fixture is a LoadTest");
            let stem = path
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .into_owned();
            (stem, lt)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 3, "expected the LoadTest fixtures");
    out
}

fn loadtest(name: &str) -> LoadTest {
    loadtests()
        .into_iter()
        .find(|(n, _)| n == name)
        .expect("fixture exists")
        .1
}

#[test]
fn built_objects_match_snapshots() {
    for (name, lt) in loadtests() {
        let mut config_map = loadtest::config_map(&lt).expect("fixture builds");
        // The built-in script is bench/k6/scenario.js verbatim; keep it out of the snapshot.
        if let Some(data) = config_map.as_mut().and_then(|cm| cm.data.as_mut())
            && let Some(script) = data.get_mut("script.js")
            && script == SCENARIO_JS
        {
            *script = "<bench/k6/scenario.js>".to_owned();
        }
        let objects = serde_json::json!({
            "configMap": config_map,
            "jobs": loadtest::jobs(&lt, loadtest::executor_image(&lt, DEFAULT_K6_IMAGE, loadtest::DEFAULT_GATLING_IMAGE)).expect("fixture builds"),
        });
        insta::assert_yaml_snapshot!(name, objects);
    }
}

#[test]
fn segments_split_the_whole_range() {
    assert_eq!(loadtest::execution_segment(0, 1), "0:1");
    assert_eq!(loadtest::execution_segment_sequence(1), "0,1");
    let n = 4;
    let segments: Vec<_> = (0..n).map(|i| loadtest::execution_segment(i, n)).collect();
    assert_eq!(segments, ["0:1/4", "1/4:2/4", "2/4:3/4", "3/4:1"]);
    assert_eq!(loadtest::execution_segment_sequence(n), "0,1/4,2/4,3/4,1");
}

#[test]
fn gateway_ref_resolves_to_its_service() {
    let lt = loadtest("scenario-gateway");
    assert_eq!(
        loadtest::target_url(&lt).expect("gateway target"),
        "http://fed.shop.svc:80/graphql"
    );
    // Without a namespace the gateway is the LoadTest's neighbour.
    let lt = loadtest("configmap-script");
    assert_eq!(
        loadtest::target_url(&lt).expect("gateway target"),
        "http://fed.bench.svc:80/graphql"
    );
}

#[test]
fn unknown_scenario_is_a_clear_error() {
    let mut lt = loadtest("scenario-gateway");
    lt.spec.scenario = Some("nope".to_owned());
    let err = loadtest::config_map(&lt).expect_err("unknown scenario");
    assert!(matches!(err, SpecError::UnknownScenario(ref s, _) if s == "nope"));
    let text = err.to_string();
    assert!(
        text.contains("\"nope\"") && text.contains("many-plans"),
        "{text}"
    );
}

#[test]
fn every_built_in_scenario_builds_a_payload() {
    let mut lt = loadtest("scenario-gateway");
    for name in loadtest::scenario_names() {
        lt.spec.scenario = Some(name.to_owned());
        let cm = loadtest::config_map(&lt)
            .expect("built-in scenario")
            .expect("a ConfigMap");
        let payload = &cm.data.as_ref().expect("data")["payload.json"];
        let body: serde_json::Value = serde_json::from_str(payload).expect("payload is JSON");
        let query = body["query"].as_str().expect("a query string");
        assert!(query.contains('{'), "{name}: {query}");
    }
}

fn summary(file: &str) -> graphfleet_api::LoadTestResults {
    k6_summary::parse_summary(&read("k6-summaries", file)).expect("fixture parses")
}

#[test]
fn summaries_parse_with_scheduled_latency_preferred() {
    let s = summary("segment-0.json");
    assert_eq!((s.requests, s.failures), (3000, 2));
    assert_eq!(s.latency_ms.p99, 8.0, "scheduled latency, not send latency");
    let s = summary("no-scheduled-latency.json");
    assert_eq!(s.latency_ms.p99, 5.0, "falls back to http_req_duration");
    assert_eq!(s.achieved_rate, 50.0, "requests / run duration");
}

fn segment(file: &str) -> k6_summary::Segment {
    k6_summary::parse_segment(&read("k6-summaries", file)).expect("fixture parses")
}

/// Summaries without histograms (a custom script's): the worst segment's percentiles.
#[test]
fn aggregate_of_segments_matches_snapshot() {
    let segments = [segment("segment-0.json"), segment("segment-1.json")];
    let total = k6_summary::aggregate(&segments).expect("two segments");
    assert_eq!(
        total.latency_aggregation,
        Some(LatencyAggregation::WorstSegment)
    );
    assert_eq!(total.requests, 5970);
    assert_eq!(total.failures, 2);
    assert_eq!(total.dropped_iterations, 30, "dropped arrivals add up");
    assert_eq!(total.achieved_rate, 199.0);
    insta::assert_yaml_snapshot!("aggregate_two_segments", total);
    assert_eq!(k6_summary::aggregate(&[]), None);
}

#[test]
fn bad_summary_is_an_error_not_a_panic() {
    for bad in ["", "k6: 10 requests", "{\"requests\": -1}", "[]"] {
        assert!(k6_summary::parse_summary(bad).is_err(), "{bad:?}");
    }
}

fn now() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now())
}

fn pod(index: i32, status: serde_json::Value) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": format!("p{index}"), "labels": { "graphfleet.dev/segment": index.to_string() } },
        "status": status,
    }))
    .expect("valid pod")
}

fn terminated(exit_code: i32, message: &str) -> serde_json::Value {
    serde_json::json!({
        "phase": if exit_code == 0 { "Succeeded" } else { "Failed" },
        "containerStatuses": [{
            "name": "k6", "image": "k6", "imageID": "", "ready": false, "restartCount": 0,
            "state": { "terminated": { "exitCode": exit_code, "message": message } },
        }],
    })
}

#[test]
fn segment_phases_follow_the_pods() {
    let lt = loadtest("scenario-gateway");
    let now = now();
    let status = |p: &Pod| status::loadtest::segment_status(&lt, 1, &[p], None, &now);
    let none = status::loadtest::segment_status(&lt, 1, &[], None, &now);
    assert_eq!(
        (none.phase, none.segment.as_str(), none.job.as_str()),
        (LoadTestPhase::Pending, "1/3:2/3", "fed-query-1")
    );
    // A synchronized segment's k6 waits paused until the operator starts every segment.
    let running = pod(1, serde_json::json!({ "phase": "Running" }));
    let paused = status(&running);
    assert_eq!(paused.phase, LoadTestPhase::Pending);
    assert!(
        paused
            .message
            .as_deref()
            .is_some_and(|m| m.contains("waits paused until every segment's k6 is ready")),
        "{paused:?}"
    );
    let mut unsynchronized = lt.clone();
    unsynchronized.spec.synchronized_start = Some(false);
    let running_now = status::loadtest::segment_status(&unsynchronized, 1, &[&running], None, &now);
    assert_eq!(running_now.phase, LoadTestPhase::Running);
    let done = pod(1, terminated(0, &read("k6-summaries", "segment-1.json")));
    let done = status(&done);
    assert_eq!(done.phase, LoadTestPhase::Succeeded);
    assert_eq!(done.results.expect("results").requests, 2970);
    let crashed = pod(1, terminated(107, "script error"));
    let crashed = status(&crashed);
    assert_eq!(crashed.phase, LoadTestPhase::Failed);
    assert!(
        crashed
            .message
            .as_deref()
            .is_some_and(|m| m.contains("107")),
        "{crashed:?}"
    );
    let silent = status(&pod(1, terminated(0, "")));
    assert_eq!(silent.phase, LoadTestPhase::Failed);
    assert!(
        silent
            .message
            .as_deref()
            .is_some_and(|m| m.contains("ended without a k6 summary")),
        "{silent:?}"
    );
}

#[test]
fn a_job_the_job_controller_failed_fails_its_segment() {
    let lt = loadtest("scenario-gateway");
    let job: k8s_openapi::api::batch::v1::Job = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "fed-query-0" },
        "status": { "conditions": [{
            "type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
            "message": "Job has reached the specified backoff limit",
        }]},
    }))
    .expect("valid Job");
    let status = status::loadtest::segment_status(&lt, 0, &[], Some(&job), &now());
    assert_eq!(status.phase, LoadTestPhase::Failed);
    let message = status.message.expect("a message");
    assert!(
        message.contains(
            "Job fed-query-0 failed (BackoffLimitExceeded: Job has reached the specified backoff limit)"
        ),
        "{message}"
    );
    // A summary already collected wins over the Job's later verdict.
    let done = pod(0, terminated(0, &read("k6-summaries", "segment-0.json")));
    let status = status::loadtest::segment_status(&lt, 0, &[&done], Some(&job), &now());
    assert_eq!(status.phase, LoadTestPhase::Succeeded);
}

#[test]
fn overall_phase_waits_for_every_segment() {
    let lt = loadtest("scenario-gateway");
    let seg = |phase| {
        let mut s = status::loadtest::segment_status(&lt, 0, &[], None, &now());
        s.phase = phase;
        s
    };
    use LoadTestPhase::*;
    assert_eq!(
        status::loadtest::overall_phase(&[seg(Pending), seg(Pending)]),
        Pending
    );
    assert_eq!(
        status::loadtest::overall_phase(&[seg(Succeeded), seg(Pending)]),
        Running
    );
    assert_eq!(
        status::loadtest::overall_phase(&[seg(Succeeded), seg(Succeeded)]),
        Succeeded
    );
    assert_eq!(
        status::loadtest::overall_phase(&[seg(Running), seg(Failed)]),
        Failed
    );
}

/// xorshift64*: reproducible samples without a dependency.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The old aggregate: each percentile the worst segment's (a bound, not the figure).
fn worst_segment(segments: &[k6_summary::Segment]) -> graphfleet_api::LoadTestResults {
    let results: Vec<_> = segments.iter().map(|s| s.results.clone()).collect();
    k6_summary::aggregate_bounds(&results).expect("segments to bound")
}

/// `(name, quantile, merged figure, worst segment's figure)` for p50, p90, p95 and p99.
fn merged_and_worst(
    merged: &graphfleet_api::LoadTestResults,
    segments: &[k6_summary::Segment],
) -> [(&'static str, f64, f64, f64); 4] {
    let (l, old) = (&merged.latency_ms, worst_segment(segments).latency_ms);
    [
        ("p50", 0.5, l.med, old.med),
        ("p90", 0.9, l.p90, old.p90),
        ("p95", 0.95, l.p95, old.p95),
        ("p99", 0.99, l.p99, old.p99),
    ]
}

/// The nearest-rank `q`-quantile of sorted samples.
fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Deliberately skewed segments: many fast requests, fewer slow ones, a few in between.
fn skewed_samples() -> Vec<Vec<f64>> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut draw = |n: usize, f: &dyn Fn(f64) -> f64| -> Vec<f64> {
        (0..n).map(|_| f(rng.uniform())).collect()
    };
    vec![
        draw(9000, &|u| 1.0 + 2.0 * u * u),
        draw(1500, &|u| 40.0 + 80.0 * u * u * u),
        draw(500, &|u| 5.0 + 10.0 * u),
    ]
}

/// The summary scenario.js writes for these samples: its trend (k6's own percentiles of the
/// segment) and its histogram, compact as in the termination message.
fn summary_json(samples: &[f64], with_histogram: bool) -> String {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let q = |q| nearest_rank(&sorted, q);
    let mut hist = Histogram::new();
    samples.iter().for_each(|v| hist.record(*v));
    let mut summary = serde_json::json!({
        "executor": "constant-arrival-rate", "target_rate": 300, "duration_s": 30,
        "run_duration_s": 30.2, "requests": samples.len(), "ok": samples.len(), "failures": 0,
        "dropped_iterations": 0, "achieved_rate": samples.len() as f64 / 30.0,
        "scheduled_latency_ms": {
            "min": sorted[0], "med": q(0.5), "p90": q(0.9), "p95": q(0.95), "p99": q(0.99),
            "max": sorted[sorted.len() - 1], "count": samples.len(),
        },
    });
    if with_histogram {
        summary["hist"] = serde_json::json!(hist.encode());
    }
    summary.to_string()
}

#[test]
fn skewed_segments_merge_to_the_pooled_percentiles() {
    let samples = skewed_samples();
    let segments: Vec<k6_summary::Segment> = samples
        .iter()
        .map(|s| {
            let json = summary_json(s, true);
            assert!(
                json.len() <= loadtest::TERMINATION_MESSAGE_LIMIT,
                "{} bytes do not fit a termination message",
                json.len()
            );
            k6_summary::parse_segment(&json).expect("summary parses")
        })
        .collect();
    let merged = k6_summary::aggregate(&segments).expect("three segments");
    assert_eq!(
        merged.latency_aggregation,
        Some(LatencyAggregation::Histogram)
    );
    let mut pooled: Vec<f64> = samples.concat();
    pooled.sort_by(f64::total_cmp);
    assert_eq!(merged.requests, pooled.len() as u64);
    let l = &merged.latency_ms;
    assert_eq!((l.min, l.max), (pooled[0], pooled[pooled.len() - 1]));
    for (name, q, got, worst) in merged_and_worst(&merged, &segments) {
        let exact = nearest_rank(&pooled, q);
        let error = (got - exact).abs() / exact;
        assert!(
            error <= RELATIVE_ERROR * (1.0 + 1e-9),
            "merged {name} {got} vs pooled {exact}: off by {:.3}%",
            error * 100.0
        );
        // The worst segment's figure (and the weighted median) miss the pooled one by far more
        // than the buckets' resolution: here they were wrong, not merely coarse.
        let old_error = (worst - exact).abs() / exact;
        assert!(
            old_error > 10.0 * RELATIVE_ERROR,
            "{name}: the worst-segment figure {worst} was close to {exact}"
        );
        println!("{name}: pooled {exact:.3} ms, merged {got:.3} ms, worst segment {worst:.3} ms");
    }
}

#[test]
fn status_merges_histograms_or_says_why_it_cannot() {
    let lt = loadtest("scenario-gateway");
    assert_eq!(lt.spec.parallelism, 3);
    let samples = skewed_samples();
    let pods = |histograms: [bool; 3]| -> Vec<Pod> {
        (0..3)
            .map(|i| {
                pod(
                    i as i32,
                    terminated(0, &summary_json(&samples[i], histograms[i])),
                )
            })
            .collect()
    };
    let previous = Default::default();
    let status = status::loadtest::loadtest_status(&lt, &pods([true; 3]), &[], &previous, &now());
    assert_eq!(status.phase, Some(LoadTestPhase::Succeeded));
    let results = status.results.expect("results");
    assert_eq!(
        results.latency_aggregation,
        Some(LatencyAggregation::Histogram)
    );
    assert_eq!(status.message, None);
    // Segments keep k6's own figures, which the whole test's are not.
    let slow = status.segments[1]
        .results
        .as_ref()
        .expect("segment results");
    assert!(results.latency_ms.p99 < slow.latency_ms.p99);
    assert_eq!(slow.latency_aggregation, None);

    let status =
        status::loadtest::loadtest_status(&lt, &pods([true, false, true]), &[], &previous, &now());
    let results = status.results.expect("results");
    assert_eq!(
        results.latency_aggregation,
        Some(LatencyAggregation::WorstSegment)
    );
    assert_eq!(results.latency_ms.p99, slow.latency_ms.p99);
    let message = status.message.expect("a message");
    assert!(
        message.contains("segment 1: its summary has no latency histogram"),
        "{message}"
    );
}

#[test]
fn a_histogram_left_out_of_the_summary_is_reported() {
    let samples = skewed_samples();
    let mut json: serde_json::Value =
        serde_json::from_str(&summary_json(&samples[0], false)).expect("JSON");
    json["hist_dropped"] = true.into();
    let dropped = k6_summary::parse_segment(&json.to_string()).expect("parses");
    assert!(dropped.histogram.is_none());
    let other = k6_summary::parse_segment(&summary_json(&samples[1], true)).expect("parses");
    // A histogram of fewer latencies than requests is not merged either.
    json["hist"] = serde_json::json!([0, 10]);
    let partial = k6_summary::parse_segment(&json.to_string()).expect("parses");
    assert!(partial.histogram.is_none());
    let merged = k6_summary::aggregate(&[other.clone(), dropped.clone(), partial.clone()])
        .expect("three segments");
    assert_eq!(
        merged.latency_aggregation,
        Some(LatencyAggregation::WorstSegment)
    );
    assert_eq!(
        k6_summary::segments_without_histogram(&[other, dropped, partial]),
        [
            (
                1,
                "its summary left the latency histogram out to fit the termination message"
            ),
            (2, "its latency histogram counts 10 of its 9000 requests"),
        ]
    );
}

#[test]
fn a_malformed_histogram_is_an_error() {
    let mut json: serde_json::Value =
        serde_json::from_str(&summary_json(&[1.0, 2.0], true)).expect("JSON");
    for bad in [
        serde_json::json!([3]),
        serde_json::json!([5, 1, 0, 1]),
        serde_json::json!([100000, 1]),
        serde_json::json!([1, -1]),
        serde_json::json!("1,2"),
    ] {
        json["hist"] = bad.clone();
        let err = k6_summary::parse_segment(&json.to_string()).expect_err("malformed");
        assert!(err.to_string().contains("k6 summary"), "{bad}: {err}");
    }
}

/// Two segments of one real k6 run (k6 1.8.1, scenario.js, 200 req/s for 1m0.5s split 3/4 and
/// 1/4 over a 1–3 ms and a 40–120 ms endpoint); `real-raw-scheduled.json` is every scheduled
/// latency of the run (`k6 --out json`, counted per value): the pooled truth.
#[test]
fn real_k6_segments_merge_to_the_pooled_percentiles() {
    let raw: std::collections::BTreeMap<String, Vec<(String, u64)>> =
        serde_json::from_str(&read("k6-summaries", "real-raw-scheduled.json")).expect("raw");
    let mut pooled = Vec::new();
    let mut segments = Vec::new();
    for name in ["fast", "slow"] {
        let segment = segment(&format!("real-{name}.json"));
        let mut values = Vec::new();
        for (value, count) in &raw[name] {
            let v: f64 = value.parse().expect("a number");
            values.extend(std::iter::repeat_n(v, *count as usize));
        }
        // k6's goja runtime put every value in the bucket Rust puts it in.
        let mut rust = Histogram::new();
        values.iter().for_each(|v| rust.record(*v));
        assert_eq!(segment.histogram.as_ref(), Some(&rust), "{name}");
        assert_eq!(segment.results.requests, values.len() as u64, "{name}");
        pooled.extend(values);
        segments.push(segment);
    }
    pooled.sort_by(f64::total_cmp);
    let merged = k6_summary::aggregate(&segments).expect("two segments");
    let old = worst_segment(&segments);
    let l = &merged.latency_ms;
    for (name, q, got, worst) in merged_and_worst(&merged, &segments) {
        let exact = nearest_rank(&pooled, q);
        assert!(
            (got - exact).abs() <= exact * RELATIVE_ERROR,
            "{name}: merged {got} vs pooled {exact}"
        );
        println!("{name}: pooled {exact} ms, merged {got:.2} ms, worst segment {worst:.2} ms");
    }
    assert_eq!(l.max, pooled[pooled.len() - 1]);
    // The old figures: a weighted median ~9x the real one, p90 25% high.
    assert!(old.latency_ms.med > 5.0 * l.med && old.latency_ms.p90 > 1.2 * l.p90);
}

#[test]
fn a_bad_duration_is_a_spec_condition_not_a_panic() {
    let mut lt = loadtest("scenario-gateway");
    for (duration, why) in [
        ("0s", "is zero"),
        ("1m30x", "expected a unit h, m, s or ms at \"x\""),
        ("1.5", "expected a unit"),
        ("99999999999999999999h", "too long"),
    ] {
        lt.spec.duration = duration.to_owned();
        let err = loadtest::jobs(&lt, DEFAULT_K6_IMAGE).expect_err(duration);
        let status = status::loadtest::rejected_status(&err, Some(3), &now());
        assert_eq!(status.phase, Some(LoadTestPhase::Failed));
        let [c] = status.conditions.as_slice() else {
            panic!("one condition: {:?}", status.conditions)
        };
        assert_eq!(
            (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
            ("SpecValid", "False", "InvalidDuration")
        );
        assert_eq!(c.observed_generation, Some(3));
        assert!(
            c.message.contains(why) && c.message.contains(duration),
            "{duration}: {}",
            c.message
        );
        // The status of a segment under such a spec is computed without a deadline, not a panic.
        let segment = status::loadtest::segment_status(&lt, 0, &[], None, &now());
        assert_eq!(segment.phase, LoadTestPhase::Pending);
    }
    lt.spec.duration = "1h2m3.5s".to_owned();
    let job = loadtest::job(&lt, 0, DEFAULT_K6_IMAGE).expect("a decimal duration builds");
    let deadline = job.spec.and_then(|s| s.active_deadline_seconds);
    assert_eq!(deadline, Some(3723 + 120 + 60), "duration + margin + grace");
}

fn condition<'a>(
    status: &'a graphfleet_api::LoadTestStatus,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

/// The issue's example thresholds on the skewed segments (whole-test p99 ≈ 105 ms).
#[test]
fn thresholds_become_the_passed_condition_of_a_finished_test() {
    let mut lt = loadtest("scenario-gateway");
    lt.spec.rate = 360;
    let thresholds = |p99: &str| {
        serde_json::from_value(serde_json::json!({
            "latency": { "p99": p99 }, "maxErrorPercent": 0.1, "minAchievedRatePercent": 99,
        }))
        .expect("valid thresholds")
    };
    lt.spec.thresholds = Some(thresholds("50ms"));
    let samples = skewed_samples();
    let done: Vec<Pod> = (0..3)
        .map(|i| pod(i as i32, terminated(0, &summary_json(&samples[i], true))))
        .collect();
    let previous = Default::default();
    let status = status::loadtest::loadtest_status(&lt, &done, &[], &previous, &now());
    assert_eq!(
        status.phase,
        Some(LoadTestPhase::Succeeded),
        "ran to the end"
    );
    let passed = condition(&status, "Passed").expect("a Passed condition");
    assert_eq!(
        (passed.status.as_str(), passed.reason.as_str()),
        ("False", "ThresholdsNotMet")
    );
    assert!(
        passed.message.starts_with("p99 104.85 ms >= 50ms; error rate 0.000% (0 of 11000) < 0.1%; achieved 366.7 req/s >= 99% of 360 req/s"),
        "{}",
        passed.message
    );

    lt.spec.thresholds = Some(thresholds("150ms"));
    let status = status::loadtest::loadtest_status(&lt, &done, &[], &previous, &now());
    let passed = condition(&status, "Passed").expect("a Passed condition");
    assert_eq!(
        (passed.status.as_str(), passed.reason.as_str()),
        ("True", "ThresholdsMet")
    );

    // Nothing to judge while running; a failed test has no results to meet them with.
    let running = pod(0, serde_json::json!({ "phase": "Running" }));
    let status = status::loadtest::loadtest_status(
        &lt,
        &[running, done[1].clone(), done[2].clone()],
        &[],
        &previous,
        &now(),
    );
    assert_eq!(status.phase, Some(LoadTestPhase::Running));
    assert_eq!(condition(&status, "Passed"), None);
    let crashed = pod(0, terminated(107, "script error"));
    let status = status::loadtest::loadtest_status(
        &lt,
        &[crashed, done[1].clone(), done[2].clone()],
        &[],
        &previous,
        &now(),
    );
    let passed = condition(&status, "Passed").expect("a Passed condition");
    assert_eq!(
        (passed.status.as_str(), passed.reason.as_str()),
        ("False", "NoResults")
    );
    // Without thresholds there is no verdict.
    lt.spec.thresholds = None;
    let status = status::loadtest::loadtest_status(&lt, &done, &[], &previous, &now());
    assert_eq!(condition(&status, "Passed"), None);
}

/// The example manifest's thresholds are the issue's, and read as LoadTest thresholds.
#[test]
fn the_example_manifest_sets_the_issues_thresholds() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../manifests/loadtest.yaml");
    let text = std::fs::read_to_string(path).expect("manifests/loadtest.yaml");
    let lt: LoadTest = serde_yaml_ng::from_str(&text).expect("a LoadTest");
    let t = lt.spec.template.thresholds.expect("thresholds");
    let latency = t.latency.expect("latency thresholds");
    assert_eq!(latency.p99.as_deref(), Some("50ms"));
    assert_eq!(t.max_error_percent, Some(0.1));
    assert_eq!(t.min_achieved_rate_percent, Some(99.0));
}

/// With `abortOnFail`, the LoadTest's bounds go to every segment as k6 thresholds; a segment
/// k6 stopped on one (exit code 99) aborts the test: the others' Jobs are stopped, the phase is
/// Aborted and `Passed` is False with reason AbortedOnThreshold, naming what broke.
#[test]
fn a_segment_breaking_an_abort_threshold_stops_the_test() {
    let mut lt = loadtest("scenario-gateway");
    lt.spec.thresholds = Some(
        serde_json::from_value(serde_json::json!({
            "latency": { "p99": "50ms" }, "maxErrorPercent": 0.1, "abortOnFail": true,
        }))
        .expect("valid thresholds"),
    );
    let job = loadtest::job(&lt, 1, DEFAULT_K6_IMAGE).expect("builds");
    let env = job
        .spec
        .as_ref()
        .expect("spec")
        .template
        .spec
        .as_ref()
        .expect("pod spec")
        .containers[0]
        .env
        .clone()
        .unwrap_or_default();
    let thresholds = env
        .iter()
        .find(|e| e.name == loadtest::THRESHOLDS_ENV)
        .and_then(|e| e.value.as_deref())
        .expect("GF_THRESHOLDS set");
    let thresholds: serde_json::Value = serde_json::from_str(thresholds).expect("JSON");
    assert_eq!(
        thresholds["gf_scheduled_latency"][0]["threshold"],
        "p(99)<50"
    );
    assert_eq!(thresholds["gf_error_rate"][0]["threshold"], "rate<0.001");
    assert!(SCENARIO_JS.contains("GF_THRESHOLDS"));

    // Segment 1's k6 broke p99 after 12 s and exited 99 with its partial summary.
    let mut partial: serde_json::Value =
        serde_json::from_str(&read("k6-summaries", "segment-1.json")).expect("JSON");
    partial["thresholds_failed"] = serde_json::json!(["gf_scheduled_latency p(99)<50"]);
    let pods = vec![
        pod(0, serde_json::json!({ "phase": "Running" })),
        pod(1, terminated(99, &partial.to_string())),
        pod(2, serde_json::json!({ "phase": "Running" })),
    ];
    let jobs: Vec<k8s_openapi::api::batch::v1::Job> = (0..3)
        .map(|i| loadtest::job(&lt, i, DEFAULT_K6_IMAGE).expect("builds"))
        .collect();
    let mut pods = pods;
    for (i, p) in pods.iter_mut().enumerate() {
        p.labels_mut().insert(
            "batch.kubernetes.io/job-name".to_owned(),
            format!("fed-query-{i}"),
        );
    }
    let status = status::loadtest::loadtest_status(&lt, &pods, &jobs, &Default::default(), &now());
    assert_eq!(status.phase, Some(LoadTestPhase::Aborted));
    assert!(status.completion_time.is_some());
    let phases: Vec<_> = status.segments.iter().map(|s| s.phase).collect();
    assert_eq!(phases, [LoadTestPhase::Aborted; 3]);
    assert_eq!(
        status.segments[0].message.as_deref(),
        Some("stopped because segment 1 broke a threshold")
    );
    assert_eq!(
        status.segments[1].results.as_ref().map(|r| r.requests),
        Some(2970),
        "the aborting segment keeps its partial figures"
    );
    let passed = condition(&status, "Passed").expect("a Passed condition");
    assert_eq!(
        (passed.status.as_str(), passed.reason.as_str()),
        ("False", "AbortedOnThreshold")
    );
    assert!(
        passed.message.starts_with(
            "segment 1 broke gf_scheduled_latency p(99)<50 on its share of the load and stopped the test"
        ),
        "{}",
        passed.message
    );
    assert_eq!(
        status::loadtest::jobs_to_stop(&status, &jobs, &pods),
        ["fed-query-0", "fed-query-2"],
        "the segments still running are stopped; the aborted one has ended"
    );

    // Without abortOnFail, exit code 99 stays a failed segment (a custom script's thresholds).
    lt.spec.thresholds.as_mut().expect("set").abort_on_fail = false;
    let status = status::loadtest::loadtest_status(&lt, &pods, &jobs, &Default::default(), &now());
    assert_eq!(status.phase, Some(LoadTestPhase::Failed));
}

fn running_k6(index: i32, ip: Option<&str>) -> Pod {
    pod(
        index,
        serde_json::json!({
            "phase": "Running",
            "podIP": ip,
            "containerStatuses": [{
                "name": "k6", "image": "k6", "imageID": "", "ready": true, "restartCount": 0,
                "state": { "running": { "startedAt": "2026-01-01T00:00:00Z" } },
            }],
        }),
    )
}

/// Synchronized start: the operator resumes the segments only once every segment's k6 runs;
/// the resumes recorded in status make them Running; each k6's own start time (from its
/// summary) gives the skew between segments.
#[test]
fn segments_start_together_once_every_k6_runs() {
    use status::loadtest::StartStep;
    let lt = loadtest("scenario-gateway");
    let previous = graphfleet_api::LoadTestStatus::default();
    let two = [
        running_k6(0, Some("10.0.0.1")),
        running_k6(1, Some("10.0.0.2")),
    ];
    assert!(matches!(
        status::loadtest::start_step(&lt, &two, &previous),
        StartStep::Wait(why) if why == "segment 2 has 0 pods"
    ));
    let mut three = two.to_vec();
    three.push(running_k6(2, None));
    assert!(matches!(
        status::loadtest::start_step(&lt, &three, &previous),
        StartStep::Wait(why) if why == "segment 2's k6 is not running yet"
    ));
    three[2] = running_k6(2, Some("10.0.0.3"));
    assert_eq!(
        status::loadtest::start_step(&lt, &three, &previous),
        StartStep::Start(vec![
            (0, "10.0.0.1".to_owned()),
            (1, "10.0.0.2".to_owned()),
            (2, "10.0.0.3".to_owned()),
        ])
    );
    let mut unsynchronized = lt.clone();
    unsynchronized.spec.synchronized_start = Some(false);
    assert_eq!(
        status::loadtest::start_step(&unsynchronized, &three, &previous),
        StartStep::Nothing
    );

    // Before the resume every segment waits (Pending); after it, they run.
    let waiting = status::loadtest::loadtest_status(&lt, &three, &[], &previous, &now());
    assert_eq!(waiting.phase, Some(LoadTestPhase::Pending));
    assert_eq!(waiting.start_time, None, "the test has not started");
    let mut resumed = previous.clone();
    resumed.segments = (0..3)
        .map(|i| graphfleet_api::SegmentStatus {
            index: i,
            resumed_at: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
                k8s_openapi::jiff::Timestamp::now(),
            )),
            ..Default::default()
        })
        .collect();
    assert_eq!(
        status::loadtest::start_step(&lt, &three, &resumed),
        StartStep::Nothing,
        "started once"
    );
    let running = status::loadtest::loadtest_status(&lt, &three, &[], &resumed, &now());
    assert_eq!(running.phase, Some(LoadTestPhase::Running));
    assert!(running.segments.iter().all(|s| s.resumed_at.is_some()));

    // Each k6 reports when it started its scenario; the skew is max - min.
    let started = |i: i32, at_ms: f64| {
        let mut summary: serde_json::Value =
            serde_json::from_str(&read("k6-summaries", "segment-1.json")).expect("JSON");
        summary["started_at_ms"] = at_ms.into();
        pod(i, terminated(0, &summary.to_string()))
    };
    let done = [
        started(0, 1_795_540_000_000.0),
        started(1, 1_795_540_000_003.0),
        started(2, 1_795_540_000_001.0),
    ];
    let status = status::loadtest::loadtest_status(&lt, &done, &[], &running, &now());
    assert_eq!(status.phase, Some(LoadTestPhase::Succeeded));
    assert_eq!(status.start_skew_ms, Some(3.0));
    assert_eq!(
        status.segments[1]
            .started_at
            .as_ref()
            .map(|t| t.0.as_millisecond()),
        Some(1_795_540_000_003)
    );
}

/// A segment whose latencies span hundreds of buckets: its histogram does not fit the 4 KiB
/// termination message (scenario.js leaves it out there) but the marked log line carries it,
/// so the operator, reading the log, merges the exact histograms; the report ConfigMap has
/// the tables and the merged histogram.
#[test]
fn summaries_from_the_pod_log_keep_the_histogram_a_termination_message_cannot() {
    use graphfleet_api::SummarySource;
    use graphfleet_operator::report;
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    // Log-uniform from 0.011 ms to 66 s: about 790 non-empty buckets per segment.
    let samples: Vec<Vec<f64>> = (0..2)
        .map(|_| {
            (0..100_000)
                .map(|_| 0.011 * (6e6f64).powf(rng.uniform()))
                .collect()
        })
        .collect();
    let full: Vec<String> = samples.iter().map(|s| summary_json(s, true)).collect();
    assert!(
        full.iter().all(|f| f.len() > 4096),
        "too big for a termination message"
    );
    let cut: Vec<String> = samples
        .iter()
        .map(|s| {
            let mut v: serde_json::Value =
                serde_json::from_str(&summary_json(s, false)).expect("JSON");
            v["hist_dropped"] = true.into();
            v.to_string()
        })
        .collect();
    assert!(cut.iter().all(|c| c.len() <= 4096));
    let log = |i: usize| {
        format!(
            "k6: 100000 requests, 0 failures\n{}{}\ntime=\"...\" level=info msg=\"done\"\n",
            k6_summary::LOG_MARKER,
            full[i]
        )
    };
    assert_eq!(
        k6_summary::summary_from_log(&log(1)),
        Some(full[1].as_str())
    );
    assert_eq!(k6_summary::summary_from_log("k6: 1 requests\n"), None);
    assert!(SCENARIO_JS.contains(&format!("\"{}\"", k6_summary::LOG_MARKER)));

    let mut lt = loadtest("scenario-gateway");
    lt.spec.parallelism = 2;
    lt.spec.synchronized_start = Some(false);
    let pods: Vec<Pod> = (0..2)
        .map(|i| pod(i as i32, terminated(0, &cut[i])))
        .collect();
    let previous = Default::default();
    let none = status::loadtest::LoggedSummaries::new();
    let from_messages = status::loadtest::observe(&lt, &pods, &[], &previous, &none, &now());
    let results = from_messages.status.results.expect("results");
    assert_eq!(
        results.latency_aggregation,
        Some(LatencyAggregation::WorstSegment)
    );
    assert_eq!(
        from_messages.status.segments[0].summary_source,
        Some(SummarySource::TerminationMessage)
    );

    let logged: status::loadtest::LoggedSummaries = (0..2)
        .map(|i| {
            let line = log(i);
            let text = k6_summary::summary_from_log(&line).expect("marked line");
            (format!("p{i}"), text.to_owned())
        })
        .collect();
    let observed = status::loadtest::observe(&lt, &pods, &[], &previous, &logged, &now());
    let results = observed.status.results.clone().expect("results");
    assert_eq!(
        results.latency_aggregation,
        Some(LatencyAggregation::Histogram)
    );
    assert!(
        observed
            .status
            .segments
            .iter()
            .all(|s| s.summary_source == Some(SummarySource::PodLog))
    );
    // The merged p99 is the pooled samples' within the buckets' resolution.
    let mut pooled: Vec<f64> = samples.concat();
    pooled.sort_by(f64::total_cmp);
    let want = nearest_rank(&pooled, 0.99);
    assert!(
        (results.latency_ms.p99 - want).abs() <= want * RELATIVE_ERROR * 1.0001,
        "p99 {} vs pooled {want}",
        results.latency_ms.p99
    );

    let cm = report::config_map(&lt, &observed.status, &observed.summaries);
    assert_eq!(cm.metadata.name.as_deref(), Some("fed-query-report"));
    let data = cm.data.expect("data");
    let md = &data[report::REPORT_KEY];
    // The tables pad their cells to align columns; compare without the padding.
    let flat = md
        .split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    for part in [
        "# LoadTest ",
        "## Whole test",
        "| 200000 | 0 | 0 |",
        "## Latency distribution",
        "All 200000 requests' latency",
        "## Segments",
        "| 0 | `0:1/2` | Succeeded | 100000 |",
        "| pod log |",
    ] {
        assert!(flat.contains(part), "{part:?} missing from\n{md}");
    }
    let svg = &data[report::CHART_KEY];
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    // The series is the one polyline drawn 2 wide (axes and ticks are 1 wide).
    let lines: Vec<&str> = svg
        .split("<polyline ")
        .skip(1)
        .filter_map(|l| l.split("/>").next())
        .filter(|l| l.contains("stroke-width=\"2\""))
        .filter_map(|l| l.split("points=\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(lines.len(), 1, "one line for the one target: {svg}");
    assert_eq!(
        lines[0].split_whitespace().count(),
        81,
        "one point per 1/20 of a nine"
    );
    for text in [
        "\npercentile (all 200000 requests, merged histogram)\n",
        "\nlatency, ms\n",
        "\n99.99%\n",
    ] {
        assert!(svg.contains(text), "{text:?} missing from {svg}");
    }
    assert!(md.contains("![latency by percentile](latency.svg)"));
    let hist: serde_json::Value = serde_json::from_str(&data[report::HISTOGRAM_KEY]).expect("JSON");
    assert_eq!(hist["total"], 200000);
    let merged = Histogram::decode(
        &serde_json::from_value::<Vec<u64>>(hist["encoded"].clone()).expect("pairs"),
    )
    .expect("decodes");
    assert_eq!(merged.total(), 200000);
}
