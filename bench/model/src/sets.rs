//! The benchmark sets: their committed SDL, supergraph and query files (the resolvers are
//! graphfleet-bench-subgraphs's).

use std::str::FromStr;
use std::time::Duration;

/// A benchmark set (a directory under `bench/sets/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Set {
    Fed,
    BigResponse,
    ManyPlans,
    Apollo,
}

/// The routing URL prefix in the committed `supergraph.yaml`/`supergraph.graphql`.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:4200";

/// Every set, for listing and tests.
pub const ALL: [Set; 4] = [Set::Fed, Set::BigResponse, Set::ManyPlans, Set::Apollo];

#[derive(Debug, thiserror::Error)]
#[error("unknown set {0:?} (expected one of: fed, big-response, many-plans, apollo)")]
pub struct UnknownSet(String);

impl FromStr for Set {
    type Err = UnknownSet;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL.into_iter()
            .find(|set| set.name() == s)
            .ok_or_else(|| UnknownSet(s.to_owned()))
    }
}

/// One subgraph of a set: its name (also its URL path) and SDL file.
pub struct SubgraphDef {
    pub name: &'static str,
    pub sdl: &'static str,
    /// A latency the subgraph always has (part of the scenario), overridable with `--delay`.
    pub intrinsic_delay: Option<Duration>,
}

const fn sub(name: &'static str, sdl: &'static str) -> SubgraphDef {
    SubgraphDef {
        name,
        sdl,
        intrinsic_delay: None,
    }
}

const fn delayed(name: &'static str, sdl: &'static str, ms: u64) -> SubgraphDef {
    SubgraphDef {
        name,
        sdl,
        intrinsic_delay: Some(Duration::from_millis(ms)),
    }
}

impl Set {
    pub fn name(self) -> &'static str {
        match self {
            Set::Fed => "fed",
            Set::BigResponse => "big-response",
            Set::ManyPlans => "many-plans",
            Set::Apollo => "apollo",
        }
    }

    pub fn subgraphs(self) -> &'static [SubgraphDef] {
        const FED: &[SubgraphDef] = &[
            sub("accounts", include_str!("../../sets/fed/accounts.graphql")),
            sub(
                "inventory",
                include_str!("../../sets/fed/inventory.graphql"),
            ),
            sub("products", include_str!("../../sets/fed/products.graphql")),
            sub("reviews", include_str!("../../sets/fed/reviews.graphql")),
        ];
        const BIG: &[SubgraphDef] = &[
            sub("sub0", include_str!("../../sets/big-response/sub0.graphql")),
            sub("sub1", include_str!("../../sets/big-response/sub1.graphql")),
            delayed(
                "sub2",
                include_str!("../../sets/big-response/sub2.graphql"),
                100,
            ),
        ];
        const MANY: &[SubgraphDef] = &[
            sub("s1", include_str!("../../sets/many-plans/s1.graphql")),
            sub("s2", include_str!("../../sets/many-plans/s2.graphql")),
            sub("s3", include_str!("../../sets/many-plans/s3.graphql")),
            sub("s4", include_str!("../../sets/many-plans/s4.graphql")),
            sub("s5", include_str!("../../sets/many-plans/s5.graphql")),
            sub("s6", include_str!("../../sets/many-plans/s6.graphql")),
            sub("s7", include_str!("../../sets/many-plans/s7.graphql")),
        ];
        const APOLLO: &[SubgraphDef] = &[
            sub("single", include_str!("../../sets/apollo/single.graphql")),
            delayed(
                "delayed",
                include_str!("../../sets/apollo/delayed.graphql"),
                40,
            ),
            delayed(
                "chain1",
                include_str!("../../sets/apollo/chain1.graphql"),
                40,
            ),
            delayed(
                "chain2",
                include_str!("../../sets/apollo/chain2.graphql"),
                40,
            ),
            delayed(
                "chain3",
                include_str!("../../sets/apollo/chain3.graphql"),
                40,
            ),
            delayed(
                "chain4",
                include_str!("../../sets/apollo/chain4.graphql"),
                40,
            ),
            delayed(
                "chain5",
                include_str!("../../sets/apollo/chain5.graphql"),
                40,
            ),
            delayed(
                "chain6",
                include_str!("../../sets/apollo/chain6.graphql"),
                40,
            ),
        ];
        match self {
            Set::Fed => FED,
            Set::BigResponse => BIG,
            Set::ManyPlans => MANY,
            Set::Apollo => APOLLO,
        }
    }

    /// The committed supergraph (composed by `sets/compose.sh`).
    pub fn supergraph(self) -> &'static str {
        match self {
            Set::Fed => include_str!("../../sets/fed/supergraph.graphql"),
            Set::BigResponse => include_str!("../../sets/big-response/supergraph.graphql"),
            Set::ManyPlans => include_str!("../../sets/many-plans/supergraph.graphql"),
            Set::Apollo => include_str!("../../sets/apollo/supergraph.graphql"),
        }
    }

    /// The committed supergraph with routing URLs pointing at `base_url`
    /// (e.g. graphfleet-bench-subgraphs's `Handle::base_url`) instead of `http://127.0.0.1:4200`.
    pub fn supergraph_at(self, base_url: &str) -> String {
        self.supergraph()
            .replace(DEFAULT_BASE_URL, base_url.trim_end_matches('/'))
    }

    /// The set's scenarios: (name, query text) from `queries/<name>.graphql`.
    pub fn scenarios(self) -> &'static [(&'static str, &'static str)] {
        macro_rules! q {
            ($set:literal, $name:literal) => {
                (
                    $name,
                    include_str!(concat!("../../sets/", $set, "/queries/", $name, ".graphql")),
                )
            };
        }
        match self {
            Set::Fed => &[
                q!("fed", "query"),
                q!("fed", "deduplication"),
                q!("fed", "subscriptions"),
            ],
            Set::BigResponse => &[
                q!("big-response", "big-response"),
                q!("big-response", "long-lived-big-response"),
            ],
            Set::ManyPlans => &[q!("many-plans", "many-plans")],
            Set::Apollo => &[
                q!("apollo", "small"),
                q!("apollo", "small-delayed"),
                q!("apollo", "large-delayed"),
                q!("apollo", "chain"),
            ],
        }
    }
}
