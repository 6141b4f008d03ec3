use super::*;
use crate::filter::Filter;
use crate::filter::records;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;

const HEADER: &str = r#"{"format":"mcpscope-capture","version":1,"mcpscope":"0.1.0","mode":"session","started_unix_ms":1764700000000,"command_line":"python3 server.py","program":"python3","args":["server.py"],"cwd":null,"env_keys":[]}"#;
const HTTP_HEADER: &str = r#"{"format":"mcpscope-capture","version":1,"mcpscope":"0.1.0","mode":"session","started_unix_ms":1764700005000,"command_line":"http://127.0.0.1:8000/mcp (Streamable HTTP)","program":"","args":[],"cwd":null,"env_keys":[],"transport":"http","url":"http://127.0.0.1:8000/mcp","header_keys":[]}"#;

/// A capture line for a frame.
fn frame(t_us: u64, dir: &str, raw: &str) -> String {
    serde_json::json!({"t_us": t_us, "dir": dir, "raw": raw, "eol": "lf"}).to_string()
}

fn write(lines: &[String]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    f.flush().unwrap();
    f
}

fn stats(path: &Path, filter: Option<&str>, series: &[&str], interval: Duration) -> Report {
    let filter = filter.map(|e| Filter::parse(e).unwrap());
    let series_filters: Vec<Filter> = series.iter().map(|e| Filter::parse(e).unwrap()).collect();
    let options = StatsOptions {
        interval,
        series: series.iter().map(|s| (*s).to_owned()).collect(),
        expert: true,
        context: true,
        traffic: true,
    };
    capture::run(path, &options, filter.as_ref(), &series_filters)
        .unwrap()
        .0
}

fn count(path: &Path, expr: &str) -> u64 {
    let f = Filter::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e:?}"));
    records::run(path, &f, &mut |_| ControlFlow::Continue(()))
        .unwrap()
        .matched
}

fn legacy_session(latencies_us: &[u64]) -> Vec<String> {
    let mut lines = vec![
        HEADER.to_owned(),
        frame(
            1000,
            "out",
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-ai","version":"0.1.0"}}}"#,
        ),
        frame(
            2000,
            "in",
            r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"weather","version":"2.1"}}}"#,
        ),
        frame(3000, "out", r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
    ];
    let mut t = 10_000;
    for (i, l) in latencies_us.iter().enumerate() {
        let id = i + 1;
        let tool = if i % 3 == 0 { "forecast" } else { "alerts" };
        lines.push(frame(
            t,
            "out",
            &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"city":"Paris"}}}}}}"#),
        ));
        let answer = match i % 10 {
            7 => format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32602,"message":"bad city"}}}}"#),
            8 => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[],"isError":true}}}}"#),
            _ => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"sunny"}}]}}}}"#),
        };
        lines.push(frame(t + l, "in", &answer));
        t += 1_000_000 / 4;
    }
    lines
}

#[test]
fn conversations_and_endpoints_count_a_session() {
    let mut lines = legacy_session(&[100, 200, 300]);
    // One never answered, a notification from the server and a request of its own.
    lines.push(frame(
        900_000,
        "out",
        r#"{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"forecast"}}"#,
    ));
    lines.push(frame(
        900_100,
        "in",
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
    ));
    lines.push(frame(
        900_200,
        "in",
        r#"{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#,
    ));
    let f = write(&lines);
    let r = stats(f.path(), None, &[], Duration::from_secs(1));
    assert_eq!(r.conversations.len(), 1);
    let c = &r.conversations[0];
    assert_eq!(c.client.as_ref().unwrap().label(), "claude-ai 0.1.0");
    assert_eq!(c.server.as_ref().unwrap().label(), "weather 2.1");
    assert_eq!(
        (c.era, c.protocol_version.as_deref()),
        (Some("legacy"), Some("2025-11-25"))
    );
    assert_eq!((c.requests, c.server_requests, c.unanswered), (5, 1, 2));
    assert_eq!((c.notifications_sent, c.notifications_received), (1, 1));
    assert_eq!(c.transport, "stdio");
    assert_eq!(c.duration_us, 900_200 - 1000);
    let sent: u64 = lines[1..]
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["dir"] == "out")
        .map(|v| v["raw"].as_str().unwrap().len() as u64 + 1)
        .sum();
    assert_eq!(c.bytes_sent, sent);
    assert!(!c.running);
    let servers: Vec<&Endpoint> = r.endpoints.iter().filter(|e| e.role == "server").collect();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].name, "weather 2.1");
    assert_eq!(servers[0].filter(), "time >= 1.000ms and time <= 900.200ms");
    assert_eq!(count(f.path(), &c.filter()), count(f.path(), "seq >= 0"));
}

