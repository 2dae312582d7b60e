//! What an attack's requests were answered with: status, size and the GraphQL error codes,
//! read as the body streams in and only its ends kept (a hostile answer may be hundreds
//! of MiB, which would weigh on the runner, not the gateway).

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};

use crate::http::Client;

/// A plain query every gateway answers fast: the "still serving" check.
pub(crate) const SIMPLE: &str = "{ topProducts { upc } }";

/// Bytes kept of each end of a body: error lists sit at one end or the other.
const KEEP: usize = 16 * 1024;

/// One HTTP answer, its body's ends.
#[derive(Debug, Clone, Default)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) bytes: u64,
    pub(crate) head: String,
    pub(crate) tail: String,
}

impl Answer {
    /// The distinct `extensions.code` values found in the kept ends of the body.
    pub(crate) fn codes(&self) -> Vec<String> {
        let mut codes = error_codes(&self.head);
        if self.bytes as usize > self.head.len() {
            codes.extend(error_codes(&self.tail));
        }
        codes.sort();
        codes.dedup();
        codes
    }

    /// The first error message, cut to a table note's length.
    pub(crate) fn first_message(&self) -> Option<String> {
        let at = self.head.find("\"message\":\"")? + 11;
        let text: String = self.head[at..].chars().take(120).collect();
        Some(text.split('"').next().unwrap_or_default().to_owned())
    }

    /// `200 (1.2 MiB)`: the status and how much came.
    pub(crate) fn describe(&self) -> String {
        format!("{} ({})", self.status, size(self.bytes))
    }
}

/// The `"code":"…"` values in a JSON text (an error's `extensions.code`), in order.
pub(crate) fn error_codes(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    // Bounded by the text: every turn consumes the marker found.
    while let Some(at) = rest.find("\"code\":") {
        rest = rest[at + 7..].trim_start();
        let Some(value) = rest.strip_prefix('"') else {
            continue;
        };
        if let Some(end) = value.find('"') {
            out.push(value[..end].to_owned());
            rest = &value[end..];
        }
    }
    out
}

/// `n` bytes for a person: `812 B`, `14.2 KiB`, `61.0 MiB`.
pub(crate) fn size(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / 1024.0),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
}

/// Sends one request and reads its answer, keeping [`KEEP`] bytes of each end; an error
/// (no answer within `timeout`, a broken connection) as text.
pub(crate) async fn ask(
    client: &Client,
    method: Method,
    url: &str,
    body: Option<Bytes>,
    timeout: Duration,
) -> Result<Answer, String> {
    let mut req = Request::builder()
        .method(method)
        .uri(url)
        .header("accept", "application/json")
        // Lets a GET past the CSRF check, as a real client's preflighted request does.
        .header("apollo-require-preflight", "true");
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let req = req
        .body(Full::new(body.unwrap_or_default()))
        .map_err(|e| format!("building a request to {url}: {e}"))?;
    let exchange = async {
        let response = client.open(req).await.map_err(|e| format!("{e}"))?;
        let status = response.status().as_u16();
        let mut stream = response.into_body().into_data_stream();
        let mut answer = Answer {
            status,
            ..Answer::default()
        };
        let (mut head, mut tail) = (Vec::new(), Vec::new());
        // Bounded by the body, itself bounded by the timeout around this.
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| format!("status {status}: the body broke off: {e}"))?;
            answer.bytes += chunk.len() as u64;
            keep(&mut head, &mut tail, &chunk);
        }
        answer.head = String::from_utf8_lossy(&head).into_owned();
        answer.tail = String::from_utf8_lossy(&tail).into_owned();
        Ok(answer)
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| format!("no answer within {} s", timeout.as_secs()))?
}

/// Appends `chunk` to the first [`KEEP`] bytes (`head`) and the last ones (`tail`).
pub(crate) fn keep(head: &mut Vec<u8>, tail: &mut Vec<u8>, chunk: &[u8]) {
    if head.len() < KEEP {
        head.extend_from_slice(&chunk[..chunk.len().min(KEEP - head.len())]);
    }
    tail.extend_from_slice(&chunk[chunk.len().saturating_sub(KEEP)..]);
    if tail.len() > 2 * KEEP {
        tail.drain(..tail.len() - KEEP);
    }
}

/// Many answers (or failures) in a few words: `200×2, 503×30` and the codes with their
/// counts, `MEMORY_BUDGET_EXCEEDED×30`.
pub(crate) fn tally(answers: &[Result<Answer, String>]) -> (String, String) {
    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    let mut codes: BTreeMap<String, usize> = BTreeMap::new();
    for answer in answers {
        match answer {
            Ok(a) => {
                *statuses.entry(a.status.to_string()).or_default() += 1;
                for code in a.codes() {
                    *codes.entry(code).or_default() += 1;
                }
            }
            Err(e) => *statuses.entry(failure_kind(e)).or_default() += 1,
        }
    }
    (counted(&statuses), counted(&codes))
}

/// A failure's kind, short enough for a table cell.
fn failure_kind(error: &str) -> String {
    if error.starts_with("no answer within") {
        "timeout".into()
    } else {
        "failed".into()
    }
}

fn counted(map: &BTreeMap<String, usize>) -> String {
    if map.is_empty() {
        return "—".into();
    }
    map.iter()
        .map(|(k, n)| {
            if *n == 1 {
                k.clone()
            } else {
                format!("{k}×{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
