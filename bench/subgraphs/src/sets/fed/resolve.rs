//! Resolver helpers the four subgraphs and the monolith share: lists, entity lookups by a
//! scalar key, and the `reviewAdded` subscription's events.

use serde_json::Value;

use crate::engine::{Args, Object, Val, key_string, representation};

pub(super) fn list<'a, T: 'a>(items: impl Iterator<Item = T>, f: impl Fn(T) -> Val<'a>) -> Val<'a> {
    Val::List(items.map(f).collect())
}

pub(super) fn or_err<'a>(result: Result<Val<'a>, String>) -> Val<'a> {
    result.unwrap_or_else(Val::Err)
}

/// Looks up an entity by a scalar key, with GraphQL errors for malformed representations.
pub(super) fn entity<'a>(
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
pub(super) fn review_added(field: &str, args: &Args<'_>) -> Result<Option<u64>, String> {
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
pub(super) struct ReviewAdded<F>(pub(super) F);

/// A subscription event's review: `publishedAt` is when the event was made (ms since the
/// Unix epoch, for end-to-end latency measurements); everything else is the review's.
/// Elsewhere `publishedAt` is null.
pub(super) struct Published<'a> {
    review: Box<dyn Object<'a> + 'a>,
    at_ms: f64,
}

impl<'a> Published<'a> {
    pub(super) fn val(review: Val<'a>) -> Val<'a> {
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
