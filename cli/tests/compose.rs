//! The `graphfleet compose` binary, run as a real process on the composition fixtures.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../composition/tests/fixtures")
        .join(name)
        .join("supergraph.yaml")
}

fn graphfleet(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_graphfleet"))
        .args(args)
        .output()
        .expect("graphfleet binary runs")
}

#[test]
fn composes_to_stdout_like_the_library() {
    let config = fixture("basic");
    let out = graphfleet(&["compose", "--config", config.to_str().expect("utf-8 path")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let subgraphs = graphfleet_composition::config::load_config(&config).expect("config loads");
    let expected = graphfleet_composition::compose(&subgraphs).expect("composes");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        expected.supergraph_sdl
    );
}

#[test]
fn writes_the_output_file_and_hints_to_stderr() {
    let config = fixture("kitchen-sink");
    let dir = std::env::temp_dir().join(format!("graphfleet-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let output = dir.join("supergraph.graphql");
    let out = graphfleet(&[
        "compose",
        "--config",
        config.to_str().expect("utf-8 path"),
        "--output",
        output.to_str().expect("utf-8 path"),
    ]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let written = std::fs::read_to_string(&output).expect("output written");
    assert!(written.contains("@join__type(graph: B, key: \"id\", isInterfaceObject: true)"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("hint: INCONSISTENT_INPUT_OBJECT_FIELD:"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[test]
fn errors_one_per_line_with_codes_and_exit_1() {
    let config = fixture("err-invalid-graphql");
    let out = graphfleet(&["compose", "--config", config.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines.iter().all(|l| l.starts_with("INVALID_GRAPHQL: ")),
        "{stderr}"
    );
}

#[test]
fn missing_config_is_a_clear_error() {
    let out = graphfleet(&["compose", "--config", "/nonexistent/supergraph.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("reading /nonexistent/supergraph.yaml"),
        "{stderr}"
    );
}
