//! `helm install` / `helm uninstall` of the chart on the local control plane: the
//! operator lands on the pool the values pick and becomes available, its ServiceAccount
//! gets exactly the rights it needs (asked of the API server's authorizer), and uninstall
//! removes everything the release created except the CRDs.

use std::time::Duration;

use graphfleet_deploy_tests::{
    Access, CRD_NAMES, Cleanup, ObjectRef, TestNamespace, chart_dir, cluster, documents,
    eventually, exists, helm_on_cluster, pool_placement_values, run_ok, service_account_can,
    unique_name, write_temp,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams};

const TIMEOUT: Duration = Duration::from_secs(120);

/// `helm install` (waiting for readiness); returns helm's output (with NOTES).
fn install(release: &str, namespace: &str, values: &str) -> String {
    let values = write_temp(values);
    run_ok(
        helm_on_cluster()
            .args(["install", release])
            .arg(chart_dir())
            .args(["--namespace", namespace, "--wait", "--timeout", "120s"])
            .arg("--values")
            .arg(values.path()),
        None,
    )
}

fn uninstall(release: &str, namespace: &str) {
    run_ok(
        helm_on_cluster()
            .args(["uninstall", release, "--namespace", namespace])
            .args(["--wait", "--timeout", "120s"]),
        None,
    );
}

/// What the release created, as helm recorded it.
fn release_objects(release: &str, namespace: &str) -> Vec<ObjectRef> {
    let manifest = run_ok(
        helm_on_cluster().args(["get", "manifest", release, "--namespace", namespace]),
        None,
    );
    documents(&manifest)
        .iter()
        .map(|doc| {
            let mut object = ObjectRef::of(doc);
            // Helm installs namespaced objects without a namespace into the release namespace.
            if object.namespace.is_none()
                && !matches!(object.kind.as_str(), "ClusterRole" | "ClusterRoleBinding")
            {
                object.namespace = Some(namespace.to_owned());
            }
            object
        })
        .collect()
}

/// Waits until the operator Deployment is available; returns its pods.
async fn wait_available(client: &kube::Client, namespace: &str, name: &str) -> Vec<Pod> {
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace);
    let deployment = eventually(&format!("deployment {name} available"), TIMEOUT, || {
        let deployments = deployments.clone();
        async move {
            let d = deployments.get(name).await.map_err(|e| e.to_string())?;
            let status = d.status.clone().unwrap_or_default();
            let available = status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Available" && c.status == "True");
            if available && status.available_replicas == Some(1) {
                Ok(d)
            } else {
                Err(format!("{status:?}"))
            }
        }
    })
    .await;
    let selector = deployment
        .spec
        .and_then(|s| s.selector.match_labels)
        .expect("deployment selects by labels")
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&ListParams::default().labels(&selector))
        .await
        .expect("list operator pods")
        .items
}

fn check_notes(output: &str, release: &str, namespace: &str) {
    let notes = output
        .split("NOTES:")
        .nth(1)
        .unwrap_or_else(|| panic!("helm install printed no NOTES:\n{output}"));
    for expected in [
        format!("kubectl -n {namespace} rollout status deployment/{release}-graphfleet"),
        "manifests/fed-subgraphs.yaml".to_owned(),
        "manifests/graphgateway.yaml".to_owned(),
        "get subgraphs,graphgateways -w".to_owned(),
        "keeps the CRDs".to_owned(),
    ] {
        assert!(
            notes.contains(&expected),
            "NOTES lack {expected:?}:\n{notes}"
        );
    }
    for word in notes.split_whitespace() {
        if let Some(path) = word.strip_prefix("manifests/") {
            assert!(
                graphfleet_deploy_tests::manifests_dir()
                    .join(path)
                    .is_file(),
                "NOTES mention missing manifests/{path}"
            );
        }
    }
}

