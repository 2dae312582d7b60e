//! Safe schema delivery on the real nodes, with in-cluster load running throughout (the
//! operator as a pod, the fed subgraphs on subgraph-0, gateway pods on router-0, k6 on
//! client-0), the GraphGateway of `manifests/graphgateway-canary.yaml`:
//!   a. a compatible SDL change goes stable → canary 25% → 50% → every pod, failing no
//!      request;
//!   b. a change removing a field the served TestQuery uses is blocked before any pod
//!      changes, naming the operation; removing a field nobody asks for goes through;
//!   c. a config change that passes every check but makes the canary's answers fail is
//!      rolled back by the operator, its failed requests within the canary's share;
//!   e. with a LoadTest gating each step (against the canary pods alone), a compatible
//!      change goes through both steps, each LoadTest passing its thresholds;
//!   d. `spec.supergraph.revision` pinned back to the first revision serves it on every
//!      pod, failing no request.
//! Each timing is printed (`TIMING name: value`) and, when `GRAPHFLEET_TIMINGS` names a
//! file, appended to it: the main job (`scripts/run.sh`) runs this test for its report.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use graphfleet_deploy_tests::fleet::{
    READY, fed_sdl, fed_subgraphs_running, finished, gateway_ready_from_pods, loadtest,
    loadtest_running, post, service_url, succeeded_without_failures, test_query,
};
use graphfleet_deploy_tests::real::{
    apply, install_operator, json_of, kubectl, uninstall_operator,
};
use graphfleet_deploy_tests::{eventually, manifests_dir, read, run_ok};
use graphfleet_testkit::{RealCluster, TestNamespace, pool_placement, real_cluster};
use serde_json::{Value, json};

const GATEWAY: &str = "fed-canary";
/// Requests per second of every LoadTest here.
const RATE: u32 = 30;
/// Longest a canary may take from a change to every pod.
const DELIVERED: Duration = Duration::from_secs(240);

/// `name: value` printed and appended to `$GRAPHFLEET_TIMINGS`, if set.
fn timing(name: &str, value: String) {
    println!("TIMING {name}: {value}");
    if let Some(path) = std::env::var_os("GRAPHFLEET_TIMINGS") {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("open the timings file");
        writeln!(file, "{name}: {value}").expect("append a timing");
    }
}

fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// The example manifest with short steps (10 s) and connections renewed every 2 s, so
/// a step sees its share of the load within its pause; small CPU requests, so stable,
/// canary and surge pods fit router-0 together.
fn canary_manifest() -> String {
    let manifest = read(&manifests_dir().join("graphgateway-canary.yaml"));
    let mut out = manifest.clone();
    for (from, to, count) in [
        ("pause: 30s", "pause: 10s", 2),
        ("max_connection_age: 10s", "max_connection_age: 2s", 1),
        ("cpu: 250m", "cpu: 100m", 1),
        // New pods plan their first operations cold; on two shared cores their p99 over a
        // 10 s step is noisy. The error rates are what these steps are judged on.
        ("maxP99Ratio: 3", "maxP99Ratio: 20", 1),
    ] {
        assert_eq!(out.matches(from).count(), count, "{from} in the manifest");
        out = out.replace(from, to);
    }
    out
}

fn gateway(cluster: &RealCluster, ns: &str) -> Value {
    json_of(cluster, ns, &["graphgateway", GATEWAY])
}

fn patch(cluster: &RealCluster, ns: &str, what: &[&str], patch: &Value) {
    run_ok(
        kubectl(cluster, ns).arg("patch").args(what).args([
            "--type",
            "merge",
            "-p",
            &patch.to_string(),
        ]),
        None,
    );
}

fn set_sdl(cluster: &RealCluster, ns: &str, subgraph: &str, sdl: &str) {
    patch(
        cluster,
        ns,
        &["subgraph", subgraph],
        &json!({ "spec": { "sdl": sdl } }),
    );
}

