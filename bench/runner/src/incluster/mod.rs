//! `--in-cluster`: the same side-by-side measurement as the host mode, made with the
//! project's own objects, so the operator is exercised by its own benchmark. Per set: the
//! subgraphs as pods behind Services on the subgraph pool with their `Subgraph` resources;
//! graphfleet as a `GraphGateway` (the operator composes the Subgraphs and rolls the pod out
//! on the router pool under the CPU budget, requests = limits); each peer as a plain
//! Deployment there serving the revision the operator composed. Per scenario: one `LoadTest`
//! with every gateway a target (k6 Jobs on the client pool, run in turn, each answer checked
//! against the monolith's), its status read back, and each gateway pod's cgroup sampled on
//! this machine. The report is the host mode's.

pub mod images;
pub mod objects;

mod capacity;
mod cluster;
mod config;
mod deploy;
mod measure;
mod run;

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
use deploy::{deploy_fleet, deploy_peer, deploy_set};
use measure::measure_all;
use run::Serving;

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
    let mut deployed: Option<Deployed> = None;
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
            &mut deployed,
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
                "in-cluster (namespace {}): graphfleet as a GraphGateway and each peer as a Deployment on the router pool, subgraph pods behind Services with their Subgraphs on the subgraph pool, a LoadTest's k6 Jobs on the client pool",
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
        (
            "k6".into(),
            "the operator's k6 image (a LoadTest per scenario, every gateway a target)".into(),
        ),
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
                "each gateway pod's cgroup read on the node every 100 ms during its target's run: CPU from cpuacct, memory as {}",
                crate::podsample::MEMORY_METRIC
            ),
        ),
        ("Cores".into(), m.cores.to_string()),
    ]
}

/// The set deployed for the scenarios in a row that use it: the gateways that serve it and
/// the outcome of those that cannot.
struct Deployed {
    set: String,
    serving: Vec<Serving>,
    refused: BTreeMap<String, Outcome>,
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
    deployed: &mut Option<Deployed>,
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
    if deployed.as_ref().map(|d| d.set.as_str()) != Some(scenario.set.as_str()) {
        cluster.delete_labelled("").await?;
        *deployed = None;
        *deployed = Some(deploy_gateways(cfg, cluster, &scenario.set, peer_images).await?);
    }
    let deployed = deployed.as_ref().expect("deployed just above");
    let mut measured = measure_all(
        cfg,
        cluster,
        scenario,
        rate,
        &deployed.serving,
        &body,
        &expected,
        &dir,
    )
    .await;
    for (gateway, _, _) in &cfg.gateways {
        let outcome = match deployed.refused.get(&gateway.name) {
            Some(refused) => refused.clone(),
            None => match measured.iter().position(|(name, _)| name == &gateway.name) {
                Some(i) => {
                    let (_, result) = measured.remove(i);
                    Outcome::from_run(result, &scenario.name, &gateway.name)
                }
                None => Outcome::Failed {
                    error: "not measured".to_owned(),
                },
            },
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

/// The set's subgraphs, graphfleet's GraphGateway and every peer that can run here, each
/// Ready; the others' outcomes.
async fn deploy_gateways(
    cfg: &Config,
    cluster: &mut Cluster,
    set: &str,
    peer_images: &BTreeMap<String, Result<String, String>>,
) -> anyhow::Result<Deployed> {
    deploy_set(cfg, cluster, set).await?;
    let (fleet, supergraph, pod) = deploy_fleet(cfg, cluster, set).await?;
    let mut serving = Vec::new();
    let mut refused = BTreeMap::new();
    for (gateway, installed, _) in &cfg.gateways {
        if matches!(gateway.kind, Kind::Graphfleet) {
            note_image(cluster, &gateway.name, &pod);
            serving.push(Serving {
                name: gateway.name.clone(),
                pod: pod.clone(),
                service: fleet.clone(),
                port: objects::FLEET_SERVICE_PORT,
                path: "/graphql".to_owned(),
                gateway_ref: Some(fleet.clone()),
                url: String::new(),
            });
            continue;
        }
        let peer_image = peer_images.get(&gateway.name);
        let container = objects::peer_container(
            gateway,
            peer_image.and_then(|r| r.as_ref().ok()).map(String::as_str),
            (cfg.cpus.ceil() as u32).max(1),
        );
        let ready = match (container, installed, peer_image) {
            (Err(why), _, _) if why.starts_with("not available") => {
                Err(Outcome::Unavailable { error: why })
            }
            (_, Err(e), _) => Err(Outcome::NotInstalled { error: e.clone() }),
            (_, _, Some(Err(e))) => Err(Outcome::NotInstalled {
                error: format!("no image: {e}"),
            }),
            (Err(why), _, _) => Err(Outcome::Failed { error: why }),
            (Ok(container), Ok(_), _) => {
                deploy_peer(cfg, cluster, &gateway.name, &container, &supergraph)
                    .await
                    .map_err(|e| {
                        progress(format!("{}: {e:#}", gateway.name));
                        Outcome::Failed {
                            error: format!("{e:#}"),
                        }
                    })
            }
        };
        match ready {
            Ok(pod) => {
                note_image(cluster, &gateway.name, &pod);
                serving.push(Serving {
                    name: gateway.name.clone(),
                    pod,
                    service: objects::gateway_name(&gateway.name),
                    port: objects::GATEWAY_PORT,
                    path: gateway.graphql_path.clone(),
                    gateway_ref: None,
                    url: objects::gateway_url(&gateway.name, &cluster.ns, &gateway.graphql_path),
                });
            }
            Err(outcome) => {
                refused.insert(gateway.name.clone(), outcome);
            }
        }
    }
    // k6 reaches each gateway through its Service: wait for kube-proxy to know the pods.
    for gw in &serving {
        deploy::wait_endpoint(cluster, &gw.service, &gw.pod).await?;
    }
    Ok(Deployed {
        set: set.to_owned(),
        serving,
        refused,
    })
}

/// Records the image digest the gateway's container runs, for the report.
fn note_image(cluster: &mut Cluster, gateway: &str, pod: &k8s_openapi::api::core::v1::Pod) {
    if let Some(id) = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .map(|c| c.image_id.clone())
        .filter(|id| !id.is_empty())
    {
        cluster.image_ids.insert(gateway.to_owned(), id);
    }
}
