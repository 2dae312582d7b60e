//! The canary strategy of a GraphGateway rollout: new pods beside the stable ones behind
//! the same Service, in steps, each judged from the pods' own metrics before the next.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a new pod template (supergraph revision, config or image) reaches the pods.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Strategy {
    /// The Deployment's rolling update.
    #[default]
    RollingUpdate,
    /// Canary pods first, in steps, judged from their metrics; rolled back by itself.
    Canary,
}

/// Steps and thresholds of a canary.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CanarySpec {
    /// The canary's share of the pods and how long it is watched at each; default 25% for
    /// 60s, then 50% for 60s, then everything. The share is as exact as pod counts allow:
    /// canary pods are added beside the stable ones (`status.canary.share` says the real
    /// one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 10))]
    pub steps: Vec<CanaryStep>,
    /// Most GraphQL requests the canary may fail, in percent of its requests (outcomes
    /// other than `ok`: errors in the response, refused requests, timeouts); default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub max_error_rate_percent: Option<f64>,
    /// Most subgraph fetches the canary may fail, in percent of its fetches; default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub max_fetch_error_rate_percent: Option<f64>,
    /// Largest canary p99 latency over the stable pods' p99; default 2. A canary p99
    /// within 10 ms of the stable pods' passes whatever the ratio: at a few milliseconds,
    /// scheduling on a busy node alone doubles a p99.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1.0))]
    pub max_p99_ratio: Option<f64>,
    /// Canary requests a step needs before it is judged; a step with fewer waits up to
    /// three pauses, then passes on what it saw (an Event says so). Default 20.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_requests: Option<u32>,
    /// The load-gated canary: a LoadTest run against the canary pods alone at each step
    /// (through the Service `<gateway>-canary`, which selects only them), made from this
    /// template once the step's canary pods are all ready. It is named
    /// `<gateway>-canary-<template>-<step>` (the pod template's hash, 8 digits), owned by the
    /// GraphGateway and labelled `graphfleet.dev/canary-of: <gateway>`. A step passes only
    /// when both its pause has elapsed and its LoadTest ended `Succeeded` with its thresholds
    /// met (and the metrics above held); a LoadTest that fails, aborts, misses a threshold or
    /// has not finished `duration` plus 180 s after it was created rolls the canary back,
    /// and the message names the LoadTest, the threshold and the figures. `thresholds` is
    /// required. The LoadTest of a step that exists already (from an earlier canary of the
    /// same template) is read, not made again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("has(self.thresholds)")
        .message("canary.loadTest needs thresholds: a step passes only when they do"))]
    pub load_test: Option<crate::LoadTestTemplate>,
}

/// One step of a canary.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryStep {
    /// The canary's share of the pods, in percent.
    #[schemars(range(min = 1, max = 99))]
    pub weight: u32,
    /// How long the step is watched before it is judged (`30s`, `5m`).
    #[schemars(regex(pattern = r"^[0-9]+(s|m|h)$"))]
    pub pause: String,
}

/// Where a canary is.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryStatus {
    /// The pod template the canary runs (a hash; the canary Deployment carries it).
    pub template: String,
    /// The supergraph revision the canary pods serve.
    pub revision: String,
    pub phase: CanaryPhase,
    /// The step being watched (0-based; equal to the step count while promoting).
    pub step: u32,
    /// When the current step's canary pods were all ready (the watch starts then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_started_at: Option<Time>,
    pub canary_pods: i32,
    pub stable_pods: i32,
    /// The canary's real share of the pods, in percent.
    pub share_percent: u32,
    /// The LoadTest of the current step (with `spec.rollout.canary.loadTest`), or the one
    /// that rolled the canary back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_test: Option<String>,
    /// What the last judgement saw, or why the canary was rolled back.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// The phases of a canary.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum CanaryPhase {
    /// Canary pods run beside the stable ones, step by step.
    Progressing,
    /// Every step passed: the stable Deployment rolls to the new template.
    Promoting,
    /// A step failed: the canary pods are gone and the stable pods serve; the template is
    /// not tried again until the spec or the composition changes.
    RolledBack,
}

/// The default steps: 25% for 60 s, then 50% for 60 s.
pub fn default_steps() -> Vec<CanaryStep> {
    [25, 50]
        .into_iter()
        .map(|weight| CanaryStep {
            weight,
            pause: "60s".to_owned(),
        })
        .collect()
}

/// A pause in seconds (`30s`, `5m`, `1h`); `None` when unreadable.
pub fn pause_seconds(pause: &str) -> Option<u64> {
    let (number, unit) = pause.split_at(pause.len().checked_sub(1)?);
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(scale)
}
