//! The supergraph's authorization directives (`@authenticated`, `@requiresScopes`,
//! `@policy`), read once at load into flat tables: each distinct requirement once, and
//! per type and field the requirements that guard it.

use crate::meta::{FederationMeta, FieldId, TypeId};
use apollo_compiler::ast::{Directive, DirectiveList, Value};
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::{Node, Schema};
use rustc_hash::FxHashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequirementId(pub u32);

impl RequirementId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One directive application's condition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Requirement {
    /// `@authenticated`: the request carries a valid token.
    Authenticated,
    /// `@requiresScopes(scopes:)`: the token has every scope of at least one inner list.
    Scopes(Vec<Vec<String>>),
    /// `@policy(policies:)`: every policy of at least one inner list is granted.
    Policies(Vec<Vec<String>>),
}

/// Authorization requirements by type and field of the supergraph.
#[derive(Debug, Clone, Default)]
pub struct AuthDirectives {
    /// Each distinct requirement once.
    pub requirements: Vec<Requirement>,
    /// Requirements on types (objects, interfaces, scalars, enums): they guard every
    /// field returning the type, and every field of an object or interface.
    pub on_type: FxHashMap<TypeId, Vec<RequirementId>>,
    /// Requirements on field definitions.
    pub on_field: FxHashMap<FieldId, Vec<RequirementId>>,
}

/// Local names of the three directives in a supergraph (`None`: not linked).
#[derive(Debug, Clone, Default)]
pub struct AuthNames {
    pub authenticated: Option<String>,
    pub requires_scopes: Option<String>,
    pub policy: Option<String>,
}

impl AuthNames {
    /// The names `schema`'s `@link`s give the directives (renames included).
    pub fn of(schema: &Schema) -> Self {
        let mut names = AuthNames {
            authenticated: None,
            requires_scopes: None,
            policy: None,
        };
        for link in schema.schema_definition.directives.iter() {
            let Some(url) = super::arg_str(link, "url") else {
                continue;
            };
            let Some((spec, _)) = super::parse_spec_url(url) else {
                continue;
            };
            if !url.starts_with("https://specs.apollo.dev/") {
                continue;
            }
            let local = local_name(link, &spec);
            match spec.as_str() {
                "authenticated" => names.authenticated = Some(local),
                "requiresScopes" => names.requires_scopes = Some(local),
                "policy" => names.policy = Some(local),
                _ => {}
            }
        }
        names
    }

    /// True when any of the three is linked.
    pub fn any(&self) -> bool {
        self.authenticated.is_some() || self.requires_scopes.is_some() || self.policy.is_some()
    }
}

/// The name a `@link` gives its spec's main directive (`@<spec>`): renamed by an
/// `import: [{name: "@<spec>", as: "@x"}]`, else named by `as:`, else the spec's name.
pub(crate) fn local_name(link: &Directive, spec: &str) -> String {
    let main = format!("@{spec}");
    if let Some(Value::List(imports)) = link
        .specified_argument_by_name("import")
        .map(|v| v.as_ref())
    {
        for import in imports {
            let Value::Object(entries) = import.as_ref() else {
                continue;
            };
            let field = |key: &str| {
                entries
                    .iter()
                    .find(|(k, _)| k == key)
                    .and_then(|(_, v)| v.as_str())
            };
            if field("name") == Some(main.as_str())
                && let Some(renamed) = field("as")
            {
                return renamed.trim_start_matches('@').to_owned();
            }
        }
    }
    super::arg_str(link, "as").unwrap_or(spec).to_owned()
}

impl AuthDirectives {
    /// The directives of `schema`; empty when it links none of the three specs.
    pub fn read(schema: &Schema, meta: &FederationMeta) -> Self {
        let names = AuthNames::of(schema);
        let mut out = Self::default();
        if !names.any() {
            return out;
        }
        for (name, ty) in &schema.types {
            let Some(tid) = meta.type_id(name) else {
                continue;
            };
            let directives: Vec<&Node<Directive>> = match ty {
                ExtendedType::Object(t) => t.directives.iter().map(|d| &d.node).collect(),
                ExtendedType::Interface(t) => t.directives.iter().map(|d| &d.node).collect(),
                ExtendedType::Scalar(t) => t.directives.iter().map(|d| &d.node).collect(),
                ExtendedType::Enum(t) => t.directives.iter().map(|d| &d.node).collect(),
                _ => continue,
            };
            let ids = out.intern_all(&names, directives.into_iter().map(|d| &**d));
            if !ids.is_empty() {
                out.on_type.insert(tid, ids);
            }
            let fields = match ty {
                ExtendedType::Object(t) => &t.fields,
                ExtendedType::Interface(t) => &t.fields,
                _ => continue,
            };
            for (field, def) in fields {
                let Some(fid) = meta.field_of(tid, field) else {
                    continue;
                };
                let ids = out.intern_list(&names, &def.directives);
                if !ids.is_empty() {
                    out.on_field.insert(fid, ids);
                }
            }
        }
        out
    }

