//! Satisfiability: every supergraph field must be resolvable wherever a query can reach
//! its parent type.
//!
//! This is an approximation of Apollo's query-graph check. Nodes are (type, subgraph)
//! pairs. A query state is a type with the set of subgraphs the query may be in there
//! (its options): the root types start in every subgraph; a field leads to its return
//! type in the subgraphs that can resolve it, a type condition to the object types the
//! options know. From each option, key edges jump from (T, A) to (T, B) when B has a
//! resolvable `@key` whose top-level fields A, or the nodes of T already reached from
//! A, resolve (or, for an object implementing an
//! `@interfaceObject` interface, to the interface object). In every state, each
//! supergraph field of the type must be resolvable in one of those jump closures, with
//! that subgraph's `@requires` fields resolvable the same way; otherwise one error names
//! the failing field and every subgraph of the closure, as Apollo does per query state.
//!
//! Limits: key fields are checked at the top level only (nested key selections are
//! assumed available when their parent field is); a `@provides` is scoped to the
//! providing field (through a virtual view of the subgraph) only for the top-level
//! fields of a plain selection on an object type, other provided fields count as
//! resolvable in that subgraph everywhere; type conditions from an `@interfaceObject`
//! are not followed; shareable-but-different `@override` labels are treated as fully
//! migrated; `@fromContext` fields are assumed reachable. Where the model is unsure it
//! assumes the field is reachable, so it may miss errors Apollo reports but does not
//! invent ones Apollo would not.
//!
//! [`check`] builds the query graph (`graph`), explores the states the root types reach
//! (`exploration`), checks every field of each state (`resolution`, over the key jumps
//! of `jumps`) and words each failure (`report`).

mod exploration;
mod graph;
mod jumps;
mod report;
mod resolution;

use self::graph::QueryGraph;
use self::report::example_query;
use crate::errors::{ErrorSink, codes};
use crate::merge::Input;
use crate::model::{Kind, Supergraph};

pub fn check(input: &Input<'_>, sup: &Supergraph, sink: &mut ErrorSink) {
    let graph = QueryGraph::build(input, sup);
    let (states, parents) = graph.explore();
    for state in &states {
        let Some(t) = sup.types.get(&state.0) else {
            continue;
        };
        if t.kind != Kind::Object && t.kind != Kind::Interface {
            continue;
        }
        let closure = graph.state_closure(state);
        for fname in t.fields.keys() {
            if graph.resolving(state, &closure, fname).is_some() {
                continue;
            }
            let query = example_query(&parents, state, fname);
            let (reasons, named) = graph.explain(&state.0, &closure, fname);
            let names: Vec<&str> = named.iter().map(String::as_str).collect();
            sink.error_in(
                codes::SATISFIABILITY_ERROR,
                format!(
                    "The following supergraph API query:\n{query}\ncannot be satisfied by the subgraphs because:\n{reasons}"
                ),
                &names,
            );
        }
    }
}
