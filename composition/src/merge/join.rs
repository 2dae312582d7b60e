//! The `@join__type` and `@join__field` arguments of a merged type's and field's
//! subgraph sources.

use apollo_compiler::schema::ExtendedType;

use super::field_sources::FieldSource;
use super::state::{Merger, TypeSource};
use crate::model::{JoinField, JoinType, Kind};

/// One `@join__type` per `@key` of a subgraph's definition, or one without key.
pub(super) fn join_types(ctx: &Merger<'_>, src: &TypeSource<'_>, kind: Kind) -> Vec<JoinType> {
    let sg = ctx.sg(src.sg);
    let graph = sg.graph.clone();
    let keys = ctx.input.infos[src.sg].keys.get(src.local);
    let interface_object = matches!(src.ty, ExtendedType::Object(_)) && kind == Kind::Interface;
    match keys {
        Some(keys) if !keys.is_empty() => keys
            .iter()
            .map(|k| JoinType {
                graph: graph.clone(),
                key: Some(k.fields.clone()),
                extension: k.extension,
                resolvable: k.resolvable,
                resolvable_explicit: k.resolvable_explicit,
                interface_object,
            })
            .collect(),
        _ => vec![JoinType {
            graph,
            key: None,
            extension: false,
            resolvable: true,
            resolvable_explicit: false,
            interface_object,
        }],
    }
}

/// One `@join__field` per source, except an unused one overridden without label; each
/// names its own type when the sources' types differ.
pub(super) fn join_fields(
    ctx: &Merger<'_>,
    srcs: &[FieldSource<'_>],
    types_differ: bool,
) -> Vec<JoinField> {
    let mut out = Vec::new();
    for s in srcs {
        let (override_from, mut override_label) = match &s.overrides {
            Some((from, label)) => (Some(from.clone()), label.clone()),
            None => (None, None),
        };
        let mut used_overridden = false;
        match &s.overridden {
            Some(None) if s.used => used_overridden = true,
            Some(None) => continue,
            Some(Some(label)) => override_label = Some(label.clone()),
            None => {}
        }
        out.push(JoinField {
            graph: Some(ctx.sg(s.sg).graph.clone()),
            requires: s.requires.clone(),
            provides: s.provides.clone(),
            ty: types_differ.then(|| s.ty.to_string()),
            external: s.external,
            override_from,
            used_overridden,
            override_label,
            context_arguments: s.context_args.clone(),
        });
    }
    out
}
