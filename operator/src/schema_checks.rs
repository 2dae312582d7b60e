//! The verdict on a new composition's API-schema changes against the served revision
//! (`spec.delivery.checks.breakingChanges`). Pure: the controller diffs, this judges.

use graphfleet_api::CheckPolicy;
use graphfleet_schema_diff::{Change, Severity};

/// Breaking changes listed in status and events at most (the count is always exact).
const MAX_LISTED: usize = 20;

/// What the checks found and decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Breaking changes as `coordinate: message`, at most [`MAX_LISTED`].
    pub breaking: Vec<String>,
    /// How many breaking changes there were.
    pub breaking_count: usize,
    pub dangerous: usize,
    /// The revision must not be served.
    pub blocked: bool,
}

/// Judges `changes` under `policy`; `forced` lets a blocked revision through once.
pub fn judge(changes: &[Change], policy: CheckPolicy, forced: bool) -> Verdict {
    let breaking: Vec<&Change> = changes.iter().filter(|c| c.is_breaking()).collect();
    let dangerous = changes
        .iter()
        .filter(|c| c.severity == Severity::Dangerous)
        .count();
    Verdict {
        breaking: breaking
            .iter()
            .take(MAX_LISTED)
            .map(|c| format!("{}: {}", c.coordinate, c.message))
            .collect(),
        breaking_count: breaking.len(),
        dangerous,
        blocked: policy == CheckPolicy::Block && !breaking.is_empty() && !forced,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "type Query { a: Int b: String c: Color }\nenum Color { RED GREEN }\n";
    const NEW: &str = "type Query { a: Int c: Color }\nenum Color { RED GREEN BLUE }\n";

    fn changes() -> Vec<Change> {
        graphfleet_schema_diff::diff_sdl(OLD, NEW).expect("valid schemas")
    }

    #[test]
    fn warn_reports_and_lets_through() {
        let verdict = judge(&changes(), CheckPolicy::Warn, false);
        assert_eq!(verdict.breaking, ["Query.b: Field `Query.b` was removed"]);
        assert_eq!((verdict.breaking_count, verdict.dangerous), (1, 1));
        assert!(!verdict.blocked);
    }

    #[test]
    fn block_keeps_a_breaking_revision_out_unless_forced() {
        assert!(judge(&changes(), CheckPolicy::Block, false).blocked);
        assert!(!judge(&changes(), CheckPolicy::Block, true).blocked);
        let safe = graphfleet_schema_diff::diff_sdl(OLD, OLD).expect("valid schemas");
        assert!(!judge(&safe, CheckPolicy::Block, false).blocked);
    }
}
