//! Where things are kept on each system: mcpscope's own state, and the
//! config files of the MCP clients whose servers it imports and wraps.
//!
//! Every answer is worked out from a [`System`] and the user's directories
//! ([`UserDirs`]), so each system's paths are tested on any of them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The systems whose conventions differ here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    /// Linux and the other Unix systems (the XDG directories).
    Linux,
    MacOs,
    Windows,
}

impl System {
    /// The one mcpscope runs on.
    pub fn this() -> System {
        if cfg!(windows) {
            System::Windows
        } else if cfg!(target_os = "macos") {
            System::MacOs
        } else {
            System::Linux
        }
    }
}

/// The user's directories, as the environment names them. Only absolute
/// paths count: a relative one would depend on where mcpscope was started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserDirs {
    /// `HOME` (`USERPROFILE` first on Windows).
    pub home: Option<PathBuf>,
    pub xdg_state_home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    /// `%APPDATA%` (roaming).
    pub appdata: Option<PathBuf>,
    /// `%LOCALAPPDATA%`.
    pub local_appdata: Option<PathBuf>,
}

fn absolute(v: Option<OsString>) -> Option<PathBuf> {
    v.map(PathBuf::from).filter(|p| p.is_absolute())
}

impl UserDirs {
    pub fn from_env() -> UserDirs {
        let var = std::env::var_os;
        UserDirs {
            // Windows programs (Node.js among them: Claude Code, Cursor)
            // take USERPROFILE; a HOME set by Git Bash or MSYS may differ.
            home: if cfg!(windows) {
                absolute(var("USERPROFILE")).or_else(|| absolute(var("HOME")))
            } else {
                absolute(var("HOME")).or_else(|| absolute(var("USERPROFILE")))
            },
            xdg_state_home: absolute(var("XDG_STATE_HOME")),
            xdg_config_home: absolute(var("XDG_CONFIG_HOME")),
            appdata: absolute(var("APPDATA")),
            local_appdata: absolute(var("LOCALAPPDATA")),
        }
    }
}

/// mcpscope's private state (proxied sessions, tokens, the app's state):
/// `$XDG_STATE_HOME/mcpscope` or `~/.local/state/mcpscope` on Linux,
/// `~/Library/Application Support/mcpscope` on macOS,
/// `%LOCALAPPDATA%\mcpscope` on Windows (machine-local, not roaming).
pub fn state_root(system: System, dirs: &UserDirs) -> Option<PathBuf> {
    match system {
        System::Linux => dirs
            .xdg_state_home
            .as_ref()
            .map(|x| x.join("mcpscope"))
            .or_else(|| Some(dirs.home.as_ref()?.join(".local/state/mcpscope"))),
        System::MacOs => Some(dirs.home.as_ref()?.join("Library/Application Support/mcpscope")),
        System::Windows => dirs
            .local_appdata
            .as_ref()
            .map(|d| d.join("mcpscope"))
            .or_else(|| Some(dirs.home.as_ref()?.join("AppData").join("Local").join("mcpscope"))),
    }
}

/// What to say when there is no state root.
pub fn state_root_missing(system: System) -> &'static str {
    match system {
        System::Linux => {
            "neither XDG_STATE_HOME nor HOME is set to an absolute path, so there is no per-user state directory"
        }
        System::MacOs => "HOME is not set to an absolute path, so there is no per-user state directory",
        System::Windows => {
            "neither LOCALAPPDATA nor USERPROFILE is set to an absolute path, so there is no per-user state directory"
        }
    }
}

/// An MCP client whose config file lists servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    VsCode,
    Windsurf,
}

impl Client {
    pub const ALL: [Client; 5] = [
        Client::ClaudeDesktop,
        Client::ClaudeCode,
        Client::Cursor,
        Client::VsCode,
        Client::Windsurf,
    ];

