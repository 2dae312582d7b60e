//! Every federation audit suite (`gateway/tests/audit/<suite>/`) composes to the
//! supergraph @apollo/composition produced for it (`supergraph.graphql`, stored by
//! `scripts/oracle-compose.sh`), after the same normalisation as `tests/oracle.rs`.
//! No `node` needed: the oracle's output is read from the folder.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use graphfleet_composition::compose;

/// Suites whose supergraph still differs from Apollo's: `(suite, reason)`.
/// The test fails when a listed suite starts matching, so keep this list true.
const EXPECTED_DIVERGENCES: &[(&str, &str)] = &[];

fn audit_suites() -> Vec<PathBuf> {
    let dir = support::repo_root().join("gateway/tests/audit");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("supergraph.yaml").is_file())
        .collect();
    out.sort();
    out
}

fn compare(dir: &Path) -> Result<(), String> {
    let theirs = std::fs::read_to_string(dir.join("supergraph.graphql"))
        .map_err(|e| format!("reading supergraph.graphql: {e}"))?;
    let ours = compose(&support::load(dir)).map_err(|e| format!("we fail to compose:\n{e}"))?;
    let (a, b) = (
        support::normalize(&ours.supergraph_sdl),
        support::normalize(&theirs),
    );
    if a == b {
        Ok(())
    } else {
        Err(format!(
            "supergraphs differ\n{}",
            support::line_diff(&a, &b)
        ))
    }
}

#[test]
fn audit_supergraphs_equal_apollo_composition() {
    let suites = audit_suites();
    assert!(
        !suites.is_empty(),
        "no gateway/tests/audit suites found: the comparison would check nothing"
    );
    let expected: BTreeMap<&str, &str> = EXPECTED_DIVERGENCES.iter().copied().collect();
    let mut problems = Vec::new();
    let mut matched = 0;
    for dir in &suites {
        let name = dir
            .file_name()
            .expect("suite folder has a name")
            .to_string_lossy()
            .into_owned();
        match (compare(dir), expected.contains_key(name.as_str())) {
            (Ok(()), false) => matched += 1,
            (Ok(()), true) => problems.push(format!(
                "{name}: now matches Apollo; remove it from EXPECTED_DIVERGENCES"
            )),
            (Err(e), false) => problems.push(format!("{name}: {e}")),
            (Err(_), true) => {}
        }
    }
    let names: Vec<String> = suites
        .iter()
        .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    for listed in expected.keys() {
        if !names.iter().any(|n| n == listed) {
            problems.push(format!(
                "{listed}: listed in EXPECTED_DIVERGENCES but no such suite"
            ));
        }
    }
    eprintln!("{matched} of {} audit suites match Apollo", suites.len());
    assert!(
        problems.is_empty(),
        "{} problem(s) over {} audit suites:\n{}",
        problems.len(),
        suites.len(),
        problems.join("\n\n")
    );
}
