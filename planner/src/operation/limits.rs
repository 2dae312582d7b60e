//! Request limits, checked once per cached operation: parser token and recursion
//! limits while parsing, then depth, aliases, root fields and introspection on the
//! selected operation with fragments expanded (validation guarantees no cycles), and
//! the size of its introspection answer.

use super::RequestErrors;
use crate::limits::OperationLimits;
use apollo_compiler::Schema;
use apollo_compiler::executable::{ExecutableDocument, Operation, Selection, SelectionSet};
use apollo_compiler::parser::Parser;
use apollo_compiler::response::GraphQLError;
use rustc_hash::FxHashMap;

/// Selection-set nesting the parser accepts (bounds recursion in every later pass).
const PARSER_RECURSION_LIMIT: usize = 128;

/// A parser honouring the token limit and [`PARSER_RECURSION_LIMIT`].
pub fn parser(limits: &OperationLimits) -> Parser {
    let parser = Parser::new().recursion_limit(PARSER_RECURSION_LIMIT);
    match limits.max_tokens {
        Some(max) => parser.token_limit(max as usize),
        None => parser,
    }
}

/// A request error with `extensions.code`.
pub fn error(code: &str, message: impl Into<String>) -> GraphQLError {
    let mut e = GraphQLError::new(message, None, &Default::default());
    e.extensions.insert("code", code.into());
    e
}

/// The limit error for a parser diagnostic, if it is one.
pub fn parser_limit_error(message: &str, limits: &OperationLimits) -> Option<GraphQLError> {
    if message.contains("token limit reached") {
        let max = limits.max_tokens.unwrap_or_default();
        return Some(error(
            "MAX_TOKENS_EXCEEDED",
            format!("the query has more than {max} tokens"),
        ));
    }
    if message.contains("recursion limit reached") {
        return Some(error(
            "MAX_RECURSION_EXCEEDED",
            format!("the query nests deeper than {PARSER_RECURSION_LIMIT} levels"),
        ));
    }
    None
}

/// What the selected operation measures, fragments expanded.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Measure {
    pub depth: u32,
    pub aliases: u32,
    pub root_fields: u32,
    pub introspection: bool,
}

/// Depth and alias count of one selection set; fragments memoized by name, so shared
/// fragments cost once however often they are spread.
struct Walker<'a> {
    document: &'a ExecutableDocument,
    fragments: FxHashMap<&'a str, (u32, u32)>,
}

impl<'a> Walker<'a> {
    /// (depth, aliases) of `set`; counts saturate instead of overflowing.
    fn walk(&mut self, set: &'a SelectionSet) -> (u32, u32) {
        let (mut depth, mut aliases) = (0u32, 0u32);
        for selection in &set.selections {
            let (d, a) = match selection {
                Selection::Field(f) => {
                    let (d, a) = self.walk(&f.selection_set);
                    (
                        d.saturating_add(1),
                        a.saturating_add(u32::from(f.alias.is_some())),
                    )
                }
                Selection::InlineFragment(i) => self.walk(&i.selection_set),
                Selection::FragmentSpread(s) => self.fragment(s.fragment_name.as_str()),
            };
            depth = depth.max(d);
            aliases = aliases.saturating_add(a);
        }
        (depth, aliases)
    }

    fn fragment(&mut self, name: &'a str) -> (u32, u32) {
        if let Some(m) = self.fragments.get(name) {
            return *m;
        }
        let m = match self.document.fragments.get(name) {
            Some(f) => self.walk(&f.selection_set),
            None => (0, 0),
        };
        self.fragments.insert(name, m);
        m
    }

    /// Root fields as written, fragments on the root expanded each time they are spread.
    fn root_fields(&self, set: &'a SelectionSet, out: &mut Measure) {
        for selection in &set.selections {
            match selection {
                Selection::Field(f) => {
                    out.root_fields = out.root_fields.saturating_add(1);
                    out.introspection |= f.name == "__schema" || f.name == "__type";
                }
                Selection::InlineFragment(i) => self.root_fields(&i.selection_set, out),
                Selection::FragmentSpread(s) => {
                    if let Some(f) = self.document.fragments.get(&s.fragment_name) {
                        self.root_fields(&f.selection_set, out);
                    }
                }
            }
        }
    }
}

