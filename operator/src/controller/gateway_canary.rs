//! The gateway Deployments under `spec.rollout.strategy`: with `RollingUpdate` the stable
//! Deployment takes a new pod template at once; with `Canary` a new template first runs
//! on canary pods beside the stable ones (same Service), step by step, each step judged
//! from the pods' own metrics (`crate::canary`), then the stable Deployment rolls to it
//! (promotion) or the canary pods go and the template is not tried again (rollback).
//! With `canary.loadTest` each step is also load-gated: a LoadTest against the canary pods
//! alone must pass (`super::canary_gate`). The canary Deployment is scaled to no pods
//! rather than deleted: the operator's role may not delete Deployments.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::ListParams;
use kube::runtime::events::EventType;

use super::{Context, Error, api, apply, canary_gate, now, publish};
use crate::canary::{Judgement, TrackMetrics, canary_replicas, judge, share_percent};
use crate::canary_gate::Step;
use crate::diagnose::Rollout;
use crate::resources::gateway::{GatewayPods, SUPERGRAPH_HASH_ANNOTATION};
use crate::resources::gateway_canary::{
    applied_template_hash, canary_deployment, canary_name, is_canary, template_hash,
    with_template_hash,
};
use crate::resources::gateway_meta as meta;
use graphfleet_api::{
    CanaryPhase, CanarySpec, CanaryStatus, GraphGateway, Strategy, default_steps, pause_seconds,
};

/// How often a canary waiting for its pods looks again.
const WAIT_FOR_PODS: Duration = Duration::from_secs(3);
/// Longest a step waits for enough traffic, in pauses, before it passes on what it saw.
const INCONCLUSIVE_PAUSES: u64 = 3;
/// How often a step whose LoadTest runs looks at it (its changes wake the gateway too).
const WAIT_FOR_LOADTEST: Duration = Duration::from_secs(5);

/// What applying the Deployments did.
pub(super) struct Applied {
    /// The revision the stable Deployment names now.
    pub served: Option<String>,
    pub canary: Option<CanaryStatus>,
    /// When to look again (a canary step's pause, pods coming up).
    pub requeue: Option<Duration>,
}

