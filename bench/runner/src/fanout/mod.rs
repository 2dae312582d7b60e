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

mod clients;

pub(crate) use self::clients::initialised;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

use self::clients::{Plan, first_event, subscribe_frame};
use crate::config::{Config, FanoutConfig};
use crate::gateway::{Gateway, Kind, Slots};
use crate::http::Client;
use crate::peers::Peer;
use crate::process;
use crate::progress::progress;
use crate::results::{FanoutRow, ScenarioRun};
use crate::sampler::{self, Sample, Sampler};
use crate::scenario::Scenario;
use crate::servers::{free_port, launch_gateway, start_server, start_set_with, wait_ready};

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
fn hive_router_config(dedup: bool) -> String {
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
        let (mut mono, base) = start_server(
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
    let servers = start_set_with(cfg, client, &scenario.set, &dir, &extra).await?;
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
    let port = free_port()?;
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
    let (mut child, cgroup) = launch_gateway(&cfg.placement, command, &tag, &log)?;
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
    wait_ready(&client, child, &http, cfg.start_timeout, &gateway.name, log).await?;
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
        subscribe: subscribe_frame(payload),
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
        latency_p50_ms: outcome.latency.quantile(0.5),
        latency_p99_ms: outcome.latency.quantile(0.99),
        latency_max_ms: outcome.latency.max_ms(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
