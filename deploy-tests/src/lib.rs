//! Shared helpers of the deploy tests: where the chart and manifests live, running the
//! pinned `helm`/`kubectl`, splitting rendered YAML into objects, and looking objects up
//! by kind on the local control plane.
//!
//! The tests themselves are in `tests/`; this crate ships nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, GroupVersionKind};
use kube::discovery::{self, Scope};
use serde::Deserialize;
use serde_json::Value;

pub use graphfleet_testkit::{POOL_LABEL, POOLS, TestNamespace, cluster, workspace_root};

pub mod fleet;
pub mod real;

/// Name of the chart (and its directory under `charts/`).
pub const CHART: &str = "graphfleet";
/// Names of the generated CRDs, as `crds/<stem>.yaml` holds them.
pub const CRD_NAMES: [&str; 3] = [
    "subgraphs.graphfleet.dev",
    "graphgateways.graphfleet.dev",
    "loadtests.graphfleet.dev",
];

/// `charts/graphfleet`.
pub fn chart_dir() -> PathBuf {
    workspace_root().join("charts").join(CHART)
}

/// `manifests/`.
pub fn manifests_dir() -> PathBuf {
    workspace_root().join("manifests")
}

/// Sorted `*.yaml` files directly in `dir`.
pub fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| {
            p.extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
        })
        .collect();
    files.sort();
    files
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// A value of `tools/versions.env` (e.g. `KUBERNETES_VERSION`).
pub fn pinned_version(key: &str) -> String {
    let env = read(&workspace_root().join("tools/versions.env"));
    env.lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("{key} is not in tools/versions.env"))
        .trim()
        .to_owned()
}

/// `appVersion` of the chart.
pub fn app_version() -> String {
    let chart: Value = serde_yaml_ng::from_str(&read(&chart_dir().join("Chart.yaml")))
        .expect("Chart.yaml is YAML");
    chart["appVersion"]
        .as_str()
        .expect("Chart.yaml has a string appVersion")
        .to_owned()
}

/// Every non-empty document of a multi-document YAML stream.
pub fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|doc| Value::deserialize(doc).unwrap_or_else(|e| panic!("invalid YAML: {e}\n{yaml}")))
        .filter(|doc| !doc.is_null())
        .collect()
}

/// Identity of an object in rendered YAML.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    pub fn of(doc: &Value) -> Self {
        let field = |v: &Value, what: &str| {
            v.as_str()
                .unwrap_or_else(|| panic!("object without {what}: {doc}"))
                .to_owned()
        };
        ObjectRef {
            api_version: field(&doc["apiVersion"], "apiVersion"),
            kind: field(&doc["kind"], "kind"),
            namespace: doc["metadata"]["namespace"].as_str().map(str::to_owned),
            name: field(&doc["metadata"]["name"], "metadata.name"),
        }
    }

    pub fn gvk(&self) -> GroupVersionKind {
        let (group, version) = self
            .api_version
            .split_once('/')
            .unwrap_or(("", &self.api_version));
        GroupVersionKind::gvk(group, version, &self.kind)
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {}/{}", self.kind, ns, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// Documents of `kind`, by name.
pub fn by_kind<'a>(docs: &'a [Value], kind: &str) -> BTreeMap<String, &'a Value> {
    docs.iter()
        .filter(|d| d["kind"] == kind)
        .map(|d| (ObjectRef::of(d).name, d))
        .collect()
}

