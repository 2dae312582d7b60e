//! A GraphGateway's revisions beyond the reconcile itself: deleting the ones no longer
//! kept, and counting the pods that serve the one given.

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;
use kube::api::ListParams;

use super::{Context, Error, api, apply_or_delete};
use crate::resources;
use crate::resources::gateway::GatewayPods;
use crate::resources::gateway_meta as meta;
use crate::resources::gateway_revisions as revisions;
use graphfleet_api::{GraphGateway, SupergraphRevision};

/// Deletes the revision ConfigMaps no longer in `status.revisions` and all but the newest
/// config files (never the one in use).
pub(super) async fn collect_garbage(
    ctx: &Context,
    gw: &GraphGateway,
    ns: &str,
    kept: &[SupergraphRevision],
    pods: Option<&GatewayPods>,
) -> Result<(), Error> {
    let config_maps = api::<ConfigMap>(ctx, ns);
    let list = |component| {
        let params = ListParams::default().labels(&meta::component_selector(gw, component));
        let config_maps = config_maps.clone();
        async move { config_maps.list(&params).await.map(|l| l.items) }
    };
    let revision_maps = list(meta::SUPERGRAPH_COMPONENT).await?;
    let config_files = list(meta::CONFIG_COMPONENT).await?;
    let kept: Vec<&str> = kept.iter().map(|r| r.hash.as_str()).collect();
    let in_use = pods
        .map(|p| {
            revisions::config_file_config_map_name(
                &gw.name_any(),
                &revisions::config_hash(&p.config.text),
            )
        })
        .unwrap_or_default();
    let keep = gw.spec.revision_history_limit();
    for name in revisions::collectable(
        &gw.name_any(),
        &revision_maps,
        &kept,
        &config_files,
        &in_use,
        keep,
    ) {
        apply_or_delete(&config_maps, &name, None).await?;
    }
    Ok(())
}

/// Ready gateway pods started from a template naming revision `hash`.
pub(super) fn serving(pods: &[Pod], hash: Option<&str>) -> i32 {
    let Some(hash) = hash else { return 0 };
    let count = pods
        .iter()
        .filter(|p| {
            let names = p
                .annotations()
                .get(resources::gateway::SUPERGRAPH_HASH_ANNOTATION)
                .is_some_and(|h| h == hash);
            let ready = p
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
            names && ready && p.metadata.deletion_timestamp.is_none()
        })
        .count();
    i32::try_from(count).expect("pod counts fit in i32")
}
