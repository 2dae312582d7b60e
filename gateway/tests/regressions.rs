//! Wrong answers found beyond the audit's own cases (issue 14), each as its minimal
//! operation: `tests/regressions/<suite>--<what>.graphql` runs against that audit suite's
//! strict subgraphs, and `<same>.json` holds `{"suite", "variables"?, "data", "errors",
//! "error_paths"?, "requests"?}`: the expected data (the reference gateway's answer where it
//! follows the spec), whether errors come back, their exact paths, and how many subgraph
//! requests the plan may make at most.

mod support;

use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn tests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Why the answer to `case` is wrong, if it is.
async fn check(case: &Path) -> Option<String> {
    let expected: Value =
        serde_json::from_str(&read(&case.with_extension("json"))).expect("the expectation is JSON");
    let suite = expected["suite"]
        .as_str()
        .expect("\"suite\" names an audit suite");
    let dir = tests_dir().join("audit").join(suite);
    let subgraphs = support::json_subgraph::start_suite(&dir).await;
    let text =
        read(&dir.join("supergraph.graphql")).replace("http://127.0.0.1:4200", &subgraphs.base_url);
    let supergraph = Supergraph::parse(&text).expect("the suite's supergraph loads");
    let gateway = support::start_gateway(supergraph).await;
    let variables = expected.get("variables").cloned().unwrap_or(json!({}));
    let reply = support::post_graphql(&support::client(), &gateway, &read(case), variables).await;
    let body: Value = serde_json::from_slice(&reply.body).expect("the gateway answers JSON");
    let mut wrong = Vec::new();
    if body.get("data") != expected.get("data") {
        wrong.push(format!(
            "data {} expected {}",
            body["data"], expected["data"]
        ));
    }
    let errors = body["errors"].as_array().cloned().unwrap_or_default();
    if Some(!errors.is_empty()) != expected["errors"].as_bool() {
        wrong.push(format!("errors: {}", body["errors"]));
    }
    if let Some(paths) = expected.get("error_paths") {
        let got: Vec<Value> = errors.iter().map(|e| e["path"].clone()).collect();
        if Some(&got) != paths.as_array() {
            wrong.push(format!("error paths {got:?} expected {paths}"));
        }
    }
    if let Some(max) = expected["requests"].as_u64() {
        let made: u64 = subgraphs.counts().values().sum();
        if made > max {
            wrong.push(format!("{made} subgraph requests, at most {max} needed"));
        }
    }
    (!wrong.is_empty()).then(|| wrong.join("; "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minimal_examples_answer_right() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(tests_dir().join("regressions"))
        .expect("tests/regressions exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "graphql"))
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "no regression cases found");
    let mut failures = Vec::new();
    for case in &cases {
        if let Some(why) = check(case).await {
            let name = case.file_stem().expect("case name").to_string_lossy();
            failures.push(format!("{name}: {why}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} wrong:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
