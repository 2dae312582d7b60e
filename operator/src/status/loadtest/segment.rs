//! One segment's status from its Job's pods (the kubelet's view first) and its Job (the Job
//! controller's verdict second), with a deadline past which it fails; the segments' phase.

use super::job::{
    K6_THRESHOLDS_FAILED, job_failure, job_finished, job_start, k6_exit_meaning, micro_time,
};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use std::collections::BTreeMap;

use crate::diagnose;
use crate::k6_summary::{Segment, parse_segment};
use crate::resources::loadtest::{
    K6_CONTAINER, NODE_ANNOTATION, POD_ANNOTATION, STARTUP_AND_SUMMARY_MARGIN, execution_segment,
    format_duration, job_name, time_limit,
};
use graphfleet_api::{LoadTest, LoadTestPhase, SegmentStatus, SummarySource};

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
    /// A synchronized start: the other segments wait paused for every one.
    synchronized: bool,
    now: &'a Time,
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
        // Preemption is making room for it: it gets its node soon. Without a synchronized
        // start the other segments run on their own, and an ended one may make room.
        Some(why) if preempting(pod) || !names.synchronized => {
            let how = if preempting(pod) {
                " while the scheduler preempts pods for it"
            } else {
                ""
            };
            Seen::Waiting(Some(format!("{at} waits for a node{how}: {why}")))
        }
        // Pods that just ended (the test before, a segment finishing) may still hold the
        // room: it waits a little, saying why.
        Some(why) if unschedulable_for(pod, names.now) < UNSCHEDULABLE_GRACE_SECONDS => {
            Seen::Waiting(Some(format!("{at} waits for a node: {why}")))
        }
        // Failed well before the deadline: the other segments wait paused for it, holding
        // the room it may need, and would start without it only at the deadline.
        Some(why) => Seen::Failed(format!(
            "{at} cannot be scheduled: {why}; a synchronized test fails when a segment cannot start within 30 s (make room, or lower spec.resources or spec.parallelism, and create a new LoadTest)"
        )),
        None => Seen::Waiting(None),
    }
}

/// How long a synchronized test's segment may stay unschedulable before the test fails:
/// long enough for pods that just ended to give their room back.
const UNSCHEDULABLE_GRACE_SECONDS: i64 = 30;

/// Seconds since the pod's PodScheduled condition turned False (0 when unknown).
fn unschedulable_for(pod: &Pod, now: &Time) -> i64 {
    diagnose::condition(pod, "PodScheduled")
        .and_then(|c| c.last_transition_time.as_ref())
        .map_or(0, |since| now.0.duration_since(since.0).as_secs())
}

/// Whether the scheduler nominated a node for the pod (its victims are being evicted).
fn preempting(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
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
pub(super) fn segment(
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
        synchronized: lt.spec.synchronized(),
        now,
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

pub(super) fn source_of(segment: &Segment) -> SummarySource {
    if segment.from_log {
        SummarySource::PodLog
    } else {
        SummarySource::TerminationMessage
    }
}
