//! The operator's web view on the real fleet: the operator pod (the chart's ServiceAccount
//! and RBAC, watching one namespace) serves it behind the chart's `<fullname>-web` Service;
//! curl and Debian's headless Chromium (tools/browser/webview.mjs) reach it from inside the
//! cluster's network namespace, as a `kubectl port-forward` user would.

use std::path::PathBuf;
use std::process::Stdio;

use graphfleet_deploy_tests::real::json_of;
use graphfleet_deploy_tests::{eventually, workspace_root};
use graphfleet_testkit::RealCluster;
use serde_json::Value;

use super::READY;

/// `http://<ClusterIP>:<port>` of the chart's web view Service in `ns`.
fn web_url(cluster: &RealCluster, ns: &str) -> String {
    let services = json_of(
        cluster,
        ns,
        &["services", "-l", "app.kubernetes.io/name=graphfleet"],
    );
    let web = services["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|s| {
            s["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.ends_with("-web"))
        })
        .unwrap_or_else(|| panic!("the chart made no -web Service: {services}"));
    let ip = web["spec"]["clusterIP"].as_str().expect("ClusterIP");
    let port = &web["spec"]["ports"][0]["port"];
    format!("http://{ip}:{port}")
}

/// Status line, headers and body of `curl -i` (GET, or `method`) from the cluster's netns.
fn curl(cluster: &RealCluster, method: &str, url: &str) -> Result<(u16, String, String), String> {
    let out = cluster
        .in_netns("curl")
        .args(["-sS", "-i", "--max-time", "10", "-X", method, url])
        .output()
        .map_err(|e| format!("curl: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no header end in {text}"))?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status in {head}"))?;
    Ok((code, head.to_ascii_lowercase(), body.to_owned()))
}

fn page(cluster: &RealCluster, url: &str) -> String {
    let (code, head, body) = curl(cluster, "GET", url).expect("the web view answers");
    assert_eq!(code, 200, "GET {url}: {body}");
    assert!(
        head.contains("content-security-policy: default-src 'none'"),
        "{head}"
    );
    assert!(
        !body.contains("Could not read") && !body.contains("forbidden"),
        "the operator's RBAC let it read everything the page shows: {body}"
    );
    body
}

fn contains_all(what: &str, body: &str, parts: &[String]) {
    for part in parts {
        assert!(
            body.contains(part.as_str()),
            "{what} lacks {part:?}:\n{body}"
        );
    }
}

/// Where the screenshots go: `GRAPHFLEET_SCREENSHOT_DIR`, else a folder of this run.
fn screenshot_dir() -> PathBuf {
    let dir = std::env::var_os("GRAPHFLEET_SCREENSHOT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("graphfleet-webview-{}", std::process::id()))
        });
    std::fs::create_dir_all(&dir).expect("a screenshot folder");
    dir
}

