//! Merging the subgraphs' types into one supergraph model.

use std::collections::{HashMap, HashSet};

use apollo_compiler::ast::{Directive, Type, Value};
use apollo_compiler::schema::{ComponentName, ExtendedType, FieldDefinition, InputValueDefinition};
use apollo_compiler::{Name, Node};
use indexmap::{IndexMap, IndexSet};

use crate::context::ContextArg;
use crate::errors::{ErrorSink, codes, subgraphs_phrase};
use crate::fieldsets::SubgraphInfo;
use crate::model::{JoinField, JoinType, Kind, Link, MArg, MEnumValue, MField, MType, Supergraph};
use crate::specs::{self, FedDirective};
use crate::subgraph::{DirSource, Subgraph, str_arg};

/// Everything merging reads: the subgraphs and their field-set analyses.
pub struct Input<'a> {
    pub subgraphs: &'a [Subgraph],
    pub infos: &'a [SubgraphInfo],
}

/// One subgraph's definition of a type.
struct Source<'a> {
    sg: usize,
    local: &'a str,
    ty: &'a ExtendedType,
}

struct Ctx<'a> {
    input: &'a Input<'a>,
    sink: &'a mut ErrorSink,
    /// Supergraph subtyping: (sub, super) pairs from implements and union membership.
    subtypes: HashSet<(String, String)>,
    enum_input_use: HashSet<String>,
    enum_output_use: HashSet<String>,
    /// Feature directives carried into the supergraph: local name → subgraphs using it.
    used_features: IndexMap<FedDirective, IndexMap<String, Vec<String>>>,
}

pub fn merge(input: &Input<'_>, sink: &mut ErrorSink) -> Supergraph {
    let mut ctx = Ctx {
        input,
        sink,
        subtypes: HashSet::new(),
        enum_input_use: HashSet::new(),
        enum_output_use: HashSet::new(),
        used_features: IndexMap::new(),
    };
    let groups = group_types(&mut ctx);
    collect_relations(&mut ctx);
    let mut sup = Supergraph::default();
    for (name, (kind, sources)) in &groups {
        let merged = match kind {
            Kind::Object | Kind::Interface => merge_composite(&mut ctx, name, *kind, sources),
            Kind::Union => merge_union(&mut ctx, name, sources),
            Kind::Enum => merge_enum(&mut ctx, name, sources),
            Kind::Input => merge_input(&mut ctx, name, sources),
            Kind::Scalar => merge_scalar(&mut ctx, name, sources),
        };
        if let Some(t) = merged {
            sup.types.insert(name.clone(), t);
        }
    }
    add_interface_object_fields(&ctx, &mut sup);
    check_implementations(&mut ctx, &sup);
    finish(&mut ctx, &mut sup);
    sup
}

fn kind_of(sg: &Subgraph, ty: &ExtendedType) -> Kind {
    match ty {
        ExtendedType::Scalar(_) => Kind::Scalar,
        ExtendedType::Object(o) => {
            if sg.has(&o.directives, FedDirective::InterfaceObject) {
                Kind::Interface
            } else {
                Kind::Object
            }
        }
        ExtendedType::Interface(_) => Kind::Interface,
        ExtendedType::Union(_) => Kind::Union,
        ExtendedType::Enum(_) => Kind::Enum,
        ExtendedType::InputObject(_) => Kind::Input,
    }
}

type Groups<'a> = IndexMap<String, (Kind, Vec<Source<'a>>)>;

/// Types by canonical name, in order of first appearance; kinds must agree.
fn group_types<'a>(ctx: &mut Ctx<'a>) -> Groups<'a> {
    let mut groups: Groups<'a> = IndexMap::new();
    let mut kinds: HashMap<String, Vec<(Kind, usize)>> = HashMap::new();
    for (i, sg) in ctx.input.subgraphs.iter().enumerate() {
        for (local, ty) in &sg.schema.types {
            if ty.is_built_in() || sg.is_internal_type(local) {
                continue;
            }
            let name = sg.canonical(local).to_owned();
            let kind = kind_of(sg, ty);
            kinds.entry(name.clone()).or_default().push((kind, i));
            let entry = groups.entry(name).or_insert((kind, Vec::new()));
            entry.1.push(Source { sg: i, local, ty });
        }
    }
    let mut mismatched = Vec::new();
    for (name, (kind, _)) in &groups {
        let list = &kinds[name];
        if list.iter().any(|(k, _)| k != kind) {
            let parts: Vec<String> = list
                .iter()
                .map(|(k, i)| {
                    format!(
                        "{} in subgraph \"{}\"",
                        k.describe(),
                        ctx.input.subgraphs[*i].name
                    )
                })
                .collect();
            let sgs: Vec<&str> = list
                .iter()
                .map(|(_, i)| ctx.input.subgraphs[*i].name.as_str())
                .collect();
            ctx.sink.error_in(
                codes::TYPE_KIND_MISMATCH,
                format!(
                    "Type \"{name}\" has mismatched kind: it is defined as {}",
                    parts.join(" but ")
                ),
                &sgs,
            );
            mismatched.push(name.clone());
        }
    }
    for name in mismatched {
        groups.shift_remove(&name);
    }
    groups
}

/// Subtyping and enum usage across all subgraphs.
fn collect_relations(ctx: &mut Ctx<'_>) {
    for sg in ctx.input.subgraphs {
        for (local, ty) in &sg.schema.types {
            if ty.is_built_in() || sg.is_internal_type(local) {
                continue;
            }
            let name = sg.canonical(local).to_owned();
            match ty {
                ExtendedType::Object(o) => {
                    for i in &o.implements_interfaces {
                        ctx.subtypes.insert((name.clone(), i.to_string()));
                    }
                    for f in o.fields.values() {
                        note_field_use(ctx, sg, f);
                    }
                }
                ExtendedType::Interface(o) => {
                    for i in &o.implements_interfaces {
                        ctx.subtypes.insert((name.clone(), i.to_string()));
                    }
                    for f in o.fields.values() {
                        note_field_use(ctx, sg, f);
                    }
                }
                ExtendedType::Union(u) => {
                    for m in &u.members {
                        ctx.subtypes
                            .insert((sg.canonical(m).to_owned(), name.clone()));
                    }
                }
                ExtendedType::InputObject(o) => {
                    for f in o.fields.values() {
                        ctx.enum_input_use
                            .insert(f.ty.inner_named_type().to_string());
                    }
                }
                _ => {}
            }
        }
    }
}

fn note_field_use(ctx: &mut Ctx<'_>, sg: &Subgraph, f: &FieldDefinition) {
    ctx.enum_output_use
        .insert(sg.canonical(f.ty.inner_named_type()).to_owned());
    for a in &f.arguments {
        ctx.enum_input_use
            .insert(a.ty.inner_named_type().to_string());
    }
}

/// Rewrites root type names in a type reference to their canonical names.
fn canon_type(sg: &Subgraph, ty: &Type) -> Type {
    let rename = |n: &Name| Name::new(sg.canonical(n)).unwrap_or_else(|_| n.clone());
    match ty {
        Type::Named(n) => Type::Named(rename(n)),
        Type::NonNullNamed(n) => Type::NonNullNamed(rename(n)),
        Type::List(inner) => Type::List(Box::new(canon_type(sg, inner))),
        Type::NonNullList(inner) => Type::NonNullList(Box::new(canon_type(sg, inner))),
    }
}

