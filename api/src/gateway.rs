use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, EnvVar, ResourceRequirements, Toleration, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{CustomResource, KubeSchema};
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// Image used when a GraphGateway names none.
pub const DEFAULT_GATEWAY_IMAGE: &str = "ghcr.io/graphfleet/graphfleet-gateway:0.1.0";

/// A fleet of graphfleet gateways serving the supergraph composed from selected Subgraphs.
// Each `printcolumn(...)` repeats `type_ = ...`, which clippy mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "graphfleet.dev",
    version = "v1alpha1",
    kind = "GraphGateway",
    namespaced,
    status = "GraphGatewayStatus",
    shortname = "gw",
    category = "graphfleet",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Composed",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Composed\")].status"
    ),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(
        name = "Available",
        type_ = "integer",
        json_path = ".status.readyReplicas"
    ),
    printcolumn(
        name = "Supergraph",
        type_ = "string",
        json_path = ".status.supergraphHash"
    ),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct GraphGatewaySpec {
    /// Selects Subgraphs by label; absent selects every Subgraph in `namespaces`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subgraph_selector: Option<LabelSelector>,
    /// Namespaces searched for Subgraphs; absent or empty means the gateway's own namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Desired gateway pods (ignored while `autoscaling` is set).
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 0, max = 1000))]
    pub replicas: i32,
    /// Gateway container image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub image: Option<String>,
    /// Container resources; defaults to 1 CPU requested and limited, 256Mi/512Mi memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Pod node selector; none by default (the benchmark's manifests set
    /// `graphfleet.dev/pool: router`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Pod tolerations; none by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Pod affinity rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Image pull secrets, service account, pod labels and annotations, priority class,
    /// topology spread constraints.
    #[serde(flatten)]
    pub pod: super::PodOptions,
    /// Environment variables added to the gateway container after the operator's own. The
    /// gateway's settings go in `config`, so `GRAPHFLEET_*` names (which the gateway reads
    /// as settings, over its config file) are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), transform = super::pod::terse)]
    #[x_kube(validation = Rule::new("self.all(e, !e.name.startsWith('GRAPHFLEET_'))")
        .message("env may not set GRAPHFLEET_* variables: the gateway reads them as settings; set spec.config instead"))]
    pub env: Option<Vec<EnvVar>>,
    /// Volumes added to the pods, for `volumeMounts` (names other than the operator's:
    /// `supergraph`, `config`, `tmp`, `usage` and those of `mounts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = super::pod::terse)]
    pub volumes: Option<Vec<Volume>>,
    /// Mounts added to the gateway container, of `volumes`; not at `/tmp` nor under
    /// `/etc/graphfleet` or `/etc/graphfleet-mounts` (the operator's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), transform = super::pod::terse)]
    pub volume_mounts: Option<Vec<VolumeMount>>,
    /// The gateway Service's type and annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<super::GatewayService>,
    /// The PodMonitor scraping the pods' metrics, made where the Prometheus Operator is
    /// installed (`enabled: false` to go without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_monitor: Option<super::PodMonitorSpec>,
    /// The gateway's configuration, in the gateway's own schema and key names (snake
    /// case, as in its config file and environment variables; see gateway/README.md).
    /// `listen` and `supergraph` are the operator's; file paths come from `mounts`.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub config: GatewayConfig,
    /// Files from Secrets and ConfigMaps the gateway reads (TLS, JWKS, persisted
    /// documents): mounted into the pods, their paths set in `config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mounts: Option<super::GatewayMounts>,
    /// Which supergraph revision the pods serve, and how many revisions are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supergraph: Option<SupergraphDelivery>,
    /// Checks a new composition passes before any pod changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<DeliverySpec>,
    /// Rolling-update strategy of the gateway Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutStrategy>,
    /// Horizontal pod autoscaling on CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<Autoscaling>,
    /// PodDisruptionBudget for the gateway pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PodDisruptionBudgetSpec>,
}

fn default_replicas() -> i32 {
    1
}

fn is_empty(config: &GatewayConfig) -> bool {
    config.0.is_empty()
}

/// The gateway's own configuration: graphfleet-config's schema, the keys of the
/// gateway's config file (gateway/README.md), spelt as there. Kept as the user wrote it,
/// so the pods get exactly the keys set here (the gateway's defaults fill the rest);
/// the operator reads it as the gateway does before any pod changes.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(transparent)]
pub struct GatewayConfig(pub serde_json::Map<String, serde_json::Value>);

impl JsonSchema for GatewayConfig {
    fn schema_name() -> Cow<'static, str> {
        "GatewayConfig".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = graphfleet_config::Config::json_schema(generator);
        DefaultsIntoDescriptions.transform(&mut schema);
        schema
    }
}

/// Moves each `default` of the gateway's schema into its description. The API server
/// would write schema defaults into every stored GraphGateway, pinning the gateway's
/// defaults of the day; the pods should get only what the user set, so a newer gateway
/// brings its own. `kubectl explain` still shows each default.
struct DefaultsIntoDescriptions;

