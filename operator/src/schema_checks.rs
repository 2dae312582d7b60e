//! The verdict on a new composition against the served revision: its API-schema changes
//! (`spec.delivery.checks.breakingChanges`) and the served operations it breaks
//! (`spec.delivery.checks.operations`). Pure: the controller diffs and checks, this judges.

use crate::operations_check::OperationsVerdict;
use graphfleet_api::CheckPolicy;
use graphfleet_schema_diff::{Change, Severity};

/// Breaking changes listed in status and events at most (the count is always exact).
const MAX_LISTED: usize = 20;

/// Why a revision is kept from the pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// Served operations (within the usage window and share) become invalid.
    Operations,
    /// Breaking API-schema changes, with no recorded traffic to judge them by.
    BreakingChanges,
}

impl Block {
    /// The condition reason.
    pub fn reason(self) -> &'static str {
        match self {
            Block::Operations => "OperationsBlocked",
            Block::BreakingChanges => "BreakingChangesBlocked",
        }
    }
}

/// The two policies of `spec.delivery.checks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policies {
    pub breaking_changes: CheckPolicy,
    pub operations: CheckPolicy,
}

/// What the checks found and decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Breaking changes as `coordinate: message`, at most [`MAX_LISTED`].
    pub breaking: Vec<String>,
    /// How many breaking changes there were.
    pub breaking_count: usize,
    pub dangerous: usize,
    /// The operations check, when the fleet's recorded traffic was known.
    pub operations: Option<OperationsVerdict>,
    /// Why the revision must not be served, if it must not.
    pub blocked: Option<Block>,
}

impl Verdict {
    pub fn is_blocked(&self) -> bool {
        self.blocked.is_some()
    }

    /// The blocking findings as `(code, message)`, for the condition and the Event.
    pub fn blocking_errors(&self) -> Vec<(&'static str, String)> {
        match self.blocked {
            Some(Block::Operations) => self
                .operations
                .iter()
                .flat_map(|o| o.blocking())
                .take(MAX_LISTED)
                .map(|f| ("INVALID_OPERATION", f.text.clone()))
                .collect(),
            Some(Block::BreakingChanges) => self
                .breaking
                .iter()
                .map(|b| ("BREAKING_CHANGE", b.clone()))
                .collect(),
            None => Vec::new(),
        }
    }
}

/// Judges `changes` and the operations check (`None`: no traffic recorded) under
/// `policies`; `forced` lets a blocked revision through once.
///
/// Invalid served operations block under either `Block` policy. Breaking changes alone
/// block (under `breakingChanges: Block`) only when no traffic is known: with recorded
/// traffic, a breaking change that no served operation uses goes through.
pub fn judge(
    changes: &[Change],
    operations: Option<OperationsVerdict>,
    policies: Policies,
    forced: bool,
) -> Verdict {
    let breaking: Vec<&Change> = changes.iter().filter(|c| c.is_breaking()).collect();
    let dangerous = changes
        .iter()
        .filter(|c| c.severity == Severity::Dangerous)
        .count();
    let breaks_traffic = operations
        .as_ref()
        .is_some_and(|o| o.blocking().next().is_some());
    let any_block = policies.operations == CheckPolicy::Block
        || policies.breaking_changes == CheckPolicy::Block;
    let blocked = if forced {
        None
    } else if breaks_traffic && any_block {
        Some(Block::Operations)
    } else if policies.breaking_changes == CheckPolicy::Block
        && !breaking.is_empty()
        && !operations.as_ref().is_some_and(|o| o.traffic)
    {
        Some(Block::BreakingChanges)
    } else {
        None
    };
    Verdict {
        breaking: breaking
            .iter()
            .take(MAX_LISTED)
            .map(|c| format!("{}: {}", c.coordinate, c.message))
            .collect(),
        breaking_count: breaking.len(),
        dangerous,
        operations,
        blocked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operations_check::Finding;

    const OLD: &str = "type Query { a: Int b: String c: Color }\nenum Color { RED GREEN }\n";
    const NEW: &str = "type Query { a: Int c: Color }\nenum Color { RED GREEN BLUE }\n";

    fn changes() -> Vec<Change> {
        graphfleet_schema_diff::diff_sdl(OLD, NEW).expect("valid schemas")
    }

    fn policies(breaking_changes: CheckPolicy, operations: CheckPolicy) -> Policies {
        Policies {
            breaking_changes,
            operations,
        }
    }

    fn traffic(invalid: &[(&str, bool)]) -> OperationsVerdict {
        OperationsVerdict {
            traffic: true,
            checked: invalid.len() + 1,
            invalid: invalid
                .iter()
                .map(|(text, counts)| Finding {
                    text: (*text).to_owned(),
                    counts: *counts,
                })
                .collect(),
            ..OperationsVerdict::default()
        }
    }

    #[test]
    fn warn_reports_and_lets_through() {
        let verdict = judge(
            &changes(),
            None,
            policies(CheckPolicy::Warn, CheckPolicy::Warn),
            false,
        );
        assert_eq!(verdict.breaking, ["Query.b: Field `Query.b` was removed"]);
        assert_eq!((verdict.breaking_count, verdict.dangerous), (1, 1));
        assert!(!verdict.is_blocked());
    }

    #[test]
    fn without_traffic_block_keeps_a_breaking_revision_out_unless_forced() {
        let block = policies(CheckPolicy::Block, CheckPolicy::Block);
        let verdict = judge(&changes(), None, block, false);
        assert_eq!(verdict.blocked, Some(Block::BreakingChanges));
        assert_eq!(
            verdict.blocking_errors(),
            [(
                "BREAKING_CHANGE",
                "Query.b: Field `Query.b` was removed".to_owned()
            )]
        );
        assert!(!judge(&changes(), None, block, true).is_blocked());
        let safe = graphfleet_schema_diff::diff_sdl(OLD, OLD).expect("valid schemas");
        assert!(!judge(&safe, None, block, false).is_blocked());
    }

    #[test]
    fn with_traffic_only_broken_served_operations_block() {
        let block = policies(CheckPolicy::Block, CheckPolicy::Warn);
        // `Query.b` is removed, but no served operation (that counts) selects it.
        let unused = judge(
            &changes(),
            Some(traffic(&[("Old: rare", false)])),
            block,
            false,
        );
        assert!(!unused.is_blocked());
        let used = judge(
            &changes(),
            Some(traffic(&[("B: no field b", true)])),
            block,
            false,
        );
        assert_eq!(used.blocked, Some(Block::Operations));
        assert_eq!(
            used.blocking_errors(),
            [("INVALID_OPERATION", "B: no field b".to_owned())]
        );
    }

    #[test]
    fn the_operations_policy_alone_blocks_or_warns() {
        let found = || Some(traffic(&[("B: no field b", true)]));
        let block = policies(CheckPolicy::Warn, CheckPolicy::Block);
        assert_eq!(
            judge(&changes(), found(), block, false).blocked,
            Some(Block::Operations)
        );
        assert!(!judge(&changes(), found(), block, true).is_blocked());
        let warn = policies(CheckPolicy::Warn, CheckPolicy::Warn);
        assert!(!judge(&changes(), found(), warn, false).is_blocked());
    }
}
