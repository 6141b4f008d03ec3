//! Filter (issue #16): the timeline's filter over a million-record capture,
//! keystroke by keystroke, as the app applies it: each change is worked off
//! in slices of [`FILTER_BUDGET`] per UI frame while the last result stays on
//! screen. For each keystroke: the work it took, how many frames it was
//! spread over, the longest slice (what one frame waited), and when the new
//! result is on screen at 60 frames per second (slices × 16.7 ms, the last
//! slice counted at its own length).
//!
//! Floor: one `memchr::memmem` pass for the typed text over every row's raw bytes.
//!
//! Run: `cargo bench -p mcpscope-core --bench filter` (the capture comes from
//! `scripts/gen-capture` unless MCPSCOPE_SCALE_CAPTURE names one).

use mcpscope_core::filter::Filter;
use mcpscope_core::filter::row_index::{FILTER_BUDGET, RowIndex, Shorthand};
use mcpscope_core::filter::rows::SessionFacts;
use mcpscope_core::record::capture::{EventReader, Item, READ_BUFFER};
use mcpscope_core::timeline::model::{SessionModel, Source};
use mcpscope_core::timeline::row_kind::RowKind;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const FRAME: Duration = Duration::from_micros(16_667);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn load(path: &std::path::Path) -> SessionModel {
    let f = std::fs::File::open(path).unwrap();
    let mut reader = EventReader::new(std::io::BufReader::with_capacity(READ_BUFFER, f)).unwrap();
    let mut model = SessionModel::new(Source::Capture {
        path: path.to_owned(),
        command_line: String::new(),
    });
    while let Some(item) = reader.next_item().unwrap() {
        if let Item::Event(e) = item {
            model.apply(&e);
        }
    }
    model
}

struct Applied {
    work: Duration,
    slices: usize,
    longest: Duration,
    rows: usize,
}

/// Applies `filter` the way the app does: one budgeted slice per frame.
fn apply(index: &mut RowIndex, model: &SessionModel, expr: &str) -> Applied {
    // Parsing and checking the text is part of each keystroke's work.
    let t = Instant::now();
    let filter = (!expr.is_empty()).then(|| Filter::parse(expr).unwrap_or_else(|e| panic!("{}", e.render(expr))));
    index.set_filter(filter);
    let parse = t.elapsed();
    let facts = SessionFacts::default();
    let mut work = parse;
    let mut slices = 0;
    let mut longest = Duration::ZERO;
    loop {
        let t = Instant::now();
        index.sync_within(&model.store, &facts, FILTER_BUDGET);
        let took = t.elapsed();
        work += took;
        longest = longest.max(took);
        slices += 1;
        if index.progress().is_none() {
            break;
        }
    }
    Applied {
        work,
        slices,
        longest,
        rows: index.len(),
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = match std::env::var("MCPSCOPE_SCALE_CAPTURE") {
        Ok(p) => PathBuf::from(p),
        Err(_) => {
            let path = dir.path().join("scale.jsonl");
            let status = Command::new("python3")
                .arg(repo().join("scripts/gen-capture"))
                .arg(&path)
                .status()
                .expect("python3");
            assert!(status.success(), "scripts/gen-capture failed");
            path
        }
    };
    let t = Instant::now();
    let model = load(&path);
    println!(
        "capture: {} ({} rows, loaded in {:.2} s)",
        path.display(),
        model.store.len(),
        t.elapsed().as_secs_f64()
    );
    let mut index = RowIndex::default();
    index.sync_within(&model.store, &SessionFacts::default(), Duration::MAX);

    // The floor: the typed text found in every row's raw bytes, nothing else.
    let finder = memchr::memmem::Finder::new(b"number 4242");
    let t = Instant::now();
    let hits = (0..model.store.len())
        .filter(|&i| finder.find(model.store.get(i).unwrap().raw()).is_some())
        .count();
    println!(
        "floor: memmem over every row        {:>7.1} ms ({hits} rows)",
        t.elapsed().as_secs_f64() * 1e3
    );

    let text = |t: &str| {
        Shorthand {
            text: t.into(),
            ..Shorthand::default()
        }
        .expression()
    };
    let mut steps: Vec<(String, String)> = Vec::new();
    let typed = "number 4242";
    for n in 1..=typed.len() {
        steps.push((format!("type {:?}", &typed[..n]), text(&typed[..n])));
    }
    steps.push(("backspace to \"number 424\"".into(), text("number 424")));
    steps.push(("clear".into(), String::new()));
    steps.push((
        "method \"tools/c\"".into(),
        Shorthand {
            method: "tools/c".into(),
            ..Shorthand::default()
        }
        .expression(),
    ));
    steps.push((
        "hide results".into(),
        Shorthand {
            hidden: [RowKind::Result].into_iter().collect(),
            ..Shorthand::default()
        }
        .expression(),
    ));
    // Field expressions of the language, each as one change.
    steps.push(("clear".into(), String::new()));
    for expr in [
        r#"method == "tools/call""#,
        r#"method == "tools/call" and params.arguments.message contains "number 4242""#,
        "latency > 250us",
        r#"kind == "result" and result.content[0].text contains "4242""#,
        "params.arguments.message",
    ] {
        steps.push((expr.to_owned(), expr.to_owned()));
    }
    for round in 1..=2 {
        println!("round {round}");
        index.set_filter(None);
        index.sync_within(&model.store, &SessionFacts::default(), Duration::MAX);
        let mut worst_on_screen = Duration::ZERO;
        for (what, filter) in &steps {
            let a = apply(&mut index, &model, filter);
            let on_screen = FRAME * (a.slices as u32 - 1) + a.longest.min(FRAME);
            worst_on_screen = worst_on_screen.max(on_screen);
            println!(
                "{what:<28} {:>8} rows   work {:>6.1} ms in {:>3} slice(s), longest {:>5.1} ms, on screen after ~{:>5.0} ms",
                a.rows,
                a.work.as_secs_f64() * 1e3,
                a.slices,
                a.longest.as_secs_f64() * 1e3,
                on_screen.as_secs_f64() * 1e3
            );
        }
        println!(
            "worst keystroke: on screen after ~{:.0} ms",
            worst_on_screen.as_secs_f64() * 1e3
        );
    }
}
