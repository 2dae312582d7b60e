//! The Subgraph reconciler: loads the SDL from its source and reports it in the
//! `SchemaLoaded` condition (the gateways re-read it when they compose).

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};

use super::{Context, Error, SUBGRAPH_CONTROLLER, api, now};
use crate::resources::{self, MANAGER};
use crate::status;
use crate::subgraph_sdl::load_sdl;
use graphfleet_api::{Subgraph, SubgraphStatus};

#[tracing::instrument(skip_all, fields(subgraph = %sg.name_any(), namespace = sg.namespace().unwrap_or_default()))]
pub(super) async fn reconcile_subgraph(
    sg: Arc<Subgraph>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let started = Instant::now();
    let ns = sg.namespace().ok_or(Error::NoNamespace)?;
    let mut new_status = sg.status.clone().unwrap_or_default();
    new_status.observed_generation = sg.metadata.generation;
    let generation = sg.metadata.generation;
    let action = match load_sdl(&ctx.client, &ctx.introspector, &sg).await {
        Ok(sdl) => {
            let hash = resources::short_hash(sdl.as_bytes());
            let message = format!("schema {hash} loaded ({} bytes)", sdl.len());
            status::set_condition(
                &mut new_status.conditions,
                status::SCHEMA_LOADED,
                true,
                "Loaded",
                message,
                generation,
                &now(),
            );
            new_status.schema_hash = Some(hash);
            Action::requeue(ctx.settings.resync)
        }
        Err(e) => {
            status::set_condition(
                &mut new_status.conditions,
                status::SCHEMA_LOADED,
                false,
                e.reason(),
                e.to_string(),
                generation,
                &now(),
            );
            Action::requeue(Duration::from_secs(10))
        }
    };
    write_subgraph_status(&ctx, &sg, &ns, new_status).await?;
    ctx.metrics
        .reconciled(SUBGRAPH_CONTROLLER, started.elapsed());
    Ok(action)
}

async fn write_subgraph_status(
    ctx: &Context,
    sg: &Subgraph,
    ns: &str,
    new_status: SubgraphStatus,
) -> Result<(), Error> {
    if sg.status.as_ref() == Some(&new_status) {
        return Ok(());
    }
    let patch = serde_json::json!({
        "apiVersion": "graphfleet.dev/v1alpha1",
        "kind": "Subgraph",
        "status": new_status,
    });
    api::<Subgraph>(ctx, ns)
        .patch_status(
            &sg.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    Ok(())
}

/// Subgraphs (from the controller's own cache) reading their SDL from `cm`.
pub(super) fn subgraphs_reading(
    store: &Store<Subgraph>,
    cm: &ConfigMap,
) -> Vec<ObjectRef<Subgraph>> {
    store
        .state()
        .iter()
        .filter(|sg| {
            sg.namespace() == cm.namespace()
                && sg
                    .spec
                    .config_map_ref
                    .as_ref()
                    .is_some_and(|r| Some(&r.name) == cm.metadata.name.as_ref())
        })
        .map(|sg| ObjectRef::from_obj(sg.as_ref()))
        .collect()
}
