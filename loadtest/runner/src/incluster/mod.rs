//! `--in-cluster`: the same side-by-side measurement as the host mode, with every piece a
//! pod of the local cluster. Per scenario the set's subgraphs run as pods behind Services
//! on the subgraph pool and the supergraph (URLs rewritten to those Services) sits in a
//! ConfigMap; per gateway, the gateway runs as a pod on the router pool under the CPU
//! budget (requests = limits), k6 runs as a Job on the client pool with the host mode's
//! environment, its JSON summary comes back as the pod's termination message, and the
//! gateway pod's cgroup is sampled on this machine. The report is the host mode's.

pub mod images;
pub mod objects;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service};
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams};
use kube::{Client, ResourceExt};

use crate::config::SubgraphServer;
use crate::gateway::{Gateway, Kind};
use crate::k6::{Check, Expected, Summary};
use crate::kube_io;
use crate::oracle::{judge, oracle};
use crate::peers::Peer;
use crate::podsample::{PodCgroup, PodSampler};
use crate::progress::progress;
use crate::results::{GatewayInfo, GatewayRun, Measured, Outcome, Report, ScenarioRun};
use crate::scenario::Scenario;
use objects::{Images, K6End, K6Run};

pub struct Config {
    pub repo: PathBuf,
    pub out: PathBuf,
    pub subgraphs_bin: PathBuf,
    pub gateways: Vec<(Gateway, Result<Option<PathBuf>, String>, String)>,
    pub scenarios: Vec<Scenario>,
    pub duration_s: u32,
    pub warmup_s: u32,
    pub rate: Option<u32>,
    pub check: Check,
    pub cpus: f64,
    pub memory: String,
    pub start_timeout: Duration,
    pub supergraph: Option<PathBuf>,
    pub kubeconfig: Option<PathBuf>,
    pub namespace: String,
    pub images: Images,
}

/// Everything the runner creates carries this label; leftovers of an earlier run go first.
fn managed() -> String {
    format!("{}={}", objects::MANAGED_BY.0, objects::MANAGED_BY.1)
}

struct Cluster {
    client: Client,
    ns: String,
    pods: Api<Pod>,
    services: Api<Service>,
    config_maps: Api<ConfigMap>,
    jobs: Api<Job>,
    /// CPUs each node's pods may use, as read from their cgroups.
    node_cpus: BTreeMap<String, String>,
    /// The image digest each gateway's container ran (from the pod status).
    image_ids: BTreeMap<String, String>,
    sys: PathBuf,
}

impl Cluster {
    async fn connect(cfg: &Config) -> anyhow::Result<Cluster> {
        let client = kube_io::client(cfg.kubeconfig.as_deref()).await?;
        let ns = cfg.namespace.clone();
        let namespaces: Api<Namespace> = Api::all(client.clone());
        if namespaces
            .get_opt(&ns)
            .await
            .context("reaching the API server")?
            .is_none()
        {
            let obj = Namespace {
                metadata: kube::api::ObjectMeta {
                    name: Some(ns.clone()),
                    ..Default::default()
                },
                ..Namespace::default()
            };
            namespaces
                .create(&PostParams::default(), &obj)
                .await
                .with_context(|| format!("creating namespace {ns}"))?;
        }
        Ok(Cluster {
            pods: Api::namespaced(client.clone(), &ns),
            services: Api::namespaced(client.clone(), &ns),
            config_maps: Api::namespaced(client.clone(), &ns),
            jobs: Api::namespaced(client.clone(), &ns),
            client,
            ns,
            node_cpus: BTreeMap::new(),
            image_ids: BTreeMap::new(),
            sys: PathBuf::from("/sys/fs/cgroup"),
        })
    }

