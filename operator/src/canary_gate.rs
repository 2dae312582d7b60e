//! The load gate of a canary step, pure: what the step's LoadTest (run against the canary
//! pods alone, `spec.rollout.canary.loadTest`) says, and what the step does with that and
//! its pause. The LoadTest controller judges the test (phase and `Passed` condition); this
//! reads its verdict, bounds the wait for it and words it for the GraphGateway.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::ResourceExt;

use crate::resources::loadtest::{STARTUP_AND_SUMMARY_MARGIN, time_limit};
use crate::status::PASSED;
use graphfleet_api::{LoadTest, LoadTestPhase};

/// How long past its `duration` a step waits for its LoadTest's verdict: the start-up and
/// summary margin the LoadTest's own Jobs get, and a minute for its status to come.
pub const GATE_GRACE: Duration = STARTUP_AND_SUMMARY_MARGIN.saturating_add(Duration::from_secs(60));

/// What a step's LoadTest says.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// Not finished yet (and not past its deadline): what it is doing.
    Running(String),
    /// Ended `Succeeded` with every threshold met: its figures.
    Passed(String),
    /// Failed, aborted, missed a threshold or never finished: the LoadTest, the threshold
    /// and the figures.
    Failed(String),
}

/// The longest a step waits for `lt`, from its creation: its duration plus [`GATE_GRACE`]
/// (the grace alone for a duration the LoadTest controller rejects: it fails the test).
pub fn deadline(lt: &LoadTest) -> Duration {
    time_limit(lt)
        .map(|limit| limit.saturating_sub(STARTUP_AND_SUMMARY_MARGIN))
        .unwrap_or_default()
        .saturating_add(GATE_GRACE)
}

/// The gate of a step from its LoadTest, at `now`.
pub fn gate(lt: &LoadTest, now: &Time) -> Gate {
    let name = lt.name_any();
    let status = lt.status.clone().unwrap_or_default();
    let passed = status.conditions.iter().find(|c| c.type_ == PASSED);
    let phase = status.phase.unwrap_or_default();
    match phase {
        LoadTestPhase::Pending | LoadTestPhase::Running => {
            let age = lt
                .metadata
                .creation_timestamp
                .as_ref()
                .map_or(0, |created| seconds_between(created, now));
            let limit = deadline(lt).as_secs();
            let doing = if phase == LoadTestPhase::Pending {
                "pending"
            } else {
                "running"
            };
            if age > limit {
                Gate::Failed(format!(
                    "LoadTest {name} did not finish within {limit}s (its duration {} plus {}s): still {doing}{}",
                    lt.spec.duration,
                    GATE_GRACE.as_secs(),
                    detail(status.message.as_deref())
                ))
            } else {
                Gate::Running(format!(
                    "LoadTest {name} {doing} ({age}s of at most {limit}s)"
                ))
            }
        }
        LoadTestPhase::Succeeded => match passed {
            Some(c) if c.status == "True" => {
                Gate::Passed(format!("LoadTest {name} passed: {}", c.message))
            }
            Some(c) => Gate::Failed(format!("LoadTest {name} {}", verdict(c))),
            None => Gate::Failed(format!(
                "LoadTest {name} ended without a verdict: it has no thresholds to pass"
            )),
        },
        LoadTestPhase::Failed | LoadTestPhase::Aborted => {
            let what = if phase == LoadTestPhase::Failed {
                "failed"
            } else {
                "was aborted"
            };
            let verdict = passed.map(|c| format!("; {}", verdict(c)));
            Gate::Failed(format!(
                "LoadTest {name} {what}{}{}",
                detail(status.message.as_deref()),
                verdict.unwrap_or_default()
            ))
        }
    }
}

/// A `Passed` condition that is not True, in words: `missed its thresholds: error rate
/// 12.500% (125 of 1000) >= 1%; p99 ...` (the failed bounds first, as the LoadTest words
/// them).
fn verdict(passed: &Condition) -> String {
    let what = match passed.reason.as_str() {
        crate::thresholds::NOT_MET => "missed its thresholds",
        crate::thresholds::ABORTED => "stopped on a threshold",
        crate::thresholds::NO_RESULTS => "has no results to judge",
        crate::thresholds::INVALID => "has an invalid threshold",
        _ => "did not pass",
    };
    format!("{what}: {}", passed.message)
}

fn detail(message: Option<&str>) -> String {
    message
        .filter(|m| !m.is_empty())
        .map(|m| format!(" ({m})"))
        .unwrap_or_default()
}

fn seconds_between(from: &Time, to: &Time) -> u64 {
    u64::try_from(to.0.as_second() - from.0.as_second()).unwrap_or(0)
}

/// What a step does next, from its pause and its LoadTest.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Keep watching; with a load gate, what its LoadTest is doing (or its pass, while the
    /// pause goes on).
    Wait(Option<String>),
    /// Judge the metrics; with a load gate, its LoadTest's pass.
    Judge(Option<String>),
    /// Roll the canary back: why.
    RollBack(String),
}

