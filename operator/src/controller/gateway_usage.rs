//! Keeps a GraphGateway's `<gateway>-usage` ConfigMap (`resources::gateway_usage`): the
//! operations its Ready pods have served, merged, which every new pod plans before it
//! reports ready. Looked at no more than once per `Settings::usage_refresh` per gateway
//! (reconciles come far more often: every pod change), and written only when what the
//! warm-up reads changed, so a large fleet does not churn the API server.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;

use super::{Context, api, apply, gateway_revisions};
use crate::resources::gateway_usage::{
    USAGE_BUDGET_BYTES, usage_config_map, usage_config_map_name, usage_hash, warm_up_report,
    written_hash,
};
use graphfleet_admin_api::FleetUsage;
use graphfleet_api::GraphGateway;

/// When each gateway's usage was last looked at, and the hash last written (by uid).
#[derive(Default)]
pub(super) struct UsageWrites(Mutex<HashMap<String, Written>>);

#[derive(Clone, Default)]
struct Written {
    at: Option<Instant>,
    hash: Option<String>,
}

impl UsageWrites {
    /// Whether `key` is due a look at `now` (and if so, marks it looked at), with the
    /// hash last written.
    fn take_due(&self, key: &str, now: Instant, every: Duration) -> Option<Option<String>> {
        let mut writes = self
            .0
            .lock()
            .expect("the usage writes lock is never poisoned");
        let written = writes.entry(key.to_owned()).or_default();
        if written.at.is_some_and(|at| now.duration_since(at) < every) {
            return None;
        }
        written.at = Some(now);
        Some(written.hash.clone())
    }

    fn record(&self, key: &str, hash: String) {
        let mut writes = self
            .0
            .lock()
            .expect("the usage writes lock is never poisoned");
        writes.entry(key.to_owned()).or_default().hash = Some(hash);
    }
}

/// Refresh `gw`'s usage ConfigMap from its `pods` (or from `known`, the usage this
/// reconcile read already), when due. Never fatal to the reconcile: a failed read or
/// write is logged and tried again at the next refresh. Nothing is written while no pod
/// has recorded anything, so a fleet that just rolled keeps the last known operations.
pub(super) async fn refresh(
    ctx: &Context,
    gw: &GraphGateway,
    ns: &str,
    pods: &[Pod],
    known: Option<FleetUsage>,
) {
    let key = gw
        .uid()
        .unwrap_or_else(|| format!("{ns}/{}", gw.name_any()));
    let Some(last_hash) =
        ctx.usage_writes
            .take_due(&key, Instant::now(), ctx.settings.usage_refresh)
    else {
        return;
    };
    let usage = match known {
        Some(usage) => Some(usage),
        None => gateway_revisions::fleet_usage(ctx, pods).await,
    };
    let Some(usage) = usage.filter(|u| !u.operations.is_empty()) else {
        return;
    };
    let unix_now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let report = warm_up_report(&usage, unix_now, USAGE_BUDGET_BYTES);
    let hash = usage_hash(&report);
    let config_maps = api::<ConfigMap>(ctx, ns);
    let name = usage_config_map_name(&gw.name_any());
    let last_hash = match last_hash {
        Some(hash) => Some(hash),
        // First look since the operator started: what is there already.
        None => match config_maps.get_opt(&name).await {
            Ok(live) => live.as_ref().and_then(written_hash).map(str::to_owned),
            Err(e) => {
                tracing::warn!(config_map = %name, error = %e, "reading the usage ConfigMap failed");
                return;
            }
        },
    };
    if last_hash.as_deref() == Some(hash.as_str()) {
        ctx.usage_writes.record(&key, hash);
        return;
    }
    match apply(&config_maps, &usage_config_map(gw, &report)).await {
        Ok(_) => {
            tracing::info!(config_map = %name, operations = report.operations.len(), %hash, "fleet usage written for plan warm-up");
            ctx.usage_writes.record(&key, hash);
        }
        Err(e) => {
            tracing::warn!(config_map = %name, error = %e, "writing the usage ConfigMap failed")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gateway_is_looked_at_once_per_interval_and_remembers_its_hash() {
        let writes = UsageWrites::default();
        let every = Duration::from_secs(60);
        let start = Instant::now();
        assert_eq!(writes.take_due("a", start, every), Some(None));
        assert_eq!(
            writes.take_due("a", start + Duration::from_secs(59), every),
            None
        );
        // Another gateway has its own interval.
        assert_eq!(writes.take_due("b", start, every), Some(None));
        writes.record("a", "h1".to_owned());
        assert_eq!(
            writes.take_due("a", start + every, every),
            Some(Some("h1".to_owned()))
        );
        assert_eq!(
            writes.take_due("a", start + every + Duration::from_secs(1), every),
            None
        );
    }
}
