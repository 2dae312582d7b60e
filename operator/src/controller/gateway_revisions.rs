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
use crate::status::gateway::Serving;
use graphfleet_admin_api::FleetUsage;
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

/// Ready gateway pods serving revision `hash`: each one says which supergraph it serves;
/// one that cannot be asked (its admin port unreachable from the operator) counts by the
/// revision its template names, and is reported as unconfirmed.
pub(super) async fn serving(ctx: &Context, pods: &[Pod], hash: Option<&str>) -> Serving {
    let Some(hash) = hash else {
        return Serving::default();
    };
    let ready: Vec<&Pod> = pods.iter().filter(|p| is_ready(p)).collect();
    let answers = futures::future::join_all(ready.iter().map(|p| ctx.probe.readiness(p))).await;
    let mut serving = Serving::default();
    for (pod, answer) in ready.iter().zip(answers) {
        match answer {
            Ok(readiness) if readiness.serves(hash) => serving.pods += 1,
            Ok(_) => {}
            Err(why) => {
                tracing::debug!(pod = %pod.name_any(), %why, "gateway pod's admin listener did not answer");
                if names_revision(pod, hash) {
                    serving.pods += 1;
                    serving.unconfirmed += 1;
                }
            }
        }
    }
    serving
}

/// The operations every Ready gateway pod has served, merged; `None` when no pod
/// answered (nothing is known about the traffic).
pub(super) async fn fleet_usage(ctx: &Context, pods: &[Pod]) -> Option<FleetUsage> {
    let ready: Vec<&Pod> = pods.iter().filter(|p| is_ready(p)).collect();
    let reports = futures::future::join_all(ready.iter().map(|p| ctx.probe.usage(p))).await;
    let mut fleet: Option<FleetUsage> = None;
    for (pod, report) in ready.iter().zip(reports) {
        match report {
            Ok(report) => fleet.get_or_insert_with(FleetUsage::default).add(&report),
            Err(why) => {
                tracing::debug!(pod = %pod.name_any(), %why, "no usage report from a gateway pod");
            }
        }
    }
    fleet
}

fn names_revision(pod: &Pod, hash: &str) -> bool {
    pod.annotations()
        .get(resources::gateway::SUPERGRAPH_HASH_ANNOTATION)
        .is_some_and(|h| h == hash)
}

fn is_ready(pod: &Pod) -> bool {
    let ready = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    ready && pod.metadata.deletion_timestamp.is_none()
}
