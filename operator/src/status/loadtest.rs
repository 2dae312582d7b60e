//! Pure status of a LoadTest: each segment's phase and message from its Job and the Job's
//! pods (the kubelet's view first, the Job controller's verdict second), a deadline past which
//! a segment fails, the overall phase and results, and which Jobs to stop once it failed.

use k8s_openapi::api::batch::v1::{Job, JobCondition};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use std::collections::BTreeMap;

use crate::diagnose;
use crate::k6_summary::{Segment, aggregate, parse_segment, segments_without_histogram};
use crate::resources::loadtest::{
    K6_CONTAINER, NODE_ANNOTATION, POD_ANNOTATION, SEGMENT_LABEL, STARTUP_AND_SUMMARY_MARGIN,
    SpecError, TARGET_LABEL, Target, execution_segment, format_duration, job_name, target_job_name,
    targets, time_limit,
};
use crate::status::{PASSED, SPEC_VALID, set_condition};
use crate::thresholds;
use graphfleet_api::{
    LoadTest, LoadTestPhase, LoadTestResults, LoadTestStatus, SegmentStatus, SummarySource,
    TargetStatus,
};

fn finished_condition(job: &Job) -> Option<&JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| (c.type_ == "Failed" || c.type_ == "Complete") && c.status == "True")
}

/// Why the Job controller gave up on a Job (its pod failed, its deadline passed), if it did.
pub fn job_failure(job: &Job) -> Option<String> {
    let c = finished_condition(job).filter(|c| c.type_ == "Failed")?;
    let reason = c.reason.as_deref().unwrap_or("Failed");
    Some(match c.message.as_deref() {
        Some(m) => format!("{reason}: {}", diagnose::quote(m)),
        None => reason.to_owned(),
    })
}

/// Whether the Job has finished (Complete or Failed).
pub fn job_finished(job: &Job) -> bool {
    finished_condition(job).is_some()
}

/// When the Job started (its status), else when it was created.
fn job_start(job: &Job) -> Option<Timestamp> {
    job.status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .or(job.metadata.creation_timestamp.as_ref())
        .map(|t| t.0)
}

/// k6's exit code when thresholds failed (or aborted the test).
const K6_THRESHOLDS_FAILED: i32 = 99;

/// What a k6 exit code means (k6's own codes), if it is one of k6's.
fn k6_exit_meaning(code: i32) -> Option<&'static str> {
    Some(match code {
        99 => "k6: thresholds failed",
        100 => "k6: setup() timed out",
        101 => "k6: teardown() timed out",
        103 => "k6: engine error",
        104 => "k6: invalid configuration",
        105 => "k6: aborted by a signal",
        107 => "k6: script exception",
        108 => "k6: script aborted",
        109 => "k6: Go panic",
        _ => return None,
    })
}

/// What a segment's pods and Job say, before the deadline is applied.
enum Seen {
    Waiting(Option<String>),
    Running,
    Done(Segment),
    Failed(String),
    /// k6 stopped on an abort threshold (exit code 99 with `thresholds.abortOnFail`): where,
    /// and the partial summary when it wrote one.
    Aborted(String, Option<Segment>),
}

struct Names<'a> {
    ns: &'a str,
    job: &'a str,
    /// `thresholds.abortOnFail`: k6's exit code 99 is an abort, not a failure.
    abort_on_fail: bool,
}

impl Names<'_> {
    fn log(&self) -> String {
        format!("log: kubectl -n {} logs job/{}", self.ns, self.job)
    }

    /// `k6 pod P (job J) on node N`.
    fn pod(&self, pod: &Pod) -> String {
        match diagnose::node_of(pod) {
            Some(node) => format!(
                "k6 pod {} (job {}) on node {node}",
                pod.name_any(),
                self.job
            ),
            None => format!(
                "k6 pod {} (job {}, not scheduled to a node)",
                pod.name_any(),
                self.job
            ),
        }
    }

    /// The pod the Job recorded, for when the pod itself is gone.
    fn recorded(&self, job: &Job) -> String {
        let annotations = job.annotations();
        match (
            annotations.get(POD_ANNOTATION),
            annotations.get(NODE_ANNOTATION),
        ) {
            (Some(pod), Some(node)) => format!("k6 pod {pod} (job {}) on node {node}", self.job),
            (Some(pod), None) => format!("k6 pod {pod} (job {})", self.job),
            _ => format!("the k6 pod of job {}", self.job),
        }
    }
}

