//! Which recorded exchange answers a live request.

use crate::replay::index::{Exchange, HANDSHAKE_METHODS};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// `--match`: how a live request finds its recorded exchange.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rule {
    /// Same method, same params once `_meta`, `progressToken` and key order
    /// are set aside. The handshake is matched by method alone when its params
    /// differ: they name the client, which is rarely the recorded one.
    #[default]
    MethodParams,
    /// Same method and the same params, `_meta` included (key order aside).
    Strict,
    /// The n-th request gets the n-th recorded answer, if the method is the same.
    Sequence,
}

/// `--exhausted`: what a request gets once its recorded answers are used up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Exhausted {
    /// The last recorded answer again.
    #[default]
    Repeat,
    /// A JSON-RPC error saying so.
    Error,
}

/// The outcome for one live request.
#[derive(Clone, Debug, PartialEq)]
pub enum Pick {
    /// Serve this exchange (its index). `lenient` when the handshake was
    /// matched by method only.
    Serve {
        exchange: usize,
        lenient: bool,
    },
    /// Every recorded answer was served and `--exhausted error` is on.
    Exhausted {
        exchange: usize,
        served: usize,
    },
    Miss(Miss),
}

/// A request the capture has no answer for.
#[derive(Clone, Debug, PartialEq)]
pub struct Miss {
    /// Whether any recorded request has this method.
    pub method_known: bool,
    /// The closest recorded exchange, or a method name that looks like it.
    pub nearest: Option<Nearest>,
    /// For `sequence`: why the position did not fit.
    pub note: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Nearest {
    Exchange(usize),
    Method(String),
}

/// Params as compared: `_meta` and `progressToken` removed at every depth,
/// absent and `null` the same as `{}`, and a top-level member that is `{}`
/// or `null` the same as an absent one (`"arguments": {}` is no arguments:
/// clients differ in which they send, servers do not).
pub fn normalise(params: Option<&Value>) -> Value {
    fn strip(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(k, _)| k.as_str() != "_meta" && k.as_str() != "progressToken")
                    .map(|(k, v)| (k.clone(), strip(v)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
            other => other.clone(),
        }
    }
    match params {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(p) => {
            let mut v = strip(p);
            if let Value::Object(m) = &mut v {
                m.retain(|_, x| !(x.is_null() || x.as_object().is_some_and(Map::is_empty)));
            }
            v
        }
    }
}

/// A key that is the same for equal values whatever their key order.
pub fn canonical(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (n, k) in keys.into_iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&m[k.as_str()], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (n, x) in a.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut s = String::new();
    write(v, &mut s);
    s
}

/// How far apart two values are: the number of leaves that differ.
pub fn distance(a: &Value, b: &Value) -> usize {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut d = 0;
            for (k, v) in x {
                d += y.get(k).map_or_else(|| leaves(v), |w| distance(v, w));
            }
            d + y
                .iter()
                .filter(|(k, _)| !x.contains_key(*k))
                .map(|(_, v)| leaves(v))
                .sum::<usize>()
        }
        (Value::Array(x), Value::Array(y)) => {
            let common: usize = x.iter().zip(y).map(|(v, w)| distance(v, w)).sum();
            common
                + x.iter()
                    .skip(y.len())
                    .chain(y.iter().skip(x.len()))
                    .map(leaves)
                    .sum::<usize>()
        }
        _ if a == b => 0,
        _ => 1,
    }
}

fn leaves(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(leaves).sum::<usize>().max(1),
        Value::Array(a) => a.iter().map(leaves).sum::<usize>().max(1),
        _ => 1,
    }
}

/// Edit distance between two method names, for "did you mean".
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The matching state of one mock: which recorded answers were served.
///
/// Keys are hashes of (method, canonical params); a hash names candidates,
/// which are confirmed by comparing the params themselves, so a collision
/// costs a comparison and never a wrong answer.
pub struct Matcher {
    rule: Rule,
    exhausted: Exhausted,
    by_key: HashMap<u64, Vec<usize>>,
    /// Answers served per key, by the first exchange of the key.
    served: HashMap<usize, usize>,
    next_in_sequence: usize,
}

fn key_hash(method: &str, canonical: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    method.hash(&mut h);
    canonical.hash(&mut h);
    h.finish()
}

impl Matcher {
    pub fn new(exchanges: &[Exchange], rule: Rule, exhausted: Exhausted) -> Self {
        let mut m = Matcher {
            rule,
            exhausted,
            by_key: HashMap::new(),
            served: HashMap::new(),
            next_in_sequence: 0,
        };
        if rule != Rule::Sequence {
            for (i, e) in exchanges.iter().enumerate() {
                let key = key_hash(&e.method, &m.canonical_of(e.params().as_ref()));
                m.by_key.entry(key).or_default().push(i);
            }
        }
        m
    }

