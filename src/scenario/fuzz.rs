//! `[fuzz]`: the schedule fuzzer's settings (what `crate::fuzz` draws its
//! yields and sleeps between an op's steps from). Its keys, defaults and
//! bounds are in `scenarios/README.md`.
//!
//! Layer: config. May import the modules of its own layer and of the layers
//! below it (core and model).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The longest sleep the fuzzer may draw (`fuzz.max_sleep`, refused
/// above): it widens a race window by about a statement's time, it is no
/// pause fault (those are `[[faults]]` with `kind = "pause"`).
pub const MAX_SLEEP: Duration = Duration::from_millis(100);

/// `[fuzz]`: at randomly chosen points between two steps of an op, the
/// worker running it yields or sleeps a short, randomly drawn time.
/// [`Fuzz::default`] is the loader's defaults.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Fuzz {
    /// Whether the fuzzer runs (default false: it costs the in-process
    /// load more than 10% of its throughput). It acts where the bench
    /// runs the steps: in-process SQLite and the spawned reference server
    /// (`target.spawn`); another HTTP service's steps are its own.
    pub enabled: bool,
    /// Chance of a point before each executed step after an op's first
    /// (default 0.5; 0..=1).
    pub probability: f64,
    /// Share of points that only yield the thread (default 0.25; 0..=1);
    /// the others sleep.
    pub yield_share: f64,
    /// A sleep lasts a uniform draw in 0..=max_sleep (default "500us", at
    /// most "100ms").
    #[cfg_attr(test, schemars(with = "super::humantime_serde_compat::Humantime"))]
    #[serde(with = "super::humantime_serde_compat")]
    pub max_sleep: Duration,
}

impl Default for Fuzz {
    /// The loader's defaults (`schema.rs`).
    fn default() -> Self {
        Fuzz {
            enabled: false,
            probability: 0.5,
            yield_share: 0.25,
            max_sleep: Duration::from_micros(500),
        }
    }
}
