//! `context-budget`: a listed definition, or a whole listing, that takes
//! more of a model's context than its budget (o200k tokens).

use super::{Finding, Severity, rule};
use crate::analysis::context_cost::{Budget, DefinitionKind, ListingPages, Tokenizers};
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use std::collections::HashMap;

#[derive(Default)]
pub(super) struct ContextBudget {
    /// List requests waiting for their answer: whether each carried a cursor.
    asked: HashMap<u64, bool>,
    pages: HashMap<DefinitionKind, ListingPages>,
    /// Loaded the first time a listing is long enough to need them.
    tokenizers: Option<Tokenizers>,
}

/// The members of a request's params that the context and statistics
/// read (the arguments and the rest are skipped, not built).
#[derive(Default, serde::Deserialize)]
pub(crate) struct NamingParams {
    #[serde(default)]
    pub cursor: Option<serde_json::Value>,
    #[serde(default)]
    pub name: Option<serde_json::Value>,
    #[serde(default)]
    pub uri: Option<serde_json::Value>,
}

impl NamingParams {
    pub(crate) fn of(raw: &[u8]) -> NamingParams {
        #[derive(serde::Deserialize)]
        struct Request<'a> {
            #[serde(default, borrow)]
            params: Option<&'a serde_json::value::RawValue>,
        }
        // Only an object: serde would read an array's items into the fields
        // by position, naming a tool from `params: ["echo", …]`.
        serde_json::from_slice::<Request>(raw)
            .ok()
            .and_then(|r| r.params)
            .filter(|p| p.get().starts_with('{'))
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default()
    }
}

/// Whether a list request carries `params.cursor` (a later page).
pub(crate) fn has_cursor(raw: &[u8]) -> bool {
    NamingParams::of(raw).cursor.is_some_and(|c| !c.is_null())
}

impl ContextBudget {
    pub fn frame(&mut self, f: &Frame, budget: Budget, out: &mut Vec<Finding>) {
        if budget == Budget::NONE {
            return;
        }
        if f.direction == Direction::Out && f.class.kind == Kind::Request {
            if f.class
                .method
                .as_deref()
                .and_then(DefinitionKind::of_list_method)
                .is_some()
            {
                self.asked.insert(f.seq, has_cursor(&f.raw));
            }
            return;
        }
        let Some(link) = &f.link else { return };
        if f.direction != Direction::In || f.class.kind != Kind::Result {
            return;
        }
        let Some(kind) = DefinitionKind::of_list_method(&link.method) else {
            return;
        };
        let Some(cursor) = self.asked.remove(&link.request_seq) else {
            return;
        };
        let Some(result) = result_of(&f.raw) else { return };
        let pages = self.pages.entry(kind).or_default();
        let Some(items) = pages.page(kind, !cursor, &result) else {
            return;
        };
        for over in crate::analysis::context_cost::over_budget(&mut self.tokenizers, kind, items, budget) {
            let what = match &over.definition {
                Some(name) => format!("The {} {name:?}", kind.as_str()),
                None => format!("The whole {} listing", kind.listed_by().0),
            };
            out.push(Finding::new(
                rule::CONTEXT_BUDGET,
                Severity::Warning,
                vec![link.request_seq, f.seq],
                format!(
                    "{what} takes {} tokens (o200k) of a model's context, over its budget of {}: every \
                     conversation that offers it pays that before the first word. Shorten descriptions and \
                     schemas, or split the server.",
                    over.tokens, over.budget
                ),
            ));
        }
    }
}

/// The `result` member of a response, as its exact JSON.
pub(crate) fn result_of(raw: &[u8]) -> Option<Box<serde_json::value::RawValue>> {
    #[derive(serde::Deserialize)]
    struct Response {
        result: Box<serde_json::value::RawValue>,
    }
    serde_json::from_slice::<Response>(raw).ok().map(|r| r.result)
}
