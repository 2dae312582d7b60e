//! The classic four subgraphs (accounts, inventory, products, reviews) with the
//! published gateways-benchmark data, and their monolith.
//! One module per job: `data` and `resolve` below the subgraphs and the monolith.

mod data;
mod monolith;
mod resolve;
mod subgraphs;

pub use data::Data;
pub use monolith::Monolith;
pub use subgraphs::{AccountsService, InventoryService, ProductsService, ReviewsService};
