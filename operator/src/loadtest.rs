//! Pure side of the LoadTest controller: a LoadTest → its k6 ConfigMap and one Job per k6
//! execution segment; pods' termination messages → per-segment and aggregate results.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{
    Job, JobCondition, JobSpec, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, EmptyDirVolumeSource, EnvVar, KeyToPath, Pod,
    PodSpec, PodTemplateSpec, ResourceRequirements, Toleration, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use kube::{Resource, ResourceExt};
use serde::Deserialize;

use crate::build::{container_security_context, pod_security_context, short_hash};
use crate::crd::{
    LatencySummary, LoadTest, LoadTestPhase, LoadTestResults, LoadTestStatus, POOL_LABEL,
    SegmentStatus,
};
use crate::diagnose;

/// Default load-generator image (k6 plus graphfleet's scripts).
pub const DEFAULT_K6_IMAGE: &str = "ghcr.io/graphfleet/graphfleet-k6:0.1.0";
/// Pool the k6 pods land on unless the placement says otherwise.
pub const CLIENT_POOL: &str = "client";
/// Label on every Job and pod of a LoadTest: the LoadTest's name.
pub const LOADTEST_LABEL: &str = "graphfleet.dev/loadtest";
/// Label on every Job and pod of a LoadTest: the segment index.
pub const SEGMENT_LABEL: &str = "graphfleet.dev/segment";
/// Where handleSummary writes: the kubelet turns it into the termination message.
pub const TERMINATION_LOG: &str = "/dev/termination-log";
const SCRIPT_KEY: &str = "script.js";
const PAYLOAD_KEY: &str = "payload.json";
const MOUNT_DIR: &str = "/etc/graphfleet/loadtest";
const CONTAINER: &str = "k6";
const MANAGER: &str = "graphfleet-operator";

/// The generic open-model script every built-in scenario runs.
const SCENARIO_JS: &str = include_str!("../../loadtest/k6/scenario.js");

/// Built-in scenarios: name → query (from `loadtest/sets/<set>/queries/<name>.graphql`).
const SCENARIOS: &[(&str, &str)] = &[
    (
        "query",
        include_str!("../../loadtest/sets/fed/queries/query.graphql"),
    ),
    (
        "deduplication",
        include_str!("../../loadtest/sets/fed/queries/deduplication.graphql"),
    ),
    (
        "big-response",
        include_str!("../../loadtest/sets/big-response/queries/big-response.graphql"),
    ),
    (
        "long-lived-big-response",
        include_str!("../../loadtest/sets/big-response/queries/long-lived-big-response.graphql"),
    ),
    (
        "many-plans",
        include_str!("../../loadtest/sets/many-plans/queries/many-plans.graphql"),
    ),
    (
        "small",
        include_str!("../../loadtest/sets/apollo/queries/small.graphql"),
    ),
    (
        "small-delayed",
        include_str!("../../loadtest/sets/apollo/queries/small-delayed.graphql"),
    ),
    (
        "large-delayed",
        include_str!("../../loadtest/sets/apollo/queries/large-delayed.graphql"),
    ),
    (
        "chain",
        include_str!("../../loadtest/sets/apollo/queries/chain.graphql"),
    ),
];

/// Why a LoadTest cannot be turned into Jobs (reported in status; retrying will not help).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    #[error("unknown scenario {0:?}; built-in scenarios: {1}")]
    UnknownScenario(String, String),
    #[error("target needs exactly one of gatewayRef or url")]
    NoTarget,
    #[error("set exactly one of scenario or script")]
    NoScript,
    #[error("duration {0:?} is not a Go duration of sensible length (e.g. 30s, 5m, 1h30m)")]
    Duration(String),
}

/// Names of the built-in scenarios.
pub fn scenario_names() -> Vec<&'static str> {
    SCENARIOS.iter().map(|(name, _)| *name).collect()
}

fn scenario_query(name: &str) -> Result<&'static str, SpecError> {
    SCENARIOS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, q)| *q)
        .ok_or_else(|| SpecError::UnknownScenario(name.to_owned(), scenario_names().join(", ")))
}

/// The GraphQL endpoint under load: the URL, or a GraphGateway's Service (port 80).
pub fn target_url(lt: &LoadTest) -> Result<String, SpecError> {
    let target = &lt.spec.target;
    match (&target.gateway_ref, &target.url) {
        (Some(gw), None) => {
            let ns = gw
                .namespace
                .clone()
                .or_else(|| lt.namespace())
                .unwrap_or_else(|| "default".to_owned());
            Ok(format!("http://{}.{ns}.svc:80/graphql", gw.name))
        }
        (None, Some(url)) => Ok(url.clone()),
        _ => Err(SpecError::NoTarget),
    }
}

