//! The classic four subgraphs (accounts, inventory, products, reviews) with the
//! published gateways-benchmark data, and their monolith.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::engine::{Args, Object, Service, Val, key_string, representation};

#[derive(Deserialize)]
pub struct User {
    id: String,
    name: String,
    username: String,
    birthday: i64,
}

#[derive(Deserialize)]
pub struct Product {
    upc: String,
    name: String,
    price: i64,
    weight: i64,
}

#[derive(Deserialize)]
pub struct Review {
    id: String,
    body: String,
    product: ProductRef,
}

#[derive(Deserialize)]
struct ProductRef {
    upc: String,
}

#[derive(Deserialize)]
struct Accounts {
    users: Vec<User>,
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
    accounts: Accounts,
    products: Products,
    inventory: Inventory,
    reviews: Reviews,
}

const DATA: &str = include_str!("../../sets/fed/data.json");

/// The author every review has, as the reviews subgraph provides it.
const AUTHOR_ID: &str = "1";
const AUTHOR_USERNAME: &str = "urigo";
/// What `User.reviews` returns for any user in the reviews subgraph.
const USER_REVIEW_IDS: [&str; 2] = ["1", "2"];
/// `topProducts(first: Int = 5)`.
const TOP_PRODUCTS_DEFAULT: i64 = 5;

impl Data {
    pub fn load() -> Arc<Self> {
        // The file is compiled in and covered by tests; failing here is a build defect.
        Arc::new(serde_json::from_str(DATA).expect("sets/fed/data.json matches the Data structs"))
    }

    fn user(&self, id: &str) -> Option<&User> {
        self.accounts.users.iter().find(|u| u.id == id)
    }

    fn product(&self, upc: &str) -> Option<&Product> {
        self.products.products.iter().find(|p| p.upc == upc)
    }

    fn review(&self, id: &str) -> Option<&Review> {
        self.reviews.reviews.iter().find(|r| r.id == id)
    }

    fn reviews_of(&self, upc: &str) -> impl Iterator<Item = &Review> {
        self.reviews
            .reviews
            .iter()
            .filter(move |r| r.product.upc == upc)
    }

    fn in_stock(&self, upc: &str) -> Option<bool> {
        self.inventory.in_stock.get(upc).copied()
    }

    /// The review of subscription event `index`: review `index mod N` of data.json.
    fn event_review(&self, index: u64) -> Option<&Review> {
        let n = self.reviews.reviews.len() as u64;
        let i = usize::try_from(index.checked_rem(n)?).ok()?;
        self.reviews.reviews.get(i)
    }

    fn top_products(&self, args: &Args<'_>) -> Result<impl Iterator<Item = &Product>, String> {
        let first = args.int("first")?.unwrap_or(TOP_PRODUCTS_DEFAULT);
        let first =
            usize::try_from(first).map_err(|_| "\"first\" must not be negative.".to_owned())?;
        Ok(self.products.products.iter().take(first))
    }
}

fn list<'a, T: 'a>(items: impl Iterator<Item = T>, f: impl Fn(T) -> Val<'a>) -> Val<'a> {
    Val::List(items.map(f).collect())
}

fn or_err<'a>(result: Result<Val<'a>, String>) -> Val<'a> {
    result.unwrap_or_else(Val::Err)
}

/// Looks up an entity by a scalar key, with GraphQL errors for malformed representations.
fn entity<'a>(
    rep: &Value,
    key: &str,
    resolve: impl FnOnce(&str, &str) -> Option<Val<'a>>,
) -> Val<'a> {
    let (typename, value) = match representation(rep, key) {
        Ok(found) => found,
        Err(e) => return Val::Err(e),
    };
    let Some(value) = key_string(value) else {
        return Val::Err(format!(
            "Key field \"{key}\" of {typename} must be a scalar."
        ));
    };
    resolve(typename, &value)
        .unwrap_or_else(|| Val::Err(format!("Unknown entity type {typename}.")))
}

/// `reviewAdded(limit: Int)`: the number of events before the stream completes.
fn review_added(field: &str, args: &Args<'_>) -> Result<Option<u64>, String> {
    if field != "reviewAdded" {
        return Err(format!("No subscription field \"{field}\" here."));
    }
    match args.int("limit")? {
        None => Ok(None),
        Some(limit) => u64::try_from(limit)
            .map(Some)
            .map_err(|_| format!("\"limit\" must not be negative, got {limit}.")),
    }
}

