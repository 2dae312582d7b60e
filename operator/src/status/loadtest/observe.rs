//! The LoadTest's status from its pods and Jobs: one target's run, or each of
//! `spec.targets` in turn, the merged results and the thresholds' verdict; and the status of
//! a spec the builders reject.

use super::job::has_jobs;
use super::scheduling::record_scheduling;
use super::segment::{LoggedSummaries, overall_phase, segment};
use super::start::start_skew_ms;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use crate::k6_summary::{Segment, aggregate, segments_without_histogram};
use crate::resources::loadtest::{SEGMENT_LABEL, SpecError, Target, target_job_name, targets};
use crate::status::{PASSED, SPEC_VALID, set_condition};
use crate::thresholds;
use graphfleet_api::{
    LoadTest, LoadTestPhase, LoadTestResults, LoadTestStatus, SegmentStatus, TargetStatus,
};

/// A LoadTest's status and the k6 summaries it was built from (segment order, those read).
pub struct Observed {
    pub status: LoadTestStatus,
    /// With `spec.target`.
    pub summaries: Vec<Segment>,
    /// With `spec.targets`: each target's, in target order.
    pub target_summaries: Vec<Vec<Segment>>,
}

/// The LoadTest's status from its pods and Jobs, with the summaries from the pods' logs
/// (termination messages for the pods missing from `logged`).
pub fn loadtest_status(
    lt: &LoadTest,
    pods: &[Pod],
    jobs: &[Job],
    previous: &LoadTestStatus,
    now: &Time,
) -> LoadTestStatus {
    observe(lt, pods, jobs, previous, &LoggedSummaries::new(), now).status
}

/// What the pods and Jobs of one target say: its segments, phase, merged results and the
/// thresholds' verdict (once it finished).
struct Run {
    phase: LoadTestPhase,
    segments: Vec<SegmentStatus>,
    summaries: Vec<Segment>,
    results: Option<LoadTestResults>,
    message: Vec<String>,
    verdict: Option<thresholds::Verdict>,
}

/// One target's run from its pods and Jobs. Once a segment failed, the unfinished ones are
/// reported stopped: the controller stops their Jobs ([`jobs_to_stop`]), as a failed load
/// test must not keep loading the target.
fn observe_run(
    lt: &LoadTest,
    target: &Target,
    pods: &[Pod],
    jobs: &[Job],
    previous: &[SegmentStatus],
    logged: &LoggedSummaries,
    now: &Time,
) -> Run {
    let (mut segments, summaries): (Vec<_>, Vec<_>) = (0..lt.spec.parallelism.max(1))
        .map(|i| {
            let index = i.to_string();
            let of_segment: Vec<&Pod> = pods
                .iter()
                .filter(|p| p.labels().get(SEGMENT_LABEL) == Some(&index))
                .filter(|p| target.owns(p.labels()))
                .collect();
            let name = target_job_name(&lt.name_any(), target, i);
            let job = jobs
                .iter()
                .find(|j| j.metadata.name.as_deref() == Some(name.as_str()));
            let before = previous.iter().find(|s| s.index == i);
            segment(lt, &name, i, &of_segment, job, before, logged, now)
        })
        .unzip();
    let phase = overall_phase(&segments);
    // The first segment that stopped on an abort threshold, with its partial summary.
    let aborted_by = segments
        .iter()
        .zip(&summaries)
        .find(|(s, _)| s.phase == LoadTestPhase::Aborted)
        .map(|(s, partial)| (s.index, partial.clone()));
    if matches!(phase, LoadTestPhase::Failed | LoadTestPhase::Aborted) {
        let failed: Vec<String> = segments
            .iter()
            .filter(|s| s.phase == phase)
            .map(|s| s.index.to_string())
            .collect();
        let s = if failed.len() == 1 { "" } else { "s" };
        let why = if phase == LoadTestPhase::Aborted {
            "broke a threshold"
        } else {
            "failed"
        };
        for segment in &mut segments {
            if matches!(
                segment.phase,
                LoadTestPhase::Pending | LoadTestPhase::Running
            ) {
                segment.phase = phase;
                segment.message = Some(format!(
                    "stopped because segment{s} {} {why}",
                    failed.join(", ")
                ));
            }
        }
    }
    let summaries: Vec<Segment> = summaries.into_iter().flatten().collect();
    let results = (phase == LoadTestPhase::Succeeded)
        .then(|| aggregate(&summaries))
        .flatten();
    let mut message: Vec<String> = segments
        .iter()
        .filter_map(|s| {
            s.message
                .as_ref()
                .map(|m| format!("segment {}: {m}", s.index))
        })
        .collect();
    if results.is_some() && summaries.len() > 1 {
        message.extend(histogram_notes(&summaries));
    }
    let verdict = match &lt.spec.thresholds {
        Some(limits) if phase.is_finished() => Some(match (&results, aborted_by) {
            (_, Some((index, partial))) => {
                let broke = partial.as_ref().map(|p| p.thresholds_failed.clone());
                let detail = match &partial {
                    Some(p) => format!(
                        "; its partial figures: {} requests, {} failures, p99 {:.2} ms",
                        p.results.requests, p.results.failures, p.results.latency_ms.p99
                    ),
                    None => String::new(),
                };
                thresholds::aborted(index, &broke.unwrap_or_default(), &detail)
            }
            (Some(r), None) => thresholds::evaluate(limits, lt.spec.rate, r),
            (None, None) => thresholds::no_results(),
        }),
        _ => None,
    };
    Run {
        phase,
        segments,
        summaries,
        results,
        message,
        verdict,
    }
}