impl<'a> Ctx<'a> {
    fn sg(&self, i: usize) -> &'a Subgraph {
        &self.input.subgraphs[i]
    }

    /// Whether `sub` can stand where `sup` is expected in an output position.
    fn is_subtype(&self, sub: &Type, sup: &Type) -> bool {
        match (sub, sup) {
            (Type::NonNullNamed(a), Type::NonNullNamed(b) | Type::Named(b))
            | (Type::Named(a), Type::Named(b)) => {
                a == b || self.subtypes.contains(&(a.to_string(), b.to_string()))
            }
            (Type::NonNullList(a), Type::NonNullList(b) | Type::List(b))
            | (Type::List(a), Type::List(b)) => self.is_subtype(a, b),
            _ => false,
        }
    }

    /// Directives carried into the supergraph (tag, inaccessible, auth, context, cost,
    /// composed), under their local names: the supergraph imports them under the name the
    /// subgraphs use.
    fn carried(&mut self, sg_idx: usize, directives: &[&Directive]) -> Vec<String> {
        let sg = &self.input.subgraphs[sg_idx];
        let mut out = Vec::new();
        for d in directives {
            let feature = CARRIED_FEATURES
                .iter()
                .copied()
                .find(|f| sg.dir_name(*f) == d.name.as_str());
            match feature {
                Some(f) => {
                    self.used_features
                        .entry(f)
                        .or_default()
                        .entry(d.name.to_string())
                        .or_default()
                        .push(sg.name.clone());
                }
                None if sg.composed_directives.iter().any(|c| c == d.name.as_str()) => {}
                None => continue,
            }
            let mut carried = (*d).clone();
            if feature == Some(FedDirective::Context) {
                // Context names are per subgraph in the supergraph.
                for arg in &mut carried.arguments {
                    if let (true, Value::String(n)) = (arg.name == "name", arg.value.as_ref()) {
                        let prefixed = format!("{}__{n}", sg.name);
                        arg.make_mut().value = Node::new(Value::String(prefixed));
                    }
                }
            }
            out.push(carried.to_string());
        }
        out
    }

    fn carried_union(&mut self, parts: &[(usize, Vec<&Directive>)]) -> Vec<String> {
        let mut out: IndexSet<String> = IndexSet::new();
        for (sg, dirs) in parts {
            out.extend(self.carried(*sg, dirs));
        }
        self.dedupe_non_repeatable(out.into_iter().collect())
    }

    /// Non-repeatable directives appear once: the first application wins.
    fn dedupe_non_repeatable(&self, list: Vec<String>) -> Vec<String> {
        const SINGLE: &[FedDirective] = &[
            FedDirective::Inaccessible,
            FedDirective::Authenticated,
            FedDirective::RequiresScopes,
            FedDirective::Policy,
            FedDirective::Cost,
            FedDirective::ListSize,
        ];
        let single: HashSet<&str> = SINGLE
            .iter()
            .filter_map(|f| self.used_features.get(f))
            .flat_map(|names| names.keys().map(String::as_str))
            .collect();
        let mut seen = HashSet::new();
        list.into_iter()
            .filter(|d| {
                let name: String = d
                    .trim_start_matches('@')
                    .chars()
                    .take_while(|c| *c != '(' && *c != ' ')
                    .collect();
                !single.contains(name.as_str()) || seen.insert(name)
            })
            .collect()
    }
}

/// Federation directives whose applications the supergraph keeps.
const CARRIED_FEATURES: &[FedDirective] = &[
    FedDirective::Tag,
    FedDirective::Inaccessible,
    FedDirective::Authenticated,
    FedDirective::RequiresScopes,
    FedDirective::Policy,
    FedDirective::Context,
    FedDirective::Cost,
    FedDirective::ListSize,
];

/// The most common non-empty description (first wins ties).
fn merge_description<'d>(
    ctx: &mut Ctx<'_>,
    element: &str,
    descs: impl Iterator<Item = Option<&'d str>>,
) -> Option<String> {
    let mut counts: IndexMap<&str, usize> = IndexMap::new();
    for d in descs.flatten() {
        if !d.trim().is_empty() {
            *counts.entry(d).or_default() += 1;
        }
    }
    if counts.len() > 1 {
        ctx.sink.hint(
            codes::INCONSISTENT_DESCRIPTION,
            format!("Element \"{element}\" has inconsistent descriptions across subgraphs."),
        );
    }
    let best = counts.values().copied().max()?;
    counts
        .into_iter()
        .find(|(_, c)| *c == best)
        .map(|(d, _)| d.to_owned())
}

fn type_directives(ty: &ExtendedType) -> Vec<&Directive> {
    match ty {
        ExtendedType::Scalar(t) => t.directives.dirs(),
        ExtendedType::Object(t) => t.directives.dirs(),
        ExtendedType::Interface(t) => t.directives.dirs(),
        ExtendedType::Union(t) => t.directives.dirs(),
        ExtendedType::Enum(t) => t.directives.dirs(),
        ExtendedType::InputObject(t) => t.directives.dirs(),
    }
}

fn join_types_for(ctx: &Ctx<'_>, src: &Source<'_>, kind: Kind) -> Vec<JoinType> {
    let sg = ctx.sg(src.sg);
    let graph = sg.graph.clone();
    let keys = ctx.input.infos[src.sg].keys.get(src.local);
    let interface_object = matches!(src.ty, ExtendedType::Object(_)) && kind == Kind::Interface;
    match keys {
        Some(keys) if !keys.is_empty() => keys
            .iter()
            .map(|k| JoinType {
                graph: graph.clone(),
                key: Some(k.fields.clone()),
                extension: k.extension,
                resolvable: k.resolvable,
                resolvable_explicit: k.resolvable_explicit,
                interface_object,
            })
            .collect(),
        _ => vec![JoinType {
            graph,
            key: None,
            extension: false,
            resolvable: true,
            resolvable_explicit: false,
            interface_object,
        }],
    }
}

/// One subgraph's definition of a field, with its federation properties.
struct FieldSrc<'a> {
    sg: usize,
    def: &'a FieldDefinition,
    ty: Type,
    external: bool,
    provided: bool,
    requires: Option<String>,
    provides: Option<String>,
    shareable: bool,
    /// (from subgraph, label) when this source overrides another.
    overrides: Option<(String, Option<String>)>,
    /// The label when another subgraph overrides this source; `Some(None)` without label.
    overridden: Option<Option<String>>,
    referenced: bool,
    /// Referenced by a field set or implementing an interface field in its subgraph
    /// (Apollo's "used" fields: an overridden one stays, `usedOverridden`).
    used: bool,
    /// Arguments set from a context (not part of the supergraph field).
    context_args: Vec<ContextArg>,
}

impl FieldSrc<'_> {
    /// The arguments the supergraph field keeps (contextual ones are dropped).
    fn plain_args(&self) -> impl Iterator<Item = &Node<InputValueDefinition>> {
        self.def
            .arguments
            .iter()
            .filter(|a| !self.context_args.iter().any(|c| c.name == a.name.as_str()))
    }
}

fn type_fields(
    ty: &ExtendedType,
) -> Option<
    &apollo_compiler::collections::IndexMap<
        Name,
        apollo_compiler::schema::Component<FieldDefinition>,
    >,
> {
    match ty {
        ExtendedType::Object(o) => Some(&o.fields),
        ExtendedType::Interface(i) => Some(&i.fields),
        _ => None,
    }
}

fn description_of(ty: &ExtendedType) -> Option<&str> {
    match ty {
        ExtendedType::Scalar(t) => t.description.as_deref(),
        ExtendedType::Object(t) => t.description.as_deref(),
        ExtendedType::Interface(t) => t.description.as_deref(),
        ExtendedType::Union(t) => t.description.as_deref(),
        ExtendedType::Enum(t) => t.description.as_deref(),
        ExtendedType::InputObject(t) => t.description.as_deref(),
    }
}

fn implements_of(ty: &ExtendedType) -> Vec<&ComponentName> {
    match ty {
        ExtendedType::Object(o) => o.implements_interfaces.iter().collect(),
        ExtendedType::Interface(i) => i.implements_interfaces.iter().collect(),
        _ => Vec::new(),
    }
}

