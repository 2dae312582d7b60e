//! The `graphfleet diff` binary, run as a real process on the schema-diff fixtures:
//! one test for each exit code.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(case: &str, file: &str) -> String {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../schema-diff/tests/fixtures")
        .join(case)
        .join(file);
    path.to_str().expect("utf-8 path").to_string()
}

fn diff(case: &str, flags: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_graphfleet"))
        .arg("diff")
        .args(flags)
        .arg(fixture(case, "old.graphql"))
        .arg(fixture(case, "new.graphql"))
        .output()
        .expect("graphfleet binary runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A temporary file removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("graphfleet-diff-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("temp file written");
        Self(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn exit_0_when_nothing_breaks() {
    let out = diff("deprecations", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("SEVERITY  KIND"), "{text}");
    assert!(
        text.ends_with("7 changes: 0 breaking, 0 dangerous, 7 safe\n"),
        "{text}"
    );
}

#[test]
fn fail_on_sets_the_least_severe_change_that_exits_1() {
    let old = TempFile::new(
        "old.graphql",
        "type Query { color: Color }\nenum Color { RED }\n",
    );
    let new = TempFile::new(
        "new.graphql",
        "type Query { color: Color }\nenum Color { RED BLUE }\n",
    );
    let run = |flags: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_graphfleet"))
            .arg("diff")
            .args(flags)
            .args([old.path(), new.path()])
            .output()
            .expect("graphfleet binary runs")
    };
    // Only a dangerous change (an enum value added).
    assert_eq!(
        run(&[]).status.code(),
        Some(0),
        "fails on breaking by default"
    );
    assert_eq!(run(&["--fail-on", "dangerous"]).status.code(), Some(1));
    let out = diff("enums", &["--fail-on", "never"]);
    assert_eq!(out.status.code(), Some(0), "never fails, breaking or not");
    assert!(stdout(&out).contains("ENUM_VALUE_REMOVED"));
}

#[test]
fn exit_1_on_a_breaking_change_with_json_output() {
    let out = diff("supergraph-inaccessible", &["--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let changes: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("stdout is JSON");
    assert_eq!(
        changes,
        serde_json::json!([
            {
                "kind": "FIELD_REMOVED",
                "coordinate": "User.age",
                "severity": "breaking",
                "message": "Field `User.age` was removed"
            },
            {
                "kind": "FIELD_ADDED",
                "coordinate": "User.bio",
                "severity": "safe",
                "message": "Field `User.bio` was added"
            }
        ])
    );
}

#[test]
fn exit_2_naming_the_file_on_invalid_sdl() {
    let bad = TempFile::new("bad.graphql", "type Query { products: [Product }\n");
    let good = fixture("enums", "old.graphql");
    let out = Command::new(env!("CARGO_BIN_EXE_graphfleet"))
        .args(["diff", &good, bad.path()])
        .output()
        .expect("graphfleet binary runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!("error: {} is not valid GraphQL SDL:", bad.path())),
        "{err}"
    );
    assert!(err.contains("syntax error"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn exit_2_on_an_unreadable_file() {
    let good = fixture("enums", "old.graphql");
    let out = Command::new(env!("CARGO_BIN_EXE_graphfleet"))
        .args(["diff", "/nonexistent/old.graphql", &good])
        .output()
        .expect("graphfleet binary runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("reading /nonexistent/old.graphql"),
        "{}",
        stderr(&out)
    );
}
