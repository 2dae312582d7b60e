//! Federated subscriptions: the plan's subscription fetch is sent once to the subgraph
//! owning the root field, and each of its events is completed across the other
//! subgraphs (the rest of the plan, planned once, executed per event) and handed to
//! every client subscribed to it.
//!
//! Identical subscriptions (same plan variant, variables and forwarded headers) share
//! one subgraph subscription and one completion per event (`subscriptions.deduplicate`):
//! a broadcast channel of `queue_size` events fans the results out, and a subscriber
//! that falls further behind is cut with an error, so slow consumers cannot grow
//! memory. A supergraph reload and shutdown end every subscription with a last error
//! saying why; clients resubscribe (to the new supergraph, or another pod).

mod quota;
mod source;
mod subscriber;

pub use quota::SocketSlot;
pub use subscriber::{Next, Subscription, Undelivered};

use crate::telemetry::metrics::SubscriptionMetrics;
use bytes::Bytes;
use graphfleet_config::SubscriptionsConfig;
use parking_lot::Mutex;
use quota::{Full, Quota, Slot};
use rustc_hash::FxHashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::{broadcast, watch};

/// What a subgraph subscription produces for its subscribers.
#[derive(Debug)]
enum Event {
    /// A completed event: the client's `{"data":…,"errors":…}`.
    Next(Bytes),
    /// The end: completed (`None`), or a JSON array of errors saying why not.
    End(Option<Bytes>),
}

/// Why subscriptions are being ended by the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closing {
    Open,
    /// The supergraph changed (the count of reloads so far).
    Reload(u64),
    Shutdown,
}

/// `extensions.code` of the errors ending subscriptions.
pub const RELOAD: &str = "SUBSCRIPTION_SCHEMA_RELOAD";
pub const SHUTDOWN: &str = "SUBSCRIPTION_SHUTDOWN";
pub const SLOW_CONSUMER: &str = "SUBSCRIPTION_QUEUE_FULL";
pub const LIMIT: &str = "SUBSCRIPTION_LIMIT";

/// The gateway's open subscriptions and their limits.
pub struct Subscriptions {
    config: SubscriptionsConfig,
    metrics: SubscriptionMetrics,
    /// Open client subscriptions, in all and per client address.
    open: Quota,
    /// Open WebSocket connections, in all (held to `traffic.max_connections`: they leave
    /// hyper's connection count at their upgrade) and per client address.
    sockets: Quota,
    /// Shared subgraph subscriptions by key (deduplication).
    sources: Mutex<FxHashMap<[u8; 32], broadcast::Sender<Arc<Event>>>>,
    closing: watch::Sender<Closing>,
}

impl Subscriptions {
    pub fn new(
        config: &SubscriptionsConfig,
        max_sockets: usize,
        metrics: SubscriptionMetrics,
    ) -> Self {
        Self {
            open: Quota::new(config.max_open, config.max_per_client),
            sockets: Quota::new(max_sockets, config.max_connections_per_client),
            config: config.clone(),
            metrics,
            sources: Mutex::default(),
            closing: watch::Sender::new(Closing::Open),
        }
    }

    /// Client subscriptions open now.
    pub fn open(&self) -> usize {
        self.open.total.load(Ordering::Relaxed)
    }

    /// End every subscription: the supergraph changed.
    pub fn reloaded(&self) {
        self.closing.send_modify(|c| {
            if let Closing::Open | Closing::Reload(_) = c {
                let n = match c {
                    Closing::Reload(n) => *n + 1,
                    _ => 1,
                };
                *c = Closing::Reload(n);
            }
        });
    }

    /// End every subscription and refuse new ones: the gateway is shutting down.
    pub fn shut_down(&self) {
        self.closing.send_replace(Closing::Shutdown);
    }

    /// A place for one more WebSocket connection from `client`, or why not.
    pub fn admit_socket(self: &Arc<Self>, client: Option<IpAddr>) -> Result<SocketSlot, String> {
        match self.sockets.take(client) {
            Ok(()) => Ok(SocketSlot {
                hub: self.clone(),
                client,
            }),
            Err(Full::Total(max)) => Err(format!(
                "the gateway has {max} WebSocket connections open, its limit \
                 (traffic.max_connections)"
            )),
            Err(Full::PerClient(max)) => Err(format!(
                "this client has {max} WebSocket connections open, the limit per client \
                 (subscriptions.max_connections_per_client)"
            )),
        }
    }

    /// Resolves once the gateway shuts down (WebSocket connections close then).
    pub fn shutdown_signal(&self) -> ShutdownSignal {
        ShutdownSignal(self.closing.subscribe())
    }

    /// A slot for one more subscription from `client`, or why not.
    fn admit(self: &Arc<Self>, client: Option<IpAddr>) -> Result<Slot, String> {
        if *self.closing.borrow() == Closing::Shutdown {
            return Err("the gateway is shutting down; subscribe again to another instance".into());
        }
        match self.open.take(client) {
            Ok(()) => {}
            Err(Full::Total(max)) => {
                return Err(format!(
                    "the gateway has {max} subscriptions open, its limit (subscriptions.max_open)"
                ));
            }
            Err(Full::PerClient(max)) => {
                return Err(format!(
                    "this client has {max} subscriptions open, the limit per client \
                     (subscriptions.max_per_client)"
                ));
            }
        }
        self.metrics.open.inc();
        Ok(Slot {
            hub: self.clone(),
            client,
            reason: "client",
        })
    }
}

/// See [`Subscriptions::shutdown_signal`].
pub struct ShutdownSignal(watch::Receiver<Closing>);

impl ShutdownSignal {
    pub async fn wait(&mut self) {
        // An error: the gateway is gone, which ends everything too.
        let _ = self.0.wait_for(|c| *c == Closing::Shutdown).await;
    }
}

/// A JSON array holding one error with `code`.
pub fn errors(code: &str, message: &str) -> Bytes {
    let body = serde_json::json!([{ "message": message, "extensions": { "code": code } }]);
    Bytes::from(serde_json::to_vec(&body).expect("static JSON serializes"))
}
