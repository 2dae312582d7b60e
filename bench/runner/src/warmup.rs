//! `graphfleet-bench warm-up`: the first seconds of a new gateway with and without plan
//! warm-up (`usage.warm_up_file`, which the operator fills from the fleet's usage).
//!
//! The many-plans set's subgraphs serve `--operations` distinct planning-heavy
//! operations (the many-plans query, each with its own operation name and root-field
//! alias, so each is a plan of its own). A first gateway serves each once and its
//! `/usage/operations` report is saved, as the operator saves the fleet's. Then, per
//! run, a fresh gateway starts without the report and another with it, each under the
//! CPU budget; once it is ready (`/health/ready` 200, then `--after-ready-ms`: a pod gets
//! traffic only after a readiness probe passes), it gets an open-model burst of those
//! operations in turn (`--rate` for `--seconds`), and the latency of the requests due in
//! the first second and in the whole burst is reported (p50, p99, max, from each
//! request's due time; every request's is in `<cold|warm>-<run>-samples.csv`), per start
//! and pooled over the runs. Loopback only; every process is stopped at the end.

mod burst;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use serde::Serialize;
use tokio::process::Child;

use crate::config::SubgraphServer;
use crate::gateway::{Gateway, Slots};
use crate::http::Client;
use crate::process::{self, Cgroup, Launch, Placement};
use burst::{Burst, Window};

const SET: &str = "many-plans";

/// What `graphfleet-bench warm-up` is asked to do.
pub(crate) struct Options {
    pub(crate) repo: PathBuf,
    pub(crate) out: PathBuf,
    pub(crate) subgraphs_bin: PathBuf,
    pub(crate) gateway_bin: PathBuf,
    pub(crate) operations: u32,
    pub(crate) rate: u32,
    pub(crate) seconds: u32,
    pub(crate) runs: u32,
    pub(crate) cpus: f64,
    pub(crate) start_timeout: Duration,
    pub(crate) after_ready: Duration,
}

/// One fresh gateway's first seconds.
#[derive(Debug, Serialize)]
struct Start {
    warm_up: bool,
    run: u32,
    /// From the process's start until its listener accepted.
    listening_after_ms: f64,
    /// From the process's start until `/health/ready` answered 200.
    ready_after_ms: f64,
    /// What the gateway said it planned before listening (warm-up only).
    warmed: Option<String>,
    /// Time the CPU quota held the gateway back, start and burst together (when known).
    throttled_ms: Option<f64>,
    first_second: Window,
    whole: Window,
    /// Every request of the burst (in the CSV, not the JSON).
    #[serde(skip)]
    samples: Vec<burst::Sample>,
}

/// `n` distinct operations from the many-plans query: its operation name and its first
/// root field's alias carry the index, so each is planned on its own.
fn operations(template: &str, n: u32) -> anyhow::Result<Vec<String>> {
    let (name, field) = ("query ManyPlans {", "  users {");
    if !template.contains(name) || !template.contains(field) {
        bail!("the many-plans query no longer starts with `{name}` and `{field}`");
    }
    Ok((0..n)
        .map(|i| {
            template
                .replacen(name, &format!("query ManyPlans_w{i:04} {{"), 1)
                .replacen(field, &format!("  users_w{i:04}: users {{"), 1)
        })
        .collect())
}

fn body(document: &str) -> Bytes {
    let json = serde_json::json!({ "query": document });
    Bytes::from(serde_json::to_vec(&json).expect("a JSON value serializes"))
}

