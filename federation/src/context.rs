//! Federation 2.8 contexts in the supergraph: which types set a context
//! (`@context(name:)`, the context spec's directive under its linked name) and the
//! contextual arguments of each field (`@join__field(contextArguments:)`), whose values
//! the gateway reads from an ancestor object and passes to the subgraph.

// Defined in `meta`, whose `FieldResolver` holds it, so `meta` needs nothing from here.
use crate::meta::ContextArgument;

use crate::SupergraphError;
use crate::meta::{SelTree, SelTreeItem};
use apollo_compiler::ast::{Definition, Directive, Document, Selection, Value};
use apollo_compiler::{Name, Node, Schema};

/// The local name of the context spec's `@context` directive, when the spec is linked.
pub fn directive_name(schema: &Schema) -> Option<String> {
    schema.schema_definition.directives.iter().find_map(|link| {
        let url = crate::arg_str(link, "url")?;
        let (spec, _) = crate::parse_spec_url(url)?;
        (spec == "context" && url.starts_with("https://specs.apollo.dev/"))
            .then(|| crate::auth::local_name(link, "context"))
    })
}

/// The contexts `directives` set (the names of `@<name>(name:)` applications).
pub(crate) fn contexts_set<'d>(
    name: Option<&str>,
    directives: impl Iterator<Item = &'d Node<Directive>>,
) -> Vec<String> {
    let Some(name) = name else {
        return Vec::new();
    };
    directives
        .filter(|d| d.name.as_str() == name)
        .filter_map(|d| crate::arg_str(d, "name").map(str::to_owned))
        .collect()
}

/// The `contextArguments:` of one `@join__field`.
pub(crate) fn arguments(
    join_field: &Directive,
    location: &str,
) -> Result<Vec<ContextArgument>, SupergraphError> {
    let Some(list) = join_field.specified_argument_by_name("contextArguments") else {
        return Ok(Vec::new());
    };
    let items: Vec<&Node<Value>> = match list.as_ref() {
        Value::List(items) => items.iter().collect(),
        Value::Null => Vec::new(),
        // Input coercion: a single value stands for a list of one.
        _ => vec![list],
    };
    items
        .into_iter()
        .map(|item| argument(item, location))
        .collect()
}

fn argument(item: &Value, location: &str) -> Result<ContextArgument, SupergraphError> {
    let invalid = |what: &str| {
        SupergraphError::Invalid(format!(
            "{location}: @join__field(contextArguments:) entry {what}"
        ))
    };
    let Value::Object(entries) = item else {
        return Err(invalid("is not an object"));
    };
    let text = |key: &str| {
        entries
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_str())
            .ok_or_else(|| invalid(&format!("has no string `{key}`")))
    };
    let name = Name::new(text("name")?).map_err(|e| invalid(&format!("`name`: {e}")))?;
    let selection_text = text("selection")?;
    let selection = parse_selection(selection_text).map_err(|e| {
        invalid(&format!(
            "has an invalid `selection` \"{selection_text}\": {e}"
        ))
    })?;
    Ok(ContextArgument {
        name,
        ty: text("type")?.to_owned(),
        context: text("context")?.to_owned(),
        selection,
    })
}

/// A contextual argument's selection (`{ prop }` or `... on T { prop } ... on U { q }`).
/// Only its syntax is read: composition checked it against the types setting the
/// context, and with several of them no single type could validate it.
fn parse_selection(text: &str) -> Result<SelTree, String> {
    if let Some(bad) = crate::field_set::invalid_token(text) {
        return Err(format!("unexpected {}", bad.escape_default()));
    }
    let trimmed = text.trim();
    let document = if trimmed.starts_with('{') {
        format!("query {trimmed}")
    } else {
        format!("query {{ {trimmed} }}")
    };
    let ast =
        Document::parse(document, "context_selection.graphql").map_err(|e| e.errors.to_string())?;
    let Some(Definition::OperationDefinition(op)) = ast.definitions.first() else {
        return Err("not a selection".to_owned());
    };
    let tree = tree_of(&op.selection_set);
    if tree.items.is_empty() {
        return Err("it selects nothing".to_owned());
    }
    Ok(tree)
}

fn tree_of(selections: &[Selection]) -> SelTree {
    let mut tree = SelTree::default();
    for sel in selections {
        match sel {
            Selection::Field(f) => tree.items.push(SelTreeItem::Field {
                name: f.name.clone(),
                alias: None,
                args: f.arguments.clone(),
                sub: tree_of(&f.selection_set),
            }),
            Selection::InlineFragment(f) => match &f.type_condition {
                Some(tc) => tree.items.push(SelTreeItem::Fragment {
                    type_condition: tc.clone(),
                    sub: tree_of(&f.selection_set),
                }),
                None => tree.merge(&tree_of(&f.selection_set)),
            },
            Selection::FragmentSpread(_) => {}
        }
    }
    tree
}

#[cfg(test)]
mod tests {
    use super::parse_selection;

    #[test]
    fn selections_with_and_without_braces_parse() {
        let plain = parse_selection(" { prop }").expect("braced selection");
        assert_eq!(plain.items.len(), 1);
        assert!(plain.field("prop").is_some());
        let typed = parse_selection(" ... on T { prop } ... on V { prop }").expect("fragments");
        assert_eq!(typed.items.len(), 2);
        let nested = parse_selection("{ owner { id } }").expect("nested");
        assert!(nested.field("owner").and_then(|o| o.field("id")).is_some());
    }

    #[test]
    fn bad_selections_are_errors() {
        for bad in ["", "{ }", "{ prop", "\u{0}", "... on"] {
            assert!(parse_selection(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
