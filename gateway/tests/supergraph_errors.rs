//! Malformed or unsupported supergraphs fail at startup with an error naming the problem.

use graphfleet_gateway::supergraph::Supergraph;

const GOOD: &str = include_str!("fixtures/keys/supergraph.graphql");

fn error_of(text: &str) -> String {
    match Supergraph::parse(text) {
        Ok(_) => panic!("supergraph unexpectedly loaded"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn good_supergraph_loads_and_hides_join_machinery() {
    let sg = Supergraph::parse(GOOD).expect("fixture supergraph loads");
    assert_eq!(sg.meta.subgraphs.len(), 4);
    let api = sg.api_schema.to_string();
    assert!(
        !api.contains("join__"),
        "API schema leaks join machinery:\n{api}"
    );
    assert!(!api.contains("@link"), "API schema leaks @link:\n{api}");
    insta::assert_snapshot!("keys_api_schema", api);
}

#[test]
fn inaccessible_elements_are_not_in_the_api_schema() {
    let text = GOOD
        .replace(
            "@link(url: \"https://specs.apollo.dev/join/v0.3\", for: EXECUTION)",
            "@link(url: \"https://specs.apollo.dev/join/v0.3\", for: EXECUTION)\n  @link(url: \"https://specs.apollo.dev/inaccessible/v0.2\", for: SECURITY)",
        )
        .replace("directive @join__enumValue", "directive @inaccessible on FIELD_DEFINITION | OBJECT | INTERFACE | UNION | ARGUMENT_DEFINITION | SCALAR | ENUM | ENUM_VALUE | INPUT_OBJECT | INPUT_FIELD_DEFINITION\n\ndirective @join__enumValue")
        .replace("plan: String", "plan: String @inaccessible");
    let sg = Supergraph::parse(&text).expect("supergraph with @inaccessible loads");
    let api = sg.api_schema.to_string();
    assert!(
        !api.contains("plan"),
        "inaccessible field is exposed:\n{api}"
    );
    assert!(!api.contains("inaccessible"), "directive leaked:\n{api}");
    assert!(api.contains("email"), "other fields stay:\n{api}");
}

#[test]
fn not_graphql() {
    insta::assert_snapshot!(error_of("type Query {"));
}

#[test]
fn missing_join_link() {
    insta::assert_snapshot!(error_of("type Query { a: Int }"));
}

#[test]
fn unknown_join_version() {
    insta::assert_snapshot!(error_of(&GOOD.replace("join/v0.3", "join/v0.9")));
}

#[test]
fn missing_graph_enum() {
    let text = GOOD.replace("enum join__Graph", "enum join__Graphs");
    insta::assert_snapshot!(error_of(&text));
}

#[test]
fn invalid_key_field_set() {
    let text = GOOD.replacen("key: \"id\"", "key: \"nope\"", 1);
    insta::assert_snapshot!(error_of(&text));
}

#[test]
fn unreadable_file() {
    let err = Supergraph::from_file(std::path::Path::new("/nonexistent/supergraph.graphql"))
        .expect_err("missing file fails");
    insta::assert_snapshot!(err.to_string());
}

/// Tokens apollo-compiler's field-set parser panics on are an error (the loader runs
/// on the hot-reload thread, where a panic would end reloads silently).
#[test]
fn field_set_with_bad_tokens_is_an_error_not_a_panic() {
    for bad in ["id %", "id ~", "1.2.3", "\\\"open", "id ."] {
        let text = GOOD.replacen("key: \"id\"", &format!("key: \"{bad}\""), 1);
        let err = error_of(&text);
        assert!(err.contains("Unexpected"), "{bad:?}: {err}");
    }
}
