//! The objects a GraphGateway's workload is made of, applied in order: its config file,
//! its Deployments (through the canary), Service, PodMonitor, PodDisruptionBudget and
//! HorizontalPodAutoscaler.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::ResourceExt;

use super::{Context, Error, api, apply, apply_or_delete, gateway_canary};
use crate::resources;
use crate::resources::gateway::GatewayPods;
use crate::resources::gateway_revisions as revisions;
use graphfleet_api::GraphGateway;

/// Applies every object of `gw`'s workload for revision `hash`.
#[tracing::instrument(skip_all)]
pub(super) async fn apply_all(
    ctx: &Context,
    gw: &GraphGateway,
    ns: &str,
    pods: &GatewayPods,
    hash: &str,
) -> Result<gateway_canary::Applied, Error> {
    let name = gw.name_any();
    apply(
        &api::<ConfigMap>(ctx, ns),
        &revisions::config_file_config_map(gw, &pods.config.text),
    )
    .await?;
    let applied = gateway_canary::apply_deployments(ctx, gw, ns, pods, hash).await?;
    apply(&api::<Service>(ctx, ns), &resources::gateway::service(gw)).await?;
    super::gateway_monitor::apply(ctx, gw, ns).await?;
    apply_or_delete(
        &api::<PodDisruptionBudget>(ctx, ns),
        &name,
        resources::gateway::pod_disruption_budget(gw),
    )
    .await?;
    apply_or_delete(
        &api::<HorizontalPodAutoscaler>(ctx, ns),
        &name,
        resources::gateway::horizontal_pod_autoscaler(gw),
    )
    .await?;
    // The one mutable supergraph ConfigMap of earlier versions.
    apply_or_delete(
        &api::<ConfigMap>(ctx, ns),
        &format!("{name}-supergraph"),
        None,
    )
    .await?;
    Ok(applied)
}
