//! Big buffers kept for the next request. A ~8 MiB subgraph body, response or list
//! arena put in memory fresh from the OS costs a page fault per 4 KiB (or a 2 MiB page
//! to clear) on every request: with mimalloc that was a fifth of the CPU of the big
//! benchmark response. A buffer given back here is handed to the next request as it
//! is, its pages already resident.
//!
//! Bounded: at most [`MAX_KEPT`] buffers of each kind and [`MAX_KEPT_BYTES`] together,
//! and a buffer nobody took for [`IDLE`] is freed at the next use of its pool.

use crate::memory::Charge;
use bytes::Bytes;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Smaller buffers come from the allocator, which keeps such sizes warm itself.
const MIN_KEPT_BYTES: usize = 256 * 1024;
/// Buffers each pool keeps at most.
const MAX_KEPT: usize = 4;
/// Bytes each pool keeps at most (a larger buffer is freed when given back).
const MAX_KEPT_BYTES: usize = 32 * 1024 * 1024;
/// A buffer kept longer than this without being taken is freed.
const IDLE: Duration = Duration::from_secs(10);

/// Kept buffers of `T`, with when each was given back.
pub struct Pool<T> {
    kept: Mutex<Vec<(Vec<T>, Instant)>>,
}

impl<T> Pool<T> {
    pub const fn new() -> Self {
        Self {
            kept: Mutex::new(Vec::new()),
        }
    }

    fn bytes(buf: &Vec<T>) -> usize {
        buf.capacity() * std::mem::size_of::<T>()
    }

    /// An empty buffer with room for `len` items: a kept one when one is large enough
    /// (the smallest such), else a new one.
    pub fn take(&self, len: usize) -> Vec<T> {
        if len * std::mem::size_of::<T>() >= MIN_KEPT_BYTES {
            let found = self.take_kept(|kept| {
                kept.iter()
                    .enumerate()
                    .filter(|(_, (b, _))| b.capacity() >= len)
                    .min_by_key(|(_, (b, _))| b.capacity())
                    .map(|(i, _)| i)
            });
            if let Some(buf) = found {
                return buf;
            }
        }
        Vec::with_capacity(len)
    }

    /// Frees idle buffers, then removes and returns the one `pick` names. Stale buffers
    /// are freed after the lock is released.
    fn take_kept(
        &self,
        pick: impl FnOnce(&[(Vec<T>, Instant)]) -> Option<usize>,
    ) -> Option<Vec<T>> {
        let mut stale = Vec::new();
        let found = {
            let mut kept = self.lock();
            Self::drop_idle(&mut kept, &mut stale);
            pick(&kept).map(|i| kept.swap_remove(i).0)
        };
        drop(stale);
        found
    }