    /// Whether the supergraph has no authorization directive at all.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn requirement(&self, id: RequirementId) -> &Requirement {
        &self.requirements[id.index()]
    }

    fn intern_list(&mut self, names: &AuthNames, list: &DirectiveList) -> Vec<RequirementId> {
        self.intern_all(names, list.iter().map(|d| &**d))
    }

    fn intern_all<'d>(
        &mut self,
        names: &AuthNames,
        directives: impl Iterator<Item = &'d Directive>,
    ) -> Vec<RequirementId> {
        let mut ids = Vec::new();
        for d in directives {
            let Some(req) = requirement(names, d) else {
                continue;
            };
            let id = match self.requirements.iter().position(|r| *r == req) {
                Some(i) => RequirementId(i as u32),
                None => {
                    self.requirements.push(req);
                    RequirementId(self.requirements.len() as u32 - 1)
                }
            };
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids
    }
}

fn requirement(names: &AuthNames, d: &Directive) -> Option<Requirement> {
    let is = |n: &Option<String>| n.as_deref() == Some(d.name.as_str());
    if is(&names.authenticated) {
        Some(Requirement::Authenticated)
    } else if is(&names.requires_scopes) {
        Some(Requirement::Scopes(nested_strings(d, "scopes")))
    } else if is(&names.policy) {
        Some(Requirement::Policies(nested_strings(d, "policies")))
    } else {
        None
    }
}

/// A `[[String!]!]!` argument (a bare string or inner list is coerced as GraphQL does).
fn nested_strings(d: &Directive, arg: &str) -> Vec<Vec<String>> {
    let strings = |v: &Value| -> Vec<String> {
        match v {
            Value::List(items) => items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect(),
            Value::String(s) => vec![s.clone()],
            _ => Vec::new(),
        }
    };
    match d.specified_argument_by_name(arg).map(|v| v.as_ref()) {
        Some(Value::List(outer)) => outer.iter().map(|inner| strings(inner)).collect(),
        Some(v @ Value::String(_)) => vec![strings(v)],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A supergraph whose links rename the directives as composition writes them when
    /// the subgraphs import them under other names.
    const RENAMED: &str = r#"
schema
  @link(url: "https://specs.apollo.dev/link/v1.0")
  @link(url: "https://specs.apollo.dev/join/v0.5", for: EXECUTION)
  @link(url: "https://specs.apollo.dev/authenticated/v0.1", for: SECURITY, as: "auth")
  @link(url: "https://specs.apollo.dev/requiresScopes/v0.1", for: SECURITY, import: [{name: "@requiresScopes", as: "@fed__requiresScopes"}])
  @link(url: "https://specs.apollo.dev/policy/v0.1", for: SECURITY)
{ query: Query }
directive @link(url: String, as: String, for: link__Purpose, import: [link__Import]) repeatable on SCHEMA
directive @join__graph(name: String!, url: String!) on ENUM_VALUE
directive @join__type(graph: join__Graph!, key: join__FieldSet, extension: Boolean! = false, resolvable: Boolean! = true, isInterfaceObject: Boolean! = false) repeatable on OBJECT | INTERFACE | UNION | ENUM | INPUT_OBJECT | SCALAR
directive @join__field(graph: join__Graph, requires: join__FieldSet, provides: join__FieldSet, type: String, external: Boolean, override: String, usedOverridden: Boolean) repeatable on FIELD_DEFINITION | INPUT_FIELD_DEFINITION
directive @auth on FIELD_DEFINITION | OBJECT | INTERFACE | SCALAR | ENUM
directive @fed__requiresScopes(scopes: [[requiresScopes__Scope!]!]!) on FIELD_DEFINITION | OBJECT | INTERFACE | SCALAR | ENUM
directive @requiresScopes(scopes: [[String!]!]!) on FIELD_DEFINITION
directive @policy(policies: [[policy__Policy!]!]!) on FIELD_DEFINITION | OBJECT | INTERFACE | SCALAR | ENUM
scalar join__FieldSet
scalar link__Import
scalar requiresScopes__Scope
scalar policy__Policy
enum link__Purpose { SECURITY EXECUTION }
enum join__Graph { A @join__graph(name: "a", url: "http://a") }
type Query @join__type(graph: A) {
  me: String @auth
  price: Int @fed__requiresScopes(scopes: [["read:price"]])
  decoy: Int @requiresScopes(scopes: [["not:the:spec"]])
  secret: String @policy(policies: [["admin"]])
}
"#;

    #[test]
    fn directive_names_follow_the_links() {
        let supergraph = crate::Supergraph::parse(RENAMED).expect("valid supergraph");
        let auth = &supergraph.auth;
        let query = supergraph.meta.type_id("Query").expect("Query");
        let of = |field: &str| -> Vec<&Requirement> {
            let fid = supergraph.meta.field_of(query, field).expect("field");
            auth.on_field
                .get(&fid)
                .map(|ids| ids.iter().map(|id| auth.requirement(*id)).collect())
                .unwrap_or_default()
        };
        assert_eq!(of("me"), [&Requirement::Authenticated]);
        let scopes = Requirement::Scopes(vec![vec!["read:price".to_owned()]]);
        assert_eq!(of("price"), [&scopes]);
        assert!(of("decoy").is_empty(), "a directive the link does not name");
        let policies = Requirement::Policies(vec![vec!["admin".to_owned()]]);
        assert_eq!(of("secret"), [&policies]);
    }
}
