//! Test helpers: real local Kubernetes clusters for integration tests: an API-only one
//! (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok nodes) and one
//! with three real nodes running containers ([`real_cluster`]).
//!
//! One cluster serves a whole test run: `scripts/test.sh` starts it and exports
//! `GRAPHFLEET_TEST_KUBECONFIG`; without that variable the first test starts one
//! itself under `target/graphfleet-test-cluster` (reused by later runs; stop it with
//! `scripts/cluster.sh down --state target/graphfleet-test-cluster`). Each test then
//! isolates itself in a fresh [`TestNamespace`].

pub mod otlp;
pub mod tls;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// The pools every local cluster has, one kwok node each (`<pool>-0`).
pub const POOLS: [&str; 3] = ["router", "subgraph", "client"];
/// Node label (and taint key) that marks a pool.
pub const POOL_LABEL: &str = "graphfleet.dev/pool";

/// `nodeSelector` and `tolerations` placing pods on `pool` (its label and NoSchedule
/// taint), as a GraphGateway spec or a LoadTest `placement` takes them: the operator sets
/// no pool by default.
pub fn pool_placement(pool: &str) -> serde_json::Value {
    serde_json::json!({
        "nodeSelector": { POOL_LABEL: pool },
        "tolerations": [{ "key": POOL_LABEL, "operator": "Equal", "value": pool, "effect": "NoSchedule" }],
    })
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// A running local control plane.
#[derive(Debug)]
pub struct Cluster {
    kubeconfig: PathBuf,
}

/// The cluster for this test run, started on first use (blocking; safe to call from
/// several test binaries at once: starts are serialised by a file lock).
pub fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(|| {
        let kubeconfig = match std::env::var_os("GRAPHFLEET_TEST_KUBECONFIG") {
            Some(path) => PathBuf::from(path),
            None => start_own_cluster(),
        };
        assert!(
            kubeconfig.is_file(),
            "kubeconfig {} does not exist",
            kubeconfig.display()
        );
        Cluster { kubeconfig }
    })
}

/// The workspace root (this crate lives one level below it).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testkit lives inside the workspace")
        .to_path_buf()
}

fn start_own_cluster() -> PathBuf {
    start_under_lock("graphfleet-test-cluster", |state| {
        format!("scripts/tools.sh etcd kubernetes kwok && scripts/cluster.sh up --nodes kwok --state '{state}'")
    })
    .join("kubeconfig")
}

/// Runs the script `start(state dir)` from the workspace root under `target/NAME.lock`,
/// once at a time across test binaries; the state dir is `target/NAME`.
fn start_under_lock(name: &str, start: impl FnOnce(&str) -> String) -> PathBuf {
    let root = workspace_root();
    let state = root.join("target").join(name);
    std::fs::create_dir_all(root.join("target")).expect("create target/");
    let lock = root.join("target").join(format!("{name}.lock"));
    let script = start(&state.display().to_string());
    // -o: the cluster's processes must not inherit (and forever hold) the start lock.
    let status = Command::new("flock")
        .arg("-o")
        .arg(&lock)
        .args(["bash", "-c", &script])
        .current_dir(&root)
        .status()
        .expect("run flock + scripts/cluster.sh (is util-linux installed?)");
    assert!(
        status.success(),
        "starting the local cluster {name} failed ({status}); see the output above"
    );
    state
}

impl Cluster {
    /// Path of an admin kubeconfig for this cluster.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// A kube client authenticated as cluster admin.
    pub async fn client(&self) -> kube::Client {
        let kubeconfig = Kubeconfig::read_from(&self.kubeconfig).expect("read test kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .expect("test kubeconfig is valid");
        kube::Client::try_from(config).expect("build kube client")
    }

    /// `kubectl` (the pinned build) preconfigured for this cluster.
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new(tool_path("kubectl"));
        cmd.arg("--kubeconfig").arg(&self.kubeconfig);
        cmd
    }
}

/// Absolute path of a pinned tool binary in the tool cache (`scripts/tools.sh --path`).
pub fn tool_path(binary: &str) -> PathBuf {
    let output = Command::new(workspace_root().join("scripts/tools.sh"))
        .arg("--path")
        .output()
        .expect("run scripts/tools.sh --path");
    let dirs = String::from_utf8(output.stdout).expect("tool path is UTF-8");
    dirs.trim()
        .split(':')
        .map(|dir| Path::new(dir).join(binary))
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("{binary} is not in the tool cache; run scripts/tools.sh"))
}

