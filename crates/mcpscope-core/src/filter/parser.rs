//! Tokens to a syntax tree (recursive descent; `or` binds loosest, then
//! `and`, then `not`, then a comparison).
//!
//! The parser is where nesting is limited ([`MAX_DEPTH`]): everything
//! downstream (compiling, evaluating, printing, cloning, dropping the tree)
//! recurses once per level, so a tree no deeper than this is safe for all of
//! them, whichever thread they run on.

use super::ast::*;
use super::error::{FilterError, nearest};
use super::lexer::{Tok, tokenize};

/// Words the parser understands between two operands, for "did you mean".
const OPERATOR_WORDS: &[&str] = &[
    "and", "or", "not", "contains", "matches", "in", "eq", "ne", "lt", "le", "gt", "ge",
];

/// How deep a filter may nest, counted two ways against the same limit:
/// the tree (each `not`, `and`/`or` link, `any(…)`/`all(…)`, function call,
/// comparison and path segment is a level, as each is a level of recursion
/// for some walk over it) and the parser's own recursion (open parentheses,
/// `not`s, quantifiers and calls). Hand-written filters stay far below it;
/// many alternatives read better as `x in {…}`, which is flat. At the limit
/// every walk fits a 2 MiB thread stack in a debug build with room to spare
/// (a unit test holds to it; a debug parse costs up to ~9 KiB a level).
pub const MAX_DEPTH: usize = 100;

pub fn parse(src: &str) -> Result<Expr, FilterError> {
    let toks = tokenize(src)?;
    let mut p = Parser { toks, at: 0, open: 0 };
    if matches!(p.peek(), Tok::End) {
        return Err(FilterError::new("the filter is empty", Span::new(0, src.len())));
    }
    let (e, _) = p.or()?;
    match p.peek() {
        Tok::End => Ok(e),
        Tok::RParen => Err(FilterError::new("this \")\" closes nothing", p.span())),
        other => {
            let (what, span) = (other.clone(), p.span());
            let mut err = FilterError::new(
                format!("expected \"and\", \"or\" or the end, found {}", what.describe()),
                span,
            );
            if let Tok::Ident(w) = &what
                && let Some(n) = nearest(w, OPERATOR_WORDS.iter().copied())
            {
                err = err.suggest(format!("did you mean \"{n}\"?"));
            }
            Err(err)
        }
    }
}

struct Parser {
    toks: Vec<(Tok, Span)>,
    at: usize,
    /// Constructs open around the current token: the parser's own recursion.
    open: usize,
}

/// A parsed piece and its depth in levels (see [`MAX_DEPTH`]).
type Parsed<T> = Result<(T, usize), FilterError>;

