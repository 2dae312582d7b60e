//! The GraphGateway reconciler: gathers the selected Subgraphs' SDL, composes them, applies
//! the gateway's objects (last good supergraph kept on failure) and writes its status.

use std::sync::Arc;
use std::time::{Duration, Instant};

use graphfleet_composition::{SubgraphInput, compose};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{ListParams, Patch, PatchParams};
use kube::core::{Selector, SelectorExt};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};

use super::{
    Context, Error, GATEWAY_CONTROLLER, NOT_READY_RECHECK, api, apply, apply_or_delete, now,
};
use crate::diagnose::{self, Rollout};
use crate::resources::gateway::GatewayPods;
use crate::resources::{self, MANAGER};
use crate::status::gateway::{CompositionOutcome, Observed, gateway_status};
use crate::subgraph_sdl::load_sdl;
use graphfleet_api::{CompositionErrorStatus, GraphGateway, Subgraph};

/// The label selector a gateway selects Subgraphs with, or why it is invalid.
pub fn subgraph_selector(gw: &GraphGateway) -> Result<Selector, String> {
    match gw.spec.subgraph_selector.clone() {
        Some(ls) => Selector::try_from(ls).map_err(|e| e.to_string()),
        None => Ok(Selector::default()),
    }
}

/// Namespaces a gateway gathers Subgraphs from.
pub fn gateway_namespaces(gw: &GraphGateway) -> Vec<String> {
    if gw.spec.namespaces.is_empty() {
        gw.namespace().into_iter().collect()
    } else {
        gw.spec.namespaces.clone()
    }
}

/// Whether `gw` selects `subgraph` (same test as the gateway's list query).
pub fn selects(gw: &GraphGateway, subgraph: &Subgraph) -> bool {
    let in_namespace = subgraph
        .namespace()
        .is_some_and(|ns| gateway_namespaces(gw).contains(&ns));
    in_namespace && subgraph_selector(gw).is_ok_and(|s| s.matches(subgraph.labels()))
}

struct Gathered {
    inputs: Vec<SubgraphInput>,
    failures: Vec<CompositionErrorStatus>,
}

async fn gather_subgraphs(
    ctx: &Context,
    gw: &GraphGateway,
    selector: &Selector,
) -> Result<Gathered, Error> {
    let params = ListParams::default().labels_from(selector);
    let mut subgraphs = Vec::new();
    for ns in gateway_namespaces(gw) {
        subgraphs.extend(api::<Subgraph>(ctx, &ns).list(&params).await?.items);
    }
    subgraphs.sort_by_key(|s| (s.name_any(), s.namespace()));
    let loads = subgraphs
        .iter()
        .map(|sg| load_sdl(&ctx.client, &ctx.introspector, sg));
    let results = futures::future::join_all(loads).await;
    let mut gathered = Gathered {
        inputs: Vec::new(),
        failures: Vec::new(),
    };
    for (sg, result) in subgraphs.iter().zip(results) {
        match result {
            Ok(sdl) => gathered.inputs.push(SubgraphInput {
                name: sg.name_any(),
                url: sg.spec.url.clone(),
                sdl,
            }),
            Err(e) => gathered.failures.push(CompositionErrorStatus {
                code: "SUBGRAPH_UNAVAILABLE".to_owned(),
                message: format!("subgraph {}: {e}", sg.name_any()),
                subgraphs: vec![sg.name_any()],
            }),
        }
    }
    Ok(gathered)
}

/// A composed supergraph ready to apply.
struct Supergraph {
    sdl: String,
    hash: String,
    subgraphs: Vec<String>,
}

#[tracing::instrument(skip_all)]
async fn compose_gateway(
    ctx: &Context,
    gw: &GraphGateway,
) -> Result<Result<Supergraph, CompositionOutcome>, Error> {
    let selector = match subgraph_selector(gw) {
        Ok(s) => s,
        Err(e) => {
            return Ok(Err(CompositionOutcome::Failed {
                reason: "InvalidSelector".to_owned(),
                errors: vec![CompositionErrorStatus {
                    code: "INVALID_SELECTOR".to_owned(),
                    message: e,
                    subgraphs: vec![],
                }],
            }));
        }
    };
    let gathered = gather_subgraphs(ctx, gw, &selector).await?;
    if !gathered.failures.is_empty() {
        ctx.metrics.composed("unavailable", Duration::ZERO);
        return Ok(Err(CompositionOutcome::Failed {
            reason: "SubgraphUnavailable".to_owned(),
            errors: gathered.failures,
        }));
    }
    let names: Vec<String> = gathered.inputs.iter().map(|i| i.name.clone()).collect();
    let started = Instant::now();
    let inputs = gathered.inputs;
    let result = match tokio::task::spawn_blocking(move || compose(&inputs)).await {
        Ok(result) => result,
        // A composer bug must not take the controller down: like any failed
        // composition, the gateways keep the last good supergraph and the status says why.
        Err(e) => {
            ctx.metrics.composed("failure", started.elapsed());
            tracing::error!(error = %e, "composition ended abnormally");
            return Ok(Err(composer_failed(&e.to_string())));
        }
    };
    match result {
        Ok(composed) => {
            ctx.metrics.composed("success", started.elapsed());
            let hash = resources::short_hash(composed.supergraph_sdl.as_bytes());
            Ok(Ok(Supergraph {
                sdl: composed.supergraph_sdl,
                hash,
                subgraphs: names,
            }))
        }
        Err(errors) => {
            ctx.metrics.composed("failure", started.elapsed());
            Ok(Err(CompositionOutcome::Failed {
                reason: "CompositionFailed".to_owned(),
                errors: errors
                    .0
                    .into_iter()
                    .map(|e| CompositionErrorStatus {
                        code: e.code,
                        message: e.message,
                        subgraphs: e.subgraphs,
                    })
                    .collect(),
            }))
        }
    }
}

