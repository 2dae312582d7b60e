//! Builds GraphiQL into the gateway: the browser builds of GraphiQL, React and ReactDOM
//! that `tools/graphiql/package-lock.json` pins, installed once into the tool cache by
//! `scripts/node-tool.sh --dir graphiql` (npm, cached by the lock's hash), gzipped into
//! `OUT_DIR` and included by `src/http/graphiql.rs`. The page then works with no network
//! at all. `GRAPHFLEET_GRAPHIQL=off` builds a gateway without it (the page answers 404
//! saying so).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (name served, path under the install's `node_modules`).
const ASSETS: &[(&str, &str)] = &[
    ("graphiql.min.js", "graphiql/graphiql.min.js"),
    ("graphiql.min.css", "graphiql/graphiql.min.css"),
    (
        "react.production.min.js",
        "react/umd/react.production.min.js",
    ),
    (
        "react-dom.production.min.js",
        "react-dom/umd/react-dom.production.min.js",
    ),
];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    let tool = manifest.join("../tools/graphiql");
    for file in ["package.json", "package-lock.json"] {
        println!("cargo:rerun-if-changed={}", tool.join(file).display());
    }
    println!("cargo:rerun-if-env-changed=GRAPHFLEET_GRAPHIQL");
    println!("cargo::rustc-check-cfg=cfg(graphiql_off)");
    if std::env::var("GRAPHFLEET_GRAPHIQL").is_ok_and(|v| v == "off") {
        println!("cargo:rustc-cfg=graphiql_off");
        return;
    }
    let installed = install(&manifest);
    for (name, path) in ASSETS {
        let from = installed.join("node_modules").join(path);
        let bytes = std::fs::read(&from).unwrap_or_else(|e| {
            panic!("GraphiQL asset {}: {e} (is tools/graphiql/package.json's version still the one with this file?)", from.display())
        });
        gzip(&bytes, &out.join(format!("{name}.gz")));
    }
}

/// The tool cache directory holding `node_modules`, installing it on first use.
fn install(manifest: &Path) -> PathBuf {
    let script = manifest.join("../scripts/node-tool.sh");
    let output = Command::new("bash")
        .arg(&script)
        .args(["--dir", "graphiql"])
        .stdin(std::process::Stdio::null())
        .output();
    let output = match output {
        Ok(output) => output,
        Err(e) => panic!("running {}: {e}", script.display()),
    };
    if !output.status.success() {
        panic!(
            "installing GraphiQL's npm packages failed (npm is needed: scripts/host-packages.sh nodejs npm; or build without GraphiQL with GRAPHFLEET_GRAPHIQL=off):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let dir = String::from_utf8(output.stdout).expect("a UTF-8 path");
    PathBuf::from(dir.trim())
}

fn gzip(bytes: &[u8], to: &Path) {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).expect("gzip into memory");
    let gz = encoder.finish().expect("gzip into memory");
    std::fs::write(to, gz).unwrap_or_else(|e| panic!("writing {}: {e}", to.display()));
}
