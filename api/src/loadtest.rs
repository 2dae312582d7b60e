use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, ResourceRequirements, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, MicroTime, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ConfigMapKeyRef;

/// An open-model (constant arrival rate) load test: one k6 (or
/// Gatling) Job per execution segment, results collected from the pods' logs.
// Each `printcolumn(...)` repeats `type_ = ...`, which clippy mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "graphfleet.dev",
    version = "v1alpha1",
    kind = "LoadTest",
    namespaced,
    status = "LoadTestStatus",
    shortname = "lt",
    category = "graphfleet",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Rate", type_ = "integer", json_path = ".spec.rate"),
    printcolumn(name = "Duration", type_ = "string", json_path = ".spec.duration"),
    printcolumn(
        name = "Passed",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Passed\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[x_kube(validation = Rule::new("has(self.target) != has(self.targets)")
    .message("set exactly one of target or targets"))]
#[serde(rename_all = "camelCase")]
pub struct LoadTestSpec {
    /// What receives the load (or `targets`: several, in turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<LoadTestTarget>,
    /// Several targets loaded one after another, never at once (so they do not share the
    /// client nodes), each with the same scenario, rate, duration, segments and thresholds:
    /// a side-by-side comparison. The next target starts once every k6 pod of the previous
    /// one has ended, whatever its outcome. Status keeps each target's results
    /// (`status.targets`) and the report a comparison table. Instead of `target`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 10))]
    #[x_kube(validation = Rule::new("self.all(t, self.exists_one(u, u.name == t.name))")
        .message("target names must be unique"))]
    pub targets: Option<Vec<NamedTarget>>,
    /// How the load is made and judged: the fields a GraphGateway's canary `loadTest`
    /// template has too.
    #[serde(flatten)]
    pub template: LoadTestTemplate,
}

/// A LoadTest without its target: the scenario or script, the open-model rate, duration and
/// segments, where the load-generator pods run and what a passing test must show. A
/// LoadTest's spec is one of these plus `target` (or `targets`); a GraphGateway's
/// `spec.rollout.canary.loadTest` is one, run against the canary pods at each step.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[x_kube(validation = Rule::new("has(self.scenario) != has(self.script)")
    .message("set exactly one of scenario or script"))]
#[x_kube(validation = Rule::new("!has(self.executor) || self.executor != 'gatling' || has(self.scenario)")
    .message("executor gatling runs the built-in scenarios only; script is a k6 script"))]
#[x_kube(validation = Rule::new("!has(self.executor) || self.executor != 'gatling' || !has(self.synchronizedStart) || !self.synchronizedStart")
    .message("synchronizedStart is k6-only; leave it out (or false) with executor gatling"))]
#[x_kube(validation = Rule::new("!has(self.executor) || self.executor != 'gatling' || !has(self.thresholds) || !has(self.thresholds.abortOnFail) || !self.thresholds.abortOnFail")
    .message("thresholds.abortOnFail is k6-only; Gatling segments run to the end and are judged on the merged results"))]
#[x_kube(validation = Rule::new("!has(self.executor) || self.executor != 'gatling' || !has(self.expect)")
    .message("expect is k6-only; Gatling checks status 200, an object data and no errors"))]
