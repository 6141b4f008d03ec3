//! A frame as a rule's filter sees it in the proxy: the frame itself, and
//! for a response the request it answers (`request.method == "tools/list"`),
//! kept only while some rule asks for it.

use crate::filter::Subject;
use crate::filter::compile::Rel;
use crate::filter::records::EventSubject;
use crate::transport::event::Event;
use crate::wire::classify::Kind;
use crate::wire::frame::Frame;
use crate::wire::message::RequestId;
use std::collections::HashMap;
use std::time::Duration;

pub struct GateSubject<'a> {
    inner: EventSubject<'a>,
    request: Option<&'a Event>,
}

impl<'a> GateSubject<'a> {
    pub fn new(event: &'a Event, raw: &'a [u8], request: Option<&'a Event>) -> Self {
        GateSubject {
            inner: EventSubject::new(event, raw, "proxy", "stdio"),
            request,
        }
    }
}

impl Subject for GateSubject<'_> {
    fn dir(&self) -> &'static str {
        self.inner.dir()
    }
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    fn seq(&self) -> Option<u64> {
        self.inner.seq()
    }
    fn time(&self) -> Duration {
        self.inner.time()
    }
    fn raw(&self) -> &[u8] {
        self.inner.raw()
    }
    fn session(&self) -> Option<&str> {
        self.inner.session()
    }
    fn transport(&self) -> Option<&str> {
        self.inner.transport()
    }
    fn era(&self) -> Option<&str> {
        None
    }
    fn id(&self) -> Option<RequestId> {
        self.inner.id()
    }
    fn method(&self) -> Option<&str> {
        self.inner.method()
    }
    fn error_code(&self) -> Option<i64> {
        self.inner.error_code()
    }
    fn message(&self) -> Option<&str> {
        self.inner.message()
    }
    fn latency(&self) -> Option<Duration> {
        self.inner.latency()
    }
    fn pending(&self) -> bool {
        false
    }
    fn related(&self, rel: Rel) -> Option<Self> {
        match (rel, self.request) {
            (Rel::Request, Some(req)) => {
                let raw = match req {
                    Event::Frame(f) => f.raw.as_slice(),
                    _ => &[],
                };
                Some(GateSubject::new(req, raw, None))
            }
            _ => None,
        }
    }
    fn any_finding(&self, _: &mut dyn FnMut(&str, &str) -> bool) -> bool {
        false
    }
    fn conversation(&self) -> Option<u64> {
        None
    }
}

/// The requests still unanswered, by their recorded sequence number, for
/// rules that read `request.…` of a response.
#[derive(Default)]
pub struct Pending {
    requests: HashMap<u64, Event>,
}

/// More than this many unanswered requests: the oldest are forgotten (a
/// client that never gets answers must not grow the proxy without bound).
const MAX_PENDING: usize = 10_000;

impl Pending {
    pub fn note(&mut self, frame: &Frame) {
        if frame.class.kind == Kind::Request {
            if self.requests.len() >= MAX_PENDING
                && let Some(&oldest) = self.requests.keys().min()
            {
                self.requests.remove(&oldest);
            }
            self.requests.insert(frame.seq, Event::Frame(frame.clone()));
        }
    }

    /// The request `frame` answers, if it is a response to one noted.
    pub fn request_of(&self, frame: &Frame) -> Option<&Event> {
        self.requests.get(&frame.link.as_ref()?.request_seq)
    }

    pub fn answered(&mut self, frame: &Frame) {
        if let Some(link) = &frame.link {
            self.requests.remove(&link.request_seq);
        }
    }
}
