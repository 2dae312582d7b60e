//! The chart and the manifests with the real operator: `helm install` (watching one
//! namespace), then the `graphfleet-operator` binary runs on this machine with exactly the
//! environment the installed Deployment gives its container and with the identity of the
//! chart's ServiceAccount (kubeconfig impersonation), so every API call it makes is
//! authorised by the chart's RBAC and nothing else. Applying manifests/fed-subgraphs.yaml
//! and manifests/graphgateway.yaml must then end with the GraphGateway Composed and Ready,
//! its pods on the router pool, and no authorisation failure in the operator's log.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use graphfleet_deploy_tests::{
    Cleanup, TestNamespace, chart_dir, cluster, ensure_crds, eventually, helm_on_cluster,
    manifests_dir, pool_placement_values, read, run_ok, unique_name, workspace_binary, write_temp,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DynamicObject, GroupVersionKind, ListParams};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TIMEOUT: Duration = Duration::from_secs(120);
/// What the downward API would give the operator as its pod name.
const POD_NAME: &str = "graphfleet-operator-e2e";

/// Builds (a no-op when up to date) and locates the operator binary;
/// `GRAPHFLEET_OPERATOR_BIN` names a prebuilt one instead.
fn operator_binary() -> PathBuf {
    workspace_binary(
        "graphfleet-operator",
        "graphfleet-operator",
        "GRAPHFLEET_OPERATOR_BIN",
    )
}

/// The admin kubeconfig, acting as `system:serviceaccount:<namespace>:<name>`.
fn impersonating_kubeconfig(namespace: &str, name: &str) -> tempfile::NamedTempFile {
    let mut config: Value =
        serde_yaml_ng::from_str(&read(cluster().kubeconfig_path())).expect("kubeconfig YAML");
    for user in config["users"].as_array_mut().expect("kubeconfig users") {
        user["user"]["as"] = format!("system:serviceaccount:{namespace}:{name}").into();
        user["user"]["as-groups"] = serde_json::json!([
            "system:serviceaccounts",
            format!("system:serviceaccounts:{namespace}"),
            "system:authenticated"
        ]);
    }
    write_temp(&serde_yaml_ng::to_string(&config).expect("kubeconfig to YAML"))
}

/// The operator process, killed when dropped; its stdout (JSON log) is collected.
struct Operator {
    child: Child,
    ops_addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Operator {
    fn log(&self) -> Vec<String> {
        self.log.lock().expect("log lock").clone()
    }
}

/// Starts the operator with the environment of the Deployment's container.
fn start_operator(deployment: &Deployment, namespace: &str, kubeconfig: &Path) -> Operator {
    let container = &deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("pod spec")
        .containers[0];
    let mut cmd = Command::new(operator_binary());
    cmd.env_remove("RUST_LOG").env_remove("WATCH_NAMESPACE");
    for var in container.env.iter().flatten() {
        let value = match (&var.value, &var.value_from) {
            (Some(value), _) => value.clone(),
            (None, Some(from)) => match from.field_ref.as_ref().map(|f| f.field_path.as_str()) {
                Some("metadata.namespace") => namespace.to_owned(),
                Some("metadata.name") => "graphfleet-operator-e2e".to_owned(),
                other => panic!("unexpected env source {other:?} for {}", var.name),
            },
            (None, None) => String::new(),
        };
        cmd.env(&var.name, value);
    }
    // Port 0: the pod's port may be taken on this machine; the chosen one is logged.
    cmd.env("GRAPHFLEET_OPS_ADDR", "127.0.0.1:0")
        .env("GRAPHFLEET_WEB_ADDR", "127.0.0.1:0")
        .env("KUBECONFIG", kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = cmd.spawn().expect("spawn graphfleet-operator");
    let stdout = child.stdout.take().expect("piped stdout");
    let log = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(entry) = serde_json::from_str::<Value>(&line)
                && let Some(addr) = entry.get("ops_addr").and_then(Value::as_str)
            {
                let _ = tx.send(addr.to_owned());
            }
            sink.lock().expect("log lock").push(line);
        }
    });
    let ops_addr = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the operator logs its ops address (GRAPHFLEET_LOG_FORMAT=json from the chart)");
    Operator {
        child,
        ops_addr,
        log,
    }
}

/// Status code of `GET path` on the ops endpoint.
async fn ops_status(addr: &str, path: &str) -> Result<u16, String> {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    stream
        .take(64 * 1024)
        .read_to_end(&mut response)
        .await
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&response);
    text.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP response: {text}"))
}

fn condition(object: &DynamicObject, type_: &str) -> Option<String> {
    object.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .and_then(|c| c["status"].as_str())
        .map(str::to_owned)
}

