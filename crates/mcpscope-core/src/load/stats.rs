//! What a load run measured (sans I/O): HDR histograms of latency overall
//! and per method or tool, errors by class, a per-second series (the live
//! progress line, the app's plots, a ramp's steps), how far the generator
//! itself fell behind its timetable, and a ramp's knee.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// How one request ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// A tool result with `isError: true` (the tool failed; the protocol did not).
    ToolError,
    /// A JSON-RPC error, by code.
    RpcError(i64),
    Timeout,
    /// An HTTP status other than 2xx.
    HttpStatus(u16),
    /// The connection failed or the answer could not be read.
    Transport(String),
    /// An answer to another request (another id): this one was not answered,
    /// whatever the answer says. What came instead.
    MismatchedId(String),
    /// The stdio server exited.
    ServerExited,
}

impl Outcome {
    /// The error class, as the report groups errors; `None` for success.
    pub fn class(&self) -> Option<String> {
        match self {
            Outcome::Ok => None,
            Outcome::ToolError => Some("isError (tool failed)".into()),
            Outcome::RpcError(code) => Some(format!("JSON-RPC error {code}")),
            Outcome::Timeout => Some("timeout".into()),
            Outcome::HttpStatus(s) => Some(format!("HTTP {s}")),
            Outcome::Transport(_) => Some("transport failure".into()),
            Outcome::MismatchedId(_) => Some("mismatched id".into()),
            Outcome::ServerExited => Some("server exited".into()),
        }
    }
}

fn histogram() -> Histogram<u64> {
    // Microseconds from 1 µs to an hour, 3 significant digits (as wrk2).
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds")
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    pub mean_us: u64,
}

fn percentiles(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    Percentiles {
        p50_us: h.value_at_quantile(0.5),
        p90_us: h.value_at_quantile(0.9),
        p99_us: h.value_at_quantile(0.99),
        p999_us: h.value_at_quantile(0.999),
        max_us: h.max(),
        mean_us: h.mean().round() as u64,
    }
}

struct KeyStats {
    hist: Histogram<u64>,
    count: u64,
    errors: u64,
}

struct Second {
    count: u64,
    errors: u64,
    hist: Histogram<u64>,
    concurrency: usize,
}

/// Everything recorded so far.
pub struct Stats {
    warmup: Duration,
    overall: Histogram<u64>,
    keys: BTreeMap<String, KeyStats>,
    errors: BTreeMap<String, u64>,
    first_errors: BTreeMap<String, String>,
    seconds: Vec<Second>,
    late: Histogram<u64>,
    ok: u64,
    failed: u64,
    warmup_requests: u64,
    /// The concurrency over time: (from, level), in order.
    levels: Vec<(Duration, usize)>,
}

impl Stats {
    /// Results that end before `warmup` are counted apart, not in the figures.
    pub fn new(warmup: Duration) -> Stats {
        Stats {
            warmup,
            overall: histogram(),
            keys: BTreeMap::new(),
            errors: BTreeMap::new(),
            first_errors: BTreeMap::new(),
            seconds: Vec::new(),
            late: histogram(),
            ok: 0,
            failed: 0,
            warmup_requests: 0,
            levels: Vec::new(),
        }
    }

    /// The concurrency of the whole run, for the series.
    pub fn set_concurrency(&mut self, n: usize) {
        self.levels = vec![(Duration::ZERO, n)];
    }

    /// A ramp's schedule: (from, level) since the start. A second of the
    /// series is labelled with the level in force when it began.
    pub fn set_levels(&mut self, levels: Vec<(Duration, usize)>) {
        self.levels = levels;
    }

    fn level_at(levels: &[(Duration, usize)], at: Duration) -> usize {
        levels
            .iter()
            .take_while(|(from, _)| *from <= at)
            .last()
            .map_or(0, |(_, n)| *n)
    }

