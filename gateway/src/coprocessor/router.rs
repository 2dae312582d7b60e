//! The router stages: the HTTP request before its body is decoded (`RouterRequest`),
//! and the HTTP response as the client gets it (`RouterResponse`). Bodies are strings.

use super::context::RequestContext;
use super::protocol::{self, Control, Payload, Stage};
use super::{Called, Coprocessor, Failed, context_in, context_out};
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use serde_json::Value;

/// After `RouterRequest`.
pub enum RouterNext {
    /// Go on; the body the answer gave instead (`None`: unchanged). Returned headers
    /// are in the context's `headers`.
    Go {
        body: Option<String>,
        headers_changed: bool,
    },
    /// `control.break`: answer the client with this and run nothing else.
    Answer {
        status: StatusCode,
        headers: HeaderMap,
        body: Vec<u8>,
    },
}

impl Coprocessor {
    pub fn router_request_on(&self) -> bool {
        self.config.router.request != Default::default()
    }

    pub fn router_response_on(&self) -> bool {
        self.config.router.response != Default::default()
    }

    /// `RouterRequest` for a request at `path` (with its query) whose body is `body`.
    pub async fn router_request(
        &self,
        ctx: &RequestContext,
        path: &str,
        body: &str,
        sdl: Option<&str>,
    ) -> Result<RouterNext, Failed> {
        let conf = &self.config.router.request;
        let stage = Stage::RouterRequest;
        let mut payload = Payload::new(stage, &ctx.id);
        if conf.headers {
            payload.headers = Some(protocol::headers_out(&ctx.headers.lock()));
        }
        if conf.body {
            payload.body = Some(Value::String(body.to_owned()));
        }
        if conf.path {
            payload.path = Some(path.to_owned());
        }
        // Always sent at this stage, as Apollo Router does.
        payload.method = Some(ctx.method.to_string());
        if conf.sdl {
            payload.sdl = sdl.map(str::to_owned);
        }
        let sent = context_out(&conf.context, ctx);
        let sent_keys = sent.as_ref().map(|(_, k)| k.clone()).unwrap_or_default();
        payload.context = sent.map(|(c, _)| c);
        let url = self.config.url_of(&conf.url);
        let mut answer = match self.call(url, payload).await? {
            Called::Skipped => {
                return Ok(RouterNext::Go {
                    body: None,
                    headers_changed: false,
                });
            }
            Called::Answer(answer) => answer,
        };
        let headers = match answer.headers.as_ref().map(protocol::headers_in) {
            None => None,
            Some(Ok(headers)) => Some(headers),
            Some(Err(e)) => {
                self.refused(stage, e)?;
                return Ok(RouterNext::Go {
                    body: None,
                    headers_changed: false,
                });
            }
        };
        context_in(ctx, stage, &sent_keys, &mut answer);
        if let Some(Control::Break(code)) = answer.control {
            let body = protocol::break_body(stage, answer.body.take());
            return Ok(RouterNext::Answer {
                status: StatusCode::from_u16(code).expect("checked by read_answer"),
                headers: headers.unwrap_or_default(),
                body: serde_json::to_vec(&body).expect("JSON serializes"),
            });
        }
        let headers_changed = headers.is_some();
        if let Some(headers) = headers {
            *ctx.headers.lock() = headers;
        }
        let body = match answer.body {
            Some(Value::String(text)) => Some(text),
            _ => None,
        };
        Ok(RouterNext::Go {
            body,
            headers_changed,
        })
    }

    /// `RouterResponse` for a response of `status`, `headers` and `body`: what the
    /// client gets instead.
    pub async fn router_response(
        &self,
        ctx: &RequestContext,
        status: StatusCode,
        headers: &mut HeaderMap,
        body: Bytes,
        sdl: Option<&str>,
    ) -> Result<(StatusCode, Bytes), Failed> {
        let conf = &self.config.router.response;
        let stage = Stage::RouterResponse;
        let mut payload = Payload::new(stage, &ctx.id);
        if conf.headers {
            payload.headers = Some(protocol::headers_out(headers));
        }
        if conf.body {
            payload.body = Some(Value::String(String::from_utf8_lossy(&body).into_owned()));
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
        if let Some(returned) = &answer.headers {
            match protocol::headers_in(returned) {
                Ok(returned) => *headers = returned,
                Err(e) => {
                    self.refused(stage, e)?;
                    return Ok((status, body));
                }
            }
        }
        context_in(ctx, stage, &sent_keys, &mut answer);
        let status = answer.control.map_or(status, response_status);
        let body = match answer.body {
            Some(Value::String(text)) => Bytes::from(text),
            _ => body,
        };
        Ok((status, body))
    }
}

/// A response stage's `control`: `{"break": N}` sets N, `"continue"` sets 200.
pub(crate) fn response_status(control: Control) -> StatusCode {
    match control {
        Control::Continue => StatusCode::OK,
        Control::Break(code) => StatusCode::from_u16(code).expect("checked by read_answer"),
    }
}