/// Apply the gateway Deployments for revision `hash` under the spec's strategy.
pub(super) async fn apply_deployments(
    ctx: &Context,
    gw: &GraphGateway,
    ns: &str,
    pods: &GatewayPods,
    hash: &str,
) -> Result<Applied, Error> {
    let deployments = api::<Deployment>(ctx, ns);
    let built = crate::resources::gateway::deployment(gw, pods, hash, &ctx.settings.default_image);
    let desired = with_template_hash(built);
    let desired_hash = template_hash(&desired);
    let stable = deployments.get_opt(&gw.name_any()).await?;
    let rollout = gw.spec.rollout.clone().unwrap_or_default();
    let canary_on = rollout.strategy.unwrap_or_default() == Strategy::Canary;
    let stable_hash = stable.as_ref().and_then(applied_template_hash);
    let previous = gw.status.as_ref().and_then(|s| s.canary.clone());
    // No canary for the first pods, for an unchanged template, or for a Deployment
    // applied before templates were hashed.
    if !canary_on || stable_hash.is_none_or(|h| h == desired_hash) {
        apply(&deployments, &desired).await?;
        let had_canary = previous.is_some();
        let promoting = previous.filter(|c| {
            canary_on && c.phase == CanaryPhase::Promoting && c.template == desired_hash
        });
        let done = stable.as_ref().is_some_and(|d| Rollout::of(d).complete())
            && stable_hash == Some(desired_hash.as_str());
        let canary = promoting.filter(|_| !done);
        // Only after a canary (status names it): no extra call per reconcile otherwise.
        if canary.is_none() && had_canary {
            scale_to_zero(&deployments, &canary_name(gw)).await?;
        }
        return Ok(Applied {
            served: Some(hash.to_owned()),
            requeue: canary.as_ref().map(|_| WAIT_FOR_PODS),
            canary,
        });
    }
    let stable = stable.expect("a stable Deployment with a template hash exists here");
    let stable_revision = stable
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref()?.annotations.as_ref())
        .and_then(|a| a.get(SUPERGRAPH_HASH_ANNOTATION).cloned());
    // Rolled back: the stable pods stay as they are until the template changes again.
    if let Some(rolled_back) = previous
        .as_ref()
        .filter(|c| c.phase == CanaryPhase::RolledBack && c.template == desired_hash)
    {
        scale_to_zero(&deployments, &canary_name(gw)).await?;
        return Ok(Applied {
            served: stable_revision,
            canary: Some(rolled_back.clone()),
            requeue: None,
        });
    }
    let spec = rollout.canary.clone().unwrap_or_default();
    let mut canary = match previous {
        Some(c) if c.template == desired_hash && c.phase == CanaryPhase::Progressing => c,
        _ => {
            publish(
                ctx,
                gw,
                EventType::Normal,
                "CanaryStarted",
                format!("revision {hash} goes to canary pods first"),
            )
            .await;
            CanaryStatus {
                template: desired_hash.clone(),
                revision: hash.to_owned(),
                phase: CanaryPhase::Progressing,
                step: 0,
                step_started_at: None,
                canary_pods: 0,
                stable_pods: 0,
                share_percent: 0,
                load_test: None,
                message: String::new(),
            }
        }
    };
    let steps = if spec.steps.is_empty() {
        default_steps()
    } else {
        spec.steps.clone()
    };
    let Some(step) = steps.get(canary.step as usize) else {
        // Every step passed: the stable Deployment rolls to the new template.
        apply(&deployments, &desired).await?;
        canary.phase = CanaryPhase::Promoting;
        canary.message = format!(
            "{}; the stable pods roll to revision {hash}",
            canary.message
        );
        publish(
            ctx,
            gw,
            EventType::Normal,
            "CanaryPromoted",
            canary.message.clone(),
        )
        .await;
        return Ok(Applied {
            served: Some(hash.to_owned()),
            canary: Some(canary),
            requeue: Some(WAIT_FOR_PODS),
        });
    };
    let stable_pods = stable
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(gw.spec.replicas);
    let canary_pods = canary_replicas(stable_pods, step.weight);
    let applied = apply(&deployments, &canary_deployment(gw, &desired, canary_pods)).await?;
    if spec.load_test.is_some() {
        canary_gate::apply_service(ctx, gw, ns).await?;
    }
    canary.canary_pods = canary_pods;
    canary.stable_pods = stable_pods;
    canary.share_percent = share_percent(stable_pods, canary_pods);
    let waiting = |canary: CanaryStatus, requeue| Applied {
        served: stable_revision.clone(),
        canary: Some(canary),
        requeue: Some(requeue),
    };
    let live = deployments
        .get_opt(&canary_name(gw))
        .await?
        .unwrap_or(applied);
    if !Rollout::of(&live).complete() {
        canary.step_started_at = None;
        canary.message = format!(
            "step {}: waiting for {canary_pods} canary pod(s) ({}% of the pods)",
            canary.step + 1,
            canary.share_percent
        );
        return Ok(waiting(canary, WAIT_FOR_PODS));
    }
    let started = canary.step_started_at.get_or_insert_with(now).clone();
    let pause = pause_seconds(&step.pause).unwrap_or(60);
    let elapsed = seconds_since(&started);
    let gate = match &spec.load_test {
        Some(template) => Some(canary_gate::step_gate(ctx, gw, ns, template, &canary).await?),
        None => None,
    };
    canary.load_test = gate.as_ref().map(|(name, _)| name.clone());
    let load = match crate::canary_gate::step(
        pause.saturating_sub(elapsed),
        gate.as_ref().map(|(_, g)| g),
    ) {
        Step::RollBack(why) => {
            return roll_back(ctx, gw, &deployments, canary, why, stable_revision).await;
        }
        Step::Wait(load) => {
            canary.message = format!(
                "step {}: {}% of the pods watched for {}",
                canary.step + 1,
                canary.share_percent,
                step.pause
            );
            if let Some(load) = &load {
                canary.message.push_str(&format!("; {load}"));
            }
            // Its LoadTest's changes wake the gateway too; the look is for its deadline.
            let requeue = match (pause.saturating_sub(elapsed), &gate) {
                (0, _) => WAIT_FOR_LOADTEST,
                (left, Some(_)) => Duration::from_secs(left).min(WAIT_FOR_LOADTEST),
                (left, None) => Duration::from_secs(left),
            };
            return Ok(waiting(canary, requeue));
        }
        Step::Judge(load) => load,
    };
    let judgement = judge_step(ctx, gw, ns, &spec).await?;
    let passed = |canary: &mut CanaryStatus, figures: String| {
        canary.message = format!(
            "step {} of {} ({}%) passed: {figures}",
            canary.step + 1,
            steps.len(),
            canary.share_percent
        );
        if let Some(load) = &load {
            canary.message.push_str(&format!("; {load}"));
        }
        canary.step += 1;
        canary.step_started_at = None;
        canary.load_test = None;
    };
    match judgement {
        Judgement::Pass(figures) => {
            passed(&mut canary, figures);
            publish(
                ctx,
                gw,
                EventType::Normal,
                "CanaryStepPassed",
                canary.message.clone(),
            )
            .await;
            Ok(waiting(canary, Duration::from_secs(1)))
        }
        Judgement::Inconclusive(why) if elapsed < pause * INCONCLUSIVE_PAUSES => {
            canary.message = format!("step {}: {why}; waiting for traffic", canary.step + 1);
            Ok(waiting(canary, Duration::from_secs(5)))
        }
        Judgement::Inconclusive(why) => {
            passed(&mut canary, format!("judged on little traffic ({why})"));
            publish(
                ctx,
                gw,
                EventType::Warning,
                "CanaryInconclusive",
                canary.message.clone(),
            )
            .await;
            Ok(waiting(canary, Duration::from_secs(1)))
        }
        Judgement::Fail(why) => {
            roll_back(ctx, gw, &deployments, canary, why, stable_revision).await
        }
    }
}

