//! The operations check: every operation the fleet has served (merged from the gateway
//! pods' recorders) is validated and planned against a new supergraph before any pod
//! changes: which become invalid (with their share of requests and clients), which fail
//! to plan, and which plans change (subgraph fetches added or removed). Pure and
//! CPU-bound: the controller runs it off the async workers.

use graphfleet_admin_api::{FleetOperation, FleetUsage};
use graphfleet_federation::Supergraph;
use graphfleet_planner::OperationLimits;
use graphfleet_planner::operation::prepare_with_limits;
use graphfleet_planner::query_planner::{
    Fetch, PathElem, PlanBudget, QueryPlan, build_plan_within,
};

/// Findings listed in status and events at most (counts are exact).
pub const MAX_LISTED: usize = 20;

/// Which recorded operations count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsagePolicy {
    /// Operations last seen longer ago than this (seconds) are left out.
    pub window: u64,
    /// Operations with a smaller share of the recorded requests are left out.
    pub minimum_share: f64,
}

/// One recorded operation the new supergraph refuses.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// `name (id, share of requests, clients): why`.
    pub text: String,
    /// Within the window and above the minimum share: it may block.
    pub counts: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct OperationsVerdict {
    /// Operations validated and planned.
    pub checked: usize,
    /// Operations the new supergraph refuses (invalid or unplannable), most requested first.
    pub invalid: Vec<Finding>,
    /// `name: +fetch, -fetch` per operation whose plan changes, most requested first.
    pub changed_plans: Vec<String>,
    /// How many plans change (the list is cut at [`MAX_LISTED`]).
    pub changed_plan_count: usize,
}

impl OperationsVerdict {
    /// Operations that count under the policy and break.
    pub fn blocking(&self) -> impl Iterator<Item = &Finding> {
        self.invalid.iter().filter(|f| f.counts)
    }
}

/// Check `usage` against `new`, comparing plans with `served` when given.
pub fn check(
    usage: &FleetUsage,
    served: Option<&Supergraph>,
    new: &Supergraph,
    policy: UsagePolicy,
) -> OperationsVerdict {
    let mut ops: Vec<(&String, &FleetOperation)> = usage.operations.iter().collect();
    ops.sort_by(|a, b| b.1.count.cmp(&a.1.count).then_with(|| a.0.cmp(b.0)));
    let mut verdict = OperationsVerdict::default();
    for (id, op) in ops {
        verdict.checked += 1;
        let share = usage.share(op);
        let counts = op.last_seen_ago <= policy.window && share >= policy.minimum_share;
        let after = match plan(new, op) {
            Ok(plan) => plan,
            Err(why) => {
                verdict.invalid.push(Finding {
                    text: format!("{} ({}): {why}", label(op), describe(id, share, op)),
                    counts,
                });
                continue;
            }
        };
        let Some(before) = served.and_then(|s| plan(s, op).ok()) else {
            continue;
        };
        let (added, removed) = fetch_changes(&before, &after);
        if added.is_empty() && removed.is_empty() {
            continue;
        }
        verdict.changed_plan_count += 1;
        if verdict.changed_plans.len() < MAX_LISTED {
            let changes: Vec<String> = added
                .iter()
                .map(|f| format!("+{f}"))
                .chain(removed.iter().map(|f| format!("-{f}")))
                .collect();
            verdict
                .changed_plans
                .push(format!("{}: {}", label(op), changes.join(", ")));
        }
    }
    verdict
}

/// The plan of `op` on `supergraph`, or why there is none.
fn plan(supergraph: &Supergraph, op: &FleetOperation) -> Result<QueryPlan, String> {
    let prepared = prepare_with_limits(
        &supergraph.api_schema,
        &op.document,
        op.name.as_deref(),
        &OperationLimits::default(),
    )
    .map_err(|e| {
        e.0.iter()
            .map(|e| e.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    build_plan_within(&supergraph.meta, &prepared.ir, None, &PlanBudget::default())
        .map_err(|e| format!("cannot be planned: {e}"))
}

/// Fetches as `subgraph at path` (`subgraph at root` for root fetches): those only in
/// `after`, and those only in `before` (as multisets).
fn fetch_changes(before: &QueryPlan, after: &QueryPlan) -> (Vec<String>, Vec<String>) {
    let names = |plan: &QueryPlan| -> Vec<String> {
        let mut names: Vec<String> = plan.fetches.iter().map(fetch_name).collect();
        names.sort();
        names
    };
    let (mut old, new) = (names(before), names(after));
    let mut added = Vec::new();
    for fetch in new {
        match old.iter().position(|f| *f == fetch) {
            Some(at) => {
                old.remove(at);
            }
            None => added.push(fetch),
        }
    }
    (added, old)
}

fn fetch_name(fetch: &Fetch) -> String {
    let path = fetch
        .merge_paths
        .first()
        .map(|p| {
            p.iter()
                .map(|e| match e {
                    PathElem::Key(name) => name.to_string(),
                    PathElem::List => "@".to_owned(),
                    PathElem::TypeCond(ty) => format!("…{ty}"),
                })
                .collect::<Vec<_>>()
                .join(".")
        })
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "root".to_owned());
    format!("{} at {path}", fetch.subgraph_name)
}

fn label(op: &FleetOperation) -> &str {
    op.name.as_deref().unwrap_or("(anonymous)")
}

/// `id 1a2b3c4d5e6f, 12.5% of requests, clients web 1.2, ios`.
fn describe(id: &str, share: f64, op: &FleetOperation) -> String {
    let mut out = format!(
        "id {}, {:.1}% of requests, last seen {}s ago",
        &id[..12.min(id.len())],
        share * 100.0,
        op.last_seen_ago
    );
    if !op.clients.is_empty() {
        let clients: Vec<String> = op
            .clients
            .iter()
            .map(|c| match &c.version {
                Some(v) => format!("{} {v}", c.name),
                None => c.name.clone(),
            })
            .collect();
        out.push_str(&format!(", clients {}", clients.join(", ")));
    }
    out
}
