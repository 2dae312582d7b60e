//! CPU per request with the plan cached and subgraph responses replayed from recorded
//! bytes, against the floor: decoding those responses plus encoding the final JSON once;
//! and the plan cache hit on its own. Two operations: the fed TestQuery (`test_query`)
//! and the ~8 MiB big-response query (`big_response`), where JSON work dominates.

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use graphfleet_gateway::executor::transport::{
    FetchError, HttpTransport, SubgraphRequest, Transport,
};
use graphfleet_gateway::gateway::{Gateway, GraphQLRequest, RequestMeta};
use graphfleet_gateway::supergraph::Supergraph;
use graphfleet_loadtest::{Mode, Options, Set, spawn};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::hint::black_box;
use std::sync::Arc;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Forwards to real subgraphs and keeps every (request, response) pair.
#[derive(Clone)]
struct Recorder {
    http: HttpTransport,
    seen: Arc<Mutex<Vec<(Bytes, Bytes)>>>,
}

impl Transport for Recorder {
    async fn fetch(&self, request: SubgraphRequest<'_>) -> Result<Bytes, FetchError> {
        let body = request.body.clone();
        let response = self.http.fetch(request).await?;
        self.seen.lock().push((body, response.clone()));
        Ok(response)
    }
}

/// Answers from recorded bytes; no I/O.
struct Replay(FxHashMap<Bytes, Bytes>);

impl Transport for Replay {
    async fn fetch(&self, request: SubgraphRequest<'_>) -> Result<Bytes, FetchError> {
        self.0
            .get(&request.body)
            .cloned()
            .ok_or_else(|| FetchError::http("request not recorded"))
    }
}

fn bench(c: &mut Criterion) {
    scenario(c, "test_query", Set::Fed, "fed/queries/query.graphql");
    scenario(
        c,
        "big_response",
        Set::BigResponse,
        "big-response/queries/big-response.graphql",
    );
}

/// Benchmarks `group`: the query at `query_path` (under loadtest/sets/) on `set`.
fn scenario(c: &mut Criterion, group: &str, set: Set, query_path: &str) {
    let path = format!(
        "{}/../loadtest/sets/{query_path}",
        env!("CARGO_MANIFEST_DIR")
    );
    let query = std::fs::read_to_string(&path).expect("the scenario's query exists");
    let post = RequestMeta {
        allow_mutation: true,
        ..RequestMeta::default()
    };
    let request = GraphQLRequest {
        query: Some(query),
        ..Default::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");

    // Record the subgraph traffic of one real execution.
    let (recorded, expected) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let subgraphs =
            spawn(set, Mode::Subgraphs, listener, Options::default()).expect("subgraphs");
        let text = set
            .supergraph()
            .replace("http://127.0.0.1:4200", &subgraphs.base_url());
        let recorder = Recorder {
            http: graphfleet_gateway::config::Config::default().transport(),
            seen: Arc::default(),
        };
        let gateway = Gateway::with_transport(
            Default::default(),
            Supergraph::parse(&text).expect("supergraph"),
            recorder.clone(),
        );
        let body = gateway.execute(&request, &post).await.body().to_vec();
        subgraphs.shutdown().await;
        let seen = recorder.seen.lock().clone();
        (seen, body)
    });
    println!(
        "{group}: {} subgraph requests, {} response bytes from subgraphs, {} bytes final",
        recorded.len(),
        recorded.iter().map(|(_, r)| r.len()).sum::<usize>(),
        expected.len()
    );

    let gateway = Gateway::with_transport(
        Default::default(),
        Supergraph::parse(set.supergraph()).expect("supergraph"),
        Replay(recorded.iter().cloned().collect()),
    );
    let check = rt.block_on(gateway.execute(&request, &post));
    assert_eq!(
        check.body(),
        expected.as_slice(),
        "replay reproduces the response"
    );

    let mut group = c.benchmark_group(group);
    group.bench_function("gateway", |b| {
        b.iter(|| black_box(rt.block_on(gateway.execute(black_box(&request), &post))))
    });
    // The plan cache hit alone (key hashing + lookup), which `gateway` includes.
    let state = gateway.state().expect("loaded");
    let text = request.query.as_deref().expect("query");
    group.bench_function("prepare_hit", |b| {
        b.iter(|| black_box(state.prepare(black_box(text), None).is_ok()))
    });
    let final_value: serde_json::Value =
        serde_json::from_slice(&expected).expect("final response is JSON");
    group.bench_function("floor", |b| {
        b.iter(|| {
            for (_, response) in &recorded {
                let v: serde_json::Value =
                    serde_json::from_slice(black_box(response)).expect("recorded JSON");
                black_box(v);
            }
            black_box(serde_json::to_vec(black_box(&final_value)).expect("encode"))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
