//! The benchmark sets: their committed SDL/supergraph files and resolvers.

use std::str::FromStr;
use std::time::Duration;

use crate::engine::{Endpoint, SchemaError, Service};

pub mod fed;

/// A benchmark set (a directory under `loadtest/sets/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Set {
    Fed,
}

/// Every set, for listing and tests.
pub const ALL: [Set; 1] = [Set::Fed];

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
        match self {
            Set::Fed => FED,
        }
    }

    /// The committed supergraph (composed by `sets/compose.sh`).
    pub fn supergraph(self) -> &'static str {
        match self {
            Set::Fed => include_str!("../../sets/fed/supergraph.graphql"),
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
        }
    }

    fn monolith_service(self) -> Box<dyn Service> {
        match self {
            Set::Fed => Box::new(fed::Monolith(fed::Data::load())),
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
