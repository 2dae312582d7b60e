//! Where things are: the repository, the tool cache, the binaries the runner drives.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, bail};

/// The repository root: `--repo`, else the directory this crate was built from.
pub fn repo_root(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let root = match given {
        Some(p) => p.to_path_buf(),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    };
    let root = root
        .canonicalize()
        .with_context(|| format!("repository root {}", root.display()))?;
    if !root.join("bench/sets").is_dir() {
        bail!(
            "{} is not the graphfleet repository (no bench/sets); pass --repo",
            root.display()
        );
    }
    Ok(root)
}

/// `~/.cache/graphfleet/tools` (honours GRAPHFLEET_CACHE and XDG_CACHE_HOME like scripts/lib.sh).
pub fn tools_dir() -> anyhow::Result<PathBuf> {
    if let Some(c) = std::env::var_os("GRAPHFLEET_CACHE") {
        return Ok(PathBuf::from(c).join("tools"));
    }
    let base = match std::env::var_os("XDG_CACHE_HOME") {
        Some(x) => PathBuf::from(x),
        None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set")?).join(".cache"),
    };
    Ok(base.join("graphfleet/tools"))
}

/// The cargo target directory of the workspace.
pub fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

/// `target/release/<bin>`, built with `cargo build --release -p <package>` when missing.
pub fn release_binary(root: &Path, package: &str, bin: &str) -> anyhow::Result<PathBuf> {
    let path = target_dir(root).join("release").join(bin);
    if path.is_file() {
        return Ok(path);
    }
    eprintln!(
        "[bench] {} missing: cargo build --release -p {package} --bin {bin}",
        path.display()
    );
    let status =
        std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["build", "--release", "-p", package, "--bin", bin])
            .current_dir(root)
            .stdin(Stdio::null())
            .status()
            .context("running cargo")?;
    if !status.success() || !path.is_file() {
        bail!("cargo build --release -p {package} --bin {bin} failed ({status})");
    }
    Ok(path)
}

/// The k6 binary: `--k6`, else `k6` in the tool cache (scripts/tools.sh k6), else on PATH.
pub fn k6(given: Option<&Path>, root: &Path) -> anyhow::Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let version = pinned_version(root, "K6_VERSION").unwrap_or_else(|| "1.8.1".into());
    let cached = tools_dir()?.join(format!("k6-{version}/k6"));
    if cached.is_file() {
        return Ok(cached);
    }
    if let Some(found) = which("k6") {
        return Ok(found);
    }
    bail!(
        "k6 not found at {} nor on PATH; build it with scripts/tools.sh k6 or pass --k6",
        cached.display()
    )
}

fn pinned_version(root: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(root.join("tools/versions.env")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .map(|v| v.trim().to_owned())
}

pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}