/// A failed step: the canary pods go, the stable ones stay on `stable_revision`, and an
/// Event and the status say `why`.
async fn roll_back(
    ctx: &Context,
    gw: &GraphGateway,
    deployments: &kube::Api<Deployment>,
    mut canary: CanaryStatus,
    why: String,
    stable_revision: Option<String>,
) -> Result<Applied, Error> {
    scale_to_zero(deployments, &canary_name(gw)).await?;
    canary.phase = CanaryPhase::RolledBack;
    canary.message = format!(
        "step {} ({}%) failed, canary removed: {why}",
        canary.step + 1,
        canary.share_percent
    );
    publish(
        ctx,
        gw,
        EventType::Warning,
        "CanaryRolledBack",
        canary.message.clone(),
    )
    .await;
    Ok(Applied {
        served: stable_revision,
        canary: Some(canary),
        requeue: None,
    })
}

/// The canary pods' metrics against the stable pods', read from every Ready pod's admin
/// port. No canary pod answering is a failure: a canary that cannot be judged is not
/// promoted.
async fn judge_step(
    ctx: &Context,
    gw: &GraphGateway,
    ns: &str,
    spec: &CanarySpec,
) -> Result<Judgement, Error> {
    let params = ListParams::default().labels(&meta::selector_string(gw));
    let pods = api::<Pod>(ctx, ns).list(&params).await?.items;
    let ready: Vec<&Pod> = pods.iter().filter(|p| is_ready(p)).collect();
    let texts = futures::future::join_all(ready.iter().map(|p| ctx.probe.metrics(p))).await;
    let (mut canary, mut stable) = (TrackMetrics::default(), TrackMetrics::default());
    let mut canary_answers = 0;
    for (pod, text) in ready.iter().zip(texts) {
        let track = if is_canary(pod) {
            &mut canary
        } else {
            &mut stable
        };
        match text.and_then(|t| track.add_text(&t)) {
            Ok(()) if is_canary(pod) => canary_answers += 1,
            Ok(()) => {}
            Err(why) => {
                tracing::warn!(pod = %pod.name_any(), %why, "no metrics from a gateway pod")
            }
        }
    }
    if canary_answers == 0 {
        return Ok(Judgement::Fail(
            "no canary pod's metrics could be read from its admin port".to_owned(),
        ));
    }
    Ok(judge(spec, &canary, &stable))
}

/// Scale the canary Deployment to no pods, if it exists. It is kept (owned by the
/// gateway, reused by the next canary) because the operator may not delete Deployments.
async fn scale_to_zero(deployments: &kube::Api<Deployment>, name: &str) -> Result<(), Error> {
    let Some(canary) = deployments.get_opt(name).await? else {
        return Ok(());
    };
    if canary.spec.as_ref().and_then(|s| s.replicas) == Some(0) {
        return Ok(());
    }
    let patch = serde_json::json!({ "spec": { "replicas": 0 } });
    deployments
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}

fn is_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn seconds_since(time: &Time) -> u64 {
    let elapsed = now().0.as_second() - time.0.as_second();
    u64::try_from(elapsed).unwrap_or(0)
}
