//! `mcpscope export`: a capture in another tool's format.

use super::{exit, output};
use clap::Args;
use mcpscope_core::text::ErrorChain;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A JSONL capture written by mcpscope (call --capture, proxy, or the app).
    pub capture: PathBuf,

    /// har: HAR 1.2, for browser devtools (Chrome's network panel imports it)
    /// and HTTP debuggers; one entry per JSON-RPC exchange. otlp-json:
    /// OpenTelemetry traces (OTLP/JSON, the MCP semantic conventions), for
    /// Jaeger, Tempo and other tracing backends; a span per request.
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "har")]
    pub format: ExportFormat,

    /// Write to FILE (a new or replaced file is 0600: it holds what the
    /// capture holds; a device or a FIFO is written into) instead of
    /// standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// With --format otlp-json: send the traces to this OpenTelemetry
    /// collector over OTLP/HTTP (JSON; `/v1/traces` is added unless given)
    /// instead of printing them.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Har,
    OtlpJson,
}

/// Exit status: 0 written, 4 the capture cannot be read or the file written.
pub fn run(args: ExportArgs) -> ExitCode {
    if args.otlp_endpoint.is_some() && args.format != ExportFormat::OtlpJson {
        crate::errln!("mcpscope export: --otlp-endpoint sends OpenTelemetry traces: use it with --format otlp-json");
        return ExitCode::from(exit::USAGE);
    }
    // Refused before the capture is read or anything is sent.
    if let Some(path) = &args.output
        && let Err(e) =
            mcpscope_core::record::output_file::check(path, mcpscope_core::record::output_file::Policy::Replace)
    {
        crate::errln!("mcpscope export: {}", ErrorChain(&e));
        return ExitCode::from(exit::IO);
    }
    let capture = args.capture.display().to_string();
    let mut say = |w: String| crate::errln!("mcpscope export: {capture}: skipped {w}");
    let mut quiet = |_: String| {};
    let mut warn: &mut dyn FnMut(String) = &mut say;
    if let Some(endpoint) = &args.otlp_endpoint {
        if !send_capture(&args.capture, endpoint, &mut *warn) {
            return ExitCode::from(exit::UNREACHABLE);
        }
        if args.output.is_none() {
            return ExitCode::from(exit::OK);
        }
        // The traces went; the file gets them too, without the warnings again.
        warn = &mut quiet;
    }
    // Written while the capture is read: memory holds the open exchanges, not the capture.
    let write = |out: &mut dyn std::io::Write, warn: &mut dyn FnMut(String)| match args.format {
        ExportFormat::Har => mcpscope_core::interop::write_har(&args.capture, super::VERSION, out, warn),
        ExportFormat::OtlpJson => mcpscope_core::interop::write_otlp(&args.capture, super::VERSION, out, warn),
    };
    let what = match args.format {
        ExportFormat::Har => "HAR entries",
        ExportFormat::OtlpJson => "spans",
    };
    match &args.output {
        None => {
            let mut out = Stdout(output::Buffered::new());
            let written = write(&mut out, warn);
            out.0.finish();
            match written {
                Ok(_) => ExitCode::from(exit::OK),
                Err(_) if output::stdout_closed() => ExitCode::from(output::STDOUT_CLOSED_STATUS),
                Err(e) => {
                    crate::errln!("mcpscope export: {}", ErrorChain(&e));
                    ExitCode::from(exit::IO)
                }
            }
        }
        Some(path) => {
            use mcpscope_core::record::output_file::{WriteWithError, write_with};
            let mut n = 0;
            let written = write_with(path, |f| -> Result<(), mcpscope_core::interop::ExportError> {
                n = write(f, &mut *warn)?;
                Ok(())
            });
            match written {
                Ok(()) => {
                    crate::errln!("mcpscope export: {n} {what} written to {}", path.display());
                    ExitCode::from(exit::OK)
                }
                Err(WriteWithError::Content(e)) => {
                    crate::errln!("mcpscope export: {}", ErrorChain(&e));
                    ExitCode::from(exit::IO)
                }
                Err(WriteWithError::Output(e)) => {
                    crate::errln!("mcpscope export: {}", ErrorChain(&e));
                    ExitCode::from(exit::IO)
                }
            }
        }
    }
}

/// Standard output as a writer: a closed pipe is an error that ends the export.
struct Stdout(output::Buffered);

