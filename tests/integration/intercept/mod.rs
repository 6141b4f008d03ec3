//! Intercept and fault injection on the stdio proxy, with real clients (the
//! TypeScript and Python SDK clients, the Inspector's CLI) in front of
//! server-everything: what each client saw, and what the capture recorded.

use crate::support::*;
use mcpscope_core::record::capture;
use mcpscope_core::transport::event::{Event, Touch, TouchKind};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod faults;
mod hold;
mod hold_over_http;
mod in_the_app;
mod over_http;

/// A private home for one test: sessions, control sockets.
struct Home(tempfile::TempDir);

impl Home {
    fn new() -> Self {
        Home(tempfile::tempdir().unwrap())
    }

    fn apply(&self, c: &mut Command) {
        c.env("HOME", self.0.path())
            .env("XDG_STATE_HOME", self.0.path().join(".local/state"));
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn sockets(&self) -> PathBuf {
        self.0.path().join(".local/state/mcpscope/intercept")
    }
}

#[derive(Clone, Copy, Debug)]
enum Client {
    Ts,
    Py,
}

impl Client {
    fn command(self, timeout_ms: u64) -> Vec<String> {
        match self {
            Client::Ts => vec![
                "node".into(),
                repo().join("tests/clients/ts_fault_client.mjs").display().to_string(),
                timeout_ms.to_string(),
            ],
            Client::Py => vec![
                need(repo().join("tests/peers/.venv/bin/python")).display().to_string(),
                repo().join("tests/clients/py_fault_client.py").display().to_string(),
                timeout_ms.to_string(),
            ],
        }
    }
}

fn touches(events: &[Event]) -> Vec<&Touch> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Touch(t) => Some(&**t),
            _ => None,
        })
        .collect()
}

fn kinds(events: &[Event]) -> Vec<TouchKind> {
    touches(events).iter().map(|t| t.kind).collect()
}

fn error_code(step: &Value) -> Option<i64> {
    step["error"]["code"].as_i64()
}

fn call(id: u64, text: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{text}"}}}}}}"#
    )
}
