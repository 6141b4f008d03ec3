//! OAuth flags shared by the subcommands that talk to a server over HTTP.

use clap::Args;
use mcpscope_core::config::token_store::{self, TokenStore};
use mcpscope_core::protocol::auth::dpop::DpopMode;
use mcpscope_core::protocol::auth::flow::{AssertionAudience, AuthConfig, GrantChoice, IdpSettings};
use mcpscope_core::protocol::auth::jwt::SigningKey;
use mcpscope_core::protocol::auth::registration::{self, ClientSettings};
use mcpscope_core::text::error_chain;
use mcpscope_core::transport::auth::{AuthOptions, Authorizer, Interaction};
use mcpscope_core::transport::target::Target;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OAuthMode {
    /// Authorize when the server answers 401 (or 403 insufficient_scope).
    Auto,
    /// Never: report the challenge and exit 3.
    Off,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrantArg {
    /// Client credentials with --client-assertion-key, or with a secret where
    /// the server offers only that grant; ID-JAG with --idp-id-token; else
    /// the authorization code flow.
    Auto,
    AuthorizationCode,
    ClientCredentials,
    /// Enterprise-managed authorization (SEP-990): token exchange at the
    /// identity provider, then a JWT bearer grant.
    IdJag,
    /// Workload identity federation (SEP-1933): --workload-token as a JWT bearer grant.
    WorkloadIdentity,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DpopArg {
    /// When the authorization server lists ES256 in dpop_signing_alg_values_supported,
    /// or the server's challenge uses the DPoP scheme.
    Auto,
    Always,
    Never,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AudienceArg {
    Issuer,
    TokenEndpoint,
}

/// How mcpscope authorizes with a server that asks (OAuth 2.1 as MCP profiles it).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Authorization (OAuth, HTTP servers)")]
pub struct AuthArgs {
    /// auto: authorize when the server asks; off: never.
    #[arg(long, value_enum, default_value = "auto", value_name = "MODE")]
    pub oauth: OAuthMode,

    /// A client id registered at the authorization server (used before any other identity).
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,

    /// The secret of --client-id.
    #[arg(long, value_name = "SECRET", requires = "client_id")]
    pub client_secret: Option<String>,

    /// The authorization server (issuer) --client-id is registered at: it is never sent to another.
    #[arg(long, value_name = "URL", requires = "client_id")]
    pub client_issuer: Option<String>,

    /// A Client ID Metadata Document URL (https), used as the client id where the server accepts one.
    #[arg(long, value_name = "URL")]
    pub client_metadata_url: Option<String>,

    /// Scopes to ask for (space-separated; repeatable) instead of the ones
    /// the server's challenge or metadata names.
    #[arg(long, value_name = "SCOPES")]
    pub scope: Vec<String>,

    /// Which grant to use.
    #[arg(long, value_enum, default_value = "auto", value_name = "GRANT")]
    pub oauth_grant: GrantArg,

    /// A PKCS#8 PEM private key (P-256 or RSA) for private_key_jwt client authentication.
    #[arg(long, value_name = "FILE", requires = "client_id")]
    pub client_assertion_key: Option<PathBuf>,

    /// `kid` of the client assertion's header.
    #[arg(long, value_name = "KID", requires = "client_assertion_key")]
    pub client_assertion_kid: Option<String>,

    /// The client assertion's audience.
    #[arg(long, value_enum, default_value = "issuer", value_name = "AUD")]
    pub client_assertion_aud: AudienceArg,

    /// The enterprise identity provider's token endpoint (ID-JAG flow).
    #[arg(long, value_name = "URL", requires = "idp_id_token")]
    pub idp_token_endpoint: Option<String>,

    /// The person's ID token at the identity provider (ID-JAG flow).
    #[arg(long, value_name = "JWT", requires = "idp_token_endpoint")]
    pub idp_id_token: Option<String>,

    /// mcpscope's client id at the identity provider.
    #[arg(long, value_name = "ID", requires = "idp_token_endpoint")]
    pub idp_client_id: Option<String>,

    /// mcpscope's client secret at the identity provider.
    #[arg(long, value_name = "SECRET", requires = "idp_client_id")]
    pub idp_client_secret: Option<String>,

    /// Use this authorization server when the server's metadata lists several.
    #[arg(long, value_name = "URL")]
    pub oauth_issuer: Option<String>,

    /// Bind tokens to a key mcpscope makes for the session (DPoP, RFC 9449):
    /// a proof on the token request and on every request to the server.
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    pub dpop: DpopArg,

    /// A file holding the workload's JWT (from its platform: a Kubernetes
    /// service account token, a cloud identity token), sent as an RFC 7523
    /// JWT bearer grant (workload identity federation, SEP-1933). Read from
    /// a file so it never shows in the process list.
    #[arg(long, value_name = "FILE")]
    pub workload_token: Option<PathBuf>,

    /// Listen for the browser's redirect on this port of 127.0.0.1 (default: any free port).
    #[arg(long, value_name = "PORT")]
    pub redirect_port: Option<u16>,

    /// Do not open a browser: follow the authorization server's redirects
    /// and read the code from the redirect to mcpscope (CI, tests; works
    /// where the server approves without asking anyone).
    #[arg(long)]
    pub auth_non_interactive: bool,

    /// How long to wait for the browser to come back, in milliseconds.
    #[arg(long, default_value_t = 300_000, value_name = "MS")]
    pub auth_timeout_ms: u64,

    /// Keep tokens between runs in a file only you can read (default
    /// $XDG_STATE_HOME/mcpscope/oauth-tokens.json), or with `keyring` in the
    /// OS keyring (the Secret Service, Keychain or Credential Manager; the
    /// default file when there is none); without it they live in memory
    /// for this run only. (A file named keyring: ./keyring.)
    // A bare `--token-store` is `Some(None)` (a `//` comment, not help text):
    // clap's path parser refuses an empty default, which made the documented
    // bare flag a usage error.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub token_store: Option<Option<PathBuf>>,
}

impl AuthArgs {
    /// Whether any flag beyond the defaults was given.
    fn any_given(&self) -> bool {
        self.client_id.is_some()
            || self.client_metadata_url.is_some()
            || !self.scope.is_empty()
            || self.oauth_grant != GrantArg::Auto
            || self.client_assertion_key.is_some()
            || self.idp_token_endpoint.is_some()
            || self.oauth_issuer.is_some()
            || self.dpop != DpopArg::Auto
            || self.workload_token.is_some()
            || self.redirect_port.is_some()
            || self.auth_non_interactive
            || self.token_store.is_some()
    }

    pub fn config(&self) -> Result<AuthConfig, String> {
        if let Some(u) = &self.client_metadata_url {
            registration::check_metadata_document_url(u).map_err(|e| e.to_string())?;
        }
        let signing_key = match &self.client_assertion_key {
            None => None,
            Some(path) => {
                let pem = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read --client-assertion-key {}: {e}", path.display()))?;
                Some(Arc::new(SigningKey::from_pem(&pem).map_err(|e| {
                    format!("--client-assertion-key {}: {e}", path.display())
                })?))
            }
        };
        let workload_token = match &self.workload_token {
            None => None,
            Some(path) => {
                let token = mcpscope_core::config::secret_file::read_workload_token(path)
                    .map_err(|e| format!("--workload-token {}: {}", path.display(), error_chain(&e)))?;
                Some(token)
            }
        };
        let dpop = match self.dpop {
            DpopArg::Auto => DpopMode::Auto,
            DpopArg::Always => DpopMode::Always,
            DpopArg::Never => DpopMode::Never,
        };
        let dpop_key = dpop.key().map_err(|e| e.to_string())?;
        let scope: Vec<String> = self
            .scope
            .iter()
            .flat_map(|s| s.split_whitespace())
            .map(str::to_owned)
            .collect();
        Ok(AuthConfig {
            client: ClientSettings {
                client_id: self.client_id.clone(),
                client_secret: self.client_secret.clone(),
                client_issuer: self.client_issuer.clone(),
                metadata_document_url: self.client_metadata_url.clone(),
                client_name: "mcpscope".into(),
            },
            scope: (!self.scope.is_empty()).then_some(scope),
            grant: match self.oauth_grant {
                GrantArg::Auto => GrantChoice::Auto,
                GrantArg::AuthorizationCode => GrantChoice::AuthorizationCode,
                GrantArg::ClientCredentials => GrantChoice::ClientCredentials,
                GrantArg::IdJag => GrantChoice::IdJag,
                GrantArg::WorkloadIdentity => GrantChoice::WorkloadIdentity,
            },
            signing_key,
            assertion_kid: self.client_assertion_kid.clone(),
            assertion_audience: match self.client_assertion_aud {
                AudienceArg::Issuer => AssertionAudience::Issuer,
                AudienceArg::TokenEndpoint => AssertionAudience::TokenEndpoint,
            },
            idp: match (&self.idp_token_endpoint, &self.idp_id_token) {
                (Some(endpoint), Some(id_token)) => Some(IdpSettings {
                    token_endpoint: endpoint.clone(),
                    id_token: id_token.clone(),
                    client_id: self.idp_client_id.clone(),
                    client_secret: self.idp_client_secret.clone(),
                }),
                _ => None,
            },
            want_refresh: true,
            issuer: self.oauth_issuer.clone(),
            dpop,
            dpop_key,
            workload_token,
        })
    }

    /// The authorizer for `target` (the token goes to its bearer slot), or
    /// none: a stdio server, `--oauth off`, or an Authorization header of the user's.
    pub fn authorizer(&self, target: &Target) -> Result<Option<Authorizer>, String> {
        let http = match target {
            Target::Http(h) => h,
            Target::Stdio(_) => {
                if self.any_given() {
                    return Err("the authorization flags need an HTTP server (--server-url)".into());
                }
                return Ok(None);
            }
        };
        if self.oauth == OAuthMode::Off {
            return Ok(None);
        }
        if http
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            // The user's own credentials win; OAuth would only fight them.
            return Ok(None);
        }
        let config = self.config()?;
        let default_path = || {
            TokenStore::default_path()
                .ok_or("--token-store: no state directory to keep tokens under (no home directory in the environment); give a FILE")
        };
        let store = match &self.token_store {
            None => None,
            Some(Some(p)) if p.as_os_str() == "keyring" => {
                let (store, fell_back) = TokenStore::open_preferred(&default_path()?).map_err(|e| error_chain(&e))?;
                if let Some(note) = fell_back {
                    crate::errln!("mcpscope: --token-store keyring: {note}");
                }
                Some(store)
            }
            Some(p) => {
                let path = match p {
                    Some(p) => p.clone(),
                    None => default_path()?,
                };
                Some(TokenStore::open(&path).map_err(|e| error_chain(&e))?)
            }
        };
        let memory = store.as_ref().map(|s| s.load(&http.url)).unwrap_or_default();
        let store = store.map(|s| Arc::new(Mutex::new(s)));
        let options = AuthOptions {
            interaction: if self.auth_non_interactive {
                Interaction::NonInteractive
            } else {
                Interaction::Browser
            },
            redirect_port: self.redirect_port,
            callback_timeout: Duration::from_millis(self.auth_timeout_ms),
            show_url: Some(Arc::new(|url: &str, opened: Option<&str>| match opened {
                Some(_) => crate::errln!("mcpscope: authorize in the browser that opened (or open this URL): {url}"),
                None => crate::errln!("mcpscope: open this URL in a browser to authorize: {url}"),
            })),
            on_change: store.map(|store| {
                token_store::saving_to(store, |e| {
                    crate::errln!("mcpscope: warning: tokens not kept: {}", error_chain(e))
                })
            }),
            ..AuthOptions::default()
        };
        Ok(Some(
            Authorizer::new(http.url.clone(), config, options, http.bearer.clone()).with_memory(memory),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<AuthArgs, String> {
        #[derive(Parser)]
        struct W {
            #[command(flatten)]
            a: AuthArgs,
        }
        W::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .map(|w| w.a)
            .map_err(|e| e.to_string())
    }

    fn http() -> Target {
        Target::Http(mcpscope_core::transport::target::HttpTarget::streamable(
            "http://127.0.0.1:1/mcp",
        ))
    }

    #[test]
    fn flags_build_the_configuration() {
        let a = parse(&[
            "--client-id",
            "id",
            "--client-secret",
            "s",
            "--scope",
            "a b",
            "--scope",
            "c",
            "--client-metadata-url",
            "https://c.example/m.json",
        ])
        .unwrap();
        let c = a.config().unwrap();
        assert_eq!(c.client.client_id.as_deref(), Some("id"));
        assert_eq!(c.scope, Some(vec!["a".into(), "b".into(), "c".into()]));
        assert!(c.want_refresh);
        assert!(a.authorizer(&http()).unwrap().is_some());
        // Refusals: a metadata URL that is not https, a secret without an id, a missing key file.
        assert!(
            parse(&["--client-metadata-url", "http://x/m.json"])
                .unwrap()
                .config()
                .unwrap_err()
                .contains("https")
        );
        assert!(parse(&["--client-secret", "s"]).is_err());
        assert!(
            parse(&["--client-id", "i", "--client-assertion-key", "/nonexistent/key.pem"])
                .unwrap()
                .config()
                .unwrap_err()
                .contains("cannot read")
        );
    }

    #[test]
    fn no_authorizer_where_it_cannot_or_must_not_run() {
        assert!(
            parse(&["--oauth", "off"])
                .unwrap()
                .authorizer(&http())
                .unwrap()
                .is_none()
        );
        let mut t = mcpscope_core::transport::target::HttpTarget::streamable("http://127.0.0.1:1/mcp");
        t.headers.push(("Authorization".into(), "Bearer mine".into()));
        assert!(parse(&[]).unwrap().authorizer(&Target::Http(t)).unwrap().is_none());
        let stdio = Target::Stdio(mcpscope_core::transport::process::ServerSpec::new(
            "srv",
            Vec::<String>::new(),
        ));
        assert!(parse(&[]).unwrap().authorizer(&stdio).unwrap().is_none());
        assert!(parse(&["--client-id", "x"]).unwrap().authorizer(&stdio).is_err());
    }
}
