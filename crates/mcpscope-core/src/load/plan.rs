//! What a load run sends and when (sans I/O): the workload (one request, a
//! weighted mix, or the client side of a capture), the timetable of an open
//! loop (wrk2's constant rate: send `k` is due at `k / rate`, and its
//! latency counts from then, so a stalled server cannot hide its queue), and
//! a ramp of concurrency.

use serde_json::Value;
use std::time::Duration;

/// One request of the workload.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestSpec {
    pub method: String,
    pub params: Option<Value>,
}

impl RequestSpec {
    /// How results are grouped: the method, and for `tools/call` and
    /// `prompts/get` the name (`tools/call echo`).
    pub fn key(&self) -> String {
        let name = match self.method.as_str() {
            "tools/call" | "prompts/get" => self.params.as_ref().and_then(|p| p.get("name")).and_then(Value::as_str),
            "resources/read" => self.params.as_ref().and_then(|p| p.get("uri")).and_then(Value::as_str),
            _ => None,
        };
        match name {
            Some(n) => format!("{} {n}", self.method),
            None => self.method.clone(),
        }
    }
}

/// What every session sends, in turn.
#[derive(Clone, Debug, PartialEq)]
pub enum Workload {
    /// The same request each time.
    One(RequestSpec),
    /// Requests in proportion to their weights, spread evenly (smooth
    /// weighted round robin: 70/20/10 gives exactly 7, 2 and 1 in every ten).
    Mix(Vec<(u32, RequestSpec)>),
    /// A capture's client requests, in their order, over and over.
    Sequence(Vec<RequestSpec>),
}

/// Why a mix file was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MixError {
    #[error("the mix is not JSON: {0}")]
    NotJson(String),
    #[error("the mix must be a JSON array (or {{\"mix\": [...]}}) of {{\"weight\", \"method\", \"params\"}}")]
    NotAList,
    #[error("mix entry {0}: {1}")]
    Entry(usize, String),
    #[error("the mix has no entry with a weight above 0")]
    Empty,
}

impl Workload {
    /// A mix file: `[{"weight": 70, "method": "tools/call", "params": {...}}, ...]`
    /// (or the same under `"mix"`); `"tool": "echo", "arguments": {...}` is
    /// short for a `tools/call`.
    pub fn parse_mix(text: &str) -> Result<Workload, MixError> {
        let v: Value = serde_json::from_str(text).map_err(|e| MixError::NotJson(e.to_string()))?;
        let list = v
            .as_array()
            .or_else(|| v.get("mix").and_then(Value::as_array))
            .ok_or(MixError::NotAList)?;
        let mut out = Vec::new();
        for (i, e) in list.iter().enumerate() {
            let n = i + 1;
            let weight = match e.get("weight") {
                None => 1,
                Some(w) => w
                    .as_u64()
                    .and_then(|w| u32::try_from(w).ok())
                    .ok_or_else(|| MixError::Entry(n, "\"weight\" must be a whole number".into()))?,
            };
            let spec = if let Some(tool) = e.get("tool") {
                let name = tool
                    .as_str()
                    .ok_or_else(|| MixError::Entry(n, "\"tool\" must be a string".into()))?;
                RequestSpec {
                    method: "tools/call".into(),
                    params: Some(serde_json::json!({
                        "name": name,
                        "arguments": e.get("arguments").cloned().unwrap_or_else(|| serde_json::json!({})),
                    })),
                }
            } else {
                let method = e
                    .get("method")
                    .and_then(Value::as_str)
                    .ok_or_else(|| MixError::Entry(n, "needs \"method\" (or \"tool\")".into()))?;
                let params = e.get("params").cloned();
                if params.as_ref().is_some_and(|p| !p.is_object()) {
                    return Err(MixError::Entry(n, "\"params\" must be an object".into()));
                }
                RequestSpec {
                    method: method.to_owned(),
                    params,
                }
            };
            if weight > 0 {
                out.push((weight, spec));
            }
        }
        if out.is_empty() {
            return Err(MixError::Empty);
        }
        Ok(Workload::Mix(out))
    }

    /// A picker for one session (each session starts the sequence afresh).
    pub fn picker(&self) -> Picker {
        let n = match self {
            Workload::One(_) => 1,
            Workload::Mix(m) => m.len(),
            Workload::Sequence(s) => s.len(),
        };
        Picker {
            current: vec![0; n],
            next: 0,
        }
    }

    /// The next request for `picker`.
    pub fn next<'a>(&'a self, picker: &mut Picker) -> &'a RequestSpec {
        match self {
            Workload::One(r) => r,
            Workload::Sequence(s) => {
                let r = &s[picker.next % s.len()];
                picker.next += 1;
                r
            }
            Workload::Mix(m) => {
                // nginx's smooth weighted round robin.
                let total: i64 = m.iter().map(|(w, _)| i64::from(*w)).sum();
                let mut best = 0;
                for (i, (w, _)) in m.iter().enumerate() {
                    picker.current[i] += i64::from(*w);
                    if picker.current[i] > picker.current[best] {
                        best = i;
                    }
                }
                picker.current[best] -= total;
                &m[best].1
            }
        }
    }

    /// Every key the workload can produce (the report lists them all).
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = match self {
            Workload::One(r) => vec![r.key()],
            Workload::Mix(m) => m.iter().map(|(_, r)| r.key()).collect(),
            Workload::Sequence(s) => s.iter().map(RequestSpec::key).collect(),
        };
        keys.sort();
        keys.dedup();
        keys
    }
}

