//! Exploring the query states reachable from the root types.

use std::collections::{BTreeSet, HashMap, VecDeque};

use super::graph::{QueryGraph, State};
use crate::model::Kind;

/// How a state was first reached: the previous state and the selection leading here.
pub(super) type Parent = HashMap<State, (State, String)>;

/// Bound on explored states, so pathological inputs stay fast.
const MAX_STATES: usize = 20_000;

impl QueryGraph<'_> {
    pub(super) fn has_type(&self, sg: usize, name: &str) -> bool {
        let subgraph = self.subgraph(sg);
        subgraph
            .schema
            .types
            .keys()
            .any(|t| subgraph.canonical(t) == name)
    }

    /// States reachable from the root types, in breadth-first order, with how each was
    /// first reached. A state whose options include an earlier state's is skipped: it can
    /// only fail where the earlier one already did.
    pub(super) fn explore(&self) -> (Vec<State>, Parent) {
        let mut states: Vec<State> = Vec::new();
        let mut visited: HashMap<String, Vec<BTreeSet<usize>>> = HashMap::new();
        let mut parents: Parent = HashMap::new();
        let mut queue: VecDeque<State> = VecDeque::new();
        for root in ["Query", "Mutation", "Subscription"] {
            let options: BTreeSet<usize> = (0..self.input.subgraphs.len())
                .filter(|&i| self.has_type(i, root))
                .collect();
            if !options.is_empty() {
                queue.push_back((root.to_owned(), options));
            }
        }
        while let Some(state) = queue.pop_front() {
            if states.len() >= MAX_STATES {
                break;
            }
            let seen = visited.entry(state.0.clone()).or_default();
            if seen.iter().any(|p| p.is_subset(&state.1)) {
                continue;
            }
            seen.push(state.1.clone());
            states.push(state.clone());
            for (next, via) in self.successors(&state) {
                if !parents.contains_key(&next) && next != state {
                    parents.insert(next.clone(), (state.clone(), via));
                }
                queue.push_back(next);
            }
        }
        (states, parents)
    }

    /// The states one field or type condition away.
    pub(super) fn successors(&self, state: &State) -> Vec<(State, String)> {
        let Some(t) = self.sup.types.get(&state.0) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if matches!(t.kind, Kind::Object | Kind::Interface) {
            let closure = self.state_closure(state);
            for (fname, f) in &t.fields {
                let ret = f.ty.inner_named_type().as_str();
                let composite = self.sup.types.get(ret).is_some_and(|r| {
                    matches!(r.kind, Kind::Object | Kind::Interface | Kind::Union)
                });
                if !composite {
                    continue;
                }
                let Some(mut nodes) = self.resolving(state, &closure, fname) else {
                    continue;
                };
                if t.kind == Kind::Interface {
                    nodes.extend(self.through_implementations(state, fname));
                }
                let options: BTreeSet<usize> = nodes
                    .iter()
                    .filter(|n| {
                        self.returns
                            .get(&(n.0.clone(), n.1, fname.clone()))
                            .is_some_and(|r| r == ret)
                            && self.has_type(n.1, ret)
                    })
                    .map(|n| {
                        // A field's result is in the real subgraph, or its @provides view.
                        let real = self.real(n.1);
                        self.provides
                            .get(&(n.0.clone(), real, fname.clone()))
                            .copied()
                            .unwrap_or(real)
                    })
                    .collect();
                if !options.is_empty() {
                    out.push(((ret.to_owned(), options), fname.clone()));
                }
            }
        }
        if matches!(t.kind, Kind::Interface | Kind::Union) {
            let mut by_type: HashMap<String, BTreeSet<usize>> = HashMap::new();
            for &s in &state.1 {
                for m in self.possible_types(&state.0, s) {
                    by_type.entry(m).or_default().insert(s);
                }
            }
            let mut members: Vec<_> = by_type.into_iter().collect();
            members.sort();
            for (m, options) in members {
                out.push(((m.clone(), options), format!("... on {m}")));
            }
        }
        out
    }
}
