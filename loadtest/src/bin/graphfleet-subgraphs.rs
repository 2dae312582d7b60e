//! Serves a benchmark set's subgraphs (or its monolith oracle) over HTTP.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use graphfleet_loadtest::{Mode, Options, Set, duration, serve};

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
    /// Worker threads (default: available cores).
    #[arg(long)]
    threads: Option<usize>,
}

/// `SUBGRAPH=MS` (a bare number: milliseconds, as before) or `SUBGRAPH=DURATION` in the
/// LoadTest CRD's grammar (`graphfleet_loadtest::duration`).
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
        serve(cli.set, mode, listener, Options { delays: cli.delays }).await?;
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
        let err = parse_delay("products=5x").expect_err("bad unit");
        assert!(
            format!("{err:#}").contains("expected a unit h, m, s or ms"),
            "{err:#}"
        );
    }
}
