//! The one field-set parser (`@key`, `@requires`, `@provides`, `join__FieldSet`), shared by
//! the supergraph loader and the composer. apollo-compiler's field-set parser panics on
//! some invalid tokens, so the text is checked for them first: a bad field set is an
//! error, never a panic (the gateway parses supergraphs on its hot-reload thread).

use apollo_compiler::executable::FieldSet;
use apollo_compiler::validation::Valid;
use apollo_compiler::{Name, Schema};

/// Why a field set was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldSetError {
    #[error("\"{0}\" is not a type name")]
    TypeName(String),
    #[error("the schema has no type \"{0}\"")]
    UnknownType(String),
    #[error("Syntax Error: Unexpected {0}.")]
    Token(String),
    #[error("{0}")]
    Invalid(String),
}

/// `source` parsed and validated as a selection on type `ty` of `schema`.
pub fn parse(
    schema: &Valid<Schema>,
    ty: &str,
    source: &str,
) -> Result<Valid<FieldSet>, FieldSetError> {
    let name = Name::new(ty).map_err(|_| FieldSetError::TypeName(ty.to_owned()))?;
    // apollo-compiler accepts an unknown type with an empty selection.
    if !schema.types.contains_key(&name) {
        return Err(FieldSetError::UnknownType(ty.to_owned()));
    }
    if let Some(bad) = invalid_token(source) {
        return Err(FieldSetError::Token(bad.escape_default().to_string()));
    }
    FieldSet::parse_and_validate(schema, name, source, "field_set.graphql").map_err(|with| {
        FieldSetError::Invalid(
            with.errors
                .iter()
                .next()
                .map(|d| d.error.to_string())
                .unwrap_or_default(),
        )
    })
}

/// The first text that is not a GraphQL token (names, numbers, strings, punctuators),
/// if any.
pub fn invalid_token(text: &str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Valid<Schema> {
        Schema::parse_and_validate("type Query { a: A } type A { id: ID! b: Int }", "s.graphql")
            .expect("valid test schema")
    }

    #[test]
    fn accepts_field_sets_and_refuses_bad_ones_without_panicking() {
        let schema = schema();
        assert!(parse(&schema, "A", "id b").is_ok());
        assert!(matches!(
            parse(&schema, "A", "nope"),
            Err(FieldSetError::Invalid(_))
        ));
        assert!(matches!(
            parse(&schema, "Nope", "id"),
            Err(FieldSetError::UnknownType(_))
        ));
        assert!(matches!(
            parse(&schema, "A b", "id"),
            Err(FieldSetError::TypeName(_))
        ));
        for bad in ["id %", "id ~", "1.2.3", "\"open", "id .", "id \u{1}"] {
            assert!(
                matches!(parse(&schema, "A", bad), Err(FieldSetError::Token(_))),
                "{bad:?} must be refused as a bad token"
            );
        }
    }
}
