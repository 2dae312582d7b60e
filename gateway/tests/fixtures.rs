//! Federation fixture corpus: each `tests/fixtures/<feature>/` holds subgraph SDLs, the
//! oracle-composed `supergraph.graphql`, a `data.json` for the JSON-backed subgraphs and
//! `operations/*.graphql`. Every operation runs through the real gateway over HTTP; its
//! plan, response and per-subgraph request counts are snapshotted with insta.

mod support;

use graphfleet_gateway::supergraph::Supergraph;
use std::path::{Path, PathBuf};

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

async fn run_fixture(dir: &Path) {
    let name = dir
        .file_name()
        .expect("fixture name")
        .to_string_lossy()
        .to_string();
    let text = std::fs::read_to_string(dir.join("supergraph.graphql"))
        .expect("fixture has a composed supergraph.graphql");
    let subgraphs = support::json_subgraph::start_suite(dir).await;
    let text = text.replace("http://127.0.0.1:4200", &subgraphs.base_url);
    let supergraph = Supergraph::parse(&text).expect("fixture supergraph loads");
    let plan_supergraph = Supergraph::parse(&text).expect("fixture supergraph loads");
    // Snapshots plan with every percent() label off (the plans and answers stay fixed);
    // drawing them is tested in progressive_override.rs.
    let mut config = graphfleet_gateway::config::Config::default();
    config.progressive_override.disabled_labels = supergraph
        .meta
        .override_labels()
        .into_iter()
        .filter(|l| graphfleet_gateway::pipeline::progressive_override::percent(l).is_some())
        .map(str::to_owned)
        .collect();
    let gateway = support::start_gateway_with_config(config, supergraph).await;
    let client = support::client();

    let mut ops: Vec<PathBuf> = std::fs::read_dir(dir.join("operations"))
        .expect("fixture has operations/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "graphql"))
        .collect();
    ops.sort();
    assert!(!ops.is_empty(), "fixture {name} has no operations");
    for op in ops {
        let op_name = op
            .file_stem()
            .expect("file name")
            .to_string_lossy()
            .to_string();
        let query = std::fs::read_to_string(&op).expect("readable operation");
        let variables = std::fs::read_to_string(op.with_extension("variables.json"))
            .map(|t| serde_json::from_str(&t).expect("variables are JSON"))
            .unwrap_or(serde_json::json!({}));
        let plan = graphfleet_gateway::plan_text(&plan_supergraph, &query, None)
            .unwrap_or_else(|e| format!("planning failed: {e}"));
        let before = subgraphs.counts();
        let reply = support::post_graphql(&client, &gateway, &query, variables).await;
        let after = subgraphs.counts();
        let requests: Vec<String> = after
            .iter()
            .filter_map(|(k, v)| {
                let n = v - before.get(k).copied().unwrap_or(0);
                (n > 0).then(|| format!("{k}={n}"))
            })
            .collect();
        let body = String::from_utf8_lossy(&reply.body);
        // Operations named error_* exercise errors; all others must succeed cleanly.
        if !op_name.starts_with("error") {
            assert!(
                !body.contains("\"errors\""),
                "{name}/{op_name} returned errors: {body}"
            );
        }
        let snapshot = format!(
            "status: {}\nsubgraph requests: {}\nresponse: {body}\n\n{plan}",
            reply.status,
            requests.join(" ")
        );
        insta::with_settings!({
            snapshot_path => dir.join("snapshots"),
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!(op_name, snapshot);
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn federation_fixtures() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.join("supergraph.graphql").exists())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no fixtures found");
    for dir in dirs {
        run_fixture(&dir).await;
    }
}
