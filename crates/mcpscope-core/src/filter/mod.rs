//! Display filters: one expression language for the timeline, `mcpscope
//! filter`, `lint --filter` and `diff --filter`.
//!
//! ```text
//! method == "tools/call" and latency > 500ms
//! kind in {"error", "iserror"} or finding.severity == "error"
//! any(result.tools[*].name == "echo")
//! http.status >= 400 and http.header["mcp-session-id"]
//! ```
//!
//! Text is parsed ([`parser`]) into a typed tree ([`ast`], printed back as
//! canonical text), checked against the field table ([`fields`]) and
//! compiled ([`compile`]) into a predicate that runs on anything
//! implementing [`Subject`] ([`eval`]): the app's rows ([`rows`]) and a
//! capture read record by record ([`records`]).

pub mod ast;
pub mod compile;
pub mod complete;
pub mod error;
pub mod eval;
pub mod fields;
pub mod json;
pub mod lexer;
pub mod needle;
pub mod parser;
pub mod records;
pub mod row_index;
pub mod rows;

#[cfg(test)]
mod tests;

pub use compile::Needs;
pub use error::FilterError;
pub use eval::Subject;

use compile::Pred;
use memchr::memmem::Finder;

/// A checked filter, ready to run.
#[derive(Clone, Debug)]
pub struct Filter {
    text: String,
    expr: ast::Expr,
    pred: Pred,
    needs: Needs,
    /// Text every matching record's line contains.
    required: Vec<Finder<'static>>,
}

impl Filter {
    pub fn parse(text: &str) -> Result<Filter, FilterError> {
        let expr = parser::parse(text)?;
        let pred = compile::compile(&expr)?;
        // Longest first: a longer text is likelier to be rare, and the first
        // one missing ends the check.
        let mut literals = compile::required_literals(&pred);
        literals.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let required = literals
            .iter()
            .map(|s| Finder::new(s.as_bytes()).into_owned())
            .collect();
        Ok(Filter {
            text: text.to_owned(),
            needs: compile::needs(&pred),
            expr,
            pred,
            required,
        })
    }

    /// The filter as the user wrote it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The filter in its canonical spelling (parses to the same tree).
    pub fn canonical(&self) -> String {
        self.expr.to_string()
    }

    pub fn expr(&self) -> &ast::Expr {
        &self.expr
    }

    /// Every field the filter reads, in the order written (a failed
    /// assertion shows what each held).
    pub fn fields(&self) -> Vec<compile::Access> {
        let mut out = Vec::new();
        compile::visit_accesses(&self.pred, &mut |a| {
            if !out.contains(a) {
                out.push(a.clone());
            }
        });
        out
    }

    /// What the filter reads beyond the record itself.
    pub fn needs(&self) -> Needs {
        self.needs
    }

    /// False when `line` cannot belong to a matching record (it lacks text
    /// every match has); true when it may. A line with a `\u` or `\/`
    /// escape may spell that text otherwise, so it always may.
    pub fn may_match_line(&self, line: &[u8]) -> bool {
        if self.required.is_empty() || has_escape(line) {
            return true;
        }
        self.required.iter().all(|f| f.find(line).is_some())
    }

    pub fn matches<S: Subject>(&self, s: &S) -> bool {
        self.may_match_line(s.raw()) && eval::eval(&self.pred, s, &mut Vec::new())
    }

    /// [`Filter::matches`] without the text pre-check (for a caller that
    /// already checked the record's line).
    pub fn matches_checked<S: Subject>(&self, s: &S) -> bool {
        eval::eval(&self.pred, s, &mut Vec::new())
    }
}

fn has_escape(line: &[u8]) -> bool {
    let mut from = 0;
    while let Some(p) = memchr::memchr(b'\\', &line[from..]) {
        let at = from + p;
        match line.get(at + 1) {
            Some(b'u' | b'/') => return true,
            // `\\` is one escaped backslash: what follows it is not an escape.
            Some(b'\\') => from = at + 2,
            _ => from = at + 1,
        }
        if from >= line.len() {
            break;
        }
    }
    false
}

/// How "Prepare as filter" joins a condition to the filter already typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    And,
    Or,
    AndNot,
    OrNot,
}

impl Join {
    pub const ALL: [Join; 4] = [Join::And, Join::Or, Join::AndNot, Join::OrNot];

    pub fn text(self) -> &'static str {
        match self {
            Join::And => "and",
            Join::Or => "or",
            Join::AndNot => "and not",
            Join::OrNot => "or not",
        }
    }
}

/// `current` joined with `condition`, each side parenthesised where it
/// needs to be; an empty `current` gives the condition (negated for the
/// `not` joins).
pub fn combine(current: &str, join: Join, condition: &str) -> String {
    let side = |t: &str| match parser::parse(t) {
        Ok(e @ (ast::Expr::Or(..) | ast::Expr::And(..))) => format!("({e})"),
        Ok(e) => e.to_string(),
        Err(_) => format!("({t})"),
    };
    let negated = matches!(join, Join::AndNot | Join::OrNot);
    let current = current.trim();
    if current.is_empty() {
        return if negated {
            format!("not {}", side(condition))
        } else {
            condition.to_owned()
        };
    }
    format!("{} {} {}", side(current), join.text(), side(condition))
}

/// The filter condition that picks out `value` at `path` (a JSON tree
/// path such as `$.params.name`): what "Apply as filter" writes.
pub fn condition_for(path: &str, value: &serde_json::Value) -> Option<String> {
    let field = field_from_json_path(path)?;
    Some(match value {
        serde_json::Value::String(s) => format!("{field} == {}", ast::quote(s)),
        serde_json::Value::Number(n) => format!("{field} == {n}"),
        serde_json::Value::Bool(b) => format!("{field} == {b}"),
        serde_json::Value::Null => format!("{field} == null"),
        _ => field,
    })
}

/// `$.params["a b"][0]` → `params["a b"][0]`; the root alone is `json`.
/// None for paths into a string shown as JSON (`#json`), which no field reaches.
pub fn field_from_json_path(path: &str) -> Option<String> {
    if path.contains("#json") {
        return None;
    }
    let rest = path.strip_prefix('$')?;
    let rest = rest.strip_prefix('.').unwrap_or(rest);
    if rest.is_empty() {
        return Some("json".into());
    }
    // Parse it as a field to be sure it is one, then print the canonical spelling.
    let candidate = match rest.as_bytes()[0] {
        b'[' => format!("json{rest}"),
        _ => rest.to_owned(),
    };
    let expr = parser::parse(&candidate).ok()?;
    match expr {
        ast::Expr::Test(ast::Operand::Field(f)) => {
            let text = f.to_string();
            let root = match f.segments.first() {
                Some(ast::Segment::Key(k)) => k.as_str(),
                _ => "",
            };
            Some(
                if fields::MESSAGE_ROOTS.contains(&root) || root == "id" || root == "method" {
                    text
                } else {
                    format!("json.{text}")
                },
            )
        }
        _ => None,
    }
}