fn base_type(ctx: &mut Ctx<'_>, name: &str, sources: &[Source<'_>]) -> MType {
    let kind = kind_of(ctx.sg(sources[0].sg), sources[0].ty);
    let mut t = MType::new(name, kind);
    t.description = merge_description(ctx, name, sources.iter().map(|s| description_of(s.ty)));
    for src in sources {
        t.join_types.extend(join_types_for(ctx, src, kind));
    }
    let parts: Vec<(usize, Vec<&Directive>)> = sources
        .iter()
        .map(|s| (s.sg, type_directives(s.ty)))
        .collect();
    t.directives = ctx.carried_union(&parts);
    t
}

fn merge_composite(
    ctx: &mut Ctx<'_>,
    name: &str,
    kind: Kind,
    sources: &[Source<'_>],
) -> Option<MType> {
    if kind == Kind::Interface
        && sources
            .iter()
            .all(|s| matches!(s.ty, ExtendedType::Object(_)))
    {
        let names: Vec<&str> = sources.iter().map(|s| ctx.sg(s.sg).name.as_str()).collect();
        ctx.sink.error_in(
            codes::INTERFACE_OBJECT_USAGE_ERROR,
            format!(
                "Type \"{name}\" is declared with @interfaceObject in all the subgraphs in which it is defined (it is defined in {} but should be defined as an interface in at least one subgraph)",
                subgraphs_phrase(&names)
            ),
            &names,
        );
        return None;
    }
    let mut t = base_type(ctx, name, sources);
    for src in sources {
        let sg = ctx.sg(src.sg);
        for i in implements_of(src.ty) {
            let iface = sg.canonical(i).to_owned();
            if !t.implements.contains(&iface) {
                t.implements.push(iface.clone());
            }
            t.join_implements.push((sg.graph.clone(), iface));
        }
    }
    let is_query = name == "Query";
    let type_sources = if is_query {
        ctx.input.subgraphs.len()
    } else {
        sources.len()
    };
    let mut names: IndexSet<&str> = IndexSet::new();
    for src in sources {
        if let Some(fields) = type_fields(src.ty) {
            names.extend(fields.keys().map(|n| n.as_str()));
        }
    }
    let value_object = kind == Kind::Object
        && !entity_hint(ctx, name, sources)
        && !matches!(name, "Query" | "Mutation" | "Subscription");
    for fname in names {
        if is_query && (fname == "_service" || fname == "_entities") {
            continue;
        }
        let srcs = field_sources(ctx, name, kind, sources, fname);
        if srcs.is_empty() {
            continue;
        }
        if kind == Kind::Interface {
            value_interface_field_hint(ctx, name, fname, sources, &srcs);
        }
        // Subgraphs whose type has only @external fields do not count (Apollo).
        let lacking = sources.iter().any(|s| {
            !srcs.iter().any(|f| f.sg == s.sg)
                && type_fields(s.ty).is_some_and(|fs| {
                    fs.keys().any(|f| {
                        !ctx.input.infos[s.sg]
                            .external
                            .contains(&(s.local.to_owned(), f.to_string()))
                    })
                })
        });
        if value_object && lacking {
            let (have, missing) = presence(ctx, sources, &srcs);
            ctx.sink.hint(
                codes::INCONSISTENT_OBJECT_VALUE_TYPE_FIELD,
                format!(
                    "Field \"{name}.{fname}\" of non-entity object type \"{name}\" is defined in some but not all subgraphs that define \"{name}\": \"{name}.{fname}\" is defined in {} but not in {}.",
                    subgraphs_phrase(&have),
                    subgraphs_phrase(&missing)
                ),
            );
        }
        if let Some(f) = merge_field(ctx, name, kind, fname, srcs, type_sources) {
            t.fields.insert(fname.to_owned(), f);
        }
    }
    if t.fields.is_empty() {
        return None;
    }
    Some(t)
}

/// Whether an object type is an entity (has a `@key`) in some subgraph; hints when it is
/// not in all of them.
fn entity_hint(ctx: &mut Ctx<'_>, name: &str, sources: &[Source<'_>]) -> bool {
    let (keyed, plain): (Vec<&Source<'_>>, Vec<&Source<'_>>) = sources.iter().partition(|s| {
        ctx.input.infos[s.sg]
            .keys
            .get(s.local)
            .is_some_and(|k| !k.is_empty())
    });
    if !keyed.is_empty() && !plain.is_empty() {
        let names = |v: &[&Source<'_>]| -> Vec<&str> {
            v.iter().map(|s| ctx.sg(s.sg).name.as_str()).collect()
        };
        let message = format!(
            "Type \"{name}\" is declared as an entity (has a @key applied) in some but not all defining subgraphs: it has no @key in {} but has some @key in {}.",
            subgraphs_phrase(&names(&plain)),
            subgraphs_phrase(&names(&keyed))
        );
        ctx.sink.hint(codes::INCONSISTENT_ENTITY, message);
    }
    !keyed.is_empty()
}

