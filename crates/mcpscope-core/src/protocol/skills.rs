//! Skills over MCP (SEP-2640, extension `io.modelcontextprotocol/skills`):
//! `skills/list` entries, and the checks a host makes before it uses a
//! skill's file. A file is read only when needed (never on listing), and
//! its bytes must match the entry's `size` and `sha256:` digest; `SKILL.md`'s
//! YAML frontmatter must equal the entry's `frontmatter`, field by field.
//! Nothing else of a skill is read after a failed check.

use base64::Engine;
use serde_json::{Map, Value};
use std::fmt;

/// The extension's identifier under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";
pub const SKILLS_LIST: &str = "skills/list";
pub const SKILLS_GET: &str = "skills/get";
/// The manifest every skill has.
pub const MANIFEST: &str = "SKILL.md";

/// One file of a skill as its entry announces it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillFile {
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: Option<String>,
    pub size: Option<u64>,
}

/// A `skills/list` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct SkillEntry {
    /// The skill's `SKILL.md`, e.g. `skill://pdf-processing/SKILL.md`.
    pub uri: String,
    pub frontmatter: Map<String, Value>,
    pub files: Vec<SkillFile>,
    /// What in the entry is invalid (a `size` that is not a byte count, a
    /// digest that is not a string…), each naming the field. An entry with
    /// problems fails its check: none of its files is read.
    pub problems: Vec<String>,
}

impl SkillEntry {
    /// Reads one entry; `Err` names what is missing.
    pub fn from_json(v: &Value) -> Result<SkillEntry, EntryError> {
        let uri = v
            .get("uri")
            .and_then(Value::as_str)
            .ok_or(EntryError::NoUri)?
            .to_owned();
        let frontmatter = v
            .get("frontmatter")
            .and_then(Value::as_object)
            .cloned()
            .ok_or_else(|| EntryError::NoFrontmatter(uri.clone()))?;
        let mut problems = Vec::new();
        let files = match v.get("resources") {
            None => Vec::new(),
            Some(Value::Array(rs)) => rs
                .iter()
                .enumerate()
                .filter_map(|(i, r)| SkillFile::from_json(i, r, &mut problems))
                .collect(),
            Some(other) => {
                problems.push(format!("resources is {}, not an array", shown(other)));
                Vec::new()
            }
        };
        Ok(SkillEntry {
            uri,
            frontmatter,
            files,
            problems,
        })
    }

    /// The entries of a `skills/list` (or `skills/get`) result, and what could not be read.
    pub fn all_from_result(result: &Value) -> (Vec<SkillEntry>, Vec<String>) {
        let mut entries = Vec::new();
        let mut problems = Vec::new();
        let list: Vec<&Value> = match (result.get("skills"), result.get("skill")) {
            (Some(Value::Array(a)), _) => a.iter().collect(),
            (_, Some(one)) => vec![one],
            _ => Vec::new(),
        };
        for v in list {
            match SkillEntry::from_json(v) {
                Ok(e) => entries.push(e),
                Err(e) => problems.push(e.to_string()),
            }
        }
        (entries, problems)
    }

    /// The skill's name: the frontmatter's `name`, else the path segment before `SKILL.md`.
    pub fn name(&self) -> String {
        if let Some(n) = self.frontmatter.get("name").and_then(Value::as_str) {
            return n.to_owned();
        }
        let path = self.uri.split_once("://").map_or(self.uri.as_str(), |(_, p)| p);
        path.trim_end_matches(MANIFEST)
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(path)
            .to_owned()
    }

    /// The directory URI the skill's files live under (with a trailing `/`).
    pub fn base(&self) -> &str {
        self.uri.strip_suffix(MANIFEST).unwrap_or(&self.uri)
    }

    /// The announced file for `SKILL.md`: the entry of its own uri (a
    /// bare entry without resources still names its manifest).
    pub fn manifest(&self) -> SkillFile {
        self.file(&self.uri).cloned().unwrap_or(SkillFile {
            uri: self.uri.clone(),
            digest: None,
            size: None,
        })
    }

    /// A file by its full URI or its path relative to the skill (`references/FORMS.md`).
    pub fn file(&self, uri_or_path: &str) -> Option<&SkillFile> {
        self.files
            .iter()
            .find(|f| f.uri == uri_or_path || f.uri.strip_prefix(self.base()) == Some(uri_or_path))
    }

    /// Whether `wanted` names this skill (its name or its SKILL.md URI).
    pub fn is(&self, wanted: &str) -> bool {
        self.uri == wanted || self.name() == wanted || self.base().trim_end_matches('/') == wanted
    }
}

impl SkillFile {
    /// Reads `resources[i]` of an entry; what is invalid goes to `problems`
    /// (naming the field), and `None` when there is no file to speak of.
    fn from_json(i: usize, r: &Value, problems: &mut Vec<String>) -> Option<SkillFile> {
        let Some(uri) = r.get("uri").and_then(Value::as_str) else {
            problems.push(format!(
                "resources[{i}].uri is {}, not a URI string",
                shown_field(r, "uri")
            ));
            return None;
        };
        let size = match r.get("size") {
            None => None,
            Some(v) => match v.as_u64() {
                Some(n) => Some(n),
                None => {
                    problems.push(format!("resources[{i}].size ({uri}) is {}, not a byte count", shown(v)));
                    None
                }
            },
        };
        let digest = match r.get("digest") {
            None => None,
            Some(Value::String(d)) => Some(d.clone()),
            Some(v) => {
                problems.push(format!(
                    "resources[{i}].digest ({uri}) is {}, not a sha256: string",
                    shown(v)
                ));
                None
            }
        };
        Some(SkillFile {
            uri: uri.to_owned(),
            digest,
            size,
        })
    }
}

