//! One model turn streaming on a worker of its own: the key found (the
//! keyring may take a moment), the request posted, the answer's text handed
//! to the UI as it comes, and how it ended. The UI thread only drains it.

use crate::job::{Feed, Wake};
use mcpscope_core::chat::provider_call::{self, Exchange, ProviderError};
use mcpscope_core::model::provider::ModelSpec;
use mcpscope_core::model::record::ModelExchange;
use mcpscope_core::model::stream::Delta;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long one turn may take.
const TURN_TIMEOUT: Duration = Duration::from_secs(120);

/// Finds the key on the worker (`Ok(None)`: none needed).
pub type KeyFinder = Box<dyn FnOnce() -> Result<Option<String>, String> + Send>;

/// The key typed in the app, else the one found as the CLI finds it (the
/// provider's variable, the keyring), on the worker.
pub fn key_finder(spec: &ModelSpec, typed: Option<String>) -> KeyFinder {
    let spec = spec.clone();
    Box::new(move || match typed {
        Some(k) => Ok(Some(k)),
        None => mcpscope_core::chat::key::find_key_here(&spec, None).map(|f| f.key),
    })
}

enum Update {
    Text(String),
    End(Box<TurnEnd>),
}

/// How a turn ended.
// One per model turn, moved once (boxed in the channel): the size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum TurnEnd {
    /// It was asked (whatever the provider answered).
    Asked {
        body: Value,
        result: Result<Exchange, ProviderError>,
        took: Duration,
    },
    /// It was never sent: no key, or the worker could not run.
    NotSent(String),
}

impl TurnEnd {
    /// The turn as the capture keeps it (one never sent is not kept).
    pub fn record(&self, spec: &ModelSpec) -> Option<ModelExchange> {
        match self {
            TurnEnd::Asked { body, result, took } => Some(provider_call::record(spec, body, result, *took)),
            TurnEnd::NotSent(_) => None,
        }
    }
}

pub struct TurnWorker {
    feed: Feed<Update>,
    stop: Arc<AtomicBool>,
    started: Instant,
}

impl TurnWorker {
    pub fn spawn(spec: ModelSpec, key: KeyFinder, body: Value, wake: Option<Wake>) -> TurnWorker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        // Detached: a Stop must not wait for a provider that has not
        // answered yet; the worker ends at its next read.
        let feed = Feed::spawn_detached("model-turn", 256, wake, move |feeder| {
            let key = match key() {
                Ok(k) => k,
                Err(e) => {
                    feeder.send(Update::End(Box::new(TurnEnd::NotSent(e))));
                    return;
                }
            };
            let started = Instant::now();
            let result = provider_call::stream_turn(&spec, key.as_deref(), &body, TURN_TIMEOUT, &flag, &mut |d| {
                if let Delta::Text(t) = d {
                    feeder.send(Update::Text(t.clone()));
                }
            });
            let took = started.elapsed();
            feeder.send(Update::End(Box::new(TurnEnd::Asked { body, result, took })));
        });
        TurnWorker {
            feed,
            stop,
            started: Instant::now(),
        }
    }

    /// The text streamed since the last poll (appended to `text`), and
    /// the end once it came.
    pub fn poll(&self, text: &mut String) -> Option<TurnEnd> {
        while let Some(update) = self.feed.try_recv() {
            match update {
                Update::Text(t) => text.push_str(&t),
                Update::End(end) => return Some(*end),
            }
        }
        self.feed.failed().map(|f| TurnEnd::NotSent(f.to_string()))
    }

    /// Cuts the turn at the next piece of its answer.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}
