//! Parsing a field set's text against the subgraph schema, with Apollo's errors.

use apollo_compiler::executable::FieldSet;
use apollo_compiler::{Name, Node};

use crate::errors::ErrorSink;
use crate::subgraph::Subgraph;

pub(super) fn parse(
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
