//! Steps over the merged types that follow interfaces to their implementations.

use std::collections::HashSet;

use super::state::Merger;
use crate::errors::{codes, subgraphs_phrase};
use crate::model::{JoinField, Kind, MField, MType, Supergraph};

/// Fields an `@interfaceObject` contributes appear on every implementation of the interface.
pub(super) fn add_interface_object_fields(sup: &mut Supergraph) {
    let mut additions: Vec<(String, MField)> = Vec::new();
    for (iname, iface) in &sup.types {
        if iface.kind != Kind::Interface || !iface.join_types.iter().any(|j| j.interface_object) {
            continue;
        }
        let object_graphs: HashSet<&str> = iface
            .join_types
            .iter()
            .filter(|j| j.interface_object)
            .map(|j| j.graph.as_str())
            .collect();
        for (tname, t) in &sup.types {
            if t.kind != Kind::Object || !t.implements.contains(iname) {
                continue;
            }
            for (fname, f) in &iface.fields {
                if t.fields.contains_key(fname) {
                    continue;
                }
                let from_object = f.joins.as_ref().is_some_and(|js| {
                    js.iter().any(|j| {
                        j.graph
                            .as_deref()
                            .is_some_and(|g| object_graphs.contains(g))
                    })
                });
                if from_object {
                    let mut nf = f.clone();
                    nf.joins = Some(vec![JoinField::default()]);
                    additions.push((tname.clone(), nf));
                }
            }
        }
    }
    for (tname, f) in additions {
        if let Some(t) = sup.types.get_mut(&tname) {
            t.fields.insert(f.name.clone(), f);
        }
    }
}

/// Every object type has the fields of the interfaces it implements.
pub(super) fn check_implementations(ctx: &mut Merger<'_>, sup: &Supergraph) {
    for t in sup.types.values() {
        if t.kind != Kind::Object && t.kind != Kind::Interface {
            continue;
        }
        for iname in &t.implements {
            let Some(iface) = sup.types.get(iname) else {
                continue;
            };
            for fname in iface.fields.keys() {
                if t.fields.contains_key(fname) {
                    continue;
                }
                let declared: Vec<&str> = graphs_of_field(ctx, iface, fname);
                let implementing: Vec<&str> = t
                    .join_implements
                    .iter()
                    .filter(|(_, i)| i == iname)
                    .filter_map(|(g, _)| ctx.input.subgraphs.iter().find(|s| &s.graph == g))
                    .map(|s| s.name.as_str())
                    .collect();
                ctx.sink.error_in(
                    codes::INTERFACE_FIELD_NO_IMPLEM,
                    format!(
                        "Interface field \"{iname}.{fname}\" is declared in {} but type \"{}\", which implements \"{iname}\" only in {} does not have field \"{fname}\".",
                        subgraphs_phrase(&declared),
                        t.name,
                        subgraphs_phrase(&implementing)
                    ),
                    &implementing,
                );
            }
        }
    }
}

/// The subgraphs defining a field: its `@join__field` graphs, else its type's.
fn graphs_of_field<'a>(ctx: &Merger<'a>, t: &MType, fname: &str) -> Vec<&'a str> {
    let graphs: Vec<String> = match t.fields.get(fname).and_then(|f| f.joins.as_ref()) {
        Some(js) => js.iter().filter_map(|j| j.graph.clone()).collect(),
        None => t.join_types.iter().map(|j| j.graph.clone()).collect(),
    };
    ctx.input
        .subgraphs
        .iter()
        .filter(|s| graphs.contains(&s.graph))
        .map(|s| s.name.as_str())
        .collect()
}
