//! The GraphGateway reconciler: gathers the selected Subgraphs' SDL, composes them, applies
//! the gateway's objects (last good supergraph kept on failure) and writes its status.

use std::sync::Arc;
use std::time::{Duration, Instant};

use graphfleet_composition::{SubgraphInput, compose};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;
use kube::api::{ListParams, Patch, PatchParams};
use kube::core::{Selector, SelectorExt};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};

use super::{Context, Error, GATEWAY_CONTROLLER, NOT_READY_RECHECK, api, apply, now, publish};
use super::{gateway_checks, gateway_revisions, gateway_usage};
use crate::diagnose::{self, Rollout};
use crate::resources::gateway::GatewayPods;
use crate::resources::gateway_meta as meta;
use crate::resources::gateway_revisions as revisions;
use crate::resources::{self, MANAGER};
use crate::schema_checks::Verdict;
use crate::status::gateway::{CompositionOutcome, Observed, gateway_status};
use crate::status::revisions as status_revisions;
use crate::subgraph_sdl::load_sdl;
use graphfleet_api::{
    CompositionErrorStatus, GraphGateway, RevisionOutcome, Subgraph, SubgraphSchemaRef,
    SupergraphRevision,
};
use graphfleet_config::ManifestFormat;

/// How soon a reconcile that read a stale copy of its gateway looks again.
const STALE_RECHECK: Duration = Duration::from_millis(200);

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
    /// Each subgraph's SDL hash, for `status.revisions`.
    schemas: Vec<SubgraphSchemaRef>,
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
    let schemas = gathered
        .inputs
        .iter()
        .map(|i| SubgraphSchemaRef {
            name: i.name.clone(),
            sdl_hash: resources::short_hash(i.sdl.as_bytes()),
        })
        .collect();
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
                schemas,
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

