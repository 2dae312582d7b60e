//! Merging object and interface types: their implements, fields and the hints about
//! fields or keys only some subgraphs have.

use apollo_compiler::schema::ExtendedType;
use indexmap::IndexSet;

use super::accessors::{implements_of, type_fields};
use super::common_parts::type_with_common_parts;
use super::field_sources::{FieldSource, field_sources};
use super::fields::merge_field;
use super::overrides::resolve_overrides;
use super::state::{Merger, TypeSource};
use crate::errors::{codes, subgraphs_phrase};
use crate::model::{Kind, MType};

/// An object or interface (an `@interfaceObject` counts as one): the fields of all its
/// subgraphs; `None` after an error or when no field is left.
pub(super) fn merge_object_or_interface(
    ctx: &mut Merger<'_>,
    name: &str,
    kind: Kind,
    sources: &[TypeSource<'_>],
) -> Option<MType> {
    if kind == Kind::Interface
        && sources
            .iter()
            .all(|s| matches!(s.ty, ExtendedType::Object(_)))
    {
        let names: Vec<&str> = sources.iter().map(|s| ctx.sg(s.sg).name.as_str()).collect();
        ctx.sink.error_in(
            codes::INTERFACE_OBJECT_USAGE_ERROR,
            format!(
                "Type \"{name}\" is declared with @interfaceObject in all the subgraphs in which it is defined (it is defined in {} but should be defined as an interface in at least one subgraph)",
                subgraphs_phrase(&names)
            ),
            &names,
        );
        return None;
    }
    let mut t = type_with_common_parts(ctx, name, sources);
    for src in sources {
        let sg = ctx.sg(src.sg);
        for i in implements_of(src.ty) {
            let iface = sg.canonical(i).to_owned();
            if !t.implements.contains(&iface) {
                t.implements.push(iface.clone());
            }
            t.join_implements.push((sg.graph.clone(), iface));
        }
    }
    let is_query = name == "Query";
    let type_sources = if is_query {
        ctx.input.subgraphs.len()
    } else {
        sources.len()
    };
    let mut names: IndexSet<&str> = IndexSet::new();
    for src in sources {
        if let Some(fields) = type_fields(src.ty) {
            names.extend(fields.keys().map(|n| n.as_str()));
        }
    }
    let value_object = kind == Kind::Object
        && !is_entity(ctx, name, sources)
        && !matches!(name, "Query" | "Mutation" | "Subscription");
    for fname in names {
        if is_query && (fname == "_service" || fname == "_entities") {
            continue;
        }
        let mut srcs = field_sources(ctx, name, kind, sources, fname);
        resolve_overrides(ctx, name, fname, &mut srcs);
        if srcs.is_empty() {
            continue;
        }
        if kind == Kind::Interface {
            value_interface_field_hint(ctx, name, fname, sources, &srcs);
        }
        // Subgraphs whose type has only @external fields do not count (Apollo).
        let lacking = sources.iter().any(|s| {
            !srcs.iter().any(|f| f.sg == s.sg)
                && type_fields(s.ty).is_some_and(|fs| {
                    fs.keys().any(|f| {
                        !ctx.input.infos[s.sg]
                            .external
                            .contains(&(s.local.to_owned(), f.to_string()))
                    })
                })
        });
        if value_object && lacking {
            let (have, missing) = have_and_missing(ctx, sources, &srcs);
            ctx.sink.hint(
                codes::INCONSISTENT_OBJECT_VALUE_TYPE_FIELD,
                format!(
                    "Field \"{name}.{fname}\" of non-entity object type \"{name}\" is defined in some but not all subgraphs that define \"{name}\": \"{name}.{fname}\" is defined in {} but not in {}.",
                    subgraphs_phrase(&have),
                    subgraphs_phrase(&missing)
                ),
            );
        }
        if let Some(f) = merge_field(ctx, name, kind, fname, srcs, type_sources) {
            t.fields.insert(fname.to_owned(), f);
        }
    }
    if t.fields.is_empty() {
        return None;
    }
    Some(t)
}

/// Whether an object type is an entity (has a `@key`) in some subgraph; hints when it is
/// not in all of them.
fn is_entity(ctx: &mut Merger<'_>, name: &str, sources: &[TypeSource<'_>]) -> bool {
    let (keyed, plain): (Vec<&TypeSource<'_>>, Vec<&TypeSource<'_>>) =
        sources.iter().partition(|s| {
            ctx.input.infos[s.sg]
                .keys
                .get(s.local)
                .is_some_and(|k| !k.is_empty())
        });
    if !keyed.is_empty() && !plain.is_empty() {
        let names = |v: &[&TypeSource<'_>]| -> Vec<&str> {
            v.iter().map(|s| ctx.sg(s.sg).name.as_str()).collect()
        };
        let message = format!(
            "Type \"{name}\" is declared as an entity (has a @key applied) in some but not all defining subgraphs: it has no @key in {} but has some @key in {}.",
            subgraphs_phrase(&names(&plain)),
            subgraphs_phrase(&names(&keyed))
        );
        ctx.sink.hint(codes::INCONSISTENT_ENTITY, message);
    }
    !keyed.is_empty()
}

/// The subgraphs of `sources` that have a field (its `srcs`) and those that do not.
fn have_and_missing<'c>(
    ctx: &Merger<'c>,
    sources: &[TypeSource<'_>],
    srcs: &[FieldSource<'_>],
) -> (Vec<&'c str>, Vec<&'c str>) {
    let have: Vec<&str> = srcs.iter().map(|s| ctx.sg(s.sg).name.as_str()).collect();
    let missing: Vec<&str> = sources
        .iter()
        .map(|s| ctx.sg(s.sg).name.as_str())
        .filter(|n| !have.contains(n))
        .collect();
    (have, missing)
}

/// A field of an interface without keys that only some of its subgraphs define.
fn value_interface_field_hint(
    ctx: &mut Merger<'_>,
    tname: &str,
    fname: &str,
    sources: &[TypeSource<'_>],
    srcs: &[FieldSource<'_>],
) {
    let plain = sources.iter().all(|s| {
        matches!(s.ty, ExtendedType::Interface(_))
            && ctx.input.infos[s.sg]
                .keys
                .get(s.local)
                .is_none_or(|k| k.is_empty())
    });
    if !plain || srcs.len() == sources.len() {
        return;
    }
    let have: Vec<&str> = srcs.iter().map(|s| ctx.sg(s.sg).name.as_str()).collect();
    let missing: Vec<&str> = sources
        .iter()
        .map(|s| ctx.sg(s.sg).name.as_str())
        .filter(|n| !have.contains(n))
        .collect();
    ctx.sink.hint(
        codes::INCONSISTENT_INTERFACE_VALUE_TYPE_FIELD,
        format!(
            "Field \"{tname}.{fname}\" of interface type \"{tname}\" is defined in some but not all subgraphs that define \"{tname}\": \"{tname}.{fname}\" is defined in {} but not in {}.",
            subgraphs_phrase(&have),
            subgraphs_phrase(&missing)
        ),
    );
}
