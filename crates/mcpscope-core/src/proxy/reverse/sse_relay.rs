//! How the proxy passes an upstream's SSE stream on, without the I/O.
//!
//! Each event is held until it ends, so that a gate can judge its messages
//! and an `endpoint` event can be pointed at the proxy, as long as it fits in
//! the in-memory cap ([`crate::wire::classify::Limits::max_held_line_bytes`]).
//! An event longer than that (or one that never ends) is passed on in pieces
//! as its bytes come, unjudged, and its data is recorded in pieces of the cap,
//! the way the client side records one: memory stays bounded and every byte
//! still reaches the client and the record.

use crate::wire::sse::{SseEvent, SseParser};

/// What to do with the bytes fed so far, in order.
#[derive(Debug, PartialEq)]
pub(super) enum Step {
    /// A whole event within the cap; `ended` is false when the stream ended
    /// before its blank line.
    Event { bytes: Vec<u8>, ended: bool },
    /// The event being read went past the cap: its bytes so far. The rest of
    /// it follows as [`Step::Pass`].
    Overlong(Vec<u8>),
    /// More bytes of an overlong event, to pass on as they are.
    Pass(Vec<u8>),
    /// Data of an overlong event, to record: a piece ([`SseEvent::cut`]) or its last part.
    Data(SseEvent),
}

pub(super) struct SseRelay {
    cap: usize,
    splitter: EventSplitter,
    /// The event being read, while it fits.
    held: Vec<u8>,
    /// The event being read went past the cap: its data, parsed as it passes.
    overlong: Option<SseParser>,
    /// The last data recorded was a piece: the next part must be recorded
    /// even if empty, or the record would say the event never ended.
    after_piece: bool,
}

impl SseRelay {
    pub(super) fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            splitter: EventSplitter::default(),
            held: Vec::new(),
            overlong: None,
            after_piece: false,
        }
    }

    /// Takes the next bytes of the stream.
    pub(super) fn feed<E>(&mut self, mut bytes: &[u8], out: &mut impl FnMut(Step) -> Result<(), E>) -> Result<(), E> {
        while !bytes.is_empty() {
            let end = self.splitter.next_end(bytes);
            let (part, rest) = bytes.split_at(end.unwrap_or(bytes.len()));
            self.take(part, out)?;
            if end.is_some() {
                self.event_ended(true, out)?;
            }
            bytes = rest;
        }
        Ok(())
    }

    /// The stream ended (or broke off): what is left of an event.
    pub(super) fn finish<E>(&mut self, out: &mut impl FnMut(Step) -> Result<(), E>) -> Result<(), E> {
        let ended = self.splitter.ended_at_cr();
        self.splitter = EventSplitter::default();
        if ended || !self.held.is_empty() || self.overlong.is_some() {
            self.event_ended(ended, out)?;
        }
        Ok(())
    }

    fn take<E>(&mut self, part: &[u8], out: &mut impl FnMut(Step) -> Result<(), E>) -> Result<(), E> {
        if part.is_empty() {
            return Ok(());
        }
        if let Some(parser) = self.overlong.as_mut() {
            let mut data = Vec::new();
            parser.feed(part, &mut |ev| data.push(ev));
            out(Step::Pass(part.to_vec()))?;
            return self.record(data, out);
        }
        self.held.extend_from_slice(part);
        if self.held.len() <= self.cap {
            return Ok(());
        }
        let held = std::mem::take(&mut self.held);
        let mut parser = SseParser::with_limit(self.cap);
        let mut data = Vec::new();
        parser.feed(&held, &mut |ev| data.push(ev));
        self.overlong = Some(parser);
        out(Step::Overlong(held))?;
        self.record(data, out)
    }

    fn event_ended<E>(&mut self, ended: bool, out: &mut impl FnMut(Step) -> Result<(), E>) -> Result<(), E> {
        match self.overlong.take() {
            Some(mut parser) => {
                let mut data = Vec::new();
                parser.finish(&mut |ev| data.push(ev));
                self.record(data, out)?;
                self.after_piece = false;
                Ok(())
            }
            None => out(Step::Event {
                bytes: std::mem::take(&mut self.held),
                ended,
            }),
        }
    }

    fn record<E>(&mut self, data: Vec<SseEvent>, out: &mut impl FnMut(Step) -> Result<(), E>) -> Result<(), E> {
        for ev in data {
            if ev.has_data() || self.after_piece {
                self.after_piece = ev.cut;
                out(Step::Data(ev))?;
            }
        }
        Ok(())
    }
}

