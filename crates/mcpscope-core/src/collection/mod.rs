//! Collections: saved requests with checks, in one plain-text test file a
//! person edits and reviews in a pull request, run in the app and by
//! `mcpscope test` alike.
//!
//! The file is YAML (`*.mcp.yaml`): comments, lists and multi-line text
//! (prompts, descriptions) read well and diff line by line; TOML would
//! spell a list of steps as `[[steps]]` tables with nested inline tables for
//! arguments. Anchors and aliases are refused so each step says what it
//! sends. [`yaml`] reads it into a tree that keeps each node's line and
//! column; [`file`] checks it (keys, types, assertions as display filters,
//! patterns) and reports every problem with its place before anything runs.

pub mod check;
pub mod contract;
pub mod evals;
pub mod file;
pub mod find;
pub mod output;
pub mod report;
pub mod run;
pub mod save;
pub mod snapshot;
pub mod vars;
pub mod yaml;
