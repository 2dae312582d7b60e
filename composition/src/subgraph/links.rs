//! A subgraph's `@link`s: its federation version, the local names of federation
//! directives and types, custom specs and `@composeDirective`s.

use std::collections::HashMap;

use apollo_compiler::ast::{self, Definition, Directive, Value};

use super::{CustomLink, FedVersion, str_arg};
use crate::errors::{ErrorSink, codes};
use crate::specs::{self, FedDirective};

const FED_URL_PREFIX: &str = "https://specs.apollo.dev/federation/v";
const LINK_URL_PREFIX: &str = "https://specs.apollo.dev/link/v";

/// What a subgraph's `@link`s say.
pub(super) struct LinkInfo {
    pub(super) version: Option<FedVersion>,
    pub(super) fed1: bool,
    pub(super) names: HashMap<FedDirective, String>,
    pub(super) imported_types: HashMap<String, String>,
    pub(super) custom_links: Vec<CustomLink>,
    pub(super) composed: Vec<String>,
}

fn schema_directives(
    doc: &ast::Document,
) -> impl Iterator<Item = &apollo_compiler::Node<Directive>> {
    doc.definitions.iter().flat_map(|d| match d {
        Definition::SchemaDefinition(s) => s.directives.iter().collect::<Vec<_>>(),
        Definition::SchemaExtension(s) => s.directives.iter().collect(),
        _ => Vec::new(),
    })
}

fn parse_fed_version(url: &str) -> Option<FedVersion> {
    let rest = url.strip_prefix(FED_URL_PREFIX)?;
    let (major, minor) = rest.trim_end_matches('/').split_once('.')?;
    Some(FedVersion {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
    })
}

/// Resolves `@link`s: federation directive local names, imported types, custom links.
pub(super) fn resolve_links(
    name: &str,
    doc: &ast::Document,
    sink: &mut ErrorSink,
) -> Option<LinkInfo> {
    let mut info = LinkInfo {
        version: None,
        fed1: true,
        names: HashMap::new(),
        imported_types: HashMap::new(),
        custom_links: Vec::new(),
        composed: Vec::new(),
    };
    let mut ok = true;
    for d in schema_directives(doc) {
        if d.name == "composeDirective" || d.name == "federation__composeDirective" {
            continue;
        }
        if d.name != "link" {
            continue;
        }
        let Some(url) = str_arg(d, "url") else {
            sink.error(
                codes::INVALID_LINK_DIRECTIVE_USAGE,
                format!("[{name}] @link requires a string \"url\" argument"),
                name,
            );
            ok = false;
            continue;
        };
        let alias = str_arg(d, "as");
        let imports = import_list(d);
        if url.starts_with(FED_URL_PREFIX) {
            let Some(v) = parse_fed_version(url) else {
                sink.error(
                    codes::INVALID_LINK_IDENTIFIER,
                    format!("[{name}] Invalid federation link url \"{url}\""),
                    name,
                );
                ok = false;
                continue;
            };
            if v.major != 2 || v.minor > specs::MAX_FED_MINOR {
                sink.error(
                    codes::UNKNOWN_FEDERATION_LINK_VERSION,
                    format!(
                        "[{name}] Invalid version v{}.{} for the federation feature in @link direction on schema",
                        v.major, v.minor
                    ),
                    name,
                );
                ok = false;
                continue;
            }
            info.version = Some(v);
            info.fed1 = false;
            let ns = alias.unwrap_or("federation");
            for fd in specs::ALL_DIRECTIVES {
                info.names.insert(*fd, format!("{ns}__{}", fd.name()));
            }
            for (imported, local, _) in &imports {
                if let Some(dname) = imported.strip_prefix('@') {
                    match specs::ALL_DIRECTIVES.iter().find(|fd| fd.name() == dname) {
                        Some(fd) if fd.min_minor() <= v.minor => {
                            let local = local.trim_start_matches('@').to_owned();
                            info.names.insert(*fd, local);
                        }
                        _ => {
                            sink.error(
                                codes::INVALID_LINK_DIRECTIVE_USAGE,
                                format!("[{name}] Cannot import unknown element \"{imported}\"."),
                                name,
                            );
                            ok = false;
                        }
                    }
                } else {
                    info.imported_types.insert(imported.clone(), local.clone());
                }
            }
        } else if url.starts_with(LINK_URL_PREFIX) {
            continue;
        } else {
            let namespace = alias
                .map(str::to_owned)
                .or_else(|| spec_name_from_url(url))
                .unwrap_or_default();
            info.custom_links.push(CustomLink {
                url: url.to_owned(),
                imports: imports
                    .into_iter()
                    .map(|(_, local, raw)| (local.trim_start_matches('@').to_owned(), raw))
                    .collect(),
                namespace,
            });
        }
    }
    if info.fed1 {
        for fd in specs::FED1_DIRECTIVES {
            info.names.insert(*fd, fd.name().to_owned());
        }
    }
    let compose_name = info
        .names
        .get(&FedDirective::ComposeDirective)
        .cloned()
        .unwrap_or_default();
    for d in schema_directives(doc) {
        if d.name == compose_name.as_str()
            && let Some(n) = str_arg(d, "name")
        {
            info.composed.push(n.trim_start_matches('@').to_owned());
        }
    }
    ok.then_some(info)
}

/// `https://example.com/myspec/v1.0` → `myspec`.
fn spec_name_from_url(url: &str) -> Option<String> {
    let mut parts = url.trim_end_matches('/').rsplit('/');
    let last = parts.next()?;
    if last.starts_with('v') && last[1..].contains('.') {
        parts.next().map(str::to_owned)
    } else {
        Some(last.to_owned())
    }
}

/// `import:` elements as (imported name, local name, raw value).
fn import_list(d: &Directive) -> Vec<(String, String, Value)> {
    let Some(Value::List(items)) = d.specified_argument_by_name("import").map(|v| v.as_ref())
    else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| match item.as_ref() {
            Value::String(s) => Some((s.to_string(), s.to_string(), item.as_ref().clone())),
            Value::Object(fields) => {
                let get = |k: &str| {
                    fields
                        .iter()
                        .find(|(n, _)| n == k)
                        .and_then(|(_, v)| match v.as_ref() {
                            Value::String(s) => Some(s.to_string()),
                            _ => None,
                        })
                };
                let imported = get("name")?;
                let local = get("as").unwrap_or_else(|| imported.clone());
                Some((imported, local, item.as_ref().clone()))
            }
            _ => None,
        })
        .collect()
}
