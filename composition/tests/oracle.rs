//! Our supergraphs equal @apollo/composition's (after normalising order) for every
//! fixture and benchmark set; failing inputs fail with the same error codes.

mod support;

use std::collections::BTreeSet;
use std::path::Path;

use graphfleet_composition::compose;
use support::Oracle;

fn compare(dir: &Path) -> Result<(), String> {
    let ours = compose(&support::load(dir));
    let name = dir.display();
    match (support::oracle(&dir.join("supergraph.yaml")), ours) {
        (Oracle::Supergraph(theirs), Ok(ours)) => {
            let (a, b) = (
                support::normalize(&ours.supergraph_sdl),
                support::normalize(&theirs),
            );
            if a == b {
                Ok(())
            } else {
                Err(format!("{name}: supergraphs differ\n{}", line_diff(&a, &b)))
            }
        }
        (Oracle::Supergraph(_), Err(e)) => Err(format!("{name}: apollo composes, we fail:\n{e}")),
        (Oracle::Errors(codes), Ok(_)) => {
            Err(format!("{name}: apollo fails with {codes:?}, we compose"))
        }
        (Oracle::Errors(codes), Err(e)) => {
            let theirs: BTreeSet<String> = codes.into_iter().collect();
            let ours: BTreeSet<String> = e.0.iter().map(|e| e.code.clone()).collect();
            if theirs == ours {
                Ok(())
            } else {
                Err(format!(
                    "{name}: error codes differ: ours {ours:?}, apollo {theirs:?}\n{e}"
                ))
            }
        }
        (Oracle::Crashed(_), Err(e)) if e.0.iter().all(|e| e.code == "INVALID_GRAPHQL") => Ok(()),
        (Oracle::Crashed(msg), other) => Err(format!(
            "{name}: apollo rejects the input ({}), we answer {:?}",
            msg.lines().find(|l| l.contains("Error")).unwrap_or(""),
            other.map(|_| "a supergraph")
        )),
    }
}

#[test]
fn equals_apollo_composition() {
    if !support::node_available() {
        eprintln!("skipping: node is not on PATH (the oracle needs it)");
        return;
    }
    let mut dirs = support::fixtures();
    dirs.extend(support::benchmark_sets());
    let failures: Vec<String> = dirs.iter().filter_map(|d| compare(d).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n\n")
    );
}

/// Lines only in ours (`+`) or only in Apollo's (`-`).
fn line_diff(ours: &str, theirs: &str) -> String {
    let a: BTreeSet<&str> = ours.lines().collect();
    let b: BTreeSet<&str> = theirs.lines().collect();
    let mut out: Vec<String> = a.difference(&b).map(|l| format!("+ {l}")).collect();
    out.extend(b.difference(&a).map(|l| format!("- {l}")));
    out.join("\n")
}
