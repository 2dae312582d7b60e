//! Helpers of the real-node tests (`tests/real_*.rs`): the operator installed with `helm` as a
//! pod on client-0 watching one namespace, kubectl in that namespace, and LoadTest waits.

use std::process::Command;
use std::time::Duration;

use graphfleet_testkit::RealCluster;
use serde_json::Value;

use crate::{POOL_LABEL, chart_dir, eventually, helm, run_ok, write_temp};

/// The pinned kubectl on the real cluster, in namespace `ns`.
pub fn kubectl(cluster: &RealCluster, ns: &str) -> Command {
    let mut cmd = cluster.kubectl();
    cmd.args(["-n", ns]);
    cmd
}

/// `kubectl apply -f -` of `yaml` (or JSON) in `ns`.
pub fn apply(cluster: &RealCluster, ns: &str, yaml: &str) {
    run_ok(kubectl(cluster, ns).args(["apply", "-f", "-"]), Some(yaml));
}

/// `kubectl get WHAT -o json`.
pub fn json_of(cluster: &RealCluster, ns: &str, what: &[&str]) -> Value {
    let out = run_ok(
        kubectl(cluster, ns)
            .args(["get"])
            .args(what)
            .args(["-o", "json"]),
        None,
    );
    serde_json::from_str(&out).expect("kubectl -o json prints JSON")
}

/// The helm release of the operator watching `ns`.
fn release(ns: &str) -> String {
    format!("gf-{ns}")
}

/// Installs the chart into `ns` watching only `ns`, its operator pod on the client pool, and
/// checks that the pod runs there. This checkout's CRDs are applied first: helm installs CRDs
/// only when they are missing, and a cluster reused across checkouts keeps older ones (the
/// README's upgrade step).
pub fn install_operator(cluster: &RealCluster, ns: &str) {
    run_ok(
        cluster
            .kubectl()
            .args(["apply", "--server-side", "--force-conflicts", "-f"])
            .arg(chart_dir().join("crds")),
        None,
    );
    let values = format!(
        "watchNamespaces: [{ns}]\nimage: {{pullPolicy: Never}}\n\
         nodeSelector: {{{POOL_LABEL}: client}}\n\
         tolerations: [{{key: {POOL_LABEL}, operator: Equal, value: client, effect: NoSchedule}}]\n"
    );
    let values_file = write_temp(&values);
    run_ok(
        helm()
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig_path())
            .args(["install", &release(ns)])
            .arg(chart_dir())
            .args(["--namespace", ns, "--wait", "--timeout", "180s", "--values"])
            .arg(values_file.path()),
        None,
    );
    let pods = json_of(
        cluster,
        ns,
        &["pods", "-l", "app.kubernetes.io/name=graphfleet"],
    );
    let pod = &pods["items"][0];
    assert_eq!(
        pod["spec"]["nodeName"], "client-0",
        "operator pod on the client pool"
    );
    assert_eq!(
        pod["status"]["phase"], "Running",
        "the operator container runs"
    );
}

/// `helm uninstall` of [`install_operator`]'s release.
pub fn uninstall_operator(cluster: &RealCluster, ns: &str) {
    run_ok(
        helm()
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig_path())
            .args(["uninstall", &release(ns), "--namespace", ns, "--wait"]),
        None,
    );
}

/// A status time (RFC 3339) as an instant, to compare two of them.
pub fn time_of(value: &Value) -> k8s_openapi::jiff::Timestamp {
    value
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("an RFC 3339 time: {value}"))
}

/// The LoadTest `name` once its phase is `Succeeded`, `Failed` or `Aborted`.
pub async fn loadtest_finished(
    cluster: &RealCluster,
    ns: &str,
    name: &str,
    timeout: Duration,
) -> Value {
    eventually(&format!("LoadTest {name} finished"), timeout, || async {
        let lt = json_of(cluster, ns, &["loadtest", name]);
        match lt["status"]["phase"].as_str() {
            Some("Succeeded" | "Failed" | "Aborted") => Ok(lt),
            _ => Err(lt["status"].to_string()),
        }
    })
    .await
}

/// `REPORT.md` of the LoadTest report ConfigMap `name`, as kubectl users read it.
pub fn report_md(cluster: &RealCluster, ns: &str, name: &str) -> String {
    let path = "jsonpath={.data.REPORT\\.md}";
    run_ok(
        kubectl(cluster, ns).args(["get", "configmap", name, "-o", path]),
        None,
    )
}

/// The `Passed` condition of a LoadTest `status`.
pub fn passed_condition(status: &Value) -> &Value {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Passed")
        .unwrap_or_else(|| panic!("a Passed condition: {status}"))
}
