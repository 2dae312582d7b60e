//! Reads a GraphGateway's pods' CPU for a LoadTest target: once as its Jobs are created
//! (before any load), once after it finished; the figure goes into the target's status
//! (`gatewayCpu`). The first reading lives in this operator's memory only: a replica that
//! did not create the Jobs (a restart, a failover) measures nothing rather than part.

use std::collections::HashMap;
use std::sync::Mutex;

use graphfleet_api::{LoadTest, LoadTestStatus};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::ListParams;

use super::{Context, api};
use crate::status::loadtest::cpu::{self, CpuReading, TargetKey};

/// First readings, by (LoadTest uid, target).
#[derive(Default)]
pub struct Baselines(Mutex<HashMap<(String, TargetKey), CpuReading>>);

impl Baselines {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, TargetKey), CpuReading>> {
        self.0.lock().expect("CPU baseline lock")
    }
}

/// The CPU counter of every running pod of GraphGateway `name` in `ns` that answers.
async fn read(ctx: &Context, ns: &str, name: &str) -> CpuReading {
    let selector = crate::resources::gateway_meta::selector_string_of(name);
    let pods = match api::<Pod>(ctx, ns)
        .list(&ListParams::default().labels(&selector))
        .await
    {
        Ok(list) => list.items,
        Err(e) => {
            tracing::debug!(gateway = %name, error = %e, "cannot list the gateway's pods for CPU");
            return CpuReading::new();
        }
    };
    let mut reading = CpuReading::new();
    for pod in pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        match ctx.probe.metrics(pod).await {
            Ok(text) => match cpu::cpu_seconds(&text) {
                Some(seconds) => {
                    reading.insert(pod.uid().unwrap_or_default(), seconds);
                }
                None => {
                    tracing::debug!(pod = %pod.name_any(), "no {} in its metrics", cpu::CPU_METRIC)
                }
            },
            Err(e) => tracing::debug!(pod = %pod.name_any(), error = %e, "no metrics for CPU"),
        }
    }
    reading
}

/// Before `target`'s Jobs are created: the first reading (a `url` target has none).
pub(super) async fn before_load(ctx: &Context, lt: &LoadTest, target: &TargetKey) {
    let Some((ns, name)) = cpu::gateway_of(lt, target) else {
        return;
    };
    let reading = read(ctx, &ns, &name).await;
    let key = (lt.uid().unwrap_or_default(), target.clone());
    ctx.cpu_baselines.lock().insert(key, reading);
}

/// Each target of `status` that finished since the last look: the second reading, and its
/// figure into `status`.
pub(super) async fn after_load(ctx: &Context, lt: &LoadTest, status: &mut LoadTestStatus) {
    let uid = lt.uid().unwrap_or_default();
    for (target, requests) in cpu::finished_unmeasured(status) {
        let key = (uid.clone(), target.clone());
        let Some(before) = ctx.cpu_baselines.lock().remove(&key) else {
            continue;
        };
        let Some((ns, name)) = cpu::gateway_of(lt, &target) else {
            continue;
        };
        let after = read(ctx, &ns, &name).await;
        match cpu::used(&before, &after, requests) {
            Some(used) => cpu::record(status, &target, used),
            None => {
                tracing::info!(gateway = %name, "no gateway pod answered after the load: no CPU figure")
            }
        }
    }
}

/// Forgets the readings of a LoadTest that will not be observed again.
pub(super) fn forget(ctx: &Context, lt: &LoadTest) {
    let uid = lt.uid().unwrap_or_default();
    ctx.cpu_baselines.lock().retain(|(u, _), _| u != &uid);
}