/// Name of the ConfigMap holding the script and payload.
pub fn config_map_name(lt: &str) -> String {
    format!("{lt}-k6")
}

/// Name of the Job of segment `index`.
pub fn job_name(lt: &str, index: i32) -> String {
    format!("{lt}-{index}")
}

/// The k6 `--execution-segment` of segment `index` out of `n`, e.g. `1/4:2/4`.
pub fn execution_segment(index: i32, n: i32) -> String {
    let bound = |i: i32| match i {
        0 => "0".to_owned(),
        i if i == n => "1".to_owned(),
        i => format!("{i}/{n}"),
    };
    format!("{}:{}", bound(index), bound(index + 1))
}

/// The k6 `--execution-segment-sequence` splitting the load in `n` equal parts.
pub fn execution_segment_sequence(n: i32) -> String {
    let mut bounds = vec!["0".to_owned()];
    bounds.extend((1..n).map(|i| format!("{i}/{n}")));
    bounds.push("1".to_owned());
    bounds.join(",")
}

fn labels(lt: &LoadTest) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "app.kubernetes.io/name".to_owned(),
            "graphfleet-k6".to_owned(),
        ),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            MANAGER.to_owned(),
        ),
        (LOADTEST_LABEL.to_owned(), lt.name_any()),
    ])
}

fn owner(lt: &LoadTest) -> OwnerReference {
    lt.controller_owner_ref(&())
        .expect("a LoadTest read from the API server has a name and uid")
}

fn meta(lt: &LoadTest, name: String, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: lt.namespace(),
        labels: Some(labels),
        owner_references: Some(vec![owner(lt)]),
        ..ObjectMeta::default()
    }
}

/// The owned ConfigMap: the k6 script (built-in or inline) and, for a scenario, the POST body.
/// `None` when the script comes from the user's own ConfigMap.
pub fn config_map(lt: &LoadTest) -> Result<Option<ConfigMap>, SpecError> {
    let data = match (&lt.spec.scenario, &lt.spec.script) {
        (Some(scenario), None) => {
            let body = serde_json::json!({ "query": scenario_query(scenario)? });
            BTreeMap::from([
                (SCRIPT_KEY.to_owned(), SCENARIO_JS.to_owned()),
                (PAYLOAD_KEY.to_owned(), body.to_string()),
            ])
        }
        (None, Some(script)) => match &script.inline {
            Some(inline) => BTreeMap::from([(SCRIPT_KEY.to_owned(), inline.clone())]),
            None => return Ok(None),
        },
        _ => return Err(SpecError::NoScript),
    };
    Ok(Some(ConfigMap {
        metadata: meta(lt, config_map_name(&lt.name_any()), labels(lt)),
        data: Some(data),
        ..ConfigMap::default()
    }))
}

fn script_volume(lt: &LoadTest) -> Volume {
    let user_ref = lt
        .spec
        .script
        .as_ref()
        .and_then(|s| s.config_map_ref.as_ref());
    let source = match user_ref {
        Some(r) => ConfigMapVolumeSource {
            name: r.name.clone(),
            items: Some(vec![KeyToPath {
                key: r.key.clone(),
                path: SCRIPT_KEY.to_owned(),
                ..KeyToPath::default()
            }]),
            ..ConfigMapVolumeSource::default()
        },
        None => ConfigMapVolumeSource {
            name: config_map_name(&lt.name_any()),
            ..ConfigMapVolumeSource::default()
        },
    };
    Volume {
        name: "script".to_owned(),
        config_map: Some(source),
        ..Volume::default()
    }
}

fn env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.into()),
        ..EnvVar::default()
    }
}

fn k6_env(lt: &LoadTest, url: String) -> Vec<EnvVar> {
    let spec = &lt.spec;
    let mut vars = vec![
        env("GF_URL", url),
        env("GF_PAYLOAD", format!("{MOUNT_DIR}/{PAYLOAD_KEY}")),
        // The built-in scenarios have no monolith answer to compare with in-cluster.
        env("GF_CHECK", "none"),
        env("GF_EXECUTOR", "constant-arrival-rate"),
        env("GF_RATE", spec.rate.to_string()),
        env("GF_DURATION", spec.duration.clone()),
        env("GF_SUMMARY", TERMINATION_LOG),
    ];
    if let Some(vus) = spec.vus {
        vars.push(env("GF_VUS", vus.to_string()));
    }
    if let Some(max_vus) = spec.max_vus {
        vars.push(env("GF_MAX_VUS", max_vus.to_string()));
    }
    vars
}

