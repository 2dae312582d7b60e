//! The immutable ConfigMaps a gateway's pod template names: one per supergraph revision
//! (`<gateway>-supergraph-<hash>`) and one per gateway config file
//! (`<gateway>-config-<hash>`). A new revision or config is a new ConfigMap and a new pod
//! template, so running pods never change schema or settings under themselves and an
//! old ReplicaSet keeps what it was built with.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;

use super::gateway_meta::{
    COMPONENT_LABEL, CONFIG_COMPONENT, REVISION_LABEL, SUPERGRAPH_COMPONENT, meta,
};
use super::short_hash;
use graphfleet_api::GraphGateway;
use kube::ResourceExt;

/// The revision ConfigMaps' name and key: the GraphGateway's contract (graphfleet-api).
pub use graphfleet_api::{SUPERGRAPH_KEY, supergraph_config_map_name};
/// The key holding the gateway config in a config ConfigMap.
pub const CONFIG_KEY: &str = "gateway.json";

/// The ConfigMap of a gateway config file with content hash `hash`.
pub fn config_file_config_map_name(gateway: &str, hash: &str) -> String {
    format!("{gateway}-config-{hash}")
}

/// The content hash naming a config file's ConfigMap.
pub fn config_hash(text: &str) -> String {
    short_hash(text.as_bytes())
}

/// Supergraph revision `hash` (the short SHA-256 of `sdl`), immutable.
pub fn supergraph_config_map(gw: &GraphGateway, sdl: &str, hash: &str) -> ConfigMap {
    let name = supergraph_config_map_name(&gw.name_any(), hash);
    let mut config_map = immutable(gw, name, SUPERGRAPH_COMPONENT, SUPERGRAPH_KEY, sdl);
    config_map
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(REVISION_LABEL.to_owned(), hash.to_owned());
    config_map
}

/// The pods' gateway config file, immutable, named by its content.
pub fn config_file_config_map(gw: &GraphGateway, text: &str) -> ConfigMap {
    let name = config_file_config_map_name(&gw.name_any(), &config_hash(text));
    immutable(gw, name, CONFIG_COMPONENT, CONFIG_KEY, text)
}

fn immutable(gw: &GraphGateway, name: String, component: &str, key: &str, text: &str) -> ConfigMap {
    let mut meta = meta(gw, name);
    meta.labels
        .get_or_insert_with(BTreeMap::new)
        .insert(COMPONENT_LABEL.to_owned(), component.to_owned());
    ConfigMap {
        metadata: meta,
        immutable: Some(true),
        data: Some(BTreeMap::from([(key.to_owned(), text.to_owned())])),
        ..ConfigMap::default()
    }
}

/// Which of a gateway's ConfigMaps (by name) to delete: revisions no longer kept, and
/// config files other than the newest `keep` (by creation) and the one in use.
pub fn collectable(
    gateway: &str,
    revisions: &[ConfigMap],
    kept_hashes: &[&str],
    configs: &[ConfigMap],
    config_in_use: &str,
    keep: usize,
) -> Vec<String> {
    let kept: Vec<String> = kept_hashes
        .iter()
        .map(|h| supergraph_config_map_name(gateway, h))
        .collect();
    let mut out: Vec<String> = revisions
        .iter()
        .map(ResourceExt::name_any)
        .filter(|name| !kept.contains(name))
        .collect();
    let mut configs: Vec<&ConfigMap> = configs.iter().collect();
    // Newest first; equal times (one-second resolution) by name for a stable order.
    configs.sort_by(|a, b| {
        b.metadata
            .creation_timestamp
            .cmp(&a.metadata.creation_timestamp)
            .then_with(|| a.name_any().cmp(&b.name_any()))
    });
    out.extend(
        configs
            .into_iter()
            .map(ResourceExt::name_any)
            .filter(|name| name != config_in_use)
            .skip(keep.saturating_sub(1)),
    );
    out
}
