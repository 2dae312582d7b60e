//! The operator's read-only web view (its own port, `--web-addr`): the GraphGateways with
//! their revisions, checks and rollout steps, the Subgraphs with their schema state, and the
//! LoadTests with their reports. Server-rendered HTML (maud), no script.
//!
//! Kubernetes reads sit here at the edge, with the operator's own client, so the view shows
//! exactly what the operator's RBAC lets it read (a refused read is shown as such on the
//! page); the pages themselves are pure functions of the objects (`fleet_pages`,
//! `loadtest_pages`).

mod fleet_pages;
mod layout;
mod loadtest_pages;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use graphfleet_api::{GraphGateway, LoadTest, Subgraph};
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};
use maud::{Markup, html};
use serde::de::DeserializeOwned;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

pub use fleet_pages::{Fleet, Listed};

use layout::{GATEWAYS, LOADTESTS, SUBGRAPHS};

/// Most objects of a kind a page lists (one API page; the rest is said, not fetched).
const LIST_LIMIT: u32 = 500;
/// Pages rendered at once; more wait their turn, so a busy browser cannot flood the API
/// server with lists.
const CONCURRENT_PAGES: usize = 4;

/// What the view reads with.
pub struct WebState {
    client: kube::Client,
    /// The operator's watched namespace (all when `None`).
    namespace: Option<String>,
    pages: Semaphore,
}

impl WebState {
    pub fn new(client: kube::Client, namespace: Option<String>) -> Self {
        Self {
            client,
            namespace,
            pages: Semaphore::new(CONCURRENT_PAGES),
        }
    }

    fn all<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        match &self.namespace {
            Some(ns) => Api::namespaced(self.client.clone(), ns),
            None => Api::all(self.client.clone()),
        }
    }

    async fn list<K>(&self, api: Api<K>) -> Listed<K>
    where
        K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
    {
        let listed = api
            .list(&ListParams::default().limit(LIST_LIMIT))
            .await
            .map_err(|e| read_failure(&e))?;
        Ok(listed.items)
    }

    async fn fleet(&self) -> Fleet {
        let (gateways, subgraphs, loadtests) = tokio::join!(
            self.list(self.all::<GraphGateway>()),
            self.list(self.all::<Subgraph>()),
            self.list(self.all::<LoadTest>()),
        );
        Fleet {
            gateways,
            subgraphs,
            loadtests,
        }
    }

    /// A namespace the view may show: the watched one, or any when all are watched.
    fn shows(&self, namespace: &str) -> bool {
        self.namespace.as_deref().is_none_or(|ns| ns == namespace)
    }
}

/// A failed read in words a reader can act on (a 403 names the RBAC).
fn read_failure(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) if status.code == 403 => {
            format!("forbidden by the operator's RBAC ({})", status.message)
        }
        other => other.to_string(),
    }
}

type Reply = Response<Full<Bytes>>;

fn html_reply(status: StatusCode, body: Markup) -> Reply {
    Response::builder()
        .status(status)
        .header(hyper::header::CONTENT_TYPE, "text/html; charset=utf-8")
        // No script, no frames, images only from the page itself (the charts are data: URIs).
        .header(
            hyper::header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; form-action 'none'",
        )
        .header(hyper::header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(hyper::header::CACHE_CONTROL, "no-store")
        .header(hyper::header::REFERRER_POLICY, "no-referrer")
        .body(Full::new(Bytes::from(body.into_string())))
        .expect("static response parts are valid")
}

fn not_found(what: &str) -> Reply {
    html_reply(
        StatusCode::NOT_FOUND,
        layout::page(
            "Not found",
            html! { p { (what) } p { a href="/" { "Back to the fleet" } } },
        ),
    )
}

/// A DNS-1123 subdomain: what every namespace and object name is. Anything else in a path
/// cannot name an object and is answered 404 without asking the API server.
fn is_object_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

/// Routes one request.
pub async fn respond<B>(state: &WebState, req: &Request<B>) -> Reply {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return Response::builder()
            .status(StatusCode::METHOD_NOT_ALLOWED)
            .header(hyper::header::ALLOW, "GET, HEAD")
            .body(Full::new(Bytes::from_static(
                b"the web view is read-only\n",
            )))
            .expect("static response parts are valid");
    }
    let Ok(_turn) = state.pages.acquire().await else {
        return not_found("shutting down");
    };
    let parts: Vec<&str> = req.uri().path().trim_matches('/').split('/').collect();
    match parts.as_slice() {
        [""] => html_reply(StatusCode::OK, fleet_pages::overview(&state.fleet().await)),
        [kind, ns, name] if is_object_name(ns) && is_object_name(name) && state.shows(ns) => {
            object_page(state, kind, ns, name).await
        }
        _ => not_found("No such page."),
    }
}

async fn object_page(state: &WebState, kind: &str, ns: &str, name: &str) -> Reply {
    let client = &state.client;
    let loadtests = || state.list(Api::<LoadTest>::namespaced(client.clone(), ns));
    match kind {
        GATEWAYS => match get::<GraphGateway>(client, ns, name).await {
            Ok(Some(gw)) => {
                let lts = loadtests().await.unwrap_or_default();
                html_reply(StatusCode::OK, fleet_pages::gateway(&gw, &lts))
            }
            Ok(None) => not_found(&format!("No GraphGateway {ns}/{name}.")),
            Err(why) => read_refused("the GraphGateway", &why),
        },
        SUBGRAPHS => match get::<Subgraph>(client, ns, name).await {
            Ok(Some(sg)) => {
                let gws = state
                    .list(Api::<GraphGateway>::namespaced(client.clone(), ns))
                    .await
                    .unwrap_or_default();
                html_reply(StatusCode::OK, fleet_pages::subgraph(&sg, &gws))
            }
            Ok(None) => not_found(&format!("No Subgraph {ns}/{name}.")),
            Err(why) => read_refused("the Subgraph", &why),
        },
        LOADTESTS => match get::<LoadTest>(client, ns, name).await {
            Ok(Some(lt)) => {
                let report = report_data(client, ns, &lt).await;
                html_reply(
                    StatusCode::OK,
                    loadtest_pages::loadtest(&lt, report.as_ref()),
                )
            }
            Ok(None) => not_found(&format!("No LoadTest {ns}/{name}.")),
            Err(why) => read_refused("the LoadTest", &why),
        },
        _ => not_found("No such page."),
    }
}

fn read_refused(what: &str, why: &str) -> Reply {
    html_reply(
        StatusCode::BAD_GATEWAY,
        layout::page("Read failed", layout::read_error(what, why)),
    )
}

async fn get<K>(client: &kube::Client, ns: &str, name: &str) -> Result<Option<K>, String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    Api::<K>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await
        .map_err(|e| read_failure(&e))
}

/// The report ConfigMap's data, when the LoadTest names one the operator can read.
async fn report_data(
    client: &kube::Client,
    ns: &str,
    lt: &LoadTest,
) -> Option<BTreeMap<String, String>> {
    let name = lt.status.as_ref()?.report_config_map.as_deref()?;
    match get::<ConfigMap>(client, ns, name).await {
        Ok(cm) => cm?.data,
        Err(why) => {
            tracing::warn!(configmap = name, %why, "web view: reading a LoadTest report failed");
            None
        }
    }
}

/// Serves the view on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    state: Arc<WebState>,
    shutdown: impl Future<Output = ()>,
) {
    let handle = move |req: Request<hyper::body::Incoming>| {
        let state = state.clone();
        async move { respond(&state, &req).await }
    };
    crate::http_server::serve(listener, "web view", handle, shutdown).await;
}
