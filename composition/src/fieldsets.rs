//! `@key`, `@requires` and `@provides` field sets of one subgraph: parsed against the
//! subgraph schema, validated, and summarised for merging and satisfiability.

use std::collections::{HashMap, HashSet};

use apollo_compiler::executable::{FieldSet, Selection, SelectionSet};
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::{Name, Node};

use crate::context::{self, ContextArg};
use crate::errors::{ErrorSink, codes};
use crate::specs::FedDirective;
use crate::subgraph::{Subgraph, bool_arg, str_arg};

/// (type, field), both as named in the subgraph.
pub type Coord = (String, String);

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

/// Leaf fields of a `@requires`/`@provides` selection that are not external and have
/// no external field above them (an interface field counts as external when some
/// implementation's is), as Apollo validates them.
fn non_external_leaves(
    sg: &Subgraph,
    external: &HashSet<Coord>,
    set: &SelectionSet,
    external_above: bool,
    out: &mut Vec<Coord>,
) {
    for sel in &set.selections {
        match sel {
            Selection::Field(f) => {
                let coord = (set.ty.to_string(), f.name.to_string());
                let is_external = external.contains(&coord);
                if f.selection_set.selections.is_empty() {
                    if !is_external && !external_above {
                        out.push(coord);
                    }
                    continue;
                }
                let mut above = external_above || is_external;
                if !above && let Some(ExtendedType::Interface(_)) = sg.schema.types.get(&set.ty) {
                    above =
                        sg.schema
                            .implementers_map()
                            .get(&set.ty)
                            .is_some_and(|imp| {
                                imp.objects.iter().chain(imp.interfaces.iter()).any(|o| {
                                    external.contains(&(o.to_string(), f.name.to_string()))
                                })
                            });
                }
                non_external_leaves(sg, external, &f.selection_set, above, out);
            }
            Selection::InlineFragment(i) => {
                non_external_leaves(sg, external, &i.selection_set, external_above, out)
            }
            Selection::FragmentSpread(_) => {}
        }
    }
}

fn parse(
    sg: &Subgraph,
    ty: &str,
    fields: &str,
    directive: &str,
    code: &str,
    sink: &mut ErrorSink,
) -> Option<Node<FieldSet>> {
    let Ok(name) = Name::new(ty) else {
        return None;
    };
    // The field-set parser panics on some invalid tokens: reject those first.
    if let Some(bad) = invalid_token(fields) {
        sink.error(
            code,
            format!(
                "[{}] On type \"{ty}\", for {directive}(fields: \"{}\"): Syntax Error: Unexpected {}.",
                sg.name,
                fields.escape_default(),
                bad.escape_default()
            ),
            &sg.name,
        );
        return None;
    }
    match FieldSet::parse_and_validate(&sg.schema, name, fields, "fields") {
        Ok(set) => Some(Node::new(set.into_inner())),
        Err(with) => {
            let first = with
                .errors
                .iter()
                .next()
                .map(|d| d.error.to_string())
                .unwrap_or_default();
            sink.error(
                code,
                format!(
                    "[{}] On type \"{ty}\", for {directive}(fields: \"{fields}\"): {first}",
                    sg.name
                ),
                &sg.name,
            );
            None
        }
    }
}

/// The first text that is not a GraphQL token (names, numbers, strings, punctuators),
/// if any.
fn invalid_token(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if matches!(c, ' ' | '\t' | '\n' | '\r' | ',' | '\u{feff}') {
            i += 1;
        } else if c == '#' {
            while i < chars.len() && chars[i] != '\n' && chars[i] != '\r' {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c.is_ascii_digit()
            || (c == '-' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            i += 1;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '.' | '+' | '-'))
            {
                i += 1;
            }
            let number: String = chars[start..i].iter().collect();
            if number.parse::<f64>().is_err() {
                return Some(number);
            }
        } else if c == '"' {
            // A single-line string; block strings are not expected in field sets.
            i += 1;
            loop {
                match chars.get(i) {
                    None | Some('\n' | '\r') => return Some(chars[start..i].iter().collect()),
                    Some('\\') => i += 2,
                    Some('"') => break,
                    Some(x) if x.is_control() && *x != '\t' => return Some(x.to_string()),
                    Some(_) => i += 1,
                }
            }
            i += 1;
        } else if c == '.' {
            if chars.get(i + 1) == Some(&'.') && chars.get(i + 2) == Some(&'.') {
                i += 3;
            } else {
                return Some(".".to_owned());
            }
        } else if matches!(
            c,
            '{' | '}' | '(' | ')' | ':' | '$' | '!' | '=' | '[' | ']' | '@' | '|' | '&'
        ) {
            i += 1;
        } else {
            return Some(c.to_string());
        }
    }
    None
}

fn check_key_selection(
    sg: &Subgraph,
    ty: &str,
    fields: &str,
    set: &SelectionSet,
    sink: &mut ErrorSink,
) {
    for sel in &set.selections {
        match sel {
            Selection::Field(f) => {
                let target = f.definition.ty.inner_named_type();
                if let Some(ExtendedType::Interface(_) | ExtendedType::Union(_)) =
                    sg.schema.types.get(target)
                {
                    sink.error(
                        codes::KEY_FIELDS_SELECT_INVALID_TYPE,
                        format!(
                            "[{}] On type \"{ty}\", for @key(fields: \"{fields}\"): field \"{}.{}\" is a {} type which is not allowed in @key",
                            sg.name,
                            set.ty,
                            f.name,
                            if matches!(sg.schema.types.get(target), Some(ExtendedType::Union(_))) { "Union" } else { "Interface" }
                        ),
                        &sg.name,
                    );
                }
                if !f.definition.arguments.is_empty() {
                    sink.error(
                        codes::KEY_FIELDS_HAS_ARGS,
                        format!(
                            "[{}] On type \"{ty}\", for @key(fields: \"{fields}\"): field {}.{} cannot be included because it has arguments (fields with argument are not allowed in @key)",
                            sg.name, set.ty, f.name
                        ),
                        &sg.name,
                    );
                }
                check_key_selection(sg, ty, fields, &f.selection_set, sink);
            }
            Selection::InlineFragment(i) => {
                check_key_selection(sg, ty, fields, &i.selection_set, sink)
            }
            Selection::FragmentSpread(_) => {}
        }
    }
}

/// Every (type, field) a selection touches.
pub fn collect(set: &SelectionSet, out: &mut Vec<Coord>) {
    for sel in &set.selections {
        match sel {
            Selection::Field(f) => {
                out.push((set.ty.to_string(), f.name.to_string()));
                collect(&f.selection_set, out);
            }
            Selection::InlineFragment(i) => collect(&i.selection_set, out),
            Selection::FragmentSpread(_) => {}
        }
    }
}

fn top_fields(set: &SelectionSet) -> Vec<String> {
    set.selections
        .iter()
        .filter_map(|s| match s {
            Selection::Field(f) => Some(f.name.to_string()),
            _ => None,
        })
        .collect()
}
