//! The chart without Helm on the cluster: `helm template` output (cluster-wide and
//! single-namespace variants) is accepted by `kubectl apply --dry-run=server`, applies
//! cleanly and idempotently, the operator rolls out on the chosen pool, and `kubectl
//! delete` removes it again (including the cluster-scoped RBAC).

use std::time::Duration;

use graphfleet_deploy_tests::{
    Cleanup, ObjectRef, TestNamespace, cluster, documents, ensure_crds, eventually, exists,
    pool_placement_values, run_ok, template, unique_name,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

const TIMEOUT: Duration = Duration::from_secs(120);

fn kubectl(args: &[&str], stdin: &str) -> String {
    run_ok(
        cluster().kubectl().args(args).args(["-f", "-"]),
        Some(stdin),
    )
}

async fn apply_and_remove(rendered: &str, namespace: &str, pool: &str) {
    let _cleanup = Cleanup::objects(rendered);
    let client = cluster().client().await;
    let objects: Vec<ObjectRef> = documents(rendered).iter().map(ObjectRef::of).collect();
    assert!(
        objects.iter().any(|o| o.kind == "Deployment"),
        "{objects:?}"
    );

    let dry = kubectl(&["apply", "--dry-run=server"], rendered);
    assert_eq!(
        dry.matches("(server dry run)").count(),
        objects.len(),
        "{dry}"
    );
    for object in &objects {
        assert!(!exists(&client, object).await, "dry run created {object}");
    }

    let applied = kubectl(&["apply"], rendered);
    assert!(
        applied.lines().all(|l| l.ends_with(" created")),
        "{applied}"
    );
    for object in &objects {
        assert!(
            exists(&client, object).await,
            "{object} missing after apply"
        );
    }
    let again = kubectl(&["apply"], rendered);
    assert!(
        again.lines().all(|l| l.ends_with(" unchanged")),
        "re-apply changed objects:\n{again}"
    );

    let deployment = objects
        .iter()
        .find(|o| o.kind == "Deployment")
        .expect("operator Deployment");
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace);
    eventually("operator deployment available", TIMEOUT, || {
        let deployments = deployments.clone();
        async move {
            let status = deployments
                .get(&deployment.name)
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
    })
    .await;
    let pods = Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&ListParams::default().labels("app.kubernetes.io/component=operator"))
        .await
        .expect("list pods");
    assert_eq!(pods.items.len(), 1);
    let node = pods.items[0]
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone());
    assert_eq!(node, Some(format!("{pool}-0")));

    kubectl(&["delete", "--wait=true", "--timeout=120s"], rendered);
    for object in &objects {
        eventually(&format!("{object} deleted"), TIMEOUT, || async {
            if exists(&client, object).await {
                Err("still there".to_owned())
            } else {
                Ok(())
            }
        })
        .await;
    }
}

#[tokio::test]
async fn cluster_wide_template_applies_and_runs_on_the_client_pool() {
    ensure_crds();
    let client = cluster().client().await;
    let ns = TestNamespace::create(&client, "template-wide").await;
    let release = unique_name("gft");
    let rendered = template(&release, ns.name(), &pool_placement_values("client"));
    let kinds: Vec<String> = documents(&rendered)
        .iter()
        .map(|d| ObjectRef::of(d).kind)
        .collect();
    assert!(kinds.contains(&"ClusterRole".to_owned()), "{kinds:?}");
    apply_and_remove(&rendered, ns.name(), "client").await;
    ns.delete(&client).await;
}

#[tokio::test]
async fn single_namespace_template_applies_with_a_role_in_the_watched_namespace() {
    ensure_crds();
    let client = cluster().client().await;
    let ns = TestNamespace::create(&client, "template-ns").await;
    let watched = TestNamespace::create(&client, "template-watched").await;
    let release = unique_name("gfn");
    let values = format!(
        "{}watchNamespaces: [{}]\nmetrics:\n  port: 9102\n",
        pool_placement_values("router"),
        watched.name()
    );
    let rendered = template(&release, ns.name(), &values);
    let roles: Vec<ObjectRef> = documents(&rendered)
        .iter()
        .map(ObjectRef::of)
        .filter(|o| o.kind == "Role")
        .collect();
    assert!(
        roles
            .iter()
            .any(|r| r.namespace.as_deref() == Some(watched.name())),
        "{roles:?}"
    );
    apply_and_remove(&rendered, ns.name(), "router").await;
    watched.delete(&client).await;
    ns.delete(&client).await;
}
