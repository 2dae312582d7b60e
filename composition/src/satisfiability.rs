//! Satisfiability: every supergraph field must be resolvable wherever a query can reach
//! its parent type.
//!
//! This is an approximation of Apollo's query-graph check. Nodes are (type, subgraph)
//! pairs. From a root type in each subgraph, a field a subgraph resolves leads to its
//! return type in the same subgraph (and, for abstract types, to the possible object
//! types that subgraph knows). A key edge jumps from (T, A) to (T, B) when B has a
//! resolvable `@key` whose top-level fields A resolves. At every reachable node, each
//! supergraph field of the type must be resolvable in a subgraph reachable through key
//! edges, with that subgraph's `@requires` fields resolvable the same way.
//!
//! Limits: key fields are checked at the top level only (nested key selections are
//! assumed available when their parent field is); `@provides` makes the provided field
//! count as resolvable in that subgraph everywhere rather than only under the providing
//! path; `@interfaceObject` jumps are not modelled (their fields are assumed reachable);
//! shareable-but-different `@override` labels are treated as fully migrated. Where the
//! model is unsure it assumes the field is reachable, so it may miss errors Apollo
//! reports but does not invent ones Apollo would not.

use std::collections::{HashMap, HashSet, VecDeque};

use apollo_compiler::schema::ExtendedType;

use crate::errors::{ErrorSink, codes};
use crate::merge::Input;
use crate::model::{Kind, Supergraph};
use crate::specs::FedDirective;
use crate::subgraph::{Subgraph, str_arg};

type Node = (String, usize);

/// How a node was first reached: the previous node and the field (None for a key jump).
type Parent = HashMap<Node, (Node, Option<String>)>;

struct Graph<'a> {
    input: &'a Input<'a>,
    sup: &'a Supergraph,
    /// (canonical type, subgraph) → locally resolvable field names.
    local: HashMap<Node, HashSet<String>>,
    /// (canonical type, subgraph) → resolvable keys' top-level fields.
    keys: HashMap<Node, Vec<Vec<String>>>,
    /// (canonical type, subgraph, field) → required top-level fields.
    requires: HashMap<(String, usize, String), Vec<String>>,
    /// (canonical type, subgraph, field) → canonical return type.
    returns: HashMap<(String, usize, String), String>,
}

