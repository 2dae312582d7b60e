//! The LoadTest reconciler: creates the k6 ConfigMap and one Job per execution segment,
//! records where each segment's pod runs, derives status from the pods and Jobs, and stops
//! the Jobs of a failed load test.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;
use kube::api::{ListParams, LogParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use super::k6_api::K6Api;
use super::loadtest_cpu;
use super::{Context, Error, LOADTEST_CONTROLLER, NOT_READY_RECHECK, api, apply, now};
use crate::k6_summary::summary_from_log;
use crate::report;
use crate::resources::loadtest::K6_CONTAINER;
use crate::resources::loadtest::{LOADTEST_LABEL, SEGMENT_LABEL, SpecError, TARGET_LABEL};
use crate::resources::{self, MANAGER};
use crate::status::loadtest::cpu::TargetKey;
use crate::status::loadtest::{
    LoggedSummaries, StartStep, jobs_to_stop, next_target, observe, record_resume, rejected_status,
    start_step,
};
use graphfleet_api::{LoadTest, LoadTestPhase, LoadTestStatus};

/// Re-check period while the segments' k6 initialize before a synchronized start (no pod
/// event says when k6 is ready).
const START_RECHECK: Duration = Duration::from_secs(1);

/// Creates the ConfigMap and the segment Jobs (once: Jobs are immutable and a load test is
/// not rerun), then derives status from the Jobs' pods.
#[tracing::instrument(skip_all, fields(loadtest = %lt.name_any(), namespace = lt.namespace().unwrap_or_default()))]
pub(super) async fn reconcile_loadtest(
    lt: Arc<LoadTest>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let started = Instant::now();
    let ns = lt.namespace().ok_or(Error::NoNamespace)?;
    let previous = lt.status.clone().unwrap_or_default();
    if previous.phase.is_some_and(LoadTestPhase::is_finished) {
        return Ok(Action::await_change());
    }
    let (mut new_status, starting) = match start_loadtest(&ctx, &lt, &ns).await? {
        Ok(()) => observe_loadtest(&ctx, &lt, &ns, &previous).await?,
        Err(e) => (rejected_status(&e, lt.metadata.generation, &now()), false),
    };
    new_status.observed_generation = lt.metadata.generation;
    let finished = new_status.phase.is_some_and(LoadTestPhase::is_finished);
    if lt.status.as_ref() != Some(&new_status) {
        if finished {
            tracing::info!(phase = ?new_status.phase, message = ?new_status.message, "load test finished");
        }
        let patch = serde_json::json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "LoadTest",
            "status": new_status,
        });
        api::<LoadTest>(&ctx, &ns)
            .patch_status(
                &lt.name_any(),
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&patch),
            )
            .await?;
        // Counted once the finished status is stored: a finished test is not reconciled again.
        if finished {
            let result = match new_status.phase {
                Some(LoadTestPhase::Succeeded) => "succeeded",
                Some(LoadTestPhase::Aborted) => "aborted",
                _ => "failed",
            };
            ctx.metrics.loadtest_finished(result);
        }
    }
    ctx.metrics
        .reconciled(LOADTEST_CONTROLLER, started.elapsed());
    Ok(if finished {
        Action::await_change()
    } else if starting {
        Action::requeue(START_RECHECK)
    } else {
        Action::requeue(NOT_READY_RECHECK)
    })
}

/// Applies the ConfigMap and creates the missing Jobs of `spec.target` (those of
/// `spec.targets` come one target at a time, see [`observe_loadtest`]); `Ok(Err(_))` is a
/// spec the builders reject.
async fn start_loadtest(
    ctx: &Context,
    lt: &LoadTest,
    ns: &str,
) -> Result<Result<(), SpecError>, Error> {
    let image = resources::loadtest::executor_image(
        lt,
        &ctx.settings.k6_image,
        &ctx.settings.gatling_image,
    );
    let (config_map, jobs) = match resources::loadtest::config_map(lt)
        .and_then(|cm| Ok((cm, resources::loadtest::jobs(lt, image)?)))
    {
        Ok(built) => built,
        Err(e) => return Ok(Err(e)),
    };
    if let Some(cm) = config_map {
        apply(&api::<ConfigMap>(ctx, ns), &cm).await?;
    }
    if lt.spec.targets.is_none() {
        create_jobs(ctx, lt, ns, jobs, &None).await?;
    }
    Ok(Ok(()))
}

