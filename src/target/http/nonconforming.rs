//! The answers of an HTTP target that were not the contract's (or the
//! `[api]` mapping's) shape: every workload's HTTP runtime counts them
//! here, and the target turns a count above zero into the run's target
//! error.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Non-conforming answers: how many, and the first few examples.
#[derive(Debug, Default)]
pub struct Nonconforming {
    /// Answers that were not the contract's shape.
    pub count: AtomicU64,
    /// The first few, as "what: status body".
    pub examples: Mutex<Vec<String>>,
}

impl Nonconforming {
    /// Counts one non-conforming answer, keeping the first few examples.
    pub fn note(&self, example: &str) {
        if self.count.fetch_add(1, Ordering::Relaxed) < 5 {
            self.examples
                .lock()
                .expect("examples")
                .push(example.to_string());
        }
    }
}
