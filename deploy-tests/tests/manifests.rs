//! `manifests/`: the kind cluster config has the three pools; the fed subgraphs, the
//! GraphGateway and the LoadTest agree with each other and with `bench/sets/fed`; and
//! every Kubernetes manifest is accepted by `kubectl apply --dry-run=server`, then applies
//! cleanly (and idempotently) into a test namespace, the subgraphs landing on their pool.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use graphfleet_deploy_tests::{
    ObjectRef, POOL_LABEL, POOLS, TestNamespace, app_version, by_kind, cluster, documents,
    ensure_crds, eventually, exists, manifests_dir, read, run_ok, workspace_root, yaml_files,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

const KIND_CONFIG: &str = "kind-cluster.yaml";

fn manifest(name: &str) -> Vec<Value> {
    documents(&read(&manifests_dir().join(name)))
}

/// Every manifest that is a Kubernetes API object stream (all but the kind config).
fn kubernetes_manifests() -> Vec<PathBuf> {
    let files: Vec<PathBuf> = yaml_files(&manifests_dir())
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != KIND_CONFIG))
        .collect();
    assert!(files.len() >= 3, "manifests/ is missing files: {files:?}");
    for file in &files {
        for doc in documents(&read(file)) {
            let object = ObjectRef::of(&doc);
            assert!(
                !object.api_version.starts_with("kind.x-k8s.io"),
                "{} holds a kind config; only {KIND_CONFIG} may",
                file.display()
            );
            assert!(
                object.namespace.is_none(),
                "{object} in {} pins a namespace; manifests are applied with -n",
                file.display()
            );
        }
    }
    files
}

fn tolerates(pod_spec: &Value, pool: &str) -> bool {
    pod_spec["tolerations"].as_array().is_some_and(|ts| {
        ts.iter().any(|t| {
            t["key"] == POOL_LABEL
                && t["value"] == pool
                && t["effect"] == "NoSchedule"
                && t["operator"] != "Exists"
        })
    })
}

fn on_pool(pod_spec: &Value, pool: &str) -> bool {
    pod_spec["nodeSelector"][POOL_LABEL] == pool && tolerates(pod_spec, pool)
}

