//! The app's end of a proxy's intercept control socket: one worker watches
//! the board (held frames, breakpoints, rules) and another sends the
//! user's commands, so the UI thread never waits on the socket.

use crate::job::{Feed, Feeder, Wake};
use crate::saved_server::SavedServer;
use crossbeam_channel::{Receiver, Sender, bounded};
use mcpscope_core::intercept::control::{BoardView, ControlClient};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the workers report.
#[derive(Debug)]
pub enum LinkMsg {
    Board(Box<BoardView>),
    /// How a command went: what the proxy said, or why it refused.
    Reply(Result<String, String>),
    /// The socket cannot be reached or closed.
    Lost(String),
}

pub struct InterceptLink {
    pub socket: PathBuf,
    pub board: BoardView,
    /// When `board` came: its held and time-out figures were measured then,
    /// and the tab counts on from it.
    pub board_at: std::time::Instant,
    /// The last command's answer.
    pub said: Option<Result<String, String>>,
    /// Why the link is down, if it is.
    pub lost: Option<String>,
    /// For a session the app launched through the proxy: the proxy's own
    /// capture (what it did, with both versions of what it changed).
    pub record: Option<PathBuf>,
    watch: Feed<LinkMsg>,
    commands: Sender<Value>,
    replies: Feed<LinkMsg>,
}

impl InterceptLink {
    pub fn start(socket: &Path, wake: Option<Wake>) -> InterceptLink {
        let path = socket.to_owned();
        let watch = Feed::spawn_detached("intercept-watch", 16, wake.clone(), move |feed| watch(&path, &feed));
        let (tx, rx) = bounded::<Value>(64);
        let path = socket.to_owned();
        let replies = Feed::spawn_detached("intercept-send", 64, wake, move |feed| send(&path, &rx, &feed));
        InterceptLink {
            socket: socket.to_owned(),
            board: BoardView::default(),
            board_at: std::time::Instant::now(),
            said: None,
            lost: None,
            record: None,
            watch,
            commands: tx,
            replies,
        }
    }

    /// Sends a request (`{"op": …}`) to the proxy; its answer arrives later.
    pub fn send(&mut self, request: Value) {
        if self.commands.try_send(request).is_err() {
            self.said = Some(Err("too many commands waiting for the proxy".into()));
        }
    }

    /// Takes what the workers reported; whether anything changed.
    pub fn drain(&mut self) -> bool {
        let mut changed = false;
        while let Some(msg) = self.watch.try_recv().or_else(|| self.replies.try_recv()) {
            changed = true;
            match msg {
                LinkMsg::Board(b) => {
                    self.board = *b;
                    self.board_at = std::time::Instant::now();
                    self.lost = None;
                }
                LinkMsg::Reply(r) => self.said = Some(r),
                LinkMsg::Lost(why) => self.lost = Some(why),
            }
        }
        changed
    }
}

/// How long a proxy the app just started may take to open its socket.
const STARTING: Duration = Duration::from_secs(15);

fn watch(path: &Path, feed: &Feeder<LinkMsg>) {
    let started = std::time::Instant::now();
    let mut client = loop {
        match ControlClient::connect(path).and_then(|mut c| {
            c.watch_polled(Duration::from_millis(200))?;
            Ok(c)
        }) {
            Ok(c) => break c,
            Err(_) if started.elapsed() < STARTING && !feed.stopped() => feed.pause(Duration::from_millis(100)),
            Err(e) => {
                feed.send(LinkMsg::Lost(format!("cannot reach {}: {e}", path.display())));
                return;
            }
        }
    };
    while !feed.stopped() {
        match client.poll_board() {
            Ok(Some(board)) => {
                let closed = board.closed;
                if !feed.send(LinkMsg::Board(Box::new(board))) || closed {
                    return;
                }
            }
            Ok(None) => {}
            Err(e) => {
                feed.send(LinkMsg::Lost(format!("the proxy's control socket: {e}")));
                return;
            }
        }
    }
}

