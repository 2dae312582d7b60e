//! `graphfleet-gateway --supergraph PATH --listen ADDR` serves GraphQL;
//! `graphfleet-gateway plan --supergraph PATH --query FILE [--operation NAME]` prints a plan.

use anyhow::{Context, bail};
use graphfleet_gateway::supergraph::Supergraph;
use std::path::PathBuf;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Default)]
struct Args {
    plan: bool,
    supergraph: Option<PathBuf>,
    listen: Option<String>,
    query: Option<PathBuf>,
    operation: Option<String>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().with_context(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "plan" => args.plan = true,
            "--supergraph" => args.supergraph = Some(value("--supergraph")?.into()),
            "--listen" => args.listen = Some(value("--listen")?),
            "--query" => args.query = Some(value("--query")?.into()),
            "--operation" => args.operation = Some(value("--operation")?),
            "--help" | "-h" => {
                println!(
                    "usage: graphfleet-gateway --supergraph PATH [--listen ADDR]\n       graphfleet-gateway plan --supergraph PATH --query FILE [--operation NAME]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (see --help)"),
        }
    }
    Ok(args)
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = parse_args()?;
    let path = args.supergraph.context("--supergraph PATH is required")?;
    if args.plan {
        let supergraph = Supergraph::from_file(&path)
            .with_context(|| format!("loading supergraph {}", path.display()))?;
        let query_path = args.query.context("plan needs --query FILE")?;
        let query = std::fs::read_to_string(&query_path)
            .with_context(|| format!("reading {}", query_path.display()))?;
        let text = graphfleet_gateway::plan_text(&supergraph, &query, args.operation.as_deref())?;
        print!("{text}");
        return Ok(());
    }
    let mut config = graphfleet_gateway::config::Config::default();
    if let Some(listen) = args.listen {
        config.listen = listen
            .parse()
            .with_context(|| format!("--listen {listen:?} is not an address like 0.0.0.0:4000"))?;
    }
    config.supergraph.path = Some(path);
    graphfleet_gateway::http::serve_blocking(std::sync::Arc::new(config))
}
