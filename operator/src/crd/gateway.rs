use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, ResourceRequirements, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
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
    /// Pod node selector; defaults to the router pool (`graphfleet.dev/pool: router`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Pod tolerations; defaults to tolerating the router pool's NoSchedule taint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Pod affinity rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Gateway runtime configuration, mounted next to the supergraph.
    #[serde(default)]
    pub config: GatewayConfig,
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

/// Gateway behaviour knobs; rendered as `gateway.json` beside the supergraph.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayConfig {
    /// Whole-request timeout, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub request_timeout_ms: Option<u32>,
    /// Timeout of one subgraph fetch, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub subgraph_timeout_ms: Option<u32>,
    /// Deduplicate identical in-flight subgraph requests (queries only; on when unset,
    /// the gateway's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deduplicate_subgraph_requests: Option<bool>,
    /// HTTP version towards subgraphs: `disabled` (HTTP/1.1, the default), `priorKnowledge`
    /// (HTTP/2 only: h2c on `http://`, ALPN `h2` on `https://`) or `alpn` (`https://`
    /// subgraphs pick h2 or http/1.1 in the handshake; `http://` stays HTTP/1.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subgraph_http2: Option<SubgraphHttp2>,
    /// Encoding of subgraph request bodies (`Content-Encoding`); default `none`. Only
    /// for subgraphs that decode compressed requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compress_subgraph_requests: Option<SubgraphRequestCompression>,
    /// Ask subgraphs for gzip, br or zstd responses; default false (compressed
    /// responses are decoded either way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_compressed_subgraph_responses: Option<bool>,
    /// Largest accepted request body, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_request_bytes: Option<u64>,
    /// Deepest accepted operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_query_depth: Option<u32>,
    /// Most aliased fields in one operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_aliases: Option<u32>,
    /// Most root fields in the selected operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_root_fields: Option<u32>,
    /// Most lexical tokens in a query document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u32>,
    /// Most distinct fields in an operation once its fragments are merged (the
    /// planner's budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_height: Option<u32>,
    /// Largest response of one request, in bytes (its subgraph responses together, and
    /// the response written); a larger one is cut with an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_response_bytes: Option<u64>,
    /// Client headers forwarded to every subgraph (besides `Authorization`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(pattern(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")))]
    pub propagate_headers: Vec<String>,
    /// Serve introspection of the API schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introspection: Option<bool>,
    /// OTLP endpoint receiving the gateway's traces (`http://host:4317`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^https?://[^/?#\s]+"))]
    pub otlp_endpoint: Option<String>,
    /// Cross-origin resource sharing for browser clients: off unless `allowOrigins` or
    /// `allowOriginPatterns` names an origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cors: Option<CorsSpec>,
    /// Cross-site request forgery prevention, on by default: a GET or POST a browser
    /// could send without a CORS preflight (no Content-Type, or text/plain,
    /// application/x-www-form-urlencoded, multipart/form-data) and carrying none of
    /// `requiredHeaders` is refused with 400.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csrf: Option<CsrfSpec>,
    /// Response compression per the client's Accept-Encoding (off by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<CompressionSpec>,
    /// JWT validation against JSON Web Key Sets from Secrets, ConfigMaps (mounted into
    /// the pods) or URLs; off unless set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<super::AuthenticationSpec>,
    /// Enforcement of the supergraph's `@authenticated`, `@requiresScopes` and `@policy`
    /// (on by default when the supergraph has them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<super::AuthorizationSpec>,
    /// Header rules for every subgraph request, run in order after `propagateHeaders`
    /// (and the client's Authorization, which is forwarded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub header_rules: Vec<super::HeaderRuleSpec>,
    /// Header rules of single subgraphs, run after `headerRules`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 128))]
    pub subgraph_header_rules: Vec<super::SubgraphHeaderRulesSpec>,
    /// Progressive override (`@override(label:)`) labels fixed on or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progressive_override: Option<super::ProgressiveOverrideSpec>,
    /// Demand control: static cost estimates of operations from the supergraph's
    /// `@cost` and `@listSize`, as a metric and optionally a limit (off by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand_control: Option<super::DemandControlSpec>,
    /// Persisted documents (trusted documents): operations registered ahead of time in
    /// a ConfigMap, run by id; the operator mounts the ConfigMap into the pods and the
    /// gateway reloads the list when the ConfigMap changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persisted_documents: Option<PersistedDocumentsSpec>,
    /// Automatic persisted queries (on by default; inactive in the `safelist` and
    /// `requireId` modes of `persistedDocuments`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apq: Option<ApqSpec>,
    /// Subscriptions: client WebSocket path, limits, timeouts, and each subgraph's
    /// subscription protocol (on by default with the gateway's defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscriptions: Option<super::SubscriptionsSpec>,
}

