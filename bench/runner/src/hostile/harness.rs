//! One fresh gateway per attack: the binary started with the settings it accepts (an older
//! binary refuses keys it does not know, so each is tried with its `check` command first),
//! an admin listener for the health probe when the binary has one, in its own cgroup under
//! the run's CPU budget; and the measurement around an attack on it.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::process::Child;

use super::probe::{Health, Probe};
use super::table::Outcome;
use crate::command::Command;
use crate::http::Client;
use crate::process::{self, Cgroup, Placement, sh_quote};
use crate::sampler;
use crate::servers::{free_port, launch_gateway, wait_ready};

const MIB: f64 = 1_048_576.0;

/// A gateway binary under test.
#[derive(Debug, Clone)]
pub(crate) struct Binary {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
}

impl Binary {
    /// Whether the binary's configuration accepts `setting` (`KEY=VALUE`): its `check`
    /// command loads the configuration and exits non-zero on an unknown key.
    pub(crate) fn accepts(&self, supergraph: &Path, setting: &str) -> bool {
        std::process::Command::new(&self.path)
            .arg("--supergraph")
            .arg(supergraph)
            .args(["--set", setting, "check"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// What one attack starts: which binary, in front of which supergraph, with which
/// settings (`required` must be accepted; `optional` ones are passed where accepted).
pub(crate) struct Start<'a> {
    pub(crate) binary: &'a Binary,
    pub(crate) supergraph: &'a Path,
    pub(crate) required: &'a [String],
    pub(crate) optional: &'a [String],
    pub(crate) placement: &'a Placement,
    pub(crate) dir: &'a Path,
    pub(crate) tag: &'a str,
    pub(crate) start_timeout: Duration,
}

/// A started gateway.
pub(crate) struct Target {
    child: Child,
    _cgroup: Option<Cgroup>,
    pub(crate) pid: u32,
    /// `127.0.0.1:port` of the GraphQL listener.
    pub(crate) addr: String,
    pub(crate) graphql: String,
    pub(crate) health: String,
    pub(crate) health_on: &'static str,
    pub(crate) passed: Vec<String>,
    pub(crate) refused: Vec<String>,
}

impl Target {
    pub(crate) fn ws(&self) -> String {
        self.graphql.replacen("http://", "ws://", 1)
    }

    pub(crate) async fn stop(mut self) {
        process::stop(&mut self.child).await;
    }
}

/// Starts the gateway of `start` and waits until it answers `{ __typename }`.
pub(crate) async fn start(start: &Start<'_>) -> anyhow::Result<Target> {
    let Start {
        binary, supergraph, ..
    } = start;
    let mut passed = Vec::new();
    let mut refused = Vec::new();
    for setting in start.required {
        if !binary.accepts(supergraph, setting) {
            anyhow::bail!("{} refuses {setting}, which this attack needs", binary.name);
        }
        passed.push(setting.clone());
    }
    for setting in start.optional {
        if binary.accepts(supergraph, setting) {
            passed.push(setting.clone());
        } else {
            refused.push(setting.clone());
        }
    }
    let port = free_port()?;
    let addr = format!("127.0.0.1:{port}");
    let admin = format!("admin.listen=127.0.0.1:{}", free_port()?);
    let (health, health_on) = if binary.accepts(supergraph, &admin) {
        let url = format!("http://{}/health/live", &admin["admin.listen=".len()..]);
        passed.push(admin);
        (url, "the admin listener")
    } else {
        (format!("http://{addr}/health/live"), "the GraphQL port")
    };
    let mut line = format!(
        "{} --supergraph {} --listen {addr}",
        sh_quote(&binary.path.to_string_lossy()),
        sh_quote(&supergraph.to_string_lossy()),
    );
    for setting in &passed {
        line.push_str(&format!(" --set {}", sh_quote(setting)));
    }
    let log = start.dir.join(format!("{}.log", start.tag));
    let command = Command {
        line,
        env: vec![],
        cwd: None,
    };
    let (mut child, cgroup) = launch_gateway(start.placement, command, start.tag, &log)?;
    let graphql = format!("http://{addr}/graphql");
    // A fresh connection per request: a pooled one would hold a slot of the gateway's
    // connection limit for the attack.
    let ready = wait_ready(
        &Client::fresh_connections(),
        &mut child,
        &graphql,
        start.start_timeout,
        &binary.name,
        &log,
    )
    .await;
    if let Err(e) = ready {
        process::stop(&mut child).await;
        return Err(e);
    }
    let pid = child.id().context("the gateway exited at once")?;
    Ok(Target {
        child,
        _cgroup: cgroup,
        pid,
        addr,
        graphql,
        health,
        health_on,
        passed,
        refused,
    })
}

/// The figures of one attack.
pub(crate) struct Measured {
    pub(crate) outcome: Outcome,
    pub(crate) cpu_s: f64,
    pub(crate) peak_rss_mib: f64,
    pub(crate) start_rss_mib: f64,
    pub(crate) health: Health,
    pub(crate) healthy_after: bool,
}

/// Runs `attack` on `target` (bounded by `bound`) with the health probe and the memory
/// guard beside it, and takes the gateway's CPU and peak memory around it.
pub(crate) async fn measure(
    target: &Target,
    rss_limit: u64,
    bound: Duration,
    attack: impl Future<Output = anyhow::Result<Outcome>>,
) -> anyhow::Result<Measured> {
    let start_rss = sampler::process_status_bytes(target.pid, "VmRSS").unwrap_or(0);
    let cpu_before = sampler::tree_cpu_seconds(target.pid).context("the gateway's /proc stat")?;
    let probe = Probe::start(target.health.clone(), target.pid, rss_limit)?;
    let started = Instant::now();
    let outcome = match tokio::time::timeout(bound, attack).await {
        Ok(outcome) => outcome?,
        Err(_) => Outcome {
            wall_s: started.elapsed().as_secs_f64(),
            answer: "timeout".into(),
            codes: "—".into(),
            note: format!("the attack's {} s bound ran out", bound.as_secs()),
        },
    };
    // Work the gateway goes on with after its answer counts too: a moment to show it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let health = probe.finish();
    let cpu_after = sampler::tree_cpu_seconds(target.pid);
    let peak = sampler::process_status_bytes(target.pid, "VmHWM");
    let healthy_after = health.killed_at.is_none() && still_serves(target).await;
    Ok(Measured {
        outcome,
        cpu_s: cpu_after.map_or(f64::NAN, |c| c - cpu_before),
        peak_rss_mib: peak.or(health.killed_at).unwrap_or(0) as f64 / MIB,
        start_rss_mib: start_rss as f64 / MIB,
        health,
        healthy_after,
    })
}

/// Health and `{ __typename }` (answered whatever the subgraphs: the big one and the
/// unreachable ones serve no `topProducts`) answered, each within 5 s.
async fn still_serves(target: &Target) -> bool {
    let client = Client::fresh_connections();
    let health = client
        .send(
            hyper::Method::GET,
            &target.health,
            None,
            Duration::from_secs(5),
        )
        .await;
    let body = r#"{"query":"{ __typename }"}"#.to_owned();
    let query = client
        .send(
            hyper::Method::POST,
            &target.graphql,
            Some(body.into()),
            Duration::from_secs(5),
        )
        .await;
    matches!(health, Ok((200, _)))
        && matches!(&query, Ok((200, b)) if !String::from_utf8_lossy(b).contains("\"errors\""))
}