fn send(path: &Path, rx: &Receiver<Value>, feed: &Feeder<LinkMsg>) {
    let mut client: Option<ControlClient> = None;
    while !feed.stopped() {
        let Ok(request) = rx.recv_timeout(Duration::from_millis(200)) else {
            continue;
        };
        if client.is_none() {
            client = ControlClient::connect(path).ok();
        }
        let reply = match client.as_mut().map(|c| c.request(&request)) {
            Some(Ok(v)) if v["ok"] == true => Ok(v["said"].as_str().unwrap_or("done").to_owned()),
            Some(Ok(v)) => Err(v["error"].as_str().unwrap_or("refused").to_owned()),
            Some(Err(e)) => {
                client = None;
                Err(format!("the proxy did not answer: {e}"))
            }
            None => Err(format!("cannot reach {}", path.display())),
        };
        if !feed.send(LinkMsg::Reply(reply)) {
            return;
        }
    }
}

/// An HTTP server launched from the app with Intercept on: the reverse
/// proxy (with its gate and control socket) the session goes through, run
/// in this process for as long as the session's tab keeps it.
pub struct OwnProxy {
    stopper: mcpscope_core::proxy::reverse::Stopper,
    thread: Option<std::thread::JoinHandle<mcpscope_core::proxy::reverse::ReverseOutcome>>,
    _control: mcpscope_core::intercept::control::ControlServer,
    /// The proxy's own record: what it changed, both versions.
    pub capture: PathBuf,
}

