//! What the server listed: tools, prompts, resources and resource templates,
//! page by page (`nextCursor`).

use mcpscope_core::protocol::methods;
use mcpscope_core::protocol::skills::{self, SkillEntry};
use mcpscope_core::timeline::model::SessionModel;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// A tool as listed by the server.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDef {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    /// Why a 2026-07-28 client leaves this tool out: an `x-mcp-header`
    /// annotation that breaks a rule (SEP-2243). The tool stays listed.
    pub header_problem: Option<String>,
    /// An MCP App tool the model does not see (`_meta.ui.visibility`
    /// without "model"): only its View calls it. The tool stays listed.
    pub app_only: bool,
    /// It has an MCP App (a `ui://` View, opened when it is run).
    pub has_app: bool,
}

impl ToolDef {
    pub fn from_json(v: &Value) -> Option<ToolDef> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let input_schema = v
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}));
        let header_problem = mcpscope_core::protocol::http_headers::annotations(&input_schema)
            .err()
            .map(|e| format!("{e} (rule: {})", e.rule()));
        Some(ToolDef {
            name: s("name")?,
            title: s("title").or_else(|| {
                v.pointer("/annotations/title")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            }),
            description: s("description"),
            input_schema,
            output_schema: v.get("outputSchema").cloned(),
            header_problem,
            app_only: !mcpscope_core::apps::linkage::visible_to(v, "model"),
            has_app: mcpscope_core::apps::linkage::ui_link(v).is_some_and(|l| l.usable_uri().is_some()),
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct PromptArg {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PromptDef {
    pub name: String,
    pub description: Option<String>,
    pub arguments: Vec<PromptArg>,
}

impl PromptDef {
    pub fn from_json(v: &Value) -> Option<PromptDef> {
        Some(PromptDef {
            name: v.get("name")?.as_str()?.to_owned(),
            description: v.get("description").and_then(Value::as_str).map(str::to_owned),
            arguments: v
                .get("arguments")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| {
                            Some(PromptArg {
                                name: x.get("name")?.as_str()?.to_owned(),
                                description: x.get("description").and_then(Value::as_str).map(str::to_owned),
                                required: x.get("required").and_then(Value::as_bool).unwrap_or(false),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

/// The lists, as the latest results have them.
#[derive(Default)]
pub struct Lists {
    pub tools: Vec<ToolDef>,
    pub prompts: Vec<PromptDef>,
    pub resources: Vec<Value>,
    pub templates: Vec<Value>,
    /// Skills (SEP-2640) as `skills/list` announced them.
    pub skills: Vec<SkillEntry>,
    /// Entries of `skills/list` that could not be read.
    pub skill_problems: Vec<String>,
    /// The row each list was last read from.
    read_from: BTreeMap<&'static str, usize>,
    /// `nextCursor` of the last page of each list, while more pages remain.
    pub next_cursor: BTreeMap<&'static str, String>,
    /// Pages fetched so far per list.
    pub pages: BTreeMap<&'static str, usize>,
}

/// What reading new list results changed.
#[derive(Default, Debug, PartialEq)]
pub struct ListChanges {
    /// The tools list was replaced (not extended by a page).
    pub tools_replaced: bool,
    /// The skills list was read again (replaced or extended).
    pub skills_changed: bool,
}

impl Lists {
    /// Picks up new `tools/list`, `prompts/list`, `resources/list` and
    /// `resources/templates/list` results.
    pub fn sync(&mut self, model: &SessionModel) -> ListChanges {
        let mut changes = ListChanges::default();
        for method in [
            methods::TOOLS_LIST,
            methods::PROMPTS_LIST,
            methods::RESOURCES_LIST,
            methods::RESOURCES_TEMPLATES_LIST,
            skills::SKILLS_LIST,
        ] {
            let Some(&row) = model.latest_results.get(method) else {
                continue;
            };
            if self.read_from.get(method) == Some(&row) {
                continue;
            }
            self.read_from.insert(method, row);
            let Some(result) = model
                .store
                .get(row)
                .and_then(|r| serde_json::from_slice::<Value>(r.raw()).ok())
                .and_then(|v| v.get("result").cloned())
            else {
                continue;
            };
            let items = |key: &str| result.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
            // A page fetched with a cursor extends the list; one without starts it over.
            let continued = model
                .store
                .get(row)
                .and_then(|r| r.link())
                .and_then(|(req, _)| model.store.get(req))
                .and_then(|r| serde_json::from_slice::<Value>(r.raw()).ok())
                .is_some_and(|v| v.pointer("/params/cursor").is_some());
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(c) => self.next_cursor.insert(method, c.to_owned()),
                None => self.next_cursor.remove(method),
            };
            let pages = self.pages.entry(method).or_default();
            *pages = if continued { *pages + 1 } else { 1 };
            match method {
                methods::TOOLS_LIST if continued => {
                    self.tools.extend(items("tools").iter().filter_map(ToolDef::from_json));
                }
                methods::PROMPTS_LIST if continued => {
                    self.prompts
                        .extend(items("prompts").iter().filter_map(PromptDef::from_json));
                }
                methods::RESOURCES_LIST if continued => self.resources.extend(items("resources")),
                methods::RESOURCES_TEMPLATES_LIST if continued => self.templates.extend(items("resourceTemplates")),
                skills::SKILLS_LIST => {
                    let (entries, problems) = SkillEntry::all_from_result(&result);
                    if !continued {
                        self.skills.clear();
                        self.skill_problems.clear();
                    }
                    self.skills.extend(entries);
                    self.skill_problems.extend(problems);
                    changes.skills_changed = true;
                }
                methods::TOOLS_LIST => {
                    self.tools = items("tools").iter().filter_map(ToolDef::from_json).collect();
                    changes.tools_replaced = true;
                }
                methods::PROMPTS_LIST => {
                    self.prompts = items("prompts").iter().filter_map(PromptDef::from_json).collect()
                }
                methods::RESOURCES_LIST => self.resources = items("resources"),
                methods::RESOURCES_TEMPLATES_LIST => self.templates = items("resourceTemplates"),
                _ => {}
            }
        }
        changes
    }

    pub fn tool(&self, name: &str) -> Option<&ToolDef> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Whether a `skills/list` result was read.
    pub fn skills_listed(&self) -> bool {
        self.read_from.contains_key(skills::SKILLS_LIST)
    }

    pub fn prompt(&self, name: &str) -> Option<&PromptDef> {
        self.prompts.iter().find(|p| p.name == name)
    }
}
