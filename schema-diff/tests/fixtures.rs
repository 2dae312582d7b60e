//! Each `fixtures/<case>/{old,new}.graphql` diffs to the table in `snapshots/`, and
//! together the cases cover every change kind.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use graphfleet_schema_diff::{Change, Severity, api_schema, diff, diff_sdl, render};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn cases() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .expect("the fixtures folder exists")
        .map(|e| e.expect("a readable fixtures entry").file_name())
        .map(|n| n.into_string().expect("fixture names are UTF-8"))
        .collect();
    names.sort();
    names
}

fn load(case: &str, file: &str) -> apollo_compiler::Schema {
    let path = fixtures_dir().join(case).join(file);
    let sdl = std::fs::read_to_string(&path).expect("the fixture file is readable");
    api_schema(&sdl, &path.display().to_string())
        .unwrap_or_else(|e| panic!("fixture {case}/{file} loads: {e}"))
}

fn changes(case: &str) -> Vec<Change> {
    diff(&load(case, "old.graphql"), &load(case, "new.graphql"))
}

fn find<'a>(changes: &'a [Change], kind: &str, coordinate: &str) -> &'a Change {
    changes
        .iter()
        .find(|c| c.kind.name() == kind && c.coordinate == coordinate)
        .unwrap_or_else(|| panic!("no {kind} at {coordinate} in\n{}", render(changes)))
}

#[test]
fn every_case_matches_its_snapshot() {
    for case in cases() {
        insta::assert_snapshot!(case.clone(), render(&changes(&case)));
    }
}

#[test]
fn json_names_kinds_and_severities_like_the_table() {
    insta::assert_json_snapshot!("unions-json", changes("unions"));
}

#[test]
fn changes_are_sorted_by_coordinate() {
    for case in cases() {
        let changes = changes(&case);
        let coordinates: Vec<&str> = changes.iter().map(|c| c.coordinate.as_str()).collect();
        assert!(coordinates.is_sorted(), "{case}: {coordinates:?}");
    }
}

#[test]
fn the_cases_cover_every_change_kind() {
    let expected: BTreeSet<&str> = [
        "TYPE_ADDED",
        "TYPE_REMOVED",
        "TYPE_KIND_CHANGED",
        "FIELD_ADDED",
        "FIELD_REMOVED",
        "FIELD_TYPE_CHANGED",
        "REQUIRED_ARGUMENT_ADDED",
        "OPTIONAL_ARGUMENT_ADDED",
        "ARGUMENT_REMOVED",
        "ARGUMENT_TYPE_CHANGED",
        "ARGUMENT_DEFAULT_CHANGED",
        "ENUM_VALUE_ADDED",
        "ENUM_VALUE_REMOVED",
        "UNION_MEMBER_ADDED",
        "UNION_MEMBER_REMOVED",
        "IMPLEMENTED_INTERFACE_ADDED",
        "IMPLEMENTED_INTERFACE_REMOVED",
        "REQUIRED_INPUT_FIELD_ADDED",
        "OPTIONAL_INPUT_FIELD_ADDED",
        "INPUT_FIELD_REMOVED",
        "INPUT_FIELD_TYPE_CHANGED",
        "INPUT_FIELD_DEFAULT_CHANGED",
        "DIRECTIVE_ADDED",
        "DIRECTIVE_REMOVED",
        "DIRECTIVE_LOCATION_ADDED",
        "DIRECTIVE_LOCATION_REMOVED",
        "DIRECTIVE_REPEATABLE_ADDED",
        "DIRECTIVE_REPEATABLE_REMOVED",
        "DEPRECATION_ADDED",
        "DEPRECATION_REMOVED",
    ]
    .into();
    let seen: BTreeSet<&str> = cases()
        .iter()
        .flat_map(|case| changes(case))
        .map(|c| c.kind.name())
        .collect();
    assert_eq!(seen, expected);
}

#[test]
fn output_types_may_only_narrow() {
    let changes = changes("fields");
    let severity = |coordinate| find(&changes, "FIELD_TYPE_CHANGED", coordinate).severity;
    assert_eq!(severity("Query.name"), Severity::Safe, "String -> String!");
    assert_eq!(
        severity("Query.tags"),
        Severity::Safe,
        "[String] -> [String!]!"
    );
    assert_eq!(
        severity("Query.title"),
        Severity::Breaking,
        "String! -> String"
    );
    assert_eq!(severity("Query.count"), Severity::Breaking, "Int -> String");
    assert_eq!(severity("Query.ids"), Severity::Breaking, "[ID!]! -> ID!");
}

#[test]
fn input_types_may_only_widen() {
    let changes = changes("arguments");
    let severity = |coordinate| find(&changes, "ARGUMENT_TYPE_CHANGED", coordinate).severity;
    assert_eq!(
        severity("Query.products(first:)"),
        Severity::Safe,
        "Int! -> Int"
    );
    assert_eq!(
        severity("Query.products(after:)"),
        Severity::Breaking,
        "String -> String!"
    );
    let changes = self::changes("input-objects");
    let severity = |coordinate| find(&changes, "INPUT_FIELD_TYPE_CHANGED", coordinate).severity;
    assert_eq!(
        severity("ProductFilter.term"),
        Severity::Safe,
        "String! -> String"
    );
    assert_eq!(
        severity("ProductFilter.tags"),
        Severity::Safe,
        "[String!] -> [String]"
    );
    assert_eq!(
        severity("ProductFilter.category"),
        Severity::Breaking,
        "String -> String!"
    );
}

#[test]
fn a_supergraph_is_compared_by_its_api_schema() {
    let changes = changes("supergraph-inaccessible");
    let summary: Vec<(&str, &str, Severity)> = changes
        .iter()
        .map(|c| (c.kind.name(), c.coordinate.as_str(), c.severity))
        .collect();
    // Removing inaccessible elements (User.secret, FAMILY, friends(depth:)), adding an
    // inaccessible type and field, and a new subgraph in join__Graph change nothing
    // clients see; a field made inaccessible is removed for them.
    assert_eq!(
        summary,
        [
            ("FIELD_REMOVED", "User.age", Severity::Breaking),
            ("FIELD_ADDED", "User.bio", Severity::Safe),
        ]
    );
}

#[test]
fn type_system_directives_are_at_most_dangerous() {
    let changes = changes("directives");
    assert!(find(&changes, "DIRECTIVE_REMOVED", "@trace").is_breaking());
    assert!(find(&changes, "REQUIRED_ARGUMENT_ADDED", "@cached(region:)").is_breaking());
    let internal = find(&changes, "DIRECTIVE_REMOVED", "@internal");
    assert_eq!(internal.severity, Severity::Dangerous);
    let owner = find(&changes, "REQUIRED_ARGUMENT_ADDED", "@owner(slack:)");
    assert_eq!(owner.severity, Severity::Dangerous);
}

#[test]
fn diff_sdl_takes_texts_and_names_the_bad_one() {
    let old = "type Query { a: Int }";
    let changes = diff_sdl(old, "type Query { a: Int b: Int }").expect("both are schemas");
    assert_eq!(render(&changes).lines().count(), 4, "{}", render(&changes));
    let err = diff_sdl(old, "type Query {").expect_err("the new text is cut short");
    assert!(
        err.to_string()
            .starts_with("new schema is not valid GraphQL SDL:"),
        "{err}"
    );
}