#[test]
fn kind_config_has_the_three_pools_labelled_and_tainted() {
    let config = manifest(KIND_CONFIG);
    assert_eq!(config.len(), 1, "one kind Cluster document");
    let config = &config[0];
    assert_eq!(config["kind"], "Cluster");
    assert_eq!(config["apiVersion"], "kind.x-k8s.io/v1alpha4");
    let nodes = config["nodes"].as_array().expect("nodes");
    let allowed_roles = ["control-plane", "worker"];
    for node in nodes {
        let role = node["role"].as_str().expect("every node has a role");
        assert!(allowed_roles.contains(&role), "unknown role {role}");
    }
    let control_planes: Vec<&Value> = nodes
        .iter()
        .filter(|n| n["role"] == "control-plane")
        .collect();
    assert_eq!(control_planes.len(), 1);
    assert!(
        control_planes[0].get("labels").is_none(),
        "the control plane is in no pool"
    );

    let workers: Vec<&Value> = nodes.iter().filter(|n| n["role"] == "worker").collect();
    assert!(
        workers
            .iter()
            .any(|w| w.get("labels").is_none() && w.get("kubeadmConfigPatches").is_none()),
        "an untainted worker hosts pods without a pool (the operator)"
    );
    for pool in POOLS {
        let in_pool: Vec<&&Value> = workers
            .iter()
            .filter(|w| w["labels"][POOL_LABEL] == pool)
            .collect();
        assert_eq!(in_pool.len(), 1, "exactly one {pool} worker");
        let worker = in_pool[0];
        let patches = worker["kubeadmConfigPatches"]
            .as_array()
            .unwrap_or_else(|| panic!("{pool} worker has no kubeadmConfigPatches"));
        let taints: Vec<Value> = patches
            .iter()
            .map(|p| {
                let text = p.as_str().expect("a kubeadm patch is a YAML string");
                serde_yaml_ng::from_str::<Value>(text).expect("the kubeadm patch is YAML")
            })
            .filter(|p| p["kind"] == "JoinConfiguration")
            .flat_map(|p| {
                p["nodeRegistration"]["taints"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(
            taints,
            [json!({"key": POOL_LABEL, "value": pool, "effect": "NoSchedule"})],
            "{pool} worker taint"
        );
    }
}

#[test]
fn fed_subgraph_manifests_serve_the_fed_set() {
    let docs = manifest("fed-subgraphs.yaml");
    let rover: Value = serde_yaml_ng::from_str(&read(
        &workspace_root().join("bench/sets/fed/supergraph.yaml"),
    ))
    .expect("supergraph.yaml");
    let set: BTreeSet<String> = rover["subgraphs"]
        .as_object()
        .expect("subgraphs")
        .keys()
        .cloned()
        .collect();
    assert_eq!(set.len(), 4, "the classic four subgraphs");
    let subgraphs = by_kind(&docs, "Subgraph");
    let services = by_kind(&docs, "Service");
    let deployments = by_kind(&docs, "Deployment");
    let config_maps = by_kind(&docs, "ConfigMap");
    assert_eq!(subgraphs.keys().cloned().collect::<BTreeSet<_>>(), set);
    assert_eq!(services.keys().cloned().collect::<BTreeSet<_>>(), set);
    assert_eq!(deployments.keys().cloned().collect::<BTreeSet<_>>(), set);

    let image = format!("ghcr.io/graphfleet/graphfleet-subgraphs:{}", app_version());
    for name in &set {
        let subgraph = subgraphs[name];
        assert_eq!(subgraph["apiVersion"], "graphfleet.dev/v1alpha1");
        // url: http://<service>:<port>/<subgraph>, the path the server serves it at.
        let url = subgraph["spec"]["url"].as_str().expect("url");
        let rest = url.strip_prefix("http://").expect("http url");
        let (authority, path) = rest.split_once('/').expect("url with a path");
        let (host, port) = authority.split_once(':').expect("url with a port");
        assert_eq!(path, name.as_str(), "{name} is served at /{name}");
        let service = services
            .get(host)
            .unwrap_or_else(|| panic!("{url}: no Service {host}"));
        let service_port = &service["spec"]["ports"][0];
        assert_eq!(
            service_port["port"].to_string(),
            port,
            "{url}: Service port"
        );

        // The SDL the Subgraph reads is the set's SDL.
        let reference = &subgraph["spec"]["configMapRef"];
        let config_map = config_maps
            .get(reference["name"].as_str().expect("configMapRef.name"))
            .unwrap_or_else(|| panic!("{name}: configMapRef names a ConfigMap not in the file"));
        let key = reference["key"].as_str().expect("configMapRef.key");
        let sdl_file = format!("bench/sets/fed/{name}.graphql");
        assert!(
            config_map["data"][key].as_str()
                == Some(read(&workspace_root().join(&sdl_file)).as_str()),
            "manifests/fed-subgraphs.yaml ConfigMap key {key} differs from {sdl_file}; copy the file into it"
        );

        // The Service reaches this subgraph's Deployment, which runs the set on the subgraph pool.
        let deployment = deployments[name.as_str()];
        let template = &deployment["spec"]["template"];
        let selector = service["spec"]["selector"].as_object().expect("selector");
        for (k, v) in selector {
            assert_eq!(
                &template["metadata"]["labels"][k], v,
                "{name}: Service selects {k}={v}"
            );
        }
        let pod = &template["spec"];
        assert!(
            on_pool(pod, "subgraph"),
            "{name} selects and tolerates the subgraph pool"
        );
        let container = &pod["containers"][0];
        assert_eq!(container["image"], image.as_str());
        let args: Vec<&str> = container["args"]
            .as_array()
            .expect("args")
            .iter()
            .map(|a| a.as_str().expect("string arg"))
            .collect();
        let listen = args
            .windows(2)
            .find(|w| w[0] == "--listen")
            .map(|w| w[1])
            .expect("--listen");
        assert!(args.windows(2).any(|w| w == ["--set", "fed"]), "{args:?}");
        let container_port = &container["ports"][0];
        assert_eq!(
            listen,
            format!("0.0.0.0:{}", container_port["containerPort"])
        );
        assert_eq!(service_port["targetPort"], container_port["name"]);
    }
}

#[test]
fn graph_gateway_selects_the_fed_subgraphs_on_the_router_pool_with_one_cpu() {
    let docs = manifest("graphgateway.yaml");
    let gateways = by_kind(&docs, "GraphGateway");
    assert_eq!(gateways.len(), 1);
    let gateway = gateways.values().next().expect("one GraphGateway");
    let spec = &gateway["spec"];
    assert_eq!(spec["resources"]["limits"]["cpu"], "1");
    assert!(on_pool(spec, "router"), "router pool: {spec}");
    assert_eq!(
        spec["image"],
        format!("ghcr.io/graphfleet/graphfleet-gateway:{}", app_version()).as_str()
    );
    let wanted = spec["subgraphSelector"]["matchLabels"]
        .as_object()
        .expect("matchLabels");
    let subgraphs = manifest("fed-subgraphs.yaml");
    let selected = by_kind(&subgraphs, "Subgraph")
        .into_iter()
        .filter(|(_, sg)| {
            wanted
                .iter()
                .all(|(k, v)| &sg["metadata"]["labels"][k] == v)
        })
        .count();
    assert_eq!(selected, 4, "the selector picks all four fed subgraphs");
}

#[test]
fn load_test_targets_the_gateway_from_the_client_pool() {
    let docs = manifest("loadtest.yaml");
    let tests = by_kind(&docs, "LoadTest");
    assert_eq!(tests.len(), 1);
    let spec = &tests.values().next().expect("one LoadTest")["spec"];
    let gateway = manifest("graphgateway.yaml");
    let gateway_name = ObjectRef::of(&gateway[0]).name;
    assert_eq!(spec["target"]["gatewayRef"]["name"], gateway_name.as_str());
    assert!(on_pool(&spec["placement"], "client"), "client pool: {spec}");
    let scenario = spec["scenario"].as_str().expect("a built-in scenario");
    let query = Path::new("bench/sets/fed/queries").join(format!("{scenario}.graphql"));
    assert!(
        workspace_root().join(&query).is_file(),
        "scenario {scenario}: {} missing",
        query.display()
    );
}

fn kubectl_ok(args: &[&str], files: &[PathBuf]) -> String {
    let mut cmd = cluster().kubectl();
    cmd.args(args);
    for file in files {
        cmd.arg("-f").arg(file);
    }
    run_ok(&mut cmd, None)
}

#[tokio::test]
async fn every_manifest_is_accepted_by_the_server_and_applies_cleanly() {
    let files = kubernetes_manifests();
    let client = cluster().client().await;
    ensure_crds();
    let ns = TestNamespace::create(&client, "manifests").await;

    let objects: Vec<ObjectRef> = files
        .iter()
        .flat_map(|f| documents(&read(f)))
        .map(|doc| ObjectRef {
            namespace: Some(ns.name().to_owned()),
            ..ObjectRef::of(&doc)
        })
        .collect();
    for file in &files {
        let out = kubectl_ok(
            &["apply", "--dry-run=server", "-n", ns.name()],
            std::slice::from_ref(file),
        );
        assert!(out.contains("(server dry run)"), "{out}");
    }
    for object in &objects {
        assert!(!exists(&client, object).await, "dry run created {object}");
    }

    let out = kubectl_ok(&["apply", "-n", ns.name()], &files);
    assert_eq!(
        out.lines().count(),
        objects.len(),
        "one line per object:\n{out}"
    );
    for object in &objects {
        assert!(
            exists(&client, object).await,
            "{object} missing after apply"
        );
    }
    let again = kubectl_ok(&["apply", "-n", ns.name()], &files);
    for line in again.lines() {
        assert!(
            line.ends_with(" unchanged"),
            "re-applying changed something: {line}"
        );
    }

    // The subgraphs run on the subgraph pool.
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns.name());
    let pods = Api::<Pod>::namespaced(client.clone(), ns.name());
    for name in ["accounts", "inventory", "products", "reviews"] {
        eventually(
            &format!("{name} available"),
            Duration::from_secs(120),
            || {
                let deployments = deployments.clone();
                async move {
                    let status = deployments
                        .get(name)
                        .await
                        .map_err(|e| e.to_string())?
                        .status
                        .unwrap_or_default();
                    if status.available_replicas == Some(1) {
                        Ok(())
                    } else {
                        Err(format!("{status:?}"))
                    }
                }
            },
        )
        .await;
        let listed = pods
            .list(&ListParams::default().labels(&format!("app.kubernetes.io/instance={name}")))
            .await
            .expect("list pods");
        assert!(!listed.items.is_empty(), "{name} has pods");
        for pod in listed.items {
            let node = pod.spec.and_then(|s| s.node_name);
            assert_eq!(node.as_deref(), Some("subgraph-0"), "{name} pod placement");
        }
    }
    ns.delete(&client).await;
}
