//! The I/O graph: per interval, for each series (a display filter), the
//! records it kept, their bytes, and the latency of the answers among them.

use std::time::Duration;

/// Intervals kept per series; a longer graph asks for a longer interval.
pub const MAX_BUCKETS: usize = 1_000_000;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Bucket {
    pub frames: u64,
    pub bytes: u64,
    /// Answers in the interval (records with a latency).
    pub answers: u64,
    pub latency_sum_us: u64,
    pub latency_max_us: u64,
}

impl Bucket {
    pub fn latency_mean_us(&self) -> u64 {
        self.latency_sum_us.checked_div(self.answers).unwrap_or(0)
    }
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct IoSeries {
    /// The display filter, as written (empty: every record kept).
    pub expr: String,
    /// One per interval from the capture's start; trailing empty ones are not kept.
    pub buckets: Vec<Bucket>,
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct IoGraph {
    pub interval_us: u64,
    pub series: Vec<IoSeries>,
    /// Records past the last interval kept ([`MAX_BUCKETS`]), not drawn.
    pub beyond: u64,
}

impl IoGraph {
    pub fn new(interval: Duration, exprs: &[String]) -> Self {
        let exprs: Vec<String> = if exprs.is_empty() {
            vec![String::new()]
        } else {
            exprs.to_vec()
        };
        IoGraph {
            interval_us: (interval.as_micros() as u64).max(1),
            series: exprs
                .into_iter()
                .map(|expr| IoSeries {
                    expr,
                    buckets: Vec::new(),
                })
                .collect(),
            beyond: 0,
        }
    }

    /// A record at `at` kept by the series in `series` (bit i for series i).
    pub fn record(&mut self, at: Duration, series: u8, bytes: u64, latency: Option<Duration>) {
        if series == 0 {
            return;
        }
        let index = (at.as_micros() as u64 / self.interval_us) as usize;
        if index >= MAX_BUCKETS {
            self.beyond += 1;
            return;
        }
        for (i, s) in self.series.iter_mut().enumerate() {
            if series & (1 << i) == 0 {
                continue;
            }
            if s.buckets.len() <= index {
                s.buckets.resize(index + 1, Bucket::default());
            }
            let b = &mut s.buckets[index];
            b.frames += 1;
            b.bytes += bytes;
            if let Some(l) = latency {
                let us = l.as_micros() as u64;
                b.answers += 1;
                b.latency_sum_us += us;
                b.latency_max_us = b.latency_max_us.max(us);
            }
        }
    }

    /// Intervals from the start to the last one any series has.
    pub fn len(&self) -> usize {
        self.series.iter().map(|s| s.buckets.len()).max().unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Series `i`'s bucket at `index` (empty past its end).
    pub fn bucket(&self, series: usize, index: usize) -> Bucket {
        self.series
            .get(series)
            .and_then(|s| s.buckets.get(index))
            .copied()
            .unwrap_or_default()
    }
}
