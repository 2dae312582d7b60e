//! `subscriptions`: how clients subscribe (WebSocket, SSE, multipart HTTP), the limits
//! that keep open subscriptions bounded, and `subgraphs.<name>.subscription`: how the
//! gateway subscribes to the subgraph owning a subscription root field.

use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SubscriptionsConfig {
    /// Accept subscription operations (off: they get a request error).
    pub enabled: bool,
    /// Path of the WebSocket endpoint (`graphql-transport-ws`); `None`: `graphql_path`.
    #[schemars(regex(pattern = r"^/"))]
    pub websocket_path: Option<String>,
    /// Most subscriptions open in the gateway at once; one more is refused.
    #[schemars(range(min = 1))]
    pub max_open: usize,
    /// Most subscriptions open at once from one client address.
    #[schemars(range(min = 1))]
    pub max_per_client: usize,
    /// Most WebSocket connections open at once from one client address.
    #[schemars(range(min = 1))]
    pub max_connections_per_client: usize,
    /// Most operations at once on one WebSocket connection.
    #[schemars(range(min = 1))]
    pub max_per_connection: usize,
    /// Events queued for one subscriber; a subscriber that falls further behind is cut
    /// with an error (memory stays bounded by slow consumers).
    #[schemars(range(min = 1))]
    pub queue_size: usize,
    /// Identical subscriptions (same operation, variables and forwarded headers) share
    /// one subgraph subscription and each event is completed once for all of them.
    pub deduplicate: bool,
    /// Longest a WebSocket client may take to send `connection_init`.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub init_timeout: Duration,
    /// Keep-alive interval of SSE and multipart streams (a comment / an empty part).
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub heartbeat_interval: Duration,
    /// Longest a message may wait for a WebSocket client to take it; a client that does
    /// not read for this long is disconnected (its messages would pile up otherwise).
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub send_timeout: Duration,
    /// Longest wait for a subgraph to accept a subscription.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub subgraph_connect_timeout: Duration,
    /// The `connection_init` payload key holding a WebSocket client's token (matched
    /// case-insensitively; `<authentication.header.prefix> <token>` or the bare token),
    /// validated like the HTTP header; `null`: payloads are not read for a token.
    pub init_token_key: Option<String>,
    /// `connection_init` payload keys copied into the `connection_init` of subgraph
    /// WebSocket connections (exact names); empty: subgraphs get no payload.
    #[schemars(length(max = 64))]
    pub forward_init_keys: Vec<String>,
    /// How often the gateway pings a WebSocket client (a ping frame; a `ka` message
    /// too over the legacy `graphql-ws` protocol); `null`: never.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::nullable_duration")]
    pub ping_interval: Option<Duration>,
    /// Longest wait for a client's pong to the gateway's ping before its connection is
    /// closed.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub pong_timeout: Duration,
}

impl Default for SubscriptionsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            websocket_path: None,
            max_open: 100_000,
            max_per_client: 1_000,
            max_connections_per_client: 100,
            max_per_connection: 100,
            queue_size: 128,
            deduplicate: true,
            init_timeout: Duration::from_secs(10),
            heartbeat_interval: Duration::from_secs(5),
            send_timeout: Duration::from_secs(30),
            subgraph_connect_timeout: Duration::from_secs(10),
            init_token_key: Some("Authorization".to_owned()),
            forward_init_keys: Vec::new(),
            ping_interval: Some(Duration::from_secs(15)),
            pong_timeout: Duration::from_secs(10),
        }
    }
}

/// `subgraphs.<name>.subscription`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
// The API server checks the URL's scheme against the protocol (CEL), as `validate` does.
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.url) || ((has(self.protocol) && self.protocol == 'sse') ? (self.url.startsWith('http://') || self.url.startsWith('https://')) : (self.url.startsWith('ws://') || self.url.startsWith('wss://')))",
    "message": "url must start with ws:// or wss:// for protocol websocket, http:// or https:// for sse"
}]))]
#[serde(default, deny_unknown_fields)]
pub struct SubgraphSubscriptionConfig {
    pub protocol: SubgraphProtocol,
    /// Where to subscribe; `None`: the subgraph's URL (`http`→`ws`, `https`→`wss` for
    /// WebSocket).
    pub url: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SubgraphProtocol {
    /// `graphql-transport-ws`.
    #[default]
    Websocket,
    /// GraphQL over SSE (distinct connections).
    Sse,
}
