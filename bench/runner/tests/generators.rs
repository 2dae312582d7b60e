//! The native load generator against k6: the same scenario at a low rate against a real
//! graphfleet gateway (debug build, the set's real subgraphs), run by the real runner once
//! with each generator. At a rate both sustain easily they must achieve the same rate with
//! no failures, and the native latencies must be of the same order as k6's.

mod common;

use std::path::Path;
use std::process::Command;

use common::{gateway_bin, k6, subgraphs_bin, tempdir};
use serde_json::Value;

/// Runs graphfleet-bench on one scenario with `generator`; returns the gateway's summary.
fn measure(generator: &str, scenario: &str, rate: u32, duration: u32, out: &Path) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_graphfleet-bench"))
        .args([
            "--gateway",
            "graphfleet",
            "--scenario",
            scenario,
            "--load-generator",
            generator,
            "--rate",
            &rate.to_string(),
            "--duration",
            &duration.to_string(),
            "--warmup",
            "1",
            // Every response compared with the monolith's, byte for byte.
            "--check",
            "full",
        ])
        .arg("--gateway-bin")
        .arg(gateway_bin())
        .arg("--subgraphs-bin")
        .arg(subgraphs_bin())
        .arg("--k6")
        .arg(k6())
        .arg("--out")
        .arg(out)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("running graphfleet-bench");
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stderr}");
    assert!(output.status.success(), "{generator}: {stderr}");
    let results: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("results.json")).expect("results.json"),
    )
    .expect("json");
    let run = &results["scenarios"][0];
    assert_eq!(run["generator"], generator, "{run}");
    let gateway = &run["gateways"][0];
    assert_eq!(gateway["outcome"]["status"], "measured", "{gateway}");
    gateway["outcome"]["summary"].clone()
}

fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing: {v}"))
}

#[test]
fn native_and_k6_agree_at_a_low_rate() {
    let dir = tempdir("generators");
    let rate = 50;
    let native = measure("native", "small", rate, 4, &dir.join("native"));
    let k6 = measure("k6", "small", rate, 4, &dir.join("k6"));
    for (name, s) in [("native", &native), ("k6", &k6)] {
        assert_eq!(f(s, "failures"), 0.0, "{name}: {s}");
        assert_eq!(f(s, "dropped_iterations"), 0.0, "{name}: {s}");
        assert!(f(s, "requests") >= 190.0, "{name}: {s}");
    }
    let (a, b) = (f(&native, "achieved_rate"), f(&k6, "achieved_rate"));
    assert!(
        (a - b).abs() / b < 0.03,
        "achieved rates differ: native {a} vs k6 {b}"
    );
    let (n50, k50) = (f(&native["latency_ms"], "med"), f(&k6["latency_ms"], "med"));
    // Native counts from the scheduled time (microseconds), k6 from the send: at 50 req/s
    // the two differ by the generator's own delays only.
    assert!(n50 > 0.0, "{native}");
    assert!(
        (n50 / k50 <= 3.0 && k50 / n50 <= 3.0) || (n50 - k50).abs() < 1.0,
        "medians too far apart: native {n50} ms vs k6 {k50} ms"
    );
    assert!(
        f(&native["latency_ms"], "p99") >= n50 && f(&native["latency_ms"], "max") < 5_000.0,
        "{native}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// many-plans-no-cache: every request a new document (its own operation name and alias);
/// both generators send them and compare each answer, with the request's token put back,
/// against the monolith's — no failures means every gateway answer carried the request's
/// own alias.
#[test]
fn the_no_cache_variant_passes_the_full_check_with_both_generators() {
    let dir = tempdir("no-cache");
    for generator in ["native", "k6"] {
        let s = measure(generator, "many-plans-no-cache", 5, 3, &dir.join(generator));
        assert_eq!(f(&s, "failures"), 0.0, "{generator}: {s}");
        assert!(f(&s, "ok") >= 14.0, "{generator}: {s}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