/// Where a session is in its workload.
#[derive(Clone, Debug)]
pub struct Picker {
    current: Vec<i64>,
    next: usize,
}

/// An open loop's timetable: send `k` is due at `k / rate` after the start.
#[derive(Clone, Copy, Debug)]
pub struct Timetable {
    period_ns: f64,
}

impl Timetable {
    pub fn new(rate_per_sec: f64) -> Timetable {
        Timetable {
            period_ns: 1e9 / rate_per_sec,
        }
    }

    /// When send `k` is due, from the start.
    pub fn due(&self, k: u64) -> Duration {
        Duration::from_nanos((k as f64 * self.period_ns).round() as u64)
    }

    /// How many sends are due by `elapsed` (the first is due at 0).
    pub fn due_by(&self, elapsed: Duration) -> u64 {
        (elapsed.as_nanos() as f64 / self.period_ns).floor() as u64 + 1
    }
}

/// The most sessions a run opens at once (or a ramp rises to). Each is a
/// task with its own connection and buffers (over stdio a thread and a
/// server process), so this bounds what a mistyped count can allocate;
/// no single generator drives more than this usefully anyway.
pub const MAX_SESSIONS: usize = 10_000;

/// The most requests one session keeps in flight (each waits in memory
/// for its answer).
pub const MAX_IN_FLIGHT: usize = 1_000;

/// A run larger than the generator takes.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SizeError {
    #[error("{0} sessions: at most {MAX_SESSIONS} run at once")]
    Sessions(usize),
    #[error("{0} requests in flight per session: at most {MAX_IN_FLIGHT}")]
    InFlight(usize),
}

/// Refuses a run of more sessions, or more requests in flight per
/// session, than the limits above.
pub fn check_sizes(sessions: usize, in_flight: usize) -> Result<(), SizeError> {
    if sessions > MAX_SESSIONS {
        return Err(SizeError::Sessions(sessions));
    }
    if in_flight > MAX_IN_FLIGHT {
        return Err(SizeError::InFlight(in_flight));
    }
    Ok(())
}

/// Why a `--ramp` was refused; `text` is the ramp as given.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RampError {
    #[error("--ramp {0:?}: expected FROM..TO over DURATION, e.g. 1..64 over 60s")]
    Form(String),
    #[error("--ramp {text:?}: {error}")]
    Duration {
        text: String,
        error: crate::duration::DurationError,
    },
    #[error("--ramp {0:?}: FROM must be at least 1, TO at least FROM, DURATION above 0")]
    Order(String),
    #[error("--ramp {text:?}: TO is {error}")]
    Size { text: String, error: SizeError },
}

/// `--ramp FROM..TO over DURATION`: concurrency rises a step at a time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ramp {
    pub from: usize,
    pub to: usize,
    pub over: Duration,
}

impl Ramp {
    /// `1..64 over 60s`.
    pub fn parse(s: &str) -> Result<Ramp, RampError> {
        let bad = || RampError::Form(s.to_owned());
        let (range, over) = s.split_once(" over ").ok_or_else(bad)?;
        let (from, to) = range.trim().split_once("..").ok_or_else(bad)?;
        let from: usize = from.trim().parse().map_err(|_| bad())?;
        let to: usize = to.trim().parse().map_err(|_| bad())?;
        let over = crate::duration::parse(over).map_err(|error| RampError::Duration {
            text: s.to_owned(),
            error,
        })?;
        if from == 0 || to < from || over.is_zero() {
            return Err(RampError::Order(s.to_owned()));
        }
        check_sizes(to, 1).map_err(|error| RampError::Size {
            text: s.to_owned(),
            error,
        })?;
        Ok(Ramp { from, to, over })
    }

