//! Every scenario of every benchmark set: the gateway's response over real HTTP is
//! byte-equal to the set's monolith oracle.

mod support;

use graphfleet_bench_model::{Set, sets::ALL};
use graphfleet_bench_subgraphs::{Mode, Options, spawn};
use graphfleet_gateway::supergraph::Supergraph;
use std::path::PathBuf;

fn set_dir(set: Set) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../bench/sets")
        .join(set.name())
}

/// `(scenario, query, variables)` of a set, sorted by name.
fn scenarios(set: Set) -> Vec<(String, String, serde_json::Value)> {
    let dir = set_dir(set).join("queries");
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("set has a queries directory")
        .map(|e| e.expect("readable dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "graphql"))
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_stem()
            .expect("file name")
            .to_string_lossy()
            .to_string();
        let query = std::fs::read_to_string(&path).expect("readable query");
        let vars_path = dir.join(format!("{name}.variables.json"));
        let variables = std::fs::read_to_string(&vars_path)
            .map(|t| serde_json::from_str(&t).expect("variables file is JSON"))
            .unwrap_or(serde_json::json!({}));
        out.push((name, query, variables));
    }
    out
}

async fn check_set(set: Set) {
    let listen = || async {
        tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback")
    };
    let subgraphs =
        spawn(set, Mode::Subgraphs, listen().await, Options::default()).expect("subgraphs start");
    let monolith =
        spawn(set, Mode::Monolith, listen().await, Options::default()).expect("monolith starts");
    let text = set
        .supergraph()
        .replace("http://127.0.0.1:4200", &subgraphs.base_url());
    let supergraph = Supergraph::parse(&text).expect("set supergraph loads");
    let gateway = support::start_gateway(supergraph).await;
    let client = support::client();
    let oracle = format!("{}/graphql", monolith.base_url());
    let scenarios = scenarios(set);
    assert!(!scenarios.is_empty(), "set {} has no scenarios", set.name());
    for (name, query, variables) in scenarios {
        // Subscriptions need a streaming transport; tests/subscriptions.rs compares their
        // events with the monolith's.
        if query.trim_start().starts_with("subscription") {
            continue;
        }
        let expected = support::post_graphql(&client, &oracle, &query, variables.clone()).await;
        let actual = support::post_graphql(&client, &gateway, &query, variables).await;
        assert_eq!(expected.status, 200, "oracle failed on {name}");
        assert_eq!(
            actual.status,
            200,
            "gateway status on {}/{name}",
            set.name()
        );
        if expected.body != actual.body {
            let e = String::from_utf8_lossy(&expected.body);
            let a = String::from_utf8_lossy(&actual.body);
            let at = e
                .bytes()
                .zip(a.bytes())
                .position(|(x, y)| x != y)
                .unwrap_or(e.len().min(a.len()));
            panic!(
                "{}/{name}: gateway differs from the monolith at byte {at} (lengths {} vs {})\n oracle: …{}…\ngateway: …{}…",
                set.name(),
                e.len(),
                a.len(),
                &e[at.saturating_sub(200)..(at + 200).min(e.len())],
                &a[at.saturating_sub(200)..(at + 200).min(a.len())],
            );
        }
    }
}

/// The plan of every scenario, snapshotted (plans are deterministic).
#[test]
fn set_plans() {
    for set in ALL {
        let supergraph = Supergraph::parse(set.supergraph()).expect("set supergraph loads");
        for (name, query, _) in scenarios(set) {
            let plan = graphfleet_gateway::plan_text(&supergraph, &query, None)
                .unwrap_or_else(|e| panic!("{}/{name} does not plan: {e}", set.name()));
            insta::assert_snapshot!(format!("{}__{name}", set.name()), plan);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fed_set_matches_monolith() {
    check_set(Set::Fed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_sets_match_monolith() {
    for set in ALL.into_iter().filter(|s| *s != Set::Fed) {
        check_set(set).await;
    }
}
