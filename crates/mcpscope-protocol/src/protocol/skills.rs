//! Skills over MCP (SEP-2640, extension `io.modelcontextprotocol/skills`):
//! `skills/list` entries, and the checks a host makes before it uses a
//! skill's file. A file is read only when needed (never on listing), and
//! its bytes must match the entry's `size` and `sha256:` digest; `SKILL.md`'s
//! YAML frontmatter must equal the entry's `frontmatter`, field by field.
//! Nothing else of a skill is read after a failed check.

use base64::Engine;
use serde_json::{Map, Value};
use std::fmt;

mod frontmatter;
#[cfg(test)]
mod tests;

pub use frontmatter::{
    FrontmatterError, MAX_FRONTMATTER_ALIASES, MAX_FRONTMATTER_BYTES, MAX_FRONTMATTER_DEPTH, MAX_FRONTMATTER_NODES,
    frontmatter,
};

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
