//! The reconcilers and their wiring. Kubernetes I/O lives here; what to write comes from
//! the pure `build` and `status` modules.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use graphfleet_composition::{SubgraphInput, compose};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::core::{Selector, SelectorExt};
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::build;
use crate::crd::{
    CompositionErrorStatus, DEFAULT_GATEWAY_IMAGE, GraphGateway, LoadTest, LoadTestPhase,
    LoadTestStatus, Subgraph, SubgraphStatus,
};
use crate::diagnose;
use crate::loadtest::{self, LOADTEST_LABEL, SEGMENT_LABEL};
use crate::metrics::Metrics;
use crate::schema::{Introspector, load_sdl};
use crate::status::{self, CompositionOutcome, Observed, Rollout};

/// Field manager of every server-side apply.
pub const MANAGER: &str = "graphfleet-operator";
const GATEWAY_CONTROLLER: &str = "graphgateway";
const SUBGRAPH_CONTROLLER: &str = "subgraph";
const LOADTEST_CONTROLLER: &str = "loadtest";
/// Re-check period of a gateway that is not Ready or failed to compose, and of a running
/// LoadTest.
const NOT_READY_RECHECK: Duration = Duration::from_secs(10);

/// How the controllers run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Watch only this namespace (all namespaces when `None`).
    pub namespace: Option<String>,
    /// Quiet period collapsing bursts of changes into one reconcile.
    pub debounce: Duration,
    /// Re-check period of a healthy object (picks up introspected schema drift).
    pub resync: Duration,
    /// Concurrent reconciles per controller.
    pub concurrency: u16,
    /// Gateway image of GraphGateways that name none.
    pub default_image: String,
    /// Image of the k6 load-generator Jobs.
    pub k6_image: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            namespace: None,
            debounce: Duration::from_millis(100),
            resync: Duration::from_secs(60),
            concurrency: 4,
            default_image: DEFAULT_GATEWAY_IMAGE.to_owned(),
            k6_image: loadtest::DEFAULT_K6_IMAGE.to_owned(),
        }
    }
}

/// Shared by every reconcile.
pub struct Context {
    pub client: Client,
    pub introspector: Introspector,
    pub metrics: Arc<Metrics>,
    pub recorder: Recorder,
    pub settings: Settings,
}

/// A failed reconcile (retried with a short backoff).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("object has no namespace")]
    NoNamespace,
}

impl Error {
    fn kind(&self) -> &'static str {
        match self {
            Self::Kube(_) => "kube",
            Self::NoNamespace => "no_namespace",
        }
    }
}

fn api<K>(ctx: &Context, namespace: &str) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    Api::namespaced(ctx.client.clone(), namespace)
}

fn now() -> Time {
    Time(Timestamp::now())
}

async fn apply<K>(api: &Api<K>, object: &K) -> Result<K, kube::Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let name = object.meta().name.clone().unwrap_or_default();
    api.patch(
        &name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
}

/// Applies `desired`, or deletes the object named `name` when nothing is desired.
async fn apply_or_delete<K>(api: &Api<K>, name: &str, desired: Option<K>) -> Result<(), kube::Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    match desired {
        Some(object) => apply(api, &object).await.map(drop),
        None => match api.delete(name, &Default::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        },
    }
}

/// The label selector a gateway selects Subgraphs with, or why it is invalid.
pub fn subgraph_selector(gw: &GraphGateway) -> Result<Selector, String> {
    match gw.spec.subgraph_selector.clone() {
        Some(ls) => Selector::try_from(ls).map_err(|e| e.to_string()),
        None => Ok(Selector::default()),
    }
}

/// Namespaces a gateway gathers Subgraphs from.
pub fn gateway_namespaces(gw: &GraphGateway) -> Vec<String> {
    if gw.spec.namespaces.is_empty() {
        gw.namespace().into_iter().collect()
    } else {
        gw.spec.namespaces.clone()
    }
}