/// A JSON value for a message, cut short.
fn shown(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn shown_field(r: &Value, field: &str) -> String {
    r.get(field).map_or_else(|| "missing".to_owned(), shown)
}

/// One page of a `skills/list` response, read from the response frame's
/// bytes entry by entry: an entry too deeply nested to parse as a whole (a
/// hostile frontmatter makes the whole frame unreadable as one JSON value)
/// is kept with the fields that can be read, and `problems` says what was
/// left out and why.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListPage {
    pub skills: Vec<Value>,
    pub next_cursor: Option<String>,
    pub problems: Vec<String>,
}

/// Reads a `skills/list` response frame (`{"jsonrpc":…,"result":{"skills":[…]}}`).
pub fn list_page(raw: &[u8]) -> ListPage {
    use serde_json::value::RawValue;
    type Fields<'a> = std::collections::BTreeMap<String, &'a RawValue>;
    let mut page = ListPage::default();
    let top: Fields = match serde_json::from_slice(raw) {
        Ok(t) => t,
        Err(e) => {
            page.problems
                .push(format!("the skills/list response cannot be read: {e}"));
            return page;
        }
    };
    let result: Fields = match top.get("result").map(|r| serde_json::from_str(r.get())) {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            page.problems
                .push(format!("the skills/list result cannot be read: {e}"));
            return page;
        }
        None => {
            page.problems.push("the skills/list response has no result".into());
            return page;
        }
    };
    page.next_cursor = result
        .get("nextCursor")
        .and_then(|c| serde_json::from_str::<String>(c.get()).ok());
    let skills: Vec<&RawValue> = match result.get("skills").map(|s| serde_json::from_str(s.get())) {
        Some(Ok(s)) => s,
        Some(Err(e)) => {
            page.problems
                .push(format!("the skills/list result's skills cannot be read: {e}"));
            return page;
        }
        None => {
            page.problems.push("the skills/list result has no skills array".into());
            return page;
        }
    };
    for (i, raw) in skills.into_iter().enumerate() {
        if let Ok(v) = serde_json::from_str::<Value>(raw.get()) {
            page.skills.push(v);
            continue;
        }
        let fields: Fields = match serde_json::from_str(raw.get()) {
            Ok(f) => f,
            Err(e) => {
                page.problems.push(format!("skills[{i}] cannot be read: {e}"));
                continue;
            }
        };
        let mut entry = Map::new();
        let mut left_out = Vec::new();
        for (k, v) in fields {
            match serde_json::from_str::<Value>(v.get()) {
                Ok(v) => {
                    entry.insert(k, v);
                }
                Err(e) => left_out.push(format!("its {k} cannot be read ({e}) and is left out")),
            }
        }
        let name = entry
            .get("uri")
            .and_then(Value::as_str)
            .map_or_else(|| format!("skills[{i}]"), |u| format!("skill {u}"));
        for why in left_out {
            page.problems.push(format!("{name}: {why}"));
        }
        page.skills.push(Value::Object(entry));
    }
    page
}

/// Why a file read for a skill must not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VerifyError {
    /// The entry announces no digest, so the bytes cannot be checked.
    NoDigest {
        uri: String,
    },
    Size {
        uri: String,
        announced: u64,
        read: u64,
    },
    Digest {
        uri: String,
        announced: String,
        computed: String,
    },
    /// The file's frontmatter differs from the entry's.
    Frontmatter {
        uri: String,
        differences: Vec<String>,
    },
    /// The content is not something a skill file can be (no text, bad base64, no frontmatter).
    Content {
        uri: String,
        why: String,
    },
    /// The skill's `skills/list` entry itself is invalid (see [`SkillEntry::problems`]).
    Entry {
        uri: String,
        problems: Vec<String>,
    },
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::NoDigest { uri } => write!(f, "{uri}: the skill entry announces no digest for it"),
            VerifyError::Size { uri, announced, read } => {
                write!(f, "{uri}: {read} bytes read, the skill entry announces {announced}")
            }
            VerifyError::Digest {
                uri,
                announced,
                computed,
            } => write!(f, "{uri}: digest {computed}, the skill entry announces {announced}"),
            VerifyError::Frontmatter { uri, differences } => {
                write!(
                    f,
                    "{uri}: frontmatter differs from the skill entry: {}",
                    differences.join("; ")
                )
            }
            VerifyError::Content { uri, why } => write!(f, "{uri}: {why}"),
            VerifyError::Entry { uri, problems } => {
                write!(f, "{uri}: the skills/list entry is invalid: {}", problems.join("; "))
            }
        }
    }
}