#[test]
fn two_sessions_of_one_file_are_two_conversations_and_one_endpoint_each() {
    let mut lines = legacy_session(&[100]);
    lines.extend(legacy_session(&[200]));
    lines.push(HTTP_HEADER.to_owned());
    lines.push(frame(
        1000,
        "out",
        r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"cursor","version":"3"}}}}"#,
    ));
    lines.push(
        serde_json::json!({"t_us": 1500, "dir": "meta", "event": "http", "method": "POST", "url": "http://127.0.0.1:8000/mcp",
            "status": 200, "sent": [], "received": [["content-type", "text/event-stream"]], "request_id": 1, "text": "200 OK"})
        .to_string(),
    );
    lines.push(frame(
        2000,
        "in",
        r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"weather","version":"3.0"}}}}"#,
    ));
    let f = write(&lines);
    let r = stats(f.path(), None, &[], Duration::from_secs(1));
    let names: Vec<&str> = r.conversations.iter().map(|c| c.session.as_str()).collect();
    assert_eq!(names, ["1", "2", "3"]);
    let modern = &r.conversations[2];
    assert_eq!(modern.era, Some("modern"));
    assert_eq!(modern.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(modern.client.as_ref().unwrap().label(), "cursor 3");
    assert_eq!(modern.server.as_ref().unwrap().label(), "weather 3.0");
    assert_eq!(modern.transport, "http");
    let weather2 = r.endpoints.iter().find(|e| e.name == "weather 2.1").unwrap();
    assert_eq!(weather2.sessions, ["1", "2"]);
    assert_eq!(
        count(f.path(), &weather2.filter()),
        count(f.path(), "session == \"1\"") + count(f.path(), "session == \"2\"")
    );
    // The discover answer came in an event stream.
    let discover = r.srt.iter().find(|s| s.method == "server/discover").unwrap();
    assert_eq!((discover.by_stream, discover.by_json), (1, 0));
}

/// The nearest-rank percentile, counted the slow way.
fn brute(sorted: &[u64], q: f64) -> u64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
    sorted[rank - 1]
}

#[test]
fn response_time_percentiles_agree_with_a_brute_force_count() {
    // Latencies spread over four decades, deterministic.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let latencies: Vec<u64> = (0..2000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            50 + (x % 1000) * (1 + (x >> 20) % 200)
        })
        .collect();
    let f = write(&legacy_session(&latencies));
    let r = stats(f.path(), None, &[], Duration::from_secs(1));
    let check = |row: &SrtRow, mut seen: Vec<u64>| {
        seen.sort_unstable();
        assert_eq!(row.answered as usize, seen.len());
        assert_eq!((row.min_us, row.max_us), (seen[0], *seen.last().unwrap()));
        assert_eq!(row.mean_us, seen.iter().sum::<u64>() / seen.len() as u64);
        for (got, q) in [
            (row.p50_us, 0.5),
            (row.p90_us, 0.9),
            (row.p95_us, 0.95),
            (row.p99_us, 0.99),
        ] {
            let want = brute(&seen, q);
            // Three significant digits: within 0.1 % of the true value.
            let err = (got as f64 - want as f64).abs() / want as f64;
            assert!(err <= 0.001, "p{q}: {got} against {want} ({row:?})");
        }
    };
    let call = rows_by(&r.srt, By::Method)
        .into_iter()
        .find(|s| s.method == "tools/call" && s.detail.is_empty())
        .unwrap();
    check(call, latencies.clone());
    assert_eq!(call.errors, (0..2000).filter(|i| i % 10 == 7).count() as u64);
    assert_eq!(call.tool_errors, (0..2000).filter(|i| i % 10 == 8).count() as u64);
    let forecast = rows_by(&r.srt, By::Tool)
        .into_iter()
        .find(|s| s.detail == "forecast")
        .unwrap();
    check(
        forecast,
        latencies
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 3 == 0)
            .map(|(_, l)| *l)
            .collect(),
    );
    // Each row's filter keeps exactly its requests and their answers.
    assert_eq!(count(f.path(), &forecast.filter()), 2 * forecast.requests);
    assert_eq!(count(f.path(), &call.filter()), 2 * call.requests);
}