/// CORS: which browser origins may read the gateway's responses. A preflight from any
/// other origin is answered 403.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new(
    "!(has(self.allowCredentials) && self.allowCredentials && has(self.allowOrigins) && '*' in self.allowOrigins)"
).message("cors.allowCredentials cannot be true when allowOrigins is [\"*\"]; list the origins"))]
#[serde(rename_all = "camelCase")]
pub struct CorsSpec {
    /// Allowed origins as browsers send them, `scheme://host[:port]` without a path
    /// (`https://app.example.com`); `["*"]` alone allows every origin. At most 256.
    // Bounded, so the API server can estimate the cost of the CEL rule above.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    #[schemars(inner(length(max = 512)))]
    #[schemars(inner(pattern(r"^(\*|[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s@]+)$")))]
    pub allow_origins: Vec<String>,
    /// Regular expressions; an origin one of them matches as a whole is allowed
    /// (`https://[a-z0-9-]+\.example\.com`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_origin_patterns: Vec<String>,
    /// Let browsers send cookies and HTTP authentication; not with the `*` origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_credentials: Option<bool>,
    /// Methods a preflight may ask for; default GET and POST.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(pattern(r"^[!#$%&'+.^_`|~0-9A-Za-z-]+$")))]
    pub allow_methods: Vec<String>,
    /// Request headers a preflight may ask for; default: the ones it asks for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(pattern(r"^[!#$%&'+.^_`|~0-9A-Za-z-]+$")))]
    pub allow_headers: Vec<String>,
    /// Response headers browser scripts may read beyond the CORS-safelisted ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(pattern(r"^[!#$%&'+.^_`|~0-9A-Za-z-]+$")))]
    pub expose_headers: Vec<String>,
    /// Seconds browsers may cache a preflight answer (Access-Control-Max-Age); unset
    /// leaves it to the browser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_age_seconds: Option<u32>,
}

/// CSRF prevention settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CsrfSpec {
    /// Refuse requests a browser could send without a preflight; default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Any one of these request headers (any value) lets such a request through; default
    /// `x-apollo-operation-name` and `apollo-require-preflight`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(inner(pattern(r"^[!#$%&'+.^_`|~0-9A-Za-z-]+$")))]
    pub required_headers: Option<Vec<String>>,
}

/// Where the persisted document list is and what is done with operations not in it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PersistedDocumentsSpec {
    /// The ConfigMap (in the GraphGateway's namespace) and its key holding the list.
    pub config_map: ConfigMapKey,
    /// `auto` (default: an Apollo manifest by its `format` key, else an id -> document
    /// map), `apollo`, `relay` or `hive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<PersistedDocumentsFormat>,
    /// `allowArbitrary` (default: listed ids and any operation text), `safelist` (listed
    /// ids, or the listed text exactly) or `requireId` (listed ids only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<PersistedDocumentsMode>,
}

/// A key of a ConfigMap.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapKey {
    /// The ConfigMap's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The key whose value is the list file.
    #[schemars(pattern(r"^[-._a-zA-Z0-9]+$"), length(min = 1, max = 253))]
    pub key: String,
}

/// The list file's format.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PersistedDocumentsFormat {
    Auto,
    Apollo,
    Relay,
    Hive,
}

/// What happens to operations not in the persisted document list.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PersistedDocumentsMode {
    AllowArbitrary,
    Safelist,
    RequireId,
}

/// Automatic persisted query settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApqSpec {
    /// Keep operations clients register by hash; default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Most operations kept; default 10000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_entries: Option<u32>,
    /// Most operation text kept, in bytes; default 33554432 (32 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_bytes: Option<u64>,
}

/// Response compression settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompressionSpec {
    /// Compress responses; default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Encodings offered (the client's Accept-Encoding weights choose; on a tie zstd,
    /// then br, then gzip); default all three.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub algorithms: Vec<CompressionAlgorithm>,
    /// Responses smaller than this many bytes are sent uncompressed; default 1024.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_size_bytes: Option<u32>,
    /// Effort: fastest, default (gzip 6, br 4, zstd 3) or best.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<CompressionLevel>,
}

/// A content coding the gateway can compress responses with.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CompressionAlgorithm {
    Gzip,
    Br,
    Zstd,
}

/// HTTP version towards subgraphs.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SubgraphHttp2 {
    // Not `off`: Kubernetes' YAML reads an unquoted `off` as the boolean false.
    Disabled,
    PriorKnowledge,
    Alpn,
}

/// Encoding of subgraph request bodies.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SubgraphRequestCompression {
    None,
    Gzip,
    Br,
    Zstd,
}

/// Compression effort.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CompressionLevel {
    Fastest,
    Default,
    Best,
}

/// Deployment rolling-update parameters.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
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
    /// `Composed`, `Ready`, `Progressing`, `Degraded`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Short SHA-256 of the supergraph being served (the last good one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supergraph_hash: Option<String>,
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
