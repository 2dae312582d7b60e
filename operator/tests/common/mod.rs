//! Shared helpers of the cluster tests: CRD install, an in-process operator scoped to a
//! test namespace, a real `_service { sdl }` subgraph server, and bounded polling.

#![allow(dead_code)]

pub mod stand_in;

use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use graphfleet_api::all_crds;
use graphfleet_operator::controller::{self, Settings};
use graphfleet_operator::metrics::Metrics;
use http_body_util::{BodyExt, Full};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use tokio::net::TcpListener;

pub fn fixture_sdl(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/subgraphs/{name}.graphql",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).expect("subgraph fixture exists")
}

/// A k6 summary from `tests/fixtures/k6-summaries/`.
pub fn summary(file: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/k6-summaries/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).expect("summary fixture exists")
}

/// Writes what a kubelet would on a load-generator pod: the k6 container's state and the
/// pod phase (the API-only cluster runs no k6; an unscheduled pod is left alone by kwok).
pub async fn set_pod_status(
    pods: &Api<k8s_openapi::api::core::v1::Pod>,
    pod: &str,
    phase: &str,
    state: serde_json::Value,
) {
    let status = serde_json::json!({ "status": {
        "phase": phase,
        "containerStatuses": [{
            "name": "k6", "image": "k6", "imageID": "", "ready": phase == "Running",
            "restartCount": 0, "state": state,
        }],
    }});
    pods.patch_status(pod, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("patch pod status");
}

/// A client of the shared test cluster, with the CRDs installed and established.
pub async fn cluster_client() -> Client {
    log_to_test_output();
    let cluster = tokio::task::spawn_blocking(graphfleet_testkit::cluster)
        .await
        .expect("cluster start does not panic");
    let client = cluster.client().await;
    install_crds(&client).await;
    client
}

/// The operator's log into the test's captured output, so a failing test shows what the
/// operator did (`RUST_LOG` overrides the default: the operator at info).
fn log_to_test_output() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("graphfleet_operator=info"));
    // A second test in the same process finds it installed: fine.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
}

/// A client of the real-node cluster of this run (`graphfleet_testkit::real_cluster`), with
/// the CRDs installed and established.
pub async fn real_cluster_client() -> Client {
    log_to_test_output();
    let cluster = tokio::task::spawn_blocking(graphfleet_testkit::real_cluster)
        .await
        .expect("real cluster start does not panic");
    let client = cluster.client().await;
    install_crds(&client).await;
    client
}

async fn install_crds(client: &Client) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for (_, crd) in all_crds() {
        let name = crd.metadata.name.clone().expect("CRD has a name");
        api.patch(
            &name,
            &PatchParams::apply("graphfleet-operator-tests").force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap_or_else(|e| panic!("apply CRD {name}: {e}"));
        wait_for(
            &format!("CRD {name} established"),
            Duration::from_secs(30),
            || {
                let api = api.clone();
                let name = name.clone();
                async move {
                    let crd = api.get(&name).await.ok()?;
                    let established = crd
                        .status?
                        .conditions?
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True");
                    established.then_some(())
                }
            },
        )
        .await;
    }
}

/// Polls `check` every 20 ms until it yields a value; panics with `what` after `timeout`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The operator running in this process, watching one namespace.
pub struct Operator {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    pub metrics: Arc<Metrics>,
}

impl Operator {
    pub fn start(client: &Client, namespace: &str) -> Self {
        Self::start_with(client, Settings::default(), namespace)
    }

    /// An operator with `settings`, scoped to `namespace`.
    pub fn start_with(client: &Client, settings: Settings, namespace: &str) -> Self {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let metrics = Arc::new(Metrics::new());
        let settings = Settings {
            namespace: Some(namespace.to_owned()),
            ..settings
        };
        let task = tokio::spawn(controller::run(
            client.clone(),
            metrics.clone(),
            settings,
            async move {
                let _ = stopped.await;
            },
        ));
        Self {
            stop: Some(stop),
            task,
            metrics,
        }
    }

    /// Graceful stop: in-flight reconciles finish, then the controllers exit.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let task = &mut self.task;
        tokio::time::timeout(Duration::from_secs(20), task)
            .await
            .expect("operator stops within 20 s")
            .expect("operator task does not panic");
    }

    /// Abrupt stop, as if the process were killed mid-reconcile.
    pub fn kill(self) {
        self.task.abort();
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A real subgraph HTTP server answering `_service { sdl }` with a replaceable SDL.
pub struct SubgraphServer {
    pub url: String,
    sdl: Arc<Mutex<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl SubgraphServer {
    pub async fn start(sdl: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let sdl = Arc::new(Mutex::new(sdl));
        let shared = sdl.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let sdl = shared.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let sdl = sdl.clone();
                        async move { Ok::<_, Infallible>(answer(req, &sdl).await) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        Self {
            url: format!("http://{addr}/graphql"),
            sdl,
            task,
        }
    }

    pub fn set_sdl(&self, sdl: String) {
        *self.sdl.lock().expect("sdl lock") = sdl;
    }
}

impl Drop for SubgraphServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    req: hyper::Request<hyper::body::Incoming>,
    sdl: &Mutex<String>,
) -> hyper::Response<Full<Bytes>> {
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let query: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let asks_service = query["query"]
        .as_str()
        .is_some_and(|q| q.contains("_service"));
    let payload = if asks_service {
        let sdl = sdl.lock().expect("sdl lock").clone();
        serde_json::json!({ "data": { "_service": { "sdl": sdl } } })
    } else {
        serde_json::json!({ "errors": [{ "message": "only _service { sdl } is served here" }] })
    };
    hyper::Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(payload.to_string())))
        .expect("static response parts are valid")
}
