//! What a server's definitions cost a model's context: the bytes of each
//! tool, prompt and resource template as the client receives it, and the
//! tokens it takes with OpenAI's tokenizers (o200k, cl100k, exact, from
//! `tiktoken-rs`) and an estimate for Claude, whose tokenizer is not public.
//!
//! The same measure feeds `mcpscope stats --table context`, the Statistics
//! window, the composer's tool list and the lint rule `context-budget`.

use serde_json::value::RawValue;

/// Claude's count is estimated from cl100k: Anthropic publishes no
/// tokenizer (only an online `count_tokens` endpoint), and measurements
/// people publish put Claude's counts for English and JSON 10–30 % above
/// cl100k's. 1.2 sits in that range; the figure is labelled an estimate
/// wherever it is shown.
pub const CLAUDE_PER_CL100K: f64 = 1.2;

/// Text longer than this is counted in pieces cut at whitespace, so a
/// hostile definition (a megabyte without a space) costs linear time: the
/// tokenizer's merge step is quadratic in the length of one piece.
const PIECE: usize = 4 * 1024;

/// At most this much of one text is tokenized; beyond it the count is
/// extrapolated from the bytes per token of what was counted.
const COUNTED_AT_MOST: usize = 1 << 20;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Tokens {
    pub o200k: u64,
    pub cl100k: u64,
    /// An estimate (see [`CLAUDE_PER_CL100K`]).
    pub claude_estimate: u64,
}

impl std::ops::AddAssign for Tokens {
    fn add_assign(&mut self, o: Tokens) {
        self.o200k += o.o200k;
        self.cl100k += o.cl100k;
        self.claude_estimate += o.claude_estimate;
    }
}

/// OpenAI's two tokenizers, loaded from the data built into mcpscope
/// (~0.1 s and ~35 MB each): held while they are needed and then dropped,
/// so a long-running app does not keep them.
#[derive(Clone)]
pub struct Tokenizers {
    o200k: std::sync::Arc<tiktoken_rs::CoreBPE>,
    cl100k: std::sync::Arc<tiktoken_rs::CoreBPE>,
}

impl Tokenizers {
    pub fn load() -> Self {
        // The unit tests measure many captures: they share one pair.
        #[cfg(test)]
        {
            static SHARED: std::sync::LazyLock<Tokenizers> = std::sync::LazyLock::new(Tokenizers::load_now);
            SHARED.clone()
        }
        #[cfg(not(test))]
        Self::load_now()
    }

    fn load_now() -> Self {
        // The data is compiled in: failing to read it is a build fault, not input.
        Tokenizers {
            o200k: std::sync::Arc::new(tiktoken_rs::o200k_base().expect("the o200k tokenizer built into mcpscope")),
            cl100k: std::sync::Arc::new(tiktoken_rs::cl100k_base().expect("the cl100k tokenizer built into mcpscope")),
        }
    }

    /// Token counts of `text` (special tokens counted as ordinary text: a
    /// definition is data, not a prompt's control sequence).
    pub fn count(&self, text: &str) -> Tokens {
        let o = count_with(&self.o200k, text);
        let c = count_with(&self.cl100k, text);
        Tokens {
            o200k: o,
            cl100k: c,
            claude_estimate: (c as f64 * CLAUDE_PER_CL100K).ceil() as u64,
        }
    }
}

fn count_with(bpe: &tiktoken_rs::CoreBPE, text: &str) -> u64 {
    let counted = floor_char_boundary(text, COUNTED_AT_MOST);
    let mut tokens = 0u64;
    for piece in pieces(&text[..counted]) {
        tokens += bpe.encode_ordinary(piece).len() as u64;
    }
    if counted < text.len() && counted > 0 {
        // Extrapolated at the same bytes per token.
        tokens = (tokens as f64 * text.len() as f64 / counted as f64).ceil() as u64;
    }
    tokens
}

fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}

/// `text` cut into pieces of at most [`PIECE`] bytes, each cut just before
/// a whitespace character where the second half of the piece has one (the
/// tokenizer splits there too, so the counts do not change), else at a
/// character boundary.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.len() <= PIECE {
            return Some(std::mem::take(&mut rest));
        }
        let limit = floor_char_boundary(rest, PIECE);
        let cut = rest[PIECE / 2..limit]
            .rfind(|c: char| c.is_whitespace())
            .map(|i| i + PIECE / 2)
            .filter(|&i| i > 0)
            .unwrap_or(limit.max(1));
        let cut = if rest.is_char_boundary(cut) { cut } else { limit };
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

