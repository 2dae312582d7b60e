//! Merging the subgraphs' types into one supergraph model.
//!
//! [`merge`] drives it: group the subgraphs' types by name, merge each (in order of first
//! appearance) by its kind, then the steps over the merged types (interface
//! implementations), and last the supergraph's graphs, roots, feature links and
//! directive definitions.
//!
//! Modules depend one way, from the kind mergers (`objects`, `unions`, `enums`,
//! `inputs`) down through `fields`, `input_values`, `common_parts`, `join`, `overrides`
//! and `field_sources` to `state`, `relations`, `carried` and `accessors`.

mod accessors;
mod carried;
mod common_parts;
mod enums;
mod executable_directives;
mod field_sources;
mod fields;
mod implementations;
mod input_values;
mod inputs;
mod join;
mod links;
mod objects;
mod overrides;
mod relations;
mod state;
mod unions;

use std::collections::HashMap;

use indexmap::IndexMap;

use self::accessors::kind_of;
use self::carried::CarriedDirectives;
pub(crate) use self::carried::nested_strings;
use self::common_parts::type_with_common_parts;
use self::enums::merge_enum;
use self::executable_directives::executable_directives;
use self::implementations::{add_interface_object_fields, check_implementations};
use self::inputs::merge_input;
use self::links::{composed_directives, feature_links};
use self::objects::merge_object_or_interface;
use self::relations::Relations;
pub use self::state::Input;
use self::state::{Merger, TypeSource};
use self::unions::merge_union;
use crate::errors::{ErrorSink, codes};
use crate::model::{JoinType, Kind, Supergraph};
use crate::specs;

pub fn merge(input: &Input<'_>, sink: &mut ErrorSink) -> Supergraph {
    let mut ctx = Merger {
        input,
        sink,
        relations: Relations::collect(input.subgraphs),
        carried: CarriedDirectives::default(),
    };
    let types = group_types(&mut ctx);
    let mut sup = Supergraph::default();
    for (name, (kind, sources)) in &types {
        let merged = match kind {
            Kind::Object | Kind::Interface => {
                merge_object_or_interface(&mut ctx, name, *kind, sources)
            }
            Kind::Union => merge_union(&mut ctx, name, sources),
            Kind::Enum => merge_enum(&mut ctx, name, sources),
            Kind::Input => merge_input(&mut ctx, name, sources),
            Kind::Scalar => Some(type_with_common_parts(&mut ctx, name, sources)),
        };
        if let Some(t) = merged {
            sup.types.insert(name.clone(), t);
        }
    }
    add_interface_object_fields(&mut sup);
    check_implementations(&mut ctx, &sup);
    graphs_and_roots(&mut ctx, &mut sup);
    feature_links(&mut ctx, &mut sup);
    composed_directives(&mut ctx, &mut sup);
    executable_directives(&mut ctx, &mut sup);
    sup
}

/// Each supergraph type's kind and its definitions in the subgraphs.
type TypesByName<'a> = IndexMap<String, (Kind, Vec<TypeSource<'a>>)>;

/// Types by canonical name, in order of first appearance; kinds must agree.
fn group_types<'a>(ctx: &mut Merger<'a>) -> TypesByName<'a> {
    let mut groups: TypesByName<'a> = IndexMap::new();
    let mut kinds: HashMap<String, Vec<(Kind, usize)>> = HashMap::new();
    for (i, sg) in ctx.input.subgraphs.iter().enumerate() {
        for (local, ty) in &sg.schema.types {
            if ty.is_built_in() || sg.is_internal_type(local) {
                continue;
            }
            let name = sg.canonical(local).to_owned();
            let kind = kind_of(sg, ty);
            kinds.entry(name.clone()).or_default().push((kind, i));
            let entry = groups.entry(name).or_insert((kind, Vec::new()));
            entry.1.push(TypeSource { sg: i, local, ty });
        }
    }
    let mut mismatched = Vec::new();
    for (name, (kind, _)) in &groups {
        let list = &kinds[name];
        if list.iter().any(|(k, _)| k != kind) {
            let parts: Vec<String> = list
                .iter()
                .map(|(k, i)| {
                    format!(
                        "{} in subgraph \"{}\"",
                        k.describe(),
                        ctx.input.subgraphs[*i].name
                    )
                })
                .collect();
            let sgs: Vec<&str> = list
                .iter()
                .map(|(_, i)| ctx.input.subgraphs[*i].name.as_str())
                .collect();
            ctx.sink.error_in(
                codes::TYPE_KIND_MISMATCH,
                format!(
                    "Type \"{name}\" has mismatched kind: it is defined as {}",
                    parts.join(" but ")
                ),
                &sgs,
            );
            mismatched.push(name.clone());
        }
    }
    for name in mismatched {
        groups.shift_remove(&name);
    }
    groups
}

/// The join version, `join__Graph` values and root types; the query type is joined to
/// every subgraph.
fn graphs_and_roots(ctx: &mut Merger<'_>, sup: &mut Supergraph) {
    let subgraphs = ctx.input.subgraphs;
    let max_minor = subgraphs
        .iter()
        .filter(|s| !s.fed1)
        .map(|s| s.version.minor)
        .max()
        .unwrap_or(0);
    sup.join_version = specs::join_version(max_minor);
    sup.graphs = subgraphs
        .iter()
        .map(|s| (s.graph.clone(), s.name.clone(), s.url.clone()))
        .collect();
    if let Some(q) = sup.types.get_mut("Query") {
        let mut ordered = Vec::new();
        for sg in subgraphs {
            let existing: Vec<JoinType> = q
                .join_types
                .iter()
                .filter(|j| j.graph == sg.graph)
                .cloned()
                .collect();
            if existing.is_empty() {
                ordered.push(JoinType {
                    graph: sg.graph.clone(),
                    resolvable: true,
                    ..JoinType::default()
                });
            } else {
                ordered.extend(existing);
            }
        }
        q.join_types = ordered;
    } else if ctx.sink.errors.is_empty() {
        // Otherwise the query type was dropped because of an error already reported.
        ctx.sink.error_in(
            codes::NO_QUERIES,
            "No queries found in any subgraph: a supergraph must have a query root type."
                .to_owned(),
            &[],
        );
    }
    for op in ["Query", "Mutation", "Subscription"] {
        if sup.types.contains_key(op) {
            sup.roots.push((op, op.to_owned()));
        }
    }
}
