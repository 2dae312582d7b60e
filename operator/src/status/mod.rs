//! Pure status computation: conditions and phases from what a reconciler observed. One file
//! per resource kind; the condition helper and condition types they share are here.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

pub mod gateway;
pub mod loadtest;
pub mod revisions;

pub const COMPOSED: &str = "Composed";
pub const READY: &str = "Ready";
pub const PROGRESSING: &str = "Progressing";
pub const DEGRADED: &str = "Degraded";
/// GraphGateway: True while a canary runs, False once it was rolled back (the message says
/// why) or is over; absent until the first canary.
pub const CANARY: &str = "Canary";
pub const SCHEMA_LOADED: &str = "SchemaLoaded";
/// LoadTest: False when the spec cannot become k6 Jobs (the reason names what is wrong).
pub const SPEC_VALID: &str = "SpecValid";
/// LoadTest with thresholds: whether the finished test met them (`thresholds::evaluate`).
pub const PASSED: &str = "Passed";
/// LoadTest: whether every load-generator pod got a node (False with the scheduler's
/// message, and the test failed, when one cannot).
pub const SCHEDULED: &str = "Scheduled";

/// Sets condition `type_`, keeping its transition time when the status did not change.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: String,
    generation: Option<i64>,
    now: &Time,
) {
    let status = if status { "True" } else { "False" }.to_owned();
    let previous = conditions.iter().position(|c| c.type_ == type_);
    let last_transition_time = match previous.map(|i| &conditions[i]) {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => now.clone(),
    };
    let condition = Condition {
        type_: type_.to_owned(),
        status,
        reason: reason.to_owned(),
        message,
        observed_generation: generation,
        last_transition_time,
    };
    match previous {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
}
