//! The operator against a real control plane (graphfleet-testkit): each test runs the
//! operator in-process, scoped to its own namespace.

mod common;

use std::time::{Duration, Instant};

use common::{Operator, SubgraphServer, cluster_client, fixture_sdl, wait_for};
use graphfleet_api::{GraphGateway, LoadTest, Subgraph};
use graphfleet_operator::resources::{self, gateway_revisions};
use graphfleet_testkit::{TestNamespace, pool_placement};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

fn subgraph(name: &str, spec: serde_json::Value) -> Subgraph {
    serde_json::from_value(json!({
        "apiVersion": "graphfleet.dev/v1alpha1",
        "kind": "Subgraph",
        "metadata": { "name": name, "labels": { "graph": "shop" } },
        "spec": spec,
    }))
    .expect("valid Subgraph")
}

fn gateway(name: &str, spec: serde_json::Value) -> GraphGateway {
    serde_json::from_value(json!({
        "apiVersion": "graphfleet.dev/v1alpha1",
        "kind": "GraphGateway",
        "metadata": { "name": name },
        "spec": spec,
    }))
    .expect("valid GraphGateway")
}

/// The shop gateway on the router pool (the benchmark's placement, set explicitly: the
/// operator sets none).
fn shop_gateway() -> GraphGateway {
    let router = pool_placement("router");
    gateway(
        "shop",
        json!({
            "subgraphSelector": { "matchLabels": { "graph": "shop" } },
            "replicas": 2,
            "resources": { "requests": { "cpu": "500m" }, "limits": { "cpu": "500m", "memory": "256Mi" } },
            "nodeSelector": router["nodeSelector"],
            "tolerations": router["tolerations"],
        }),
    )
}

async fn create<K>(api: &Api<K>, object: &K) -> K
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.create(&PostParams::default(), object)
        .await
        .expect("create object")
}

async fn set_inline_sdl(api: &Api<Subgraph>, name: &str, sdl: &str) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "sdl": sdl } })),
    )
    .await
    .expect("patch subgraph sdl");
}

/// The revision the gateway `shop` serves and its supergraph, once its immutable
/// revision ConfigMap exists.
async fn served_supergraph(client: &Client, ns: &str) -> Option<(String, String)> {
    let gw = Api::<GraphGateway>::namespaced(client.clone(), ns)
        .get_opt("shop")
        .await
        .ok()??;
    let hash = gw.status?.supergraph_hash?;
    let cm = Api::<ConfigMap>::namespaced(client.clone(), ns)
        .get_opt(&gateway_revisions::supergraph_config_map_name(
            "shop", &hash,
        ))
        .await
        .ok()??;
    assert_eq!(cm.immutable, Some(true), "a revision never changes");
    let sdl = cm.data?.remove(gateway_revisions::SUPERGRAPH_KEY)?;
    Some((hash, sdl))
}

/// The revision the gateway `shop` serves, once it exists.
async fn served_hash(client: &Client, ns: &str) -> Option<String> {
    served_supergraph(client, ns).await.map(|(hash, _)| hash)
}

fn condition(gw: &GraphGateway, type_: &str) -> Option<(String, String)> {
    let c = gw
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)?;
    Some((c.status.clone(), c.reason.clone()))
}

/// Waits until the gateway is Ready with `hash` served by all replicas.
async fn wait_ready(api: &Api<GraphGateway>, hash: &str) -> GraphGateway {
    wait_for(&format!("gateway Ready with {hash}"), WAIT, || async {
        let gw = api.get("shop").await.ok()?;
        let status = gw.status.as_ref()?;
        let ready = condition(&gw, "Ready")?.0 == "True";
        (ready
            && status.supergraph_hash.as_deref() == Some(hash)
            && status.ready_replicas == 2
            && status.observed_generation == gw.metadata.generation)
            .then_some(gw)
    })
    .await
}

struct Shop {
    client: Client,
    ns: TestNamespace,
    subgraphs: Api<Subgraph>,
    gateways: Api<GraphGateway>,
    products: SubgraphServer,
}

