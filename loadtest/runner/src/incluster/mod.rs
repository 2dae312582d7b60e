//! `--in-cluster`: the same side-by-side measurement as the host mode, with every piece a
//! pod of the local cluster. Per scenario the set's subgraphs run as pods behind Services
//! on the subgraph pool and the supergraph (URLs rewritten to those Services) sits in a
//! ConfigMap; per gateway, the gateway runs as a pod on the router pool under the CPU
//! budget (requests = limits), k6 runs as a Job on the client pool with the host mode's
//! environment, its JSON summary comes back as the pod's termination message, and the
//! gateway pod's cgroup is sampled on this machine. The report is the host mode's.

pub mod images;
pub mod objects;

mod cluster;
mod config;
mod deploy;
mod measure;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;

use crate::config::SubgraphServer;
use crate::gateway::Kind;
use crate::oracle::oracle;
use crate::peers::Peer;
use crate::progress::progress;
use crate::results::{GatewayInfo, GatewayRun, Outcome, Report, ScenarioRun};
use crate::scenario::Scenario;
use cluster::{Cluster, router_socket};
pub use config::Config;
use deploy::deploy_set;
use measure::measure;

pub async fn run(cfg: &Config) -> anyhow::Result<Report> {
    let work = cfg.out.join("work");
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let mut cluster = Cluster::connect(cfg).await?;
    progress(format!(
        "in-cluster: namespace {}, removing leftovers of earlier runs",
        cluster.ns
    ));
    cluster.delete_labelled("").await?;
    // Images of the Rust peers, built from their tool-cache binaries.
    let socket = router_socket(cfg.kubeconfig.as_deref(), &cfg.repo);
    let mut peer_images: BTreeMap<String, Result<String, String>> = BTreeMap::new();
    for (gateway, installed, version) in &cfg.gateways {
        if let (Kind::Peer(peer @ (Peer::HiveRouter | Peer::ApolloRouter)), Ok(Some(dir))) =
            (&gateway.kind, installed)
        {
            let image = images::ensure(*peer, version, dir, &socket, &work)
                .await
                .map_err(|e| format!("{e:#}"));
            if let Err(e) = &image {
                progress(format!("{}: no image: {e}", gateway.name));
            }
            peer_images.insert(gateway.name.clone(), image);
        }
    }
    let client = crate::http::Client::new();
    let mut scenarios = Vec::new();
    let mut deployed_set: Option<String> = None;
    for scenario in &cfg.scenarios {
        let rate = cfg.rate.unwrap_or(scenario.load.rate);
        let mut run = ScenarioRun::starting(scenario, rate, cfg.duration_s, "k6");
        progress(format!(
            "scenario {} (set {}, {rate} req/s for {} s, in-cluster)",
            scenario.name, scenario.set, cfg.duration_s
        ));
        if scenario.name == graphfleet_bench_model::scenarios::SUBSCRIPTIONS {
            // The fan-out runs in host mode, or in the cluster as a LoadTest.
            run.error = Some(
                "the subscriptions scenario runs in host mode (graphfleet-bench --scenario subscriptions) or as a LoadTest (spec.scenario: subscriptions), not with --in-cluster".to_owned(),
            );
            scenarios.push(run);
            continue;
        }
        let result = run_scenario(
            cfg,
            &mut cluster,
            &client,
            scenario,
            rate,
            &work,
            &peer_images,
            &mut deployed_set,
            &mut run,
        )
        .await;
        if let Err(e) = result {
            progress(format!("scenario {} failed: {e:#}", scenario.name));
            run.error = Some(format!("{e:#}"));
        }
        scenarios.push(run);
    }
    progress("in-cluster: removing the runner's objects");
    if let Err(e) = cluster.delete_labelled("").await {
        progress(format!("cleaning up: {e:#}"));
    }
    let digest = |name: &str| {
        cluster
            .image_ids
            .get(name)
            .map_or(String::new(), |id| format!(" ({id})"))
    };
    Ok(Report {
        smoke: false,
        system: system(cfg, &cluster).await,
        gateways: cfg
            .gateways
            .iter()
            .map(|(g, installed, version)| GatewayInfo {
                name: g.name.clone(),
                label: g.label.clone(),
                version: version.clone(),
                status: match (&g.kind, installed, peer_images.get(&g.name)) {
                    (Kind::Graphfleet, _, _) => {
                        format!("image `{}`{}", cfg.images.gateway, digest(&g.name))
                    }
                    (_, _, Some(Ok(image))) => format!("image `{image}`{}", digest(&g.name)),
                    (_, _, Some(Err(e))) => {
                        format!("**no image: {}**", e.lines().next().unwrap_or_default())
                    }
                    (_, Err(e), _) => format!("**{}**", e.lines().next().unwrap_or_default()),
                    _ => "not available in-cluster".into(),
                },
            })
            .collect(),
        scenarios,
        timings: Vec::new(),
    })
}

