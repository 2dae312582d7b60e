//! A real gateway standing in for a track's pods in the API-only cluster (whose pods run
//! no process): GraphQL and admin listeners on loopback, serving each revision the
//! operator rolls out as a new pod would, with real metrics and recorded operations from
//! real requests.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use graphfleet_gateway::config::Config;
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::supergraph::Supergraph;
use graphfleet_operator::resources::gateway_revisions;
use http_body_util::{BodyExt, Full};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use tokio::net::TcpListener;

pub struct StandIn {
    gateway: Arc<Gateway>,
    graphql: SocketAddr,
    pub admin: SocketAddr,
}

impl StandIn {
    pub async fn start() -> Self {
        let gateway = Arc::new(Gateway::without_supergraph(Arc::new(Config::default())));
        let bind = || TcpListener::bind("127.0.0.1:0");
        let (graphql, admin) = (bind().await.expect("bind"), bind().await.expect("bind"));
        let addrs = (
            graphql.local_addr().expect("bound"),
            admin.local_addr().expect("bound"),
        );
        tokio::spawn(graphfleet_gateway::http::serve(graphql, gateway.clone()));
        tokio::spawn(graphfleet_gateway::http::serve_admin(
            admin,
            gateway.clone(),
        ));
        Self {
            gateway,
            graphql: addrs.0,
            admin: addrs.1,
        }
    }

    /// Serve revision `hash` of gateway `shop`, read from its ConfigMap.
    pub async fn serve_revision(&self, client: &Client, ns: &str, hash: &str) {
        let name = gateway_revisions::supergraph_config_map_name("shop", hash);
        let cm = Api::<ConfigMap>::namespaced(client.clone(), ns)
            .get(&name)
            .await
            .expect("the revision's ConfigMap");
        let sdl = &cm.data.expect("data")[gateway_revisions::SUPERGRAPH_KEY];
        self.gateway
            .swap_supergraph(Supergraph::parse(sdl).expect("a composed supergraph loads"));
    }

    /// POST `query` `times` times as client `storefront`. The subgraphs do not exist, so
    /// a query that fetches fails (its outcome counts as failed) and `{ __typename }`
    /// succeeds; either way the operation is recorded.
    pub async fn send(&self, query: &str, times: usize) {
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<Full<Bytes>>();
        let body =
            Bytes::from(serde_json::to_vec(&serde_json::json!({ "query": query })).expect("JSON"));
        for _ in 0..times {
            let request = hyper::Request::post(format!("http://{}/graphql", self.graphql))
                .header("content-type", "application/json")
                .header("graphql-client-name", "storefront")
                .body(Full::new(body.clone()))
                .expect("a request");
            let response = client.request(request).await.expect("the gateway answers");
            response.into_body().collect().await.expect("a body");
        }
    }
}

/// The shop's three Subgraphs (inline fixture SDL) and its GraphGateway `shop` with
/// `spec`, in `ns`: the APIs to change and watch them with.
pub async fn inline_shop(
    client: &Client,
    ns: &str,
    spec: serde_json::Value,
) -> (
    Api<graphfleet_api::Subgraph>,
    Api<graphfleet_api::GraphGateway>,
) {
    use kube::api::PostParams;
    let subgraphs: Api<graphfleet_api::Subgraph> = Api::namespaced(client.clone(), ns);
    for name in ["accounts", "products", "reviews"] {
        let subgraph = serde_json::from_value(serde_json::json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "Subgraph",
            "metadata": { "name": name, "labels": { "graph": "shop" } },
            "spec": {
                "url": format!("http://{name}.shop.svc:4001/graphql"),
                "sdl": super::fixture_sdl(name),
            },
        }))
        .expect("valid Subgraph");
        subgraphs
            .create(&PostParams::default(), &subgraph)
            .await
            .expect("create the subgraph");
    }
    let gateways: Api<graphfleet_api::GraphGateway> = Api::namespaced(client.clone(), ns);
    // On the router pool, as the benchmark's manifests place gateways (the operator
    // places them nowhere in particular).
    let mut spec = spec;
    for (key, value) in graphfleet_testkit::pool_placement("router")
        .as_object()
        .expect("an object")
    {
        spec[key] = value.clone();
    }
    let gw = serde_json::from_value(serde_json::json!({
        "apiVersion": "graphfleet.dev/v1alpha1",
        "kind": "GraphGateway",
        "metadata": { "name": "shop" },
        "spec": spec,
    }))
    .expect("valid GraphGateway");
    gateways
        .create(&PostParams::default(), &gw)
        .await
        .expect("create the gateway");
    (subgraphs, gateways)
}

/// Replace subgraph `name`'s inline SDL.
pub async fn set_sdl(subgraphs: &Api<graphfleet_api::Subgraph>, name: &str, sdl: &str) {
    let patch = kube::api::Patch::Merge(serde_json::json!({ "spec": { "sdl": sdl } }));
    subgraphs
        .patch(name, &kube::api::PatchParams::default(), &patch)
        .await
        .expect("patch the subgraph's SDL");
}

/// The status of gateway `shop`, once it has one.
/// Each change of its phase or canary message is printed, so a failing test shows the way
/// the gateway went.
pub async fn status_of(
    gateways: &Api<graphfleet_api::GraphGateway>,
) -> Option<graphfleet_api::GraphGatewayStatus> {
    static LAST: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());
    let status = gateways.get("shop").await.ok()?.status?;
    let seen = format!(
        "{}: phase {:?}, canary {:?}",
        gateways.namespace().unwrap_or_default(),
        status.phase,
        status
            .canary
            .as_ref()
            .map(|c| (c.step, &c.phase, &c.message))
    );
    let mut last = LAST.lock().expect("status log lock");
    if *last != seen {
        println!("gateway status: {seen}");
        *last = seen;
    }
    Some(status)
}
