//! Supergraph hot reload.
//!
//! The file's parent directory is watched rather than the file: Kubernetes ConfigMap
//! volumes update by atomically re-pointing a `..data` symlink, which changes neither
//! the watched file's inode nor its name. Filesystem events can be missed (overlay
//! filesystems, events dropped under load), so the file is also re-read every
//! `poll_interval`; a content hash decides whether anything changed. (A file that is a
//! symlink into another directory is only seen changing by polling.)

use crate::lifecycle::Lifecycle;
use crate::supergraph::Supergraph;
use notify::Watcher as _;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Events closer together than this are one change (writers touch several files).
const SETTLE: Duration = Duration::from_millis(50);
/// Upper bound on waiting for a burst of events to settle.
const MAX_SETTLE: Duration = Duration::from_secs(1);

/// The bookkeeping lives with the rest of the process state; re-exported where it is made.
pub use crate::lifecycle::ReloadStatus;

/// What a [`Reloader`] loads supergraphs into (the gateway); a trait so this module
/// depends on nothing that serves requests.
pub trait ReloadTarget: Send + Sync {
    /// SHA-256 of the supergraph being served; `None` before the first load.
    fn served_hash(&self) -> Option<[u8; 32]>;
    /// Serve `supergraph` from the next request on.
    fn serve(&self, supergraph: Supergraph);
    /// Where loads and failures are counted.
    fn lifecycle(&self) -> &Lifecycle;
}

/// Loads the supergraph file into a [`ReloadTarget`] whenever its content changes.
pub struct Reloader {
    target: Arc<dyn ReloadTarget>,
    path: PathBuf,
    /// Hash of the last content tried (valid or not), so a bad file is reported once.
    last_seen: Option<[u8; 32]>,
    /// The last read error, so a missing file is reported once.
    last_read_error: Option<String>,
}

/// What one [`Reloader::check`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Check {
    Unchanged,
    Loaded,
    Failed,
}

impl Reloader {
    pub fn new<G: ReloadTarget + 'static>(target: Arc<G>, path: PathBuf) -> Self {
        Self {
            target,
            path,
            last_seen: None,
            last_read_error: None,
        }
    }

    /// Re-read the file; if its content changed and it loads, serve it from the next request on.
    pub fn check(&mut self) -> Check {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) => return self.read_failed(&e),
        };
        self.last_read_error = None;
        let hash: [u8; 32] = Sha256::digest(&bytes).into();
        if self.last_seen == Some(hash) {
            return Check::Unchanged;
        }
        self.last_seen = Some(hash);
        let loaded = std::str::from_utf8(&bytes)
            .map_err(|e| format!("supergraph file is not UTF-8: {e}"))
            .and_then(|text| Supergraph::parse(text).map_err(|e| e.to_string()));
        match loaded {
            Ok(supergraph) => {
                self.swap(supergraph);
                Check::Loaded
            }
            Err(error) => {
                let outcome = if self.target.served_hash().is_some() {
                    "supergraph reload failed, keeping the previous one"
                } else {
                    "supergraph load failed, waiting for a valid file"
                };
                tracing::error!(
                    path = %self.path.display(),
                    hash = &crate::supergraph::hex(&hash)[..12],
                    "{outcome}: {error}"
                );
                self.record_failure(error);
                Check::Failed
            }
        }
    }

    fn read_failed(&mut self, e: &std::io::Error) -> Check {
        let error = format!("cannot read supergraph file {}: {e}", self.path.display());
        if self.last_read_error.as_deref() == Some(error.as_str()) {
            return Check::Unchanged;
        }
        self.last_read_error = Some(error.clone());
        // The next readable content counts as a change even if it is the old one.
        self.last_seen = None;
        if self.target.served_hash().is_none() {
            tracing::warn!("{error}; waiting for it to appear");
        } else {
            tracing::error!("{error}; keeping the previous supergraph");
        }
        self.record_failure(error);
        Check::Failed
    }

    fn record_failure(&self, error: String) {
        self.target.lifecycle().record_reload_failure(error);
    }

    fn swap(&self, supergraph: Supergraph) {
        let first = self.target.served_hash().is_none();
        let hash = supergraph.hash_hex();
        let subgraphs = supergraph.meta.subgraphs.len();
        if self.target.served_hash() == Some(supergraph.hash) {
            // Same content as served (e.g. back after a bad or missing file): nothing to swap.
            return;
        }
        self.target.serve(supergraph);
        let status = self.target.lifecycle().record_loaded(hash, subgraphs);
        let verb = if first { "loaded" } else { "reloaded" };
        tracing::info!(
            path = %self.path.display(),
            "supergraph {verb} hash={} subgraphs={subgraphs}",
            status.short_hash()
        );
    }
}

