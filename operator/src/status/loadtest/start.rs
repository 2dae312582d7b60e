//! Starting the segments: with `spec.targets` which target's Jobs come next, and for a
//! synchronized test the step that starts all segments of the active target together.

use super::job::{has_jobs, k6_ended};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use kube::ResourceExt;

use crate::diagnose;
use crate::resources::loadtest::{K6_CONTAINER, SEGMENT_LABEL, Target, targets};
use graphfleet_api::{LoadTest, LoadTestPhase, LoadTestStatus, SegmentStatus, TargetStatus};

/// How long after a target finished the next one starts even if a k6 pod of it has not ended
/// (a pod on a lost node never reports its end); until then the targets never overlap.
const TARGET_STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

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
fn active_target<'a>(
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
