//! Durations given by people (flags, fault rules, rules files) and by
//! programs on the intercept control socket: one reader and one range for
//! all of them. A value that passes is at most [`MAX`], so converting it,
//! adding it to an `Instant`, summing a warm-up and a run or drawing a
//! delay from a range cannot overflow or panic downstream.

use serde_json::Value;
use std::time::Duration;

/// The longest duration mcpscope takes anywhere: a year. It bounds a soak
/// test or a held frame far beyond any real use, and the sum of two of them
/// stays far inside what an `Instant` can be moved by.
pub const MAX: Duration = Duration::from_secs(365 * 24 * 3600);

/// [`MAX`] as messages write it (in the largest unit [`parse`] reads).
pub const MAX_TEXT: &str = "8760h (365 days)";

/// Why a duration was refused; the text is the value as it was given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("{0:?} is not a duration (e.g. 500ms, 30s, 2m, 1h)")]
    Malformed(String),
    #[error("{0:?} is negative: a duration is 0 or more")]
    Negative(String),
    #[error("{0:?} is longer than {MAX_TEXT}, the longest duration mcpscope takes")]
    TooLong(String),
}

/// Units as (suffix, seconds per unit, units per second), longest suffix
/// first so that `ms` and `min` are not read as `s` and `m`. Milliseconds
/// divide, so `250ms` is exactly what `0.25` is.
const UNITS: &[(&str, f64, f64)] = &[
    ("min", 60.0, 1.0),
    ("ms", 1.0, 1000.0),
    ("h", 3600.0, 1.0),
    ("m", 60.0, 1.0),
    ("s", 1.0, 1.0),
];

/// `500ms`, `2s`, `1.5s`, `2m` (or `2min`), `1h`, or a bare number of seconds.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let t = text.trim();
    let malformed = || DurationError::Malformed(text.to_owned());
    let (number, mul, div) = UNITS
        .iter()
        .find_map(|(u, mul, div)| t.strip_suffix(u).map(|n| (n, *mul, *div)))
        .unwrap_or((t, 1.0, 1.0));
    let number = number.trim_end();
    // Only digits, a point, a sign and an exponent: f64's parser also takes
    // "inf" and "NaN", which are no durations.
    if number.is_empty()
        || !number
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return Err(malformed());
    }
    let n: f64 = number.parse().map_err(|_| malformed())?;
    checked(n * mul / div, text)
}

/// A duration field of a JSON request or file: text as [`parse`] reads it,
/// or a number of seconds as JSON writes it (`"timeout": 1e300` is refused
/// as `1e+300`, not as three hundred digits). None when the field is null.
pub fn from_json(v: &Value) -> Result<Option<Duration>, DurationError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => parse(s).map(Some),
        Value::Number(n) => {
            let secs = n.as_f64().ok_or_else(|| DurationError::Malformed(n.to_string()))?;
            checked(secs, &n.to_string()).map(Some)
        }
        other => Err(DurationError::Malformed(other.to_string())),
    }
}

/// `d` played at `speed` times its pace (a mock's `--speed`), at most
/// [`MAX`]: a speed of 1e-300 made the gap too long for a `Duration` and
/// panicked the mock.
pub fn at_speed(d: Duration, speed: f64) -> Duration {
    Duration::try_from_secs_f64(d.as_secs_f64() / speed)
        .unwrap_or(if speed > 0.0 { MAX } else { Duration::ZERO })
        .min(MAX)
}

/// The one range check.
fn checked(secs: f64, shown: &str) -> Result<Duration, DurationError> {
    if secs.is_nan() {
        return Err(DurationError::Malformed(shown.to_owned()));
    }
    if secs < 0.0 {
        return Err(DurationError::Negative(shown.to_owned()));
    }
    if secs > MAX.as_secs_f64() {
        return Err(DurationError::TooLong(shown.to_owned()));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_gap_at_any_speed_is_a_duration_at_most_the_longest() {
        let gap = Duration::from_secs(2);
        assert_eq!(at_speed(gap, 2.0), Duration::from_secs(1));
        assert_eq!(at_speed(gap, 1e-300), MAX);
        assert_eq!(at_speed(gap, 1e300), Duration::ZERO);
        assert_eq!(at_speed(Duration::ZERO, 1e-300), Duration::ZERO);
    }

    #[test]
    fn units_and_bare_seconds_read() {
        for (text, want) in [
            ("250ms", Duration::from_millis(250)),
            ("1.5s", Duration::from_millis(1500)),
            ("2m", Duration::from_secs(120)),
            ("2min", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3600)),
            ("10", Duration::from_secs(10)),
            (" 30 s ", Duration::from_secs(30)),
            ("0", Duration::ZERO),
            ("1e3ms", Duration::from_secs(1)),
            ("8760h", MAX),
        ] {
            assert_eq!(parse(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn what_is_no_duration_or_out_of_range_is_named() {
        for text in ["", "fast", "s", "1x", "1 2s", "inf", "NaN", "infs", "nan ms", "1s2"] {
            assert_eq!(parse(text), Err(DurationError::Malformed(text.into())), "{text:?}");
        }
        assert_eq!(parse("-1s"), Err(DurationError::Negative("-1s".into())));
        for text in ["18446744073709551615s", "1e30s", "1e300", "8760.001h", "31536001"] {
            let e = parse(text).unwrap_err();
            assert_eq!(e, DurationError::TooLong(text.into()), "{text}");
            assert!(e.to_string().contains("longer than 8760h (365 days)"), "{e}");
        }
    }

    #[test]
    fn seconds_as_numbers_are_held_to_the_same_range() {
        let secs = |n: f64| checked(n, &n.to_string());
        assert_eq!(secs(1.5), Ok(Duration::from_millis(1500)));
        assert!(matches!(secs(f64::NAN), Err(DurationError::Malformed(_))));
        assert!(matches!(secs(f64::INFINITY), Err(DurationError::TooLong(_))));
        assert!(matches!(secs(f64::NEG_INFINITY), Err(DurationError::Negative(_))));
        assert!(matches!(secs(-0.5), Err(DurationError::Negative(_))));
        assert_eq!(from_json(&json!(2)), Ok(Some(Duration::from_secs(2))));
        assert_eq!(from_json(&json!("2s")), Ok(Some(Duration::from_secs(2))));
        assert_eq!(from_json(&Value::Null), Ok(None));
        let e = from_json(&serde_json::from_str("1e300").unwrap()).unwrap_err();
        assert_eq!(e, DurationError::TooLong("1e+300".into()));
        assert_eq!(
            from_json(&json!(u64::MAX)),
            Err(DurationError::TooLong(u64::MAX.to_string()))
        );
        assert_eq!(from_json(&json!(-3)), Err(DurationError::Negative("-3".into())));
        assert_eq!(from_json(&json!(true)), Err(DurationError::Malformed("true".into())));
    }
}
