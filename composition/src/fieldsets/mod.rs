//! `@key`, `@requires` and `@provides` field sets of one subgraph: parsed against the
//! subgraph schema, validated, and summarised for merging and satisfiability.
//!
//! `parse` reads a field set's text against the schema; `selections` walks the parsed
//! selections.

mod parse;
mod selections;

use std::collections::{HashMap, HashSet};

use apollo_compiler::executable::Selection;
use apollo_compiler::schema::ExtendedType;

use self::parse::parse;
use self::selections::{check_key_selection, collect, non_external_leaves, top_fields};
use crate::context::{self, ContextArg};
use crate::errors::{ErrorSink, codes};
use crate::specs::FedDirective;
use crate::subgraph::{Coord, Subgraph, bool_arg, str_arg};

#[derive(Debug, Clone)]
pub struct Key {
    pub fields: String,
    pub resolvable: bool,
    /// `resolvable` is written on the `@key`.
    pub resolvable_explicit: bool,
    pub extension: bool,
    /// Top-level field names of the selection.
    pub top_fields: Vec<String>,
}

#[derive(Debug, Default)]
pub struct SubgraphInfo {
    /// Keys per type (subgraph-local type name).
    pub keys: HashMap<String, Vec<Key>>,
    /// Fields selected anywhere in a key.
    pub key_fields: HashSet<Coord>,
    /// Fields referenced by any key, @requires or @provides.
    pub referenced: HashSet<Coord>,
    /// External fields provided by some @provides.
    pub provided: HashSet<Coord>,
    /// Plain `@provides` (no fragments): providing field → (return type, top-level fields).
    pub provides: HashMap<Coord, (String, Vec<String>)>,
    /// Provided fields only ever provided at the top level of a plain `@provides`: they
    /// are resolvable only under the providing field.
    pub scoped_provided: HashSet<Coord>,
    /// Top-level fields each @requires field needs: (type, field) → required field names.
    pub requires: HashMap<Coord, Vec<String>>,
    /// Fields marked @external (after the Federation 1 upgrade).
    pub external: HashSet<Coord>,
    /// Arguments set from a `@context`, per field.
    pub context_args: HashMap<Coord, Vec<ContextArg>>,
}

