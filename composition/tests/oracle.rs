//! Our supergraphs equal @apollo/composition's (after normalising order) for every
//! fixture, benchmark set and gateway fixture; failing inputs fail with the same error codes.

mod support;

use std::collections::BTreeSet;
use std::path::Path;

use graphfleet_composition::compose;
use support::Oracle;

const SAT: &str = "SATISFIABILITY_ERROR";

fn compare(dir: &Path) -> Result<(), String> {
    let ours = compose(&support::load(dir));
    let name = dir.display();
    match (support::oracle(&dir.join("supergraph.yaml")), ours) {
        (Oracle::Supergraph(theirs, their_hints), Ok(ours)) => {
            let (a, b) = (
                support::normalize(&ours.supergraph_sdl),
                support::normalize(&theirs),
            );
            if a != b {
                return Err(format!(
                    "{name}: supergraphs differ\n{}",
                    support::line_diff(&a, &b)
                ));
            }
            // Hints: the same set of codes (texts may differ).
            let theirs: BTreeSet<&str> = their_hints.iter().map(String::as_str).collect();
            let ours: BTreeSet<&str> = ours.hints.iter().map(|h| h.code.as_str()).collect();
            if theirs == ours {
                Ok(())
            } else {
                Err(format!(
                    "{name}: hint codes differ: ours {ours:?}, apollo {theirs:?}"
                ))
            }
        }
        (Oracle::Supergraph(..), Err(e)) => Err(format!("{name}: apollo composes, we fail:\n{e}")),
        (Oracle::Errors(errors), Ok(_)) => {
            let codes: Vec<&String> = errors.iter().map(|(c, _)| c).collect();
            Err(format!("{name}: apollo fails with {codes:?}, we compose"))
        }
        (Oracle::Errors(errors), Err(e)) => {
            let theirs: BTreeSet<&str> = errors.iter().map(|(c, _)| c.as_str()).collect();
            let ours: BTreeSet<&str> = e.0.iter().map(|e| e.code.as_str()).collect();
            if theirs != ours {
                return Err(format!(
                    "{name}: error codes differ: ours {ours:?}, apollo {theirs:?}\n{e}"
                ));
            }
            // Satisfiability errors: the same failing fields, once per query state, naming
            // the same subgraphs.
            let sat = |msgs: Vec<&str>| -> Vec<(String, Vec<String>)> {
                let mut v: Vec<_> = msgs
                    .into_iter()
                    .map(support::satisfiability_summary)
                    .collect();
                v.sort();
                v
            };
            let theirs = sat(errors
                .iter()
                .filter(|(c, _)| c == SAT)
                .map(|(_, m)| m.as_str())
                .collect());
            let ours = sat(e
                .0
                .iter()
                .filter(|e| e.code == SAT)
                .map(|e| e.message.as_str())
                .collect());
            if theirs == ours {
                Ok(())
            } else {
                Err(format!(
                    "{name}: satisfiability errors differ:\n  ours   {ours:?}\n  apollo {theirs:?}\n{e}"
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
    assert!(
        support::node_available(),
        "node is not on PATH: the oracle (@apollo/composition) needs it; \
         scripts/test.sh installs it (scripts/host-packages.sh nodejs npm)"
    );
    let mut dirs = support::fixtures();
    dirs.extend(support::benchmark_sets());
    dirs.extend(support::gateway_fixtures());
    let failures: Vec<String> = dirs.iter().filter_map(|d| compare(d).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n\n")
    );
}