/// accounts (inline SDL), products (introspection of a real server), reviews (ConfigMap).
async fn shop(prefix: &str) -> Shop {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, prefix).await;
    let products = SubgraphServer::start(fixture_sdl("products")).await;
    let subgraphs: Api<Subgraph> = Api::namespaced(client.clone(), ns.name());
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let reviews_cm: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": "reviews-sdl" },
        "data": { "schema.graphql": fixture_sdl("reviews") },
    }))
    .expect("valid ConfigMap");
    create(&config_maps, &reviews_cm).await;
    let accounts =
        json!({ "url": "http://accounts.shop.svc:4001/graphql", "sdl": fixture_sdl("accounts") });
    create(&subgraphs, &subgraph("accounts", accounts)).await;
    create(
        &subgraphs,
        &subgraph(
            "products",
            json!({ "url": products.url, "introspectionTimeoutMs": 2000 }),
        ),
    )
    .await;
    let reviews = json!({ "url": "http://reviews.shop.svc:4003/graphql", "configMapRef": { "name": "reviews-sdl", "key": "schema.graphql" } });
    create(&subgraphs, &subgraph("reviews", reviews)).await;
    let gateways = Api::namespaced(client.clone(), ns.name());
    Shop {
        client,
        ns,
        subgraphs,
        gateways,
        products,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_composes_rolls_out_recomposes_and_keeps_last_good_supergraph() {
    let shop = shop("gw-lifecycle").await;
    let ns = shop.ns.name().to_owned();
    let client = shop.client.clone();
    let operator = Operator::start(&client, &ns);
    create(&shop.gateways, &shop_gateway()).await;

    // Composed: the served revision holds a supergraph of all three subgraphs.
    let (first, sdl) = wait_for("first supergraph", WAIT, || served_supergraph(&client, &ns)).await;
    for graph in ["ACCOUNTS", "PRODUCTS", "REVIEWS"] {
        assert!(sdl.contains(graph), "supergraph lacks {graph}:\n{sdl}");
    }
    assert!(
        sdl.contains(&shop.products.url),
        "introspected subgraph's routing url is in the supergraph"
    );
    let gw = wait_ready(&shop.gateways, &first).await;
    assert_eq!(
        condition(&gw, "Composed"),
        Some(("True".into(), "Composed".into()))
    );
    assert_eq!(
        gw.status.as_ref().map(|s| s.subgraphs.clone()),
        Some(vec!["accounts".into(), "products".into(), "reviews".into()])
    );

    // `kubectl get` shows readiness, replicas and the supergraph hash.
    let cluster = graphfleet_testkit::cluster();
    let out = cluster
        .kubectl()
        .args(["get", "graphgateways", "-n", &ns])
        .output()
        .expect("run kubectl get");
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "COMPOSED",
            "REPLICAS",
            "AVAILABLE",
            "SUPERGRAPH",
            "PHASE",
            "AGE"
        ],
        "{table}"
    );
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        &row[..6],
        ["shop", "True", "True", "2", "2", first.as_str()],
        "{table}"
    );

    // Deployment: router pool, CPU limits; its pods really run on the router node.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let deploy = deployments.get("shop").await.expect("gateway Deployment");
    let pod_spec = deploy
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.clone())
        .expect("pod spec");
    assert_eq!(
        pod_spec
            .node_selector
            .as_ref()
            .and_then(|n| n.get("graphfleet.dev/pool"))
            .map(String::as_str),
        Some("router")
    );
    let limits = pod_spec.containers[0]
        .resources
        .as_ref()
        .and_then(|r| r.limits.clone())
        .expect("limits");
    assert_eq!(limits["cpu"].0, "500m");
    let pods = Api::<Pod>::namespaced(client.clone(), &ns)
        .list(&ListParams::default().labels("app.kubernetes.io/instance=shop"))
        .await
        .expect("list pods");
    assert!(!pods.items.is_empty());
    for pod in &pods.items {
        assert_eq!(
            pod.spec.as_ref().and_then(|s| s.node_name.as_deref()),
            Some("router-0")
        );
    }
    Api::<Service>::namespaced(client.clone(), &ns)
        .get("shop")
        .await
        .expect("gateway Service");

    // A Subgraph SDL change: new supergraph in the ConfigMap, then a completed rollout.
    // Timed from the write of the SDL change; several samples, reported (not asserted).
    let mut to_configmap = Vec::new();
    let mut to_ready = Vec::new();
    let mut current = first.clone();
    let mut changed = String::new();
    for i in 0..5 {
        changed = fixture_sdl("accounts").replace(
            "username: String",
            &format!("username: String\n  field{i}: String"),
        );
        let started = Instant::now();
        set_inline_sdl(&shop.subgraphs, "accounts", &changed).await;
        let previous = current.clone();
        current = wait_for("recomposed supergraph", WAIT, || async {
            served_hash(&client, &ns).await.filter(|h| *h != previous)
        })
        .await;
        to_configmap.push(started.elapsed());
        wait_ready(&shop.gateways, &current).await;
        to_ready.push(started.elapsed());
    }
    let second = current;
    let template_hash = deployments
        .get("shop")
        .await
        .expect("deployment")
        .spec
        .and_then(|s| s.template.metadata)
        .and_then(|m| m.annotations)
        .and_then(|a| {
            a.get(resources::gateway::SUPERGRAPH_HASH_ANNOTATION)
                .cloned()
        });
    assert_eq!(
        template_hash.as_deref(),
        Some(second.as_str()),
        "pod template carries the new hash"
    );
    report(
        "subgraph SDL change -> new supergraph in ConfigMap",
        &mut to_configmap,
    );
    report(
        "subgraph SDL change -> gateway Ready after rollout",
        &mut to_ready,
    );

    // A broken SDL: Composed=False with the errors; the last good supergraph and the
    // Deployment are untouched.
    let served_before = served_supergraph(&client, &ns).await.expect("served");
    let deploy_before = deployments.get("shop").await.expect("deployment");
    set_inline_sdl(&shop.subgraphs, "accounts", "type Query { me: User\n").await;
    let failed = wait_for("Composed=False", WAIT, || async {
        let gw = shop.gateways.get("shop").await.ok()?;
        (condition(&gw, "Composed")?.0 == "False").then_some(gw)
    })
    .await;
    let status = failed.status.clone().expect("status");
    assert!(
        !status.composition_errors.is_empty(),
        "errors are reported: {status:?}"
    );
    assert_eq!(
        status.supergraph_hash.as_deref(),
        Some(second.as_str()),
        "still serving the last good supergraph"
    );
    assert_eq!(
        condition(&failed, "Degraded").map(|c| c.0),
        Some("True".to_owned())
    );
    let warning = wait_for("Warning event", WAIT, || async {
        let events = Api::<Event>::namespaced(client.clone(), &ns)
            .list(&ListParams::default())
            .await
            .ok()?;
        events.items.into_iter().find(|e| {
            e.type_.as_deref() == Some("Warning")
                && e.reason.as_deref() == Some("CompositionFailed")
        })
    })
    .await;
    assert!(
        warning
            .message
            .unwrap_or_default()
            .contains(&status.composition_errors[0].code)
    );
    // Give the operator a few more reconciles to (wrongly) roll out, then compare.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let served_after = served_supergraph(&client, &ns).await.expect("served");
    let deploy_after = deployments.get("shop").await.expect("deployment");
    assert_eq!(served_after, served_before, "last good supergraph kept");
    assert_eq!(
        deploy_after.metadata.generation, deploy_before.metadata.generation,
        "no rollout"
    );
    assert_eq!(deploy_after.spec, deploy_before.spec);

    // While composition fails, spec changes still reach the Deployment, with the last good
    // revision, and observedGeneration says so.
    let scaled = shop
        .gateways
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "replicas": 3 } })),
        )
        .await
        .expect("scale the gateway");
    wait_for("replicas applied while composition fails", WAIT, || async {
        let d = deployments.get("shop").await.ok()?;
        let gw = shop.gateways.get("shop").await.ok()?;
        let observed = gw.status?.observed_generation;
        (d.spec?.replicas == Some(3) && observed == scaled.metadata.generation).then_some(())
    })
    .await;
    assert_eq!(served_hash(&client, &ns).await, Some(second.clone()));

    // Fixing the SDL recomposes to the same supergraph as before the break.
    set_inline_sdl(&shop.subgraphs, "accounts", &changed).await;
    wait_for("Composed=True again", WAIT, || async {
        let gw = shop.gateways.get("shop").await.ok()?;
        (condition(&gw, "Composed")?.0 == "True").then_some(())
    })
    .await;

    // Every composition is a revision; pinning an older one serves it again (a rollback),
    // unpinning goes back to the latest.
    let gw = shop.gateways.get("shop").await.expect("gateway");
    let revisions: Vec<String> = gw
        .status
        .as_ref()
        .map(|s| s.revisions.iter().map(|r| r.hash.clone()).collect())
        .unwrap_or_default();
    assert_eq!(
        revisions.first(),
        Some(&second),
        "newest first: {revisions:?}"
    );
    assert!(revisions.contains(&first), "{revisions:?}");
    let pin = |revision: Option<&str>| {
        let gateways = shop.gateways.clone();
        let patch = json!({ "spec": { "supergraph": { "revision": revision } } });
        async move {
            gateways
                .patch("shop", &PatchParams::default(), &Patch::Merge(patch))
                .await
                .expect("pin a revision")
        }
    };
    pin(Some(&first)).await;
    wait_for("the pinned revision in the pod template", WAIT, || async {
        let d = deployments.get("shop").await.ok()?;
        let annotations = d.spec?.template.metadata?.annotations?;
        let hash = annotations.get(resources::gateway::SUPERGRAPH_HASH_ANNOTATION)?;
        (*hash == first && served_hash(&client, &ns).await.as_ref() == Some(&first)).then_some(())
    })
    .await;
    pin(None).await;
    wait_for("the latest revision again", WAIT, || async {
        (served_hash(&client, &ns).await.as_ref() == Some(&second)).then_some(())
    })
    .await;

    // Deleting the gateway garbage-collects everything it owns.
    shop.gateways
        .delete("shop", &DeleteParams::foreground())
        .await
        .expect("delete gateway");
    wait_for("owned objects collected", WAIT, || async {
        let owned = ListParams::default().labels("app.kubernetes.io/instance=shop");
        let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &ns)
            .list(&owned)
            .await
            .ok()?;
        let deploy = deployments.get_opt("shop").await.ok()?;
        let svc = Api::<Service>::namespaced(client.clone(), &ns)
            .get_opt("shop")
            .await
            .ok()?;
        (config_maps.items.is_empty() && deploy.is_none() && svc.is_none()).then_some(())
    })
    .await;
    operator.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configmap_and_introspected_schema_changes_recompose() {
    let shop = shop("gw-sources").await;
    let ns = shop.ns.name().to_owned();
    let client = shop.client.clone();
    let operator = Operator::start(&client, &ns);
    create(&shop.gateways, &shop_gateway()).await;
    let first = wait_for("first supergraph", WAIT, || served_hash(&client, &ns)).await;

    // The scale subresource drives the Deployment; a PodDisruptionBudget comes and goes
    // with the spec.
    shop.gateways
        .patch_scale(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "replicas": 3 } })),
        )
        .await
        .expect("scale gateway");
    shop.gateways
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "podDisruptionBudget": { "maxUnavailable": 1 } } })),
        )
        .await
        .expect("add pdb");
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), &ns);
    wait_for("3 replicas and a PDB", WAIT, || async {
        let d = Api::<Deployment>::namespaced(client.clone(), &ns)
            .get("shop")
            .await
            .ok()?;
        let pdb = pdbs.get_opt("shop").await.ok()??;
        (d.spec?.replicas == Some(3) && pdb.spec?.max_unavailable.is_some()).then_some(())
    })
    .await;
    let scale = shop.gateways.get_scale("shop").await.expect("scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(3));
    shop.gateways
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "podDisruptionBudget": null } })),
        )
        .await
        .expect("remove pdb");
    wait_for("PDB removed", WAIT, || async {
        pdbs.get_opt("shop").await.ok()?.is_none().then_some(())
    })
    .await;

    // The reviews SDL lives in a ConfigMap: editing it recomposes.
    let reviews = fixture_sdl("reviews").replace("body: String", "body: String\n  rating: Int");
    Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .patch(
            "reviews-sdl",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "schema.graphql": reviews } })),
        )
        .await
        .expect("patch reviews ConfigMap");
    let edited = wait_for("recomposed after ConfigMap edit", WAIT, || async {
        served_hash(&client, &ns).await.filter(|h| *h != first)
    })
    .await;
    let (_, sdl) = served_supergraph(&client, &ns).await.expect("served");
    assert!(sdl.contains("rating"));

    // The Subgraph reconciler reports the loaded schema's hash.
    let sg = wait_for("products SchemaLoaded", WAIT, || async {
        let sg = shop.subgraphs.get("products").await.ok()?;
        let status = sg.status.clone()?;
        status
            .conditions
            .iter()
            .any(|c| c.type_ == "SchemaLoaded" && c.status == "True")
            .then_some(status)
    })
    .await;
    assert_eq!(
        sg.schema_hash,
        Some(resources::short_hash(fixture_sdl("products").as_bytes()))
    );

    // Deleting a Subgraph recomposes without it.
    shop.subgraphs
        .delete("reviews", &DeleteParams::default())
        .await
        .expect("delete reviews");
    let second = wait_for("recomposed without reviews", WAIT, || async {
        let (hash, sdl) = served_supergraph(&client, &ns).await?;
        (!sdl.contains("REVIEWS")).then_some(hash)
    })
    .await;
    assert_ne!(second, edited);

    // An unreachable introspected subgraph fails composition cleanly (SubgraphUnavailable)
    // and keeps serving the last good supergraph.
    shop.subgraphs
        .patch(
            "products",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "url": "http://127.0.0.1:9/graphql" } })),
        )
        .await
        .expect("patch url");
    let gw = wait_for("SubgraphUnavailable", WAIT, || async {
        let gw = shop.gateways.get("shop").await.ok()?;
        (condition(&gw, "Composed")? == ("False".to_owned(), "SubgraphUnavailable".to_owned()))
            .then_some(gw)
    })
    .await;
    assert_eq!(gw.status.and_then(|s| s.supergraph_hash), Some(second));
    operator.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_and_restarted_operator_converges() {
    let shop = shop("gw-restart").await;
    let ns = shop.ns.name().to_owned();
    let client = shop.client.clone();
    let operator = Operator::start(&client, &ns);
    create(&shop.gateways, &shop_gateway()).await;
    let first = wait_for("first supergraph", WAIT, || served_hash(&client, &ns)).await;
    // Killed midway: the rollout has not been observed as Ready yet.
    operator.kill();

    // Changes while no operator runs, including damage to an owned object.
    let changed =
        fixture_sdl("accounts").replace("username: String", "username: String\n  nickname: String");
    set_inline_sdl(&shop.subgraphs, "accounts", &changed).await;
    // The kill may have come before the Service was applied; either way it is gone now.
    match Api::<Service>::namespaced(client.clone(), &ns)
        .delete("shop", &DeleteParams::default())
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => panic!("delete service: {e}"),
    }

    let operator = Operator::start(&client, &ns);
    let second = wait_for("converged supergraph", WAIT, || async {
        served_hash(&client, &ns).await.filter(|h| *h != first)
    })
    .await;
    wait_ready(&shop.gateways, &second).await;
    wait_for("Service repaired", WAIT, || async {
        Api::<Service>::namespaced(client.clone(), &ns)
            .get_opt("shop")
            .await
            .ok()?
    })
    .await;
    // Owned-object drift is repaired too: scale the Deployment behind the operator's back.
    Api::<Deployment>::namespaced(client.clone(), &ns)
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "replicas": 5 } })),
        )
        .await
        .expect("scale deployment");
    wait_for("replicas restored", WAIT, || async {
        let d = Api::<Deployment>::namespaced(client.clone(), &ns)
            .get("shop")
            .await
            .ok()?;
        (d.spec?.replicas == Some(2)).then_some(())
    })
    .await;
    operator.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_specs_are_rejected_by_the_api_server() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "gw-invalid").await;
    let subgraphs: Api<Subgraph> = Api::namespaced(client.clone(), ns.name());
    let gateways: Api<GraphGateway> = Api::namespaced(client.clone(), ns.name());
    let both = subgraph(
        "both",
        json!({ "url": "http://a/graphql", "sdl": "type Query { a: Int }", "configMapRef": { "name": "x", "key": "y" } }),
    );
    let msg = rejected_with(subgraphs.create(&PostParams::default(), &both).await);
    assert!(msg.contains("at most one schema source"), "{msg}");

    let ftp = subgraph("ftp", json!({ "url": "ftp://example.com/graphql" }));
    let msg = rejected_with(subgraphs.create(&PostParams::default(), &ftp).await);
    assert!(msg.contains("http:// or https://"), "{msg}");

    let negative = gateway("neg", json!({ "replicas": -1 }));
    let msg = rejected_with(gateways.create(&PostParams::default(), &negative).await);
    assert!(msg.contains("spec.replicas"), "{msg}");

    let scaling = gateway(
        "hpa",
        json!({ "autoscaling": { "minReplicas": 5, "maxReplicas": 2 } }),
    );
    let msg = rejected_with(gateways.create(&PostParams::default(), &scaling).await);
    assert!(
        msg.contains("maxReplicas must be >= autoscaling.minReplicas"),
        "{msg}"
    );

    let pdb = gateway(
        "pdb",
        json!({ "podDisruptionBudget": { "minAvailable": 1, "maxUnavailable": 1 } }),
    );
    let msg = rejected_with(gateways.create(&PostParams::default(), &pdb).await);
    assert!(
        msg.contains("exactly one of minAvailable or maxUnavailable"),
        "{msg}"
    );

    // The operator's labels select the pods; GRAPHFLEET_* variables would override the
    // config it checked.
    let selector_label = gateway(
        "labels",
        json!({ "podLabels": { "app.kubernetes.io/instance": "other" } }),
    );
    let msg = rejected_with(
        gateways
            .create(&PostParams::default(), &selector_label)
            .await,
    );
    assert!(
        msg.contains("podLabels may not set the operator's labels"),
        "{msg}"
    );
    let settings_env = gateway(
        "env",
        json!({ "env": [{ "name": "GRAPHFLEET_ADMIN__LISTEN", "value": "0.0.0.0:1" }] }),
    );
    let msg = rejected_with(gateways.create(&PostParams::default(), &settings_env).await);
    assert!(
        msg.contains("env may not set GRAPHFLEET_* variables"),
        "{msg}"
    );
    let knobs: GraphGateway = serde_yaml_ng::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/gateways/knobs.yaml"
        ))
        .expect("the knobs fixture"),
    )
    .expect("a GraphGateway");
    let mut knobs = knobs;
    knobs.metadata.namespace = None;
    knobs.metadata.uid = None;
    gateways
        .create(&PostParams::default(), &knobs)
        .await
        .expect("every fleet knob is valid");

    let ws_over_http = gateway(
        "subs",
        json!({ "config": { "subgraphs": { "reviews": { "subscription": { "url": "http://reviews/graphql" } } } } }),
    );
    let msg = rejected_with(gateways.create(&PostParams::default(), &ws_over_http).await);
    assert!(
        msg.contains("ws:// or wss:// for protocol websocket"),
        "{msg}"
    );
    let relative = gateway(
        "wspath",
        json!({ "config": { "subscriptions": { "websocket_path": "ws" } } }),
    );
    let msg = rejected_with(gateways.create(&PostParams::default(), &relative).await);
    assert!(msg.contains("websocket_path"), "{msg}");
    let sse = gateway(
        "sse",
        json!({ "config": { "subscriptions": { "websocket_path": "/ws" }, "subgraphs": { "reviews": { "subscription": { "protocol": "sse", "url": "http://reviews/graphql/stream" } } } } }),
    );
    gateways
        .create(&PostParams::default(), &sse)
        .await
        .expect("an SSE subgraph with an http:// URL is valid");

    let loadtests: Api<LoadTest> = Api::namespaced(client.clone(), ns.name());
    let both: LoadTest = serde_json::from_value(json!({
        "metadata": { "name": "both" },
        "spec": { "target": { "url": "http://gw/graphql" }, "scenario": "query", "script": { "inline": "export default () => {}" }, "rate": 100, "duration": "30s" },
    }))
    .expect("LoadTest object");
    let msg = rejected_with(loadtests.create(&PostParams::default(), &both).await);
    assert!(msg.contains("exactly one of scenario or script"), "{msg}");
    let good: LoadTest = serde_json::from_value(json!({
        "metadata": { "name": "good" },
        "spec": { "target": { "gatewayRef": { "name": "ok" } }, "scenario": "query", "rate": 100, "duration": "1m30s" },
    }))
    .expect("LoadTest object");
    let good = loadtests
        .create(&PostParams::default(), &good)
        .await
        .expect("valid LoadTest");
    assert_eq!(good.spec.parallelism, 1);

    // And a valid one is accepted with defaults filled in.
    let ok = gateways
        .create(&PostParams::default(), &gateway("ok", json!({})))
        .await
        .expect("valid gateway");
    assert_eq!(ok.spec.replicas, 1);
}