pub(crate) async fn run(opts: &Options) -> anyhow::Result<()> {
    if opts.operations == 0 || opts.rate == 0 || opts.seconds == 0 || opts.runs == 0 {
        bail!("--operations, --rate, --seconds and --runs must be at least 1");
    }
    let placement = Placement::new(opts.cpus)?;
    let dir = &opts.out;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let server = SubgraphServer {
        bin: &opts.subgraphs_bin,
        cpus: placement.others.as_deref(),
    };
    let (mut subgraphs, base) =
        crate::servers::start_server(server, SET, false, &[], &dir.join("subgraphs.log")).await?;
    let result = measure(opts, &placement, &base).await;
    process::stop(&mut subgraphs).await;
    let starts = result?;
    let table = table(opts, &placement, &starts);
    println!("{table}");
    std::fs::write(dir.join("warm-up.md"), &table).context("writing warm-up.md")?;
    let json = serde_json::to_vec_pretty(&starts).context("serializing the results")?;
    std::fs::write(dir.join("warm-up.json"), json).context("writing warm-up.json")?;
    eprintln!(
        "[bench] warm-up results: {}",
        dir.join("warm-up.md").display()
    );
    Ok(())
}

async fn measure(
    opts: &Options,
    placement: &Placement,
    subgraphs: &str,
) -> anyhow::Result<Vec<Start>> {
    let dir = &opts.out;
    let set_dir = opts.repo.join("bench/sets").join(SET);
    let committed = std::fs::read_to_string(set_dir.join("supergraph.graphql"))
        .context("reading the many-plans supergraph")?;
    let supergraph = dir.join("supergraph.graphql");
    std::fs::write(
        &supergraph,
        committed.replace("http://127.0.0.1:4200", subgraphs),
    )
    .context("writing the supergraph")?;
    let template = std::fs::read_to_string(set_dir.join("queries/many-plans.graphql"))
        .context("reading the many-plans query")?;
    let bodies: Vec<Bytes> = operations(&template, opts.operations)?
        .iter()
        .map(|d| body(d))
        .collect();
    let usage = dir.join("usage.json");
    record(opts, &supergraph, &bodies, &usage).await?;
    let mut starts = Vec::new();
    for run in 1..=opts.runs {
        for warm_up in [false, true] {
            let file = warm_up.then_some(usage.as_path());
            let start = first_seconds(opts, placement, &supergraph, &bodies, file, run).await?;
            eprintln!(
                "[bench] warm-up {warm_up}, run {run}: listening after {:.0} ms, first second p99 {:.1} ms",
                start.listening_after_ms, start.first_second.p99_ms
            );
            starts.push(start);
        }
    }
    Ok(starts)
}

/// A gateway serving each operation once, its `/usage/operations` report saved to `to`.
async fn record(
    opts: &Options,
    supergraph: &Path,
    bodies: &[Bytes],
    to: &Path,
) -> anyhow::Result<()> {
    let admin = crate::servers::free_port()?;
    let env = vec![(
        "GRAPHFLEET_ADMIN__LISTEN".to_owned(),
        format!("127.0.0.1:{admin}"),
    )];
    let log = opts.out.join("record-gateway.log");
    let (mut child, port) = spawn_gateway(opts, supergraph, env, None, None, &log)?;
    let url = format!("http://127.0.0.1:{port}/graphql");
    let client = Client::new();
    let recorded = async {
        crate::servers::wait_ready(
            &client,
            &mut child,
            &url,
            opts.start_timeout,
            "gateway",
            &log,
        )
        .await?;
        for body in bodies {
            let (status, answer) = client.post_json(&url, body.clone()).await?;
            if status != 200 || !String::from_utf8_lossy(&answer).contains("\"data\":{") {
                bail!(
                    "a many-plans operation failed ({status}): {}",
                    String::from_utf8_lossy(&answer[..answer.len().min(300)])
                );
            }
        }
        let (status, report) = client
            .get(&format!("http://127.0.0.1:{admin}/usage/operations"))
            .await?;
        let operations = serde_json::from_slice::<serde_json::Value>(&report)
            .ok()
            .and_then(|r| Some(r["operations"].as_array()?.len()))
            .unwrap_or(0);
        if status != 200 || operations < bodies.len() {
            bail!("/usage/operations answered {status} with {operations} operations");
        }
        std::fs::write(to, &report).with_context(|| format!("writing {}", to.display()))
    }
    .await;
    process::stop(&mut child).await;
    recorded
}

