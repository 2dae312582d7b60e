//! The benchmark sets: their committed SDL/supergraph files and resolvers.

use std::str::FromStr;
use std::time::Duration;

use crate::engine::{Endpoint, SchemaError, Service};

pub mod big;
pub mod fed;
pub mod many;

/// A benchmark set (a directory under `loadtest/sets/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Set {
    Fed,
    BigResponse,
    ManyPlans,
}

/// Every set, for listing and tests.
pub const ALL: [Set; 3] = [Set::Fed, Set::BigResponse, Set::ManyPlans];

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

impl Set {
    pub fn name(self) -> &'static str {
        match self {
            Set::Fed => "fed",
            Set::BigResponse => "big-response",
            Set::ManyPlans => "many-plans",
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
            SubgraphDef {
                intrinsic_delay: Some(Duration::from_millis(100)),
                ..sub("sub2", include_str!("../../sets/big-response/sub2.graphql"))
            },
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
        match self {
            Set::Fed => FED,
            Set::BigResponse => BIG,
            Set::ManyPlans => MANY,
        }
    }

    /// The committed supergraph (composed by `sets/compose.sh`).
    pub fn supergraph(self) -> &'static str {
        match self {
            Set::Fed => include_str!("../../sets/fed/supergraph.graphql"),
            Set::BigResponse => include_str!("../../sets/big-response/supergraph.graphql"),
            Set::ManyPlans => include_str!("../../sets/many-plans/supergraph.graphql"),
        }
    }

    fn service(self, subgraph: &str) -> Option<Box<dyn Service>> {
        match self {
            Set::Fed => {
                let data = fed::Data::load();
                Some(match subgraph {
                    "accounts" => Box::new(fed::AccountsService(data)),
                    "inventory" => Box::new(fed::InventoryService(data)),
                    "products" => Box::new(fed::ProductsService(data)),
                    "reviews" => Box::new(fed::ReviewsService(data)),
                    _ => return None,
                })
            }
            Set::BigResponse => {
                let part = match subgraph {
                    "sub0" => big::Part::Sub0,
                    "sub1" => big::Part::Sub1,
                    "sub2" => big::Part::Sub2,
                    _ => return None,
                };
                Some(Box::new(big::BigService { nodes: big::nodes(), part }))
            }
            Set::ManyPlans => Some(Box::new(many::ManyPlans)),
        }
    }

    fn monolith_service(self) -> Box<dyn Service> {
        match self {
            Set::Fed => Box::new(fed::Monolith(fed::Data::load())),
            Set::BigResponse => Box::new(big::BigService {
                nodes: big::nodes(),
                part: big::Part::All,
            }),
            Set::ManyPlans => Box::new(many::ManyPlans),
        }
    }

    /// The subgraph endpoints of this set.
    pub fn subgraph_endpoints(self) -> Result<Vec<Endpoint>, SchemaError> {
        self.subgraphs()
            .iter()
            .filter_map(|def| {
                self.service(def.name)
                    .map(|svc| Endpoint::subgraph(def.name, def.sdl, svc))
            })
            .collect()
    }

    /// The monolith endpoint: the set's API schema, resolved without federation.
    pub fn monolith_endpoint(self) -> Result<Endpoint, SchemaError> {
        Endpoint::monolith("graphql", self.supergraph(), self.monolith_service())
    }
}
