//! Large byte buffers kept for the next request: subgraph response bodies and the
//! responses written from them. A fresh multi-megabyte allocation costs a page fault
//! for every page it touches (the kernel zeroes each one), which profiles of the
//! big-response scenario put at about a fifth of its CPU; a buffer used before is
//! already mapped. Small buffers are left to the allocator, and the pool is bounded in
//! buffers and bytes, so what it keeps is a few requests' worth at most.

use bytes::Bytes;
use parking_lot::Mutex;

/// Buffers smaller than this are not kept: the allocator serves them from warm pages.
const MIN_KEPT: usize = 256 * 1024;
/// Buffers larger than this are not kept: rare, and each would hold a lot of memory.
const MAX_KEPT: usize = 32 * 1024 * 1024;
/// Most bytes of capacity kept at once.
const MAX_TOTAL: usize = 96 * 1024 * 1024;
/// Most buffers kept at once.
const MAX_BUFFERS: usize = 16;

struct Pool {
    kept: Vec<Vec<u8>>,
    total: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    kept: Vec::new(),
    total: 0,
});

/// An empty buffer with at least `capacity` bytes of room: a kept one when one is large
/// enough (the smallest such), else a new one.
pub fn take(capacity: usize) -> Vec<u8> {
    if capacity >= MIN_KEPT {
        let mut pool = POOL.lock();
        let best = pool
            .kept
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= capacity)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i);
        if let Some(i) = best {
            let buf = pool.kept.swap_remove(i);
            pool.total -= buf.capacity();
            return buf;
        }
    }
    Vec::with_capacity(capacity)
}

/// Keep `buf` for a later [`take`] if it is worth keeping and there is room; when the
/// pool is full a larger buffer replaces its smallest.
pub fn give(mut buf: Vec<u8>) {
    let size = buf.capacity();
    if !(MIN_KEPT..=MAX_KEPT).contains(&size) {
        return;
    }
    buf.clear();
    let mut pool = POOL.lock();
    while pool.kept.len() >= MAX_BUFFERS || pool.total + size > MAX_TOTAL {
        let Some((i, smallest)) = pool
            .kept
            .iter()
            .enumerate()
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, b)| (i, b.capacity()))
        else {
            return;
        };
        if smallest >= size {
            return;
        }
        pool.kept.swap_remove(i);
        pool.total -= smallest;
    }
    pool.total += size;
    pool.kept.push(buf);
}

/// A buffer that goes back to the pool when dropped.
struct Returning(Vec<u8>);

impl AsRef<[u8]> for Returning {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Returning {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.0));
    }
}

/// `buf` as [`Bytes`] that give the buffer back to the pool once the last clone is
/// dropped (after the response is sent, or the store holding a body is dropped).
pub fn into_bytes(buf: Vec<u8>) -> Bytes {
    if buf.capacity() < MIN_KEPT {
        return Bytes::from(buf);
    }
    Bytes::from_owner(Returning(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool is process-wide: these tests take turns.
    static TURN: Mutex<()> = Mutex::new(());

    fn empty_pool() {
        let mut pool = POOL.lock();
        pool.kept.clear();
        pool.total = 0;
    }

    #[test]
    fn a_given_buffer_is_taken_again_with_its_pages() {
        let _turn = TURN.lock();
        empty_pool();
        let mut buf = take(3 * MIN_KEPT + 11);
        buf.extend_from_slice(b"old contents");
        let ptr = buf.as_ptr();
        let bytes = into_bytes(buf);
        assert_eq!(&bytes[..], b"old contents");
        let clone = bytes.clone();
        drop(bytes);
        drop(clone);
        let again = take(3 * MIN_KEPT + 11);
        assert_eq!(again.as_ptr(), ptr, "the same allocation comes back");
        assert!(again.is_empty(), "and it is empty");
    }

    #[test]
    fn small_and_huge_buffers_are_not_kept() {
        let _turn = TURN.lock();
        empty_pool();
        let kept = || POOL.lock().kept.len();
        let before = kept();
        give(Vec::with_capacity(MIN_KEPT - 1));
        give(Vec::with_capacity(MAX_KEPT + 1));
        drop(into_bytes(Vec::with_capacity(16)));
        assert_eq!(kept(), before);
        give(Vec::with_capacity(MIN_KEPT));
        assert_eq!(kept(), before + 1);
    }

    #[test]
    fn the_pool_stays_within_its_bounds() {
        let _turn = TURN.lock();
        empty_pool();
        for _ in 0..(2 * MAX_BUFFERS) {
            give(Vec::with_capacity(MAX_KEPT));
        }
        let pool = POOL.lock();
        assert!(pool.kept.len() <= MAX_BUFFERS);
        assert!(pool.total <= MAX_TOTAL);
        assert_eq!(
            pool.total,
            pool.kept.iter().map(Vec::capacity).sum::<usize>()
        );
    }
}