/// The outcome when the composer itself failed (a panic), not the inputs.
fn composer_failed(why: &str) -> CompositionOutcome {
    CompositionOutcome::Failed {
        reason: "ComposerFailed".to_owned(),
        errors: vec![CompositionErrorStatus {
            code: "INTERNAL_COMPOSER_ERROR".to_owned(),
            message: format!("the composer failed unexpectedly ({why}); this is a graphfleet bug"),
            subgraphs: Vec::new(),
        }],
    }
}

/// The pods' config and the composed supergraph, or why nothing can be applied: a
/// config the gateway would refuse (checked first: it needs no subgraph) or a failed
/// composition.
async fn prepare(
    ctx: &Context,
    gw: &GraphGateway,
) -> Result<Result<(GatewayPods, Supergraph), CompositionOutcome>, Error> {
    let pods = match GatewayPods::of(gw) {
        Ok(pods) => pods,
        Err(problems) => return Ok(Err(invalid_config(problems))),
    };
    Ok(compose_gateway(ctx, gw)
        .await?
        .map(|supergraph| (pods, supergraph)))
}

/// The outcome when `spec.config` (or `spec.mounts`) would be refused by the gateway.
fn invalid_config(problems: Vec<String>) -> CompositionOutcome {
    CompositionOutcome::Failed {
        reason: "InvalidConfig".to_owned(),
        errors: problems
            .into_iter()
            .map(|message| CompositionErrorStatus {
                code: "INVALID_CONFIG".to_owned(),
                message,
                subgraphs: Vec::new(),
            })
            .collect(),
    }
}

#[tracing::instrument(skip_all)]
async fn apply_gateway_objects(
    ctx: &Context,
    gw: &GraphGateway,
    ns: &str,
    pods: &GatewayPods,
    sg: &Supergraph,
) -> Result<(), Error> {
    let name = gw.name_any();
    apply(
        &api::<ConfigMap>(ctx, ns),
        &resources::gateway::config_map(gw, pods, &sg.sdl, &sg.hash),
    )
    .await?;
    apply(
        &api::<Deployment>(ctx, ns),
        &resources::gateway::deployment(gw, pods, &sg.hash, &ctx.settings.default_image),
    )
    .await?;
    apply(&api::<Service>(ctx, ns), &resources::gateway::service(gw)).await?;
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
    Ok(())
}

async fn publish(ctx: &Context, gw: &GraphGateway, type_: EventType, reason: &str, note: String) {
    let event = Event {
        type_,
        reason: reason.to_owned(),
        note: Some(note.chars().take(1000).collect()),
        action: "Compose".to_owned(),
        secondary: None,
    };
    if let Err(e) = ctx.recorder.publish(&event, &gw.object_ref(&())).await {
        tracing::warn!(error = %e, "publishing event failed");
    }
}