/// Analyses one subgraph's field sets; invalid ones are reported.
pub fn analyse(sg: &Subgraph, sink: &mut ErrorSink) -> SubgraphInfo {
    let mut info = SubgraphInfo::default();
    // Provided fields seen at the top level of a plain @provides, and anywhere else.
    let mut top_provided: HashSet<Coord> = HashSet::new();
    let mut nested_provided: HashSet<Coord> = HashSet::new();
    let schema = &sg.schema;
    let mut fake_external: HashSet<Coord> = HashSet::new();
    for (tname, ty) in &schema.types {
        if ty.is_built_in() || sg.is_internal_type(tname) {
            continue;
        }
        let directives = match ty {
            ExtendedType::Object(o) => &o.directives,
            ExtendedType::Interface(i) => &i.directives,
            _ => continue,
        };
        let extends = directives
            .iter()
            .any(|d| d.name == sg.dir_name(FedDirective::Extends));
        for d in directives.iter() {
            if d.name != sg.dir_name(FedDirective::Key) {
                continue;
            }
            let Some(fields) = str_arg(d, "fields") else {
                continue;
            };
            let Some(set) = parse(sg, tname, fields, "@key", codes::KEY_INVALID_FIELDS, sink)
            else {
                continue;
            };
            check_key_selection(sg, tname, fields, &set.selection_set, sink);
            let mut coords = Vec::new();
            collect(&set.selection_set, &mut coords);
            let extension = extends || d.origin.extension_id().is_some();
            // Federation 1 marks key fields of extensions @external; so does Federation 2
            // on `extend type`/`@extends` keys: those fields are not external (Apollo's
            // "fake external").
            if sg.fed1 || extension {
                fake_external.extend(coords.iter().cloned());
            }
            info.key_fields.extend(coords.iter().cloned());
            info.referenced.extend(coords);
            info.keys.entry(tname.to_string()).or_default().push(Key {
                fields: fields.to_owned(),
                resolvable: bool_arg(d, "resolvable").unwrap_or(true),
                resolvable_explicit: bool_arg(d, "resolvable").is_some(),
                extension: extends || (!sg.fed1 && extension),
                top_fields: top_fields(&set.selection_set),
            });
        }
    }
    for (tname, ty) in &schema.types {
        if ty.is_built_in() || sg.is_internal_type(tname) {
            continue;
        }
        let (fields, type_directives) = match ty {
            ExtendedType::Object(o) => (&o.fields, &o.directives),
            ExtendedType::Interface(i) => (&i.fields, &i.directives),
            _ => continue,
        };
        let type_external = !sg.fed1
            && type_directives
                .iter()
                .any(|d| d.name == sg.dir_name(FedDirective::External));
        for (fname, field) in fields {
            let coord = (tname.to_string(), fname.to_string());
            if (type_external || sg.has(&field.directives, FedDirective::External))
                && !fake_external.contains(&coord)
            {
                info.external.insert(coord);
            }
        }
    }
    for (tname, ty) in &schema.types {
        if ty.is_built_in() || sg.is_internal_type(tname) {
            continue;
        }
        let fields = match ty {
            ExtendedType::Object(o) => &o.fields,
            ExtendedType::Interface(i) => &i.fields,
            _ => continue,
        };
        for (fname, field) in fields {
            let coord = (tname.to_string(), fname.to_string());
            for d in sg.applications(&field.directives, FedDirective::Requires) {
                let Some(sel) = str_arg(d, "fields") else {
                    continue;
                };
                let Some(set) = parse(
                    sg,
                    tname,
                    sel,
                    "@requires",
                    codes::REQUIRES_INVALID_FIELDS,
                    sink,
                ) else {
                    continue;
                };
                let mut coords = Vec::new();
                collect(&set.selection_set, &mut coords);
                info.referenced.extend(coords);
                info.requires
                    .insert(coord.clone(), top_fields(&set.selection_set));
                if !sg.fed1 {
                    let mut bad = Vec::new();
                    non_external_leaves(sg, &info.external, &set.selection_set, false, &mut bad);
                    for required in bad {
                        sink.error(
                            codes::REQUIRES_FIELDS_MISSING_EXTERNAL,
                            format!(
                                "[{}] On field \"{tname}.{fname}\", for @requires(fields: \"{sel}\"): field \"{}.{}\" should not be part of a @requires since it is already provided by this subgraph (it is not marked @external)",
                                sg.name, required.0, required.1
                            ),
                            &sg.name,
                        );
                    }
                }
            }
            for d in sg.applications(&field.directives, FedDirective::Provides) {
                let Some(sel) = str_arg(d, "fields") else {
                    continue;
                };
                let target = field.ty.inner_named_type();
                let composite = matches!(
                    schema.types.get(target),
                    Some(
                        ExtendedType::Object(_)
                            | ExtendedType::Interface(_)
                            | ExtendedType::Union(_)
                    )
                );
                if !composite {
                    sink.error(
                        codes::PROVIDES_ON_NON_OBJECT_FIELD,
                        format!(
                            "[{}] Invalid @provides directive on field \"{tname}.{fname}\": field has type \"{}\" which is not a Composite Type",
                            sg.name, field.ty
                        ),
                        &sg.name,
                    );
                    continue;
                }
                let Some(set) = parse(
                    sg,
                    target,
                    sel,
                    "@provides",
                    codes::PROVIDES_INVALID_FIELDS,
                    sink,
                ) else {
                    continue;
                };
                let mut coords = Vec::new();
                collect(&set.selection_set, &mut coords);
                info.referenced.extend(coords.iter().cloned());
                let plain = matches!(schema.types.get(target), Some(ExtendedType::Object(_)))
                    && set
                        .selection_set
                        .selections
                        .iter()
                        .all(|s| matches!(s, Selection::Field(_)));
                let top = top_fields(&set.selection_set);
                for c in &coords {
                    let is_top = plain && c.0 == target.as_str() && top.contains(&c.1);
                    if !is_top {
                        nested_provided.insert(c.clone());
                    }
                }
                if plain {
                    info.provides
                        .insert(coord.clone(), (target.to_string(), top.clone()));
                    top_provided.extend(top.into_iter().map(|f| (target.to_string(), f)));
                }
                info.provided.extend(coords);
                if !sg.fed1 {
                    let mut bad = Vec::new();
                    non_external_leaves(sg, &info.external, &set.selection_set, false, &mut bad);
                    for provided in bad {
                        sink.error(
                            codes::PROVIDES_FIELDS_MISSING_EXTERNAL,
                            format!(
                                "[{}] On field \"{tname}.{fname}\", for @provides(fields: \"{sel}\"): field \"{}.{}\" should not be part of a @provides since it is already provided by this subgraph (it is not marked @external)",
                                sg.name, provided.0, provided.1
                            ),
                            &sg.name,
                        );
                    }
                }
            }
        }
    }
    info.scoped_provided = top_provided.difference(&nested_provided).cloned().collect();
    info.context_args = context::analyse(sg, sink);
    info
}