fn client_pool_tolerations() -> Vec<Toleration> {
    vec![Toleration {
        key: Some(POOL_LABEL.to_owned()),
        operator: Some("Equal".to_owned()),
        value: Some(CLIENT_POOL.to_owned()),
        effect: Some("NoSchedule".to_owned()),
        ..Toleration::default()
    }]
}

fn resources() -> ResourceRequirements {
    let quantities = |cpu: &str, memory: &str| {
        BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu.to_owned())),
            ("memory".to_owned(), Quantity(memory.to_owned())),
        ])
    };
    ResourceRequirements {
        requests: Some(quantities("1", "256Mi")),
        limits: Some(quantities("1", "1Gi")),
        ..ResourceRequirements::default()
    }
}

fn container(lt: &LoadTest, index: i32, url: String, image: &str) -> Container {
    let n = lt.spec.parallelism;
    Container {
        name: CONTAINER.to_owned(),
        image: Some(image.to_owned()),
        args: Some(vec![
            "run".to_owned(),
            "--quiet".to_owned(),
            "--no-color".to_owned(),
            "--execution-segment".to_owned(),
            execution_segment(index, n),
            "--execution-segment-sequence".to_owned(),
            execution_segment_sequence(n),
            format!("{MOUNT_DIR}/{SCRIPT_KEY}"),
        ]),
        env: Some(k6_env(lt, url)),
        resources: Some(resources()),
        security_context: Some(container_security_context()),
        termination_message_path: Some(TERMINATION_LOG.to_owned()),
        // The summary when k6 wrote one; the last log lines when it failed without one.
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "script".to_owned(),
                mount_path: MOUNT_DIR.to_owned(),
                read_only: Some(true),
                ..VolumeMount::default()
            },
            VolumeMount {
                name: "tmp".to_owned(),
                mount_path: "/tmp".to_owned(),
                ..VolumeMount::default()
            },
        ]),
        ..Container::default()
    }
}

fn pod_spec(lt: &LoadTest, index: i32, url: String, image: &str) -> PodSpec {
    let placement = lt.spec.placement.clone().unwrap_or_default();
    let node_selector = placement
        .node_selector
        .unwrap_or_else(|| BTreeMap::from([(POOL_LABEL.to_owned(), CLIENT_POOL.to_owned())]));
    PodSpec {
        restart_policy: Some("Never".to_owned()),
        node_selector: Some(node_selector),
        tolerations: Some(
            placement
                .tolerations
                .unwrap_or_else(client_pool_tolerations),
        ),
        affinity: placement.affinity,
        security_context: Some(pod_security_context()),
        containers: vec![container(lt, index, url, image)],
        volumes: Some(vec![
            script_volume(lt),
            Volume {
                name: "tmp".to_owned(),
                empty_dir: Some(EmptyDirVolumeSource::default()),
                ..Volume::default()
            },
        ]),
        ..PodSpec::default()
    }
}

/// Any failure of the k6 pod fails the Job at once: a non-zero exit (killed, OOMKilled, k6
/// error) or a disruption (eviction, node drain, preemption). `backoffLimit: 0` says the same
/// for everything else; the rules make the Job's Failed condition name the pod and the cause.
fn pod_failure_policy() -> PodFailurePolicy {
    PodFailurePolicy {
        rules: vec![
            PodFailurePolicyRule {
                action: "FailJob".to_owned(),
                on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                    container_name: Some(CONTAINER.to_owned()),
                    operator: "NotIn".to_owned(),
                    values: vec![0],
                }),
                on_pod_conditions: None,
            },
            PodFailurePolicyRule {
                action: "FailJob".to_owned(),
                on_exit_codes: None,
                on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                    type_: "DisruptionTarget".to_owned(),
                    status: "True".to_owned(),
                }]),
            },
        ],
    }
}

