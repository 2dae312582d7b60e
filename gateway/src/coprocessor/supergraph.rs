//! The supergraph stages: the GraphQL request once its operation is known
//! (`SupergraphRequest`: the request as JSON, the claims, the operation's name and kind
//! and the `@policy` policies it touches in the context), and its single response
//! (`SupergraphResponse`). The request stage's answer decides those policies.

use super::context::{self, RequestContext};
use super::protocol::{self, Control, Payload, Stage};
use super::{Called, Coprocessor, Failed, context_in, context_out};
use crate::auth::authz::PolicyGrants;
use crate::pipeline::error::RequestError;
use crate::pipeline::request::GraphQLRequest;
use http::{HeaderMap, StatusCode};
use serde_json::{Map, Value, json};

/// What a `SupergraphRequest` answer changes; `None`s change nothing.
#[derive(Default)]
pub struct SupergraphChanges {
    /// The GraphQL request the answer's body holds instead.
    pub request: Option<GraphQLRequest>,
    /// The client headers the answer gave (subgraph headers are made from them again).
    pub headers: Option<HeaderMap>,
    /// The `@policy` decisions, when the context carried the policies.
    pub grants: Option<PolicyGrants>,
    /// The claims in the context after the answer (the coprocessor may set them).
    pub claims: Option<Map<String, Value>>,
}

/// What the request stage is told about the operation.
pub struct Operation<'a> {
    pub name: Option<&'a str>,
    /// `query`, `mutation` or `subscription`.
    pub kind: &'static str,
    /// The `@policy` policies its fields touch.
    pub policies: Vec<String>,
}

impl Coprocessor {
    pub fn supergraph_request_on(&self) -> bool {
        self.config.supergraph.request != Default::default()
    }

    pub fn supergraph_response_on(&self) -> bool {
        self.config.supergraph.response != Default::default()
    }

    /// Whether `@policy` decisions come from the `SupergraphRequest` answer.
    pub fn decides_policies(&self) -> bool {
        let conf = &self.config.supergraph.request.context;
        conf.includes(context::REQUIRED_POLICIES)
    }

    /// `SupergraphRequest` for `request`; a break or a failure refuses the request.
    pub async fn supergraph_request(
        &self,
        ctx: &RequestContext,
        request: &GraphQLRequest,
        operation: Operation<'_>,
        sdl: &str,
    ) -> Result<SupergraphChanges, RequestError> {
        let conf = &self.config.supergraph.request;
        let stage = Stage::SupergraphRequest;
        if conf.context.is_on() {
            let mut entries = ctx.entries.lock();
            if let Some(name) = operation.name {
                entries.insert(context::OPERATION_NAME.to_owned(), json!(name));
            }
            entries.insert(context::OPERATION_KIND.to_owned(), json!(operation.kind));
            if !operation.policies.is_empty() {
                let policies = operation.policies.iter().map(|p| (p.clone(), Value::Null));
                let policies = Value::Object(policies.collect());
                entries.insert(context::REQUIRED_POLICIES.to_owned(), policies);
            }
        }
        let mut payload = Payload::new(stage, &ctx.id);
        if conf.headers {
            payload.headers = Some(protocol::headers_out(&ctx.headers.lock()));
        }
        if conf.body {
            payload.body = Some(request_json(request));
        }
        if conf.method {
            payload.method = Some(ctx.method.to_string());
        }
        if conf.sdl {
            payload.sdl = Some(sdl.to_owned());
        }
        let sent = context_out(&conf.context, ctx);
        let sent_keys = sent.as_ref().map(|(_, k)| k.clone()).unwrap_or_default();
        payload.context = sent.map(|(c, _)| c);
        let url = self.config.url_of(&conf.url);
        let decides = self.decides_policies();
        let skipped = SupergraphChanges {
            // Failing open grants nothing.
            grants: decides.then(PolicyGrants::default),
            ..SupergraphChanges::default()
        };
        let mut answer = match self.call(url, payload).await {
            Err(Failed) => return Err(RequestError::internal()),
            Ok(Called::Skipped) => return Ok(skipped),
            Ok(Called::Answer(answer)) => answer,
        };
        let refuse = |e| match self.refused(stage, e) {
            Ok(_) => Ok(SupergraphChanges {
                grants: decides.then(PolicyGrants::default),
                ..SupergraphChanges::default()
            }),
            Err(Failed) => Err(RequestError::internal()),
        };
        let headers = match answer.headers.as_ref().map(protocol::headers_in) {
            None => None,
            Some(Ok(headers)) => Some(headers),
            Some(Err(e)) => return refuse(e),
        };
        context_in(ctx, stage, &sent_keys, &mut answer);
        if let Some(Control::Break(code)) = answer.control {
            let body = protocol::break_body(stage, answer.body.take());
            let status = StatusCode::from_u16(code).expect("checked by read_answer");
            let body = serde_json::to_vec(&body).expect("JSON serializes");
            return Err(RequestError::answer(
                status,
                headers.unwrap_or_default(),
                body,
            ));
        }
        let request = match answer.body.take() {
            None => None,
            Some(body) => match serde_json::from_value::<GraphQLRequest>(body) {
                Ok(request) => Some(request),
                Err(e) => return refuse(protocol::ProtocolError::Malformed(e.to_string())),
            },
        };
        if let Some(headers) = &headers {
            *ctx.headers.lock() = headers.clone();
        }
        let grants = decides.then(|| grants(&ctx.entries.lock()));
        Ok(SupergraphChanges {
            request,
            headers,
            grants,
            claims: conf.context.is_on().then(|| ctx.claims()).flatten(),
        })
    }

