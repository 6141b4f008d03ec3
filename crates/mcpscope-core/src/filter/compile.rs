//! A syntax tree checked against the field table and turned into a
//! predicate: unknown fields and type mismatches are errors here, never a
//! silent false when the filter runs.

use super::ast::*;
use super::error::{FilterError, nearest};
use super::fields::{self, DIRS, ERAS, KINDS, SEVERITIES, TRANSPORTS, Ty};
use super::needle::Needle;

/// Which side of an exchange a field is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rel {
    /// From a response: its request.
    Request,
    /// From a request: its (first) response.
    Response,
}

/// What a field reads.
#[derive(Clone, Debug, PartialEq)]
pub enum Access {
    Dir,
    Kind,
    Seq,
    Time,
    Len,
    Raw,
    Session,
    Transport,
    Era,
    Id,
    Method,
    ErrorCode,
    /// A path into the message (or, for authorization and HTTP records, the record).
    Path(Vec<Segment>),
    Latency,
    Pending,
    Finding,
    FindingRule,
    FindingSeverity,
    HttpStatus,
    HttpMethod,
    HttpUrl,
    /// Lower-case header name; which of sent and received.
    HttpHeader(String, HeaderSide),
    TaskId,
    TaskStatus,
    Conversation,
    /// A fact of a model turn (`model.…`).
    Model(ModelFact),
    Related(Rel, Box<Access>),
}

/// What a filter reads of a model turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelFact {
    Name,
    Provider,
    ToolCalls,
    InputTokens,
    OutputTokens,
    FirstToken,
    Total,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderSide {
    Either,
    Sent,
    Received,
}

impl Access {
    pub fn ty(&self) -> Ty {
        match self {
            Access::Dir => Ty::Enum(DIRS),
            Access::Kind => Ty::Enum(KINDS),
            Access::Seq | Access::Len | Access::ErrorCode | Access::HttpStatus | Access::Conversation => Ty::Num,
            Access::Model(ModelFact::Name | ModelFact::Provider) => Ty::Str,
            Access::Model(ModelFact::ToolCalls | ModelFact::InputTokens | ModelFact::OutputTokens) => Ty::Num,
            Access::Model(ModelFact::FirstToken | ModelFact::Total) => Ty::Duration,
            Access::Time | Access::Latency => Ty::Duration,
            Access::Raw
            | Access::Session
            | Access::Method
            | Access::FindingRule
            | Access::HttpMethod
            | Access::HttpUrl
            | Access::HttpHeader(..)
            | Access::TaskId
            | Access::TaskStatus => Ty::Str,
            Access::Transport => Ty::Enum(TRANSPORTS),
            Access::Era => Ty::Enum(ERAS),
            Access::Id | Access::Path(_) => Ty::Json,
            Access::Pending | Access::Finding => Ty::Bool,
            Access::FindingSeverity => Ty::Enum(SEVERITIES),
            Access::Related(_, a) => a.ty(),
        }
    }
}

