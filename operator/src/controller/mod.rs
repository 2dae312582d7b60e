//! The reconcilers and their wiring. Kubernetes I/O lives here (one reconciler per file);
//! what to write comes from the pure `resources` and `status` modules.
//!
//! This file holds what the three controllers share: [`Settings`], the per-reconcile
//! [`Context`], the [`Error`] type, server-side-apply helpers, and [`run`], which starts the
//! controllers with their watches.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::metrics::Metrics;
use crate::resources::{self, MANAGER};
use crate::subgraph_sdl::Introspector;
use graphfleet_api::{DEFAULT_GATEWAY_IMAGE, GraphGateway, LoadTest, Subgraph};

mod canary_gate;
pub mod gateway;
mod gateway_canary;
mod gateway_checks;
mod gateway_monitor;
mod gateway_objects;
mod gateway_revisions;
mod gateway_usage;
mod k6_api;
mod loadtest;
mod loadtest_cpu;
#[cfg(test)]
mod mock_api;
mod subgraph;

const GATEWAY_CONTROLLER: &str = crate::metrics::CONTROLLERS[0];
const SUBGRAPH_CONTROLLER: &str = crate::metrics::CONTROLLERS[1];
const LOADTEST_CONTROLLER: &str = crate::metrics::CONTROLLERS[2];
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
    /// Image of the Gatling load-generator Jobs (`executor: gatling`).
    pub gatling_image: String,
    /// Where gateway pods' admin listeners are (their pod IP, unless a test says).
    pub admin_address: crate::gateway_probe::AdminAddress,
    /// How often a gateway's `<gateway>-usage` ConfigMap (the fleet's operations, which
    /// new pods plan before they report ready) is refreshed from its pods, at most.
    pub usage_refresh: Duration,
    /// CAs trusted for `https://` Subgraph introspection besides the system store and
    /// the webpki roots (`--introspection-ca-file`).
    pub introspection_ca_file: Option<std::path::PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            namespace: None,
            debounce: Duration::from_millis(100),
            resync: Duration::from_secs(60),
            concurrency: 4,
            default_image: DEFAULT_GATEWAY_IMAGE.to_owned(),
            k6_image: resources::loadtest::DEFAULT_K6_IMAGE.to_owned(),
            gatling_image: resources::loadtest::DEFAULT_GATLING_IMAGE.to_owned(),
            admin_address: crate::gateway_probe::AdminAddress::default(),
            usage_refresh: Duration::from_secs(60),
            introspection_ca_file: None,
        }
    }
}

/// Shared by every reconcile.
pub struct Context {
    pub client: Client,
    pub introspector: Introspector,
    /// Asks gateway pods what they serve and have served.
    pub probe: crate::gateway_probe::GatewayProbe,
    pub metrics: Arc<Metrics>,
    pub recorder: Recorder,
    pub settings: Settings,
    /// k6 summaries read from finished segment pods' logs, by pod uid (a log is read once).
    pub k6_summaries: std::sync::Mutex<std::collections::HashMap<String, String>>,
    /// Gateway pods' CPU read before each LoadTest target's load.
    cpu_baselines: loadtest_cpu::Baselines,
    /// When each gateway's usage ConfigMap was last refreshed, and with what.
    usage_writes: gateway_usage::UsageWrites,
    /// Whether the cluster serves PodMonitors (the Prometheus Operator's CRD).
    pod_monitors: gateway_monitor::Discovery,
}

impl Context {
    /// A context whose events are reported by the operator's manager name, from this pod
    /// (`POD_NAME`) when set.
    pub fn new(client: Client, metrics: Arc<Metrics>, settings: Settings) -> Self {
        let reporter = Reporter {
            controller: MANAGER.to_owned(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            introspector: Introspector::new(settings.introspection_ca_file.as_deref())
                .unwrap_or_else(|why| {
                    // main checks the file first: only a file changed since can fail.
                    tracing::error!(
                        "--introspection-ca-file: {why}; trusting the default roots only"
                    );
                    Introspector::default()
                }),
            probe: crate::gateway_probe::GatewayProbe::new(settings.admin_address.clone()),
            metrics,
            settings,
            k6_summaries: Default::default(),
            cpu_baselines: Default::default(),
            usage_writes: Default::default(),
            pod_monitors: Default::default(),
        }
    }
}

/// A failed reconcile (retried with a short backoff).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("object has no namespace")]
    NoNamespace,
    #[error("the canary step's LoadTest {name}: {source}")]
    CanaryLoadTest { name: String, source: kube::Error },
}

impl Error {
    fn kind(&self) -> &'static str {
        match self {
            Self::Kube(_) | Self::CanaryLoadTest { .. } => "kube",
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

/// Publishes an Event about `gw` (a failed publish is logged, never fatal).
async fn publish(ctx: &Context, gw: &GraphGateway, type_: EventType, reason: &str, note: String) {
    // Every rollout step is announced here once, so it is counted here.
    let rollout = match reason {
        "Composed" | "Serving" => Some("served"),
        "CanaryStarted" => Some("canary_started"),
        "CanaryPromoted" => Some("promoted"),
        "CanaryRolledBack" => Some("rolled_back"),
        _ => None,
    };
    if let Some(result) = rollout {
        ctx.metrics.rollout(result);
    }
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

/// Runs the GraphGateway, Subgraph and LoadTest controllers until `shutdown` resolves.
pub async fn run(
    client: Client,
    metrics: Arc<Metrics>,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let ctx = Arc::new(Context::new(client.clone(), metrics, settings.clone()));
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
        // A canary step's LoadTest finishing decides the step (`spec.rollout.canary.loadTest`).
        .owns(all_or_namespaced::<LoadTest>(&client, ns), wc.clone())
        .watches(
            all_or_namespaced::<Subgraph>(&client, ns),
            wc.clone(),
            move |sg| gateway::gateways_selecting(&gateway_store, &sg),
        )
        // Pod states (image pulls, crashes, readiness) explain a gateway that is not Ready.
        .watches(
            all_or_namespaced::<Pod>(&client, ns),
            watcher::Config::default().labels(&resources::gateway_meta::gateway_pods_selector()),
            |pod| gateway::gateway_of(&pod),
        )
        .graceful_shutdown_on(shutdown.clone())
        .run(
            gateway::reconcile_gateway,
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
            move |cm| subgraph::subgraphs_reading(&subgraph_store, &cm),
        )
        .graceful_shutdown_on(shutdown.clone())
        .run(
            subgraph::reconcile_subgraph,
            error_policy(SUBGRAPH_CONTROLLER),
            ctx.clone(),
        )
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "subgraph controller");
            }
        });

    let k6_pods = watcher::Config::default().labels(resources::loadtest::LOADTEST_LABEL);
    let loadtests = Controller::new(all_or_namespaced::<LoadTest>(&client, ns), wc.clone())
        .with_config(loadtest_config)
        .owns(all_or_namespaced::<Job>(&client, ns), wc.clone())
        .owns(all_or_namespaced::<ConfigMap>(&client, ns), wc)
        .watches(all_or_namespaced::<Pod>(&client, ns), k6_pods, |pod| {
            loadtest::loadtest_of(&pod)
        })
        .graceful_shutdown_on(shutdown)
        .run(
            loadtest::reconcile_loadtest,
            error_policy(LOADTEST_CONTROLLER),
            ctx,
        )
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "loadtest controller");
            }
        });
    futures::join!(gateways, subgraphs, loadtests);
}