/// The Job running segment `index` of `parallelism`. A failed segment is never retried: a
/// rerun would send its share of the load again, at a different time than the others. Its
/// deadline stops a k6 that outlives `time_limit` even when the operator is not running.
pub fn job(lt: &LoadTest, index: i32, image: &str) -> Result<Job, SpecError> {
    let url = target_url(lt)?;
    let deadline = time_limit(lt)? + JOB_DEADLINE_GRACE;
    let mut labels = labels(lt);
    labels.insert(SEGMENT_LABEL.to_owned(), index.to_string());
    let mut meta = meta(lt, job_name(&lt.name_any(), index), labels.clone());
    // The spec the Jobs were built from: Jobs are immutable, so a changed spec is visible here.
    let spec_json = serde_json::to_vec(&lt.spec).expect("LoadTestSpec always serializes");
    meta.annotations = Some(BTreeMap::from([(
        "graphfleet.dev/spec-hash".to_owned(),
        short_hash(&spec_json),
    )]));
    Ok(Job {
        metadata: meta,
        spec: Some(JobSpec {
            active_deadline_seconds: Some(deadline.as_secs() as i64),
            backoff_limit: Some(0),
            pod_failure_policy: Some(pod_failure_policy()),
            completions: Some(1),
            parallelism: Some(1),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod_spec(lt, index, url, image)),
            },
            ..JobSpec::default()
        }),
        status: None,
    })
}

/// Every Job of a LoadTest, one per segment.
pub fn jobs(lt: &LoadTest, image: &str) -> Result<Vec<Job>, SpecError> {
    (0..lt.spec.parallelism.max(1))
        .map(|i| job(lt, i, image))
        .collect()
}

/// The part of scenario.js's JSON summary the operator reads.
#[derive(Debug, Deserialize)]
pub struct K6Summary {
    pub requests: u64,
    #[serde(default)]
    pub failures: u64,
    #[serde(default)]
    pub dropped_iterations: u64,
    #[serde(default)]
    pub achieved_rate: Option<f64>,
    #[serde(default)]
    pub run_duration_s: Option<f64>,
    #[serde(default)]
    pub latency_ms: Option<Trend>,
    #[serde(default)]
    pub scheduled_latency_ms: Option<Trend>,
}

/// A k6 trend in milliseconds.
#[derive(Debug, Deserialize)]
pub struct Trend {
    pub min: f64,
    pub med: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

/// A termination message that is not a k6 summary.
#[derive(Debug, thiserror::Error)]
#[error("the k6 summary is not valid: {0}")]
pub struct SummaryError(#[from] serde_json::Error);

/// Parses one k6 summary. Latency counts from the scheduled send time when the script
/// recorded it (open model), else from the actual send.
pub fn parse_summary(message: &str) -> Result<LoadTestResults, SummaryError> {
    let s: K6Summary = serde_json::from_str(message)?;
    let trend = s.scheduled_latency_ms.or(s.latency_ms);
    let latency_ms = trend
        .map(|t| LatencySummary {
            min: t.min,
            med: t.med,
            p90: t.p90,
            p95: t.p95,
            p99: t.p99,
            max: t.max,
        })
        .unwrap_or_default();
    let achieved_rate = s.achieved_rate.unwrap_or_else(|| match s.run_duration_s {
        Some(d) if d > 0.0 => s.requests as f64 / d,
        _ => 0.0,
    });
    Ok(LoadTestResults {
        requests: s.requests,
        failures: s.failures,
        dropped_iterations: s.dropped_iterations,
        achieved_rate,
        latency_ms,
    })
}

/// Combines per-segment results. Counts and rates add up; percentiles cannot be merged
/// exactly without histograms, so p90/p95/p99/max are the worst segment's (an upper bound)
/// and the median is the request-weighted mean of the segments' medians.
pub fn aggregate(segments: &[LoadTestResults]) -> Option<LoadTestResults> {
    if segments.is_empty() {
        return None;
    }
    let requests: u64 = segments.iter().map(|s| s.requests).sum();
    let worst = |f: fn(&LatencySummary) -> f64| {
        segments
            .iter()
            .map(|s| f(&s.latency_ms))
            .fold(0.0, f64::max)
    };
    let weighted_med = if requests == 0 {
        0.0
    } else {
        segments
            .iter()
            .map(|s| s.latency_ms.med * s.requests as f64)
            .sum::<f64>()
            / requests as f64
    };
    Some(LoadTestResults {
        requests,
        failures: segments.iter().map(|s| s.failures).sum(),
        dropped_iterations: segments.iter().map(|s| s.dropped_iterations).sum(),
        achieved_rate: segments.iter().map(|s| s.achieved_rate).sum(),
        latency_ms: LatencySummary {
            min: segments
                .iter()
                .map(|s| s.latency_ms.min)
                .fold(f64::INFINITY, f64::min),
            med: weighted_med,
            p90: worst(|l| l.p90),
            p95: worst(|l| l.p95),
            p99: worst(|l| l.p99),
            max: worst(|l| l.max),
        },
    })
}

/// Time a LoadTest may take beyond its `duration`: pod start-up, k6's graceful stop and the
/// summary. Past `duration` plus this margin the segment fails instead of staying Running.
pub const STARTUP_AND_SUMMARY_MARGIN: Duration = Duration::from_secs(120);
/// The Job's own `activeDeadlineSeconds` comes this long after the operator's deadline, so the
/// operator reports the pod's state first; Kubernetes then stops the pod even without it.
pub const JOB_DEADLINE_GRACE: Duration = Duration::from_secs(60);
/// Annotation the operator writes on a segment Job once the Job's pod is scheduled: the pod.
/// It outlives the pod, so a deleted pod can still be named in status.
pub const POD_ANNOTATION: &str = "graphfleet.dev/pod";
/// Companion of [`POD_ANNOTATION`]: the node the pod was scheduled to.
pub const NODE_ANNOTATION: &str = "graphfleet.dev/node";

/// A Go duration as the CRD admits it (`30s`, `5m`, `1h30m`, `500ms`).
pub fn parse_duration(text: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let value: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, millis) = [("ms", 1), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)]
            .into_iter()
            .find(|(unit, _)| rest.starts_with(unit))?;
        rest = &rest[unit.len()..];
        total = total.checked_add(Duration::from_millis(value.checked_mul(millis)?))?;
    }
    Some(total)
}