/// Creates the Jobs of `target` that do not exist yet (Jobs are immutable: never updated);
/// before the first, the gateway's CPU is read (the load's starting point).
async fn create_jobs(
    ctx: &Context,
    lt: &LoadTest,
    ns: &str,
    jobs: Vec<Job>,
    target: &TargetKey,
) -> Result<(), Error> {
    let job_api = api::<Job>(ctx, ns);
    let total = jobs.len();
    let mut missing = Vec::new();
    for job in jobs {
        let name = job.metadata.name.clone().unwrap_or_default();
        if job_api.get_opt(&name).await?.is_none() {
            missing.push((name, job));
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    // Only before the first: Jobs recreated later would give a reading taken mid-load.
    if missing.len() == total {
        loadtest_cpu::before_load(ctx, lt, target).await;
    }
    for (name, job) in missing {
        match job_api.create(&PostParams::default(), &job).await {
            Ok(_) => tracing::info!(job = %name, "created load-generator job"),
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Status from the segment Jobs and their pods. Records where each segment's pod runs on its
/// Job (so a deleted pod can still be named), starts a synchronized test's segments together
/// once every k6 is ready and, once the LoadTest failed or aborted, stops the Jobs still
/// running: such a load test must not keep loading its target. Also says whether the start
/// is under way (so the next check comes soon).
async fn observe_loadtest(
    ctx: &Context,
    lt: &LoadTest,
    ns: &str,
    previous: &LoadTestStatus,
) -> Result<(LoadTestStatus, bool), Error> {
    let params = ListParams::default().labels(&format!("{LOADTEST_LABEL}={}", lt.name_any()));
    let pods = api::<Pod>(ctx, ns).list(&params).await?.items;
    let jobs = api::<Job>(ctx, ns).list(&params).await?.items;
    let job_api = api::<Job>(ctx, ns);
    for job in &jobs {
        let segment = job.labels().get(SEGMENT_LABEL);
        let target = job.labels().get(TARGET_LABEL);
        let of_segment: Vec<&Pod> = pods
            .iter()
            .filter(|p| p.labels().get(SEGMENT_LABEL) == segment)
            .filter(|p| p.labels().get(TARGET_LABEL) == target)
            .collect();
        if let Some(annotations) = resources::loadtest::placement_to_record(job, &of_segment) {
            let patch = serde_json::json!({ "metadata": { "annotations": annotations } });
            job_api
                .patch(
                    &job.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await?;
        }
    }
    let mut previous = previous.clone();
    let mut starting = false;
    let mut start_error = None;
    if let StartStep::Start(ips) = start_step(lt, &pods, &previous) {
        match K6Api::new().start(&ips).await {
            Ok(Some(resumed)) => {
                for (index, at) in resumed {
                    tracing::info!(segment = index, at = %at.0, "resumed k6");
                    record_resume(lt, &mut previous, index, at);
                }
            }
            Ok(None) => starting = true,
            Err(e) => {
                tracing::warn!(error = %e, "could not start the segments");
                start_error = Some(e.to_string());
                starting = true;
            }
        }
    }
    let logged = logged_summaries(ctx, ns, &pods).await;
    let observed = observe(lt, &pods, &jobs, &previous, &logged, &now());
    // `spec.targets` run one at a time: the next one's Jobs once the last one's k6 ended.
    if let Some(k) = next_target(lt, &observed.status, &jobs, &pods, &now())
        && let Ok(all) = resources::loadtest::targets(lt)
        && let Some(target) = all.get(k)
    {
        let image = resources::loadtest::executor_image(
            lt,
            &ctx.settings.k6_image,
            &ctx.settings.gatling_image,
        );
        match resources::loadtest::target_jobs(lt, target, image) {
            Ok(jobs) => {
                tracing::info!(target = ?target.name, url = %target.url, "starting the next target");
                create_jobs(ctx, lt, ns, jobs, &target.name).await?;
                starting = true;
            }
            Err(e) => tracing::warn!(error = %e, "cannot build the next target's Jobs"),
        }
    }
    let mut status = observed.status.clone();
    loadtest_cpu::after_load(ctx, lt, &mut status).await;
    if status.phase.is_some_and(LoadTestPhase::is_finished) {
        loadtest_cpu::forget(ctx, lt);
        let cm = report::config_map_of(lt, &status, &observed);
        apply(&api::<ConfigMap>(ctx, ns), &cm).await?;
        status.report_config_map = cm.metadata.name;
        // Finished tests are not observed again.
        let mut cache = ctx.k6_summaries.lock().expect("summary cache lock");
        for pod in &pods {
            cache.remove(&pod.uid().unwrap_or_default());
        }
    }
    if let Some(e) = start_error {
        let note = format!("starting the segments together: {e}");
        status.message = Some(match status.message.take() {
            Some(m) => format!("{m}; {note}"),
            None => note,
        });
    }
    // The Job controller stops the pods of a Job past its deadline (DeadlineExceeded).
    let stop = serde_json::json!({ "spec": { "activeDeadlineSeconds": 1 } });
    for name in jobs_to_stop(&status, &jobs, &pods) {
        tracing::info!(job = %name, phase = ?status.phase, "stopping the k6 job of a failed or aborted load test");
        job_api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&stop))
            .await?;
    }
    Ok((status, starting))
}

/// The summaries on the marked line of each finished k6 pod's log (read once per pod). A log
/// that cannot be read (the node is gone, a kubelet without logs) is left out: the status then
/// uses the pod's termination message, whose 4 KiB may lack the histogram.
async fn logged_summaries(ctx: &Context, ns: &str, pods: &[Pod]) -> LoggedSummaries {
    let pod_api = api::<Pod>(ctx, ns);
    let mut out = LoggedSummaries::new();
    for pod in pods {
        let terminated = crate::diagnose::container_status(pod, K6_CONTAINER)
            .and_then(|c| c.state.as_ref())
            .is_some_and(|s| s.terminated.is_some());
        let Some(uid) = pod.uid().filter(|_| terminated) else {
            continue;
        };
        let cached = ctx
            .k6_summaries
            .lock()
            .expect("summary cache lock")
            .get(&uid)
            .cloned();
        if let Some(summary) = cached {
            out.insert(pod.name_any(), summary);
            continue;
        }
        let params = LogParams {
            container: Some(K6_CONTAINER.to_owned()),
            // The summary is the last thing k6 prints, give or take its exit messages.
            tail_lines: Some(LOG_TAIL_LINES),
            ..LogParams::default()
        };
        match pod_api.logs(&pod.name_any(), &params).await {
            Ok(log) => match summary_from_log(&log) {
                Some(summary) => {
                    ctx.k6_summaries
                        .lock()
                        .expect("summary cache lock")
                        .insert(uid, summary.to_owned());
                    out.insert(pod.name_any(), summary.to_owned());
                }
                None => tracing::debug!(pod = %pod.name_any(), "no summary line in the k6 log"),
            },
            Err(e) => {
                tracing::debug!(pod = %pod.name_any(), error = %e, "k6 log unavailable; the termination message serves")
            }
        }
    }
    out
}

/// Lines of a finished k6 pod's log searched for the summary.
const LOG_TAIL_LINES: i64 = 200;

/// The LoadTest a k6 pod belongs to (from its label).
pub(super) fn loadtest_of(pod: &Pod) -> Option<ObjectRef<LoadTest>> {
    let name = pod.labels().get(LOADTEST_LABEL)?;
    Some(ObjectRef::new(name).within(&pod.namespace()?))
}
