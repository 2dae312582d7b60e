//! Serves a benchmark set's subgraphs (or its monolith oracle) over HTTP.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use graphfleet_loadtest::{Mode, Options, Set, serve};

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
    /// Extra latency for one subgraph, SUBGRAPH=MS (repeatable).
    #[arg(long = "delay", value_parser = parse_delay)]
    delays: Vec<(String, Duration)>,
    /// Serve the set's monolith oracle at /graphql instead of the subgraphs.
    #[arg(long)]
    monolith: bool,
    /// Worker threads (default: available cores).
    #[arg(long)]
    threads: Option<usize>,
}

fn parse_delay(s: &str) -> anyhow::Result<(String, Duration)> {
    let Some((name, ms)) = s.split_once('=') else {
        bail!("expected SUBGRAPH=MS, got {s:?}");
    };
    let ms: u64 = ms
        .parse()
        .with_context(|| format!("delay {ms:?} is not a number of milliseconds"))?;
    Ok((name.to_owned(), Duration::from_millis(ms)))
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