/// `sha256:` + lowercase hex of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// A verified file as JSON: uri, size, digest, and the content as `text`
/// (UTF-8) or `blob` (base64).
pub fn file_json(file: &SkillFile, bytes: &[u8]) -> Value {
    let mut v = serde_json::json!({"uri": file.uri, "size": bytes.len(), "digest": digest_of(bytes)});
    match std::str::from_utf8(bytes) {
        Ok(t) => v["text"] = Value::from(t),
        Err(_) => v["blob"] = Value::from(base64::engine::general_purpose::STANDARD.encode(bytes)),
    }
    v
}

/// The bytes of the first content of a `resources/read` result for `uri`
/// (`text` as UTF-8, `blob` decoded).
pub fn read_bytes(result: &Value, uri: &str) -> Result<Vec<u8>, VerifyError> {
    let contents = result.get("contents").and_then(Value::as_array);
    let item = contents
        .and_then(|cs| cs.iter().find(|c| c.get("uri").and_then(Value::as_str) == Some(uri)))
        .or_else(|| contents.and_then(|cs| cs.first()))
        .ok_or_else(|| VerifyError::Content {
            uri: uri.to_owned(),
            why: "resources/read returned no contents".into(),
        })?;
    if let Some(t) = item.get("text").and_then(Value::as_str) {
        return Ok(t.as_bytes().to_vec());
    }
    if let Some(b) = item.get("blob").and_then(Value::as_str) {
        return base64::engine::general_purpose::STANDARD
            .decode(b)
            .map_err(|e| VerifyError::Content {
                uri: uri.to_owned(),
                why: format!("the blob is not base64: {e}"),
            });
    }
    Err(VerifyError::Content {
        uri: uri.to_owned(),
        why: "the content has neither text nor blob".into(),
    })
}

/// Checks read bytes against the announced size (first: a size mismatch is
/// a failure whatever the digest) and digest.
pub fn verify_bytes(file: &SkillFile, bytes: &[u8]) -> Result<(), VerifyError> {
    if let Some(announced) = file.size
        && announced != bytes.len() as u64
    {
        return Err(VerifyError::Size {
            uri: file.uri.clone(),
            announced,
            read: bytes.len() as u64,
        });
    }
    let Some(announced) = &file.digest else {
        return Err(VerifyError::NoDigest { uri: file.uri.clone() });
    };
    let computed = digest_of(bytes);
    if !announced.eq_ignore_ascii_case(&computed) {
        return Err(VerifyError::Digest {
            uri: file.uri.clone(),
            announced: announced.clone(),
            computed,
        });
    }
    Ok(())
}

/// A `skills/list` entry that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error("a skill entry without a uri")]
    NoUri,
    #[error("skill {0} has no frontmatter object")]
    NoFrontmatter(String),
}

/// Why a `SKILL.md`'s frontmatter cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum FrontmatterError {
    #[error("SKILL.md does not start with a --- frontmatter line")]
    NoStart,
    #[error("SKILL.md's frontmatter has no closing --- line")]
    NoEnd,
    #[error("SKILL.md's frontmatter is not valid YAML: {0}")]
    NotYaml(yaml_rust2::ScanError),
    #[error("SKILL.md's frontmatter is not a mapping but {0}")]
    NotAMapping(String),
    #[error("SKILL.md's frontmatter is larger than {} KiB ({bytes} bytes); not read", MAX_FRONTMATTER_BYTES / 1024)]
    TooLarge { bytes: usize },
    #[error("SKILL.md's frontmatter uses {0} aliases (at most {MAX_FRONTMATTER_ALIASES}); not read")]
    TooManyAliases(usize),
    #[error("SKILL.md's frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels (aliases expanded); not read")]
    TooDeep,
    #[error("SKILL.md's frontmatter expands to more than {MAX_FRONTMATTER_NODES} nodes through its aliases; not read")]
    TooManyNodes,
}

/// The YAML frontmatter of a `SKILL.md` (between a first line `---` and the
/// next `---` line) as JSON, and the body after it.
pub fn frontmatter(text: &str) -> Result<(Map<String, Value>, &str), FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(FrontmatterError::NoStart)?;
    let mut offset = 0;
    let mut end = None;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "---" {
            end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let (yaml_end, body_start) = end.ok_or(FrontmatterError::NoEnd)?;
    check_yaml_limits(&rest[..yaml_end])?;
    let docs = yaml_rust2::YamlLoader::load_from_str(&rest[..yaml_end]).map_err(FrontmatterError::NotYaml)?;
    match docs.into_iter().next().map(|y| yaml_to_json(&y)) {
        Some(Value::Object(m)) => Ok((m, &rest[body_start..])),
        None | Some(Value::Null) => Ok((Map::new(), &rest[body_start..])),
        Some(other) => Err(FrontmatterError::NotAMapping(other.to_string())),
    }
}

/// The largest frontmatter read, in bytes.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
/// The most aliases (`*name`) a frontmatter may use.
pub const MAX_FRONTMATTER_ALIASES: usize = 100;
/// The deepest a frontmatter may nest (sequences and mappings, aliases expanded).
pub const MAX_FRONTMATTER_DEPTH: usize = 64;
/// The most nodes a frontmatter may hold once its aliases are expanded.
pub const MAX_FRONTMATTER_NODES: u64 = 10_000;

