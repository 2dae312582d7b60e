use super::*;
use crate::podsample::Tick;

const QUERY: &str = include_str!("../../fixtures/loadtest-fed-query.json");
const LIST: &str = include_str!("../../fixtures/loadtests-list.json");

fn known() -> Vec<Scenario> {
    crate::scenario::discover(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../sets"))
        .expect("scenarios")
}

/// Ticks every 100 ms over `[from, to]`: `cores` busy, memory `mib` MiB.
fn resources(from: f64, to: f64, cores: f64, mib: u64) -> Resources {
    let n = ((to - from) * 10.0).round() as usize;
    Resources {
        namespace: "graphfleet-demo".into(),
        selector: "app.kubernetes.io/instance=fed".into(),
        machine: crate::host::Machine {
            cpu: "Test CPU".into(),
            cores: 2,
            memory: "8.0 GiB".into(),
            kernel: "6.1.0".into(),
        },
        interval_ms: 100,
        memory_metric: crate::podsample::MEMORY_METRIC.into(),
        node_cpus: BTreeMap::from([("router-0".into(), "0".into())]),
        pods: vec![],
        ticks: (0..=n)
            .map(|i| Tick {
                at: from + i as f64 * 0.1,
                cpu_s: i as f64 * 0.1 * cores,
                mem: mib * 1024 * 1024,
                pods: 1,
            })
            .collect(),
    }
}

fn rows<'a>(md: &'a str, section: &str, table: &str) -> Vec<&'a str> {
    let s = &md[md.find(&format!("# {section}\n")).expect(section)..];
    let t = &s[s.find(&format!("## {table}")).expect(table)..];
    t.lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect()
}

#[test]
fn a_loadtest_status_becomes_the_report_tables() {
    let lts = parse(QUERY).expect("parse");
    assert_eq!(lts.len(), 1);
    // fed-query ran 2025-11-23T21:00:00Z → 21:00:35Z; the sampler covered it.
    let start = 1_763_931_600.0;
    let res = resources(start - 5.0, start + 40.0, 0.5, 40);
    let report = report(
        &lts,
        &[res],
        &known(),
        vec![("helm install → operator Available".into(), "12 s".into())],
        "abc123",
    );
    let md = crate::report::markdown(&report);
    assert!(md.starts_with("# System Information\n"), "{md}");
    assert!(md.contains("- Source: LoadTest status"), "{md}");
    assert!(md.contains("- Placement: router-0 on CPU 0"), "{md}");
    assert!(md.contains("- Git Commit: abc123"), "{md}");
    assert!(
        md.contains(
            "Set `fed`. k6 runs an open model (constant-arrival-rate) at 100 requests/s for 30 s."
        ),
        "{md}"
    );
    let lat = rows(&md, "query", "Latencies (ms)");
    assert_eq!(
        lat,
        ["| fed (fed-query) | 1.9 | 3.1 | 4.2 | 5.0 | 8.8 | 21.4 |                 - |"]
    );
    let res_rows = rows(&md, "query", "Resources");
    assert_eq!(res_rows.len(), 1);
    let cells: Vec<&str> = res_rows[0].split('|').map(str::trim).collect();
    assert_eq!(cells[1], "fed (fed-query)");
    assert_eq!(cells[2], "50% ±0%", "{}", res_rows[0]);
    assert_eq!(cells[5], "40 MiB");
    // 3000 requests / (35 s × 0.5 cores)
    assert_eq!(cells[6], "171.4", "{}", res_rows[0]);
    let req = rows(&md, "query", "Requests");
    assert_eq!(
        req,
        [
            "| fed (fed-query) |     3000 |        0 |       0 |          100.0 |               not counted |"
        ]
    );
    assert!(md.contains("# Timings\n"), "{md}");
    assert!(
        md.contains("| helm install → operator Available | 12 s |"),
        "{md}"
    );
    let g = &report.gateways[0];
    assert_eq!(g.name, "graphfleet-demo/fed-query");
    assert!(
        g.status
            .contains("`http://fed.graphfleet-demo.svc:80/graphql`, 100 req/s for 30s"),
        "{}",
        g.status
    );
}