/// Finds where SSE events end (after a blank line, in any line ending) in a
/// stream fed in parts, each byte looked at once: an event of 200 MB read 64
/// KiB at a time is searched once, not 3,000 times.
#[derive(Default)]
struct EventSplitter {
    /// The line being read has bytes from earlier parts.
    in_line: bool,
    /// The last part ended in the CR of a line that was not blank: a LF first
    /// in the next part belongs to it.
    after_cr: bool,
    /// The last part ended in the CR of a blank line: the event ends after
    /// it, or after the LF if one comes first in the next part.
    blank_cr: bool,
}

impl EventSplitter {
    /// Where the event being read ends in `bytes` (the stream's next bytes), if it does there.
    fn next_end(&mut self, bytes: &[u8]) -> Option<usize> {
        if std::mem::take(&mut self.blank_cr) {
            return Some(usize::from(bytes.first() == Some(&b'\n')));
        }
        let mut i = usize::from(std::mem::take(&mut self.after_cr) && bytes.first() == Some(&b'\n'));
        let mut line_start = i;
        let mut carried = self.in_line;
        while let Some(off) = memchr::memchr2(b'\n', b'\r', &bytes[i..]) {
            let at = i + off;
            let blank = !carried && at == line_start;
            let end = match bytes.get(at + 1) {
                _ if bytes[at] == b'\n' => at + 1,
                Some(b'\n') => at + 2,
                Some(_) => at + 1,
                // A CR last might be the first half of CRLF: the next part says.
                None => {
                    self.in_line = false;
                    if blank {
                        self.blank_cr = true;
                    } else {
                        self.after_cr = true;
                    }
                    return None;
                }
            };
            if blank {
                self.in_line = false;
                return Some(end);
            }
            carried = false;
            line_start = end;
            i = end;
        }
        self.in_line = carried || line_start < bytes.len();
        None
    }

