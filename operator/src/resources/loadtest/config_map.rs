//! The owned ConfigMap (script and POST body) and the volume the segments mount it from.

use super::names::{PAYLOAD_KEY, SCRIPT_KEY, config_map_name, labels, meta};
use super::spec::{SpecError, check_executor, scenario};
use std::collections::BTreeMap;

use graphfleet_bench_model::k6_script;
use k8s_openapi::api::core::v1::{ConfigMap, ConfigMapVolumeSource, KeyToPath, Volume};
use kube::ResourceExt;

use graphfleet_api::LoadTest;

/// The owned ConfigMap: the k6 script (built-in or inline) and, for a scenario, the POST body
/// (Gatling's simulation is in its image: the body alone). `None` when the script comes from
/// the user's own ConfigMap.
pub fn config_map(lt: &LoadTest) -> Result<Option<ConfigMap>, SpecError> {
    check_executor(lt)?;
    let data = match (&lt.spec.scenario, &lt.spec.script) {
        (Some(name), None) => {
            let query = scenario(name)?
                .query()
                .map_err(|e| SpecError::BadScenario(name.clone(), e))?;
            let body = serde_json::json!({ "query": query });
            let mut data = BTreeMap::from([(PAYLOAD_KEY.to_owned(), body.to_string())]);
            if lt.spec.executor.is_k6() {
                data.insert(SCRIPT_KEY.to_owned(), k6_script(name).to_owned());
            }
            data
        }
        (None, Some(script)) => match &script.inline {
            Some(inline) => BTreeMap::from([(SCRIPT_KEY.to_owned(), inline.clone())]),
            None => return Ok(None),
        },
        _ => return Err(SpecError::NoScript),
    };
    Ok(Some(ConfigMap {
        metadata: meta(lt, config_map_name(&lt.name_any()), labels(lt)),
        data: Some(data),
        ..ConfigMap::default()
    }))
}

pub(super) fn script_volume(lt: &LoadTest) -> Volume {
    let user_ref = lt
        .spec
        .script
        .as_ref()
        .and_then(|s| s.config_map_ref.as_ref());
    let source = match user_ref {
        Some(r) => ConfigMapVolumeSource {
            name: r.name.clone(),
            items: Some(vec![KeyToPath {
                key: r.key.clone(),
                path: SCRIPT_KEY.to_owned(),
                ..KeyToPath::default()
            }]),
            ..ConfigMapVolumeSource::default()
        },
        None => ConfigMapVolumeSource {
            name: config_map_name(&lt.name_any()),
            ..ConfigMapVolumeSource::default()
        },
    };
    Volume {
        name: "script".to_owned(),
        config_map: Some(source),
        ..Volume::default()
    }
}
