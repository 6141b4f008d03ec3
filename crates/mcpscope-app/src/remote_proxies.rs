//! Reverse proxies the app runs for remote entries it wrapped ("Watch in
//! your client"): the client's config now points at `127.0.0.1:PORT`, so the
//! app starts the same reverse proxy `mcpscope proxy --listen` would, in
//! this process, recording each session under the server's name where the
//! Live sessions panel lists it. They stop with the app, or when the entry
//! is unwrapped.

use mcpscope_core::config::wrap::RemoteWrap;
use mcpscope_core::proxy::reverse::{ReverseOutcome, ReverseProxy, ReverseProxyOptions, Stopper};
use mcpscope_core::proxy::stdio::LiveRecord;
use mcpscope_core::record::state_dir;
use mcpscope_core::text::ErrorChain;
use std::thread::JoinHandle;

struct Running {
    server: String,
    listen: String,
    stopper: Stopper,
    thread: Option<JoinHandle<ReverseOutcome>>,
}

#[derive(Default)]
pub struct RemoteProxies {
    running: Vec<Running>,
    /// Where the sessions are recorded; None: the per-user sessions
    /// directory the Live sessions panel lists (tests give their own).
    pub sessions_dir: Option<std::path::PathBuf>,
}

impl RemoteProxies {
    /// Starts the reverse proxy of each wrapped remote not running yet; a
    /// line for people per remote.
    pub fn start(&mut self, remotes: &[RemoteWrap]) -> Vec<(bool, String)> {
        remotes.iter().map(|r| self.start_one(r)).collect()
    }

    fn start_one(&mut self, remote: &RemoteWrap) -> (bool, String) {
        if self.running.iter().any(|r| r.listen == remote.listen) {
            return (
                true,
                format!("{}: its reverse proxy already runs on {}", remote.server, remote.listen),
            );
        }
        let shown = mcpscope_core::transport::target::mask_url(&remote.upstream);
        let mut options = match ReverseProxyOptions::new(&remote.listen, &remote.upstream) {
            Ok(o) => o,
            Err(e) => {
                return (
                    false,
                    format!("{}: no reverse proxy: {}", remote.server, ErrorChain(&e)),
                );
            }
        };
        match self.sessions_dir.clone().map_or_else(state_dir::sessions_dir, Ok) {
            Ok(dir) => {
                options.session = Some(LiveRecord {
                    dir,
                    name: remote.server.clone(),
                })
            }
            Err(e) => {
                return (
                    false,
                    format!(
                        "{}: no reverse proxy: no sessions directory: {}",
                        remote.server,
                        ErrorChain(&e)
                    ),
                );
            }
        }
        let proxy = match ReverseProxy::bind(options) {
            Ok(p) => p,
            Err(e) => {
                // The port the config names is taken: by a proxy started by
                // hand (`mcpscope proxy`), or by something else.
                return (
                    false,
                    format!("{}: no reverse proxy: {}", remote.server, ErrorChain(&e)),
                );
            }
        };
        let stopper = proxy.stopper();
        let thread = std::thread::Builder::new()
            .name(format!("mcpscope-rproxy-{}", remote.server))
            .spawn(move || proxy.serve(|| "the app stopped it".into()));
        match thread {
            Ok(t) => {
                self.running.push(Running {
                    server: remote.server.clone(),
                    listen: remote.listen.clone(),
                    stopper,
                    thread: Some(t),
                });
                (
                    true,
                    format!(
                        "{}: reverse proxy on http://{} forwarding to {shown}, run by the app while it is open",
                        remote.server, remote.listen
                    ),
                )
            }
            Err(e) => (
                false,
                format!("{}: no reverse proxy: cannot start a thread: {e}", remote.server),
            ),
        }
    }

    /// Stops the proxies of these servers (they were unwrapped).
    pub fn stop(&mut self, servers: &[String]) -> Vec<String> {
        let (stop, keep): (Vec<Running>, Vec<Running>) = std::mem::take(&mut self.running)
            .into_iter()
            .partition(|r| servers.contains(&r.server));
        self.running = keep;
        stop.into_iter()
            .map(|r| {
                let server = r.server.clone();
                format!("{server}: {}", end(r))
            })
            .collect()
    }

    /// The servers whose proxies run, with their addresses.
    pub fn listening(&self) -> Vec<(String, String)> {
        self.running
            .iter()
            .map(|r| (r.server.clone(), r.listen.clone()))
            .collect()
    }

    pub fn stop_all(&mut self) {
        for r in std::mem::take(&mut self.running) {
            end(r);
        }
    }
}

fn end(mut r: Running) -> String {
    r.stopper.stop();
    match r.thread.take().map(JoinHandle::join) {
        Some(Ok(outcome)) if !outcome.notes.is_empty() => {
            format!("reverse proxy stopped ({})", outcome.notes.join("; "))
        }
        _ => "reverse proxy stopped".into(),
    }
}

impl Drop for RemoteProxies {
    fn drop(&mut self) {
        self.stop_all();
    }
}
