//! Helpers shared by the runner's integration tests: the repository, the debug binaries
//! they drive (built on first use), k6 from the tool cache, scratch directories.
#![allow(dead_code)] // each test crate uses its own subset

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from)
}

/// The debug graphfleet-subgraphs (another package's binary: built here, without --release).
pub fn subgraphs_bin() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| build("graphfleet-bench-subgraphs", "graphfleet-subgraphs"))
        .clone()
}

/// The debug graphfleet-gateway, built on first use.
pub fn gateway_bin() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| build("graphfleet-gateway", "graphfleet-gateway"))
        .clone()
}

fn build(package: &str, bin: &str) -> PathBuf {
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "-p", package, "--bin", bin])
        .current_dir(repo())
        .status()
        .expect("running cargo build");
    assert!(status.success(), "building {bin} failed");
    target_dir().join("debug").join(bin)
}

/// k6 from the tool cache or PATH; the test needs the real one.
pub fn k6() -> PathBuf {
    let versions =
        std::fs::read_to_string(repo().join("tools/versions.env")).expect("versions.env");
    let version = versions
        .lines()
        .find_map(|l| l.strip_prefix("K6_VERSION="))
        .expect("K6_VERSION")
        .trim()
        .to_owned();
    let cache = match std::env::var_os("GRAPHFLEET_CACHE") {
        Some(c) => PathBuf::from(c),
        None => PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/graphfleet"),
    };
    let cached = cache.join(format!("tools/k6-{version}/k6"));
    assert!(
        cached.is_file(),
        "k6 is missing at {}: run scripts/tools.sh k6",
        cached.display()
    );
    cached
}

pub fn tempdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "graphfleet-bench-test-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
