//! The memory burst: many clients at once, each asking for a response just under the
//! response cap, from a subgraph of the runner's own on loopback that answers every
//! request with the same big body (`{"data":{"blob":["xxx…",…]}}`, sent with its
//! `Content-Length`). Without a gateway-wide budget every request holds its subgraph body
//! and the response written from it at once.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use graphfleet_bench_model::hostile::BIG_SUPERGRAPH;
use hyper::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::answer::{ask, tally};
use super::harness::Target;
use super::table::Outcome;
use crate::http::Client;

const QUERY: &str = "{ blob }";
/// Longest request head the subgraph reads.
const MAX_HEAD: usize = 64 * 1024;

/// The running big subgraph; stopped when dropped.
pub(crate) struct BigSubgraph {
    pub(crate) supergraph: PathBuf,
    pub(crate) body_bytes: usize,
    task: JoinHandle<()>,
}

impl Drop for BigSubgraph {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The answer: `strings` strings of 1 MiB.
fn big_body(strings: usize) -> Bytes {
    let string = format!("\"{}\"", "x".repeat(1 << 20));
    let blob = vec![string; strings].join(",");
    Bytes::from(format!("{{\"data\":{{\"blob\":[{blob}]}}}}"))
}

/// Starts the subgraph on an ephemeral loopback port and writes its supergraph in `dir`.
pub(crate) async fn start(dir: &Path, mib: usize) -> anyhow::Result<BigSubgraph> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding the big subgraph")?;
    let url = format!("http://{}/", listener.local_addr().context("its address")?);
    let supergraph = dir.join("big-supergraph.graphql");
    std::fs::write(&supergraph, BIG_SUPERGRAPH.replace("SUBGRAPH_URL", &url))
        .with_context(|| format!("writing {}", supergraph.display()))?;
    let body = big_body(mib);
    let body_bytes = body.len();
    let task = tokio::spawn(async move {
        // The server's life: until the run drops it.
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(serve(stream, body.clone()));
        }
    });
    Ok(BigSubgraph {
        supergraph,
        body_bytes,
        task,
    })
}

/// Answers each request of a keep-alive connection with `body`, until the peer leaves.
async fn serve(mut stream: TcpStream, body: Bytes) {
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::new();
    // Bounded by the peer: each turn answers one request or ends the connection.
    loop {
        let Some(head_end) = read_head(&mut stream, &mut buf).await else {
            return;
        };
        let length = content_length(&buf[..head_end]).unwrap_or(0);
        // The request body (the gateway's query), read and discarded.
        while buf.len() < head_end + length {
            let mut more = [0u8; 8192];
            match stream.read(&mut more).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&more[..n]),
            }
        }
        buf.drain(..head_end + length);
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if stream.write_all(head.as_bytes()).await.is_err()
            || stream.write_all(&body).await.is_err()
        {
            return;
        }
    }
}

/// Reads until `buf` holds a whole request head; where it ends (after `\r\n\r\n`).
async fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<usize> {
    // Bounded by MAX_HEAD.
    loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(at + 4);
        }
        if buf.len() > MAX_HEAD {
            return None;
        }
        let mut more = [0u8; 8192];
        match stream.read(&mut more).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&more[..n]),
        }
    }
}

/// The `content-length` of a request head.
pub(crate) fn content_length(head: &[u8]) -> Option<usize> {
    String::from_utf8_lossy(head).lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}

/// `clients` POSTs of `{ blob }` at once, each on its own connection, each within 60 s.
pub(crate) async fn burst(target: &Target, clients: usize, body_bytes: usize) -> Outcome {
    let started = Instant::now();
    let asks = (0..clients).map(|_| {
        let url = target.graphql.clone();
        tokio::spawn(async move {
            let body = serde_json::json!({ "query": QUERY }).to_string();
            ask(
                &Client::fresh_connections(),
                Method::POST,
                &url,
                Some(Bytes::from(body)),
                Duration::from_secs(60),
            )
            .await
        })
    });
    let answers: Vec<_> = futures::future::join_all(asks)
        .await
        .into_iter()
        .map(|joined| joined.unwrap_or_else(|e| Err(format!("the client task: {e}"))))
        .collect();
    let wall_s = started.elapsed().as_secs_f64();
    let whole = answers
        .iter()
        .filter(|a| {
            a.as_ref().is_ok_and(|a| {
                a.status == 200 && a.bytes as usize >= body_bytes && a.codes().is_empty()
            })
        })
        .count();
    let (answer, codes) = tally(&answers);
    Outcome {
        wall_s,
        answer,
        codes,
        note: format!(
            "{clients} clients, each answer from a {} MiB subgraph body; {whole} answered whole",
            body_bytes >> 20
        ),
    }
}