    /// A request of `key` that ended `at` (since the start) after `latency`.
    pub fn record(&mut self, at: Duration, key: &str, latency: Duration, outcome: &Outcome) {
        if at < self.warmup {
            self.warmup_requests += 1;
            return;
        }
        let us = (latency.as_micros() as u64).clamp(1, 3_600_000_000);
        let _ = self.overall.record(us);
        let k = self.keys.entry(key.to_owned()).or_insert_with(|| KeyStats {
            hist: histogram(),
            count: 0,
            errors: 0,
        });
        let _ = k.hist.record(us);
        k.count += 1;
        let i = (at - self.warmup).as_secs() as usize;
        while self.seconds.len() <= i {
            let began = self.warmup + Duration::from_secs(self.seconds.len() as u64);
            self.seconds.push(Second {
                count: 0,
                errors: 0,
                hist: histogram(),
                concurrency: Self::level_at(&self.levels, began),
            });
        }
        let s = &mut self.seconds[i];
        s.count += 1;
        let _ = s.hist.record(us);
        match outcome.class() {
            None => self.ok += 1,
            Some(class) => {
                self.failed += 1;
                k.errors += 1;
                s.errors += 1;
                if let Outcome::Transport(why) | Outcome::MismatchedId(why) = outcome {
                    self.first_errors.entry(class.clone()).or_insert_with(|| why.clone());
                }
                *self.errors.entry(class).or_default() += 1;
            }
        }
    }

    /// The generator woke `late` after a send was due (its own saturation,
    /// not the server's: the connection was free).
    pub fn record_lateness(&mut self, late: Duration) {
        let _ = self.late.record((late.as_micros() as u64).clamp(1, 3_600_000_000));
    }

    pub fn requests(&self) -> u64 {
        self.ok + self.failed
    }

