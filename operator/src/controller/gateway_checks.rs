//! Checks a new composition against the revision being served, before any pod changes:
//! the API-schema diff (`graphfleet-schema-diff`), judged by `schema_checks`.

use kube::ResourceExt;
use kube::runtime::events::EventType;

use super::{Context, Error, api, publish};
use crate::resources::gateway_revisions as revisions;
use crate::schema_checks::{Verdict, judge};
use graphfleet_api::{ALLOW_BREAKING_ANNOTATION, GraphGateway};
use k8s_openapi::api::core::v1::ConfigMap;

/// The verdict on revision `hash` (its supergraph `sdl`) against the served revision, or
/// `None` when there is nothing to compare with (no revision served yet, the same one,
/// or its ConfigMap gone).
pub(super) async fn check(
    ctx: &Context,
    gw: &GraphGateway,
    ns: &str,
    served: Option<&str>,
    hash: &str,
    sdl: &str,
) -> Result<Option<Verdict>, Error> {
    let Some(served) = served.filter(|s| *s != hash) else {
        return Ok(None);
    };
    let name = revisions::supergraph_config_map_name(&gw.name_any(), served);
    let Some(old) = api::<ConfigMap>(ctx, ns)
        .get_opt(&name)
        .await?
        .and_then(|cm| cm.data?.remove(revisions::SUPERGRAPH_KEY))
    else {
        tracing::warn!(
            revision = served,
            "the served revision's ConfigMap is gone; no schema check"
        );
        return Ok(None);
    };
    let changes = match graphfleet_schema_diff::diff_sdl(&old, sdl) {
        Ok(changes) => changes,
        // Both are the composer's output, so this is a bug, never a reason to block.
        Err(e) => {
            tracing::error!(error = %e, "diffing two composed supergraphs failed");
            return Ok(None);
        }
    };
    let forced = gw
        .annotations()
        .get(ALLOW_BREAKING_ANNOTATION)
        .map(String::as_str)
        == Some(hash);
    let verdict = judge(&changes, gw.spec.breaking_changes(), forced);
    if verdict.breaking_count > 0 {
        let note = format!(
            "revision {hash} has {} breaking change(s) against {served}{}: {}",
            verdict.breaking_count,
            if verdict.blocked { ", blocked" } else { "" },
            verdict.breaking.join("; ")
        );
        publish(ctx, gw, EventType::Warning, "BreakingChanges", note).await;
    }
    Ok(Some(verdict))
}
