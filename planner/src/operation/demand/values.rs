//! Scoring values: argument values (literal, or read from the request's variables) by
//! their definitions' `@cost`, and a list field's size from its slicing arguments.

use super::nodes::{CostError, Size, Slice};

use apollo_compiler::Name;
use apollo_compiler::ast::Value;
use apollo_compiler::response::{JsonMap, JsonValue};
use graphfleet_federation::Supergraph;
use graphfleet_federation::cost::InputValueCost;
use graphfleet_federation::meta::{TypeId, TypeKind};

pub(super) fn is_composite(sg: &Supergraph, ty: Option<TypeId>) -> bool {
    ty.is_some_and(|t| {
        matches!(
            sg.meta.ty(t).kind,
            TypeKind::Object | TypeKind::Interface | TypeKind::Union
        )
    })
}

pub(super) fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => i.try_to_i32().ok().map(f64::from),
        Value::Float(f) => f.try_to_f64().ok(),
        _ => None,
    }
}

pub(super) fn json_number(v: &JsonValue) -> Option<f64> {
    v.as_f64()
}

pub(super) fn reads_variables(v: &Value) -> bool {
    match v {
        Value::Variable(_) => true,
        Value::List(items) => items.iter().any(|i| reads_variables(i)),
        Value::Object(fields) => fields.iter().any(|(_, v)| reads_variables(v)),
        _ => false,
    }
}

/// A list size from slicing arguments; `variable` resolves a variable's number.
pub(super) fn slicing_size(
    size: &Size,
    variable: impl Fn(&Name) -> Option<f64>,
) -> Result<f64, CostError> {
    let Size::Slicing {
        field,
        given,
        default,
        fallback,
        require_one,
        names,
    } = size
    else {
        return Ok(0.0);
    };
    let (mut count, mut largest) = (0usize, None::<f64>);
    for slice in given {
        let n = match slice {
            Slice::Literal(n) => *n,
            Slice::Variable(v) => variable(v),
        };
        if let Some(n) = n {
            count += 1;
            largest = Some(largest.map_or(n, |m| m.max(n)));
        }
    }
    if count == 0 && default.is_some() {
        count = 1;
        largest = *default;
    }
    if *require_one && count != 1 {
        let list: Vec<&str> = names.iter().map(Name::as_str).collect();
        return Err(CostError(format!(
            "{field} needs exactly one of its slicing arguments ({}); the request gives {count}",
            list.join(", ")
        )));
    }
    Ok(largest.map_or(*fallback, |n| n.max(0.0)))
}

/// An argument value: from the document (variables resolved through the map) or
/// from a variable's JSON.
pub(super) enum Input<'v> {
    Ast(&'v Value, Option<&'v JsonMap>),
    Json(&'v JsonValue),
}

/// What one argument or input-field value costs (see the module docs).
pub(super) fn score(
    sg: &Supergraph,
    value: &Input,
    ty: Option<TypeId>,
    weight: Option<f64>,
) -> f64 {
    let input_object = ty.filter(|t| sg.meta.ty(*t).kind == TypeKind::InputObject);
    let leaf = || {
        weight
            .or_else(|| ty.and_then(|t| sg.cost.type_weight(t)))
            .unwrap_or(0.0)
    };
    let field_cost = |defs: &[InputValueCost], name: &str, v: Input| {
        defs.iter()
            .find(|d| d.name == name)
            .map_or(0.0, |d| score(sg, &v, d.ty, d.weight))
    };
    match value {
        Input::Ast(Value::Null, _) | Input::Json(JsonValue::Null) => 0.0,
        Input::Ast(Value::Variable(name), vars) => vars
            .and_then(|m| m.get(name.as_str()))
            .map_or(0.0, |j| score(sg, &Input::Json(j), ty, weight)),
        Input::Ast(Value::List(items), vars) => items
            .iter()
            .map(|i| score(sg, &Input::Ast(i, *vars), ty, weight))
            .sum(),
        Input::Json(JsonValue::Array(items)) => items
            .iter()
            .map(|i| score(sg, &Input::Json(i), ty, weight))
            .sum(),
        Input::Ast(Value::Object(fields), vars) => match input_object {
            Some(t) => {
                let defs = sg.cost.input_fields(t);
                let inner: f64 = fields
                    .iter()
                    .map(|(k, v)| field_cost(defs, k, Input::Ast(v, *vars)))
                    .sum();
                weight.unwrap_or(1.0) + inner
            }
            None => leaf(),
        },
        Input::Json(JsonValue::Object(fields)) => match input_object {
            Some(t) => {
                let defs = sg.cost.input_fields(t);
                let inner: f64 = fields
                    .iter()
                    .map(|(k, v)| field_cost(defs, k.as_str(), Input::Json(v)))
                    .sum();
                weight.unwrap_or(1.0) + inner
            }
            None => leaf(),
        },
        _ => leaf(),
    }
}