async fn system(cfg: &Config, cluster: &Cluster) -> Vec<(String, String)> {
    let m = crate::host::Machine::this();
    let cpus: Vec<String> = cluster
        .node_cpus
        .iter()
        .map(|(node, cpus)| format!("{node} on CPU {cpus}"))
        .collect();
    vec![
        (
            "Mode".into(),
            format!(
                "in-cluster (namespace {}): gateway pod on the router pool, subgraph pods behind Services on the subgraph pool, k6 as a Job on the client pool",
                cfg.namespace
            ),
        ),
        ("Date".into(), crate::host::now_rfc3339()),
        ("CPU".into(), m.cpu),
        ("Memory".into(), m.memory),
        ("Linux Version".into(), m.kernel),
        (
            "Git Commit".into(),
            crate::host::git_commit(&cfg.repo).await,
        ),
        ("k6".into(), format!("image `{}`", cfg.images.k6)),
        (
            "Gateway CPU budget".into(),
            format!(
                "{} cores: pod requests = limits (CFS quota by the kubelet), memory {}",
                cfg.cpus, cfg.memory
            ),
        ),
        (
            "Placement".into(),
            if cpus.is_empty() {
                "nodes' CPUs unknown (pod cgroups not found on this machine)".into()
            } else {
                cpus.join(", ")
            },
        ),
        (
            "Resources".into(),
            format!(
                "the gateway pod's cgroup read on the node every 100 ms during k6's run: CPU from cpuacct, memory as {}",
                crate::podsample::MEMORY_METRIC
            ),
        ),
        ("Cores".into(), m.cores.to_string()),
    ]
}

#[allow(clippy::too_many_arguments)]
async fn run_scenario(
    cfg: &Config,
    cluster: &mut Cluster,
    client: &crate::http::Client,
    scenario: &Scenario,
    rate: u32,
    work: &Path,
    peer_images: &BTreeMap<String, Result<String, String>>,
    deployed_set: &mut Option<String>,
    run: &mut ScenarioRun,
) -> anyhow::Result<()> {
    let dir = work.join(&scenario.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let body = scenario.payload()?;
    let payload = dir.join("payload.json");
    std::fs::write(&payload, &body).context("writing the payload")?;
    // The monolith's answer, asked on this machine: the same oracle as the host mode.
    let server = SubgraphServer {
        bin: &cfg.subgraphs_bin,
        cpus: None,
    };
    let expected = oracle(server, client, scenario, &body, &dir).await?;
    run.response_bytes = Some(expected.bytes);
    if deployed_set.as_deref() != Some(scenario.set.as_str()) {
        cluster.delete_labelled("").await?;
        *deployed_set = None;
        deploy_set(cfg, cluster, &scenario.set).await?;
        *deployed_set = Some(scenario.set.clone());
    }
    for (gateway, installed, _) in &cfg.gateways {
        let peer_image = peer_images.get(&gateway.name);
        let container = objects::gateway_container(
            gateway,
            &cfg.images,
            peer_image.and_then(|r| r.as_ref().ok()).map(String::as_str),
            (cfg.cpus.ceil() as u32).max(1),
        );
        let outcome = match (container, installed, peer_image) {
            (Err(why), _, _) if why.starts_with("not available") => {
                Outcome::Unavailable { error: why }
            }
            (_, Err(e), _) => Outcome::NotInstalled { error: e.clone() },
            (_, _, Some(Err(e))) => Outcome::NotInstalled {
                error: format!("no image: {e}"),
            },
            (Err(why), _, _) => Outcome::Failed { error: why },
            (Ok(container), Ok(_), _) => {
                let result = measure(
                    cfg, cluster, scenario, rate, gateway, &container, &body, &expected, &dir,
                )
                .await;
                // The gateway's pod, Service and k6 objects go, whatever happened.
                if let Err(e) = cluster
                    .delete_labelled(
                        "graphfleet.dev/bench-role!=subgraph,graphfleet.dev/bench-role!=supergraph",
                    )
                    .await
                {
                    progress(format!("cleaning up after {}: {e:#}", gateway.name));
                }
                Outcome::from_run(result, &scenario.name, &gateway.name)
            }
        };
        run.gateways.push(GatewayRun {
            gateway: gateway.name.clone(),
            label: gateway.label.clone(),
            outcome,
            rounds: Vec::new(),
        });
    }
    Ok(())
}
