//! Subgraph server throughput: the servers must never be a gateway benchmark's
//! bottleneck (target: >= 20k fed entity requests/s on one core).
//!
//! - `handler/*`: the request handler in-process (parse, cached plan, execute, serialize).
//! - `http/*`: entity requests over one keep-alive loopback HTTP/1.1 connection, client
//!   and server sharing ONE current-thread runtime (so one core does both sides).

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::engine::Endpoint;
use graphfleet_bench_subgraphs::sets::{monolith_endpoint, subgraph_endpoints};
use graphfleet_bench_subgraphs::{Mode, Options, spawn};
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::json;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What a gateway sends the inventory subgraph for the TestQuery's top products.
fn inventory_request() -> Vec<u8> {
    let reps: Vec<_> = (1..=9)
        .map(|upc| json!({ "__typename": "Product", "upc": upc.to_string(), "price": 899, "weight": 100 }))
        .collect();
    serde_json::to_vec(&json!({
        "query": "query($representations:[_Any!]!){_entities(representations:$representations){...on Product{inStock shippingEstimate}}}",
        "variables": { "representations": reps },
    }))
    .expect("serializable request")
}

/// What a gateway sends the reviews subgraph for the TestQuery's users.
fn reviews_request() -> Vec<u8> {
    let reps: Vec<_> = (1..=6)
        .map(|id| json!({ "__typename": "User", "id": id.to_string() }))
        .collect();
    serde_json::to_vec(&json!({
        "query": "query($representations:[_Any!]!){_entities(representations:$representations){...on User{reviews{id body product{__typename upc}}}}}",
        "variables": { "representations": reps },
    }))
    .expect("serializable request")
}

fn endpoint(set: Set, name: &str) -> Endpoint {
    subgraph_endpoints(set)
        .expect("the set's schemas are valid")
        .into_iter()
        .find(|e| e.name() == name)
        .expect("the subgraph exists")
}

fn handler(c: &mut Criterion) {
    let mut group = c.benchmark_group("handler");
    group.throughput(Throughput::Elements(1));
    for (name, endpoint, body) in [
        (
            "fed_inventory_entities",
            endpoint(Set::Fed, "inventory"),
            inventory_request(),
        ),
        (
            "fed_reviews_entities",
            endpoint(Set::Fed, "reviews"),
            reviews_request(),
        ),
    ] {
        assert_eq!(endpoint.handle(&body).status, 200);
        group.bench_function(name, |b| {
            b.iter(|| black_box(endpoint.handle(black_box(&body))))
        });
    }
    let monolith = monolith_endpoint(Set::Fed).expect("fed monolith");
    let test_query = serde_json::to_vec(&json!({
        "query": include_str!("../../sets/fed/queries/query.graphql"),
    }))
    .expect("serializable request");
    group.bench_function("fed_monolith_test_query", |b| {
        b.iter(|| black_box(monolith.handle(black_box(&test_query))))
    });
    group.finish();

    let mut group = c.benchmark_group("handler_big");
    group.sample_size(10);
    let big = monolith_endpoint(Set::BigResponse).expect("big-response monolith");
    let query = serde_json::to_vec(&json!({
        "query": include_str!("../../sets/big-response/queries/big-response.graphql"),
    }))
    .expect("serializable request");
    let size = big.handle(&query).body.len();
    group.throughput(Throughput::Bytes(size as u64));
    group.bench_function("big_response_monolith", |b| {
        b.iter(|| black_box(big.handle(black_box(&query))))
    });
    group.finish();
}

/// Requests per iteration over the keep-alive connection.
const BATCH: u64 = 100;

fn http(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (server, mut sender) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let server =
            spawn(Set::Fed, Mode::Subgraphs, listener, Options::default()).expect("serve fed");
        let stream = tokio::net::TcpStream::connect(server.addr())
            .await
            .expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(connection);
        (server, sender)
    });
    let url = format!("{}/inventory", server.base_url());
    let body = Bytes::from(inventory_request());

    let mut group = c.benchmark_group("http");
    group.throughput(Throughput::Elements(BATCH));
    group.bench_function("fed_inventory_entities_keepalive_1core", |b| {
        b.iter(|| {
            rt.block_on(async {
                for _ in 0..BATCH {
                    let request = Request::post(&url)
                        .header("content-type", "application/json")
                        .body(Full::new(body.clone()))
                        .expect("request");
                    let response = sender.send_request(request).await.expect("response");
                    assert_eq!(response.status(), 200);
                    let bytes = response
                        .into_body()
                        .collect()
                        .await
                        .expect("body")
                        .to_bytes();
                    black_box(bytes);
                }
            })
        })
    });
    group.finish();
    drop(sender);
    rt.block_on(server.shutdown());
}

/// The server alone on one thread (its own current-thread runtime, i.e. one core),
/// driven by clients on this thread over `CONNECTIONS` keep-alive connections.
const CONNECTIONS: u64 = 4;

fn http_server_one_thread(c: &mut Criterion) {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("server runtime");
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind loopback");
            let handle =
                spawn(Set::Fed, Mode::Subgraphs, listener, Options::default()).expect("serve fed");
            addr_tx.send(handle.addr()).expect("report the address");
            let _ = stop_rx.await;
            handle.shutdown().await;
        });
    });
    let addr = addr_rx.recv().expect("server address");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    let mut senders = rt.block_on(async {
        let mut senders = Vec::new();
        for _ in 0..CONNECTIONS {
            let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .expect("handshake");
            tokio::spawn(connection);
            senders.push(sender);
        }
        senders
    });
    let url = format!("http://{addr}/inventory");
    let body = Bytes::from(inventory_request());
    let mut group = c.benchmark_group("http");
    group.throughput(Throughput::Elements(BATCH));
    group.bench_function("fed_inventory_entities_server_1thread", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut tasks = tokio::task::JoinSet::new();
                for mut sender in std::mem::take(&mut senders) {
                    let (url, body) = (url.clone(), body.clone());
                    tasks.spawn(async move {
                        for _ in 0..BATCH / CONNECTIONS {
                            let request = Request::post(&url)
                                .header("content-type", "application/json")
                                .body(Full::new(body.clone()))
                                .expect("request");
                            sender.ready().await.expect("connection ready");
                            let response = sender.send_request(request).await.expect("response");
                            assert_eq!(response.status(), 200);
                            black_box(
                                response
                                    .into_body()
                                    .collect()
                                    .await
                                    .expect("body")
                                    .to_bytes(),
                            );
                        }
                        sender
                    });
                }
                while let Some(done) = tasks.join_next().await {
                    senders.push(done.expect("client task"));
                }
            })
        })
    });
    group.finish();
    drop(senders);
    let _ = stop_tx.send(());
    server.join().expect("server thread");
}

criterion_group!(benches, handler, http, http_server_one_thread);
criterion_main!(benches);
