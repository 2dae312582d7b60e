//! Key jumps: which nodes a query can move to from a node or state, through resolvable
//! `@key`s and `@interfaceObject`s.

use apollo_compiler::schema::ExtendedType;

use super::graph::{Node, QueryGraph, State};

impl QueryGraph<'_> {
    /// Nodes reachable from a state's options through key jumps (options first).
    pub(super) fn state_closure(&self, state: &State) -> Vec<Node> {
        let mut out: Vec<Node> = Vec::new();
        for &s in &state.1 {
            for n in self.key_closure(&(state.0.clone(), s)) {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        }
        out
    }

    /// Nodes reachable from `node` through key jumps (including itself).
    pub(super) fn key_closure(&self, node: &Node) -> Vec<Node> {
        if Self::is_root(&node.0) {
            // A query starts at whichever subgraph serves the root field.
            return (0..self.input.subgraphs.len())
                .map(|j| (node.0.clone(), j))
                .filter(|n| self.local.contains_key(n))
                .collect();
        }
        // A key's top-level fields may each come from any node of the same type already
        // reached (Apollo resolves key conditions field by field, jumping as needed), so
        // this grows to a fixpoint; at most one round per node added.
        let mut seen = vec![node.clone()];
        let mut expanded = 0;
        for _ in 0..=self.input.subgraphs.len() * 4 + 2 {
            let mut added = false;
            let types: Vec<String> = seen.iter().map(|n| n.0.clone()).collect();
            for t in types {
                for j in 0..self.input.subgraphs.len() {
                    let to = (t.clone(), j);
                    if !seen.contains(&to) && self.can_jump_from_any(&seen, &to) {
                        seen.push(to);
                        added = true;
                    }
                }
            }
            while expanded < seen.len() {
                for n in self.interface_object_jumps(&seen[expanded]) {
                    if !seen.contains(&n) {
                        seen.push(n);
                        added = true;
                    }
                }
                expanded += 1;
            }
            if !added {
                break;
            }
        }
        seen
    }

    /// Whether some resolvable key of `to` has each top-level field resolved by one of
    /// the `reached` nodes of the same type.
    pub(super) fn can_jump_from_any(&self, reached: &[Node], to: &Node) -> bool {
        let Some(keys) = self.keys.get(to) else {
            return false;
        };
        keys.iter().any(|(_, k)| {
            k.iter().all(|f| {
                reached
                    .iter()
                    .any(|m| m.0 == to.0 && m != to && self.has_local(m, f))
            })
        })
    }

    /// From an object type to the `@interfaceObject`s of the interfaces it implements
    /// locally, through their resolvable keys.
    pub(super) fn interface_object_jumps(&self, from: &Node) -> Vec<Node> {
        let sg = self.subgraph(from.1);
        let Some(ExtendedType::Object(o)) = sg
            .schema
            .types
            .iter()
            .find(|(l, _)| sg.canonical(l) == from.0)
            .map(|(_, t)| t)
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for iface in &o.implements_interfaces {
            let iname = sg.canonical(iface).to_owned();
            let Some(t) = self.sup.types.get(&iname) else {
                continue;
            };
            for (j, other) in self.input.subgraphs.iter().enumerate() {
                let target = (iname.clone(), j);
                let is_object = t
                    .join_types
                    .iter()
                    .any(|jt| jt.interface_object && jt.graph == other.graph);
                if is_object && self.can_jump(from, &target) {
                    out.push(target);
                }
            }
        }
        out
    }

    pub(super) fn is_interface_object(&self, n: &Node) -> bool {
        let graph = &self.subgraph(n.1).graph;
        self.sup.types.get(&n.0).is_some_and(|t| {
            t.join_types
                .iter()
                .any(|jt| jt.interface_object && &jt.graph == graph)
        })
    }

    pub(super) fn can_jump(&self, from: &Node, to: &Node) -> bool {
        if from == to {
            return false;
        }
        let Some(keys) = self.keys.get(to) else {
            return false;
        };
        keys.iter()
            .any(|(_, k)| k.iter().all(|f| self.has_local(from, f)))
    }
}