/// A LoadTest over several targets: a row per target, with that target's results.
#[test]
fn each_target_of_a_loadtest_is_a_row() {
    let mut lt: serde_json::Value = serde_json::from_str(QUERY).expect("JSON");
    let target = lt["spec"]["target"].take();
    lt["spec"].as_object_mut().expect("spec").remove("target");
    lt["spec"]["targets"] = serde_json::json!([
        { "name": "graphfleet", "gatewayRef": target["gatewayRef"] },
        { "name": "other", "url": "http://other.graphfleet-demo.svc:4000/graphql" },
    ]);
    let mut slower = lt["status"]["results"].clone();
    slower["latencyMs"]["p99"] = 30.0.into();
    lt["status"]["targets"] = serde_json::json!([
        { "name": "graphfleet", "url": "http://fed.graphfleet-demo.svc:80/graphql",
          "phase": "Succeeded", "results": lt["status"]["results"].clone() },
        { "name": "other", "url": "http://other.graphfleet-demo.svc:4000/graphql",
          "phase": "Succeeded", "results": slower },
    ]);
    let lts = parse(&lt.to_string()).expect("parse");
    let md = crate::report::markdown(&report(&lts, &[], &known(), vec![], "x"));
    let lat = rows(&md, "query", "Latencies (ms)");
    assert_eq!(lat.len(), 2, "{md}");
    assert!(lat[0].starts_with("| graphfleet (fed-query) |"), "{md}");
    assert!(lat[1].starts_with("| other (fed-query)      |"), "{md}");
    assert!(lat[1].contains("| 30.0 |"), "{md}");
}

#[test]
fn without_resources_the_rows_say_not_sampled() {
    let lts = parse(QUERY).expect("parse");
    let md = crate::report::markdown(&report(&lts, &[], &known(), vec![], "x"));
    let r = rows(&md, "query", "Resources");
    assert!(r[0].contains("not sampled"), "{r:?}");
    assert!(md.contains("- Resources: not sampled"), "{md}");
    // A resources file from another time covers nothing.
    let other = resources(1_000.0, 1_100.0, 1.0, 10);
    let md = crate::report::markdown(&report(&lts, &[other], &known(), vec![], "x"));
    assert!(rows(&md, "query", "Resources")[0].contains("not sampled"));
    assert!(md.contains("No resources file covers"), "{md}");
}

#[test]
fn a_list_groups_by_scenario_rate_and_duration_and_reports_failures() {
    let lts = parse(LIST).expect("parse");
    assert_eq!(lts.len(), 3);
    let report = report(&lts, &[], &known(), vec![], "x");
    // fed-query and fed-query-rollout differ in duration; the failed one is with its twin.
    let names: Vec<&str> = report.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["query-100rps-30s", "query-100rps-60s"]);
    let rollout = &report.scenarios[1];
    assert_eq!(rollout.gateways.len(), 2);
    assert!(matches!(rollout.gateways[0].outcome, Outcome::Measured(_)));
    match &rollout.gateways[1].outcome {
        Outcome::Failed { error } => {
            assert!(error.contains("k6 exited with code 99"), "{error}")
        }
        other => panic!("{other:?}"),
    }
    let md = crate::report::markdown(&report);
    let lat = rows(&md, "query-100rps-60s", "Latencies (ms)");
    assert!(
        lat[1].starts_with("| other-gw (broken) ") && lat[1].contains("errors"),
        "{lat:?}"
    );
    // Parallelism 2 explains its percentiles.
    assert!(
        rollout.description.contains("worst segment"),
        "{}",
        rollout.description
    );
    let dir = std::env::temp_dir().join(format!("graphfleet-bench-lt-{}", std::process::id()));
    crate::report::write(&report, &dir).expect("write");
    let svg =
        std::fs::read_to_string(dir.join("charts/query-100rps-60s-latency.svg")).expect("chart");
    // The measured gateway's bars are in the legend; the failed one has none.
    assert!(
        svg.contains("\nfed (fed-query-rollout)\n"),
        "latency chart legend: {svg}"
    );
    assert!(!svg.contains("other-gw"), "{svg}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rejects_what_is_not_a_loadtest() {
    let err = parse(r#"{"kind":"Pod","apiVersion":"v1"}"#).expect_err("pod");
    assert!(err.to_string().contains("kind Some(\"Pod\")"), "{err}");
    assert!(parse("nope").is_err());
}

#[test]
fn durations_and_timings() {
    assert_eq!(duration_s("30s"), Some(30.0));
    assert_eq!(duration_s("1h30m"), Some(5400.0));
    assert_eq!(duration_s("500ms"), Some(0.5));
    assert_eq!(duration_s("1h2m3.5s"), Some(3723.5));
    // What the CRD refuses is not read another way here (humantime took `30 sec`).
    assert_eq!(duration_s("30 sec"), None);
    assert_eq!(
        parse_timings("images built and imported: 41 s\nnoise\nx: \n"),
        [("images built and imported".to_owned(), "41 s".to_owned())]
    );
}
