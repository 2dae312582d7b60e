//! The `subscriptions` scenario: subscription fan-out. N graphql-transport-ws clients
//! hold the scenario's subscription on the gateway while the set's reviews subgraph emits
//! one event per `--event-interval` to each subgraph subscription; every event is checked
//! (a `next` with data and no errors) and its end-to-end latency taken from the
//! subgraph's emission time (`Review.publishedAt`, ms since the Unix epoch on this
//! machine's clock) to its receipt. The gateway's CPU and resident memory are sampled
//! from /proc; memory per open subscription is (RSS with N open − RSS before) / N.
//!
//! The clients run on one current-thread runtime pinned to the non-gateway cores, like
//! the native load generator. Every run is bounded: opening by a deadline, the measured
//! window by `--duration`, closing by a grace period.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use futures::{SinkExt, StreamExt};
use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::bench::{self, Config, progress};
use crate::gateway::{Gateway, Kind, Slots};
use crate::http::Client;
use crate::peers::Peer;
use crate::process;
use crate::results::ScenarioRun;
use crate::sampler::{self, Sample, Sampler};
use crate::scenario::Scenario;

/// The WebSocket subprotocol both ends speak.
const PROTOCOL: &str = "graphql-transport-ws";
/// Longest a client may take to connect, be acknowledged and subscribe.
const OPEN_TIMEOUT: Duration = Duration::from_secs(20);
/// Handshakes in flight at once while opening (a burst of N connects would only measure
/// the listen backlog).
const OPENING_AT_ONCE: usize = 64;
/// Time the clients get to send `complete` and close after the window.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// Latencies are recorded in microseconds up to this (longer ones are clamped).
const MAX_LATENCY_US: u64 = 600_000_000;
/// Failure messages kept per run.
const SAMPLES: usize = 3;

/// What the fan-out runs: subscriber counts and the subgraph's event interval.
#[derive(Debug, Clone)]
pub struct FanoutConfig {
    pub subscribers: Vec<u32>,
    pub event_interval: Duration,
}

/// One measured (gateway, variant, subscriber count).
#[derive(Debug, Clone, Serialize)]
pub struct FanoutRow {
    pub gateway: String,
    pub label: String,
    /// The gateway's settings for this row, e.g. `dedup on`.
    pub variant: String,
    pub subscribers: u32,
    /// Set when the row could not be measured.
    pub error: Option<String>,
    pub opened: u32,
    pub open_failures: u32,
    /// Seconds from the first connect until every subscription was acknowledged.
    pub open_seconds: f64,
    /// Events every subscriber should get per second (subscribers / interval).
    pub expected_per_s: f64,
    /// Events delivered per second in the measured window, all subscribers together.
    pub delivered_per_s: f64,
    pub events_in_window: u64,
    /// Events that were not a `next` with data and no errors, or subscriptions that
    /// ended before the run did (`error`, `complete`, a closed socket).
    pub bad_events: u64,
    pub ended_early: u32,
    pub failure_samples: Vec<String>,
    /// End-to-end latency (emission at the subgraph → receipt), ms.
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub latency_max_ms: Option<f64>,
    /// Gateway CPU over the window (1.0 = one core).
    pub cpu_avg: Option<f64>,
    /// Resident memory before any subscription, and the window's average with N open.
    pub rss_before: Option<u64>,
    pub rss_open: Option<u64>,
    /// (rss_open − rss_before) / subscribers, bytes.
    pub bytes_per_subscription: Option<f64>,
}

impl FanoutRow {
    fn failed(gateway: &Gateway, variant: &str, subscribers: u32, error: String) -> Self {
        FanoutRow {
            gateway: gateway.name.clone(),
            label: gateway.label.clone(),
            variant: variant.to_owned(),
            subscribers,
            error: Some(error),
            opened: 0,
            open_failures: 0,
            open_seconds: 0.0,
            expected_per_s: 0.0,
            delivered_per_s: 0.0,
            events_in_window: 0,
            bad_events: 0,
            ended_early: 0,
            failure_samples: Vec::new(),
            latency_p50_ms: None,
            latency_p99_ms: None,
            latency_max_ms: None,
            cpu_avg: None,
            rss_before: None,
            rss_open: None,
            bytes_per_subscription: None,
        }
    }

