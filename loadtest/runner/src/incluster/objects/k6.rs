//! The k6 Job (client pool) with its payload ConfigMap, and how a k6 pod ended.

use super::parts::{
    K6_CONTAINER, K6_DIR, K6_SCRIPT, MAX_EXPECTED_IN_CONFIGMAP, env, labels, meta, pool_placement,
    security,
};
use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::k6::Check;
use graphfleet_operator::resources::{config_map_and_tmp, read_only_and_tmp};

/// The k6 inputs of one (scenario, gateway): the POST body and, when it fits, the answer
/// to compare bodies that differ in bytes with.
pub fn k6_config_map(
    name: &str,
    namespace: &str,
    payload: &str,
    expected: Option<&str>,
) -> ConfigMap {
    let mut data = BTreeMap::from([("payload.json".to_owned(), payload.to_owned())]);
    if let Some(e) = expected.filter(|e| e.len() <= MAX_EXPECTED_IN_CONFIGMAP) {
        data.insert("expected.json".to_owned(), e.to_owned());
    }
    ConfigMap {
        metadata: meta(name, namespace, labels("k6", &[])),
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// What one k6 run does: scenario.js's environment, as the host mode sets it.
#[derive(Debug, Clone, PartialEq)]
pub struct K6Run {
    pub url: String,
    pub check: Check,
    pub expected_len: usize,
    pub expected_sha256: String,
    /// Whether the ConfigMap holds expected.json.
    pub expected_file: bool,
    pub rate: u32,
    pub vus: u32,
    pub max_vus: u32,
    pub duration_s: u32,
    /// A no-cache scenario's nonce (scenario.js's `GF_UNIQUE`).
    pub unique: Option<u32>,
}

fn check_str(c: Check) -> &'static str {
    match c {
        Check::None => "none",
        Check::Length => "length",
        Check::Full => "full",
    }
}

/// The k6 Job on the client pool; scenario.js writes its JSON summary to the termination
/// message, where the runner reads it.
pub fn k6_job(name: &str, namespace: &str, image: &str, config_map: &str, run: &K6Run) -> Job {
    let (node_selector, tolerations) = pool_placement("client");
    let (pod_security, container_security) = security();
    let mut vars = vec![
        env("GF_URL", run.url.clone()),
        env("GF_PAYLOAD", format!("{K6_DIR}/payload.json")),
        env("GF_CHECK", check_str(run.check)),
        env("GF_EXPECTED_LEN", run.expected_len.to_string()),
        env("GF_EXPECTED_SHA256", run.expected_sha256.clone()),
        env("GF_EXECUTOR", "constant-arrival-rate"),
        env("GF_RATE", run.rate.to_string()),
        env("GF_VUS", run.vus.to_string()),
        env("GF_MAX_VUS", run.max_vus.to_string()),
        env("GF_DURATION", format!("{}s", run.duration_s)),
        env("GF_SUMMARY", "/dev/termination-log"),
        env("K6_NO_USAGE_REPORT", "true"),
    ];
    if run.expected_file {
        vars.push(env("GF_EXPECTED_FILE", format!("{K6_DIR}/expected.json")));
    }
    if let Some(nonce) = run.unique {
        vars.push(env("GF_UNIQUE", nonce.to_string()));
    }
    let labels = labels("k6", &[]);
    Job {
        metadata: meta(name, namespace, labels.clone()),
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            completions: Some(1),
            parallelism: Some(1),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".to_owned()),
                    node_selector: Some(node_selector),
                    tolerations: Some(tolerations),
                    security_context: Some(pod_security),
                    enable_service_links: Some(false),
                    containers: vec![Container {
                        name: K6_CONTAINER.to_owned(),
                        image: Some(image.to_owned()),
                        image_pull_policy: Some("Never".to_owned()),
                        args: Some(vec![
                            "run".to_owned(),
                            "--quiet".to_owned(),
                            "--no-color".to_owned(),
                            K6_SCRIPT.to_owned(),
                        ]),
                        env: Some(vars),
                        termination_message_path: Some("/dev/termination-log".to_owned()),
                        termination_message_policy: Some("File".to_owned()),
                        security_context: Some(container_security),
                        volume_mounts: Some(read_only_and_tmp("inputs", K6_DIR)),
                        ..Container::default()
                    }],
                    volumes: Some(config_map_and_tmp("inputs", config_map)),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        status: None,
    }
}

/// How a k6 pod ended.
#[derive(Debug, Clone, PartialEq)]
pub enum K6End {
    /// Still running (or not started).
    Running,
    /// Exited; its termination message (the summary), exit code and run window (Unix s).
    Done {
        message: String,
        exit_code: i32,
        started: Option<f64>,
        finished: Option<f64>,
    },
}

/// The k6 container's state from its pod.
pub fn k6_end(pod: &Pod) -> K6End {
    let terminated = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == K6_CONTAINER))
        .and_then(|c| c.state.as_ref()?.terminated.clone());
    match terminated {
        None => K6End::Running,
        Some(t) => K6End::Done {
            message: t.message.unwrap_or_default(),
            exit_code: t.exit_code,
            started: t.started_at.map(|s| s.0.as_millisecond() as f64 / 1000.0),
            finished: t.finished_at.map(|s| s.0.as_millisecond() as f64 / 1000.0),
        },
    }
}
