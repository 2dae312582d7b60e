//! Where a subgraph may apply `@cost` and `@listSize`, as @apollo/composition checks
//! them: no `@cost` on interface fields; `@listSize` only on lists (or with sized
//! fields), with a non-negative assumed size, `Int` slicing arguments of the field and
//! sized fields that are list fields of its composite type.

use apollo_compiler::ast::{FieldDefinition, Type, Value};
use apollo_compiler::schema::ExtendedType;

use super::Subgraph;
use crate::errors::{ErrorSink, codes};
use crate::specs::FedDirective;

/// Reports each misplaced or malformed `@cost` / `@listSize` of `sg`.
pub(crate) fn check(sg: &Subgraph, sink: &mut ErrorSink) {
    let cost = sg.dir_name(FedDirective::Cost);
    let list_size = sg.dir_name(FedDirective::ListSize);
    if cost.is_empty() && list_size.is_empty() {
        return;
    }
    for (tname, ty) in &sg.schema.types {
        if ty.is_built_in() || sg.is_internal_type(tname) {
            continue;
        }
        let (fields, interface) = match ty {
            ExtendedType::Object(o) => (&o.fields, false),
            ExtendedType::Interface(i) => (&i.fields, true),
            _ => continue,
        };
        for (fname, field) in fields {
            let coordinate = format!("{tname}.{fname}");
            let has = |name: &str| !name.is_empty() && field.directives.get(name).is_some();
            if interface && has(cost) {
                let message = format!(
                    "[{}] @{cost} cannot be applied to interface \"{coordinate}\"",
                    sg.name
                );
                sink.error(codes::COST_APPLIED_TO_INTERFACE_FIELD, message, &sg.name);
            }
            if let Some(d) = field.directives.get(list_size).filter(|_| has(list_size)) {
                check_list_size(sg, sink, &coordinate, field, d);
            }
        }
    }
}

fn check_list_size(
    sg: &Subgraph,
    sink: &mut ErrorSink,
    coordinate: &str,
    field: &FieldDefinition,
    d: &apollo_compiler::ast::Directive,
) {
    let mut error = |code: &str, message: String| {
        sink.error(code, format!("[{}] {message}", sg.name), &sg.name);
    };
    let sized = strings(d, "sizedFields");
    if !field.ty.is_list() && sized.is_none() {
        error(
            codes::LIST_SIZE_APPLIED_TO_NON_LIST,
            format!("\"{coordinate}\" is not a list"),
        );
    }
    if let Some(Value::Int(n)) = d
        .specified_argument_by_name("assumedSize")
        .map(|v| v.as_ref())
        && n.try_to_i32().is_ok_and(|n| n < 0)
    {
        error(
            codes::LIST_SIZE_INVALID_ASSUMED_SIZE,
            format!("Assumed size of \"{coordinate}\" cannot be negative"),
        );
    }
    for name in strings(d, "slicingArguments").unwrap_or_default() {
        let arg = field.arguments.iter().find(|a| a.name == name.as_str());
        match arg.map(|a| &*a.ty) {
            None => error(
                codes::LIST_SIZE_INVALID_SLICING_ARGUMENT,
                format!("Slicing argument \"{name}\" is not an argument of \"{coordinate}\""),
            ),
            Some(Type::Named(t) | Type::NonNullNamed(t)) if t == "Int" => {}
            Some(_) => error(
                codes::LIST_SIZE_INVALID_SLICING_ARGUMENT,
                format!("Slicing argument \"{coordinate}({name}:)\" must be Int or Int!"),
            ),
        }
    }
    let Some(sized) = sized else { return };
    let target = field.ty.inner_named_type();
    let fields = match sg.schema.types.get(target) {
        Some(ExtendedType::Object(o)) => Some(&o.fields),
        Some(ExtendedType::Interface(i)) => Some(&i.fields),
        Some(ExtendedType::Union(_)) => None,
        _ => {
            let ty = &field.ty;
            error(
                codes::LIST_SIZE_INVALID_SIZED_FIELD,
                format!("Sized fields cannot be used because \"{ty}\" is not a composite type"),
            );
            return;
        }
    };
    for name in sized {
        match fields.and_then(|f| f.get(name.as_str())) {
            None => error(
                codes::LIST_SIZE_INVALID_SIZED_FIELD,
                format!("Sized field \"{name}\" is not a field on type \"{target}\""),
            ),
            Some(f) if !f.ty.is_list() => error(
                codes::LIST_SIZE_APPLIED_TO_NON_LIST,
                format!("Sized field \"{target}.{name}\" is not a list"),
            ),
            Some(_) => {}
        }
    }
}

/// A `[String!]` argument's strings; `None` when not given.
fn strings(d: &apollo_compiler::ast::Directive, arg: &str) -> Option<Vec<String>> {
    match d.specified_argument_by_name(arg).map(|v| v.as_ref()) {
        Some(Value::List(items)) => Some(
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect(),
        ),
        Some(Value::String(s)) => Some(vec![s.clone()]),
        _ => None,
    }
}
