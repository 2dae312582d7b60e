//! Load-test durations, one grammar for every place that reads them: the LoadTest CRD (its
//! validation pattern is [`PATTERN`]), the operator, `graphfleet-bench` and `seconds()` in
//! `bench/k6/scenario.js` (which mirrors [`parse`]; `tests/scenario_js.rs` runs both on
//! `bench/k6/testdata/durations.json`).
//!
//! A duration is one or more `<number><unit>` parts, the number a decimal without sign or
//! exponent (`1`, `1.5`), the unit `h`, `m`, `s` or `ms`: `250ms`, `30s`, `1m30s`,
//! `1h2m3.5s`. Every such text is also a Go duration, so k6 reads `GF_DURATION` the same way.

use std::time::Duration;

/// The CRD's validation pattern for [`parse`]'s grammar (CEL `matches`, RE2 syntax).
// `[.]`, not an escaped dot: the pattern sits in a CEL string literal, where `\.` is no escape.
pub const PATTERN: &str = "^([0-9]+([.][0-9]+)?(ms|h|m|s))+$";

/// Matches the durations of [`PATTERN`] that are zero (every number made of `0` and `.`).
pub const ZERO_PATTERN: &str = "^([0.]+(ms|h|m|s))+$";

/// The units, longest first so `ms` is not read as `m` followed by `s`.
const UNITS: [(&str, u128); 4] = [
    ("ms", 1_000_000),
    ("h", 3_600_000_000_000),
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
];

/// Why a text is not a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("empty duration; expected e.g. 250ms, 30s, 1m30s or 1h2m3.5s")]
    Empty,
    #[error(
        "{text:?} is not a duration: expected a number at {rest:?} (e.g. 250ms, 30s, 1m30s, 1h2m3.5s)"
    )]
    Number { text: String, rest: String },
    #[error("{text:?} is not a duration: expected a unit h, m, s or ms at {rest:?}")]
    Unit { text: String, rest: String },
    #[error("{text:?} is too long a duration")]
    Overflow { text: String },
}

/// Reads a duration (see the module docs). Fractions below a nanosecond are dropped.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    let overflow = || DurationError::Overflow {
        text: text.to_owned(),
    };
    let mut total: u128 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let (whole, fraction, after) = number(rest).ok_or_else(|| DurationError::Number {
            text: text.to_owned(),
            rest: rest.to_owned(),
        })?;
        let (unit, nanos) = UNITS
            .into_iter()
            .find(|(unit, _)| after.starts_with(unit))
            .ok_or_else(|| DurationError::Unit {
                text: text.to_owned(),
                rest: after.to_owned(),
            })?;
        let whole: u128 = whole.parse().map_err(|_| overflow())?;
        let mut part = whole.checked_mul(nanos).ok_or_else(overflow)?;
        // Exact decimal arithmetic: each fraction digit is a tenth of the one before.
        let mut scale = nanos;
        for digit in fraction.bytes() {
            scale /= 10;
            part = part
                .checked_add(u128::from(digit - b'0') * scale)
                .ok_or_else(overflow)?;
        }
        total = total.checked_add(part).ok_or_else(overflow)?;
        rest = &after[unit.len()..];
    }
    let secs = u64::try_from(total / 1_000_000_000).map_err(|_| overflow())?;
    Ok(Duration::new(secs, (total % 1_000_000_000) as u32))
}

/// `digits[.digits]` at the start of `text`: (whole, fraction, rest).
fn number(text: &str) -> Option<(&str, &str, &str)> {
    let digits = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let whole = digits(text);
    if whole == 0 {
        return None;
    }
    let (int, rest) = text.split_at(whole);
    let Some(after_dot) = rest.strip_prefix('.') else {
        return Some((int, "", rest));
    };
    let fraction = digits(after_dot);
    if fraction == 0 {
        return None;
    }
    let (frac, rest) = after_dot.split_at(fraction);
    Some((int, frac, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_form_parses_exactly() {
        let ms = |s: &str| parse(s).map(|d| d.as_secs_f64() * 1e3);
        assert_eq!(ms("250ms"), Ok(250.0));
        assert_eq!(ms("30s"), Ok(30_000.0));
        assert_eq!(ms("1m30s"), Ok(90_000.0));
        assert_eq!(ms("1h2m3.5s"), Ok(3_723_500.0));
        assert_eq!(ms("1.5h"), Ok(5_400_000.0));
        assert_eq!(ms("0.5ms"), Ok(0.5));
        assert_eq!(parse("1m500ms"), Ok(Duration::from_millis(60_500)));
        // Not rounded through a float: 0.1 s is exactly 100 ms.
        assert_eq!(parse("0.1s"), Ok(Duration::from_millis(100)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn malformed_durations_say_where() {
        assert_eq!(parse(""), Err(DurationError::Empty));
        for bad in [
            "30", "s", "1x", "1.s", ".5s", "-1s", "+1s", "1 s", "1s ", "1us", "1µs", "1d", "1e3s",
            "1m30", "1.2.3s",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
        let err = parse("1m30x").expect_err("bad unit");
        assert_eq!(
            err.to_string(),
            "\"1m30x\" is not a duration: expected a unit h, m, s or ms at \"x\""
        );
        assert!(matches!(
            parse("99999999999999999999h"),
            Err(DurationError::Overflow { .. })
        ));
        assert!(matches!(
            parse("340282366920938463463374607431768211456s"),
            Err(DurationError::Overflow { .. })
        ));
    }
}
