//! The processes a host-mode run starts: the set's `graphfleet-subgraphs` (or its
//! monolith), and each gateway in its own cgroup under the run's CPU budget.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use tokio::process::Child;

use crate::command::Command;
use crate::config::{Config, SubgraphServer};
use crate::http::Client;
use crate::process::{self, Cgroup, Launch, Placement};

/// What a scenario needs from the set's servers.
pub(crate) struct SetServers {
    pub(crate) subgraphs: Child,
    /// Base URL of the subgraph server (its `/stats` counts subgraph requests).
    pub(crate) base: String,
    pub(crate) supergraph: PathBuf,
}

/// Starts `graphfleet-subgraphs` on an ephemeral port and returns the child and its base URL.
pub(crate) async fn start_server(
    server: SubgraphServer<'_>,
    set: &str,
    monolith: bool,
    extra_args: &[String],
    log: &Path,
) -> anyhow::Result<(Child, String)> {
    let _ = std::fs::remove_file(log);
    let mut command = format!(
        "{} --set {} --listen 127.0.0.1:0",
        process::sh_quote(&server.bin.to_string_lossy()),
        process::sh_quote(set)
    );
    if monolith {
        command.push_str(" --monolith");
    }
    if server.cpus.is_some() {
        command.push_str(" --threads 1");
    }
    for arg in extra_args {
        command.push(' ');
        command.push_str(&process::sh_quote(arg));
    }
    let mut child = process::spawn(&Launch {
        command,
        env: vec![],
        cwd: None,
        cpus: server.cpus,
        cgroup: None,
        log,
    })?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if let Some(status) = child.try_wait().context("polling the subgraph server")? {
            bail!(
                "graphfleet-subgraphs --set {set} exited ({status}):\n{}",
                process::log_tail(log, 10)
            );
        }
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(url) = text.split_whitespace().find(|w| w.starts_with("http://")) {
            return Ok((child, url.trim_end_matches('/').to_owned()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    process::stop(&mut child).await;
    bail!(
        "graphfleet-subgraphs --set {set} printed no address within 30 s:\n{}",
        process::log_tail(log, 10)
    )
}

pub(crate) async fn start_set(
    cfg: &Config,
    client: &Client,
    set: &str,
    dir: &Path,
) -> anyhow::Result<SetServers> {
    start_set_with(cfg, client, set, dir, &[]).await
}

/// [`start_set`] with extra `graphfleet-subgraphs` arguments.
pub(crate) async fn start_set_with(
    cfg: &Config,
    client: &Client,
    set: &str,
    dir: &Path,
    extra_args: &[String],
) -> anyhow::Result<SetServers> {
    let (subgraphs, base) = start_server(
        cfg.server(),
        set,
        false,
        extra_args,
        &dir.join("subgraphs.log"),
    )
    .await?;
    let committed = match &cfg.supergraph {
        Some(file) => file.clone(),
        None => cfg
            .repo
            .join("bench/sets")
            .join(set)
            .join("supergraph.graphql"),
    };
    let supergraph = point_supergraph(&committed, &base, dir)?;
    let stats = client
        .get(&format!("{base}/stats"))
        .await
        .context("GET /stats of the subgraphs")?;
    if stats.0 != 200 {
        bail!("GET {base}/stats answered {}", stats.0);
    }
    Ok(SetServers {
        subgraphs,
        base,
        supergraph,
    })
}

/// Writes `committed` to `dir/supergraph.graphql` with its routing URLs at
/// `http://127.0.0.1:4200` pointed at `base`, the running subgraphs.
pub(crate) fn point_supergraph(
    committed: &Path,
    base: &str,
    dir: &Path,
) -> anyhow::Result<PathBuf> {
    let text = std::fs::read_to_string(committed)
        .with_context(|| format!("reading {}", committed.display()))?;
    let supergraph = dir.join("supergraph.graphql");
    std::fs::write(&supergraph, text.replace("http://127.0.0.1:4200", base))
        .with_context(|| format!("writing {}", supergraph.display()))?;
    Ok(supergraph)
}

pub(crate) fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(l.local_addr().context("local address")?.port())
}

/// Starts a measured gateway: in its own cgroup `tag` with the run's CPU budget, pinned to
/// the gateway's cores, its output in `log` (replaced). Keep the cgroup until it stops.
pub(crate) fn launch_gateway(
    placement: &Placement,
    command: Command,
    tag: &str,
    log: &Path,
) -> anyhow::Result<(Child, Option<Cgroup>)> {
    let cgroup = Cgroup::create(tag, placement.cpus);
    let _ = std::fs::remove_file(log);
    let child = process::spawn(&Launch {
        command: command.line,
        env: command.env,
        cwd: command.cwd.as_deref(),
        cpus: placement.gateway.as_deref(),
        cgroup: cgroup.as_ref(),
        log,
    })?;
    Ok((child, cgroup))
}

/// Wait until the gateway `child` (named `name`, logging to `log`) answers a `{ __typename }`
/// query at `url`; an error with its log's tail if it exits first.
pub(crate) async fn wait_ready(
    client: &Client,
    child: &mut Child,
    url: &str,
    limit: std::time::Duration,
    name: &str,
    log: &Path,
) -> anyhow::Result<()> {
    let probe = Bytes::from_static(br#"{"query":"{ __typename }"}"#);
    client
        .wait_ok(url, Some(probe), limit, || match child.try_wait() {
            Ok(Some(status)) => bail!(
                "the gateway exited ({status}):\n{}",
                process::log_tail(log, 15)
            ),
            _ => Ok(()),
        })
        .await
        .with_context(|| format!("{name} did not become ready (log: {})", log.display()))
}
