//! YAML read into a tree that remembers where each node stood (line and
//! column, 1-based), so that every error in a test file names its place.
//! Anchors and aliases are refused: a test file is read by people in a
//! review, and an alias hides what a step sends.

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// Where a node starts in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl Pos {
    fn of(m: &Marker) -> Pos {
        // yaml-rust2 counts lines from 1 and columns from 0.
        Pos {
            line: m.line(),
            column: m.col() + 1,
        }
    }
}

impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A scalar as written, and whether it was quoted (a quoted `true` is text).
    Scalar {
        text: String,
        quoted: bool,
    },
    Seq(Vec<Node>),
    /// In the file's order; a key appears once.
    Map(Vec<(Node, Node)>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub at: Pos,
    pub value: Value,
}

/// Why the text is not YAML a test file can be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct YamlError {
    pub at: Pos,
    pub message: String,
}

impl Node {
    /// The scalar's text, if this is one.
    pub fn text(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    /// What kind of node this is, for an error.
    pub fn kind(&self) -> &'static str {
        match &self.value {
            Value::Scalar { .. } => "a scalar",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// The node as JSON: plain scalars typed as YAML 1.2's core schema
    /// types them (null, booleans, integers, floats), quoted ones as text.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Scalar { text, quoted: true } => J::String(text.clone()),
            Value::Scalar { text, quoted: false } => match text.as_str() {
                "" | "~" | "null" | "Null" | "NULL" => J::Null,
                "true" | "True" | "TRUE" => J::Bool(true),
                "false" | "False" | "FALSE" => J::Bool(false),
                t => t
                    .parse::<i64>()
                    .map(J::from)
                    .ok()
                    .or_else(|| {
                        t.parse::<f64>()
                            .ok()
                            .filter(|f| f.is_finite() && t.chars().any(|c| c.is_ascii_digit()))
                            .and_then(serde_json::Number::from_f64)
                            .map(J::Number)
                    })
                    .unwrap_or_else(|| J::String(t.to_owned())),
            },
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(pairs) => J::Object(
                pairs
                    .iter()
                    .map(|(k, v)| (k.text().unwrap_or_default().to_owned(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// Reads one YAML document (an empty text is an empty mapping).
pub fn parse(text: &str) -> Result<Node, YamlError> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<(Pos, Value, Option<Node>)> = Vec::new();
    let mut root = None;
    let mut documents = 0;
    loop {
        let (event, mark) = parser.next_token().map_err(|e| YamlError {
            at: Pos::of(e.marker()),
            message: e.info().to_owned(),
        })?;
        let at = Pos::of(&mark);
        let finished = match event {
            Event::StreamEnd => break,
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err(YamlError {
                        at,
                        message: "a second YAML document: a test file holds one".into(),
                    });
                }
                continue;
            }
            Event::Alias(_) => {
                return Err(YamlError {
                    at,
                    message: "an alias (*name): write the value out, so a reviewer sees what is sent".into(),
                });
            }
            Event::Scalar(_, _, anchor, _) if anchor > 0 => {
                return Err(YamlError {
                    at,
                    message: "an anchor (&name): write the value out where it is used".into(),
                });
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) if anchor > 0 => {
                return Err(YamlError {
                    at,
                    message: "an anchor (&name): write the value out where it is used".into(),
                });
            }
            Event::Scalar(text, style, _, _) => Node {
                at,
                value: Value::Scalar {
                    text,
                    quoted: !matches!(style, TScalarStyle::Plain),
                },
            },
            Event::SequenceStart(..) => {
                stack.push((at, Value::Seq(Vec::new()), None));
                continue;
            }
            Event::MappingStart(..) => {
                stack.push((at, Value::Map(Vec::new()), None));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (mut at, value, _) = stack.pop().expect("an end follows its start");
                // A block mapping's start is reported after its first key:
                // the mapping stands where that key does.
                if let Value::Map(pairs) = &value
                    && let Some((k, _)) = pairs.first()
                    && (k.at.line, k.at.column) < (at.line, at.column)
                {
                    at = k.at;
                }
                Node { at, value }
            }
            _ => continue,
        };
        match stack.last_mut() {
            None => root = Some(finished),
            Some((_, Value::Seq(items), _)) => items.push(finished),
            Some((_, Value::Map(pairs), pending)) => match pending.take() {
                None => {
                    if finished.text().is_none() {
                        return Err(YamlError {
                            at: finished.at,
                            message: format!("a key that is {}: keys are plain names", finished.kind()),
                        });
                    }
                    if pairs.iter().any(|(k, _)| k.text() == finished.text()) {
                        return Err(YamlError {
                            at: finished.at,
                            message: format!("the key {:?} appears twice", finished.text().unwrap_or_default()),
                        });
                    }
                    *pending = Some(finished);
                }
                Some(key) => pairs.push((key, finished)),
            },
            Some((_, Value::Scalar { .. }, _)) => unreachable!("a scalar is never open"),
        }
    }
    Ok(root.unwrap_or(Node {
        at: Pos { line: 1, column: 1 },
        value: Value::Map(Vec::new()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nodes_know_where_they_stand_and_become_json() {
        let n = parse("name: weather\nsteps:\n  - call: echo\n    arguments: {message: 'true', n: 3, x: 1.5, y: ~}\n")
            .unwrap();
        let Value::Map(pairs) = &n.value else { panic!() };
        assert_eq!(pairs[1].0.text(), Some("steps"));
        assert_eq!(pairs[1].0.at, Pos { line: 2, column: 1 });
        let Value::Seq(steps) = &pairs[1].1.value else { panic!() };
        assert_eq!(steps[0].at, Pos { line: 3, column: 5 });
        assert_eq!(
            n.to_json(),
            json!({"name": "weather", "steps": [{"call": "echo", "arguments": {"message": "true", "n": 3, "x": 1.5, "y": null}}]})
        );
        assert_eq!(parse("").unwrap().to_json(), json!({}));
    }

    #[test]
    fn what_a_test_file_cannot_be_is_said_with_its_place() {
        let e = parse("a: 1\na: 2\n").unwrap_err();
        assert_eq!((e.at.line, e.message.contains("twice")), (2, true), "{e:?}");
        let e = parse("a: &x 1\nb: *x\n").unwrap_err();
        assert!(e.message.contains("anchor"), "{e:?}");
        let e = parse("a: [1, 2\n").unwrap_err();
        assert!(e.at.line >= 1, "{e:?}");
        let e = parse("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(e.message.contains("second YAML document"), "{e:?}");
    }
}