/// The subgraphs of `sources` that have a field (its `srcs`) and those that do not.
fn presence<'c>(
    ctx: &Ctx<'c>,
    sources: &[Source<'_>],
    srcs: &[FieldSrc<'_>],
) -> (Vec<&'c str>, Vec<&'c str>) {
    let have: Vec<&str> = srcs.iter().map(|s| ctx.sg(s.sg).name.as_str()).collect();
    let missing: Vec<&str> = sources
        .iter()
        .map(|s| ctx.sg(s.sg).name.as_str())
        .filter(|n| !have.contains(n))
        .collect();
    (have, missing)
}

/// A field of an interface without keys that only some of its subgraphs define.
fn value_interface_field_hint(
    ctx: &mut Ctx<'_>,
    tname: &str,
    fname: &str,
    sources: &[Source<'_>],
    srcs: &[FieldSrc<'_>],
) {
    let plain = sources.iter().all(|s| {
        matches!(s.ty, ExtendedType::Interface(_))
            && ctx.input.infos[s.sg]
                .keys
                .get(s.local)
                .is_none_or(|k| k.is_empty())
    });
    if !plain || srcs.len() == sources.len() {
        return;
    }
    let have: Vec<&str> = srcs.iter().map(|s| ctx.sg(s.sg).name.as_str()).collect();
    let missing: Vec<&str> = sources
        .iter()
        .map(|s| ctx.sg(s.sg).name.as_str())
        .filter(|n| !have.contains(n))
        .collect();
    ctx.sink.hint(
        codes::INCONSISTENT_INTERFACE_VALUE_TYPE_FIELD,
        format!(
            "Field \"{tname}.{fname}\" of interface type \"{tname}\" is defined in some but not all subgraphs that define \"{tname}\": \"{tname}.{fname}\" is defined in {} but not in {}.",
            subgraphs_phrase(&have),
            subgraphs_phrase(&missing)
        ),
    );
}

fn field_sources<'a>(
    ctx: &mut Ctx<'_>,
    tname: &str,
    kind: Kind,
    sources: &[Source<'a>],
    fname: &str,
) -> Vec<FieldSrc<'a>> {
    let mut out = Vec::new();
    for src in sources {
        let Some(def) = type_fields(src.ty).and_then(|f| f.get(fname)) else {
            continue;
        };
        let sg = ctx.sg(src.sg);
        let info = &ctx.input.infos[src.sg];
        let coord = (src.local.to_owned(), fname.to_owned());
        let external = info.external.contains(&coord);
        let referenced = info.referenced.contains(&coord);
        let in_interface = implements_of(src.ty).iter().any(|i| {
            sg.schema
                .types
                .get(i.as_str())
                .and_then(type_fields)
                .is_some_and(|f| f.contains_key(fname))
        });
        if external && !referenced {
            if sg.fed1 {
                // Federation 1 upgrade: unused @external fields are dropped.
                continue;
            }
            if !in_interface && kind == Kind::Object {
                ctx.sink.error(
                    codes::EXTERNAL_UNUSED,
                    format!(
                        "[{}] Field \"{tname}.{fname}\" is marked @external but is not used in any federation directive (@key, @provides, @requires) or to satisfy an interface; the field declaration has no use and should be removed (or the field should not be @external).",
                        sg.name
                    ),
                    &sg.name,
                );
                ctx.sink.locate(sg.location(def.name.location()));
            }
        }
        let type_shareable = sg.has(&type_dirs_owned(src.ty), FedDirective::Shareable);
        let shareable = sg.fed1
            || type_shareable
            || sg.has(&def.directives, FedDirective::Shareable)
            || info.key_fields.contains(&coord);
        let requires = sg
            .applications(&def.directives, FedDirective::Requires)
            .first()
            .and_then(|d| str_arg(d, "fields"))
            .map(str::to_owned);
        let provides = sg
            .applications(&def.directives, FedDirective::Provides)
            .first()
            .and_then(|d| str_arg(d, "fields"))
            .map(str::to_owned);
        let overrides = sg
            .applications(&def.directives, FedDirective::Override)
            .first()
            .and_then(|d| {
                str_arg(d, "from")
                    .map(|from| (from.to_owned(), str_arg(d, "label").map(str::to_owned)))
            });
        out.push(FieldSrc {
            sg: src.sg,
            def,
            ty: canon_type(sg, &def.ty),
            external,
            provided: info.provided.contains(&coord),
            requires,
            provides,
            shareable,
            overrides,
            overridden: None,
            referenced,
            used: referenced || in_interface,
            context_args: info.context_args.get(&coord).cloned().unwrap_or_default(),
        });
    }
    resolve_overrides(ctx, tname, fname, &mut out);
    out
}

fn type_dirs_owned(ty: &ExtendedType) -> Vec<&Directive> {
    type_directives(ty)
}

/// Marks the sources other subgraphs `@override`, reporting misuse.
fn resolve_overrides(ctx: &mut Ctx<'_>, tname: &str, fname: &str, srcs: &mut [FieldSrc<'_>]) {
    let mut marks = Vec::new();
    let mut unknown_from = Vec::new();
    for (i, s) in srcs.iter().enumerate() {
        let Some((from, label)) = &s.overrides else {
            continue;
        };
        let me = &ctx.sg(s.sg).name;
        if from == me {
            ctx.sink.error(
                codes::OVERRIDE_FROM_SELF_ERROR,
                format!("Source and destination subgraphs \"{from}\" are the same for overridden field \"{tname}.{fname}\""),
                me,
            );
            continue;
        }
        if !ctx.input.subgraphs.iter().any(|g| &g.name == from) {
            ctx.sink.hint(
                codes::FROM_SUBGRAPH_DOES_NOT_EXIST,
                format!("Source subgraph \"{from}\" for field \"{tname}.{fname}\" on subgraph \"{me}\" does not exist. Did you mean \"{me}\"?"),
            );
            // No overriding then: the supergraph does not mention it (Apollo).
            unknown_from.push(i);
            continue;
        }
        let target = srcs.iter().position(|o| &ctx.sg(o.sg).name == from);
        match target {
            None => ctx.sink.hint(
                codes::OVERRIDE_DIRECTIVE_CAN_BE_REMOVED,
                format!("Field \"{tname}.{fname}\" on subgraph \"{me}\" no longer exists in the from subgraph. The @override directive can be removed."),
            ),
            Some(j) if srcs[j].overrides.is_some() => ctx.sink.error_in(
                codes::OVERRIDE_SOURCE_HAS_OVERRIDE,
                format!("Field \"{tname}.{fname}\" on subgraph \"{me}\" is also marked with directive @override in subgraph \"{from}\". Only one @override directive is allowed per field."),
                &[me, from],
            ),
            Some(j) => {
                if s.external {
                    ctx.sink.error(
                        codes::OVERRIDE_COLLISION_WITH_ANOTHER_DIRECTIVE,
                        format!("@override cannot be used on field \"{tname}.{fname}\" on subgraph \"{me}\" since \"{tname}.{fname}\" on \"{me}\" is marked with directive \"@external\""),
                        me,
                    );
                    continue;
                }
                if label.is_none() && srcs[j].external {
                    // The from field is @external there: nothing is overridden.
                    ctx.sink.hint(
                        codes::OVERRIDE_DIRECTIVE_CAN_BE_REMOVED,
                        format!("Field \"{tname}.{fname}\" on subgraph \"{me}\" is not resolved anymore by the from subgraph (it is marked \"@external\" in \"{from}\"). The @override directive can be removed."),
                    );
                    continue;
                }
                if label.is_some() {
                    ctx.sink.hint(
                        codes::OVERRIDE_MIGRATION_IN_PROGRESS,
                        format!("Field \"{tname}.{fname}\" is currently being migrated with progressive @override. Once the migration is complete, remove the field from subgraph \"{from}\"."),
                    );
                }
                marks.push((i, j, label.clone()));
            }
        }
    }
    for i in unknown_from {
        srcs[i].overrides = None;
    }
    for (_, j, label) in marks {
        // Apollo hints even when the field implements an interface field (`usedOverridden`).
        if label.is_none() && !srcs[j].referenced {
            let from = &ctx.sg(srcs[j].sg).name;
            ctx.sink.hint(
                codes::OVERRIDDEN_FIELD_CAN_BE_REMOVED,
                format!("Field \"{tname}.{fname}\" on subgraph \"{from}\" is overridden. Consider removing it."),
            );
        }
        srcs[j].overridden = Some(label);
    }
}

fn merge_field(
    ctx: &mut Ctx<'_>,
    tname: &str,
    kind: Kind,
    fname: &str,
    srcs: Vec<FieldSrc<'_>>,
    type_sources: usize,
) -> Option<MField> {
    let coord = format!("{tname}.{fname}");
    let live: Vec<&FieldSrc<'_>> = srcs.iter().filter(|s| !s.external).collect();
    if live.is_empty() && kind == Kind::Object {
        let names: Vec<&str> = srcs.iter().map(|s| ctx.sg(s.sg).name.as_str()).collect();
        ctx.sink.error_in(
            codes::EXTERNAL_MISSING_ON_BASE,
            format!(
                "Field \"{coord}\" is marked @external on all the subgraphs in which it is listed ({}).",
                subgraphs_phrase(&names)
            ),
            &names,
        );
        for s in &srcs {
            ctx.sink
                .locate(ctx.sg(s.sg).location(s.def.name.location()));
        }
        return None;
    }
    let typed: Vec<&FieldSrc<'_>> = if live.is_empty() {
        srcs.iter().collect()
    } else {
        live
    };
    let ty = merge_output_type(ctx, &coord, &typed)?;
    let types_differ = srcs.iter().any(|s| s.ty != ty);
    check_sharing(ctx, kind, &coord, &srcs);
    let args = merge_args(ctx, &coord, &typed);
    let special = srcs.iter().any(|s| {
        s.external
            || s.requires.is_some()
            || s.provides.is_some()
            || s.overrides.is_some()
            || s.overridden.is_some()
            || !s.context_args.is_empty()
    });
    let joins = (srcs.len() != type_sources || special || types_differ)
        .then(|| join_fields(ctx, &srcs, types_differ));
    let description = merge_description(
        ctx,
        &coord,
        srcs.iter().map(|s| s.def.description.as_deref()),
    );
    let parts: Vec<(usize, Vec<&Directive>)> = srcs
        .iter()
        .map(|s| (s.sg, s.def.directives.dirs()))
        .collect();
    let directives = ctx.carried_union(&parts);
    Some(MField {
        name: fname.to_owned(),
        description,
        ty,
        args,
        default: None,
        joins,
        directives,
    })
}

