//! Subscriptions: how clients subscribe to the gateway and how it subscribes to
//! subgraphs.

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// Subscriptions over WebSocket (`graphql-transport-ws`), SSE and multipart HTTP, their
/// limits, and the protocol each subgraph is subscribed to with. On SIGTERM the gateway
/// ends every open subscription with a last error (`SUBSCRIPTION_SHUTDOWN`) so clients
/// resubscribe to another pod. Unset keys keep the gateway's defaults.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsSpec {
    /// Accept subscription operations; default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Path of the WebSocket endpoint; default the GraphQL path (`/graphql`). Served on
    /// the gateway's port, so the Service needs nothing more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^/[^?#\s]*$"), length(max = 1024))]
    pub websocket_path: Option<String>,
    /// Most subscriptions open in one gateway pod; default 100000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_open: Option<u32>,
    /// Most subscriptions open at once from one client address; default 1000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_per_client: Option<u32>,
    /// Most WebSocket connections open at once from one client address; default 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_connections_per_client: Option<u32>,
    /// Most operations at once on one WebSocket connection; default 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_per_connection: Option<u32>,
    /// Events queued for one subscriber; one further behind is cut with
    /// `SUBSCRIPTION_QUEUE_FULL`; default 128.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub queue_size: Option<u32>,
    /// Identical subscriptions share one subgraph subscription and one completion per
    /// event; default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deduplicate: Option<bool>,
    /// Longest a WebSocket client may take to send `connection_init`, in milliseconds;
    /// default 10000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub init_timeout_ms: Option<u32>,
    /// Keep-alive interval of SSE and multipart streams, in milliseconds; default 5000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub heartbeat_interval_ms: Option<u32>,
    /// Longest wait for a subgraph to accept a subscription, in milliseconds; default
    /// 10000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub subgraph_connect_timeout_ms: Option<u32>,
    /// How single subgraphs are subscribed to; the others get `graphql-transport-ws` at
    /// their URL with `http` turned into `ws`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 128))]
    pub subgraphs: Vec<SubgraphSubscriptionSpec>,
}

/// The subscription protocol and endpoint of one subgraph.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new(
    "!has(self.url) || ((has(self.protocol) && self.protocol == 'sse') ? self.url.matches('^https?://') : self.url.matches('^wss?://'))"
).message("url must start with ws:// or wss:// for protocol websocket, http:// or https:// for sse"))]
#[serde(rename_all = "camelCase")]
pub struct SubgraphSubscriptionSpec {
    /// The subgraph's name, as in its Subgraph resource and the supergraph.
    #[schemars(length(min = 1, max = 253))]
    pub subgraph: String,
    /// `websocket` (`graphql-transport-ws`, the default) or `sse` (GraphQL over SSE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<SubscriptionProtocol>,
    /// Where to subscribe; default the subgraph's URL (`http`→`ws`, `https`→`wss` for
    /// WebSocket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 8, max = 2048))]
    pub url: Option<String>,
}

/// Protocol of the gateway's subscriptions to a subgraph.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SubscriptionProtocol {
    Websocket,
    Sse,
}
