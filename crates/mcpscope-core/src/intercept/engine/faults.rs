//! Fault rules as the gate runs them: which rule acts on a frame (its
//! counts and the seeded dice), what its action does, and the frames it
//! sends later on its own (delays, reorders) or never (stalls).

use super::FaultView;
use super::LazySubject;
use super::answers::{Answer, answer_line, answer_line_for_id, replacement};
use super::dice::{Dice, corrupt};
use crate::intercept::rule::{FaultAction, FaultRule};
use crate::proxy::gate::{GateAction, wire_bytes};
use crate::transport::event::{Touch, TouchKind};
use crate::wire::classify::Kind;
use crate::wire::frame::{Direction, Frame};
use std::time::{Duration, Instant};

/// How long a `reorder` waits for the frame it swaps with.
pub const REORDER_WAIT: Duration = Duration::from_secs(2);

pub(super) struct RuleState {
    pub(super) rule: FaultRule,
    pub(super) matched: u64,
    pub(super) applied: u64,
}

impl RuleState {
    pub(super) fn new(rule: FaultRule) -> Self {
        RuleState {
            rule,
            matched: 0,
            applied: 0,
        }
    }
}

/// A frame the gate sends later on its own: a delay, or a reorder waiting
/// for the next frame.
struct Timed {
    at: Instant,
    direction: Direction,
    seq: u64,
    bytes: Vec<u8>,
    rule: String,
    why: Release,
}

#[derive(Clone, Copy, PartialEq)]
enum Release {
    Delay,
    /// Sent after the next frame going the same way, or at `at`.
    Reorder,
}

/// The fault rules, their dice, and the frames they keep for later.
pub(super) struct Faults {
    pub(super) rules: Vec<RuleState>,
    dice: Dice,
    timed: Vec<Timed>,
    /// Frames a `stall` holds for ever: (direction, seq, rule).
    stalled: Vec<(Direction, u64, String)>,
    /// HTTP can do `http-status` and `slow`; stdio cannot.
    pub(super) http: bool,
}

impl Faults {
    pub(super) fn new(rules: Vec<FaultRule>, seed: u64) -> Self {
        Faults {
            rules: rules.into_iter().map(RuleState::new).collect(),
            dice: Dice::new(seed),
            timed: Vec::new(),
            stalled: Vec::new(),
            http: false,
        }
    }

    /// Rules that cannot act over this transport, said once at the start.
    pub(super) fn warnings(&self) -> Vec<String> {
        self.rules
            .iter()
            .filter(|r| r.rule.action.http_only() && !self.http)
            .map(|r| {
                format!(
                    "{}: only the HTTP proxy can do this; over stdio the frame is forwarded",
                    r.rule.text()
                )
            })
            .collect()
    }

    pub(super) fn views(&self) -> Vec<FaultView> {
        self.rules
            .iter()
            .map(|s| FaultView {
                text: s.rule.text(),
                enabled: s.rule.enabled,
                matched: s.matched,
                applied: s.applied,
            })
            .collect()
    }

    /// Matches counted over every rule (a rule's count moves even when its
    /// counts or dice say not this time).
    pub(super) fn matched_total(&self) -> u64 {
        self.rules.iter().map(|s| s.matched).sum()
    }

    /// The first enabled rule that matches and whose counts and dice say act.
    pub(super) fn pick(&mut self, frame: &Frame, subject: &mut LazySubject<'_>) -> Option<usize> {
        for i in 0..self.rules.len() {
            let s = &mut self.rules[i];
            if !s.rule.enabled || !s.rule.filter.may_match_line(&frame.raw) || !subject.matches(frame, &s.rule.filter) {
                continue;
            }
            s.matched += 1;
            if !s.rule.modifiers.counts_allow(s.matched) {
                continue;
            }
            if let Some(p) = s.rule.modifiers.probability
                && self.dice.unit() >= p
            {
                continue;
            }
            self.rules[i].applied += 1;
            return Some(i);
        }
        None
    }

