//! Replay: a capture served again as a mock server.
//!
//! - [`index`]: what one recorded session offers (exchanges, server frames);
//! - [`matcher`]: which recorded exchange answers a live request;
//! - [`mock`]: the mock as a state machine, with no I/O of its own;
//! - [`http`]: the mock served over Streamable HTTP;
//! - [`auth`]: with `--auth`, its own authorization server and the endpoint's gate.
//!
//! [`load`] reads a capture with the ordinary loader and picks the session
//! to serve; [`Check`] says what can be served and why the rest cannot.

pub mod auth;
pub mod http;
pub mod index;
pub mod matcher;
pub mod mock;

use crate::record::capture::{self, Header};
use index::{Answer, Index};
use std::collections::BTreeMap;
use std::path::Path;

/// Why a capture cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file cannot be read, or is not a capture.
    #[error(transparent)]
    Unreadable(#[from] capture::CaptureError),
    /// The capture holds no frames at all.
    #[error("the capture holds no exchanges to serve")]
    Empty,
    /// `--session N` beyond the sessions in the file.
    #[error("there is no session {asked}: the capture has {sessions} session(s)")]
    NoSuchSession { asked: usize, sessions: usize },
}

/// One session of a capture, indexed for serving.
#[derive(Debug)]
pub struct Loaded {
    pub index: Index,
    /// 1-based, as people count sessions.
    pub session: usize,
    pub sessions: usize,
    pub header: Header,
    /// Lines of the file that could not be read (a capture cut short by a crash).
    pub warnings: Vec<String>,
}

/// Reads `path` and indexes session `session` (1-based), or by default the
/// last session that has a server answer (a client restarted by its host
/// appends sessions; the last one that got somewhere is the one wanted).
///
/// The capture is indexed as it is read: its events are not kept, only the
/// chosen session's exchanges.
pub fn load(path: &Path, session: Option<usize>) -> Result<Loaded, LoadError> {
    let unreadable = capture::CaptureError::read;
    let file = crate::record::private_files::open_regular(path).map_err(capture::CaptureError::open(path))?;
    let mut reader = capture::EventReader::new(std::io::BufReader::with_capacity(capture::READ_BUFFER, file))
        .map_err(unreadable(path))?;
    let mut warnings = Vec::new();
    let mut current = (1usize, reader.header().clone(), index::Builder::default());
    let mut chosen: Option<(usize, Header, Index)> = None;
    let take = |(n, header, builder): (usize, Header, index::Builder), chosen: &mut Option<(usize, Header, Index)>| {
        let wanted = match session {
            Some(s) => s == n,
            // A session without answers is kept only while nothing better is known.
            None => builder.has_answers() || chosen.as_ref().is_none_or(|c| c.2.servable_count() == 0),
        };
        if wanted {
            *chosen = Some((n, header, builder.finish()));
        }
    };
    while let Some(item) = reader.next_item().map_err(unreadable(path))? {
        match item {
            capture::Item::Event(e) => current.2.push(&e),
            capture::Item::Warning(w) => warnings.push(w),
            capture::Item::Boundary(h, _) => {
                let next = (current.0 + 1, *h, index::Builder::default());
                take(std::mem::replace(&mut current, next), &mut chosen);
            }
        }
    }
    let sessions = current.0;
    take(current, &mut chosen);
    let (n, header, index) = match (session, chosen) {
        (Some(asked), None) => return Err(LoadError::NoSuchSession { asked, sessions }),
        (_, Some(c)) => c,
        (None, None) => return Err(LoadError::Empty),
    };
    if index.exchanges.is_empty() && index.unservable.is_empty() {
        return Err(LoadError::Empty);
    }
    Ok(Loaded {
        index,
        session: n,
        sessions,
        header,
        warnings,
    })
}

/// What `mock --check` reports.
#[derive(Debug, Default, PartialEq)]
pub struct Check {
    /// Servable exchanges per method, in method order.
    pub servable: BTreeMap<String, usize>,
    /// Server frames replayed within exchanges, per method.
    pub server_frames: BTreeMap<String, usize>,
    /// (seq, what, why) for everything that cannot be served.
    pub not_servable: Vec<(u64, String, String)>,
}

impl Check {
    pub fn of(index: &Index) -> Check {
        let mut c = Check::default();
        for e in &index.exchanges {
            for f in e.during.iter().chain(&e.after) {
                *c.server_frames.entry(f.method.clone()).or_default() += 1;
            }
            match &e.answer {
                Answer::Recorded { .. } => *c.servable.entry(e.method.clone()).or_default() += 1,
                Answer::Never => {
                    c.not_servable
                        .push((e.seq, e.method.clone(), "never answered in the recording".into()))
                }
                Answer::Cut { bytes, pieces } => c.not_servable.push((
                    e.seq,
                    e.method.clone(),
                    format!("answered with {bytes} bytes in {pieces} pieces, over the line cap"),
                )),
            }
        }
        for f in &index.prelude {
            *c.server_frames.entry(f.method.clone()).or_default() += 1;
        }
        for u in &index.unservable {
            c.not_servable.push((u.seq, u.what.clone(), u.why.clone()));
        }
        c.not_servable.sort_by_key(|x| x.0);
        c
    }

    pub fn servable_total(&self) -> usize {
        self.servable.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::replay::Replay;
    use crate::wire::frame::Direction::{In, Out};

    #[test]
    fn check_counts_what_can_and_cannot_be_served() {
        let r = Replay::of(&[
            (Out, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            (In, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            (Out, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#),
            (In, r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#),
            (In, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#),
            (In, "a log line on stdout"),
            (Out, r#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#),
        ]);
        let c = Check::of(&Index::build(r.events()));
        assert_eq!(c.servable.get("tools/list"), Some(&2));
        assert_eq!(c.servable_total(), 2);
        assert_eq!(c.server_frames.get("notifications/message"), Some(&1));
        assert_eq!(c.not_servable.len(), 2);
        assert!(c.not_servable[0].2.contains("not JSON"));
        assert!(c.not_servable[1].2.contains("never answered"));
    }
}
