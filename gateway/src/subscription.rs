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

use crate::executor::execute_event;
use crate::executor::subscription::{self as upstream, Protocol, Upstream};
use crate::executor::transport::Transport;
use crate::pipeline::operation::Started;
use crate::telemetry::metrics::SubscriptionMetrics;
use bytes::Bytes;
use graphfleet_config::{Config, SubgraphProtocol, SubscriptionsConfig};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// Which cap of a [`Quota`] is reached.
enum Full {
    Total(usize),
    PerClient(usize),
}

/// A count with a cap in all and per client address.
struct Quota {
    total: AtomicUsize,
    max: usize,
    per_client: Mutex<FxHashMap<IpAddr, usize>>,
    max_per_client: usize,
}

impl Quota {
    fn new(max: usize, max_per_client: usize) -> Self {
        Self {
            total: AtomicUsize::new(0),
            max,
            per_client: Mutex::default(),
            max_per_client,
        }
    }

    /// Count one more for `client`, unless a cap is reached.
    fn take(&self, client: Option<IpAddr>) -> Result<(), Full> {
        let max = self.max;
        let counted = self
            .total
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            });
        if counted.is_err() {
            return Err(Full::Total(max));
        }
        let Some(ip) = client else { return Ok(()) };
        let mut per_client = self.per_client.lock();
        let count = per_client.entry(ip).or_insert(0);
        if *count >= self.max_per_client {
            self.total.fetch_sub(1, Ordering::AcqRel);
            return Err(Full::PerClient(self.max_per_client));
        }
        *count += 1;
        Ok(())
    }

    /// Count one less for `client`.
    fn give_back(&self, client: Option<IpAddr>) {
        self.total.fetch_sub(1, Ordering::AcqRel);
        let Some(ip) = client else { return };
        let mut per_client = self.per_client.lock();
        if let Some(count) = per_client.get_mut(&ip) {
            *count -= 1;
            if *count == 0 {
                per_client.remove(&ip);
            }
        }
    }
}

/// One open WebSocket connection's place in the counts; freed on drop.
pub struct SocketSlot {
    hub: Arc<Subscriptions>,
    client: Option<IpAddr>,
}

impl Drop for SocketSlot {
    fn drop(&mut self) {
        self.hub.sockets.give_back(self.client);
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

/// One open client subscription's place in the counts; freed on drop.
struct Slot {
    hub: Arc<Subscriptions>,
    client: Option<IpAddr>,
    /// How it ended (`ended_total`'s label).
    reason: &'static str,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.hub.open.give_back(self.client);
        self.hub.metrics.open.dec();
        self.hub
            .metrics
            .ended
            .with_label_values(&[self.reason])
            .inc();
    }
}

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

/// A JSON array holding one error with `code`.
pub fn errors(code: &str, message: &str) -> Bytes {
    let body = serde_json::json!([{ "message": message, "extensions": { "code": code } }]);
    Bytes::from(serde_json::to_vec(&body).expect("static JSON serializes"))
}

impl Subscriptions {
    /// Start `started` (a subscription, planned) for `client`: join the identical
    /// subscription already open, or subscribe to the subgraph in a task of its own,
    /// completing its events over `transport`.
    pub(crate) fn subscribe<T: Transport>(
        self: &Arc<Self>,
        started: Started,
        client: Option<IpAddr>,
        transport: Arc<T>,
        config: &Config,
    ) -> Result<Subscription, String> {
        let slot = self.admit(client)?;
        let Ok(plan) = &started.variant.plan else {
            return Err("the subscription has no plan".into());
        };
        let Some(body) = crate::executor::subscription_request(plan, &started.variables) else {
            return Err("the subscription's plan has no subscription fetch".into());
        };
        let fetch = &plan.fetches[plan.subscription_fetch().expect("checked above")];
        let name = fetch.subgraph_name.clone();
        let url = started.supergraph.meta.subgraph(fetch.subgraph).url.clone();
        let headers = started.headers.for_subgraph(&name).clone();
        let upstream = self.upstream(config, &name, &url, headers)?;
        let key = self.config.deduplicate.then(|| dedup_key(&started, &body));
        let mut sources = self.sources.lock();
        if let Some(tx) = key.and_then(|k| sources.get(&k)) {
            return Ok(Subscription {
                rx: tx.subscribe(),
                slot,
                ended: false,
            });
        }
        let (tx, rx) = broadcast::channel(self.config.queue_size.max(1));
        if let Some(k) = key {
            sources.insert(k, tx.clone());
        }
        drop(sources);
        let source = Source {
            started,
            transport,
            max_response_bytes: config.limits.max_response_bytes,
            tx,
            key,
        };
        let closing = self.closing.subscribe();
        tokio::spawn(self.clone().produce(source, upstream, body, closing));
        Ok(Subscription {
            rx,
            slot,
            ended: false,
        })
    }

