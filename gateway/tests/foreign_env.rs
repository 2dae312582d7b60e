//! Every `GRAPHFLEET_*` variable the project's scripts, tests and tools use is one the
//! gateway knows: its config file, an override (`GRAPHFLEET_<SECTION>__<KEY>`) or a
//! foreign one it ignores. Otherwise a shell or CI job that has it set (e.g. scripts/test.sh
//! exporting GRAPHFLEET_TEST_REAL_STATE) refuses to start every gateway.

use std::collections::BTreeSet;
use std::path::Path;

use graphfleet_gateway::config::{CONFIG_ENV, FOREIGN_ENV};

fn names_in(dir: &Path, found: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(
                name.as_str(),
                "target" | "node_modules" | "fixtures" | "snapshots"
            ) {
                names_in(&path, found);
            }
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (i, _) in text.match_indices("GRAPHFLEET_") {
            let rest = &text[i..];
            let end = rest
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(rest.len());
            found.insert(rest[..end].to_owned());
        }
    }
}

#[test]
fn every_project_variable_is_known_to_the_gateway() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace");
    let mut found = BTreeSet::new();
    for dir in [
        "scripts",
        "testkit",
        "deploy-tests",
        "operator",
        "loadtest",
        "docker",
        "charts",
    ] {
        names_in(&root.join(dir), &mut found);
    }
    let unknown: Vec<&String> = found
        .iter()
        // Prefixes written with a variable part (`GRAPHFLEET_KUBELET_ARGS_${POOL}`) end in `_`.
        .filter(|n| !n.ends_with('_') && !n.contains("__"))
        .filter(|n| n.as_str() != CONFIG_ENV && !FOREIGN_ENV.contains(&n.as_str()))
        .collect();
    assert!(unknown.is_empty(), "add to FOREIGN_ENV: {unknown:?}");
}