    /// Does rule `i`'s action to `frame`.
    pub(super) fn apply(&mut self, i: usize, frame: &Frame, now: Instant, out: &mut Vec<GateAction>) {
        let rule = self.rules[i].rule.text();
        let action = self.rules[i].rule.action.clone();
        let d = frame.direction;
        let seq = Some(frame.seq);
        let bytes = wire_bytes(frame);
        let touch = |kind: TouchKind, text: String| Touch::new(kind, d, seq, text).with_rule(Some(&rule));
        match action {
            FaultAction::Delay { min, max } => {
                let span = max.saturating_sub(min).as_micros() as u64;
                let wait = min + Duration::from_micros(self.dice.below(span + 1));
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    format!("delayed {}", crate::text::duration(wait)),
                )));
                self.timed.push(Timed {
                    at: now + wait,
                    direction: d,
                    seq: frame.seq,
                    bytes,
                    rule,
                    why: Release::Delay,
                });
            }
            FaultAction::Drop => out.push(GateAction::Record(touch(
                TouchKind::Dropped,
                "dropped by a fault rule".into(),
            ))),
            FaultAction::Duplicate => {
                out.push(GateAction::Send {
                    of_seq: seq,
                    toward: d,
                    bytes: bytes.clone(),
                });
                out.push(GateAction::Send {
                    of_seq: seq,
                    toward: d,
                    bytes: bytes.clone(),
                });
                out.push(GateAction::Record(
                    touch(TouchKind::Fault, "sent twice".into()).with_sent(bytes),
                ));
            }
            FaultAction::Reorder => {
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    "held back to go after the next frame the same way".into(),
                )));
                self.timed.push(Timed {
                    at: now + REORDER_WAIT,
                    direction: d,
                    seq: frame.seq,
                    bytes,
                    rule,
                    why: Release::Reorder,
                });
            }
            FaultAction::Corrupt(how) => {
                let (broken, said) = corrupt(&frame.raw, frame.ending.bytes(), how, &mut self.dice);
                out.push(GateAction::Send {
                    of_seq: seq,
                    toward: d,
                    bytes: broken.clone(),
                });
                out.push(GateAction::Record(touch(TouchKind::Edited, said).with_sent(broken)));
            }
            FaultAction::Replace(value) => {
                let line = replacement(&value, frame);
                out.push(GateAction::Send {
                    of_seq: seq,
                    toward: d,
                    bytes: line.clone(),
                });
                out.push(GateAction::Record(
                    touch(TouchKind::Edited, "replaced by a fault rule".into()).with_sent(line),
                ));
            }
            FaultAction::Error { code, message } => {
                let error = serde_json::json!({"error": {"code": code, "message": message}});
                match frame.class.kind {
                    Kind::Request => {
                        let line = answer_line(&frame.raw, &Answer::Json(error)).expect("a request has an id");
                        out.push(GateAction::Send {
                            of_seq: seq,
                            toward: d.opposite(),
                            bytes: line.clone(),
                        });
                        let other = if d == Direction::Out { "server" } else { "client" };
                        out.push(GateAction::Record(
                            touch(
                                TouchKind::Answered,
                                format!("answered with error {code}; the {other} never saw the request"),
                            )
                            .with_sent(line),
                        ));
                    }
                    Kind::Result | Kind::Error => {
                        let line = answer_line_for_id(&frame.raw, &Answer::Json(error));
                        out.push(GateAction::Send {
                            of_seq: seq,
                            toward: d,
                            bytes: line.clone(),
                        });
                        out.push(GateAction::Record(
                            touch(TouchKind::Edited, format!("the response replaced by error {code}")).with_sent(line),
                        ));
                    }
                    _ => {
                        out.push(GateAction::Send {
                            toward: d,
                            bytes,
                            of_seq: seq,
                        });
                        out.push(GateAction::Record(touch(
                            TouchKind::Fault,
                            "error: this frame has no id to answer; forwarded".into(),
                        )));
                    }
                }
            }
            FaultAction::Stall => {
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    "stalled: held for ever".into(),
                )));
                self.stalled.push((d, frame.seq, rule));
            }
            FaultAction::Disconnect => {
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    "disconnected both sides instead of sending it".into(),
                )));
                out.push(GateAction::Disconnect { of_seq: seq });
            }
            FaultAction::KillServer if self.http => {
                out.push(GateAction::Send {
                    toward: d,
                    bytes,
                    of_seq: seq,
                });
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    "the HTTP proxy runs no server to kill; forwarded".into(),
                )));
            }
            FaultAction::KillServer => {
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    "killed the server instead of sending it".into(),
                )));
                out.push(GateAction::KillServer);
            }
            FaultAction::HttpStatus { code, retry_after } if self.http => {
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    format!("answered the exchange with HTTP {code} instead"),
                )));
                out.push(GateAction::HttpStatus {
                    of_seq: frame.seq,
                    code,
                    retry_after,
                });
            }
            FaultAction::Slow { bytes_per_sec } if self.http => {
                out.push(GateAction::Send {
                    toward: d,
                    bytes,
                    of_seq: seq,
                });
                out.push(GateAction::Slow {
                    of_seq: frame.seq,
                    bytes_per_sec,
                });
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    format!("its exchange's answer sent at {bytes_per_sec} bytes a second"),
                )));
            }
            FaultAction::HttpStatus { .. } | FaultAction::Slow { .. } => {
                out.push(GateAction::Send {
                    toward: d,
                    bytes,
                    of_seq: seq,
                });
                out.push(GateAction::Record(touch(
                    TouchKind::Fault,
                    "only the HTTP proxy can do this; forwarded".into(),
                )));
            }
        }
    }

    /// After a frame went `direction`: a reorder waiting for it goes now.
    pub(super) fn release_reordered(&mut self, direction: Direction, after_seq: u64, out: &mut Vec<GateAction>) {
        let mut i = 0;
        while i < self.timed.len() {
            let t = &self.timed[i];
            if t.why == Release::Reorder && t.direction == direction && t.seq < after_seq {
                let t = self.timed.remove(i);
                out.push(GateAction::Send {
                    of_seq: Some(t.seq),
                    toward: t.direction,
                    bytes: t.bytes,
                });
                out.push(GateAction::Record(
                    Touch::new(
                        TouchKind::Forwarded,
                        t.direction,
                        Some(t.seq),
                        format!("sent after #{after_seq}"),
                    )
                    .with_rule(Some(&t.rule)),
                ));
            } else {
                i += 1;
            }
        }
    }

    /// Sends the delayed and reordered frames whose time has come.
    pub(super) fn release_due(&mut self, now: Instant, out: &mut Vec<GateAction>) {
        let mut i = 0;
        while i < self.timed.len() {
            if self.timed[i].at <= now {
                let t = self.timed.remove(i);
                let text = match t.why {
                    Release::Delay => "sent after its delay".to_owned(),
                    Release::Reorder => format!(
                        "sent: no other frame went the same way within {}",
                        crate::text::duration(REORDER_WAIT)
                    ),
                };
                out.push(GateAction::Send {
                    of_seq: Some(t.seq),
                    toward: t.direction,
                    bytes: t.bytes,
                });
                out.push(GateAction::Record(
                    Touch::new(TouchKind::Forwarded, t.direction, Some(t.seq), text).with_rule(Some(&t.rule)),
                ));
            } else {
                i += 1;
            }
        }
    }

    pub(super) fn next_due(&self) -> Option<Instant> {
        self.timed.iter().map(|t| t.at).min()
    }

    /// The session ended: what the rules still kept is recorded as never sent.
    pub(super) fn end(&mut self, ended: &str, out: &mut Vec<GateAction>) {
        for t in std::mem::take(&mut self.timed) {
            out.push(GateAction::Record(
                Touch::new(TouchKind::Dropped, t.direction, Some(t.seq), ended).with_rule(Some(&t.rule)),
            ));
        }
        for (d, seq, rule) in std::mem::take(&mut self.stalled) {
            out.push(GateAction::Record(
                Touch::new(TouchKind::Dropped, d, Some(seq), "stalled until the session ended").with_rule(Some(&rule)),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Interceptor;
    use super::super::test_support::{CALL, LIST, frame, gate, sends, touches};
    use super::*;
    use crate::intercept::rule::parse_fault;
    use crate::proxy::gate::Gate;
    use crate::wire::classify::Limits;
    use crate::wire::framing::{LineEnding, RawLine};
    use serde_json::Value;

    #[test]
    fn delay_drop_duplicate_and_stall() {
        let t0 = Instant::now();
        let (mut g, _) = gate(&[r#"method == "tools/list" => delay 2s"#], &[]);
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, LIST), t0, &mut out);
        assert!(sends(&out).is_empty());
        g.tick(t0 + Duration::from_millis(1999), &mut out);
        assert!(sends(&out).is_empty());
        g.tick(t0 + Duration::from_secs(2), &mut out);
        assert_eq!(sends(&out).len(), 1);
        assert_eq!(touches(&out), [TouchKind::Fault, TouchKind::Forwarded]);

        let (mut g, _) = gate(&[r#"method == "tools/list" => drop"#], &[]);
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, LIST), t0, &mut out);
        assert!(sends(&out).is_empty());
        assert_eq!(touches(&out), [TouchKind::Dropped]);

        let (mut g, _) = gate(&[r#"method == "tools/list" => duplicate"#], &[]);
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, LIST), t0, &mut out);
        assert_eq!(sends(&out).len(), 2);

        let (mut g, _) = gate(&[r#"method == "tools/list" => stall"#], &[]);
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, LIST), t0, &mut out);
        assert!(sends(&out).is_empty());
        assert_eq!(g.next_wake(), None, "held for ever");
        out.clear();
        g.closing(t0, &mut out);
        assert_eq!(touches(&out), [TouchKind::Dropped]);
    }

    #[test]
    fn reorder_swaps_with_the_next_frame_the_same_way() {
        let t0 = Instant::now();
        let (mut g, _) = gate(&[r#"id == 7 => reorder"#], &[]);
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, CALL), t0, &mut out);
        g.arrived(
            &frame(1, Direction::In, r#"{"jsonrpc":"2.0","method":"x"}"#),
            t0,
            &mut out,
        );
        g.arrived(&frame(2, Direction::Out, LIST), t0, &mut out);
        let s: Vec<String> = sends(&out).into_iter().map(|(_, t)| t).collect();
        assert!(s[0].contains("\"x\""));
        assert!(s[1].contains("tools/list"), "the next frame the same way first: {s:?}");
        assert!(s[2].contains("tools/call"));
    }

    #[test]
    fn error_answers_a_request_and_replaces_a_response() {
        let t0 = Instant::now();
        let (mut g, _) = gate(
            &[
                r#"method == "tools/call" => error -32603 "boom""#,
                r#"kind == "result" => error 1"#,
            ],
            &[],
        );
        let mut out = Vec::new();
        g.arrived(&frame(0, Direction::Out, CALL), t0, &mut out);
        let s = sends(&out);
        assert_eq!(s[0].0, Direction::In);
        let v: Value = serde_json::from_str(&s[0].1).unwrap();
        assert_eq!(
            (v["id"].clone(), v["error"]["code"].clone()),
            (7.into(), (-32603).into())
        );
        out.clear();
        g.arrived(
            &frame(1, Direction::In, r#"{"jsonrpc":"2.0","id":8,"result":{}}"#),
            t0,
            &mut out,
        );
        let s = sends(&out);
        assert_eq!(s[0].0, Direction::In);
        let v: Value = serde_json::from_str(&s[0].1).unwrap();
        assert_eq!((v["id"].clone(), v["error"]["code"].clone()), (8.into(), 1.into()));
        assert_eq!(touches(&out), [TouchKind::Edited]);
    }

    #[test]
    fn replace_keeps_the_frames_id() {
        let t0 = Instant::now();
        let (mut g, _) = gate(
            &[r#"kind == "result" => replace {"jsonrpc":"2.0","result":{"tools":[]}}"#],
            &[],
        );
        let mut out = Vec::new();
        g.arrived(
            &frame(3, Direction::In, r#"{"jsonrpc":"2.0","id":"a","result":{"tools":[1]}}"#),
            t0,
            &mut out,
        );
        let v: Value = serde_json::from_str(&sends(&out)[0].1).unwrap();
        assert_eq!(v, serde_json::json!({"jsonrpc":"2.0","result":{"tools":[]},"id":"a"}));
    }

    #[test]
    fn modifiers_and_the_seed_make_runs_repeatable() {
        let run = |seed: u64| {
            let (mut g, h) = Interceptor::new(vec![parse_fault("true => drop p=0.5").unwrap()], vec![], seed);
            let mut out = Vec::new();
            for i in 0..40 {
                g.arrived(&frame(i, Direction::Out, LIST), Instant::now(), &mut out);
            }
            (sends(&out).len(), h.board().faults[0].applied)
        };
        let (a, dropped) = run(9);
        assert_eq!(run(9), (a, dropped), "same seed, same dice");
        assert_eq!(a as u64 + dropped, 40);
        assert!((8..=32).contains(&dropped), "about half: {dropped}");
        let (mut g, h) = gate(&[r#"true => drop first 2"#], &[]);
        let mut out = Vec::new();
        for i in 0..4 {
            g.arrived(&frame(i, Direction::Out, LIST), Instant::now(), &mut out);
        }
        assert_eq!(sends(&out).len(), 2);
        assert_eq!((h.board().faults[0].matched, h.board().faults[0].applied), (4, 2));
    }

    #[test]
    fn a_rule_can_name_a_responses_request() {
        let mut rec = crate::transport::recorder::Recorder::replay(Limits::default());
        let mut line = |d: Direction, t: &str| {
            rec.frame_at(
                d,
                RawLine {
                    bytes: t.as_bytes().to_vec(),
                    ending: LineEnding::Lf,
                },
                Duration::ZERO,
                None,
            )
        };
        let (mut g, h) = gate(
            &[r#"request.method == "tools/list" => replace {"jsonrpc":"2.0","result":{"tools":[]}}"#],
            &[],
        );
        let mut out = Vec::new();
        let t0 = Instant::now();
        g.arrived(&line(Direction::Out, LIST), t0, &mut out);
        g.arrived(&line(Direction::Out, CALL), t0, &mut out);
        g.arrived(
            &line(Direction::In, r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#),
            t0,
            &mut out,
        );
        g.arrived(
            &line(
                Direction::In,
                r#"{"jsonrpc":"2.0","id":8,"result":{"tools":[{"name":"a"}]}}"#,
            ),
            t0,
            &mut out,
        );
        let s = sends(&out);
        assert!(s[2].1.contains("\"content\""), "the call's answer untouched");
        assert_eq!(s[3].1, "{\"jsonrpc\":\"2.0\",\"result\":{\"tools\":[]},\"id\":8}\n");
        assert_eq!(h.board().faults[0].applied, 1);
    }

    #[test]
    fn http_only_actions_are_named_over_stdio() {
        let (g, h) = gate(&[r#"true => http-status 503"#], &[]);
        assert_eq!(g.warnings().len(), 1);
        drop(g);
        let _ = h;
    }
}
