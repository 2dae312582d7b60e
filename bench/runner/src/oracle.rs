//! The answer a gateway's responses are checked against: the set's monolith's, or the
//! gateway's own first answer when it carries the same data formatted differently.

use std::path::Path;

use anyhow::{Context, bail};
use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::config::SubgraphServer;
use crate::http::Client;
use crate::k6::Expected;
use crate::process;
use crate::progress::progress;
use crate::scenario::Scenario;
use crate::servers::start_server;

/// Asks the set's monolith for the scenario's answer and writes it for k6.
pub async fn oracle(
    server: SubgraphServer<'_>,
    client: &Client,
    scenario: &Scenario,
    body: &str,
    dir: &Path,
) -> anyhow::Result<Expected> {
    let (mut mono, base) =
        start_server(server, &scenario.set, true, &[], &dir.join("monolith.log")).await?;
    let answer = client
        .post_json(&format!("{base}/graphql"), Bytes::from(body.to_owned()))
        .await;
    process::stop(&mut mono).await;
    let (status, bytes) = answer.context("asking the monolith for the expected response")?;
    let json: serde_json::Value =
        serde_json::from_slice(&bytes).context("the monolith's answer is not JSON")?;
    if status != 200 || json.get("errors").is_some() || !json["data"].is_object() {
        bail!(
            "the monolith answered the scenario query with status {status}: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
        );
    }
    let text = std::str::from_utf8(&bytes).context("the monolith's answer is not UTF-8")?;
    let file = dir.join("expected.json");
    std::fs::write(&file, &bytes).context("writing expected.json")?;
    Ok(Expected {
        file,
        len_utf16: text.encode_utf16().count(),
        sha256: Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        bytes: bytes.len(),
    })
}

/// Checks the gateway's answer once before any load. Byte-identical to the monolith's: k6
/// compares against the monolith. The same answer formatted differently (e.g. `1` for
/// `1.0`): k6 compares against this gateway's own bytes. Anything else is an error naming
/// the first difference.
pub(crate) async fn conformance(
    client: &Client,
    url: &str,
    payload: &Path,
    expected: &Expected,
    dir: &Path,
    name: &str,
) -> anyhow::Result<Expected> {
    let body = std::fs::read(payload).context("reading the payload")?;
    let (status, got) = client
        .post_json(url, Bytes::from(body))
        .await
        .context("first request")?;
    judge(status, &got, expected, dir, name)
}

/// The expected answer k6 should check `name`'s responses against, given its first answer
/// (see [`conformance`]).
pub fn judge(
    status: u16,
    got: &[u8],
    expected: &Expected,
    dir: &Path,
    name: &str,
) -> anyhow::Result<Expected> {
    let want = std::fs::read(&expected.file).context("reading the expected answer")?;
    if status == 200 && got[..] == want[..] {
        return Ok(expected.clone());
    }
    let snippet = || String::from_utf8_lossy(&got[..got.len().min(300)]).into_owned();
    let answer: serde_json::Value = serde_json::from_slice(got)
        .with_context(|| format!("status {status}, not JSON: {}", snippet()))?;
    if status != 200 || answer.get("errors").is_some() {
        bail!("answered with status {status}: {}", snippet());
    }
    let want: serde_json::Value =
        serde_json::from_slice(&want).context("parsing the expected answer")?;
    if let Some(d) = crate::compare::first_difference(&want["data"], &answer["data"]) {
        bail!("the answer differs from the monolith's {d}");
    }
    progress(format!(
        "{name}: same answer as the monolith, formatted differently ({} bytes vs {})",
        got.len(),
        expected.bytes
    ));
    let file = dir.join(format!("{name}-answer.json"));
    std::fs::write(&file, got).context("writing the gateway's answer")?;
    let text = std::str::from_utf8(got).context("the answer is not UTF-8")?;
    Ok(Expected {
        file,
        len_utf16: text.encode_utf16().count(),
        sha256: Sha256::digest(got)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        bytes: got.len(),
    })
}
