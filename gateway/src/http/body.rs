//! Reading what carries a request's GraphQL payload, within the limits: a POST body of
//! JSON up to `limits.max_body_bytes`, received by the request deadline, or a GET
//! request's query string up to the same length. Other methods are refused.

use crate::pipeline::error::RequestError;
use crate::pipeline::request::Media;
use bytes::Bytes;
use graphfleet_config::Config;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, StatusCode};

/// Where the GraphQL request is.
pub(super) enum Payload {
    /// A POST body.
    Body(Bytes),
    /// A GET request's URI: its query string.
    Query(hyper::Uri),
}

/// The payload of `req`, read by `deadline`.
pub(super) async fn read(
    config: &Config,
    req: Request<Incoming>,
    deadline: tokio::time::Instant,
) -> Result<Payload, RequestError> {
    let limit = config.limits.max_body_bytes;
    match *req.method() {
        Method::POST => {
            let timeout = config.traffic.request_timeout;
            post_body(req, limit, deadline, timeout)
                .await
                .map(Payload::Body)
        }
        Method::GET if req.uri().query().map_or(0, str::len) > limit => Err(RequestError::http(
            StatusCode::URI_TOO_LONG,
            Some("PAYLOAD_TOO_LARGE"),
            &format!("the query string is longer than {limit} bytes"),
        )),
        Method::GET => Ok(Payload::Query(req.into_parts().0.uri)),
        _ => Err(
            RequestError::http(StatusCode::METHOD_NOT_ALLOWED, None, "use GET or POST")
                .with_header(ALLOW, "GET, POST"),
        ),
    }
}

/// A POST body of `application/json` up to `limit` bytes, received by `deadline` (one
/// for reading and executing: a slow upload cannot hold a connection and a worker
/// longer than the request `timeout`).
async fn post_body(
    req: Request<Incoming>,
    limit: usize,
    deadline: tokio::time::Instant,
    timeout: std::time::Duration,
) -> Result<Bytes, RequestError> {
    let content_type = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if content_type.split(';').next().map(str::trim) != Some(Media::Json.as_str()) {
        return Err(RequestError::http(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            "Content-Type must be application/json",
        ));
    }
    let limited = Limited::new(req.into_body(), limit);
    let Ok(read) = tokio::time::timeout_at(deadline, limited.collect()).await else {
        return Err(RequestError::http(
            StatusCode::REQUEST_TIMEOUT,
            Some("REQUEST_TIMEOUT"),
            &format!("the request body was not received within {timeout:?}"),
        ));
    };
    match read {
        Ok(body) => Ok(body.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(RequestError::http(
            StatusCode::PAYLOAD_TOO_LARGE,
            Some("PAYLOAD_TOO_LARGE"),
            &format!("the request body is larger than {limit} bytes"),
        )),
        Err(e) => Err(RequestError::http(
            StatusCode::BAD_REQUEST,
            None,
            &format!("cannot read body: {e}"),
        )),
    }
}
