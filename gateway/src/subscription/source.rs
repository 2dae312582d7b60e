//! Starting a subscription: joining an identical one or subscribing to the subgraph,
//! and the producer task completing each subgraph event for the subscribers.

use super::subscriber::Subscription;
use super::{Closing, Event, RELOAD, SHUTDOWN, Subscriptions, errors};
use crate::executor::execute_event;
use crate::executor::response::buffers::into_charged_bytes;
use crate::executor::subscription::{self as upstream, Protocol, Upstream};
use crate::executor::transport::Transport;
use crate::pipeline::operation::Started;
use bytes::Bytes;
use graphfleet_config::{Config, SubgraphProtocol};
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use std::sync::Arc;
use tokio::sync::{broadcast, watch};

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
        let mut upstream = self.upstream(config, &name, &url, headers)?;
        upstream.init_payload.clone_from(&started.init_payload);
        let key = self.config.deduplicate.then(|| dedup_key(&started, &body));
        let mut sources = self.sources.lock();
        if let Some(tx) = key.and_then(|k| sources.get(&k)) {
            return Ok(Subscription::new(tx.subscribe(), slot));
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
        Ok(Subscription::new(rx, slot))
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
            init_payload: None,
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
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(Ok(event)) => {
                        // Charged while completed, and while it waits in subscribers'
                        // queues: the charge goes with its bytes.
                        let memory = started.memory.charge();
                        let ctx = started.context(plan, &*transport, max_response_bytes, &memory);
                        let executed = Box::pin(execute_event(&ctx, event)).await;
                        self.metrics.events.inc();
                        let body = into_charged_bytes(executed.body, memory);
                        let _ = tx.send(Arc::new(Event::Next(body)));
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
/// the variables and headers every fetch uses, and the subgraph's `connection_init`.
fn dedup_key(started: &Started, body: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(started.operation);
    hasher.update(body);
    let init = started.init_payload.as_deref().unwrap_or_default();
    hasher.update(init.len().to_le_bytes());
    hasher.update(init.as_bytes());
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
