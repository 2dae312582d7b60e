//! Pure builders of a LoadTest's objects: its ConfigMap (k6 script and POST body) and one
//! Job per execution segment (k6, or Gatling with `executor: gatling`), plus the spec rules
//! they apply (scenarios, target URL, time limit, what each executor supports). Status from the Jobs' pods is in `status::loadtest`; k6 summaries in `k6_summary`.

use std::collections::BTreeMap;
use std::time::Duration;

use graphfleet_bench_model::duration::DurationError;
use graphfleet_bench_model::scenarios::{self, UniqueQueryError};
use graphfleet_bench_model::{duration, k6_script};
use k8s_openapi::api::batch::v1::{
    Job, JobSpec, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EnvVar, KeyToPath, Pod, PodSpec,
    PodTemplateSpec, ResourceRequirements, Toleration, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};

use super::{MANAGER, container_security_context, pod_security_context, short_hash};
use crate::diagnose;
use graphfleet_api::{LoadTest, LoadTestExecutor, LoadTestTarget, POOL_LABEL};

/// Default load-generator image (k6 plus graphfleet's scripts).
pub const DEFAULT_K6_IMAGE: &str = "ghcr.io/graphfleet/graphfleet-k6:0.1.0";
/// Default image of `executor: gatling` (a JRE, Gatling and graphfleet's simulation).
pub const DEFAULT_GATLING_IMAGE: &str = "ghcr.io/graphfleet/graphfleet-gatling:0.1.0";
/// The gatling image's main class: graphfleet's simulation under Gatling's runner (the
/// image's entrypoint is the JVM with the simulation's class path).
pub const GATLING_MAIN: &str = "dev.graphfleet.gatling.Main";
/// Pool the k6 pods land on unless the placement says otherwise.
pub const CLIENT_POOL: &str = "client";
/// Label on every Job and pod of a LoadTest: the LoadTest's name.
pub const LOADTEST_LABEL: &str = "graphfleet.dev/loadtest";
/// Label on every Job and pod of a LoadTest: the segment index.
pub const SEGMENT_LABEL: &str = "graphfleet.dev/segment";
/// Label on the Jobs and pods of one of `spec.targets`: the target's name.
pub const TARGET_LABEL: &str = "graphfleet.dev/target";
/// Where handleSummary writes: the kubelet turns it into the termination message.
pub const TERMINATION_LOG: &str = "/dev/termination-log";
/// Bytes of a termination message the kubelet keeps; the script fits its summary in them.
pub const TERMINATION_MESSAGE_LIMIT: usize = 4096;
const SCRIPT_KEY: &str = "script.js";
const PAYLOAD_KEY: &str = "payload.json";
const MOUNT_DIR: &str = "/etc/graphfleet/loadtest";
/// Port of k6's REST API in a synchronized segment's pod (k6's default).
pub const K6_API_PORT: i32 = 6565;
/// Name of the load-generator container in the segment pods, `k6` whatever the executor
/// (status, logs and diagnosis read it by this name).
pub const K6_CONTAINER: &str = "k6";

/// Why a LoadTest cannot be turned into Jobs (reported in status; retrying will not help).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    #[error("unknown scenario {0:?}; built-in scenarios: {1}")]
    UnknownScenario(String, String),
    #[error("scenario {0:?}: {1}")]
    BadScenario(String, UniqueQueryError),
    #[error("set exactly one of target or targets, each with exactly one of gatewayRef or url")]
    NoTarget,
    #[error("spec.targets names {0:?} twice; target names must be unique")]
    DuplicateTarget(String),
    #[error("set exactly one of scenario or script")]
    NoScript,
    #[error("spec.duration: {0}")]
    Duration(#[from] DurationError),
    #[error("spec.duration {0:?} is zero; a load test needs a duration above 0")]
    ZeroDuration(String),
    #[error("spec.duration {0:?} is too long")]
    DurationTooLong(String),
    #[error("spec.{0}")]
    Threshold(#[from] crate::thresholds::ThresholdError),
    #[error("spec.{0} is k6-only; executor gatling does not support it")]
    NotForGatling(&'static str),
}

impl SpecError {
    /// The reason of the status condition reporting this error.
    pub fn reason(&self) -> &'static str {
        match self {
            SpecError::UnknownScenario(..) | SpecError::BadScenario(..) => "UnknownScenario",
            SpecError::NoTarget => "NoTarget",
            SpecError::DuplicateTarget(_) => "DuplicateTarget",
            SpecError::NoScript => "NoScript",
            SpecError::Duration(_) | SpecError::ZeroDuration(_) | SpecError::DurationTooLong(_) => {
                "InvalidDuration"
            }
            SpecError::Threshold(_) => crate::thresholds::INVALID,
            SpecError::NotForGatling(_) => "UnsupportedByExecutor",
        }
    }
}

/// Names of the built-in scenarios: graphfleet-bench's (`graphfleet_bench_model::scenarios`).
pub fn scenario_names() -> Vec<&'static str> {
    scenarios::names()
}