    /// As people call it.
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::VsCode => "VS Code",
            Client::Windsurf => "Windsurf",
        }
    }

    /// As the command line names it (`--client claude-desktop`).
    pub fn slug(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::VsCode => "vscode",
            Client::Windsurf => "windsurf",
        }
    }

    pub fn from_slug(slug: &str) -> Option<Client> {
        Client::ALL.into_iter().find(|c| c.slug() == slug)
    }

    /// Where this client keeps its user-wide servers on `system`.
    pub fn config_path(self, system: System, dirs: &UserDirs) -> Option<PathBuf> {
        let home = dirs.home.as_deref();
        // Where desktop apps keep their settings.
        let app_config = |app: &str| -> Option<PathBuf> {
            match system {
                System::MacOs => Some(home?.join("Library/Application Support").join(app)),
                System::Windows => Some(
                    dirs.appdata
                        .clone()
                        .or_else(|| Some(home?.join("AppData/Roaming")))?
                        .join(app),
                ),
                System::Linux => Some(
                    dirs.xdg_config_home
                        .clone()
                        .or_else(|| Some(home?.join(".config")))?
                        .join(app),
                ),
            }
        };
        match self {
            Client::ClaudeDesktop => Some(app_config("Claude")?.join("claude_desktop_config.json")),
            Client::VsCode => Some(app_config("Code")?.join("User").join("mcp.json")),
            Client::ClaudeCode => Some(home?.join(".claude.json")),
            Client::Cursor => Some(home?.join(".cursor").join("mcp.json")),
            Client::Windsurf => Some(home?.join(".codeium").join("windsurf").join("mcp_config.json")),
        }
    }
}

/// The clients' config files that exist here, in [`Client::ALL`]'s order.
pub fn client_configs_here() -> Vec<(Client, PathBuf)> {
    let (system, dirs) = (System::this(), UserDirs::from_env());
    Client::ALL
        .into_iter()
        .filter_map(|c| Some((c, c.config_path(system, &dirs)?)))
        .filter(|(_, p)| Path::new(p).is_file())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> UserDirs {
        UserDirs {
            home: Some("/home/me".into()),
            xdg_state_home: None,
            xdg_config_home: None,
            appdata: Some(r"C:\Users\me\AppData\Roaming".into()),
            local_appdata: Some(r"C:\Users\me\AppData\Local".into()),
        }
    }

    #[test]
    fn the_state_root_follows_each_systems_convention() {
        let d = dirs();
        assert_eq!(
            state_root(System::Linux, &d),
            Some("/home/me/.local/state/mcpscope".into())
        );
        let xdg = UserDirs {
            xdg_state_home: Some("/x/state".into()),
            ..d.clone()
        };
        assert_eq!(state_root(System::Linux, &xdg), Some("/x/state/mcpscope".into()));
        assert_eq!(
            state_root(System::MacOs, &d),
            Some("/home/me/Library/Application Support/mcpscope".into())
        );
        assert_eq!(
            state_root(System::Windows, &d),
            Some(PathBuf::from(r"C:\Users\me\AppData\Local").join("mcpscope"))
        );
        assert_eq!(state_root(System::Linux, &UserDirs::default()), None);
        assert_eq!(state_root(System::MacOs, &UserDirs::default()), None);
        assert_eq!(state_root(System::Windows, &UserDirs::default()), None);
    }

    #[test]
    fn claude_desktops_config_is_where_each_system_keeps_it() {
        let d = dirs();
        let claude = |s| Client::ClaudeDesktop.config_path(s, &d).unwrap();
        assert_eq!(
            claude(System::MacOs),
            PathBuf::from("/home/me/Library/Application Support/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            claude(System::Windows),
            PathBuf::from(r"C:\Users\me\AppData\Roaming")
                .join("Claude")
                .join("claude_desktop_config.json")
        );
        assert_eq!(
            claude(System::Linux),
            PathBuf::from("/home/me/.config/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            Client::VsCode.config_path(System::MacOs, &d).unwrap(),
            PathBuf::from("/home/me/Library/Application Support/Code/User/mcp.json")
        );
        assert_eq!(
            Client::Cursor.config_path(System::Windows, &d).unwrap(),
            PathBuf::from("/home/me/.cursor/mcp.json")
        );
    }

    #[test]
    fn relative_directories_in_the_environment_are_ignored() {
        // A relative XDG_STATE_HOME is invalid by the specification.
        assert_eq!(absolute(Some("rel".into())), None);
        assert_eq!(absolute(Some("".into())), None);
        let abs = std::env::temp_dir();
        assert_eq!(absolute(Some(abs.clone().into())), Some(abs));
    }

    #[test]
    fn clients_are_named_by_their_slugs() {
        for c in Client::ALL {
            assert_eq!(Client::from_slug(c.slug()), Some(c));
        }
        assert_eq!(Client::from_slug("claude"), None);
    }
}