/// `1m30s`-style rendering of whole seconds.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
}

/// How long a segment may run, from its Job's start: the LoadTest's duration plus
/// [`STARTUP_AND_SUMMARY_MARGIN`].
pub fn time_limit(lt: &LoadTest) -> Result<Duration, SpecError> {
    parse_duration(&lt.spec.duration)
        .and_then(|d| d.checked_add(STARTUP_AND_SUMMARY_MARGIN))
        .filter(|d| d.as_secs() < i64::MAX as u64 / 2)
        .ok_or_else(|| SpecError::Duration(lt.spec.duration.clone()))
}

fn finished_condition(job: &Job) -> Option<&JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| (c.type_ == "Failed" || c.type_ == "Complete") && c.status == "True")
}

/// Why the Job controller gave up on a Job (its pod failed, its deadline passed), if it did.
pub fn job_failure(job: &Job) -> Option<String> {
    let c = finished_condition(job).filter(|c| c.type_ == "Failed")?;
    let reason = c.reason.as_deref().unwrap_or("Failed");
    Some(match c.message.as_deref() {
        Some(m) => format!("{reason}: {}", diagnose::quote(m)),
        None => reason.to_owned(),
    })
}

/// Whether the Job has finished (Complete or Failed).
pub fn job_finished(job: &Job) -> bool {
    finished_condition(job).is_some()
}

/// When the Job started (its status), else when it was created.
fn job_start(job: &Job) -> Option<Timestamp> {
    job.status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .or(job.metadata.creation_timestamp.as_ref())
        .map(|t| t.0)
}

/// The annotations to record on a segment Job (`POD_ANNOTATION`, `NODE_ANNOTATION`) once its
/// pod is scheduled, or `None` when the Job already records that pod.
pub fn placement_to_record(job: &Job, pods: &[&Pod]) -> Option<BTreeMap<String, String>> {
    let [pod] = pods else { return None };
    let node = diagnose::node_of(pod)?;
    let annotations = job.annotations();
    let recorded = annotations.get(POD_ANNOTATION) == Some(&pod.name_any())
        && annotations.get(NODE_ANNOTATION).map(String::as_str) == Some(node);
    (!recorded).then(|| {
        BTreeMap::from([
            (POD_ANNOTATION.to_owned(), pod.name_any()),
            (NODE_ANNOTATION.to_owned(), node.to_owned()),
        ])
    })
}

/// What a k6 exit code means (k6's own codes), if it is one of k6's.
fn k6_exit_meaning(code: i32) -> Option<&'static str> {
    Some(match code {
        99 => "k6: thresholds failed",
        100 => "k6: setup() timed out",
        101 => "k6: teardown() timed out",
        103 => "k6: engine error",
        104 => "k6: invalid configuration",
        105 => "k6: aborted by a signal",
        107 => "k6: script exception",
        108 => "k6: script aborted",
        109 => "k6: Go panic",
        _ => return None,
    })
}

/// What a segment's pods and Job say, before the deadline is applied.
enum Seen {
    Waiting(Option<String>),
    Running,
    Done(LoadTestResults),
    Failed(String),
}

struct Names<'a> {
    ns: &'a str,
    job: &'a str,
}