/// What a server lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DefinitionKind {
    Tool,
    Prompt,
    ResourceTemplate,
}

impl DefinitionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DefinitionKind::Tool => "tool",
            DefinitionKind::Prompt => "prompt",
            DefinitionKind::ResourceTemplate => "resource-template",
        }
    }

    /// The list method and the member of its result that holds the definitions.
    pub fn listed_by(self) -> (&'static str, &'static str) {
        match self {
            DefinitionKind::Tool => ("tools/list", "tools"),
            DefinitionKind::Prompt => ("prompts/list", "prompts"),
            DefinitionKind::ResourceTemplate => ("resources/templates/list", "resourceTemplates"),
        }
    }

    pub fn of_list_method(method: &str) -> Option<Self> {
        [Self::Tool, Self::Prompt, Self::ResourceTemplate]
            .into_iter()
            .find(|k| k.listed_by().0 == method)
    }

    /// The parts of a definition worth naming when it is too large.
    fn parts(self) -> &'static [&'static str] {
        match self {
            DefinitionKind::Tool => &["description", "inputSchema", "outputSchema", "annotations", "_meta"],
            DefinitionKind::Prompt => &["description", "arguments", "_meta"],
            DefinitionKind::ResourceTemplate => &["description", "uriTemplate", "_meta"],
        }
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PartCost {
    pub part: &'static str,
    pub bytes: u64,
    pub tokens: Tokens,
}

/// One definition's cost.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DefinitionCost {
    pub kind: DefinitionKind,
    pub name: String,
    /// The definition's JSON exactly as received.
    pub bytes: u64,
    pub tokens: Tokens,
    /// Its parts, largest first (by o200k tokens).
    pub parts: Vec<PartCost>,
}

impl DefinitionCost {
    /// The part that costs most, if any has a cost.
    pub fn largest_part(&self) -> Option<&PartCost> {
        self.parts.first()
    }
}

/// The cost of one definition, as received (`raw` is its exact JSON).
pub fn definition_cost(t: &Tokenizers, kind: DefinitionKind, raw: &RawValue) -> DefinitionCost {
    #[derive(serde::Deserialize)]
    struct Named<'a> {
        #[serde(default, borrow)]
        name: Option<std::borrow::Cow<'a, str>>,
        #[serde(default, borrow, rename = "uriTemplate")]
        uri_template: Option<std::borrow::Cow<'a, str>>,
    }
    let text = raw.get();
    let named: Option<Named> = serde_json::from_str(text).ok();
    let name = named
        .and_then(|n| n.name.or(n.uri_template))
        .map(|n| n.into_owned())
        .unwrap_or_else(|| "(no name)".into());
    let members: std::collections::HashMap<String, &RawValue> = serde_json::from_str(text).unwrap_or_default();
    let mut parts: Vec<PartCost> = kind
        .parts()
        .iter()
        .filter_map(|&part| {
            let v = members.get(part)?;
            Some(PartCost {
                part,
                bytes: v.get().len() as u64,
                tokens: t.count(v.get()),
            })
        })
        .collect();
    parts.sort_by(|a, b| b.tokens.o200k.cmp(&a.tokens.o200k).then(b.bytes.cmp(&a.bytes)));
    DefinitionCost {
        kind,
        name,
        bytes: text.len() as u64,
        tokens: t.count(text),
        parts,
    }
}

/// A whole listing's cost: every definition, largest first, and the list
/// as one JSON array (what a client hands a model, give or take its framing).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ListingCost {
    pub definitions: Vec<DefinitionCost>,
    pub total_bytes: u64,
    pub total_tokens: Tokens,
}

pub fn listing_cost(t: &Tokenizers, kind: DefinitionKind, items: &[Box<RawValue>]) -> ListingCost {
    let mut definitions: Vec<DefinitionCost> = items.iter().map(|r| definition_cost(t, kind, r)).collect();
    definitions.sort_by(|a, b| {
        b.tokens
            .o200k
            .cmp(&a.tokens.o200k)
            .then(b.bytes.cmp(&a.bytes))
            .then(a.name.cmp(&b.name))
    });
    let array = as_array(items);
    ListingCost {
        total_bytes: array.len() as u64,
        total_tokens: if items.is_empty() {
            Tokens::default()
        } else {
            t.count(&array)
        },
        definitions,
    }
}

