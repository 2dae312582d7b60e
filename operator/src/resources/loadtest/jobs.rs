//! One Job per execution segment and target: k6's (or Gatling's) container, its arguments
//! and environment, the client pool placement, the deadline; and the placement to record.

use super::config_map::script_volume;
use super::names::{
    GATLING_MAIN, K6_API_PORT, K6_CONTAINER, MOUNT_DIR, NODE_ANNOTATION, PAYLOAD_KEY,
    POD_ANNOTATION, SCRIPT_KEY, SEGMENT_LABEL, TARGET_LABEL, TERMINATION_LOG,
    TERMINATION_MESSAGE_LIMIT, execution_segment, execution_segment_sequence, labels, meta,
};
use super::spec::{
    SpecError, Target, check_executor, check_pod_options, parse_duration, scenario,
    target_job_name, targets, time_limit,
};
use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{
    Job, JobSpec, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, Container, ContainerPort, EnvVar, KeyToPath, Pod, PodSpec,
    PodTemplateSpec, ResourceRequirements, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;

use crate::diagnose;
use crate::resources::{container_security_context, pod_security_context, short_hash};
use graphfleet_api::{LoadTest, LoadTestExecutor};

fn env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.into()),
        ..EnvVar::default()
    }
}

fn k6_env(lt: &LoadTest, target: &Target) -> Vec<EnvVar> {
    let spec = &lt.spec;
    let mut vars = vec![
        env("GF_URL", target.url.clone()),
        env("GF_PAYLOAD", format!("{MOUNT_DIR}/{PAYLOAD_KEY}")),
    ];
    match &target.expect {
        // The answer to compare with: its hash, and the answer itself when given.
        Some(expect) => {
            vars.push(env("GF_CHECK", "full"));
            vars.push(env("GF_EXPECTED_SHA256", expect.sha256.clone()));
            if expect.config_map_ref.is_some() {
                vars.push(env(
                    "GF_EXPECTED_FILE",
                    format!("{EXPECTED_DIR}/{EXPECTED_FILE}"),
                ));
            }
        }
        // Without one a request fails as a client sees it: a non-200, an answer without
        // data, or with GraphQL errors, as in Gatling.
        None => vars.push(env("GF_CHECK", "graphql")),
    }
    vars.extend([
        env("GF_EXECUTOR", "constant-arrival-rate"),
        env("GF_RATE", spec.rate.to_string()),
        env("GF_DURATION", spec.duration.clone()),
        env("GF_SUMMARY", TERMINATION_LOG),
        env("GF_SUMMARY_LIMIT", TERMINATION_MESSAGE_LIMIT.to_string()),
        // The whole summary also on a marked log line, which the operator reads first.
        env("GF_SUMMARY_STDOUT", "1"),
    ]);
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
fn unique_nonce(lt: &LoadTest, target: &Target) -> u32 {
    let seed = format!(
        "{}/{}",
        lt.metadata.uid.as_deref().unwrap_or_default(),
        target.label().unwrap_or_default()
    );
    let hash = short_hash(seed.as_bytes());
    let n = u32::from_str_radix(&hash[..8], 16).unwrap_or(0);
    n % 999_999 + 1
}

/// The Gatling simulation's environment (bench/gatling/README.md): scenario.js's variables
/// where they mean the same, and this segment's place among the others. The rate is the whole
/// test's: segment `index` of `parallelism` sends every `parallelism`-th arrival from the
/// `index`-th, as k6's equal execution segments share it.
fn gatling_env(lt: &LoadTest, url: String, index: i32) -> Vec<EnvVar> {
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
fn executor_args(lt: &LoadTest, index: i32) -> Vec<String> {
    match lt.spec.executor {
        LoadTestExecutor::K6 => k6_args(lt, index),
        LoadTestExecutor::Gatling => vec![GATLING_MAIN.to_owned()],
    }
}

/// Each load generator's default: half a CPU requested, so two segments fit a 2-CPU node
/// beside its other pods (the local cluster's client node), and a whole one as the limit.
fn resources() -> ResourceRequirements {
    let quantities = crate::resources::cpu_and_memory;
    ResourceRequirements {
        requests: Some(quantities("500m", "256Mi")),
        limits: Some(quantities("1", "1Gi")),
        ..ResourceRequirements::default()
    }
}

/// The k6 arguments of segment `index`. Synchronized: k6 waits paused with its REST API on
/// [`K6_API_PORT`] for the operator, which runs `setup()` once through it; `teardown()` runs
/// in segment 0 only.
fn k6_args(lt: &LoadTest, index: i32) -> Vec<String> {
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

fn container(
    lt: &LoadTest,
    target: &Target,
    index: i32,
    env: Vec<EnvVar>,
    image: &str,
) -> Container {
    let mut mounts = crate::resources::read_only_and_tmp("script", MOUNT_DIR);
    if expected_volume(target).is_some() {
        mounts.push(VolumeMount {
            name: "expected".to_owned(),
            mount_path: EXPECTED_DIR.to_owned(),
            read_only: Some(true),
            ..VolumeMount::default()
        });
    }
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
        volume_mounts: Some(mounts),
        ..Container::default()
    }
}

/// Where the expected answer (`expect.configMapRef`) is mounted, apart from the script's
/// ConfigMap: it is the user's own.
const EXPECTED_DIR: &str = "/expected";
const EXPECTED_FILE: &str = "expected.json";

/// The volume of the target's expected answer, if it names one.
fn expected_volume(target: &Target) -> Option<Volume> {
    let r = target.expect.as_ref()?.config_map_ref.as_ref()?;
    Some(Volume {
        name: "expected".to_owned(),
        config_map: Some(ConfigMapVolumeSource {
            name: r.name.clone(),
            items: Some(vec![KeyToPath {
                key: r.key.clone(),
                path: EXPECTED_FILE.to_owned(),
                ..KeyToPath::default()
            }]),
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    })
}

fn pod_spec(lt: &LoadTest, target: &Target, index: i32, env: Vec<EnvVar>, image: &str) -> PodSpec {
    // No placement unless the spec sets one (the benchmark's manifests name the pool).
    let placement = lt.spec.placement.clone().unwrap_or_default();
    PodSpec {
        restart_policy: Some("Never".to_owned()),
        node_selector: placement.node_selector,
        tolerations: placement.tolerations,
        affinity: placement.affinity,
        security_context: Some(pod_security_context()),
        containers: vec![container(lt, target, index, env, image)],
        volumes: Some(
            [script_volume(lt), crate::resources::tmp_volume()]
                .into_iter()
                .chain(expected_volume(target))
                .collect(),
        ),
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
fn target_job(lt: &LoadTest, target: &Target, index: i32, image: &str) -> Result<Job, SpecError> {
    check_executor(lt)?;
    check_pod_options(lt)?;
    let mut env = match lt.spec.executor {
        LoadTestExecutor::K6 => k6_env(lt, target),
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
    let mut pod_meta = ObjectMeta {
        labels: Some(labels),
        ..ObjectMeta::default()
    };
    let mut pod = pod_spec(lt, target, index, env, image);
    crate::resources::pod_options::apply(&lt.spec.pod, &mut pod_meta, &mut pod);
    Ok(Job {
        metadata: meta,
        spec: Some(JobSpec {
            active_deadline_seconds: Some(deadline.as_secs() as i64),
            backoff_limit: Some(0),
            pod_failure_policy: Some(pod_failure_policy()),
            completions: Some(1),
            parallelism: Some(1),
            template: PodTemplateSpec {
                metadata: Some(pod_meta),
                spec: Some(pod),
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
fn abort_thresholds(lt: &LoadTest) -> Result<Option<serde_json::Value>, SpecError> {
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
/// The Job's own `activeDeadlineSeconds` comes this long after the operator's deadline, so the
/// operator reports the pod's state first; Kubernetes then stops the pod even without it.
const JOB_DEADLINE_GRACE: Duration = Duration::from_secs(60);

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