    /// `SupergraphResponse` for a single response: what the client gets instead.
    pub async fn supergraph_response(
        &self,
        ctx: &RequestContext,
        status: StatusCode,
        headers: &mut HeaderMap,
        body: Vec<u8>,
        sdl: Option<&str>,
    ) -> Result<(StatusCode, Vec<u8>), Failed> {
        let conf = &self.config.supergraph.response;
        let stage = Stage::SupergraphResponse;
        let mut payload = Payload::new(stage, &ctx.id);
        if conf.headers {
            payload.headers = Some(protocol::headers_out(headers));
        }
        if conf.body {
            payload.body = serde_json::from_slice(&body).ok();
        }
        if conf.status_code {
            payload.status_code = Some(status.as_u16());
        }
        if conf.sdl {
            payload.sdl = sdl.map(str::to_owned);
        }
        let sent = context_out(&conf.context, ctx);
        let sent_keys = sent.as_ref().map(|(_, k)| k.clone()).unwrap_or_default();
        payload.context = sent.map(|(c, _)| c);
        let url = self.config.url_of(&conf.url);
        let mut answer = match self.call(url, payload).await? {
            Called::Skipped => return Ok((status, body)),
            Called::Answer(answer) => answer,
        };
        let returned = answer.headers.as_ref().map(protocol::headers_in);
        let checked = answer
            .body
            .as_ref()
            .filter(|_| self.config.response_validation);
        let problem = match (returned, checked.map(protocol::check_graphql_response)) {
            (Some(Err(e)), _) | (_, Some(Err(e))) => Some(e),
            (Some(Ok(returned)), _) => {
                *headers = returned;
                None
            }
            _ => None,
        };
        if let Some(e) = problem {
            self.refused(stage, e)?;
            return Ok((status, body));
        }
        context_in(ctx, stage, &sent_keys, &mut answer);
        let status = answer
            .control
            .map_or(status, super::router::response_status);
        let body = match answer.body {
            Some(value) => serde_json::to_vec(&value).expect("JSON serializes"),
            None => body,
        };
        Ok((status, body))
    }
}

/// The GraphQL request as the wire carries it.
fn request_json(request: &GraphQLRequest) -> Value {
    let mut out = Map::new();
    if let Some(query) = &request.query {
        out.insert("query".into(), json!(query));
    }
    if let Some(name) = &request.operation_name {
        out.insert("operationName".into(), json!(name));
    }
    if let Some(variables) = &request.variables {
        let variables = serde_json::to_value(variables).expect("variables serialize");
        out.insert("variables".into(), variables);
    }
    let persisted = request
        .extensions
        .as_ref()
        .and_then(|e| e.persisted_query.as_ref());
    if let Some(persisted) = persisted {
        let hash = &persisted.sha256_hash;
        let extensions = json!({"persistedQuery": {"version": 1, "sha256Hash": hash}});
        out.insert("extensions".into(), extensions);
    }
    if let Some(id) = &request.document_id {
        out.insert("documentId".into(), json!(id));
    }
    Value::Object(out)
}

/// The policies the context's `required_policies` answers `true` (only `true` grants).
fn grants(entries: &Map<String, Value>) -> PolicyGrants {
    let Some(Value::Object(policies)) = entries.get(context::REQUIRED_POLICIES) else {
        return PolicyGrants::default();
    };
    let granted = policies.iter().filter(|(_, v)| **v == Value::Bool(true));
    PolicyGrants(granted.map(|(k, _)| k.clone()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_true_grants_a_policy() {
        let entries = json!({ context::REQUIRED_POLICIES: {
            "a": true, "b": false, "c": null, "d": "true", "e": 1 } });
        let grants = grants(entries.as_object().expect("object"));
        assert_eq!(grants.0, vec!["a".to_owned()]);
        assert!(super::grants(&Map::new()).0.is_empty());
    }
}