/// The `Subscription` root of one event: `reviewAdded` resolves to the event's review.
struct ReviewAdded<F>(F);

/// A subscription event's review: `publishedAt` is when the event was made (ms since the
/// Unix epoch, for end-to-end latency measurements); everything else is the review's.
/// Elsewhere `publishedAt` is null.
struct Published<'a> {
    review: Box<dyn Object<'a> + 'a>,
    at_ms: f64,
}

impl<'a> Published<'a> {
    fn val(review: Val<'a>) -> Val<'a> {
        let Val::Obj(review) = review else {
            return review;
        };
        let at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        Val::obj(Published { review, at_ms })
    }
}

impl<'a> Object<'a> for Published<'a> {
    fn typename(&self) -> &'a str {
        self.review.typename()
    }

    fn field(&self, name: &str, args: &Args<'_>) -> Val<'a> {
        match name {
            "publishedAt" => Val::Float(self.at_ms),
            _ => self.review.field(name, args),
        }
    }
}

impl<'a, F: Fn() -> Val<'a>> Object<'a> for ReviewAdded<F> {
    fn typename(&self) -> &'a str {
        "Subscription"
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        match name {
            "reviewAdded" => (self.0)(),
            _ => Val::Null,
        }
    }
}

// ---------------------------------------------------------------- accounts

pub struct AccountsService(pub Arc<Data>);

struct AccountsUser<'a>(&'a User);

impl<'a> Object<'a> for AccountsUser<'a> {
    fn typename(&self) -> &'a str {
        "User"
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        let u = self.0;
        match name {
            "id" => Val::Str(&u.id),
            "name" => Val::Str(&u.name),
            "username" => Val::Str(&u.username),
            "birthday" => Val::Int(u.birthday),
            _ => Val::Null,
        }
    }
}

struct AccountsQuery<'a>(&'a Data);

impl<'a> Object<'a> for AccountsQuery<'a> {
    fn typename(&self) -> &'a str {
        "Query"
    }

    fn field(&self, name: &str, args: &Args<'_>) -> Val<'a> {
        let data = self.0;
        let user = |u: Option<&'a User>| u.map_or(Val::Null, |u| Val::obj(AccountsUser(u)));
        match name {
            "me" => user(data.user(AUTHOR_ID)),
            "user" => or_err(
                args.string("id")
                    .map(|id| user(id.and_then(|id| data.user(&id)))),
            ),
            "users" => list(data.accounts.users.iter(), |u| Val::obj(AccountsUser(u))),
            _ => Val::Null,
        }
    }
}

impl Service for AccountsService {
    fn query(&self) -> Box<dyn Object<'_> + '_> {
        Box::new(AccountsQuery(&self.0))
    }

    fn entity(&self, rep: &Value) -> Val<'_> {
        entity(rep, "id", |typename, id| {
            (typename == "User").then(|| {
                self.0
                    .user(id)
                    .map_or(Val::Null, |u| Val::obj(AccountsUser(u)))
            })
        })
    }
}

// ---------------------------------------------------------------- inventory

pub struct InventoryService(pub Arc<Data>);

struct InventoryProduct<'a> {
    upc: &'a str,
    in_stock: bool,
}

impl<'a> Object<'a> for InventoryProduct<'a> {
    fn typename(&self) -> &'a str {
        "Product"
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        match name {
            "upc" => Val::Str(self.upc),
            "inStock" => Val::Bool(self.in_stock),
            // The published subgraph reads price and weight from its own empty copy
            // instead of the representation, so these are always null (see data.json).
            _ => Val::Null,
        }
    }
}

struct NoQuery;

impl<'a> Object<'a> for NoQuery {
    fn typename(&self) -> &'a str {
        "Query"
    }

    fn field(&self, _name: &str, _args: &Args<'_>) -> Val<'a> {
        Val::Null
    }
}

impl Service for InventoryService {
    fn query(&self) -> Box<dyn Object<'_> + '_> {
        Box::new(NoQuery)
    }

