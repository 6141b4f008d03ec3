//! Running a predicate on one record. Whatever holds records (the app's
//! row store, a capture read record by record) implements [`Subject`];
//! cheap facts come from what it already decoded, paths are read from the
//! message text only when a field asks for them.

use super::ast::{CmpOp, Quantifier, Segment};
use super::compile::{Access, Const, Getter, HeaderSide, Pred, Rel, Rhs, SetConst};
use super::json::{self, V};
use crate::wire::message::RequestId;
use std::borrow::Cow;
use std::time::Duration;

/// One record, as a filter sees it.
pub trait Subject: Sized {
    /// `c2s`, `s2c`, `stderr`, `note`, `auth` or `http`.
    fn dir(&self) -> &'static str;
    /// One of [`super::fields::KINDS`].
    fn kind(&self) -> &'static str;
    fn seq(&self) -> Option<u64>;
    fn time(&self) -> Duration;
    /// The line as it was sent (for a note, its text; for an authorization
    /// or HTTP record, the record).
    fn raw(&self) -> &[u8];
    fn session(&self) -> Option<&str>;
    fn transport(&self) -> Option<&str>;
    fn era(&self) -> Option<&str>;
    /// The id as classified, where the holder kept it.
    fn id(&self) -> Option<RequestId>;
    /// The JSON-RPC method of a request or notification.
    fn method(&self) -> Option<&str>;
    fn error_code(&self) -> Option<i64>;
    /// The JSON text paths are read from: the message of a frame, the
    /// record of an authorization step or HTTP exchange.
    fn message(&self) -> Option<&str>;
    /// The latency of a response, or of a request's response.
    fn latency(&self) -> Option<Duration>;
    fn pending(&self) -> bool;
    /// The request of a response, or the response of a request.
    fn related(&self, rel: Rel) -> Option<Self>;
    /// Calls `f(rule, severity)` for each lint finding on the record until
    /// it returns true; whether it did.
    fn any_finding(&self, f: &mut dyn FnMut(&str, &str) -> bool) -> bool;
    fn conversation(&self) -> Option<u64>;
}

/// A `[*]` fixed to one element inside `any(…)`/`all(…)`.
#[derive(Clone, Debug)]
pub struct Binding {
    rel: Option<Rel>,
    prefix: Vec<Segment>,
    index: usize,
}

pub fn eval<S: Subject>(p: &Pred, s: &S, binds: &mut Vec<Binding>) -> bool {
    match p {
        Pred::Const(b) => *b,
        Pred::And(a, b) => eval(a, s, binds) && eval(b, s, binds),
        Pred::Or(a, b) => eval(a, s, binds) || eval(b, s, binds),
        Pred::Not(a) => !eval(a, s, binds),
        Pred::Exists(g) => values(g, s, binds, &mut |_| true),
        Pred::Truthy(g) => values(g, s, binds, &mut |v| v == V::Bool(true)),
        Pred::In { left, set } => values(left, s, binds, &mut |v| set.iter().any(|item| in_set(&v, item))),
        Pred::Cmp { left, op, right } => compare(left, *op, right, s, binds),
        Pred::Quantified {
            quantifier,
            array,
            inner,
            ..
        } => quantified(*quantifier, array, inner, s, binds),
    }
}

// Apart from `eval`, which recurses: its frame stays small.
fn quantified<S: Subject>(
    quantifier: Quantifier,
    array: &Access,
    inner: &Pred,
    s: &S,
    binds: &mut Vec<Binding>,
) -> bool {
    let (rel, prefix) = match array {
        Access::Path(p) => (None, p),
        Access::Related(rel, a) => match &**a {
            Access::Path(p) => (Some(*rel), p),
            _ => return false,
        },
        _ => return false,
    };
    let len = match rel {
        None => array_len(s, prefix, binds),
        Some(r) => s.related(r).and_then(|o| array_len(&o, prefix, binds)),
    };
    let Some(n) = len else { return false };
    let mut result = quantifier == Quantifier::All;
    for index in 0..n {
        binds.push(Binding {
            rel,
            prefix: prefix.clone(),
            index,
        });
        let hit = eval(inner, s, binds);
        binds.pop();
        match quantifier {
            Quantifier::Any if hit => {
                result = true;
                break;
            }
            Quantifier::All if !hit => {
                result = false;
                break;
            }
            _ => {}
        }
    }
    result
}

