//! The one error a request is refused with, by a pipeline stage or by the HTTP layer
//! before the pipeline runs: a GraphQL response of `errors` only (no `data`), with the
//! HTTP status and header that go with it.

use super::request::Media;
use crate::operation::{RequestErrors, limits};
use apollo_compiler::response::GraphQLError;
use http::{HeaderName, HeaderValue, StatusCode};

/// Boxed: every stage returns it in a `Result`, whose `Ok` side stays as small as
/// the value it carries.
#[derive(Debug)]
pub struct RequestError(Box<Refusal>);

#[derive(Debug)]
struct Refusal {
    status: Status,
    header: Option<(HeaderName, HeaderValue)>,
    /// More headers (a coprocessor's break answer); empty otherwise.
    headers: http::HeaderMap,
    /// `{"errors":[…]}`, written once when the error is made.
    body: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    /// The operation cannot run as sent: the media type picks the status.
    Invalid,
    /// No supergraph is loaded yet: 503, counted apart in the request metrics.
    NotReady,
    /// This status whatever the media type.
    Fixed(StatusCode),
}

impl From<RequestErrors> for RequestError {
    fn from(errors: RequestErrors) -> Self {
        Self::graphql(Status::Invalid, &errors.0)
    }
}

impl RequestError {
    /// An operation that cannot run as sent, with one error saying why.
    pub fn message(message: impl Into<String>) -> Self {
        RequestErrors::message(message).into()
    }

    /// [`Self::message`] with `extensions.code`.
    pub fn coded(code: &str, message: impl Into<String>) -> Self {
        RequestErrors(vec![limits::error(code, message)]).into()
    }

    /// The gateway waits for its first supergraph.
    pub fn not_ready() -> Self {
        let errors = RequestErrors::message(crate::lifecycle::NOT_LOADED);
        Self::graphql(Status::NotReady, &errors.0)
    }

    /// A mutation sent with GET (which must stay safe to repeat).
    pub fn mutation_over_get() -> Self {
        let errors = RequestErrors::message("mutations must be sent with POST");
        Self::graphql(Status::Fixed(StatusCode::METHOD_NOT_ALLOWED), &errors.0)
            .with_header(http::header::ALLOW, "POST")
    }

    /// A refusal by the HTTP layer, before the GraphQL request is read: `status` whatever
    /// the media type. Its error's members are written in name order, as they always were.
    pub fn http(status: StatusCode, code: Option<&str>, message: &str) -> Self {
        let error = match code {
            Some(code) => serde_json::json!({ "message": message, "extensions": { "code": code } }),
            None => serde_json::json!({ "message": message }),
        };
        let body = serde_json::json!({ "errors": [error] });
        Self(Box::new(Refusal {
            status: Status::Fixed(status),
            header: None,
            headers: http::HeaderMap::new(),
            body: serde_json::to_vec(&body).expect("JSON values serialize"),
        }))
    }

    /// A coprocessor's break: `body` (a GraphQL response) with `status` and `headers`.
    pub fn answer(status: StatusCode, headers: http::HeaderMap, body: Vec<u8>) -> Self {
        Self(Box::new(Refusal {
            status: Status::Fixed(status),
            header: None,
            headers,
            body,
        }))
    }

    /// 500 with a generic message: the reason (a failed coprocessor) is only logged.
    pub fn internal() -> Self {
        Self::http(
            StatusCode::INTERNAL_SERVER_ERROR,
            Some("INTERNAL_SERVER_ERROR"),
            "internal server error",
        )
    }

    pub(crate) fn headers_mut(&mut self) -> &mut http::HeaderMap {
        &mut self.0.headers
    }

    /// The headers beside [`Self::header`] the answer carries.
    pub fn headers(&self) -> &http::HeaderMap {
        &self.0.headers
    }

    /// The same error, answered with the header `name: value` too.
    pub fn with_header(self, name: HeaderName, value: &'static str) -> Self {
        self.with_header_value(name, HeaderValue::from_static(value))
    }

    /// [`Self::with_header`] with a value made at run time.
    pub fn with_header_value(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.0.header = Some((name, value));
        self
    }

    fn graphql(status: Status, errors: &[GraphQLError]) -> Self {
        #[derive(serde::Serialize)]
        struct Body<'a> {
            errors: &'a [GraphQLError],
        }
        Self(Box::new(Refusal {
            status,
            header: None,
            headers: http::HeaderMap::new(),
            body: serde_json::to_vec(&Body { errors }).expect("errors serialize"),
        }))
    }

    /// The HTTP status in `media`: GraphQL over HTTP answers a request error 400 under
    /// its own media type and 200 under `application/json`.
    pub fn status(&self, media: Media) -> StatusCode {
        match (self.0.status, media) {
            (Status::Invalid, Media::GraphQLResponse) => StatusCode::BAD_REQUEST,
            (Status::Invalid, Media::Json) => StatusCode::OK,
            (Status::NotReady, _) => StatusCode::SERVICE_UNAVAILABLE,
            (Status::Fixed(status), _) => status,
        }
    }

    /// The header the status needs (`Allow`, `Retry-After`, `WWW-Authenticate`), if any.
    pub fn header(&self) -> Option<&(HeaderName, HeaderValue)> {
        self.0.header.as_ref()
    }

    pub fn body(&self) -> &[u8] {
        &self.0.body
    }

    pub fn into_body(self) -> Vec<u8> {
        self.0.body
    }

    /// True while no supergraph is loaded (the metrics count it apart).
    pub fn is_not_ready(&self) -> bool {
        self.0.status == Status::NotReady
    }
}
