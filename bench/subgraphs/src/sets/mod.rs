//! The benchmark sets' resolvers and their endpoints (the sets' files are
//! graphfleet-bench-model's `sets`).

use graphfleet_bench_model::Set;

use crate::engine::{Endpoint, SchemaError, Service};

pub mod apollo;
pub mod big;
pub mod fed;
pub mod many;

fn service(set: Set, subgraph: &str) -> Option<Box<dyn Service>> {
    match set {
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
            Some(Box::new(big::BigService {
                nodes: big::nodes(),
                part,
            }))
        }
        Set::ManyPlans => Some(Box::new(many::ManyPlans)),
        Set::Apollo => match subgraph {
            "single" | "delayed" => Some(Box::new(apollo::SingleService)),
            _ => {
                let step = subgraph.strip_prefix("chain")?.parse().ok()?;
                Some(Box::new(apollo::ChainService { step }))
            }
        },
    }
}

fn monolith_service(set: Set) -> Box<dyn Service> {
    match set {
        Set::Fed => Box::new(fed::Monolith(fed::Data::load())),
        Set::BigResponse => Box::new(big::BigService {
            nodes: big::nodes(),
            part: big::Part::All,
        }),
        Set::ManyPlans => Box::new(many::ManyPlans),
        Set::Apollo => Box::new(apollo::Monolith),
    }
}

/// The subgraph endpoints of a set.
pub fn subgraph_endpoints(set: Set) -> Result<Vec<Endpoint>, SchemaError> {
    set.subgraphs()
        .iter()
        .filter_map(|def| {
            service(set, def.name).map(|svc| Endpoint::subgraph(def.name, def.sdl, svc))
        })
        .collect()
}

/// The monolith endpoint of a set: its API schema, resolved without federation.
pub fn monolith_endpoint(set: Set) -> Result<Endpoint, SchemaError> {
    Endpoint::monolith("graphql", set.supergraph(), monolith_service(set))
}