    fn canonical_of(&self, params: Option<&Value>) -> String {
        match self.rule {
            Rule::Strict => canonical(params.unwrap_or(&Value::Null)),
            _ => canonical(&normalise(params)),
        }
    }

    /// The exchange of `exchanges` (those given to [`Matcher::new`]) that
    /// answers `method` with `params`, and records that it did.
    pub fn pick(&mut self, exchanges: &[Exchange], method: &str, params: Option<&Value>) -> Pick {
        if self.rule == Rule::Sequence {
            return self.pick_in_sequence(exchanges, method, params);
        }
        let asked = self.canonical_of(params);
        let list: Vec<usize> = self
            .by_key
            .get(&key_hash(method, &asked))
            .map(|l| {
                l.iter()
                    .copied()
                    .filter(|&i| {
                        let e = &exchanges[i];
                        e.method == method && self.canonical_of(e.params().as_ref()) == asked
                    })
                    .collect()
            })
            .unwrap_or_default();
        if let (Some(&first), Some(&last)) = (list.first(), list.last()) {
            let served = self.served.entry(first).or_insert(0);
            let n = *served;
            *served += 1;
            return match (list.get(n), self.exhausted) {
                (Some(&exchange), _) => Pick::Serve {
                    exchange,
                    lenient: false,
                },
                (None, Exhausted::Error) => Pick::Exhausted {
                    exchange: last,
                    served: n,
                },
                (None, Exhausted::Repeat) => Pick::Serve {
                    exchange: last,
                    lenient: false,
                },
            };
        }
        if self.rule == Rule::MethodParams
            && HANDSHAKE_METHODS.contains(&method)
            && let Some(exchange) = exchanges.iter().position(|e| e.method == method)
        {
            return Pick::Serve {
                exchange,
                lenient: true,
            };
        }
        Pick::Miss(miss(exchanges, method, params, None))
    }

    fn pick_in_sequence(&mut self, exchanges: &[Exchange], method: &str, params: Option<&Value>) -> Pick {
        let i = self.next_in_sequence;
        match exchanges.get(i) {
            Some(e) if e.method == method => {
                self.next_in_sequence += 1;
                let lenient = normalise(e.params().as_ref()) != normalise(params);
                Pick::Serve { exchange: i, lenient }
            }
            Some(e) => {
                let note = format!("request {} of the recording is {}", i + 1, e.method);
                let mut miss = miss(exchanges, method, params, Some(note));
                miss.nearest = Some(Nearest::Exchange(i));
                Pick::Miss(miss)
            }
            None => {
                let note = format!("the recording has {} request(s), all served", exchanges.len());
                Pick::Miss(miss(exchanges, method, params, Some(note)))
            }
        }
    }
}

