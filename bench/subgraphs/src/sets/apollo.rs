//! The Apollo Router launch scenarios (seed 004): a one-field query, the same
//! against a subgraph with a 40 ms latency, a 100-field query, and a chain of
//! six subgraphs (40 ms each) linked by `@requires`, forcing six sequential fetches.

use serde_json::Value;

use crate::engine::{Args, Object, Service, Val, key_string, representation};

/// `s1` is "1"; each later step appends its number: `s3` = "1>2>3".
fn chain_value(step: usize) -> String {
    (1..=step)
        .map(|k| k.to_string())
        .collect::<Vec<_>>()
        .join(">")
}

/// `c<k>_<j>` → (k, j).
fn chain_field(name: &str) -> Option<(usize, i64)> {
    let (k, j) = name.strip_prefix('c')?.split_once('_')?;
    Some((k.parse().ok()?, j.parse().ok()?))
}

fn step_field(name: &str) -> Option<usize> {
    name.strip_prefix('s')?.parse().ok()
}

struct Large;

impl<'a> Object<'a> for Large {
    fn typename(&self) -> &'a str {
        "Large"
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        let Some(i) = name.strip_prefix('f').and_then(|n| n.parse::<i64>().ok()) else {
            return Val::Null;
        };
        // String, Int, Float, Boolean in turn, as in the SDL.
        match (i - 1) % 4 {
            0 => Val::String(format!("value {i}")),
            1 => Val::Int(i * 3),
            2 => Val::Float(i as f64 * 0.5),
            _ => Val::Bool(i % 2 == 0),
        }
    }
}

/// `single` (no latency) and `delayed` (40 ms) differ only in their root field names.
pub struct SingleService;

struct SingleQuery;

impl<'a> Object<'a> for SingleQuery {
    fn typename(&self) -> &'a str {
        "Query"
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        match name {
            "hello" | "helloDelayed" => Val::Str("world"),
            "large" | "largeDelayed" => Val::obj(Large),
            _ => Val::Null,
        }
    }
}

impl Service for SingleService {
    fn query(&self) -> Box<dyn Object<'_> + '_> {
        Box::new(SingleQuery)
    }
}

/// A `Step` as chain subgraph `step` sees it (`previous` = the required `s<step-1>`),
/// or the monolith's complete view (`step` = None).
struct Step {
    id: String,
    step: Option<usize>,
    previous: Option<String>,
}

impl<'a> Object<'a> for Step {
    fn typename(&self) -> &'a str {
        "Step"
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        if name == "id" {
            return Val::String(self.id.clone());
        }
        let k = step_field(name).or_else(|| chain_field(name).map(|(k, _)| k));
        let Some(k) = k else {
            return Val::Null;
        };
        // A chain subgraph computes its fields from the required previous value.
        if self.step.is_some_and(|step| step > 1) && self.previous.is_none() {
            return Val::Err(format!(
                "Representation is missing the required field s{}.",
                k.saturating_sub(1)
            ));
        }
        match (chain_field(name), &self.previous) {
            (Some((k, j)), _) => Val::Int(i64::try_from(k).unwrap_or(0) * 100 + j),
            (None, Some(previous)) if self.step == Some(k) => {
                Val::String(format!("{previous}>{k}"))
            }
            (None, _) => Val::String(chain_value(k)),
        }
    }
}

/// Chain subgraph number `step` (1–6).
pub struct ChainService {
    pub step: usize,
}

struct ChainQuery;

impl<'a> Object<'a> for ChainQuery {
    fn typename(&self) -> &'a str {
        "Query"
    }

    fn field(&self, name: &str, _args: &Args<'_>) -> Val<'a> {
        match name {
            "chain" => Val::obj(Step {
                id: "1".into(),
                step: Some(1),
                previous: None,
            }),
            _ => Val::Null,
        }
    }
}

impl Service for ChainService {
    fn query(&self) -> Box<dyn Object<'_> + '_> {
        Box::new(ChainQuery)
    }

    fn entity(&self, rep: &Value) -> Val<'_> {
        let (typename, id) = match representation(rep, "id") {
            Ok(found) => found,
            Err(e) => return Val::Err(e),
        };
        if typename != "Step" {
            return Val::Err(format!("Unknown entity type {typename}."));
        }
        let Some(id) = key_string(id) else {
            return Val::Err("Key field \"id\" of Step must be a scalar.".into());
        };
        let previous = rep
            .get(format!("s{}", self.step - 1).as_str())
            .and_then(Value::as_str)
            .map(str::to_owned);
        Val::obj(Step {
            id: id.into_owned(),
            step: Some(self.step),
            previous,
        })
    }
}

pub struct Monolith;

struct MonolithQuery;

impl<'a> Object<'a> for MonolithQuery {
    fn typename(&self) -> &'a str {
        "Query"
    }

    fn field(&self, name: &str, args: &Args<'_>) -> Val<'a> {
        match name {
            "chain" => Val::obj(Step {
                id: "1".into(),
                step: None,
                previous: None,
            }),
            _ => SingleQuery.field(name, args),
        }
    }
}

impl Service for Monolith {
    fn query(&self) -> Box<dyn Object<'_> + '_> {
        Box::new(MonolithQuery)
    }
}
