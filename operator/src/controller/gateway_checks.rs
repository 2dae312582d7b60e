//! Checks a new composition against the revision being served, before any pod changes:
//! the API-schema diff (`graphfleet-schema-diff`) and the operations the fleet has served
//! (`operations_check`), judged by `schema_checks`.

use kube::ResourceExt;
use kube::runtime::events::EventType;

use super::{Context, Error, api, publish};
use crate::operations_check::{self, OperationsVerdict, PersistedDocument, UsagePolicy};
use crate::resources::gateway_revisions as revisions;
use crate::schema_checks::{Policies, Verdict, judge};
use graphfleet_admin_api::FleetUsage;
use graphfleet_api::{ALLOW_BREAKING_ANNOTATION, GraphGateway};
use graphfleet_config::ManifestFormat;
use k8s_openapi::api::core::v1::ConfigMap;

/// The verdict on revision `hash` (its supergraph `sdl`) against the served revision and
/// the operations the pods have served (`usage`, `None` when unknown), or `None` when
/// there is nothing to compare with (no revision served yet, the same one, or its
/// ConfigMap gone).
pub(super) async fn check(
    ctx: &Context,
    gw: &GraphGateway,
    ns: &str,
    served: Option<&str>,
    (hash, sdl): (&str, &str),
    usage: Option<FleetUsage>,
    format: ManifestFormat,
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
    let policy = UsagePolicy {
        window: gw.spec.usage_window_seconds(),
        minimum_share: gw.spec.minimum_traffic_share(),
    };
    // Traffic is known only when some pod answered and has served something.
    let usage = usage.filter(|u| u.requests > 0);
    let documents = persisted_documents(ctx, gw, ns, format).await?;
    let operations = if usage.is_some() || !documents.is_empty() {
        let usage = usage.unwrap_or_default();
        check_operations(usage, documents, old, sdl.to_owned(), policy).await
    } else {
        None
    };
    let policies = Policies {
        breaking_changes: gw.spec.breaking_changes(),
        operations: gw.spec.operations_check(),
    };
    let verdict = judge(&changes, operations, policies, forced);
    let blocked = if verdict.is_blocked() {
        ", blocked"
    } else {
        ""
    };
    if verdict.breaking_count > 0 {
        let note = format!(
            "revision {hash} has {} breaking change(s) against {served}{blocked}: {}",
            verdict.breaking_count,
            verdict.breaking.join("; ")
        );
        publish(ctx, gw, EventType::Warning, "BreakingChanges", note).await;
    }
    if let Some(ops) = verdict
        .operations
        .as_ref()
        .filter(|o| !o.invalid.is_empty())
    {
        let texts: Vec<&str> = ops.invalid.iter().map(|f| f.text.as_str()).collect();
        let note = format!(
            "revision {hash} makes {} of {} served operation(s) invalid{blocked}: {}",
            ops.invalid.len(),
            ops.checked,
            texts.join("; ")
        );
        publish(ctx, gw, EventType::Warning, "InvalidOperations", note).await;
    }
    if let Some(ops) = verdict
        .operations
        .as_ref()
        .filter(|o| o.changed_plan_count > 0)
    {
        let note = format!(
            "revision {hash} changes the plans of {} served operation(s): {}",
            ops.changed_plan_count,
            ops.changed_plans.join("; ")
        );
        publish(ctx, gw, EventType::Normal, "PlansChanged", note).await;
    }
    Ok(Some(verdict))
}

/// The operations check, off the async workers (parsing two supergraphs and planning
/// every recorded operation is CPU work).
async fn check_operations(
    usage: FleetUsage,
    documents: Vec<PersistedDocument>,
    served_sdl: String,
    new_sdl: String,
    policy: UsagePolicy,
) -> Option<OperationsVerdict> {
    let work = move || {
        let new = graphfleet_federation::Supergraph::parse(&new_sdl)
            .map_err(|e| format!("the new supergraph does not load: {e}"))?;
        let served = graphfleet_federation::Supergraph::parse(&served_sdl).ok();
        let verdict = operations_check::check(&usage, &documents, served.as_ref(), &new, policy);
        Ok::<_, String>(verdict)
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(verdict)) => Some(verdict),
        // The composer's output always loads in the gateway; if it does not, that is a
        // bug for the logs, and the schema diff alone judges.
        Ok(Err(why)) => {
            tracing::error!(%why, "operations check skipped");
            None
        }
        Err(e) => {
            tracing::error!(error = %e, "operations check ended abnormally");
            None
        }
    }
}

/// The persisted document list `spec.mounts.persistedDocuments` names, when it is in a
/// ConfigMap (the operator may not read Secrets: a list there is not checked, and the log
/// says so). An unreadable list is logged, not fatal: the gateway reports it too.
async fn persisted_documents(
    ctx: &Context,
    gw: &GraphGateway,
    ns: &str,
    format: ManifestFormat,
) -> Result<Vec<PersistedDocument>, Error> {
    let Some(file) = gw
        .spec
        .mounts
        .as_ref()
        .and_then(|m| m.persisted_documents.as_ref())
    else {
        return Ok(Vec::new());
    };
    let Some(key) = &file.config_map else {
        tracing::info!(
            "the persisted document list is in a Secret, which the operator does not read: not checked"
        );
        return Ok(Vec::new());
    };
    let Some(cm) = api::<ConfigMap>(ctx, ns).get_opt(&key.name).await? else {
        tracing::warn!(config_map = %key.name, "the persisted document list's ConfigMap is missing");
        return Ok(Vec::new());
    };
    let bytes = cm
        .data
        .as_ref()
        .and_then(|d| d.get(&key.key))
        .map(|text| text.as_bytes().to_vec())
        .or_else(|| cm.binary_data.as_ref()?.get(&key.key).map(|b| b.0.clone()));
    let Some(bytes) = bytes else {
        tracing::warn!(config_map = %key.name, key = %key.key, "the persisted document list's key is missing");
        return Ok(Vec::new());
    };
    match graphfleet_config::manifest::parse(&bytes, format) {
        Ok(list) => Ok(list
            .documents()
            .map(|(id, text)| PersistedDocument {
                id: id.to_owned(),
                text: text.to_owned(),
            })
            .collect()),
        Err(e) => {
            tracing::warn!(config_map = %key.name, error = %e, "the persisted document list does not parse");
            Ok(Vec::new())
        }
    }
}
