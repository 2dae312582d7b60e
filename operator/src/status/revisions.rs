//! `status.revisions`: the supergraph revisions a GraphGateway keeps, newest first, and
//! what became of each. Pure: the reconciler passes what it composed and what it serves.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::operations_check::MAX_LISTED;
use graphfleet_api::{
    CanaryPhase, CanaryStatus, RevisionOutcome, SubgraphSchemaRef, SupergraphRevision,
};

/// A composition the reconciler just made.
pub struct Composed<'a> {
    pub hash: &'a str,
    pub subgraphs: Vec<SubgraphSchemaRef>,
    /// Its checks against the served revision, when they ran.
    pub verdict: Option<&'a crate::schema_checks::Verdict>,
}

/// The history after this reconcile: `composed` added when new, `serving` marked as the
/// served revision (the one before it superseded), at most `limit` entries. The served
/// revision is never dropped, however old.
pub fn record(
    previous: &[SupergraphRevision],
    composed: Option<Composed<'_>>,
    serving: Option<&str>,
    limit: usize,
    now: &Time,
) -> Vec<SupergraphRevision> {
    let mut revisions = previous.to_vec();
    let blocked = composed
        .as_ref()
        .filter(|c| c.verdict.is_some_and(|v| v.is_blocked()))
        .map(|c| c.hash.to_owned());
    if let Some(new) = composed
        && !revisions.iter().any(|r| r.hash == new.hash)
    {
        let operations = new.verdict.and_then(|v| v.operations.as_ref());
        revisions.insert(
            0,
            SupergraphRevision {
                hash: new.hash.to_owned(),
                composed_at: now.clone(),
                subgraphs: new.subgraphs,
                outcome: RevisionOutcome::Composed,
                breaking_changes: new.verdict.map(|v| v.breaking.clone()).unwrap_or_default(),
                dangerous_changes: new.verdict.map_or(0, |v| saturating(v.dangerous)),
                operations_checked: operations.map_or(0, |o| saturating(o.checked)),
                invalid_operations: operations
                    .map(|o| {
                        o.invalid
                            .iter()
                            .take(MAX_LISTED)
                            .map(|f| f.text.clone())
                            .collect()
                    })
                    .unwrap_or_default(),
                changed_plans: operations
                    .map(|o| o.changed_plans.clone())
                    .unwrap_or_default(),
            },
        );
    }
    for revision in &mut revisions {
        let is_served = serving == Some(revision.hash.as_str());
        let is_blocked = blocked.as_deref() == Some(revision.hash.as_str());
        revision.outcome = match (revision.outcome, is_served) {
            (_, true) => RevisionOutcome::Serving,
            (RevisionOutcome::Serving, false) => RevisionOutcome::Superseded,
            (RevisionOutcome::Composed, false) if is_blocked => RevisionOutcome::Blocked,
            (other, false) => other,
        };
    }
    while revisions.len() > limit.max(1) {
        let oldest_unserved = revisions
            .iter()
            .rposition(|r| r.outcome != RevisionOutcome::Serving)
            .expect("more revisions than the limit, so one is not served");
        revisions.remove(oldest_unserved);
    }
    revisions
}

/// The canary's revision marked `Canary` while it runs (unless already served by the
/// stable pods) and `RolledBack` once it was taken off.
pub fn mark_canary(revisions: &mut [SupergraphRevision], canary: Option<&CanaryStatus>) {
    let Some(canary) = canary else { return };
    for revision in revisions.iter_mut().filter(|r| r.hash == canary.revision) {
        revision.outcome = match (canary.phase, revision.outcome) {
            (_, RevisionOutcome::Serving) => RevisionOutcome::Serving,
            (CanaryPhase::RolledBack, _) => RevisionOutcome::RolledBack,
            (_, _) => RevisionOutcome::Canary,
        };
    }
}

fn saturating(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).expect("valid timestamp"))
    }

    fn composed(hash: &str) -> Composed<'_> {
        Composed {
            hash,
            subgraphs: vec![SubgraphSchemaRef {
                name: "a".to_owned(),
                sdl_hash: format!("sdl-{hash}"),
            }],
            verdict: None,
        }
    }

    fn outcomes(revisions: &[SupergraphRevision]) -> Vec<(&str, RevisionOutcome)> {
        revisions
            .iter()
            .map(|r| (r.hash.as_str(), r.outcome))
            .collect()
    }

    #[test]
    fn a_new_composition_is_served_and_supersedes_the_last() {
        let one = record(&[], Some(composed("1")), Some("1"), 10, &at(1));
        let two = record(&one, Some(composed("2")), Some("2"), 10, &at(2));
        use RevisionOutcome::*;
        assert_eq!(outcomes(&two), [("2", Serving), ("1", Superseded)]);
        assert_eq!(two[1].composed_at, at(1), "first composition time kept");
        // The same composition again changes nothing.
        assert_eq!(
            record(&two, Some(composed("2")), Some("2"), 10, &at(3)),
            two
        );
    }

    #[test]
    fn pinning_an_old_revision_serves_it_and_keeps_the_new_one_composed() {
        use RevisionOutcome::*;
        let history = record(&[], Some(composed("1")), Some("1"), 10, &at(1));
        let history = record(&history, Some(composed("2")), Some("2"), 10, &at(2));
        let pinned = record(&history, Some(composed("3")), Some("1"), 10, &at(3));
        assert_eq!(
            outcomes(&pinned),
            [("3", Composed), ("2", Superseded), ("1", Serving)]
        );
    }

    #[test]
    fn the_limit_drops_the_oldest_but_never_the_served_one() {
        use RevisionOutcome::*;
        let mut history = record(&[], Some(composed("1")), Some("1"), 2, &at(1));
        for (i, hash) in ["2", "3"].iter().enumerate() {
            history = record(
                &history,
                Some(composed(hash)),
                Some("1"),
                2,
                &at(2 + i as i64),
            );
        }
        assert_eq!(outcomes(&history), [("3", Composed), ("1", Serving)]);
    }
}
