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

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use apollo_compiler::schema::ExtendedType;

use crate::errors::{ErrorSink, codes};
use crate::merge::Input;
use crate::model::{Kind, Supergraph};
use crate::specs::FedDirective;
use crate::subgraph::{Subgraph, str_arg};

type Node = (String, usize);

/// A query state: a supergraph type and the subgraphs the query may be in.
type State = (String, BTreeSet<usize>);

/// How a state was first reached: the previous state and the selection leading here.
type Parent = HashMap<State, (State, String)>;

/// Bound on explored states, so pathological inputs stay fast.
const MAX_STATES: usize = 20_000;

struct Graph<'a> {
    input: &'a Input<'a>,
    sup: &'a Supergraph,
    /// (canonical type, subgraph) → locally resolvable field names.
    local: HashMap<Node, HashSet<String>>,
    /// (canonical type, subgraph) → resolvable keys' (text, top-level fields).
    keys: HashMap<Node, Vec<(String, Vec<String>)>>,
    /// (canonical type, subgraph) → whether it has any `@key` (resolvable or not).
    any_key: HashSet<Node>,
    /// (canonical type, subgraph, field) → required top-level fields.
    requires: HashMap<(String, usize, String), Vec<String>>,
    /// (canonical type, subgraph, field) → canonical return type.
    returns: HashMap<(String, usize, String), String>,
    /// (canonical type, subgraph, field) of fields marked `@external` there.
    external: HashSet<(String, usize, String)>,
    /// Fields taking an argument from a context: assumed reachable.
    contextual: HashSet<(String, String)>,
    /// Progressive `@override` (with a label): (type, subgraph name, field) → whether the
    /// source exists only when the label is on (the overriding one) or only when off.
    progressive: HashMap<(String, String, String), bool>,
    /// Real subgraph of each virtual one (indices from `subgraphs.len()` on): a subgraph
    /// as seen under one of its `@provides`, where the provided fields are resolvable.
    virtual_of: Vec<usize>,
    /// (canonical type, subgraph, field with `@provides`) → its virtual subgraph.
    provides: HashMap<(String, usize, String), usize>,
}

