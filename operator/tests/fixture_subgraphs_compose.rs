//! The subgraph fixtures the cluster tests use compose, and a syntax error does not.

use graphfleet_composition::{SubgraphInput, compose};

fn fixture(name: &str) -> SubgraphInput {
    let path = format!(
        "{}/tests/fixtures/subgraphs/{name}.graphql",
        env!("CARGO_MANIFEST_DIR")
    );
    SubgraphInput {
        name: name.to_owned(),
        url: format!("http://127.0.0.1:4200/{name}"),
        sdl: std::fs::read_to_string(path).expect("fixture exists"),
    }
}

#[test]
fn fixtures_compose() {
    let inputs: Vec<_> = ["accounts", "products", "reviews"].map(fixture).into();
    let composed = compose(&inputs).unwrap_or_else(|e| panic!("fixtures must compose: {e}"));
    assert!(composed.supergraph_sdl.contains("join__Graph"));
    assert!(composed.supergraph_sdl.contains("REVIEWS"));
}

#[test]
fn broken_sdl_fails_with_errors() {
    let mut accounts = fixture("accounts");
    accounts.sdl.push_str("\ntype Broken {");
    let errors = compose(&[accounts, fixture("products")]).expect_err("syntax error");
    assert!(!errors.0.is_empty());
}
