//! Pure status computation: conditions from what the reconciler observed.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::crd::{CompositionErrorStatus, GraphGatewayStatus};
use crate::diagnose::Problem;

pub const COMPOSED: &str = "Composed";
pub const READY: &str = "Ready";
pub const PROGRESSING: &str = "Progressing";
pub const DEGRADED: &str = "Degraded";
pub const SCHEMA_LOADED: &str = "SchemaLoaded";

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

/// Result of gathering and composing the selected subgraphs.
#[derive(Clone, Debug, PartialEq)]
pub enum CompositionOutcome {
    Composed {
        hash: String,
        subgraphs: Vec<String>,
    },
    Failed {
        /// `CompositionFailed`, `SubgraphUnavailable`, `InvalidSelector`, ...
        reason: String,
        errors: Vec<CompositionErrorStatus>,
    },
}

/// Rollout progress of the gateway Deployment, as `kubectl rollout status` judges it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rollout {
    pub desired: i32,
    pub replicas: i32,
    pub updated: i32,
    pub ready: i32,
    pub available: i32,
    pub observed: bool,
}

impl Rollout {
    pub fn of(deployment: &Deployment) -> Self {
        let generation = deployment.metadata.generation;
        let status = deployment.status.clone().unwrap_or_default();
        Self {
            desired: deployment
                .spec
                .as_ref()
                .and_then(|s| s.replicas)
                .unwrap_or(1),
            replicas: status.replicas.unwrap_or(0),
            updated: status.updated_replicas.unwrap_or(0),
            ready: status.ready_replicas.unwrap_or(0),
            available: status.available_replicas.unwrap_or(0),
            observed: status.observed_generation.is_some()
                && status.observed_generation >= generation,
        }
    }

    pub fn complete(&self) -> bool {
        self.observed
            && self.updated >= self.desired
            && self.replicas == self.updated
            && self.available >= self.desired
    }
}

/// Everything a GraphGateway status is derived from.
pub struct Observed<'a> {
    pub generation: Option<i64>,
    pub outcome: &'a CompositionOutcome,
    /// Hash of the supergraph in the ConfigMap (the last good one), if any.
    pub served_hash: Option<String>,
    pub rollout: Option<Rollout>,
    pub selector: String,
    /// Why the gateway pods are not Ready, from their own state (`diagnose::rollout_problem`).
    pub pods: Option<Problem>,
}

/// Errors reported in status at most; a broken subgraph can yield hundreds and the status
/// must stay small.
pub const MAX_REPORTED_ERRORS: usize = 20;

fn capped(errors: &[CompositionErrorStatus]) -> Vec<CompositionErrorStatus> {
    let mut out: Vec<_> = errors.iter().take(MAX_REPORTED_ERRORS).cloned().collect();
    if errors.len() > MAX_REPORTED_ERRORS {
        out.push(CompositionErrorStatus {
            code: "TRUNCATED".to_owned(),
            message: format!(
                "{} more errors not shown",
                errors.len() - MAX_REPORTED_ERRORS
            ),
            subgraphs: Vec::new(),
        });
    }
    out
}

