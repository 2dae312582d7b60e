//! What comes in: the GraphQL request, what the HTTP layer knows besides it, and the
//! media type the client reads. Shared by every stage; uses none of them.

use apollo_compiler::response::JsonMap;
use std::sync::Arc;

#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphQLRequest {
    pub query: Option<String>,
    pub operation_name: Option<String>,
    #[serde(default)]
    pub variables: Option<JsonMap>,
    /// Only `persistedQuery` is read (APQ and Apollo persisted queries).
    #[serde(default)]
    pub extensions: Option<crate::persisted::RequestExtensions>,
    /// A persisted document's id (`documentId`; Relay's `doc_id` too).
    #[serde(default, alias = "doc_id")]
    pub document_id: Option<String>,
}

/// What the HTTP layer knows about a request besides its GraphQL body.
#[derive(Debug, Default)]
pub struct RequestMeta {
    /// False for GET requests.
    pub allow_mutation: bool,
    /// Headers for subgraph requests (the header rules applied to the client's).
    pub forward_headers: crate::executor::headers::SubgraphHeaders,
    /// The client's W3C trace context headers (only kept while traces are exported).
    pub trace_context: http::HeaderMap,
    /// The claims of the request's validated JWT, when it carried one (`authentication`).
    pub claims: Option<Arc<serde_json::Map<String, serde_json::Value>>>,
    /// The client takes incremental delivery (`multipart/mixed`): `@defer` is honoured
    /// (by `Gateway::execute_shared`).
    pub incremental: bool,
    /// The client's transport carries subscriptions (WebSocket, SSE, multipart with
    /// `subscriptionSpec`): a subscription gets `Outcome::Subscribed`.
    pub stream: bool,
    /// The client's address (the per-client subscription limit).
    pub client: Option<std::net::IpAddr>,
    /// The client as `rate_limit.per_client.key` tells them apart (`None`: no
    /// per-client bucket, or the request lacks the header or claim).
    pub rate_key: Option<Box<str>>,
    /// The client application its headers name (recorded with the operation's usage).
    pub app: Option<crate::usage::ClientApp>,
    /// When the transport's request timeout cuts the request (set by the HTTP server,
    /// whose clock starts before the body is read); otherwise the timeout runs from the
    /// execution's start. A request dropped at or past it counts as `timeout`.
    pub deadline: Option<std::time::Instant>,
    /// A WebSocket client's `connection_init` keys forwarded to subgraph WebSocket
    /// connections (`subscriptions.forward_init_keys`), as a JSON object's text.
    pub init_payload: Option<Arc<str>>,
    /// What the request's coprocessor stages share; `None` without a coprocessor.
    pub coprocessor: Option<Arc<crate::coprocessor::context::RequestContext>>,
}

/// The media type a response is written in, as negotiated from `Accept`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Media {
    /// `application/graphql-response+json`: request errors answer 400.
    GraphQLResponse,
    /// `application/json`: every GraphQL response answers 200 (clients predating the
    /// GraphQL media type read the body, not the status).
    Json,
}

impl Media {
    pub fn as_str(self) -> &'static str {
        match self {
            Media::GraphQLResponse => "application/graphql-response+json",
            Media::Json => "application/json",
        }
    }
}