    /// Problems that fail a smoke run.
    pub fn problems(&self) -> Option<String> {
        if let Some(e) = &self.error {
            return Some(e.clone());
        }
        let broken = self.open_failures > 0
            || self.bad_events > 0
            || self.ended_early > 0
            || self.events_in_window == 0;
        broken.then(|| {
            format!(
                "{} opened, {} failed to open, {} events, {} bad, {} ended early: {}",
                self.opened,
                self.open_failures,
                self.events_in_window,
                self.bad_events,
                self.ended_early,
                self.failure_samples.join("; ")
            )
        })
    }
}

/// The gateway settings a fan-out is measured with.
struct Variant {
    name: &'static str,
    env: Vec<(String, String)>,
    /// Hive Router's config file (subscriptions are off without one).
    hive_config: Option<String>,
}

fn variants(gateway: &Gateway) -> Vec<Variant> {
    match &gateway.kind {
        Kind::Graphfleet => [("dedup on", "true"), ("dedup off", "false")]
            .into_iter()
            .map(|(name, dedup)| Variant {
                name,
                env: vec![
                    (
                        "GRAPHFLEET_SUBSCRIPTIONS__DEDUPLICATE".to_owned(),
                        dedup.to_owned(),
                    ),
                    // Every client is 127.0.0.1 here.
                    (
                        "GRAPHFLEET_SUBSCRIPTIONS__MAX_PER_CLIENT".to_owned(),
                        "1000000".to_owned(),
                    ),
                    (
                        "GRAPHFLEET_SUBSCRIPTIONS__MAX_CONNECTIONS_PER_CLIENT".to_owned(),
                        "1000000".to_owned(),
                    ),
                    (
                        "GRAPHFLEET_SUBSCRIPTIONS__MAX_OPEN".to_owned(),
                        "1000000".to_owned(),
                    ),
                ],
                hive_config: None,
            })
            .collect(),
        Kind::Peer(Peer::HiveRouter) => [("dedup off (default)", false), ("dedup on", true)]
            .into_iter()
            .map(|(name, dedup)| Variant {
                name,
                env: Vec::new(),
                hive_config: Some(hive_router_config(dedup)),
            })
            .collect(),
        _ => vec![Variant {
            name: "default",
            env: Vec::new(),
            hive_config: None,
        }],
    }
}

/// Hive Router's settings for the fan-out: subscriptions on, clients over WebSocket at
/// the GraphQL path, every subgraph subscribed to over graphql-transport-ws at its URL,
/// enough long-lived clients (default 128), router-level dedupe as asked (default off).
pub fn hive_router_config(dedup: bool) -> String {
    format!(
        "subscriptions:\n  enabled: true\n  websocket:\n    all: {{}}\nwebsocket:\n  enabled: true\ntraffic_shaping:\n  router:\n    max_long_lived_clients: 1000000\n    dedupe:\n      enabled: {dedup}\n"
    )
}