fn array_len<S: Subject>(s: &S, prefix: &[Segment], binds: &[Binding]) -> Option<usize> {
    let doc = s.message()?;
    json::array_len(doc, prefix, &depths(None, prefix, binds))
}

/// The `[*]`s of `path` that bindings fix, as (depth, index).
fn depths(rel: Option<Rel>, path: &[Segment], binds: &[Binding]) -> Vec<(usize, usize)> {
    binds
        .iter()
        .filter(|b| {
            b.rel == rel
                && path.len() > b.prefix.len()
                && path.starts_with(&b.prefix)
                && path[b.prefix.len()] == Segment::Each
        })
        .map(|b| (b.prefix.len(), b.index))
        .collect()
}

fn in_set(v: &V<'_>, item: &SetConst) -> bool {
    match item {
        SetConst::One(c) => equal(v, c),
        SetConst::Range(a, b) => matches!(v, V::Num(n) if *n >= *a && *n <= *b),
    }
}

fn equal(v: &V<'_>, c: &Const) -> bool {
    match (v, c) {
        (V::Num(a), Const::Num(b)) => a == b,
        (V::Str(a), Const::Str(b)) => a == b,
        (V::Bool(a), Const::Bool(b)) => a == b,
        (V::Null, Const::Null) => true,
        _ => false,
    }
}

fn order(v: &V<'_>, op: CmpOp, c: &Const) -> bool {
    let ord = match (v, c) {
        (V::Num(a), Const::Num(b)) => a.partial_cmp(b),
        (V::Str(a), Const::Str(b)) => Some(a.as_ref().cmp(b.as_str())),
        _ => None,
    };
    let Some(ord) = ord else { return false };
    match op {
        CmpOp::Lt => ord.is_lt(),
        CmpOp::Le => ord.is_le(),
        CmpOp::Gt => ord.is_gt(),
        CmpOp::Ge => ord.is_ge(),
        _ => false,
    }
}

fn to_const(v: &V<'_>) -> Const {
    match v {
        V::Null => Const::Null,
        V::Bool(b) => Const::Bool(*b),
        V::Num(n) => Const::Num(*n),
        V::Str(s) => Const::Str(s.to_string()),
        V::Container(s) => Const::Str((*s).to_owned()),
    }
}

fn compare<S: Subject>(left: &Getter, op: CmpOp, right: &Rhs, s: &S, binds: &[Binding]) -> bool {
    // The raw line is searched as bytes: no copy, even when it is not UTF-8.
    if let Getter::Field(Access::Raw) = left {
        match right {
            Rhs::Needle(n) => return n.needle.found_in(s.raw()),
            Rhs::Regex(re) => return re.is_match(s.raw()),
            _ => {}
        }
    }
    match right {
        Rhs::Const(c) => match op {
            CmpOp::Eq if *c == Const::Null => {
                let mut any = false;
                let null = values(left, s, binds, &mut |v| {
                    any = true;
                    v == V::Null
                });
                null || !any
            }
            CmpOp::Eq => values(left, s, binds, &mut |v| equal(&v, c)),
            CmpOp::Ne => !compare(left, CmpOp::Eq, right, s, binds),
            _ => values(left, s, binds, &mut |v| order(&v, op, c)),
        },
        Rhs::Needle(n) => values(left, s, binds, &mut |v| {
            v.as_text().is_some_and(|t| n.needle.found_in(t.as_bytes()))
        }),
        Rhs::Regex(re) => values(left, s, binds, &mut |v| {
            v.as_text().is_some_and(|t| re.is_match(t.as_bytes()))
        }),
        Rhs::Get(g) => {
            let mut rights = Vec::new();
            values(g, s, binds, &mut |v| {
                rights.push(to_const(&v));
                false
            });
            match op {
                CmpOp::Ne => !values(left, s, binds, &mut |v| rights.iter().any(|c| equal(&v, c))),
                CmpOp::Eq => values(left, s, binds, &mut |v| rights.iter().any(|c| equal(&v, c))),
                CmpOp::Contains => values(left, s, binds, &mut |v| {
                    v.as_text().is_some_and(|t| {
                        rights
                            .iter()
                            .any(|c| matches!(c, Const::Str(n) if t.contains(n.as_str())))
                    })
                }),
                _ => values(left, s, binds, &mut |v| rights.iter().any(|c| order(&v, op, c))),
            }
        }
    }
}

