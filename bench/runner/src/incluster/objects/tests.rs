use super::*;
use crate::gateway::Gateway;

#[test]
fn names_are_dns_labels() {
    assert_eq!(dns_label("gw-Hive_Router"), "gw-hive-router");
    assert_eq!(dns_label("1abc"), "x1abc");
    assert_eq!(dns_label(&"a".repeat(80)).len(), 63);
    assert_eq!(
        subgraph_service("big-response", "sub0"),
        "sg-big-response-sub0"
    );
    assert_eq!(fleet_name("many-plans"), "bench-many-plans");
}

#[test]
fn each_subgraph_is_a_resource_naming_its_service_with_the_committed_sdl() {
    for set in graphfleet_bench_model::sets::ALL {
        for def in set.subgraphs() {
            let sg = subgraph_resource(set.name(), def, "bench");
            assert_eq!(sg.metadata.name.as_deref(), Some(def.name));
            assert_eq!(
                sg.spec.url,
                format!(
                    "http://sg-{}-{}.bench.svc.cluster.local:4200/{}",
                    set.name(),
                    def.name,
                    def.name
                )
            );
            assert_eq!(sg.spec.sdl.as_deref(), Some(def.sdl));
            let labels = sg.metadata.labels.as_ref().expect("labels");
            assert_eq!(labels[SET_LABEL], set.name());
            assert_eq!(labels[MANAGED_BY.0], MANAGED_BY.1);
        }
    }
}

#[test]
fn the_graph_gateway_selects_its_set_on_the_router_pool_with_a_guaranteed_budget() {
    let alone = Budget {
        cpus: 1.0,
        memory: "1Gi".into(),
        gateways: 1,
    };
    let gw = graph_gateway(
        "fed",
        "bench",
        "ghcr.io/graphfleet/graphfleet-gateway:0.1.0",
        &alone,
    );
    assert_eq!(gw.metadata.name.as_deref(), Some("bench-fed"));
    let spec = &gw.spec;
    let selector = spec.subgraph_selector.as_ref().expect("selector");
    assert_eq!(
        selector.match_labels.as_ref().expect("labels")[SET_LABEL],
        "fed"
    );
    assert_eq!(spec.replicas, 1);
    assert_eq!(
        spec.image.as_deref(),
        Some("ghcr.io/graphfleet/graphfleet-gateway:0.1.0")
    );
    let r = spec.resources.as_ref().expect("resources");
    assert_eq!(r.requests, r.limits);
    assert_eq!(r.limits.as_ref().expect("limits")["cpu"].0, "1");
    assert_eq!(
        spec.node_selector.as_ref().expect("selector")[POOL_LABEL],
        "router"
    );
    let t = &spec.tolerations.as_ref().expect("tolerations")[0];
    assert_eq!(
        (t.value.as_deref(), t.effect.as_deref()),
        (Some("router"), Some("NoSchedule"))
    );
    // The gateway's defaults, as the host mode runs it.
    assert!(spec.config.0.is_empty(), "{:?}", spec.config);
}

#[test]
fn a_peer_serves_the_fleets_supergraph_from_its_image() {
    let hive = Gateway::built_in("hive-router").expect("gw");
    let c = peer_container(&hive, Some("localhost/hive:1"), 1).expect("hive");
    assert_eq!(c.image, "localhost/hive:1");
    assert!(c.env.contains(&("PORT".into(), "4000".into())));
    assert!(c.env.contains(&(
        "SUPERGRAPH_FILE_PATH".into(),
        "/etc/graphfleet/supergraph.graphql".into()
    )));
    assert!(peer_container(&hive, None, 1).is_err());
    let node = Gateway::built_in("hive-gateway").expect("gw");
    let err = peer_container(&node, None, 1).expect_err("node");
    assert!(err.starts_with("not available in-cluster"), "{err}");
    let ours = Gateway::built_in("graphfleet").expect("gw");
    assert!(peer_container(&ours, None, 1).is_err(), "a GraphGateway");

    let three = Budget {
        cpus: 1.5,
        memory: "1Gi".into(),
        gateways: 3,
    };
    let d = peer_deployment(
        "hive-router",
        "bench",
        &c,
        "bench-fed-supergraph-abc",
        &three,
    );
    assert_eq!(d.metadata.name.as_deref(), Some("gw-hive-router"));
    let spec = d.spec.as_ref().expect("spec");
    let pod = spec.template.spec.as_ref().expect("pod");
    assert_eq!(
        pod.node_selector.as_ref().expect("selector")[POOL_LABEL],
        "router"
    );
    let container = &pod.containers[0];
    assert_eq!(container.image.as_deref(), Some("localhost/hive:1"));
    // The budget is the limit; the request is its share, so three fit beside each other.
    let r = container.resources.as_ref().expect("resources");
    assert_eq!(r.limits.as_ref().expect("limits")["cpu"].0, "1500m");
    assert_eq!(r.requests.as_ref().expect("requests")["cpu"].0, "500m");
    assert_eq!(r.requests.as_ref().expect("requests")["memory"].0, "1Gi");
    let volume = pod
        .volumes
        .as_ref()
        .expect("volumes")
        .iter()
        .find(|v| v.name == "supergraph")
        .and_then(|v| v.config_map.as_ref())
        .expect("the revision ConfigMap");
    assert_eq!(volume.name, "bench-fed-supergraph-abc");
    let labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone());
    assert_eq!(spec.selector.match_labels, labels);
    let svc = gateway_svc("hive-router", "bench");
    assert_eq!(svc.spec.as_ref().expect("spec").selector, labels);
    assert_eq!(
        gateway_url("hive-router", "bench", "/graphql"),
        "http://gw-hive-router.bench.svc.cluster.local:4000/graphql"
    );
    assert_eq!(cpu_quantity(1.0), "1");
}