/// Whether `gw` selects `subgraph` (same test as the gateway's list query).
pub fn selects(gw: &GraphGateway, subgraph: &Subgraph) -> bool {
    let in_namespace = subgraph
        .namespace()
        .is_some_and(|ns| gateway_namespaces(gw).contains(&ns));
    in_namespace && subgraph_selector(gw).is_ok_and(|s| s.matches(subgraph.labels()))
}

struct Gathered {
    inputs: Vec<SubgraphInput>,
    failures: Vec<CompositionErrorStatus>,
}

async fn gather_subgraphs(
    ctx: &Context,
    gw: &GraphGateway,
    selector: &Selector,
) -> Result<Gathered, Error> {
    let params = ListParams::default().labels_from(selector);
    let mut subgraphs = Vec::new();
    for ns in gateway_namespaces(gw) {
        subgraphs.extend(api::<Subgraph>(ctx, &ns).list(&params).await?.items);
    }
    subgraphs.sort_by_key(|s| (s.name_any(), s.namespace()));
    let loads = subgraphs
        .iter()
        .map(|sg| load_sdl(&ctx.client, &ctx.introspector, sg));
    let results = futures::future::join_all(loads).await;
    let mut gathered = Gathered {
        inputs: Vec::new(),
        failures: Vec::new(),
    };
    for (sg, result) in subgraphs.iter().zip(results) {
        match result {
            Ok(sdl) => gathered.inputs.push(SubgraphInput {
                name: sg.name_any(),
                url: sg.spec.url.clone(),
                sdl,
            }),
            Err(e) => gathered.failures.push(CompositionErrorStatus {
                code: "SUBGRAPH_UNAVAILABLE".to_owned(),
                message: format!("subgraph {}: {e}", sg.name_any()),
                subgraphs: vec![sg.name_any()],
            }),
        }
    }
    Ok(gathered)
}

/// A composed supergraph ready to apply.
struct Supergraph {
    sdl: String,
    hash: String,
    subgraphs: Vec<String>,
}

#[tracing::instrument(skip_all)]
async fn compose_gateway(
    ctx: &Context,
    gw: &GraphGateway,
) -> Result<Result<Supergraph, CompositionOutcome>, Error> {
    let selector = match subgraph_selector(gw) {
        Ok(s) => s,
        Err(e) => {
            return Ok(Err(CompositionOutcome::Failed {
                reason: "InvalidSelector".to_owned(),
                errors: vec![CompositionErrorStatus {
                    code: "INVALID_SELECTOR".to_owned(),
                    message: e,
                    subgraphs: vec![],
                }],
            }));
        }
    };
    let gathered = gather_subgraphs(ctx, gw, &selector).await?;
    if !gathered.failures.is_empty() {
        ctx.metrics.composed("unavailable", Duration::ZERO);
        return Ok(Err(CompositionOutcome::Failed {
            reason: "SubgraphUnavailable".to_owned(),
            errors: gathered.failures,
        }));
    }
    let names: Vec<String> = gathered.inputs.iter().map(|i| i.name.clone()).collect();
    let started = Instant::now();
    let inputs = gathered.inputs;
    let result = tokio::task::spawn_blocking(move || compose(&inputs))
        .await
        .expect("composition does not panic");
    match result {
        Ok(composed) => {
            ctx.metrics.composed("success", started.elapsed());
            let hash = build::short_hash(composed.supergraph_sdl.as_bytes());
            Ok(Ok(Supergraph {
                sdl: composed.supergraph_sdl,
                hash,
                subgraphs: names,
            }))
        }
        Err(errors) => {
            ctx.metrics.composed("failure", started.elapsed());
            Ok(Err(CompositionOutcome::Failed {
                reason: "CompositionFailed".to_owned(),
                errors: errors
                    .0
                    .into_iter()
                    .map(|e| CompositionErrorStatus {
                        code: e.code,
                        message: e.message,
                        subgraphs: e.subgraphs,
                    })
                    .collect(),
            }))
        }
    }
}

