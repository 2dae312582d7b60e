//! The config file a GraphGateway's pods read (`gateway.json`): `spec.config` as the user
//! wrote it, the operator's shutdown timings unless set there, the fleet's usage file
//! for plan warm-up, and the paths of the files `spec.mounts` brings in. It is read and validated exactly as the gateway will read it,
//! so a config the gateway would refuse never reaches a pod.

use serde_json::{Map, Value};

use super::gateway_mounts::{Mounted, Target};
use graphfleet_admin_api::DEFAULT_ADMIN_PORT;
use graphfleet_api::{GraphGateway, Strategy};

/// Keys the operator owns: the pods listen on the gateway port and serve the supergraph
/// the operator composes (both passed as flags), and answer the operator on the admin
/// port.
const OPERATOR_KEYS: &[(&str, &str)] = &[
    (
        "listen",
        "the pods listen on port 4000 behind the gateway's Service",
    ),
    (
        "supergraph",
        "the operator composes and mounts the supergraph",
    ),
    (
        "admin",
        "the operator reads each pod's admin listener on port 9180",
    ),
];
/// Nested keys the operator owns, as (mapping, key, why).
const OPERATOR_NESTED_KEYS: &[(&str, &str, &str)] = &[(
    "usage",
    "warm_up_file",
    "each pod plans the fleet's operations from the usage ConfigMap the operator mounts",
)];
/// Longest `usage.warm_up_timeout` a pod may have: its listener opens after the warm-up,
/// and the liveness probe (every 10 s, 3 failures) kills a gateway whose listener is
/// still closed some 30 s after it started.
const MAX_WARM_UP_SECONDS: u64 = 20;
/// Seconds a terminating gateway stays listening (but unready) before it drains.
const READINESS_DELAY_SECONDS: u32 = 5;
/// Seconds from the end of the readiness delay until a gateway gives up on in-flight
/// requests.
const DRAIN_GRACE_SECONDS: u32 = 25;

/// Seconds a client connection is reused under the Canary strategy: a fraction of a
/// step's default pause, so a step sees its share of kept-alive clients.
const CANARY_CONNECTION_AGE_SECONDS: u32 = 30;

/// A GraphGateway's gateway config, rendered and checked.
#[derive(Debug, Clone)]
pub struct GatewayConfigFile {
    /// The file's text (JSON, keys sorted, so equal configs hash alike).
    pub text: String,
    /// The settings the gateway will run with (before its flags).
    pub config: graphfleet_config::Config,
}

impl GatewayConfigFile {
    /// The pod's kill deadline: the readiness delay and the drain, in whole seconds.
    pub fn termination_grace_seconds(&self) -> i64 {
        let shutdown = &self.config.shutdown;
        let total = shutdown.readiness_delay + shutdown.grace_period;
        i64::try_from(total.as_secs() + u64::from(total.subsec_nanos() > 0))
            .expect("a config duration fits in i64 seconds")
    }
}