/// Budgets in o200k tokens; `None` checks nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub per_definition: Option<u64>,
    pub per_listing: Option<u64>,
}

impl Budget {
    /// What lint checks unless told otherwise: a tool of more than 2,000
    /// tokens (a page of text) or a listing of more than 20,000 (a tenth of
    /// a 200k context) is one a user will notice.
    pub const DEFAULT: Budget = Budget {
        per_definition: Some(2_000),
        per_listing: Some(20_000),
    };
    pub const NONE: Budget = Budget {
        per_definition: None,
        per_listing: None,
    };
}

/// One budget passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverBudget {
    /// `None` for the listing as a whole.
    pub definition: Option<String>,
    pub tokens: u64,
    pub budget: u64,
}

/// The budgets `listing` passes. Cheap when it passes none: a token is at
/// least a byte, so what is no longer in bytes than its budget is not
/// tokenized at all (and the tokenizers are loaded, into `t`, only for
/// what is).
pub fn over_budget(
    t: &mut Option<Tokenizers>,
    kind: DefinitionKind,
    items: &[Box<RawValue>],
    budget: Budget,
) -> Vec<OverBudget> {
    let mut out = Vec::new();
    if let Some(b) = budget.per_definition {
        for raw in items.iter().filter(|r| r.get().len() as u64 > b) {
            let cost = definition_cost(t.get_or_insert_with(Tokenizers::load), kind, raw);
            if cost.tokens.o200k > b {
                out.push(OverBudget {
                    definition: Some(cost.name),
                    tokens: cost.tokens.o200k,
                    budget: b,
                });
            }
        }
    }
    if let Some(b) = budget.per_listing {
        let bytes: usize = items.iter().map(|r| r.get().len() + 1).sum();
        if bytes as u64 > b {
            let total = listing_cost_total(t.get_or_insert_with(Tokenizers::load), items);
            if total > b {
                out.push(OverBudget {
                    definition: None,
                    tokens: total,
                    budget: b,
                });
            }
        }
    }
    out
}

fn listing_cost_total(t: &Tokenizers, items: &[Box<RawValue>]) -> u64 {
    count_with(&t.o200k, &as_array(items))
}

/// The definitions as one JSON array, each exactly as received.
fn as_array(items: &[Box<RawValue>]) -> String {
    let mut array = String::from("[");
    for (i, r) in items.iter().enumerate() {
        if i > 0 {
            array.push(',');
        }
        array.push_str(r.get());
    }
    array.push(']');
    array
}

/// Assembles a listing from its pages: a request without a cursor starts a
/// new one; the page without `nextCursor` completes it.
#[derive(Clone, Debug, Default)]
pub struct ListingPages {
    building: Vec<Box<RawValue>>,
    complete: Option<Vec<Box<RawValue>>>,
}

impl ListingPages {
    /// A page answered: `first` when its request carried no cursor.
    /// Returns the listing when this page completed it.
    pub fn page(&mut self, kind: DefinitionKind, first: bool, result: &RawValue) -> Option<&[Box<RawValue>]> {
        let page: std::collections::HashMap<String, &RawValue> = serde_json::from_str(result.get()).ok()?;
        if first {
            self.building.clear();
        }
        let member = kind.listed_by().1;
        if let Some(items) = page.get(member)
            && let Ok(items) = serde_json::from_str::<Vec<Box<RawValue>>>(items.get())
        {
            self.building.extend(items);
        }
        if page.get("nextCursor").is_none_or(|c| c.get() == "null") {
            self.complete = Some(std::mem::take(&mut self.building));
            return self.complete.as_deref();
        }
        None
    }

    /// The last complete listing, else what has been read of one.
    pub fn items(&self) -> &[Box<RawValue>] {
        self.complete.as_deref().unwrap_or(&self.building)
    }

    /// Whether [`items`](Self::items) is a whole listing.
    pub fn is_complete(&self) -> bool {
        self.complete.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizers() -> &'static Tokenizers {
        static T: std::sync::LazyLock<Tokenizers> = std::sync::LazyLock::new(Tokenizers::load);
        &T
    }