    fn entity(&self, rep: &Value) -> Val<'_> {
        entity(rep, "upc", |typename, upc| {
            (typename == "Product").then(|| {
                let found = self.0.product(upc).zip(self.0.in_stock(upc));
                found.map_or(Val::Null, |(p, in_stock)| {
                    Val::obj(InventoryProduct {
                        upc: &p.upc,
                        in_stock,
                    })
                })
            })
        })
    }
}

// ---------------------------------------------------------------- products

pub struct ProductsService(pub Arc<Data>);

struct ProductsProduct<'a>(&'a Product);

impl<'a> Object<'a> for ProductsProduct<'a> {
    fn typename(&self) -> &'a str {
        "Product"
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        let p = self.0;
        match name {
            "upc" => Val::Str(&p.upc),
            "name" => Val::Str(&p.name),
            "price" => Val::Int(p.price),
            "weight" => Val::Int(p.weight),
            _ => Val::Null,
        }
    }
}

struct ProductsQuery<'a>(&'a Data);

impl<'a> Object<'a> for ProductsQuery<'a> {
    fn typename(&self) -> &'a str {
        "Query"
    }

    fn field(&self, name: &str, args: &Args<'_>) -> Val<'a> {
        match name {
            "topProducts" => or_err(
                self.0
                    .top_products(args)
                    .map(|ps| list(ps, |p| Val::obj(ProductsProduct(p)))),
            ),
            _ => Val::Null,
        }
    }
}

impl Service for ProductsService {
    fn query(&self) -> Box<dyn Object<'_> + '_> {
        Box::new(ProductsQuery(&self.0))
    }

    fn entity(&self, rep: &Value) -> Val<'_> {
        entity(rep, "upc", |typename, upc| {
            (typename == "Product").then(|| {
                self.0
                    .product(upc)
                    .map_or(Val::Null, |p| Val::obj(ProductsProduct(p)))
            })
        })
    }
}

// ---------------------------------------------------------------- reviews

pub struct ReviewsService(pub Arc<Data>);

struct ReviewsReview<'a>(&'a Data, &'a Review);

fn review_list<'a>(data: &'a Data, reviews: impl Iterator<Item = &'a Review>) -> Val<'a> {
    list(reviews, |r| Val::obj(ReviewsReview(data, r)))
}

fn fixed_user_reviews(data: &Data) -> impl Iterator<Item = &Review> {
    USER_REVIEW_IDS.iter().filter_map(|id| data.review(id))
}

impl<'a> Object<'a> for ReviewsReview<'a> {
    fn typename(&self) -> &'a str {
        "Review"
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        let (data, r) = (self.0, self.1);
        match name {
            "id" => Val::Str(&r.id),
            "body" => Val::Str(&r.body),
            "author" => Val::obj(ReviewsUser {
                data,
                id: Val::Str(AUTHOR_ID),
                username: AUTHOR_USERNAME,
            }),
            "product" => Val::obj(ReviewsProduct(data, &r.product.upc)),
            _ => Val::Null,
        }
    }
}

struct ReviewsUser<'a> {
    data: &'a Data,
    id: Val<'a>,
    username: &'a str,
}

impl<'a> Object<'a> for ReviewsUser<'a> {
    fn typename(&self) -> &'a str {
        "User"
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        match name {
            "id" => match &self.id {
                Val::Str(s) => Val::Str(s),
                Val::String(s) => Val::String(s.clone()),
                _ => Val::Null,
            },
            "username" => Val::Str(self.username),
            "reviews" => review_list(self.data, fixed_user_reviews(self.data)),
            _ => Val::Null,
        }
    }
}

struct ReviewsProduct<'a>(&'a Data, &'a str);

impl<'a> Object<'a> for ReviewsProduct<'a> {
    fn typename(&self) -> &'a str {
        "Product"
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        match name {
            "upc" => Val::Str(self.1),
            "reviews" => review_list(self.0, self.0.reviews_of(self.1)),
            _ => Val::Null,
        }
    }
}

impl Service for ReviewsService {
    fn query(&self) -> Box<dyn Object<'_> + '_> {
        Box::new(NoQuery)
    }

    fn subscribe(&self, field: &str, args: &Args<'_>) -> Result<Option<u64>, String> {
        review_added(field, args)
    }

    fn event(&self, index: u64) -> Box<dyn Object<'_> + '_> {
        let data = &*self.0;
        Box::new(ReviewAdded(move || {
            Published::val(
                data.event_review(index)
                    .map_or(Val::Null, |r| Val::obj(ReviewsReview(data, r))),
            )
        }))
    }