#[tokio::test]
async fn helm_install_runs_the_operator_on_the_chosen_pool_and_uninstall_keeps_only_crds() {
    let cluster = cluster();
    let client = cluster.client().await;
    let ns = TestNamespace::create(&client, "helm-install").await;
    let other = TestNamespace::create(&client, "helm-other").await;
    let release = unique_name("gfi");
    let _cleanup = Cleanup::helm_release(&release, ns.name());
    let pool = "subgraph";

    let output = install(
        &release,
        ns.name(),
        &format!("{}logLevel: debug\n", pool_placement_values(pool)),
    );
    check_notes(&output, &release, ns.name());

    let fullname = format!("{release}-graphfleet");
    let pods = wait_available(&client, ns.name(), &fullname).await;
    assert_eq!(pods.len(), 1, "one operator pod");
    let node = pods[0].spec.as_ref().and_then(|s| s.node_name.clone());
    assert_eq!(
        node.as_deref(),
        Some("subgraph-0"),
        "operator pod on the {pool} pool"
    );

    // The CRDs are there (installed by this release or already present).
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    for name in CRD_NAMES {
        assert!(
            crds.get_opt(name).await.expect("get CRD").is_some(),
            "CRD {name} missing after install"
        );
    }

    // Least privilege, as the authorizer sees it (cluster-wide install).
    let sa = fullname.as_str();
    for allowed in [
        Access::new("list", "graphfleet.dev", "graphgateways"),
        Access::new("watch", "graphfleet.dev", "subgraphs"),
        Access::new("patch", "graphfleet.dev", "graphgateways")
            .subresource("status")
            .in_namespace(other.name()),
        Access::new("patch", "apps", "deployments").in_namespace(other.name()),
        Access::new("create", "", "configmaps").in_namespace(other.name()),
        Access::new("delete", "autoscaling", "horizontalpodautoscalers").in_namespace(other.name()),
        Access::new("create", "events.k8s.io", "events").in_namespace(other.name()),
        Access::new("create", "coordination.k8s.io", "leases").in_namespace(ns.name()),
        Access::new("update", "coordination.k8s.io", "leases")
            .in_namespace(ns.name())
            .named(sa),
    ] {
        let ok = service_account_can(&client, ns.name(), sa, allowed).await;
        assert!(ok, "operator should be allowed: {allowed:?}");
    }
    for denied in [
        Access::new("delete", "graphfleet.dev", "graphgateways").in_namespace(other.name()),
        Access::new("patch", "graphfleet.dev", "subgraphs").in_namespace(other.name()),
        Access::new("get", "", "secrets").in_namespace(other.name()),
        Access::new("list", "", "secrets"),
        Access::new("create", "", "pods").in_namespace(other.name()),
        Access::new("list", "", "nodes"),
        Access::new(
            "create",
            "apiextensions.k8s.io",
            "customresourcedefinitions",
        ),
        Access::new("create", "coordination.k8s.io", "leases").in_namespace(other.name()),
        Access::new("update", "coordination.k8s.io", "leases")
            .in_namespace(ns.name())
            .named("someone-elses"),
        Access::new("create", "rbac.authorization.k8s.io", "rolebindings")
            .in_namespace(other.name()),
        Access::new("delete", "apps", "deployments").in_namespace(other.name()),
        Access::new("update", "graphfleet.dev", "graphgateways")
            .subresource("status")
            .in_namespace(other.name()),
    ] {
        let ok = service_account_can(&client, ns.name(), sa, denied).await;
        assert!(!ok, "operator must not be allowed: {denied:?}");
    }

    // Uninstall: everything helm recorded goes, the operator pod too, the CRDs stay.
    let created = release_objects(&release, ns.name());
    let kinds: Vec<&str> = created.iter().map(|o| o.kind.as_str()).collect();
    for kind in [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Service",
        "Deployment",
    ] {
        assert!(
            kinds.contains(&kind),
            "release created no {kind}: {kinds:?}"
        );
    }
    assert!(
        !kinds.contains(&"CustomResourceDefinition"),
        "CRDs belong in crds/, not templates"
    );
    for object in &created {
        assert!(
            exists(&client, object).await,
            "{object} missing after install"
        );
    }
    uninstall(&release, ns.name());
    for object in &created {
        eventually(&format!("{object} deleted"), TIMEOUT, || async {
            if exists(&client, object).await {
                Err("still there".to_owned())
            } else {
                Ok(())
            }
        })
        .await;
    }
    let pods = Api::<Pod>::namespaced(client.clone(), ns.name());
    eventually("operator pods deleted", TIMEOUT, || async {
        let left = pods
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items;
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{} pods left", left.len()))
        }
    })
    .await;
    for name in CRD_NAMES {
        let crd = crds.get_opt(name).await.expect("get CRD");
        assert!(
            crd.is_some_and(|c| c.metadata.deletion_timestamp.is_none()),
            "CRD {name} must survive helm uninstall"
        );
    }
    let releases = run_ok(
        helm_on_cluster().args(["list", "--short", "--all", "--namespace", ns.name()]),
        None,
    );
    assert!(releases.trim().is_empty(), "releases left: {releases}");

    other.delete(&client).await;
    ns.delete(&client).await;
}

