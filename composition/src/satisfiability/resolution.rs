//! Whether, and by which nodes, a field is resolvable in a query state.

use apollo_compiler::schema::ExtendedType;

use super::graph::{Node, QueryGraph, State};
use crate::model::Kind;

impl QueryGraph<'_> {
    pub(super) fn requires_ok(&self, n: &Node, field: &str) -> bool {
        // @requires conditions are resolved from the subgraph that has the field.
        self.requires
            .get(&(n.0.clone(), n.1, field.to_owned()))
            .is_none_or(|req| {
                let from_there = self.key_closure(n);
                req.iter()
                    .all(|r| from_there.iter().any(|m| self.has_local(m, r)))
            })
    }

    /// The closure nodes resolving `field` in a state (empty when assumed reachable);
    /// `None` when nothing can.
    pub(super) fn resolving(
        &self,
        state: &State,
        closure: &[Node],
        field: &str,
    ) -> Option<Vec<Node>> {
        let found: Vec<Node> = closure
            .iter()
            .filter(|n| self.has_local(n, field) && self.requires_ok(n, field))
            .cloned()
            .collect();
        // With a progressive @override, both label states must be able to resolve it.
        let in_world = |on: bool| {
            found.iter().any(|n| {
                let key = (
                    n.0.clone(),
                    self.subgraph(n.1).name.clone(),
                    field.to_owned(),
                );
                self.progressive
                    .get(&key)
                    .is_none_or(|only_on| *only_on == on)
            })
        };
        if in_world(true) && in_world(false) {
            return Some(found);
        }
        if self.assumed_reachable(state, field) {
            return Some(Vec::new());
        }
        None
    }

    pub(super) fn assumed_reachable(&self, state: &State, field: &str) -> bool {
        if self
            .contextual
            .contains(&(state.0.clone(), field.to_owned()))
        {
            return true;
        }
        let Some(t) = self.sup.types.get(&state.0) else {
            return true;
        };
        // An abstract type is fine when every object type the subgraph can return has it.
        t.kind == Kind::Interface
            && state.1.iter().any(|&s| {
                let impls = self.possible_types(&state.0, s);
                impls.is_empty()
                    || impls.iter().all(|m| {
                        self.key_closure(&(m.clone(), s))
                            .iter()
                            .any(|n| self.has_local(n, field))
                    })
            })
    }

    /// Object types a subgraph may return for an abstract type.
    pub(super) fn possible_types(&self, abstract_name: &str, sg: usize) -> Vec<String> {
        let subgraph = self.subgraph(sg);
        let mut out = Vec::new();
        for (local, ty) in &subgraph.schema.types {
            match ty {
                ExtendedType::Object(o)
                    if o.implements_interfaces
                        .iter()
                        .any(|i| subgraph.canonical(i) == abstract_name) =>
                {
                    out.push(subgraph.canonical(local).to_owned());
                }
                ExtendedType::Union(u) if subgraph.canonical(local) == abstract_name => {
                    out.extend(u.members.iter().map(|m| subgraph.canonical(m).to_owned()));
                }
                _ => {}
            }
        }
        out.sort();
        out
    }

    /// For an interface field an option's subgraph lacks on the interface: the nodes
    /// resolving it on every implementation there (Apollo downcasts to each), or none
    /// when some implementation cannot.
    pub(super) fn through_implementations(&self, state: &State, field: &str) -> Vec<Node> {
        let mut out = Vec::new();
        for &s in &state.1 {
            if self.has_local(&(state.0.clone(), s), field) {
                continue;
            }
            let impls = self.possible_types(&state.0, s);
            let mut found = Vec::new();
            let all = !impls.is_empty()
                && impls.iter().all(|m| {
                    let before = found.len();
                    found.extend(
                        self.key_closure(&(m.clone(), s))
                            .into_iter()
                            .filter(|n| self.has_local(n, field) && self.requires_ok(n, field)),
                    );
                    found.len() > before
                });
            if all {
                out.extend(found);
            }
        }
        out
    }
}
