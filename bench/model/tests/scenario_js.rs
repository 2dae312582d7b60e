//! scenario.js and the Rust modules it mirrors agree: its latency buckets
//! (`graphfleet_bench_model::latency_histogram`) and its durations
//! (`graphfleet_bench_model::duration`).
//! The Rust side is checked against fixtures in `bench/k6/testdata/`; the script's blocks
//! (between its `// BEGIN <name>` and `// END <name>` lines) are run under node on the same
//! fixtures, so a change to either side that the other lacks fails here.

use std::io::Write;
use std::process::{Command, Stdio};

use graphfleet_bench_model::K6_SCENARIO_JS;
use graphfleet_bench_model::duration;
use graphfleet_bench_model::latency_histogram::{Histogram, bucket};

fn testdata(name: &str) -> serde_json::Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../k6/testdata/");
    let text = std::fs::read_to_string(format!("{path}{name}")).expect("readable fixture");
    serde_json::from_str(&text).expect("fixture is JSON")
}

/// `[[value as text, bucket], ...]`: values are text so both sides read the same double.
fn bucket_cases() -> Vec<(String, u64)> {
    let cases: Vec<(String, u64)> =
        serde_json::from_value(testdata("buckets.json")).expect("[[text, bucket]] pairs");
    assert!(cases.len() > 1000, "the fixture covers the buckets");
    cases
}

fn duration_cases() -> Vec<(String, Option<f64>)> {
    serde_json::from_value(testdata("durations.json")).expect("[[text, seconds|null]] pairs")
}

fn value(text: &str) -> f64 {
    text.parse().expect("a number")
}

/// A block of scenario.js (it declares functions and constants only).
fn block(name: &str) -> &'static str {
    let start = K6_SCENARIO_JS
        .find(&format!("// BEGIN {name}"))
        .expect("the BEGIN marker");
    let end = K6_SCENARIO_JS
        .find(&format!("// END {name}"))
        .expect("the END marker");
    &K6_SCENARIO_JS[start..end]
}

/// Runs `program` (after `block`) under node with `input` as JSON in `input`, returning what
/// it prints as JSON. node is required (scripts/test.sh installs it).
fn node(block: &str, program: &str, input: &serde_json::Value) -> serde_json::Value {
    let source = format!(
        "{block}\nconst input = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n{program}\n"
    );
    let mut child = match Command::new("node")
        .args(["-e", &source])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => panic!("running node (scripts/test.sh installs it): {e}"),
    };
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.to_string().as_bytes())
        .expect("write node's input");
    let out = child.wait_with_output().expect("node runs");
    assert!(
        out.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("node printed JSON")
}

#[test]
fn rust_buckets_match_the_fixture() {
    for (text, expected) in bucket_cases() {
        assert_eq!(bucket(value(&text)) as u64, expected, "{text} ms");
    }
}

#[test]
fn script_buckets_match_the_fixture() {
    let cases = bucket_cases();
    let values: Vec<&str> = cases.iter().map(|(v, _)| v.as_str()).collect();
    let got = node(
        block("latency histogram"),
        "console.log(JSON.stringify(input.map((v) => bucketOf(Number(v)))));",
        &serde_json::json!(values),
    );
    let got: Vec<u64> = serde_json::from_value(got).expect("bucket list");
    for ((text, expected), got) in cases.iter().zip(&got) {
        assert_eq!(got, expected, "scenario.js puts {text} ms elsewhere");
    }
    assert_eq!(got.len(), cases.len());
}

/// What the script writes in its summary decodes to what Rust records from the same values.
#[test]
fn script_histogram_decodes_to_the_rust_histogram() {
    let values: Vec<f64> = (0..5000)
        .map(|i| {
            let i = f64::from(i);
            // Two clusters and a tail, with gaps between the occupied buckets.
            match i as u32 % 10 {
                0 => 0.0,
                1..=6 => 1.0 + (i * 0.37) % 3.0,
                7 | 8 => 40.0 + (i * 1.3) % 20.0,
                _ => 500.0 + i,
            }
        })
        .collect();
    let program = "const counts = new Array(HIST_BUCKETS).fill(0);\n\
                   for (const v of input) counts[bucketOf(v)] += 1;\n\
                   console.log(JSON.stringify(encodeHistogram(counts)));";
    let encoded = node(
        block("latency histogram"),
        program,
        &serde_json::json!(values),
    );
    let encoded: Vec<u64> = serde_json::from_value(encoded).expect("a list of integers");
    let mut expected = Histogram::new();
    for v in &values {
        expected.record(*v);
    }
    assert_eq!(encoded, expected.encode(), "the same compact form");
    assert_eq!(Histogram::decode(&encoded), Ok(expected));
}

