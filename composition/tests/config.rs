//! Rover-style config parsing.

use std::path::Path;

use graphfleet_composition::config::{ConfigError, parse_config};

#[test]
fn inline_sdl_and_order_are_kept() {
    let yaml = "federation_version: =2.3.2\nsubgraphs:\n  zeta:\n    routing_url: http://z\n    schema:\n      sdl: 'type Query { z: Int }'\n  alpha:\n    routing_url: http://a\n    schema:\n      sdl: 'type Query { a: Int }'\n";
    let subgraphs = parse_config(yaml, Path::new(".")).expect("config parses");
    let names: Vec<&str> = subgraphs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["zeta", "alpha"]);
    assert_eq!(subgraphs[1].url, "http://a");
    assert_eq!(subgraphs[1].sdl, "type Query { a: Int }");
}

#[test]
fn federation_1_version_is_rejected() {
    let yaml = "federation_version: 1\nsubgraphs: {}\n";
    let err = parse_config(yaml, Path::new(".")).expect_err("fed 1 rejected");
    assert!(matches!(err, ConfigError::Invalid { .. }), "{err}");
    assert!(err.to_string().contains("federation_version"), "{err}");
}

#[test]
fn missing_schema_file_names_the_path() {
    let yaml =
        "subgraphs:\n  a:\n    routing_url: http://a\n    schema:\n      file: nope.graphql\n";
    let err = parse_config(yaml, Path::new("/nonexistent-dir")).expect_err("missing file");
    assert!(
        err.to_string().contains("/nonexistent-dir/nope.graphql"),
        "{err}"
    );
}

#[test]
fn missing_routing_url_is_an_error() {
    let yaml = "subgraphs:\n  a:\n    schema:\n      sdl: 'type Query { a: Int }'\n";
    let err = parse_config(yaml, Path::new(".")).expect_err("no url");
    assert!(err.to_string().contains("routing_url"), "{err}");
}
