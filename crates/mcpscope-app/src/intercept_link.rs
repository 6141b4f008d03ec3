//! The app's end of a proxy's intercept control socket: one worker watches
//! the board (held frames, breakpoints, rules) and another sends the
//! user's commands, so the UI thread never waits on the socket.

use crate::job::{Feed, Feeder, Wake};
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
    /// The last command's answer.
    pub said: Option<Result<String, String>>,
    /// Why the link is down, if it is.
    pub lost: Option<String>,
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
            said: None,
            lost: None,
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