/// The revision the pods should serve: the pinned one (if its ConfigMap is kept), else
/// the new composition, else the one served so far (so spec changes still apply while
/// composition fails). `Err` names why a pinned revision cannot be served.
async fn target_revision(
    ctx: &Context,
    gw: &GraphGateway,
    ns: &str,
    composed: Option<&Supergraph>,
) -> Result<Result<Option<String>, CompositionOutcome>, Error> {
    if let Some(pinned) = gw.spec.pinned_revision() {
        let name = revisions::supergraph_config_map_name(&gw.name_any(), pinned);
        if api::<ConfigMap>(ctx, ns).get_opt(&name).await?.is_some() {
            return Ok(Ok(Some(pinned.to_owned())));
        }
        return Ok(Err(CompositionOutcome::Failed {
            reason: "RevisionNotFound".to_owned(),
            errors: vec![CompositionErrorStatus {
                code: "REVISION_NOT_FOUND".to_owned(),
                message: format!(
                    "spec.supergraph.revision {pinned} is not a kept revision (see status.revisions)"
                ),
                subgraphs: Vec::new(),
            }],
        }));
    }
    let served = gw.status.as_ref().and_then(|s| s.supergraph_hash.clone());
    Ok(Ok(composed.map(|sg| sg.hash.clone()).or(served)))
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
    let pods = GatewayPods::of(&gw);
    let composed = compose_gateway(&ctx, &gw).await?;
    if let Ok(sg) = &composed {
        // Every composition is kept as its revision, served or not.
        apply(
            &api::<ConfigMap>(&ctx, &ns),
            &revisions::supergraph_config_map(&gw, &sg.sdl, &sg.hash),
        )
        .await?;
    }
    let params = ListParams::default().labels(&meta::selector_string(&gw));
    let mut usage_read = None;
    let verdict = match (&composed, gw.spec.pinned_revision(), &previous_hash) {
        // A new composition while another is served: checked before any pod changes
        // (once: a revision on its canary, or rolled back from it, passed its checks).
        (Ok(sg), None, Some(served)) if *served != sg.hash && !on_canary(&gw, &sg.hash) => {
            let running = api::<Pod>(&ctx, &ns).list(&params).await?.items;
            let usage = gateway_revisions::fleet_usage(&ctx, &running).await;
            usage_read.clone_from(&usage);
            let new = (sg.hash.as_str(), sg.sdl.as_str());
            let format = pods.as_ref().map_or(ManifestFormat::default(), |p| {
                p.config.config.persisted_documents.format
            });
            let served = previous_hash.as_deref();
            gateway_checks::check(&ctx, &gw, &ns, served, new, usage, format).await?
        }
        _ => None,
    };
    let blocked = verdict.as_ref().is_some_and(Verdict::is_blocked);
    let servable = composed.as_ref().ok().filter(|_| !blocked);
    let target = target_revision(&ctx, &gw, &ns, servable).await?;
    let mut applied = false;
    let mut served_hash = previous_hash.clone();
    let mut canary = gw.status.as_ref().and_then(|s| s.canary.clone());
    let mut requeue = None;
    let mut refused = None;
    if let (Ok(pods), Ok(Some(hash))) = (&pods, &target) {
        match super::gateway_objects::apply_all(&ctx, &gw, &ns, pods, hash).await {
            Ok(workload) => {
                applied = true;
                served_hash = workload.served.or(served_hash);
                canary = workload.canary;
                requeue = workload.requeue;
            }
            // Said in status; the spec's next change reconciles again.
            Err(Error::Kube(e)) if diagnose::refused_write(&e).is_some() => {
                refused = diagnose::refused_write(&e);
            }
            Err(e) => return Err(e),
        }
    }
    if served_hash != previous_hash
        && let Some(hash) = &served_hash
    {
        // `Composed` for a new composition going out, `Serving` for a kept revision
        // (pinned, or the last good one again).
        let (reason, note) = match &composed {
            Ok(sg) if sg.hash == *hash => (
                "Composed",
                format!("supergraph {hash} from {} subgraphs", sg.subgraphs.len()),
            ),
            _ => ("Serving", format!("supergraph revision {hash}")),
        };
        publish(&ctx, &gw, EventType::Normal, reason, note).await;
        tracing::info!(gateway = %name, namespace = %ns, %hash, "serving a new supergraph revision");
    }
    let outcome = outcome(&pods, &composed, &target, verdict.as_ref());
    if let CompositionOutcome::Failed { reason, errors } = &outcome {
        let note = errors
            .iter()
            .map(|e| format!("{}: {}", e.code, e.message))
            .collect::<Vec<_>>()
            .join("; ");
        tracing::warn!(gateway = %name, namespace = %ns, %reason, errors = %note, "not applied as composed; serving the last good revision");
        publish(&ctx, &gw, EventType::Warning, reason, note).await;
    }
    let mut history = revision_history(&gw, &composed, verdict.as_ref(), served_hash.as_deref());
    status_revisions::mark_canary(&mut history, canary.as_ref());
    gateway_revisions::collect_garbage(&ctx, &gw, &ns, &history, pods.as_ref().ok()).await?;
    let deployment = api::<Deployment>(&ctx, &ns).get_opt(&name).await?;
    let gateway_pods = api::<Pod>(&ctx, &ns).list(&params).await?.items;
    let problem = match &deployment {
        Some(d) if !Rollout::of(d).complete() => {
            diagnose::rollout_problem(d, &gateway_pods, resources::gateway::GATEWAY_CONTAINER)
        }
        _ => None,
    };
    let observed = Observed {
        generation: gw.metadata.generation,
        applied,
        outcome: &outcome,
        serving: gateway_revisions::serving(&ctx, &gateway_pods, served_hash.as_deref()).await,
        served_hash,
        revisions: history,
        rollout: deployment.as_ref().map(Rollout::of),
        selector: meta::selector_string(&gw),
        pods: problem,
        refused,
        canary,
    };
    let new_status = gateway_status(gw.status.as_ref(), &observed, &now());
    let ready = observed.rollout.is_some_and(|r| r.complete());
    if gw.status.as_ref() != Some(&new_status) {
        // On the version this reconcile read: a reconcile working from a stale copy (its
        // cache not yet showing the status another one wrote) would write an older view
        // back, e.g. the previous served revision.
        let patch = serde_json::json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "GraphGateway",
            "metadata": { "resourceVersion": gw.resource_version() },
            "status": new_status,
        });
        let written = api::<GraphGateway>(&ctx, &ns)
            .patch_status(
                &name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&patch),
            )
            .await;
        match written {
            Ok(_) => {}
            // Changed since it was read: look again on the newer copy.
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return Ok(Action::requeue(STALE_RECHECK));
            }
            Err(e) => return Err(e.into()),
        }
    }
    // Last: a side job (what new pods warm up with) that never holds the status back.
    if applied {
        gateway_usage::refresh(&ctx, &gw, &ns, &gateway_pods, usage_read).await;
    }
    ctx.metrics
        .reconciled(GATEWAY_CONTROLLER, started.elapsed());
    // Pod states change without touching the Deployment (an image pull backing off, a crash
    // loop): look again soon while the gateway is not Ready.
    let action = match outcome {
        CompositionOutcome::Composed { .. } if ready => ctx.settings.resync,
        _ => NOT_READY_RECHECK,
    }
    .min(ctx.settings.usage_refresh);
    Ok(Action::requeue(requeue.map_or(action, |r| r.min(action))))
}