static REAL_CLUSTER: OnceLock<RealCluster> = OnceLock::new();

/// A local cluster on real nodes (`scripts/cluster.sh up --nodes real`): three kubelets
/// running real containers inside a network namespace, graphfleet's images imported.
#[derive(Debug)]
pub struct RealCluster {
    state: PathBuf,
    netns: String,
}

/// The real-node cluster for this test run: the one `scripts/test.sh` started
/// (`GRAPHFLEET_TEST_REAL_STATE`), or one started on first use under
/// `target/graphfleet-test-real-cluster` with the debug binaries' images (needs root).
pub fn real_cluster() -> &'static RealCluster {
    REAL_CLUSTER.get_or_init(|| {
        let state = match std::env::var_os("GRAPHFLEET_TEST_REAL_STATE") {
            Some(path) => PathBuf::from(path),
            None => start_own_real_cluster(),
        };
        let ids = std::fs::read_to_string(state.join("ids.env"))
            .unwrap_or_else(|e| panic!("{}/ids.env: {e} (is the cluster up?)", state.display()));
        let netns = ids
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix("NETNS="))
            .expect("ids.env names the network namespace")
            .to_owned();
        RealCluster { state, netns }
    })
}

fn start_own_real_cluster() -> PathBuf {
    start_under_lock("graphfleet-test-real-cluster", |state| {
        format!(
            "scripts/tools.sh && cargo build --locked --bins && \
             scripts/cluster.sh up --state '{state}' && \
             GRAPHFLEET_IMAGE_PROFILE=debug GRAPHFLEET_PREBUILT=1 scripts/cluster.sh images --state '{state}'"
        )
    })
}

impl RealCluster {
    /// The cluster's state directory (logs in `logs/`, per-node state in `nodes/<pool>/`).
    pub fn state(&self) -> &Path {
        &self.state
    }

    pub fn kubeconfig_path(&self) -> PathBuf {
        self.state.join("kubeconfig")
    }

    /// The network namespace the nodes and pods live in (`/run/netns/<name>`).
    pub fn netns(&self) -> &str {
        &self.netns
    }

    /// A kube client authenticated as cluster admin.
    pub async fn client(&self) -> kube::Client {
        let kubeconfig =
            Kubeconfig::read_from(self.kubeconfig_path()).expect("read real-cluster kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .expect("real-cluster kubeconfig is valid");
        kube::Client::try_from(config).expect("build kube client")
    }

    /// `kubectl` (the pinned build) preconfigured for this cluster.
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new(tool_path("kubectl"));
        cmd.arg("--kubeconfig").arg(self.kubeconfig_path());
        cmd
    }

    /// `program` run inside the cluster's network namespace, where pod and Service
    /// addresses are reachable (nothing there routes out of the machine).
    pub fn in_netns(&self, program: &str) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net=/run/netns/{}", self.netns))
            .arg("--")
            .arg(program);
        cmd
    }
}

/// A namespace of its own for one test, deleted (without waiting) when dropped.
pub struct TestNamespace {
    name: String,
}

impl TestNamespace {
    /// Creates `<prefix>-<pid>-<n>`, unique within the run and across runs.
    pub async fn create(client: &kube::Client, prefix: &str) -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .subsec_nanos();
        let name = format!(
            "{prefix}-{}-{}-{:x}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            nanos & 0xfff
        );
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "labels": { "graphfleet.dev/test": "true" } }
        }))
        .expect("namespace object");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap_or_else(|e| panic!("create test namespace {name}: {e}"));
        TestNamespace { name }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Deletes the namespace now and waits until the API server accepted it.
    pub async fn delete(self, client: &kube::Client) {
        let api = Api::<Namespace>::all(client.clone());
        let _ = api.delete(&self.name, &DeleteParams::background()).await;
        std::mem::forget(self);
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        // Drop cannot await; kubectl is synchronous and already built. A test uses one
        // kind of cluster; the delete is a no-op on the other.
        let kubectls = [
            CLUSTER.get().map(Cluster::kubectl),
            REAL_CLUSTER.get().map(RealCluster::kubectl),
        ];
        for mut kubectl in kubectls.into_iter().flatten() {
            let _ = kubectl
                .args(["delete", "namespace", &self.name, "--wait=false"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}