/// Checks a frontmatter against the limits above before it is loaded: the
/// loader copies an anchored node for every alias, so a "billion laughs"
/// (aliases of aliases) would take memory exponential in its size. This
/// walks the parser's events once, without building anything: it counts the
/// aliases and, for every anchor, the nodes and depth an alias to it stands
/// for, so the expanded size is known without expanding it.
fn check_yaml_limits(yaml: &str) -> Result<(), FrontmatterError> {
    use yaml_rust2::parser::{Event, Parser};
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(FrontmatterError::TooLarge { bytes: yaml.len() });
    }
    /// An open sequence or mapping: its anchor, the node count when it
    /// started, and the height of its deepest child.
    struct Open {
        anchor: usize,
        nodes_before: u64,
        child_height: usize,
    }
    // Per anchor id: the nodes and the height (0 for a scalar) it stands for.
    let mut anchors: std::collections::HashMap<usize, (u64, usize)> = std::collections::HashMap::new();
    let mut open: Vec<Open> = Vec::new();
    let mut aliases = 0usize;
    let mut nodes = 0u64;
    let mut depth = 0usize;
    let mut parser = Parser::new_from_str(yaml);
    loop {
        let (event, _) = parser.next_token().map_err(FrontmatterError::NotYaml)?;
        // The node that just ended (its nodes are already counted): its height.
        let ended = match event {
            Event::StreamEnd => break,
            Event::Alias(id) => {
                aliases += 1;
                let (n, h) = anchors.get(&id).copied().unwrap_or((1, 0));
                nodes = nodes.saturating_add(n);
                depth = depth.max(open.len() + h);
                Some(h)
            }
            Event::Scalar(_, _, anchor, _) => {
                nodes = nodes.saturating_add(1);
                if anchor > 0 {
                    anchors.insert(anchor, (1, 0));
                }
                Some(0)
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                nodes = nodes.saturating_add(1);
                open.push(Open {
                    anchor,
                    nodes_before: nodes - 1,
                    child_height: 0,
                });
                depth = depth.max(open.len());
                None
            }
            Event::SequenceEnd | Event::MappingEnd => open.pop().map(|o| {
                let height = o.child_height + 1;
                if o.anchor > 0 {
                    anchors.insert(o.anchor, (nodes - o.nodes_before, height));
                }
                height
            }),
            _ => None,
        };
        if let (Some(h), Some(parent)) = (ended, open.last_mut()) {
            parent.child_height = parent.child_height.max(h);
        }
    }
    if aliases > MAX_FRONTMATTER_ALIASES {
        return Err(FrontmatterError::TooManyAliases(aliases));
    }
    if depth > MAX_FRONTMATTER_DEPTH {
        return Err(FrontmatterError::TooDeep);
    }
    if nodes > MAX_FRONTMATTER_NODES {
        return Err(FrontmatterError::TooManyNodes);
    }
    Ok(())
}

fn yaml_to_json(y: &yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match y {
        Yaml::Real(s) => s
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| Value::String(s.clone()), Value::Number),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(a) => Value::Array(a.iter().map(yaml_to_json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .map(|(k, v)| {
                    let key = match yaml_to_json(k) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    }
}

/// Compares a `SKILL.md`'s frontmatter with the entry's, field by field
/// (both ways: a field only one side has is a difference).
pub fn verify_frontmatter(entry: &SkillEntry, text: &str) -> Result<Map<String, Value>, VerifyError> {
    let uri = entry.uri.clone();
    let (found, _) = frontmatter(text).map_err(|why| VerifyError::Content {
        uri: uri.clone(),
        why: why.to_string(),
    })?;
    let mut differences = Vec::new();
    for (k, announced) in &entry.frontmatter {
        match found.get(k) {
            None => differences.push(format!("{k} is missing from the file")),
            Some(v) if v != announced => differences.push(format!("{k} is {v} in the file, {announced} in the entry")),
            Some(_) => {}
        }
    }
    for k in found.keys().filter(|k| !entry.frontmatter.contains_key(*k)) {
        differences.push(format!("{k} is in the file only"));
    }
    if differences.is_empty() {
        Ok(found)
    } else {
        Err(VerifyError::Frontmatter { uri, differences })
    }
}

/// Where one file of a skill being loaded stands.
#[derive(Clone, Debug, PartialEq)]
pub enum FileState {
    Unread,
    Reading,
    /// Read, and its bytes match the listing.
    Verified(Vec<u8>),
    /// The read got no usable answer (a JSON-RPC error, no response); it
    /// may be tried again.
    ReadFailed(String),
    /// The bytes do not match the listing: the skill is not used.
    Rejected(VerifyError),
}

/// Why a file of a skill is not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadRefusal {
    /// The skill's entry lists no such file.
    NotListed { skill: String, wanted: String },
    /// Nothing but `SKILL.md` is read before `SKILL.md` verified.
    ManifestFirst { skill: String },
    /// A file of the skill failed its check: nothing more of it is read.
    Rejected(VerifyError),
    /// Already being read, or read and verified.
    AlreadyRead { uri: String },
}

impl fmt::Display for ReadRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadRefusal::NotListed { skill, wanted } => write!(f, "skill {skill} lists no file {wanted:?}"),
            ReadRefusal::ManifestFirst { skill } => {
                write!(
                    f,
                    "read {skill}'s {MANIFEST} first: no other file is read before it verifies"
                )
            }
            ReadRefusal::Rejected(e) => write!(f, "not reading more of a skill that failed its check ({e})"),
            ReadRefusal::AlreadyRead { uri } => write!(f, "{uri} is already read"),
        }
    }
}