#[serde(rename_all = "camelCase")]
pub struct LoadTestTemplate {
    /// A built-in benchmark scenario, one of graphfleet-bench's: `big-response`, `chain`,
    /// `deduplication`, `large-delayed`, `long-lived-big-response`, `many-plans`,
    /// `many-plans-no-cache` (each request a new document: no plan-cache hits), `query`,
    /// `small`, `small-delayed`, `subscriptions` (k6 only: `rate` graphql-transport-ws
    /// subscribers hold `subscription { reviewAdded { … } }` for `duration`; results count
    /// events, latency from the subgraph's emission) (`graphfleet_bench_model::scenarios`; the
    /// target must serve the scenario's set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub scenario: Option<String>,
    /// A k6 script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<LoadTestScript>,
    /// Arrival rate, requests per second (open model).
    #[schemars(range(min = 1))]
    pub rate: i32,
    /// Test duration: `<number><unit>` parts, units `h`, `m`, `s`, `ms`, e.g. `250ms`, `30s`,
    /// `1m30s`, `1h2m3.5s` (also a Go duration, as k6 reads it). Above zero.
    #[x_kube(validation = Rule::new(duration_rule())
        .message("duration must look like 250ms, 30s, 1m30s or 1h2m3.5s"))]
    #[x_kube(validation = Rule::new(nonzero_duration_rule()).message("duration must be above 0"))]
    // A bound keeps the CEL rules' estimated cost low.
    #[schemars(length(min = 1, max = 64))]
    pub duration: String,
    /// Pre-allocated virtual users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub vus: Option<i32>,
    /// Upper bound of virtual users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_vus: Option<i32>,
    /// Load-generator pods sharing the rate.
    #[serde(default = "default_parallelism")]
    #[schemars(range(min = 1, max = 100))]
    pub parallelism: i32,
    /// Resources of each load-generator (k6 or Gatling) container; default: 500m CPU
    /// requested, 1 CPU limit, 256Mi requested, 1Gi limit (Gatling's JVM heap: 75% of the
    /// limit), so two segments fit a 2-CPU node beside its other pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Where load-generator pods run: node selector, tolerations, affinity; none by default
    /// (the benchmark's manifests set the client pool, `graphfleet.dev/pool: client`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// Image pull secrets, service account, pod labels and annotations, priority class,
    /// topology spread constraints of the load-generator pods.
    #[serde(flatten)]
    pub pod: super::PodOptions,
    /// Start every segment at once (default true): each k6 starts paused (`k6 run --paused`,
    /// its REST API on port 6565); once every segment's k6 has initialized, the operator runs
    /// the script's `setup()` once (in segment 0, through the REST API), hands its data to
    /// the other segments and resumes them all together. `teardown()` runs once, in segment 0
    /// at the end of its share. False: each segment starts when its pod does and runs its own
    /// `setup()` and `teardown()`. The operator must reach the pods' IPs on port 6565.
    /// k6 only: with `executor: gatling` it must be left out (or false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synchronized_start: Option<bool>,
    /// Pass/fail criteria, evaluated on the whole test's merged results once every segment
    /// finished; the outcome is the `Passed` condition (the phase says whether the test ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<LoadTestThresholds>,
    /// The load generator of every segment: `k6` (default) or `gatling`, graphfleet's Gatling
    /// simulation of the built-in scenarios (open model: one user per arrival, started at its
    /// scheduled time, latency from that time). Both print the same summary, so results,
    /// thresholds and the report are the same. Gatling runs only `scenario` (no `script`);
    /// it has no synchronized start (its segments start when their pods do), no
    /// `thresholds.abortOnFail` (Gatling judges assertions at the end, it cannot stop early)
    /// and no `many-plans-no-cache` (it sends the scenario's document as it is);
    /// `vus` and `maxVus` do not apply to it. Its checks are stricter than k6's here: status
    /// 200, no GraphQL `errors` and a non-null `data` (k6: status 200).
    #[serde(default, skip_serializing_if = "LoadTestExecutor::is_k6")]
    pub executor: LoadTestExecutor,
    /// The answer every request must get (k6 only), e.g. a monolith's or a reference
    /// gateway's: a request passes when its body has this SHA-256, or, with `configMapRef`,
    /// when its `data` equals that answer's (bodies up to 1 MiB; a gateway may format numbers
    /// differently). Without it a request passes with status 200, an object `data` and no
    /// `errors`. A target of `targets` may set its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<ExpectedResponse>,
}