/// What the operator read from the k6 pods' logs: pod name → the summary on the marked line.
pub type LoggedSummaries = BTreeMap<String, String>;

fn seen_in_pod(names: &Names<'_>, pod: &Pod, logged: &LoggedSummaries) -> Seen {
    let at = names.pod(pod);
    let (deleted, log) = if pod.metadata.deletion_timestamp.is_some() {
        (
            " after its pod was deleted",
            "its log goes with the deleted pod".to_owned(),
        )
    } else {
        ("", names.log())
    };
    let container = diagnose::container_status(pod, K6_CONTAINER);
    let state = container.and_then(|c| c.state.clone()).unwrap_or_default();
    if let Some(t) = &state.terminated {
        let from_log = logged.get(&pod.name_any());
        let message = from_log
            .cloned()
            .unwrap_or_else(|| t.message.clone().unwrap_or_default());
        let summary = parse_segment(&message).map(|mut s| {
            s.from_log = from_log.is_some();
            s
        });
        if t.exit_code == 0 {
            return match summary {
                Ok(segment) => Seen::Done(segment),
                Err(_) if message.trim().is_empty() => Seen::Failed(format!(
                    "{at} exited with code 0{deleted} and ended without a k6 summary; {log}"
                )),
                Err(e) => Seen::Failed(format!("{at}: {e}; {log}")),
            };
        }
        if t.exit_code == K6_THRESHOLDS_FAILED && names.abort_on_fail {
            return Seen::Aborted(at, summary.ok());
        }
        let mut what = diagnose::describe_exit(t);
        if let Some(meaning) = k6_exit_meaning(t.exit_code) {
            what = format!("{what} ({meaning})");
        }
        let rest = match summary {
            Ok(partial) => format!(
                "; its partial k6 summary ({} requests) is not used",
                partial.results.requests
            ),
            Err(_) => {
                let output = diagnose::termination_message(t)
                    .map(|m| format!("; last output: {m}"))
                    .unwrap_or_default();
                format!(" and ended without a k6 summary{output}")
            }
        };
        return Seen::Failed(format!("{at} {what}{deleted}{rest}; {log}"));
    }
    let pod_status = pod.status.as_ref();
    let phase = pod_status
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending");
    if phase == "Failed" {
        let reason = pod_status
            .and_then(|s| s.reason.as_deref())
            .unwrap_or("Failed");
        let message = pod_status
            .and_then(|s| s.message.as_deref())
            .map(|m| format!(": {}", diagnose::quote(m)))
            .unwrap_or_default();
        return Seen::Failed(format!(
            "{at} failed ({reason}{message}){deleted} and ended without a k6 summary; {log}"
        ));
    }
    if let Some(w) = &state.waiting {
        let reason = w.reason.as_deref().unwrap_or_default();
        let message = w.message.as_deref();
        if diagnose::IMAGE_REASONS.contains(&reason) {
            let image = diagnose::image_of(pod, K6_CONTAINER).unwrap_or_default();
            return Seen::Failed(format!(
                "{at} cannot start: {}",
                diagnose::describe_image_problem(&image, reason, message)
            ));
        }
        if diagnose::START_REASONS.contains(&reason) {
            return Seen::Failed(format!(
                "{at} cannot start: container {K6_CONTAINER}: {reason}: {}",
                diagnose::quote(message.unwrap_or_default())
            ));
        }
    }
    if phase == "Running" {
        return Seen::Running;
    }
    match diagnose::unschedulable(pod) {
        Some(why) => Seen::Waiting(Some(format!("{at} waits for a node: {why}"))),
        None => Seen::Waiting(None),
    }
}