async fn dynamic(client: &kube::Client, namespace: &str, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("graphfleet.dev", "v1alpha1", kind);
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .expect("graphfleet CRDs are installed");
    Api::namespaced_with(client.clone(), namespace, &resource)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chart_rbac_and_env_let_the_real_operator_make_the_fed_gateway_ready() {
    ensure_crds();
    let client = cluster().client().await;
    let ns = TestNamespace::create(&client, "e2e-operator").await;
    let team = TestNamespace::create(&client, "e2e-team").await;
    let release = unique_name("gfe");
    let _cleanup = Cleanup::helm_release(&release, ns.name());
    let values = write_temp(&format!(
        "{}watchNamespaces: [{}]\nlogLevel: info,graphfleet_operator=debug\nreconcile:\n  resyncSeconds: 5\n",
        pool_placement_values("client"),
        team.name()
    ));
    run_ok(
        helm_on_cluster()
            .args(["install", &release])
            .arg(chart_dir())
            .args(["--namespace", ns.name(), "--wait", "--timeout", "120s"])
            .arg("--values")
            .arg(values.path()),
        None,
    );
    let fullname = format!("{release}-graphfleet");
    let deployment = Api::<Deployment>::namespaced(client.clone(), ns.name())
        .get(&fullname)
        .await
        .expect("operator Deployment installed");

    let kubeconfig = impersonating_kubeconfig(ns.name(), &fullname);
    let operator = start_operator(&deployment, ns.name(), kubeconfig.path());
    eventually("operator /readyz", TIMEOUT, || async {
        match ops_status(&operator.ops_addr, "/readyz").await? {
            200 => Ok(()),
            code => Err(format!("HTTP {code}")),
        }
    })
    .await;

    let manifests = manifests_dir();
    run_ok(
        cluster()
            .kubectl()
            .args(["apply", "-n", team.name()])
            .arg("-f")
            .arg(manifests.join("fed-subgraphs.yaml"))
            .arg("-f")
            .arg(manifests.join("graphgateway.yaml")),
        None,
    );

    let subgraphs = dynamic(&client, team.name(), "Subgraph").await;
    eventually("all four Subgraphs SchemaLoaded", TIMEOUT, || async {
        let listed = subgraphs
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let loaded = listed
            .items
            .iter()
            .filter(|s| condition(s, "SchemaLoaded").as_deref() == Some("True"))
            .count();
        if loaded == 4 {
            Ok(())
        } else {
            Err(format!("{loaded}/4 loaded"))
        }
    })
    .await;

    let gateways = dynamic(&client, team.name(), "GraphGateway").await;
    let gateway = eventually("GraphGateway fed Composed and Ready", TIMEOUT, || async {
        let gw = gateways.get("fed").await.map_err(|e| e.to_string())?;
        let composed = condition(&gw, "Composed");
        let ready = condition(&gw, "Ready");
        if composed.as_deref() == Some("True") && ready.as_deref() == Some("True") {
            Ok(gw)
        } else {
            Err(format!("{}", gw.data["status"]))
        }
    })
    .await;
    let served: Vec<&str> = gateway.data["status"]["subgraphs"]
        .as_array()
        .expect("status.subgraphs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(served, ["accounts", "inventory", "products", "reviews"]);

    // The gateway pods: router pool, one CPU.
    let pods = Api::<Pod>::namespaced(client.clone(), team.name())
        .list(
            &ListParams::default()
                .labels("app.kubernetes.io/instance=fed,app.kubernetes.io/name=graphfleet-gateway"),
        )
        .await
        .expect("list gateway pods");
    assert!(!pods.items.is_empty(), "gateway pods exist");
    for pod in &pods.items {
        let spec = pod.spec.as_ref().expect("pod spec");
        assert_eq!(spec.node_name.as_deref(), Some("router-0"));
        let limits = spec.containers[0]
            .resources
            .as_ref()
            .and_then(|r| r.limits.as_ref())
            .expect("limits");
        assert_eq!(limits["cpu"].0, "1");
    }

    // Events were recorded through the chart's events.k8s.io grant.
    let events = Api::<Event>::namespaced(client.clone(), team.name());
    eventually("a Composed event", TIMEOUT, || async {
        let listed = events
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let found = listed
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("Composed"));
        if found {
            Ok(())
        } else {
            Err(format!("{} events", listed.items.len()))
        }
    })
    .await;

    // Leader election ran through the chart's Lease grant, under the Lease it names.
    let lease = Api::<Lease>::namespaced(client.clone(), ns.name())
        .get(&fullname)
        .await
        .expect("the operator created its Lease (GRAPHFLEET_LEASE_NAME) in the release namespace");
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity).as_deref(),
        Some(POD_NAME),
        "the operator holds its Lease under POD_NAME"
    );

    // Nothing the operator tried was refused (RBAC holes show up as 403s in its log).
    let log = operator.log();
    let refused: Vec<&String> = log
        .iter()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("forbidden")
                || l.contains("\"code\":403")
                || l.contains("publishing event failed")
        })
        .collect();
    assert!(
        refused.is_empty(),
        "the operator was refused:\n{refused:#?}"
    );
    drop(operator);

    run_ok(
        helm_on_cluster().args(["uninstall", &release, "--namespace", ns.name(), "--wait"]),
        None,
    );
    team.delete(&client).await;
    ns.delete(&client).await;
}
