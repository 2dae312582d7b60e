//! Bad input gets errors with codes, never a panic.

use graphfleet_composition::{CompositionErrors, SubgraphInput, compose};

fn sg(name: &str, sdl: &str) -> SubgraphInput {
    SubgraphInput {
        name: name.to_owned(),
        url: format!("http://{name}"),
        sdl: sdl.to_owned(),
    }
}

fn codes(result: Result<graphfleet_composition::Composed, CompositionErrors>) -> Vec<String> {
    result
        .expect_err("composition fails")
        .0
        .into_iter()
        .map(|e| e.code)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[test]
fn no_subgraphs() {
    assert_eq!(codes(compose(&[])), ["NO_QUERIES"]);
}

#[test]
fn empty_and_garbage_sdl() {
    assert_eq!(codes(compose(&[sg("a", "")])), ["INVALID_GRAPHQL"]);
    assert_eq!(
        codes(compose(&[sg("a", "}}} type {{{ \u{0}")])),
        ["INVALID_GRAPHQL"]
    );
}

#[test]
fn duplicate_subgraph_names() {
    let q = "type Query { a: Int }";
    assert_eq!(
        codes(compose(&[sg("a", q), sg("a", q)])),
        ["INVALID_SUBGRAPH_NAME"]
    );
}

#[test]
fn unknown_federation_versions() {
    for url in [
        "https://specs.apollo.dev/federation/v3.0",
        "https://specs.apollo.dev/federation/v2.99",
    ] {
        let sdl = format!(
            "extend schema @link(url: \"{url}\", import: [\"@key\"]) type Query {{ a: Int }}"
        );
        assert_eq!(
            codes(compose(&[sg("a", &sdl)])),
            ["UNKNOWN_FEDERATION_LINK_VERSION"]
        );
    }
}

#[test]
fn directive_newer_than_the_linked_version() {
    let sdl = "extend schema @link(url: \"https://specs.apollo.dev/federation/v2.0\", import: [\"@interfaceObject\"]) type Query { a: Int }";
    assert_eq!(
        codes(compose(&[sg("a", sdl)])),
        ["INVALID_LINK_DIRECTIVE_USAGE"]
    );
}

#[test]
fn key_on_missing_field_and_conflicting_types() {
    let a = "extend schema @link(url: \"https://specs.apollo.dev/federation/v2.3\", import: [\"@key\", \"@shareable\"]) type Query { t: T } type T @key(fields: \"missing\") { id: ID! }";
    assert_eq!(codes(compose(&[sg("a", a)])), ["KEY_INVALID_FIELDS"]);
    let a = "extend schema @link(url: \"https://specs.apollo.dev/federation/v2.3\", import: [\"@shareable\"]) type Query { t: [Int] @shareable }";
    let b = "extend schema @link(url: \"https://specs.apollo.dev/federation/v2.3\", import: [\"@shareable\"]) type Query { t: Int @shareable }";
    assert_eq!(
        codes(compose(&[sg("a", a), sg("b", b)])),
        ["FIELD_TYPE_MISMATCH"]
    );
}

#[test]
fn deeply_nested_input_does_not_overflow() {
    let deep = format!(
        "type Query {{ a: {}Int{} }}",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    // The parser's recursion limit turns this into an error rather than a stack overflow.
    assert_eq!(codes(compose(&[sg("a", &deep)])), ["INVALID_GRAPHQL"]);
    let key = format!(
        "extend schema @link(url: \"https://specs.apollo.dev/federation/v2.3\", import: [\"@key\"]) type Query {{ t: T }} type T @key(fields: \"{}\") {{ id: ID! }}",
        "id { ".repeat(3000)
    );
    assert_eq!(codes(compose(&[sg("a", &key)])), ["KEY_INVALID_FIELDS"]);
}

#[test]
fn control_characters_in_key_fields() {
    // Found by fuzzing: the field-set parser panicked on these.
    let sdl = "extend schema @link(url: \"https://specs.apollo.dev/federation/v2.3\", import: [\"@key\"])\n\
               type Query { u: User } type User @key(fields: \"\u{1}\u{2}\") { id: ID! }";
    assert_eq!(codes(compose(&[sg("a", sdl)])), ["KEY_INVALID_FIELDS"]);
    let sdl = sdl.replace("\u{1}\u{2}", "-id");
    assert_eq!(codes(compose(&[sg("a", &sdl)])), ["KEY_INVALID_FIELDS"]);
}
