//! The gateway config a GraphGateway's pods get: `spec.config` reaches the gateway exactly
//! as written (read by the gateway's own loader, the way the container runs it), the
//! operator's keys and `spec.mounts` are placed, and what the gateway would refuse is
//! refused before any pod changes, naming the key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use graphfleet_api::GraphGateway;
use graphfleet_gateway::config as gateway_config;
use graphfleet_operator::resources::gateway::{self, CONFIG_DIR, GatewayPods, SUPERGRAPH_DIR};
use graphfleet_operator::resources::gateway_mounts::MOUNTS_DIR;
use graphfleet_operator::resources::gateway_revisions::CONFIG_KEY;
use graphfleet_operator::resources::gateway_usage::warm_up_file;

fn fixture(name: &str) -> GraphGateway {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/gateways")
        .join(format!("{name}.yaml"));
    let text = std::fs::read_to_string(&path).expect("readable fixture");
    serde_yaml_ng::from_str(&text).expect("fixture is a GraphGateway")
}

fn with_spec(mut gw: GraphGateway, spec: serde_json::Value) -> GraphGateway {
    let mut value = serde_json::to_value(&gw.spec).expect("a spec serializes");
    json_merge(&mut value, spec);
    gw.spec = serde_json::from_value(value).expect("a valid spec");
    gw
}

fn json_merge(into: &mut serde_json::Value, from: serde_json::Value) {
    match (into, from) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                json_merge(a.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

/// Loads the config exactly as the gateway container would: its args, its environment,
/// and the rendered file at the path `GRAPHFLEET_CONFIG` names.
fn load_in_container(gw: &GraphGateway) -> Result<gateway_config::Config, String> {
    let pods = GatewayPods::of(gw).map_err(|p| p.join("\n"))?;
    let dir = std::env::temp_dir().join(format!(
        "graphfleet-operator-config-{}-{}",
        std::process::id(),
        graphfleet_operator::resources::short_hash(pods.config.text.as_bytes())
    ));
    std::fs::create_dir_all(&dir).expect("create a temp dir");
    let file = dir.join(CONFIG_KEY);
    std::fs::write(&file, &pods.config.text).expect("write the config file");
    let deployment = gateway::deployment(gw, &pods, "hash", "image");
    let pod = deployment.spec.expect("spec").template.spec.expect("pod");
    let container = &pod.containers[0];
    let env = container
        .env
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            let value = e.value.unwrap_or_default();
            if e.name == gateway_config::CONFIG_ENV {
                assert_eq!(value, format!("{CONFIG_DIR}/{CONFIG_KEY}"));
                (e.name, file.to_string_lossy().into_owned())
            } else {
                (e.name, value)
            }
        })
        .collect();
    let cli = gateway_config::parse_args(container.args.clone().unwrap_or_default())
        .map_err(|e| e.to_string())?;
    let loaded = gateway_config::load(&gateway_config::Sources {
        file: cli.config_file,
        env,
        flags: cli.overrides,
    });
    let _ = std::fs::remove_dir_all(&dir);
    loaded.map_err(|e| e.to_string())
}

/// What the gateway must run with: `spec.config` read as the gateway reads it, plus the
/// operator's listen address, supergraph and (unless set) shutdown timings.
fn expected(gw: &GraphGateway) -> gateway_config::Config {
    let mut config = gw
        .spec
        .config
        .parse()
        .expect("spec.config is a gateway config");
    config.listen = "0.0.0.0:4000".parse().expect("an address");
    config.supergraph.path = Some(Path::new(SUPERGRAPH_DIR).join("supergraph.graphql"));
    // A pod serves the revision its template names, never another.
    config.supergraph.watch = false;
    // The operator reads each pod's admin port.
    config.admin.listen = Some("0.0.0.0:9180".parse().expect("an address"));
    // Each pod plans the fleet's operations from the usage ConfigMap it mounts.
    config.usage.warm_up_file = Some(PathBuf::from(warm_up_file()));
    config
}

#[test]
fn an_empty_config_runs_with_the_gateway_defaults_and_drains_before_the_kill() {
    let gw = fixture("minimal");
    let config = load_in_container(&gw).expect("the gateway accepts it");
    let mut want = expected(&gw);
    want.shutdown.readiness_delay = Duration::from_secs(5);
    want.shutdown.grace_period = Duration::from_secs(25);
    assert_eq!(config, want);
    let pods = GatewayPods::of(&gw).expect("valid");
    let pod = gateway::deployment(&gw, &pods, "h", "img")
        .spec
        .expect("spec")
        .template
        .spec
        .expect("pod");
    let deadline = pod.termination_grace_period_seconds.expect("set");
    assert_eq!(
        Duration::from_secs(deadline as u64),
        config.shutdown.readiness_delay + config.shutdown.grace_period
    );
}