#[test]
fn io_series_agree_with_filter_counts_over_the_same_intervals() {
    let latencies: Vec<u64> = (0..40).map(|i| 1000 + i * 7919 % 240_000).collect();
    let f = write(&legacy_session(&latencies));
    let series = [
        r#"method == "tools/call""#,
        r#"kind == "error""#,
        "latency > 100ms",
        r#"request.method == "tools/call""#,
    ];
    let interval = Duration::from_millis(700);
    let r = stats(f.path(), None, &series, interval);
    assert!(r.io.len() > 5);
    for (i, expr) in series.iter().enumerate() {
        let mut total = 0;
        for b in 0..r.io.len() {
            let (from, to) = (b as u64 * 700, (b as u64 + 1) * 700);
            let want = count(f.path(), &format!("time >= {from}ms and time < {to}ms and ({expr})"));
            assert_eq!(
                r.io.bucket(i, b).frames,
                want,
                "series {expr}, interval {b}: {:?}",
                r.io.series[i].buckets.iter().map(|b| b.frames).collect::<Vec<_>>()
            );
            total += want;
        }
        assert_eq!(total, count(f.path(), expr), "{expr}");
    }
}

#[test]
fn a_display_filter_narrows_every_table_as_filter_does() {
    let f = write(&legacy_session(&[100, 200, 300, 400, 500, 600, 700, 800, 900]));
    // Streaming and loaded filters alike.
    for expr in [r#"params.name == "forecast""#, r#"request.params.name == "forecast""#] {
        let r = stats(f.path(), Some(expr), &[], Duration::from_secs(1));
        let c = &r.conversations[0];
        assert_eq!(
            r.io.series[0].buckets.iter().map(|b| b.frames).sum::<u64>(),
            count(f.path(), expr)
        );
        let forecast = rows_by(&r.srt, By::Tool);
        assert_eq!(forecast.len(), 1, "{expr}: {forecast:?}");
        assert_eq!(forecast[0].detail, "forecast");
        assert_eq!(forecast[0].answered, 3);
        assert!(c.bytes_sent + c.bytes_received > 0);
    }
}

#[test]
fn expert_info_groups_findings_by_severity_then_rule() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/captures");
    let r = stats(
        &dir.join("tool-error-for-protocol-error.jsonl"),
        None,
        &[],
        Duration::from_secs(1),
    );
    assert_eq!(r.expert.len(), 1);
    let g = &r.expert[0];
    assert_eq!(
        (g.rule, g.count, g.severity),
        (
            "tool-error-for-protocol-error",
            1,
            crate::analysis::lint::Severity::Warning
        )
    );
    assert_eq!(g.frames, [("1".to_owned(), 5), ("1".to_owned(), 6)]);
    assert_eq!(count(&dir.join("tool-error-for-protocol-error.jsonl"), &g.filter()), 2);
    // Worst first.
    let f = crate::analysis::lint::lint_capture(&dir.join("unanswered-request.jsonl"), &Default::default()).unwrap();
    let groups = group_findings(f.findings.iter().map(|x| ("1", x)));
    assert!(groups.windows(2).all(|w| w[0].severity >= w[1].severity));
}

