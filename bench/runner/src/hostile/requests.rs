//! Attacks of plain HTTP requests: one operation that costs far more than its text
//! (entity fan-out, introspection), many distinct operations for the plan cache, and a GET
//! whose query string is longer than a URI may be.

use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use hyper::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::answer::{self, Answer, ask, tally};
use super::harness::Target;
use super::table::Outcome;
use crate::http::Client;
use crate::sampler;

/// The body of a POST of `query`.
fn body(query: &str) -> Bytes {
    Bytes::from(serde_json::json!({ "query": query }).to_string())
}

/// One POST of `query`, answered or refused within `timeout`.
pub(crate) async fn one(target: &Target, query: &str, timeout: Duration) -> Outcome {
    let client = Client::fresh_connections();
    let started = Instant::now();
    let answer = ask(
        &client,
        Method::POST,
        &target.graphql,
        Some(body(query)),
        timeout,
    )
    .await;
    let wall_s = started.elapsed().as_secs_f64();
    let text = format!("{} bytes of query", query.len());
    outcome_of(wall_s, &answer, text)
}

fn outcome_of(wall_s: f64, answer: &Result<Answer, String>, mut note: String) -> Outcome {
    match answer {
        Ok(a) => {
            let codes = a.codes();
            if let Some(message) = a.first_message() {
                note.push_str(&format!("; first error: {message}"));
            } else if a.bytes < 200 {
                note.push_str(&format!("; the answer: {}", a.head.trim()));
            }
            Outcome {
                wall_s,
                answer: a.describe(),
                codes: if codes.is_empty() {
                    "—".into()
                } else {
                    codes.join(", ")
                },
                note,
            }
        }
        Err(e) => Outcome {
            wall_s,
            answer: "no answer".into(),
            codes: "—".into(),
            note: format!("{note}; {e}"),
        },
    }
}

/// `operations` distinct operations (`make(i)`), one after the other, each within 10 s;
/// stops at `bound`. The note has the gateway's resident memory once they are cached.
pub(crate) async fn many(
    target: &Target,
    operations: usize,
    make: impl Fn(usize) -> String,
    bound: Duration,
) -> Outcome {
    let client = Client::new();
    let started = Instant::now();
    let mut answers = Vec::with_capacity(operations);
    let mut text_bytes = 0;
    for i in 0..operations {
        if started.elapsed() > bound {
            break;
        }
        let query = make(i);
        text_bytes += query.len();
        answers.push(
            ask(
                &client,
                Method::POST,
                &target.graphql,
                Some(body(&query)),
                Duration::from_secs(10),
            )
            .await,
        );
    }
    let wall_s = started.elapsed().as_secs_f64();
    let rss = sampler::process_status_bytes(target.pid, "VmRSS").unwrap_or(0);
    let (statuses, codes) = tally(&answers);
    Outcome {
        wall_s,
        answer: statuses,
        codes,
        note: format!(
            "{} of {operations} operations sent ({} of text), {:.1} ms each; RSS after them {:.0} MiB",
            answers.len(),
            answer::size(text_bytes as u64),
            wall_s * 1e3 / answers.len().max(1) as f64,
            rss as f64 / 1_048_576.0
        ),
    }
}

/// A GET of `/graphql` with a `bytes`-long query string, written as bytes (no URI type
/// holds one over 65,534 bytes), the answer read until the gateway closes.
pub(crate) async fn long_get(target: &Target, bytes: usize) -> anyhow::Result<Outcome> {
    let target_path = graphfleet_bench_model::hostile::long_get_target(bytes);
    let request = format!(
        "GET {target_path} HTTP/1.1\r\nhost: {}\r\napollo-require-preflight: true\r\nconnection: close\r\n\r\n",
        target.addr
    );
    let started = Instant::now();
    let mut socket = tokio::net::TcpStream::connect(&target.addr)
        .await
        .with_context(|| format!("connecting to {}", target.addr))?;
    // The server may answer and close before it has read it all.
    let _ = socket.write_all(request.as_bytes()).await;
    let mut raw = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), socket.read_to_end(&mut raw)).await;
    let wall_s = started.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("none")
        .to_owned();
    let answer = Answer {
        status: status.parse().unwrap_or(0),
        bytes: body.len() as u64,
        head: body.to_owned(),
        tail: String::new(),
    };
    let mut note = format!("{bytes}-byte query string");
    match read {
        Err(_) => note.push_str("; not closed within 10 s"),
        Ok(Err(e)) => note.push_str(&format!("; the read ended with {e}")),
        Ok(Ok(_)) if raw.is_empty() => note.push_str("; closed without an answer"),
        Ok(Ok(_)) if body.is_empty() => note.push_str("; an answer with an empty body"),
        Ok(Ok(_)) => {}
    }
    let mut outcome = outcome_of(wall_s, &Ok(answer), note);
    if raw.is_empty() {
        outcome.answer = "closed".into();
    }
    Ok(outcome)
}
