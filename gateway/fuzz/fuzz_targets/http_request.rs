//! Arbitrary bytes as a raw HTTP/1.1 connection into the gateway's hyper service over
//! an in-memory duplex; subgraphs are in-process (no network). Any panic, or a reply
//! that is not HTTP, is a bug.
#![no_main]

use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway_fuzz::{InProcess, gateway};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, LazyLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

static GATEWAY: LazyLock<Arc<Gateway<InProcess>>> = LazyLock::new(|| Arc::new(gateway()));
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
});

fuzz_target!(|data: &[u8]| {
    let response = RUNTIME.block_on(async {
        let (mut client, server) = tokio::io::duplex(256 * 1024);
        let gateway = GATEWAY.clone();
        let service = service_fn(move |req| {
            let gateway = gateway.clone();
            async move {
                let reply = graphfleet_gateway::http::handle(&gateway, req).await;
                Ok::<_, std::convert::Infallible>(reply)
            }
        });
        let connection = tokio::spawn(
            hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(server), service),
        );
        client
            .write_all(data)
            .await
            .expect("the duplex accepts the request");
        client.shutdown().await.expect("half-close the duplex");
        let mut response = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), client.read_to_end(&mut response));
        read.await
            .expect("the connection ends")
            .expect("reading the duplex");
        let _ = connection.await;
        response
    });
    assert!(
        response.is_empty() || response.starts_with(b"HTTP/1."),
        "{:?}",
        String::from_utf8_lossy(&response)
    );
});