#[test]
fn context_cost_reads_the_last_whole_listing_of_each_kind() {
    let mut lines = legacy_session(&[]);
    lines.push(frame(
        20_000,
        "out",
        r#"{"jsonrpc":"2.0","id":50,"method":"tools/list"}"#,
    ));
    lines.push(frame(
        21_000,
        "in",
        r#"{"jsonrpc":"2.0","id":50,"result":{"tools":[{"name":"forecast","description":"Weather for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}}}],"nextCursor":"p2"}}"#,
    ));
    lines.push(frame(
        22_000,
        "out",
        r#"{"jsonrpc":"2.0","id":51,"method":"tools/list","params":{"cursor":"p2"}}"#,
    ));
    lines.push(frame(
        23_000,
        "in",
        r#"{"jsonrpc":"2.0","id":51,"result":{"tools":[{"name":"alerts","description":"Severe weather alerts for a US state, by its two-letter code, with the areas and times each alert covers.","inputSchema":{"type":"object"}}]}}"#,
    ));
    lines.push(frame(
        24_000,
        "out",
        r#"{"jsonrpc":"2.0","id":52,"method":"prompts/list"}"#,
    ));
    lines.push(frame(
        25_000,
        "in",
        r#"{"jsonrpc":"2.0","id":52,"result":{"prompts":[{"name":"plan","arguments":[{"name":"city"}]}]}}"#,
    ));
    let f = write(&lines);
    let r = stats(f.path(), None, &[], Duration::from_secs(1));
    let kinds: Vec<_> = r
        .context
        .listings
        .iter()
        .map(|l| (l.kind, l.complete, l.cost.definitions.len()))
        .collect();
    assert_eq!(
        kinds,
        [
            (crate::analysis::context_cost::DefinitionKind::Tool, true, 2),
            (crate::analysis::context_cost::DefinitionKind::Prompt, true, 1)
        ]
    );
    let tools = &r.context.listings[0].cost;
    assert_eq!(tools.definitions[0].name, "alerts", "largest first");
    assert_eq!(tools.definitions[0].largest_part().unwrap().part, "description");
    let sum: u64 = tools.definitions.iter().map(|d| d.bytes).sum();
    assert_eq!(tools.total_bytes, sum + 2 + 1, "the array: brackets and a comma");
}

#[test]
fn a_live_session_reports_requests_in_flight_and_keeps_going() {
    let mut c = Collector::new(StatsOptions::default(), false);
    c.begin_session(SessionInfo {
        name: "live".into(),
        ..SessionInfo::default()
    });
    let mut seq = crate::wire::sequence::Sequence::new(Default::default());
    let mut line = |d, text: &str, ms| {
        let raw = crate::wire::framing::RawLine {
            bytes: text.as_bytes().to_vec(),
            ending: crate::wire::framing::LineEnding::Lf,
        };
        seq.frame(d, raw, Duration::from_millis(ms), None)
    };
    use crate::wire::frame::Direction;
    let out = line(
        Direction::Out,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}"#,
        1,
    );
    c.push(&Event::Frame(out), Verdict::ALL);
    let r = c.report();
    assert!(r.conversations[0].running);
    assert_eq!(r.conversations[0].unanswered, 1);
    let slow = rows_by(&r.srt, By::Tool);
    assert_eq!(
        (slow[0].detail.as_str(), slow[0].unanswered, slow[0].answered),
        ("slow", 1, 0)
    );
    let answer = line(Direction::In, r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#, 5);
    c.push(&Event::Frame(answer), Verdict::ALL);
    let r = c.report();
    assert_eq!(
        (r.conversations[0].unanswered, rows_by(&r.srt, By::Tool)[0].answered),
        (0, 1)
    );
}

use crate::transport::event::Event;

/// Every table of every hand-made capture in tests/captures and of a
/// recorded server-everything session, compared with
/// tests/captures/stats.golden (one line of JSON per table).
/// `MCPSCOPE_BLESS=1` rewrites the file after a change that means it.
#[test]
fn tables_match_the_golden_file() {
    use std::fmt::Write as _;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(root.join("tests/captures"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    paths.sort();
    paths.push(root.join("tests/vectors/server-everything-session.jsonl"));
    let mut out = String::new();
    for path in &paths {
        let r = stats(path, None, &[], Duration::from_secs(1));
        writeln!(out, "## {}", path.file_name().unwrap().to_string_lossy()).unwrap();
        let tables = serde_json::to_value(&r).unwrap();
        for (name, table) in tables.as_object().unwrap() {
            writeln!(out, "{name}: {table}").unwrap();
        }
    }
    let golden = root.join("tests/captures/stats.golden");
    if std::env::var_os("MCPSCOPE_BLESS").is_some() {
        std::fs::write(&golden, &out).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_default();
    if want != out {
        let first = want.lines().zip(out.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "stats differ from tests/captures/stats.golden at line {}:\n want: {}\n  got: {}",
            first + 1,
            want.lines().nth(first).unwrap_or(""),
            out.lines().nth(first).unwrap_or("")
        );
    }
}