pub fn check(input: &Input<'_>, sup: &Supergraph, sink: &mut ErrorSink) {
    let graph = Graph::build(input, sup);
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

impl<'a> Graph<'a> {
    fn build(input: &'a Input<'a>, sup: &'a Supergraph) -> Self {
        let mut g = Graph {
            input,
            sup,
            local: HashMap::new(),
            keys: HashMap::new(),
            any_key: HashSet::new(),
            requires: HashMap::new(),
            returns: HashMap::new(),
            external: HashSet::new(),
            contextual: HashSet::new(),
            progressive: progressive_overrides(input.subgraphs),
            virtual_of: Vec::new(),
            provides: HashMap::new(),
        };
        let overridden = overridden_fields(input.subgraphs);
        for (i, sg) in input.subgraphs.iter().enumerate() {
            let info = &input.infos[i];
            for (local, ty) in &sg.schema.types {
                if ty.is_built_in() || sg.is_internal_type(local) {
                    continue;
                }
                let fields = match ty {
                    ExtendedType::Object(o) => &o.fields,
                    ExtendedType::Interface(o) => &o.fields,
                    _ => continue,
                };
                let name = sg.canonical(local).to_owned();
                let mut resolvable = HashSet::new();
                for (fname, field) in fields {
                    let coord = (local.to_string(), fname.to_string());
                    if info.context_args.contains_key(&coord) {
                        g.contextual.insert((name.clone(), fname.to_string()));
                    }
                    let external = info.external.contains(&coord)
                        && (!info.provided.contains(&coord)
                            || info.scoped_provided.contains(&coord));
                    if external {
                        g.external.insert((name.clone(), i, fname.to_string()));
                    }
                    if external
                        || overridden.contains(&(name.clone(), fname.to_string(), sg.name.clone()))
                    {
                        continue;
                    }
                    resolvable.insert(fname.to_string());
                    let ret = sg.canonical(field.ty.inner_named_type()).to_owned();
                    g.returns.insert((name.clone(), i, fname.to_string()), ret);
                    if let Some(req) = info.requires.get(&coord) {
                        g.requires
                            .insert((name.clone(), i, fname.to_string()), req.clone());
                    }
                }
                g.local.insert((name.clone(), i), resolvable);
                let all_keys = info.keys.get(local.as_str());
                if all_keys.is_some_and(|ks| !ks.is_empty()) {
                    g.any_key.insert((name.clone(), i));
                }
                let keys = all_keys
                    .map(|ks| {
                        ks.iter()
                            .filter(|k| k.resolvable)
                            .map(|k| (k.fields.clone(), k.top_fields.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                g.keys.insert((name, i), keys);
            }
        }
        g.add_provides_views();
        g
    }

    /// One virtual subgraph per plain `@provides`: the providing subgraph's view of the
    /// returned type, plus the provided fields.
    fn add_provides_views(&mut self) {
        let n = self.input.subgraphs.len();
        for (i, sg) in self.input.subgraphs.iter().enumerate() {
            let mut provides: Vec<_> = self.input.infos[i].provides.iter().collect();
            provides.sort();
            for ((ptype, pfield), (target, top)) in provides {
                let v = n + self.virtual_of.len();
                self.virtual_of.push(i);
                let parent = sg.canonical(ptype).to_owned();
                let rtype = sg.canonical(target).to_owned();
                self.provides.insert((parent, i, pfield.clone()), v);
                let mut local = self
                    .local
                    .get(&(rtype.clone(), i))
                    .cloned()
                    .unwrap_or_default();
                local.extend(top.iter().cloned());
                let fields: Vec<String> = local.iter().cloned().collect();
                for f in fields {
                    let key = (rtype.clone(), i, f.clone());
                    let ret = self.returns.get(&key).cloned().or_else(|| {
                        returned_type(sg, target, &f).map(|t| sg.canonical(&t).to_owned())
                    });
                    if let Some(ret) = ret {
                        self.returns.insert((rtype.clone(), v, f.clone()), ret);
                    }
                    if let Some(req) = self.requires.get(&key).cloned() {
                        self.requires.insert((rtype.clone(), v, f), req);
                    }
                }
                self.local.insert((rtype.clone(), v), local);
                if let Some(keys) = self.keys.get(&(rtype.clone(), i)).cloned() {
                    self.keys.insert((rtype.clone(), v), keys);
                }
            }
        }
    }

    /// The real subgraph index of a (possibly virtual) one.
    fn real(&self, i: usize) -> usize {
        if i < self.input.subgraphs.len() {
            i
        } else {
            self.virtual_of[i - self.input.subgraphs.len()]
        }
    }

    fn subgraph(&self, i: usize) -> &Subgraph {
        &self.input.subgraphs[self.real(i)]
    }

    fn has_local(&self, node: &Node, field: &str) -> bool {
        self.local.get(node).is_some_and(|f| f.contains(field))
    }

    fn is_root(name: &str) -> bool {
        matches!(name, "Query" | "Mutation" | "Subscription")
    }

    /// Nodes reachable from a state's options through key jumps (options first).
    fn state_closure(&self, state: &State) -> Vec<Node> {
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
    fn key_closure(&self, node: &Node) -> Vec<Node> {
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
    fn can_jump_from_any(&self, reached: &[Node], to: &Node) -> bool {
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
    fn interface_object_jumps(&self, from: &Node) -> Vec<Node> {
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

    fn is_interface_object(&self, n: &Node) -> bool {
        let graph = &self.subgraph(n.1).graph;
        self.sup.types.get(&n.0).is_some_and(|t| {
            t.join_types
                .iter()
                .any(|jt| jt.interface_object && &jt.graph == graph)
        })
    }

    fn can_jump(&self, from: &Node, to: &Node) -> bool {
        if from == to {
            return false;
        }
        let Some(keys) = self.keys.get(to) else {
            return false;
        };
        keys.iter()
            .any(|(_, k)| k.iter().all(|f| self.has_local(from, f)))
    }

    fn requires_ok(&self, n: &Node, field: &str) -> bool {
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
    fn resolving(&self, state: &State, closure: &[Node], field: &str) -> Option<Vec<Node>> {
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

    fn assumed_reachable(&self, state: &State, field: &str) -> bool {
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

    /// Apollo-style reasons for an unresolvable field, and the subgraphs they name.
    fn explain(&self, tname: &str, closure: &[Node], field: &str) -> (String, Vec<String>) {
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
    fn move_reasons(&self, n: &Node, field: &str, in_closure: &HashSet<usize>) -> Vec<String> {
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

    /// Object types a subgraph may return for an abstract type.
    fn possible_types(&self, abstract_name: &str, sg: usize) -> Vec<String> {
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

    fn has_type(&self, sg: usize, name: &str) -> bool {
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
    fn explore(&self) -> (Vec<State>, Parent) {
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

    /// For an interface field an option's subgraph lacks on the interface: the nodes
    /// resolving it on every implementation there (Apollo downcasts to each), or none
    /// when some implementation cannot.
    fn through_implementations(&self, state: &State, field: &str) -> Vec<Node> {
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

    /// The states one field or type condition away.
    fn successors(&self, state: &State) -> Vec<(State, String)> {
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

/// Every `@override(from:)` on an object field: (subgraph, canonical type, field, from, label).
fn override_applications(
    subgraphs: &[Subgraph],
) -> impl Iterator<Item = (&Subgraph, String, String, String, Option<String>)> {
    subgraphs.iter().flat_map(|sg| {
        sg.schema.types.iter().flat_map(move |(local, ty)| {
            let fields = match ty {
                ExtendedType::Object(o) => Some(&o.fields),
                _ => None,
            };
            fields
                .into_iter()
                .flatten()
                .flat_map(move |(fname, field)| {
                    sg.applications(&field.directives, FedDirective::Override)
                        .into_iter()
                        .filter_map(move |d| {
                            let from = str_arg(d, "from")?.to_owned();
                            let label = str_arg(d, "label").map(str::to_owned);
                            Some((
                                sg,
                                sg.canonical(local).to_owned(),
                                fname.to_string(),
                                from,
                                label,
                            ))
                        })
                })
        })
    })
}

/// Fields overridden without a label: (type, field, overridden subgraph).
fn overridden_fields(subgraphs: &[Subgraph]) -> HashSet<(String, String, String)> {
    override_applications(subgraphs)
        .filter(|(.., label)| label.is_none())
        .map(|(_, ty, field, from, _)| (ty, field, from))
        .collect()
}

/// The named return type of a field of a subgraph type (by local names).
fn returned_type(sg: &Subgraph, ty: &str, field: &str) -> Option<String> {
    let fields = match sg.schema.types.get(ty)? {
        ExtendedType::Object(o) => &o.fields,
        ExtendedType::Interface(i) => &i.fields,
        _ => return None,
    };
    fields
        .get(field)
        .map(|f| f.ty.inner_named_type().to_string())
}

/// Labelled `@override`s: both the overriding and the overridden source, keyed by
/// (type, subgraph name, field), with `true` for the overriding one.
fn progressive_overrides(subgraphs: &[Subgraph]) -> HashMap<(String, String, String), bool> {
    let mut out = HashMap::new();
    for (sg, ty, field, from, label) in override_applications(subgraphs) {
        if label.is_none() || from == sg.name || !subgraphs.iter().any(|g| g.name == from) {
            continue;
        }
        out.insert((ty.clone(), sg.name.clone(), field.clone()), true);
        out.insert((ty, from, field), false);
    }
    out
}

/// The query that reaches `state` and selects `field`, indented like Apollo's messages.
fn example_query(parents: &Parent, state: &State, field: &str) -> String {
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
