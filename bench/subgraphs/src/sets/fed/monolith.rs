//! The monolith: one schema answering what the four subgraphs answer together.

use super::data::{AUTHOR_ID, Data, Product, Review, User};
use super::resolve::{Published, ReviewAdded, list, or_err, review_added};
use super::subgraphs::{AccountsUser, ProductsProduct, fixed_user_reviews};
use std::sync::Arc;

use crate::engine::{Args, Object, Service, Val};

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