/// Runs the fan-out for every gateway, variant and subscriber count; the rows go into
/// `run.fanout`.
pub async fn run_scenario(
    cfg: &Config,
    fanout: &FanoutConfig,
    client: &Client,
    scenario: &Scenario,
    work: &Path,
    run: &mut ScenarioRun,
) -> anyhow::Result<()> {
    let dir = work.join(&scenario.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let payload: Value =
        serde_json::from_str(&scenario.payload()?).context("the scenario's payload")?;
    let interval = format!("{}", fanout.event_interval.as_millis().max(1));
    let expected = {
        let extra = ["--event-interval".to_owned(), interval.clone()];
        let (mut mono, base) = bench::start_server(
            cfg.server(),
            &scenario.set,
            true,
            &extra,
            &dir.join("monolith.log"),
        )
        .await?;
        let first = first_event(&ws_url(&format!("{base}/graphql")), &payload).await;
        process::stop(&mut mono).await;
        first.context("subscribing to the monolith")?
    };
    let extra = ["--event-interval".to_owned(), interval];
    let servers = bench::start_set_with(cfg, client, &scenario.set, &dir, &extra).await?;
    let mut rows = Vec::new();
    for (gateway, installed, _) in &cfg.gateways {
        for variant in variants(gateway) {
            for &n in &fanout.subscribers {
                let row = match installed {
                    Err(e) => {
                        FanoutRow::failed(gateway, variant.name, n, format!("not installed: {e}"))
                    }
                    Ok(bin) => {
                        let measured = measure(
                            cfg,
                            fanout,
                            gateway,
                            bin.as_deref(),
                            &variant,
                            n,
                            &servers.supergraph,
                            &scenario.set,
                            &payload,
                            &expected,
                            &dir,
                        )
                        .await;
                        measured.unwrap_or_else(|e| {
                            progress(format!(
                                "subscriptions / {} ({}) × {n}: {e:#}",
                                gateway.name, variant.name
                            ));
                            FanoutRow::failed(gateway, variant.name, n, format!("{e:#}"))
                        })
                    }
                };
                rows.push(row);
            }
        }
    }
    let mut subgraphs = servers.subgraphs;
    process::stop(&mut subgraphs).await;
    run.fanout = Some(rows);
    Ok(())
}

/// `http(s)://…` → `ws(s)://…`.
fn ws_url(http: &str) -> String {
    if let Some(rest) = http.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = http.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        http.to_owned()
    }
}

#[allow(clippy::too_many_arguments)]
async fn measure(
    cfg: &Config,
    fanout: &FanoutConfig,
    gateway: &Gateway,
    bin: Option<&Path>,
    variant: &Variant,
    subscribers: u32,
    supergraph: &Path,
    set: &str,
    payload: &Value,
    expected: &Value,
    dir: &Path,
) -> anyhow::Result<FanoutRow> {
    let tag = format!(
        "subscriptions-{}-{}-{subscribers}",
        gateway.name,
        variant
            .name
            .replace(|c: char| !c.is_ascii_alphanumeric(), "-")
    );
    let port = bench::free_port()?;
    let slots = Slots {
        supergraph,
        host: "127.0.0.1",
        port,
        set,
    };
    let mut command = gateway.command(bin, &slots, cfg.placement.cpus)?;
    command.env.extend(variant.env.iter().cloned());
    if let Some(yaml) = &variant.hive_config {
        let file = dir.join(format!("{tag}.router.yaml"));
        std::fs::write(&file, yaml).context("writing Hive Router's config")?;
        command.env.push((
            "ROUTER_CONFIG_FILE_PATH".to_owned(),
            file.to_string_lossy().into_owned(),
        ));
    }
    let log = dir.join(format!("{tag}.log"));
    let (mut child, cgroup) = bench::launch_gateway(cfg, command, &tag, &log)?;
    let result = measure_running(
        cfg,
        fanout,
        gateway,
        variant,
        subscribers,
        &mut child,
        port,
        payload,
        expected,
        &log,
    )
    .await;
    process::stop(&mut child).await;
    drop(cgroup);
    result
}

