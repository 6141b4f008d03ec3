//! `mcpscope filter`: the records of a capture that match a display filter.

use clap::Args;
use mcpscope_core::filter::records::{self, Matched};
use mcpscope_core::filter::{Filter, FilterError, fields};
use mcpscope_core::text::terminal_safe;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct FilterArgs {
    /// A JSONL capture written by mcpscope (call --capture, proxy --capture, or the app).
    #[arg(required_unless_present = "fields")]
    pub capture: Option<PathBuf>,

    /// The filter, e.g. 'method == "tools/call" and latency > 500ms' (see --fields).
    #[arg(required_unless_present = "fields")]
    pub expr: Option<String>,

    /// Print only how many records match.
    #[arg(long, conflicts_with = "format")]
    pub count: bool,

    /// jsonl: the matching records as they are in the capture, each
    /// session's header line first (the output is a capture itself);
    /// table: one line each for people; json: an array of the matches.
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    pub format: Format,

    /// List the fields a filter can use, with their types, and exit.
    #[arg(long)]
    pub fields: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Table,
    Json,
}

/// Parses a filter given on the command line, or prints where it is wrong.
pub fn parse_or_report(cmd: &str, expr: &str) -> Result<Filter, ExitCode> {
    Filter::parse(expr).map_err(|e: FilterError| {
        crate::errln!(
            "mcpscope {cmd}: the filter is not valid:\n{}",
            terminal_safe(&e.render(expr), true)
        );
        ExitCode::from(super::exit::USAGE)
    })
}

fn print_fields() {
    crate::outln!("field                 type       meaning");
    for f in fields::FIELDS {
        crate::outln!("{:<21} {:<10} {}", f.name, f.ty.name(), f.doc);
    }
    crate::outln!(
        "{:<21} {:<10} paths into the message: params.name, result.tools[*].name, error.data, json.<member>",
        "params. result. …",
        "JSON"
    );
    crate::outln!();
    crate::outln!("operators: == != < <= > >= contains matches (regex) in {{a, b, 1..5}}; a field alone: it exists");
    crate::outln!("logic: and or not (&& || !), parentheses; functions: len() lower() count() any(…) all(…)");
    crate::outln!("literals: \"text\" 'text' 42 -1.5 500ms 2s true false null");
}

/// Exit status: 0 when records match, 1 when none does, 4 when the capture
/// cannot be read, 64 for a filter that is not valid.
pub fn run(args: FilterArgs) -> ExitCode {
    if args.fields {
        print_fields();
        return ExitCode::SUCCESS;
    }
    let (Some(capture), Some(expr)) = (args.capture, args.expr) else {
        return ExitCode::from(super::exit::USAGE);
    };
    let filter = match parse_or_report("filter", &expr) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let mut out = super::output::Buffered::new();
    let mut last_session = 0;
    let mut first = true;
    let format = if args.count { None } else { Some(args.format) };
    if format == Some(Format::Json) {
        out.write(b"[");
    }
    // People and tools reading a table or JSON see each answer's request:
    // every line is read. JSONL and counts skip what cannot match.
    let reading = match format {
        Some(Format::Table | Format::Json) => records::Reading::Whole,
        _ => records::Reading::SkipWhatCannotMatch,
    };
    let result = records::run_reading(&capture, &filter, reading, &mut |m: &Matched<'_>| {
        let open = match format {
            None => true,
            Some(Format::Jsonl) => {
                let mut ok = true;
                if m.session != last_session {
                    last_session = m.session;
                    ok = out.write(m.header_line) && out.write(b"\n");
                    // The note that starts a later session stands for its header line.
                    if m.line == m.header_line {
                        return if ok {
                            ControlFlow::Continue(())
                        } else {
                            ControlFlow::Break(())
                        };
                    }
                }
                ok && out.write(m.line) && out.write(b"\n")
            }
            Some(Format::Table) => out.write(table_line(m).as_bytes()),
            Some(Format::Json) => {
                let sep: &[u8] = if first { b"\n" } else { b",\n" };
                first = false;
                out.write(sep) && out.write(json_of(m).to_string().as_bytes())
            }
        };
        if open {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    });
    if format == Some(Format::Json) {
        out.write(b"\n]\n");
    }
    out.finish();
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            crate::errln!(
                "mcpscope filter: {}: {}",
                capture.display(),
                terminal_safe(&e.to_string(), false)
            );
            return ExitCode::from(super::exit::IO);
        }
    };
    for w in &summary.warnings {
        crate::errln!(
            "mcpscope filter: {}: skipped {}",
            capture.display(),
            terminal_safe(w, false)
        );
    }
    if args.count {
        crate::outln!("{}", summary.matched);
    }
    if summary.matched == 0 {
        ExitCode::from(super::exit::FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

fn table_line(m: &Matched<'_>) -> String {
    let i = &m.info;
    let what = match (&i.method, &i.request_method, &i.id) {
        (Some(method), _, Some(id)) => format!("{method} #{id}"),
        (Some(method), _, None) => method.clone(),
        (None, Some(req), Some(id)) => format!("{} #{id} ({req})", i.kind),
        (None, None, Some(id)) => format!("{} #{id}", i.kind),
        _ => mcpscope_core::text::ellipsize(&i.text, 100),
    };
    let latency = i
        .latency
        .map(|l| format!("  {:.1} ms", l.as_secs_f64() * 1000.0))
        .unwrap_or_default();
    format!(
        "{:>7} {:>11.6}s  {:<3} {:<6} {:<14} {}{latency}\n",
        i.seq.map_or("-".to_owned(), |s| s.to_string()),
        i.time.as_secs_f64(),
        if m.session > 1 {
            format!("s{}", m.session)
        } else {
            String::new()
        },
        i.dir,
        i.kind,
        terminal_safe(&what, false),
    )
}

fn json_of(m: &Matched<'_>) -> serde_json::Value {
    let i = &m.info;
    serde_json::json!({
        "session": m.session,
        "seq": i.seq,
        "time_s": i.time.as_secs_f64(),
        "dir": i.dir,
        "kind": i.kind,
        "id": i.id.as_ref().map(|id| id.to_json()),
        "method": i.method,
        "request_method": i.request_method,
        "latency_ms": i.latency.map(|l| l.as_secs_f64() * 1000.0),
        "message": i.message.as_deref().and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok()),
        "text": if i.message.is_none() { Some(&i.text) } else { None },
    })
}
