//! Tokens to a syntax tree (recursive descent; `or` binds loosest, then
//! `and`, then `not`, then a comparison).

use super::ast::*;
use super::error::{FilterError, nearest};
use super::lexer::{Tok, tokenize};

/// Words the parser understands between two operands, for "did you mean".
const OPERATOR_WORDS: &[&str] = &[
    "and", "or", "not", "contains", "matches", "in", "eq", "ne", "lt", "le", "gt", "ge",
];

pub fn parse(src: &str) -> Result<Expr, FilterError> {
    let toks = tokenize(src)?;
    let mut p = Parser { toks, at: 0 };
    if matches!(p.peek(), Tok::End) {
        return Err(FilterError::new("the filter is empty", Span::new(0, src.len())));
    }
    let e = p.or()?;
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

    fn or(&mut self) -> Result<Expr, FilterError> {
        let mut left = self.and()?;
        while self.is_word("or") || *self.peek() == Tok::OrOr {
            self.bump();
            let right = self.and()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, FilterError> {
        let mut left = self.unary()?;
        while self.is_word("and") || *self.peek() == Tok::AndAnd {
            self.bump();
            let right = self.unary()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, FilterError> {
        if self.is_word("not") || *self.peek() == Tok::Bang {
            self.bump();
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, FilterError> {
        match self.peek().clone() {
            Tok::LParen => {
                let open = self.bump().1;
                if *self.peek() == Tok::RParen {
                    return Err(FilterError::new("empty parentheses", open.to(self.span())));
                }
                let e = self.or()?;
                if *self.peek() != Tok::RParen {
                    return Err(FilterError::new(
                        format!(
                            "expected \")\" to close the \"(\" at {}, found {}",
                            open.start + 1,
                            self.peek().describe()
                        ),
                        self.span(),
                    ));
                }
                self.bump();
                Ok(e)
            }
            Tok::Ident(w) if (w == "any" || w == "all") && *self.peek2() == Tok::LParen => {
                let start = self.bump().1;
                self.bump();
                let inner = self.or()?;
                let end = self.expect(Tok::RParen, &format!("\")\" to close {w}("))?;
                Ok(Expr::Quantified {
                    quantifier: if w == "any" { Quantifier::Any } else { Quantifier::All },
                    expr: Box::new(inner),
                    span: start.to(end),
                })
            }
            _ => self.comparison(),
        }
    }

    fn comparison(&mut self) -> Result<Expr, FilterError> {
        let left = self.operand()?;
        if self.is_word("in") {
            self.bump();
            let (set, span) = self.set()?;
            return Ok(Expr::In { value: left, set, span });
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
            return Ok(Expr::Test(left));
        };
        self.bump();
        let right = self.operand()?;
        // A literal on the left reads better turned round: `1s < latency` is `latency > 1s`.
        if matches!(left, Operand::Literal(..))
            && !matches!(right, Operand::Literal(..))
            && !matches!(op, CmpOp::Contains | CmpOp::Matches)
        {
            return Ok(Expr::Compare {
                left: right,
                op: op.flipped(),
                right: left,
            });
        }
        Ok(Expr::Compare { left, op, right })
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

    fn operand(&mut self) -> Result<Operand, FilterError> {
        if let Some((lit, span)) = self.literal() {
            return Ok(Operand::Literal(lit, span));
        }
        let (tok, span) = (self.peek().clone(), self.span());
        let Tok::Ident(word) = tok else {
            let mut e = FilterError::new(format!("expected a field or a value, found {}", tok.describe()), span);
            if tok == Tok::End {
                e = e.suggest("a field such as method, kind or latency");
            }
            return Err(e);
        };
        if matches!(word.as_str(), "and" | "or" | "not" | "contains" | "matches" | "in") {
            return Err(FilterError::new(
                format!("expected a field or a value, found the operator \"{word}\""),
                span,
            ));
        }
        if *self.peek2() == Tok::LParen {
            let func = match word.as_str() {
                "len" => Func::Len,
                "lower" => Func::Lower,
                "count" => Func::Count,
                other => {
                    let mut e = FilterError::new(format!("unknown function \"{other}\""), span);
                    if let Some(n) = nearest(other, ["len", "lower", "count", "any", "all"]) {
                        e = e.suggest(format!("did you mean \"{n}\"?"));
                    } else {
                        e = e.suggest("functions are len, lower, count, any and all");
                    }
                    return Err(e);
                }
            };
            self.bump();
            self.bump();
            let arg = self.operand()?;
            let end = self.expect(Tok::RParen, &format!("\")\" to close {}(", func.name()))?;
            return Ok(Operand::Call {
                func,
                arg: Box::new(arg),
                span: span.to(end),
            });
        }
        self.field().map(Operand::Field)
    }

    fn field(&mut self) -> Result<FieldRef, FilterError> {
        let (Tok::Ident(first), start) = self.bump() else {
            unreachable!("field() is called on a name")
        };
        let mut segments = vec![Segment::Key(first)];
        loop {
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
        Ok(FieldRef {
            segments,
            span: start.to(self.prev_span()),
        })
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
}