fn seen(names: &Names<'_>, pods: &[&Pod], job: Option<&Job>, logged: &LoggedSummaries) -> Seen {
    let seen = match pods {
        [] => match job {
            Some(job) if job_finished(job) => {
                let verdict = match job_failure(job) {
                    Some(failure) => format!("Job {} failed ({failure})", names.job),
                    None => format!("Job {} completed", names.job),
                };
                return Seen::Failed(format!(
                    "{} is gone (deleted before k6 reported its summary); {verdict}; the segment ended without a k6 summary and its log went with the pod",
                    names.recorded(job)
                ));
            }
            Some(job) if job.annotations().contains_key(POD_ANNOTATION) => Seen::Running,
            _ => Seen::Waiting(None),
        },
        [pod] => seen_in_pod(names, pod, logged),
        more => {
            let mut names_of: Vec<String> = more.iter().map(|p| p.name_any()).collect();
            names_of.sort();
            return Seen::Failed(format!(
                "job {} started k6 {} times (pods {}); a segment is never rerun, it would double its share of the load; {}",
                names.job,
                more.len(),
                names_of.join(", "),
                names.log()
            ));
        }
    };
    match (seen, job.and_then(job_failure)) {
        (Seen::Waiting(_) | Seen::Running, Some(failure)) => {
            let at = match pods {
                [pod] => names.pod(pod),
                _ => job.map(|j| names.recorded(j)).unwrap_or_default(),
            };
            Seen::Failed(format!(
                "{at}: Job {} failed ({failure}) and the segment ended without a k6 summary; {}",
                names.job,
                names.log()
            ))
        }
        (seen, _) => seen,
    }
}

/// What the segment is doing right now, for the deadline message.
fn current_state(names: &Names<'_>, pods: &[&Pod], waiting: Option<&str>) -> String {
    match (pods, waiting) {
        (_, Some(why)) => why.to_owned(),
        ([pod], None) => {
            let phase = pod
                .status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .unwrap_or("Pending");
            format!("{} is still {phase}", names.pod(pod))
        }
        ([], None) => format!("job {} has no pod", names.job),
        (_, None) => format!("job {} has {} pods", names.job, pods.len()),
    }
}

/// State of one segment from its Job's pods (the kubelet's view, so results appear as soon as
/// the container has terminated) and its Job (the Job controller's verdict, and the pod it
/// recorded when the pod itself is gone). A segment that has not finished `time_limit` after
/// its Job started fails: a LoadTest never stays Running forever.
pub fn segment_status(
    lt: &LoadTest,
    index: i32,
    pods: &[&Pod],
    job: Option<&Job>,
    now: &Time,
) -> SegmentStatus {
    let name = job_name(&lt.name_any(), index);
    segment(
        lt,
        &name,
        index,
        pods,
        job,
        None,
        &LoggedSummaries::new(),
        now,
    )
    .0
}