    /// Deletes every object of the runner's with `extra` labels too (e.g. one role).
    async fn delete_labelled(&self, extra: &str) -> anyhow::Result<()> {
        let selector = if extra.is_empty() {
            managed()
        } else {
            format!("{},{extra}", managed())
        };
        let lp = ListParams::default().labels(&selector);
        let dp = DeleteParams {
            propagation_policy: Some(kube::api::PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        for job in self.jobs.list(&lp).await?.items {
            let _ = self.jobs.delete(&job.name_any(), &dp).await;
        }
        for svc in self.services.list(&lp).await?.items {
            let _ = self.services.delete(&svc.name_any(), &dp).await;
        }
        let pods = self.pods.list(&lp).await?.items;
        for pod in &pods {
            let _ = self.pods.delete(&pod.name_any(), &dp).await;
        }
        for cm in self.config_maps.list(&lp).await?.items {
            let _ = self.config_maps.delete(&cm.name_any(), &dp).await;
        }
        // The next gateway must have the router node to itself: wait for the pods to go.
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(90) {
            if self.pods.list(&lp).await?.items.is_empty() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        bail!("pods {selector} in {} still exist after 90 s", self.ns)
    }

    /// The pod's cgroup on this machine, noting its node's CPUs.
    fn cgroup(&mut self, pod: &Pod) -> anyhow::Result<PodCgroup> {
        let uid = kube_io::uid_of(pod)?;
        let cg = PodCgroup::find(&self.sys, &uid)?;
        if let (Some(node), Some(cpus)) = (
            pod.spec.as_ref().and_then(|s| s.node_name.clone()),
            cg.node_cpus(&self.sys),
        ) {
            self.node_cpus.insert(node, cpus);
        }
        Ok(cg)
    }

    async fn proxy(
        &self,
        service: &str,
        port: i32,
        method: &str,
        path: &str,
        body: Option<Bytes>,
    ) -> anyhow::Result<(u16, Bytes)> {
        kube_io::proxy(&self.client, &self.ns, service, port, method, path, body).await
    }
}

/// The containerd socket of the router node of the local cluster whose kubeconfig is given
/// (scripts/cluster.sh keeps both in its state directory).
fn router_socket(kubeconfig: Option<&Path>, repo: &Path) -> PathBuf {
    let state = kubeconfig
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| repo.join(".graphfleet/cluster"));
    state.join("nodes/router/containerd/containerd.sock")
}

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

/// The set's subgraph pods and Services and its supergraph ConfigMap, all Ready.
async fn deploy_set(cfg: &Config, cluster: &mut Cluster, set: &str) -> anyhow::Result<()> {
    let committed = match &cfg.supergraph {
        Some(f) => f.clone(),
        None => cfg
            .repo
            .join("loadtest/sets")
            .join(set)
            .join("supergraph.graphql"),
    };
    let text = std::fs::read_to_string(&committed)
        .with_context(|| format!("reading {}", committed.display()))?;
    let subgraphs = objects::subgraph_names(&text);
    if subgraphs.is_empty() {
        bail!(
            "{} has no subgraph at {}/<name>",
            committed.display(),
            objects::LOCAL_SUBGRAPHS
        );
    }
    let supergraph = objects::rewrite_supergraph(&text, set, &cluster.ns);
    kube_io::apply(
        &cluster.config_maps,
        &objects::supergraph_config_map(set, &cluster.ns, &supergraph),
    )
    .await?;
    let started = Instant::now();
    for sg in &subgraphs {
        kube_io::apply(
            &cluster.services,
            &objects::subgraph_svc(set, sg, &cluster.ns),
        )
        .await?;
        kube_io::apply(
            &cluster.pods,
            &objects::subgraph_pod(set, sg, &cluster.ns, &cfg.images.subgraphs),
        )
        .await?;
    }
    for sg in &subgraphs {
        let name = objects::subgraph_service(set, sg);
        let pod = kube_io::wait_ready(&cluster.pods, &name, Duration::from_secs(120)).await?;
        if let Err(e) = cluster.cgroup(&pod) {
            progress(format!("{name}: {e:#}"));
        }
    }
    progress(format!(
        "set {set}: {} subgraph pods Ready in {:.1} s ({})",
        subgraphs.len(),
        started.elapsed().as_secs_f64(),
        subgraphs.join(", ")
    ));
    Ok(())
}

/// Waits until the Service's EndpointSlice lists the pod as ready, then a little more for
/// kube-proxy to program it: k6 reaches the gateway through the Service's ClusterIP, which
/// refuses connections until then (the API server's proxy, used for the first request,
/// goes to the pod directly and cannot tell).
async fn wait_endpoint(cluster: &Cluster, service: &str, pod: &Pod) -> anyhow::Result<()> {
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .context("the gateway pod has no IP")?;
    let slices: Api<EndpointSlice> = Api::namespaced(cluster.client.clone(), &cluster.ns);
    let lp = ListParams::default().labels(&format!("kubernetes.io/service-name={service}"));
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        let ready = slices.list(&lp).await?.items.iter().any(|slice| {
            slice.endpoints.iter().any(|e| {
                e.addresses.contains(&ip)
                    && e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(false)
            })
        });
        if ready {
            // kube-proxy syncs at most once a second.
            tokio::time::sleep(Duration::from_secs(2)).await;
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bail!("the Service {service} has no ready endpoint {ip} after 30 s")
}

/// Sum of the subgraph pods' request counters (reset first when `reset`).
async fn subgraph_total(cluster: &Cluster, reset: bool) -> anyhow::Result<u64> {
    let lp =
        ListParams::default().labels(&format!("{},{}=subgraph", managed(), objects::ROLE_LABEL));
    let mut total = 0;
    for svc in cluster.services.list(&lp).await?.items {
        let name = svc.name_any();
        let (method, path) = if reset {
            ("POST", "/stats/reset")
        } else {
            ("GET", "/stats")
        };
        let (status, body) = cluster
            .proxy(
                &name,
                objects::SUBGRAPH_PORT,
                method,
                path,
                Some(Bytes::new()),
            )
            .await?;
        if status != 200 {
            bail!(
                "{method} {path} of {name} answered {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        let json: serde_json::Value =
            serde_json::from_slice(&body).with_context(|| format!("{name}{path} is not JSON"))?;
        total += json["total"]
            .as_u64()
            .with_context(|| format!("{name}{path} has no \"total\": {json}"))?;
    }
    Ok(total)
}

#[allow(clippy::too_many_arguments)]
async fn measure(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_router_socket_is_next_to_the_kubeconfig() {
        assert_eq!(
            router_socket(
                Some(Path::new("/r/.graphfleet/cluster/kubeconfig")),
                Path::new("/x")
            ),
            PathBuf::from("/r/.graphfleet/cluster/nodes/router/containerd/containerd.sock")
        );
        assert_eq!(
            router_socket(None, Path::new("/repo")),
            PathBuf::from("/repo/.graphfleet/cluster/nodes/router/containerd/containerd.sock")
        );
    }
}