fn join_fields(ctx: &Ctx<'_>, srcs: &[FieldSrc<'_>], types_differ: bool) -> Vec<JoinField> {
    let mut out = Vec::new();
    for s in srcs {
        let (override_from, mut override_label) = match &s.overrides {
            Some((from, label)) => (Some(from.clone()), label.clone()),
            None => (None, None),
        };
        let mut used_overridden = false;
        match &s.overridden {
            Some(None) if s.used => used_overridden = true,
            Some(None) => continue,
            Some(Some(label)) => override_label = Some(label.clone()),
            None => {}
        }
        out.push(JoinField {
            graph: Some(ctx.sg(s.sg).graph.clone()),
            requires: s.requires.clone(),
            provides: s.provides.clone(),
            ty: types_differ.then(|| s.ty.to_string()),
            external: s.external,
            override_from,
            used_overridden,
            override_label,
            context_arguments: s.context_args.clone(),
        });
    }
    out
}

/// The most general type of an output field across its sources.
fn merge_output_type(ctx: &mut Ctx<'_>, coord: &str, srcs: &[&FieldSrc<'_>]) -> Option<Type> {
    let mut best = srcs[0];
    for s in &srcs[1..] {
        if ctx.is_subtype(&s.ty, &best.ty) {
            continue;
        }
        if ctx.is_subtype(&best.ty, &s.ty) {
            best = s;
            continue;
        }
        let (a, b) = (ctx.sg(best.sg).name.clone(), ctx.sg(s.sg).name.clone());
        ctx.sink.error_in(
            codes::FIELD_TYPE_MISMATCH,
            format!(
                "Type of field \"{coord}\" is incompatible across subgraphs: it has type \"{}\" in subgraph \"{a}\" but type \"{}\" in subgraph \"{b}\"",
                best.ty, s.ty
            ),
            &[&a, &b],
        );
        for src in [best, s] {
            ctx.sink
                .locate(ctx.sg(src.sg).location(src.def.name.location()));
        }
        return None;
    }
    let other: Vec<&str> = srcs
        .iter()
        .filter(|s| s.ty != best.ty)
        .map(|s| ctx.sg(s.sg).name.as_str())
        .collect();
    if !other.is_empty() {
        let msg = format!(
            "Type of field \"{coord}\" is inconsistent but compatible across subgraphs: will use type \"{}\" (from {}) in supergraph but \"{coord}\" has subtype in {}.",
            best.ty,
            subgraphs_phrase(&[ctx.sg(best.sg).name.as_str()]),
            subgraphs_phrase(&other)
        );
        ctx.sink
            .hint(codes::INCONSISTENT_BUT_COMPATIBLE_FIELD_TYPE, msg);
    }
    Some(best.ty.clone())
}

fn check_sharing(ctx: &mut Ctx<'_>, kind: Kind, coord: &str, srcs: &[FieldSrc<'_>]) {
    if kind != Kind::Object {
        return;
    }
    let resolving: Vec<&FieldSrc<'_>> = srcs
        .iter()
        .filter(|s| (!s.external || s.provided) && s.overridden.is_none())
        .collect();
    if resolving.len() < 2 {
        return;
    }
    let non_shareable: Vec<&str> = resolving
        .iter()
        .filter(|s| !s.shareable && !s.external)
        .map(|s| ctx.sg(s.sg).name.as_str())
        .collect();
    if non_shareable.is_empty() {
        return;
    }
    let all: Vec<&str> = resolving
        .iter()
        .map(|s| ctx.sg(s.sg).name.as_str())
        .collect();
    let which = if non_shareable.len() == all.len() {
        "in all of them".to_owned()
    } else {
        format!("in {}", subgraphs_phrase(&non_shareable))
    };
    ctx.sink.error_in(
        codes::INVALID_FIELD_SHARING,
        format!(
            "Non-shareable field \"{coord}\" is resolved from multiple subgraphs: it is resolved from {} and defined as non-shareable {which}",
            subgraphs_phrase(&all)
        ),
        &all,
    );
    for s in resolving {
        ctx.sink
            .locate(ctx.sg(s.sg).location(s.def.name.location()));
    }
}

/// The most restrictive type of an input position (argument or input field).
fn merge_input_type(
    ctx: &mut Ctx<'_>,
    coord: &str,
    code: &str,
    types: &[(usize, Type)],
) -> Option<Type> {
    let mut best = &types[0];
    for t in &types[1..] {
        if ctx.is_subtype(&t.1, &best.1) && same_named(&t.1, &best.1) {
            best = t;
        } else if !(ctx.is_subtype(&best.1, &t.1) && same_named(&t.1, &best.1)) {
            let (a, b) = (ctx.sg(best.0).name.clone(), ctx.sg(t.0).name.clone());
            ctx.sink.error_in(
                code,
                format!(
                    "Type of {coord} is incompatible across subgraphs: it has type \"{}\" in subgraph \"{a}\" but type \"{}\" in subgraph \"{b}\"",
                    best.1, t.1
                ),
                &[&a, &b],
            );
            return None;
        }
    }
    Some(best.1.clone())
}

fn same_named(a: &Type, b: &Type) -> bool {
    a.inner_named_type() == b.inner_named_type()
}

fn is_required(v: &InputValueDefinition) -> bool {
    v.ty.is_non_null() && v.default_value.is_none()
}

fn merge_args(ctx: &mut Ctx<'_>, coord: &str, srcs: &[&FieldSrc<'_>]) -> Vec<MArg> {
    let mut names: IndexSet<&str> = IndexSet::new();
    for s in srcs {
        names.extend(s.plain_args().map(|a| a.name.as_str()));
    }
    let mut out = Vec::new();
    for aname in names {
        let defs: Vec<(usize, &Node<InputValueDefinition>)> = srcs
            .iter()
            .filter_map(|s| s.plain_args().find(|a| a.name == aname).map(|a| (s.sg, a)))
            .collect();
        let arg_coord = format!("{coord}({aname}:)");
        if defs.len() != srcs.len() {
            let have: Vec<&str> = defs.iter().map(|(i, _)| ctx.sg(*i).name.as_str()).collect();
            let missing: Vec<&str> = srcs
                .iter()
                .filter(|s| !defs.iter().any(|(i, _)| *i == s.sg))
                .map(|s| ctx.sg(s.sg).name.as_str())
                .collect();
            if defs.iter().any(|(_, a)| is_required(a)) {
                let msg = format!(
                    "Argument \"{arg_coord}\" is required in some subgraphs but does not appear in all subgraphs: it is required in {} but does not appear in {}",
                    subgraphs_phrase(&have),
                    subgraphs_phrase(&missing)
                );
                ctx.sink.error_in(
                    codes::REQUIRED_ARGUMENT_MISSING_IN_SOME_SUBGRAPH,
                    msg,
                    &have,
                );
            } else {
                let msg = format!(
                    "Optional argument \"{arg_coord}\" will not be included in the supergraph as it does not appear in all subgraphs: it is defined in {} but not in {}.",
                    subgraphs_phrase(&have),
                    subgraphs_phrase(&missing)
                );
                ctx.sink.hint(codes::INCONSISTENT_ARGUMENT_PRESENCE, msg);
            }
            continue;
        }
        if let Some(arg) = merge_input_value(ctx, &format!("argument \"{arg_coord}\""), &defs, true)
        {
            out.push(arg);
        }
    }
    out
}

