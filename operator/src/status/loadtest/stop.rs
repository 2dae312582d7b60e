//! Which Jobs to stop once the test (or a target) has failed or aborted.

use super::job::{JOB_NAME_LABEL, job_finished, k6_ended};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::resources::loadtest::TARGET_LABEL;
use graphfleet_api::{LoadTestPhase, LoadTestStatus};

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
