//! The mergeable latency histogram of a k6 segment: fixed log-scale buckets, so histograms
//! recorded apart (one per execution segment) add up bucket by bucket into the whole test's,
//! and any quantile of the sum is within [`RELATIVE_ERROR`] of the pooled samples' quantile.
//!
//! `bench/k6/scenario.js` records into these buckets as it runs (`bucketOf`, between its
//! `BEGIN latency histogram` and `END latency histogram` lines) and writes [`Histogram::encode`]'s
//! form in its summary; the operator decodes and merges them. The JS and this file must use
//! the same formula: `tests/scenario_js.rs` runs the script's function under node on
//! `bench/k6/testdata/buckets.json` and checks this module against the same file.
//!
//! Bucket 0 holds every value ≤ [`MIN_MS`] (and anything not a positive number); bucket
//! `i ≥ 1` holds `(MIN_MS·γ^(i-1), MIN_MS·γ^i]` with γ = [`GAMMA`]; the last bucket also takes
//! everything above its lower bound (about 11 minutes).
//!
//! [`Latencies`] is the same histogram with the exact minimum, maximum and mean beside it:
//! graphfleet-bench records its own generator's and subscribers' latencies into it, so the
//! host's percentiles come from the very buckets the cluster's do.

use std::time::Duration;

/// Ratio between the bounds of a bucket.
pub const GAMMA: f64 = 1.02;
/// `ln(GAMMA)`, written out so the script and Rust divide by the very same double.
const LN_GAMMA: f64 = 0.01980262729617973;
/// Values at or below this many milliseconds count as zero.
pub const MIN_MS: f64 = 0.01;
/// Number of buckets, the zero bucket included.
pub const BUCKETS: usize = 910;
/// Largest relative difference between a value in a bucket `i ≥ 1` and [`representative`]`(i)`.
pub const RELATIVE_ERROR: f64 = (GAMMA - 1.0) / (GAMMA + 1.0);
const _: () = assert!(RELATIVE_ERROR < 0.01, "buckets finer than 1%");

/// The bucket of a latency in milliseconds.
pub fn bucket(ms: f64) -> usize {
    // Written like the script's `!(ms > MIN_MS)`, which also catches NaN.
    if ms.is_nan() || ms <= MIN_MS {
        return 0;
    }
    let i = ((ms / MIN_MS).ln() / LN_GAMMA).ceil();
    i.clamp(1.0, (BUCKETS - 1) as f64) as usize
}

/// The value a bucket stands for: the point with the same relative distance to both bounds.
fn representative(bucket: usize) -> f64 {
    if bucket == 0 {
        return 0.0;
    }
    MIN_MS * (bucket as f64 * LN_GAMMA).exp() * 2.0 / (1.0 + GAMMA)
}

/// Why an encoded histogram cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistogramError {
    #[error("the histogram has an odd number of entries ({0}); expected index, count pairs")]
    OddLength(usize),
    #[error("histogram entry {0}: buckets must be listed in increasing order (a gap of 0)")]
    NotIncreasing(usize),
    #[error("histogram entry {0}: bucket {1} is beyond the last bucket {last}", last = BUCKETS - 1)]
    OutOfRange(usize, u64),
    #[error("histogram entry {0}: a listed bucket must have a count above 0")]
    EmptyBucket(usize),
    #[error("the histogram's counts overflow")]
    Overflow,
}