/// A value the predicate reads from a record.
#[derive(Clone, Debug)]
pub enum Getter {
    Field(Access),
    Len(Box<Getter>),
    Lower(Box<Getter>),
    Count(Box<Getter>),
    Const(Const),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Const {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
}

#[derive(Clone, Debug)]
pub enum SetConst {
    One(Const),
    Range(f64, f64),
}

/// The right side of a comparison.
#[derive(Clone, Debug)]
pub enum Rhs {
    Const(Const),
    /// `contains` with a literal: found with memchr, ignoring ASCII case
    /// when the left side is `lower(…)` of ASCII.
    Needle(Box<NeedleRhs>),
    Regex(Box<regex::bytes::Regex>),
    Get(Getter),
}

#[derive(Clone, Debug)]
pub struct NeedleRhs {
    pub text: String,
    pub any_case: bool,
    pub(crate) needle: Needle,
}

#[derive(Clone, Debug)]
pub enum Pred {
    Const(bool),
    And(Box<Pred>, Box<Pred>),
    Or(Box<Pred>, Box<Pred>),
    Not(Box<Pred>),
    Exists(Getter),
    Truthy(Getter),
    Cmp {
        left: Getter,
        op: CmpOp,
        right: Rhs,
    },
    In {
        left: Getter,
        set: Vec<SetConst>,
    },
    Quantified {
        quantifier: Quantifier,
        /// Where the array is: the path to the `[*]` it binds, and on which side.
        array: Access,
        /// The depth of that `[*]` in its path.
        depth: usize,
        inner: Box<Pred>,
    },
}

/// Turns `e` into a predicate, or says what is wrong with it.
// Recursive: the arms that are not keep their work in functions of their
// own, so each level of the tree costs one small frame.
pub fn compile(e: &Expr) -> Result<Pred, FilterError> {
    Ok(match e {
        Expr::And(a, b) => Pred::And(Box::new(compile(a)?), Box::new(compile(b)?)),
        Expr::Or(a, b) => Pred::Or(Box::new(compile(a)?), Box::new(compile(b)?)),
        Expr::Not(a) => Pred::Not(Box::new(compile(a)?)),
        Expr::Test(o) => test(o)?,
        Expr::Compare { left, op, right } => compare(left, *op, right)?,
        Expr::In { value, set, span } => in_set(value, set, *span)?,
        Expr::Quantified { quantifier, expr, span } => quantified(*quantifier, expr, *span)?,
    })
}

fn in_set(value: &Operand, set: &[SetItem], span: Span) -> Result<Pred, FilterError> {
    let left = getter(value)?;
    let ty = getter_ty(&left);
    let mut out = Vec::new();
    for item in set {
        out.push(match item {
            SetItem::One(l) => SetConst::One(literal_for(ty, l, span, value)?),
            SetItem::Range(a, b) => {
                let (Some(a), Some(b)) = (number_of(a), number_of(b)) else {
                    return Err(FilterError::new(
                        "a range needs numbers or durations at both ends",
                        span,
                    ));
                };
                if !matches!(ty, Ty::Num | Ty::Duration | Ty::Json) {
                    return Err(type_error(value, ty, "a range of numbers", span));
                }
                SetConst::Range(a, b)
            }
        });
    }
    Ok(Pred::In { left, set: out })
}

fn quantified(quantifier: Quantifier, expr: &Expr, span: Span) -> Result<Pred, FilterError> {
    let inner = compile(expr)?;
    let Some((array, depth)) = first_each(&inner) else {
        return Err(FilterError::new(
            "any(…) and all(…) need a path with [*] inside, such as result.tools[*].name",
            span,
        ));
    };
    Ok(Pred::Quantified {
        quantifier,
        array,
        depth,
        inner: Box::new(inner),
    })
}

fn test(o: &Operand) -> Result<Pred, FilterError> {
    match o {
        Operand::Literal(Literal::Bool(b), _) => Ok(Pred::Const(*b)),
        Operand::Literal(l, span) => Err(FilterError::new(format!("{l} alone is not a condition"), *span)
            .suggest("compare a field with it, e.g. method == \"tools/call\"")),
        Operand::Call { func, span, .. } => Err(FilterError::new(
            format!("{}(…) alone is not a condition", func.name()),
            *span,
        )
        .suggest(format!("compare it, e.g. {}(…) > 0", func.name()))),
        Operand::Field(_) => {
            let g = getter(o)?;
            // Bare `result.isError` asks whether the call failed, not
            // whether the key is there (an absent one reads as false).
            let failed = matches!(&g, Getter::Field(Access::Path(p)) if is_error_flag(p));
            Ok(if getter_ty(&g) == Ty::Bool || failed {
                Pred::Truthy(g)
            } else {
                Pred::Exists(g)
            })
        }
    }
}

fn compare(left: &Operand, op: CmpOp, right: &Operand) -> Result<Pred, FilterError> {
    let l = getter(left)?;
    let lt = getter_ty(&l);
    if let Operand::Literal(lit, _) = left
        && matches!(right, Operand::Literal(..))
    {
        return Err(FilterError::new(
            format!("{lit} {} {right} compares two values", op.text()),
            left.span().to(right.span()),
        )
        .suggest("one side must be a field"));
    }
    let span = left.span().to(right.span());
    match op {
        CmpOp::Contains | CmpOp::Matches => {
            if !matches!(lt, Ty::Str | Ty::Enum(_) | Ty::Json) {
                return Err(type_error(left, lt, &format!("text for \"{}\"", op.text()), span));
            }
            let Operand::Literal(Literal::Str(text), lspan) = right else {
                if op == CmpOp::Contains
                    && let Operand::Field(_) | Operand::Call { .. } = right
                {
                    let r = getter(right)?;
                    if matches!(getter_ty(&r), Ty::Str | Ty::Enum(_) | Ty::Json) {
                        return Ok(Pred::Cmp {
                            left: l,
                            op,
                            right: Rhs::Get(r),
                        });
                    }
                }
                return Err(FilterError::new(
                    format!("\"{}\" needs a quoted text on its right", op.text()),
                    right.span(),
                ));
            };
            if op == CmpOp::Matches {
                let re = regex::bytes::Regex::new(text).map_err(|e| {
                    FilterError::new(
                        format!(
                            "not a valid regular expression: {}",
                            e.to_string().lines().last().unwrap_or_default().trim()
                        ),
                        *lspan,
                    )
                })?;
                return Ok(Pred::Cmp {
                    left: l,
                    op,
                    right: Rhs::Regex(Box::new(re)),
                });
            }
            // `lower(x) contains "abc"` is found ignoring ASCII case without lowering every line.
            let (left, any_case) = match l {
                Getter::Lower(inner) if text.is_ascii() && !text.bytes().any(|b| b.is_ascii_uppercase()) => {
                    (*inner, true)
                }
                other => (other, false),
            };
            Ok(Pred::Cmp {
                left,
                op,
                right: Rhs::Needle(Box::new(NeedleRhs {
                    needle: if any_case {
                        Needle::new(text)
                    } else {
                        Needle::exact(text)
                    },
                    text: text.clone(),
                    any_case,
                })),
            })
        }
        _ => {
            if let Operand::Literal(lit, _) = right {
                let c = literal_for(lt, lit, span, left)?;
                if op.is_ordering() {
                    match (&c, lt) {
                        (Const::Num(_), Ty::Num | Ty::Duration | Ty::Json)
                        | (Const::Str(_), Ty::Str | Ty::Enum(_) | Ty::Json) => {}
                        _ => {
                            return Err(type_error(
                                left,
                                lt,
                                "something ordered (a number, a duration or text)",
                                span,
                            ));
                        }
                    }
                }
                return Ok(Pred::Cmp {
                    left: l,
                    op,
                    right: Rhs::Const(c),
                });
            }
            let r = getter(right)?;
            let rt = getter_ty(&r);
            let fits = lt == Ty::Json
                || rt == Ty::Json
                || matches!((lt, rt), (Ty::Str | Ty::Enum(_), Ty::Str | Ty::Enum(_)))
                || matches!((lt, rt), (Ty::Num | Ty::Duration, Ty::Num | Ty::Duration))
                || lt == rt;
            if !fits {
                return Err(FilterError::new(
                    format!(
                        "{left} is a {} and {right} a {}: they cannot be compared",
                        lt.name(),
                        rt.name()
                    ),
                    span,
                ));
            }
            Ok(Pred::Cmp {
                left: l,
                op,
                right: Rhs::Get(r),
            })
        }
    }
}

fn type_error(o: &Operand, ty: Ty, wanted: &str, span: Span) -> FilterError {
    FilterError::new(format!("{o} is a {}, not {wanted}", ty.name()), span)
}

fn number_of(l: &Literal) -> Option<f64> {
    match l {
        Literal::Num(n, _) | Literal::Duration(n, _) => Some(*n),
        _ => None,
    }
}

/// A literal as the constant a field of type `ty` is compared with.
fn literal_for(ty: Ty, lit: &Literal, span: Span, field: &Operand) -> Result<Const, FilterError> {
    let c = match lit {
        Literal::Null => return Ok(Const::Null),
        Literal::Bool(b) => Const::Bool(*b),
        Literal::Num(n, _) => Const::Num(*n),
        Literal::Duration(n, _) => Const::Num(*n),
        Literal::Str(s) => Const::Str(s.clone()),
    };
    let ok = match (ty, lit) {
        (Ty::Json, _) => true,
        (Ty::Str, Literal::Str(_)) => true,
        (Ty::Enum(values), Literal::Str(s)) => {
            if !values.contains(&s.as_str()) {
                let mut e = FilterError::new(format!("{field} is never {}", quote(s)), span);
                e = match nearest(s, values.iter().copied()) {
                    Some(n) => e.suggest(format!("did you mean \"{n}\"?")),
                    None => e.suggest(format!("its values are {}", values.join(", "))),
                };
                return Err(e);
            }
            true
        }
        (Ty::Num, Literal::Num(..)) => true,
        (Ty::Duration, Literal::Num(..) | Literal::Duration(..)) => true,
        (Ty::Bool, Literal::Bool(_)) => true,
        _ => false,
    };
    if !ok {
        let what = match lit {
            Literal::Str(_) => "text",
            Literal::Num(..) => "a number",
            Literal::Duration(..) => "a duration",
            Literal::Bool(_) => "a boolean",
            Literal::Null => "null",
        };
        let mut e = FilterError::new(format!("{field} is a {} and {lit} is {what}", ty.name()), span);
        if ty == Ty::Num && matches!(lit, Literal::Str(s) if s.parse::<f64>().is_ok()) {
            e = e.suggest("write the number without quotes");
        }
        if ty == Ty::Duration {
            e = e.suggest("write a duration such as 500ms or 2s");
        }
        return Err(e);
    }
    Ok(c)
}

pub fn getter_ty(g: &Getter) -> Ty {
    match g {
        Getter::Field(a) => a.ty(),
        Getter::Len(_) | Getter::Count(_) => Ty::Num,
        Getter::Lower(_) => Ty::Str,
        Getter::Const(Const::Num(_)) => Ty::Num,
        Getter::Const(Const::Str(_)) => Ty::Str,
        Getter::Const(Const::Bool(_)) => Ty::Bool,
        Getter::Const(Const::Null) => Ty::Json,
    }
}

fn getter(o: &Operand) -> Result<Getter, FilterError> {
    match o {
        Operand::Literal(l, _) => Ok(Getter::Const(match l {
            Literal::Null => Const::Null,
            Literal::Bool(b) => Const::Bool(*b),
            Literal::Num(n, _) | Literal::Duration(n, _) => Const::Num(*n),
            Literal::Str(s) => Const::Str(s.clone()),
        })),
        Operand::Field(f) => Ok(Getter::Field(access(f)?)),
        Operand::Call { func, arg, span } => {
            let inner = getter(arg)?;
            let ty = getter_ty(&inner);
            Ok(match func {
                Func::Len => {
                    if !matches!(ty, Ty::Str | Ty::Enum(_) | Ty::Json) {
                        return Err(FilterError::new(
                            format!("len() takes text, an array or an object; {arg} is a {}", ty.name()),
                            *span,
                        ));
                    }
                    Getter::Len(Box::new(inner))
                }
                Func::Lower => {
                    if !matches!(ty, Ty::Str | Ty::Enum(_) | Ty::Json) {
                        return Err(FilterError::new(
                            format!("lower() takes text; {arg} is a {}", ty.name()),
                            *span,
                        ));
                    }
                    Getter::Lower(Box::new(inner))
                }
                Func::Count => {
                    if !matches!(inner, Getter::Field(_)) {
                        return Err(FilterError::new(
                            "count() takes a field, such as result.tools[*] or finding",
                            *span,
                        ));
                    }
                    // `count(result.tools)` counts the list's items, as
                    // `count(result.tools[*])` does: one value is not worth counting.
                    let mut inner = inner;
                    if let Getter::Field(a) = &mut inner {
                        let path = match a {
                            Access::Path(p) => Some(p),
                            Access::Related(_, boxed) => match &mut **boxed {
                                Access::Path(p) => Some(p),
                                _ => None,
                            },
                            _ => None,
                        };
                        if let Some(p) = path
                            && !p.contains(&Segment::Each)
                        {
                            p.push(Segment::Each);
                        }
                    }
                    Getter::Count(Box::new(inner))
                }
            })
        }
    }
}

/// The field `f` names, or why it names none.
pub fn access(f: &FieldRef) -> Result<Access, FilterError> {
    let segs = &f.segments;
    let Some(Segment::Key(first)) = segs.first() else {
        return Err(FilterError::new("a field starts with a name", f.span));
    };
    if let ("request" | "response", true) = (first.as_str(), segs.len() > 1) {
        let rel = if first == "request" {
            Rel::Request
        } else {
            Rel::Response
        };
        if let Some(Segment::Key(k)) = segs.get(1)
            && (k == "request" || k == "response")
        {
            return Err(FilterError::new(
                format!("{first}.{k} goes nowhere a field of its own does not"),
                f.span,
            ));
        }
        let inner = FieldRef {
            segments: segs[1..].to_vec(),
            span: f.span,
        };
        let a = access(&inner)?;
        if matches!(
            a,
            Access::Session
                | Access::Transport
                | Access::Era
                | Access::Finding
                | Access::FindingRule
                | Access::FindingSeverity
                | Access::Pending
        ) {
            return Err(FilterError::new(
                format!("{inner} is the same on both sides: drop \"{first}.\""),
                f.span,
            ));
        }
        return Ok(Access::Related(rel, Box::new(a)));
    }
    let key = |i: usize| match segs.get(i) {
        Some(Segment::Key(k)) => Some(k.as_str()),
        _ => None,
    };
    let no_more = |a: Access, used: usize| -> Result<Access, FilterError> {
        if segs.len() > used {
            return Err(FilterError::new(
                format!("{} has no members", name_of(&segs[..used])),
                f.span,
            ));
        }
        Ok(a)
    };
    let second = key(1);
    match (first.as_str(), second) {
        ("error", Some("code")) => return no_more(Access::ErrorCode, 2),
        ("http", Some(which @ ("header" | "sent" | "received"))) => {
            let side = match which {
                "header" => HeaderSide::Either,
                "sent" => HeaderSide::Sent,
                _ => HeaderSide::Received,
            };
            let Some(name) = key(2) else {
                return Err(FilterError::new(format!("http.{which} needs a header name"), f.span)
                    .suggest(format!("http.{which}[\"mcp-session-id\"]")));
            };
            return no_more(Access::HttpHeader(name.to_ascii_lowercase(), side), 3);
        }
        ("http", Some("status")) => return no_more(Access::HttpStatus, 2),
        ("http", Some("method")) => return no_more(Access::HttpMethod, 2),
        ("http", Some("url")) => return no_more(Access::HttpUrl, 2),
        ("model", Some(which)) => {
            let fact = match which {
                "name" => ModelFact::Name,
                "provider" => ModelFact::Provider,
                "tool_calls" => ModelFact::ToolCalls,
                "input_tokens" => ModelFact::InputTokens,
                "output_tokens" => ModelFact::OutputTokens,
                "first_token" => ModelFact::FirstToken,
                "total" => ModelFact::Total,
                _ => {
                    return Err(FilterError::new(format!("model.{which} is not a field"), f.span).suggest(
                        "model.name, model.provider, model.tool_calls, model.input_tokens, model.output_tokens, model.first_token, model.total",
                    ));
                }
            };
            return no_more(Access::Model(fact), 2);
        }
        ("task", Some("id")) => return no_more(Access::TaskId, 2),
        ("task", Some("status")) => return no_more(Access::TaskStatus, 2),
        ("finding", Some("rule")) => return no_more(Access::FindingRule, 2),
        ("finding", Some("severity")) => return no_more(Access::FindingSeverity, 2),
        ("json", _) => return Ok(Access::Path(segs[1..].to_vec())),
        ("params" | "result" | "error" | "jsonrpc", _) => return Ok(Access::Path(segs.clone())),
        ("id", Some(_)) => return Ok(Access::Path(segs.clone())),
        _ => {}
    }
    let single = match first.as_str() {
        "dir" => Access::Dir,
        "kind" => Access::Kind,
        "seq" => Access::Seq,
        "time" => Access::Time,
        "len" => Access::Len,
        "raw" => Access::Raw,
        "session" | "tab" => Access::Session,
        "transport" => Access::Transport,
        "era" => Access::Era,
        "id" => Access::Id,
        "method" => Access::Method,
        "latency" => Access::Latency,
        "pending" => Access::Pending,
        "finding" => Access::Finding,
        "conversation" => Access::Conversation,
        other => {
            let written = name_of(segs);
            let dotted: Vec<&str> = fields::all_names().collect();
            let mut e = FilterError::new(format!("unknown field \"{written}\""), f.span);
            let guess = nearest(&written, dotted.iter().copied()).or_else(|| nearest(other, dotted.iter().copied()));
            e = match guess {
                Some(g) => e.suggest(format!("did you mean \"{g}\"?")),
                None => e.suggest("paths into a message start with params, result, error or json"),
            };
            return Err(e);
        }
    };
    no_more(single, 1)
}

fn name_of(segs: &[Segment]) -> String {
    FieldRef {
        segments: segs.to_vec(),
        span: Span::default(),
    }
    .to_string()
}

/// The first `[*]` a predicate's paths go through: the array it binds.
fn first_each(p: &Pred) -> Option<(Access, usize)> {
    fn in_access(a: &Access) -> Option<(Access, usize)> {
        match a {
            Access::Path(segs) => segs
                .iter()
                .position(|s| *s == Segment::Each)
                .map(|i| (Access::Path(segs[..i].to_vec()), i)),
            Access::Related(rel, inner) => in_access(inner).map(|(a, d)| (Access::Related(*rel, Box::new(a)), d)),
            _ => None,
        }
    }
    fn in_getter(g: &Getter) -> Option<(Access, usize)> {
        match g {
            Getter::Field(a) => in_access(a),
            Getter::Len(g) | Getter::Lower(g) | Getter::Count(g) => in_getter(g),
            Getter::Const(_) => None,
        }
    }
    match p {
        Pred::Const(_) => None,
        Pred::And(a, b) | Pred::Or(a, b) => first_each(a).or_else(|| first_each(b)),
        Pred::Not(a) => first_each(a),
        Pred::Exists(g) | Pred::Truthy(g) | Pred::In { left: g, .. } => in_getter(g),
        Pred::Cmp { left, right, .. } => in_getter(left).or_else(|| match right {
            Rhs::Get(g) => in_getter(g),
            _ => None,
        }),
        // A nested quantifier binds its own array.
        Pred::Quantified { .. } => None,
    }
}

/// What a filter needs besides the record itself, so a reader can skip
/// work no field asks for (findings, the other side of an exchange).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    pub findings: bool,
    /// `response.…`, `latency` or `pending` on a request: the answer, which comes later.
    pub response: bool,
    /// `request.…`: the request of a response.
    pub request: bool,
    /// `request.…` beyond its method: the request's message.
    pub request_message: bool,
    pub conversation: bool,
    pub era: bool,
}

