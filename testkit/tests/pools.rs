//! The local cluster's node pools: a Deployment that selects and tolerates a pool
//! lands only on that pool's node and rolls out; one that does not tolerate any pool
//! taint is never scheduled.

use std::time::{Duration, Instant};

use graphfleet_testkit::{POOL_LABEL, POOLS, TestNamespace, cluster};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};

const ROLLOUT_TIMEOUT: Duration = Duration::from_secs(60);

fn deployment(name: &str, replicas: i32, pool: Option<&str>) -> Deployment {
    let mut pod_spec = serde_json::json!({
        "containers": [{ "name": "app", "image": "registry.k8s.io/pause:3.10" }]
    });
    if let Some(pool) = pool {
        pod_spec["nodeSelector"] = serde_json::json!({ POOL_LABEL: pool });
        pod_spec["tolerations"] = serde_json::json!([{
            "key": POOL_LABEL, "operator": "Equal", "value": pool, "effect": "NoSchedule"
        }]);
    }
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": { "metadata": { "labels": { "app": name } }, "spec": pod_spec }
        }
    }))
    .expect("deployment object")
}

/// Polls until the Deployment's rollout is complete, like `kubectl rollout status`.
async fn wait_rollout(api: &Api<Deployment>, name: &str) {
    let start = Instant::now();
    loop {
        let d = api.get(name).await.expect("get deployment");
        let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let status = d.status.unwrap_or_default();
        let generation = d.metadata.generation.unwrap_or(0);
        if status.observed_generation.unwrap_or(0) >= generation
            && status.updated_replicas.unwrap_or(0) == want
            && status.available_replicas.unwrap_or(0) == want
            && status.replicas.unwrap_or(0) == want
        {
            return;
        }
        assert!(
            start.elapsed() < ROLLOUT_TIMEOUT,
            "deployment {name} did not roll out within {ROLLOUT_TIMEOUT:?}: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn pods_of(api: &Api<Pod>, app: &str) -> Vec<Pod> {
    api.list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .expect("list pods")
        .items
}

#[tokio::test]
async fn each_pool_receives_exactly_the_pods_that_select_and_tolerate_it() {
    let client = cluster().client().await;
    let ns = TestNamespace::create(&client, "pools").await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns.name());
    let pods = Api::<Pod>::namespaced(client.clone(), ns.name());

    for pool in POOLS {
        let name = format!("on-{pool}");
        deployments
            .create(&PostParams::default(), &deployment(&name, 3, Some(pool)))
            .await
            .expect("create deployment");
    }
    for pool in POOLS {
        let name = format!("on-{pool}");
        wait_rollout(&deployments, &name).await;
        let placed = pods_of(&pods, &name).await;
        assert_eq!(placed.len(), 3, "{name}: expected 3 pods");
        for pod in &placed {
            let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
            assert_eq!(
                node.as_deref(),
                Some(format!("{pool}-0").as_str()),
                "pod {:?} of {name} must be on the {pool} node",
                pod.metadata.name
            );
            let phase = pod.status.as_ref().and_then(|s| s.phase.clone());
            assert_eq!(phase.as_deref(), Some("Running"));
        }
    }
    ns.delete(&client).await;
}

#[tokio::test]
async fn pods_that_tolerate_no_pool_are_not_scheduled() {
    let client = cluster().client().await;
    let ns = TestNamespace::create(&client, "untolerated").await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns.name());
    let pods = Api::<Pod>::namespaced(client.clone(), ns.name());
    deployments
        .create(&PostParams::default(), &deployment("nowhere", 2, None))
        .await
        .expect("create deployment");

    // Wait for the scheduler's verdict: every pod Unschedulable, none bound to a node.
    let start = Instant::now();
    loop {
        let list = pods_of(&pods, "nowhere").await;
        let verdicts: Vec<Option<String>> = list
            .iter()
            .map(|pod| {
                let conditions = pod.status.as_ref().and_then(|s| s.conditions.clone());
                conditions
                    .unwrap_or_default()
                    .into_iter()
                    .find(|c| c.type_ == "PodScheduled")
                    .and_then(|c| c.reason)
            })
            .collect();
        for pod in &list {
            assert_eq!(pod.spec.as_ref().and_then(|s| s.node_name.clone()), None);
        }
        if list.len() == 2
            && verdicts
                .iter()
                .all(|r| r.as_deref() == Some("Unschedulable"))
        {
            break;
        }
        assert!(
            start.elapsed() < ROLLOUT_TIMEOUT,
            "pods were not reported Unschedulable: {verdicts:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    ns.delete(&client).await;
}