/// The new status, given the previous one (for transition times and served subgraphs).
pub fn gateway_status(
    previous: Option<&GraphGatewayStatus>,
    observed: &Observed<'_>,
    now: &Time,
) -> GraphGatewayStatus {
    let mut status = previous.cloned().unwrap_or_default();
    let generation = observed.generation;
    status.observed_generation = generation;
    status.selector = Some(observed.selector.clone());
    status.supergraph_hash = observed.served_hash.clone();
    let conditions = &mut status.conditions;
    let failed = match observed.outcome {
        CompositionOutcome::Composed { hash, subgraphs } => {
            status.composition_errors.clear();
            status.subgraphs = subgraphs.clone();
            let message = format!("composed {} subgraphs into {hash}", subgraphs.len());
            set_condition(
                conditions, COMPOSED, true, "Composed", message, generation, now,
            );
            None
        }
        CompositionOutcome::Failed { reason, errors } => {
            status.composition_errors = capped(errors);
            let message = status
                .composition_errors
                .iter()
                .map(|e| format!("{}: {}", e.code, e.message))
                .collect::<Vec<_>>()
                .join("\n");
            set_condition(
                conditions, COMPOSED, false, reason, message, generation, now,
            );
            Some(reason.clone())
        }
    };
    let rollout = observed.rollout.unwrap_or_default();
    status.replicas = rollout.replicas;
    status.ready_replicas = rollout.ready;
    let (ready, ready_reason, ready_message) = match (&observed.served_hash, observed.rollout) {
        (None, _) => (
            false,
            "NoSupergraph",
            "no supergraph has composed yet".to_owned(),
        ),
        (Some(_), None) => (
            false,
            "DeploymentMissing",
            "the gateway Deployment does not exist yet".to_owned(),
        ),
        (Some(hash), Some(r)) if r.complete() => (
            true,
            "RolloutComplete",
            format!(
                "{}/{} replicas serve supergraph {hash}",
                r.available, r.desired
            ),
        ),
        (Some(_), Some(r)) => {
            let progress = format!(
                "{}/{} replicas updated, {} available",
                r.updated, r.desired, r.available
            );
            match &observed.pods {
                Some(p) => (false, p.reason, format!("{}; {progress}", p.message)),
                None => (false, "RollingOut", progress),
            }
        }
    };
    set_condition(
        conditions,
        READY,
        ready,
        ready_reason,
        ready_message.clone(),
        generation,
        now,
    );
    let progressing = observed.rollout.is_some_and(|r| !r.complete());
    let (reason, message) = if progressing {
        ("RollingOut", ready_message)
    } else {
        ("Stable", "no rollout in progress".to_owned())
    };
    set_condition(
        conditions,
        PROGRESSING,
        progressing,
        reason,
        message,
        generation,
        now,
    );
    let unavailable = observed
        .rollout
        .is_some_and(|r| r.observed && r.available < r.desired.min(1));
    let (degraded, reason, message) = match (failed, unavailable) {
        (Some(reason), _) => (
            true,
            reason,
            match &observed.served_hash {
                Some(hash) => format!("serving the last good supergraph {hash}"),
                None => "no supergraph to serve".to_owned(),
            },
        ),
        (None, true) => (
            true,
            "Unavailable".to_owned(),
            match &observed.pods {
                Some(p) => format!("no gateway replica is available: {}", p.message),
                None => "no gateway replica is available".to_owned(),
            },
        ),
        (None, false) => (
            false,
            "Healthy".to_owned(),
            "composition and rollout are healthy".to_owned(),
        ),
    };
    set_condition(
        conditions, DEGRADED, degraded, &reason, message, generation, now,
    );
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).expect("valid timestamp"))
    }

    fn composed() -> CompositionOutcome {
        CompositionOutcome::Composed {
            hash: "abc".to_owned(),
            subgraphs: vec!["accounts".to_owned(), "products".to_owned()],
        }
    }

    fn observed<'a>(outcome: &'a CompositionOutcome, rollout: Option<Rollout>) -> Observed<'a> {
        Observed {
            generation: Some(3),
            outcome,
            served_hash: Some("abc".to_owned()),
            rollout,
            selector: "app=x".to_owned(),
            pods: None,
        }
    }

    fn condition<'a>(s: &'a GraphGatewayStatus, t: &str) -> &'a Condition {
        s.conditions
            .iter()
            .find(|c| c.type_ == t)
            .expect("condition present")
    }

    const DONE: Rollout = Rollout {
        desired: 2,
        replicas: 2,
        updated: 2,
        ready: 2,
        available: 2,
        observed: true,
    };

    #[test]
    fn complete_rollout_is_ready() {
        let outcome = composed();
        let s = gateway_status(None, &observed(&outcome, Some(DONE)), &at(10));
        insta::assert_yaml_snapshot!(s);
    }

    #[test]
    fn failed_composition_keeps_the_served_hash_and_degrades() {
        let good = composed();
        let before = gateway_status(None, &observed(&good, Some(DONE)), &at(10));
        let bad = CompositionOutcome::Failed {
            reason: "CompositionFailed".to_owned(),
            errors: vec![CompositionErrorStatus {
                code: "FIELD_TYPE_MISMATCH".to_owned(),
                message: "Type of field \"T.f\" is incompatible".to_owned(),
                subgraphs: vec!["a".to_owned(), "b".to_owned()],
            }],
        };
        let after = gateway_status(Some(&before), &observed(&bad, Some(DONE)), &at(20));
        insta::assert_yaml_snapshot!(after);
        assert_eq!(after.supergraph_hash.as_deref(), Some("abc"));
        assert_eq!(after.subgraphs, before.subgraphs, "served subgraphs stay");
        // Ready did not change, so its transition time stays.
        assert_eq!(condition(&after, READY).last_transition_time, at(10));
    }

    #[test]
    fn many_errors_are_capped_with_a_summary() {
        let errors = (0..25)
            .map(|i| CompositionErrorStatus {
                code: format!("E{i}"),
                message: "bad".to_owned(),
                subgraphs: vec![],
            })
            .collect();
        let bad = CompositionOutcome::Failed {
            reason: "CompositionFailed".to_owned(),
            errors,
        };
        let s = gateway_status(None, &observed(&bad, None), &at(1));
        assert_eq!(s.composition_errors.len(), MAX_REPORTED_ERRORS + 1);
        let last = s.composition_errors.last().expect("summary");
        assert_eq!(
            (last.code.as_str(), last.message.as_str()),
            ("TRUNCATED", "5 more errors not shown")
        );
        assert_eq!(condition(&s, READY).reason, "DeploymentMissing");
    }

    #[test]
    fn rollout_in_progress_is_progressing_not_ready() {
        let outcome = composed();
        let rolling = Rollout {
            updated: 1,
            available: 1,
            replicas: 3,
            ..DONE
        };
        let s = gateway_status(None, &observed(&outcome, Some(rolling)), &at(10));
        assert_eq!(condition(&s, READY).status, "False");
        assert_eq!(condition(&s, PROGRESSING).status, "True");
        assert_eq!(condition(&s, DEGRADED).status, "False");
    }
}
