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
    /// Whether recorded traffic was checked (not only persisted documents).
    pub traffic: bool,
    /// Operations and persisted documents validated (and planned).
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

/// A persisted document (its list id and text): clients send it by id, so one the new
/// supergraph refuses breaks them whether or not it was sent lately.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistedDocument {
    pub id: String,
    pub text: String,
}

/// Check `usage` and `documents` against `new`, comparing with `served` when given
/// (plans; and a persisted document already invalid there is not newly broken).
pub fn check(
    usage: &FleetUsage,
    documents: &[PersistedDocument],
    served: Option<&Supergraph>,
    new: &Supergraph,
    policy: UsagePolicy,
) -> OperationsVerdict {
    let mut ops: Vec<(&String, &FleetOperation)> = usage.operations.iter().collect();
    ops.sort_by(|a, b| b.1.count.cmp(&a.1.count).then_with(|| a.0.cmp(b.0)));
    let mut verdict = OperationsVerdict {
        traffic: usage.requests > 0,
        ..OperationsVerdict::default()
    };
    check_documents(documents, served, new, &mut verdict);
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

/// Persisted documents valid on `served` (or with nothing served) that `new` refuses.
fn check_documents(
    documents: &[PersistedDocument],
    served: Option<&Supergraph>,
    new: &Supergraph,
    verdict: &mut OperationsVerdict,
) {
    for doc in documents {
        verdict.checked += 1;
        let Err(why) = validate(new, &doc.text) else {
            continue;
        };
        if served.is_some_and(|s| validate(s, &doc.text).is_err()) {
            continue;
        }
        verdict.invalid.push(Finding {
            text: format!("persisted document {}: {why}", doc.id),
            counts: true,
        });
    }
}

/// Whether every operation of `document` validates against `supergraph`'s API schema.
fn validate(supergraph: &Supergraph, document: &str) -> Result<(), String> {
    apollo_compiler::ExecutableDocument::parse_and_validate(
        &supergraph.api_schema,
        document,
        "persisted document",
    )
    .map(drop)
    .map_err(|e| {
        e.errors
            .iter()
            .map(|d| d.error.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use graphfleet_admin_api::{ClientUsage, OperationUsage, UsageReport};
    use graphfleet_composition::{SubgraphInput, compose};

    const ACCOUNTS: &str = include_str!("../tests/fixtures/subgraphs/accounts.graphql");
    const PRODUCTS: &str = include_str!("../tests/fixtures/subgraphs/products.graphql");
    const REVIEWS: &str = include_str!("../tests/fixtures/subgraphs/reviews.graphql");

    fn supergraph(accounts: &str, products: &str, reviews: &str) -> Supergraph {
        let inputs: Vec<SubgraphInput> = [
            ("accounts", accounts),
            ("products", products),
            ("reviews", reviews),
        ]
        .into_iter()
        .map(|(name, sdl)| SubgraphInput {
            name: name.to_owned(),
            url: format!("http://{name}/graphql"),
            sdl: sdl.to_owned(),
        })
        .collect();
        let composed = compose(&inputs).expect("the fixture subgraphs compose");
        Supergraph::parse(&composed.supergraph_sdl).expect("a composed supergraph loads")
    }

    fn op(name: &str, document: &str, count: u64, last_seen: u64) -> OperationUsage {
        OperationUsage {
            id: format!("{name:0>12}"),
            name: Some(name.to_owned()),
            document: document.to_owned(),
            count,
            first_seen: 0,
            last_seen,
            clients: vec![ClientUsage {
                name: "web".to_owned(),
                version: Some("1.2".to_owned()),
                count,
            }],
        }
    }

    /// Served over the last 100 s (the report's clock reads 1,000).
    fn usage() -> FleetUsage {
        let mut fleet = FleetUsage::default();
        fleet.add(&UsageReport {
            now: 1_000,
            requests: 100,
            operations: vec![
                op(
                    "Top",
                    "query Top { topProducts { upc name price } }",
                    60,
                    999,
                ),
                op(
                    "Authors",
                    "query Authors { topProducts { reviews { author { username } } } }",
                    30,
                    990,
                ),
                // Last seen 900 s ago: outside a 600 s window.
                op("Prices", "query Prices { topProducts { price } }", 10, 100),
            ],
            ..UsageReport::default()
        });
        fleet
    }

    const WINDOW: UsagePolicy = UsagePolicy {
        window: 600,
        minimum_share: 0.0,
    };

    #[test]
    fn a_removed_field_names_the_served_operations_it_breaks() {
        let served = supergraph(ACCOUNTS, PRODUCTS, REVIEWS);
        let new = supergraph(ACCOUNTS, &PRODUCTS.replace("  price: Int\n", ""), REVIEWS);
        let verdict = check(&usage(), &[], Some(&served), &new, WINDOW);
        assert_eq!(verdict.checked, 3);
        let found: Vec<(&str, bool)> = verdict
            .invalid
            .iter()
            .map(|f| (f.text.as_str(), f.counts))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "Top (id 000000000Top, 60.0% of requests, last seen 1s ago, clients web 1.2): type `Product` does not have a field `price`",
                    true
                ),
                (
                    "Prices (id 000000Prices, 10.0% of requests, last seen 900s ago, clients web 1.2): interface, union and object types must have a subselection set; type `Product` does not have a field `price`",
                    false
                ),
            ]
        );
        assert_eq!(verdict.blocking().count(), 1);
        assert!(
            verdict.changed_plans.is_empty(),
            "{:?}",
            verdict.changed_plans
        );
    }

    #[test]
    fn the_minimum_share_leaves_rare_operations_out() {
        let served = supergraph(ACCOUNTS, PRODUCTS, REVIEWS);
        let new = supergraph(ACCOUNTS, &PRODUCTS.replace("  price: Int\n", ""), REVIEWS);
        let policy = UsagePolicy {
            window: u64::MAX,
            minimum_share: 0.5,
        };
        let verdict = check(&usage(), &[], Some(&served), &new, policy);
        let counting: Vec<bool> = verdict.invalid.iter().map(|f| f.counts).collect();
        assert_eq!(
            counting,
            [true, false],
            "Top (60%) counts, Prices (10%) does not"
        );
    }

    #[test]
    fn a_field_moving_between_subgraphs_shows_as_a_plan_change() {
        let served = supergraph(ACCOUNTS, PRODUCTS, REVIEWS);
        // `User.username` becomes resolvable by reviews too: authors need no accounts fetch.
        let shareable = |sdl: &str| sdl.replace("[\"@key\"]", "[\"@key\", \"@shareable\"]");
        let accounts =
            shareable(ACCOUNTS).replace("username: String", "username: String @shareable");
        let reviews = shareable(REVIEWS).replace(
            "type User @key(fields: \"id\") {\n  id: ID!\n",
            "type User @key(fields: \"id\") {\n  id: ID!\n  username: String @shareable\n",
        );
        let new = supergraph(&accounts, PRODUCTS, &reviews);
        let verdict = check(&usage(), &[], Some(&served), &new, WINDOW);
        assert!(verdict.invalid.is_empty(), "{:?}", verdict.invalid);
        assert_eq!(verdict.changed_plan_count, 1);
        assert_eq!(
            verdict.changed_plans,
            ["Authors: -accounts at topProducts.@.reviews.@.author"]
        );
    }

    #[test]
    fn persisted_documents_newly_refused_block_whatever_their_traffic() {
        let served = supergraph(ACCOUNTS, PRODUCTS, REVIEWS);
        let new = supergraph(ACCOUNTS, &PRODUCTS.replace("  price: Int\n", ""), REVIEWS);
        let doc = |id: &str, text: &str| PersistedDocument {
            id: id.to_owned(),
            text: text.to_owned(),
        };
        let documents = [
            doc(
                "p1",
                "query Prices { topProducts { price } } query Names { me { username } }",
            ),
            doc("n1", "query Names { me { username } }"),
            // Already invalid on the served supergraph: not broken by this change.
            doc("x1", "query Old { topProducts { weight } }"),
        ];
        let verdict = check(
            &FleetUsage::default(),
            &documents,
            Some(&served),
            &new,
            WINDOW,
        );
        assert!(!verdict.traffic, "no requests were recorded");
        assert_eq!(verdict.checked, 3);
        let found: Vec<(&str, bool)> = verdict
            .invalid
            .iter()
            .map(|f| (f.text.as_str(), f.counts))
            .collect();
        assert_eq!(
            found,
            [(
                "persisted document p1: interface, union and object types must have a subselection set; type `Product` does not have a field `price`",
                true
            )]
        );
    }
}