/// The API server's message for a request it must reject as invalid (422).
fn rejected_with<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 422, "{e:?}");
            e.message
        }
        other => panic!("expected a 422 rejection, got {other:?}"),
    }
}

fn report(what: &str, samples: &mut [Duration]) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "MEASURED {what}: min {:.0} ms, median {:.0} ms, max {:.0} ms ({} samples)",
        ms(samples[0]),
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() - 1]),
        samples.len()
    );
}

/// `spec.delivery.checks.breakingChanges: Block` keeps a composition that removes a field
/// clients can select from the pods, says which field, and lets it through once the
/// revision is allowed by annotation; an additive change goes through at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn breaking_changes_are_blocked_before_any_pod_changes() {
    let shop = shop("gw-checks").await;
    let ns = shop.ns.name().to_owned();
    let client = shop.client.clone();
    let operator = Operator::start(&client, &ns);
    let mut gw = shop_gateway();
    let placement = (gw.spec.node_selector.clone(), gw.spec.tolerations.clone());
    gw.spec = serde_json::from_value(json!({
        "subgraphSelector": { "matchLabels": { "graph": "shop" } },
        "replicas": 2,
        "delivery": { "checks": { "breakingChanges": "Block" } },
    }))
    .expect("a valid spec");
    (gw.spec.node_selector, gw.spec.tolerations) = placement;
    create(&shop.gateways, &gw).await;
    let first = wait_for("first supergraph", WAIT, || served_hash(&client, &ns)).await;

    // Additive: served.
    let added =
        fixture_sdl("accounts").replace("username: String", "username: String\n  nickname: String");
    set_inline_sdl(&shop.subgraphs, "accounts", &added).await;
    let second = wait_for("an additive change served", WAIT, || async {
        served_hash(&client, &ns).await.filter(|h| *h != first)
    })
    .await;

    // Breaking: User.username removed; the served revision stays and status says why.
    let removed = added.replace("  username: String\n", "");
    set_inline_sdl(&shop.subgraphs, "accounts", &removed).await;
    let blocked = wait_for("BreakingChangesBlocked", WAIT, || async {
        let gw = shop.gateways.get("shop").await.ok()?;
        (condition(&gw, "Composed")?.1 == "BreakingChangesBlocked").then_some(gw)
    })
    .await;
    let status = blocked.status.clone().expect("status");
    assert_eq!(status.supergraph_hash.as_deref(), Some(second.as_str()));
    assert!(
        status.composition_errors[0]
            .message
            .starts_with("User.username:"),
        "{:?}",
        status.composition_errors
    );
    let newest = &status.revisions[0];
    assert_eq!(newest.outcome, graphfleet_api::RevisionOutcome::Blocked);
    assert!(newest.breaking_changes[0].starts_with("User.username:"));
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let template_hash = || async {
        let d = deployments.get("shop").await.ok()?;
        let annotations = d.spec?.template.metadata?.annotations?;
        annotations
            .get(resources::gateway::SUPERGRAPH_HASH_ANNOTATION)
            .cloned()
    };
    assert_eq!(
        template_hash().await,
        Some(second.clone()),
        "no pod changed"
    );

    // Allowed once by annotation: served.
    shop.gateways
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": {
                graphfleet_api::ALLOW_BREAKING_ANNOTATION: newest.hash,
            } } })),
        )
        .await
        .expect("allow the revision");
    wait_for("the allowed revision served", WAIT, || async {
        (template_hash().await.as_ref() == Some(&newest.hash)).then_some(())
    })
    .await;
    operator.stop().await;
}
