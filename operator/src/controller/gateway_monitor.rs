//! The gateway's PodMonitor (`resources::gateway_monitor`), applied only where the
//! Prometheus Operator serves `monitoring.coreos.com/v1` podmonitors. The operator does not
//! watch PodMonitors (a watch of a missing CRD would fail the controller): drift is repaired
//! at the next reconcile, and a CRD installed later is found within [`RECHECK`].

use std::sync::Mutex;
use std::time::{Duration, Instant};

use kube::ResourceExt;
use kube::api::{Api, DynamicObject};

use super::{Context, Error, apply_or_delete};
use crate::resources::gateway_monitor::{MONITORING_GROUP, pod_monitor, pod_monitor_resource};
use graphfleet_api::GraphGateway;

/// How long a discovery answer is trusted.
const RECHECK: Duration = Duration::from_secs(300);

/// Whether the cluster serves PodMonitors, as last discovered.
#[derive(Default)]
pub(super) struct Discovery {
    known: Mutex<Option<(Instant, bool)>>,
}

impl Discovery {
    fn cached(&self) -> Option<bool> {
        let known = self.known.lock().expect("discovery lock");
        known
            .filter(|(at, _)| at.elapsed() < RECHECK)
            .map(|(_, served)| served)
    }

    fn remember(&self, served: bool) {
        *self.known.lock().expect("discovery lock") = Some((Instant::now(), served));
    }
}

/// Whether `monitoring.coreos.com/v1` lists `podmonitors` (asked at most every
/// [`RECHECK`]; an answer other than a list or a 404 is not remembered).
async fn serves_pod_monitors(ctx: &Context) -> bool {
    if let Some(served) = ctx.pod_monitors.cached() {
        return served;
    }
    let version = format!("{MONITORING_GROUP}/v1");
    match ctx.client.list_api_group_resources(&version).await {
        Ok(list) => {
            let served = list.resources.iter().any(|r| r.name == "podmonitors");
            ctx.pod_monitors.remember(served);
            served
        }
        Err(kube::Error::Api(e)) if e.code == 404 => {
            ctx.pod_monitors.remember(false);
            false
        }
        Err(e) => {
            tracing::warn!(error = %e, "discovering {version}; no PodMonitor this time");
            false
        }
    }
}

/// Applies the gateway's PodMonitor, or deletes it when `spec.podMonitor.enabled` is false;
/// nothing where PodMonitors are not served.
pub(super) async fn apply(ctx: &Context, gw: &GraphGateway, ns: &str) -> Result<(), Error> {
    if !serves_pod_monitors(ctx).await {
        return Ok(());
    }
    let api: Api<DynamicObject> =
        Api::namespaced_with(ctx.client.clone(), ns, &pod_monitor_resource());
    apply_or_delete(&api, &gw.name_any(), pod_monitor(gw)).await?;
    Ok(())
}
