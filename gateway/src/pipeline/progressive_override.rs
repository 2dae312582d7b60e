//! Stage 2, progressive override: which `@override(label:)` labels are enabled for a
//! request.
//!
//! Labels named in `progressive_override.enabled_labels` are always on and those in
//! `disabled_labels` always off. A `percent(N)` label that is neither is drawn per
//! request: on with probability N %. The drawn labels form a bitmask; each mask plans
//! against its own copy of the federation metadata (made on first use) and is part of
//! the plan-cache key, so a drawn request still hits the cache.

use crate::supergraph::meta::FederationMeta;
use graphfleet_config::ProgressiveOverrideConfig;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Most `percent(N)` labels drawn per request: one bit each in the mask, so at most
/// 2^8 label sets (and plans per operation).
pub const MAX_DRAWN: usize = 8;
/// Metadata copies kept for drawn label sets; the map is cleared when full (a copy is
/// made again in about the time of one plan), so memory stays bounded.
const METAS_CAPACITY: usize = 16;

/// The labels a request may draw, and the metadata per drawn set.
#[derive(Debug, Default)]
pub struct OverrideLabels {
    /// `percent(N)` labels drawn per request: (label, N).
    drawn: Vec<(String, f64)>,
    /// Metadata with the always-on labels and each drawn set's labels enabled; the
    /// empty mask uses the supergraph's own metadata.
    metas: Mutex<FxHashMap<u8, Arc<FederationMeta>>>,
}

/// Which drawn labels are on for one request (bit `i` = `drawn[i]`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LabelMask(pub u8);

impl OverrideLabels {
    /// Enable the always-on labels in `meta` and collect the labels to draw.
    pub fn configure(meta: &mut FederationMeta, config: &ProgressiveOverrideConfig) -> Self {
        let mut drawn = Vec::new();
        for label in meta.override_labels() {
            let fixed = config.enabled_labels.iter().chain(&config.disabled_labels);
            if fixed.into_iter().any(|l| l == label) {
                continue;
            }
            match percent(label) {
                Some(_) if drawn.len() == MAX_DRAWN => tracing::warn!(
                    label,
                    "the supergraph has more than {MAX_DRAWN} percent() override labels; \
                     this one stays disabled"
                ),
                Some(n) => drawn.push((label.to_owned(), n)),
                None => {}
            }
        }
        meta.enabled_override_labels
            .clone_from(&config.enabled_labels);
        Self {
            drawn,
            metas: Mutex::default(),
        }
    }

    /// True when requests draw labels at all (no cost per request otherwise).
    pub fn draws(&self) -> bool {
        !self.drawn.is_empty()
    }

    /// Draw this request's labels.
    pub fn draw(&self) -> LabelMask {
        let mut mask = 0u8;
        for (i, (_, n)) in self.drawn.iter().enumerate() {
            if fastrand::f64() * 100.0 < *n {
                mask |= 1 << i;
            }
        }
        LabelMask(mask)
    }

    /// The metadata to plan requests with `mask` against: `base` (the supergraph's,
    /// with the always-on labels) for the empty mask, else a copy made on first use.
    pub fn meta<'a>(&self, base: &'a FederationMeta, mask: LabelMask) -> MetaRef<'a> {
        if mask.0 == 0 {
            return MetaRef::Base(base);
        }
        let mut metas = self.metas.lock();
        if metas.len() >= METAS_CAPACITY && !metas.contains_key(&mask.0) {
            metas.clear();
        }
        let meta = metas.entry(mask.0).or_insert_with(|| {
            let mut meta = base.clone();
            let on = self
                .drawn
                .iter()
                .enumerate()
                .filter(|(i, _)| mask.0 & (1 << i) != 0);
            meta.enabled_override_labels
                .extend(on.map(|(_, (label, _))| label.clone()));
            Arc::new(meta)
        });
        MetaRef::Drawn(meta.clone())
    }
}

/// Federation metadata for one label mask.
pub enum MetaRef<'a> {
    Base(&'a FederationMeta),
    Drawn(Arc<FederationMeta>),
}

impl std::ops::Deref for MetaRef<'_> {
    type Target = FederationMeta;

    fn deref(&self) -> &FederationMeta {
        match self {
            MetaRef::Base(meta) => meta,
            MetaRef::Drawn(meta) => meta,
        }
    }
}

/// N of a `percent(N)` label (0 ≤ N ≤ 100, decimals allowed), else `None`.
pub fn percent(label: &str) -> Option<f64> {
    let n: f64 = label
        .strip_prefix("percent(")?
        .strip_suffix(')')?
        .trim()
        .parse()
        .ok()?;
    (0.0..=100.0).contains(&n).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supergraph::Supergraph;

    const SUPERGRAPH: &str = include_str!("../../tests/fixtures/override/supergraph.graphql");

    fn labels(config: ProgressiveOverrideConfig) -> (FederationMeta, OverrideLabels) {
        let mut meta = Supergraph::parse(SUPERGRAPH)
            .expect("the override fixture loads")
            .meta;
        let labels = OverrideLabels::configure(&mut meta, &config);
        (meta, labels)
    }

    #[test]
    fn percent_labels_parse_with_decimals_and_bounds() {
        assert_eq!(percent("percent(50)"), Some(50.0));
        assert_eq!(percent("percent(0.5)"), Some(0.5));
        assert_eq!(percent("percent(100)"), Some(100.0));
        assert_eq!(percent("percent(101)"), None);
        assert_eq!(percent("percent(-1)"), None);
        assert_eq!(percent("percent(x)"), None);
        assert_eq!(percent("canary"), None);
    }

    #[test]
    fn percent_labels_are_drawn_unless_fixed_by_config() {
        let (meta, drawn) = labels(ProgressiveOverrideConfig::default());
        assert!(drawn.draws());
        assert!(meta.enabled_override_labels.is_empty());

        let on = ProgressiveOverrideConfig {
            enabled_labels: vec!["percent(50)".to_owned()],
            ..Default::default()
        };
        let (meta, fixed) = labels(on);
        assert!(!fixed.draws());
        assert_eq!(meta.enabled_override_labels, ["percent(50)"]);

        let off = ProgressiveOverrideConfig {
            disabled_labels: vec!["percent(50)".to_owned()],
            ..Default::default()
        };
        let (meta, fixed) = labels(off);
        assert!(!fixed.draws());
        assert!(meta.enabled_override_labels.is_empty());
    }

    #[test]
    fn a_drawn_mask_enables_its_labels_in_a_copy_made_once() {
        let (meta, drawn) = labels(ProgressiveOverrideConfig::default());
        let on = drawn.meta(&meta, LabelMask(1));
        assert_eq!(on.enabled_override_labels, ["percent(50)"]);
        let again = drawn.meta(&meta, LabelMask(1));
        assert!(
            matches!((&on, &again), (MetaRef::Drawn(a), MetaRef::Drawn(b)) if Arc::ptr_eq(a, b))
        );
        assert!(matches!(drawn.meta(&meta, LabelMask(0)), MetaRef::Base(_)));
    }

    #[test]
    fn draws_follow_the_percentage() {
        let (_, drawn) = labels(ProgressiveOverrideConfig::default());
        let on = (0..10_000).filter(|_| drawn.draw().0 == 1).count();
        // 50 %: 5,000 expected; ±500 is over 10 standard deviations.
        assert!((4_500..=5_500).contains(&on), "{on} of 10000 drawn");
    }
}
