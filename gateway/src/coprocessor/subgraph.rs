//! The subgraph stages, as the executor's fetch hook: each fetch's request
//! (`SubgraphRequest`: headers, the subgraph GraphQL request, URI, service name) may be
//! rewritten or answered by the coprocessor (a break is that subgraph's response), and
//! its response (`SubgraphResponse`) changed before it is merged. A failure fails that
//! fetch alone, as a subgraph error would.

use super::context::RequestContext;
use super::protocol::{self, Control, Payload, Stage};
use super::{Called, Coprocessor, Failed, context_in, context_out};
use crate::executor::hook::{FetchHook, HookedRequest, Send};
use crate::executor::transport::{FetchError, Fetched};
use bytes::Bytes;
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// One request's subgraph stages.
pub struct SubgraphHook {
    coprocessor: Arc<Coprocessor>,
    ctx: Arc<RequestContext>,
    /// Numbers the request's fetches (`subgraphRequestId`).
    fetches: AtomicU64,
}

impl Coprocessor {
    /// The hook of a request's fetches, when a subgraph stage is configured.
    pub fn subgraph_hook(
        self: &Arc<Self>,
        ctx: &Arc<RequestContext>,
    ) -> Option<Arc<dyn FetchHook>> {
        let all = &self.config.subgraph.all;
        if all.request == Default::default() && all.response == Default::default() {
            return None;
        }
        Some(Arc::new(SubgraphHook {
            coprocessor: self.clone(),
            ctx: ctx.clone(),
            fetches: AtomicU64::new(0),
        }))
    }
}

/// The fetch error a failed stage gives (the reason is in the log).
fn failed(name: &str) -> FetchError {
    FetchError::http(format!(
        "HTTP fetch failed from '{name}': coprocessor error"
    ))
}

impl FetchHook for SubgraphHook {
    fn around<'a>(
        &'a self,
        request: HookedRequest,
        send: &'a Send<'a>,
    ) -> BoxFuture<'a, Result<Fetched, FetchError>> {
        Box::pin(self.fetch(request, send))
    }

    fn wants_response_headers(&self) -> bool {
        self.coprocessor.config.subgraph.all.response.headers
    }
}

impl SubgraphHook {
    async fn fetch(&self, request: HookedRequest, send: &Send<'_>) -> Result<Fetched, FetchError> {
        let number = self.fetches.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}-{number}", self.ctx.id);
        let name = request.name.clone();
        let request = match self.request(request, &id).await {
            Err(Failed) => return Err(failed(&name)),
            Ok(Err(answered)) => return Ok(answered),
            Ok(Ok(request)) => request,
        };
        let fetched = send(request).await?;
        self.response(&name, fetched, &id)
            .await
            .map_err(|Failed| failed(&name))
    }

    /// `SubgraphRequest`: the request to send, or the answer of a break.
    async fn request(
        &self,
        mut request: HookedRequest,
        id: &str,
    ) -> Result<Result<HookedRequest, Fetched>, Failed> {
        let c = &self.coprocessor;
        let conf = &c.config.subgraph.all.request;
        if *conf == Default::default() {
            return Ok(Ok(request));
        }
        let stage = Stage::SubgraphRequest;
        let mut payload = Payload::new(stage, &self.ctx.id);
        if conf.headers {
            payload.headers = Some(protocol::headers_out(&request.headers));
        }
        if conf.body {
            payload.body = serde_json::from_slice(&request.body).ok();
        }
        if conf.uri {
            payload.uri = Some(request.url.clone());
        }
        // Always sent at this stage, as Apollo Router does.
        payload.method = Some("POST".to_owned());
        if conf.service_name {
            payload.service_name = Some(request.name.clone());
        }
        if conf.subgraph_request_id {
            payload.subgraph_request_id = Some(id.to_owned());
        }
        let sent = context_out(&conf.context, &self.ctx);
        let sent_keys = sent.as_ref().map(|(_, k)| k.clone()).unwrap_or_default();
        payload.context = sent.map(|(c, _)| c);
        let mut answer = match c.call(c.config.url_of(&conf.url), payload).await? {
            Called::Skipped => return Ok(Ok(request)),
            Called::Answer(answer) => answer,
        };
        let headers = match answer.headers.as_ref().map(protocol::headers_in) {
            None => None,
            Some(Ok(headers)) => Some(headers),
            Some(Err(e)) => {
                c.refused(stage, e)?;
                return Ok(Ok(request));
            }
        };
        if let Some(uri) = &answer.uri
            && let Err(why) = graphfleet_config::check_http_url(uri)
        {
            c.refused(stage, protocol::ProtocolError::Malformed(why))?;
            return Ok(Ok(request));
        }
        context_in(&self.ctx, stage, &sent_keys, &mut answer);
        if let Some(Control::Break(_)) = answer.control {
            let body = protocol::break_body(stage, answer.body.take());
            let body = serde_json::to_vec(&body).expect("JSON serializes");
            return Ok(Err(Fetched::from(Bytes::from(body))));
        }
        if let Some(headers) = headers {
            request.headers = headers;
        }
        if let Some(uri) = answer.uri {
            request.url = uri;
        }
        if let Some(body) = answer.body {
            request.body = Bytes::from(serde_json::to_vec(&body).expect("JSON serializes"));
        }
        Ok(Ok(request))
    }

    /// `SubgraphResponse`: the answer merged instead of `fetched`.
    async fn response(
        &self,
        name: &str,
        mut fetched: Fetched,
        id: &str,
    ) -> Result<Fetched, Failed> {
        let c = &self.coprocessor;
        let conf = &c.config.subgraph.all.response;
        if *conf == Default::default() {
            return Ok(fetched);
        }
        let stage = Stage::SubgraphResponse;
        let mut payload = Payload::new(stage, &self.ctx.id);
        if conf.headers {
            let headers = fetched.headers.as_deref().map(protocol::headers_out);
            payload.headers = Some(headers.unwrap_or_default());
        }
        if conf.body {
            payload.body = serde_json::from_slice::<Value>(&fetched.body).ok();
        }
        if conf.service_name {
            payload.service_name = Some(name.to_owned());
        }
        if conf.status_code {
            // A fetch that reaches this stage was answered with a GraphQL body.
            payload.status_code = Some(200);
        }
        if conf.subgraph_request_id {
            payload.subgraph_request_id = Some(id.to_owned());
        }
        let sent = context_out(&conf.context, &self.ctx);
        let sent_keys = sent.as_ref().map(|(_, k)| k.clone()).unwrap_or_default();
        payload.context = sent.map(|(c, _)| c);
        let mut answer = match c.call(c.config.url_of(&conf.url), payload).await? {
            Called::Skipped => return Ok(fetched),
            Called::Answer(answer) => answer,
        };
        let returned = answer.headers.as_ref().map(protocol::headers_in);
        let checked = answer
            .body
            .as_ref()
            .filter(|_| c.config.response_validation);
        match (returned, checked.map(protocol::check_graphql_response)) {
            (Some(Err(e)), _) | (_, Some(Err(e))) => {
                c.refused(stage, e)?;
                return Ok(fetched);
            }
            (Some(Ok(headers)), _) => fetched.headers = Some(Arc::new(headers)),
            _ => {}
        }
        context_in(&self.ctx, stage, &sent_keys, &mut answer);
        if let Some(body) = answer.body {
            fetched.body = Bytes::from(serde_json::to_vec(&body).expect("JSON serializes"));
        }
        Ok(fetched)
    }
}
