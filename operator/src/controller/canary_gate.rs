//! The load gate of a canary (`spec.rollout.canary.loadTest`), its Kubernetes side: the
//! Service of the canary pods alone, and each step's LoadTest against it, created once the
//! step's canary pods are all ready and read on every reconcile after (an owned LoadTest's
//! change wakes the gateway). What its status means is `crate::canary_gate`'s. The
//! Service stays when the canary is over: the operator may not delete Services. The step
//! LoadTests of the last canary stay for people to read; those of earlier canaries are
//! deleted when a new canary's first LoadTest is created, so they never pile up.

use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::runtime::events::EventType;

use super::{Context, Error, api, apply, now, publish};
use crate::canary_gate::{Gate, gate};
use crate::resources::gateway_canary::{
    CANARY_OF_LABEL, TEMPLATE_HASH_ANNOTATION, canary_loadtest, canary_loadtest_name,
    canary_service,
};
use graphfleet_api::{CanaryStatus, GraphGateway, LoadTest, LoadTestTemplate};

/// Apply the Service selecting the canary pods alone.
pub(super) async fn apply_service(ctx: &Context, gw: &GraphGateway, ns: &str) -> Result<(), Error> {
    apply(&api::<Service>(ctx, ns), &canary_service(gw)).await?;
    Ok(())
}

/// The LoadTest of `canary`'s current step (created from `template` when it does not exist
/// yet) and what it says.
pub(super) async fn step_gate(
    ctx: &Context,
    gw: &GraphGateway,
    ns: &str,
    template: &LoadTestTemplate,
    canary: &CanaryStatus,
) -> Result<(String, Gate), Error> {
    let name = canary_loadtest_name(gw, &canary.template, canary.step);
    let context = |source| Error::CanaryLoadTest {
        name: name.clone(),
        source,
    };
    let loadtests = api::<LoadTest>(ctx, ns);
    let existing = loadtests.get_opt(&name).await.map_err(context)?;
    let lt = match existing {
        Some(lt) => lt,
        None => {
            let built = canary_loadtest(gw, template, &canary.template, canary.step);
            match loadtests.create(&PostParams::default(), &built).await {
                Ok(created) => {
                    tracing::info!(loadtest = %name, step = canary.step, "created the canary step's LoadTest");
                    if canary.step == 0 {
                        delete_earlier_canaries(ctx, gw, ns, &canary.template).await;
                    }
                    publish(
                        ctx,
                        gw,
                        EventType::Normal,
                        "CanaryLoadTestStarted",
                        format!(
                            "step {}: LoadTest {name} loads the canary pods alone",
                            canary.step + 1
                        ),
                    )
                    .await;
                    created
                }
                // Made by a reconcile that lost its status write: it is the step's test.
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    loadtests.get(&name).await.map_err(context)?
                }
                Err(e) => return Err(context(e)),
            }
        }
    };
    let verdict = gate(&lt, &now());
    Ok((name, verdict))
}

/// Delete the step LoadTests of canaries other than `template`'s. Best effort: a failure
/// is logged and tried again at the next canary, it never holds this one.
async fn delete_earlier_canaries(ctx: &Context, gw: &GraphGateway, ns: &str, template: &str) {
    let loadtests = api::<LoadTest>(ctx, ns);
    let selector = format!("{CANARY_OF_LABEL}={}", gw.name_any());
    let listed = match loadtests
        .list(&ListParams::default().labels(&selector))
        .await
    {
        Ok(listed) => listed,
        Err(error) => {
            tracing::warn!(%error, "could not list earlier canaries' LoadTests");
            return;
        }
    };
    for lt in listed {
        if lt
            .labels()
            .get(TEMPLATE_HASH_ANNOTATION)
            .map(String::as_str)
            == Some(template)
        {
            continue;
        }
        let name = lt.name_any();
        match loadtests.delete(&name, &DeleteParams::background()).await {
            Ok(_) => tracing::info!(loadtest = %name, "deleted an earlier canary's LoadTest"),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(error) => {
                tracing::warn!(loadtest = %name, %error, "could not delete an earlier canary's LoadTest")
            }
        }
    }
}
