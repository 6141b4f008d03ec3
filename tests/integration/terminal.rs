//! Issue #26 item 14: what a peer writes never reaches the user's terminal
//! as control sequences (a hostile server retitling, clearing or forging
//! it): error messages, the server's stderr, `--trace` and the doctor's report.

use crate::support::*;

fn hostile() -> Vec<String> {
    vec![
        "python3".into(),
        repo().join("tests/servers/hostile_server.py").display().to_string(),
        "--mode".into(),
        "escapes".into(),
    ]
}

/// No ESC, BEL or C1 CSI byte; the sequence shown escaped instead.
fn assert_safe(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !bytes.contains(&0x1b),
        "{what}: an ESC byte reached the terminal:\n{text}"
    );
    assert!(!bytes.contains(&0x07), "{what}: a BEL byte:\n{text}");
    assert!(!text.contains('\u{9b}'), "{what}: a C1 CSI:\n{text}");
}

#[test]
fn a_hostile_servers_escape_sequences_are_shown_not_obeyed() {
    let mut call = vec![
        "call",
        "--trace",
        "--method",
        "tools/call",
        "--params",
        r#"{"name":"x"}"#,
        "--",
    ];
    let server = hostile();
    call.extend(server.iter().map(String::as_str));
    let out = crate::support::mcpscope_command().args(&call).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a JSON-RPC error: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_safe("call's stderr", &out.stderr);
    assert_safe("call's stdout", &out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("failed \\u{1b}]0;pwned\\u{7}"),
        "the message shown escaped: {err}"
    );
    assert!(
        err.contains("stderr says \\u{1b}"),
        "the server's stderr in --trace, escaped: {err}"
    );

    let mut doctor = vec!["doctor", "--"];
    doctor.extend(server.iter().map(String::as_str));
    let out = crate::support::mcpscope_command().args(&doctor).output().unwrap();
    assert_safe("doctor's report", &out.stdout);
    assert_safe("doctor's stderr", &out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("starting \\u{1b}]0;pwned"),
        "the stderr tail in the report: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// #26 item 12: a result serde_json cannot read as a value is printed as
/// the server sent it, with the reason, and exit 5 (it was `null`, exit 0).
#[test]
fn an_unreadable_result_is_printed_as_sent() {
    for (name, expected, why) in [
        ("deep", format!("{}{}", "[".repeat(10000), "]".repeat(10000)), "deeper"),
        ("big", r#"{"n":1e400}"#.to_owned(), "out of range"),
        ("surrogate", r#"{"s":"\ud800"}"#.to_owned(), "surrogate"),
    ] {
        let params = format!(r#"{{"name":"{name}"}}"#);
        let server = repo().join("tests/servers/hostile_server.py").display().to_string();
        let out = crate::support::mcpscope_command()
            .args([
                "call",
                "--method",
                "tools/call",
                "--params",
                &params,
                "--",
                "python3",
                &server,
                "--mode",
                "unreadable",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{name}: {err}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim_end(),
            expected,
            "{name}: printed as sent"
        );
        assert!(err.contains(why), "{name}: {err}");
    }
}