#[tracing::instrument(skip_all)]
async fn apply_gateway_objects(
    ctx: &Context,
    gw: &GraphGateway,
    ns: &str,
    sg: &Supergraph,
) -> Result<(), Error> {
    let name = gw.name_any();
    apply(
        &api::<ConfigMap>(ctx, ns),
        &build::config_map(gw, &sg.sdl, &sg.hash),
    )
    .await?;
    apply(
        &api::<Deployment>(ctx, ns),
        &build::deployment(gw, &sg.hash, &ctx.settings.default_image),
    )
    .await?;
    apply(&api::<Service>(ctx, ns), &build::service(gw)).await?;
    apply_or_delete(
        &api::<PodDisruptionBudget>(ctx, ns),
        &name,
        build::pod_disruption_budget(gw),
    )
    .await?;
    apply_or_delete(
        &api::<HorizontalPodAutoscaler>(ctx, ns),
        &name,
        build::horizontal_pod_autoscaler(gw),
    )
    .await?;
    Ok(())
}

async fn publish(ctx: &Context, gw: &GraphGateway, type_: EventType, reason: &str, note: String) {
    let event = Event {
        type_,
        reason: reason.to_owned(),
        note: Some(note.chars().take(1000).collect()),
        action: "Compose".to_owned(),
        secondary: None,
    };
    if let Err(e) = ctx.recorder.publish(&event, &gw.object_ref(&())).await {
        tracing::warn!(error = %e, "publishing event failed");
    }
}

#[tracing::instrument(skip_all, fields(gateway = %gw.name_any(), namespace = gw.namespace().unwrap_or_default()))]
async fn reconcile_gateway(gw: Arc<GraphGateway>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let ns = gw.namespace().ok_or(Error::NoNamespace)?;
    let name = gw.name_any();
    let previous_hash = gw.status.as_ref().and_then(|s| s.supergraph_hash.clone());
    let outcome = match compose_gateway(&ctx, &gw).await? {
        Ok(supergraph) => {
            apply_gateway_objects(&ctx, &gw, &ns, &supergraph).await?;
            if previous_hash.as_deref() != Some(supergraph.hash.as_str()) {
                let note = format!(
                    "supergraph {} from {} subgraphs",
                    supergraph.hash,
                    supergraph.subgraphs.len()
                );
                publish(&ctx, &gw, EventType::Normal, "Composed", note).await;
                tracing::info!(gateway = %name, namespace = %ns, hash = %supergraph.hash, "new supergraph");
            }
            CompositionOutcome::Composed {
                hash: supergraph.hash,
                subgraphs: supergraph.subgraphs,
            }
        }
        Err(failed) => {
            if let CompositionOutcome::Failed { reason, errors } = &failed {
                let note = errors
                    .iter()
                    .map(|e| format!("{}: {}", e.code, e.message))
                    .collect::<Vec<_>>()
                    .join("; ");
                tracing::warn!(gateway = %name, namespace = %ns, %reason, errors = %note, "composition failed; keeping the last good supergraph");
                publish(&ctx, &gw, EventType::Warning, reason, note).await;
            }
            failed
        }
    };
    let served_hash = api::<ConfigMap>(&ctx, &ns)
        .get_opt(&build::config_map_name(&name))
        .await?
        .and_then(|cm| {
            cm.annotations()
                .get(build::SUPERGRAPH_HASH_ANNOTATION)
                .cloned()
        });
    let deployment = api::<Deployment>(&ctx, &ns).get_opt(&name).await?;
    let pods = match &deployment {
        Some(d) if !Rollout::of(d).complete() => {
            let params = ListParams::default().labels(&build::selector_string(&gw));
            let pods = api::<Pod>(&ctx, &ns).list(&params).await?.items;
            diagnose::rollout_problem(d, &pods, build::GATEWAY_CONTAINER)
        }
        _ => None,
    };
    let observed = Observed {
        generation: gw.metadata.generation,
        outcome: &outcome,
        served_hash,
        rollout: deployment.as_ref().map(Rollout::of),
        selector: build::selector_string(&gw),
        pods,
    };
    let new_status = status::gateway_status(gw.status.as_ref(), &observed, &now());
    let ready = observed.rollout.is_some_and(|r| r.complete());
    if gw.status.as_ref() != Some(&new_status) {
        let patch = serde_json::json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "GraphGateway",
            "status": new_status,
        });
        api::<GraphGateway>(&ctx, &ns)
            .patch_status(
                &name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&patch),
            )
            .await?;
    }
    ctx.metrics
        .reconciled(GATEWAY_CONTROLLER, started.elapsed());
    // Pod states change without touching the Deployment (an image pull backing off, a crash
    // loop): look again soon while the gateway is not Ready.
    Ok(match outcome {
        CompositionOutcome::Composed { .. } if ready => Action::requeue(ctx.settings.resync),
        _ => Action::requeue(NOT_READY_RECHECK),
    })
}

