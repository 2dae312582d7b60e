//! Serves a benchmark set's subgraphs (or its monolith oracle) over HTTP.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use graphfleet_bench_model::{Set, duration};
use graphfleet_bench_subgraphs::{Mode, Options, StreamOptions, serve};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Benchmark subgraphs: each at /<subgraph>, request counters at /stats (POST /stats/reset).
#[derive(Parser)]
#[command(name = "graphfleet-subgraphs")]
struct Cli {
    /// fed | big-response | many-plans | apollo
    #[arg(long)]
    set: Set,
    /// Address to listen on, e.g. 127.0.0.1:4200.
    #[arg(long)]
    listen: SocketAddr,
    /// Extra latency for one subgraph, SUBGRAPH=MS or SUBGRAPH=DURATION (`5`, `5ms`, `1.5s`;
    /// repeatable).
    #[arg(long = "delay", value_parser = parse_delay)]
    delays: Vec<(String, Duration)>,
    /// Serve the set's monolith oracle at /graphql instead of the subgraphs.
    #[arg(long)]
    monolith: bool,
    /// Time between subscription events, MS or DURATION (default 100 ms), or
    /// SUBGRAPH=MS|DURATION for one route (`graphql` for the monolith; repeatable).
    /// All subscriptions of a route share one clock.
    #[arg(long = "event-interval", value_parser = parse_interval)]
    event_intervals: Vec<(Option<String>, Duration)>,
    /// A WebSocket must send connection_init within this (MS or DURATION; default 3s),
    /// else it is closed with 4408.
    #[arg(long = "ws-init-timeout", value_parser = parse_ms_or_duration)]
    ws_init_timeout: Option<Duration>,
    /// Worker threads (default: available cores).
    #[arg(long)]
    threads: Option<usize>,
}

/// A bare number is milliseconds, anything else a duration in the LoadTest CRD's grammar.
fn parse_ms_or_duration(value: &str) -> anyhow::Result<Duration> {
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        let ms = value
            .parse()
            .with_context(|| format!("{value:?} is too many milliseconds"))?;
        return Ok(Duration::from_millis(ms));
    }
    duration::parse(value).with_context(|| format!("{value:?}"))
}

/// `MS|DURATION` (every route) or `SUBGRAPH=MS|DURATION` (one route); never zero.
fn parse_interval(s: &str) -> anyhow::Result<(Option<String>, Duration)> {
    let (name, value) = match s.split_once('=') {
        Some((name, value)) => (Some(name.to_owned()), value),
        None => (None, s),
    };
    let interval = parse_ms_or_duration(value).with_context(|| format!("--event-interval {s}"))?;
    if interval.is_zero() {
        bail!("--event-interval {s}: the interval must be above zero");
    }
    Ok((name, interval))
}

/// `SUBGRAPH=MS` (a bare number: milliseconds, as before) or `SUBGRAPH=DURATION` in the
/// LoadTest CRD's grammar (`graphfleet_bench_model::duration`).
fn parse_delay(s: &str) -> anyhow::Result<(String, Duration)> {
    let Some((name, delay)) = s.split_once('=') else {
        bail!("expected SUBGRAPH=MS or SUBGRAPH=DURATION (e.g. products=5ms), got {s:?}");
    };
    let delay = if !delay.is_empty() && delay.bytes().all(|b| b.is_ascii_digit()) {
        let ms = delay
            .parse()
            .with_context(|| format!("delay {delay:?} is too many milliseconds"))?;
        Duration::from_millis(ms)
    } else {
        duration::parse(delay).with_context(|| format!("--delay {s}"))?
    };
    Ok((name.to_owned(), delay))
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = cli.threads {
        runtime.worker_threads(threads.max(1));
    }
    let runtime = runtime
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(cli.listen)
            .await
            .with_context(|| format!("binding {}", cli.listen))?;
        let mode = if cli.monolith {
            Mode::Monolith
        } else {
            Mode::Subgraphs
        };
        eprintln!(
            "graphfleet-subgraphs: set {} ({mode:?}) on http://{}",
            cli.set.name(),
            listener.local_addr()?
        );
        let mut stream = StreamOptions::default();
        for (route, interval) in cli.event_intervals {
            match route {
                Some(route) => stream.event_intervals.push((route, interval)),
                None => stream.event_interval = interval,
            }
        }
        if let Some(timeout) = cli.ws_init_timeout {
            stream.connection_init_timeout = timeout;
        }
        let opts = Options { delays: cli.delays };
        serve(cli.set, mode, listener, opts, stream).await?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_take_milliseconds_or_durations() {
        let delay = |s| parse_delay(s).map(|(n, d)| (n, d.as_micros()));
        assert_eq!(
            delay("products=5").ok(),
            Some(("products".to_owned(), 5_000))
        );
        assert_eq!(
            delay("products=5ms").ok(),
            Some(("products".to_owned(), 5_000))
        );
        assert_eq!(
            delay("graphql=1.5s").ok(),
            Some(("graphql".to_owned(), 1_500_000))
        );
        assert_eq!(delay("products=0").ok(), Some(("products".to_owned(), 0)));
        for bad in [
            "products",
            "products=",
            "products=5 ms",
            "products=-5",
            "products=5x",
        ] {
            assert!(parse_delay(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_interval("250").ok(),
            Some((None, Duration::from_millis(250)))
        );
        assert_eq!(
            parse_interval("reviews=1s").ok(),
            Some((Some("reviews".to_owned()), Duration::from_secs(1)))
        );
        for bad in ["0", "reviews=0ms", "reviews=", "-1", "1x"] {
            assert!(parse_interval(bad).is_err(), "{bad:?}");
        }
        let err = parse_delay("products=5x").expect_err("bad unit");
        assert!(
            format!("{err:#}").contains("expected a unit h, m, s or ms"),
            "{err:#}"
        );
    }
}
