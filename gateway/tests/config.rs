//! Config loading cases in `tests/config/<case>/`: an optional `config.yaml` (passed as
//! `--config`), an optional `env` (KEY=VALUE lines) and `args` (one argument per line);
//! `$CASE` in them is the case directory. The loaded `Config` (Debug) or the error is
//! snapshotted as `snapshots/config__<case>.snap`. The binary itself is tested as a
//! real process: a bad config fails the start, and the worker count follows the CPUs.

use graphfleet_gateway::config::{self, Sources};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const CASE_VAR: &str = "$CASE";

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/config")
}

fn lines(path: &Path, case: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.replace(CASE_VAR, case))
        .collect()
}

/// The loader's answer for one case, with the case directory written as `$CASE`.
fn run_case(dir: &Path) -> String {
    let case = dir.to_str().expect("UTF-8 fixture path");
    let mut args = Vec::new();
    if dir.join("config.yaml").exists() {
        args.extend(["--config".to_owned(), format!("{case}/config.yaml")]);
    }
    args.extend(lines(&dir.join("args"), case));
    let env = lines(&dir.join("env"), case)
        .into_iter()
        .map(|l| {
            let (k, v) = l.split_once('=').expect("env lines are KEY=VALUE");
            (k.to_owned(), v.to_owned())
        })
        .collect();
    let cli = config::parse_args(args).expect("the case's arguments parse");
    let result = config::load(&Sources {
        file: cli.config_file,
        env,
        flags: cli.overrides,
    });
    let text = match result {
        Ok(config) => format!("{config:#?}"),
        Err(e) => format!("error:\n{e}"),
    };
    text.replace(case, CASE_VAR)
}

#[test]
fn config_cases_match_snapshots() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .expect("tests/config exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 10,
        "expected the config cases, found {dirs:?}"
    );
    for dir in dirs {
        let name = dir
            .file_name()
            .expect("case name")
            .to_string_lossy()
            .into_owned();
        let text = run_case(&dir);
        // Error cases are named bad_*/unknown_*/missing_*; everything else must load.
        let expect_error = ["bad_", "unknown_", "missing_"]
            .iter()
            .any(|p| name.starts_with(p));
        assert_eq!(
            text.starts_with("error:"),
            expect_error,
            "case {name}:\n{text}"
        );
        insta::assert_snapshot!(name, text);
    }
}

fn gateway() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_graphfleet-gateway"));
    // A clean environment: no GRAPHFLEET_* from the developer's shell.
    command.env_clear().env("RUST_LOG", "info");
    command
}

fn output(command: &mut Command) -> Output {
    command
        .stdin(Stdio::null())
        .output()
        .expect("run graphfleet-gateway")
}

