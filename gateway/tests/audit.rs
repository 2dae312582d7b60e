//! Federation conformance cases: each `tests/audit/<suite>/` holds subgraph SDLs, the
//! oracle-composed `supergraph.graphql`, a `data.json` for the JSON-backed subgraphs
//! (see `support/json_subgraph.rs`) and `cases/<n>.graphql` with `cases/<n>.json`, the
//! expected result: `{"data": ..., "errors": true|false}`.
//!
//! Judged as a client would: `data` must be equal (object key order aside); `errors`,
//! when given as a boolean, says whether the response must carry errors, and when left
//! out the errors are not judged. Cases the gateway does not pass yet are listed in
//! `tests/audit/KNOWN_FAILURES` (`suite/case  reason`); a listed case that passes fails
//! the test too, so the list stays true. `GRAPHFLEET_AUDIT_SUITES=a,b` runs only those
//! suites (and judges only their listed failures).

mod support;

use graphfleet_gateway::supergraph::Supergraph;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn audit_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/audit")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// `suite/case` of every listed known failure.
fn known_failures() -> BTreeSet<String> {
    read(&audit_dir().join("KNOWN_FAILURES"))
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap_or("").to_owned())
        .collect()
}

/// `suite/case` → subgraph requests of the reference plan (`REFERENCE_REQUESTS`).
fn reference_requests() -> BTreeMap<String, u64> {
    read(&audit_dir().join("REFERENCE_REQUESTS"))
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (id, n) = l.split_once(char::is_whitespace).expect("`suite/case  n`");
            (id.to_owned(), n.trim().parse().expect("a request count"))
        })
        .collect()
}

/// Subgraph requests made for the audit cases that have a reference count.
#[derive(Default)]
struct RequestTally {
    cases: usize,
    ours: u64,
    reference: u64,
    fewer: usize,
    more: usize,
}

/// Why `response` does not meet `expected`, if it does not.
fn judge(expected: &Value, response: &Value) -> Option<String> {
    let want = expected.get("data").cloned().unwrap_or(Value::Null);
    let got = response.get("data").cloned().unwrap_or(Value::Null);
    if want != got {
        return Some(format!(
            "data differs\n  expected: {want}\n  received: {got}"
        ));
    }
    let has_errors = response
        .get("errors")
        .and_then(Value::as_array)
        .is_some_and(|e| !e.is_empty());
    match expected.get("errors").and_then(Value::as_bool) {
        Some(want) if want != has_errors => Some(format!(
            "expected errors: {want}, received: {}",
            response.get("errors").unwrap_or(&Value::Null)
        )),
        _ => None,
    }
}