pub fn needs(p: &Pred) -> Needs {
    let mut n = Needs::default();
    visit_accesses(p, &mut |a| note(a, &mut n));
    n
}

fn note(a: &Access, n: &mut Needs) {
    match a {
        Access::Finding | Access::FindingRule | Access::FindingSeverity => n.findings = true,
        Access::Latency | Access::Pending => n.response = true,
        Access::Conversation => n.conversation = true,
        Access::Era => n.era = true,
        Access::Related(Rel::Response, inner) => {
            n.response = true;
            note(inner, n);
        }
        Access::Related(Rel::Request, inner) => {
            n.request = true;
            if !matches!(**inner, Access::Method) {
                n.request_message = true;
            }
            note(inner, n);
        }
        _ => {}
    }
}

pub fn visit_accesses(p: &Pred, f: &mut dyn FnMut(&Access)) {
    fn g(x: &Getter, f: &mut dyn FnMut(&Access)) {
        match x {
            Getter::Field(a) => f(a),
            Getter::Len(i) | Getter::Lower(i) | Getter::Count(i) => g(i, f),
            Getter::Const(_) => {}
        }
    }
    match p {
        Pred::Const(_) => {}
        Pred::And(a, b) | Pred::Or(a, b) => {
            visit_accesses(a, f);
            visit_accesses(b, f);
        }
        Pred::Not(a) => visit_accesses(a, f),
        Pred::Exists(x) | Pred::Truthy(x) | Pred::In { left: x, .. } => g(x, f),
        Pred::Cmp { left, right, .. } => {
            g(left, f);
            if let Rhs::Get(r) = right {
                g(r, f);
            }
        }
        Pred::Quantified { array, inner, .. } => {
            f(array);
            visit_accesses(inner, f);
        }
    }
}