    fn count(text: &str) -> Tokens {
        tokenizers().count(text)
    }

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    // The tokenizers' own test vectors (openai/tiktoken's tests).
    #[test]
    fn token_counts_match_the_tokenizers_test_vectors() {
        let o = &tokenizers().o200k;
        assert_eq!(o.encode_ordinary("hello world"), vec![24912, 2375]);
        assert_eq!(
            o.encode_ordinary(" 日本語とEnglish 12345!\n"),
            vec![17428, 40909, 5330, 28881, 220, 7633, 2548, 4175]
        );
        assert_eq!(o.encode_ordinary("a\n\n"), vec![64, 279]);
        assert_eq!(o.encode_ordinary("<|endoftext|>"), vec![27, 91, 419, 1440, 919, 91, 29]);
        let c = &tokenizers().cl100k;
        assert_eq!(c.encode_ordinary("hello world"), vec![15339, 1917]);
        assert_eq!(
            c.encode_ordinary("tiktoken is great!"),
            vec![83, 1609, 5963, 374, 2294, 0]
        );
        let t = count("hello world");
        assert_eq!((t.o200k, t.cl100k, t.claude_estimate), (2, 2, 3));
    }

    #[test]
    fn long_text_is_counted_in_pieces_without_changing_the_count() {
        let text = "The quick brown fox jumps over the lazy dog. ".repeat(400);
        assert!(text.len() > 3 * PIECE);
        let whole = tokenizers().o200k.encode_ordinary(&text).len() as u64;
        assert_eq!(count_with(&tokenizers().o200k, &text), whole);
        // A hostile piece with no whitespace at all is cut too, and finishes.
        let wall = "x".repeat(200_000);
        assert!(count_with(&tokenizers().o200k, &wall) > 0);
        assert!(pieces(&wall).all(|p| p.len() <= PIECE));
        let joined: String = pieces(&text).collect();
        assert_eq!(joined, text);
    }

    #[test]
    fn a_definition_names_its_largest_part() {
        let big = format!(
            r#"{{"name":"search","description":"Finds things.","inputSchema":{{"type":"object","properties":{{{}}}}}}}"#,
            (0..40)
                .map(|i| format!(r#""field{i}":{{"type":"string","description":"the field number {i}"}}"#))
                .collect::<Vec<_>>()
                .join(",")
        );
        let cost = definition_cost(tokenizers(), DefinitionKind::Tool, &raw(&big));
        assert_eq!(cost.name, "search");
        assert_eq!(cost.bytes, big.len() as u64);
        assert_eq!(cost.largest_part().unwrap().part, "inputSchema");
        assert!(cost.tokens.o200k > cost.largest_part().unwrap().tokens.o200k);
        let t = DefinitionKind::ResourceTemplate;
        let cost = definition_cost(tokenizers(), t, &raw(r#"{"uriTemplate":"file:///{path}"}"#));
        assert_eq!(cost.name, "file:///{path}");
    }

    #[test]
    fn pages_make_one_listing_and_a_new_listing_starts_over() {
        let mut pages = ListingPages::default();
        let k = DefinitionKind::Tool;
        assert!(
            pages
                .page(k, true, &raw(r#"{"tools":[{"name":"a"}],"nextCursor":"2"}"#))
                .is_none()
        );
        assert!(!pages.is_complete());
        let done = pages.page(k, false, &raw(r#"{"tools":[{"name":"b"}]}"#)).unwrap();
        assert_eq!(done.len(), 2);
        pages.page(k, true, &raw(r#"{"tools":[{"name":"c"}],"nextCursor":null}"#));
        assert_eq!(pages.items().len(), 1);
    }

    #[test]
    fn budgets_are_checked_only_where_the_bytes_could_pass_them() {
        let items = vec![
            raw(r#"{"name":"small","description":"tiny"}"#),
            raw(&format!(
                r#"{{"name":"large","description":"{}"}}"#,
                "word ".repeat(100)
            )),
        ];
        let mut loaded = None;
        let over = over_budget(
            &mut loaded,
            DefinitionKind::Tool,
            &items,
            Budget {
                per_definition: Some(50),
                per_listing: Some(60),
            },
        );
        assert_eq!(over.len(), 2, "{over:?}");
        assert_eq!(over[0].definition.as_deref(), Some("large"));
        assert!(over[0].tokens > 100);
        assert_eq!(over[1].definition, None);
        let mut none = None;
        assert!(over_budget(&mut none, DefinitionKind::Tool, &items, Budget::DEFAULT).is_empty());
        assert!(none.is_none(), "nothing long enough to need the tokenizers");
    }
}