/// The answer a request must get (`expect`). With `many-plans-no-cache` each request's
/// document carries a token; the answer is the one to the token of all zeros
/// (`gfnc000000000000000`), which k6 puts back before comparing.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpectedResponse {
    /// SHA-256 of the whole response body, 64 lowercase hex digits.
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub sha256: String,
    /// The answer itself (a ConfigMap key the load generator mounts), for answers that carry
    /// the same data in other bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<ConfigMapKeyRef>,
}

/// The load generator of a LoadTest's segments.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LoadTestExecutor {
    /// k6 running bench/k6/scenario.js (or the spec's script).
    #[default]
    K6,
    /// Gatling running bench/gatling's simulation.
    Gatling,
}

impl LoadTestExecutor {
    pub fn is_k6(&self) -> bool {
        *self == Self::K6
    }
}

/// What a passing load test must show. Each bound is strict where it says "below".
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new("has(self.latency) || has(self.maxErrorPercent) || has(self.minAchievedRatePercent)")
    .message("thresholds need at least one of latency, maxErrorPercent or minAchievedRatePercent"))]
#[serde(rename_all = "camelCase")]
pub struct LoadTestThresholds {
    /// Latency percentiles (from the scheduled send time) that must stay below a duration,
    /// e.g. `p99: 50ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyThresholds>,
    /// Failed requests must stay below this percentage of all requests, e.g. `0.1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub max_error_percent: Option<f64>,
    /// The achieved arrival rate must reach at least this percentage of `rate`, e.g. `99`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub min_achieved_rate_percent: Option<f64>,
    /// Stop the whole test as soon as a segment breaks one of these bounds on its own share
    /// of the load (k6 thresholds with `abortOnFail`, judged by each segment every few
    /// seconds after a short delay): the remaining segments are stopped, the phase becomes
    /// `Aborted` and `Passed` is False with reason `AbortedOnThreshold`. A segment's figures
    /// are a sample of the whole test's, so an early verdict may differ from the merged one.
    /// With `targets`, only the target that broke a bound is stopped: the next targets
    /// still run (the comparison stays complete), and the test ends `Aborted`.
    /// k6 only: not with `executor: gatling`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abort_on_fail: bool,
}

/// Latency bounds, each a duration in the grammar of `duration` (e.g. `50ms`, `1.5s`).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new("has(self.p50) || has(self.p90) || has(self.p95) || has(self.p99) || has(self.max)")
    .message("latency thresholds need at least one of p50, p90, p95, p99 or max"))]
pub struct LatencyThresholds {
    /// The median must stay below this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new(duration_rule()).message("p50 must look like 50ms or 1.5s"))]
    #[schemars(length(max = 64))]
    pub p50: Option<String>,
    /// The 90th percentile must stay below this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new(duration_rule()).message("p90 must look like 50ms or 1.5s"))]
    #[schemars(length(max = 64))]
    pub p90: Option<String>,
    /// The 95th percentile must stay below this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new(duration_rule()).message("p95 must look like 50ms or 1.5s"))]
    #[schemars(length(max = 64))]
    pub p95: Option<String>,
    /// The 99th percentile must stay below this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new(duration_rule()).message("p99 must look like 50ms or 1.5s"))]
    #[schemars(length(max = 64))]
    pub p99: Option<String>,
    /// The slowest request must stay below this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new(duration_rule()).message("max must look like 50ms or 1.5s"))]
    #[schemars(length(max = 64))]
    pub max: Option<String>,
}

/// The CEL rule admitting `graphfleet_bench_model::duration`'s grammar.
pub fn duration_rule() -> String {
    format!(
        "self.matches('{}')",
        graphfleet_bench_model::duration::PATTERN
    )
}

/// The CEL rule refusing a zero duration (`0s`, `0.0m0s`).
pub fn nonzero_duration_rule() -> String {
    format!(
        "!self.matches('{}')",
        graphfleet_bench_model::duration::ZERO_PATTERN
    )
}

fn default_parallelism() -> i32 {
    1
}