impl Transform for DefaultsIntoDescriptions {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        let Some(default) = object.remove("default") else {
            return;
        };
        let text = match &default {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let described = match object.get("description").and_then(|d| d.as_str()) {
            Some(d) => format!("{d}\nDefault: `{text}`."),
            None => format!("Default: `{text}`."),
        };
        object.insert("description".to_owned(), described.into());
    }
}

impl GatewayConfig {
    /// The settings as the gateway reads them, or why it would refuse them.
    pub fn parse(&self) -> Result<graphfleet_config::Config, serde_json::Error> {
        serde_json::from_value(serde_json::Value::Object(self.0.clone()))
    }
}

/// Supergraph revisions: every composition is an immutable ConfigMap
/// `<gateway>-supergraph-<hash>` that pod templates name, so a pod never changes schema
/// under itself.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SupergraphDelivery {
    /// Serve this revision (a hash from `status.revisions`) instead of the latest
    /// composition: a rollback is setting it, going forward again is removing it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9a-f]{16}$"))]
    pub revision: Option<String>,
    /// Revisions kept in `status.revisions` (and as ConfigMaps); default 10. Older ones
    /// are deleted, never the one served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub revision_history_limit: Option<i32>,
}

/// Checks before rollout.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliverySpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<ChecksSpec>,
}

/// What a new composition is checked for against the revision being served.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChecksSpec {
    /// Breaking changes of the API schema (a type, field, argument or enum value removed, a
    /// type changed where clients see it, a required argument added, ...): `Warn` (the
    /// default: an Event and the revision's `breakingChanges`) or `Block` (the serving
    /// revision stays; the annotation `graphfleet.dev/allow-breaking-revision: <hash>`
    /// lets that one revision through).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaking_changes: Option<CheckPolicy>,
    /// Operations the fleet has served (each gateway pod records them) that the new
    /// supergraph makes invalid: `Block` (the default: the serving revision stays, a
    /// condition names the operations) or `Warn`. With recorded traffic, a `Block` on
    /// `breakingChanges` also lets through breaking changes no served operation uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations: Option<CheckPolicy>,
    /// How far back recorded operations count (`30m`, `24h`, `7d`; default `7d`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]+(s|m|h|d)$"))]
    pub usage_window: Option<String>,
    /// Operations with a smaller share of the recorded requests, in percent, never block
    /// (default 0: every served operation counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 100.0))]
    pub minimum_traffic_share_percent: Option<f64>,
}

/// `usageWindow` when unset: a week of traffic.
pub const DEFAULT_USAGE_WINDOW_SECONDS: u64 = 7 * 24 * 3600;

/// What a failed check does.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum CheckPolicy {
    #[default]
    Warn,
    Block,
}

/// The annotation letting one blocked revision (its hash) through its checks.
pub const ALLOW_BREAKING_ANNOTATION: &str = "graphfleet.dev/allow-breaking-revision";

/// Revisions kept when `spec.supergraph.revisionHistoryLimit` is unset.
const DEFAULT_REVISION_HISTORY: usize = 10;

impl GraphGatewaySpec {
    /// Revisions to keep.
    pub fn revision_history_limit(&self) -> usize {
        self.supergraph
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n > 0)
            .unwrap_or(DEFAULT_REVISION_HISTORY)
    }

    /// The revision the spec pins, if any.
    pub fn pinned_revision(&self) -> Option<&str> {
        self.supergraph.as_ref()?.revision.as_deref()
    }

    /// What breaking changes do.
    pub fn breaking_changes(&self) -> CheckPolicy {
        self.checks()
            .and_then(|c| c.breaking_changes)
            .unwrap_or_default()
    }

    /// What invalid served operations do: `Block` unless set.
    pub fn operations_check(&self) -> CheckPolicy {
        self.checks()
            .and_then(|c| c.operations)
            .unwrap_or(CheckPolicy::Block)
    }

    /// `usageWindow` in seconds (an unreadable one, which the API server's pattern
    /// refuses anyway, counts as the default).
    pub fn usage_window_seconds(&self) -> u64 {
        let Some(window) = self.checks().and_then(|c| c.usage_window.as_deref()) else {
            return DEFAULT_USAGE_WINDOW_SECONDS;
        };
        let (number, unit) = window.split_at(window.len().saturating_sub(1));
        let scale = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => return DEFAULT_USAGE_WINDOW_SECONDS,
        };
        number
            .parse::<u64>()
            .map_or(DEFAULT_USAGE_WINDOW_SECONDS, |n| n.saturating_mul(scale))
    }

    /// `minimumTrafficShare` as a fraction (0.0..=1.0).
    pub fn minimum_traffic_share(&self) -> f64 {
        self.checks()
            .and_then(|c| c.minimum_traffic_share_percent)
            .map_or(0.0, |p| p.clamp(0.0, 100.0) / 100.0)
    }

    fn checks(&self) -> Option<&ChecksSpec> {
        self.delivery.as_ref()?.checks.as_ref()
    }
}