impl Names<'_> {
    fn log(&self) -> String {
        format!("log: kubectl -n {} logs job/{}", self.ns, self.job)
    }

    /// `k6 pod P (job J) on node N`.
    fn pod(&self, pod: &Pod) -> String {
        match diagnose::node_of(pod) {
            Some(node) => format!(
                "k6 pod {} (job {}) on node {node}",
                pod.name_any(),
                self.job
            ),
            None => format!(
                "k6 pod {} (job {}, not scheduled to a node)",
                pod.name_any(),
                self.job
            ),
        }
    }

    /// The pod the Job recorded, for when the pod itself is gone.
    fn recorded(&self, job: &Job) -> String {
        let annotations = job.annotations();
        match (
            annotations.get(POD_ANNOTATION),
            annotations.get(NODE_ANNOTATION),
        ) {
            (Some(pod), Some(node)) => format!("k6 pod {pod} (job {}) on node {node}", self.job),
            (Some(pod), None) => format!("k6 pod {pod} (job {})", self.job),
            _ => format!("the k6 pod of job {}", self.job),
        }
    }
}

fn seen_in_pod(names: &Names<'_>, pod: &Pod) -> Seen {
    let at = names.pod(pod);
    let (deleted, log) = if pod.metadata.deletion_timestamp.is_some() {
        (
            " after its pod was deleted",
            "its log goes with the deleted pod".to_owned(),
        )
    } else {
        ("", names.log())
    };
    let container = diagnose::container_status(pod, CONTAINER);
    let state = container.and_then(|c| c.state.clone()).unwrap_or_default();
    if let Some(t) = &state.terminated {
        let message = t.message.clone().unwrap_or_default();
        let summary = parse_summary(&message);
        if t.exit_code == 0 {
            return match summary {
                Ok(results) => Seen::Done(results),
                Err(_) if message.trim().is_empty() => Seen::Failed(format!(
                    "{at} exited with code 0{deleted} and ended without a k6 summary; {log}"
                )),
                Err(e) => Seen::Failed(format!("{at}: {e}; {log}")),
            };
        }
        let mut what = diagnose::describe_exit(t);
        if let Some(meaning) = k6_exit_meaning(t.exit_code) {
            what = format!("{what} ({meaning})");
        }
        let rest = match summary {
            Ok(partial) => format!(
                "; its partial k6 summary ({} requests) is not used",
                partial.requests
            ),
            Err(_) => {
                let output = diagnose::termination_message(t)
                    .map(|m| format!("; last output: {m}"))
                    .unwrap_or_default();
                format!(" and ended without a k6 summary{output}")
            }
        };
        return Seen::Failed(format!("{at} {what}{deleted}{rest}; {log}"));
    }
    let pod_status = pod.status.as_ref();
    let phase = pod_status
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending");
    if phase == "Failed" {
        let reason = pod_status
            .and_then(|s| s.reason.as_deref())
            .unwrap_or("Failed");
        let message = pod_status
            .and_then(|s| s.message.as_deref())
            .map(|m| format!(": {}", diagnose::quote(m)))
            .unwrap_or_default();
        return Seen::Failed(format!(
            "{at} failed ({reason}{message}){deleted} and ended without a k6 summary; {log}"
        ));
    }
    if let Some(w) = &state.waiting {
        let reason = w.reason.as_deref().unwrap_or_default();
        let message = w.message.as_deref();
        if diagnose::IMAGE_REASONS.contains(&reason) {
            let image = diagnose::image_of(pod, CONTAINER).unwrap_or_default();
            return Seen::Failed(format!(
                "{at} cannot start: {}",
                diagnose::describe_image_problem(&image, reason, message)
            ));
        }
        if diagnose::START_REASONS.contains(&reason) {
            return Seen::Failed(format!(
                "{at} cannot start: container {CONTAINER}: {reason}: {}",
                diagnose::quote(message.unwrap_or_default())
            ));
        }
    }
    if phase == "Running" {
        return Seen::Running;
    }
    match diagnose::unschedulable(pod) {
        Some(why) => Seen::Waiting(Some(format!("{at} waits for a node: {why}"))),
        None => Seen::Waiting(None),
    }
}