    /// Where and how subgraph `name` (at `url`) is subscribed to.
    fn upstream(
        &self,
        config: &Config,
        name: &str,
        url: &str,
        headers: http::HeaderMap,
    ) -> Result<Upstream, String> {
        let own = config.subgraphs.get(name).map(|s| &s.subscription);
        let protocol = own.map(|s| s.protocol).unwrap_or_default();
        let url = match own.and_then(|s| s.url.clone()) {
            Some(url) => url,
            None if protocol == SubgraphProtocol::Websocket => websocket_url(url)
                .ok_or_else(|| format!("subgraph {name}'s URL {url} is not http(s)://"))?,
            None => url.to_owned(),
        };
        Ok(Upstream {
            protocol: match protocol {
                SubgraphProtocol::Websocket => Protocol::WebSocket,
                SubgraphProtocol::Sse => Protocol::Sse,
            },
            url,
            headers,
            connect_timeout: self.config.subgraph_connect_timeout,
            buffer: self.config.queue_size,
        })
    }

    /// Run one subgraph subscription: complete each event and send it to the
    /// subscribers, until the subgraph ends it, the last subscriber leaves, or the
    /// gateway reloads or shuts down.
    async fn produce<T: Transport>(
        self: Arc<Self>,
        source: Source<T>,
        upstream: Upstream,
        body: Bytes,
        mut closing: watch::Receiver<Closing>,
    ) {
        let Source {
            started,
            transport,
            max_response_bytes,
            tx,
            key,
        } = source;
        let end = |last: Option<Bytes>| {
            if let Some(k) = key {
                self.sources.lock().remove(&k);
            }
            let _ = tx.send(Arc::new(Event::End(last)));
        };
        let at_start = *closing.borrow_and_update();
        let subscribed = tokio::select! {
            // Boxed: connecting (TLS included) is a large future, and this task lives as
            // long as the subscription.
            s = Box::pin(upstream::subscribe(&upstream, body)) => s,
            () = tx.closed() => return end(None),
        };
        let mut events = match subscribed {
            Ok(events) => events,
            Err(e) => return end(Some(errors(e.code, &e.message))),
        };
        self.metrics.upstreams.inc();
        let _upstream = scopeguard(|| self.metrics.upstreams.dec());
        let Ok(plan) = &started.variant.plan else {
            return end(None);
        };
        let ctx = started.context(plan, &*transport, max_response_bytes);
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(Ok(event)) => {
                        let executed = Box::pin(execute_event(&ctx, event)).await;
                        self.metrics.events.inc();
                        let _ = tx.send(Arc::new(Event::Next(Bytes::from(executed.body))));
                    }
                    Some(Err(e)) => return end(Some(errors(e.code, &e.message))),
                    None => return end(None),
                },
                () = tx.closed() => {
                    // A subscriber may have joined since: leave only if none did.
                    let mut sources = self.sources.lock();
                    if tx.receiver_count() == 0 {
                        if let Some(k) = key {
                            sources.remove(&k);
                        }
                        return;
                    }
                }
                changed = closing.changed() => {
                    let now = *closing.borrow_and_update();
                    match now {
                        _ if changed.is_err() => return end(None),
                        Closing::Shutdown => {
                            return end(Some(errors(SHUTDOWN, "the gateway is shutting down; subscribe again")));
                        }
                        Closing::Reload(_) if now != at_start => {
                            return end(Some(errors(RELOAD, "the supergraph changed; subscribe again")));
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

/// One subgraph subscription's producer: the request it completes events for, and
/// where the results go.
struct Source<T> {
    started: Started,
    transport: Arc<T>,
    max_response_bytes: usize,
    tx: broadcast::Sender<Arc<Event>>,
    /// Its key among the shared subscriptions (deduplication on).
    key: Option<[u8; 32]>,
}

/// Runs `f` when dropped.
fn scopeguard(f: impl FnOnce()) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    Guard(Some(f))
}

/// `ws://` for `http://`, `wss://` for `https://`.
fn websocket_url(url: &str) -> Option<String> {
    if let Some(rest) = url.strip_prefix("http://") {
        Some(format!("ws://{rest}"))
    } else {
        url.strip_prefix("https://")
            .map(|rest| format!("wss://{rest}"))
    }
}

/// What makes two subscriptions' events equal for every subscriber: the plan variant
/// (operation, supergraph, condition values, authorization), the subgraph request and
/// the variables and headers every fetch uses.
fn dedup_key(started: &Started, body: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(started.operation);
    hasher.update(body);
    hasher.update(serde_json::to_vec(&*started.variables).expect("JSON maps serialize"));
    let headers = &started.headers;
    for (name, map) in
        std::iter::once(("", &headers.all)).chain(headers.own.iter().map(|(n, h)| (n.as_str(), h)))
    {
        hasher.update(name.as_bytes());
        hasher.update([0]);
        for (k, v) in map {
            hasher.update(k.as_str().as_bytes());
            hasher.update([0]);
            hasher.update(v.as_bytes());
            hasher.update([0]);
        }
    }
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::websocket_url;

    #[test]
    fn websocket_urls_follow_the_scheme() {
        assert_eq!(
            websocket_url("http://a:1/reviews").as_deref(),
            Some("ws://a:1/reviews")
        );
        assert_eq!(websocket_url("https://a/x").as_deref(), Some("wss://a/x"));
        assert_eq!(websocket_url("ftp://a"), None);
    }
}