/// How a new pod template reaches the pods, and the Deployment's rolling-update parameters
/// (used by both strategies: a canary's promotion is a rolling update too).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    /// `RollingUpdate` (the default) or `Canary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<super::Strategy>,
    /// Steps and thresholds of `Canary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<super::CanarySpec>,
    /// Extra pods during a rollout (count or percentage); default 25%.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
    /// Pods that may be unavailable during a rollout; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Seconds a new pod must be ready before it counts as available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_ready_seconds: Option<i32>,
}

/// CPU-based horizontal autoscaling.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[x_kube(validation = Rule::new("self.maxReplicas >= self.minReplicas")
    .message("autoscaling.maxReplicas must be >= autoscaling.minReplicas"))]
#[serde(rename_all = "camelCase")]
pub struct Autoscaling {
    #[schemars(range(min = 1))]
    pub min_replicas: i32,
    #[schemars(range(min = 1))]
    pub max_replicas: i32,
    /// Average CPU utilisation (percent of the request) to aim for.
    #[serde(default = "default_cpu_target")]
    #[schemars(range(min = 1, max = 100))]
    pub target_cpu_utilization_percentage: i32,
}

fn default_cpu_target() -> i32 {
    70
}

/// Exactly one of `minAvailable` or `maxUnavailable`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[x_kube(validation = Rule::new("has(self.minAvailable) != has(self.maxUnavailable)")
    .message("podDisruptionBudget needs exactly one of minAvailable or maxUnavailable"))]
#[serde(rename_all = "camelCase")]
pub struct PodDisruptionBudgetSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
}

/// Observed state of a GraphGateway.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GraphGatewayStatus {
    /// Generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Composed`, `Ready`, `Progressing`, `Degraded`, and `Canary` once a canary ran (True
    /// while one runs; False with reason `RolledBack` and why when a step failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The revision the pods are given (the last good composition, or the pinned one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supergraph_hash: Option<String>,
    /// Where the fleet is: `Pending` (nothing to serve yet), `RollingOut`, `Serving` (every
    /// pod serves `supergraphHash`) or `Degraded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Supergraph revisions, newest first (at most `spec.supergraph.revisionHistoryLimit`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<SupergraphRevision>,
    /// Subgraphs in the served supergraph.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subgraphs: Vec<String>,
    /// Errors of the latest failed composition (empty when it succeeded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub composition_errors: Vec<CompositionErrorStatus>,
    /// Pods of the gateway Deployment.
    #[serde(default)]
    pub replicas: i32,
    /// Ready pods of the gateway Deployment.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Label selector of the pods, for the scale subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// The canary under way or rolled back (`spec.rollout.strategy: Canary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<super::CanaryStatus>,
}

/// One composed supergraph.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SupergraphRevision {
    /// Short SHA-256 of the supergraph; its ConfigMap is `<gateway>-supergraph-<hash>`.
    pub hash: String,
    /// When it was first composed.
    pub composed_at: Time,
    /// The subgraphs it was composed from, with their SDL hashes.
    pub subgraphs: Vec<SubgraphSchemaRef>,
    pub outcome: RevisionOutcome,
    /// Breaking API-schema changes against the revision served when it was composed
    /// (`coordinate: what changed`, at most 20).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaking_changes: Vec<String>,
    /// How many dangerous changes (an enum value or union member added, a default
    /// changed, ...) it had against that revision.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dangerous_changes: u32,
    /// Recorded operations checked against it (validated and planned).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub operations_checked: u32,
    /// Recorded operations it makes invalid (`name (id, share of requests, clients): why`,
    /// at most 20).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid_operations: Vec<String>,
    /// Recorded operations whose plan it changes (`name: +fetch, -fetch`, at most 20).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_plans: Vec<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A subgraph's schema in a revision.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubgraphSchemaRef {
    pub name: String,
    /// Short SHA-256 of its SDL.
    pub sdl_hash: String,
}

/// What became of a revision.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum RevisionOutcome {
    /// The pods are given it.
    Serving,
    /// Served before, replaced since.
    Superseded,
    /// Composed but never served (e.g. while another revision was pinned).
    Composed,
    /// Kept from the pods by a check (`spec.delivery.checks`).
    Blocked,
    /// On the canary pods (`spec.rollout.strategy: Canary`).
    Canary,
    /// Failed on the canary and taken off it.
    RolledBack,
}

/// One composition error as reported in status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompositionErrorStatus {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subgraphs: Vec<String>,
}

/// The key holding the supergraph in a GraphGateway's revision ConfigMap.
pub const SUPERGRAPH_KEY: &str = "supergraph.graphql";

/// The immutable ConfigMap holding supergraph revision `hash` (`status.supergraphHash`,
/// `status.revisions[].hash`) of GraphGateway `gateway`, in its namespace: what its pods
/// mount, and what others may serve the same supergraph from.
pub fn supergraph_config_map_name(gateway: &str, hash: &str) -> String {
    format!("{gateway}-supergraph-{hash}")
}