    /// The stream ended right after the CR of a blank line: that ended an event.
    fn ended_at_cr(&self) -> bool {
        self.blank_cr
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::framing::LineEnding;

    fn event_end(bytes: &[u8]) -> Option<usize> {
        EventSplitter::default().next_end(bytes)
    }

    #[test]
    fn sse_events_end_at_a_blank_line_in_any_line_ending() {
        assert_eq!(event_end(b"data: a\n\nrest"), Some(9));
        assert_eq!(event_end(b"data: a\r\n\r\n"), Some(11));
        assert_eq!(event_end(b"data: a\r\rx"), Some(9));
        assert_eq!(event_end(b"data: a\n"), None);
        // A CR at the end might be the first half of CRLF.
        assert_eq!(event_end(b"data: a\r\n\r"), None);
        assert_eq!(event_end(b": keep-alive\n\n"), Some(14));
    }

    /// Where events end in a stream fed in parts of `piece` bytes.
    fn ends(stream: &[u8], piece: usize) -> Vec<usize> {
        let mut s = EventSplitter::default();
        let mut ends = Vec::new();
        let mut at = 0;
        for part in stream.chunks(piece) {
            let mut from = 0;
            while from < part.len() {
                match s.next_end(&part[from..]) {
                    Some(end) => {
                        from += end;
                        ends.push(at + from);
                    }
                    None => break,
                }
            }
            at += part.len();
        }
        if s.ended_at_cr() {
            ends.push(stream.len());
        }
        ends
    }

    /// Events found whole in one buffer, and the same bytes fed in pieces of every size.
    #[test]
    fn events_split_the_same_however_the_bytes_arrive() {
        let stream: &[u8] = b"data: a\n\nevent: x\r\ndata: b\r\n\r\n: c\r\rdata: d\ndata: e\n\n\r\n\ndata: tail";
        let whole = ends(stream, stream.len());
        assert_eq!(whole, [9, 30, 35, 52, 54, 55], "{whole:?}");
        for piece in 1..stream.len() {
            assert_eq!(ends(stream, piece), whole, "pieces of {piece}");
        }
        // A blank line's CR last in the stream ends its event.
        assert_eq!(ends(b"data: a\r\r", 3), [9]);
    }

    /// Runs a stream through a relay with the given cap, fed in parts of `piece` bytes.
    fn relay(stream: &[u8], cap: usize, piece: usize) -> Vec<Step> {
        let mut r = SseRelay::new(cap);
        let mut steps = Vec::new();
        let mut push = |s| {
            steps.push(s);
            Ok::<(), ()>(())
        };
        for part in stream.chunks(piece) {
            r.feed(part, &mut push).unwrap();
        }
        r.finish(&mut push).unwrap();
        steps
    }

    /// Every byte passed on, in order.
    fn passed(steps: &[Step]) -> Vec<u8> {
        steps
            .iter()
            .flat_map(|s| match s {
                Step::Event { bytes, .. } | Step::Overlong(bytes) | Step::Pass(bytes) => bytes.clone(),
                Step::Data(_) => Vec::new(),
            })
            .collect()
    }

    fn data(steps: &[Step]) -> Vec<(Vec<u8>, LineEnding)> {
        steps
            .iter()
            .filter_map(|s| match s {
                Step::Data(ev) => Some((ev.data.clone(), ev.ending())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn events_within_the_cap_go_whole_and_a_longer_one_in_pieces_with_every_byte() {
        let stream: &[u8] = b"data: {}\r\n\r\ndata: 0123456789abcdefghij\r\ndata: klm\r\n\r\nid: 2\ndata: []\n\n";
        for piece in 1..=stream.len() {
            let steps = relay(stream, 16, piece);
            assert_eq!(passed(&steps), stream, "pieces of {piece}");
            let whole: Vec<&Step> = steps.iter().filter(|s| matches!(s, Step::Event { .. })).collect();
            assert_eq!(
                whole,
                [
                    &Step::Event {
                        bytes: b"data: {}\r\n\r\n".to_vec(),
                        ended: true
                    },
                    &Step::Event {
                        bytes: b"id: 2\ndata: []\n\n".to_vec(),
                        ended: true
                    },
                ],
                "pieces of {piece}"
            );
            assert_eq!(steps.iter().filter(|s| matches!(s, Step::Overlong(_))).count(), 1);
            // The long event's data in pieces of the cap, the last one whole.
            assert_eq!(
                data(&steps),
                [
                    (b"0123456789abcdef".to_vec(), LineEnding::Cut),
                    (b"ghij\nklm".to_vec(), LineEnding::Lf),
                ],
                "pieces of {piece}"
            );
        }
    }

    #[test]
    fn an_event_that_never_ends_passes_with_bounded_memory_and_is_recorded_to_the_last_byte() {
        const CAP: usize = 1000;
        let mut r = SseRelay::new(CAP);
        let mut sent = 0;
        let mut recorded = Vec::new();
        let mut most_held = 0;
        let mut push = |s: Step| {
            match s {
                Step::Overlong(b) | Step::Pass(b) => sent += b.len(),
                Step::Data(ev) => recorded.push((ev.data.len(), ev.ending())),
                Step::Event { .. } => panic!("a whole event"),
            }
            Ok::<(), ()>(())
        };
        r.feed(b"data: ", &mut push).unwrap();
        for _ in 0..1000 {
            r.feed(&[b'x'; 99], &mut push).unwrap();
            most_held = most_held.max(r.held.capacity());
        }
        r.finish(&mut push).unwrap();
        assert_eq!(sent, 6 + 99_000);
        assert!(most_held <= 2 * CAP, "{most_held}");
        assert_eq!(recorded.len(), 99, "{recorded:?}");
        assert!(
            recorded[..98].iter().all(|p| *p == (CAP, LineEnding::Cut)),
            "{recorded:?}"
        );
        assert_eq!(recorded[98], (CAP, LineEnding::Eof));
    }

    #[test]
    fn a_stream_cut_inside_an_event_hands_it_over_unended() {
        let steps = relay(b"data: 1\n\ndata: 2", 64, 4);
        assert_eq!(
            steps.last(),
            Some(&Step::Event {
                bytes: b"data: 2".to_vec(),
                ended: false
            })
        );
        let steps = relay(b"data: 1\r\r", 64, 100);
        assert_eq!(
            steps,
            [Step::Event {
                bytes: b"data: 1\r\r".to_vec(),
                ended: true
            }]
        );
    }
}
