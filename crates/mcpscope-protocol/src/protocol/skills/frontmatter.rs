//! The YAML frontmatter of a `SKILL.md`, read as JSON within fixed limits
//! (size, aliases, depth, nodes), so a hostile file cannot make it expensive.

use serde_json::{Map, Value};

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