/// Calls `f` with each value of `g` on `s` until it returns true; whether it did.
pub fn values<S: Subject>(g: &Getter, s: &S, binds: &[Binding], f: &mut dyn FnMut(V<'_>) -> bool) -> bool {
    match g {
        Getter::Const(c) => f(match c {
            Const::Null => V::Null,
            Const::Bool(b) => V::Bool(*b),
            Const::Num(n) => V::Num(*n),
            Const::Str(t) => V::Str(Cow::Borrowed(t)),
        }),
        Getter::Field(a) => field(a, None, s, binds, f),
        Getter::Len(inner) => values(inner, s, binds, &mut |v| match v {
            V::Str(t) => f(V::Num(t.chars().count() as f64)),
            V::Container(raw) => json::container_len(raw).is_some_and(|n| f(V::Num(n as f64))),
            _ => false,
        }),
        Getter::Lower(inner) => values(inner, s, binds, &mut |v| match v {
            V::Str(t) => f(V::Str(Cow::Owned(t.to_lowercase()))),
            V::Container(t) => f(V::Str(Cow::Owned(t.to_lowercase()))),
            _ => false,
        }),
        Getter::Count(inner) => {
            let mut n = 0usize;
            values(inner, s, binds, &mut |_| {
                n += 1;
                false
            });
            f(V::Num(n as f64))
        }
    }
}

fn path<S: Subject>(
    s: &S,
    rel: Option<Rel>,
    p: &[Segment],
    binds: &[Binding],
    f: &mut dyn FnMut(V<'_>) -> bool,
) -> bool {
    let Some(doc) = s.message() else { return false };
    let fixed = depths(rel, p, binds);
    let mut found = false;
    let held = json::each(doc, p, &fixed, &mut |raw| {
        found = true;
        V::from_raw(raw).is_some_and(&mut *f)
    });
    if !found && s.kind() == "result" && super::compile::is_error_flag(p) {
        return f(V::Bool(false));
    }
    held
}

fn first_of<S: Subject>(s: &S, paths: &[&[&str]], f: &mut dyn FnMut(V<'_>) -> bool) -> bool {
    let Some(doc) = s.message() else { return false };
    for p in paths {
        let segs: Vec<Segment> = p.iter().map(|k| Segment::Key((*k).to_owned())).collect();
        let mut found = None;
        json::each(doc, &segs, &[], &mut |raw| {
            found = V::from_raw(raw);
            true
        });
        if let Some(v) = found {
            return f(v);
        }
    }
    false
}

const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

fn field<S: Subject>(a: &Access, rel: Option<Rel>, s: &S, binds: &[Binding], f: &mut dyn FnMut(V<'_>) -> bool) -> bool {
    let text = |t: &str, f: &mut dyn FnMut(V<'_>) -> bool| f(V::Str(Cow::Borrowed(t)));
    let secs = |d: Duration| V::Num(d.as_secs_f64());
    match a {
        Access::Related(r, inner) => s.related(*r).is_some_and(|o| field(inner, Some(*r), &o, binds, f)),
        Access::Dir => text(s.dir(), f),
        Access::Kind => text(s.kind(), f),
        Access::Seq => s.seq().is_some_and(|n| f(V::Num(n as f64))),
        Access::Time => f(secs(s.time())),
        Access::Len => f(V::Num(s.raw().len() as f64)),
        Access::Raw => f(V::Str(String::from_utf8_lossy(s.raw()))),
        Access::Session => s.session().is_some_and(|t| text(t, f)),
        Access::Transport => s.transport().is_some_and(|t| text(t, f)),
        Access::Era => s.era().is_some_and(|t| text(t, f)),
        Access::Id => match s.id() {
            Some(RequestId::Number(n)) => f(V::Num(n as f64)),
            Some(RequestId::String(t)) => f(V::Str(Cow::Owned(t))),
            None => {
                matches!(s.kind(), "request" | "server_request" | "result" | "error" | "iserror")
                    && path(s, rel, &[Segment::Key("id".into())], binds, f)
            }
        },
        Access::Method => s.method().is_some_and(|m| text(m, f)),
        Access::ErrorCode => match s.error_code() {
            Some(c) => f(V::Num(c as f64)),
            // A malformed error's code (a string, say) is read as it was sent.
            None => {
                s.kind() == "error"
                    && path(
                        s,
                        rel,
                        &[Segment::Key("error".into()), Segment::Key("code".into())],
                        binds,
                        f,
                    )
            }
        },
        Access::Path(p) => matches!(s.dir(), "c2s" | "s2c" | "auth" | "http") && path(s, rel, p, binds, f),
        Access::Latency => s.latency().is_some_and(|d| f(secs(d))),
        Access::Model(fact) => {
            if s.dir() != "model" {
                return false;
            }
            let Some(record) = s
                .message()
                .and_then(|m| serde_json::from_str::<serde_json::Value>(m).ok())
            else {
                return false;
            };
            let Ok(x) = crate::model::record::ModelExchange::from_json(&record, s.time()) else {
                return false;
            };
            use super::compile::ModelFact as M;
            let num = |n: Option<u64>, f: &mut dyn FnMut(V<'_>) -> bool| n.is_some_and(|n| f(V::Num(n as f64)));
            match fact {
                M::Name => f(V::Str(x.model.into())),
                M::Provider => f(V::Str(x.provider.into())),
                M::ToolCalls => f(V::Num(x.turn().tool_calls.len() as f64)),
                M::InputTokens => num(x.turn().usage.input_tokens, f),
                M::OutputTokens => num(x.turn().usage.output_tokens, f),
                M::FirstToken => x.first_token.is_some_and(|d| f(secs(d))),
                M::Total => f(secs(x.total)),
            }
        }
        Access::Pending => f(V::Bool(s.pending())),
        Access::Finding => f(V::Bool(s.any_finding(&mut |_, _| true))),
        Access::FindingRule => s.any_finding(&mut |rule, _| text(rule, f)),
        Access::FindingSeverity => s.any_finding(&mut |_, sev| text(sev, f)),
        Access::HttpStatus | Access::HttpMethod | Access::HttpUrl => {
            let key = match a {
                Access::HttpStatus => "status",
                Access::HttpMethod => "method",
                _ => "url",
            };
            s.dir() == "http" && first_of(s, &[&[key]], f)
        }
        Access::HttpHeader(name, side) => {
            if s.dir() != "http" {
                return false;
            }
            let Some(doc) = s.message() else { return false };
            let lists: &[&str] = match side {
                HeaderSide::Either => &["sent", "received"],
                HeaderSide::Sent => &["sent"],
                HeaderSide::Received => &["received"],
            };
            lists.iter().any(|list| {
                json::each(doc, &[Segment::Key((*list).into()), Segment::Each], &[], &mut |pair| {
                    let n = json::each(
                        pair,
                        &[Segment::Index(0)],
                        &[],
                        &mut |n| matches!(V::from_raw(n), Some(V::Str(t)) if t.eq_ignore_ascii_case(name)),
                    );
                    n && json::each(pair, &[Segment::Index(1)], &[], &mut |v| {
                        V::from_raw(v).is_some_and(&mut *f)
                    })
                })
            })
        }
        Access::TaskId => {
            matches!(s.dir(), "c2s" | "s2c")
                && first_of(
                    s,
                    &[
                        &["result", "task", "taskId"],
                        &["result", "taskId"],
                        &["params", "taskId"],
                        &["params", "_meta", RELATED_TASK, "taskId"],
                        &["result", "_meta", RELATED_TASK, "taskId"],
                    ],
                    f,
                )
        }
        Access::TaskStatus => {
            matches!(s.dir(), "c2s" | "s2c") && first_of(s, &[&["result", "task", "status"]], f)
                || (has(s, &["result", "taskId"]) && first_of(s, &[&["result", "status"]], f))
                || (has(s, &["params", "taskId"]) && first_of(s, &[&["params", "status"]], f))
        }
        Access::Conversation => s.conversation().is_some_and(|n| f(V::Num(n as f64))),
    }
}

fn has<S: Subject>(s: &S, p: &[&str]) -> bool {
    matches!(s.dir(), "c2s" | "s2c") && first_of(s, &[p], &mut |_| true)
}
