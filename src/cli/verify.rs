//! `mcpscope verify CAPTURE --surface`: does the live server still offer
//! what the recording shows? Capabilities and the tool, prompt, resource and
//! template lists are compared by name, each change breaking or compatible.

use super::{TargetArgs, exit};
use clap::Args;
use mcpscope_core::analysis::session_diff::{self, Exchange};
use mcpscope_core::analysis::surface::{self, Change, Impact, Surface};
use mcpscope_core::client::Client;
use mcpscope_core::protocol::era::EraChoice;
use mcpscope_core::protocol::handshake::HandshakeOptions;
use mcpscope_core::protocol::methods;
use mcpscope_core::transport::event::Event;
use mcpscope_core::transport::session::SessionOptions;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOn {
    /// Only breaking changes fail the run.
    Breaking,
    /// Any change fails the run.
    Any,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The recorded session to verify the server against.
    #[arg(value_name = "CAPTURE")]
    pub capture: PathBuf,

    /// Compare the server's surface only: capabilities and the tool,
    /// prompt, resource and template lists (by name; each change breaking or
    /// compatible). Needed for now: replaying every request is to come.
    #[arg(long)]
    pub surface: bool,

    /// Which changes make the exit status 1.
    #[arg(long, value_enum, default_value = "any", value_name = "WHICH")]
    pub fail_on: FailOn,

    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,

    /// Also write a JUnit XML report (one test case per compared item), for CI.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Timeout for each request, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,

    #[command(flatten)]
    pub server: TargetArgs,

    #[command(flatten)]
    pub auth: super::auth::AuthArgs,
}

fn fail(code: u8, msg: impl std::fmt::Display) -> ExitCode {
    crate::errln!("mcpscope verify: {msg}");
    ExitCode::from(code)
}

pub fn run(args: VerifyArgs) -> ExitCode {
    if !args.surface {
        return fail(
            exit::USAGE,
            "give --surface: verify compares the server's surface (replaying every recorded request is not \
             available yet)",
        );
    }
    let target = match args.server.target() {
        Ok(t) => t,
        Err(e) => return fail(exit::USAGE, e),
    };
    let authorizer = match args.auth.authorizer(&target) {
        Ok(a) => a,
        Err(e) => return fail(exit::USAGE, e),
    };
    let read = match session_diff::read_exchanges(&args.capture) {
        Ok(r) => r,
        Err(e) => return fail(exit::IO, format!("{e:#}")),
    };
    for w in &read.warnings {
        crate::errln!("mcpscope verify: {}: {w}", args.capture.display());
    }
    let recorded: Vec<Exchange> = read.exchanges.iter().map(|x| x.to_exchange()).collect();
    let old = Surface::from_exchanges(&recorded);
    if old.capabilities.is_none() && old.lists.is_empty() {
        return fail(
            exit::IO,
            format!(
                "{} holds no handshake and no list answered: nothing to compare the server against",
                args.capture.display()
            ),
        );
    }
    let modern = recorded
        .iter()
        .any(|x| x.method == methods::SERVER_DISCOVER && matches!(x.outcome, session_diff::Outcome::Result(_)));
    let choice = if modern { EraChoice::Modern } else { EraChoice::Legacy };
    let timeout = Duration::from_millis(args.timeout_ms);
    let options = SessionOptions {
        request_timeout: Some(timeout),
        limits: args.server.limits(),
        ..SessionOptions::default()
    };
    let mut client = Client::connect(target, options, Box::new(|_: &Event| {}));
    if let Some(a) = authorizer {
        client = client.with_authorizer(a);
    }
    let live = live_surface(&mut client, &old, choice, timeout);
    client.close();
    let new = match live {
        Ok(s) => s,
        Err(e) => return fail(exit::UNREACHABLE, e),
    };
    let changes = surface::compare(&old, &new);
    let counted = changes
        .iter()
        .filter(|c| args.fail_on == FailOn::Any || c.impact == Impact::Breaking)
        .count();
    match args.format {
        Format::Text => print_text(&changes),
        Format::Json => super::call::print_json(&json!({
            "changes": changes.iter().map(change_json).collect::<Vec<_>>(),
            "breaking": changes.iter().filter(|c| c.impact == Impact::Breaking).count(),
            "compatible": changes.iter().filter(|c| c.impact == Impact::Compatible).count(),
        })),
    }
    if let Some(path) = &args.junit {
        let xml = junit(&old, &new, &changes, args.fail_on);
        if let Err(e) = std::fs::write(path, xml) {
            return fail(exit::IO, format!("cannot write {}: {e}", path.display()));
        }
    }
    ExitCode::from(if counted > 0 { exit::FAILED } else { exit::OK })
}

