//! A field with `@requires` (or a `@fromContext` argument) reads the data of the fields
//! its selection names (and of the types setting the context), so it must carry at least their authorization requirements (`@authenticated`,
//! `@requiresScopes`, `@policy` on the field or its return type, and on types of inline
//! fragments), else composition fails with MISSING_TRANSITIVE_AUTH_REQUIREMENTS, as
//! @apollo/composition does. Checked on the composed supergraph, whose directives are
//! already merged across subgraphs.

use apollo_compiler::ast::Directive;
use apollo_compiler::executable::{FieldSet, Selection, SelectionSet};
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::{Node, Schema};

use crate::errors::{ErrorSink, codes};
use crate::merge::nested_strings;
use graphfleet_federation::auth::AuthNames;

/// A DNF of scopes or policies: any inner list, all of its items.
type Dnf = Vec<Vec<String>>;

/// What one element (or the requiring field) demands.
#[derive(Default)]
struct Requirements {
    authenticated: bool,
    scopes: Option<Dnf>,
    policies: Option<Dnf>,
}

impl Requirements {
    /// Whether meeting `self` always meets `other`.
    fn implies(&self, other: &Requirements) -> bool {
        (self.authenticated || !other.authenticated)
            && implies(self.scopes.as_ref(), other.scopes.as_ref())
            && implies(self.policies.as_ref(), other.policies.as_ref())
    }

    fn and(mut self, other: Requirements) -> Requirements {
        self.authenticated |= other.authenticated;
        self.scopes = conjunction(self.scopes, other.scopes);
        self.policies = conjunction(self.policies, other.policies);
        self
    }
}

/// Every alternative of `first` contains some alternative of `second` (no requirement,
/// or an empty list, is the one empty alternative).
fn implies(first: Option<&Dnf>, second: Option<&Dnf>) -> bool {
    let whole = vec![Vec::new()];
    let norm = |d: Option<&Dnf>| match d {
        Some(d) if !d.is_empty() => d.clone(),
        _ => whole.clone(),
    };
    let (first, second) = (norm(first), norm(second));
    first
        .iter()
        .all(|f| second.iter().any(|s| s.iter().all(|x| f.contains(x))))
}

fn conjunction(a: Option<Dnf>, b: Option<Dnf>) -> Option<Dnf> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) => Some(
            a.iter()
                .flat_map(|x| b.iter().map(move |y| x.iter().chain(y).cloned().collect()))
                .collect(),
        ),
    }
}

/// What the directives (under the supergraph's names for them) demand.
trait Demands {
    fn of_directives<'a>(
        &self,
        directives: impl Iterator<Item = &'a Node<Directive>>,
    ) -> Requirements;
    fn of_type(&self, schema: &Schema, name: &str) -> Requirements;
}

impl Demands for AuthNames {
    fn of_directives<'a>(
        &self,
        directives: impl Iterator<Item = &'a Node<Directive>>,
    ) -> Requirements {
        let mut out = Requirements::default();
        for d in directives {
            let is = |n: &Option<String>| n.as_deref() == Some(d.name.as_str());
            if is(&self.authenticated) {
                out.authenticated = true;
            } else if is(&self.requires_scopes) {
                out.scopes = Some(nested_strings(d, "scopes"));
            } else if is(&self.policy) {
                out.policies = Some(nested_strings(d, "policies"));
            }
        }
        out
    }

    fn of_type(&self, schema: &Schema, name: &str) -> Requirements {
        match schema.types.get(name) {
            Some(ty) => self.of_directives(ty.directives().iter().map(|d| &d.node)),
            None => Requirements::default(),
        }
    }
}

fn str_arg<'a>(d: &'a Directive, name: &str) -> Option<&'a str> {
    d.specified_argument_by_name(name).and_then(|v| v.as_str())
}

/// Reports each `@requires` and each `@fromContext` argument (per subgraph) whose
/// field lacks the requirements of the data it reads.
pub(crate) fn check(supergraph_sdl: &str, sink: &mut ErrorSink) {
    let Ok(schema) = Schema::parse_and_validate(supergraph_sdl, "supergraph.graphql") else {
        return; // reported by the caller
    };
    let names = AuthNames::of(&schema);
    if !names.any() {
        return;
    }
    let graph_names = graph_names(&schema);
    let context_directive = graphfleet_federation::context::directive_name(&schema);
    for (tname, ty) in &schema.types {
        let fields = match ty {
            ExtendedType::Object(o) => &o.fields,
            ExtendedType::Interface(i) => &i.fields,
            _ => continue,
        };
        for (fname, field) in fields {
            let joins = field.directives.iter().filter(|d| d.name == "join__field");
            for join in joins {
                let own = || {
                    names
                        .of_type(&schema, tname)
                        .and(names.of_directives(field.directives.iter()))
                };
                let missing = match str_arg(join, "requires") {
                    Some(requires) => missing_in_requires(&schema, &names, &own(), tname, requires)
                        .map(|m| format!("{m} data from @requires selection set")),
                    None => None,
                };
                let missing = missing.or_else(|| {
                    let contexts = context_arguments(join);
                    let own = own();
                    contexts.iter().find_map(|(context, selection)| {
                        missing_in_context(
                            &schema,
                            &names,
                            &own,
                            context_directive.as_deref(),
                            context,
                            selection,
                        )
                        .map(|m| format!("{m} from @fromContext selection set"))
                    })
                });
                let Some(missing) = missing else {
                    continue;
                };
                let graph = join
                    .specified_argument_by_name("graph")
                    .and_then(|v| v.as_enum())
                    .and_then(|g| graph_names.iter().find(|(v, _)| v == g.as_str()))
                    .map(|(_, name)| name.as_str())
                    .unwrap_or("");
                sink.error(
                    codes::MISSING_TRANSITIVE_AUTH_REQUIREMENTS,
                    format!(
                        "[{graph}] Field \"{tname}.{fname}\" does not specify necessary @authenticated, @requiresScopes and/or @policy auth requirements to access the transitive {missing}."
                    ),
                    graph,
                );
            }
        }
    }
}