    fn entity(&self, rep: &Value) -> Val<'_> {
        let data = &*self.0;
        let key = match rep.get("__typename").and_then(Value::as_str) {
            Some("Product") => "upc",
            _ => "id",
        };
        entity(rep, key, |typename, key| match typename {
            "Review" => Some(
                data.review(key)
                    .map_or(Val::Null, |r| Val::obj(ReviewsReview(data, r))),
            ),
            "Product" => Some(
                data.product(key)
                    .map_or(Val::Null, |p| Val::obj(ReviewsProduct(data, &p.upc))),
            ),
            // Any id resolves, as in the published subgraph.
            "User" => Some(Val::obj(ReviewsUser {
                data,
                id: Val::String(key.to_owned()),
                username: "user",
            })),
            _ => None,
        })
    }
}

// ---------------------------------------------------------------- monolith

pub struct Monolith(pub Arc<Data>);

struct MUser<'a>(&'a Data, &'a User);
struct MProduct<'a>(&'a Data, &'a Product);
struct MReview<'a>(&'a Data, &'a Review);

impl<'a> Object<'a> for MUser<'a> {
    fn typename(&self) -> &'a str {
        "User"
    }

    fn field(&self, name: &str, args: &Args<'_>) -> Val<'a> {
        match name {
            "reviews" => list(fixed_user_reviews(self.0), |r| Val::obj(MReview(self.0, r))),
            _ => AccountsUser(self.1).field(name, args),
        }
    }
}

impl<'a> Object<'a> for MProduct<'a> {
    fn typename(&self) -> &'a str {
        "Product"
    }

    fn field(&self, name: &str, args: &Args<'_>) -> Val<'a> {
        let (data, p) = (self.0, self.1);
        match name {
            "inStock" => data.in_stock(&p.upc).map_or(Val::Null, Val::Bool),
            // Matches the published inventory subgraph (see InventoryProduct).
            "shippingEstimate" => Val::Null,
            "reviews" => list(data.reviews_of(&p.upc), |r| Val::obj(MReview(data, r))),
            _ => ProductsProduct(p).field(name, args),
        }
    }
}

impl<'a> Object<'a> for MReview<'a> {
    fn typename(&self) -> &'a str {
        "Review"
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        let (data, r) = (self.0, self.1);
        match name {
            "id" => Val::Str(&r.id),
            "body" => Val::Str(&r.body),
            "author" => data
                .user(AUTHOR_ID)
                .map_or(Val::Null, |u| Val::obj(MUser(data, u))),
            "product" => data
                .product(&r.product.upc)
                .map_or(Val::Null, |p| Val::obj(MProduct(data, p))),
            _ => Val::Null,
        }
    }
}

struct MQuery<'a>(&'a Data);

impl<'a> Object<'a> for MQuery<'a> {
    fn typename(&self) -> &'a str {
        "Query"
    }

    fn field(&self, name: &str, args: &Args<'_>) -> Val<'a> {
        let data = self.0;
        let user = |u: Option<&'a User>| u.map_or(Val::Null, |u| Val::obj(MUser(data, u)));
        match name {
            "me" => user(data.user(AUTHOR_ID)),
            "user" => or_err(
                args.string("id")
                    .map(|id| user(id.and_then(|id| data.user(&id)))),
            ),
            "users" => list(data.accounts.users.iter(), |u| Val::obj(MUser(data, u))),
            "topProducts" => or_err(
                data.top_products(args)
                    .map(|ps| list(ps, |p| Val::obj(MProduct(data, p)))),
            ),
            _ => Val::Null,
        }
    }
}

impl Service for Monolith {
    fn query(&self) -> Box<dyn Object<'_> + '_> {
        Box::new(MQuery(&self.0))
    }

    fn subscribe(&self, field: &str, args: &Args<'_>) -> Result<Option<u64>, String> {
        review_added(field, args)
    }

    fn event(&self, index: u64) -> Box<dyn Object<'_> + '_> {
        let data = &*self.0;
        Box::new(ReviewAdded(move || {
            Published::val(
                data.event_review(index)
                    .map_or(Val::Null, |r| Val::obj(MReview(data, r))),
            )
        }))
    }
}
