//! The committed supergraphs equal a fresh composition by the oracle (@apollo/composition).

mod common;

use std::process::Command;

use graphfleet_bench_model::sets::ALL;

#[test]
fn committed_supergraphs_match_the_oracle() {
    assert!(
        Command::new("npm").arg("--version").output().is_ok(),
        "npm is not installed, so the composition oracle cannot run: run scripts/test.sh, or scripts/host-packages.sh nodejs npm"
    );
    let root = common::sets_dir().join("../..");
    for set in ALL {
        let dir = common::sets_dir().join(set.name());
        let output = Command::new(root.join("scripts/oracle-compose.sh"))
            .arg(dir.join("supergraph.yaml"))
            .output()
            .expect("run scripts/oracle-compose.sh");
        assert!(
            output.status.success(),
            "{}: composition failed: {}",
            set.name(),
            String::from_utf8_lossy(&output.stderr)
        );
        let fresh = String::from_utf8(output.stdout).expect("UTF-8 supergraph");
        assert!(
            fresh == set.supergraph(),
            "{}: committed supergraph.graphql is stale; run bench/sets/compose.sh {}",
            set.name(),
            set.name()
        );
    }
}