pub fn check(input: &Input<'_>, sup: &Supergraph, sink: &mut ErrorSink) {
    let graph = Graph::build(input, sup);
    // Only nodes a query is forced into (roots, field edges) must resolve every field;
    // nodes reached by key jumps are options the planner may or may not take.
    let (reached, parents) = graph.explore();
    let mut reported: HashSet<(String, String)> = HashSet::new();
    let mut nodes: Vec<&Node> = reached.iter().collect();
    nodes.sort();
    for node in nodes {
        let Some(t) = sup.types.get(&node.0) else {
            continue;
        };
        if t.kind != Kind::Object && t.kind != Kind::Interface {
            continue;
        }
        let closure = graph.key_closure(node);
        for fname in t.fields.keys() {
            if reported.contains(&(node.0.clone(), fname.clone())) {
                continue;
            }
            if graph.satisfiable(node, &closure, fname) {
                continue;
            }
            reported.insert((node.0.clone(), fname.clone()));
            let sg = &input.subgraphs[node.1].name;
            let query = example_query(&parents, node, fname);
            sink.error(
                codes::SATISFIABILITY_ERROR,
                format!(
                    "The following supergraph API query:\n{query}\ncannot be satisfied by the subgraphs because:\n- from subgraph \"{sg}\": cannot find field \"{}.{fname}\" (no subgraph reachable through keys from \"{sg}\" resolves it).",
                    node.0
                ),
                sg,
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
            requires: HashMap::new(),
            returns: HashMap::new(),
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
                    let external =
                        info.external.contains(&coord) && !info.provided.contains(&coord);
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
                let keys = info
                    .keys
                    .get(local.as_str())
                    .map(|ks| {
                        ks.iter()
                            .filter(|k| k.resolvable)
                            .map(|k| k.top_fields.clone())
                            .collect()
                    })
                    .unwrap_or_default();
                g.keys.insert((name, i), keys);
            }
        }
        g
    }

    fn subgraph(&self, i: usize) -> &Subgraph {
        &self.input.subgraphs[i]
    }

    fn has_local(&self, node: &Node, field: &str) -> bool {
        self.local.get(node).is_some_and(|f| f.contains(field))
    }

    /// Nodes of the same type reachable from `node` through key jumps (including itself).
    fn key_closure(&self, node: &Node) -> Vec<Node> {
        if matches!(node.0.as_str(), "Query" | "Mutation" | "Subscription") {
            // A query starts at whichever subgraph serves the root field.
            return (0..self.input.subgraphs.len())
                .map(|j| (node.0.clone(), j))
                .filter(|n| self.local.contains_key(n))
                .collect();
        }
        let mut seen = vec![node.clone()];
        let mut queue = VecDeque::from([node.clone()]);
        while let Some(cur) = queue.pop_front() {
            for j in 0..self.input.subgraphs.len() {
                let next = (cur.0.clone(), j);
                if seen.contains(&next) {
                    continue;
                }
                if self.can_jump(&cur, j) {
                    seen.push(next.clone());
                    queue.push_back(next);
                }
            }
        }
        seen
    }

    fn can_jump(&self, from: &Node, to: usize) -> bool {
        let Some(keys) = self.keys.get(&(from.0.clone(), to)) else {
            return false;
        };
        keys.iter()
            .any(|k| k.iter().all(|f| self.has_local(from, f)))
    }

    fn satisfiable(&self, node: &Node, closure: &[Node], field: &str) -> bool {
        // @requires conditions are resolved from the subgraph that has the field.
        let in_closure = closure.iter().any(|n| {
            self.has_local(n, field)
                && self
                    .requires
                    .get(&(n.0.clone(), n.1, field.to_owned()))
                    .is_none_or(|req| {
                        let from_there = self.key_closure(n);
                        req.iter()
                            .all(|r| from_there.iter().any(|m| self.has_local(m, r)))
                    })
        });
        if in_closure {
            return true;
        }
        // An abstract type is fine when every object type the subgraph can return has it.
        let t = self.sup.types.get(&node.0);
        if t.is_some_and(|t| t.kind == Kind::Interface) {
            let impls = self.possible_types(&node.0, node.1);
            if impls.is_empty() {
                return true;
            }
            return impls.iter().all(|m| {
                let mn = (m.clone(), node.1);
                let c = self.key_closure(&mn);
                c.iter().any(|n| self.has_local(n, field))
            });
        }
        // `@interfaceObject` fields are not modelled: assume reachable.
        self.sup.types.get(&node.0).is_some_and(|t| {
            t.fields.get(field).is_some_and(|f| {
                f.joins
                    .as_ref()
                    .is_some_and(|js| js.iter().any(|j| j.graph.is_none()))
            })
        })
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
        out
    }

    /// Breadth-first search from every subgraph's root types.
    fn explore(&self) -> (HashSet<Node>, Parent) {
        let mut entries = HashSet::new();
        let mut reached = HashSet::new();
        let mut parents: Parent = HashMap::new();
        let mut queue = VecDeque::new();
        for (i, sg) in self.input.subgraphs.iter().enumerate() {
            for root in ["Query", "Mutation", "Subscription"] {
                let node = (root.to_owned(), i);
                let has_root = sg.schema.types.keys().any(|t| sg.canonical(t) == root);
                if has_root && reached.insert(node.clone()) {
                    entries.insert(node.clone());
                    queue.push_back(node);
                }
            }
        }
        while let Some(node) = queue.pop_front() {
            let mut next: Vec<(Node, Option<String>)> = Vec::new();
            let mut fields: Vec<&String> = self
                .local
                .get(&node)
                .map(|f| f.iter().collect())
                .unwrap_or_default();
            fields.sort();
            for f in fields {
                let Some(ret) = self.returns.get(&(node.0.clone(), node.1, f.clone())) else {
                    continue;
                };
                let target = (ret.clone(), node.1);
                if self
                    .subgraph(node.1)
                    .schema
                    .types
                    .keys()
                    .any(|t| self.subgraph(node.1).canonical(t) == ret.as_str())
                {
                    next.push((target, Some(f.clone())));
                }
            }
            if self
                .sup
                .types
                .get(&node.0)
                .is_some_and(|t| matches!(t.kind, Kind::Interface | Kind::Union))
            {
                for m in self.possible_types(&node.0, node.1) {
                    next.push(((m.clone(), node.1), Some(format!("... on {m}"))));
                }
            }
            for j in 0..self.input.subgraphs.len() {
                if j != node.1 && self.can_jump(&node, j) {
                    next.push(((node.0.clone(), j), None));
                }
            }
            for (n, via) in next {
                if via.is_some() {
                    entries.insert(n.clone());
                }
                if reached.insert(n.clone()) {
                    parents.entry(n.clone()).or_insert((node.clone(), via));
                    queue.push_back(n);
                }
            }
        }
        (entries, parents)
    }
}

/// Fields overridden without a label: (type, field, overridden subgraph).
fn overridden_fields(subgraphs: &[Subgraph]) -> HashSet<(String, String, String)> {
    let mut out = HashSet::new();
    for sg in subgraphs {
        for (local, ty) in &sg.schema.types {
            let ExtendedType::Object(o) = ty else {
                continue;
            };
            for (fname, field) in &o.fields {
                for d in sg.applications(&field.directives, FedDirective::Override) {
                    if str_arg(d, "label").is_some() {
                        continue;
                    }
                    if let Some(from) = str_arg(d, "from") {
                        out.insert((
                            sg.canonical(local).to_owned(),
                            fname.to_string(),
                            from.to_owned(),
                        ));
                    }
                }
            }
        }
    }
    out
}

/// The query that reaches `node` and selects `field`, indented like Apollo's messages.
fn example_query(parents: &Parent, node: &Node, field: &str) -> String {
    let mut path = vec![field.to_owned()];
    let mut cur = node.clone();
    let mut guard = 0;
    while let Some((prev, via)) = parents.get(&cur) {
        if let Some(f) = via {
            path.push(f.clone());
        }
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
