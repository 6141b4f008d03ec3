//! Opens a URL in the user's browser: `$BROWSER` when set (a
//! colon-separated list, `%s` replaced by the URL, as xdg-utils read it),
//! else the platform's opener.

use crate::platform::desktop;
use std::process::{Command, Stdio};

fn candidates(browser: Option<&str>, url: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    if let Some(list) = browser {
        for entry in list.split(':').map(str::trim).filter(|e| !e.is_empty()) {
            let mut words: Vec<String> = entry.split_whitespace().map(str::to_owned).collect();
            if words.is_empty() {
                continue;
            }
            let program = words.remove(0);
            if words.iter().any(|w| w.contains("%s")) {
                for w in &mut words {
                    *w = w.replace("%s", url);
                }
            } else {
                words.push(url.to_owned());
            }
            out.push((program, words));
        }
    }
    for p in desktop::url_openers() {
        out.push(((*p).to_owned(), vec![url.to_owned()]));
    }
    out
}

/// No browser could be started: each program tried and why it did not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no browser could be started ({})", .0.join("; "))]
pub struct NoBrowser(pub Vec<String>);

/// Starts the browser on `url` (without waiting for it); says which
/// program did, or why none could.
pub fn open(url: &str) -> Result<String, NoBrowser> {
    open_with(std::env::var("BROWSER").ok().as_deref(), url)
}

/// [`open`] with `$BROWSER`'s value given.
pub fn open_with(browser: Option<&str>, url: &str) -> Result<String, NoBrowser> {
    let mut errors = Vec::new();
    for (program, args) in candidates(browser, url) {
        let mut cmd = Command::new(&program);
        cmd.args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(address) = desktop::no_session_bus() {
            cmd.env("DBUS_SESSION_BUS_ADDRESS", address);
        }
        // Waited for, and its orphans reaped, in the background: a browser
        // launcher may run for long.
        match crate::transport::process::spawn_reaped(&mut cmd) {
            Ok(_) => return Ok(program),
            Err(e) => errors.push(format!("{program}: {e}")),
        }
    }
    Err(NoBrowser(errors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_variable_is_honoured() {
        let list = candidates(Some("firefox --new-tab:chromium %s --incognito"), "http://x/?a=1");
        assert_eq!(
            list[0],
            ("firefox".into(), vec!["--new-tab".into(), "http://x/?a=1".into()])
        );
        assert_eq!(
            list[1],
            ("chromium".into(), vec!["http://x/?a=1".into(), "--incognito".into()])
        );
        assert!(list.len() == 3, "then the platform opener: {list:?}");
        let plain = candidates(None, "u");
        assert_eq!(plain.len(), 1);
        assert_eq!(plain[0].1, vec!["u".to_owned()]);
    }
}
