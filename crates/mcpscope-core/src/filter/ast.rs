//! The typed syntax tree of a display filter, and its canonical text.
//!
//! Printing a tree and parsing the text again gives the same tree (a unit
//! test holds every form to that), so the app can show the expression a
//! shorthand control wrote, and saved filters keep one spelling.

use std::fmt;

/// Where something stands in the filter's text: byte offsets, end excluded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }

    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// A boolean expression.
#[derive(Clone, Debug)]
pub enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    /// A value on its own: a field that exists (or a boolean field that is
    /// true), a boolean literal.
    Test(Operand),
    Compare {
        left: Operand,
        op: CmpOp,
        right: Operand,
    },
    In {
        value: Operand,
        set: Vec<SetItem>,
        span: Span,
    },
    /// `any(…)` / `all(…)`: the expression for each element of the first
    /// `[*]` array its paths go through.
    Quantified {
        quantifier: Quantifier,
        expr: Box<Expr>,
        span: Span,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantifier {
    Any,
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Contains,
    Matches,
}

impl CmpOp {
    pub fn text(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Contains => "contains",
            CmpOp::Matches => "matches",
        }
    }

    pub fn is_ordering(self) -> bool {
        matches!(self, CmpOp::Lt | CmpOp::Le | CmpOp::Gt | CmpOp::Ge)
    }

    /// The operator with its sides swapped (`1 < x` is `x > 1`).
    pub fn flipped(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            other => other,
        }
    }
}

/// One member of an `in { … }` set.
#[derive(Clone, Debug, PartialEq)]
pub enum SetItem {
    One(Literal),
    /// `a..b`, both ends included.
    Range(Literal, Literal),
}

/// Something with a value: a field, a literal, or a function of one.
#[derive(Clone, Debug)]
pub enum Operand {
    Field(FieldRef),
    Literal(Literal, Span),
    Call { func: Func, arg: Box<Operand>, span: Span },
}

impl Operand {
    pub fn span(&self) -> Span {
        match self {
            Operand::Field(f) => f.span,
            Operand::Literal(_, s) => *s,
            Operand::Call { span, .. } => *span,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Len,
    Lower,
    Count,
}

impl Func {
    pub fn name(self) -> &'static str {
        match self {
            Func::Len => "len",
            Func::Lower => "lower",
            Func::Count => "count",
        }
    }
}

/// A field as written: dotted names, `["key"]`, `[0]` and `[*]`.
#[derive(Clone, Debug)]
pub struct FieldRef {
    pub segments: Vec<Segment>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(i64),
    /// `[*]`: every element.
    Each,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Str(String),
    /// The number and its text as written (kept for printing).
    Num(f64, String),
    /// Seconds, and the text as written (`500ms`).
    Duration(f64, String),
    Bool(bool),
    Null,
}

// Trees compare by meaning, not by where they stood in a text.
impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Expr::And(a, b), Expr::And(c, d)) | (Expr::Or(a, b), Expr::Or(c, d)) => a == c && b == d,
            (Expr::Not(a), Expr::Not(b)) => a == b,
            (Expr::Test(a), Expr::Test(b)) => a == b,
            (
                Expr::Compare { left, op, right },
                Expr::Compare {
                    left: l2,
                    op: o2,
                    right: r2,
                },
            ) => left == l2 && op == o2 && right == r2,
            (Expr::In { value, set, .. }, Expr::In { value: v2, set: s2, .. }) => value == v2 && set == s2,
            (
                Expr::Quantified { quantifier, expr, .. },
                Expr::Quantified {
                    quantifier: q2,
                    expr: e2,
                    ..
                },
            ) => quantifier == q2 && expr == e2,
            _ => false,
        }
    }
}

impl PartialEq for Operand {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Operand::Field(a), Operand::Field(b)) => a.segments == b.segments,
            (Operand::Literal(a, _), Operand::Literal(b, _)) => a == b,
            (Operand::Call { func, arg, .. }, Operand::Call { func: f2, arg: a2, .. }) => func == f2 && arg == a2,
            _ => false,
        }
    }
}

/// Whether `s` can be written as a bare name in a path.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && !super::lexer::is_keyword(s)
}

pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl fmt::Display for FieldRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.segments.iter().enumerate() {
            match s {
                Segment::Key(k) if is_identifier(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Segment::Key(k) => write!(f, "[{}]", quote(k))?,
                Segment::Index(n) => write!(f, "[{n}]")?,
                Segment::Each => f.write_str("[*]")?,
            }
        }
        Ok(())
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Str(s) => f.write_str(&quote(s)),
            Literal::Num(_, text) | Literal::Duration(_, text) => f.write_str(text),
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Null => f.write_str("null"),
        }
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Field(r) => r.fmt(f),
            Operand::Literal(l, _) => l.fmt(f),
            Operand::Call { func, arg, .. } => write!(f, "{}({arg})", func.name()),
        }
    }
}

impl fmt::Display for SetItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetItem::One(l) => l.fmt(f),
            SetItem::Range(a, b) => write!(f, "{a}..{b}"),
        }
    }
}

/// Binding strength, for printing only the parentheses the text needs.
fn precedence(e: &Expr) -> u8 {
    match e {
        Expr::Or(..) => 1,
        Expr::And(..) => 2,
        Expr::Not(_) => 3,
        _ => 4,
    }
}

fn write_side(f: &mut fmt::Formatter<'_>, e: &Expr, min: u8) -> fmt::Result {
    if precedence(e) < min {
        write!(f, "({e})")
    } else {
        write!(f, "{e}")
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Left-associative: the right side of `a or (b or c)` keeps its parentheses.
            Expr::Or(a, b) => {
                write_side(f, a, 1)?;
                f.write_str(" or ")?;
                write_side(f, b, 2)
            }
            Expr::And(a, b) => {
                write_side(f, a, 2)?;
                f.write_str(" and ")?;
                write_side(f, b, 3)
            }
            Expr::Not(e) => {
                f.write_str("not ")?;
                write_side(f, e, 3)
            }
            Expr::Test(o) => o.fmt(f),
            Expr::Compare { left, op, right } => write!(f, "{left} {} {right}", op.text()),
            Expr::In { value, set, .. } => {
                write!(f, "{value} in {{")?;
                for (i, item) in set.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    item.fmt(f)?;
                }
                f.write_str("}")
            }
            Expr::Quantified { quantifier, expr, .. } => {
                let name = match quantifier {
                    Quantifier::Any => "any",
                    Quantifier::All => "all",
                };
                write!(f, "{name}({expr})")
            }
        }
    }
}