impl std::io::Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.write(buf) {
            Ok(buf.len())
        } else {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sends a capture's traces to a collector as it is read, and says what
/// became of them; false when they did not all arrive.
fn send_capture(capture: &std::path::Path, endpoint: &str, warn: &mut dyn FnMut(String)) -> bool {
    match mcpscope_core::interop::send_otlp(capture, super::VERSION, endpoint, warn) {
        Ok(sent) => {
            let spans: usize = sent.iter().map(|s| s.spans).sum();
            let rejected: u64 = sent.iter().map(|s| s.rejected).sum();
            let url = sent.last().map(|s| s.url.as_str()).unwrap_or_default();
            crate::errln!("mcpscope export: {spans} span(s) sent to {url}");
            if rejected > 0 || sent.iter().any(|s| s.message.is_some()) {
                let messages: Vec<&str> = sent.iter().filter_map(|s| s.message.as_deref()).collect();
                crate::errln!(
                    "mcpscope export: the collector dropped {rejected} span(s){}",
                    if messages.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", messages.join("; "))
                    }
                );
            }
            true
        }
        Err(e) => {
            crate::errln!("mcpscope export: {}", ErrorChain(&e));
            false
        }
    }
}

/// Sends traces to a collector and says what became of them; false when
/// they did not arrive.
pub fn send_traces(command: &str, endpoint: &str, traces: &serde_json::Value) -> bool {
    match mcpscope_core::interop::otlp_http::send(endpoint, traces) {
        Ok(sent) => {
            crate::errln!("mcpscope {command}: {} span(s) sent to {}", sent.spans, sent.url);
            if sent.rejected > 0 || sent.message.is_some() {
                crate::errln!(
                    "mcpscope {command}: the collector dropped {} span(s){}",
                    sent.rejected,
                    sent.message.map(|m| format!(": {m}")).unwrap_or_default()
                );
            }
            true
        }
        Err(e) => {
            crate::errln!("mcpscope {command}: {}", ErrorChain(&e));
            false
        }
    }
}

/// Traces sent while a proxied session runs: failures said once each as
/// they happen, the total when the session is over.
pub struct LiveTraces {
    export: mcpscope_core::interop::otlp_live::LiveExport,
    tally: TraceTally,
}

/// What became of traces sent in batches: spans that arrived, failures said
/// once each as they happen (`proxy`, and `load`'s sampled sessions).
#[derive(Clone)]
pub struct TraceTally {
    command: &'static str,
    counts: std::sync::Arc<std::sync::Mutex<Tally>>,
}

#[derive(Default)]
struct Tally {
    spans: usize,
    rejected: u64,
    url: String,
    failures: Vec<String>,
}

impl TraceTally {
    pub fn new(command: &'static str) -> TraceTally {
        TraceTally {
            command,
            counts: std::sync::Arc::default(),
        }
    }

    /// The exporter's report: counts each batch.
    pub fn report(&self) -> mcpscope_core::interop::otlp_live::Report {
        let (command, counts) = (self.command, std::sync::Arc::clone(&self.counts));
        std::sync::Arc::new(move |result| {
            let mut t = counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match result {
                Ok(sent) => {
                    t.spans += sent.spans;
                    t.rejected += sent.rejected;
                    t.url = sent.url.clone();
                }
                Err(e) => {
                    let text = ErrorChain(e).to_string();
                    if !t.failures.contains(&text) {
                        crate::errln!("mcpscope {command}: {text}");
                        t.failures.push(text);
                    }
                }
            }
        })
    }

    /// How many spans arrived, and how many the collector dropped.
    pub fn say(&self, what: &str) {
        let t = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if t.spans > 0 {
            crate::errln!("mcpscope {}: {} span(s){what} sent to {}", self.command, t.spans, t.url);
        }
        if t.rejected > 0 {
            crate::errln!(
                "mcpscope {}: the collector dropped {} span(s)",
                self.command,
                t.rejected
            );
        }
    }
}

impl LiveTraces {
    pub fn start(
        command: &'static str,
        endpoint: &str,
        header: mcpscope_core::record::capture::Header,
    ) -> Result<LiveTraces, mcpscope_core::interop::otlp_http::SendError> {
        use mcpscope_core::interop::otlp_live::{LiveExport, interval_from_env};
        let tally = TraceTally::new(command);
        let export = LiveExport::start(endpoint, header, super::VERSION, interval_from_env(), tally.report())?;
        Ok(LiveTraces { export, tally })
    }

    pub fn tap(&self) -> mcpscope_core::transport::recorder::EventTap {
        self.export.tap()
    }

    /// Sends the rest and says how many spans arrived.
    pub fn finish(self) {
        self.export.finish();
        self.tally.say("");
    }
}