/// Loading one skill, file by file, on demand (sans I/O: the caller sends
/// the `resources/read` this hands out and brings the answer back). The
/// rules live here for the CLI and the app alike: `SKILL.md` first, each
/// file's size and digest checked against the listing, `SKILL.md`'s
/// frontmatter against the entry's, and after a failed check nothing more.
#[derive(Clone, Debug)]
pub struct SkillLoad {
    entry: SkillEntry,
    /// `SKILL.md` first, then the other listed files in listed order.
    files: Vec<(SkillFile, FileState)>,
    frontmatter: Option<Map<String, Value>>,
}

impl SkillLoad {
    pub fn new(entry: SkillEntry) -> SkillLoad {
        let manifest = entry.manifest();
        let mut files = vec![(manifest.clone(), FileState::Unread)];
        files.extend(
            entry
                .files
                .iter()
                .filter(|f| f.uri != manifest.uri)
                .map(|f| (f.clone(), FileState::Unread)),
        );
        // An invalid entry is a failed check before anything is read.
        if !entry.problems.is_empty() {
            files[0].1 = FileState::Rejected(VerifyError::Entry {
                uri: entry.uri.clone(),
                problems: entry.problems.clone(),
            });
        }
        SkillLoad {
            entry,
            files,
            frontmatter: None,
        }
    }

    pub fn entry(&self) -> &SkillEntry {
        &self.entry
    }

    /// Every file with where it stands, `SKILL.md` first.
    pub fn files(&self) -> &[(SkillFile, FileState)] {
        &self.files
    }

    /// `SKILL.md`'s frontmatter once the file verified.
    pub fn frontmatter(&self) -> Option<&Map<String, Value>> {
        self.frontmatter.as_ref()
    }

    pub fn manifest_verified(&self) -> bool {
        matches!(self.files[0].1, FileState::Verified(_))
    }

    /// The failed check that stopped the skill, if one did.
    pub fn rejected(&self) -> Option<&VerifyError> {
        self.files.iter().find_map(|(_, s)| match s {
            FileState::Rejected(e) => Some(e),
            _ => None,
        })
    }