/// Measure `operation` (valid, so fragments exist and never cycle).
pub fn measure(document: &ExecutableDocument, operation: &Operation) -> Measure {
    let mut walker = Walker {
        document,
        fragments: FxHashMap::default(),
    };
    let (depth, aliases) = walker.walk(&operation.selection_set);
    let mut m = Measure {
        depth,
        aliases,
        ..Measure::default()
    };
    walker.root_fields(&operation.selection_set, &mut m);
    m
}

/// Every configured limit `operation` exceeds, as request errors.
pub fn check(
    schema: &Schema,
    document: &ExecutableDocument,
    operation: &Operation,
    limits: &OperationLimits,
) -> Result<(), RequestErrors> {
    let unlimited = limits.max_depth.is_none()
        && limits.max_aliases.is_none()
        && limits.max_root_fields.is_none()
        && limits.introspection
        && limits.max_introspection_values.is_none();
    if unlimited {
        return Ok(());
    }
    let m = measure(document, operation);
    let mut errors = Vec::new();
    let over = |max: Option<u32>, value: u32| max.filter(|max| value > *max);
    if let Some(max) = over(limits.max_depth, m.depth) {
        errors.push(error(
            "MAX_DEPTH_EXCEEDED",
            format!(
                "the operation is {} levels deep; the limit is {max}",
                m.depth
            ),
        ));
    }
    if let Some(max) = over(limits.max_aliases, m.aliases) {
        errors.push(error(
            "MAX_ALIASES_EXCEEDED",
            format!(
                "the operation has {} aliases; the limit is {max}",
                m.aliases
            ),
        ));
    }
    if let Some(max) = over(limits.max_root_fields, m.root_fields) {
        errors.push(error(
            "MAX_ROOT_FIELDS_EXCEEDED",
            format!(
                "the operation has {} root fields; the limit is {max}",
                m.root_fields
            ),
        ));
    }
    if !limits.introspection && m.introspection {
        errors.push(error(
            "INTROSPECTION_DISABLED",
            "introspection (__schema, __type) is disabled",
        ));
    }
    // Counted only within the other limits: the count's recursion follows the depth.
    if let Some(max) = limits.max_introspection_values
        && limits.introspection
        && m.introspection
        && errors.is_empty()
    {
        let values =
            super::introspection::introspection_values(schema, document, operation, u64::from(max));
        if values > u64::from(max) {
            errors.push(error(
                "MAX_INTROSPECTION_VALUES_EXCEEDED",
                format!(
                    "the introspection answer would hold more than {max} values (object entries and list items), over the limit"
                ),
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(RequestErrors(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apollo_compiler::Schema;

    fn measure_of(query: &str) -> Measure {
        let schema = Schema::parse_and_validate(
            "type Query { a: A, n: Int } type A { b: A, n: Int }",
            "s.graphql",
        )
        .expect("valid schema");
        let doc = ExecutableDocument::parse_and_validate(&schema, query, "q.graphql")
            .expect("valid query");
        let op = doc.operations.get(None).expect("one operation");
        measure(&doc, op)
    }

    #[test]
    fn fragments_are_expanded() {
        let m = measure_of(
            "{ x: a { ...F } n ...R } fragment F on A { b { y: n } z: b { n } } fragment R on Query { __type(name: \"A\") { name } }",
        );
        assert_eq!(
            m,
            Measure {
                depth: 3,
                aliases: 3,
                root_fields: 3,
                introspection: true
            }
        );
    }

    #[test]
    fn typename_is_not_introspection() {
        let m = measure_of("{ __typename a { __typename } }");
        assert!(!m.introspection);
        assert_eq!((m.depth, m.root_fields), (2, 2));
    }
}