impl OwnProxy {
    /// Starts it in front of `upstream` with these breakpoints (`--break`
    /// form) and fault rules; returns it and the URL to use instead.
    pub fn start(
        upstream: &str,
        socket: &Path,
        capture: PathBuf,
        breaks: &[String],
        faults: &[String],
    ) -> anyhow::Result<(OwnProxy, String)> {
        use mcpscope_core::intercept::Interceptor;
        use mcpscope_core::intercept::control::ControlServer;
        use mcpscope_core::intercept::rule::{parse_breakpoint, parse_fault};
        use mcpscope_core::proxy::reverse::{ReverseProxy, ReverseProxyOptions};
        let mut options = ReverseProxyOptions::new("127.0.0.1:0", upstream)?;
        options.capture = Some(capture.clone());
        options.control_socket = Some(socket.to_owned());
        let breaks = breaks
            .iter()
            .map(|b| parse_breakpoint(b, Some(BREAK_TIMEOUT)).map_err(|e| anyhow::anyhow!("breakpoint {b:?}: {e}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let faults = faults
            .iter()
            .map(|f| parse_fault(f).map_err(|e| anyhow::anyhow!("fault rule {f:?}: {e}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let (gate, handle) = Interceptor::new(faults, breaks, Interceptor::fresh_seed());
        let control = ControlServer::start(socket, handle)
            .map_err(|e| anyhow::anyhow!("cannot open the control socket {}: {e}", socket.display()))?;
        let proxy = ReverseProxy::bind(options)?.with_gate(Box::new(gate.over_http()));
        // The same path and query on the proxy (the options checked the URL).
        let after_scheme = upstream.split_once("://").map_or(upstream, |(_, rest)| rest);
        let path = after_scheme.find(['/', '?']).map_or("/", |i| &after_scheme[i..]);
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_owned()
        };
        let local = format!("http://{}{path}", proxy.local_addr());
        let stopper = proxy.stopper();
        let thread = std::thread::Builder::new()
            .name("mcpscope-own-proxy".into())
            .spawn(move || proxy.serve(|| "its session's tab let go of it".into()))?;
        Ok((
            OwnProxy {
                stopper,
                thread: Some(thread),
                _control: control,
                capture,
            },
            local,
        ))
    }
}

impl Drop for OwnProxy {
    fn drop(&mut self) {
        self.stopper.stop();
        // Its exchanges end within a poll; the UI thread does not wait for them.
        if let Some(t) = self.thread.take() {
            crate::job::detach("own-proxy-end", move || {
                let _ = t.join();
            });
        }
    }
}

/// A session launched with Intercept on goes through a proxy.
pub struct Intercepted {
    pub target: mcpscope_core::transport::target::Target,
    pub socket: std::path::PathBuf,
    pub own_proxy: Option<OwnProxy>,
    /// The proxy's own capture.
    pub record: std::path::PathBuf,
}

/// For a server launched with Intercept on: what the session reaches
/// instead (stdio: `mcpscope proxy` running the server; HTTP: a reverse
/// proxy in this process in front of it), where the control socket is,
/// and the in-process proxy to keep.
/// A breakpoint brought back holds a frame this long at most, as
/// `mcpscope proxy`'s own default (`--break-timeout`).
const BREAK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The enabled breakpoints (in `--break` form) and fault rules of a board:
/// what an intercepted session starts its proxy with again.
pub fn rules_of(board: &BoardView) -> (Vec<String>, Vec<String>) {
    let on = |rules: &[mcpscope_core::intercept::control::RuleView]| -> Vec<String> {
        rules.iter().filter(|r| r.enabled).map(|r| r.text.clone()).collect()
    };
    let breaks = on(&board.breakpoints)
        .iter()
        .map(|b| mcpscope_core::intercept::rule::break_flag(b))
        .collect();
    (breaks, on(&board.faults))
}

/// `saved` with the breakpoints and fault rules its intercepted session
/// has now on its `link` (set in the Intercept tab), so that starting it again brings them back.
pub fn with_live_rules(mut saved: SavedServer, link: Option<&InterceptLink>) -> SavedServer {
    if let Some(link) = link.filter(|_| saved.intercept) {
        (saved.intercept_breaks, saved.intercept_faults) = rules_of(&link.board);
    }
    saved
}

pub fn through_proxy(saved: &SavedServer, mcpscope_binary: Option<&str>) -> anyhow::Result<Option<Intercepted>> {
    use mcpscope_core::transport::target::Target;
    if !saved.intercept {
        return Ok(None);
    }
    static LAUNCHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = LAUNCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("app-{}-{n}", std::process::id());
    let dir = mcpscope_core::intercept::control::sockets_dir()?;
    let socket = mcpscope_core::intercept::control::named_socket_path(&dir, &name).map_err(anyhow::Error::msg)?;
    // The proxy's own record (what it changed, with both versions) goes
    // next to the app's captures.
    let proxy_capture = mcpscope_core::record::private_files::new_capture_file()?;
    match saved.target() {
        Target::Stdio(spec) => {
            let me = mcpscope_binary
                .map(str::to_owned)
                .map_or_else(crate::panels::watch_client::this_binary, Ok)?;
            let mut args = vec![
                "proxy".to_owned(),
                "--intercept".into(),
                "--control-name".into(),
                name,
                "--capture".into(),
                proxy_capture.display().to_string(),
            ];
            for b in &saved.intercept_breaks {
                args.extend(["--break".to_owned(), b.clone()]);
            }
            for f in &saved.intercept_faults {
                args.extend(["--fault".to_owned(), f.clone()]);
            }
            args.extend(["--".to_owned(), spec.program.clone()]);
            args.extend(spec.args.iter().cloned());
            let wrapped = mcpscope_core::transport::process::ServerSpec {
                program: me,
                args,
                env: spec.env.clone(),
                cwd: spec.cwd.clone(),
            };
            Ok(Some(Intercepted {
                target: Target::Stdio(wrapped),
                socket,
                own_proxy: None,
                record: proxy_capture,
            }))
        }
        Target::Http(http) => {
            let (proxy, local) = OwnProxy::start(
                &http.url,
                &socket,
                proxy_capture.clone(),
                &saved.intercept_breaks,
                &saved.intercept_faults,
            )?;
            let through = mcpscope_core::transport::target::HttpTarget { url: local, ..http };
            Ok(Some(Intercepted {
                target: Target::Http(through),
                socket,
                own_proxy: Some(proxy),
                record: proxy_capture,
            }))
        }
    }
}