    /// The figures, for a run that has lasted `elapsed` (warm-up included).
    pub fn report(&self, elapsed: Duration) -> Report {
        let measured = elapsed.saturating_sub(self.warmup);
        let secs = measured.as_secs_f64().max(1e-9);
        let total = self.requests();
        let behind = (!self.late.is_empty()).then(|| self.late.value_at_quantile(0.99));
        Report {
            duration_s: measured.as_secs_f64(),
            requests: total,
            ok: self.ok,
            errors: self.failed,
            warmup_requests: self.warmup_requests,
            throughput: total as f64 / secs,
            latency: percentiles(&self.overall),
            per_key: self
                .keys
                .iter()
                .map(|(k, s)| KeyReport {
                    key: k.clone(),
                    requests: s.count,
                    errors: s.errors,
                    latency: percentiles(&s.hist),
                })
                .collect(),
            error_classes: self
                .errors
                .iter()
                .map(|(class, n)| ErrorClass {
                    class: class.clone(),
                    count: *n,
                    example: self.first_errors.get(class).cloned(),
                })
                .collect(),
            series: self
                .seconds
                .iter()
                .enumerate()
                .map(|(i, s)| SecondReport {
                    second: i as u64,
                    requests: s.count,
                    errors: s.errors,
                    p50_us: if s.hist.is_empty() {
                        0
                    } else {
                        s.hist.value_at_quantile(0.5)
                    },
                    p99_us: if s.hist.is_empty() {
                        0
                    } else {
                        s.hist.value_at_quantile(0.99)
                    },
                    concurrency: s.concurrency,
                })
                .collect(),
            generator_behind_p99_us: behind,
            knee: None,
            servers: Vec::new(),
            sessions_ready_ms: None,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct KeyReport {
    pub key: String,
    pub requests: u64,
    pub errors: u64,
    pub latency: Percentiles,
}

#[derive(Clone, Debug, Serialize)]
pub struct ErrorClass {
    pub class: String,
    pub count: u64,
    /// The first transport failure's or mismatched answer's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SecondReport {
    pub second: u64,
    pub requests: u64,
    pub errors: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub concurrency: usize,
}

/// A stdio server's CPU and memory, sampled from /proc.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServerUsage {
    pub pid: u32,
    /// (second, CPU % of one core over that second, RSS in KiB).
    pub samples: Vec<(u64, f64, u64)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Knee {
    pub concurrency: usize,
    pub why: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub duration_s: f64,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub warmup_requests: u64,
    pub throughput: f64,
    pub latency: Percentiles,
    pub per_key: Vec<KeyReport>,
    pub error_classes: Vec<ErrorClass>,
    pub series: Vec<SecondReport>,
    /// The p99 of how late the generator itself woke for a due send.
    pub generator_behind_p99_us: Option<u64>,
    pub knee: Option<Knee>,
    pub servers: Vec<ServerUsage>,
    /// How long the sessions took to start and shake hands before the
    /// run's clock (its timetable, its duration, every latency) started.
    pub sessions_ready_ms: Option<u64>,
}

impl Report {
    /// Whether the generator's own lateness makes the figures suspect (it
    /// could not keep the asked rate): said in the report.
    pub fn generator_fell_behind(&self) -> Option<Duration> {
        self.generator_behind_p99_us
            .filter(|&us| us > 10_000)
            .map(Duration::from_micros)
    }

    /// A ramp's knee: the first step whose p99 is more than twice the best
    /// p99 of the steps before it (and 1 ms worse), or whose errors pass 1 %.
    pub fn find_knee(&mut self) {
        let mut by_level: Vec<(usize, u64, u64, Vec<u64>)> = Vec::new();
        for s in &self.series {
            match by_level.last_mut() {
                Some(last) if last.0 == s.concurrency => {
                    last.1 += s.requests;
                    last.2 += s.errors;
                    last.3.push(s.p99_us);
                }
                _ => by_level.push((s.concurrency, s.requests, s.errors, vec![s.p99_us])),
            }
        }
        let mut best: Option<u64> = None;
        for (level, requests, errors, p99s) in by_level {
            // Too few to judge (the run's last, partial second).
            if requests < 20 {
                continue;
            }
            let p99 = p99s.iter().copied().max().unwrap_or(0);
            if errors * 100 > requests {
                self.knee = Some(Knee {
                    concurrency: level,
                    why: format!(
                        "errors reach {:.1} % at {level} in flight",
                        errors as f64 * 100.0 / requests as f64
                    ),
                });
                return;
            }
            if let Some(b) = best
                && p99 > 2 * b
                && p99 > b + 1000
            {
                self.knee = Some(Knee {
                    concurrency: level,
                    why: format!(
                        "p99 jumps to {} at {level} in flight (best before: {})",
                        crate::text::format_micros(p99),
                        crate::text::format_micros(b)
                    ),
                });
                return;
            }
            best = Some(best.map_or(p99, |b| b.min(p99)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn errors_are_classed_and_warmup_is_left_out() {
        let mut s = Stats::new(Duration::from_secs(1));
        s.record(Duration::from_millis(500), "ping", MS, &Outcome::Ok);
        s.record(Duration::from_millis(1500), "ping", MS, &Outcome::Ok);
        s.record(Duration::from_millis(1600), "tools/call echo", MS, &Outcome::ToolError);
        s.record(
            Duration::from_millis(1700),
            "tools/call echo",
            MS,
            &Outcome::RpcError(-32602),
        );
        s.record(Duration::from_millis(1800), "ping", MS, &Outcome::HttpStatus(503));
        s.record(
            Duration::from_millis(2100),
            "ping",
            MS,
            &Outcome::Transport("reset".into()),
        );
        let r = s.report(Duration::from_secs(3));
        assert_eq!(r.warmup_requests, 1);
        assert_eq!((r.requests, r.ok, r.errors), (5, 1, 4));
        assert!((r.throughput - 2.5).abs() < 1e-9);
        let classes: Vec<(&str, u64)> = r.error_classes.iter().map(|c| (c.class.as_str(), c.count)).collect();
        assert_eq!(
            classes,
            [
                ("HTTP 503", 1),
                ("JSON-RPC error -32602", 1),
                ("isError (tool failed)", 1),
                ("transport failure", 1)
            ]
        );
        assert_eq!(r.error_classes[3].example.as_deref(), Some("reset"));
        assert_eq!(r.per_key.iter().find(|k| k.key == "tools/call echo").unwrap().errors, 2);
        assert_eq!(r.series.len(), 2);
    }

    /// #47 item 6: an answer carrying another id is an error of its own
    /// class with what came, never a success.
    #[test]
    fn a_mismatched_id_is_an_error_of_its_own_class() {
        let mut s = Stats::new(Duration::ZERO);
        let wrong = Outcome::MismatchedId("answered id 7 to request id 1".into());
        assert_eq!(wrong.class().as_deref(), Some("mismatched id"));
        s.record(MS, "ping", MS, &wrong);
        s.record(
            MS,
            "ping",
            MS,
            &Outcome::MismatchedId("answered id 8 to request id 2".into()),
        );
        let r = s.report(Duration::from_secs(1));
        assert_eq!((r.requests, r.ok, r.errors), (2, 0, 2));
        assert_eq!(r.error_classes.len(), 1);
        assert_eq!(r.error_classes[0].class, "mismatched id");
        assert_eq!(r.error_classes[0].count, 2);
        assert_eq!(
            r.error_classes[0].example.as_deref(),
            Some("answered id 7 to request id 1")
        );
    }

    /// wrk2's point: a server that stalls for a second, driven at a fixed
    /// rate. Measured from the due time, every request due during the stall
    /// waits for it (p99 near a second); measured from when a closed loop
    /// sent it, only the one in flight does, and p99 hides the stall.
    #[test]
    fn the_open_loop_sees_a_stall_a_closed_loop_hides() {
        let rate = 1000.0;
        let t = crate::load::plan::Timetable::new(rate);
        let service = Duration::from_micros(200);
        let stall_at = Duration::from_secs(2);
        let stall = Duration::from_secs(1);
        // Open loop, one connection: each send waits for the previous answer.
        let mut open = Stats::new(Duration::ZERO);
        let mut free_at = Duration::ZERO;
        for k in 0..5000 {
            let due = t.due(k);
            let start = due.max(free_at);
            // Nothing completes during the stall: what is in flight or sent
            // then is answered when it ends.
            let end = if start < stall_at + stall && start + service > stall_at {
                stall_at + stall + service
            } else {
                start + service
            };
            free_at = end;
            open.record(end, "x", end - due, &Outcome::Ok);
        }
        // Closed loop: latency from the actual send; one request sees the stall.
        let mut closed = Stats::new(Duration::ZERO);
        let mut now = Duration::ZERO;
        let mut stalled = false;
        while now < Duration::from_secs(5) {
            let mut took = service;
            if !stalled && now >= stall_at {
                took += stall;
                stalled = true;
            }
            now += took;
            closed.record(now, "x", took, &Outcome::Ok);
        }
        let open = open.report(Duration::from_secs(5));
        let closed = closed.report(Duration::from_secs(5));
        assert!(open.latency.p99_us > 500_000, "open p99 {}", open.latency.p99_us);
        assert!(closed.latency.p99_us < 1_000, "closed p99 {}", closed.latency.p99_us);
        assert!(closed.latency.max_us > 900_000, "the max shows it once");
    }

    #[test]
    fn the_knee_is_where_p99_or_errors_jump() {
        let mut s = Stats::new(Duration::ZERO);
        s.set_levels(vec![
            (Duration::ZERO, 1),
            (Duration::from_secs(1), 2),
            (Duration::from_secs(2), 4),
            (Duration::from_secs(3), 8),
            (Duration::from_secs(4), 16),
        ]);
        for (sec, p99_ms, errors) in [(0, 1, 0), (1, 1, 0), (2, 2, 0), (3, 9, 0), (4, 40, 50)] {
            for i in 0..100u64 {
                let at = Duration::from_secs(sec) + Duration::from_millis(i);
                // Two in a hundred take p99_ms: the level's p99.
                let lat = if i < 2 { Duration::from_millis(p99_ms) } else { MS / 2 };
                let outcome = if i < errors { Outcome::Timeout } else { Outcome::Ok };
                s.record(at, "x", lat, &outcome);
            }
        }
        let mut r = s.report(Duration::from_secs(5));
        r.find_knee();
        let knee = r.knee.expect("a knee");
        assert_eq!(knee.concurrency, 8, "{}", knee.why);
        assert!(knee.why.contains("p99 jumps"), "{}", knee.why);
    }

    #[test]
    fn a_late_generator_is_said() {
        let mut s = Stats::new(Duration::ZERO);
        s.record_lateness(Duration::from_micros(50));
        assert_eq!(s.report(Duration::from_secs(1)).generator_fell_behind(), None);
        for _ in 0..10 {
            s.record_lateness(Duration::from_millis(40));
        }
        assert!(s.report(Duration::from_secs(1)).generator_fell_behind().unwrap() >= Duration::from_millis(39));
    }
}