/// Result of a finished command.
pub struct Ran {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` (optionally feeding `stdin`) to completion.
pub fn run(cmd: &mut Command, stdin: Option<&str>) -> Ran {
    let described = format!("{cmd:?}");
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {described}: {e}"));
    if let Some(input) = stdin {
        use std::io::Write;
        let mut pipe = child.stdin.take().expect("stdin is piped");
        pipe.write_all(input.as_bytes())
            .unwrap_or_else(|e| panic!("write stdin of {described}: {e}"));
    }
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("wait for {described}: {e}"));
    Ran {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `cmd` and returns its stdout, failing the test with its output if it fails.
pub fn run_ok(cmd: &mut Command, stdin: Option<&str>) -> String {
    let described = format!("{cmd:?}");
    let ran = run(cmd, stdin);
    assert!(
        ran.success,
        "{described} failed\nstdout:\n{}\nstderr:\n{}",
        ran.stdout, ran.stderr
    );
    ran.stdout
}

/// Private helm home (cache, config, data) so tests never touch the user's.
fn helm_home() -> &'static Path {
    static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();
    HOME.get_or_init(|| tempfile::tempdir().expect("temp dir for helm"))
        .path()
}

/// The pinned `helm`, isolated from the user's helm configuration and kubeconfig.
pub fn helm() -> Command {
    let mut cmd = Command::new(graphfleet_testkit::tool_path("helm"));
    let home = helm_home();
    cmd.env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env_remove("KUBECONFIG")
        .env_remove("HELM_NAMESPACE")
        .env_remove("HELM_KUBECONTEXT");
    cmd
}

/// `helm` talking to the test cluster.
pub fn helm_on_cluster() -> Command {
    let mut cmd = helm();
    cmd.arg("--kubeconfig").arg(cluster().kubeconfig_path());
    cmd
}

/// `helm template` of the chart with extra values; `Err(stderr)` when rendering fails.
///
/// The pinned helm is built without version ldflags and would assume Kubernetes 1.20, so
/// the pinned Kubernetes version is passed explicitly.
pub fn try_template(release: &str, namespace: &str, values_yaml: &str) -> Result<String, String> {
    let values = write_temp(values_yaml);
    let ran = run(
        helm()
            .args(["template", release])
            .arg(chart_dir())
            .args(["--namespace", namespace])
            .args(["--kube-version", &pinned_version("KUBERNETES_VERSION")])
            .arg("--values")
            .arg(values.path()),
        None,
    );
    if ran.success {
        Ok(ran.stdout)
    } else {
        Err(ran.stderr)
    }
}

/// `helm template` that must succeed.
pub fn template(release: &str, namespace: &str, values_yaml: &str) -> String {
    try_template(release, namespace, values_yaml)
        .unwrap_or_else(|stderr| panic!("helm template failed:\n{stderr}"))
}

/// A temporary file holding `contents` (deleted when dropped).
pub fn write_temp(contents: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::Builder::new()
        .suffix(".yaml")
        .tempfile()
        .expect("create temp file");
    std::io::Write::write_all(&mut file, contents.as_bytes()).expect("write temp file");
    file
}

/// Values placing the operator on `pool` (selecting and tolerating it).
pub fn pool_placement_values(pool: &str) -> String {
    format!(
        "nodeSelector:\n  {POOL_LABEL}: {pool}\n\
         tolerations:\n  - key: {POOL_LABEL}\n    operator: Equal\n    value: {pool}\n    effect: NoSchedule\n"
    )
}

/// Applies the generated CRDs (server-side, idempotent across concurrent tests) and waits
/// until they are established.
pub fn ensure_crds() {
    let crds = workspace_root().join("crds");
    run_ok(
        cluster()
            .kubectl()
            .args(["apply", "--server-side", "--force-conflicts"])
            .args(["--field-manager", "graphfleet-deploy-tests", "-f"])
            .arg(&crds),
        None,
    );
    run_ok(
        cluster()
            .kubectl()
            .args(["wait", "--for=condition=Established", "--timeout=60s"])
            .args(CRD_NAMES.map(|n| format!("crd/{n}"))),
        None,
    );
}

/// A dynamic API for the object's kind (discovered), scoped to its namespace.
async fn dynamic_api(client: &kube::Client, object: &ObjectRef) -> Api<DynamicObject> {
    let (resource, caps) = discovery::pinned_kind(client, &object.gvk())
        .await
        .unwrap_or_else(|e| panic!("discover {}: {e}", object.api_version));
    match (caps.scope, &object.namespace) {
        (Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
        (Scope::Namespaced, None) => panic!("{object} is namespaced but names no namespace"),
    }
}

/// Whether the object exists (and is not being deleted).
pub async fn exists(client: &kube::Client, object: &ObjectRef) -> bool {
    let api = dynamic_api(client, object).await;
    match api.get_opt(&object.name).await {
        Ok(found) => found.is_some_and(|o| o.metadata.deletion_timestamp.is_none()),
        Err(e) => panic!("get {object}: {e}"),
    }
}

/// Polls `check` every 250 ms until it returns `Some`, failing after `timeout`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let start = Instant::now();
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) if start.elapsed() >= timeout => {
                panic!("{what}: not within {timeout:?}; last seen: {last}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// A name unique to this test run, for releases and cluster-scoped objects.
pub fn unique_name(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .subsec_nanos();
    format!(
        "{prefix}-{}-{}-{:x}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        nanos & 0xfff
    )
}

/// A request a ServiceAccount might make, for [`service_account_can`].
#[derive(Clone, Copy, Debug)]
pub struct Access<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    /// `None`: across all namespaces (or a cluster-scoped resource).
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
}

impl<'a> Access<'a> {
    pub fn new(verb: &'a str, group: &'a str, resource: &'a str) -> Self {
        Access {
            verb,
            group,
            resource,
            subresource: "",
            namespace: None,
            name: None,
        }
    }

    pub fn subresource(self, subresource: &'a str) -> Self {
        Access {
            subresource,
            ..self
        }
    }

    pub fn in_namespace(self, namespace: &'a str) -> Self {
        Access {
            namespace: Some(namespace),
            ..self
        }
    }

    pub fn named(self, name: &'a str) -> Self {
        Access {
            name: Some(name),
            ..self
        }
    }
}

/// Asks the API server's authorizer (a SubjectAccessReview) whether the ServiceAccount
/// `namespace/name` may make the request.
pub async fn service_account_can(
    client: &kube::Client,
    sa_namespace: &str,
    sa_name: &str,
    access: Access<'_>,
) -> bool {
    use k8s_openapi::api::authorization::v1::SubjectAccessReview;
    let review: SubjectAccessReview = serde_json::from_value(serde_json::json!({
        "spec": {
            "user": format!("system:serviceaccount:{sa_namespace}:{sa_name}"),
            "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{sa_namespace}"), "system:authenticated"],
            "resourceAttributes": {
                "verb": access.verb,
                "group": access.group,
                "resource": access.resource,
                "subresource": access.subresource,
                "namespace": access.namespace.unwrap_or(""),
                "name": access.name.unwrap_or(""),
            }
        }
    }))
    .expect("SubjectAccessReview object");
    let answered = Api::<SubjectAccessReview>::all(client.clone())
        .create(&Default::default(), &review)
        .await
        .unwrap_or_else(|e| panic!("SubjectAccessReview for {access:?}: {e}"));
    answered.status.is_some_and(|s| s.allowed)
}

/// Runs a cleanup command when dropped, so a failing test does not leave cluster-scoped
/// objects (ClusterRoles, releases) behind on the shared cluster. Failures are ignored.
pub struct Cleanup {
    command: Option<(Command, Option<String>)>,
}

impl Cleanup {
    /// `helm uninstall` of the release (if it is still installed).
    pub fn helm_release(release: &str, namespace: &str) -> Self {
        let mut cmd = helm_on_cluster();
        cmd.args([
            "uninstall",
            release,
            "--namespace",
            namespace,
            "--ignore-not-found",
        ]);
        Cleanup {
            command: Some((cmd, None)),
        }
    }

    /// `kubectl delete` of every object in `rendered`.
    pub fn objects(rendered: &str) -> Self {
        let mut cmd = cluster().kubectl();
        cmd.args(["delete", "--ignore-not-found", "--wait=false", "-f", "-"]);
        Cleanup {
            command: Some((cmd, Some(rendered.to_owned()))),
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let Some((mut cmd, stdin)) = self.command.take() else {
            return;
        };
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        if let Ok(mut child) = cmd.spawn() {
            if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
                use std::io::Write;
                let _ = pipe.write_all(input.as_bytes());
            }
            let _ = child.wait();
        }
    }
}

/// Builds (a no-op when up to date) and locates a workspace binary of the debug profile;
/// the variable `env` names a prebuilt one instead.
pub fn workspace_binary(package: &str, bin: &str, env: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(env) {
        return PathBuf::from(path);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    run_ok(
        Command::new(&cargo)
            .args(["build", "-p", package, "--bin", bin])
            .current_dir(workspace_root()),
        None,
    );
    let metadata = run_ok(
        Command::new(&cargo)
            .args([
                "metadata",
                "--no-deps",
                "--format-version",
                "1",
                "--offline",
            ])
            .current_dir(workspace_root()),
        None,
    );
    let metadata: Value = serde_json::from_str(&metadata).expect("cargo metadata JSON");
    let target = metadata["target_directory"]
        .as_str()
        .expect("target_directory");
    Path::new(target).join("debug").join(bin)
}
