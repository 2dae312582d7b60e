//! The merge path: subgraph answers to entity fetches (`_entities`) come from the input,
//! every other fetch from the in-process fed subgraphs, for operations that fan one
//! entity answer out into many objects (the entity fan-out amplification of issue 33).
//! The first byte picks the operation; the rest, split at 0xFF bytes, are the bodies of
//! the successive entity fetches (a fetch past the last part gets the real subgraph's
//! answer). Under a 256 KiB response budget, a panic, a body that is not a JSON object,
//! or a body over the budget is a finding.
#![no_main]

use bytes::Bytes;
use graphfleet_gateway::executor::transport::{FetchError, Fetched, SubgraphRequest, Transport};
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::pipeline::request::{GraphQLRequest, RequestMeta};
use graphfleet_gateway_fuzz::{InProcess, fed_subgraphs, strict_config, supergraph};
use libfuzzer_sys::fuzz_target;
use std::collections::VecDeque;
use std::sync::{Arc, LazyLock, Mutex};

const BUDGET: usize = 256 * 1024;

/// Operations whose entity answers are copied into many objects, aliased and nested.
const OPERATIONS: &[&str] = &[
    "{ topProducts { upc reviews { body author { id name username } } } }",
    "{ topProducts(first: 50) { reviews { author { reviews { product { name price } } } } } }",
    "{ me { reviews { product { upc name weight inStock shippingEstimate } } } }",
    "{ topProducts { reviews { author { a: name b: name c: name d: username e: username } } } }",
    "{ users { reviews { product { reviews { author { name } } } } } }",
    "{ topProducts { ... on Product { inStock reviews { author { ... on User { name } } } } } }",
];

/// Entity answers scripted by the input, the rest by the real subgraphs.
struct Scripted {
    real: InProcess,
    answers: Arc<Mutex<VecDeque<Bytes>>>,
}

impl Transport for Scripted {
    async fn fetch(&self, request: SubgraphRequest<'_>) -> Result<Fetched, FetchError> {
        let entities = request.body.windows(10).any(|w| w == b"_entities\"" || w == b"_entities(");
        if entities {
            let next = self.answers.lock().expect("the answers lock").pop_front();
            if let Some(body) = next {
                // As the HTTP transport does: a body past what is left of the budget is
                // not read.
                if body.len() > request.budget_bytes {
                    return Err(FetchError {
                        code: FetchError::REQUEST_RESPONSE_TOO_LARGE,
                        message: format!("{} bytes over the budget", body.len()),
                    });
                }
                return Ok(body.into());
            }
        }
        self.real.fetch(request).await
    }
}

static ANSWERS: LazyLock<Arc<Mutex<VecDeque<Bytes>>>> = LazyLock::new(Arc::default);
static GATEWAY: LazyLock<Gateway<Scripted>> = LazyLock::new(|| {
    let mut config = strict_config();
    config.limits.max_response_bytes = BUDGET;
    let transport = Scripted {
        real: fed_subgraphs(),
        answers: ANSWERS.clone(),
    };
    Gateway::with_transport(Arc::new(config), supergraph(), transport)
});
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
});

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let query = OPERATIONS[usize::from(pick) % OPERATIONS.len()];
    {
        let mut answers = ANSWERS.lock().expect("the answers lock");
        answers.clear();
        if !rest.is_empty() {
            answers.extend(rest.split(|b| *b == 0xFF).map(Bytes::copy_from_slice));
        }
    }
    let request = GraphQLRequest {
        query: Some(query.to_owned()),
        ..GraphQLRequest::default()
    };
    let outcome = RUNTIME.block_on(GATEWAY.execute(&request, &RequestMeta::default()));
    let body = outcome.body();
    assert!(body.len() <= BUDGET, "{} bytes answered under a {BUDGET} byte budget", body.len());
    let json: serde_json::Value =
        serde_json::from_slice(body).expect("the gateway always answers JSON");
    assert!(json.is_object());
});
