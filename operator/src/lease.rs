//! Leader election on a `coordination.k8s.io/v1` Lease, with optimistic concurrency:
//! every write carries the resourceVersion it read, so two candidates cannot both win.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::PostParams;
use kube::{Api, Client};

/// Who competes for which Lease, and how long a claim lasts.
#[derive(Clone, Debug)]
pub struct LeaseSettings {
    pub name: String,
    pub namespace: String,
    pub identity: String,
    /// A holder that has not renewed for this long loses the lease.
    pub duration: Duration,
    /// How often the holder renews (well under `duration`).
    pub renew_every: Duration,
}

/// What to do given the current Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Decision {
    /// No Lease yet: create it holding it.
    Create,
    /// We hold it: bump renewTime.
    Renew,
    /// Free or expired: take it over.
    TakeOver,
    /// Someone else holds it for about this much longer.
    Wait(Duration),
}

/// Pure decision of one election step.
fn decide(spec: Option<&LeaseSpec>, identity: &str, now: Timestamp) -> Decision {
    let Some(spec) = spec else {
        return Decision::Create;
    };
    let holder = spec.holder_identity.as_deref().unwrap_or("");
    if holder == identity {
        return Decision::Renew;
    }
    if holder.is_empty() {
        return Decision::TakeOver;
    }
    let duration = SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(15)));
    let renewed = spec
        .renew_time
        .as_ref()
        .or(spec.acquire_time.as_ref())
        .map(|t| t.0);
    match renewed {
        Some(renewed) => {
            let expires = renewed
                .saturating_add(duration)
                .expect("lease expiry in range");
            if expires <= now {
                Decision::TakeOver
            } else {
                let left = now.duration_until(expires);
                Decision::Wait(Duration::try_from(left).unwrap_or(Duration::ZERO))
            }
        }
        None => Decision::TakeOver,
    }
}

/// A candidate for (and, once elected, the holder of) the Lease.
pub struct LeaderElector {
    api: Api<Lease>,
    settings: LeaseSettings,
}

impl LeaderElector {
    pub fn new(client: Client, settings: LeaseSettings) -> Self {
        Self {
            api: Api::namespaced(client, &settings.namespace),
            settings,
        }
    }

    pub fn settings(&self) -> &LeaseSettings {
        &self.settings
    }

    fn spec(&self, previous: Option<&LeaseSpec>, now: Timestamp, take_over: bool) -> LeaseSpec {
        let transitions = previous.and_then(|p| p.lease_transitions).unwrap_or(0);
        LeaseSpec {
            holder_identity: Some(self.settings.identity.clone()),
            lease_duration_seconds: Some(
                i32::try_from(self.settings.duration.as_secs()).unwrap_or(i32::MAX),
            ),
            acquire_time: if take_over {
                Some(MicroTime(now))
            } else {
                previous.and_then(|p| p.acquire_time.clone())
            },
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(if take_over && previous.is_some() {
                transitions + 1
            } else {
                transitions
            }),
            ..LeaseSpec::default()
        }
    }

    /// One election step: `Ok(true)` when we hold the lease afterwards.
    async fn try_acquire_or_renew(&self) -> Result<bool, kube::Error> {
        let now = Timestamp::now();
        let current = self.api.get_opt(&self.settings.name).await?;
        let decision = decide(
            current.as_ref().and_then(|l| l.spec.as_ref()),
            &self.settings.identity,
            now,
        );
        let result = match (decision, current) {
            (Decision::Wait(_), _) => return Ok(false),
            (Decision::Create, _) | (_, None) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.settings.name.clone()),
                        namespace: Some(self.settings.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(self.spec(None, now, true)),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
            (decision, Some(mut lease)) => {
                let take_over = decision == Decision::TakeOver;
                lease.spec = Some(self.spec(lease.spec.as_ref(), now, take_over));
                // `replace` sends the resourceVersion we read: a concurrent write makes it 409.
                self.api
                    .replace(&self.settings.name, &PostParams::default(), &lease)
                    .await
            }
        };
        match result {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Waits until elected (retrying every `renew_every`).
    pub async fn acquire(&self) {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => return,
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "leader election step failed"),
            }
            tokio::time::sleep(self.settings.renew_every).await;
        }
    }

    /// Renews until a renewal is refused or failing for a whole lease duration; then returns
    /// (leadership is lost and the caller must stop reconciling).
    pub async fn hold(&self) {
        let mut last_renewed = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(self.settings.renew_every).await;
            match self.try_acquire_or_renew().await {
                Ok(true) => last_renewed = tokio::time::Instant::now(),
                Ok(false) => {
                    tracing::error!("lease taken by another candidate");
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "lease renewal failed");
                    if last_renewed.elapsed() >= self.settings.duration {
                        return;
                    }
                }
            }
        }
    }

    /// Gives the lease up so a standby takes over without waiting for expiry.
    pub async fn release(&self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.settings.name).await else {
            return;
        };
        let Some(spec) = lease.spec.as_mut() else {
            return;
        };
        if spec.holder_identity.as_deref() != Some(self.settings.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        if let Err(e) = self
            .api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await
        {
            tracing::warn!(error = %e, "releasing the lease failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held_by(holder: &str, renewed_at: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.to_owned()),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(Timestamp::from_second(renewed_at).expect("ts"))),
            ..LeaseSpec::default()
        }
    }

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).expect("ts")
    }

    #[test]
    fn missing_lease_is_created() {
        assert_eq!(decide(None, "a", at(100)), Decision::Create);
    }

    #[test]
    fn own_lease_is_renewed() {
        assert_eq!(
            decide(Some(&held_by("a", 99)), "a", at(100)),
            Decision::Renew
        );
    }

    #[test]
    fn live_foreign_lease_is_waited_for() {
        assert_eq!(
            decide(Some(&held_by("b", 95)), "a", at(100)),
            Decision::Wait(Duration::from_secs(10))
        );
    }

    #[test]
    fn expired_or_released_lease_is_taken_over() {
        assert_eq!(
            decide(Some(&held_by("b", 80)), "a", at(100)),
            Decision::TakeOver
        );
        let released = LeaseSpec {
            holder_identity: None,
            ..held_by("b", 99)
        };
        assert_eq!(decide(Some(&released), "a", at(100)), Decision::TakeOver);
    }
}
