//! Query batching (`batching`): a POST body that is a JSON array of GraphQL requests
//! runs each, concurrently and under the one request deadline, and is answered with
//! the JSON array of their responses in order (what Apollo Client's `BatchHttpLink`
//! reads). An operation refused (invalid, unauthorized) is its own error in the array;
//! the others still run. `@defer` and subscriptions are not taken in a batch.

use super::body::Payload;
use super::{HandlerBody, response};
use crate::executor::memory::Charge;
use crate::executor::transport::Transport;
use crate::gateway::Gateway;
use crate::pipeline::error::RequestError;
use crate::pipeline::request::{GraphQLRequest, Media, RequestMeta};
use bytes::Bytes;
use graphfleet_config::BatchingConfig;
use hyper::{Response, StatusCode};

/// The operations of a batch body; `None` for a body that is not a JSON array (one
/// request, decoded as such). A batch while batching is off, an empty one, or one over
/// `max_size` is refused before anything runs.
pub(super) fn requests(
    config: &BatchingConfig,
    payload: &Payload,
) -> Result<Option<Vec<GraphQLRequest>>, RequestError> {
    let Payload::Body(body) = payload else {
        return Ok(None);
    };
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'[') {
        return Ok(None);
    }
    let refuse = |code: &str, message: &str| {
        RequestError::http(StatusCode::BAD_REQUEST, Some(code), message)
    };
    if !config.enabled {
        return Err(refuse(
            "BATCHING_NOT_ENABLED",
            "the body is a batch of operations (a JSON array), and batching is not enabled on this gateway (batching.enabled)",
        ));
    }
    let requests: Vec<GraphQLRequest> = serde_json::from_slice(body).map_err(|e| {
        refuse(
            "BAD_REQUEST",
            &format!("the batch is not an array of GraphQL requests: {e}"),
        )
    })?;
    if requests.is_empty() {
        return Err(refuse("BAD_REQUEST", "the batch holds no operation"));
    }
    if requests.len() > config.max_size {
        let message = format!(
            "the batch holds {} operations, more than the {} batching.max_size allows",
            requests.len(),
            config.max_size
        );
        return Err(refuse("BATCH_LIMIT_EXCEEDED", &message));
    }
    Ok(Some(requests))
}

/// The array of `requests`' responses, or 504 when they are not all done by `deadline`.
pub(super) async fn answer<T: Transport>(
    gateway: &Gateway<T>,
    requests: &[GraphQLRequest],
    meta: &RequestMeta,
    media: Media,
    deadline: tokio::time::Instant,
) -> Result<Response<HandlerBody>, RequestError> {
    let runs = futures::future::join_all(requests.iter().map(|r| gateway.execute(r, meta)));
    let Ok(outcomes) = tokio::time::timeout_at(deadline, runs).await else {
        return Err(super::dispatch::timed_out(gateway));
    };
    let mut body = vec![b'['];
    let mut charges = Vec::new();
    for (i, outcome) in outcomes.into_iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        let (part, charge) = outcome.into_charged_body();
        body.extend_from_slice(&part);
        charges.extend(charge);
    }
    body.push(b']');
    let body = Bytes::from_owner(Batched {
        body,
        _charges: charges,
    });
    Ok(response(StatusCode::OK, media.as_str(), body))
}

/// The batch's body, holding its operations' memory charges until it is sent.
struct Batched {
    body: Vec<u8>,
    _charges: Vec<Charge>,
}

impl AsRef<[u8]> for Batched {
    fn as_ref(&self) -> &[u8] {
        &self.body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> Payload {
        Payload::Body(Bytes::copy_from_slice(text.as_bytes()))
    }

    fn code(e: RequestError) -> String {
        let body: serde_json::Value = serde_json::from_slice(e.body()).expect("JSON");
        body["errors"][0]["extensions"]["code"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    }

    #[test]
    fn arrays_are_batches_when_on_and_refused_when_off_or_too_big() {
        let on = BatchingConfig {
            enabled: true,
            max_size: 2,
        };
        let one = r#"{"query":"{ a }"}"#;
        assert!(requests(&on, &body(one)).expect("one").is_none());
        let two = r#" [{"query":"{ a }"},{"query":"{ b }"}]"#;
        let batch = requests(&on, &body(two)).expect("a batch").expect("two");
        assert_eq!(batch[1].query.as_deref(), Some("{ b }"));
        let three = r#"[{"query":"{ a }"},{"query":"{ b }"},{"query":"{ c }"}]"#;
        let over = requests(&on, &body(three)).expect_err("over max_size");
        assert_eq!(code(over), "BATCH_LIMIT_EXCEEDED");
        assert_eq!(
            code(requests(&on, &body("[]")).expect_err("empty")),
            "BAD_REQUEST"
        );
        assert_eq!(
            code(requests(&on, &body("[1]")).expect_err("not requests")),
            "BAD_REQUEST"
        );
        let off = BatchingConfig::default();
        assert_eq!(
            code(requests(&off, &body(two)).expect_err("off")),
            "BATCHING_NOT_ENABLED"
        );
    }
}