#[test]
fn the_load_test_checks_each_target_against_its_answer() {
    let small = br#"{"data":{"a":1}}"#.to_vec();
    let big = vec![b'x'; MAX_EXPECTED_IN_CONFIGMAP];
    let targets = [
        TargetRun {
            name: "graphfleet".into(),
            gateway_ref: Some("bench-fed".into()),
            url: None,
            sha256: "a".repeat(64),
            answer: small.clone(),
        },
        TargetRun {
            name: "hive-router".into(),
            gateway_ref: None,
            url: Some("http://gw-hive-router.bench.svc.cluster.local:4000/graphql".into()),
            sha256: "b".repeat(64),
            answer: big,
        },
    ];
    let run = LoadRun {
        name: "bench-query",
        scenario: "query",
        rate: 100,
        duration_s: 20,
        vus: 10,
        max_vus: 100,
    };
    let (cm, lt) = run.build("bench", &targets);
    // The second answer no longer fits beside the first: checked by its hash alone.
    let data = cm.data.as_ref().expect("data");
    assert_eq!(data.keys().collect::<Vec<_>>(), ["graphfleet.json"]);
    assert_eq!(data["graphfleet.json"].as_bytes(), small);
    assert_eq!(cm.metadata.name.as_deref(), Some("bench-query-answers"));
    let spec = &lt.spec;
    assert_eq!(
        (spec.scenario.as_deref(), spec.rate, spec.duration.as_str()),
        (Some("query"), 100, "20s")
    );
    assert_eq!(
        (spec.vus, spec.max_vus, spec.parallelism),
        (Some(10), Some(100), 1)
    );
    let t = spec.targets.as_ref().expect("targets");
    assert_eq!(
        t[0].gateway_ref.as_ref().map(|g| g.name.as_str()),
        Some("bench-fed")
    );
    let e0 = t[0].expect.as_ref().expect("expect");
    assert_eq!(e0.sha256, "a".repeat(64));
    let r = e0.config_map_ref.as_ref().expect("the answer");
    assert_eq!(
        (r.name.as_str(), r.key.as_str()),
        ("bench-query-answers", "graphfleet.json")
    );
    assert_eq!(t[1].url.as_deref(), targets[1].url.as_deref());
    let e1 = t[1].expect.as_ref().expect("expect");
    assert_eq!(
        (e1.sha256.as_str(), e1.config_map_ref.is_none()),
        ("b".repeat(64).as_str(), true)
    );
    assert!(spec.expect.is_none(), "each target has its own");
    // k6 on the client pool: the operator sets no pool of its own.
    let placement = spec.placement.as_ref().expect("placement");
    assert_eq!(
        placement.node_selector.as_ref().expect("selector")[POOL_LABEL],
        "client"
    );
    let toleration = &placement.tolerations.as_ref().expect("tolerations")[0];
    assert_eq!(toleration.value.as_deref(), Some("client"));
    // Every scenario the runner sends to the cluster is one the operator knows.
    for set in graphfleet_bench_model::sets::ALL {
        for (name, _) in set.scenarios() {
            assert!(
                graphfleet_bench_model::scenarios::find(name).is_some(),
                "{name}"
            );
        }
    }
}
