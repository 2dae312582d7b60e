//! Plans are made per value of the variables `@skip`/`@include` read; an operation
//! reading more of them than a plan key holds is refused, never answered with another
//! request's plan.

use apollo_compiler::Schema;
use apollo_compiler::response::JsonMap;
use graphfleet_planner::operation::{self, ConditionValues};

fn schema() -> apollo_compiler::validation::Valid<Schema> {
    Schema::parse_and_validate("type Query { a: Int b: Int }", "schema.graphql")
        .expect("valid test schema")
}

/// An operation with `n` condition variables, the last one excluding `b`.
fn operation(n: usize) -> String {
    let defs: Vec<String> = (1..=n).map(|i| format!("$v{i}: Boolean = false")).collect();
    let fields: Vec<String> = (1..n)
        .map(|i| format!("a{i}: a @skip(if: $v{i})"))
        .collect();
    format!(
        "query({}) {{ {} b @include(if: $v{n}) }}",
        defs.join(", "),
        fields.join(" ")
    )
}

#[test]
fn each_condition_variable_has_its_bit() {
    let schema = schema();
    let prepared =
        operation::prepare(&schema, &operation(ConditionValues::MAX), None).expect("prepared");
    let ir = &prepared.ir;
    assert_eq!(ir.condition_variables.len(), ConditionValues::MAX);
    let mut variables = JsonMap::new();
    let last = format!("v{}", ConditionValues::MAX);
    variables.insert(last.as_str(), true.into());
    let values = ConditionValues::of(ir, &variables);
    let last = ir.condition_variables.last().expect("a last variable");
    assert_eq!(values.get(ir, last), Some(true));
    assert_eq!(values.get(ir, &ir.condition_variables[0]), Some(false));
}

#[test]
fn too_many_condition_variables_are_refused() {
    let schema = schema();
    let Err(err) = operation::prepare(&schema, &operation(ConditionValues::MAX + 1), None) else {
        panic!("an operation with too many condition variables was accepted");
    };
    let e = &err.0[0];
    assert!(e.message.contains("at most 63"), "{}", e.message);
    assert_eq!(
        e.extensions.get("code").and_then(|c| c.as_str()),
        Some("TOO_MANY_CONDITION_VARIABLES")
    );
}
