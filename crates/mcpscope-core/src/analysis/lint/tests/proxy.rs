//! What the proxy did to a session (its touches) explains what would
//! otherwise be a finding.

use super::*;

fn touch(kind: crate::transport::event::TouchKind, of_seq: u64, rule: &str) -> Event {
    let mut t =
        crate::transport::event::Touch::new(kind, Direction::Out, Some(of_seq), "by a test").with_rule(Some(rule));
    t.at = Duration::from_millis(50);
    Event::Touch(Box::new(t))
}

#[test]
fn a_request_the_proxy_dropped_or_answered_is_explained_not_unanswered() {
    use crate::transport::event::TouchKind;
    for kind in [TouchKind::Dropped, TouchKind::Answered] {
        let mut s = clean();
        s.out(TOOLS_LIST)
            .event(touch(kind, 3, r#"method == "tools/list" => drop"#));
        assert!(
            !s.rules().contains(&rule::UNANSWERED_REQUEST),
            "{kind:?}: {:?}",
            s.rules()
        );
        let f = s.find(rule::PROXY_CHANGED);
        assert_eq!(f.seqs, [3]);
        assert_eq!(f.severity, Severity::Info);
        assert!(f.message.contains("never"), "{}", f.message);
    }
    // A delay is no reason: the request still needed its answer.
    let mut s = clean();
    s.out(TOOLS_LIST)
        .event(touch(TouchKind::Fault, 3, r#"method == "tools/list" => delay 1s"#));
    assert!(s.rules().contains(&rule::UNANSWERED_REQUEST), "{:?}", s.rules());
}

#[test]
fn a_server_the_proxy_killed_did_not_crash() {
    use crate::transport::event::TouchKind;
    let exited = Event::Exited {
        at: Duration::from_millis(60),
        status: ExitInfo {
            code: None,
            signal: Some(9),
        },
    };
    let mut s = clean();
    s.out(TOOLS_LIST)
        .event(touch(TouchKind::Fault, 3, r#"method == "tools/list" => kill-server"#))
        .event(exited.clone());
    assert!(!s.rules().contains(&rule::EXITED_DURING_REQUEST), "{:?}", s.rules());
    assert!(!s.rules().contains(&rule::UNANSWERED_REQUEST), "{:?}", s.rules());
    // Without the proxy's rule, the same exit is a crash.
    let mut s = clean();
    s.out(TOOLS_LIST).event(exited);
    assert!(s.rules().contains(&rule::EXITED_DURING_REQUEST), "{:?}", s.rules());
}
