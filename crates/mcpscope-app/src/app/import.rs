//! Server configs imported into the launcher (`--config`, File → Import):
//! read and parsed on a worker, then listed, or one of them launched.

use super::*;

/// A config file being read on a worker.
pub(super) struct Importing {
    path: PathBuf,
    job: crate::job::Job<anyhow::Result<ConfigRead>>,
    /// The server to launch once it is read (`--config F --server NAME`).
    launch: Option<String>,
}

/// A config file, read and turned into launcher entries (on the worker).
struct ConfigRead {
    format: String,
    servers: Vec<ImportedServer>,
    problems: Vec<String>,
}

fn read_config(path: &Path) -> anyhow::Result<ConfigRead> {
    let import = server_config::load_config(path)?;
    let servers = import
        .servers
        .into_iter()
        .map(|s| match s.transport {
            Transport::Stdio(spec) => ImportedServer {
                saved: Some(SavedServer {
                    name: s.name.clone(),
                    program: spec.program,
                    args: spec.args,
                    env: spec.env,
                    cwd: spec.cwd.map(|c| c.display().to_string()),
                    protocol_version: mcpscope_core::protocol::handshake::DEFAULT_VERSION.to_owned(),
                    ..SavedServer::default()
                }),
                name: s.name,
                notes: s.notes,
            },
            Transport::Http { url, headers, kind } => ImportedServer {
                saved: Some(SavedServer::http(&s.name, &url, kind, headers)),
                name: s.name,
                notes: s.notes,
            },
        })
        .collect();
    Ok(ConfigRead {
        format: import.format.label().to_owned(),
        servers,
        problems: import.problems.iter().map(ToString::to_string).collect(),
    })
}

impl McpscopeApp {
    /// Loads a config file into the launcher's import list, reading and
    /// parsing it on a worker (a config may list 200,000 servers).
    pub fn import_config(&mut self, path: &Path) {
        self.import_config_then(path, None);
    }

    /// [`McpscopeApp::import_config`], then launches the server of this name.
    pub(super) fn import_config_then(&mut self, path: &Path, launch: Option<String>) {
        let from = path.to_owned();
        let job = crate::job::Job::spawn("import", Some(Arc::clone(&self.waker)), move || read_config(&from));
        self.importing = Some(Importing {
            path: path.to_owned(),
            job,
            launch,
        });
        self.message = Some((Severity::Info, format!("reading {}…", path.display())));
    }

    /// Whether a config file is being read.
    pub fn importing(&self) -> bool {
        self.importing.is_some()
    }

    pub(super) fn poll_import(&mut self) {
        let Some(job) = &mut self.importing else { return };
        let Some(result) = job.job.poll() else { return };
        let job = self.importing.take().expect("checked above");
        let path = job.path;
        match result.unwrap_or_else(|dead| Err(dead.into())) {
            Ok(read) => {
                self.message = Some((
                    Severity::Info,
                    format!(
                        "{}: {} server(s) from {}",
                        read.format,
                        read.servers.len(),
                        path.display()
                    ),
                ));
                if let Some(name) = job.launch {
                    match read.servers.iter().find(|s| s.name == name).cloned() {
                        Some(ImportedServer { saved: Some(s), .. }) => self.apply(Command::Launch(Box::new(s))),
                        Some(ImportedServer { notes, .. }) => {
                            self.message =
                                Some((Severity::Error, format!("cannot launch {name}: {}", notes.join("; "))))
                        }
                        None => {
                            let mut text = format!("no server named {name:?} in {}", path.display());
                            let names: Vec<&str> = read.servers.iter().map(|s| s.name.as_str()).collect();
                            if names.is_empty() {
                                text.push_str(": it lists no servers");
                            } else {
                                const NAMES_SHOWN: usize = 20;
                                let mut list = names.iter().take(NAMES_SHOWN).copied().collect::<Vec<_>>().join(", ");
                                if names.len() > NAMES_SHOWN {
                                    list.push_str(&format!(" and {} more", names.len() - NAMES_SHOWN));
                                }
                                text.push_str(&format!(" (it has: {list})"));
                            }
                            if !read.problems.is_empty() {
                                text.push_str(&format!("; {}", read.problems.join("; ")));
                            }
                            self.message = Some((Severity::Error, text))
                        }
                    }
                }
                self.launcher.imported = Some((path, read.servers, read.problems));
            }
            Err(e) => {
                self.launcher.imported = None;
                let text = format!("{}: {e}", path.display());
                self.message = Some(match job.launch {
                    // The config could not be read: that is the problem to
                    // show, not a missing server name.
                    Some(name) => (Severity::Error, format!("cannot launch {name:?}: {text}")),
                    None => (Severity::Error, text),
                });
            }
        }
    }
}