#[test]
fn every_setting_reaches_the_gateway_as_written() {
    let mut gw = fixture("full");
    // The mounted files exist only in a pod; their placement is checked below (and
    // `safelist` needs its list).
    gw.spec.mounts = None;
    gw.spec.config.0.remove("persisted_documents");
    let config = load_in_container(&gw).expect("the gateway accepts it");
    let mut want = expected(&gw);
    want.shutdown.readiness_delay = Duration::from_secs(5);
    want.shutdown.grace_period = Duration::from_secs(25);
    assert_eq!(config, want);
    // Spot checks that the fixture really sets what it means to.
    assert_eq!(config.traffic.request_timeout, Duration::from_secs(5));
    assert_eq!(
        config.traffic.http2,
        gateway_config::Http2Mode::PriorKnowledge
    );
    assert_eq!(config.limits.max_body_bytes, 2_000_000);
    assert_eq!(config.telemetry.tracing.sample_ratio, 0.25);
    assert_eq!(
        config.subgraphs["reviews"].timeout,
        Some(Duration::from_millis(500))
    );
    assert_eq!(config.headers.rules.len(), 3);
    assert_eq!(config.demand_control.max_cost, Some(5000));
}

#[test]
fn shutdown_timings_from_the_spec_set_the_kill_deadline() {
    let gw = with_spec(
        fixture("minimal"),
        serde_json::json!({ "config": { "shutdown": { "grace_period": "50s", "readiness_delay": "2500ms" } } }),
    );
    let config = load_in_container(&gw).expect("the gateway accepts it");
    assert_eq!(config.shutdown.grace_period, Duration::from_secs(50));
    let pods = GatewayPods::of(&gw).expect("valid");
    let pod = gateway::deployment(&gw, &pods, "h", "img")
        .spec
        .expect("spec")
        .template
        .spec
        .expect("pod");
    assert_eq!(pod.termination_grace_period_seconds, Some(53));
}

#[test]
fn mounted_files_are_volumes_and_config_paths() {
    let gw = fixture("full");
    let pods = GatewayPods::of(&gw).expect("valid");
    let config = &pods.config.config;
    let secret = |name: &str, key: &str| PathBuf::from(format!("{MOUNTS_DIR}/secret/{name}/{key}"));
    let config_map =
        |name: &str, key: &str| PathBuf::from(format!("{MOUNTS_DIR}/configmap/{name}/{key}"));
    assert_eq!(config.tls.cert_file, Some(secret("edge-tls", "tls.crt")));
    assert_eq!(config.tls.key_file, Some(secret("edge-tls", "tls.key")));
    assert_eq!(
        config.traffic.tls.ca_file,
        Some(config_map("internal-ca", "ca.crt"))
    );
    let reviews = config.subgraphs["reviews"]
        .tls
        .as_ref()
        .expect("reviews tls");
    assert_eq!(
        reviews.client_cert_file,
        Some(secret("reviews-client", "tls.crt"))
    );
    assert_eq!(
        reviews.client_key_file,
        Some(secret("reviews-client", "tls.key"))
    );
    let jwks = &config.authentication.jwks;
    assert_eq!(
        jwks.len(),
        2,
        "the URL from spec.config, then the mounted file"
    );
    assert_eq!(jwks[1].file, Some(secret("shop-jwks", "jwks.json")));
    assert_eq!(
        config.persisted_documents.path,
        Some(config_map("shop-operations", "manifest.json"))
    );
    assert_eq!(
        config.persisted_documents.mode,
        graphfleet_config::PersistedMode::Safelist
    );
    // One volume per object, mounted as a directory (the kubelet updates it in place).
    let names: Vec<_> = pods
        .mounted
        .volumes
        .iter()
        .map(|v| {
            v.secret
                .as_ref()
                .and_then(|s| s.secret_name.clone())
                .or_else(|| v.config_map.as_ref().map(|c| c.name.clone()))
                .expect("a secret or configmap volume")
        })
        .collect();
    assert_eq!(
        names,
        [
            "edge-tls",
            "reviews-client",
            "shop-jwks",
            "internal-ca",
            "shop-operations"
        ]
    );
    assert!(pods.mounted.mounts.iter().all(|m| m.sub_path.is_none()));
}

fn problems(spec: serde_json::Value) -> String {
    let gw = with_spec(fixture("minimal"), spec);
    GatewayPods::of(&gw)
        .expect_err("refused before any pod changes")
        .join("\n")
}

#[test]
fn what_the_gateway_would_refuse_is_refused_with_the_key() {
    insta::assert_snapshot!(
        "operator_keys",
        problems(serde_json::json!({ "config": {
                "listen": "0.0.0.0:80",
                "supergraph": { "watch": false },
                "usage": { "warm_up_file": "/mine.json", "warm_up_timeout": "1m" },
            } }))
    );
    insta::assert_snapshot!(
        "unknown_key",
        problems(serde_json::json!({ "config": { "traffic": { "request_timeout_ms": 5000 } } }))
    );
    insta::assert_snapshot!(
        "bad_duration",
        problems(serde_json::json!({ "config": { "traffic": { "request_timeout": "soon" } } }))
    );
    insta::assert_snapshot!(
        "semantic",
        problems(serde_json::json!({ "config": {
            "traffic": { "request_timeout": "0s" },
            "headers": { "rules": [{ "insert": { "name": "x", "value": "1" }, "remove": { "named": "y" } }] },
            "persisted_documents": { "mode": "require_id" },
        } }))
    );
    insta::assert_snapshot!(
        "set_twice",
        problems(serde_json::json!({
            "config": { "tls": { "cert_file": "/x.pem" } },
            "mounts": { "listenerTls": { "secretName": "tls" } },
        }))
    );
}