/// Runs webview.mjs in the cluster's network namespace over `visits` (URL, selectors).
fn in_chromium(cluster: &RealCluster, visits: &[(String, &str)]) -> Value {
    let node_tool = workspace_root().join("scripts/node-tool.sh");
    // Installed (npm ci into the tool cache) out here: the netns has no route to a registry.
    let installed = std::process::Command::new(&node_tool)
        .args(["--dir", "browser"])
        .stdin(Stdio::null())
        .output()
        .expect("run scripts/node-tool.sh --dir browser");
    assert!(
        installed.status.success(),
        "installing the browser tool: {}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let dir = screenshot_dir();
    let mut cmd = cluster.in_netns(node_tool.to_str().expect("a UTF-8 path"));
    cmd.arg("browser/webview.mjs").arg(&dir);
    for (url, selectors) in visits {
        cmd.arg(url).arg(selectors);
    }
    let out = cmd.stdin(Stdio::null()).output().expect("run webview.mjs");
    assert!(
        out.status.success(),
        "webview.mjs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("webview.mjs prints JSON")
}

/// The web view shows the fleet of `ns` after its `smoke` LoadTest: overview, the
/// GraphGateway with its serving revision, a Subgraph, the LoadTest with its report and
/// charts; read-only; nothing outside the watched namespace.
pub async fn shows_the_fleet(cluster: &RealCluster, ns: &str) {
    let base = web_url(cluster, ns);
    eventually("the web view answers", READY, || async {
        curl(cluster, "GET", &format!("{base}/")).map(|_| ())
    })
    .await;
    let gateway = json_of(cluster, ns, &["graphgateway", "fed"]);
    let hash = gateway["status"]["supergraphHash"]
        .as_str()
        .expect("supergraphHash");
    let short = &hash[..hash.len().min(12)];

    let overview = page(cluster, &format!("{base}/"));
    contains_all(
        "the overview",
        &overview,
        &[
            format!("href=\"/graphgateways/{ns}/fed\""),
            format!("href=\"/loadtests/{ns}/smoke\""),
            short.to_owned(),
        ],
    );
    for subgraph in ["accounts", "inventory", "products", "reviews"] {
        assert!(
            overview.contains(&format!("href=\"/subgraphs/{ns}/{subgraph}\"")),
            "Subgraph {subgraph} listed:\n{overview}"
        );
    }
    let gateway_page = page(cluster, &format!("{base}/graphgateways/{ns}/fed"));
    contains_all(
        "the GraphGateway page",
        &gateway_page,
        &[
            "id=\"revisions-table\"".to_owned(),
            "Serving".to_owned(),
            short.to_owned(),
            "rolling update".to_owned(),
        ],
    );
    let subgraph_page = page(cluster, &format!("{base}/subgraphs/{ns}/products"));
    contains_all(
        "the Subgraph page",
        &subgraph_page,
        &[
            "SchemaLoaded".to_owned(),
            format!("href=\"/graphgateways/{ns}/fed\""),
        ],
    );
    let loadtest_page = page(cluster, &format!("{base}/loadtests/{ns}/smoke"));
    contains_all(
        "the LoadTest page",
        &loadtest_page,
        &[
            "id=\"targets-table\"".to_owned(),
            "id=\"targets-chart\"".to_owned(),
            "id=\"latency-chart\"".to_owned(),
            // The report's markdown comparison table, rendered as HTML.
            "<h2>Comparison</h2>".to_owned(),
            ">graphgateway</td>".to_owned(),
            // The GraphGateway target's efficiency, in the targets table.
            "requests per CPU second".to_owned(),
        ],
    );

    // Read-only, and only the watched namespace.
    let (code, _, _) = curl(cluster, "POST", &format!("{base}/")).expect("POST answered");
    assert_eq!(code, 405, "the web view refuses writes");
    let (code, _, _) = curl(
        cluster,
        "GET",
        &format!("{base}/graphgateways/kube-system/fed"),
    )
    .expect("answered");
    assert_eq!(
        code, 404,
        "a namespace the operator does not watch is not shown"
    );
    let (code, _, _) =
        curl(cluster, "GET", &format!("{base}/graphgateways/{ns}/nope")).expect("answered");
    assert_eq!(code, 404);

    let seen = in_chromium(
        cluster,
        &[
            (
                format!("{base}/"),
                "#graphgateways-table tr,#subgraphs-table tr,#loadtests-table tr",
            ),
            (
                format!("{base}/graphgateways/{ns}/fed"),
                "#revisions-table tr,table.conditions tr",
            ),
            (
                format!("{base}/loadtests/{ns}/smoke"),
                "#targets-table tr,#targets-chart img,#latency-chart img,.report table",
            ),
        ],
    );
    assert_eq!(
        seen["errors"],
        serde_json::json!([]),
        "the pages ran without errors: {seen}"
    );
    let pages = seen["pages"].as_array().expect("pages");
    let rows = |i: usize, selector: &str| pages[i]["found"][selector].as_u64().unwrap_or(0);
    assert_eq!(
        rows(0, "#graphgateways-table tr"),
        2,
        "header and fed: {seen}"
    );
    assert_eq!(
        rows(0, "#subgraphs-table tr"),
        5,
        "header and four Subgraphs: {seen}"
    );
    assert!(rows(0, "#loadtests-table tr") >= 2, "{seen}");
    assert!(rows(1, "#revisions-table tr") >= 2, "{seen}");
    assert_eq!(
        rows(2, "#targets-table tr"),
        3,
        "header and two targets: {seen}"
    );
    assert!(rows(2, ".report table") >= 2, "the report's tables: {seen}");
    for page in pages {
        for image in page["images"].as_array().expect("images") {
            assert!(
                image["width"].as_u64().unwrap_or(0) > 100,
                "every chart was drawn: {image} on {}",
                page["url"]
            );
        }
        let shot = page["screenshot"].as_str().expect("a screenshot path");
        let png = std::fs::read(shot).expect("the screenshot was written");
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 10_000,
            "a PNG of the page: {shot}"
        );
    }
    assert!(
        pages[0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("GraphGateways") && t.contains("fed")),
        "the overview as a person sees it: {seen}"
    );
    println!("web view screenshots in {}", screenshot_dir().display());
}