/// Run every case of one suite; returns `(case id, failure)` for each failing case.
async fn run_suite(
    dir: &Path,
    reference: &BTreeMap<String, u64>,
    tally: &mut RequestTally,
) -> Vec<(String, String)> {
    let suite = dir
        .file_name()
        .expect("suite name")
        .to_string_lossy()
        .to_string();
    let subgraphs = support::json_subgraph::start_suite(dir).await;
    let text =
        read(&dir.join("supergraph.graphql")).replace("http://127.0.0.1:4200", &subgraphs.base_url);
    let supergraph = match Supergraph::parse(&text) {
        Ok(s) => s,
        Err(e) => return vec![(format!("{suite}/*"), format!("supergraph rejected: {e}"))],
    };
    let gateway = support::start_gateway(supergraph).await;
    let client = support::client();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir.join("cases"))
        .unwrap_or_else(|e| panic!("{suite} has cases/: {e}"))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "graphql"))
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "{suite} has no cases");
    let mut failures = Vec::new();
    for case in cases {
        let id = format!(
            "{suite}/{}",
            case.file_stem().expect("case name").to_string_lossy()
        );
        let query = read(&case);
        let expected: Value = serde_json::from_str(&read(&case.with_extension("json")))
            .expect("expected result is JSON");
        let before: u64 = subgraphs.counts().values().sum();
        let reply = support::post_graphql(&client, &gateway, &query, serde_json::json!({})).await;
        let requests = subgraphs.counts().values().sum::<u64>() - before;
        let too_many = reference.get(&id).and_then(|&min| {
            tally.cases += 1;
            tally.ours += requests;
            tally.reference += min;
            tally.fewer += usize::from(requests < min);
            tally.more += usize::from(requests > min);
            (requests > min).then(|| {
                format!("{requests} subgraph requests where the reference plan makes {min}")
            })
        });
        let failure = match serde_json::from_slice::<Value>(&reply.body) {
            // A case expecting no data (a supergraph that cannot serve the operation)
            // is a request error by design: the response invariants assume execution.
            Ok(response) => judge(&expected, &response).or_else(|| {
                expected
                    .get("data")
                    .is_some_and(|d| !d.is_null())
                    .then(|| support::invariants::audit_case(&text, &query, &reply.body))
                    .flatten()
            }),
            Err(e) => Some(format!("status {}: body is not JSON: {e}", reply.status)),
        };
        if let Some(why) = failure.or(too_many) {
            failures.push((id, why));
        }
    }
    if let Ok(dump) = std::env::var("GRAPHFLEET_AUDIT_DUMP") {
        dump_exchanges(Path::new(&dump), &suite, &subgraphs);
    }
    failures
}

/// Writes `<suite>.jsonl`: each subgraph request with its answer, in arrival order
/// (`GRAPHFLEET_AUDIT_DUMP=<dir>`, to compare the subgraphs with other servers).
fn dump_exchanges(dir: &Path, suite: &str, subgraphs: &support::json_subgraph::JsonSubgraphs) {
    std::fs::create_dir_all(dir).expect("create the dump directory");
    let replies = subgraphs.replies.lock().expect("replies lock").clone();
    let lines: String = replies
        .iter()
        .map(|(name, request, reply)| {
            let line =
                serde_json::json!({ "subgraph": name, "request": request, "response": reply });
            format!("{line}\n")
        })
        .collect();
    std::fs::write(dir.join(format!("{suite}.jsonl")), lines).expect("write the dump");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn federation_audit_cases() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(audit_dir())
        .expect("tests/audit exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.join("supergraph.graphql").exists())
        .collect();
    dirs.sort();
    let only = std::env::var("GRAPHFLEET_AUDIT_SUITES").ok();
    let only: Option<BTreeSet<&str>> = only
        .as_deref()
        .map(|s| s.split(',').map(str::trim).collect());
    let in_scope = |suite: &str| only.as_ref().is_none_or(|o| o.contains(suite));
    dirs.retain(|d| in_scope(&d.file_name().expect("suite name").to_string_lossy()));
    assert!(!dirs.is_empty(), "no audit suites found");
    let reference = reference_requests();
    let mut tally = RequestTally::default();
    let mut failures = Vec::new();
    for dir in &dirs {
        failures.extend(run_suite(dir, &reference, &mut tally).await);
    }
    eprintln!(
        "subgraph requests over {} cases with a reference: {} (reference plans {}); fewer on {}, more on {}",
        tally.cases, tally.ours, tally.reference, tally.fewer, tally.more
    );
    let mut known = known_failures();
    known.retain(|id| in_scope(id.split('/').next().unwrap_or("")));
    let failed: BTreeSet<String> = failures.iter().map(|(id, _)| id.clone()).collect();
    let mut report = String::new();
    for (id, why) in &failures {
        if !known.contains(id) {
            report.push_str(&format!("FAILED {id}: {why}\n"));
        }
    }
    for id in known.difference(&failed) {
        report.push_str(&format!(
            "PASSES {id}: listed in KNOWN_FAILURES; remove it\n"
        ));
    }
    assert!(report.is_empty(), "{} suites checked\n{report}", dirs.len());
}