/// Names of the gateway's canary pods (terminating ones too).
fn canary_pods(cluster: &RealCluster, ns: &str) -> Vec<String> {
    let selector = format!("app.kubernetes.io/instance={GATEWAY},graphfleet.dev/track=canary");
    let pods = json_of(cluster, ns, &["pods", "-l", &selector]);
    pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// The newest revision once it is none of `known`.
async fn new_revision(cluster: &RealCluster, ns: &str, known: &[&str]) -> Value {
    eventually("a new supergraph revision", READY, || async {
        let gw = gateway(cluster, ns);
        let newest = gw["status"]["revisions"][0].clone();
        match newest["hash"].as_str() {
            Some(hash) if !known.contains(&hash) => Ok(newest),
            _ => Err(gw["status"].to_string()),
        }
    })
    .await
}

/// What a canary went through on its way to every pod.
struct Delivery {
    /// The canary's real shares of the pods, in the order the steps showed them.
    shares: Vec<u64>,
    /// From the change until every pod serves `hash` and no canary pod is left.
    took: Duration,
    /// The step LoadTests the canary named (load-gated canaries only), in order.
    load_tests: Vec<String>,
}

/// Waits until `hash` is served by every pod with no canary left, noting the canary's
/// shares on the way.
async fn delivered(cluster: &RealCluster, ns: &str, hash: &str, since: Instant) -> Delivery {
    let mut shares = Vec::new();
    let mut load_tests = Vec::new();
    let deadline = since + DELIVERED;
    loop {
        let gw = gateway(cluster, ns);
        let status = &gw["status"];
        let canary = &status["canary"];
        assert_ne!(canary["phase"], "RolledBack", "{status}");
        if canary["phase"] == "Progressing" && canary["stepStartedAt"].is_string() {
            let share = canary["sharePercent"].as_u64().expect("sharePercent");
            if shares.last() != Some(&share) {
                println!("canary at {share}% after {:?}", since.elapsed());
                shares.push(share);
            }
        }
        if let Some(lt) = canary["loadTest"].as_str()
            && !load_tests.iter().any(|seen| seen == lt)
        {
            println!("canary step LoadTest {lt} after {:?}", since.elapsed());
            load_tests.push(lt.to_owned());
        }
        let ready = status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Ready" && c["status"] == "True")
            .and_then(|c| c["message"].as_str())
            .unwrap_or_default()
            .to_owned();
        let everywhere = ready.starts_with("3/3 pods serve supergraph ")
            && ready.contains(hash)
            && status["phase"] == "Serving";
        // Settled: no canary pod and no old pod left that is not yet shutting down.
        if everywhere
            && canary_pods(cluster, ns).is_empty()
            && fleet_state(cluster, ns).1.len() == 3
        {
            return Delivery {
                shares,
                took: since.elapsed(),
                load_tests,
            };
        }
        assert!(
            Instant::now() < deadline,
            "{hash} not on every pod after {DELIVERED:?}: {status}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The pod template's supergraph and the names of the gateway's pods that are not shutting
/// down (pods of the last rollout may still be draining when a step starts).
fn fleet_state(cluster: &RealCluster, ns: &str) -> (String, BTreeSet<String>) {
    let deployment = json_of(cluster, ns, &["deployment", GATEWAY]);
    let template =
        deployment["spec"]["template"]["metadata"]["annotations"]["graphfleet.dev/supergraph-hash"]
            .as_str()
            .expect("the template names its supergraph")
            .to_owned();
    let selector = format!("app.kubernetes.io/instance={GATEWAY}");
    let pods = json_of(cluster, ns, &["pods", "-l", &selector]);
    let names = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    (template, names)
}

/// a. A description on `Review`: compatible, so checked, canaried and promoted.
async fn compatible_change_through_the_canary(cluster: &RealCluster, ns: &str) -> String {
    let served = gateway(cluster, ns)["status"]["supergraphHash"]
        .as_str()
        .expect("a served revision")
        .to_owned();
    let described = fed_sdl("reviews").replacen(
        "type Review @key",
        "\"Reviews, shipped through a canary\"\ntype Review @key",
        1,
    );
    let start = Instant::now();
    set_sdl(cluster, ns, "reviews", &described);
    let revision = new_revision(cluster, ns, &[&served]).await;
    let hash = revision["hash"].as_str().expect("hash").to_owned();
    assert!(revision["breakingChanges"].is_null(), "{revision}");
    assert!(
        revision["operationsChecked"].as_u64().unwrap_or(0) >= 1,
        "checked against the served TestQuery: {revision}"
    );
    timing(
        "delivery a — SDL change → checked revision",
        seconds(start.elapsed()),
    );
    let delivery = delivered(cluster, ns, &hash, start).await;
    assert_eq!(delivery.shares, [25, 50], "the canary's steps");
    timing(
        "delivery a — SDL change → canary 25% → 50% → every pod",
        seconds(delivery.took),
    );
    hash
}

/// b. `Review.body` removed: TestQuery asks for it, so the change is blocked; then
/// `User.birthday` removed: breaking, but nothing served asks for it, so it ships.
async fn breaking_changes_judged_by_traffic(cluster: &RealCluster, ns: &str, served: &str) {
    let before = fleet_state(cluster, ns);
    let described = fed_sdl("reviews").replacen(
        "type Review @key",
        "\"Reviews, shipped through a canary\"\ntype Review @key",
        1,
    );
    let without_body = described.replacen("  body: String\n", "", 1);
    assert_ne!(without_body, described, "Review declares body");
    let start = Instant::now();
    set_sdl(cluster, ns, "reviews", &without_body);
    let status = eventually("the change is blocked", READY, || async {
        let status = gateway(cluster, ns)["status"].clone();
        let composed = status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Composed")
            .cloned()
            .unwrap_or_default();
        if composed["reason"] == "OperationsBlocked" {
            Ok(status)
        } else {
            Err(status.to_string())
        }
    })
    .await;
    timing(
        "delivery b — breaking SDL change → blocked",
        seconds(start.elapsed()),
    );
    let error = &status["compositionErrors"][0];
    assert_eq!(error["code"], "INVALID_OPERATION", "{status}");
    let message = error["message"].as_str().expect("message");
    assert!(
        message.starts_with("TestQuery (id ") && message.contains("`body`"),
        "{message}"
    );
    let blocked = &status["revisions"][0];
    assert_eq!(blocked["outcome"], "Blocked", "{status}");
    let blocked = blocked["hash"].as_str().expect("hash");
    assert_eq!(status["supergraphHash"], served, "{status}");
    assert_eq!(fleet_state(cluster, ns), before, "no pod changed");
    assert!(canary_pods(cluster, ns).is_empty(), "no canary started");
    println!("blocked: {message}");

    set_sdl(cluster, ns, "reviews", &described);
    let accounts = fed_sdl("accounts");
    let without_birthday = accounts.replacen("  birthday: Int\n", "", 1);
    assert_ne!(without_birthday, accounts, "User declares birthday");
    let start = Instant::now();
    set_sdl(cluster, ns, "accounts", &without_birthday);
    let revision = new_revision(cluster, ns, &[served, blocked]).await;
    let hash = revision["hash"].as_str().expect("hash").to_owned();
    let breaking = revision["breakingChanges"].to_string();
    assert!(breaking.contains("User.birthday"), "{revision}");
    assert_ne!(revision["outcome"], "Blocked", "{revision}");
    let delivery = delivered(cluster, ns, &hash, start).await;
    timing(
        "delivery b — breaking but unused SDL change → every pod",
        seconds(delivery.took),
    );
}

/// c. The canary's config sends reviews fetches to a closed port: every check passes (the
/// supergraph is unchanged), the canary's answers carry errors, and it is rolled back.
async fn failing_canary_rolled_back(cluster: &RealCluster, ns: &str) {
    let before = fleet_state(cluster, ns);
    let dead_reviews = json!({ "spec": { "config": { "subgraphs": {
        "reviews": { "url": "http://127.0.0.1:9/graphql" }
    } } } });
    let load = Instant::now();
    loadtest(cluster, ns, GATEWAY, "delivery-rollback", RATE, 50);
    loadtest_running(cluster, ns, "delivery-rollback").await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let start = Instant::now();
    patch(cluster, ns, &["graphgateway", GATEWAY], &dead_reviews);
    let canary = eventually("the canary rolled back", DELIVERED, || async {
        let canary = gateway(cluster, ns)["status"]["canary"].clone();
        if canary["phase"] == "RolledBack" {
            Ok(canary)
        } else {
            Err(canary.to_string())
        }
    })
    .await;
    let detected = start.elapsed();
    eventually("no canary pod left", READY, || async {
        match canary_pods(cluster, ns) {
            pods if pods.is_empty() => Ok(()),
            pods => Err(format!("{pods:?}")),
        }
    })
    .await;
    timing(
        "delivery c — failing canary → rolled back",
        seconds(detected),
    );
    timing(
        "delivery c — failing canary → canary pods gone",
        seconds(start.elapsed()),
    );
    let message = canary["message"].as_str().expect("message");
    assert!(
        message.contains("failed") && message.contains('%'),
        "{message}"
    );
    println!("rolled back: {message}");
    assert_eq!(
        fleet_state(cluster, ns).0,
        before.0,
        "the stable pods kept their revision"
    );

    let status = finished(
        cluster,
        ns,
        "delivery-rollback",
        "LoadTest delivery-rollback: a canary failing under load",
        load,
    )
    .await;
    let failures = status["results"]["failures"].as_u64().expect("failures");
    let requests = status["results"]["requests"].as_u64().expect("requests");
    let share = canary["sharePercent"].as_f64().expect("sharePercent");
    // The canary existed only between the change and its removal, with `share` of the
    // pods: at most that share of that window's requests can have failed (kept-alive
    // connections are spread afresh every 2 s; half again for how they happen to fall).
    let window = start.elapsed().as_secs_f64();
    let bound = f64::from(RATE) * window * share / 100.0 * 1.5 + 10.0;
    timing(
        "delivery c — requests failed on the canary",
        format!("{failures} of {requests} (bound {bound:.0}, canary share {share}%)"),
    );
    assert!(failures > 0, "the canary failed requests: {status}");
    assert!(
        (failures as f64) <= bound,
        "{failures} failed, more than the canary's share allows ({bound:.0}): {status}"
    );

    // The config put back: the template is the stable one again and the canary is over.
    patch(
        cluster,
        ns,
        &["graphgateway", GATEWAY],
        &json!({ "spec": { "config": { "subgraphs": null } } }),
    );
    eventually("the rolled back canary cleared", READY, || async {
        let status = gateway(cluster, ns)["status"].clone();
        if status["canary"].is_null() && status["phase"] == "Serving" {
            Ok(())
        } else {
            Err(status.to_string())
        }
    })
    .await;
    assert_eq!(fleet_state(cluster, ns), before, "no pod changed");
}

/// e. The load-gated canary: each step also runs a LoadTest against the canary pods alone
/// (`spec.rollout.canary.loadTest`) and passes only with its thresholds met; a compatible
/// change goes through both steps that way.
async fn load_gated_canary(cluster: &RealCluster, ns: &str) {
    let served = gateway(cluster, ns)["status"]["supergraphHash"]
        .as_str()
        .expect("a served revision")
        .to_owned();
    // A small k6 pod: it shares client-0 with the background load's (1 CPU by default).
    let gate = json!({ "spec": { "rollout": { "canary": { "loadTest": {
        "scenario": "query", "rate": 20, "duration": "12s", "vus": 10, "maxVus": 50,
        "resources": {
            "requests": { "cpu": "250m", "memory": "128Mi" },
            "limits": { "cpu": "500m", "memory": "512Mi" }
        },
        "thresholds": { "maxErrorPercent": 0.5, "minAchievedRatePercent": 90 },
        "placement": pool_placement("client")
    } } } } });
    patch(cluster, ns, &["graphgateway", GATEWAY], &gate);
    let products = fed_sdl("products");
    let described = products.replacen(
        "  topProducts(",
        "  \"Best sellers, shipped through a load-gated canary\"\n  topProducts(",
        1,
    );
    assert_ne!(described, products, "products declares Query.topProducts");
    let load = Instant::now();
    loadtest(cluster, ns, GATEWAY, "delivery-gated", RATE, 60);
    loadtest_running(cluster, ns, "delivery-gated").await;
    let start = Instant::now();
    set_sdl(cluster, ns, "products", &described);
    let revision = new_revision(cluster, ns, &[&served]).await;
    let hash = revision["hash"].as_str().expect("hash").to_owned();
    let delivery = delivered(cluster, ns, &hash, start).await;
    assert_eq!(delivery.shares, [25, 50], "the canary's steps");
    assert_eq!(delivery.load_tests.len(), 2, "one LoadTest per step");
    for name in &delivery.load_tests {
        let lt = json_of(cluster, ns, &["loadtest", name]);
        let status = &lt["status"];
        assert_eq!(status["phase"], "Succeeded", "{name}: {status}");
        let passed = status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Passed")
            .cloned()
            .unwrap_or_default();
        assert_eq!(passed["status"], "True", "{name}: {status}");
        assert!(
            lt["spec"]["target"]["url"]
                .as_str()
                .is_some_and(|url| url.contains(&format!("{GATEWAY}-canary"))),
            "{name} loads the canary Service alone: {lt}"
        );
        println!(
            "{name}: {} requests, {} failed",
            status["results"]["requests"], status["results"]["failures"]
        );
    }
    timing(
        "delivery e — SDL change → load-gated canary (a LoadTest per step) → every pod",
        seconds(delivery.took),
    );
    // By now the operator has saved the fleet's usage (`<gateway>-usage`), so the new pods
    // planned the served TestQuery before they reported ready.
    let (_, pods) = fleet_state(cluster, ns);
    for pod in &pods {
        let log = run_ok(kubectl(cluster, ns).args(["logs", pod.as_str()]), None);
        let warmed = log
            .lines()
            .find_map(|l| l.split("graphfleet-gateway warmed ").nth(1))
            .unwrap_or_else(|| panic!("{pod} did not warm its plan cache:\n{log}"));
        assert!(!warmed.starts_with("0 plans"), "{pod} warmed {warmed}");
        println!("{pod} warmed {warmed}");
    }
    let status = succeeded_without_failures(
        cluster,
        ns,
        "delivery-gated",
        "LoadTest delivery-gated: a load-gated canary under load",
        load,
    )
    .await;
    timing(
        "delivery e — failed requests through the load-gated canary",
        status["results"]["failures"].to_string(),
    );
    patch(
        cluster,
        ns,
        &["graphgateway", GATEWAY],
        &json!({ "spec": { "rollout": { "canary": { "loadTest": null } } } }),
    );
}

/// d. Pinning the first revision serves it on every pod again.
async fn pinned_back(cluster: &RealCluster, ns: &str, first: &str) {
    let load = Instant::now();
    loadtest(cluster, ns, GATEWAY, "delivery-pin", RATE, 75);
    loadtest_running(cluster, ns, "delivery-pin").await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let start = Instant::now();
    patch(
        cluster,
        ns,
        &["graphgateway", GATEWAY],
        &json!({ "spec": { "supergraph": { "revision": first } } }),
    );
    let delivery = delivered(cluster, ns, first, start).await;
    timing(
        "delivery d — revision pinned back → every pod",
        seconds(delivery.took),
    );
    let url = service_url(cluster, ns, GATEWAY);
    let answer = post(
        cluster,
        &url,
        r#"{ __type(name: "User") { fields { name } } }"#,
    )
    .expect("introspection through the Service");
    assert!(
        answer.contains("birthday"),
        "the first revision's schema: {answer}"
    );
    let status = succeeded_without_failures(
        cluster,
        ns,
        "delivery-pin",
        "LoadTest delivery-pin: a revision pinned back under load",
        load,
    )
    .await;
    timing(
        "delivery d — failed requests while pinning back",
        status["results"]["failures"].to_string(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_changes_ship_through_checks_and_a_canary_on_real_nodes() {
    let cluster = real_cluster();
    let client = cluster.client().await;
    let ns = TestNamespace::create(&client, "real-delivery").await;
    let ns = ns.name().to_owned();
    install_operator(cluster, &ns);
    fed_subgraphs_running(cluster, &ns);
    let start = Instant::now();
    apply(cluster, &ns, &canary_manifest());
    let (ready_in, _) = gateway_ready_from_pods(cluster, &ns, GATEWAY, start).await;
    timing(
        "delivery — canary GraphGateway apply → Ready",
        seconds(ready_in),
    );
    let first = gateway(cluster, &ns)["status"]["supergraphHash"]
        .as_str()
        .expect("the first revision")
        .to_owned();
    let url = service_url(cluster, &ns, GATEWAY);
    let answer = eventually("TestQuery through the Service", READY, || async {
        post(cluster, &url, &test_query())
    })
    .await;
    assert!(!answer.contains("\"errors\""), "{answer}");

    // a and b under one load that must fail no request.
    let load = Instant::now();
    loadtest(cluster, &ns, GATEWAY, "delivery", RATE, 120);
    loadtest_running(cluster, &ns, "delivery").await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let described = compatible_change_through_the_canary(cluster, &ns).await;
    breaking_changes_judged_by_traffic(cluster, &ns, &described).await;
    let status = succeeded_without_failures(
        cluster,
        &ns,
        "delivery",
        "LoadTest delivery: changes checked, canaried and promoted under load",
        load,
    )
    .await;
    timing(
        "delivery a+b — failed requests through two canaries",
        status["results"]["failures"].to_string(),
    );

    failing_canary_rolled_back(cluster, &ns).await;
    load_gated_canary(cluster, &ns).await;
    pinned_back(cluster, &ns, &first).await;
    uninstall_operator(cluster, &ns);
}
