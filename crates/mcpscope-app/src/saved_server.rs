//! A server as the launcher, Recent and restored tabs remember it: what to
//! run (or reach over HTTP), with which environment, headers and sign-in
//! settings, and which of its values live in the keyring rather than here.

use mcpscope_core::protocol::era::EraChoice;
use mcpscope_core::protocol::handshake;
use mcpscope_core::transport::process::ServerSpec;
use mcpscope_core::transport::target::{HttpKind, HttpTarget, Target};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A server as remembered across runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SavedServer {
    pub name: String,
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    pub protocol_version: String,
    /// Empty or "stdio": a child process; "http" or "sse": `url`.
    pub transport: String,
    pub url: String,
    /// HTTP headers (e.g. Authorization); values are masked on screen.
    pub headers: Vec<(String, String)>,
    /// "legacy", "modern" or "auto"; empty: implied by the protocol version.
    pub era: String,
    /// How mcpscope signs in when an HTTP server asks (OAuth).
    pub oauth: SignIn,
    /// The rows whose values the user asked to keep in the OS keyring
    /// (`env:NAME`, `header:NAME`): the values live there, never here.
    pub kept: Vec<String>,
    /// A stdio server run through an intercepting `mcpscope proxy`, so its
    /// frames can be held, changed, dropped and faulted (the Intercept tab).
    pub intercept: bool,
    /// The breakpoints (`--break` form) and fault rules an intercepted
    /// session had, to start its proxy with again (Relaunch, Restart).
    pub intercept_breaks: Vec<String>,
    pub intercept_faults: Vec<String>,
    /// Do not advertise MCP Apps (`io.modelcontextprotocol/ui`): see the
    /// server's text-only side.
    pub text_only: bool,
}

/// Sign-in settings for an HTTP server that asks for authorization. Without
/// a client id, mcpscope registers itself where the server allows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SignIn {
    /// A client registered at the authorization server.
    pub client_id: String,
    /// Its secret: kept for this run only, never written to the saved servers.
    #[serde(skip)]
    pub client_secret: String,
    /// Scopes to ask for, space-separated (empty: what the server advertises).
    pub scopes: String,
    /// DPoP (RFC 9449): "auto" (empty), "always" or "never".
    pub dpop: String,
    /// A file holding the workload's JWT (workload identity federation): the
    /// path is saved, never the token.
    pub workload_token_file: String,
}

impl SignIn {
    /// The authorization settings these give (mcpscope's defaults
    /// otherwise), or why they cannot be used (an unreadable token file).
    pub fn auth_config(&self) -> anyhow::Result<mcpscope_core::protocol::auth::flow::AuthConfig> {
        use anyhow::Context as _;
        use mcpscope_core::protocol::auth::dpop::DpopMode;
        use mcpscope_core::protocol::auth::flow::AuthConfig;
        let some = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
        let mut config = AuthConfig {
            want_refresh: true,
            ..AuthConfig::default()
        };
        config.client.client_name = "mcpscope".into();
        config.client.client_id = some(&self.client_id);
        config.client.client_secret = some(&self.client_secret);
        let scopes: Vec<String> = self.scopes.split_whitespace().map(str::to_owned).collect();
        config.scope = (!scopes.is_empty()).then_some(scopes);
        config.dpop = DpopMode::parse(self.dpop.trim());
        config.dpop_key = config.dpop.key()?;
        if let Some(path) = some(&self.workload_token_file) {
            let token = mcpscope_core::config::secret_file::read_workload_token(std::path::Path::new(&path))
                .with_context(|| format!("Workload token file {path}"))?;
            config.workload_token = Some(token);
        }
        Ok(config)
    }
}

impl SavedServer {
    /// An HTTP server entry.
    pub fn http(name: &str, url: &str, kind: HttpKind, headers: Vec<(String, String)>) -> Self {
        SavedServer {
            name: name.to_owned(),
            transport: kind.as_str().to_owned(),
            url: url.to_owned(),
            headers,
            protocol_version: handshake::DEFAULT_VERSION.to_owned(),
            ..SavedServer::default()
        }
    }

    pub fn http_kind(&self) -> Option<HttpKind> {
        match self.transport.as_str() {
            "http" => Some(HttpKind::StreamableHttp),
            "sse" => Some(HttpKind::Sse),
            _ => None,
        }
    }

    /// The era to speak: as chosen, or implied by the protocol version.
    pub fn era_choice(&self) -> EraChoice {
        self.era
            .parse()
            .unwrap_or_else(|_| EraChoice::implied_by_version(&self.protocol_version))
    }

    /// What a session connects to.
    pub fn target(&self) -> Target {
        match self.http_kind() {
            Some(kind) => Target::Http(HttpTarget {
                headers: self.headers.clone(),
                ..HttpTarget::new(self.url.clone(), kind)
            }),
            None => Target::Stdio(self.spec()),
        }
    }