#[allow(clippy::too_many_arguments)]
async fn measure_running(
    cfg: &Config,
    fanout: &FanoutConfig,
    gateway: &Gateway,
    variant: &Variant,
    subscribers: u32,
    child: &mut tokio::process::Child,
    port: u16,
    payload: &Value,
    expected: &Value,
    log: &Path,
) -> anyhow::Result<FanoutRow> {
    let pid = child.id().context("the gateway exited immediately")?;
    let http = format!("http://127.0.0.1:{port}{}", gateway.graphql_path);
    let client = Client::new();
    crate::bench::wait_ready(&client, child, &http, cfg.start_timeout, &gateway.name, log).await?;
    let url = ws_url(&http);
    // One subscription first: its first event must be the monolith's (publishedAt
    // aside); it also warms the gateway's plan cache.
    let first = first_event(&url, payload)
        .await
        .context("the first subscription")?;
    if let Some(d) = crate::compare::first_difference(expected, &first) {
        bail!("the first event differs from the monolith's {d}");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let sampler_start = Instant::now();
    let sampler = Sampler::start(pid);
    // A second of the idle gateway: the memory baseline.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let plan = Plan {
        url,
        subscribe: json!({"type": "subscribe", "id": "1", "payload": payload}).to_string(),
        subscribers,
        // Every subscription has had an event before the window opens.
        settle: fanout.event_interval + Duration::from_millis(500),
        window: Duration::from_secs(u64::from(cfg.duration_s)),
        cpus: cfg.placement.others.clone(),
    };
    let outcome = tokio::task::spawn_blocking(move || plan.run())
        .await
        .context("the subscription clients panicked")??;
    let samples = sampler.finish().await;
    let at = |t: Instant| t.saturating_duration_since(sampler_start).as_secs_f64();
    let before: Vec<Sample> = samples
        .iter()
        .copied()
        .filter(|s| s.at < at(outcome.first_connect))
        .collect();
    let (w0, w1) = (at(outcome.window.0), at(outcome.window.1));
    let during: Vec<Sample> = samples
        .iter()
        .copied()
        .filter(|s| s.at >= w0 && s.at <= w1)
        .collect();
    let mean_rss = |s: &[Sample]| {
        (!s.is_empty()).then(|| s.iter().map(|s| s.rss as f64).sum::<f64>() / s.len() as f64)
    };
    let rss_before = mean_rss(&before);
    let rss_open = mean_rss(&during);
    let cpu_avg = (during.len() >= 2).then(|| sampler::usage(&during).cpu_avg);
    let window_s = (outcome.window.1 - outcome.window.0).as_secs_f64();
    let quantile = |q: f64| {
        (!outcome.latency.is_empty()).then(|| outcome.latency.value_at_quantile(q) as f64 / 1000.0)
    };
    let row = FanoutRow {
        gateway: gateway.name.clone(),
        label: gateway.label.clone(),
        variant: variant.name.to_owned(),
        subscribers,
        error: None,
        opened: outcome.opened,
        open_failures: outcome.open_failures,
        open_seconds: outcome.open_seconds,
        expected_per_s: f64::from(subscribers) / fanout.event_interval.as_secs_f64(),
        delivered_per_s: outcome.events_in_window as f64 / window_s.max(1e-9),
        events_in_window: outcome.events_in_window,
        bad_events: outcome.bad_events,
        ended_early: outcome.ended_early,
        failure_samples: outcome.failure_samples,
        latency_p50_ms: quantile(0.5),
        latency_p99_ms: quantile(0.99),
        latency_max_ms: (!outcome.latency.is_empty())
            .then(|| outcome.latency.max() as f64 / 1000.0),
        cpu_avg,
        rss_before: rss_before.map(|r| r as u64),
        rss_open: rss_open.map(|r| r as u64),
        bytes_per_subscription: match (rss_before, rss_open) {
            (Some(b), Some(o)) if subscribers > 0 => Some((o - b) / f64::from(subscribers)),
            _ => None,
        },
    };
    progress(format!(
        "subscriptions / {} ({}) × {subscribers}: opened {} in {:.1} s ({} failed), {:.0} events/s of {:.0} expected, p50 {:.2} ms, p99 {:.2} ms, {} bad, {} ended early, CPU {:.0}%, RSS {:.1} → {:.1} MiB ({:.1} KiB per subscription)",
        gateway.name,
        variant.name,
        row.opened,
        row.open_seconds,
        row.open_failures,
        row.delivered_per_s,
        row.expected_per_s,
        row.latency_p50_ms.unwrap_or(f64::NAN),
        row.latency_p99_ms.unwrap_or(f64::NAN),
        row.bad_events,
        row.ended_early,
        row.cpu_avg.unwrap_or(f64::NAN) * 100.0,
        row.rss_before.unwrap_or(0) as f64 / 1048576.0,
        row.rss_open.unwrap_or(0) as f64 / 1048576.0,
        row.bytes_per_subscription.unwrap_or(f64::NAN) / 1024.0,
    ));
    Ok(row)
}