/// What a `@requires` selection reads that `own` does not cover.
fn missing_in_requires(
    schema: &Valid<Schema>,
    names: &AuthNames,
    own: &Requirements,
    tname: &apollo_compiler::Name,
    requires: &str,
) -> Option<String> {
    let set = FieldSet::parse_and_validate(schema, tname.clone(), requires, "requires").ok()?;
    first_missing(schema, names, own, &set.selection_set)
}

/// `(context, selection)` of each entry of a `@join__field(contextArguments:)`.
fn context_arguments(join: &Directive) -> Vec<(String, String)> {
    let Some(list) = join.specified_argument_by_name("contextArguments") else {
        return Vec::new();
    };
    let items: Vec<&apollo_compiler::ast::Value> = match list.as_ref() {
        apollo_compiler::ast::Value::List(items) => items.iter().map(|i| i.as_ref()).collect(),
        other => vec![other],
    };
    items
        .into_iter()
        .filter_map(|item| {
            let apollo_compiler::ast::Value::Object(entries) = item else {
                return None;
            };
            let text = |key: &str| {
                entries
                    .iter()
                    .find(|(k, _)| k == key)
                    .and_then(|(_, v)| v.as_str())
                    .map(str::to_owned)
            };
            Some((text("context")?, text("selection")?))
        })
        .collect()
}

/// What a contextual argument reads that `own` does not cover: a type setting the
/// context (`data in context <name>`), or a field its selection names there.
fn missing_in_context(
    schema: &Valid<Schema>,
    names: &AuthNames,
    own: &Requirements,
    context_directive: Option<&str>,
    context: &str,
    selection: &str,
) -> Option<String> {
    let directive = context_directive?;
    let setters = schema.types.iter().filter(|(_, ty)| {
        ty.directives()
            .iter()
            .any(|d| d.name == directive && str_arg(d, "name").is_some_and(|n| n == context))
    });
    for (setter, _) in setters {
        if !own.implies(&names.of_type(schema, setter)) {
            return Some(format!("data in context {context}"));
        }
        // Built without validation: type conditions naming the other setters are not
        // valid on this one, and each is checked on its own type anyway.
        // Field sets have no outer braces; a `{ field }` selection does.
        let trimmed = selection.trim();
        let inner = trimmed
            .strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .unwrap_or(trimmed);
        let set = match FieldSet::parse(schema, setter.clone(), inner, "fromContext") {
            Ok(set) => set,
            Err(with) => with.partial,
        };
        if let Some(m) = first_missing(schema, names, own, &set.selection_set) {
            return Some(format!("{m} data"));
        }
    }
    None
}

/// What the first selection `own` does not cover reads (`field "T.f"`, or `inline
/// fragment type condition "T"`), if any.
fn first_missing(
    schema: &Valid<Schema>,
    names: &AuthNames,
    own: &Requirements,
    set: &SelectionSet,
) -> Option<String> {
    for selection in &set.selections {
        match selection {
            Selection::Field(f) => {
                let field_reqs = names.of_directives(f.definition.directives.iter());
                let type_reqs = names.of_type(schema, f.definition.ty.inner_named_type());
                if !own.implies(&field_reqs) || !own.implies(&type_reqs) {
                    return Some(format!("field \"{}.{}\"", set.ty, f.name));
                }
                if let Some(m) = first_missing(schema, names, own, &f.selection_set) {
                    return Some(m);
                }
            }
            Selection::InlineFragment(fragment) => {
                if let Some(condition) = &fragment.type_condition
                    && !own.implies(&names.of_type(schema, condition))
                {
                    return Some(format!("inline fragment type condition \"{condition}\""));
                }
                if let Some(m) = first_missing(schema, names, own, &fragment.selection_set) {
                    return Some(m);
                }
            }
            Selection::FragmentSpread(_) => {}
        }
    }
    None
}

/// `join__Graph` values and their subgraph names.
fn graph_names(schema: &Schema) -> Vec<(String, String)> {
    let Some(ExtendedType::Enum(graphs)) = schema.types.get("join__Graph") else {
        return Vec::new();
    };
    graphs
        .values
        .iter()
        .filter_map(|(value, def)| {
            let d = def.directives.iter().find(|d| d.name == "join__graph")?;
            Some((value.to_string(), str_arg(d, "name")?.to_owned()))
        })
        .collect()
}
