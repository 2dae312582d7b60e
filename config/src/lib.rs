//! The gateway's configuration schema, the one source for every tool: the gateway
//! loads it (file, `GRAPHFLEET_*` environment, flags), and the GraphGateway's
//! `spec.config` embeds its JSON schema, so the API server validates the same keys and
//! `kubectl explain` shows the same docs. Unknown keys are errors, so a typo never
//! silently falls back to a default. Nothing here reads a file.

mod auth;
mod batching;
mod checks;
mod coprocessor;
mod demand;
mod headers;
mod http;
pub mod manifest;
mod persisted;
mod proxies;
mod rate_limit;
mod resilience;
mod response_headers;
mod schema;
mod size;
mod subscription;
mod tls;
mod usage;
mod validate;

pub use auth::{AuthenticationConfig, AuthorizationConfig, JwksSource, PolicyRule, TokenHeader};
pub use batching::BatchingConfig;
pub use checks::http_url as check_http_url;
pub use coprocessor::{
    ContextConf, CoprocessorConfig, OnError, RouterRequestConf, RouterResponseConf, RouterStages,
    SubgraphAllStages, SubgraphRequestConf, SubgraphResponseConf, SubgraphStages,
    SupergraphRequestConf, SupergraphResponseConf, SupergraphStages,
};
pub use demand::{DemandControlConfig, DemandControlMode};
pub use headers::{HeaderAction, HeaderRule, InsertRule, PropagateRule, RemoveRule};
pub use http::{
    CompressionAlgorithm, CompressionConfig, CompressionLevel, CorsConfig, CsrfConfig,
    DEFAULT_CSRF_HEADERS, GraphiqlConfig,
};
pub use persisted::{ApqConfig, ManifestFormat, PersistedDocumentsConfig, PersistedMode};
pub use proxies::{ClientAddressHeader, TrustedProxies};
pub use rate_limit::{BucketConfig, ClientBucketConfig, ClientKey, RateLimitConfig, RedisConfig};
pub use resilience::{CircuitBreakerConfig, ResilienceConfig, RetryConfig};
pub use response_headers::{
    CacheControlMode, MergeAlgorithm, ResponseHeaderAction, ResponseHeaderRule, ResponseInsertRule,
    ResponsePropagateRule,
};
pub use size::parse_size;
pub use subscription::{SubgraphProtocol, SubgraphSubscriptionConfig, SubscriptionsConfig};
pub use tls::{ListenerTlsConfig, SubgraphTlsConfig};
pub use usage::{AdminConfig, UsageConfig};
pub use validate::{Problems, validate};