/// [`segment_status`] of the segment run by Job `job_name` and, once the segment succeeded,
/// its parsed summary (the histogram the status does not keep).
#[allow(clippy::too_many_arguments)]
fn segment(
    lt: &LoadTest,
    job_name: &str,
    index: i32,
    pods: &[&Pod],
    job: Option<&Job>,
    previous: Option<&SegmentStatus>,
    logged: &LoggedSummaries,
    now: &Time,
) -> (SegmentStatus, Option<Segment>) {
    let ns = lt.namespace().unwrap_or_else(|| "default".to_owned());
    let job_name = job_name.to_owned();
    let names = Names {
        ns: &ns,
        job: &job_name,
        abort_on_fail: lt.spec.thresholds.as_ref().is_some_and(|t| t.abort_on_fail),
    };
    let mut status = SegmentStatus {
        index,
        segment: execution_segment(index, lt.spec.parallelism),
        job: job_name.clone(),
        phase: LoadTestPhase::Pending,
        message: None,
        results: None,
        resumed_at: previous.and_then(|p| p.resumed_at.clone()),
        started_at: None,
        summary_source: None,
    };
    let mut seen = seen(&names, pods, job, logged);
    // A synchronized segment's k6 runs paused until the operator resumes every segment.
    if let (Seen::Running, [pod]) = (&seen, pods)
        && lt.spec.synchronized()
        && status.resumed_at.is_none()
    {
        seen = Seen::Waiting(Some(format!(
            "{} waits paused until every segment's k6 is ready, then all start together",
            names.pod(pod)
        )));
    }
    let waiting = match &seen {
        Seen::Waiting(why) => Some(why.clone()),
        Seen::Running => Some(None),
        _ => None,
    };
    let overdue = match (waiting.as_ref(), job.and_then(job_start), time_limit(lt)) {
        (Some(_), Some(start), Ok(limit)) => {
            let elapsed = now.0.duration_since(start);
            (elapsed.as_secs() >= limit.as_secs() as i64).then_some(limit)
        }
        _ => None,
    };
    if let Some(limit) = overdue {
        status.phase = LoadTestPhase::Failed;
        let why = waiting.flatten();
        status.message = Some(format!(
            "did not finish within {} (duration {} + {} for start-up and summary): {}; the segment ended without a k6 summary",
            format_duration(limit),
            lt.spec.duration,
            format_duration(STARTUP_AND_SUMMARY_MARGIN),
            current_state(&names, pods, why.as_deref())
        ));
        return (status, None);
    }
    let mut done = None;
    match seen {
        Seen::Waiting(why) => status.message = why,
        Seen::Running => status.phase = LoadTestPhase::Running,
        Seen::Done(segment) => {
            status.phase = LoadTestPhase::Succeeded;
            status.results = Some(segment.results.clone());
            status.started_at = segment.started_at_ms.and_then(micro_time);
            status.summary_source = Some(source_of(&segment));
            done = Some(segment);
        }
        Seen::Failed(message) => {
            status.phase = LoadTestPhase::Failed;
            status.message = Some(message);
        }
        Seen::Aborted(at, partial) => {
            status.phase = LoadTestPhase::Aborted;
            let broke = match partial.as_ref().map(|p| p.thresholds_failed.join(", ")) {
                Some(t) if !t.is_empty() => t,
                _ => "a threshold".to_owned(),
            };
            status.message = Some(format!(
                "{at} broke {broke} (thresholds.abortOnFail) and stopped; its results are partial"
            ));
            status.results = partial.as_ref().map(|p| p.results.clone());
            status.started_at = partial
                .as_ref()
                .and_then(|p| p.started_at_ms)
                .and_then(micro_time);
            status.summary_source = partial.as_ref().map(source_of);
            done = partial;
        }
    }
    (status, done)
}

/// Overall phase of the segments: Aborted as soon as one stopped on an abort threshold,
/// Failed as soon as one failed, Succeeded when all did,
/// Running once any started.
pub fn overall_phase(segments: &[SegmentStatus]) -> LoadTestPhase {
    let any = |p: LoadTestPhase| segments.iter().any(|s| s.phase == p);
    // An abort stops the others, which may then fail (killed): the abort is the cause.
    if any(LoadTestPhase::Aborted) {
        LoadTestPhase::Aborted
    } else if any(LoadTestPhase::Failed) {
        LoadTestPhase::Failed
    } else if !segments.is_empty() && segments.iter().all(|s| s.phase == LoadTestPhase::Succeeded) {
        LoadTestPhase::Succeeded
    } else if any(LoadTestPhase::Running) || any(LoadTestPhase::Succeeded) {
        LoadTestPhase::Running
    } else {
        LoadTestPhase::Pending
    }
}

fn source_of(segment: &Segment) -> SummarySource {
    if segment.from_log {
        SummarySource::PodLog
    } else {
        SummarySource::TerminationMessage
    }
}

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
    if lt.spec.targets.is_none()
        && let [only] = all.as_slice()
    {
        return observe_single(lt, only, pods, jobs, previous, logged, now);
    }
    observe_targets(lt, &all, pods, jobs, previous, logged, now)
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
        ..LoadTestStatus::default()
    };
    Observed {
        status,
        summaries: run.summaries,
        target_summaries: Vec::new(),
    }
}

