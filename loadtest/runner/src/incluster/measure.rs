//! One gateway measured on one scenario: its pod under the CPU budget, the oracle check,
//! warm-up and measurement as k6 Jobs, the pod's cgroup sampled meanwhile.

use super::Config;
use super::cluster::Cluster;
use super::deploy::{subgraph_total, wait_endpoint};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use kube::ResourceExt;
use kube::api::{LogParams, PostParams};

use super::objects;
use super::objects::{K6End, K6Run};
use crate::gateway::Gateway;
use crate::k6::{Check, Expected, Summary};
use crate::kube_io;
use crate::oracle::judge;
use crate::podsample::PodSampler;
use crate::progress::progress;
use crate::results::Measured;
use crate::scenario::Scenario;

#[allow(clippy::too_many_arguments)]
pub(super) async fn measure(
    cfg: &Config,
    cluster: &mut Cluster,
    scenario: &Scenario,
    rate: u32,
    gateway: &Gateway,
    container: &objects::GatewayContainer,
    body: &str,
    expected: &Expected,
    dir: &Path,
) -> anyhow::Result<Measured> {
    let ns = cluster.ns.clone();
    let pod_name = objects::gateway_name(&gateway.name);
    kube_io::apply(&cluster.services, &objects::gateway_svc(&gateway.name, &ns)).await?;
    kube_io::apply(
        &cluster.pods,
        &objects::gateway_pod(
            &gateway.name,
            &ns,
            container,
            &objects::supergraph_config_map_name(&scenario.set),
            cfg.cpus,
            &cfg.memory,
        ),
    )
    .await?;
    let started = Instant::now();
    let pod = kube_io::wait_ready(&cluster.pods, &pod_name, cfg.start_timeout)
        .await
        .with_context(|| format!("{} did not become ready", gateway.name))?;
    // The first answer through the API server's proxy; also the readiness the TCP probe
    // cannot tell (a gateway may listen before its supergraph is loaded).
    let probe = Bytes::from_static(br#"{"query":"{ __typename }"}"#);
    let path = gateway.graphql_path.clone();
    loop {
        let answer = cluster
            .proxy(
                &pod_name,
                objects::GATEWAY_PORT,
                "POST",
                &path,
                Some(probe.clone()),
            )
            .await;
        if matches!(answer, Ok((200, _))) {
            break;
        }
        if started.elapsed() > cfg.start_timeout {
            bail!(
                "{} answers no {{ __typename }} with 200 after {:?}: {answer:?}",
                gateway.name,
                cfg.start_timeout
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    progress(format!(
        "{} / {}: pod ready in {:.1} s on {}",
        scenario.name,
        gateway.name,
        started.elapsed().as_secs_f64(),
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or("?")
    ));
    if let Some(id) = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .map(|c| c.image_id.clone())
        .filter(|id| !id.is_empty())
    {
        cluster.image_ids.insert(gateway.name.clone(), id);
    }
    wait_endpoint(cluster, &pod_name, &pod).await?;
    let cgroup = match cluster.cgroup(&pod) {
        Ok(cg) => Some(cg),
        Err(e) => {
            progress(format!("{}: resources not sampled: {e:#}", gateway.name));
            None
        }
    };
    let (status, got) = cluster
        .proxy(
            &pod_name,
            objects::GATEWAY_PORT,
            "POST",
            &path,
            Some(Bytes::from(body.to_owned())),
        )
        .await
        .context("first request")?;
    let expected = judge(status, &got, expected, dir, &gateway.name)?;
    let cm_name = objects::dns_label(&format!("k6-{}-{}", scenario.name, gateway.name));
    let expected_text = std::fs::read_to_string(&expected.file).ok();
    let cm = objects::k6_config_map(&cm_name, &ns, body, expected_text.as_deref());
    let expected_file = cm
        .data
        .as_ref()
        .is_some_and(|d| d.contains_key("expected.json"));
    kube_io::apply(&cluster.config_maps, &cm).await?;
    let load = scenario.load;
    let k6_run = |check: Check, duration_s: u32| K6Run {
        url: objects::gateway_url(&gateway.name, &ns, &path),
        check,
        expected_len: expected.len_utf16,
        expected_sha256: expected.sha256.clone(),
        expected_file,
        rate,
        vus: load.vus.min(load.max_vus),
        max_vus: load.max_vus,
        duration_s,
        // A fresh nonce per Job: warm-up and measured run never repeat a document.
        unique: scenario.unique.then(crate::scenario::next_nonce),
    };
    if cfg.warmup_s > 0 {
        let job = objects::dns_label(&format!("k6-{}-{}-warmup", scenario.name, gateway.name));
        let (w, _) = run_k6(
            cluster,
            &job,
            &cfg.images.k6,
            &cm_name,
            &k6_run(Check::Full, cfg.warmup_s),
            &dir.join(format!("{job}.log")),
        )
        .await
        .context("warm-up")?;
        progress(format!(
            "{} / {}: warm-up {} requests, {} failures",
            scenario.name, gateway.name, w.requests, w.failures
        ));
    }
    subgraph_total(cluster, true).await?;
    let throttled_before = cgroup.as_ref().and_then(|cg| cg.throttling(&cluster.sys));
    let throttle_cg = cgroup.clone();
    let sampler = cgroup.map(|cg| {
        PodSampler::start(
            &pod_name,
            &pod.uid().unwrap_or_default(),
            pod.spec.as_ref().and_then(|s| s.node_name.clone()),
            cg,
        )
    });
    let job = objects::dns_label(&format!("k6-{}-{}", scenario.name, gateway.name));
    let measured = run_k6(
        cluster,
        &job,
        &cfg.images.k6,
        &cm_name,
        &k6_run(cfg.check, cfg.duration_s),
        &dir.join(format!("{job}.log")),
    )
    .await;
    let ticks = match sampler {
        Some(s) => Some(s.finish().await.0),
        None => None,
    };
    let throttled = match (
        throttled_before,
        throttle_cg.and_then(|cg| cg.throttling(&cluster.sys)),
    ) {
        (Some((n0, s0)), Some((n1, s1))) => {
            format!(", CFS-throttled {} periods ({:.2} s)", n1 - n0, s1 - s0)
        }
        _ => String::new(),
    };
    // The gateway's own log, for the record.
    if let Ok(text) = cluster
        .pods
        .logs(
            &pod_name,
            &LogParams {
                tail_lines: Some(500),
                ..LogParams::default()
            },
        )
        .await
    {
        let _ = std::fs::write(dir.join(format!("{}.log", gateway.name)), text);
    }
    let (summary, window) = measured.context("measured run")?;
    let usage = ticks.and_then(|ticks| match window {
        (Some(from), Some(to)) => crate::podsample::usage_in(&ticks, from, to),
        _ => crate::podsample::usage_in(&ticks, f64::MIN, f64::MAX),
    });
    let subgraph_requests = subgraph_total(cluster, false).await?;
    progress(format!(
        "{} / {}: {} requests, {} failures, {} dropped, {:.1} req/s, p99 {:.2} ms, CPU {}, mem max {}{throttled}",
        scenario.name,
        gateway.name,
        summary.requests,
        summary.failures,
        summary.dropped_iterations,
        summary.achieved_rate.unwrap_or(0.0),
        summary.latency_ms.map_or(0.0, |l| l.p99),
        usage.map_or("-".into(), |u| format!("{:.0}%", u.cpu_avg * 100.0)),
        usage.map_or("-".into(), |u| format!(
            "{:.0} MiB",
            u.mem_max as f64 / 1048576.0
        )),
    ));
    Ok(Measured {
        summary,
        usage,
        subgraph_requests: Some(subgraph_requests),
        capacity: None,
    })
}

/// Runs one k6 Job to its end; its summary and the k6 container's run window (Unix s).
async fn run_k6(
    cluster: &mut Cluster,
    name: &str,
    image: &str,
    config_map: &str,
    run: &K6Run,
    log: &Path,
) -> anyhow::Result<(Summary, (Option<f64>, Option<f64>))> {
    kube_io::delete_and_wait(&cluster.jobs, name, Duration::from_secs(60)).await?;
    let job = objects::k6_job(name, &cluster.ns, image, config_map, run);
    cluster
        .jobs
        .create(&PostParams::default(), &job)
        .await
        .with_context(|| format!("creating job {name}"))?;
    // k6 stops by itself after the duration plus its 10 s graceful stop.
    let limit = Duration::from_secs(u64::from(run.duration_s) + 120);
    let start = Instant::now();
    let (pod, end) = loop {
        if start.elapsed() > limit {
            bail!("k6 job {name} did not finish within {limit:?}");
        }
        let pods = kube_io::job_pods(&cluster.pods, name).await?;
        if let Some(pod) = pods.first() {
            match objects::k6_end(pod) {
                K6End::Done { .. } => break (pod.clone(), objects::k6_end(pod)),
                K6End::Running => {
                    // Notes the client node's CPUs for the report (once it runs).
                    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
                    if node.is_some_and(|n| !cluster.node_cpus.contains_key(&n))
                        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
                    {
                        let _ = cluster.cgroup(pod);
                    }
                    if let Some(problem) = kube_io::pod_problem(pod) {
                        bail!("k6 pod {}: {problem}", pod.name_any());
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let K6End::Done {
        message,
        exit_code,
        started,
        finished,
    } = end
    else {
        unreachable!("the loop breaks on Done only")
    };
    // k6's output (scenario.js logs the first failures) is kept next to the report.
    let text = cluster
        .pods
        .logs(
            &pod.name_any(),
            &LogParams {
                tail_lines: Some(500),
                ..LogParams::default()
            },
        )
        .await
        .unwrap_or_else(|e| format!("(no logs: {e})"));
    let _ = std::fs::write(log, &text);
    let tail = || {
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    };
    let summary: Summary = match serde_json::from_str(&message) {
        Ok(s) => s,
        Err(e) => bail!(
            "k6 (exit code {exit_code}) left no summary in its termination message ({e}); its log ends with:\n{}",
            tail()
        ),
    };
    if exit_code != 0 && summary.requests == 0 {
        bail!(
            "k6 failed (exit code {exit_code}); its log ends with:\n{}",
            tail()
        );
    }
    Ok((summary, (started, finished)))
}