/// A step with `pause_left` seconds of its pause to go and, with a load gate, its LoadTest's
/// gate: rolled back as soon as the LoadTest fails (no need to watch further), judged once
/// the pause is over and the LoadTest passed.
pub fn step(pause_left: u64, gate: Option<&Gate>) -> Step {
    match gate {
        Some(Gate::Failed(why)) => Step::RollBack(why.clone()),
        Some(Gate::Running(what)) => Step::Wait(Some(what.clone())),
        Some(Gate::Passed(figures)) if pause_left == 0 => Step::Judge(Some(figures.clone())),
        Some(Gate::Passed(figures)) => Step::Wait(Some(figures.clone())),
        None if pause_left == 0 => Step::Judge(None),
        None => Step::Wait(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).expect("a valid timestamp"))
    }

    /// A canary LoadTest created at second 1000, with `status`.
    fn loadtest(status: serde_json::Value) -> LoadTest {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "LoadTest",
            "metadata": {
                "name": "fed-canary-ab12cd34-0",
                "namespace": "shop",
                "creationTimestamp": "1970-01-01T00:16:40Z",
            },
            "spec": {
                "target": { "url": "http://fed-canary.shop.svc:80/graphql" },
                "scenario": "query", "rate": 50, "duration": "1m",
                "thresholds": { "maxErrorPercent": 1, "latency": { "p99": "50ms" } },
            },
            "status": status,
        }))
        .expect("valid LoadTest")
    }

    fn passed(status: &str, reason: &str, message: &str) -> serde_json::Value {
        serde_json::json!([{
            "type": "Passed", "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "1970-01-01T00:20:00Z",
        }])
    }

    #[test]
    fn a_test_that_met_its_thresholds_passes_with_its_figures() {
        let lt = loadtest(serde_json::json!({
            "phase": "Succeeded",
            "conditions": passed("True", "ThresholdsMet", "p99 3.10 ms < 50ms; error rate 0.000% (0 of 3000) < 1%"),
        }));
        assert_eq!(
            gate(&lt, &at(1100)),
            Gate::Passed(
                "LoadTest fed-canary-ab12cd34-0 passed: p99 3.10 ms < 50ms; error rate 0.000% (0 of 3000) < 1%"
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_missed_threshold_fails_naming_the_test_the_bound_and_the_numbers() {
        let lt = loadtest(serde_json::json!({
            "phase": "Succeeded",
            "conditions": passed(
                "False",
                "ThresholdsNotMet",
                "error rate 12.500% (375 of 3000) >= 1%; p99 3.10 ms < 50ms",
            ),
        }));
        assert_eq!(
            gate(&lt, &at(1100)),
            Gate::Failed(
                "LoadTest fed-canary-ab12cd34-0 missed its thresholds: error rate 12.500% (375 of 3000) >= 1%; p99 3.10 ms < 50ms"
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_failed_or_aborted_test_fails_with_its_reasons() {
        let failed = loadtest(serde_json::json!({
            "phase": "Failed",
            "message": "segment 0: k6 exited with code 107",
            "conditions": passed("False", "NoResults", "the load test failed before every segment reported results; see status.message"),
        }));
        assert_eq!(
            gate(&failed, &at(1100)),
            Gate::Failed(
                "LoadTest fed-canary-ab12cd34-0 failed (segment 0: k6 exited with code 107); has no results to judge: the load test failed before every segment reported results; see status.message"
                    .to_owned()
            )
        );
        let aborted = loadtest(serde_json::json!({
            "phase": "Aborted",
            "conditions": passed("False", "AbortedOnThreshold", "segment 1 broke gf_error_rate rate<0.01 on its share of the load and stopped the test (thresholds.abortOnFail)"),
        }));
        let Gate::Failed(why) = gate(&aborted, &at(1100)) else {
            panic!("an aborted test passed the gate");
        };
        assert!(
            why.starts_with("LoadTest fed-canary-ab12cd34-0 was aborted; stopped on a threshold: segment 1 broke gf_error_rate rate<0.01"),
            "{why}"
        );
        let silent = loadtest(serde_json::json!({ "phase": "Succeeded" }));
        assert!(
            matches!(gate(&silent, &at(1100)), Gate::Failed(why) if why.contains("no thresholds"))
        );
    }

    #[test]
    fn a_running_test_holds_the_step_until_its_duration_and_grace_are_over() {
        let running = loadtest(serde_json::json!({ "phase": "Running" }));
        // 1m duration + 180 s grace from its creation at second 1000.
        assert_eq!(deadline(&running), Duration::from_secs(240));
        assert_eq!(
            gate(&running, &at(1030)),
            Gate::Running(
                "LoadTest fed-canary-ab12cd34-0 running (30s of at most 240s)".to_owned()
            )
        );
        assert!(matches!(gate(&running, &at(1240)), Gate::Running(_)));
        assert_eq!(
            gate(&running, &at(1241)),
            Gate::Failed(
                "LoadTest fed-canary-ab12cd34-0 did not finish within 240s (its duration 1m plus 180s): still running"
                    .to_owned()
            )
        );
        let never_started = loadtest(serde_json::Value::Null);
        assert!(
            matches!(gate(&never_started, &at(1010)), Gate::Running(m) if m.contains("pending"))
        );
        assert!(
            matches!(gate(&never_started, &at(2000)), Gate::Failed(m) if m.contains("still pending"))
        );
    }

    #[test]
    fn a_step_waits_for_both_its_pause_and_its_test_and_fails_at_once() {
        let running = Gate::Running("LoadTest x running".to_owned());
        let passed = Gate::Passed("LoadTest x passed: p99 1 ms < 50ms".to_owned());
        let failed = Gate::Failed("LoadTest x missed its thresholds".to_owned());
        assert_eq!(step(30, None), Step::Wait(None));
        assert_eq!(step(0, None), Step::Judge(None));
        assert_eq!(
            step(0, Some(&running)),
            Step::Wait(Some("LoadTest x running".to_owned()))
        );
        assert_eq!(
            step(30, Some(&passed)),
            Step::Wait(Some("LoadTest x passed: p99 1 ms < 50ms".to_owned()))
        );
        assert_eq!(
            step(0, Some(&passed)),
            Step::Judge(Some("LoadTest x passed: p99 1 ms < 50ms".to_owned()))
        );
        // A failed test ends the step before its pause does.
        assert_eq!(
            step(30, Some(&failed)),
            Step::RollBack("LoadTest x missed its thresholds".to_owned())
        );
    }
}
