//! How one attempt of a step program ended ([`AttemptEnd`]), as the step
//! machine's ends read (ran through, a `fail-if` held, a crash fault, an
//! error, an abort), and the response header in which the reference
//! server names it, so that the bench counts an attempt's end from its
//! name, never from an error's words. The workload whose ops end this way
//! reads the ends; the HTTP client only carries them.
//!
//! Layer: engine. May import the modules of its own layer and of the
//! layers below it (core, model and config).

/// How one attempt ended, for the queue and the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptEnd {
    /// Ran through its last step (the op is acknowledged).
    Acked,
    /// A `fail-if` held (a lost compare-and-swap).
    CasLost,
    /// A crash fault ended it after a step.
    Crashed,
    /// A SQLite error, too many rows, or the step bound.
    Error,
    /// The user abandoned it between steps (second Ctrl-C).
    Aborted,
}

impl AttemptEnd {
    /// The response header in which the reference server names how an
    /// op's failed attempt ended (its 503): what the bench counts it as (a
    /// lost compare-and-swap, a crash, an error), read from the name, not
    /// from the error's words.
    pub const HEADER: &'static str = "x-specstorm-attempt-end";

    /// Every end, for [`AttemptEnd::from_name`].
    pub const ALL: [AttemptEnd; 5] = [
        AttemptEnd::Acked,
        AttemptEnd::CasLost,
        AttemptEnd::Crashed,
        AttemptEnd::Error,
        AttemptEnd::Aborted,
    ];

    /// The end's name in [`AttemptEnd::HEADER`].
    pub fn name(self) -> &'static str {
        match self {
            AttemptEnd::Acked => "acked",
            AttemptEnd::CasLost => "cas_lost",
            AttemptEnd::Crashed => "crashed",
            AttemptEnd::Error => "error",
            AttemptEnd::Aborted => "aborted",
        }
    }

    /// The end a header names; None for a name that is none of them.
    pub fn from_name(name: &str) -> Option<AttemptEnd> {
        AttemptEnd::ALL.into_iter().find(|e| e.name() == name)
    }
}
