//! `scripts/cluster.sh` with real nodes, on clusters of the test's own (beside the run's):
//! a node that fails to start is named with its log, and `down` after that half-started
//! cluster, like `down` after a healthy one, leaves nothing behind: no process, mount,
//! cgroup, link, network namespace or rule, and the kernel settings kubelet changes are
//! back. The healthy cluster has no route out of the machine (checked with `ip route get`,
//! which sends nothing) and its router node is pinned to a core of its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use graphfleet_deploy_tests::workspace_root;

/// Kernel settings kubelet writes at start (scripts/realnodes.sh restores them).
const SYSCTLS: [&str; 6] = [
    "kernel/panic",
    "kernel/panic_on_oops",
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
];

/// One cluster start at a time: both tests compare machine-wide kernel settings.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn cluster_sh(args: &[&str], state: &Path, env: &[(&str, &str)]) -> Output {
    let tools = Command::new(workspace_root().join("scripts/tools.sh"))
        .arg("--path")
        .output()
        .expect("scripts/tools.sh --path");
    let path = format!(
        "{}:{}",
        String::from_utf8_lossy(&tools.stdout).trim(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(workspace_root().join("scripts/cluster.sh"));
    cmd.args(args).arg("--state").arg(state).env("PATH", path);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run scripts/cluster.sh")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn state_dir(name: &str) -> PathBuf {
    // Short: unix socket paths under it must stay below 108 bytes.
    std::env::temp_dir().join(format!("gf-{name}-{}", std::process::id()))
}

fn cluster_id(state: &Path) -> String {
    let ids = std::fs::read_to_string(state.join("ids.env")).expect("ids.env written by up");
    ids.split_whitespace()
        .find_map(|kv| kv.strip_prefix("ID="))
        .expect("ids.env has ID")
        .to_owned()
}

fn sysctls() -> Vec<String> {
    SYSCTLS
        .iter()
        .map(|k| {
            let v = std::fs::read_to_string(format!("/proc/sys/{k}")).expect("read sysctl");
            format!("{k}={}", v.trim())
        })
        .collect()
}

fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().expect(program);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Rules in the machine's own network namespace (the cluster's live in its namespace).
fn host_rules() -> String {
    format!(
        "{}{}",
        run("nft", &["list", "ruleset"]),
        run("iptables-save", &[])
    )
    .lines()
    .filter(|l| !l.starts_with('#'))
    .collect::<Vec<_>>()
    .join("\n")
}

/// Everything of the cluster `id` (state dir `state`) still on the machine.
fn leftovers(state: &Path, id: &str) -> Vec<String> {
    let mut left = Vec::new();
    let state_str = state.to_string_lossy().into_owned();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&state_str) {
            left.push(format!(
                "process {}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    for line in mounts
        .lines()
        .filter(|l| l.contains(&state_str) || l.contains(&format!("gf-{id}")))
    {
        left.push(format!("mount {line}"));
    }
    for controller in std::fs::read_dir("/sys/fs/cgroup")
        .expect("cgroup fs")
        .flatten()
    {
        for entry in std::fs::read_dir(controller.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(&format!("gf-{id}-"))
            {
                left.push(format!("cgroup {}", entry.path().display()));
            }
        }
    }
    if run("ip", &["-o", "link"]).contains(&format!("gfh-{id}")) {
        left.push(format!("link gfh-{id}"));
    }
    if run("ip", &["netns", "list"]).contains(&format!("gf-{id}")) {
        left.push(format!("netns gf-{id}"));
    }
    if state.exists() {
        left.push(format!("state dir {}", state.display()));
    }
    left
}

fn assert_clean(state: &Path, id: &str, sysctls_before: &[String], rules_before: &str) {
    let left = leftovers(state, id);
    assert!(left.is_empty(), "down left behind:\n{}", left.join("\n"));
    assert_eq!(sysctls(), sysctls_before, "kernel settings restored");
    assert_eq!(
        host_rules(),
        rules_before,
        "the machine's own rules unchanged"
    );
}

#[test]
fn a_node_that_fails_to_start_is_named_and_down_cleans_up() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let state = state_dir("fault");
    let (sysctls_before, rules_before) = (sysctls(), host_rules());
    let up = cluster_sh(
        &["up"],
        &state,
        &[("GRAPHFLEET_KUBELET_ARGS_CLIENT", "--no-such-kubelet-flag")],
    );
    let said = text(&up);
    assert!(
        !up.status.success(),
        "up succeeded with a broken node:\n{said}"
    );
    let log = state.join("logs/kubelet-client.log");
    assert!(
        said.contains("kubelet client-0: exited during start"),
        "{said}"
    );
    assert!(
        said.contains(&log.display().to_string()),
        "names the log:\n{said}"
    );
    assert!(
        said.contains("no-such-kubelet-flag"),
        "shows the log's last lines:\n{said}"
    );
    let id = cluster_id(&state);

    let down = cluster_sh(&["down"], &state, &[]);
    assert!(
        down.status.success(),
        "down after a half-started cluster:\n{}",
        text(&down)
    );
    assert_clean(&state, &id, &sysctls_before, &rules_before);
}

#[test]
fn a_healthy_cluster_routes_nothing_out_and_down_leaves_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let state = state_dir("life");
    let (sysctls_before, rules_before) = (sysctls(), host_rules());
    let up = cluster_sh(&["up"], &state, &[]);
    if !up.status.success() {
        // Leave no half-started cluster (kubelet mounts, processes) behind the failure.
        let down = cluster_sh(&["down"], &state, &[]);
        panic!("up:\n{}\ndown after it:\n{}", text(&up), text(&down));
    }
    let id = cluster_id(&state);
    assert_eq!(
        sysctls(),
        sysctls_before,
        "kubelet's kernel settings put back after start"
    );

    let status = text(&cluster_sh(&["status"], &state, &[]));
    for pool in ["router", "subgraph", "client"] {
        assert!(
            status
                .lines()
                .any(|l| l.starts_with(&format!("{pool}-0 ")) && l.contains(" True ")),
            "{pool}-0 Ready:\n{status}"
        );
    }
    assert!(
        status.contains("router-0: cpus 0\n"),
        "router pinned to core 0:\n{status}"
    );

    // Inside the cluster's namespace nothing routes off the machine; the host side of
    // its link is the machine itself.
    let netns = format!("--net=/run/netns/gf-{id}");
    for outside in ["1.1.1.1", "8.8.8.8", "192.168.1.1", "172.16.0.1"] {
        let get = Command::new("nsenter")
            .args([netns.as_str(), "ip", "route", "get", outside])
            .output()
            .expect("nsenter ip route get");
        assert!(
            !get.status.success(),
            "{outside} is routable from the cluster: {}",
            text(&get)
        );
    }
    let routes = run("nsenter", &[netns.as_str(), "ip", "route"]);
    assert!(
        !routes.contains("default"),
        "a default route in the cluster:\n{routes}"
    );

    let down = cluster_sh(&["down"], &state, &[]);
    assert!(down.status.success(), "down:\n{}", text(&down));
    assert_clean(&state, &id, &sysctls_before, &rules_before);
}