/// Record a supergraph loaded outside a [`Reloader`] (start-up with `watch: false`).
pub fn record_initial(lifecycle: &Lifecycle, supergraph_hash: &[u8; 32], subgraphs: usize) {
    let status = lifecycle.record_loaded(crate::supergraph::hex(supergraph_hash), subgraphs);
    tracing::info!(
        "supergraph loaded hash={} subgraphs={subgraphs}",
        status.short_hash()
    );
}

/// A running watcher; dropping it stops the watch thread.
pub struct WatchHandle {
    _events: Option<notify::RecommendedWatcher>,
    /// Keeps the channel open when no filesystem watcher could be started.
    _fallback: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self._events.take();
        self._fallback.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Watch `reloader`'s file on a dedicated thread (parsing is CPU work that should not
/// stall request workers) until the handle is dropped.
pub fn watch(mut reloader: Reloader, poll_interval: Duration) -> std::io::Result<WatchHandle> {
    let path = reloader.path.clone();
    watch_file(&path, poll_interval, "supergraph", move || {
        reloader.check();
    })
}

/// Call `check` on a thread named after `what` whenever the directory of `path` changes,
/// and every `poll_interval`, until the handle is dropped (see the module comment).
pub fn watch_file(
    path: &Path,
    poll_interval: Duration,
    what: &str,
    mut check: impl FnMut() + Send + 'static,
) -> std::io::Result<WatchHandle> {
    let (tx, rx) = mpsc::channel::<()>();
    let (events, fallback) = match directory_watcher(path, tx.clone()) {
        Ok(w) => (Some(w), None),
        Err(e) => {
            tracing::warn!(
                path = %path.display(),
                "cannot watch the {what} directory ({e}); polling every {poll_interval:?} only"
            );
            (None, Some(tx.clone()))
        }
    };
    drop(tx);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = stop.clone();
    let poll_interval = poll_interval.max(Duration::from_millis(10));
    let thread = std::thread::Builder::new()
        .name(format!("{what}-watch"))
        .spawn(move || {
            loop {
                match rx.recv_timeout(poll_interval) {
                    Ok(()) => settle(&rx),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                if stopped.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                check();
            }
        })?;
    Ok(WatchHandle {
        _events: events,
        _fallback: fallback,
        thread: Some(thread),
        stop,
    })
}

/// Swallow the rest of a burst of events.
fn settle(rx: &mpsc::Receiver<()>) {
    let deadline = Instant::now() + MAX_SETTLE;
    while Instant::now() < deadline && rx.recv_timeout(SETTLE).is_ok() {}
}

fn directory_watcher(
    path: &Path,
    tx: mpsc::Sender<()>,
) -> notify::Result<notify::RecommendedWatcher> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Any event in the directory may be the file or its `..data` link: the hash decides.
        // Our own reads show up as access events: ignore those, or we would loop.
        if event.is_ok_and(|e| !matches!(e.kind, notify::EventKind::Access(_))) {
            let _ = tx.send(());
        }
    })?;
    watcher.watch(&dir, notify::RecursiveMode::NonRecursive)?;
    Ok(watcher)
}