/// Exactly one of a GraphGateway reference or a URL.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[x_kube(validation = Rule::new("has(self.gatewayRef) != has(self.url)")
    .message("target needs exactly one of gatewayRef or url"))]
#[serde(rename_all = "camelCase")]
pub struct LoadTestTarget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_ref: Option<GatewayRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self.matches('^https?://[^/?#\\\\s]+')")
        .message("url must be an absolute http:// or https:// URL"))]
    pub url: Option<String>,
}

/// One of several targets: a name and exactly one of a GraphGateway reference or a URL.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[x_kube(validation = Rule::new("has(self.gatewayRef) != has(self.url)")
    .message("each of targets needs exactly one of gatewayRef or url"))]
#[serde(rename_all = "camelCase")]
pub struct NamedTarget {
    /// Names the target in status and the report, and its Jobs (`<loadtest>-<name>-<i>`).
    #[schemars(
        length(min = 1, max = 20),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_ref: Option<GatewayRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self.matches('^https?://[^/?#\\\\s]+')")
        .message("url must be an absolute http:// or https:// URL"))]
    // A bound keeps the CEL rule's estimated cost, times the list's items, within budget.
    #[schemars(length(max = 2048))]
    pub url: Option<String>,
    /// This target's expected answer, instead of the template's `expect` (each gateway may
    /// format the same data in its own bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<ExpectedResponse>,
}

impl NamedTarget {
    /// The target without its name.
    pub fn target(&self) -> LoadTestTarget {
        LoadTestTarget {
            gateway_ref: self.gateway_ref.clone(),
            url: self.url.clone(),
        }
    }
}

/// A GraphGateway, by default in the LoadTest's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayRef {
    #[schemars(length(min = 1))]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A k6 script, inline or from a ConfigMap.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[x_kube(validation = Rule::new("has(self.inline) != has(self.configMapRef)")
    .message("script needs exactly one of inline or configMapRef"))]
#[serde(rename_all = "camelCase")]
pub struct LoadTestScript {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<ConfigMapKeyRef>,
}

/// Scheduling of load-generator pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
}

/// Lifecycle of a LoadTest.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum LoadTestPhase {
    #[default]
    Pending,
    Running,
    Succeeded,
    Failed,
    /// Stopped early: a segment broke a threshold while `thresholds.abortOnFail` was set.
    Aborted,
}

impl LoadTestPhase {
    /// Whether the test has ended (it is never rerun).
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Aborted)
    }
}

/// Observed state of a LoadTest.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadTestStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<LoadTestPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Aggregate over every segment, once all have finished with a summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<LoadTestResults>,
    /// One entry per k6 execution segment (Job).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<SegmentStatus>,
    /// The ConfigMap holding the full report (`REPORT.md`: the tables the local runner
    /// prints; `latency.svg`: latency by percentile; `histogram.json`: the merged latency
    /// histogram), once the test finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_config_map: Option<String>,
    /// Milliseconds between the first and the last segment's start (each k6's own
    /// `startedAt`), once every segment reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_skew_ms: Option<f64>,
    /// CPU the GraphGateway of `spec.target`'s pods used while it was loaded, from the pods' own
    /// `graphfleet_process_cpu_seconds_total` before the load and after it (a `url` target, or a test
    /// the operator did not watch from its start, has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_cpu: Option<GatewayCpu>,
    /// With `spec.targets`: each target's run, in the order they run (`results`, `segments`
    /// and `startSkewMs` above are then unset: they are per target).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// Progress and outcome of one of `spec.targets`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetStatus {
    pub name: String,
    /// The GraphQL endpoint loaded.
    pub url: String,
    pub phase: LoadTestPhase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Aggregate over this target's segments (merged latency histogram).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<LoadTestResults>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<SegmentStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_skew_ms: Option<f64>,
    /// Whether this target met `spec.thresholds` (once it finished); the test passes only if
    /// every target does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
    /// The verdict's reason and message, as the `Passed` condition words them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed_message: Option<String>,
    /// CPU the target GraphGateway's pods used while it was loaded, from the pods' own
    /// `graphfleet_process_cpu_seconds_total` before the load and after it (a `url` target, or a test
    /// the operator did not watch from its start, has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_cpu: Option<GatewayCpu>,
}

