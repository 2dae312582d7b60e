//! Every fixture folder composes to its snapshotted supergraph or errors.

mod support;

use graphfleet_composition::compose;

#[test]
fn fixtures_match_snapshots() {
    let fixtures = support::fixtures();
    assert!(fixtures.len() >= 10, "fixtures found: {}", fixtures.len());
    for dir in fixtures {
        let name = dir
            .file_name()
            .expect("dir name")
            .to_string_lossy()
            .into_owned();
        let text = match compose(&support::load(&dir)) {
            Ok(c) => {
                assert!(!name.starts_with("err-"), "{name} should fail to compose");
                c.supergraph_sdl
            }
            Err(e) => {
                assert!(name.starts_with("err-"), "{name} failed: {e}");
                support::error_text(&e)
            }
        };
        insta::with_settings!({
            snapshot_path => dir.clone(),
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!("expected", text);
        });
    }
}

#[test]
fn error_fixture_names_carry_the_expected_code() {
    for dir in support::fixtures() {
        let name = dir
            .file_name()
            .expect("dir name")
            .to_string_lossy()
            .into_owned();
        let Some(code) = name.strip_prefix("err-") else {
            continue;
        };
        let errors = compose(&support::load(&dir)).expect_err("error fixture fails");
        let want = code.to_uppercase().replace('-', "_");
        assert!(
            errors
                .0
                .iter()
                .any(|e| e.code.starts_with(&want) || want.starts_with(&e.code)),
            "{name}: no {want} among {errors}"
        );
    }
}

#[test]
fn field_errors_carry_source_locations() {
    let dir = support::fixtures()
        .into_iter()
        .find(|d| d.ends_with("err-field-type-mismatch"))
        .expect("fixture exists");
    let errors = compose(&support::load(&dir)).expect_err("fails");
    let locs: Vec<(String, usize, usize)> = errors.0[0]
        .locations
        .iter()
        .map(|l| (l.subgraph.clone(), l.line, l.column))
        .collect();
    // `T.v` is at line 3 in a.graphql and line 2 in b.graphql, column 37 in both.
    assert_eq!(locs, [("a".to_owned(), 3, 37), ("b".to_owned(), 2, 37)]);
}