/// Subscribes once and returns the first event's `data`, with `publishedAt` removed
/// (it differs per emission).
async fn first_event(url: &str, payload: &Value) -> anyhow::Result<Value> {
    let subscribe = json!({"type": "subscribe", "id": "1", "payload": payload}).to_string();
    let attempt = async {
        let mut ws = open(url, &subscribe).await?;
        // Bounded by the timeout around it.
        loop {
            let Some(msg) = ws.next().await else {
                bail!("the socket closed before the first event");
            };
            let Message::Text(text) = msg.context("reading the socket")? else {
                continue;
            };
            let msg: Value = serde_json::from_str(&text).context("a message that is not JSON")?;
            match msg["type"].as_str() {
                Some("next") => {
                    let mut payload = msg["payload"].clone();
                    check_event(&payload).map_err(anyhow::Error::msg)?;
                    if let Some(review) = payload["data"]["reviewAdded"].as_object_mut() {
                        review.remove("publishedAt");
                    }
                    let _ = ws.close(None).await;
                    return Ok(payload["data"].clone());
                }
                Some("ping") => {
                    ws.send(Message::text(r#"{"type":"pong"}"#)).await?;
                }
                _ => bail!("expected the first event, got {text}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), attempt)
        .await
        .context("no event within 30 s")?
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects, initialises (`connection_init` → `connection_ack`) and sends `subscribe`.
async fn open(url: &str, subscribe: &str) -> anyhow::Result<Socket> {
    let mut request = url
        .into_client_request()
        .with_context(|| format!("{url} is not a WebSocket URL"))?;
    request.headers_mut().insert(
        "sec-websocket-protocol",
        http::HeaderValue::from_static(PROTOCOL),
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(request)
        .await
        .with_context(|| format!("connecting to {url}"))?;
    ws.send(Message::text(r#"{"type":"connection_init"}"#))
        .await
        .context("sending connection_init")?;
    // Bounded by OPEN_TIMEOUT around the caller; a server sends few messages before ack.
    loop {
        let Some(msg) = ws.next().await else {
            bail!("the socket closed before connection_ack");
        };
        match msg.context("waiting for connection_ack")? {
            Message::Text(text) => {
                let msg: Value =
                    serde_json::from_str(&text).context("a message that is not JSON")?;
                match msg["type"].as_str() {
                    Some("connection_ack") => break,
                    Some("ping") => ws.send(Message::text(r#"{"type":"pong"}"#)).await?,
                    _ => bail!("expected connection_ack, got {text}"),
                }
            }
            Message::Close(frame) => bail!("closed before connection_ack: {frame:?}"),
            _ => {}
        }
    }
    ws.send(Message::text(subscribe.to_owned()))
        .await
        .context("sending subscribe")?;
    Ok(ws)
}

/// An event's payload is good when it has `data.reviewAdded` with the fields the
/// scenario selects and no `errors`.
fn check_event(payload: &Value) -> Result<(), String> {
    if let Some(errors) = payload.get("errors") {
        return Err(format!("errors: {errors}"));
    }
    let review = &payload["data"]["reviewAdded"];
    if !review.is_object() {
        return Err(format!("no data.reviewAdded: {payload}"));
    }
    let present = review["id"].is_string()
        && review["publishedAt"].is_number()
        && review["product"]["upc"].is_string()
        && review["product"]["name"].is_string()
        && review["author"]["username"].is_string();
    if present {
        Ok(())
    } else {
        Err(format!("missing fields: {review}"))
    }
}

/// The clients' part of one measurement.
struct Plan {
    url: String,
    subscribe: String,
    subscribers: u32,
    settle: Duration,
    window: Duration,
    cpus: Option<String>,
}

struct Outcome {
    first_connect: Instant,
    /// The measured window.
    window: (Instant, Instant),
    opened: u32,
    open_failures: u32,
    open_seconds: f64,
    events_in_window: u64,
    bad_events: u64,
    ended_early: u32,
    failure_samples: Vec<String>,
    latency: Histogram<u64>,
}

/// Counters every client task updates (one thread).
struct Stats {
    window: Option<(Instant, Instant)>,
    opened: u32,
    open_failures: u32,
    events_in_window: u64,
    bad_events: u64,
    ended_early: u32,
    failure_samples: Vec<String>,
    latency: Histogram<u64>,
}

impl Stats {
    fn new() -> anyhow::Result<Self> {
        Ok(Stats {
            window: None,
            opened: 0,
            open_failures: 0,
            events_in_window: 0,
            bad_events: 0,
            ended_early: 0,
            failure_samples: Vec::new(),
            latency: Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)
                .context("creating a latency histogram")?,
        })
    }

    fn sample(&mut self, why: impl FnOnce() -> String) {
        if self.failure_samples.len() < SAMPLES {
            self.failure_samples.push(why());
        }
    }
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

impl Plan {
    /// Runs the clients on a current-thread runtime on this (blocking) thread.
    fn run(self) -> anyhow::Result<Outcome> {
        if let Some(cpus) = &self.cpus {
            crate::openload::pin_current_thread(cpus);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the clients' runtime")?;
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, self.drive())
    }

    async fn drive(self) -> anyhow::Result<Outcome> {
        let stats = Rc::new(RefCell::new(Stats::new()?));
        let (stop, _) = tokio::sync::watch::channel(false);
        let opening = Rc::new(tokio::sync::Semaphore::new(OPENING_AT_ONCE));
        let settled = Rc::new(tokio::sync::Notify::new());
        let first_connect = Instant::now();
        let mut tasks = Vec::with_capacity(self.subscribers as usize);
        for _ in 0..self.subscribers {
            let task = Subscriber {
                url: self.url.clone(),
                subscribe: self.subscribe.clone(),
                stats: Rc::clone(&stats),
                stop: stop.subscribe(),
                opening: Rc::clone(&opening),
                settled: Rc::clone(&settled),
                total: self.subscribers,
            };
            tasks.push(tokio::task::spawn_local(task.run()));
        }
        let open_deadline =
            Instant::now() + OPEN_TIMEOUT + Duration::from_millis(u64::from(self.subscribers) * 20);
        let all_open = tokio::time::timeout_at(open_deadline.into(), settled.notified()).await;
        let opened_at = Instant::now();
        if all_open.is_err() {
            progress(format!(
                "not every subscription opened in {:.0} s; measuring those that did",
                (opened_at - first_connect).as_secs_f64()
            ));
        }
        let window = (
            opened_at + self.settle,
            opened_at + self.settle + self.window,
        );
        stats.borrow_mut().window = Some(window);
        tokio::time::sleep_until(window.1.into()).await;
        let _ = stop.send(true);
        let aborts: Vec<_> = tasks.iter().map(|t| t.abort_handle()).collect();
        let closing = futures::future::join_all(tasks);
        if tokio::time::timeout(CLOSE_GRACE, closing).await.is_err() {
            aborts.iter().for_each(tokio::task::AbortHandle::abort);
        }
        let s = std::mem::replace(&mut *stats.borrow_mut(), Stats::new()?);
        Ok(Outcome {
            first_connect,
            window,
            opened: s.opened,
            open_failures: s.open_failures,
            open_seconds: (opened_at - first_connect).as_secs_f64(),
            events_in_window: s.events_in_window,
            bad_events: s.bad_events,
            ended_early: s.ended_early,
            failure_samples: s.failure_samples,
            latency: s.latency,
        })
    }
}

/// One client: its own connection and subscription.
struct Subscriber {
    url: String,
    subscribe: String,
    stats: Rc<RefCell<Stats>>,
    stop: tokio::sync::watch::Receiver<bool>,
    opening: Rc<tokio::sync::Semaphore>,
    settled: Rc<tokio::sync::Notify>,
    total: u32,
}

impl Subscriber {
    /// Counts this client as opened or failed; the last one wakes the driver.
    fn settle(&self, ok: bool) {
        let mut s = self.stats.borrow_mut();
        if ok {
            s.opened += 1;
        } else {
            s.open_failures += 1;
        }
        if s.opened + s.open_failures == self.total {
            self.settled.notify_one();
        }
    }

    async fn run(mut self) {
        let opened = {
            let _permit = self.opening.acquire().await;
            tokio::time::timeout(OPEN_TIMEOUT, open(&self.url, &self.subscribe)).await
        };
        let mut ws = match opened {
            Ok(Ok(ws)) => ws,
            Ok(Err(e)) => {
                self.stats.borrow_mut().sample(|| format!("opening: {e:#}"));
                self.settle(false);
                return;
            }
            Err(_) => {
                self.stats
                    .borrow_mut()
                    .sample(|| format!("opening took over {OPEN_TIMEOUT:?}"));
                self.settle(false);
                return;
            }
        };
        self.settle(true);
        // Bounded by the stop signal, which the driver sends at the window's end.
        loop {
            let msg = tokio::select! {
                msg = ws.next() => msg,
                _ = self.stop.wait_for(|s| *s) => break,
            };
            let received = Instant::now();
            let text = match msg {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(Message::Close(frame))) => {
                    self.ended(format!("closed: {frame:?}"));
                    return;
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    self.ended(format!("socket error: {e}"));
                    return;
                }
                None => {
                    self.ended("the socket closed".to_owned());
                    return;
                }
            };
            self.message(&text, received, &mut ws).await;
            if *self.stop.borrow() {
                break;
            }
        }
        let _ = ws
            .send(Message::text(r#"{"type":"complete","id":"1"}"#))
            .await;
        let _ = ws.close(None).await;
    }

    fn ended(&self, why: String) {
        let mut s = self.stats.borrow_mut();
        s.ended_early += 1;
        s.sample(|| why);
    }

    async fn message(&self, text: &str, received: Instant, ws: &mut Socket) {
        let msg: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(_) => {
                let mut s = self.stats.borrow_mut();
                s.bad_events += 1;
                s.sample(|| format!("not JSON: {text}"));
                return;
            }
        };
        match msg["type"].as_str() {
            Some("next") => {
                let checked = check_event(&msg["payload"]);
                let mut s = self.stats.borrow_mut();
                let Some((from, to)) = s.window else {
                    // Before the window: checked, not counted.
                    if let Err(e) = checked {
                        s.bad_events += 1;
                        s.sample(|| e);
                    }
                    return;
                };
                match checked {
                    Err(e) => {
                        s.bad_events += 1;
                        s.sample(|| e);
                    }
                    Ok(()) if received >= from && received < to => {
                        s.events_in_window += 1;
                        let published = msg["payload"]["data"]["reviewAdded"]["publishedAt"]
                            .as_f64()
                            .unwrap_or(0.0);
                        let us = ((now_ms() - published) * 1000.0).max(1.0) as u64;
                        let _ = s.latency.record(us.min(MAX_LATENCY_US));
                    }
                    Ok(()) => {}
                }
            }
            Some("ping") => {
                let _ = ws.send(Message::text(r#"{"type":"pong"}"#)).await;
            }
            Some("pong") => {}
            _ => self.ended(format!("ended: {text}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_checked_for_errors_and_fields() {
        let good = json!({"data": {"reviewAdded": {
            "id": "1", "body": "b", "publishedAt": 1.7e12,
            "product": {"upc": "1", "name": "Table", "price": 899, "inStock": true},
            "author": {"username": "urigo"}
        }}});
        assert_eq!(check_event(&good), Ok(()));
        let errors = json!({"data": null, "errors": [{"message": "boom"}]});
        assert!(check_event(&errors).expect_err("errors").contains("boom"));
        let null = json!({"data": null});
        assert!(check_event(&null).is_err());
        let mut partial = good.clone();
        partial["data"]["reviewAdded"]["product"]["name"] = Value::Null;
        assert!(
            check_event(&partial)
                .expect_err("a null field")
                .contains("missing")
        );
        let mut untimed = good;
        untimed["data"]["reviewAdded"]["publishedAt"] = Value::Null;
        assert!(check_event(&untimed).is_err());
    }

    #[test]
    fn hive_router_gets_websockets_both_ways_and_the_dedupe_asked_for() {
        let on = hive_router_config(true);
        assert!(on.contains("subscriptions:\n  enabled: true\n  websocket:\n    all: {}"));
        assert!(on.contains("websocket:\n  enabled: true"));
        assert!(on.contains("dedupe:\n      enabled: true"));
        assert!(hive_router_config(false).contains("dedupe:\n      enabled: false"));
    }

    #[test]
    fn ws_urls_from_http_ones() {
        assert_eq!(
            ws_url("http://127.0.0.1:1/graphql"),
            "ws://127.0.0.1:1/graphql"
        );
        assert_eq!(ws_url("https://h/g"), "wss://h/g");
    }
}
