//! A load run's report for people (a table), scripts (JSON) and CI (JUnit:
//! a case per method or tool, failed by its errors), and the live progress
//! line. Sans I/O.

use crate::load::stats::{Report, Stats};
use crate::text::{format_micros, xml_escape};
use std::fmt::Write as _;
use std::time::Duration;

/// One line, rewritten about once a second while the run goes on.
pub fn progress_line(stats: &Stats, elapsed: Duration) -> String {
    let r = stats.report(elapsed);
    // The last whole second (the one going on is partial).
    let whole = r.duration_s.floor() as u64;
    let last = whole.checked_sub(1).and_then(|i| r.series.get(i as usize));
    match last {
        Some(s) => format!(
            "{:>5.0}s  {:>8} requests  {:>7} req/s  p99 {}  errors {}",
            elapsed.as_secs_f64(),
            r.requests,
            s.requests,
            format_micros(s.p99_us),
            r.errors
        ),
        None => format!(
            "{:>5.0}s  {} requests (warming up)",
            elapsed.as_secs_f64(),
            r.requests + r.warmup_requests
        ),
    }
}

/// The final table.
pub fn text(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} requests in {:.2} s: {:.1} req/s, {} ok, {} failed{}",
        r.requests,
        r.duration_s,
        r.throughput,
        r.ok,
        r.errors,
        if r.warmup_requests > 0 {
            format!(" ({} during the warm-up, not counted)", r.warmup_requests)
        } else {
            String::new()
        }
    );
    if let Some(ms) = r.sessions_ready_ms {
        let _ = writeln!(
            out,
            "the sessions started and shook hands in {} first (the run's clock started after, none of it counted)",
            format_micros(ms * 1000)
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<36} {:>9} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "", "requests", "errors", "p50", "p90", "p99", "p99.9", "max"
    );
    let row = |out: &mut String, name: &str, n: u64, e: u64, l: &crate::load::stats::Percentiles| {
        let _ = writeln!(
            out,
            "{:<36} {:>9} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}",
            crate::text::ellipsize(name, 36),
            n,
            e,
            format_micros(l.p50_us),
            format_micros(l.p90_us),
            format_micros(l.p99_us),
            format_micros(l.p999_us),
            format_micros(l.max_us)
        );
    };
    row(&mut out, "all", r.requests, r.errors, &r.latency);
    for k in &r.per_key {
        row(&mut out, &k.key, k.requests, k.errors, &k.latency);
    }
    if !r.error_classes.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "errors:");
        for c in &r.error_classes {
            match &c.example {
                Some(e) => {
                    let _ = writeln!(out, "  {:>8}  {} (first: {e})", c.count, c.class);
                }
                None => {
                    let _ = writeln!(out, "  {:>8}  {}", c.count, c.class);
                }
            }
        }
    }
    for s in &r.servers {
        let peak_cpu = s.samples.iter().map(|x| x.1).fold(0.0, f64::max);
        let peak_rss = s.samples.iter().map(|x| x.2).max().unwrap_or(0);
        let _ = writeln!(
            out,
            "server pid {}: CPU up to {peak_cpu:.0} % of a core, RSS up to {}",
            s.pid,
            crate::text::human_bytes(peak_rss * 1024)
        );
    }
    if let Some(knee) = &r.knee {
        let _ = writeln!(out, "knee: {}", knee.why);
    }
    if let Some(behind) = r.generator_fell_behind() {
        let _ = writeln!(
            out,
            "warning: the generator fell behind by {} (p99 of how late it woke for a due send): the \
             asked rate was more than this machine could generate, so the figures understate it",
            format_micros(behind.as_micros() as u64)
        );
    }
    out
}

pub fn json(r: &Report) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}

/// JUnit XML: a case per method or tool, failed when it had errors.
pub fn junit(r: &Report) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let failures = r.per_key.iter().filter(|k| k.errors > 0).count();
    let _ = writeln!(
        out,
        "<testsuites><testsuite name=\"mcpscope load\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{:.3}\">",
        r.per_key.len(),
        r.duration_s
    );
    for k in &r.per_key {
        let _ = write!(
            out,
            "<testcase classname=\"mcpscope.load\" name=\"{}\" time=\"{:.6}\">",
            xml_escape(&k.key),
            k.latency.mean_us as f64 / 1e6 * k.requests as f64
        );
        let summary = format!(
            "{} requests, {} errors; p50 {}, p99 {}, max {}",
            k.requests,
            k.errors,
            format_micros(k.latency.p50_us),
            format_micros(k.latency.p99_us),
            format_micros(k.latency.max_us)
        );
        if k.errors > 0 {
            let classes: Vec<String> = r
                .error_classes
                .iter()
                .map(|c| format!("{} × {}", c.count, c.class))
                .collect();
            let _ = write!(
                out,
                "<failure message=\"{}\">{}</failure>",
                xml_escape(&format!("{} of {} requests failed", k.errors, k.requests)),
                xml_escape(&classes.join("\n"))
            );
        }
        let _ = writeln!(out, "<system-out>{}</system-out></testcase>", xml_escape(&summary));
    }
    out.push_str("</testsuite></testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::stats::Outcome;

    fn report() -> Report {
        let mut s = Stats::new(Duration::ZERO);
        for i in 0..100 {
            s.record(
                Duration::from_millis(i * 10),
                "tools/call echo",
                Duration::from_micros(300 + i),
                &Outcome::Ok,
            );
        }
        s.record(
            Duration::from_millis(5),
            "tools/list",
            Duration::from_millis(2),
            &Outcome::RpcError(-32601),
        );
        s.report(Duration::from_secs(1))
    }

    #[test]
    fn the_table_names_every_key_and_error_class() {
        let t = text(&report());
        assert!(
            t.starts_with("101 requests in 1.00 s: 101.0 req/s, 100 ok, 1 failed"),
            "{t}"
        );
        assert!(t.contains("tools/call echo"), "{t}");
        assert!(t.contains("JSON-RPC error -32601"), "{t}");
    }

    #[test]
    fn junit_fails_the_keys_with_errors() {
        let x = junit(&report());
        assert!(x.contains("tests=\"2\" failures=\"1\""), "{x}");
        assert!(x.contains("name=\"tools/list\""), "{x}");
        assert!(x.contains("<failure message=\"1 of 1 requests failed\">"), "{x}");
        let v: serde_json::Value = serde_json::from_str(&json(&report())).unwrap();
        assert_eq!(v["requests"], 101);
    }
}