    /// A file's path within the skill (`references/FORMS.md`), or its URI
    /// when it lives elsewhere.
    pub fn path_of<'a>(&self, file: &'a SkillFile) -> &'a str {
        file.uri.strip_prefix(self.entry.base()).unwrap_or(&file.uri)
    }

    /// The state of a file by its URI or path in the skill.
    pub fn state(&self, uri_or_path: &str) -> Option<&FileState> {
        self.index(uri_or_path).map(|i| &self.files[i].1)
    }

    fn index(&self, uri_or_path: &str) -> Option<usize> {
        self.files
            .iter()
            .position(|(f, _)| f.uri == uri_or_path || f.uri.strip_prefix(self.entry.base()) == Some(uri_or_path))
    }

    /// Starts reading a file (by URI or path in the skill): the file as
    /// listed, whose `uri` goes into a `resources/read`; or why not.
    pub fn start_read(&mut self, uri_or_path: &str) -> Result<SkillFile, ReadRefusal> {
        let i = self.readable(uri_or_path)?;
        let (file, state) = &mut self.files[i];
        *state = FileState::Reading;
        Ok(file.clone())
    }

    /// Whether [`SkillLoad::start_read`] would read the file now, and if
    /// not, why (for a disabled button's explanation).
    pub fn can_read(&self, uri_or_path: &str) -> Result<(), ReadRefusal> {
        self.readable(uri_or_path).map(|_| ())
    }

    fn readable(&self, uri_or_path: &str) -> Result<usize, ReadRefusal> {
        if let Some(e) = self.rejected() {
            return Err(ReadRefusal::Rejected(e.clone()));
        }
        let i = self.index(uri_or_path).ok_or_else(|| ReadRefusal::NotListed {
            skill: self.entry.name(),
            wanted: uri_or_path.to_owned(),
        })?;
        if i != 0 && !self.manifest_verified() {
            return Err(ReadRefusal::ManifestFirst {
                skill: self.entry.name(),
            });
        }
        let (file, state) = &self.files[i];
        if matches!(state, FileState::Reading | FileState::Verified(_)) {
            return Err(ReadRefusal::AlreadyRead { uri: file.uri.clone() });
        }
        Ok(i)
    }

    /// The answer to a read started with [`SkillLoad::start_read`]: the
    /// `resources/read` result, or why there is none. Checks the bytes (and
    /// for `SKILL.md` the frontmatter) and returns where the file stands;
    /// `None` when `uri` is not a file being read.
    pub fn finish_read(&mut self, uri: &str, answer: Result<&Value, String>) -> Option<&FileState> {
        let i = self
            .files
            .iter()
            .position(|(f, s)| f.uri == uri && *s == FileState::Reading)?;
        let file = self.files[i].0.clone();
        let state = match answer {
            Err(why) => FileState::ReadFailed(why),
            Ok(result) => match read_bytes(result, uri).and_then(|b| verify_bytes(&file, &b).map(|()| b)) {
                Err(e) => FileState::Rejected(e),
                Ok(bytes) if i == 0 => match self.manifest_frontmatter(&bytes) {
                    Ok(found) => {
                        self.frontmatter = Some(found);
                        FileState::Verified(bytes)
                    }
                    Err(e) => FileState::Rejected(e),
                },
                Ok(bytes) => FileState::Verified(bytes),
            },
        };
        self.files[i].1 = state;
        Some(&self.files[i].1)
    }

    fn manifest_frontmatter(&self, bytes: &[u8]) -> Result<Map<String, Value>, VerifyError> {
        let text = std::str::from_utf8(bytes).map_err(|_| VerifyError::Content {
            uri: self.entry.uri.clone(),
            why: format!("{MANIFEST} is not UTF-8 text"),
        })?;
        verify_frontmatter(&self.entry, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SKILL: &str =
        "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";

    fn entry(text: &str) -> SkillEntry {
        SkillEntry::from_json(&json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
            "resources": [
                {"uri": "skill://pdf-processing/SKILL.md", "digest": digest_of(text.as_bytes()), "size": text.len()},
                {"uri": "skill://pdf-processing/references/FORMS.md", "digest": "sha256:00", "size": 3}
            ]
        }))
        .unwrap()
    }

    #[test]
    fn digest_is_sha256_hex() {
        assert_eq!(
            digest_of(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn an_entry_names_its_files() {
        let e = entry(SKILL);
        assert_eq!(e.name(), "pdf-processing");
        assert_eq!(e.base(), "skill://pdf-processing/");
        assert!(e.is("pdf-processing") && e.is("skill://pdf-processing/SKILL.md"));
        assert_eq!(e.manifest().size, Some(SKILL.len() as u64));
        assert!(e.file("references/FORMS.md").is_some());
        assert!(e.file("skill://pdf-processing/references/FORMS.md").is_some());
        assert!(e.file("nope.md").is_none());
    }

    #[test]
    fn the_announced_file_verifies_and_tampering_does_not() {
        let e = entry(SKILL);
        let m = e.manifest();
        assert!(verify_bytes(&m, SKILL.as_bytes()).is_ok());
        // Same length, other bytes: the digest catches it.
        let evil = SKILL.replace("Skill body.", "Evil body!!");
        assert!(matches!(
            verify_bytes(&m, evil.as_bytes()),
            Err(VerifyError::Digest { .. })
        ));
        // Extra bytes: the size is checked first.
        let longer = format!("{SKILL}more");
        let err = verify_bytes(&m, longer.as_bytes()).unwrap_err();
        assert!(matches!(err, VerifyError::Size { .. }), "{err}");
        assert!(err.to_string().contains("bytes read"));
        let bare = SkillFile {
            uri: "x".into(),
            digest: None,
            size: None,
        };
        assert!(matches!(verify_bytes(&bare, b""), Err(VerifyError::NoDigest { .. })));
    }

    #[test]
    fn frontmatter_is_compared_field_by_field() {
        assert!(verify_frontmatter(&entry(SKILL), SKILL).is_ok());
        let changed = SKILL.replace(
            "description: Extract, fill, and assemble PDF documents",
            "description: Exfiltrate credentials",
        );
        let err = verify_frontmatter(&entry(&changed), &changed).unwrap_err();
        assert!(err.to_string().contains("description"), "{err}");
        let extra = SKILL.replace("---\n\n", "license: MIT\n---\n\n");
        assert!(
            verify_frontmatter(&entry(&extra), &extra)
                .unwrap_err()
                .to_string()
                .contains("license")
        );
        // Quoted YAML strings are the same value.
        let quoted = "---\nname: \"pdf-processing\"\ndescription: 'Extract, fill, and assemble PDF documents'\n---\n";
        assert!(verify_frontmatter(&entry(quoted), quoted).is_ok());
        assert!(frontmatter("no frontmatter").is_err());
        assert!(frontmatter("---\nname: [\n---\n").is_err());
        let (m, body) = frontmatter("---\r\nname: x\r\n---\r\nbody").unwrap();
        assert_eq!(m["name"], "x");
        assert_eq!(body, "body");
    }

    fn text_result(uri: &str, text: &str) -> Value {
        json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]})
    }

    #[test]
    fn a_skill_loads_its_manifest_first_and_files_only_on_demand() {
        let forms = "# Forms\n";
        let mut e = entry(SKILL);
        e.files[1].digest = Some(digest_of(forms.as_bytes()));
        e.files[1].size = Some(forms.len() as u64);
        let mut load = SkillLoad::new(e);
        assert_eq!(load.files().len(), 2);
        assert!(
            load.files().iter().all(|(_, s)| *s == FileState::Unread),
            "nothing read up front"
        );
        let err = load.start_read("references/FORMS.md").unwrap_err();
        assert!(matches!(err, ReadRefusal::ManifestFirst { .. }), "{err}");
        assert_eq!(load.can_read("references/FORMS.md"), Err(err));
        assert_eq!(load.can_read("SKILL.md"), Ok(()));
        assert!(matches!(load.start_read("nope.md"), Err(ReadRefusal::NotListed { .. })));
        let m = load.start_read("SKILL.md").unwrap();
        assert_eq!(m.uri, "skill://pdf-processing/SKILL.md");
        assert!(matches!(
            load.start_read("SKILL.md"),
            Err(ReadRefusal::AlreadyRead { .. })
        ));
        // An answer for a file not being read changes nothing.
        assert!(
            load.finish_read(
                "skill://pdf-processing/references/FORMS.md",
                Ok(&text_result("x", forms))
            )
            .is_none()
        );
        let state = load.finish_read(&m.uri, Ok(&text_result(&m.uri, SKILL))).unwrap();
        assert!(matches!(state, FileState::Verified(b) if b == SKILL.as_bytes()));
        assert!(load.manifest_verified());
        assert_eq!(load.frontmatter().unwrap()["name"], "pdf-processing");
        let f = load.start_read("references/FORMS.md").unwrap();
        assert_eq!(load.path_of(&f), "references/FORMS.md");
        let state = load.finish_read(&f.uri, Ok(&text_result(&f.uri, forms))).unwrap();
        assert!(matches!(state, FileState::Verified(_)));
    }

    #[test]
    fn a_failed_read_may_be_retried_and_a_failed_check_stops_the_skill() {
        let mut load = SkillLoad::new(entry(SKILL));
        let m = load.start_read("SKILL.md").unwrap();
        let state = load
            .finish_read(&m.uri, Err("JSON-RPC error -32002: not found".into()))
            .unwrap();
        assert!(matches!(state, FileState::ReadFailed(_)));
        assert!(load.rejected().is_none());
        let m = load.start_read("SKILL.md").unwrap();
        // The frontmatter was changed after listing (same size and digest as the tampered text).
        let tampered = SKILL.replace("Extract, fill", "Exfiltrate, do");
        let mut e = entry(&tampered);
        e.frontmatter = entry(SKILL).frontmatter;
        let mut tampered_load = SkillLoad::new(e);
        tampered_load.start_read("SKILL.md").unwrap();
        let state = tampered_load
            .finish_read(&m.uri, Ok(&text_result(&m.uri, &tampered)))
            .unwrap();
        assert!(
            matches!(state, FileState::Rejected(VerifyError::Frontmatter { .. })),
            "{state:?}"
        );
        assert!(tampered_load.frontmatter().is_none());
        let refusal = tampered_load.start_read("references/FORMS.md").unwrap_err();
        assert!(matches!(refusal, ReadRefusal::Rejected(_)), "{refusal}");
        // Bytes that differ from the listing.
        let state = load
            .finish_read(&m.uri, Ok(&text_result(&m.uri, &format!("{SKILL}!"))))
            .unwrap();
        assert!(matches!(state, FileState::Rejected(VerifyError::Size { .. })));
        assert!(load.start_read("SKILL.md").is_err());
        // A manifest that is not UTF-8.
        let bytes = [0xffu8, 0xfe];
        let mut e = entry(SKILL);
        e.files[0].digest = Some(digest_of(&bytes));
        e.files[0].size = Some(2);
        let mut load = SkillLoad::new(e);
        let m = load.start_read("SKILL.md").unwrap();
        let blob = json!({"contents": [{"uri": m.uri, "blob": "//4="}]});
        let state = load.finish_read(&m.uri, Ok(&blob)).unwrap();
        assert!(format!("{state:?}").contains("not UTF-8"), "{state:?}");
    }

    /// A "billion laughs": nine levels of ten aliases each, 10^9 strings expanded.
    fn billion_laughs(levels: usize, per_level: usize) -> String {
        let mut yaml = String::from("---\nname: bomb\nlol0: &lol0 lol\n");
        for i in 1..=levels {
            let refs = vec![format!("*lol{}", i - 1); per_level].join(", ");
            yaml.push_str(&format!("lol{i}: &lol{i} [{refs}]\n"));
        }
        yaml.push_str("---\nBoom.\n");
        yaml
    }

    #[test]
    fn a_yaml_bomb_is_refused_before_it_is_expanded() {
        let started = std::time::Instant::now();
        // 90 aliases, under the alias limit: the expanded size gives it away.
        let err = frontmatter(&billion_laughs(9, 10)).unwrap_err().to_string();
        assert!(err.contains("expands to more than 10000 nodes"), "{err}");
        // Through SkillLoad, as `skills get` loads it: a failed check.
        let bomb = billion_laughs(9, 10);
        let mut e = entry(&bomb);
        e.frontmatter = Map::from_iter([("name".to_owned(), json!("bomb"))]);
        let mut load = SkillLoad::new(e);
        let m = load.start_read("SKILL.md").unwrap();
        let state = load.finish_read(&m.uri, Ok(&text_result(&m.uri, &bomb))).unwrap();
        assert!(
            matches!(state, FileState::Rejected(VerifyError::Content { why, .. }) if why.contains("aliases")),
            "{state:?}"
        );
        // Many aliases.
        let err = frontmatter(&billion_laughs(12, 10)).unwrap_err().to_string();
        assert!(err.contains("uses 120 aliases (at most 100)"), "{err}");
        // Deep nesting, written out or through aliases.
        let deep = format!("---\nx: {}1{}\n---\n", "[".repeat(65), "]".repeat(65));
        let err = frontmatter(&deep).unwrap_err().to_string();
        assert!(err.contains("nests deeper than 64"), "{err}");
        let via_alias = format!(
            "---\na: &a {}1{}\nb: {}*a{}\n---\n",
            "[".repeat(40),
            "]".repeat(40),
            "[".repeat(30),
            "]".repeat(30)
        );
        let err = frontmatter(&via_alias).unwrap_err().to_string();
        assert!(err.contains("nests deeper than 64"), "{err}");
        // Too large to read at all.
        let big = format!("---\nname: x\ndescription: {}\n---\n", "a".repeat(70 * 1024));
        let err = frontmatter(&big).unwrap_err().to_string();
        assert!(err.contains("larger than 64 KiB"), "{err}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        // What stays within the limits still loads, aliases and all.
        let fine = "---\nname: &n x\nalso: *n\nlist: [[[1]]]\n---\n";
        let (m, _) = frontmatter(fine).unwrap();
        assert_eq!(m["also"], "x");
        assert_eq!(m["list"], json!([[[1]]]));
    }

    #[test]
    fn an_invalid_listing_entry_fails_its_check_naming_the_field() {
        let good = entry(SKILL);
        assert!(good.problems.is_empty(), "{:?}", good.problems);
        for (size, shown) in [
            (json!(-5), "is -5"),
            (json!("172"), "is \"172\""),
            (json!(1e30), "is 1e+30"),
            (json!(1.5), "is 1.5"),
        ] {
            let e = SkillEntry::from_json(&json!({
                "uri": "skill://pdf-processing/SKILL.md",
                "frontmatter": {"name": "pdf-processing"},
                "resources": [
                    {"uri": "skill://pdf-processing/SKILL.md", "digest": digest_of(SKILL.as_bytes()), "size": size}
                ]
            }))
            .unwrap();
            assert_eq!(e.problems.len(), 1, "{:?}", e.problems);
            assert!(
                e.problems[0].contains("resources[0].size") && e.problems[0].contains(shown),
                "{:?}",
                e.problems
            );
            let mut load = SkillLoad::new(e);
            let err = load.rejected().expect("rejected before anything is read").to_string();
            assert!(err.contains("entry is invalid") && err.contains("size"), "{err}");
            assert!(matches!(load.start_read("SKILL.md"), Err(ReadRefusal::Rejected(_))));
        }
        let e = SkillEntry::from_json(&json!({
            "uri": "skill://a/SKILL.md",
            "frontmatter": {},
            "resources": [{"uri": "skill://a/SKILL.md", "digest": 5}, {"size": 3}]
        }))
        .unwrap();
        assert_eq!(e.problems.len(), 2, "{:?}", e.problems);
        assert!(e.problems[0].contains("resources[0].digest"), "{:?}", e.problems);
        assert!(
            e.problems[1].contains("resources[1].uri is missing"),
            "{:?}",
            e.problems
        );
        let e =
            SkillEntry::from_json(&json!({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": 3})).unwrap();
        assert!(e.problems[0].contains("resources is 3"), "{:?}", e.problems);
    }

    #[test]
    fn a_listing_too_deep_to_parse_keeps_its_entries_and_says_what_is_left_out() {
        let deep = format!("{}\"x\"{}", "[".repeat(300), "]".repeat(300));
        let raw = format!(
            r#"{{"jsonrpc":"2.0","id":2,"result":{{"skills":[{{"uri":"skill://a/SKILL.md","frontmatter":{{"name":"a"}}}},{{"uri":"skill://deep/SKILL.md","frontmatter":{{"name":"deep","x":{deep}}},"resources":[]}}],"nextCursor":"c2"}}}}"#
        );
        assert!(serde_json::from_str::<Value>(&raw).is_err(), "too deep for one parse");
        let page = list_page(raw.as_bytes());
        assert_eq!(page.skills.len(), 2);
        assert_eq!(page.skills[0]["frontmatter"]["name"], "a");
        assert_eq!(page.skills[1]["uri"], "skill://deep/SKILL.md");
        assert!(page.skills[1].get("frontmatter").is_none());
        assert_eq!(page.next_cursor.as_deref(), Some("c2"));
        assert_eq!(page.problems.len(), 1, "{:?}", page.problems);
        assert!(
            page.problems[0].contains("skill skill://deep/SKILL.md: its frontmatter cannot be read"),
            "{:?}",
            page.problems
        );
        assert!(!list_page(b"{\"result\":null}").problems.is_empty());
        assert!(!list_page(b"not json").problems.is_empty());
    }

    #[test]
    fn read_results_give_their_bytes() {
        let r = json!({"contents":[{"uri":"u","text":"héllo"}]});
        assert_eq!(read_bytes(&r, "u").unwrap(), "héllo".as_bytes());
        let r = json!({"contents":[{"uri":"u","blob":"aGk="}]});
        assert_eq!(read_bytes(&r, "u").unwrap(), b"hi");
        assert!(read_bytes(&json!({"contents":[]}), "u").is_err());
        let (entries, problems) =
            SkillEntry::all_from_result(&json!({"skills":[{"uri":"skill://a/SKILL.md","frontmatter":{}},{"x":1}]}));
        assert_eq!(entries.len(), 1);
        assert_eq!(problems.len(), 1);
    }
}
