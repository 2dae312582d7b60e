//! What a Job and its pods say on their own: whether and why the Job finished, when it
//! started, what k6's exit code means, whether k6 in a pod has ended.

use k8s_openapi::api::batch::v1::{Job, JobCondition};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use crate::diagnose;
use crate::resources::loadtest::{K6_CONTAINER, Target};

fn finished_condition(job: &Job) -> Option<&JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| (c.type_ == "Failed" || c.type_ == "Complete") && c.status == "True")
}

/// Why the Job controller gave up on a Job (its pod failed, its deadline passed), if it did.
pub(super) fn job_failure(job: &Job) -> Option<String> {
    let c = finished_condition(job).filter(|c| c.type_ == "Failed")?;
    let reason = c.reason.as_deref().unwrap_or("Failed");
    Some(match c.message.as_deref() {
        Some(m) => format!("{reason}: {}", diagnose::quote(m)),
        None => reason.to_owned(),
    })
}

/// Whether the Job has finished (Complete or Failed).
pub(super) fn job_finished(job: &Job) -> bool {
    finished_condition(job).is_some()
}

/// When the Job started (its status), else when it was created.
pub(super) fn job_start(job: &Job) -> Option<Timestamp> {
    job.status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .or(job.metadata.creation_timestamp.as_ref())
        .map(|t| t.0)
}

/// k6's exit code when thresholds failed (or aborted the test).
pub(super) const K6_THRESHOLDS_FAILED: i32 = 99;

/// What a k6 exit code means (k6's own codes), if it is one of k6's.
pub(super) fn k6_exit_meaning(code: i32) -> Option<&'static str> {
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

/// Label the Job controller puts on a Job's pods.
pub(super) const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";

/// Whether k6 in the pod has ended (the pod's phase or the container's state says so).
pub(super) fn k6_ended(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    matches!(phase, Some("Succeeded" | "Failed"))
        || diagnose::container_status(pod, K6_CONTAINER)
            .and_then(|c| c.state.as_ref())
            .is_some_and(|s| s.terminated.is_some())
}

/// Whether any Job belongs to `target`.
pub(super) fn has_jobs(target: &Target, jobs: &[Job]) -> bool {
    jobs.iter().any(|j| target.owns(j.labels()))
}

/// A Unix-milliseconds instant as a MicroTime (`None` when out of range).
pub(super) fn micro_time(ms: f64) -> Option<MicroTime> {
    let us = (ms * 1e3).round();
    Timestamp::from_microsecond(us as i64).ok().map(MicroTime)
}
