use super::*;
use crate::gateway::Gateway;
use crate::k6::Check;
use k8s_openapi::api::core::v1::Pod;
use std::collections::BTreeMap;

const FED: &str = include_str!("../../../../sets/fed/supergraph.graphql");

#[test]
fn the_supergraph_points_at_the_subgraph_services() {
    assert_eq!(
        subgraph_names(FED),
        ["accounts", "inventory", "products", "reviews"]
    );
    let text = rewrite_supergraph(FED, "fed", "bench");
    assert!(
        text.contains(r#"url: "http://sg-fed-accounts.bench.svc.cluster.local:4200/accounts")"#),
        "{text}"
    );
    assert!(!text.contains("127.0.0.1"), "{text}");
    // The rest of the supergraph is untouched.
    assert_eq!(
        text.lines().count(),
        FED.lines().count(),
        "only URLs change"
    );
    let many = include_str!("../../../../sets/many-plans/supergraph.graphql");
    assert_eq!(subgraph_names(many).len(), 7);
}

#[test]
fn names_are_dns_labels() {
    assert_eq!(dns_label("gw-Hive_Router"), "gw-hive-router");
    assert_eq!(dns_label("1abc"), "x1abc");
    assert_eq!(dns_label(&"a".repeat(80)).len(), 63);
    assert_eq!(
        subgraph_service("big-response", "sub0"),
        "sg-big-response-sub0"
    );
}

#[test]
fn the_gateway_pod_is_guaranteed_on_the_router_pool() {
    let images = Images::defaults("0.1.0");
    let gw = Gateway::built_in("graphfleet").expect("gw");
    let c = gateway_container(&gw, &images, None, 1).expect("container");
    let pod = gateway_pod("graphfleet", "bench", &c, "supergraph-fed", 1.0, "1Gi");
    let spec = pod.spec.as_ref().expect("spec");
    assert_eq!(pod.metadata.name.as_deref(), Some("gw-graphfleet"));
    assert_eq!(
        spec.node_selector.as_ref().expect("selector")[POOL_LABEL],
        "router"
    );
    let t = &spec.tolerations.as_ref().expect("tolerations")[0];
    assert_eq!(
        (t.value.as_deref(), t.effect.as_deref()),
        (Some("router"), Some("NoSchedule"))
    );
    let container = &spec.containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some("ghcr.io/graphfleet/graphfleet-gateway:0.1.0")
    );
    assert_eq!(container.image_pull_policy.as_deref(), Some("Never"));
    let r = container.resources.as_ref().expect("resources");
    assert_eq!(r.requests, r.limits);
    assert_eq!(r.limits.as_ref().expect("limits")["cpu"].0, "1");
    assert_eq!(
        container.args.as_ref().expect("args"),
        &[
            "--supergraph",
            "/etc/graphfleet/supergraph.graphql",
            "--listen",
            "0.0.0.0:4000"
        ]
    );
    let svc = gateway_svc("graphfleet", "bench");
    assert_eq!(
        svc.spec.as_ref().expect("spec").selector,
        pod.metadata.labels
    );
    assert_eq!(
        gateway_url("graphfleet", "bench", "/graphql"),
        "http://gw-graphfleet.bench.svc.cluster.local:4000/graphql"
    );
    assert_eq!(cpu_quantity(1.5), "1500m");
}

#[test]
fn peers_run_from_their_images_and_node_peers_do_not_run() {
    let images = Images::defaults("0.1.0");
    let hive = Gateway::built_in("hive-router").expect("gw");
    let c = gateway_container(&hive, &images, Some("localhost/hive:1"), 1).expect("hive");
    assert_eq!(c.image, "localhost/hive:1");
    assert!(c.env.contains(&("PORT".into(), "4000".into())));
    assert!(c.env.contains(&(
        "SUPERGRAPH_FILE_PATH".into(),
        "/etc/graphfleet/supergraph.graphql".into()
    )));
    assert!(gateway_container(&hive, &images, None, 1).is_err());
    let node = Gateway::built_in("hive-gateway").expect("gw");
    let err = gateway_container(&node, &images, None, 1).expect_err("node");
    assert!(err.starts_with("not available in-cluster"), "{err}");
}

#[test]
fn the_k6_job_runs_the_scenario_on_the_client_pool() {
    let run = K6Run {
        url: gateway_url("graphfleet", "bench", "/graphql"),
        check: Check::Length,
        expected_len: 87_000,
        expected_sha256: "ab".into(),
        expected_file: true,
        rate: 100,
        vus: 10,
        max_vus: 100,
        duration_s: 20,
        unique: Some(4321),
    };
    let job = k6_job(
        "k6-query-graphfleet",
        "bench",
        "k6:1",
        "k6-query-graphfleet",
        &run,
    );
    let spec = job.spec.as_ref().expect("spec");
    assert_eq!(spec.backoff_limit, Some(0));
    let pod = spec.template.spec.as_ref().expect("pod");
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert_eq!(
        pod.node_selector.as_ref().expect("sel")[POOL_LABEL],
        "client"
    );
    let c = &pod.containers[0];
    let env: BTreeMap<&str, &str> = c
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.as_str(), e.value.as_deref().unwrap_or_default()))
        .collect();
    assert_eq!(
        env["GF_URL"],
        "http://gw-graphfleet.bench.svc.cluster.local:4000/graphql"
    );
    assert_eq!(env["GF_CHECK"], "length");
    assert_eq!(env["GF_EXPECTED_LEN"], "87000");
    assert_eq!(env["GF_RATE"], "100");
    assert_eq!(env["GF_DURATION"], "20s");
    assert_eq!(env["GF_UNIQUE"], "4321");
    assert_eq!(env["GF_SUMMARY"], "/dev/termination-log");
    assert_eq!(env["GF_PAYLOAD"], "/etc/graphfleet/bench/payload.json");
    assert_eq!(
        env["GF_EXPECTED_FILE"],
        "/etc/graphfleet/bench/expected.json"
    );
    assert_eq!(c.termination_message_policy.as_deref(), Some("File"));
    assert_eq!(
        c.args.as_ref().expect("args").last().map(String::as_str),
        Some(K6_SCRIPT)
    );
    // A big answer stays out of the ConfigMap.
    let big = "x".repeat(MAX_EXPECTED_IN_CONFIGMAP + 1);
    let cm = k6_config_map("k6", "bench", "{}", Some(&big));
    assert!(
        !cm.data
            .as_ref()
            .expect("data")
            .contains_key("expected.json")
    );
}

#[test]
fn reads_the_summary_from_the_terminated_k6_container() {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "status": {"containerStatuses": [{
            "name": "k6", "image": "k6", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {
                "exitCode": 0, "message": "{\"requests\": 10}",
                "startedAt": "2025-11-23T21:00:00Z", "finishedAt": "2025-11-23T21:00:31Z"
            }}
        }]}
    }))
    .expect("pod");
    assert_eq!(
        k6_end(&pod),
        K6End::Done {
            message: "{\"requests\": 10}".into(),
            exit_code: 0,
            started: Some(1_763_931_600.0),
            finished: Some(1_763_931_631.0),
        }
    );
    assert_eq!(k6_end(&Pod::default()), K6End::Running);
}