/// Counts per bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Self {
        Self {
            counts: vec![0; BUCKETS],
            total: 0,
        }
    }

    pub fn record(&mut self, ms: f64) {
        self.counts[bucket(ms)] += 1;
        self.total += 1;
    }

    /// Number of recorded values.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Count of one bucket.
    pub fn count(&self, bucket: usize) -> u64 {
        self.counts.get(bucket).copied().unwrap_or(0)
    }

    /// Adds `other`'s counts: the histogram of both sets of values.
    pub fn merge(&mut self, other: &Histogram) -> Result<(), HistogramError> {
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine = mine.checked_add(*theirs).ok_or(HistogramError::Overflow)?;
        }
        self.total = self
            .total
            .checked_add(other.total)
            .ok_or(HistogramError::Overflow)?;
        Ok(())
    }

    /// The nearest-rank `q`-quantile (`q` in 0..=1): the representative of the bucket holding
    /// the `ceil(q·n)`-th smallest value, so within [`RELATIVE_ERROR`] of that value (or at most
    /// [`MIN_MS`] from it in the zero bucket). `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0u64;
        for (i, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(representative(i));
            }
        }
        None
    }

    /// The summary's compact form: only non-empty buckets, as `[first index, its count, gap to
    /// the next index, its count, ...]` (gaps are short where latencies cluster).
    pub fn encode(&self) -> Vec<u64> {
        let mut out = Vec::new();
        let mut last = 0;
        for (i, &n) in self.counts.iter().enumerate().filter(|(_, n)| **n > 0) {
            out.extend([(i - last) as u64, n]);
            last = i;
        }
        out
    }

    /// Reads [`Histogram::encode`]'s form.
    pub fn decode(pairs: &[u64]) -> Result<Self, HistogramError> {
        if !pairs.len().is_multiple_of(2) {
            return Err(HistogramError::OddLength(pairs.len()));
        }
        let mut hist = Histogram::new();
        let mut index = 0u64;
        for (entry, pair) in pairs.chunks_exact(2).enumerate() {
            let (gap, n) = (pair[0], pair[1]);
            if entry > 0 && gap == 0 {
                return Err(HistogramError::NotIncreasing(entry));
            }
            index = index.saturating_add(gap);
            if index >= BUCKETS as u64 {
                return Err(HistogramError::OutOfRange(entry, index));
            }
            if n == 0 {
                return Err(HistogramError::EmptyBucket(entry));
            }
            hist.counts[index as usize] = n;
            hist.total = hist.total.checked_add(n).ok_or(HistogramError::Overflow)?;
        }
        Ok(hist)
    }
}

/// A [`Histogram`] plus the exact minimum, maximum and sum of what it recorded: quantiles
/// come from the buckets, the rest is exact (the buckets would put the max up to 1% off, and
/// a p99 above the max). Only the histogram crosses the wire ([`Histogram::encode`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Latencies {
    histogram: Histogram,
    min_ms: f64,
    max_ms: f64,
    sum_ms: f64,
}

impl Default for Latencies {
    fn default() -> Self {
        Self::new()
    }
}

impl Latencies {
    pub fn new() -> Self {
        Self {
            histogram: Histogram::new(),
            min_ms: f64::INFINITY,
            max_ms: f64::NEG_INFINITY,
            sum_ms: 0.0,
        }
    }

    /// Records a latency in milliseconds; one that is not a positive number counts as 0 ms
    /// (where the zero bucket puts it), so min, max and mean agree with the buckets.
    pub fn record_ms(&mut self, ms: f64) {
        let ms = if ms > 0.0 { ms } else { 0.0 };
        self.histogram.record(ms);
        self.min_ms = self.min_ms.min(ms);
        self.max_ms = self.max_ms.max(ms);
        self.sum_ms += ms;
    }

    pub fn record(&mut self, latency: Duration) {
        self.record_ms(latency.as_secs_f64() * 1000.0);
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.histogram.total()
    }

    pub fn is_empty(&self) -> bool {
        self.histogram.is_empty()
    }

    /// The buckets, for merging with or encoding like a k6 segment's.
    pub fn histogram(&self) -> &Histogram {
        &self.histogram
    }

    pub fn min_ms(&self) -> Option<f64> {
        (!self.is_empty()).then_some(self.min_ms)
    }

    pub fn max_ms(&self) -> Option<f64> {
        (!self.is_empty()).then_some(self.max_ms)
    }

