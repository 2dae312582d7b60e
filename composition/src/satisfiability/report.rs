//! The error message for an unsatisfiable field: an example query and Apollo-style reasons.

use std::collections::HashSet;

use super::exploration::Parent;
use super::graph::{Node, QueryGraph, State};

impl QueryGraph<'_> {
    /// Apollo-style reasons for an unresolvable field, and the subgraphs they name.
    pub(super) fn explain(
        &self,
        tname: &str,
        closure: &[Node],
        field: &str,
    ) -> (String, Vec<String>) {
        let mut out = String::new();
        let mut named: Vec<String> = Vec::new();
        let in_closure: HashSet<usize> = closure.iter().map(|n| self.real(n.1)).collect();
        let mut listed: HashSet<(String, usize)> = HashSet::new();
        for n in closure {
            if !listed.insert((n.0.clone(), self.real(n.1))) {
                continue;
            }
            let from = &self.subgraph(n.1).name;
            let coord = format!("{}.{field}", n.0);
            if n.0 != tname {
                // Reached through an `@interfaceObject`; other jumps from there are not named.
                if self.is_interface_object(n) {
                    out.push_str(&format!("- from subgraph \"{from}\": cannot find implementation type \"{tname}\" (supergraph interface \"{}\" is declared with @interfaceObject in \"{from}\").\n", n.0));
                    if !named.contains(from) {
                        named.push(from.clone());
                    }
                }
                continue;
            }
            let mut reasons = vec![if self.has_local(n, field) {
                format!("cannot satisfy @require conditions on field \"{coord}\".")
            } else if self
                .external
                .contains(&(n.0.clone(), n.1, field.to_owned()))
            {
                format!("field \"{coord}\" is not resolvable because marked @external.")
            } else {
                format!("cannot find field \"{coord}\".")
            }];
            reasons.extend(self.move_reasons(n, field, &in_closure));
            if reasons.len() == 1 {
                out.push_str(&format!("- from subgraph \"{from}\": {}\n", reasons[0]));
            } else {
                out.push_str(&format!("- from subgraph \"{from}\":\n"));
                for r in reasons {
                    out.push_str(&format!("  - {r}\n"));
                }
            }
            if !named.contains(from) {
                named.push(from.clone());
            }
        }
        (out.trim_end().to_owned(), named)
    }

    /// Why the query cannot move from `n` to the other subgraphs that have the field.
    pub(super) fn move_reasons(
        &self,
        n: &Node,
        field: &str,
        in_closure: &HashSet<usize>,
    ) -> Vec<String> {
        let t = &n.0;
        let from = &self.subgraph(n.1).name;
        let mut out = Vec::new();
        for j in 0..self.input.subgraphs.len() {
            let target = (t.clone(), j);
            if in_closure.contains(&j) || !self.has_local(&target, field) {
                continue;
            }
            let to = &self.subgraph(j).name;
            let keys = self
                .keys
                .get(&target)
                .map(Vec::as_slice)
                .unwrap_or_default();
            if !self.any_key.contains(&target) {
                out.push(format!("cannot move to subgraph \"{to}\", which has field \"{t}.{field}\", because type \"{t}\" has no @key defined in subgraph \"{to}\"."));
            } else if keys.is_empty() {
                out.push(format!("cannot move to subgraph \"{to}\", which has field \"{t}.{field}\", because none of the @key defined on type \"{t}\" in subgraph \"{to}\" are resolvable (they are all declared with their \"resolvable\" argument set to false)."));
            } else {
                for (k, _) in keys {
                    out.push(format!("cannot move to subgraph \"{to}\" using @key(fields: \"{k}\") of \"{t}\", the key field(s) cannot be resolved from subgraph \"{from}\"."));
                }
            }
        }
        out
    }
}

/// The query that reaches `state` and selects `field`, indented like Apollo's messages.
pub(super) fn example_query(parents: &Parent, state: &State, field: &str) -> String {
    let mut path = vec![field.to_owned()];
    let mut cur = state.clone();
    let mut guard = 0;
    while let Some((prev, via)) = parents.get(&cur) {
        path.push(via.clone());
        cur = prev.clone();
        guard += 1;
        if guard > 1000 {
            break;
        }
    }
    path.reverse();
    let mut out = String::from("{\n");
    for (depth, step) in path.iter().enumerate() {
        let indent = "  ".repeat(depth + 1);
        if depth + 1 == path.len() {
            out.push_str(&format!("{indent}{step}\n"));
        } else {
            out.push_str(&format!("{indent}{step} {{\n"));
        }
    }
    for depth in (0..path.len().saturating_sub(1)).rev() {
        out.push_str(&format!("{}}}\n", "  ".repeat(depth + 1)));
    }
    out.push('}');
    out
}
