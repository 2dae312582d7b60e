//! The four subgraphs: accounts, inventory, products and reviews.

use super::data::{AUTHOR_ID, AUTHOR_USERNAME, Data, Product, Review, USER_REVIEW_IDS, User};
use super::resolve::{Published, ReviewAdded, entity, list, or_err, review_added};
use std::sync::Arc;

use serde_json::Value;

use crate::engine::{Args, Object, Service, Val};

// ---------------------------------------------------------------- accounts

pub struct AccountsService(pub Arc<Data>);

pub(super) struct AccountsUser<'a>(pub(super) &'a User);

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

pub(super) struct ProductsProduct<'a>(pub(super) &'a Product);

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

pub(super) fn fixed_user_reviews(data: &Data) -> impl Iterator<Item = &Review> {
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