/// What a GraphGateway's pods spent on a load test: the efficiency figure.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayCpu {
    /// Gateway pods measured (those that answered both times, and any that started during
    /// the load, counted from their start).
    pub pods: u32,
    /// CPU seconds (core-seconds) they used between the two readings.
    pub core_seconds: f64,
    /// The target's requests per CPU second used (`requests / coreSeconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_core_second: Option<f64>,
    /// Pods read before the load that could not be read after it (gone in a rollout, or not
    /// answering): their CPU is missing, so the figure is an upper bound.
    #[serde(default)]
    pub pods_lost: u32,
}

/// Progress and outcome of one k6 execution segment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SegmentStatus {
    /// Segment index, 0-based.
    pub index: i32,
    /// The k6 `--execution-segment` of this Job, e.g. `1/4:2/4`.
    pub segment: String,
    /// Name of the Job running it.
    pub job: String,
    pub phase: LoadTestPhase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<LoadTestResults>,
    /// When the operator's resume of this segment's paused k6 returned (synchronized start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_at: Option<MicroTime>,
    /// When this segment's k6 started its scenario, by the pod's clock (from its summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<MicroTime>,
    /// Where the operator read this segment's k6 summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_source: Option<SummarySource>,
}

/// Where a segment's k6 summary came from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum SummarySource {
    /// The marked line of the pod's log: the whole summary, histogram included.
    PodLog,
    /// The pod's termination message (the log was unavailable): at most 4 KiB, so a large
    /// histogram is left out.
    TerminationMessage,
}

impl LoadTestTemplate {
    /// Whether segments start together (`synchronizedStart`, default true; k6 only).
    pub fn synchronized(&self) -> bool {
        self.executor.is_k6() && self.synchronized_start.unwrap_or(true)
    }
}

/// A LoadTest's spec reads as its template (`spec.rate`, `spec.thresholds`): the target is
/// the only field it adds.
impl std::ops::Deref for LoadTestSpec {
    type Target = LoadTestTemplate;

    fn deref(&self) -> &LoadTestTemplate {
        &self.template
    }
}

impl std::ops::DerefMut for LoadTestSpec {
    fn deref_mut(&mut self) -> &mut LoadTestTemplate {
        &mut self.template
    }
}

/// Measured outcome; latency is from the scheduled send time (no coordinated omission).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadTestResults {
    pub requests: u64,
    pub failures: u64,
    /// Arrivals k6 could not start because every VU was busy (Gatling: arrivals not sent or
    /// not answered before its stop): the target rate was not met.
    #[serde(default)]
    pub dropped_iterations: u64,
    /// Achieved arrival rate, requests per second.
    pub achieved_rate: f64,
    pub latency_ms: LatencySummary,
    /// How the whole test's percentiles were combined from its segments' (set on the
    /// LoadTest's results, not on a segment's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_aggregation: Option<LatencyAggregation>,
}

/// How `latencyMs` of several segments became the whole test's.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum LatencyAggregation {
    /// One segment: k6's own figures.
    Exact,
    /// The segments' latency histograms merged bucket by bucket: the whole test's
    /// percentiles within 1%; min and max exact.
    Histogram,
    /// A segment had no histogram (a custom script, or a summary too big for the termination
    /// message): p90/p95/p99/max are the worst segment's (upper bounds of the whole test's)
    /// and the median is the request-weighted mean of the segments' medians.
    WorstSegment,
}

/// Latency percentiles in milliseconds.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct LatencySummary {
    pub min: f64,
    pub med: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}