fn seen(names: &Names<'_>, pods: &[&Pod], job: Option<&Job>) -> Seen {
    let seen = match pods {
        [] => match job {
            Some(job) if job_finished(job) => {
                let verdict = match job_failure(job) {
                    Some(failure) => format!("Job {} failed ({failure})", names.job),
                    None => format!("Job {} completed", names.job),
                };
                return Seen::Failed(format!(
                    "{} is gone (deleted before k6 reported its summary); {verdict}; the segment ended without a k6 summary and its log went with the pod",
                    names.recorded(job)
                ));
            }
            Some(job) if job.annotations().contains_key(POD_ANNOTATION) => Seen::Running,
            _ => Seen::Waiting(None),
        },
        [pod] => seen_in_pod(names, pod),
        more => {
            let mut names_of: Vec<String> = more.iter().map(|p| p.name_any()).collect();
            names_of.sort();
            return Seen::Failed(format!(
                "job {} started k6 {} times (pods {}); a segment is never rerun, it would double its share of the load; {}",
                names.job,
                more.len(),
                names_of.join(", "),
                names.log()
            ));
        }
    };
    match (seen, job.and_then(job_failure)) {
        (Seen::Waiting(_) | Seen::Running, Some(failure)) => {
            let at = match pods {
                [pod] => names.pod(pod),
                _ => job.map(|j| names.recorded(j)).unwrap_or_default(),
            };
            Seen::Failed(format!(
                "{at}: Job {} failed ({failure}) and the segment ended without a k6 summary; {}",
                names.job,
                names.log()
            ))
        }
        (seen, _) => seen,
    }
}

/// What the segment is doing right now, for the deadline message.
fn current_state(names: &Names<'_>, pods: &[&Pod], waiting: Option<&str>) -> String {
    match (pods, waiting) {
        (_, Some(why)) => why.to_owned(),
        ([pod], None) => {
            let phase = pod
                .status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .unwrap_or("Pending");
            format!("{} is still {phase}", names.pod(pod))
        }
        ([], None) => format!("job {} has no pod", names.job),
        (_, None) => format!("job {} has {} pods", names.job, pods.len()),
    }
}

/// State of one segment from its Job's pods (the kubelet's view, so results appear as soon as
/// the container has terminated) and its Job (the Job controller's verdict, and the pod it
/// recorded when the pod itself is gone). A segment that has not finished `time_limit` after
/// its Job started fails: a LoadTest never stays Running forever.
pub fn segment_status(
    lt: &LoadTest,
    index: i32,
    pods: &[&Pod],
    job: Option<&Job>,
    now: &Time,
) -> SegmentStatus {
    let ns = lt.namespace().unwrap_or_else(|| "default".to_owned());
    let job_name = job_name(&lt.name_any(), index);
    let names = Names {
        ns: &ns,
        job: &job_name,
    };
    let mut status = SegmentStatus {
        index,
        segment: execution_segment(index, lt.spec.parallelism),
        job: job_name.clone(),
        phase: LoadTestPhase::Pending,
        message: None,
        results: None,
    };
    let seen = seen(&names, pods, job);
    let waiting = match &seen {
        Seen::Waiting(why) => Some(why.clone()),
        Seen::Running => Some(None),
        _ => None,
    };
    let overdue = match (waiting.as_ref(), job.and_then(job_start), time_limit(lt)) {
        (Some(_), Some(start), Ok(limit)) => {
            let elapsed = now.0.duration_since(start);
            (elapsed.as_secs() >= limit.as_secs() as i64).then_some(limit)
        }
        _ => None,
    };
    if let Some(limit) = overdue {
        status.phase = LoadTestPhase::Failed;
        let why = waiting.flatten();
        status.message = Some(format!(
            "did not finish within {} (duration {} + {} for start-up and summary): {}; the segment ended without a k6 summary",
            format_duration(limit),
            lt.spec.duration,
            format_duration(STARTUP_AND_SUMMARY_MARGIN),
            current_state(&names, pods, why.as_deref())
        ));
        return status;
    }
    match seen {
        Seen::Waiting(why) => status.message = why,
        Seen::Running => status.phase = LoadTestPhase::Running,
        Seen::Done(results) => {
            status.phase = LoadTestPhase::Succeeded;
            status.results = Some(results);
        }
        Seen::Failed(message) => {
            status.phase = LoadTestPhase::Failed;
            status.message = Some(message);
        }
    }
    status
}

/// Overall phase of the segments: Failed as soon as one failed, Succeeded when all did,
/// Running once any started.
pub fn overall_phase(segments: &[SegmentStatus]) -> LoadTestPhase {
    let any = |p: LoadTestPhase| segments.iter().any(|s| s.phase == p);
    if any(LoadTestPhase::Failed) {
        LoadTestPhase::Failed
    } else if !segments.is_empty() && segments.iter().all(|s| s.phase == LoadTestPhase::Succeeded) {
        LoadTestPhase::Succeeded
    } else if any(LoadTestPhase::Running) || any(LoadTestPhase::Succeeded) {
        LoadTestPhase::Running
    } else {
        LoadTestPhase::Pending
    }
}

