//! The ledger of remote servers wrapped so far (`wrapped-remotes.json` in the
//! state directory): what unwrap needs to give each its URL back, and the
//! ports already handed out.

use super::lock::{FileLock, lock_file};
use super::parent_dir;
use super::replace::sync_dir;
use crate::config::wrap::{RemoteWrap, Remotes};
use crate::record::state_dir;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub(super) const LEDGER: &str = "wrapped-remotes.json";
const LEDGER_LOCK: &str = "wrapped-remotes.json.lock";

/// The remote servers wrapped so far, kept in the state directory.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Ledger {
    #[serde(default)]
    remotes: Vec<RemoteWrap>,
    #[serde(skip)]
    path: Option<PathBuf>,
    /// `remotes` by local URL: wrap and unwrap ask once per remote server.
    #[serde(skip)]
    by_local_url: HashMap<String, usize>,
    /// The ports of the recorded remotes and those handed out since the
    /// ledger was read, so one run never gives two servers the same port.
    #[serde(skip)]
    ports: HashSet<u16>,
}

impl Ledger {
    /// Reads the ledger from the state root (an empty one if there is none yet).
    pub fn load(state_root: &Path) -> io::Result<Self> {
        let path = state_root.join(LEDGER);
        let mut ledger = Self::read(&path)?;
        ledger.path = Some(path);
        Ok(ledger)
    }

    fn read(path: &Path) -> io::Result<Self> {
        let mut ledger = match state_dir::open_no_follow(path) {
            Ok(f) => serde_json::from_reader::<_, Ledger>(io::BufReader::new(f))
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ledger::default(),
            Err(e) => return Err(e),
        };
        ledger.reindex();
        Ok(ledger)
    }

    /// Reads the file again: another run may have changed it since `load`.
    pub(super) fn reload(&mut self) -> io::Result<()> {
        if let Some(path) = self.path.take() {
            let fresh = Self::read(&path);
            self.path = Some(path);
            let fresh = fresh?;
            self.remotes = fresh.remotes;
            self.reindex();
        }
        Ok(())
    }

    fn reindex(&mut self) {
        self.by_local_url.clear();
        self.ports.clear();
        for (i, r) in self.remotes.iter().enumerate() {
            // The first record wins, as a search of the list would find it.
            self.by_local_url.entry(r.local_url.clone()).or_insert(i);
            if let Some(port) = r.listen.rsplit(':').next().and_then(|p| p.parse().ok()) {
                self.ports.insert(port);
            }
        }
    }

    /// Every remote recorded.
    pub fn remotes(&self) -> &[RemoteWrap] {
        &self.remotes
    }

    /// Where the ledger is kept (None for one that was never loaded from a file).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub(super) fn add(&mut self, added: &[RemoteWrap]) {
        self.remotes.extend_from_slice(added);
        self.reindex();
    }

    pub(super) fn drop_local_urls(&mut self, local_urls: &HashSet<&str>) {
        self.remotes.retain(|r| !local_urls.contains(r.local_url.as_str()));
        self.reindex();
    }

    /// Replaces the file atomically and syncs it and its directory: when this
    /// returns, the record survives a crash.
    pub(super) fn save(&self) -> io::Result<()> {
        let Some(path) = &self.path else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "this ledger was not loaded from a file, so it cannot be stored",
            ));
        };
        let dir = parent_dir(path);
        state_dir::ensure_private_dir(dir)?;
        let mut bytes = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        bytes.push(b'\n');
        state_dir::write_private_atomic(path, &bytes)?;
        sync_dir(dir)
    }

    /// The lock beside the ledger (creating the state directory if needed).
    pub(super) fn lock(&self) -> io::Result<FileLock> {
        let Some(path) = &self.path else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "this ledger was not loaded from a file",
            ));
        };
        let dir = parent_dir(path);
        state_dir::ensure_private_dir(dir)?;
        lock_file(&dir.join(LEDGER_LOCK))
    }

    /// The remotes wrapped in `config` (as the path was given to wrap).
    pub fn for_config(&self, config: &Path) -> Vec<&RemoteWrap> {
        let want = canonical(config);
        self.remotes
            .iter()
            .filter(|r| canonical(Path::new(&r.config)) == want)
            .collect()
    }

    pub(super) fn describe(&self) -> String {
        self.path
            .as_ref()
            .map_or_else(|| "the ledger".to_owned(), |p| p.display().to_string())
    }
}

fn canonical(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_owned()))
}

impl Remotes for Ledger {
    fn allocate_port(&mut self) -> io::Result<u16> {
        // A port the OS says is free now and no other wrapped remote uses.
        let any = || -> io::Result<u16> { Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port()) };
        for _ in 0..4 {
            let port = any()?;
            if self.ports.insert(port) {
                return Ok(port);
            }
        }
        // Linux hands out only odd ports for bind(0), so with thousands of
        // remotes in one file random picks keep landing on taken ones (each
        // try a socket): walk on from one instead, to the first port that is
        // free and not ours.
        let start = any()?;
        let walk = (start..=u16::MAX).chain(1024..start);
        for port in walk {
            if !self.ports.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                self.ports.insert(port);
                return Ok(port);
            }
        }
        Err(io::Error::new(io::ErrorKind::AddrInUse, "no free port found"))
    }

    fn lookup(&self, local_url: &str) -> Option<RemoteWrap> {
        self.by_local_url.get(local_url).map(|&i| self.remotes[i].clone())
    }
}