/// A fresh gateway (planning `warm_up_file` first when given) and its first seconds.
async fn first_seconds(
    opts: &Options,
    placement: &Placement,
    supergraph: &Path,
    bodies: &[Bytes],
    warm_up_file: Option<&Path>,
    run: u32,
) -> anyhow::Result<Start> {
    let mode = if warm_up_file.is_some() {
        "warm"
    } else {
        "cold"
    };
    let env = warm_up_file
        .map(|f| {
            let path = f.to_string_lossy().into_owned();
            vec![("GRAPHFLEET_USAGE__WARM_UP_FILE".to_owned(), path)]
        })
        .unwrap_or_default();
    let log = opts.out.join(format!("{mode}-{run}-gateway.log"));
    let cgroup = Cgroup::create(&format!("warm-up-{mode}-{run}"), opts.cpus);
    let started = Instant::now();
    let (mut child, port) = spawn_gateway(
        opts,
        supergraph,
        env,
        placement.gateway.as_deref(),
        cgroup.as_ref(),
        &log,
    )?;
    let measured = async {
        wait_listening(&mut child, port, opts.start_timeout, &log).await?;
        let listening_after = started.elapsed();
        wait_ready(port, started + opts.start_timeout).await?;
        let ready_after = started.elapsed();
        tokio::time::sleep(opts.after_ready).await;
        let burst = Burst {
            url: format!("http://127.0.0.1:{port}/graphql")
                .parse()
                .context("the gateway's URL")?,
            bodies: bodies.to_vec(),
            rate: opts.rate,
            seconds: opts.seconds,
            cpus: placement.others.clone(),
        };
        let samples = tokio::task::spawn_blocking(move || burst.run())
            .await
            .context("the burst panicked")??;
        let csv = opts.out.join(format!("{mode}-{run}-samples.csv"));
        std::fs::write(&csv, burst::csv(&samples))
            .with_context(|| format!("writing {}", csv.display()))?;
        let warmed = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("graphfleet-gateway warmed "))
            .map(str::to_owned);
        anyhow::Ok(Start {
            warm_up: warm_up_file.is_some(),
            run,
            listening_after_ms: listening_after.as_secs_f64() * 1e3,
            ready_after_ms: ready_after.as_secs_f64() * 1e3,
            warmed,
            throttled_ms: cgroup
                .as_ref()
                .and_then(Cgroup::throttling)
                .map(|(_, seconds)| seconds * 1e3),
            first_second: burst::window(&samples, Duration::from_secs(1)),
            whole: burst::window(&samples, Duration::from_secs(u64::from(opts.seconds))),
            samples,
        })
    }
    .await;
    process::stop(&mut child).await;
    drop(cgroup);
    measured
}

fn spawn_gateway(
    opts: &Options,
    supergraph: &Path,
    env: Vec<(String, String)>,
    cpus: Option<&str>,
    cgroup: Option<&Cgroup>,
    log: &Path,
) -> anyhow::Result<(Child, u16)> {
    let port = crate::servers::free_port()?;
    let slots = Slots {
        supergraph,
        host: "127.0.0.1",
        port,
        set: SET,
    };
    let command =
        Gateway::built_in("graphfleet")?.command(Some(&opts.gateway_bin), &slots, opts.cpus)?;
    let _ = std::fs::remove_file(log);
    let child = process::spawn(&Launch {
        command: command.line,
        env,
        cwd: None,
        cpus,
        cgroup,
        log,
    })?;
    Ok((child, port))
}

/// Wait until `/health/ready` answers 200 (polled every 100 ms, as a probe would be), at
/// most until `deadline`.
async fn wait_ready(port: u16, deadline: Instant) -> anyhow::Result<()> {
    let client = Client::new();
    let url = format!("http://127.0.0.1:{port}/health/ready");
    loop {
        match client.get(&url).await {
            Ok((200, _)) => return Ok(()),
            Ok(_) | Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok((status, body)) => bail!(
                "/health/ready still answered {status} at the start timeout: {}",
                String::from_utf8_lossy(&body)
            ),
            Err(e) => return Err(e.context("/health/ready at the start timeout")),
        }
    }
}