/// Merges an argument or input field present in every source.
fn merge_input_value(
    ctx: &mut Ctx<'_>,
    what: &str,
    defs: &[(usize, &Node<InputValueDefinition>)],
    is_arg: bool,
) -> Option<MArg> {
    let types: Vec<(usize, Type)> = defs
        .iter()
        .map(|(i, a)| (*i, canon_type(ctx.sg(*i), &a.ty)))
        .collect();
    let (type_code, default_code) = if is_arg {
        (
            codes::FIELD_ARGUMENT_TYPE_MISMATCH,
            codes::FIELD_ARGUMENT_DEFAULT_MISMATCH,
        )
    } else {
        (
            codes::FIELD_TYPE_MISMATCH,
            codes::INPUT_FIELD_DEFAULT_MISMATCH,
        )
    };
    let ty = merge_input_type(ctx, what, type_code, &types)?;
    let mut default: Option<(usize, &Value)> = None;
    let mut some_missing = false;
    for (i, a) in defs {
        match (&a.default_value, default) {
            (None, _) => some_missing = true,
            (Some(v), None) => default = Some((*i, v)),
            (Some(v), Some((j, d))) if v.as_ref() != d => {
                let (a_name, b_name) = (ctx.sg(j).name.clone(), ctx.sg(*i).name.clone());
                ctx.sink.error_in(
                    default_code,
                    format!(
                        "Default value of {what} has incompatible default values across subgraphs: it has default value {d} in subgraph \"{a_name}\" but default value {v} in subgraph \"{b_name}\""
                    ),
                    &[&a_name, &b_name],
                );
                return None;
            }
            _ => {}
        }
    }
    if some_missing && default.is_some() {
        ctx.sink.hint(
            codes::INCONSISTENT_DEFAULT_VALUE_PRESENCE,
            format!("{what} has a default value in only some subgraphs."),
        );
    }
    let description = merge_description(
        ctx,
        what,
        defs.iter().map(|(_, a)| a.description.as_deref()),
    );
    let parts: Vec<(usize, Vec<&Directive>)> = defs
        .iter()
        .map(|(i, a)| (*i, a.directives.dirs()))
        .collect();
    let directives = ctx.carried_union(&parts);
    Some(MArg {
        name: defs[0].1.name.to_string(),
        description,
        ty,
        default: default.map(|(_, v)| v.clone()),
        directives,
    })
}

fn merge_input(ctx: &mut Ctx<'_>, name: &str, sources: &[Source<'_>]) -> Option<MType> {
    let mut t = base_type(ctx, name, sources);
    let objs: Vec<(usize, &apollo_compiler::schema::InputObjectType)> = sources
        .iter()
        .filter_map(|s| match s.ty {
            ExtendedType::InputObject(o) => Some((s.sg, &**o)),
            _ => None,
        })
        .collect();
    let mut names: IndexSet<&str> = IndexSet::new();
    for (_, o) in &objs {
        names.extend(o.fields.keys().map(|n| n.as_str()));
    }
    for fname in names {
        let defs: Vec<(usize, &Node<InputValueDefinition>)> = objs
            .iter()
            .filter_map(|(i, o)| o.fields.get(fname).map(|f| (*i, &f.node)))
            .collect();
        let coord = format!("{name}.{fname}");
        if defs.len() != objs.len() {
            let have: Vec<&str> = defs.iter().map(|(i, _)| ctx.sg(*i).name.as_str()).collect();
            let missing: Vec<&str> = objs
                .iter()
                .filter(|(i, _)| !defs.iter().any(|(j, _)| j == i))
                .map(|(i, _)| ctx.sg(*i).name.as_str())
                .collect();
            if defs.iter().any(|(_, f)| is_required(f)) {
                let msg = format!(
                    "Input object field \"{coord}\" is required in some subgraphs but does not appear in all subgraphs: it is required in {} but does not appear in {}",
                    subgraphs_phrase(&have),
                    subgraphs_phrase(&missing)
                );
                ctx.sink.error_in(
                    codes::REQUIRED_INPUT_FIELD_MISSING_IN_SOME_SUBGRAPH,
                    msg,
                    &have,
                );
            } else {
                let msg = format!(
                    "Input object field \"{fname}\" will not be added to \"{name}\" in the supergraph as it does not appear in all subgraphs: it is defined in {} but not in {}.",
                    subgraphs_phrase(&have),
                    subgraphs_phrase(&missing)
                );
                ctx.sink.hint(codes::INCONSISTENT_INPUT_OBJECT_FIELD, msg);
            }
            continue;
        }
        let Some(v) = merge_input_value(ctx, &format!("field \"{coord}\""), &defs, false) else {
            continue;
        };
        let types_differ = defs
            .iter()
            .any(|(i, f)| canon_type(ctx.sg(*i), &f.ty) != v.ty);
        let joins = types_differ.then(|| {
            defs.iter()
                .map(|(i, f)| JoinField {
                    graph: Some(ctx.sg(*i).graph.clone()),
                    ty: Some(canon_type(ctx.sg(*i), &f.ty).to_string()),
                    ..JoinField::default()
                })
                .collect()
        });
        t.fields.insert(
            fname.to_owned(),
            MField {
                name: v.name,
                description: v.description,
                ty: v.ty,
                args: Vec::new(),
                default: v.default,
                joins,
                directives: v.directives,
            },
        );
    }
    if t.fields.is_empty() {
        let names: Vec<&str> = objs.iter().map(|(i, _)| ctx.sg(*i).name.as_str()).collect();
        ctx.sink.error_in(
            codes::EMPTY_MERGED_INPUT_TYPE,
            format!("None of the fields of input object type \"{name}\" are consistently defined in all the subgraphs defining that type. As only fields common to all subgraphs are merged, this would result in an empty type."),
            &names,
        );
        return None;
    }
    Some(t)
}

fn merge_union(ctx: &mut Ctx<'_>, name: &str, sources: &[Source<'_>]) -> Option<MType> {
    let mut t = base_type(ctx, name, sources);
    for src in sources {
        let ExtendedType::Union(u) = src.ty else {
            continue;
        };
        let sg = ctx.sg(src.sg);
        for m in &u.members {
            let member = sg.canonical(m).to_owned();
            if !t.members.contains(&member) {
                t.members.push(member.clone());
            }
            t.join_members.push((sg.graph.clone(), member));
        }
    }
    for member in &t.members {
        let (have, missing): (Vec<&Source<'_>>, Vec<&Source<'_>>) =
            sources.iter().partition(|src| {
                let graph = &ctx.sg(src.sg).graph;
                t.join_members
                    .iter()
                    .any(|(g, m)| g == graph && m == member)
            });
        if missing.is_empty() {
            continue;
        }
        let names = |v: &[&Source<'_>]| -> Vec<String> {
            v.iter().map(|s| ctx.sg(s.sg).name.clone()).collect()
        };
        ctx.sink.hint(
            codes::INCONSISTENT_UNION_MEMBER,
            format!(
                "Union type \"{name}\" includes member type \"{member}\" in some but not all defining subgraphs: \"{member}\" is defined in {} but not in {}.",
                subgraphs_phrase(&names(&have)),
                subgraphs_phrase(&names(&missing))
            ),
        );
    }
    Some(t)
}

fn merge_scalar(ctx: &mut Ctx<'_>, name: &str, sources: &[Source<'_>]) -> Option<MType> {
    Some(base_type(ctx, name, sources))
}

