//! k6's REST API on a synchronized segment's pod (`k6 run --paused --address 0.0.0.0:6565`):
//! whether k6 is paused and ready, `setup()` run once, its data handed to the other segments,
//! and the resume that starts them all together.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use crate::resources::loadtest::K6_API_PORT;

/// k6's `ExecutionStatus` once its VUs are initialized and it waits for a resume
/// (`lib.ExecutionStatusPausedBeforeRun`); higher values mean it has started.
const PAUSED_BEFORE_RUN: u64 = 4;
/// Every call but `setup()`; the pods are on the cluster network.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// `setup()` may do real work (k6's own default `setupTimeout` is 60 s).
const SETUP_TIMEOUT: Duration = Duration::from_secs(300);

/// A call to a k6 REST API that failed.
#[derive(Debug, thiserror::Error)]
#[error("k6 REST API {method} {url}: {what}")]
pub struct K6ApiError {
    method: Method,
    url: String,
    what: String,
}

/// A client for the segments' k6 REST APIs; one per start, so the resume reuses the
/// connections the readiness checks opened.
pub struct K6Api {
    client: Client<HttpConnector, Full<Bytes>>,
}

impl K6Api {
    pub fn new() -> Self {
        Self {
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    async fn call(
        &self,
        method: Method,
        ip: &str,
        path: &str,
        body: Option<Vec<u8>>,
        timeout: Duration,
    ) -> Result<Value, K6ApiError> {
        let host = if ip.contains(':') {
            format!("[{ip}]")
        } else {
            ip.to_owned()
        };
        let url = format!("http://{host}:{K6_API_PORT}{path}");
        let fail = |what: String| K6ApiError {
            method: method.clone(),
            url: url.clone(),
            what,
        };
        let request = Request::builder()
            .method(method.clone())
            .uri(&url)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| fail(e.to_string()))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| fail(e.to_string()))?;
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|e| fail(e.to_string()))?
                .to_bytes();
            if !status.is_success() {
                let text = String::from_utf8_lossy(&bytes);
                return Err(fail(format!("HTTP {status}: {}", text.trim())));
            }
            if bytes.is_empty() {
                return Ok(Value::Null);
            }
            serde_json::from_slice(&bytes).map_err(|e| fail(format!("not JSON: {e}")))
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| fail(format!("no answer within {timeout:?}")))?
    }

    /// k6's execution status (`GET /v1/status`).
    async fn execution_status(&self, ip: &str) -> Result<u64, K6ApiError> {
        let v = self
            .call(Method::GET, ip, "/v1/status", None, CALL_TIMEOUT)
            .await?;
        Ok(v["data"]["attributes"]["status"].as_u64().unwrap_or(0))
    }

    /// Runs the script's `setup()` in this k6 (`POST /v1/setup`) and returns its data.
    async fn run_setup(&self, ip: &str) -> Result<Value, K6ApiError> {
        let v = self
            .call(Method::POST, ip, "/v1/setup", None, SETUP_TIMEOUT)
            .await?;
        Ok(v["data"]["attributes"]["data"].clone())
    }

    /// Hands `setup()`'s data to this k6 (`PUT /v1/setup`, the data as the body).
    async fn set_setup(&self, ip: &str, data: &Value) -> Result<(), K6ApiError> {
        let body = serde_json::to_vec(data).expect("JSON values serialize");
        self.call(Method::PUT, ip, "/v1/setup", Some(body), CALL_TIMEOUT)
            .await
            .map(drop)
    }

    /// Resumes a paused k6 (`PATCH /v1/status`) and returns when it answered.
    async fn resume(&self, ip: &str) -> Result<MicroTime, K6ApiError> {
        let body = json!({ "data": { "type": "status", "id": "default", "attributes": { "paused": false } } });
        let body = serde_json::to_vec(&body).expect("JSON values serialize");
        self.call(Method::PATCH, ip, "/v1/status", Some(body), CALL_TIMEOUT)
            .await?;
        Ok(MicroTime(Timestamp::now()))
    }

    /// Starts the segments at `ips` (segment, pod IP; segment 0 first) together: `None` while
    /// a k6 still initializes. Unless one already started (an earlier, interrupted start),
    /// `setup()` runs once in the first and its data goes to the others; then every paused
    /// k6 is resumed at once. Returns when each segment was resumed.
    pub async fn start(
        &self,
        ips: &[(i32, String)],
    ) -> Result<Option<Vec<(i32, MicroTime)>>, K6ApiError> {
        let statuses =
            futures::future::try_join_all(ips.iter().map(|(_, ip)| self.execution_status(ip)))
                .await?;
        if statuses.iter().any(|s| *s < PAUSED_BEFORE_RUN) {
            return Ok(None);
        }
        let fresh = statuses.iter().all(|s| *s == PAUSED_BEFORE_RUN);
        if fresh && let Some(((_, first), rest)) = ips.split_first() {
            let data = self.run_setup(first).await?;
            if !data.is_null() {
                futures::future::try_join_all(rest.iter().map(|(_, ip)| self.set_setup(ip, &data)))
                    .await?;
            }
        }
        let resumes = ips
            .iter()
            .zip(&statuses)
            .map(|((i, ip), status)| async move {
                let at = if *status == PAUSED_BEFORE_RUN {
                    self.resume(ip).await?
                } else {
                    MicroTime(Timestamp::now())
                };
                Ok::<_, K6ApiError>((*i, at))
            });
        futures::future::try_join_all(resumes).await.map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// Three real k6 processes started paused as the segments' pods are (each on its own
    /// loopback address, port 6565): `setup()` runs once, every segment gets its data, they
    /// start within milliseconds of each other and `teardown()` runs once. Needs k6:
    /// `GRAPHFLEET_K6_BIN` or the pinned tool cache (`scripts/tools.sh k6`).
    #[tokio::test]
    #[ignore = "needs the k6 binary; run with --ignored"]
    async fn paused_k6_processes_start_together_with_one_setup() {
        let k6 = std::env::var("GRAPHFLEET_K6_BIN").unwrap_or_else(|_| {
            let home = std::env::var("HOME").expect("HOME");
            format!("{home}/.cache/graphfleet/tools/k6-1.8.1/k6")
        });
        let dir = std::env::temp_dir().join(format!("gf-k6-api-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let script = dir.join("script.js");
        std::fs::write(
            &script,
            r#"
import exec from "k6/execution";
import { Gauge } from "k6/metrics";
const started = new Gauge("started");
export const options = { scenarios: { main: {
  executor: "constant-arrival-rate", rate: 30, timeUnit: "1s", duration: "2s", preAllocatedVUs: 2,
}}};
export function setup() { console.log("SETUP RAN"); return { token: "t-42" }; }
export default function (data) {
  if (data.token !== "t-42") throw new Error("no setup data");
  started.add(exec.scenario.startTime);
}
export function teardown(data) { console.log(`TEARDOWN RAN ${data.token}`); }
export function handleSummary(d) {
  return { stdout: `STARTED ${d.metrics.started.values.min} ITER ${d.metrics.iterations.values.count}\n` };
}
"#,
        )
        .expect("script");
        let n = 3;
        let children: Vec<_> = (0..n)
            .map(|i| {
                let mut cmd = Command::new(&k6);
                cmd.args(["run", "--quiet", "--no-color", "--no-usage-report"]);
                cmd.args(["--execution-segment", &format!("{i}/{n}:{}/{n}", i + 1)]);
                cmd.args(["--paused", "--address", &format!("127.0.0.{}:6565", i + 2)]);
                cmd.arg("--no-setup");
                if i != 0 {
                    cmd.arg("--no-teardown");
                }
                cmd.arg(&script)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("k6 starts")
            })
            .collect();
        let ips: Vec<(i32, String)> = (0..n).map(|i| (i, format!("127.0.0.{}", i + 2))).collect();
        let api = K6Api::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let resumed = loop {
            match api.start(&ips).await {
                Ok(Some(resumed)) => break resumed,
                Ok(None) | Err(_) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                other => panic!("k6 did not get ready: {other:?}"),
            }
        };
        let outputs: Vec<String> = children
            .into_iter()
            .map(|c| {
                let out = c.wait_with_output().expect("k6 ends");
                assert!(out.status.success(), "{out:?}");
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                )
            })
            .collect();
        let all = outputs.concat();
        assert_eq!(all.matches("SETUP RAN").count(), 1, "{all}");
        assert_eq!(all.matches("TEARDOWN RAN t-42").count(), 1, "{all}");
        let starts: Vec<f64> = outputs
            .iter()
            .map(|o| {
                let at = o.split("STARTED ").nth(1).expect("STARTED line");
                at.split_whitespace()
                    .next()
                    .expect("a number")
                    .parse()
                    .expect("ms")
            })
            .collect();
        let skew = starts.iter().cloned().fold(f64::MIN, f64::max)
            - starts.iter().cloned().fold(f64::MAX, f64::min);
        let resumes: Vec<i64> = resumed.iter().map(|(_, t)| t.0.as_microsecond()).collect();
        let resume_skew = resumes.iter().max().expect("n") - resumes.iter().min().expect("n");
        println!(
            "MEASURED k6 start skew {skew} ms (resume answers within {:.3} ms)",
            resume_skew as f64 / 1e3
        );
        assert!(skew <= 20.0, "segments started {skew} ms apart: {starts:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