/// The LoadTest's status from its pods and Jobs (every one carrying `LOADTEST_LABEL`): with
/// `spec.target` its segments and merged results; with `spec.targets` each target's
/// (`status.targets`), the targets that have not started yet Pending.
pub fn observe(
    lt: &LoadTest,
    pods: &[Pod],
    jobs: &[Job],
    previous: &LoadTestStatus,
    logged: &LoggedSummaries,
    now: &Time,
) -> Observed {
    let all = match targets(lt) {
        Ok(all) => all,
        Err(e) => {
            return Observed {
                status: rejected_status(&e, lt.metadata.generation, now),
                summaries: Vec::new(),
                target_summaries: Vec::new(),
            };
        }
    };
    let mut observed = match all.as_slice() {
        [only] if lt.spec.targets.is_none() => {
            observe_single(lt, only, pods, jobs, previous, logged, now)
        }
        _ => observe_targets(lt, &all, pods, jobs, previous, logged, now),
    };
    let conditions = &mut observed.status.conditions;
    record_scheduling(pods, conditions, lt.metadata.generation, now);
    observed
}

/// [`observe`] with `spec.target`.
fn observe_single(
    lt: &LoadTest,
    target: &Target,
    pods: &[Pod],
    jobs: &[Job],
    previous: &LoadTestStatus,
    logged: &LoggedSummaries,
    now: &Time,
) -> Observed {
    let run = observe_run(lt, target, pods, jobs, &previous.segments, logged, now);
    let phase = run.phase;
    let finished = phase.is_finished();
    let start_time = previous
        .start_time
        .clone()
        .or_else(|| (phase != LoadTestPhase::Pending).then(|| now.clone()));
    let mut conditions = previous.conditions.clone();
    if let Some(verdict) = run.verdict {
        set_condition(
            &mut conditions,
            PASSED,
            verdict.passed,
            verdict.reason,
            verdict.message,
            lt.metadata.generation,
            now,
        );
    }
    let start_skew_ms = start_skew_ms(&run.segments);
    let status = LoadTestStatus {
        phase: Some(phase),
        start_skew_ms,
        start_time,
        completion_time: finished.then(|| now.clone()),
        message: (!run.message.is_empty()).then(|| run.message.join("; ")),
        results: run.results,
        segments: run.segments,
        conditions,
        report_config_map: previous.report_config_map.clone(),
        gateway_cpu: previous.gateway_cpu.clone(),
        ..LoadTestStatus::default()
    };
    Observed {
        status,
        summaries: run.summaries,
        target_summaries: Vec::new(),
    }
}

