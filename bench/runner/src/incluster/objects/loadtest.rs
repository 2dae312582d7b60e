//! The LoadTest of one scenario: every gateway a target of its own (run in turn by the
//! operator, never at once), each checked against its expected answer, and the ConfigMap
//! holding those answers.

use super::parts::{MAX_EXPECTED_IN_CONFIGMAP, dns_label, labels, meta, pool_placement};
use std::collections::BTreeMap;

use graphfleet_api::LoadTest;
use k8s_openapi::api::core::v1::ConfigMap;

/// What one target is and the answer it must give.
#[derive(Debug, Clone)]
pub struct TargetRun {
    /// The gateway's name (the target's).
    pub name: String,
    /// A GraphGateway by name, else a URL.
    pub gateway_ref: Option<String>,
    pub url: Option<String>,
    /// SHA-256 of the answer's bytes and the answer itself; empty: no answer to compare
    /// with (a request passes with data and no errors).
    pub sha256: String,
    pub answer: Vec<u8>,
}

/// How the scenario runs.
pub struct LoadRun<'a> {
    pub name: &'a str,
    pub scenario: &'a str,
    pub rate: u32,
    pub duration_s: u32,
    pub vus: u32,
    pub max_vus: u32,
}

impl LoadRun<'_> {
    /// The answers' ConfigMap and the LoadTest checking against it.
    pub fn build(&self, namespace: &str, targets: &[TargetRun]) -> (ConfigMap, LoadTest) {
        let answers = answers_config_map(self.name, namespace, targets);
        let lt = load_test(self, namespace, targets, &answers);
        (answers, lt)
    }
}

/// The ConfigMap of the LoadTest's expected answers, by target; answers over a ConfigMap's
/// size are left out (checked by their hash alone).
pub fn answers_config_map(lt: &str, namespace: &str, targets: &[TargetRun]) -> ConfigMap {
    let mut data = BTreeMap::new();
    let mut budget = MAX_EXPECTED_IN_CONFIGMAP;
    for t in targets {
        if !t.answer.is_empty()
            && t.answer.len() <= budget
            && let Ok(text) = std::str::from_utf8(&t.answer)
        {
            budget -= t.answer.len();
            data.insert(answer_key(&t.name), text.to_owned());
        }
    }
    ConfigMap {
        metadata: meta(&answers_name(lt), namespace, labels("loadtest", &[])),
        data: Some(data),
        ..ConfigMap::default()
    }
}

fn answers_name(lt: &str) -> String {
    dns_label(&format!("{lt}-answers"))
}

fn answer_key(target: &str) -> String {
    format!("{target}.json")
}

/// The LoadTest: open model at the scenario's rate, one k6 segment per target on the
/// client pool, each target's answer checked by hash (and by data, from `answers`, when it
/// fits there).
pub fn load_test(
    run: &LoadRun,
    namespace: &str,
    targets: &[TargetRun],
    answers: &ConfigMap,
) -> LoadTest {
    let held = answers.data.as_ref();
    let (node_selector, tolerations) = pool_placement("client");
    let targets: Vec<serde_json::Value> = targets
        .iter()
        .map(|t| {
            let key = answer_key(&t.name);
            let mut target = serde_json::json!({ "name": t.name });
            if !t.sha256.is_empty() {
                let mut expect = serde_json::json!({ "sha256": t.sha256 });
                if held.is_some_and(|d| d.contains_key(&key)) {
                    expect["configMapRef"] =
                        serde_json::json!({ "name": answers_name(run.name), "key": key });
                }
                target["expect"] = expect;
            }
            match (&t.gateway_ref, &t.url) {
                (Some(gw), _) => target["gatewayRef"] = serde_json::json!({ "name": gw }),
                (None, url) => target["url"] = serde_json::json!(url),
            }
            target
        })
        .collect();
    serde_json::from_value(serde_json::json!({
        "apiVersion": "graphfleet.dev/v1alpha1",
        "kind": "LoadTest",
        "metadata": meta(run.name, namespace, labels("loadtest", &[])),
        "spec": {
            "targets": targets,
            "scenario": run.scenario,
            "rate": run.rate,
            "duration": format!("{}s", run.duration_s),
            "vus": run.vus.max(1),
            "maxVus": run.max_vus.max(run.vus).max(1),
            "parallelism": 1,
            // The operator places load generators nowhere in particular: k6 on the client pool.
            "placement": { "nodeSelector": node_selector, "tolerations": tolerations },
        },
    }))
    .expect("the bench's LoadTest is a valid LoadTest")
}