/// Wait until the gateway's listener accepts a connection (polled every 2 ms).
async fn wait_listening(
    child: &mut Child,
    port: u16,
    limit: Duration,
    log: &Path,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().context("polling the gateway")? {
            bail!(
                "the gateway exited ({status}):\n{}",
                process::log_tail(log, 15)
            );
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    bail!(
        "the gateway did not listen within {limit:?}:\n{}",
        process::log_tail(log, 15)
    )
}

fn table(opts: &Options, placement: &Placement, starts: &[Start]) -> String {
    let mut out = format!(
        "{} distinct many-plans operations, {} req/s for {} s from {} ms after /health/ready \
         first answered 200; {} ({} core(s) for the gateway)\n\n",
        opts.operations,
        opts.rate,
        opts.seconds,
        opts.after_ready.as_millis(),
        placement.describe(),
        opts.cpus
    );
    out.push_str(&pooled(opts, starts));
    out.push_str(&format!(
        "| Warm-up | Run | Listening / ready after (ms) | First 1 s: p50 / p99 / max (ms) | \
         First {} s: p50 / p99 / max (ms) | Failed | CPU quota throttling (ms) |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        opts.seconds
    ));
    for s in starts {
        let cell = |w: &Window| format!("{:.1} / {:.1} / {:.1}", w.p50_ms, w.p99_ms, w.max_ms);
        let warm = match (&s.warm_up, &s.warmed) {
            (true, Some(said)) => format!("yes ({})", said.trim()),
            (true, None) => "yes (no warm-up line in the log)".to_owned(),
            (false, _) => "no".to_owned(),
        };
        let throttled = s
            .throttled_ms
            .map_or_else(|| "n/a".to_owned(), |ms| format!("{ms:.0}"));
        out.push_str(&format!(
            "| {warm} | {} | {:.0} / {:.0} | {} | {} | {} of {} | {throttled} |\n",
            s.run,
            s.listening_after_ms,
            s.ready_after_ms,
            cell(&s.first_second),
            cell(&s.whole),
            s.whole.failures,
            s.whole.requests
        ));
    }
    out
}

/// Every run's requests pooled, per mode: one p99 over all first seconds is steadier than
/// a median of per-run p99s, each of which is about one request.
fn pooled(opts: &Options, starts: &[Start]) -> String {
    let mut out = format!(
        "| Warm-up | Starts | First 1 s pooled: requests, p50 / p99 / max (ms) | \
         First {} s pooled: requests, p50 / p99 / max (ms) | Failed |\n\
         | --- | ---: | ---: | ---: | ---: |\n",
        opts.seconds
    );
    for warm_up in [false, true] {
        let mine: Vec<&Start> = starts.iter().filter(|s| s.warm_up == warm_up).collect();
        let samples: Vec<burst::Sample> = mine
            .iter()
            .flat_map(|s| s.samples.iter().copied())
            .collect();
        let cell = |w: &Window| {
            format!(
                "{}, {:.1} / {:.1} / {:.1}",
                w.requests, w.p50_ms, w.p99_ms, w.max_ms
            )
        };
        let first = burst::window(&samples, Duration::from_secs(1));
        let whole = burst::window(&samples, Duration::from_secs(u64::from(opts.seconds)));
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            if warm_up { "yes" } else { "no" },
            mine.len(),
            cell(&first),
            cell(&whole),
            whole.failures
        ));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_operation_is_a_plan_of_its_own() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../sets/many-plans/queries/many-plans.graphql");
        let template = std::fs::read_to_string(path).expect("the many-plans query");
        let ops = operations(&template, 3).expect("operations");
        assert_eq!(ops.len(), 3);
        assert!(ops[0].starts_with("query ManyPlans_w0000 {\n  users_w0000: users {"));
        assert!(ops[2].contains("users_w0002: users {"));
        let distinct: std::collections::BTreeSet<&String> = ops.iter().collect();
        assert_eq!(distinct.len(), 3);
        // Only the first `users` field is aliased: the rest of the query is as committed.
        assert_eq!(
            ops[1].matches("users").count(),
            template.matches("users").count() + 1
        );
        assert!(operations("query Other { a }", 1).is_err());
    }
}
