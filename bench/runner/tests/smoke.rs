//! Runs the real runner in --smoke mode against the monolith used as a "gateway" (a command
//! template), with real k6 and with the native generator, and checks the report it writes.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use common::{k6, repo, subgraphs_bin, tempdir};

fn bench(args: &[&str], out: &Path) -> (bool, String) {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_graphfleet-bench"))
        .args(args)
        .arg("--out")
        .arg(out)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("running graphfleet-bench");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    println!("{stderr}\n(took {:?})", started.elapsed());
    (output.status.success(), stderr)
}

fn table_rows<'a>(report: &'a str, section: &str, table: &str) -> Vec<&'a str> {
    let start = report
        .find(&format!("# {section}\n"))
        .unwrap_or_else(|| panic!("no section {section}"));
    let rest = &report[start..];
    let t = rest
        .find(&format!("## {table}"))
        .unwrap_or_else(|| panic!("{section}: no {table}"));
    rest[t..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect()
}

#[test]
fn smoke_against_the_monolith_writes_a_report() {
    let subgraphs = subgraphs_bin();
    let k6 = k6();
    let out = tempdir("smoke");
    let template = format!(
        "{} --set {{set}} --monolith --listen {{host}}:{{port}}",
        subgraphs.display()
    );
    let (ok, stderr) = bench(
        &[
            "--smoke",
            "--load-generator",
            "k6",
            "--scenario",
            "query",
            "--scenario",
            "deduplication",
            "--scenario",
            "small",
            "--gateway-command",
            &format!("monolith={template}"),
            "--subgraphs-bin",
            &subgraphs.to_string_lossy(),
            "--k6",
            &k6.to_string_lossy(),
        ],
        &out,
    );
    assert!(ok, "smoke run failed:\n{stderr}");
    let report = std::fs::read_to_string(out.join("REPORT.md")).expect("REPORT.md");
    assert!(report.starts_with("# System Information\n"));
    for scenario in ["query", "deduplication", "small"] {
        for table in ["Latencies (ms)", "Resources", "Requests"] {
            let rows = table_rows(&report, scenario, table);
            assert_eq!(rows.len(), 1, "{scenario} {table}: {rows:?}");
            assert!(
                rows[0].starts_with("| monolith "),
                "{scenario} {table}: {}",
                rows[0]
            );
        }
        // Zero failures, and the monolith makes no subgraph requests.
        let requests = table_rows(&report, scenario, "Requests")[0];
        let cells: Vec<&str> = requests.split('|').map(str::trim).collect();
        assert!(cells[2].parse::<u64>().expect("requests") > 0, "{requests}");
        assert_eq!(cells[3], "0", "failures: {requests}");
        assert_eq!(cells[6], "0.00 (0)", "{requests}");
        // Each chart names the gateway and its figures (plotters writes text on its own line).
        for (chart, texts) in [
            (
                "latency",
                [format!("{scenario}: latency (ms)"), "P99".into()],
            ),
            (
                "efficiency",
                [
                    format!("{scenario}: requests per core-second"),
                    "requests/GB.s".into(),
                ],
            ),
        ] {
            let svg = std::fs::read_to_string(out.join(format!("charts/{scenario}-{chart}.svg")))
                .expect("chart");
            assert!(svg.starts_with("<svg "), "{scenario}-{chart}.svg");
            for text in texts.iter().map(String::as_str).chain(["monolith"]) {
                assert!(
                    svg.contains(&format!("\n{text}\n")),
                    "{scenario}-{chart}.svg lacks {text:?}"
                );
            }
        }
    }
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("results.json")).expect("results.json"),
    )
    .expect("json");
    assert_eq!(results["scenarios"].as_array().expect("scenarios").len(), 3);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_wrong_gateway_fails_the_smoke_run() {
    let subgraphs = subgraphs_bin();
    let k6 = k6();
    let out = tempdir("wrong");
    // The many-plans monolith answers the fed query with errors: every check must fail
    // (the native generator, the default, checks every response).
    let template = format!(
        "{} --set many-plans --monolith --listen {{host}}:{{port}}",
        subgraphs.display()
    );
    let (ok, stderr) = bench(
        &[
            "--smoke",
            "--scenario",
            "query",
            "--duration",
            "1",
            "--gateway-command",
            &format!("wrong={template}"),
            "--subgraphs-bin",
            &subgraphs.to_string_lossy(),
            "--k6",
            &k6.to_string_lossy(),
        ],
        &out,
    );
    assert!(
        !ok,
        "a gateway answering the wrong schema passed:\n{stderr}"
    );
    assert!(
        stderr.contains("smoke test failed") && stderr.contains("query / wrong"),
        "{stderr}"
    );
    let report = std::fs::read_to_string(out.join("REPORT.md")).expect("REPORT.md");
    let row = table_rows(&report, "query", "Requests")[0];
    assert!(!row.contains("|        0 |"), "{row}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_peer_that_fails_to_install_is_reported() {
    let subgraphs = subgraphs_bin();
    let k6 = k6();
    let out = tempdir("peer");
    // A private tool cache, so nothing real is touched; the bogus version cannot install.
    let cache = out.join("cache");
    let output = Command::new(env!("CARGO_BIN_EXE_graphfleet-bench"))
        .args([
            "--smoke",
            "--scenario",
            "small",
            "--gateway",
            "apollo-gateway",
            "--peer-version",
            "apollo-gateway=0.0.0-bogus",
        ])
        .arg("--subgraphs-bin")
        .arg(&subgraphs)
        .arg("--k6")
        .arg(&k6)
        .arg("--out")
        .arg(&out)
        .env("GRAPHFLEET_CACHE", &cache)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("running graphfleet-bench");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("failed to install apollo-gateway 0.0.0-bogus"),
        "{stderr}"
    );
    let report = std::fs::read_to_string(out.join("REPORT.md")).expect("REPORT.md");
    assert!(
        report.contains("Apollo Gateway (apollo-gateway): 0.0.0-bogus — **failed to install apollo-gateway 0.0.0-bogus: "),
        "{report}"
    );
    let row = table_rows(&report, "small", "Latencies (ms)")[0];
    assert!(
        row.starts_with("| Apollo Gateway") && row.contains("not installed"),
        "{row}"
    );
    assert!(
        !cache.join("tools/apollo-gateway-0.0.0-bogus").exists(),
        "a failed install left a cache entry"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// `k6 inspect` runs the script's init code: GF_DURATION must parse exactly when it is a
/// k6 duration (compound forms included), else fail with a message naming the variable.
#[test]
fn the_script_reads_compound_durations_and_rejects_malformed_ones() {
    let k6 = k6();
    let dir = tempdir("durations");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let payload = dir.join("payload.json");
    std::fs::write(&payload, "{}").expect("payload");
    let inspect = |duration: &str| {
        Command::new(&k6)
            .args(["inspect", "--include-system-env-vars"])
            .arg(repo().join("bench/k6/scenario.js"))
            .env("GF_URL", "http://127.0.0.1:9/graphql")
            .env("GF_PAYLOAD", &payload)
            .env("GF_DURATION", duration)
            .output()
            .expect("running k6 inspect")
    };
    for good in ["10s", "1m30s", "1h2m3.5s", "250ms", "2m"] {
        let out = inspect(good);
        assert!(
            out.status.success(),
            "{good}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for bad in ["10", "1x", "m1", "1m 2s", "-5s"] {
        let out = inspect(bad);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(&format!("GF_DURATION={bad}")),
            "{bad} was not rejected by the script: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