/// Whether any Job belongs to `target`.
fn has_jobs(target: &Target, jobs: &[Job]) -> bool {
    jobs.iter().any(|j| target.owns(j.labels()))
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
pub fn targets_phase(targets: &[TargetStatus]) -> LoadTestPhase {
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

/// How long after a target finished the next one starts even if a k6 pod of it has not ended
/// (a pod on a lost node never reports its end); until then the targets never overlap.
pub const TARGET_STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// With `spec.targets`, the target whose Jobs the controller creates now: the first without
/// Jobs, once every earlier target has finished and its k6 pods have ended (or
/// [`TARGET_STOP_GRACE`] passed since it finished). `None` with `spec.target` (its Jobs are
/// created at once), while a target runs, or when every target has its Jobs.
pub fn next_target(
    lt: &LoadTest,
    status: &LoadTestStatus,
    jobs: &[Job],
    pods: &[Pod],
    now: &Time,
) -> Option<usize> {
    lt.spec.targets.as_ref()?;
    let all = targets(lt).ok()?;
    for (k, target) in all.iter().enumerate() {
        if !has_jobs(target, jobs) {
            return Some(k);
        }
        let name = target.label().unwrap_or_default();
        let seen = status.targets.iter().find(|t| t.name == name)?;
        if !seen.phase.is_finished() {
            return None;
        }
        let ended = pods
            .iter()
            .filter(|p| target.owns(p.labels()))
            .all(k6_ended);
        let grace_over = seen.completion_time.as_ref().is_some_and(|t| {
            now.0.duration_since(t.0).as_secs() >= TARGET_STOP_GRACE.as_secs() as i64
        });
        if !ended && !grace_over {
            return None;
        }
    }
    None
}

/// A Unix-milliseconds instant as a MicroTime (`None` when out of range).
fn micro_time(ms: f64) -> Option<MicroTime> {
    let us = (ms * 1e3).round();
    Timestamp::from_microsecond(us as i64).ok().map(MicroTime)
}

/// How far apart the segments started (by each k6's own clock), once all reported it.
pub fn start_skew_ms(segments: &[SegmentStatus]) -> Option<f64> {
    let starts: Vec<i64> = segments
        .iter()
        .map(|s| s.started_at.as_ref().map(|t| t.0.as_microsecond()))
        .collect::<Option<_>>()?;
    let (min, max) = (starts.iter().min()?, starts.iter().max()?);
    Some((max - min) as f64 / 1e3)
}

/// What the operator does next to start a synchronized LoadTest's segments together.
#[derive(Debug, Clone, PartialEq)]
pub enum StartStep {
    /// Not synchronized, already started, or a segment ended before it was started.
    Nothing,
    /// A segment's k6 is not running yet: why.
    Wait(String),
    /// Every segment's k6 runs: the pod IP of each (segment order), to check that k6
    /// is paused and ready and then resume them all.
    Start(Vec<(i32, String)>),
}

/// The target whose segments run or start now and its segments in `status`: `spec.target`,
/// or the first of `spec.targets` that has not finished. `None` once every target finished.
pub fn active_target<'a>(
    lt: &LoadTest,
    status: &'a LoadTestStatus,
) -> Option<(Target, &'a [SegmentStatus])> {
    let all = targets(lt).ok()?;
    if lt.spec.targets.is_none() {
        let only = all.into_iter().next()?;
        return Some((only, &status.segments));
    }
    all.into_iter().find_map(|t| {
        let name = t.label().unwrap_or_default();
        match status.targets.iter().find(|s| s.name == name) {
            Some(s) if s.phase.is_finished() => None,
            Some(s) => Some((t, s.segments.as_slice())),
            None => Some((t, &[][..])),
        }
    })
}

/// Records in `status` that segment `index` of the active target ([`active_target`]) was
/// resumed `at`; status derivation keeps it.
pub fn record_resume(lt: &LoadTest, status: &mut LoadTestStatus, index: i32, at: MicroTime) {
    let Some((target, _)) = active_target(lt, status) else {
        return;
    };
    let segments = match target.label() {
        None => &mut status.segments,
        Some(name) => {
            if !status.targets.iter().any(|t| t.name == name) {
                status.targets.push(TargetStatus {
                    name: name.to_owned(),
                    url: target.url.clone(),
                    ..TargetStatus::default()
                });
            }
            match status.targets.iter_mut().find(|t| t.name == name) {
                Some(t) => &mut t.segments,
                None => return,
            }
        }
    };
    match segments.iter_mut().find(|s| s.index == index) {
        Some(s) => s.resumed_at = Some(at),
        None => segments.push(SegmentStatus {
            index,
            resumed_at: Some(at),
            ..SegmentStatus::default()
        }),
    }
}

/// The next start step from the pods and the previous status (which records the resumes),
/// for the active target ([`active_target`]).
pub fn start_step(lt: &LoadTest, pods: &[Pod], previous: &LoadTestStatus) -> StartStep {
    if !lt.spec.synchronized() || previous.phase.is_some_and(LoadTestPhase::is_finished) {
        return StartStep::Nothing;
    }
    let Some((target, segments)) = active_target(lt, previous) else {
        return StartStep::Nothing;
    };
    let n = lt.spec.parallelism.max(1);
    let resumed = |i: i32| {
        segments
            .iter()
            .any(|s| s.index == i && s.resumed_at.is_some())
    };
    if (0..n).all(resumed) {
        return StartStep::Nothing;
    }
    let mut ips = Vec::new();
    for i in 0..n {
        let index = i.to_string();
        let of_segment: Vec<&Pod> = pods
            .iter()
            .filter(|p| p.labels().get(SEGMENT_LABEL) == Some(&index))
            .filter(|p| target.owns(p.labels()))
            .collect();
        let [pod] = of_segment[..] else {
            return StartStep::Wait(format!("segment {i} has {} pods", of_segment.len()));
        };
        if k6_ended(pod) {
            return StartStep::Nothing;
        }
        let running = diagnose::container_status(pod, K6_CONTAINER)
            .and_then(|c| c.state.as_ref())
            .is_some_and(|s| s.running.is_some());
        let ip = pod.status.as_ref().and_then(|s| s.pod_ip.clone());
        match (running, ip) {
            (true, Some(ip)) => ips.push((i, ip)),
            _ => return StartStep::Wait(format!("segment {i}'s k6 is not running yet")),
        }
    }
    StartStep::Start(ips)
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

/// Label the Job controller puts on a Job's pods.
const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";

/// Whether k6 in the pod has ended (the pod's phase or the container's state says so).
fn k6_ended(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    matches!(phase, Some("Succeeded" | "Failed"))
        || diagnose::container_status(pod, K6_CONTAINER)
            .and_then(|c| c.state.as_ref())
            .is_some_and(|s| s.terminated.is_some())
}

/// The Jobs to stop once the LoadTest (or, with `spec.targets`, a target) has failed or
/// aborted (none before): those with a k6 still running or waiting to start, or with no pod
/// at all. A Job whose k6 has ended is left alone, finished or not: stopping it (a passed
/// deadline) would make the Job controller delete the pod, and the log with it.
pub fn jobs_to_stop(status: &LoadTestStatus, jobs: &[Job], pods: &[Pod]) -> Vec<String> {
    let stopped = |phase: Option<LoadTestPhase>| {
        matches!(phase, Some(LoadTestPhase::Failed | LoadTestPhase::Aborted))
    };
    // The target label values whose Jobs stop (`None`: every Job of a `spec.target` test).
    let of: Vec<Option<&str>> = if status.targets.is_empty() {
        if !stopped(status.phase) {
            return Vec::new();
        }
        vec![None]
    } else {
        status
            .targets
            .iter()
            .filter(|t| stopped(Some(t.phase)))
            .map(|t| Some(t.name.as_str()))
            .collect()
    };
    jobs.iter()
        .filter(|j| {
            let label = j.labels().get(TARGET_LABEL).map(String::as_str);
            of.iter().any(|o| o.is_none() || *o == label)
        })
        .filter(|j| !job_finished(j))
        .filter_map(|j| j.metadata.name.clone())
        .filter(|name| {
            let mut of_job = pods
                .iter()
                .filter(|p| p.labels().get(JOB_NAME_LABEL) == Some(name))
                .peekable();
            of_job.peek().is_none() || of_job.any(|p| !k6_ended(p))
        })
        .collect()
}