use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The whole gateway configuration.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address the GraphQL endpoint listens on, and health and metrics unless
    /// `admin.listen` is set (then they are served there only).
    pub listen: SocketAddr,
    /// HTTPS on the listener when set; plain HTTP otherwise.
    pub tls: ListenerTlsConfig,
    /// Path of the GraphQL endpoint.
    #[schemars(regex(pattern = r"^/"))]
    pub graphql_path: String,
    pub supergraph: SupergraphConfig,
    pub shutdown: ShutdownConfig,
    pub traffic: TrafficConfig,
    /// Per-subgraph settings, by subgraph name as in the supergraph's `join__Graph`.
    #[schemars(extend("maxProperties" = 256))]
    pub subgraphs: BTreeMap<String, SubgraphConfig>,
    pub headers: HeadersConfig,
    pub limits: LimitsConfig,
    /// Operations registered ahead of time, run by id (off unless a list file is set).
    pub persisted_documents: PersistedDocumentsConfig,
    /// Automatic persisted queries (on by default, bounded cache).
    pub apq: ApqConfig,
    pub telemetry: TelemetryConfig,
    /// Cross-origin resource sharing for browser clients (off unless origins are set).
    pub cors: CorsConfig,
    /// Cross-site request forgery prevention (on by default).
    pub csrf: CsrfConfig,
    /// Response compression per `Accept-Encoding` (off by default).
    pub compression: CompressionConfig,
    /// GraphiQL for browsers on the GraphQL path (on where introspection is).
    pub graphiql: GraphiqlConfig,
    /// JWT validation (off unless `jwks` is set).
    pub authentication: AuthenticationConfig,
    /// Enforcement of `@authenticated`, `@requiresScopes` and `@policy`.
    pub authorization: AuthorizationConfig,
    /// Progressive override labels fixed on or off (`percent(N)` ones are drawn otherwise).
    pub progressive_override: ProgressiveOverrideConfig,
    /// Static cost estimates of operations from `@cost`/`@listSize` (off by default).
    pub demand_control: DemandControlConfig,
    /// Subscriptions: client transports and limits.
    pub subscriptions: SubscriptionsConfig,
    /// Recording of served operations, for the operator's checks against real traffic.
    pub usage: UsageConfig,
    /// The admin listener (readiness with the served supergraph, recorded operations).
    pub admin: AdminConfig,
    /// Tokio worker threads; `None` sizes them to the cgroup CPU quota.
    pub workers: Option<usize>,
    /// JSON-array bodies of several operations (query batching), off by default.
    pub batching: BatchingConfig,
    /// Token buckets per client and for the whole gateway (or fleet, through Redis).
    pub rate_limit: RateLimitConfig,
    /// An external service called at chosen request stages (Apollo Router's coprocessor
    /// protocol); off unless set.
    pub coprocessor: Option<CoprocessorConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 4000)),
            tls: ListenerTlsConfig::default(),
            graphql_path: "/graphql".to_owned(),
            supergraph: SupergraphConfig::default(),
            shutdown: ShutdownConfig::default(),
            traffic: TrafficConfig::default(),
            subgraphs: BTreeMap::new(),
            headers: HeadersConfig::default(),
            limits: LimitsConfig::default(),
            persisted_documents: PersistedDocumentsConfig::default(),
            apq: ApqConfig::default(),
            telemetry: TelemetryConfig::default(),
            cors: CorsConfig::default(),
            csrf: CsrfConfig::default(),
            compression: CompressionConfig::default(),
            graphiql: GraphiqlConfig::default(),
            authentication: AuthenticationConfig::default(),
            authorization: AuthorizationConfig::default(),
            progressive_override: ProgressiveOverrideConfig::default(),
            demand_control: DemandControlConfig::default(),
            subscriptions: SubscriptionsConfig::default(),
            usage: UsageConfig::default(),
            admin: AdminConfig::default(),
            workers: None,
            batching: BatchingConfig::default(),
            rate_limit: RateLimitConfig::default(),
            coprocessor: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SupergraphConfig {
    /// The supergraph SDL file (required, from the file, env or `--supergraph`).
    pub path: Option<PathBuf>,
    /// Reload the supergraph when the file (or a ConfigMap symlink swap) changes.
    pub watch: bool,
    /// How often the file is re-checked in addition to filesystem events.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub poll_interval: Duration,
}