#[tracing::instrument(skip_all, fields(subgraph = %sg.name_any(), namespace = sg.namespace().unwrap_or_default()))]
async fn reconcile_subgraph(sg: Arc<Subgraph>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let ns = sg.namespace().ok_or(Error::NoNamespace)?;
    let mut new_status = sg.status.clone().unwrap_or_default();
    new_status.observed_generation = sg.metadata.generation;
    let generation = sg.metadata.generation;
    let action = match load_sdl(&ctx.client, &ctx.introspector, &sg).await {
        Ok(sdl) => {
            let hash = build::short_hash(sdl.as_bytes());
            let message = format!("schema {hash} loaded ({} bytes)", sdl.len());
            status::set_condition(
                &mut new_status.conditions,
                status::SCHEMA_LOADED,
                true,
                "Loaded",
                message,
                generation,
                &now(),
            );
            new_status.schema_hash = Some(hash);
            Action::requeue(ctx.settings.resync)
        }
        Err(e) => {
            status::set_condition(
                &mut new_status.conditions,
                status::SCHEMA_LOADED,
                false,
                e.reason(),
                e.to_string(),
                generation,
                &now(),
            );
            Action::requeue(Duration::from_secs(10))
        }
    };
    write_subgraph_status(&ctx, &sg, &ns, new_status).await?;
    ctx.metrics
        .reconciled(SUBGRAPH_CONTROLLER, started.elapsed());
    Ok(action)
}

async fn write_subgraph_status(
    ctx: &Context,
    sg: &Subgraph,
    ns: &str,
    new_status: SubgraphStatus,
) -> Result<(), Error> {
    if sg.status.as_ref() == Some(&new_status) {
        return Ok(());
    }
    let patch = serde_json::json!({
        "apiVersion": "graphfleet.dev/v1alpha1",
        "kind": "Subgraph",
        "status": new_status,
    });
    api::<Subgraph>(ctx, ns)
        .patch_status(
            &sg.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    Ok(())
}

/// Creates the ConfigMap and the segment Jobs (once: Jobs are immutable and a load test is
/// not rerun), then derives status from the Jobs' pods.
#[tracing::instrument(skip_all, fields(loadtest = %lt.name_any(), namespace = lt.namespace().unwrap_or_default()))]
async fn reconcile_loadtest(lt: Arc<LoadTest>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let ns = lt.namespace().ok_or(Error::NoNamespace)?;
    let previous = lt.status.clone().unwrap_or_default();
    if matches!(
        previous.phase,
        Some(LoadTestPhase::Succeeded | LoadTestPhase::Failed)
    ) {
        return Ok(Action::await_change());
    }
    let mut new_status = match start_loadtest(&ctx, &lt, &ns).await? {
        Ok(()) => observe_loadtest(&ctx, &lt, &ns, &previous).await?,
        Err(e) => LoadTestStatus {
            phase: Some(LoadTestPhase::Failed),
            message: Some(e.to_string()),
            completion_time: Some(now()),
            ..LoadTestStatus::default()
        },
    };
    new_status.observed_generation = lt.metadata.generation;
    let finished = matches!(
        new_status.phase,
        Some(LoadTestPhase::Succeeded | LoadTestPhase::Failed)
    );
    if lt.status.as_ref() != Some(&new_status) {
        if finished {
            tracing::info!(phase = ?new_status.phase, message = ?new_status.message, "load test finished");
        }
        let patch = serde_json::json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "LoadTest",
            "status": new_status,
        });
        api::<LoadTest>(&ctx, &ns)
            .patch_status(
                &lt.name_any(),
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&patch),
            )
            .await?;
    }
    ctx.metrics
        .reconciled(LOADTEST_CONTROLLER, started.elapsed());
    Ok(if finished {
        Action::await_change()
    } else {
        Action::requeue(NOT_READY_RECHECK)
    })
}

