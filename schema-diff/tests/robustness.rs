//! Without cargo-fuzz: garbage, truncated and mutated SDL (plain schemas and supergraphs)
//! must come back as an error or a schema, never a panic. Deterministic: a fixed seed.

use std::path::Path;

use graphfleet_schema_diff::{DiffError, api_schema, diff};

/// xorshift64*: enough randomness for inputs, no dependency, same cases every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn fixture(case: &str, file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(case)
        .join(file);
    std::fs::read_to_string(path).expect("the fixture file is readable")
}

/// Loads `sdl` and, when it is a schema, diffs it against itself and `other`, so the
/// comparison code sees the odd schemas too.
fn load_and_diff(sdl: &str, other: &apollo_compiler::Schema) -> Result<(), DiffError> {
    let schema = api_schema(sdl, "input.graphql")?;
    assert!(diff(&schema, &schema).is_empty(), "a schema equals itself");
    diff(other, &schema);
    diff(&schema, other);
    Ok(())
}

fn texts() -> Vec<String> {
    vec![
        fixture("arguments", "old.graphql"),
        fixture("directives", "old.graphql"),
        fixture("subgraph", "new.graphql"),
        fixture("supergraph-inaccessible", "new.graphql"),
    ]
}

fn reference() -> apollo_compiler::Schema {
    api_schema(&fixture("fields", "old.graphql"), "reference.graphql").expect("fixture loads")
}

#[test]
fn random_bytes_are_an_error() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let other = reference();
    for _ in 0..500 {
        let len = 1 + rng.below(200);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let text = String::from_utf8_lossy(&bytes);
        assert!(load_and_diff(&text, &other).is_err(), "{text:?} loaded");
    }
}

#[test]
fn random_tokens_never_panic() {
    const TOKENS: &[&str] = &[
        "type",
        "input",
        "enum",
        "union",
        "interface",
        "scalar",
        "schema",
        "extend",
        "directive",
        "@",
        "on",
        "implements",
        "repeatable",
        "query",
        "Query",
        "join__Graph",
        "@link(url: \"https://specs.apollo.dev/join/v0.3\")",
        "@inaccessible",
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        ":",
        "=",
        "|",
        "&",
        "!",
        "\"",
        "\"\"\"",
        "#",
        "\n",
        " ",
        "1",
        "-0.5e3",
        "Foo",
        "foo",
        "String",
        "Int",
        "FIELD",
        "OBJECT",
        "$x",
        "...",
        "null",
        "true",
    ];
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let other = reference();
    for _ in 0..2000 {
        let len = rng.below(60);
        let text: String = (0..len)
            .map(|_| TOKENS[rng.below(TOKENS.len())])
            .collect::<Vec<_>>()
            .join(" ");
        let _ = load_and_diff(&text, &other);
    }
}

#[test]
fn every_truncation_is_an_error_or_a_schema() {
    let other = reference();
    for text in texts() {
        assert!(load_and_diff(&text, &other).is_ok(), "the whole text loads");
        for (end, _) in text.char_indices().skip(1) {
            let prefix = &text[..end];
            let result = load_and_diff(prefix, &other);
            // A prefix cut right after an opening bracket cannot be complete SDL.
            if prefix.trim_end().ends_with(['{', '(', ':']) {
                assert!(result.is_err(), "prefix loaded:\n{prefix}");
            }
        }
    }
}

#[test]
fn mutated_sdl_never_panics() {
    let mut rng = Rng(0x94D0_49BB_1331_11EB);
    let other = reference();
    for text in texts() {
        let bytes = text.as_bytes();
        for _ in 0..400 {
            let mut mutated = bytes.to_vec();
            for _ in 0..1 + rng.below(4) {
                mutate(&mut rng, &mut mutated);
            }
            let _ = load_and_diff(&String::from_utf8_lossy(&mutated), &other);
        }
    }
}

/// Deletes, duplicates or overwrites a short random span.
fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    if bytes.is_empty() {
        return;
    }
    let start = rng.below(bytes.len());
    let end = (start + 1 + rng.below(16)).min(bytes.len());
    match rng.below(3) {
        0 => {
            bytes.drain(start..end);
        }
        1 => {
            let span = bytes[start..end].to_vec();
            let at = rng.below(bytes.len());
            bytes.splice(at..at, span);
        }
        _ => {
            for b in &mut bytes[start..end] {
                *b = b"{}()[]:!@=|&\"# \nAz_9"[rng.below(20)];
            }
        }
    }
}