fn scenario(name: &str) -> Result<scenarios::Scenario, SpecError> {
    scenarios::find(name)
        .ok_or_else(|| SpecError::UnknownScenario(name.to_owned(), scenario_names().join(", ")))
}

/// One target of a LoadTest, resolved: `spec.target`, or one of `spec.targets`.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// `None` for `spec.target`: its Jobs are `<loadtest>-<i>` without a target label, as
    /// before `targets` existed.
    pub name: Option<String>,
    /// The GraphQL endpoint under load.
    pub url: String,
}

impl Target {
    /// The label value its Jobs and pods carry under [`TARGET_LABEL`], if any.
    pub fn label(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Whether a Job or pod with these labels belongs to this target.
    pub fn owns(&self, labels: &BTreeMap<String, String>) -> bool {
        labels.get(TARGET_LABEL).map(String::as_str) == self.label()
    }
}

/// Every target in the order they run: `spec.target` alone, or each of `spec.targets`.
pub fn targets(lt: &LoadTest) -> Result<Vec<Target>, SpecError> {
    match (&lt.spec.target, &lt.spec.targets) {
        (Some(t), None) => Ok(vec![Target {
            name: None,
            url: resolve_url(lt, t)?,
        }]),
        (None, Some(many)) if !many.is_empty() => {
            let mut out: Vec<Target> = Vec::with_capacity(many.len());
            for t in many {
                if out
                    .iter()
                    .any(|o| o.name.as_deref() == Some(t.name.as_str()))
                {
                    return Err(SpecError::DuplicateTarget(t.name.clone()));
                }
                out.push(Target {
                    name: Some(t.name.clone()),
                    url: resolve_url(lt, &t.target())?,
                });
            }
            Ok(out)
        }
        _ => Err(SpecError::NoTarget),
    }
}

/// The GraphQL endpoint under load with `spec.target`: the URL, or a GraphGateway's Service
/// (port 80). With `spec.targets`, see [`targets`].
pub fn target_url(lt: &LoadTest) -> Result<String, SpecError> {
    resolve_url(lt, lt.spec.target.as_ref().ok_or(SpecError::NoTarget)?)
}

/// The endpoint of one target: the URL, or a GraphGateway's Service (port 80).
pub fn resolve_url(lt: &LoadTest, target: &LoadTestTarget) -> Result<String, SpecError> {
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

/// Name of the Job of segment `index` (of `spec.target`).
pub fn job_name(lt: &str, index: i32) -> String {
    format!("{lt}-{index}")
}

/// Name of the Job of segment `index` of `target`: `<lt>-<i>`, or `<lt>-<target>-<i>` for
/// one of `spec.targets`.
pub fn target_job_name(lt: &str, target: &Target, index: i32) -> String {
    match target.label() {
        Some(name) => format!("{lt}-{name}-{index}"),
        None => job_name(lt, index),
    }
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

/// What `executor: gatling` cannot do (the CRD's rules say the same; they may be bypassed).
fn check_executor(lt: &LoadTest) -> Result<(), SpecError> {
    let spec = &lt.spec;
    if spec.executor.is_k6() {
        return Ok(());
    }
    if spec.script.is_some() {
        return Err(SpecError::NotForGatling("script"));
    }
    if spec.synchronized_start == Some(true) {
        return Err(SpecError::NotForGatling("synchronizedStart"));
    }
    if spec.thresholds.as_ref().is_some_and(|t| t.abort_on_fail) {
        return Err(SpecError::NotForGatling("thresholds.abortOnFail"));
    }
    // The simulation sends the scenario's document as it is: no new one per request.
    if let Some(name) = &spec.scenario
        && scenario(name).is_ok_and(|s| s.unique)
    {
        return Err(SpecError::NotForGatling(
            "scenario many-plans-no-cache (a new document per request)",
        ));
    }
    // The simulation posts queries; the fan-out holds WebSocket subscriptions.
    if spec.scenario.as_deref() == Some(scenarios::SUBSCRIPTIONS) {
        return Err(SpecError::NotForGatling(
            "scenario subscriptions (WebSocket subscriptions)",
        ));
    }
    Ok(())
}

/// The image of the LoadTest's executor.
pub fn executor_image<'a>(lt: &LoadTest, k6_image: &'a str, gatling_image: &'a str) -> &'a str {
    match lt.spec.executor {
        LoadTestExecutor::K6 => k6_image,
        LoadTestExecutor::Gatling => gatling_image,
    }
}

fn labels(lt: &LoadTest) -> BTreeMap<String, String> {
    let name = match lt.spec.executor {
        LoadTestExecutor::K6 => "graphfleet-k6",
        LoadTestExecutor::Gatling => "graphfleet-gatling",
    };
    BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), name.to_owned()),
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

/// The owned ConfigMap: the k6 script (built-in or inline) and, for a scenario, the POST body
/// (Gatling's simulation is in its image: the body alone). `None` when the script comes from
/// the user's own ConfigMap.
pub fn config_map(lt: &LoadTest) -> Result<Option<ConfigMap>, SpecError> {
    check_executor(lt)?;
    let data = match (&lt.spec.scenario, &lt.spec.script) {
        (Some(name), None) => {
            let query = scenario(name)?
                .query()
                .map_err(|e| SpecError::BadScenario(name.clone(), e))?;
            let body = serde_json::json!({ "query": query });
            let mut data = BTreeMap::from([(PAYLOAD_KEY.to_owned(), body.to_string())]);
            if lt.spec.executor.is_k6() {
                data.insert(SCRIPT_KEY.to_owned(), k6_script(name).to_owned());
            }
            data
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
        // No monolith answer to compare with in-cluster: a request fails as a client sees
        // it (a non-200, an answer without data, or with GraphQL errors), as in Gatling.
        env("GF_CHECK", "graphql"),
        env("GF_EXECUTOR", "constant-arrival-rate"),
        env("GF_RATE", spec.rate.to_string()),
        env("GF_DURATION", spec.duration.clone()),
        env("GF_SUMMARY", TERMINATION_LOG),
        env("GF_SUMMARY_LIMIT", TERMINATION_MESSAGE_LIMIT.to_string()),
        // The whole summary also on a marked log line, which the operator reads first.
        env("GF_SUMMARY_STDOUT", "1"),
    ];
    if let Some(vus) = spec.vus {
        vars.push(env("GF_VUS", vus.to_string()));
    }
    if let Some(max_vus) = spec.max_vus {
        vars.push(env("GF_MAX_VUS", max_vus.to_string()));
    }
    vars
}

/// A no-cache scenario's nonce for one target (scenario.js's `GF_UNIQUE`, 1..=999999): from
/// the LoadTest's uid and the target, so two targets (maybe one gateway twice) and two
/// LoadTests never send the same document, and the Jobs rebuild identically.
pub fn unique_nonce(lt: &LoadTest, target: &Target) -> u32 {
    let seed = format!(
        "{}/{}",
        lt.metadata.uid.as_deref().unwrap_or_default(),
        target.label().unwrap_or_default()
    );
    let hash = short_hash(seed.as_bytes());
    let n = u32::from_str_radix(&hash[..8], 16).unwrap_or(0);
    n % 999_999 + 1
}

/// The Gatling simulation's environment (loadtest/gatling/README.md): scenario.js's variables
/// where they mean the same, and this segment's place among the others. The rate is the whole
/// test's: segment `index` of `parallelism` sends every `parallelism`-th arrival from the
/// `index`-th, as k6's equal execution segments share it.
pub fn gatling_env(lt: &LoadTest, url: String, index: i32) -> Vec<EnvVar> {
    let spec = &lt.spec;
    vec![
        env("GF_URL", url),
        env("GF_PAYLOAD", format!("{MOUNT_DIR}/{PAYLOAD_KEY}")),
        env("GF_RATE", spec.rate.to_string()),
        env("GF_DURATION", spec.duration.clone()),
        env("GF_SEGMENT_INDEX", index.to_string()),
        env("GF_SEGMENT_COUNT", spec.parallelism.max(1).to_string()),
        env("GF_SUMMARY", TERMINATION_LOG),
        env("GF_SUMMARY_LIMIT", TERMINATION_MESSAGE_LIMIT.to_string()),
        env("GF_SUMMARY_STDOUT", "1"),
    ]
}

/// The container arguments of segment `index`: k6's ([`k6_args`]) or the gatling image's
/// main class (its environment says the rest).
pub fn executor_args(lt: &LoadTest, index: i32) -> Vec<String> {
    match lt.spec.executor {
        LoadTestExecutor::K6 => k6_args(lt, index),
        LoadTestExecutor::Gatling => vec![GATLING_MAIN.to_owned()],
    }
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
    let quantities = super::cpu_and_memory;
    ResourceRequirements {
        requests: Some(quantities("1", "256Mi")),
        limits: Some(quantities("1", "1Gi")),
        ..ResourceRequirements::default()
    }
}

/// The k6 arguments of segment `index`. Synchronized: k6 waits paused with its REST API on
/// [`K6_API_PORT`] for the operator, which runs `setup()` once through it; `teardown()` runs
/// in segment 0 only.
pub fn k6_args(lt: &LoadTest, index: i32) -> Vec<String> {
    let n = lt.spec.parallelism;
    let mut args: Vec<String> = [
        "run",
        "--quiet",
        "--no-color",
        "--execution-segment",
        &execution_segment(index, n),
        "--execution-segment-sequence",
        &execution_segment_sequence(n),
    ]
    .map(str::to_owned)
    .into();
    if lt.spec.synchronized() {
        args.extend(
            [
                "--paused",
                "--address",
                &format!("0.0.0.0:{K6_API_PORT}"),
                "--no-setup",
            ]
            .map(str::to_owned),
        );
        if index != 0 {
            args.push("--no-teardown".to_owned());
        }
    }
    args.push(format!("{MOUNT_DIR}/{SCRIPT_KEY}"));
    args
}

fn container(lt: &LoadTest, index: i32, env: Vec<EnvVar>, image: &str) -> Container {
    Container {
        name: K6_CONTAINER.to_owned(),
        image: Some(image.to_owned()),
        args: Some(executor_args(lt, index)),
        ports: lt.spec.synchronized().then(|| {
            vec![ContainerPort {
                name: Some("k6-api".to_owned()),
                container_port: K6_API_PORT,
                protocol: Some("TCP".to_owned()),
                ..ContainerPort::default()
            }]
        }),
        env: Some(env),
        resources: Some(lt.spec.resources.clone().unwrap_or_else(resources)),
        security_context: Some(container_security_context()),
        termination_message_path: Some(TERMINATION_LOG.to_owned()),
        // The summary when k6 wrote one; the last log lines when it failed without one.
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        volume_mounts: Some(super::read_only_and_tmp("script", MOUNT_DIR)),
        ..Container::default()
    }
}

fn pod_spec(lt: &LoadTest, index: i32, env: Vec<EnvVar>, image: &str) -> PodSpec {
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
        containers: vec![container(lt, index, env, image)],
        volumes: Some(vec![script_volume(lt), super::tmp_volume()]),
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
                    container_name: Some(K6_CONTAINER.to_owned()),
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

/// The Job running segment `index` of `parallelism` against the first (or only) target.
pub fn job(lt: &LoadTest, index: i32, image: &str) -> Result<Job, SpecError> {
    let first = targets(lt)?.into_iter().next().ok_or(SpecError::NoTarget)?;
    target_job(lt, &first, index, image)
}

/// The Job running segment `index` of `parallelism` against `target`. A failed segment is
/// never retried: a rerun would send its share of the load again, at a different time than
/// the others. Its deadline stops a k6 that outlives `time_limit` even when the operator is
/// not running.
pub fn target_job(
    lt: &LoadTest,
    target: &Target,
    index: i32,
    image: &str,
) -> Result<Job, SpecError> {
    check_executor(lt)?;
    let mut env = match lt.spec.executor {
        LoadTestExecutor::K6 => k6_env(lt, target.url.clone()),
        LoadTestExecutor::Gatling => gatling_env(lt, target.url.clone(), index),
    };
    if let Some(s) = &lt.spec.scenario
        && scenario(s)?.unique
    {
        env.push(self::env("GF_UNIQUE", unique_nonce(lt, target).to_string()));
    }
    if let Some(thresholds) = abort_thresholds(lt)? {
        env.push(self::env(THRESHOLDS_ENV, thresholds.to_string()));
    }
    let deadline = time_limit(lt)? + JOB_DEADLINE_GRACE;
    let mut labels = labels(lt);
    labels.insert(SEGMENT_LABEL.to_owned(), index.to_string());
    if let Some(name) = target.label() {
        labels.insert(TARGET_LABEL.to_owned(), name.to_owned());
    }
    let name = target_job_name(&lt.name_any(), target, index);
    let mut meta = meta(lt, name, labels.clone());
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
                spec: Some(pod_spec(lt, index, env, image)),
            },
            ..JobSpec::default()
        }),
        status: None,
    })
}

