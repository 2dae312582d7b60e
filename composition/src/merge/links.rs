//! The supergraph's `@link`s and directive definitions for what it carries: federation
//! features (under the names the subgraphs import them as) and `@composeDirective` specs.

use std::collections::HashMap;

use indexmap::IndexMap;

use super::state::Merger;
use crate::errors::codes;
use crate::model::{Link, Supergraph};
use crate::specs::{self, FedDirective};

/// The supergraph name of each carried feature directive; subgraphs using it under
/// different names are an error.
fn feature_names(ctx: &mut Merger<'_>) -> HashMap<FedDirective, String> {
    let mut out = HashMap::new();
    let subgraphs = ctx.input.subgraphs;
    for (f, names) in &ctx.carried.used_features {
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
pub(super) fn feature_links(ctx: &mut Merger<'_>, sup: &mut Supergraph) {
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

/// `@composeDirective`: the custom spec's link and the directive definitions.
pub(super) fn composed_directives(ctx: &mut Merger<'_>, sup: &mut Supergraph) {
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
