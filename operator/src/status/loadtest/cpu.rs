//! The efficiency figure of a GraphGateway target: CPU its pods used while it was loaded,
//! from each pod's own `graphfleet_process_cpu_seconds_total` read before the load and after it, and
//! the target's requests per CPU second. Pure: readings in, [`GatewayCpu`] out.

use std::collections::BTreeMap;

use graphfleet_api::{GatewayCpu, LoadTest, LoadTestStatus};
use kube::ResourceExt;

/// The metric every gateway pod exports (telemetry/process_cpu.rs: 10 ms resolution).
pub const CPU_METRIC: &str = "graphfleet_process_cpu_seconds_total";

/// CPU seconds used so far, by pod uid, of the pods that answered.
pub type CpuReading = BTreeMap<String, f64>;

/// The value of [`CPU_METRIC`] in a Prometheus text exposition, if present and finite.
pub fn cpu_seconds(metrics: &str) -> Option<f64> {
    metrics
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let rest = l.strip_prefix(CPU_METRIC)?;
            // The name alone, or with labels; not a longer name with this prefix.
            let value = match rest.strip_prefix('{') {
                Some(labelled) => labelled.split_once('}')?.1,
                None if rest.starts_with(' ') => rest,
                None => return None,
            };
            value.split_whitespace().next()?.parse::<f64>().ok()
        })
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// CPU used between `before` and `after`: per pod read both times the difference, per pod
/// new in `after` its whole counter (it started during the load), and the pods of `before`
/// missing from `after` counted as lost. `None` when no pod was read after the load.
pub fn used(before: &CpuReading, after: &CpuReading, requests: Option<u64>) -> Option<GatewayCpu> {
    if after.is_empty() {
        return None;
    }
    let core_seconds: f64 = after
        .iter()
        .map(|(pod, end)| {
            let start = before.get(pod).copied().unwrap_or(0.0);
            // A counter that went back means the process restarted: count it from zero.
            if *end >= start { end - start } else { *end }
        })
        .sum();
    let pods_lost = before.keys().filter(|p| !after.contains_key(*p)).count();
    let requests_per_core_second = requests
        .filter(|_| core_seconds > 0.0)
        .map(|r| r as f64 / core_seconds);
    Some(GatewayCpu {
        pods: u32::try_from(after.len()).unwrap_or(u32::MAX),
        core_seconds,
        requests_per_core_second,
        pods_lost: u32::try_from(pods_lost).unwrap_or(u32::MAX),
    })
}

/// Where the CPU of one of `lt`'s targets is kept: `None` for `spec.target`, else the name.
pub type TargetKey = Option<String>;

/// The GraphGateway (namespace, name) a target loads; `None` for a `url` target.
pub fn gateway_of(lt: &LoadTest, target: &TargetKey) -> Option<(String, String)> {
    let gateway_ref = match target {
        None => lt.spec.target.as_ref()?.gateway_ref.as_ref()?,
        Some(name) => lt
            .spec
            .targets
            .as_ref()?
            .iter()
            .find(|t| &t.name == name)?
            .gateway_ref
            .as_ref()?,
    };
    let ns = gateway_ref
        .namespace
        .clone()
        .or_else(|| lt.namespace())
        .unwrap_or_else(|| "default".to_owned());
    Some((ns, gateway_ref.name.clone()))
}

/// A target of `status` that has finished without a CPU figure: its key and requests.
pub fn finished_unmeasured(status: &LoadTestStatus) -> Vec<(TargetKey, Option<u64>)> {
    let finished = |p: Option<_>| p.is_some_and(graphfleet_api::LoadTestPhase::is_finished);
    if status.targets.is_empty() {
        return match finished(status.phase) && status.gateway_cpu.is_none() {
            true => vec![(None, status.results.as_ref().map(|r| r.requests))],
            false => Vec::new(),
        };
    }
    status
        .targets
        .iter()
        .filter(|t| finished(Some(t.phase)) && t.gateway_cpu.is_none())
        .map(|t| (Some(t.name.clone()), t.results.as_ref().map(|r| r.requests)))
        .collect()
}

/// Sets the figure of `target` in `status`.
pub fn record(status: &mut LoadTestStatus, target: &TargetKey, cpu: GatewayCpu) {
    match target {
        None => status.gateway_cpu = Some(cpu),
        Some(name) => {
            if let Some(t) = status.targets.iter_mut().find(|t| &t.name == name) {
                t.gateway_cpu = Some(cpu);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_is_read_with_or_without_labels_and_not_from_a_longer_name() {
        let text = "# HELP graphfleet_process_cpu_seconds_total CPU time.\n\
                    # TYPE graphfleet_process_cpu_seconds_total counter\n\
                    graphfleet_process_cpu_seconds_total_other 9\n\
                    graphfleet_process_cpu_seconds_total 12.5\n";
        assert_eq!(cpu_seconds(text), Some(12.5));
        assert_eq!(
            cpu_seconds("graphfleet_process_cpu_seconds_total{pod=\"a\"} 3 1700000000\n"),
            Some(3.0)
        );
        assert_eq!(
            cpu_seconds("graphfleet_process_cpu_seconds_total_other 9\n"),
            None
        );
        assert_eq!(
            cpu_seconds("graphfleet_process_cpu_seconds_total NaN\n"),
            None
        );
        assert_eq!(cpu_seconds(""), None);
    }

    #[test]
    fn cpu_used_counts_kept_new_restarted_and_lost_pods() {
        let before = CpuReading::from([
            ("kept".to_owned(), 10.0),
            ("restarted".to_owned(), 50.0),
            ("gone".to_owned(), 7.0),
        ]);
        let after = CpuReading::from([
            ("kept".to_owned(), 14.0),
            ("restarted".to_owned(), 1.0),
            ("new".to_owned(), 2.0),
        ]);
        let cpu = used(&before, &after, Some(7_000)).expect("pods were read after");
        assert_eq!(cpu.pods, 3);
        assert_eq!(cpu.pods_lost, 1);
        assert!((cpu.core_seconds - 7.0).abs() < 1e-9, "{cpu:?}");
        assert_eq!(cpu.requests_per_core_second, Some(1_000.0));
        assert_eq!(used(&before, &CpuReading::new(), Some(1)), None);
        let idle = used(&after, &after, Some(5)).expect("read");
        assert_eq!(idle.requests_per_core_second, None, "no CPU used: no ratio");
    }
}