#[test]
fn a_bad_config_fails_the_start_with_the_message() {
    let dir = cases_dir().join("unknown_key_file");
    let out = output(
        gateway()
            .arg("--config")
            .arg(dir.join("config.yaml"))
            .args(["--listen", "127.0.0.1:0"]),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr:\n{stderr}");
    let expected = format!(
        "config file {}/config.yaml: limits.max_depht: unknown field, expected one of",
        dir.display()
    );
    assert!(stderr.contains(&expected), "stderr:\n{stderr}");
    assert!(!stderr.contains("panicked"), "stderr:\n{stderr}");
}

#[test]
fn a_bad_env_var_fails_the_start_naming_it() {
    let out = output(
        gateway()
            .env("GRAPHFLEET_TRAFFIC__SUBGRAPH_TIMEOUT", "fast")
            .args(["--supergraph", "s.graphql", "check"]),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr:\n{stderr}");
    assert!(
        stderr.contains(
            "env GRAPHFLEET_TRAFFIC__SUBGRAPH_TIMEOUT: traffic.subgraph_timeout: invalid duration \"fast\""
        ),
        "stderr:\n{stderr}"
    );
}

#[test]
fn check_accepts_the_operator_format_and_help_lists_the_rules() {
    let dir = cases_dir().join("operator_json");
    let out = output(
        gateway()
            .env("GRAPHFLEET_CONFIG", dir.join("gateway.json"))
            // Not the gateway's: a service link and another tool's variable.
            .env("GRAPHFLEET_TRAFFIC_SERVICE_HOST", "10.0.0.1")
            .env("GRAPHFLEET_LOG_FORMAT", "json")
            .args([
                "check",
                "--supergraph",
                "/etc/graphfleet/supergraph.graphql",
            ]),
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "configuration ok\n");

    let help = output(gateway().arg("--help"));
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    for needle in [
        "--config <FILE>",
        "--subgraph-url <NAME=URL>",
        "--set <KEY=VALUE>",
        "GRAPHFLEET_<KEY>__<SUB>",
        "later wins",
    ] {
        assert!(text.contains(needle), "--help lacks {needle:?}:\n{text}");
    }
}

#[test]
fn usage_errors_name_the_flag_and_version_answers() {
    let out = output(gateway().args(["check", "--set", "limits.max_depth"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr:\n{stderr}");
    assert!(
        stderr.contains("invalid value 'limits.max_depth' for '--set <KEY=VALUE>'"),
        "stderr:\n{stderr}"
    );

    let version = output(gateway().arg("--version"));
    assert!(version.status.success(), "{version:?}");
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        format!("graphfleet-gateway {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// Starts the gateway through `wrapper` (e.g. `taskset -c 0 BIN`), waits until it
/// listens, and returns its log.
fn start_log(program: &str, wrapper_args: &[&str], log_name: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gateway-config-tests");
    std::fs::create_dir_all(&dir).expect("create the test dir");
    let log_path = dir.join(format!("{log_name}-{}.log", std::process::id()));
    let log = std::fs::File::create(&log_path).expect("create the log");
    let supergraph =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/keys/supergraph.graphql");
    let mut child = Command::new(program)
        .args(wrapper_args)
        .arg(env!("CARGO_BIN_EXE_graphfleet-gateway"))
        .arg("--supergraph")
        .arg(&supergraph)
        .args(["--listen", "127.0.0.1:0"])
        .env_clear()
        .env("RUST_LOG", "info")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn the gateway");
    let deadline = Instant::now() + Duration::from_secs(20);
    let text = loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if text.contains("listening on") {
            break text;
        }
        if let Some(status) = child.try_wait().expect("poll the gateway") {
            panic!("gateway exited with {status} before listening:\n{text}");
        }
        assert!(
            Instant::now() < deadline,
            "gateway did not listen within 20 s:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = child.kill();
    let _ = child.wait();
    text
}

/// The worker-threads log line, without terminal colour codes.
fn worker_line(log: &str) -> String {
    let line = log
        .lines()
        .find(|l| l.contains("runtime worker threads"))
        .unwrap_or_else(|| panic!("no worker-threads line in the log:\n{log}"));
    strip_ansi(line)
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters, ended by a letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn one_allowed_cpu_gives_one_worker() {
    let log = start_log("taskset", &["-c", "0"], "taskset");
    let line = worker_line(&log);
    assert!(line.contains("workers=1"), "{line}");
    assert!(
        line.contains("1 allowed CPUs (no cgroup CPU quota)"),
        "{line}"
    );
}

/// Under a real cgroup v1 CPU quota of half a CPU (where the machine lets us create a
/// cgroup), the worker count comes from the quota.
#[test]
fn a_cgroup_cpu_quota_sizes_the_workers() {
    let root = Path::new("/sys/fs/cgroup/cpu");
    let group = root.join(format!("graphfleet-config-test-{}", std::process::id()));
    if std::fs::create_dir(&group).is_err() {
        eprintln!("skipped: cannot create a cgroup under {}", root.display());
        return;
    }
    std::fs::write(group.join("cpu.cfs_period_us"), "100000").expect("set the period");
    std::fs::write(group.join("cpu.cfs_quota_us"), "50000").expect("set the quota");
    let procs = group.join("cgroup.procs");
    let script = format!("echo $$ > {} && exec \"$@\"", procs.display());
    let log = start_log("sh", &["-c", &script, "sh"], "cgroup");
    let _ = std::fs::remove_dir(&group);
    let line = worker_line(&log);
    assert!(line.contains("workers=1"), "{line}");
    assert!(line.contains("cgroup v1 CPU quota 0.5 CPUs"), "{line}");
}

#[test]
fn plan_takes_the_supergraph_from_any_source() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/keys");
    let query = std::fs::read_dir(fixture.join("operations"))
        .expect("keys operations")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|e| e == "graphql"))
        .expect("a keys operation");
    let out = output(
        gateway()
            .env(
                "GRAPHFLEET_SUPERGRAPH__PATH",
                fixture.join("supergraph.graphql"),
            )
            .arg("plan")
            .arg("--query")
            .arg(&query),
    );
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("QueryPlan {"), "{text}");
    assert!(text.contains("Fetch(service:"), "{text}");
}
