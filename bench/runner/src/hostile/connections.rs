//! Silent connections: one client (127.0.0.2, another address on loopback) opens more
//! TCP connections than the gateway takes at once (`traffic.max_connections`) and sends
//! nothing on any; then another client (127.0.0.1) asks a plain query, timed.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context;
use hyper::Method;
use tokio::net::{TcpSocket, TcpStream};

use super::answer::{SIMPLE, ask};
use super::harness::Target;
use super::table::Outcome;
use crate::http::Client;

/// The attacker's address: a client of its own to the gateway's per-client limits.
const ATTACKER: &str = "127.0.0.2:0";

pub(crate) async fn silent(
    target: &Target,
    connections: usize,
    wait: Duration,
) -> anyhow::Result<Outcome> {
    let addr: SocketAddr = target.addr.parse().context("the gateway's address")?;
    let local: SocketAddr = ATTACKER.parse().context("the attacker's address")?;
    let mut held: Vec<TcpStream> = Vec::with_capacity(connections);
    let opening = Instant::now();
    let mut queue_full = false;
    for _ in 0..connections {
        let socket = TcpSocket::new_v4().context("a socket")?;
        socket.bind(local).context("binding 127.0.0.2")?;
        // The kernel completes the handshake into the listen backlog, accepted or not;
        // once the backlog is full it drops the SYN, and the attacker has all it can get.
        match tokio::time::timeout(Duration::from_secs(1), socket.connect(addr)).await {
            Ok(stream) => held.push(stream.context("connecting")?),
            Err(_) => {
                queue_full = true;
                break;
            }
        }
    }
    let opened_s = opening.elapsed().as_secs_f64();
    let queue = if queue_full {
        " (then the listen queue was full: no handshake within 1 s)".to_owned()
    } else {
        String::new()
    };
    let body = serde_json::json!({ "query": SIMPLE }).to_string();
    let started = Instant::now();
    let answer = ask(
        &Client::fresh_connections(),
        Method::POST,
        &target.graphql,
        Some(body.into()),
        wait,
    )
    .await;
    let wall_s = started.elapsed().as_secs_f64();
    let closed = held.iter().filter(|s| closed_by_peer(s)).count();
    let (answer, codes) = match &answer {
        Ok(a) => (a.describe(), a.codes().join(", ")),
        Err(e) if e.starts_with("no answer") => ("timeout".to_owned(), String::new()),
        Err(_) => ("failed".to_owned(), String::new()),
    };
    Ok(Outcome {
        wall_s,
        answer,
        codes: if codes.is_empty() {
            "—".into()
        } else {
            codes
        },
        note: format!(
            "{} of {connections} silent connections from 127.0.0.2 opened in {opened_s:.2} s{queue}, {closed} of them closed by the gateway by the end of the query; wall is the query's",
            held.len()
        ),
    })
}

/// Whether the peer has closed `stream` (end of stream or an error waiting to be read).
fn closed_by_peer(stream: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match stream.try_read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}
