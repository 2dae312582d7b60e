//! The published gateways-benchmark data (`sets/fed/data.json`) and its lookups.

use std::sync::Arc;

use serde::Deserialize;

use crate::engine::Args;

#[derive(Deserialize)]
pub(super) struct User {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) username: String,
    pub(super) birthday: i64,
}

#[derive(Deserialize)]
pub(super) struct Product {
    pub(super) upc: String,
    pub(super) name: String,
    pub(super) price: i64,
    pub(super) weight: i64,
}

#[derive(Deserialize)]
pub(super) struct Review {
    pub(super) id: String,
    pub(super) body: String,
    pub(super) product: ProductRef,
}

#[derive(Deserialize)]
pub(super) struct ProductRef {
    pub(super) upc: String,
}

#[derive(Deserialize)]
pub(super) struct Accounts {
    pub(super) users: Vec<User>,
}

#[derive(Deserialize)]
struct Products {
    products: Vec<Product>,
}

#[derive(Deserialize)]
struct Inventory {
    #[serde(rename = "inStock")]
    in_stock: std::collections::BTreeMap<String, bool>,
}

#[derive(Deserialize)]
struct Reviews {
    reviews: Vec<Review>,
}

/// The published data (`sets/fed/data.json`).
#[derive(Deserialize)]
pub struct Data {
    pub(super) accounts: Accounts,
    products: Products,
    inventory: Inventory,
    reviews: Reviews,
}

const DATA: &str = include_str!("../../../../sets/fed/data.json");

/// The author every review has, as the reviews subgraph provides it.
pub(super) const AUTHOR_ID: &str = "1";
pub(super) const AUTHOR_USERNAME: &str = "urigo";
/// What `User.reviews` returns for any user in the reviews subgraph.
pub(super) const USER_REVIEW_IDS: [&str; 2] = ["1", "2"];
/// `topProducts(first: Int = 5)`.
pub(super) const TOP_PRODUCTS_DEFAULT: i64 = 5;

impl Data {
    pub fn load() -> Arc<Self> {
        // The file is compiled in and covered by tests; failing here is a build defect.
        Arc::new(serde_json::from_str(DATA).expect("sets/fed/data.json matches the Data structs"))
    }

    pub(super) fn user(&self, id: &str) -> Option<&User> {
        self.accounts.users.iter().find(|u| u.id == id)
    }

    pub(super) fn product(&self, upc: &str) -> Option<&Product> {
        self.products.products.iter().find(|p| p.upc == upc)
    }

    pub(super) fn review(&self, id: &str) -> Option<&Review> {
        self.reviews.reviews.iter().find(|r| r.id == id)
    }

    pub(super) fn reviews_of(&self, upc: &str) -> impl Iterator<Item = &Review> {
        self.reviews
            .reviews
            .iter()
            .filter(move |r| r.product.upc == upc)
    }

    pub(super) fn in_stock(&self, upc: &str) -> Option<bool> {
        self.inventory.in_stock.get(upc).copied()
    }

    /// The review of subscription event `index`: review `index mod N` of data.json.
    pub(super) fn event_review(&self, index: u64) -> Option<&Review> {
        let n = self.reviews.reviews.len() as u64;
        let i = usize::try_from(index.checked_rem(n)?).ok()?;
        self.reviews.reviews.get(i)
    }

    pub(super) fn top_products(
        &self,
        args: &Args<'_>,
    ) -> Result<impl Iterator<Item = &Product>, String> {
        let first = args.int("first")?.unwrap_or(TOP_PRODUCTS_DEFAULT);
        let first =
            usize::try_from(first).map_err(|_| "\"first\" must not be negative.".to_owned())?;
        Ok(self.products.products.iter().take(first))
    }
}
