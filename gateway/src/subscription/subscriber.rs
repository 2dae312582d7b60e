//! One client's subscription: its events from the shared queue, delivery that cuts a
//! client falling too far behind, and how it ended (for `ended_total`).

use super::quota::Slot;
use super::{Event, RELOAD, SHUTDOWN, SLOW_CONSUMER, errors};
use crate::executor::subscription as upstream;
use bytes::Bytes;
use std::sync::Arc;
use tokio::sync::broadcast;

/// One client's subscription: its events until it ends.
pub struct Subscription {
    rx: broadcast::Receiver<Arc<Event>>,
    slot: Slot,
    ended: bool,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("ended", &self.ended)
            .finish()
    }
}

/// What [`Subscription::next`] gives.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// An event: `{"data":…,"errors":…}`.
    Event(Bytes),
    /// The last message: a JSON array of errors saying why the subscription ended.
    Failed(Bytes),
    /// The subgraph completed the subscription.
    Complete,
}

impl Subscription {
    pub(super) fn new(rx: broadcast::Receiver<Arc<Event>>, slot: Slot) -> Self {
        Self {
            rx,
            slot,
            ended: false,
        }
    }

    /// The next event, or how the subscription ended (then `None` from there on).
    pub async fn next(&mut self) -> Option<Next> {
        if self.ended {
            return None;
        }
        let next = match self.rx.recv().await {
            Ok(event) => match &*event {
                Event::Next(body) => {
                    self.slot.hub.metrics.delivered.inc();
                    return Some(Next::Event(body.clone()));
                }
                Event::End(None) => {
                    self.slot.reason = "complete";
                    Next::Complete
                }
                Event::End(Some(errors)) => {
                    self.slot.reason = end_reason(errors);
                    Next::Failed(errors.clone())
                }
            },
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                self.slot.reason = "slow_consumer";
                let behind = usize::try_from(missed).unwrap_or(usize::MAX);
                Next::Failed(self.cut_errors(behind))
            }
            // The source is gone without a last event (it cannot be: it sends one).
            Err(broadcast::error::RecvError::Closed) => {
                self.slot.reason = "error";
                Next::Failed(errors(
                    upstream::UPSTREAM_ERROR,
                    "the subscription ended unexpectedly",
                ))
            }
        };
        self.ended = true;
        Some(next)
    }
}

/// Why [`Subscription::deliver`] could not hand an event on.
#[derive(Debug)]
pub enum Undelivered {
    /// The client is gone.
    Gone,
    /// The client fell too far behind: the subscription is ended with these errors.
    Cut(Bytes),
}

impl Subscription {
    /// Send `item` on `tx`; while the client does not take it, the subscription keeps
    /// an eye on how far behind it falls, and past `queue_size` events it is cut (its
    /// events are overwritten in the shared queue, so memory stays bounded either way).
    pub async fn deliver<M>(
        &mut self,
        tx: &tokio::sync::mpsc::Sender<M>,
        item: M,
    ) -> Result<(), Undelivered> {
        let mut check = tokio::time::interval(std::time::Duration::from_millis(20));
        loop {
            tokio::select! {
                permit = tx.reserve() => {
                    return match permit {
                        Ok(permit) => {
                            permit.send(item);
                            Ok(())
                        }
                        Err(_) => Err(Undelivered::Gone),
                    };
                }
                _ = check.tick() => {
                    let behind = self.rx.len();
                    if behind > self.slot.hub.config.queue_size {
                        self.ended = true;
                        self.slot.reason = "slow_consumer";
                        return Err(Undelivered::Cut(self.cut_errors(behind)));
                    }
                }
            }
        }
    }

    fn cut_errors(&self, behind: usize) -> Bytes {
        let queue = self.slot.hub.config.queue_size;
        errors(
            SLOW_CONSUMER,
            &format!(
                "this subscription fell {behind} events behind, more than its queue of \
                 {queue} (subscriptions.queue_size) holds; it is ended"
            ),
        )
    }
}

/// The `ended_total` reason of a last error.
fn end_reason(errors: &[u8]) -> &'static str {
    let text = std::str::from_utf8(errors).unwrap_or("");
    if text.contains(RELOAD) {
        "reload"
    } else if text.contains(SHUTDOWN) {
        "shutdown"
    } else {
        "error"
    }
}