impl Default for SupergraphConfig {
    fn default() -> Self {
        Self {
            path: None,
            watch: true,
            poll_interval: Duration::from_secs(5),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ShutdownConfig {
    /// After SIGTERM: time allowed for in-flight requests to finish.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub grace_period: Duration,
    /// After SIGTERM: time readiness reports failure before the listener closes, so
    /// endpoints controllers stop routing new requests here first.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub readiness_delay: Duration,
}

impl Default for ShutdownConfig {
    fn default() -> Self {
        Self {
            grace_period: Duration::from_secs(30),
            readiness_delay: Duration::from_secs(0),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TrafficConfig {
    /// Whole-request timeout (parse to response).
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub request_timeout: Duration,
    /// Default timeout of one subgraph fetch.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub subgraph_timeout: Duration,
    /// Default for in-flight deduplication of identical subgraph query requests (on:
    /// queries have no side effects, and concurrent identical ones are common under load).
    pub deduplicate: bool,
    /// Longest a client may take to send a request's headers, and a new connection to
    /// begin its first request (TLS handshake aside); slower connections are closed (a
    /// slow or silent client would otherwise hold its connection forever).
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub header_read_timeout: Duration,
    /// Longest a client connection may stay open with no request in flight and no
    /// bytes moving; then it is closed. Longer than the 60 s idle timeout common in
    /// load balancers, so the proxy in front closes first and never reuses a
    /// connection the gateway is closing.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub idle_timeout: Duration,
    /// Longest a kept-alive client connection is reused: after it (spread by up to 10%
    /// per connection) the next answer carries `Connection: close`, so the client's next
    /// request opens a new connection, which the Service may send to another pod. Without
    /// it, clients that keep connections alive stay on the pods they first reached and
    /// never see pods added later (a scale-up, a canary). Unset: connections are reused
    /// until they idle out; a GraphGateway with the Canary strategy sets 30s.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub max_connection_age: Option<Duration>,
    /// Most client connections open at once; further clients wait to be accepted.
    pub max_connections: usize,
    /// Most connections open at once from one client address; more are closed as they
    /// are accepted, so one client cannot take every slot. Behind a proxy that is one
    /// client: keep it above the proxy's connection pool.
    pub max_connections_per_client: usize,
    /// Proxies (CIDR ranges, or addresses) trusted to name the client: a request from
    /// one counts, for the per-client subscription and WebSocket limits, as from the
    /// right-most address in `client_address_header` that no trusted proxy added. The
    /// per-client connection limit always counts the TCP peer.
    #[schemars(length(max = 256))]
    pub trusted_proxies: Vec<String>,
    /// Where trusted proxies name the client: `auto` (`X-Forwarded-For` when present,
    /// else `Forwarded: for=`), `forwarded` (`Forwarded` alone), or a header name
    /// (`x-forwarded-for` alone, `x-real-ip`, `true-client-ip`): a comma-separated list
    /// of addresses, read from the right. Name the one header your proxy writes, so a
    /// header a client wrote itself is never read.
    #[schemars(length(min = 1, max = 256))]
    pub client_address_header: String,
    /// Most GraphQL requests worked on at once; one more is answered 503 at once (a
    /// load balancer retries it elsewhere) instead of queueing behind them. Health and
    /// metrics requests are never refused.
    pub max_concurrent_requests: usize,
    /// Largest subgraph response body accepted (bytes, or with a unit: `64MiB`).
    #[serde(deserialize_with = "size::deserialize")]
    #[schemars(schema_with = "crate::schema::size")]
    pub max_subgraph_response_bytes: usize,
    /// TLS towards `https://` subgraphs (extra CA, client certificate).
    pub tls: SubgraphTlsConfig,
    /// HTTP version towards subgraphs.
    pub http2: Http2Mode,
    /// Encoding of subgraph request bodies (`Content-Encoding`).
    pub compress_requests: RequestCompression,
    /// Ask subgraphs for compressed responses (`Accept-Encoding: gzip, br, zstd`).
    /// Compressed responses are decoded whether asked for or not; off by default
    /// because on a cluster network compressing costs both sides more CPU than the
    /// saved bytes are worth.
    pub accept_compressed_responses: bool,
    /// Retries, circuit breaking and a concurrency limit, per subgraph (each subgraph
    /// has its own breaker and budget); all off by default.
    pub resilience: ResilienceConfig,
}

/// `traffic.http2`, `subgraphs.<name>.http2`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Http2Mode {
    /// HTTP/1.1. Spelt `disabled`, not `off`: YAML 1.1 readers (kubectl's among them)
    /// take a bare `off` for the boolean false; the gateway's own file accepts `off` too.
    #[default]
    #[serde(rename = "disabled", alias = "off")]
    Off,
    /// HTTP/2 only: h2c for `http://`, TLS with ALPN `h2` alone for `https://`.
    PriorKnowledge,
    /// `https://`: ALPN offers `h2` and `http/1.1`; `http://` stays HTTP/1.1.
    Alpn,
}

/// `traffic.compress_requests`, `subgraphs.<name>.compress_requests`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RequestCompression {
    #[default]
    None,
    Gzip,
    Br,
    Zstd,
}

impl Default for TrafficConfig {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(30),
            subgraph_timeout: Duration::from_secs(10),
            deduplicate: true,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(90),
            max_connection_age: None,
            max_connections: 10_000,
            max_connections_per_client: 2_500,
            trusted_proxies: Vec::new(),
            client_address_header: "auto".to_owned(),
            max_concurrent_requests: 2_048,
            max_subgraph_response_bytes: 64 * 1024 * 1024,
            tls: SubgraphTlsConfig::default(),
            http2: Http2Mode::default(),
            compress_requests: RequestCompression::default(),
            accept_compressed_responses: false,
            resilience: ResilienceConfig::default(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SubgraphConfig {
    /// Routing URL override (else the supergraph's `join__graph(url:)`).
    pub url: Option<String>,
    /// Fetch timeout override.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub timeout: Option<Duration>,
    /// In-flight deduplication override.
    pub deduplicate: Option<bool>,
    /// TLS override, key by key over `traffic.tls`.
    pub tls: Option<SubgraphTlsConfig>,
    /// HTTP version override.
    pub http2: Option<Http2Mode>,
    /// Request compression override.
    pub compress_requests: Option<RequestCompression>,
    /// `Accept-Encoding` override.
    pub accept_compressed_responses: Option<bool>,
    /// Replaces `traffic.resilience` for this subgraph, whole.
    pub resilience: Option<ResilienceConfig>,
    /// Header rules for this subgraph, applied after `headers.rules`.
    #[schemars(length(max = 64))]
    pub headers: Vec<HeaderRule>,
    /// Rules for this subgraph's response headers, applied after `headers.response`.
    #[schemars(length(max = 64))]
    pub response_headers: Vec<ResponseHeaderRule>,
    /// How subscriptions to this subgraph are sent.
    pub subscription: SubgraphSubscriptionConfig,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct HeadersConfig {
    /// Forward the client's `Authorization` header to subgraphs.
    pub forward_authorization: bool,
    /// Other client headers forwarded to every subgraph (case-insensitive names).
    pub propagate: Vec<String>,
    /// Rules for every subgraph request, after `forward_authorization` and `propagate`.
    #[schemars(length(max = 64))]
    pub rules: Vec<HeaderRule>,
    /// Rules for every subgraph response: which of its headers reach the client.
    /// None do by default.
    #[schemars(length(max = 64))]
    pub response: Vec<ResponseHeaderRule>,
    /// The client's `Cache-Control` from the subgraphs' (`most_restrictive`), or not.
    pub cache_control: CacheControlMode,
}

impl Default for HeadersConfig {
    fn default() -> Self {
        Self {
            forward_authorization: true,
            propagate: Vec::new(),
            rules: Vec::new(),
            response: Vec::new(),
            cache_control: CacheControlMode::Off,
        }
    }
}

/// `@override(label:)` labels. A label is off unless listed in `enabled_labels`, except
/// `percent(N)` labels, which are on for N % of requests unless listed here.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ProgressiveOverrideConfig {
    /// Labels on for every request (a migration that is done, before recomposing).
    pub enabled_labels: Vec<String>,
    /// Labels off for every request, `percent(N)` ones included (a rollback).
    pub disabled_labels: Vec<String>,
}

/// Request limits; `None` (`null` in YAML) means unlimited. The defaults let every
/// operation a real client sends through and stop the ones only an attacker writes:
/// see "Limits" in gateway/README.md for how they compare with other gateways'.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Largest accepted request body, in bytes (`65536`, or with a unit: `512KiB`, `2MiB`).
    #[serde(deserialize_with = "size::deserialize")]
    #[schemars(schema_with = "crate::schema::size")]
    pub max_body_bytes: usize,
    /// Deepest field nesting in an operation (fragments expanded).
    pub max_depth: Option<u32>,
    /// Most aliased fields in an operation (fragments expanded).
    pub max_aliases: Option<u32>,
    /// Most root fields in the selected operation.
    pub max_root_fields: Option<u32>,
    /// Most lexical tokens in the query document.
    pub max_tokens: Option<u32>,
    /// Most distinct fields once fragments are merged: the planner's budget.
    pub max_height: Option<u32>,
    /// Largest response: subgraph response bodies of one request together, and the
    /// response written to the client; beyond it the response is cut with an error.
    #[serde(deserialize_with = "size::deserialize")]
    #[schemars(schema_with = "crate::schema::size")]
    pub max_response_bytes: usize,
    /// Memory all in-flight requests may hold together (bytes, or with a unit): the
    /// subgraph bodies they read, entity copies, the values parsed from them and the
    /// responses being written, until sent. A new request gets 503 while less than
    /// `max_response_bytes` of it is free, or while an operation known to take more
    /// does not fit beside what is held or reserved; a running request that would pass
    /// it fails with `MEMORY_BUDGET_EXCEEDED`.
    /// `0` (the default): half the container's memory limit, or 384MiB without one; never
    /// below twice `max_response_bytes`, which one request may hold. Set, it must be
    /// at least that.
    #[serde(deserialize_with = "size::deserialize")]
    #[schemars(schema_with = "crate::schema::size")]
    pub max_inflight_bytes: usize,
    /// Answer `__schema` / `__type`.
    pub introspection: bool,
    /// Most values (object entries and list items) an introspection answer may hold,
    /// counted against the schema before it runs; a bigger one is refused.
    pub max_introspection_values: Option<u32>,
    /// Memory the plan cache may hold per loaded supergraph (bytes, or with a unit),
    /// weighed by each operation's text and the subgraph queries its plans print
    /// (variants included); the least useful plans are evicted first.
    #[serde(deserialize_with = "size::deserialize")]
    #[schemars(schema_with = "crate::schema::size")]
    pub plan_cache_bytes: usize,
    /// Largest HTTP/2 request header list (bytes, or with a unit; as HTTP/2 counts it:
    /// names, values and 32 bytes per field), advertised to clients in SETTINGS. The
    /// default takes the longest GET URI HTTP/1 takes and 16 KiB of other headers; a
    /// bigger list gets the HTTP/2 library's 431 with no body. 1KiB to 16MiB.
    #[serde(deserialize_with = "size::deserialize")]
    #[schemars(schema_with = "crate::schema::size")]
    pub http2_max_header_list_bytes: usize,
}

impl LimitsConfig {
    /// No limit at all on operations (the body and response caps stay).
    pub fn unlimited() -> Self {
        Self {
            max_depth: None,
            max_aliases: None,
            max_root_fields: None,
            max_tokens: None,
            max_height: None,
            max_introspection_values: None,
            ..Self::default()
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 2 * 1024 * 1024,
            max_depth: Some(100),
            max_aliases: Some(1_000),
            max_root_fields: Some(500),
            max_tokens: Some(15_000),
            max_height: Some(5_000),
            max_response_bytes: 64 * 1024 * 1024,
            max_inflight_bytes: 0,
            introspection: true,
            max_introspection_values: Some(1_000_000),
            plan_cache_bytes: 16 * 1024 * 1024,
            http2_max_header_list_bytes: 65_534 + 16 * 1024,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryConfig {
    /// Serve Prometheus metrics at `metrics_path`.
    pub metrics: bool,
    #[schemars(regex(pattern = r"^/"))]
    pub metrics_path: String,
    /// Log line format.
    pub log_format: LogFormat,
    /// OTLP trace export; off unless an endpoint is set.
    pub tracing: TracingConfig,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            metrics: true,
            metrics_path: "/metrics".to_owned(),
            log_format: LogFormat::Text,
            tracing: TracingConfig::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TracingConfig {
    /// OTLP endpoint (gRPC, e.g. `http://otel-collector:4317`); `None` disables tracing.
    pub otlp_endpoint: Option<String>,
    /// `service.name` resource attribute.
    pub service_name: String,
    /// Fraction of root traces sampled, 0.0..=1.0 (parent decisions are honoured).
    #[schemars(range(min = 0.0, max = 1.0))]
    pub sample_ratio: f64,
}

impl Default for TracingConfig {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            service_name: "graphfleet-gateway".to_owned(),
            sample_ratio: 1.0,
        }
    }
}
