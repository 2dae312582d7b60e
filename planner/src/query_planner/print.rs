//! Subgraph request text: a group's selection printed as the operation sent to its
//! subgraph, with the client variables it uses.

use super::groups::{Group, Planner, SubgraphSelection};
use super::plan::{ContextBatch, EntityFetch, Fetch};
use crate::operation::OpIr;
use apollo_compiler::Name;
use apollo_compiler::ast::{OperationType, Value};
use std::fmt::Write;

impl<'a> Planner<'a> {
    /// The fetch of `group`: its subgraph operation and what the executor needs, and
    /// the selection printed (what a batched request asks of this part's entities).
    pub(super) fn fetch_of(&self, group: &Group, ir: &OpIr) -> (Fetch, String) {
        let mut body = String::new();
        print_sel(&group.selection, &mut body);
        let mut used = Vec::new();
        collect_variables(&group.selection, &mut used);
        let mut defs = String::new();
        if group.is_entity {
            defs.push_str("$representations: [_Any!]!");
        }
        // Only the variables the selection kept (a field planned twice keeps its first).
        let contexts: Vec<_> = group
            .contexts
            .iter()
            .filter(|var| used.contains(&var.name))
            .cloned()
            .collect();
        for var in &contexts {
            let _ = write!(defs, ", ${}: {}", var.name, var.ty);
        }
        let (client_defs, variables) = client_variables(ir, &used);
        match (defs.is_empty(), client_defs.strip_prefix(", ")) {
            (true, Some(first)) => defs.push_str(first),
            _ => defs.push_str(&client_defs),
        }
        // A subscription's root fetch subscribes; the fetches completing each event
        // from other subgraphs are queries.
        let kind = match ir.kind() {
            OperationType::Mutation if group.parent.is_none() => "mutation",
            OperationType::Subscription if group.parent.is_none() => "subscription",
            _ => "query",
        };
        let defs = if defs.is_empty() {
            String::new()
        } else {
            format!("({defs})")
        };
        let operation = if group.is_entity {
            format!("{kind}{defs} {{ _entities(representations: $representations) {body} }}")
        } else {
            format!("{kind}{defs} {body}")
        };
        // Subgraphs reject an empty selection set (issue 14's invariants).
        debug_assert!(!operation.contains("{ }"), "empty selection: {operation}");
        let fetch = Fetch {
            subgraph: group.subgraph,
            subgraph_name: self.meta.subgraph(group.subgraph).name.clone(),
            operation,
            variables,
            merge_paths: group.merge_paths.clone(),
            entity: group.is_entity.then(|| EntityFetch {
                reps: group.representations.clone(),
                batch: (!contexts.is_empty()).then_some(ContextBatch {
                    kind,
                    client_defs,
                    selection: body.clone(),
                }),
                contexts,
                parts: Vec::new(),
            }),
            renames: Vec::new(),
            depends_on: Vec::new(),
            payloads: 0,
        };
        (fetch, body)
    }
}

/// The definitions (each after `, `) and names of the client variables in `used`, in
/// the operation's order.
pub(super) fn client_variables(ir: &OpIr, used: &[Name]) -> (String, Vec<Name>) {
    let mut defs = String::new();
    let mut names = Vec::new();
    for def in &ir.variables {
        if used.contains(&def.name) {
            let _ = write!(defs, ", ${}: {}", def.name, def.ty);
            // The default matters to the subgraph's validation too: a nullable
            // variable with one may stand where a non-null argument is expected.
            if let Some(default) = &def.default_value {
                let _ = write!(defs, " = {default}");
            }
            names.push(def.name.clone());
        }
    }
    (defs, names)
}

/// Whether `items` ask for nothing: only fragments that themselves ask for nothing
/// (every field in them dropped by a literal `@skip`/`@include`, or a type condition
/// with nothing left to fetch there). A subgraph rejects an empty selection set.
fn selects_nothing(items: &[SubgraphSelection]) -> bool {
    items
        .iter()
        .all(|i| matches!(i, SubgraphSelection::Fragment { sub, .. } if selects_nothing(sub)))
}

/// `items` as a GraphQL selection set.
pub(super) fn print_sel(items: &[SubgraphSelection], out: &mut String) {
    if selects_nothing(items) {
        // The object still has to be told from null.
        out.push_str("{ __typename }");
        return;
    }
    out.push('{');
    for item in items {
        if let SubgraphSelection::Fragment { sub, .. } = item
            && selects_nothing(sub)
        {
            continue;
        }
        out.push(' ');
        match item {
            SubgraphSelection::Field {
                key,
                name,
                args,
                sub,
            } => {
                if key != name {
                    let _ = write!(out, "{key}: ");
                }
                out.push_str(name);
                if !args.is_empty() {
                    out.push('(');
                    for (i, a) in args.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        let _ = write!(out, "{}: {}", a.name, a.value);
                    }
                    out.push(')');
                }
                if let Some(sub) = sub {
                    out.push(' ');
                    print_sel(sub, out);
                }
            }
            SubgraphSelection::Fragment {
                type_condition,
                sub,
            } => {
                let _ = write!(out, "... on {type_condition} ");
                print_sel(sub, out);
            }
        }
    }
    out.push_str(" }");
}

/// The variables `items` use, in first-use order.
fn collect_variables(items: &[SubgraphSelection], out: &mut Vec<Name>) {
    fn value(v: &Value, out: &mut Vec<Name>) {
        match v {
            Value::Variable(n) if !out.contains(n) => out.push(n.clone()),
            Value::List(items) => items.iter().for_each(|i| value(i, out)),
            Value::Object(fields) => fields.iter().for_each(|(_, v)| value(v, out)),
            _ => {}
        }
    }
    for item in items {
        match item {
            SubgraphSelection::Field { args, sub, .. } => {
                args.iter().for_each(|a| value(&a.value, out));
                if let Some(sub) = sub {
                    collect_variables(sub, out);
                }
            }
            SubgraphSelection::Fragment { sub, .. } => collect_variables(sub, out),
        }
    }
}