fn merge_enum(ctx: &mut Ctx<'_>, name: &str, sources: &[Source<'_>]) -> Option<MType> {
    let mut t = base_type(ctx, name, sources);
    let enums: Vec<(usize, &apollo_compiler::schema::EnumType)> = sources
        .iter()
        .filter_map(|s| match s.ty {
            ExtendedType::Enum(e) => Some((s.sg, &**e)),
            _ => None,
        })
        .collect();
    let input = ctx.enum_input_use.contains(name);
    let output = ctx.enum_output_use.contains(name);
    let mut names: IndexSet<&str> = IndexSet::new();
    for (_, e) in &enums {
        names.extend(e.values.keys().map(|n| n.as_str()));
    }
    for vname in names {
        let defs: Vec<(usize, &apollo_compiler::schema::EnumValueDefinition)> = enums
            .iter()
            .filter_map(|(i, e)| e.values.get(vname).map(|v| (*i, &***v)))
            .collect();
        // A value marked @inaccessible in some subgraph skips the input checks (Apollo).
        let inaccessible = defs
            .iter()
            .any(|(i, v)| ctx.sg(*i).has(&v.directives, FedDirective::Inaccessible));
        if defs.len() != enums.len() && !(inaccessible && input) {
            let have: Vec<&str> = defs.iter().map(|(i, _)| ctx.sg(*i).name.as_str()).collect();
            let missing: Vec<&str> = enums
                .iter()
                .filter(|(i, _)| !defs.iter().any(|(j, _)| j == i))
                .map(|(i, _)| ctx.sg(*i).name.as_str())
                .collect();
            let detail = format!(
                "\"{vname}\" is defined in {} but not in {}",
                subgraphs_phrase(&have),
                subgraphs_phrase(&missing)
            );
            if input && output {
                let all: Vec<&str> = enums
                    .iter()
                    .map(|(i, _)| ctx.sg(*i).name.as_str())
                    .collect();
                ctx.sink.error_in(
                    codes::ENUM_VALUE_MISMATCH,
                    format!("Enum type \"{name}\" is used as both input type and output type, but value \"{vname}\" is not defined in all the subgraphs defining \"{name}\": {detail}"),
                    &all,
                );
                continue;
            }
            if input {
                ctx.sink.hint(
                    codes::INCONSISTENT_ENUM_VALUE_FOR_INPUT_ENUM,
                    format!("Value \"{vname}\" of enum type \"{name}\" will not be part of the supergraph as it is not defined in all the subgraphs defining \"{name}\": {detail}."),
                );
                continue;
            }
            ctx.sink.hint(
                codes::INCONSISTENT_ENUM_VALUE_FOR_OUTPUT_ENUM,
                format!("Value \"{vname}\" of enum type \"{name}\" has been added to the supergraph but is only defined in a subset of the subgraphs defining \"{name}\": {detail}."),
            );
        }
        let description = merge_description(
            ctx,
            &format!("{name}.{vname}"),
            defs.iter().map(|(_, v)| v.description.as_deref()),
        );
        let parts: Vec<(usize, Vec<&Directive>)> = defs
            .iter()
            .map(|(i, v)| (*i, v.directives.dirs()))
            .collect();
        let directives = ctx.carried_union(&parts);
        t.values.insert(
            vname.to_owned(),
            MEnumValue {
                name: vname.to_owned(),
                description,
                graphs: defs.iter().map(|(i, _)| ctx.sg(*i).graph.clone()).collect(),
                directives,
            },
        );
    }
    if t.values.is_empty() {
        let all: Vec<&str> = enums
            .iter()
            .map(|(i, _)| ctx.sg(*i).name.as_str())
            .collect();
        ctx.sink.error_in(
            codes::EMPTY_MERGED_ENUM_TYPE,
            format!("None of the values of enum type \"{name}\" are defined consistently in all the subgraphs defining that type. As only values common to all subgraphs are merged, this would result in an empty type."),
            &all,
        );
        return None;
    }
    Some(t)
}

/// Fields an `@interfaceObject` contributes appear on every implementation of the interface.
fn add_interface_object_fields(ctx: &Ctx<'_>, sup: &mut Supergraph) {
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
    let _ = ctx;
    for (tname, f) in additions {
        if let Some(t) = sup.types.get_mut(&tname) {
            t.fields.insert(f.name.clone(), f);
        }
    }
}

/// Graphs, roots, links and feature definitions.
fn finish(ctx: &mut Ctx<'_>, sup: &mut Supergraph) {
    let subgraphs = ctx.input.subgraphs;
    let max_minor = subgraphs
        .iter()
        .filter(|s| !s.fed1)
        .map(|s| s.version.minor)
        .max()
        .unwrap_or(0);
    sup.join_version = specs::join_version(max_minor);
    sup.graphs = subgraphs
        .iter()
        .map(|s| (s.graph.clone(), s.name.clone(), s.url.clone()))
        .collect();
    if let Some(q) = sup.types.get_mut("Query") {
        let mut ordered = Vec::new();
        for sg in subgraphs {
            let existing: Vec<JoinType> = q
                .join_types
                .iter()
                .filter(|j| j.graph == sg.graph)
                .cloned()
                .collect();
            if existing.is_empty() {
                ordered.push(JoinType {
                    graph: sg.graph.clone(),
                    resolvable: true,
                    ..JoinType::default()
                });
            } else {
                ordered.extend(existing);
            }
        }
        q.join_types = ordered;
    } else if ctx.sink.errors.is_empty() {
        // Otherwise the query type was dropped because of an error already reported.
        ctx.sink.error_in(
            codes::NO_QUERIES,
            "No queries found in any subgraph: a supergraph must have a query root type."
                .to_owned(),
            &[],
        );
    }
    for op in ["Query", "Mutation", "Subscription"] {
        if sup.types.contains_key(op) {
            sup.roots.push((op, op.to_owned()));
        }
    }
    feature_links(ctx, sup);
    composed_directives(ctx, sup);
    executable_directives(ctx, sup);
}

/// The supergraph name of each carried feature directive; subgraphs using it under
/// different names are an error.
fn feature_names(ctx: &mut Ctx<'_>) -> HashMap<FedDirective, String> {
    let mut out = HashMap::new();
    let subgraphs = ctx.input.subgraphs;
    for (f, names) in &ctx.used_features {
        let mut it = names.iter();
        let Some((first, first_users)) = it.next() else {
            continue;
        };
        for (other, users) in it {
            let version = subgraphs
                .iter()
                .find(|s| s.name == users[0])
                .map(|s| format!("{}.{}", s.version.major, s.version.minor))
                .unwrap_or_default();
            ctx.sink.error_in(
                codes::LINK_IMPORT_NAME_MISMATCH,
                format!(
                    "The \"@{}\" directive (from https://specs.apollo.dev/federation/v{version}) is imported with mismatched name between subgraphs: it is imported as \"@{other}\" in subgraph \"{}\" but \"@{first}\" in subgraph \"{}\"",
                    f.name(),
                    users[0],
                    first_users[0]
                ),
                &[users[0].as_str(), first_users[0].as_str()],
            );
        }
        out.insert(*f, first.clone());
    }
    out
}

/// `import: [...]` of a feature link for the directives used under another name.
fn renamed_imports(
    names: &HashMap<FedDirective, String>,
    directives: &[FedDirective],
) -> Vec<String> {
    directives
        .iter()
        .filter_map(|f| {
            let local = names.get(f)?;
            (local != f.name()).then(|| format!("{{name: \"@{}\", as: \"@{local}\"}}", f.name()))
        })
        .collect()
}

/// `@link`s and definitions of the features whose directives the supergraph carries.
fn feature_links(ctx: &mut Ctx<'_>, sup: &mut Supergraph) {
    let names = feature_names(ctx);
    let rename = |f: FedDirective, def: &str| -> String {
        match names.get(&f) {
            Some(local) => {
                let old = format!("directive @{}", f.name());
                match def.strip_prefix(&old) {
                    Some(rest) if rest.starts_with(['(', ' ']) => {
                        format!("directive @{local}{rest}")
                    }
                    _ => def.to_owned(),
                }
            }
            None => def.to_owned(),
        }
    };
    sup.inaccessible_name = names
        .get(&FedDirective::Inaccessible)
        .cloned()
        .unwrap_or_else(|| FedDirective::Inaccessible.name().to_owned());
    let push_link = |sup: &mut Supergraph, url: &str, purpose, imports: Vec<String>| {
        sup.links.push(Link {
            url: url.to_owned(),
            purpose,
            import: (!imports.is_empty()).then(|| format!("[{}]", imports.join(", "))),
        });
    };
    for feature in specs::SUPERGRAPH_FEATURES {
        if names.contains_key(&feature.directive) {
            let imports = renamed_imports(&names, &[feature.directive]);
            push_link(sup, feature.url, feature.purpose, imports);
            sup.extra_definitions.extend(
                feature
                    .definitions
                    .iter()
                    .map(|d| rename(feature.directive, d)),
            );
        }
    }
    if names.contains_key(&FedDirective::Context) {
        let imports = renamed_imports(&names, &[FedDirective::Context]);
        push_link(sup, specs::CONTEXT_URL, Some("SECURITY"), imports);
        sup.extra_definitions.extend(
            specs::CONTEXT_DEFINITIONS
                .iter()
                .map(|d| rename(FedDirective::Context, d)),
        );
    }
    let cost = names.contains_key(&FedDirective::Cost);
    let list_size = names.contains_key(&FedDirective::ListSize);
    if cost || list_size {
        let mut imports = renamed_imports(&names, &[FedDirective::Cost, FedDirective::ListSize]);
        if names.get(&FedDirective::ListSize).map(String::as_str) == Some("listSize") {
            imports.push("\"@listSize\"".to_owned());
        }
        push_link(sup, specs::COST_URL, None, imports);
        if cost {
            sup.extra_definitions
                .push(rename(FedDirective::Cost, specs::COST_DEFINITION));
        }
        if list_size {
            sup.extra_definitions
                .push(rename(FedDirective::ListSize, specs::LIST_SIZE_DEFINITION));
        }
    }
}

