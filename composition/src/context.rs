//! Federation 2.8 `@context` / `@fromContext` in one subgraph: context names, the
//! contextual arguments' selections, and what the supergraph's `contextArguments` carry.

use std::collections::HashMap;

use apollo_compiler::ast::Type;
use apollo_compiler::schema::ExtendedType;

use crate::errors::{ErrorSink, codes};
use crate::specs::FedDirective;
use crate::subgraph::{Coord, Subgraph, str_arg};

/// One argument whose value comes from a context (an element of `contextArguments`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextArg {
    /// Supergraph context name: `<subgraph>__<name>`.
    pub context: String,
    /// The argument's name (it is left out of the supergraph field).
    pub name: String,
    pub ty: String,
    /// The selection after `$name`, verbatim.
    pub selection: String,
}

/// Validates the subgraph's contexts; returns its contextual arguments per field.
pub fn analyse(sg: &Subgraph, sink: &mut ErrorSink) -> HashMap<Coord, Vec<ContextArg>> {
    let mut out: HashMap<Coord, Vec<ContextArg>> = HashMap::new();
    if sg.fed1 || sg.version.minor < 8 {
        return out;
    }
    let contexts = context_types(sg, sink);
    let mut types: Vec<_> = sg.schema.types.iter().collect();
    types.sort_by(|a, b| a.0.cmp(b.0));
    for (tname, ty) in types {
        let fields = match ty {
            ExtendedType::Object(o) => &o.fields,
            ExtendedType::Interface(i) => &i.fields,
            _ => continue,
        };
        let mut has_contextual = false;
        for (fname, field) in fields {
            for arg in &field.arguments {
                let Some(d) = sg
                    .applications(&arg.directives, FedDirective::FromContext)
                    .into_iter()
                    .next()
                else {
                    continue;
                };
                has_contextual = true;
                let location = format!("{tname}.{fname}({}:)", arg.name);
                let raw = str_arg(d, "field").unwrap_or("");
                let Some((name, selection)) = split_reference(raw) else {
                    sink.error(
                        codes::NO_CONTEXT_IN_SELECTION,
                        format!(
                            "[{}] @fromContext argument does not reference a context \"{raw}\".",
                            sg.name
                        ),
                        &sg.name,
                    );
                    continue;
                };
                let Some(set_on) = contexts.get(name) else {
                    sink.error(
                        codes::CONTEXT_NOT_SET,
                        format!(
                            "[{}] Context \"{name}\" is used at location \"{location}\" but is never set.",
                            sg.name
                        ),
                        &sg.name,
                    );
                    continue;
                };
                check_selection(sg, name, &location, selection, &arg.ty, set_on, sink);
                out.entry((tname.to_string(), fname.to_string()))
                    .or_default()
                    .push(ContextArg {
                        context: format!("{}__{name}", sg.name),
                        name: arg.name.to_string(),
                        ty: arg.ty.to_string(),
                        selection: selection.to_owned(),
                    });
            }
        }
        if has_contextual && matches!(ty, ExtendedType::Object(_)) && !has_resolvable_key(sg, ty) {
            sink.error(
                codes::CONTEXT_NO_RESOLVABLE_KEY,
                format!(
                    "[{}] Object \"{tname}\" has no resolvable key but has a field with a contextual argument.",
                    sg.name
                ),
                &sg.name,
            );
        }
    }
    out
}

