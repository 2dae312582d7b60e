//! Pure side of the LoadTest controller: a LoadTest → its k6 ConfigMap and one Job per k6
//! execution segment; pods' termination messages → per-segment and aggregate results.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, EmptyDirVolumeSource, EnvVar, KeyToPath, Pod,
    PodSpec, PodTemplateSpec, ResourceRequirements, Toleration, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};
use serde::Deserialize;

use crate::build::{container_security_context, pod_security_context, short_hash};
use crate::crd::{
    LatencySummary, LoadTest, LoadTestPhase, LoadTestResults, POOL_LABEL, SegmentStatus,
};

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
        termination_message_policy: Some("File".to_owned()),
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

/// The Job running segment `index` of `parallelism`. A failed segment is not retried: a rerun
/// would send its share of the load at a different time than the others.
pub fn job(lt: &LoadTest, index: i32, image: &str) -> Result<Job, SpecError> {
    let url = target_url(lt)?;
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
            backoff_limit: Some(0),
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

/// Why the Job controller gave up on a Job (e.g. its pod could not be created), if it did.
pub fn job_failure(job: &Job) -> Option<String> {
    let failed = job
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Failed" && c.status == "True")?;
    Some(format!(
        "job failed: {}",
        failed
            .message
            .clone()
            .or_else(|| failed.reason.clone())
            .unwrap_or_default()
    ))
}

/// State of one segment from its Job's pods (the kubelet's view, not the Job controller's,
/// so results appear as soon as the container has terminated), or from the Job when the Job
/// controller failed it without a terminated k6 container to show for it.
pub fn segment_status(
    lt: &LoadTest,
    index: i32,
    pods: &[&Pod],
    job: Option<&Job>,
) -> SegmentStatus {
    let mut status = pod_segment_status(lt, index, pods);
    if matches!(
        status.phase,
        LoadTestPhase::Pending | LoadTestPhase::Running
    ) && let Some(reason) = job.and_then(job_failure)
    {
        status.phase = LoadTestPhase::Failed;
        status.message = Some(reason);
    }
    status
}

fn pod_segment_status(lt: &LoadTest, index: i32, pods: &[&Pod]) -> SegmentStatus {
    let mut status = SegmentStatus {
        index,
        segment: execution_segment(index, lt.spec.parallelism),
        job: job_name(&lt.name_any(), index),
        phase: LoadTestPhase::Pending,
        message: None,
        results: None,
    };
    let terminated = pods.iter().find_map(|pod| {
        pod.status
            .as_ref()?
            .container_statuses
            .as_ref()?
            .iter()
            .find(|c| c.name == CONTAINER)?
            .state
            .as_ref()?
            .terminated
            .clone()
    });
    if let Some(t) = terminated {
        let message = t.message.unwrap_or_default();
        if t.exit_code != 0 {
            status.phase = LoadTestPhase::Failed;
            let tail: String = message.chars().take(300).collect();
            status.message = Some(format!("k6 exited with code {}: {tail}", t.exit_code));
            return status;
        }
        match parse_summary(&message) {
            Ok(results) => {
                status.phase = LoadTestPhase::Succeeded;
                status.results = Some(results);
            }
            Err(e) if message.trim().is_empty() => {
                status.phase = LoadTestPhase::Failed;
                status.message = Some(format!("k6 finished without a summary ({e})"));
            }
            Err(e) => {
                status.phase = LoadTestPhase::Failed;
                status.message = Some(e.to_string());
            }
        }
        return status;
    }
    let running = pods.iter().any(|p| {
        p.status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .is_some_and(|phase| phase == "Running")
    });
    if running {
        status.phase = LoadTestPhase::Running;
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