/// What a request without a recorded answer is closest to. Only misses get
/// here, so the recorded params are read again rather than kept.
fn miss(exchanges: &[Exchange], method: &str, params: Option<&Value>, note: Option<String>) -> Miss {
    let asked = normalise(params);
    let same = exchanges.iter().enumerate().filter(|(_, e)| e.method == method);
    let nearest = match same.min_by_key(|(_, e)| distance(&normalise(e.params().as_ref()), &asked)) {
        Some((best, _)) => Some(Nearest::Exchange(best)),
        None => {
            let mut names: Vec<&str> = exchanges.iter().map(|e| e.method.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            names
                .into_iter()
                .map(|m| (edit_distance(m, method), m))
                .filter(|(d, m)| *d <= (m.len().max(method.len()) / 2).max(2))
                .min()
                .map(|(_, m)| Nearest::Method(m.to_owned()))
        }
    };
    Miss {
        method_known: exchanges.iter().any(|e| e.method == method),
        nearest,
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::index::Answer;
    use serde_json::json;

    fn ex(method: &str, params: Value) -> Exchange {
        Exchange {
            seq: 0,
            at: Default::default(),
            method: method.into(),
            request: serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
                .unwrap(),
            answer: Answer::Never,
            during: vec![],
            after: vec![],
            sse: false,
        }
    }

    fn recorded() -> Vec<Exchange> {
        vec![
            ex("initialize", json!({"clientInfo": {"name": "mcpscope"}})),
            ex("tools/list", Value::Null),
            ex("tools/call", json!({"name": "echo", "arguments": {"message": "hi"}})),
            ex("tools/call", json!({"name": "echo", "arguments": {"message": "hi"}})),
            ex("tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 2}})),
        ]
    }

    fn serve(i: usize) -> Pick {
        Pick::Serve {
            exchange: i,
            lenient: false,
        }
    }

    #[test]
    fn normalisation_ignores_meta_progress_token_key_order_and_empty_params() {
        let a = json!({"name": "x", "_meta": {"progressToken": 1}, "arguments": {"b": 2, "a": 1}});
        let b = json!({"arguments": {"a": 1, "b": 2}, "name": "x", "progressToken": 9});
        assert_eq!(canonical(&normalise(Some(&a))), canonical(&normalise(Some(&b))));
        assert_eq!(normalise(None), json!({}));
        assert_eq!(normalise(Some(&json!({"_meta": {}}))), json!({}));
        // An empty `arguments` (the Inspector's) is none at all (mcpscope's, the SDKs').
        let inspector = json!({"name": "p", "arguments": {}});
        assert_eq!(normalise(Some(&inspector)), json!({"name": "p"}));
        // Deeper down, and non-empty, values are kept as they are.
        let nested = json!({"name": "p", "arguments": {"opts": {}}});
        assert_eq!(normalise(Some(&nested)), nested);
    }

    #[test]
    fn repeats_are_served_in_order_then_the_last_again() {
        let x = recorded();
        let mut m = Matcher::new(&x, Rule::MethodParams, Exhausted::Repeat);
        let p = json!({"arguments": {"message": "hi"}, "name": "echo", "_meta": {"progressToken": "t"}});
        assert_eq!(m.pick(&x, "tools/call", Some(&p)), serve(2));
        assert_eq!(m.pick(&x, "tools/call", Some(&p)), serve(3));
        assert_eq!(m.pick(&x, "tools/call", Some(&p)), serve(3));
        assert_eq!(m.pick(&x, "tools/list", Some(&json!({}))), serve(1));
    }

    #[test]
    fn exhausted_error_refuses_the_repeat() {
        let x = recorded();
        let mut m = Matcher::new(&x, Rule::MethodParams, Exhausted::Error);
        assert_eq!(m.pick(&x, "tools/list", None), serve(1));
        assert_eq!(
            m.pick(&x, "tools/list", None),
            Pick::Exhausted { exchange: 1, served: 1 }
        );
    }

    #[test]
    fn the_handshake_is_lenient_except_in_strict() {
        let x = recorded();
        let mut m = Matcher::new(&x, Rule::MethodParams, Exhausted::Repeat);
        let other = json!({"clientInfo": {"name": "claude"}});
        assert_eq!(
            m.pick(&x, "initialize", Some(&other)),
            Pick::Serve {
                exchange: 0,
                lenient: true
            }
        );
        let mut s = Matcher::new(&x, Rule::Strict, Exhausted::Repeat);
        assert!(matches!(s.pick(&x, "initialize", Some(&other)), Pick::Miss(_)));
    }

    #[test]
    fn strict_compares_meta_too() {
        let x = recorded();
        let mut s = Matcher::new(&x, Rule::Strict, Exhausted::Repeat);
        let p = json!({"name": "add", "arguments": {"b": 2, "a": 1}});
        assert_eq!(s.pick(&x, "tools/call", Some(&p)), serve(4));
        let with_meta = json!({"name": "add", "arguments": {"b": 2, "a": 1}, "_meta": {"x": 1}});
        assert!(matches!(s.pick(&x, "tools/call", Some(&with_meta)), Pick::Miss(_)));
    }

    #[test]
    fn misses_name_the_nearest() {
        let x = recorded();
        let mut m = Matcher::new(&x, Rule::MethodParams, Exhausted::Repeat);
        let Pick::Miss(miss) = m.pick(
            &x,
            "tools/call",
            Some(&json!({"name": "add", "arguments": {"a": 1, "b": 3}})),
        ) else {
            panic!()
        };
        assert!(miss.method_known);
        assert_eq!(miss.nearest, Some(Nearest::Exchange(4)));
        let Pick::Miss(miss) = m.pick(&x, "tools/lsit", None) else {
            panic!()
        };
        assert!(!miss.method_known);
        assert_eq!(miss.nearest, Some(Nearest::Method("tools/list".into())));
        let Pick::Miss(miss) = m.pick(&x, "completion/complete", None) else {
            panic!()
        };
        assert_eq!(miss.nearest, None);
    }

    #[test]
    fn sequence_follows_the_recording() {
        let x = recorded();
        let mut m = Matcher::new(&x, Rule::Sequence, Exhausted::Repeat);
        assert!(matches!(
            m.pick(&x, "initialize", None),
            Pick::Serve { exchange: 0, .. }
        ));
        let Pick::Miss(miss) = m.pick(&x, "tools/call", None) else {
            panic!()
        };
        assert_eq!(miss.nearest, Some(Nearest::Exchange(1)));
        assert_eq!(m.pick(&x, "tools/list", None), serve(1));
        assert!(matches!(
            m.pick(&x, "tools/call", None),
            Pick::Serve {
                exchange: 2,
                lenient: true
            }
        ));
    }

    #[test]
    fn distance_counts_differing_leaves() {
        assert_eq!(
            distance(&json!({"a": 1, "b": [1, 2]}), &json!({"a": 1, "b": [1, 3]})),
            1
        );
        assert_eq!(distance(&json!({"a": 1}), &json!({"c": {"d": 1, "e": 2}})), 3);
        assert_eq!(edit_distance("tools/lsit", "tools/list"), 2);
    }
}