    /// `buf`'s memory for a later [`Pool::take`]; freed instead when it is small, too
    /// large, or the pool is full (then the smallest kept buffers go first).
    pub fn give(&self, mut buf: Vec<T>) {
        let bytes = Self::bytes(&buf);
        if !(MIN_KEPT_BYTES..=MAX_KEPT_BYTES).contains(&bytes) {
            return;
        }
        buf.clear();
        // Freed after the lock is released.
        let mut stale = Vec::new();
        {
            let mut kept = self.lock();
            Self::drop_idle(&mut kept, &mut stale);
            kept.push((buf, Instant::now()));
            let mut total: usize = kept.iter().map(|(b, _)| Self::bytes(b)).sum();
            while kept.len() > MAX_KEPT || total > MAX_KEPT_BYTES {
                let smallest = kept
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, (b, _))| b.capacity())
                    .map(|(i, _)| i)
                    .expect("over the bounds, so not empty");
                let (buf, _) = kept.swap_remove(smallest);
                total -= Self::bytes(&buf);
                stale.push(buf);
            }
        }
        drop(stale);
    }

    fn drop_idle(kept: &mut Vec<(Vec<T>, Instant)>, stale: &mut Vec<Vec<T>>) {
        let now = Instant::now();
        let mut i = 0;
        while i < kept.len() {
            if now.duration_since(kept[i].1) > IDLE {
                stale.push(kept.swap_remove(i).0);
            } else {
                i += 1;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Vec<T>, Instant)>> {
        // A panic elsewhere while holding it leaves a valid list of buffers.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many buffers are kept (tests).
    pub fn kept(&self) -> usize {
        self.lock().len()
    }
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Subgraph bodies and response bodies.
pub static BYTES: Pool<u8> = Pool::new();

/// `buf` as `Bytes` that give their memory back to [`BYTES`] when the last clone is
/// dropped (a big buffer; a small one is simply freed).
pub fn into_bytes(buf: Vec<u8>) -> Bytes {
    into_bytes_for(&BYTES, buf)
}

/// [`into_bytes`] holding `charge` (against the memory budget) until the last clone is
/// dropped: the charge lives exactly as long as the memory it stands for.
pub fn into_charged_bytes(buf: Vec<u8>, charge: Charge) -> Bytes {
    Bytes::from_owner(Kept {
        buf,
        pool: &BYTES,
        _charge: Some(charge),
    })
}

/// `bytes` holding `charge` until the last clone is dropped.
pub fn charged(bytes: Bytes, charge: Charge) -> Bytes {
    if bytes.is_empty() {
        return bytes;
    }
    Bytes::from_owner(Charged {
        bytes,
        _charge: charge,
    })
}

struct Charged {
    bytes: Bytes,
    _charge: Charge,
}

impl AsRef<[u8]> for Charged {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

fn into_bytes_for(pool: &'static Pool<u8>, buf: Vec<u8>) -> Bytes {
    if buf.capacity() < MIN_KEPT_BYTES {
        return Bytes::from(buf);
    }
    Bytes::from_owner(Kept {
        buf,
        pool,
        _charge: None,
    })
}

/// A buffer going back to its pool when dropped (then its charge, if any, is released).
struct Kept {
    buf: Vec<u8>,
    pool: &'static Pool<u8>,
    _charge: Option<Charge>,
}

impl AsRef<[u8]> for Kept {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_buffers_are_reused_small_ones_are_not() {
        let pool: Pool<u8> = Pool::new();
        let mut big = pool.take(MIN_KEPT_BYTES);
        big.extend_from_slice(b"left over");
        let address = big.as_ptr();
        pool.give(big);
        assert_eq!(pool.kept(), 1);
        let again = pool.take(MIN_KEPT_BYTES);
        assert!(again.is_empty(), "handed out cleared");
        assert_eq!(again.as_ptr(), address, "the same memory");
        pool.give(Vec::with_capacity(1024));
        pool.give(Vec::with_capacity(MAX_KEPT_BYTES + 1));
        assert_eq!(pool.kept(), 0, "small and oversized buffers are freed");
        // A request smaller than the threshold never takes a kept buffer.
        pool.give(again);
        assert_eq!(pool.take(100).capacity(), 100);
        assert_eq!(pool.kept(), 1);
    }

    #[test]
    fn the_pool_is_bounded() {
        let pool: Pool<u8> = Pool::new();
        for _ in 0..MAX_KEPT + 3 {
            pool.give(Vec::with_capacity(MIN_KEPT_BYTES));
        }
        assert_eq!(pool.kept(), MAX_KEPT);
        let big = MAX_KEPT_BYTES / 2;
        pool.give(Vec::with_capacity(big));
        pool.give(Vec::with_capacity(big));
        let kept = pool.lock();
        let total: usize = kept.iter().map(|(b, _)| b.capacity()).sum();
        assert!(total <= MAX_KEPT_BYTES, "{total}");
        assert!(
            kept.iter().filter(|(b, _)| b.capacity() >= big).count() == 2,
            "the smallest went first"
        );
    }

    #[test]
    fn bytes_give_their_buffer_back_when_dropped() {
        static POOL: Pool<u8> = Pool::new();
        let mut buf = POOL.take(MIN_KEPT_BYTES * 3);
        buf.extend_from_slice(b"{\"data\":{}}");
        let address = buf.as_ptr();
        let bytes = into_bytes_for(&POOL, buf);
        let clone = bytes.clone();
        drop(bytes);
        assert_eq!(&clone[..], b"{\"data\":{}}");
        assert_eq!(POOL.kept(), 0, "still in use");
        drop(clone);
        let back = POOL.take(MIN_KEPT_BYTES);
        assert_eq!(back.as_ptr(), address, "given back");
        drop(back);
        let budget = crate::memory::MemoryBudget::unlimited();
        let charge = budget.charge();
        charge.try_add(2).expect("unlimited");
        let charged = into_charged_bytes(b"{}".to_vec(), charge);
        let clone = charged.clone();
        drop(charged);
        assert_eq!(budget.held(), 2, "held while a clone is");
        drop(clone);
        assert_eq!(budget.held(), 0, "released with the last clone");
        let small = into_bytes_for(&POOL, b"{}".to_vec());
        assert_eq!(&small[..], b"{}");
        drop(small);
        assert_eq!(POOL.kept(), 0);
    }
}
