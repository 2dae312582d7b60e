//! Idle limit for client connections: a kept-alive connection with no request in
//! flight and no bytes moving for `traffic.idle_timeout` is closed, so idle clients
//! cannot hold connection slots (`traffic.max_connections`) forever.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// What one connection is doing: requests in flight and when bytes last moved.
#[derive(Debug)]
pub struct Activity {
    start: Instant,
    /// Milliseconds after `start` when bytes last moved.
    last_ms: AtomicU64,
    in_flight: AtomicUsize,
    /// Whether a request has begun on the connection.
    asked: AtomicBool,
}

impl Activity {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            asked: AtomicBool::new(false),
        })
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }

    /// Count a request as in flight until the guard drops.
    pub fn request(self: &Arc<Self>) -> RequestGuard {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.asked.store(true, Ordering::Relaxed);
        RequestGuard(self.clone())
    }

    /// Resolves `limit` after the connection opened if no request has begun by then;
    /// never otherwise.
    pub async fn silent_for(&self, limit: Duration) {
        tokio::time::sleep_until(self.start + limit).await;
        if self.asked.load(Ordering::Relaxed) {
            std::future::pending::<()>().await;
        }
    }

    /// Resolves once the connection has been idle for `limit`.
    pub async fn idle_for(&self, limit: Duration) {
        loop {
            let deadline = self.last() + limit;
            tokio::time::sleep_until(deadline).await;
            let busy = self.in_flight.load(Ordering::Relaxed) > 0;
            if busy {
                // A request is being worked on (e.g. waiting on a subgraph): not idle.
                self.touch();
            } else if self.last() + limit <= Instant::now() {
                return;
            }
        }
    }
}

/// Decrements the in-flight count of its connection when dropped.
pub struct RequestGuard(Arc<Activity>);

impl RequestGuard {
    /// How long the request's connection has been open.
    pub fn age(&self) -> Duration {
        self.0.start.elapsed()
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An I/O stream that records when bytes move.
pub struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Tracked<S> {
    pub fn new(inner: S, activity: Arc<Activity>) -> Self {
        Self { inner, activity }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