/// The variable carrying k6 thresholds that abort a segment (`thresholds.abortOnFail`);
/// scenario.js adds them to its options, a custom script may read it too.
pub const THRESHOLDS_ENV: &str = "GF_THRESHOLDS";

/// The k6 thresholds of `thresholds.abortOnFail`, if set.
pub fn abort_thresholds(lt: &LoadTest) -> Result<Option<serde_json::Value>, SpecError> {
    let Some(t) = &lt.spec.thresholds else {
        return Ok(None);
    };
    let d = parse_duration(&lt.spec.duration)?;
    Ok(crate::thresholds::k6_abort_thresholds(
        t,
        lt.spec.rate,
        d,
        lt.spec.parallelism,
    )?)
}

/// Every Job of a LoadTest: one per segment and target, targets in order.
pub fn jobs(lt: &LoadTest, image: &str) -> Result<Vec<Job>, SpecError> {
    let mut out = Vec::new();
    for target in targets(lt)? {
        out.extend(target_jobs(lt, &target, image)?);
    }
    Ok(out)
}

/// The Jobs of one target, one per segment.
pub fn target_jobs(lt: &LoadTest, target: &Target, image: &str) -> Result<Vec<Job>, SpecError> {
    (0..lt.spec.parallelism.max(1))
        .map(|i| target_job(lt, target, i, image))
        .collect()
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

/// A duration as the CRD admits it (`250ms`, `30s`, `1m30s`, `1h2m3.5s`):
/// `graphfleet_bench_model::duration`, the grammar scenario.js and graphfleet-bench read too.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    duration::parse(text)
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
    let text = &lt.spec.duration;
    let d = parse_duration(text)?;
    if d.is_zero() {
        return Err(SpecError::ZeroDuration(text.clone()));
    }
    // Job deadlines are i64 seconds; far beyond any real test anyway.
    d.checked_add(STARTUP_AND_SUMMARY_MARGIN)
        .filter(|d| d.as_secs() < i64::MAX as u64 / 2)
        .ok_or_else(|| SpecError::DurationTooLong(text.clone()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_the_crd_documents_and_print() {
        let ms = |s: &str| parse_duration(s).map(|d| d.as_millis()).ok();
        assert_eq!(ms("30s"), Some(30_000));
        assert_eq!(ms("5m"), Some(300_000));
        assert_eq!(ms("1h30m"), Some(5_400_000));
        assert_eq!(ms("1m500ms"), Some(60_500));
        assert_eq!(ms("1h2m3.5s"), Some(3_723_500));
        assert_eq!(ms("250ms"), Some(250));
        for bad in ["", "30", "s", "1x", "1.s", "1us", "99999999999999999999h"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        assert_eq!(format_duration(Duration::from_secs(150)), "2m30s");
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h");
        assert_eq!(format_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn the_crd_validates_durations_with_the_parsers_pattern() {
        use graphfleet_api::{LoadTest, duration_rule};
        use kube::CustomResourceExt;
        let crd = serde_json::to_value(LoadTest::crd()).expect("CRD serializes");
        let rules = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["duration"]["x-kubernetes-validations"];
        assert_eq!(rules[0]["rule"], duration_rule(), "{rules}");
        assert!(duration_rule().contains(duration::PATTERN));
        // CEL string literals have no `\.` escape: the API server would refuse the CRD.
        assert!(!duration_rule().contains('\\'), "{rules}");
        assert_eq!(rules[1]["rule"], graphfleet_api::nonzero_duration_rule());
    }
}