/// The LoadTest's status from its pods and Jobs (every one carrying `LOADTEST_LABEL`).
/// Once a segment failed, the unfinished ones are reported stopped: the controller stops
/// their Jobs ([`jobs_to_stop`]), as a failed load test must not keep loading the target.
pub fn loadtest_status(
    lt: &LoadTest,
    pods: &[Pod],
    jobs: &[Job],
    previous: &LoadTestStatus,
    now: &Time,
) -> LoadTestStatus {
    let mut segments: Vec<_> = (0..lt.spec.parallelism.max(1))
        .map(|i| {
            let index = i.to_string();
            let of_segment: Vec<&Pod> = pods
                .iter()
                .filter(|p| p.labels().get(SEGMENT_LABEL) == Some(&index))
                .collect();
            let name = job_name(&lt.name_any(), i);
            let job = jobs
                .iter()
                .find(|j| j.metadata.name.as_deref() == Some(name.as_str()));
            segment_status(lt, i, &of_segment, job, now)
        })
        .collect();
    let phase = overall_phase(&segments);
    if phase == LoadTestPhase::Failed {
        let failed: Vec<String> = segments
            .iter()
            .filter(|s| s.phase == LoadTestPhase::Failed)
            .map(|s| s.index.to_string())
            .collect();
        let s = if failed.len() == 1 { "" } else { "s" };
        for segment in &mut segments {
            if matches!(
                segment.phase,
                LoadTestPhase::Pending | LoadTestPhase::Running
            ) {
                segment.phase = LoadTestPhase::Failed;
                segment.message = Some(format!(
                    "stopped because segment{s} {} failed",
                    failed.join(", ")
                ));
            }
        }
    }
    let finished = matches!(phase, LoadTestPhase::Succeeded | LoadTestPhase::Failed);
    let results = (phase == LoadTestPhase::Succeeded)
        .then(|| {
            let all: Vec<_> = segments.iter().filter_map(|s| s.results.clone()).collect();
            aggregate(&all)
        })
        .flatten();
    let message: Vec<String> = segments
        .iter()
        .filter_map(|s| {
            s.message
                .as_ref()
                .map(|m| format!("segment {}: {m}", s.index))
        })
        .collect();
    let start_time = previous
        .start_time
        .clone()
        .or_else(|| (phase != LoadTestPhase::Pending).then(|| now.clone()));
    LoadTestStatus {
        phase: Some(phase),
        start_time,
        completion_time: finished.then(|| now.clone()),
        message: (!message.is_empty()).then(|| message.join("; ")),
        results,
        segments,
        ..LoadTestStatus::default()
    }
}

/// Label the Job controller puts on a Job's pods.
const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";

/// Whether k6 in the pod has ended (the pod's phase or the container's state says so).
fn k6_ended(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    matches!(phase, Some("Succeeded" | "Failed"))
        || diagnose::container_status(pod, CONTAINER)
            .and_then(|c| c.state.as_ref())
            .is_some_and(|s| s.terminated.is_some())
}

/// The Jobs to stop once the LoadTest has failed (none before): those with a k6 still
/// running or waiting to start, or with no pod at all. A Job whose k6 has ended is left
/// alone, finished or not: stopping it (a passed deadline) would make the Job controller
/// delete the pod, and the log with it.
pub fn jobs_to_stop(status: &LoadTestStatus, jobs: &[Job], pods: &[Pod]) -> Vec<String> {
    if status.phase != Some(LoadTestPhase::Failed) {
        return Vec::new();
    }
    jobs.iter()
        .filter(|j| !job_finished(j))
        .filter_map(|j| j.metadata.name.clone())
        .filter(|name| {
            let mut of_job = pods
                .iter()
                .filter(|p| p.labels().get(JOB_NAME_LABEL) == Some(name))
                .peekable();
            of_job.peek().is_none() || of_job.any(|p| !k6_ended(p))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse_and_print() {
        let secs = |s: &str| parse_duration(s).map(|d| d.as_millis());
        assert_eq!(secs("30s"), Some(30_000));
        assert_eq!(secs("5m"), Some(300_000));
        assert_eq!(secs("1h30m"), Some(5_400_000));
        assert_eq!(secs("1m500ms"), Some(60_500));
        for bad in ["", "30", "s", "1x", "1.5s", "99999999999999999999h"] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
        assert_eq!(format_duration(Duration::from_secs(150)), "2m30s");
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h");
        assert_eq!(format_duration(Duration::ZERO), "0s");
    }
}