/// [`observe`] with `spec.targets`: each target's run, and the whole test's phase and
/// verdict from them. A target whose Jobs do not exist yet waits for the one before it.
fn observe_targets(
    lt: &LoadTest,
    all: &[Target],
    pods: &[Pod],
    jobs: &[Job],
    previous: &LoadTestStatus,
    logged: &LoggedSummaries,
    now: &Time,
) -> Observed {
    let mut targets = Vec::with_capacity(all.len());
    let mut target_summaries = Vec::with_capacity(all.len());
    for (k, target) in all.iter().enumerate() {
        let name = target.label().unwrap_or_default().to_owned();
        let before = previous.targets.iter().find(|t| t.name == name);
        if !has_jobs(target, jobs) {
            let message = k
                .checked_sub(1)
                .map(|p| format!("runs after target {}", all[p].label().unwrap_or_default()));
            targets.push(TargetStatus {
                name,
                url: target.url.clone(),
                phase: LoadTestPhase::Pending,
                message,
                ..TargetStatus::default()
            });
            target_summaries.push(Vec::new());
            continue;
        }
        let previous_segments = before.map(|b| b.segments.as_slice()).unwrap_or_default();
        let run = observe_run(lt, target, pods, jobs, previous_segments, logged, now);
        let finished = run.phase.is_finished();
        let start_time = before
            .and_then(|b| b.start_time.clone())
            .or_else(|| (run.phase != LoadTestPhase::Pending).then(|| now.clone()));
        let completion_time = finished.then(|| {
            before
                .and_then(|b| b.completion_time.clone())
                .unwrap_or_else(|| now.clone())
        });
        targets.push(TargetStatus {
            name,
            url: target.url.clone(),
            phase: run.phase,
            start_time,
            completion_time,
            message: (!run.message.is_empty()).then(|| run.message.join("; ")),
            start_skew_ms: start_skew_ms(&run.segments),
            results: run.results,
            segments: run.segments,
            passed: run.verdict.as_ref().map(|v| v.passed),
            passed_reason: run.verdict.as_ref().map(|v| v.reason.to_owned()),
            // An abort stops this target only; the next ones still run.
            passed_message: run
                .verdict
                .map(|v| v.message.replace("stopped the test", "stopped this target")),
            gateway_cpu: before.and_then(|b| b.gateway_cpu.clone()),
        });
        target_summaries.push(run.summaries);
    }
    let phase = targets_phase(&targets);
    let finished = phase.is_finished();
    let start_time = previous
        .start_time
        .clone()
        .or_else(|| (phase != LoadTestPhase::Pending).then(|| now.clone()));
    let mut conditions = previous.conditions.clone();
    if finished && lt.spec.thresholds.is_some() {
        let failing: Vec<&TargetStatus> =
            targets.iter().filter(|t| t.passed != Some(true)).collect();
        let words = |ts: &[&TargetStatus]| {
            ts.iter()
                .map(|t| {
                    format!(
                        "target {}: {}",
                        t.name,
                        t.passed_message.as_deref().unwrap_or("no verdict")
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let (passed, reason, message) = match failing.first() {
            None => (
                true,
                thresholds::MET,
                format!(
                    "every target met the thresholds: {}",
                    words(&targets.iter().collect::<Vec<_>>())
                ),
            ),
            Some(first) => (
                false,
                reason_of(first.passed_reason.as_deref()),
                format!(
                    "{} of {} targets did not meet the thresholds: {}",
                    failing.len(),
                    targets.len(),
                    words(&failing)
                ),
            ),
        };
        set_condition(
            &mut conditions,
            PASSED,
            passed,
            reason,
            message,
            lt.metadata.generation,
            now,
        );
    }
    let message: Vec<String> = targets
        .iter()
        .filter_map(|t| Some(format!("target {}: {}", t.name, t.message.as_ref()?)))
        .collect();
    let status = LoadTestStatus {
        phase: Some(phase),
        start_time,
        completion_time: finished.then(|| now.clone()),
        message: (!message.is_empty()).then(|| message.join("; ")),
        targets,
        conditions,
        report_config_map: previous.report_config_map.clone(),
        ..LoadTestStatus::default()
    };
    Observed {
        status,
        summaries: Vec::new(),
        target_summaries,
    }
}

/// The `Passed` reasons a target's verdict may carry, as the static strings conditions take.
fn reason_of(reason: Option<&str>) -> &'static str {
    [
        thresholds::MET,
        thresholds::NOT_MET,
        thresholds::NO_RESULTS,
        thresholds::ABORTED,
        thresholds::INVALID,
    ]
    .into_iter()
    .find(|r| Some(*r) == reason)
    .unwrap_or(thresholds::NO_RESULTS)
}

/// The whole test's phase from its targets': finished once every target is (Aborted when one
/// aborted, else Failed when one failed, else Succeeded); Pending until the first leaves
/// Pending; Running in between.
fn targets_phase(targets: &[TargetStatus]) -> LoadTestPhase {
    let any = |p: LoadTestPhase| targets.iter().any(|t| t.phase == p);
    if !targets.is_empty() && targets.iter().all(|t| t.phase.is_finished()) {
        if any(LoadTestPhase::Aborted) {
            LoadTestPhase::Aborted
        } else if any(LoadTestPhase::Failed) {
            LoadTestPhase::Failed
        } else {
            LoadTestPhase::Succeeded
        }
    } else if targets.iter().all(|t| t.phase == LoadTestPhase::Pending) {
        LoadTestPhase::Pending
    } else {
        LoadTestPhase::Running
    }
}

/// Why the whole test's percentiles are bounds: the segments without a latency histogram.
fn histogram_notes(summaries: &[Segment]) -> Vec<String> {
    segments_without_histogram(summaries)
        .into_iter()
        .map(|(i, why)| {
            format!("segment {i}: {why}; p90/p95/p99/max are the worst segment's (upper bounds)")
        })
        .collect()
}

/// The status of a LoadTest whose spec the builders reject: Failed at once (retrying will not
/// help), with a `SpecValid=False` condition whose reason names the problem.
pub fn rejected_status(error: &SpecError, generation: Option<i64>, now: &Time) -> LoadTestStatus {
    let mut status = LoadTestStatus {
        phase: Some(LoadTestPhase::Failed),
        message: Some(error.to_string()),
        completion_time: Some(now.clone()),
        ..LoadTestStatus::default()
    };
    set_condition(
        &mut status.conditions,
        SPEC_VALID,
        false,
        error.reason(),
        error.to_string(),
        generation,
        now,
    );
    status
}