/// Byte strings a record's line must contain for the predicate to hold
/// (keys a path goes through, a compared or contained text), found with
/// memmem before anything is parsed. Only what is read from the record
/// itself counts, and only text JSON writes the same way in every line.
pub fn required_literals(p: &Pred) -> Vec<String> {
    let mut out = Vec::new();
    collect_required(p, &mut out);
    out.sort();
    out.dedup();
    out
}

fn plain(s: &str) -> bool {
    s.len() >= 2
        && s.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\' || b == b' ')
}

/// `result.isError`: the one path with a default, false when a result lacks
/// it (the spec's), so `result.isError == false` holds on a plain result.
pub(super) fn is_error_flag(p: &[Segment]) -> bool {
    matches!(p, [Segment::Key(r), Segment::Key(e)] if r == "result" && e == "isError")
}

fn path_keys(a: &Access, out: &mut Vec<String>) {
    if let Access::Path(segs) = a {
        // A result without `isError` reads as false (eval's default): the
        // line need not hold the word.
        if is_error_flag(segs) {
            out.push("result".into());
            return;
        }
        for s in segs {
            if let Segment::Key(k) = s
                && plain(k)
            {
                out.push(k.clone());
            }
        }
    }
}

fn collect_required(p: &Pred, out: &mut Vec<String>) {
    match p {
        Pred::And(a, b) => {
            collect_required(a, out);
            collect_required(b, out);
        }
        Pred::Exists(Getter::Field(a)) => path_keys(a, out),
        Pred::In {
            left: Getter::Field(a), ..
        } => path_keys(a, out),
        Pred::Cmp { left, op, right } if *op != CmpOp::Ne => {
            let Getter::Field(a) = left else { return };
            path_keys(a, out);
            let text_field = matches!(a, Access::Path(_) | Access::Method | Access::Raw);
            match right {
                Rhs::Const(Const::Str(s)) if *op == CmpOp::Eq && text_field && plain(s) => out.push(s.clone()),
                Rhs::Needle(n) if text_field && !n.any_case && plain(&n.text) => out.push(n.text.clone()),
                _ => {}
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::parser::parse;
    use super::*;

    fn check(src: &str) -> Result<Pred, FilterError> {
        compile(&parse(src).unwrap_or_else(|e| panic!("{src}: {e}")))
    }

    fn err(src: &str) -> FilterError {
        check(src).expect_err(src)
    }

    #[test]
    fn every_operator_on_every_field_type() {
        // (field, a literal of its type, what "contains" and ordering do with it)
        let cases: &[(&str, &str, bool, bool)] = &[
            ("method", "\"tools/call\"", true, true),
            ("kind", "\"request\"", true, true),
            ("seq", "3", false, true),
            ("latency", "500ms", false, true),
            ("latency", "0.5", false, true),
            ("pending", "true", false, false),
            ("params.name", "\"x\"", true, true),
            ("params.n", "3", true, true),
            ("id", "null", true, false),
        ];
        for (field, lit, contains_ok, order_ok) in cases {
            for op in ["==", "!="] {
                check(&format!("{field} {op} {lit}")).unwrap_or_else(|e| panic!("{field} {op} {lit}: {e}"));
            }
            for op in ["<", "<=", ">", ">="] {
                let r = check(&format!("{field} {op} {lit}"));
                assert_eq!(r.is_ok(), *order_ok, "{field} {op} {lit}: {r:?}");
            }
            for op in ["contains", "matches"] {
                let r = check(&format!("{field} {op} \"a\""));
                assert_eq!(r.is_ok(), *contains_ok, "{field} {op}: {r:?}");
            }
            check(&format!("{field} in {{{lit}}}")).unwrap_or_else(|e| panic!("{field} in: {e}"));
            check(field).unwrap();
        }
    }

    #[test]
    fn type_mismatches_and_unknown_fields_are_errors() {
        let e = err("latency contains \"x\"");
        assert!(e.message.contains("latency is a duration"), "{e:?}");
        let e = err("seq == \"3\"");
        assert_eq!(
            e.suggestion.as_deref(),
            Some("write the number without quotes"),
            "{e:?}"
        );
        let e = err("kind == \"reqest\"");
        assert_eq!(e.suggestion.as_deref(), Some("did you mean \"request\"?"));
        let e = err("lattency > 1s");
        assert_eq!((e.span.start, e.span.end), (0, 8));
        assert_eq!(e.suggestion.as_deref(), Some("did you mean \"latency\"?"));
        let e = err("model.tools > 3");
        assert!(
            e.suggestion.as_deref().is_some_and(|s| s.contains("model.tool_calls")),
            "{e:?}"
        );
        check("model.tool_calls > 3").unwrap();
        assert!(
            err(r#"model.tool_calls == "many""#).message.contains("number"),
            "a number field"
        );
        let e = err("http.statuss == 200");
        assert_eq!(e.suggestion.as_deref(), Some("did you mean \"http.status\"?"), "{e:?}");
        let e = err("latency.x");
        assert!(e.message.contains("no members"));
        let e = err("seq > 2s");
        assert!(e.message.contains("duration"), "{e:?}");
        let e = err("method matches \"(\"");
        assert!(e.message.contains("regular expression"), "{e:?}");
        let e = err("any(params.x == 1)");
        assert!(e.message.contains("[*]"));
        let e = err("http.header == \"x\"");
        assert!(e.suggestion.unwrap().contains("http.header[\"mcp-session-id\"]"));
        let e = err("\"x\"");
        assert!(e.message.contains("alone"));
        let e = err("1 == 1");
        assert!(e.message.contains("two values"));
        let e = err("len(latency) > 1");
        assert!(e.message.contains("len()"));
        let e = err("pending > 1");
        assert!(e.message.contains("boolean"), "{e:?}");
        let e = err("latency == seq2");
        assert!(e.message.contains("unknown field"), "{e:?}");
        let e = err("latency == method");
        assert!(e.message.contains("cannot be compared"), "{e:?}");
        let e = err("request.session == \"a\"");
        assert!(e.message.contains("same on both sides"), "{e:?}");
    }

    #[test]
    fn required_literals_come_only_from_what_must_be_there() {
        let p = check("method == \"tools/call\" and params.arguments.message contains \"number 42\"").unwrap();
        assert_eq!(
            required_literals(&p),
            ["arguments", "message", "number 42", "params", "tools/call"]
        );
        assert!(required_literals(&check("method == \"a/b\" or params.x").unwrap()).is_empty());
        assert!(required_literals(&check("not params.xyz").unwrap()).is_empty());
        assert_eq!(
            required_literals(&check("params.xyz != \"abc\"").unwrap()),
            Vec::<String>::new()
        );
        assert!(required_literals(&check("request.params.name == \"echo\"").unwrap()).is_empty());
        assert!(required_literals(&check("lower(raw) contains \"abc\"").unwrap()).is_empty());
        assert_eq!(
            required_literals(&check("params[\"a\\\"b\"] == \"q\\\\\"").unwrap()),
            ["params"]
        );
    }

    #[test]
    fn needs_say_what_beyond_the_record() {
        assert_eq!(needs(&check("method == \"x\"").unwrap()), Needs::default());
        assert!(needs(&check("finding.rule == \"not-json\"").unwrap()).findings);
        assert!(needs(&check("latency > 1s").unwrap()).response);
        assert!(needs(&check("response.kind == \"error\"").unwrap()).response);
        let n = needs(&check("request.method == \"tools/call\"").unwrap());
        assert!(n.request && !n.request_message && !n.response);
        assert!(needs(&check("request.params.name == \"x\"").unwrap()).request_message);
    }
}
