//! Parsing a field set's text against the subgraph schema, with Apollo's errors. The
//! parser itself is the federation crate's guarded one, shared with the gateway.

use apollo_compiler::Node;
use apollo_compiler::executable::FieldSet;
use graphfleet_federation::field_set::{self, FieldSetError};

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
    let message = match field_set::parse(&sg.schema, ty, fields) {
        Ok(set) => return Some(Node::new(set.into_inner())),
        // Types come from the subgraph's own definitions: nothing to report.
        Err(FieldSetError::TypeName(_) | FieldSetError::UnknownType(_)) => return None,
        Err(e @ FieldSetError::Token(_)) => format!(
            "[{}] On type \"{ty}\", for {directive}(fields: \"{}\"): {e}",
            sg.name,
            fields.escape_default(),
        ),
        Err(e @ FieldSetError::Invalid(_)) => format!(
            "[{}] On type \"{ty}\", for {directive}(fields: \"{fields}\"): {e}",
            sg.name
        ),
    };
    sink.error(code, message, &sg.name);
    None
}