#[tracing::instrument(skip_all, fields(gateway = %gw.name_any(), namespace = gw.namespace().unwrap_or_default()))]
pub(super) async fn reconcile_gateway(
    gw: Arc<GraphGateway>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let started = Instant::now();
    let ns = gw.namespace().ok_or(Error::NoNamespace)?;
    let name = gw.name_any();
    let previous_hash = gw.status.as_ref().and_then(|s| s.supergraph_hash.clone());
    let outcome = match prepare(&ctx, &gw).await? {
        Ok((pods, supergraph)) => {
            apply_gateway_objects(&ctx, &gw, &ns, &pods, &supergraph).await?;
            if previous_hash.as_deref() != Some(supergraph.hash.as_str()) {
                let note = format!(
                    "supergraph {} from {} subgraphs",
                    supergraph.hash,
                    supergraph.subgraphs.len()
                );
                publish(&ctx, &gw, EventType::Normal, "Composed", note).await;
                tracing::info!(gateway = %name, namespace = %ns, hash = %supergraph.hash, "new supergraph");
            }
            CompositionOutcome::Composed {
                hash: supergraph.hash,
                subgraphs: supergraph.subgraphs,
            }
        }
        Err(failed) => {
            if let CompositionOutcome::Failed { reason, errors } = &failed {
                let note = errors
                    .iter()
                    .map(|e| format!("{}: {}", e.code, e.message))
                    .collect::<Vec<_>>()
                    .join("; ");
                tracing::warn!(gateway = %name, namespace = %ns, %reason, errors = %note, "composition failed; keeping the last good supergraph");
                publish(&ctx, &gw, EventType::Warning, reason, note).await;
            }
            failed
        }
    };
    let served_hash = api::<ConfigMap>(&ctx, &ns)
        .get_opt(&resources::gateway::config_map_name(&name))
        .await?
        .and_then(|cm| {
            cm.annotations()
                .get(resources::gateway::SUPERGRAPH_HASH_ANNOTATION)
                .cloned()
        });
    let deployment = api::<Deployment>(&ctx, &ns).get_opt(&name).await?;
    let pods = match &deployment {
        Some(d) if !Rollout::of(d).complete() => {
            let params = ListParams::default().labels(&resources::gateway::selector_string(&gw));
            let pods = api::<Pod>(&ctx, &ns).list(&params).await?.items;
            diagnose::rollout_problem(d, &pods, resources::gateway::GATEWAY_CONTAINER)
        }
        _ => None,
    };
    let observed = Observed {
        generation: gw.metadata.generation,
        outcome: &outcome,
        served_hash,
        rollout: deployment.as_ref().map(Rollout::of),
        selector: resources::gateway::selector_string(&gw),
        pods,
    };
    let new_status = gateway_status(gw.status.as_ref(), &observed, &now());
    let ready = observed.rollout.is_some_and(|r| r.complete());
    if gw.status.as_ref() != Some(&new_status) {
        let patch = serde_json::json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "GraphGateway",
            "status": new_status,
        });
        api::<GraphGateway>(&ctx, &ns)
            .patch_status(
                &name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&patch),
            )
            .await?;
    }
    ctx.metrics
        .reconciled(GATEWAY_CONTROLLER, started.elapsed());
    // Pod states change without touching the Deployment (an image pull backing off, a crash
    // loop): look again soon while the gateway is not Ready.
    Ok(match outcome {
        CompositionOutcome::Composed { .. } if ready => Action::requeue(ctx.settings.resync),
        _ => Action::requeue(NOT_READY_RECHECK),
    })
}

/// Gateways (from the controller's own cache) that select `subgraph`.
pub(super) fn gateways_selecting(
    store: &Store<GraphGateway>,
    subgraph: &Subgraph,
) -> Vec<ObjectRef<GraphGateway>> {
    store
        .state()
        .iter()
        .filter(|gw| selects(gw, subgraph))
        .map(|gw| ObjectRef::from_obj(gw.as_ref()))
        .collect()
}

/// The GraphGateway a gateway pod belongs to (from its instance label).
pub(super) fn gateway_of(pod: &Pod) -> Option<ObjectRef<GraphGateway>> {
    let name = pod.labels().get(resources::gateway::INSTANCE_LABEL)?;
    Some(ObjectRef::new(name).within(&pod.namespace()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway(spec: serde_json::Value) -> GraphGateway {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "GraphGateway",
            "metadata": { "name": "gw", "namespace": "shop" },
            "spec": spec,
        }))
        .expect("valid GraphGateway")
    }

    fn subgraph(namespace: &str, labels: serde_json::Value) -> Subgraph {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "Subgraph",
            "metadata": { "name": "sg", "namespace": namespace, "labels": labels },
            "spec": { "url": "http://sg/graphql" },
        }))
        .expect("valid Subgraph")
    }

    #[test]
    fn no_selector_selects_every_subgraph_of_the_own_namespace() {
        let gw = gateway(serde_json::json!({}));
        assert!(selects(&gw, &subgraph("shop", serde_json::json!({}))));
        assert!(!selects(&gw, &subgraph("other", serde_json::json!({}))));
    }

    #[test]
    fn label_selector_and_namespaces_are_honoured() {
        let gw = gateway(serde_json::json!({
            "namespaces": ["a", "b"],
            "subgraphSelector": {
                "matchLabels": { "graph": "shop" },
                "matchExpressions": [{ "key": "tier", "operator": "NotIn", "values": ["test"] }],
            },
        }));
        assert!(selects(
            &gw,
            &subgraph("a", serde_json::json!({ "graph": "shop" }))
        ));
        assert!(selects(
            &gw,
            &subgraph("b", serde_json::json!({ "graph": "shop", "tier": "prod" }))
        ));
        assert!(!selects(
            &gw,
            &subgraph("b", serde_json::json!({ "graph": "shop", "tier": "test" }))
        ));
        assert!(!selects(
            &gw,
            &subgraph("a", serde_json::json!({ "graph": "blog" }))
        ));
        assert!(!selects(
            &gw,
            &subgraph("shop", serde_json::json!({ "graph": "shop" }))
        ));
    }

    #[test]
    fn invalid_selector_selects_nothing_and_says_why() {
        let gw = gateway(serde_json::json!({
            "subgraphSelector": { "matchExpressions": [{ "key": "k", "operator": "Bogus" }] },
        }));
        assert!(!selects(
            &gw,
            &subgraph("shop", serde_json::json!({ "k": "v" }))
        ));
        assert!(subgraph_selector(&gw).is_err());
    }
}
