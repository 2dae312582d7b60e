//! The automatic persisted query cache: operation text by its SHA-256, bounded both in
//! entries and in bytes.

use graphfleet_config::ApqConfig;
use std::sync::Arc;

/// Bytes an entry costs beyond its text (key, `Arc` header, the cache's own slot).
const ENTRY_OVERHEAD: u64 = 96;
/// The smallest share of `apq.max_bytes` one shard of the cache gets.
const SHARD_BYTES: u64 = 4 << 20;
const MAX_SHARDS: u64 = 16;

/// Weighs an entry by its text, and at least `min` so that `max_entries` of them fill
/// the byte budget: one weight bounds both.
#[derive(Clone)]
struct ByLen {
    min: u64,
}

impl quick_cache::Weighter<[u8; 32], Arc<str>> for ByLen {
    fn weight(&self, _key: &[u8; 32], text: &Arc<str>) -> u64 {
        (text.len() as u64 + ENTRY_OVERHEAD).max(self.min)
    }
}

pub struct ApqCache {
    cache: quick_cache::sync::Cache<[u8; 32], Arc<str>, ByLen>,
}

impl ApqCache {
    pub fn new(config: &ApqConfig) -> Self {
        let max_bytes = config.max_bytes.max(1) as u64;
        let entries = config.max_entries.max(1);
        let min = max_bytes.div_ceil(entries as u64);
        // Each shard holds its share of the bytes, and an entry heavier than that is not
        // kept: shards of at least SHARD_BYTES (more than the default body limit).
        let shards = (max_bytes / SHARD_BYTES).clamp(1, MAX_SHARDS) as usize;
        let options = quick_cache::OptionsBuilder::new()
            .shards(shards)
            .estimated_items_capacity(entries)
            .weight_capacity(max_bytes)
            .build()
            .expect("every cache option is set");
        Self {
            cache: quick_cache::sync::Cache::with_options(
                options,
                ByLen { min },
                quick_cache::DefaultHashBuilder::default(),
                quick_cache::sync::DefaultLifecycle::default(),
            ),
        }
    }

    pub fn get(&self, hash: &[u8; 32]) -> Option<Arc<str>> {
        self.cache.get(hash)
    }

    /// Keep `text` under `hash` (already checked to be its SHA-256).
    pub fn insert(&self, hash: [u8; 32], text: &str) {
        if self.cache.get(&hash).is_none() {
            self.cache.insert(hash, Arc::from(text));
        }
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u8) -> [u8; 32] {
        [i; 32]
    }

    #[test]
    fn bounded_by_entries_and_bytes() {
        let by_entries = ApqCache::new(&ApqConfig {
            enabled: true,
            max_entries: 4,
            max_bytes: 1 << 20,
        });
        for i in 0..50 {
            by_entries.insert(key(i), "{ a }");
        }
        assert!(by_entries.len() <= 4, "{} entries", by_entries.len());
        let by_bytes = ApqCache::new(&ApqConfig {
            enabled: true,
            max_entries: 1000,
            max_bytes: 10_000,
        });
        let text = "x".repeat(2_000);
        for i in 0..50 {
            by_bytes.insert(key(i), &text);
        }
        assert!(by_bytes.len() <= 4, "{} entries", by_bytes.len());
        assert!(!by_bytes.is_empty());
    }
}
