//! Small text helpers for showing wire data to people.

use jiff::Span;
use jiff::civil::Date;

/// Shortens `text` to at most `limit` bytes (on a character boundary),
/// saying how long it really was.
/// What a JSON value is, for a sentence ("a number", "an object").
pub fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub fn shorten(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut cut = limit;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..cut], text.len())
}

/// Like [`shorten`] for raw bytes (shown lossily as UTF-8), without
/// decoding more than is shown: a 64 MiB line costs no more than a short one.
pub fn shorten_bytes(raw: &[u8], limit: usize) -> String {
    // Four bytes per character at most, and one more to see that it is longer.
    let head = &raw[..raw.len().min(limit.saturating_mul(4).saturating_add(1))];
    let text = String::from_utf8_lossy(head);
    if head.len() == raw.len() && text.len() <= limit {
        return text.into_owned();
    }
    let mut cut = limit.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..cut], raw.len())
}

/// A byte count as people read it: `512 bytes`, `64 MiB`, `95.4 MiB`.
/// A latency for people: `850 µs`, `3.2 ms`, `1.25 s`.
pub fn format_micros(us: u64) -> String {
    if us < 1_000 {
        format!("{us} µs")
    } else if us < 10_000 {
        format!("{:.2} ms", us as f64 / 1e3)
    } else if us < 1_000_000 {
        format!("{:.1} ms", us as f64 / 1e3)
    } else {
        format!("{:.2} s", us as f64 / 1e6)
    }
}

pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut value = n as f64;
    let mut unit = "";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {unit}")
    } else {
        format!("{value:.1} {unit}")
    }
}

/// A size [`parse_size`] could not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("{0:?} is not a size (e.g. 128MiB, 64M, 4096)")]
    NotASize(String),
    #[error("{0:?} is not a unit of size (B, KiB, MiB, GiB, kB, MB, GB)")]
    UnknownUnit(String),
    #[error("{0:?} is not a size mcpscope can use")]
    OutOfRange(String),
}

/// Shows an error with every cause under it, `outer: cause: root` (what
/// anyhow's `{:#}` prints), for messages built from typed errors.
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'a));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(c) = cause {
            write!(f, ": {c}")?;
            cause = c.source();
        }
        Ok(())
    }
}

/// [`ErrorChain`] as a string.
pub fn error_chain(e: &(dyn std::error::Error + '_)) -> String {
    ErrorChain(e).to_string()
}

/// Text for an XML attribute or element (reports CI systems read): the
/// five entities escaped, and the characters XML 1.0 cannot hold at all (a
/// peer's control bytes) written as `\uXXXX`.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no way to write these: a peer's text may hold them.
            c if ((c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{fffe}' | '\u{ffff}') => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// `2026-09-03 14:15:02 UTC`: a record's time for people.
pub fn format_unix_ms_utc(unix_ms: u64) -> String {
    let (y, m, d, h, mi, sec) = utc_parts(unix_ms);
    format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{sec:02} UTC")
}

/// The day of the Unix epoch.
const EPOCH: Date = jiff::civil::date(1970, 1, 1);

/// Year, month, day, hour, minute and second (UTC) of a moment in Unix
/// milliseconds. A moment past the calendar's last, 9999-12-31 23:59:59
/// (only a corrupt record holds one), is that last moment.
pub fn utc_parts(unix_ms: u64) -> (i64, u32, u32, u64, u64, u64) {
    let secs = unix_ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let date = Span::new()
        .try_days(i64::try_from(days).unwrap_or(i64::MAX))
        .and_then(|span| EPOCH.checked_add(span));
    match date {
        Ok(d) => (
            i64::from(d.year()),
            d.month() as u32,
            d.day() as u32,
            rem / 3600,
            rem % 3600 / 60,
            rem % 60,
        ),
        Err(_) => (9999, 12, 31, 23, 59, 59),
    }
}

/// Milliseconds since the Unix epoch of an RFC 3339 / ISO 8601 moment
/// (`2026-08-20T10:00:00.123456789Z`, `…+02:00`, a space for the `T`);
/// fractions past the millisecond are dropped. `None` for anything else.
pub fn parse_rfc3339_ms(s: &str) -> Option<u64> {
    let s = s.trim();
    let b = s.as_bytes();
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut ms = 0u64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let first3: String = frac[..digits].chars().chain("000".chars()).take(3).collect();
        ms = first3.parse().ok()?;
        rest = &frac[digits..];
    }
    let offset_min: i64 = match rest {
        "Z" | "z" | "" => 0,
        _ => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hm = rest[1..].replace(':', "");
            if hm.len() != 4 || !hm.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            sign * (hm[..2].parse::<i64>().ok()? * 60 + hm[2..].parse::<i64>().ok()?)
        }
    };
    // The first of the month, then the days into it: a day past the month's
    // end (February 30) runs on into the next month, as it always has.
    let first = Date::new(i16::try_from(y).ok()?, mo as i8, 1).ok()?;
    let days = i64::from(EPOCH.until(first).ok()?.get_days()) + i64::from(d) - 1;
    let secs = days * 86_400 + i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(sec.min(59)) - offset_min * 60;
    u64::try_from(secs).ok().map(|s| s * 1000 + ms)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (ISO 8601 in UTC, with milliseconds), as HAR
/// and OpenTelemetry's JSON want a moment.
pub fn iso8601_utc_ms(unix_ms: u64) -> String {
    let (y, m, d, h, mi, sec) = utc_parts(unix_ms);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{sec:02}.{:03}Z", unix_ms % 1000)
}

/// Reads a size such as `128MiB`, `64M`, `1.5GiB`, `200kB` or `4096`
/// (bytes). K, M, G are binary (1024) with or without `iB`; `kB`, `MB`,
/// `GB` are decimal.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| SizeError::NotASize(text.to_owned()))?;
    let factor: f64 = match unit.trim() {
        "" | "B" | "b" => 1.0,
        "K" | "k" | "KiB" | "kiB" | "Ki" => 1024.0,
        "M" | "m" | "MiB" | "Mi" => 1024.0 * 1024.0,
        "G" | "g" | "GiB" | "Gi" => 1024.0 * 1024.0 * 1024.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        other => return Err(SizeError::UnknownUnit(other.to_owned())),
    };
    let bytes = value * factor;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(SizeError::OutOfRange(text.to_owned()));
    }
    Ok(bytes as u64)
}

