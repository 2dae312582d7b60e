//! Every scenario query of every set runs on the set's monolith without errors.

mod common;

use graphfleet_loadtest::sets::ALL;
use graphfleet_loadtest::{Mode, Options};
use serde_json::Value;

#[tokio::test]
async fn every_scenario_runs_on_its_monolith() {
    let client = common::client();
    for set in ALL {
        let server = common::start(set, Mode::Monolith, Options::default()).await;
        let dir = common::sets_dir().join(set.name()).join("queries");
        let mut scenarios = 0;
        for entry in std::fs::read_dir(&dir).expect("read queries/") {
            let path = entry.expect("dir entry").path();
            if path.extension().is_none_or(|e| e != "graphql") {
                continue;
            }
            let query = std::fs::read_to_string(&path).expect("read query");
            let variables = std::fs::read(path.with_extension("variables.json"))
                .map(|b| common::parse(&b))
                .unwrap_or(Value::Null);
            let url = format!("{}/graphql", server.base_url());
            let (status, body) = common::graphql(&client, &url, &query, variables).await;
            let response = common::parse(&body);
            assert_eq!(status, 200, "{}: {}", path.display(), response["errors"]);
            assert!(
                response.get("errors").is_none(),
                "{}: {}",
                path.display(),
                response["errors"]
            );
            assert!(response["data"].is_object(), "{}", path.display());
            println!("{} {}: {} bytes", set.name(), path.display(), body.len());
            scenarios += 1;
        }
        assert!(scenarios > 0, "{} has no scenarios", set.name());
        server.shutdown().await;
    }
}
