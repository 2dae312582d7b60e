//! Pure status of a GraphGateway: its conditions from the composition outcome, the served
//! supergraph, the Deployment's rollout and the gateway pods' problems.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::{CANARY, COMPOSED, DEGRADED, PROGRESSING, READY, set_condition};
use crate::diagnose::{Problem, Rollout};
use graphfleet_api::{CanaryPhase, CanaryStatus, CompositionErrorStatus, GraphGatewayStatus};

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

/// Who serves the revision: counted from what the pods report on their admin listener.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Serving {
    /// Ready pods serving the revision.
    pub pods: i32,
    /// Of those, pods whose admin listener did not answer, counted by their template.
    pub unconfirmed: i32,
}

/// Everything a GraphGateway status is derived from.
pub struct Observed<'a> {
    pub generation: Option<i64>,
    /// Whether this generation's spec was applied (`observedGeneration` says so only then).
    pub applied: bool,
    pub outcome: &'a CompositionOutcome,
    /// The revision the pod template names (the last good or the pinned one), if any.
    pub served_hash: Option<String>,
    /// `status.revisions` after this reconcile (`revisions::record`).
    pub revisions: Vec<graphfleet_api::SupergraphRevision>,
    /// Ready gateway pods serving `served_hash`, as they report it.
    pub serving: Serving,
    pub rollout: Option<Rollout>,
    pub selector: String,
    /// Why the gateway pods are not Ready, from their own state (`diagnose::rollout_problem`).
    pub pods: Option<Problem>,
    /// The API server refused this spec's objects (`diagnose::refused_write`).
    pub refused: Option<Problem>,
    /// The canary under way or rolled back.
    pub canary: Option<graphfleet_api::CanaryStatus>,
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
    if observed.applied {
        status.observed_generation = generation;
    }
    status.revisions = observed.revisions.clone();
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
        _ if let Some(refused) = &observed.refused => {
            (false, refused.reason, refused.message.clone())
        }
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
        (Some(hash), Some(r)) if r.complete() && observed.serving.pods >= r.desired => (
            true,
            "RolloutComplete",
            serving_message(observed.serving, r.desired, hash),
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
        _ if let Some(refused) = &observed.refused => {
            (true, refused.reason.to_owned(), refused.message.clone())
        }
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
    canary_condition(conditions, observed.canary.as_ref(), generation, now);
    let canary = observed
        .canary
        .as_ref()
        .is_some_and(|c| c.phase != CanaryPhase::RolledBack);
    status.phase = Some(
        match (&observed.served_hash, degraded, ready) {
            (None, _, _) => "Pending",
            (Some(_), true, _) => "Degraded",
            (Some(_), false, _) if canary => "Canary",
            (Some(_), false, true) => "Serving",
            (Some(_), false, false) => "RollingOut",
        }
        .to_owned(),
    );
    status.canary.clone_from(&observed.canary);
    status
}

/// `Canary`: True while a canary runs (reason `Progressing` or `Promoting`), False with
/// reason `RolledBack` once a step failed (the message names the metric or the LoadTest and
/// the figures), False `Idle` once the canary is over; not set before the first canary.
fn canary_condition(
    conditions: &mut Vec<Condition>,
    canary: Option<&CanaryStatus>,
    generation: Option<i64>,
    now: &Time,
) {
    let (running, reason, message) = match canary {
        Some(c) => match c.phase {
            CanaryPhase::Progressing => (true, "Progressing", c.message.clone()),
            CanaryPhase::Promoting => (true, "Promoting", c.message.clone()),
            CanaryPhase::RolledBack => (false, "RolledBack", c.message.clone()),
        },
        None if conditions.iter().any(|c| c.type_ == CANARY) => {
            (false, "Idle", "no canary under way".to_owned())
        }
        None => return,
    };
    set_condition(
        conditions, CANARY, running, reason, message, generation, now,
    );
}

/// `3/3 pods serve supergraph <hash>`, saying how many of them could not be asked.
fn serving_message(serving: Serving, desired: i32, hash: &str) -> String {
    let mut message = format!("{}/{desired} pods serve supergraph {hash}", serving.pods);
    if serving.unconfirmed > 0 {
        message.push_str(&format!(
            " ({} by their template: their admin port did not answer the operator)",
            serving.unconfirmed
        ));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
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
            applied: true,
            outcome,
            served_hash: Some("abc".to_owned()),
            revisions: Vec::new(),
            serving: Serving {
                pods: rollout.map_or(0, |r| r.ready),
                unconfirmed: 0,
            },
            rollout,
            selector: "app=x".to_owned(),
            pods: None,
            refused: None,
            canary: None,
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
    fn a_refused_workload_is_not_ready_and_degrades_with_the_api_servers_words() {
        let outcome = composed();
        let mut refused = observed(&outcome, Some(DONE));
        refused.applied = false;
        refused.refused = Some(Problem {
            reason: "WorkloadRefused",
            message:
                "the API server refused the gateway's objects: spec.volumes[0].name: Invalid value"
                    .to_owned(),
        });
        let s = gateway_status(None, &refused, &at(10));
        for type_ in [READY, DEGRADED] {
            let c = condition(&s, type_);
            assert_eq!(c.reason, "WorkloadRefused", "{type_}");
            assert!(
                c.message.contains("spec.volumes[0].name"),
                "{type_}: {}",
                c.message
            );
        }
        assert_eq!(condition(&s, READY).status, "False");
        assert_eq!(condition(&s, DEGRADED).status, "True");
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
    fn a_rolled_back_canary_is_a_false_canary_condition_naming_why() {
        let outcome = composed();
        let mut seen = observed(&outcome, Some(DONE));
        let mut canary = CanaryStatus {
            template: "t".to_owned(),
            revision: "def".to_owned(),
            phase: CanaryPhase::Progressing,
            step: 0,
            step_started_at: None,
            canary_pods: 1,
            stable_pods: 2,
            share_percent: 33,
            load_test: Some("gw-canary-t-0".to_owned()),
            message: "step 1: 33% of the pods watched for 60s; LoadTest gw-canary-t-0 running"
                .to_owned(),
        };
        let quiet = gateway_status(None, &seen, &at(5));
        assert!(
            quiet.conditions.iter().all(|c| c.type_ != CANARY),
            "no Canary condition before the first canary"
        );
        seen.canary = Some(canary.clone());
        let running = gateway_status(Some(&quiet), &seen, &at(10));
        let c = condition(&running, CANARY);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", "Progressing")
        );
        assert_eq!(c.message, canary.message);
        canary.phase = CanaryPhase::RolledBack;
        canary.message = "step 1 (33%) failed, canary removed: LoadTest gw-canary-t-0 missed its thresholds: error rate 12.500% (375 of 3000) >= 1%".to_owned();
        seen.canary = Some(canary.clone());
        let rolled_back = gateway_status(Some(&running), &seen, &at(20));
        let c = condition(&rolled_back, CANARY);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "RolledBack")
        );
        assert_eq!(c.message, canary.message);
        assert_eq!(c.last_transition_time, at(20));
        assert_eq!(rolled_back.phase.as_deref(), Some("Serving"));
        seen.canary = None;
        let idle = gateway_status(Some(&rolled_back), &seen, &at(30));
        let c = condition(&idle, CANARY);
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "Idle"));
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