#[test]
fn rust_durations_match_the_fixture() {
    for (text, seconds) in duration_cases() {
        let got = duration::parse(&text).ok().map(|d| d.as_secs_f64());
        match (got, seconds) {
            (Some(got), Some(want)) => assert!((got - want).abs() <= want * 1e-12, "{text:?}"),
            (got, want) => assert_eq!(got, want, "{text:?}"),
        }
    }
}

#[test]
fn script_durations_match_the_fixture() {
    let cases = duration_cases();
    let texts: Vec<&str> = cases.iter().map(|(t, _)| t.as_str()).collect();
    // NaN (malformed) prints as null in JSON.
    let got = node(
        block("durations"),
        "console.log(JSON.stringify(input.map(seconds)));",
        &serde_json::json!(texts),
    );
    let got: Vec<Option<f64>> = serde_json::from_value(got).expect("numbers or null");
    assert_eq!(got.len(), cases.len());
    for ((text, want), got) in cases.iter().zip(got) {
        match (got, want) {
            (Some(got), Some(want)) => assert!((got - want).abs() <= want * 1e-12, "{text:?}"),
            (got, want) => assert_eq!(got, *want, "scenario.js reads {text:?} as {got:?}"),
        }
    }
}

/// GF_CHECK=graphql (the operator's LoadTests) fails what a client counts as failed.
#[test]
fn the_graphql_check_fails_errors_and_missing_data() {
    let cases = [
        (r#"{"data":{"a":1}}"#, true),
        (r#"{"data":{"errors":[1]}}"#, true),
        (r#"{"data":{"a":"\"errors\":[]"}}"#, true),
        (r#"{"data":{"a":null},"errors":[{"message":"x"}]}"#, false),
        (r#"{"data":null,"errors":[{"message":"x"}]}"#, false),
        (r#"{"errors":[{"message":"x"}]}"#, false),
        (r#"{"data":{"a":1},"#, false),
        ("not json", false),
    ];
    let bodies: Vec<&str> = cases.iter().map(|(b, _)| *b).collect();
    let got = node(
        block("graphql check"),
        "console.log(JSON.stringify(input.map(graphqlOk)));",
        &serde_json::json!(bodies),
    );
    let got: Vec<bool> = serde_json::from_value(got).expect("booleans");
    for ((body, want), got) in cases.iter().zip(got) {
        assert_eq!(got, *want, "{body}");
    }
}

/// The LoadTest CRD validates durations with `duration::PATTERN` (and refuses
/// `duration::ZERO_PATTERN`); both admit exactly what the parser reads.
#[test]
fn crd_patterns_admit_exactly_what_parses() {
    let pattern = regex::Regex::new(duration::PATTERN).expect("valid pattern");
    let zero = regex::Regex::new(duration::ZERO_PATTERN).expect("valid pattern");
    let mut cases: Vec<String> = duration_cases().into_iter().map(|(t, _)| t).collect();
    cases.extend(["0s", "0.0m0s", "00ms", "0.5s", "0s1ms", "10s"].map(String::from));
    for text in cases {
        let parsed = duration::parse(&text);
        assert_eq!(pattern.is_match(&text), parsed.is_ok(), "{text:?}");
        if let Ok(d) = parsed {
            assert_eq!(zero.is_match(&text), d.is_zero(), "{text:?}");
        }
    }
}

/// subscriptions.js carries the same blocks (its own single-file script for the operator's
/// ConfigMap), so what is checked above holds for it too.
#[test]
fn subscriptions_js_shares_the_checked_blocks() {
    let subscriptions = graphfleet_bench_model::K6_SUBSCRIPTIONS_JS;
    for name in ["durations", "latency histogram"] {
        let start = subscriptions
            .find(&format!("// BEGIN {name}"))
            .expect("the BEGIN marker");
        let end = subscriptions
            .find(&format!("// END {name}"))
            .expect("the END marker");
        assert_eq!(&subscriptions[start..end], block(name), "{name}");
    }
}