    pub fn mean_ms(&self) -> Option<f64> {
        (!self.is_empty()).then(|| self.sum_ms / self.count() as f64)
    }

    /// [`Histogram::quantile`] clamped to the exact range: the value it estimates lies in
    /// that range, so clamping only brings it closer (and p99 never exceeds the max).
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let v = self.histogram.quantile(q)?;
        Some(v.clamp(self.min_ms, self.max_ms))
    }

    /// Adds `other`'s values: the latencies of both.
    pub fn merge(&mut self, other: &Latencies) -> Result<(), HistogramError> {
        self.histogram.merge(&other.histogram)?;
        self.min_ms = self.min_ms.min(other.min_ms);
        self.max_ms = self.max_ms.max(other.max_ms);
        self.sum_ms += other.sum_ms;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_gamma_is_the_logarithm_of_gamma() {
        assert_eq!(LN_GAMMA, GAMMA.ln());
        // The last bucket starts beyond 10 minutes: no plausible latency is clamped.
        assert!(MIN_MS * ((BUCKETS - 2) as f64 * LN_GAMMA).exp() > 600_000.0);
    }

    #[test]
    fn every_value_is_within_the_relative_error_of_its_bucket() {
        let mut v = MIN_MS * 1.0001;
        while v < 600_000.0 {
            let b = bucket(v);
            let r = representative(b);
            assert!(
                (r - v).abs() <= v * RELATIVE_ERROR * (1.0 + 1e-9),
                "{v} ms -> bucket {b} ({r} ms)"
            );
            v *= 1.003;
        }
        assert_eq!(bucket(0.0), 0);
        assert_eq!(bucket(MIN_MS), 0);
        assert_eq!(bucket(-3.0), 0);
        assert_eq!(bucket(f64::NAN), 0);
        assert_eq!(bucket(f64::INFINITY), BUCKETS - 1);
        assert_eq!(bucket(1e12), BUCKETS - 1);
        assert_eq!(representative(0), 0.0);
    }

    #[test]
    fn buckets_are_ordered_like_values() {
        let mut previous = 0;
        let mut v = 0.001;
        while v < 1e7 {
            let b = bucket(v);
            assert!(b >= previous, "{v}");
            previous = b;
            v *= 1.0007;
        }
    }

    #[test]
    fn encode_and_decode_round_trip_sparsely() {
        let mut h = Histogram::new();
        for v in [0.0, 1.0, 1.0, 1.01, 250.0, 1e9] {
            h.record(v);
        }
        let encoded = h.encode();
        assert_eq!(encoded.len(), 2 * 5, "only the 5 non-empty buckets");
        assert_eq!(encoded[..2], [0, 1], "the zero bucket first, as index 0");
        assert_eq!(Histogram::decode(&encoded), Ok(h.clone()));
        assert_eq!(h.total(), 6);
        assert_eq!(Histogram::decode(&[]), Ok(Histogram::new()));
    }

    #[test]
    fn malformed_encodings_are_errors() {
        use HistogramError::*;
        assert_eq!(Histogram::decode(&[3]), Err(OddLength(1)));
        assert_eq!(Histogram::decode(&[3, 1, 0, 2]), Err(NotIncreasing(1)));
        assert_eq!(
            Histogram::decode(&[BUCKETS as u64, 1]),
            Err(OutOfRange(0, BUCKETS as u64))
        );
        assert_eq!(
            Histogram::decode(&[5, 1, u64::MAX, 1]),
            Err(OutOfRange(1, u64::MAX))
        );
        assert_eq!(Histogram::decode(&[3, 0]), Err(EmptyBucket(0)));
        assert_eq!(Histogram::decode(&[1, u64::MAX, 1, 1]), Err(Overflow));
    }

    #[test]
    fn quantiles_follow_nearest_rank() {
        let mut h = Histogram::new();
        assert_eq!(h.quantile(0.5), None);
        for v in 1..=100 {
            h.record(f64::from(v));
        }
        for (q, exact) in [(0.0, 1.0), (0.5, 50.0), (0.99, 99.0), (1.0, 100.0)] {
            let got = h.quantile(q).expect("not empty");
            assert!(
                (got - exact).abs() <= exact * RELATIVE_ERROR,
                "q {q}: {got} vs {exact}"
            );
        }
    }

    /// What the summary's `hist` costs of the 4096-byte termination message: every bucket of a
    /// spread occupied with a 5-digit count (bench/k6/README.md quotes these figures).
    #[test]
    fn encoded_size_grows_with_the_spread_of_latencies() {
        let size = |from: f64, to: f64| {
            let mut h = Histogram::new();
            for b in bucket(from)..=bucket(to) {
                h.counts[b] = 12_345;
                h.total += 12_345;
            }
            serde_json::to_string(&h.encode()).expect("JSON").len()
        };
        assert!(size(0.5, 50.0) < 2_000, "{}", size(0.5, 50.0));
        assert!(size(1.0, 1_000.0) < 2_900, "{}", size(1.0, 1_000.0));
        // With the rest of the summary (~600 bytes) this no longer fits: the script leaves it out.
        assert!(size(1.0, 10_000.0) > 3_500, "{}", size(1.0, 10_000.0));
    }

    #[test]
    fn merging_adds_counts() {
        let (mut a, mut b) = (Histogram::new(), Histogram::new());
        a.record(1.0);
        b.record(1.0);
        b.record(70.0);
        a.merge(&b).expect("no overflow");
        assert_eq!(
            (a.total(), a.count(bucket(1.0)), a.count(bucket(70.0))),
            (3, 2, 1)
        );
    }

    #[test]
    fn latencies_keep_exact_extremes_and_mean_beside_the_buckets() {
        let mut l = Latencies::new();
        assert_eq!(
            (
                l.count(),
                l.min_ms(),
                l.max_ms(),
                l.mean_ms(),
                l.quantile(0.5)
            ),
            (0, None, None, None, None)
        );
        for ms in [1.25, 2.0, 3.0] {
            l.record_ms(ms);
        }
        l.record(Duration::from_millis(100));
        assert_eq!(l.count(), 4);
        assert_eq!(l.min_ms(), Some(1.25));
        assert_eq!(l.max_ms(), Some(100.0));
        assert_eq!(l.mean_ms(), Some(106.25 / 4.0));
        // The max's bucket stands for a value above it: the top quantile is the exact max.
        assert!(representative(bucket(100.0)) > 100.0);
        assert_eq!(l.quantile(1.0), Some(100.0));
        assert!(representative(bucket(1.25)) < 1.25);
        assert_eq!(l.quantile(0.0), Some(1.25));
        let med = l.quantile(0.5).expect("not empty");
        assert!((med - 2.0).abs() <= 2.0 * RELATIVE_ERROR, "{med}");
        // What is not a positive latency counts as zero, in the zero bucket.
        l.record_ms(-1.0);
        l.record_ms(f64::NAN);
        assert_eq!((l.min_ms(), l.histogram().count(0)), (Some(0.0), 2));
    }

    #[test]
    fn merged_latencies_are_those_of_both() {
        let (mut a, mut b, mut both) = (Latencies::new(), Latencies::new(), Latencies::new());
        for v in [5.0, 7.5] {
            a.record_ms(v);
            both.record_ms(v);
        }
        for v in [0.5, 40.0, 9.0] {
            b.record_ms(v);
            both.record_ms(v);
        }
        a.merge(&b).expect("no overflow");
        assert_eq!(a.histogram(), both.histogram());
        assert_eq!((a.min_ms(), a.max_ms()), (Some(0.5), Some(40.0)));
        assert_eq!(a.mean_ms(), both.mean_ms());
        // An empty side changes nothing.
        a.merge(&Latencies::new()).expect("no overflow");
        assert_eq!(a, both);
    }
}