fn too_deep(at: Span) -> FilterError {
    FilterError::new(format!("nested deeper than {MAX_DEPTH} levels"), at).suggest(
        "each parenthesis, not, and, or, any/all, function and path segment nests; write many alternatives as x in {…}",
    )
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.at].0
    }

    fn peek2(&self) -> &Tok {
        &self.toks[(self.at + 1).min(self.toks.len() - 1)].0
    }

    fn span(&self) -> Span {
        self.toks[self.at].1
    }

    fn prev_span(&self) -> Span {
        self.toks[self.at.saturating_sub(1)].1
    }

    fn bump(&mut self) -> (Tok, Span) {
        let t = self.toks[self.at].clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == w)
    }

    fn expect(&mut self, tok: Tok, what: &str) -> Result<Span, FilterError> {
        if *self.peek() == tok {
            return Ok(self.bump().1);
        }
        Err(FilterError::new(
            format!("expected {what}, found {}", self.peek().describe()),
            self.span(),
        ))
    }

    /// The one depth rule: a node over children `inner` levels deep, made
    /// at the token `at`, is one level deeper and may not pass [`MAX_DEPTH`].
    fn level(inner: usize, at: Span) -> Result<usize, FilterError> {
        if inner >= MAX_DEPTH {
            return Err(too_deep(at));
        }
        Ok(inner + 1)
    }

    /// Opens a construct whose inside the parser reaches by recursion
    /// (parentheses, `not`, `any(`, a function call), refused before
    /// recursing once [`MAX_DEPTH`] are open: the parser's own stack is
    /// bounded by the same rule as the tree it builds.
    fn enter(&mut self, at: Span) -> Result<(), FilterError> {
        self.open = Self::level(self.open, at)?;
        Ok(())
    }

    fn leave(&mut self) {
        self.open -= 1;
    }

    fn or(&mut self) -> Parsed<Expr> {
        let (mut left, mut depth) = self.and()?;
        while self.is_word("or") || *self.peek() == Tok::OrOr {
            let op = self.bump().1;
            let (right, d) = self.and()?;
            depth = Self::level(depth.max(d), op)?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok((left, depth))
    }

    fn and(&mut self) -> Parsed<Expr> {
        let (mut left, mut depth) = self.unary()?;
        while self.is_word("and") || *self.peek() == Tok::AndAnd {
            let op = self.bump().1;
            let (right, d) = self.unary()?;
            depth = Self::level(depth.max(d), op)?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok((left, depth))
    }

    fn unary(&mut self) -> Parsed<Expr> {
        if self.is_word("not") || *self.peek() == Tok::Bang {
            let op = self.bump().1;
            self.enter(op)?;
            let inner = self.unary();
            self.leave();
            let (e, d) = inner?;
            return Ok((Expr::Not(Box::new(e)), Self::level(d, op)?));
        }
        self.primary()
    }

    // The recursive path (or, and, unary, primary, group) keeps to small
    // frames: what builds messages lives in functions of its own.
    fn primary(&mut self) -> Parsed<Expr> {
        match self.peek() {
            Tok::LParen => {
                let open = self.bump().1;
                self.group(open)
            }
            Tok::Ident(w) if (w == "any" || w == "all") && *self.peek2() == Tok::LParen => {
                let any = w == "any";
                self.quantified(any)
            }
            _ => self.comparison(),
        }
    }

    /// After `(`: the expression and its `)`. Parentheses add no level to
    /// the tree, only to the parser's recursion.
    fn group(&mut self, open: Span) -> Parsed<Expr> {
        if *self.peek() == Tok::RParen {
            return Err(FilterError::new("empty parentheses", open.to(self.span())));
        }
        self.enter(open)?;
        let inner = self.or();
        self.leave();
        let inner = inner?;
        if *self.peek() != Tok::RParen {
            return Err(self.unclosed(open));
        }
        self.bump();
        Ok(inner)
    }

    fn unclosed(&self, open: Span) -> FilterError {
        FilterError::new(
            format!(
                "expected \")\" to close the \"(\" at {}, found {}",
                open.start + 1,
                self.peek().describe()
            ),
            self.span(),
        )
    }

    /// `any(…)` or `all(…)`.
    fn quantified(&mut self, any: bool) -> Parsed<Expr> {
        let start = self.bump().1;
        self.bump();
        self.enter(start)?;
        let inner = self.or();
        self.leave();
        let (inner, d) = inner?;
        let what = if any {
            "\")\" to close any("
        } else {
            "\")\" to close all("
        };
        let end = self.expect(Tok::RParen, what)?;
        let e = Expr::Quantified {
            quantifier: if any { Quantifier::Any } else { Quantifier::All },
            expr: Box::new(inner),
            span: start.to(end),
        };
        Ok((e, Self::level(d, start)?))
    }

    fn comparison(&mut self) -> Parsed<Expr> {
        let (left, dl) = self.operand()?;
        if self.is_word("in") {
            self.bump();
            let (set, span) = self.set()?;
            let depth = Self::level(dl, left.span())?;
            return Ok((Expr::In { value: left, set, span }, depth));
        }
        let Some(op) = self.cmp_op() else {
            // Two operands with nothing between them: name the likely operator.
            if let Tok::Ident(w) = self.peek().clone()
                && !matches!(w.as_str(), "and" | "or")
                && let Some(n) = nearest(&w, OPERATOR_WORDS.iter().copied())
            {
                return Err(FilterError::new(format!("\"{w}\" is not an operator"), self.span())
                    .suggest(format!("did you mean \"{n}\"?")));
            }
            if matches!(self.peek(), Tok::Str(_) | Tok::Num(..) | Tok::Duration(..)) {
                return Err(FilterError::new(
                    format!("expected an operator before {}", self.peek().describe()),
                    self.span(),
                )
                .suggest("==, !=, <, <=, >, >=, contains, matches or in"));
            }
            let depth = Self::level(dl, left.span())?;
            return Ok((Expr::Test(left), depth));
        };
        let at = self.bump().1;
        let (right, dr) = self.operand()?;
        let depth = Self::level(dl.max(dr), at)?;
        // A literal on the left reads better turned round: `1s < latency` is `latency > 1s`.
        if matches!(left, Operand::Literal(..))
            && !matches!(right, Operand::Literal(..))
            && !matches!(op, CmpOp::Contains | CmpOp::Matches)
        {
            let e = Expr::Compare {
                left: right,
                op: op.flipped(),
                right: left,
            };
            return Ok((e, depth));
        }
        Ok((Expr::Compare { left, op, right }, depth))
    }

    fn cmp_op(&self) -> Option<CmpOp> {
        Some(match self.peek() {
            Tok::EqEq => CmpOp::Eq,
            Tok::Ne => CmpOp::Ne,
            Tok::Lt => CmpOp::Lt,
            Tok::Le => CmpOp::Le,
            Tok::Gt => CmpOp::Gt,
            Tok::Ge => CmpOp::Ge,
            Tok::Tilde => CmpOp::Matches,
            Tok::Ident(w) => match w.as_str() {
                "eq" => CmpOp::Eq,
                "ne" => CmpOp::Ne,
                "lt" => CmpOp::Lt,
                "le" => CmpOp::Le,
                "gt" => CmpOp::Gt,
                "ge" => CmpOp::Ge,
                "contains" => CmpOp::Contains,
                "matches" => CmpOp::Matches,
                _ => return None,
            },
            _ => return None,
        })
    }

    fn literal(&mut self) -> Option<(Literal, Span)> {
        let lit = match self.peek().clone() {
            Tok::Str(s) => Literal::Str(s),
            Tok::Num(n, t) => Literal::Num(n, t),
            Tok::Duration(n, t) => Literal::Duration(n, t),
            Tok::Ident(w) if w == "true" => Literal::Bool(true),
            Tok::Ident(w) if w == "false" => Literal::Bool(false),
            Tok::Ident(w) if w == "null" => Literal::Null,
            _ => return None,
        };
        Some((lit, self.bump().1))
    }

    fn operand(&mut self) -> Parsed<Operand> {
        if let Some((lit, span)) = self.literal() {
            return Ok((Operand::Literal(lit, span), 1));
        }
        match self.peek() {
            Tok::Ident(w) if !matches!(w.as_str(), "and" | "or" | "not" | "contains" | "matches" | "in") => {}
            _ => return Err(self.not_an_operand()),
        }
        if *self.peek2() == Tok::LParen {
            let func = self.function()?;
            return self.call(func);
        }
        let (f, depth) = self.field()?;
        Ok((Operand::Field(f), depth))
    }

    fn not_an_operand(&self) -> FilterError {
        let (tok, span) = (self.peek(), self.span());
        if let Tok::Ident(word) = tok {
            return FilterError::new(
                format!("expected a field or a value, found the operator \"{word}\""),
                span,
            );
        }
        let e = FilterError::new(format!("expected a field or a value, found {}", tok.describe()), span);
        if *tok == Tok::End {
            return e.suggest("a field such as method, kind or latency");
        }
        e
    }

    /// The function named at the current token.
    fn function(&self) -> Result<Func, FilterError> {
        let Tok::Ident(word) = self.peek() else {
            unreachable!("function() is called on a name")
        };
        Ok(match word.as_str() {
            "len" => Func::Len,
            "lower" => Func::Lower,
            "count" => Func::Count,
            other => {
                let e = FilterError::new(format!("unknown function \"{other}\""), self.span());
                return Err(match nearest(other, ["len", "lower", "count", "any", "all"]) {
                    Some(n) => e.suggest(format!("did you mean \"{n}\"?")),
                    None => e.suggest("functions are len, lower, count, any and all"),
                });
            }
        })
    }

    /// `func(operand)`, from the function's name.
    fn call(&mut self, func: Func) -> Parsed<Operand> {
        let span = self.bump().1;
        self.bump();
        self.enter(span)?;
        let arg = self.operand();
        self.leave();
        let (arg, d) = arg?;
        let end = self.expect(Tok::RParen, &format!("\")\" to close {}(", func.name()))?;
        let call = Operand::Call {
            func,
            arg: Box::new(arg),
            span: span.to(end),
        };
        Ok((call, Self::level(d, span)?))
    }

    /// A path; its depth is its number of segments (a path is walked a
    /// segment a level).
    fn field(&mut self) -> Parsed<FieldRef> {
        let (Tok::Ident(first), start) = self.bump() else {
            unreachable!("field() is called on a name")
        };
        let mut segments = vec![Segment::Key(first)];
        loop {
            if matches!(self.peek(), Tok::Dot | Tok::LBracket) {
                Self::level(segments.len(), self.span())?;
            }
            match self.peek() {
                Tok::Dot => {
                    self.bump();
                    match self.bump() {
                        (Tok::Ident(k), _) => segments.push(Segment::Key(k)),
                        (Tok::Num(_, t), _) if t.bytes().all(|b| b.is_ascii_digit()) => segments.push(Segment::Key(t)),
                        (other, s) => {
                            return Err(FilterError::new(
                                format!("expected a name after \".\", found {}", other.describe()),
                                s,
                            )
                            .suggest("write [\"key\"] for a key that is not a plain name"));
                        }
                    }
                }
                Tok::LBracket => {
                    self.bump();
                    match self.bump() {
                        (Tok::Str(k), _) => segments.push(Segment::Key(k)),
                        (Tok::Star, _) => segments.push(Segment::Each),
                        (Tok::Num(n, t), s) => {
                            if n.fract() != 0.0 || t.contains(['e', 'E', '.']) {
                                return Err(FilterError::new("an index is a whole number", s));
                            }
                            segments.push(Segment::Index(n as i64));
                        }
                        (other, s) => {
                            return Err(FilterError::new(
                                format!(
                                    "expected an index, \"*\" or a quoted key in [ ], found {}",
                                    other.describe()
                                ),
                                s,
                            ));
                        }
                    }
                    self.expect(Tok::RBracket, "\"]\"")?;
                }
                _ => break,
            }
        }
        let depth = segments.len();
        let f = FieldRef {
            segments,
            span: start.to(self.prev_span()),
        };
        Ok((f, depth))
    }

    fn set(&mut self) -> Result<(Vec<SetItem>, Span), FilterError> {
        let open = self.expect(Tok::LBrace, "\"{\" to start the set")?;
        let mut items = Vec::new();
        loop {
            if *self.peek() == Tok::RBrace {
                if items.is_empty() {
                    return Err(FilterError::new("the set is empty", open.to(self.span())));
                }
                let close = self.bump().1;
                return Ok((items, open.to(close)));
            }
            let Some((a, _)) = self.literal() else {
                return Err(FilterError::new(
                    format!("expected a value in the set, found {}", self.peek().describe()),
                    self.span(),
                ));
            };
            if *self.peek() == Tok::DotDot {
                self.bump();
                let Some((b, _)) = self.literal() else {
                    return Err(FilterError::new(
                        format!("expected the end of the range, found {}", self.peek().describe()),
                        self.span(),
                    ));
                };
                items.push(SetItem::Range(a, b));
            } else {
                items.push(SetItem::One(a));
            }
            if *self.peek() == Tok::Comma {
                self.bump();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(src: &str) -> String {
        let e = parse(src).unwrap_or_else(|e| panic!("{src}: {}", e.render(src)));
        let text = e.to_string();
        let again = parse(&text).unwrap_or_else(|e| panic!("{text}: {}", e.render(&text)));
        assert_eq!(e, again, "{src} -> {text}");
        text
    }

    #[test]
    fn text_tree_text_round_trips() {
        for (src, canonical) in [
            ("method==\"tools/call\"", r#"method == "tools/call""#),
            ("a && b || !c", "a and b or not c"),
            ("a and (b or c)", "a and (b or c)"),
            ("(a or b) and c", "(a or b) and c"),
            ("a or (b or c)", "a or (b or c)"),
            ("not (a and b)", "not (a and b)"),
            ("not not a", "not not a"),
            ("latency > 500ms", "latency > 500ms"),
            ("1s < latency", "latency > 1s"),
            (
                "http.status in {200..299, 404 500}",
                "http.status in {200..299, 404, 500}",
            ),
            (r#"http.header["mcp-session-id"]"#, r#"http.header["mcp-session-id"]"#),
            (
                r#"result.content[0].text contains "x\ny""#,
                r#"result.content[0].text contains "x\ny""#,
            ),
            (
                "any(result.tools[*].name == 'echo')",
                r#"any(result.tools[*].name == "echo")"#,
            ),
            (
                "all(result.tools[*].inputSchema.type == \"object\")",
                "all(result.tools[*].inputSchema.type == \"object\")",
            ),
            ("len(result.tools) >= 2", "len(result.tools) >= 2"),
            ("lower(method) matches \"^TOOLS\"", "lower(method) matches \"^TOOLS\""),
            ("method ~ 'x'", "method matches \"x\""),
            ("count(result.tools[*]) == 0", "count(result.tools[*]) == 0"),
            ("error.code eq -32601", "error.code == -32601"),
            (
                "id == null or result.isError == true",
                "id == null or result.isError == true",
            ),
            (
                "params._meta[\"io.modelcontextprotocol/related-task\"].taskId",
                "params._meta[\"io.modelcontextprotocol/related-task\"].taskId",
            ),
            ("x == 1e3", "x == 1e3"),
        ] {
            assert_eq!(roundtrip(src), canonical, "{src}");
        }
    }

    #[test]
    fn or_binds_loosest() {
        let e = parse("a or b and c").unwrap();
        assert!(matches!(e, Expr::Or(_, ref r) if matches!(**r, Expr::And(..))), "{e:?}");
        let e = parse("not a and b").unwrap();
        assert!(matches!(e, Expr::And(ref l, _) if matches!(**l, Expr::Not(_))), "{e:?}");
    }

    fn err(src: &str) -> FilterError {
        parse(src).expect_err(src)
    }

    #[test]
    fn syntax_errors_point_at_the_token() {
        let e = err("method == ");
        assert_eq!(e.span.start, 10, "{e:?}");
        let e = err("method contain \"x\"");
        assert_eq!((e.span.start, e.span.end), (7, 14));
        assert_eq!(e.suggestion.as_deref(), Some("did you mean \"contains\"?"));
        let e = err("(a or b");
        assert_eq!(e.span.start, 7);
        assert!(e.message.contains("close the \"(\" at 1"), "{e:?}");
        let e = err("a or b)");
        assert!(e.message.contains("closes nothing"));
        let e = err("method \"x\"");
        assert!(e.message.contains("expected an operator"), "{e:?}");
        let e = err("a b");
        assert!(e.message.contains("expected \"and\", \"or\" or the end"), "{e:?}");
        let e = err("a andd b");
        assert_eq!(e.suggestion.as_deref(), Some("did you mean \"and\"?"), "{e:?}");
        let e = err("size(x) > 1");
        assert!(e.message.contains("unknown function"), "{e:?}");
        let e = err("x in {}");
        assert!(e.message.contains("empty"));
        let e = err("x[1.5]");
        assert!(e.message.contains("whole number"));
        let e = err("x.");
        assert_eq!(e.span.start, 2);
        let e = err("");
        assert!(e.message.contains("empty"));
        let e = err("a == and");
        assert!(e.message.contains("operator \"and\""), "{e:?}");
    }

    /// Filters exactly `depth` levels deep, one per way of nesting, with
    /// whether each matches [`deep_message`] (None: it does not compile).
    fn shapes(depth: usize) -> Vec<(&'static str, String, Option<bool>)> {
        let chain = |op: &str| vec!["json.a"; depth - 2].join(op);
        let nots = depth - 3;
        let pairs = depth / 2;
        let mixed = format!(
            "{}{}json.a{}",
            "not (".repeat(pairs),
            "not ".repeat(depth % 2),
            ")".repeat(pairs)
        );
        vec![
            (
                "not",
                format!("{}json.a", "not ".repeat(nots)),
                Some(nots.is_multiple_of(2)),
            ),
            (
                "bang",
                format!("{}json.a", "!".repeat(nots)),
                Some(nots.is_multiple_of(2)),
            ),
            (
                "parentheses",
                format!("{}json.a{}", "(".repeat(depth), ")".repeat(depth)),
                Some(true),
            ),
            ("and", chain(" and "), Some(true)),
            ("or", chain(" or "), Some(true)),
            ("&&", chain("&&"), Some(true)),
            ("mixed", mixed, Some((pairs + depth % 2).is_multiple_of(2))),
            // lower() of an object is its text, never "x".
            (
                "lower",
                format!("{}json.a{} == \"x\"", "lower(".repeat(depth - 3), ")".repeat(depth - 3)),
                Some(false),
            ),
            ("path", format!("json{} == 1", ".a".repeat(depth - 2)), Some(true)),
            ("index", format!("json{} == 1", "[0]".repeat(depth - 2)), Some(true)),
            // Nested quantifiers leave the outer one no [*] of its own.
            (
                "any",
                format!("{}json.a[*]{}", "any(".repeat(depth - 4), ")".repeat(depth - 4)),
                None,
            ),
        ]
    }

    /// A message that nests as deep as the deepest path goes: objects
    /// under "a" for the paths of names, arrays for the paths of indexes.
    fn deep_message(shape: &str, depth: usize) -> crate::transport::event::Event {
        let text = if shape == "index" {
            format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
        } else {
            format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
        };
        crate::transport::event::Event::Frame(crate::wire::frame::Frame::from_line(
            0,
            std::time::Duration::ZERO,
            crate::wire::frame::Direction::In,
            crate::wire::framing::RawLine {
                bytes: text.into_bytes(),
                ending: crate::wire::framing::LineEnding::Lf,
            },
            &crate::wire::classify::Limits::default(),
        ))
    }

    /// The deepest filter the parser allows goes through every walk over
    /// its tree (parse, compile, evaluation, printing, comparing, cloning,
    /// Debug, drop) on a 2 MiB stack in a debug build: the least any thread
    /// that parses or runs a filter has (the control socket's clients).
    #[test]
    fn the_deepest_filter_allowed_is_safe_on_a_small_stack() {
        let run = || {
            for (shape, text, matches) in shapes(MAX_DEPTH) {
                let e = parse(&text).unwrap_or_else(|e| panic!("{shape}: {}", e.summary()));
                let printed = e.to_string();
                assert!(parse(&printed).is_ok_and(|again| again == e), "{shape}");
                let copy = e.clone();
                assert!(format!("{copy:?}").contains("Field"), "{shape}");
                drop(copy);
                match crate::filter::Filter::parse(&text) {
                    Ok(f) => {
                        let event = deep_message(shape, MAX_DEPTH - 2);
                        let subject = crate::filter::records::EventSubject::new(&event, b"", "s", "stdio");
                        assert_eq!(Some(f.matches(&subject)), matches, "{shape}");
                        assert!(!f.canonical().is_empty());
                    }
                    Err(e) => assert_eq!(matches, None, "{shape}: {}", e.summary()),
                }
            }
        };
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(run)
            .unwrap()
            .join()
            .expect("the walks fit the stack");
    }

    #[test]
    fn one_level_deeper_is_refused_where_it_goes_over() {
        for (shape, text, _) in shapes(MAX_DEPTH + 1) {
            let e = parse(&text).expect_err(shape);
            assert_eq!(e.message, format!("nested deeper than {MAX_DEPTH} levels"), "{shape}");
            assert!(e.span.start < e.span.end && e.span.end <= text.len(), "{shape}: {e:?}");
            assert!(
                e.to_string()
                    .starts_with(&format!("at {}: nested deeper than", e.span.start + 1))
            );
        }
        // Thousands of levels are refused at the first one too many, before
        // the parser's own recursion could exhaust the stack.
        let e = parse(&format!("{}method{}", "(".repeat(5000), ")".repeat(5000))).unwrap_err();
        assert_eq!(e.span, Span::new(MAX_DEPTH, MAX_DEPTH + 1), "{e:?}");
        let e = parse(&"not ".repeat(30_000)).unwrap_err();
        assert_eq!(e.span.start, 4 * MAX_DEPTH, "{e:?}");
        let e = parse(&"lower(".repeat(30_000)).unwrap_err();
        assert_eq!(e.span.start, 6 * MAX_DEPTH, "{e:?}");
        for text in [
            vec!["method"; 100_000].join(" or "),
            format!("method{}", ".a".repeat(100_000)),
            format!("json{} == 1", "[0]".repeat(100_000)),
        ] {
            let e = parse(&text).unwrap_err();
            assert_eq!(e.message, format!("nested deeper than {MAX_DEPTH} levels"));
        }
        // Parentheses cost the tree nothing: a filter joined again and again
        // by "Prepare as filter" keeps within the limit longer.
        assert!(parse(&format!("{}a{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH))).is_ok());
    }
}