/// What status reports of this reconcile: the first thing that kept the spec or the
/// composition from being served, else the composition.
fn outcome(
    pods: &Result<GatewayPods, Vec<String>>,
    composed: &Result<Supergraph, CompositionOutcome>,
    target: &Result<Option<String>, CompositionOutcome>,
    verdict: Option<&Verdict>,
) -> CompositionOutcome {
    if let Err(problems) = pods {
        return invalid_config(problems.clone());
    }
    if let Err(failed) = target {
        return failed.clone();
    }
    if let Some((verdict, block)) = verdict.and_then(|v| Some((v, v.blocked?))) {
        return CompositionOutcome::Failed {
            reason: block.reason().to_owned(),
            errors: verdict
                .blocking_errors()
                .into_iter()
                .map(|(code, message)| CompositionErrorStatus {
                    code: code.to_owned(),
                    message,
                    subgraphs: Vec::new(),
                })
                .collect(),
        };
    }
    match composed {
        Ok(sg) => CompositionOutcome::Composed {
            hash: sg.hash.clone(),
            subgraphs: sg.subgraphs.clone(),
        },
        Err(failed) => failed.clone(),
    }
}

/// Whether revision `hash` went to canary pods already (so it passed its checks).
fn on_canary(gw: &GraphGateway, hash: &str) -> bool {
    gw.status.as_ref().is_some_and(|s| {
        s.revisions.iter().any(|r| {
            r.hash == hash
                && matches!(
                    r.outcome,
                    RevisionOutcome::Canary | RevisionOutcome::RolledBack
                )
        })
    })
}

/// `status.revisions` after this reconcile.
fn revision_history(
    gw: &GraphGateway,
    composed: &Result<Supergraph, CompositionOutcome>,
    verdict: Option<&Verdict>,
    served: Option<&str>,
) -> Vec<SupergraphRevision> {
    let previous = gw
        .status
        .as_ref()
        .map(|s| s.revisions.as_slice())
        .unwrap_or_default();
    let composed = composed.as_ref().ok().map(|sg| status_revisions::Composed {
        hash: &sg.hash,
        subgraphs: sg.schemas.clone(),
        verdict,
    });
    status_revisions::record(
        previous,
        composed,
        served,
        gw.spec.revision_history_limit(),
        &now(),
    )
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
    let name = pod.labels().get(meta::INSTANCE_LABEL)?;
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
