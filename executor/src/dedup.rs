//! In-flight deduplication: identical concurrent subgraph requests (same subgraph, URL,
//! body bytes and forwarded headers) share one HTTP call. The first caller (the leader)
//! registers the call; callers arriving while it runs await the same result. The
//! entry goes away when the leader finishes or is cancelled, so nothing is cached.

use crate::error::FetchError;
use bytes::Bytes;
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What makes two subgraph requests interchangeable. Headers are part of it, so
/// requests with different `Authorization` are never merged; so is the subgraph's name,
/// so two subgraphs at one URL with different TLS identities never share a call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DedupKey {
    subgraph: String,
    url: String,
    body: Bytes,
    /// (lower-case name, value), sorted: header order does not matter.
    headers: Vec<(String, Vec<u8>)>,
    /// The answer keeps its response headers: a call that drops them cannot serve a
    /// request that needs them.
    keep_headers: bool,
}

impl DedupKey {
    pub fn new(subgraph: &str, url: &str, body: &Bytes, headers: &http::HeaderMap) -> Self {
        let mut headers: Vec<(String, Vec<u8>)> = headers
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
            .collect();
        headers.sort();
        Self {
            subgraph: subgraph.to_owned(),
            url: url.to_owned(),
            body: body.clone(),
            headers,
            keep_headers: false,
        }
    }

    /// The same key for a call that keeps (or drops) its response headers.
    pub fn keeping_headers(mut self, keep: bool) -> Self {
        self.keep_headers = keep;
        self
    }
}

type SharedCall<T> = Shared<BoxFuture<'static, Result<T, FetchError>>>;

struct Table<T> {
    calls: Mutex<FxHashMap<DedupKey, (u64, SharedCall<T>)>>,
    next_id: AtomicU64,
}

/// The table of calls in flight (each answering a `T`); clones share it.
pub struct InFlight<T>(Arc<Table<T>>);

impl<T> Clone for InFlight<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> Default for InFlight<T> {
    fn default() -> Self {
        Self(Arc::new(Table {
            calls: Mutex::default(),
            next_id: AtomicU64::new(0),
        }))
    }
}

impl<T: Clone + Send + Sync + 'static> InFlight<T> {
    /// Run `call` unless an identical one is in flight; then await that one instead.
    pub async fn run<F>(&self, key: DedupKey, call: F) -> Result<T, FetchError>
    where
        F: Future<Output = Result<T, FetchError>> + Send + 'static,
    {
        let (shared, _leader) = {
            let mut calls = self.0.calls.lock();
            match calls.get(&key) {
                Some((_, shared)) => (shared.clone(), None),
                None => {
                    let id = self.0.next_id.fetch_add(1, Ordering::Relaxed);
                    let shared = call.boxed().shared();
                    calls.insert(key.clone(), (id, shared.clone()));
                    let leader = Leader {
                        table: self.0.clone(),
                        key,
                        id,
                    };
                    (shared, Some(leader))
                }
            }
        };
        shared.await
    }

    /// Calls currently in flight.
    pub fn len(&self) -> usize {
        self.0.calls.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Removes the leader's entry when the leader completes or is dropped.
struct Leader<T> {
    table: Arc<Table<T>>,
    key: DedupKey,
    id: u64,
}

impl<T> Drop for Leader<T> {
    fn drop(&mut self) {
        let mut calls = self.table.calls.lock();
        // A newer leader may have registered the same key after a cancellation.
        if calls.get(&self.key).is_some_and(|(id, _)| *id == self.id) {
            calls.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    fn key(auth: &str) -> DedupKey {
        key_of("sg", auth)
    }

    fn key_of(subgraph: &str, auth: &str) -> DedupKey {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "authorization",
            http::HeaderValue::from_str(auth).expect("ASCII"),
        );
        DedupKey::new(subgraph, "http://sg", &Bytes::from_static(b"{}"), &headers)
    }

    fn counted(
        calls: &Arc<AtomicUsize>,
        result: Result<Bytes, FetchError>,
    ) -> impl Future<Output = Result<Bytes, FetchError>> + Send + 'static {
        let calls = calls.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
            result
        }
    }

    #[tokio::test]
    async fn followers_share_the_leaders_result_and_error() {
        let table = InFlight::default();
        let calls = Arc::new(AtomicUsize::new(0));
        let ok = Ok(Bytes::from_static(b"1"));
        let (a, b, c) = tokio::join!(
            table.run(key("x"), counted(&calls, ok.clone())),
            table.run(key("x"), counted(&calls, ok.clone())),
            table.run(key("y"), counted(&calls, ok.clone())),
        );
        assert_eq!((a, b, c), (ok.clone(), ok.clone(), ok));
        assert_eq!(calls.load(Ordering::SeqCst), 2, "x shared, y separate");
        assert!(table.is_empty(), "entries removed on completion");

        let err = Err(FetchError::http("boom"));
        let (a, b) = tokio::join!(
            table.run(key("x"), counted(&calls, err.clone())),
            table.run(key("x"), counted(&calls, Ok(Bytes::new()))),
        );
        assert_eq!((a, b), (err.clone(), err));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn nothing_is_cached_after_completion() {
        let table = InFlight::default();
        let calls = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let r = table.run(key("x"), counted(&calls, Ok(Bytes::new()))).await;
            assert!(r.is_ok());
        }
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn subgraphs_at_one_url_never_share() {
        let table = InFlight::default();
        let calls = Arc::new(AtomicUsize::new(0));
        let ok = Ok(Bytes::from_static(b"1"));
        let (a, b) = tokio::join!(
            table.run(key_of("a", "x"), counted(&calls, ok.clone())),
            table.run(key_of("b", "x"), counted(&calls, ok.clone())),
        );
        assert_eq!((a, b), (ok.clone(), ok));
        assert_eq!(calls.load(Ordering::SeqCst), 2, "one call per subgraph");
    }
}
