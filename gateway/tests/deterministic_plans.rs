//! Planning is deterministic (issue 34): the same operation over the same supergraph
//! always gives the same plan. Every audit case and fixture operation, and generated
//! operations over every audit suite, are planned several times, each over supergraphs
//! parsed apart (hash maps seeded apart); then a second process plans them all again in
//! the reverse order (other seeds, other cache states) and must print the same digest.
//! A plan decided by hash-map iteration order, or by what was planned before, fails here.

mod support;

use graphfleet_gateway::supergraph::Supergraph;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use support::opgen::{Generator, Hints};

/// Generated operations per audit suite, besides its own cases.
const GENERATED_PER_SUITE: usize = 60;
/// Supergraph parses per suite, and plans of each operation per parse.
const PARSES: usize = 3;
const PLANS_PER_PARSE: usize = 2;
/// Set in the child process: plan in the reverse order and print the digest.
const REVERSE_ENV: &str = "GRAPHFLEET_PLANS_REVERSED";

fn tests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn sorted_entries(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| keep(p))
        .collect();
    paths.sort();
    paths
}

/// A suite (audit suite or fixture): its supergraph and the operations to plan.
struct Suite {
    name: String,
    supergraph: String,
    operations: Vec<String>,
}

fn graphql_files(dir: &Path) -> Vec<String> {
    if !dir.is_dir() {
        return Vec::new();
    }
    sorted_entries(dir, |p| p.extension().is_some_and(|e| e == "graphql"))
        .iter()
        .map(|p| read(p))
        .collect()
}

fn suites() -> Vec<Suite> {
    let mut suites = Vec::new();
    let audit = tests_dir().join("audit");
    for dir in sorted_entries(&audit, |p| p.join("supergraph.graphql").is_file()) {
        let supergraph = read(&dir.join("supergraph.graphql"));
        let mut operations = graphql_files(&dir.join("cases"));
        let data: serde_json::Value =
            serde_json::from_str(&read(&dir.join("data.json"))).expect("data.json is JSON");
        let hints = Hints::from_data(&data);
        let schema = Supergraph::parse(&supergraph)
            .expect("the audit supergraph loads")
            .api_schema;
        let seed = file_name(&dir)
            .bytes()
            .fold(34_u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        let mut generator = Generator::new(&schema, &hints, seed);
        operations.extend((0..GENERATED_PER_SUITE).map(|_| generator.operation().query));
        suites.push(Suite {
            name: format!("audit/{}", file_name(&dir)),
            supergraph,
            operations,
        });
    }
    let fixtures = tests_dir().join("fixtures");
    for dir in sorted_entries(&fixtures, |p| p.join("supergraph.graphql").is_file()) {
        suites.push(Suite {
            name: format!("fixtures/{}", file_name(&dir)),
            supergraph: read(&dir.join("supergraph.graphql")),
            operations: graphql_files(&dir.join("operations")),
        });
    }
    suites
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .expect("a named entry")
        .to_string_lossy()
        .into_owned()
}

fn plan(supergraph: &Supergraph, query: &str) -> String {
    match graphfleet_gateway::plan_text(supergraph, query, None) {
        Ok(plan) => plan,
        Err(e) => format!("error: {e:#}"),
    }
}

/// Every suite's plans, each planned `PARSES × PLANS_PER_PARSE` times and checked equal,
/// in `reversed` order or not; the digest over (suite, operation, plan) in suite order.
fn plan_all(reversed: bool) -> (String, usize) {
    let mut suites = suites();
    if reversed {
        suites.reverse();
        for s in &mut suites {
            s.operations.reverse();
        }
    }
    let mut entries: Vec<(String, usize, String)> = Vec::new();
    let mut differing = Vec::new();
    for suite in &suites {
        let parsed: Vec<Supergraph> = (0..PARSES)
            .map(|_| Supergraph::parse(&suite.supergraph).expect("the supergraph loads"))
            .collect();
        let count = suite.operations.len();
        for (i, query) in suite.operations.iter().enumerate() {
            let index = if reversed { count - 1 - i } else { i };
            let first = plan(&parsed[0], query);
            let again = parsed
                .iter()
                .flat_map(|sg| (0..PLANS_PER_PARSE).map(move |_| plan(sg, query)))
                .find(|p| *p != first);
            if let Some(other) = again {
                differing.push(format!(
                    "{} operation {index}:\n{query}\nfirst:\n{first}\nlater:\n{other}",
                    suite.name
                ));
            }
            entries.push((suite.name.clone(), index, first));
        }
    }
    assert!(
        differing.is_empty(),
        "{} operations planned differently in one process:\n{}",
        differing.len(),
        differing.join("\n")
    );
    entries.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let mut hash = Sha256::new();
    for (suite, index, plan) in &entries {
        hash.update(format!("{suite}\n{index}\n{plan}\n").as_bytes());
    }
    let digest = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    (digest, entries.len())
}

#[test]
fn every_operation_always_gets_the_same_plan() {
    if std::env::var_os(REVERSE_ENV).is_some() {
        let (digest, count) = plan_all(true);
        println!("PLAN-DIGEST {digest} {count}");
        return;
    }
    let (digest, count) = plan_all(false);
    assert!(count > 3000, "only {count} operations planned");
    // The same test binary again, in a process of its own, planning in reverse order.
    let output = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "every_operation_always_gets_the_same_plan",
            "--nocapture",
        ])
        .env(REVERSE_ENV, "1")
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the reverse-order run failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("PLAN-DIGEST "))
        .unwrap_or_else(|| panic!("no digest from the reverse-order run:\n{stdout}"));
    assert_eq!(
        line,
        format!("{digest} {count}"),
        "plans differ between this process and one planning in the reverse order"
    );
}
