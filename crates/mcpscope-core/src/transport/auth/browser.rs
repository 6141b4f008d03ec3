//! Opens a URL in the user's browser: `$BROWSER` when set (a
//! colon-separated list, `%s` replaced by the URL, as xdg-utils read it),
//! else the platform's opener.

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
    let default: &[&str] = if cfg!(target_os = "macos") {
        &["open"]
    } else if cfg!(windows) {
        &["explorer"]
    } else {
        &["xdg-open"]
    };
    for p in default {
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
    let mut errors = Vec::new();
    let browser = std::env::var("BROWSER").ok();
    for (program, args) in candidates(browser.as_deref(), url) {
        match Command::new(&program)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(mut child) => {
                // Reaped in the background: a browser launcher may run for long.
                std::thread::Builder::new()
                    .name("mcpscope-browser".into())
                    .spawn(move || {
                        let _ = child.wait();
                    })
                    .ok();
                return Ok(program);
            }
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