/// Context name → the types that set it; invalid names are reported.
fn context_types(sg: &Subgraph, sink: &mut ErrorSink) -> HashMap<String, Vec<String>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    let mut types: Vec<_> = sg.schema.types.iter().collect();
    types.sort_by(|a, b| a.0.cmp(b.0));
    for (tname, ty) in types {
        let directives = match ty {
            ExtendedType::Object(o) => &o.directives,
            ExtendedType::Interface(i) => &i.directives,
            ExtendedType::Union(u) => &u.directives,
            _ => continue,
        };
        for d in sg.applications(directives, FedDirective::Context) {
            let Some(name) = str_arg(d, "name") else {
                continue;
            };
            let problem = if name.contains('_') {
                Some("may not contain an underscore.")
            } else if !is_alphanumeric_name(name) {
                Some("is invalid. It should have only alphanumeric characters.")
            } else {
                None
            };
            if let Some(p) = problem {
                sink.error(
                    codes::CONTEXT_NAME_INVALID,
                    format!("[{}] Context name \"{name}\" {p}", sg.name),
                    &sg.name,
                );
            }
            out.entry(name.to_owned())
                .or_default()
                .push(tname.to_string());
        }
    }
    out
}

fn is_alphanumeric_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric())
}

/// `"  $ctx { f }"` → `("ctx", " { f }")`; `None` when no context is referenced.
fn split_reference(raw: &str) -> Option<(&str, &str)> {
    let rest = raw.trim_start().strip_prefix('$')?;
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| rest.split_at(end))
}

fn has_resolvable_key(sg: &Subgraph, ty: &ExtendedType) -> bool {
    let ExtendedType::Object(o) = ty else {
        return true;
    };
    sg.applications(&o.directives, FedDirective::Key)
        .iter()
        .any(|k| {
            !matches!(
                k.specified_argument_by_name("resolvable")
                    .map(|v| v.as_ref()),
                Some(apollo_compiler::ast::Value::Boolean(false))
            )
        })
}

/// Checks the simple `{ field }` form against every type setting the context; other
/// forms (fragments, nested selections) are accepted unchecked.
fn check_selection(
    sg: &Subgraph,
    context: &str,
    location: &str,
    selection: &str,
    arg_ty: &Type,
    set_on: &[String],
    sink: &mut ErrorSink,
) {
    let Some(field) = simple_field(selection) else {
        return;
    };
    for tname in set_on {
        let fields = match sg.schema.types.get(tname.as_str()) {
            Some(ExtendedType::Object(o)) => &o.fields,
            Some(ExtendedType::Interface(i)) => &i.fields,
            _ => continue,
        };
        let Some(def) = fields.get(field) else {
            sink.error(
                codes::CONTEXT_INVALID_SELECTION,
                format!(
                    "[{}] Context \"{context}\" is used in \"{location}\" but the selection is invalid for type {tname}. Error: Cannot query field \"{field}\" on type \"{tname}\".",
                    sg.name
                ),
                &sg.name,
            );
            return;
        };
        // The value is read from an ancestor that may not be there: @apollo/composition
        // takes the selection as nullable, so only a nullable argument accepts it.
        let selected = match &def.ty {
            Type::NonNullNamed(n) => Type::Named(n.clone()),
            Type::NonNullList(inner) => Type::List(inner.clone()),
            nullable => nullable.clone(),
        };
        if !assignable(&selected, arg_ty) {
            sink.error(
                codes::CONTEXT_INVALID_SELECTION,
                format!(
                    "[{}] Context \"{context}\" is used in \"{location}\" but the selection is invalid: the type of the selection \"{selected}\" does not match the expected type \"{arg_ty}\"",
                    sg.name
                ),
                &sg.name,
            );
            return;
        }
    }
}

/// `" { name }"` → `name`; anything richer → `None`.
fn simple_field(selection: &str) -> Option<&str> {
    let inner = selection
        .trim()
        .strip_prefix('{')?
        .strip_suffix('}')?
        .trim();
    let ok = !inner.is_empty()
        && inner.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some(inner)
}

/// Whether a value of type `from` can be passed where `to` is expected.
fn assignable(from: &Type, to: &Type) -> bool {
    match (from, to) {
        (Type::NonNullNamed(a), Type::NonNullNamed(b) | Type::Named(b))
        | (Type::Named(a), Type::Named(b)) => a == b,
        (Type::NonNullList(a), Type::NonNullList(b) | Type::List(b))
        | (Type::List(a), Type::List(b)) => assignable(a, b),
        _ => false,
    }
}