/// Applies the ConfigMap and creates missing Jobs; `Ok(Err(_))` is a spec the builders reject.
async fn start_loadtest(
    ctx: &Context,
    lt: &LoadTest,
    ns: &str,
) -> Result<Result<(), loadtest::SpecError>, Error> {
    let (config_map, jobs) = match loadtest::config_map(lt)
        .and_then(|cm| Ok((cm, loadtest::jobs(lt, &ctx.settings.k6_image)?)))
    {
        Ok(built) => built,
        Err(e) => return Ok(Err(e)),
    };
    if let Some(cm) = config_map {
        apply(&api::<ConfigMap>(ctx, ns), &cm).await?;
    }
    let job_api = api::<Job>(ctx, ns);
    for job in jobs {
        let name = job.metadata.name.clone().unwrap_or_default();
        if job_api.get_opt(&name).await?.is_none() {
            match job_api.create(&PostParams::default(), &job).await {
                Ok(_) => tracing::info!(job = %name, "created k6 job"),
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(Ok(()))
}

/// Status from the segment Jobs and their pods. Records where each segment's pod runs on its
/// Job (so a deleted pod can still be named) and, once the LoadTest failed, stops the Jobs
/// still running: a failed load test must not keep loading its target.
async fn observe_loadtest(
    ctx: &Context,
    lt: &LoadTest,
    ns: &str,
    previous: &LoadTestStatus,
) -> Result<LoadTestStatus, Error> {
    let params = ListParams::default().labels(&format!("{LOADTEST_LABEL}={}", lt.name_any()));
    let pods = api::<Pod>(ctx, ns).list(&params).await?.items;
    let jobs = api::<Job>(ctx, ns).list(&params).await?.items;
    let job_api = api::<Job>(ctx, ns);
    for job in &jobs {
        let segment = job.labels().get(SEGMENT_LABEL);
        let of_segment: Vec<&Pod> = pods
            .iter()
            .filter(|p| p.labels().get(SEGMENT_LABEL) == segment)
            .collect();
        if let Some(annotations) = loadtest::placement_to_record(job, &of_segment) {
            let patch = serde_json::json!({ "metadata": { "annotations": annotations } });
            job_api
                .patch(
                    &job.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await?;
        }
    }
    let status = loadtest::loadtest_status(lt, &pods, &jobs, previous, &now());
    // The Job controller stops the pods of a Job past its deadline (DeadlineExceeded).
    let stop = serde_json::json!({ "spec": { "activeDeadlineSeconds": 1 } });
    for name in loadtest::jobs_to_stop(&status, &jobs, &pods) {
        tracing::info!(job = %name, "stopping the k6 job of a failed load test");
        job_api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&stop))
            .await?;
    }
    Ok(status)
}

/// The LoadTest a k6 pod belongs to (from its label).
fn loadtest_of(pod: &Pod) -> Option<ObjectRef<LoadTest>> {
    let name = pod.labels().get(LOADTEST_LABEL)?;
    Some(ObjectRef::new(name).within(&pod.namespace()?))
}

fn error_policy<K>(controller: &'static str) -> impl Fn(Arc<K>, &Error, Arc<Context>) -> Action {
    move |_, error, ctx| {
        tracing::warn!(controller, %error, "reconcile failed");
        ctx.metrics.reconcile_failed(controller, error.kind());
        Action::requeue(Duration::from_secs(5))
    }
}

fn all_or_namespaced<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Gateways (from the controller's own cache) that select `subgraph`.
fn gateways_selecting(
    store: &Store<GraphGateway>,
    subgraph: &Subgraph,
) -> Vec<ObjectRef<GraphGateway>> {
    store
        .state()
        .iter()
        .filter(|gw| selects(gw, subgraph))
        .map(|gw| ObjectRef::from_obj(gw.as_ref()))
        .collect()
}

/// Subgraphs (from the controller's own cache) reading their SDL from `cm`.
fn subgraphs_reading(store: &Store<Subgraph>, cm: &ConfigMap) -> Vec<ObjectRef<Subgraph>> {
    store
        .state()
        .iter()
        .filter(|sg| {
            sg.namespace() == cm.namespace()
                && sg
                    .spec
                    .config_map_ref
                    .as_ref()
                    .is_some_and(|r| Some(&r.name) == cm.metadata.name.as_ref())
        })
        .map(|sg| ObjectRef::from_obj(sg.as_ref()))
        .collect()
}

/// The GraphGateway a gateway pod belongs to (from its instance label).
fn gateway_of(pod: &Pod) -> Option<ObjectRef<GraphGateway>> {
    let name = pod.labels().get(build::INSTANCE_LABEL)?;
    Some(ObjectRef::new(name).within(&pod.namespace()?))
}

/// Runs the GraphGateway, Subgraph and LoadTest controllers until `shutdown` resolves.
pub async fn run(
    client: Client,
    metrics: Arc<Metrics>,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let reporter = Reporter {
        controller: MANAGER.to_owned(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let ctx = Arc::new(Context {
        client: client.clone(),
        introspector: Introspector::new(),
        metrics,
        recorder: Recorder::new(client.clone(), reporter),
        settings: settings.clone(),
    });
    let ns = settings.namespace.as_deref();
    let config = ControllerConfig::default()
        .debounce(settings.debounce)
        .concurrency(settings.concurrency);
    let wc = watcher::Config::default();
    let shutdown = futures::future::FutureExt::shared(Box::pin(shutdown));

    let gateways = Controller::new(all_or_namespaced::<GraphGateway>(&client, ns), wc.clone())
        .with_config(config.clone());
    let gateway_store = gateways.store();
    let gateways = gateways
        .owns(all_or_namespaced::<ConfigMap>(&client, ns), wc.clone())
        .owns(all_or_namespaced::<Deployment>(&client, ns), wc.clone())
        .owns(all_or_namespaced::<Service>(&client, ns), wc.clone())
        .owns(
            all_or_namespaced::<PodDisruptionBudget>(&client, ns),
            wc.clone(),
        )
        .owns(
            all_or_namespaced::<HorizontalPodAutoscaler>(&client, ns),
            wc.clone(),
        )
        .watches(
            all_or_namespaced::<Subgraph>(&client, ns),
            wc.clone(),
            move |sg| gateways_selecting(&gateway_store, &sg),
        )
        // Pod states (image pulls, crashes, readiness) explain a gateway that is not Ready.
        .watches(
            all_or_namespaced::<Pod>(&client, ns),
            watcher::Config::default().labels(&build::gateway_pods_selector()),
            |pod| gateway_of(&pod),
        )
        .graceful_shutdown_on(shutdown.clone())
        .run(
            reconcile_gateway,
            error_policy(GATEWAY_CONTROLLER),
            ctx.clone(),
        )
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "graphgateway controller");
            }
        });

    let loadtest_config = config.clone();
    let subgraphs =
        Controller::new(all_or_namespaced::<Subgraph>(&client, ns), wc.clone()).with_config(config);
    let subgraph_store = subgraphs.store();
    let subgraphs = subgraphs
        .watches(
            all_or_namespaced::<ConfigMap>(&client, ns),
            wc.clone(),
            move |cm| subgraphs_reading(&subgraph_store, &cm),
        )
        .graceful_shutdown_on(shutdown.clone())
        .run(
            reconcile_subgraph,
            error_policy(SUBGRAPH_CONTROLLER),
            ctx.clone(),
        )
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "subgraph controller");
            }
        });

    let k6_pods = watcher::Config::default().labels(LOADTEST_LABEL);
    let loadtests = Controller::new(all_or_namespaced::<LoadTest>(&client, ns), wc.clone())
        .with_config(loadtest_config)
        .owns(all_or_namespaced::<Job>(&client, ns), wc.clone())
        .owns(all_or_namespaced::<ConfigMap>(&client, ns), wc)
        .watches(all_or_namespaced::<Pod>(&client, ns), k6_pods, |pod| {
            loadtest_of(&pod)
        })
        .graceful_shutdown_on(shutdown)
        .run(reconcile_loadtest, error_policy(LOADTEST_CONTROLLER), ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "loadtest controller");
            }
        });
    futures::join!(gateways, subgraphs, loadtests);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway(spec: serde_json::Value) -> GraphGateway {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "GraphGateway",
            "metadata": { "name": "gw", "namespace": "shop" },
            "spec": spec,
        }))
        .expect("valid GraphGateway")
    }

    fn subgraph(namespace: &str, labels: serde_json::Value) -> Subgraph {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "Subgraph",
            "metadata": { "name": "sg", "namespace": namespace, "labels": labels },
            "spec": { "url": "http://sg/graphql" },
        }))
        .expect("valid Subgraph")
    }

    #[test]
    fn no_selector_selects_every_subgraph_of_the_own_namespace() {
        let gw = gateway(serde_json::json!({}));
        assert!(selects(&gw, &subgraph("shop", serde_json::json!({}))));
        assert!(!selects(&gw, &subgraph("other", serde_json::json!({}))));
    }

    #[test]
    fn label_selector_and_namespaces_are_honoured() {
        let gw = gateway(serde_json::json!({
            "namespaces": ["a", "b"],
            "subgraphSelector": {
                "matchLabels": { "graph": "shop" },
                "matchExpressions": [{ "key": "tier", "operator": "NotIn", "values": ["test"] }],
            },
        }));
        assert!(selects(
            &gw,
            &subgraph("a", serde_json::json!({ "graph": "shop" }))
        ));
        assert!(selects(
            &gw,
            &subgraph("b", serde_json::json!({ "graph": "shop", "tier": "prod" }))
        ));
        assert!(!selects(
            &gw,
            &subgraph("b", serde_json::json!({ "graph": "shop", "tier": "test" }))
        ));
        assert!(!selects(
            &gw,
            &subgraph("a", serde_json::json!({ "graph": "blog" }))
        ));
        assert!(!selects(
            &gw,
            &subgraph("shop", serde_json::json!({ "graph": "shop" }))
        ));
    }

    #[test]
    fn invalid_selector_selects_nothing_and_says_why() {
        let gw = gateway(serde_json::json!({
            "subgraphSelector": { "matchExpressions": [{ "key": "k", "operator": "Bogus" }] },
        }));
        assert!(!selects(
            &gw,
            &subgraph("shop", serde_json::json!({ "k": "v" }))
        ));
        assert!(subgraph_selector(&gw).is_err());
    }
}
