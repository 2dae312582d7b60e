//! The `Scheduled` condition: whether every load-generator pod got a node, and the
//! scheduler's words when one did not (such a segment fails the test at once, see
//! `segment`).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::ResourceExt;

use crate::diagnose;
use crate::status::{SCHEDULED, set_condition};

/// Sets `Scheduled` from the LoadTest's pods: False (reason `Unschedulable`, the pod and
/// the scheduler's message) while one cannot be placed, True once every pod has a node;
/// left as it was while there is no pod.
pub(super) fn record_scheduling(
    pods: &[Pod],
    conditions: &mut Vec<Condition>,
    generation: Option<i64>,
    now: &Time,
) {
    if pods.is_empty() {
        return;
    }
    let unschedulable: Vec<String> = pods
        .iter()
        .filter_map(|p| {
            Some(format!(
                "pod {}: {}",
                p.name_any(),
                diagnose::unschedulable(p)?
            ))
        })
        .collect();
    let (scheduled, reason, message) = if unschedulable.is_empty() {
        if pods.iter().any(|p| diagnose::node_of(p).is_none()) {
            return;
        }
        (
            true,
            "Scheduled",
            "every load-generator pod has a node".to_owned(),
        )
    } else {
        (false, "Unschedulable", unschedulable.join("; "))
    };
    set_condition(
        conditions, SCHEDULED, scheduled, reason, message, generation, now,
    );
}