/// Hides a header value the user gave (a token, a key), keeping an
/// authentication scheme so the reader still sees what kind it was:
/// `Bearer abc123` becomes `Bearer ****`, anything else `****`.
pub fn mask_value(value: &str) -> String {
    let trimmed = value.trim();
    if let Some((scheme, rest)) = trimmed.split_once(' ')
        && !rest.trim().is_empty()
        && !scheme.is_empty()
        && scheme.len() <= 20
        && scheme.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-')
    {
        return format!("{scheme} ****");
    }
    if trimmed.is_empty() {
        String::new()
    } else {
        "****".into()
    }
}

/// Shortens a label to at most `max_chars` characters, ending in `…` when
/// cut. For names and summaries in tight places, where the byte count that
/// [`shorten`] adds would only be noise.
pub fn ellipsize(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some(_) => {
            let keep: String = text.chars().take(max_chars.saturating_sub(1)).collect();
            format!("{keep}…")
        }
    }
}

/// Text a peer wrote, safe to print on a terminal: control characters
/// (C0, DEL, C1, and so ESC) become visible escapes (`\u{1b}`), so a server
/// cannot retitle, clear or forge the user's terminal; newlines and tabs
/// are escaped too unless `keep_lines`.
pub fn terminal_safe(text: &str, keep_lines: bool) -> std::borrow::Cow<'_, str> {
    // C0, DEL and C1 (`is_control`): what terminals act on. Nothing else is
    // touched, so JSON printed through here stays the JSON it was.
    let bad = |c: char| c.is_control() && !(keep_lines && (c == '\n' || c == '\t'));
    if !text.chars().any(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' if !keep_lines => out.push_str("\\n"),
            '\t' if !keep_lines => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if bad(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A duration as `crate::duration::parse` reads it back: `250ms`, `2s`, `1.5s`, `2m`.
pub fn duration(d: std::time::Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 1000.0 || ms.fract() != 0.0 && ms < 10_000.0 {
        format!("{}ms", (ms * 1000.0).round() / 1000.0)
    } else if d.as_secs().is_multiple_of(60) && d.subsec_nanos() == 0 {
        format!("{}m", d.as_secs() / 60)
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod rfc3339_tests {
    use super::*;

    #[test]
    fn rfc3339_moments_read_back_what_iso8601_writes() {
        for ms in [0, 1_764_700_000_123, 1_784_541_600_000, 951_782_400_999] {
            assert_eq!(
                parse_rfc3339_ms(&iso8601_utc_ms(ms)),
                Some(ms),
                "{}",
                iso8601_utc_ms(ms)
            );
        }
        assert_eq!(
            parse_rfc3339_ms("2026-08-20T10:00:00.123456789Z"),
            Some(1_787_220_000_123)
        );
        assert_eq!(parse_rfc3339_ms("2026-08-20T12:00:00+02:00"), Some(1_787_220_000_000));
        assert_eq!(parse_rfc3339_ms("2026-08-20 10:00:00"), Some(1_787_220_000_000));
        for bad in [
            "2026-13-01T00:00:00Z",
            "2026-08-20",
            "yesterday",
            "2026-08-20T10:00:00+2",
            "2026-08-20T10:00:00.",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn leap_days_and_the_calendars_ends() {
        // 2024 and 2000 are leap years; 2100 is not (divisible by 100, not 400).
        for (ms, text) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (1_709_210_096_000, "2024-02-29T12:34:56.000Z"),
            (951_868_799_999, "2000-02-29T23:59:59.999Z"),
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        ] {
            assert_eq!(iso8601_utc_ms(ms), text);
            assert_eq!(parse_rfc3339_ms(text), Some(ms), "{text}");
        }
        assert_eq!(iso8601_utc_ms(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
        assert_eq!(format_unix_ms_utc(1_709_210_096_000), "2024-02-29 12:34:56 UTC");
        // Past the calendar's last moment (a corrupt record): that moment.
        assert_eq!(format_unix_ms_utc(u64::MAX), "9999-12-31 23:59:59 UTC");
        assert_eq!(utc_parts(253_402_300_800_000), (9999, 12, 31, 23, 59, 59));
        // Before the epoch there is no Unix millisecond to give.
        assert_eq!(parse_rfc3339_ms("1969-12-31T23:59:59Z"), None);
        assert_eq!(parse_rfc3339_ms("0000-01-01T00:00:00Z"), None);
        // A leap second reads as the second before it; an offset can carry a
        // moment back over a year's end.
        assert_eq!(
            parse_rfc3339_ms("2016-12-31T23:59:60Z"),
            parse_rfc3339_ms("2016-12-31T23:59:59Z")
        );
        assert_eq!(
            parse_rfc3339_ms("2025-01-01T01:00:00+02:00"),
            parse_rfc3339_ms("2024-12-31T23:00:00Z")
        );
        // A day past the month's end runs on into the next month (as the
        // hand-written arithmetic this replaced did).
        assert_eq!(
            parse_rfc3339_ms("2023-02-30T00:00:00Z"),
            parse_rfc3339_ms("2023-03-02T00:00:00Z")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_print_with_their_unit() {
        assert_eq!(format_micros(850), "850 µs");
        assert_eq!(format_micros(3_210), "3.21 ms");
        assert_eq!(format_micros(45_600), "45.6 ms");
        assert_eq!(format_micros(1_250_000), "1.25 s");
    }

    #[test]
    fn sizes_read_and_print_as_people_write_them() {
        assert_eq!(parse_size("128MiB"), Ok(128 << 20));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("200kB"), Ok(200_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("0").is_err());
        assert_eq!(human_bytes(512), "512 bytes");
        assert_eq!(human_bytes(64 << 20), "64 MiB");
        assert_eq!(human_bytes(100_000_000), "95.4 MiB");
    }

    #[test]
    fn shorten_bytes_reads_only_the_head_and_counts_every_byte() {
        assert_eq!(shorten_bytes(b"short", 10), "short");
        let long = vec![b'x'; 10_000_000];
        assert_eq!(shorten_bytes(&long, 3), "xxx… (10000000 bytes in all)");
        let s = "é".repeat(10);
        assert_eq!(shorten_bytes(s.as_bytes(), 5), "éé… (20 bytes in all)");
        assert_eq!(shorten_bytes(b"\xff\xfe", 10), "\u{fffd}\u{fffd}");
    }

    #[test]
    fn terminal_safe_text_shows_control_characters() {
        assert_eq!(terminal_safe("plain é", false), "plain é");
        assert_eq!(terminal_safe("a\u{1b}]0;pwned\u{7}b", false), "a\\u{1b}]0;pwned\\u{7}b");
        assert_eq!(terminal_safe("l1\nl2\tx\r", false), "l1\\nl2\\tx\\r");
        assert_eq!(terminal_safe("l1\nl2\tx", true), "l1\nl2\tx");
        assert_eq!(terminal_safe("\u{9b}2J", true), "\\u{9b}2J");
        let json = "{\"a\":\"line\u{2028}sep \\u001b\"}";
        assert_eq!(terminal_safe(json, true), json, "JSON stays JSON");
    }

    #[test]
    fn ellipsized_labels_keep_their_length_and_say_nothing_else() {
        assert_eq!(ellipsize("tools/list", 18), "tools/list");
        assert_eq!(ellipsize("notifications/progress", 10), "notificat…");
        assert_eq!(ellipsize("notifications/progress", 10).chars().count(), 10);
        assert_eq!(ellipsize("héllo wörld", 5), "héll…");
        assert_eq!(ellipsize("", 3), "");
    }

    #[test]
    fn shortens_on_char_boundaries() {
        assert_eq!(shorten("abc", 5), "abc");
        assert_eq!(shorten("héllo", 2), "h… (6 bytes in all)");
    }
}