/// The config file of `gw`'s pods, or every problem that keeps the gateway from
/// accepting it, each as `spec.config.<key>: <why>` (or `spec.mounts`).
pub fn gateway_config_file(
    gw: &GraphGateway,
    mounted: &Mounted,
) -> Result<GatewayConfigFile, Vec<String>> {
    let mut root = gw.spec.config.0.clone();
    let mut problems: Vec<String> = OPERATOR_KEYS
        .iter()
        .filter(|(key, _)| root.contains_key(*key))
        .map(|(key, why)| format!("spec.config.{key}: set by the operator ({why}); remove it"))
        .collect();
    for (mapping, key, why) in OPERATOR_NESTED_KEYS {
        if let Some(Value::Object(inner)) = root.get(*mapping)
            && inner.contains_key(*key)
        {
            problems.push(format!(
                "spec.config.{mapping}.{key}: set by the operator ({why}); remove it"
            ));
        }
    }
    // Pods serve the revision their template names; a new one comes with new pods.
    root.insert(
        "supergraph".to_owned(),
        serde_json::json!({ "watch": false }),
    );
    root.insert(
        "admin".to_owned(),
        serde_json::json!({ "listen": format!("0.0.0.0:{DEFAULT_ADMIN_PORT}") }),
    );
    shutdown_defaults(&mut root);
    canary_defaults(gw, &mut root);
    // The same path whatever the usage is, so a change of usage changes no pod template.
    // (Not a mapping: refused below, where the config is read.)
    if let Some(usage) = object(&mut root, "usage") {
        usage.insert(
            "warm_up_file".to_owned(),
            Value::from(super::gateway_usage::warm_up_file()),
        );
    }
    for (target, path) in &mounted.files {
        if let Err(why) = place(&mut root, target, path) {
            problems.push(why);
        }
    }
    let value = Value::Object(root);
    let config: graphfleet_config::Config = match serde_path_to_error::deserialize(&value) {
        Ok(config) => config,
        Err(e) => {
            let at = e.path().to_string();
            let at = if at == "." {
                String::new()
            } else {
                format!(".{at}")
            };
            problems.push(format!("spec.config{at}: {}", e.inner()));
            return Err(problems);
        }
    };
    if config.usage.warm_up_timeout > std::time::Duration::from_secs(MAX_WARM_UP_SECONDS) {
        problems.push(format!(
            "spec.config.usage.warm_up_timeout: at most {MAX_WARM_UP_SECONDS}s in a pod \
             (its listener opens after the warm-up, and the liveness probe kills a gateway \
             still closed some 30 s after it started)"
        ));
    }
    problems.extend(
        graphfleet_config::validate(&config)
            .into_iter()
            .map(|(path, why)| format!("spec.config.{}: {why}", path.join("."))),
    );
    if !problems.is_empty() {
        return Err(problems);
    }
    let text = serde_json::to_string_pretty(&value).expect("JSON values always serialize");
    Ok(GatewayConfigFile { text, config })
}

/// Pods: readiness fails at SIGTERM, the listener stays open while endpoints controllers
/// stop routing here, then in-flight requests drain; the pod's kill deadline follows.
fn shutdown_defaults(root: &mut Map<String, Value>) {
    let Some(shutdown) = object(root, "shutdown") else {
        return;
    };
    for (key, seconds) in [
        ("readiness_delay", READINESS_DELAY_SECONDS),
        ("grace_period", DRAIN_GRACE_SECONDS),
    ] {
        shutdown
            .entry(key)
            .or_insert_with(|| Value::from(format!("{seconds}s")));
    }
}

/// Under the Canary strategy kept-alive client connections are renewed now and then
/// (unless the user says otherwise), so the canary pods see their share of clients that
/// connected before they existed.
fn canary_defaults(gw: &GraphGateway, root: &mut Map<String, Value>) {
    let canary = gw
        .spec
        .rollout
        .as_ref()
        .and_then(|r| r.strategy)
        .is_some_and(|s| s == Strategy::Canary);
    if !canary {
        return;
    }
    if let Some(traffic) = object(root, "traffic") {
        traffic
            .entry("max_connection_age")
            .or_insert_with(|| Value::from(format!("{CANARY_CONNECTION_AGE_SECONDS}s")));
    }
}

/// A mounted file's path at its config key; the key must not be set by the user too.
fn place(root: &mut Map<String, Value>, target: &Target, path: &str) -> Result<(), String> {
    match target {
        Target::Set(keys) => {
            let (last, parents) = keys.split_last().expect("a target names a key");
            let mut at = root;
            for key in parents {
                at = object(at, key).ok_or_else(|| not_an_object(keys, key))?;
            }
            if at.contains_key(last) {
                return Err(format!(
                    "spec.config.{}: also set by spec.mounts; set it in one place",
                    keys.join(".")
                ));
            }
            at.insert(last.clone(), Value::from(path));
        }
        Target::Jwks => {
            let authn = object(root, "authentication")
                .ok_or_else(|| "spec.config.authentication: must be a mapping".to_owned())?;
            let jwks = authn
                .entry("jwks")
                .or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(sources) = jwks else {
                return Err("spec.config.authentication.jwks: must be a list".to_owned());
            };
            sources.push(serde_json::json!({ "file": path }));
        }
    }
    Ok(())
}

/// The mapping at `key` (made when absent), or `None` when `key` holds something else.
fn object<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    match map.entry(key).or_insert_with(|| Value::Object(Map::new())) {
        Value::Object(inner) => Some(inner),
        _ => None,
    }
}

fn not_an_object(keys: &[String], key: &str) -> String {
    let upto: Vec<&str> = keys
        .iter()
        .map(String::as_str)
        .take_while(|k| *k != key)
        .chain([key])
        .collect();
    format!("spec.config.{}: must be a mapping", upto.join("."))
}
