//! The query graph: per (type, subgraph) node what resolves locally, keys, requires,
//! return types, and the virtual subgraphs `@provides` creates.

use std::collections::{BTreeSet, HashMap, HashSet};

use apollo_compiler::schema::ExtendedType;

use crate::merge::Input;
use crate::model::Supergraph;
use crate::specs::FedDirective;
use crate::subgraph::{Subgraph, str_arg};

/// A node of the query graph: (canonical type, subgraph index, virtual ones included).
pub(super) type Node = (String, usize);

/// A query state: a supergraph type and the subgraphs the query may be in.
pub(super) type State = (String, BTreeSet<usize>);

pub(super) struct QueryGraph<'a> {
    pub(super) input: &'a Input<'a>,
    pub(super) sup: &'a Supergraph,
    /// (canonical type, subgraph) → locally resolvable field names.
    pub(super) local: HashMap<Node, HashSet<String>>,
    /// (canonical type, subgraph) → resolvable keys' (text, top-level fields).
    pub(super) keys: HashMap<Node, Vec<(String, Vec<String>)>>,
    /// (canonical type, subgraph) → whether it has any `@key` (resolvable or not).
    pub(super) any_key: HashSet<Node>,
    /// (canonical type, subgraph, field) → required top-level fields.
    pub(super) requires: HashMap<(String, usize, String), Vec<String>>,
    /// (canonical type, subgraph, field) → canonical return type.
    pub(super) returns: HashMap<(String, usize, String), String>,
    /// (canonical type, subgraph, field) of fields marked `@external` there.
    pub(super) external: HashSet<(String, usize, String)>,
    /// Fields taking an argument from a context: assumed reachable.
    pub(super) contextual: HashSet<(String, String)>,
    /// Progressive `@override` (with a label): (type, subgraph name, field) → whether the
    /// source exists only when the label is on (the overriding one) or only when off.
    pub(super) progressive: HashMap<(String, String, String), bool>,
    /// Real subgraph of each virtual one (indices from `subgraphs.len()` on): a subgraph
    /// as seen under one of its `@provides`, where the provided fields are resolvable.
    pub(super) virtual_of: Vec<usize>,
    /// (canonical type, subgraph, field with `@provides`) → its virtual subgraph.
    pub(super) provides: HashMap<(String, usize, String), usize>,
}

impl<'a> QueryGraph<'a> {
    pub(super) fn build(input: &'a Input<'a>, sup: &'a Supergraph) -> Self {
        let mut g = QueryGraph {
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
    pub(super) fn add_provides_views(&mut self) {
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
    pub(super) fn real(&self, i: usize) -> usize {
        if i < self.input.subgraphs.len() {
            i
        } else {
            self.virtual_of[i - self.input.subgraphs.len()]
        }
    }

    pub(super) fn subgraph(&self, i: usize) -> &Subgraph {
        &self.input.subgraphs[self.real(i)]
    }

    pub(super) fn has_local(&self, node: &Node, field: &str) -> bool {
        self.local.get(node).is_some_and(|f| f.contains(field))
    }

    pub(super) fn is_root(name: &str) -> bool {
        matches!(name, "Query" | "Mutation" | "Subscription")
    }
}

/// Every `@override(from:)` on an object field: (subgraph, canonical type, field, from, label).
pub(super) fn override_applications(
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
pub(super) fn overridden_fields(subgraphs: &[Subgraph]) -> HashSet<(String, String, String)> {
    override_applications(subgraphs)
        .filter(|(.., label)| label.is_none())
        .map(|(_, ty, field, from, _)| (ty, field, from))
        .collect()
}

/// The named return type of a field of a subgraph type (by local names).
pub(super) fn returned_type(sg: &Subgraph, ty: &str, field: &str) -> Option<String> {
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
pub(super) fn progressive_overrides(
    subgraphs: &[Subgraph],
) -> HashMap<(String, String, String), bool> {
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
