//! Arbitrary client messages (the input split at 0xFF bytes, each sent as one text
//! message) into the gateway's graphql-transport-ws server over an in-memory stream;
//! subgraphs are in-process for queries (subscriptions find no subgraph socket on
//! loopback and end with an error). A panic anywhere, in the connection or in an
//! operation's task, is a finding: the panic hook aborts.
#![no_main]

use futures::{SinkExt, StreamExt};
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::pipeline::request::RequestMeta;
use graphfleet_gateway_fuzz::{InProcess, gateway};
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, LazyLock};
use std::time::Duration;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

static GATEWAY: LazyLock<Arc<Gateway<InProcess>>> = LazyLock::new(|| {
    // Operations run in tasks of their own, whose panics tokio would otherwise catch.
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        std::process::abort();
    }));
    Arc::new(gateway())
});
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
});

fuzz_target!(|data: &[u8]| {
    RUNTIME.block_on(async {
        let (client, server) = tokio::io::duplex(256 * 1024);
        let gateway = GATEWAY.clone();
        let meta = RequestMeta {
            allow_mutation: true,
            stream: true,
            ..RequestMeta::default()
        };
        let served = tokio::spawn(async move {
            let socket = WebSocketStream::from_raw_socket(server, Role::Server, None).await;
            graphfleet_gateway::http::serve_socket(gateway, socket, meta).await;
        });
        let mut client = WebSocketStream::from_raw_socket(client, Role::Client, None).await;
        for message in data.split(|b| *b == 0xff) {
            let text = String::from_utf8_lossy(message).into_owned();
            if client.send(Message::text(text)).await.is_err() {
                break;
            }
        }
        // What the gateway answers, for a bounded time; then the client leaves.
        let replies = async { while let Some(Ok(_)) = client.next().await {} };
        let _ = tokio::time::timeout(Duration::from_millis(300), replies).await;
        drop(client);
        served.await.expect("the connection's task does not panic");
    });
});