    /// The steps: (start, concurrency), one per level, evenly spaced.
    pub fn steps(&self) -> Vec<(Duration, usize)> {
        let levels = self.to - self.from + 1;
        // At most one step a second, so each level gets enough requests to judge.
        let n = levels.min((self.over.as_secs().max(1)) as usize).max(1);
        (0..n)
            .map(|i| {
                let at = self.over.mul_f64(i as f64 / n as f64);
                let level = if n == 1 {
                    self.to
                } else {
                    self.from + ((self.to - self.from) as f64 * i as f64 / (n - 1) as f64).round() as usize
                };
                (at, level)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(method: &str) -> RequestSpec {
        RequestSpec {
            method: method.into(),
            params: None,
        }
    }

    #[test]
    fn a_mix_keeps_its_proportions_exactly_and_evenly() {
        let w = Workload::Mix(vec![(70, spec("a")), (20, spec("b")), (10, spec("c"))]);
        let mut p = w.picker();
        let first: Vec<&str> = (0..10).map(|_| w.next(&mut p).method.as_str()).collect();
        assert_eq!(first.iter().filter(|m| **m == "a").count(), 7);
        assert_eq!(first.iter().filter(|m| **m == "b").count(), 2);
        assert_eq!(first.iter().filter(|m| **m == "c").count(), 1);
        // Spread out, not 7 a's in a row.
        assert!(first[..4].contains(&"b") || first[..4].contains(&"c"), "{first:?}");
    }

    #[test]
    fn a_mix_file_is_read_and_refused_with_reasons() {
        let w = Workload::parse_mix(
            r#"{"mix": [{"weight": 70, "tool": "echo", "arguments": {"message": "hi"}},
                        {"weight": 20, "method": "resources/read", "params": {"uri": "test://1"}},
                        {"weight": 10, "method": "tools/list"}]}"#,
        )
        .unwrap();
        assert_eq!(w.keys(), ["resources/read test://1", "tools/call echo", "tools/list"]);
        assert_eq!(Workload::parse_mix("[]"), Err(MixError::Empty));
        assert_eq!(Workload::parse_mix("{}"), Err(MixError::NotAList));
        assert!(matches!(Workload::parse_mix("nope"), Err(MixError::NotJson(_))));
        assert_eq!(
            Workload::parse_mix(r#"[{"weight": -1, "method": "x"}]"#),
            Err(MixError::Entry(1, "\"weight\" must be a whole number".into()))
        );
        assert!(matches!(
            Workload::parse_mix(r#"[{"method": "x", "params": 3}]"#),
            Err(MixError::Entry(1, _))
        ));
        let key = RequestSpec {
            method: "tools/call".into(),
            params: Some(json!({"name": "echo"})),
        }
        .key();
        assert_eq!(key, "tools/call echo");
    }

    #[test]
    fn the_timetable_is_fixed_whatever_happens() {
        let t = Timetable::new(1000.0);
        assert_eq!(t.due(0), Duration::ZERO);
        assert_eq!(t.due(1500), Duration::from_millis(1500));
        assert_eq!(t.due_by(Duration::from_millis(999)), 1000);
        let third = Timetable::new(3.0);
        assert_eq!(third.due(1), Duration::from_nanos(333_333_333));
    }

    #[test]
    fn ramps_parse() {
        let r = Ramp::parse("1..64 over 60s").unwrap();
        let steps = r.steps();
        assert_eq!(steps.len(), 60);
        assert_eq!(steps[0], (Duration::ZERO, 1));
        assert_eq!(steps.last().unwrap().1, 64);
        assert!(steps.windows(2).all(|w| w[0].1 <= w[1].1 && w[0].0 < w[1].0));
        let small = Ramp::parse("2..4 over 30s").unwrap().steps();
        assert_eq!(small.iter().map(|s| s.1).collect::<Vec<_>>(), [2, 3, 4]);
        assert_eq!(
            Ramp::parse("0..4 over 1s"),
            Err(RampError::Order("0..4 over 1s".into()))
        );
        assert_eq!(
            Ramp::parse("8..4 over 1s"),
            Err(RampError::Order("8..4 over 1s".into()))
        );
        assert_eq!(
            Ramp::parse("1..4 over 0s").unwrap_err().to_string(),
            "--ramp \"1..4 over 0s\": FROM must be at least 1, TO at least FROM, DURATION above 0"
        );
        assert_eq!(
            Ramp::parse("1-4 for 1s").unwrap_err().to_string(),
            "--ramp \"1-4 for 1s\": expected FROM..TO over DURATION, e.g. 1..64 over 60s"
        );
        let e = Ramp::parse("1..1000000000 over 2s").unwrap_err();
        assert!(matches!(e, RampError::Size { .. }), "{e:?}");
        assert!(
            e.to_string()
                .contains("TO is 1000000000 sessions: at most 10000 run at once"),
            "{e}"
        );
        assert!(Ramp::parse("1..10000 over 2s").is_ok());
        let e = Ramp::parse("1..2 over 18446744073709551615s").unwrap_err();
        assert!(matches!(e, RampError::Duration { .. }), "{e:?}");
        assert!(e.to_string().contains("longer than 8760h"), "{e}");
    }

    #[test]
    fn runs_larger_than_the_generator_takes_are_refused() {
        assert_eq!(check_sizes(MAX_SESSIONS, MAX_IN_FLIGHT), Ok(()));
        assert_eq!(check_sizes(1_000_000_000, 1), Err(SizeError::Sessions(1_000_000_000)));
        assert_eq!(
            check_sizes(1, MAX_IN_FLIGHT + 1),
            Err(SizeError::InFlight(MAX_IN_FLIGHT + 1))
        );
        assert_eq!(
            SizeError::Sessions(usize::MAX).to_string(),
            format!("{} sessions: at most 10000 run at once", usize::MAX)
        );
    }
}