    pub fn spec(&self) -> ServerSpec {
        ServerSpec {
            program: self.program.clone(),
            args: self.args.clone(),
            env: self.env.clone(),
            cwd: self.cwd.as_ref().filter(|c| !c.is_empty()).map(PathBuf::from),
        }
    }

    /// The server as a test file's `servers:` entry (Save to collection
    /// into a new file); the core writes its secret values as placeholders.
    pub fn for_test_file(&self) -> mcpscope_core::collection::save::NewServer {
        use mcpscope_core::collection::file::Target as FileTarget;
        let target = match self.http_kind() {
            Some(_) => FileTarget::Http {
                url: self.url.clone(),
                headers: self.headers.clone(),
            },
            None => FileTarget::Stdio {
                command: self.program.clone(),
                args: self.args.clone(),
                env: self.env.clone(),
                cwd: self.cwd.clone().filter(|c| !c.is_empty()),
            },
        };
        let name: String = self
            .name
            .chars()
            .map(|c| if c.is_alphanumeric() || c == '-' { c } else { '_' })
            .collect();
        mcpscope_core::collection::save::NewServer {
            name: if name.is_empty() { "server".into() } else { name },
            target,
            era: Some(self.era.clone()).filter(|e| !e.is_empty()),
            // The rows kept in the keyring (`env:NAME`, `header:NAME`).
            secret_names: self
                .kept
                .iter()
                .map(|k| k.split_once(':').map_or(k.as_str(), |(_, n)| n).to_owned())
                .collect(),
        }
    }

    /// Whether `other` starts or reaches a different server (its name aside).
    pub fn target_differs(&self, other: &SavedServer) -> bool {
        let unnamed = |s: &SavedServer| SavedServer {
            name: String::new(),
            ..s.clone()
        };
        unnamed(self) != unnamed(other)
    }

    pub fn command_line(&self) -> String {
        self.target().display()
    }

    /// The store key of a row's kept value (`row` is `env:NAME` or `header:NAME`).
    fn kept_key(&self, row: &str) -> String {
        let (kind, name) = row.split_once(':').unwrap_or(("env", row));
        format!("launcher/{}/{kind}/{name}", self.name)
    }

    fn rows(&self) -> impl Iterator<Item = (String, &String)> {
        let env = self.env.iter().map(|(k, v)| (format!("env:{k}"), v));
        let headers = self.headers.iter().map(|(k, v)| (format!("header:{k}"), v));
        env.chain(headers)
    }

    /// Each row's store key and its value to keep (`None`: to forget, as
    /// a row no longer marked, or marked with no value, has nothing kept).
    pub fn kept_values(&self) -> Vec<(String, Option<String>)> {
        self.rows()
            .map(|(row, value)| {
                let keep = self.kept.contains(&row) && !value.is_empty();
                (self.kept_key(&row), keep.then(|| value.clone()))
            })
            .collect()
    }

    /// Fills the kept rows' values that are empty from `lookup` (the store).
    pub fn fill_kept(&mut self, lookup: impl Fn(&str) -> Option<String>) {
        let keys: Vec<(String, String)> = self.kept.iter().map(|row| (row.clone(), self.kept_key(row))).collect();
        for (row, key) in keys {
            let (kind, name) = row.split_once(':').unwrap_or(("env", &row));
            let rows = if kind == "header" {
                &mut self.headers
            } else {
                &mut self.env
            };
            if let Some((_, value)) = rows.iter_mut().find(|(k, v)| k == name && v.is_empty())
                && let Some(kept) = lookup(&key)
            {
                *value = kept;
            }
        }
    }

    /// What may be written to the app's saved state: environment and header
    /// values (API keys, tokens) are left out, and so are credentials in the
    /// URL; only the names are kept, and the launcher asks for the values again.
    pub fn without_secrets(&self) -> SavedServer {
        let names = |pairs: &[(String, String)]| pairs.iter().map(|(k, _)| (k.clone(), String::new())).collect();
        SavedServer {
            env: names(&self.env),
            headers: names(&self.headers),
            url: mcpscope_core::transport::target::mask_url(&self.url),
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_servers_keep_names_not_secrets() {
        let s = SavedServer {
            name: "x".into(),
            program: "node".into(),
            env: vec![("API_KEY".into(), "sk-live-123".into())],
            headers: vec![("Authorization".into(), "Bearer tok-456".into())],
            url: "http://alice:pw@h/mcp?token=t-789".into(),
            ..SavedServer::default()
        };
        let stored = serde_json::to_string(&s.without_secrets()).unwrap();
        for secret in ["sk-live-123", "tok-456", "t-789", "pw"] {
            assert!(!stored.contains(secret), "{secret} in {stored}");
        }
        assert!(
            stored.contains("API_KEY") && stored.contains("Authorization"),
            "{stored}"
        );
    }
}