#[tokio::test]
async fn helm_install_with_watch_namespaces_grants_rights_only_there() {
    let cluster = cluster();
    let client = cluster.client().await;
    let ns = TestNamespace::create(&client, "helm-scoped").await;
    let team = TestNamespace::create(&client, "helm-team").await;
    let outside = TestNamespace::create(&client, "helm-outside").await;
    let release = unique_name("gfs");
    let _cleanup = Cleanup::helm_release(&release, ns.name());
    let values = format!(
        "{}watchNamespaces: [{}]\n",
        pool_placement_values("router"),
        team.name()
    );
    install(&release, ns.name(), &values);
    let fullname = format!("{release}-graphfleet");
    let pods = wait_available(&client, ns.name(), &fullname).await;
    let node = pods[0].spec.as_ref().and_then(|s| s.node_name.clone());
    assert_eq!(node.as_deref(), Some("router-0"));

    let sa = fullname.as_str();
    {
        let watched = team.name();
        for access in [
            Access::new("watch", "graphfleet.dev", "graphgateways").in_namespace(watched),
            Access::new("patch", "apps", "deployments").in_namespace(watched),
            Access::new("create", "events.k8s.io", "events").in_namespace(watched),
        ] {
            assert!(
                service_account_can(&client, ns.name(), sa, access).await,
                "{access:?}"
            );
        }
    }
    for access in [
        Access::new("list", "graphfleet.dev", "graphgateways"),
        Access::new("list", "graphfleet.dev", "graphgateways").in_namespace(outside.name()),
        Access::new("patch", "apps", "deployments").in_namespace(outside.name()),
        Access::new("list", "graphfleet.dev", "subgraphs").in_namespace(ns.name()),
    ] {
        assert!(
            !service_account_can(&client, ns.name(), sa, access).await,
            "must be denied: {access:?}"
        );
    }
    assert!(
        service_account_can(
            &client,
            ns.name(),
            sa,
            Access::new("get", "coordination.k8s.io", "leases")
                .in_namespace(ns.name())
                .named(sa)
        )
        .await,
        "leader election still works in the release namespace"
    );

    let created = release_objects(&release, ns.name());
    let roles: Vec<String> = created
        .iter()
        .filter(|o| o.kind == "Role")
        .map(|o| o.to_string())
        .collect();
    assert_eq!(
        roles.len(),
        2,
        "the watched namespace + leader election: {roles:?}"
    );
    uninstall(&release, ns.name());
    for object in &created {
        eventually(&format!("{object} deleted"), TIMEOUT, || async {
            if exists(&client, object).await {
                Err("still there".to_owned())
            } else {
                Ok(())
            }
        })
        .await;
    }
    for namespace in [ns, team, outside] {
        namespace.delete(&client).await;
    }
}