/// The live server's surface: the lists the recording fetched, fetched again.
fn live_surface(client: &mut Client, old: &Surface, choice: EraChoice, timeout: Duration) -> Result<Surface, String> {
    client
        .wait_started(Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    let decision = client
        .establish(choice, &HandshakeOptions::default(), timeout)
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let mut new = Surface {
        capabilities: decision.server_capabilities().cloned(),
        ..Surface::default()
    };
    for (list, method, key, _) in surface::LISTS {
        if !old.lists.contains_key(list) {
            continue;
        }
        match client.list_all(method, key, timeout).map_err(|e| e.to_string())? {
            Ok(items) => new.set(list, items),
            // Left out: compare() says the server did not list them.
            Err(e) => crate::errln!("mcpscope verify: {method} failed: {e}"),
        }
    }
    Ok(new)
}

fn change_json(c: &Change) -> Value {
    json!({"impact": c.impact.as_str(), "subject": c.subject, "change": c.what})
}

fn print_text(changes: &[Change]) {
    if changes.is_empty() {
        crate::outln!("the server's surface is as recorded");
        return;
    }
    for c in changes {
        crate::outln!("{:<10} {}: {}", c.impact.as_str(), c.subject, c.what);
    }
    let breaking = changes.iter().filter(|c| c.impact == Impact::Breaking).count();
    crate::outln!(
        "{} change(s): {breaking} breaking, {} compatible",
        changes.len(),
        changes.len() - breaking
    );
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no way to write these: a peer's text may hold them.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// JUnit XML as GitHub Actions' and GitLab's report readers take it: one
/// test case per recorded item (and per item the server added, and the
/// capabilities), failed when it has a change that counts.
fn junit(old: &Surface, new: &Surface, changes: &[Change], fail_on: FailOn) -> String {
    let mut cases: Vec<(String, String)> = vec![("capabilities".into(), "capabilities".into())];
    for (list, _, _, _) in surface::LISTS {
        let names: std::collections::BTreeSet<&String> = old
            .lists
            .get(list)
            .into_iter()
            .chain(new.lists.get(list).filter(|_| old.lists.contains_key(list)))
            .flat_map(|m| m.keys())
            .collect();
        for n in names {
            cases.push((list.to_owned(), n.clone()));
        }
    }
    let subject_of = |class: &str, name: &str| -> String {
        if class == "capabilities" {
            "capability ".into()
        } else {
            let kind = match class {
                "tools" => "tool",
                "prompts" => "prompt",
                "resources" => "resource",
                _ => "resource template",
            };
            format!("{kind} {name}")
        }
    };
    let mut body = String::new();
    let mut failures = 0;
    for (class, name) in &cases {
        let subject = subject_of(class, name);
        let mine: Vec<&Change> = changes
            .iter()
            .filter(|c| {
                if class == "capabilities" {
                    c.subject.starts_with(&subject)
                } else {
                    c.subject == subject
                }
            })
            .collect();
        let failing: Vec<&&Change> = mine
            .iter()
            .filter(|c| fail_on == FailOn::Any || c.impact == Impact::Breaking)
            .collect();
        body.push_str(&format!(
            "    <testcase classname=\"{}\" name=\"{}\">\n",
            xml_escape(class),
            xml_escape(name)
        ));
        if !failing.is_empty() {
            failures += 1;
            let text: Vec<String> = mine
                .iter()
                .map(|c| format!("{}: {}: {}", c.impact.as_str(), c.subject, c.what))
                .collect();
            body.push_str(&format!(
                "      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                failing[0].impact.as_str(),
                xml_escape(&failing[0].what),
                xml_escape(&text.join("\n"))
            ));
        } else if !mine.is_empty() {
            let text: Vec<String> = mine
                .iter()
                .map(|c| format!("{}: {}", c.impact.as_str(), c.what))
                .collect();
            body.push_str(&format!(
                "      <system-out>{}</system-out>\n",
                xml_escape(&text.join("\n"))
            ));
        }
        body.push_str("    </testcase>\n");
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mcpscope verify\" tests=\"{n}\" \
         failures=\"{failures}\">\n  <testsuite name=\"surface\" tests=\"{n}\" failures=\"{failures}\" errors=\"0\" \
         skipped=\"0\">\n{body}  </testsuite>\n</testsuites>\n",
        n = cases.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junit_has_a_case_per_item_and_fails_what_counts() {
        let mut old = Surface {
            capabilities: Some(json!({"tools": {}})),
            ..Surface::default()
        };
        old.set("tools", vec![json!({"name": "a<b"}), json!({"name": "gone"})]);
        let mut new = old.clone();
        new.set(
            "tools",
            vec![json!({"name": "a<b", "description": "x"}), json!({"name": "new"})],
        );
        let changes = surface::compare(&old, &new);
        let any = junit(&old, &new, &changes, FailOn::Any);
        assert!(any.contains("tests=\"4\" failures=\"3\""), "{any}");
        assert!(any.contains("name=\"a&lt;b\""), "{any}");
        let breaking = junit(&old, &new, &changes, FailOn::Breaking);
        assert!(breaking.contains("tests=\"4\" failures=\"1\""), "{breaking}");
        assert!(
            breaking.contains("<failure type=\"breaking\" message=\"removed\">"),
            "{breaking}"
        );
        assert!(
            breaking.contains("<system-out>compatible: added</system-out>"),
            "{breaking}"
        );
        assert_eq!(xml_escape("\u{1b}[x&"), "\\u001b[x&amp;");
    }
}
