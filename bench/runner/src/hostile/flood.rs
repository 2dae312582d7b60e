//! The WebSocket flood: one graphql-transport-ws client sends `connection_init`, then
//! `subscribe` after `subscribe` and never reads. Each subscribe past
//! `subscriptions.max_per_connection` is refused with an error message the client never
//! takes, so an unbounded outbox grows with every one.

use std::time::{Duration, Instant};

use anyhow::Context;
use futures::SinkExt;
use graphfleet_ws_protocol::{ClientMessage, RawJson};
use tokio_tungstenite::tungstenite::Message;

use super::harness::Target;
use super::table::Outcome;
use crate::fanout::initialised;

const PAYLOAD: &str = r#"{"query":"subscription { reviewAdded { id body } }"}"#;

/// Floods with at most `most` subscribes for at most `bound`.
pub(crate) async fn flood(
    target: &Target,
    most: usize,
    bound: Duration,
) -> anyhow::Result<Outcome> {
    let url = target.ws();
    let mut ws = tokio::time::timeout(Duration::from_secs(10), initialised(&url))
        .await
        .context("no connection_ack within 10 s")??;
    let started = Instant::now();
    let mut sent = 0usize;
    let sending = async {
        for id in 0..most {
            let frame = ClientMessage::Subscribe {
                id: id.to_string().into(),
                payload: RawJson::trusted(PAYLOAD),
            }
            .encode();
            if let Err(e) = ws.send(Message::text(frame)).await {
                return Some(e.to_string());
            }
            sent += 1;
        }
        None
    };
    let ended = tokio::time::timeout(bound, sending).await;
    let wall_s = started.elapsed().as_secs_f64();
    let (answer, note) = match ended {
        Ok(Some(error)) => (
            "closed".to_owned(),
            format!("the gateway cut the client off after {sent} subscribes ({error})"),
        ),
        Ok(None) => (
            "all taken".to_owned(),
            format!("all {sent} subscribes were taken, the connection still open"),
        ),
        Err(_) => (
            "open".to_owned(),
            format!(
                "{sent} subscribes sent in {} s, the connection neither closed nor read any more",
                bound.as_secs()
            ),
        ),
    };
    Ok(Outcome {
        wall_s,
        answer,
        codes: "—".into(),
        note,
    })
}