/// Executable directives defined in every subgraph: their common executable locations
/// and common arguments.
fn executable_directives(ctx: &mut Ctx<'_>, sup: &mut Supergraph) {
    const BUILT_IN: &[&str] = &["skip", "include", "deprecated", "specifiedBy", "oneOf"];
    let subgraphs = ctx.input.subgraphs;
    let mut names: IndexSet<&Name> = IndexSet::new();
    for sg in subgraphs {
        for (name, def) in &sg.schema.directive_definitions {
            let executable = def.locations.iter().any(|l| is_executable(&l.to_string()));
            if executable
                && !BUILT_IN.contains(&name.as_str())
                && !sg.composed_directives.iter().any(|c| c == name.as_str())
            {
                names.insert(name);
            }
        }
    }
    for name in names {
        let defs: Vec<(&str, &Node<apollo_compiler::ast::DirectiveDefinition>)> = subgraphs
            .iter()
            .filter_map(|sg| {
                sg.schema
                    .directive_definitions
                    .get(name)
                    .map(|d| (sg.name.as_str(), d))
            })
            .collect();
        if defs.len() != subgraphs.len() {
            let have: Vec<&str> = defs.iter().map(|(n, _)| *n).collect();
            let missing: Vec<&str> = subgraphs
                .iter()
                .map(|s| s.name.as_str())
                .filter(|n| !have.contains(n))
                .collect();
            ctx.sink.hint(
                codes::INCONSISTENT_EXECUTABLE_DIRECTIVE_PRESENCE,
                format!(
                    "Executable directive \"@{name}\" will not be part of the supergraph as it does not appear in all subgraphs: it is defined in {} but not in {}.",
                    subgraphs_phrase(&have),
                    subgraphs_phrase(&missing)
                ),
            );
            continue;
        }
        let def = defs[0].1;
        let executable_in = |d: &apollo_compiler::ast::DirectiveDefinition| -> Vec<String> {
            let mut v: Vec<String> = d
                .locations
                .iter()
                .map(|l| l.to_string())
                .filter(|l| is_executable(l))
                .collect();
            v.sort();
            v
        };
        let locations: Vec<_> = def
            .locations
            .iter()
            .filter(|l| is_executable(&l.to_string()))
            .filter(|l| defs.iter().all(|(_, d)| d.locations.contains(l)))
            .cloned()
            .collect();
        if defs
            .iter()
            .any(|(_, d)| executable_in(d) != executable_in(def))
        {
            ctx.sink.hint(
                codes::INCONSISTENT_EXECUTABLE_DIRECTIVE_LOCATIONS,
                format!(
                    "Executable directive \"@{name}\" has inconsistent locations across subgraphs."
                ),
            );
        }
        if locations.is_empty() {
            continue;
        }
        let mut arg_names: IndexSet<&Name> = IndexSet::new();
        for (_, d) in &defs {
            arg_names.extend(d.arguments.iter().map(|a| &a.name));
        }
        let mut arguments = Vec::new();
        for aname in arg_names {
            let found: Vec<(&str, &Node<InputValueDefinition>)> = defs
                .iter()
                .filter_map(|(sg, d)| {
                    d.arguments
                        .iter()
                        .find(|a| &a.name == aname)
                        .map(|a| (*sg, a))
                })
                .collect();
            if found.len() == defs.len() {
                if found.iter().all(|(_, a)| a.ty == found[0].1.ty) {
                    arguments.push(found[0].1.clone());
                }
            } else if found.iter().all(|(_, a)| !is_required(a)) {
                let have: Vec<&str> = found.iter().map(|(n, _)| *n).collect();
                let missing: Vec<&str> = defs
                    .iter()
                    .map(|(n, _)| *n)
                    .filter(|n| !have.contains(n))
                    .collect();
                ctx.sink.hint(
                    codes::INCONSISTENT_ARGUMENT_PRESENCE,
                    format!(
                        "Optional argument \"@{name}({aname}:)\" will not be included in the supergraph as it does not appear in all subgraphs: it is defined in {} but not in {}.",
                        subgraphs_phrase(&have),
                        subgraphs_phrase(&missing)
                    ),
                );
            }
        }
        let mut merged = (**def).clone();
        merged.description = None;
        merged.locations = locations;
        merged.arguments = arguments;
        merged.repeatable = defs.iter().all(|(_, d)| d.repeatable);
        sup.extra_definitions.push(merged.to_string());
    }
}

fn is_executable(location: &str) -> bool {
    matches!(
        location,
        "QUERY"
            | "MUTATION"
            | "SUBSCRIPTION"
            | "FIELD"
            | "FRAGMENT_DEFINITION"
            | "FRAGMENT_SPREAD"
            | "INLINE_FRAGMENT"
            | "VARIABLE_DEFINITION"
    )
}

/// `@composeDirective`: the custom spec's link and the directive definitions.
fn composed_directives(ctx: &mut Ctx<'_>, sup: &mut Supergraph) {
    // Per directive: the definition of the subgraph linking the newest spec version, the
    // last such subgraph on ties (as Apollo picks it).
    let mut defs: IndexMap<String, ((u64, u64), String)> = IndexMap::new();
    let mut links: IndexMap<String, Vec<String>> = IndexMap::new();
    for sg in ctx.input.subgraphs {
        for local in &sg.composed_directives {
            let Some(def) = sg.schema.directive_definitions.get(local.as_str()) else {
                continue;
            };
            let link = sg.custom_links.iter().find(|l| {
                l.imports.iter().any(|(n, _)| n == local)
                    || local.starts_with(&format!("{}__", l.namespace))
            });
            let version = link.map(|l| link_version(&l.url)).unwrap_or_default();
            if defs.get(local).is_none_or(|(v, _)| version >= *v) {
                defs.insert(local.clone(), (version, def.to_string()));
            }
            if let Some(link) = link {
                let entry = links.entry(link.url.clone()).or_default();
                for (n, raw) in &link.imports {
                    if n == local {
                        let text = raw.to_string();
                        if !entry.contains(&text) {
                            entry.push(text);
                        }
                    }
                }
            }
        }
    }
    sup.extra_definitions
        .extend(defs.into_values().map(|(_, def)| def));
    for (url, imports) in links {
        sup.links.push(Link {
            url,
            purpose: None,
            import: (!imports.is_empty()).then(|| format!("[{}]", imports.join(", "))),
        });
    }
}

/// `(major, minor)` of a spec URL ending in `/vX.Y`; `(0, 0)` when it does not.
fn link_version(url: &str) -> (u64, u64) {
    url.rsplit('/')
        .next()
        .and_then(|v| v.strip_prefix('v'))
        .and_then(|v| v.split_once('.'))
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .unwrap_or_default()
}

/// Every object type has the fields of the interfaces it implements.
fn check_implementations(ctx: &mut Ctx<'_>, sup: &Supergraph) {
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

fn graphs_of_field<'a>(ctx: &Ctx<'a>, t: &MType, fname: &str) -> Vec<&'a str> {
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
