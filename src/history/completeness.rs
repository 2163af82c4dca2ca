//! How much of a run a history holds. A run writes its history's footer
//! last, so a history without one was cut short: the bench was killed
//! (SIGKILL, out of memory) or its history writer failed (a full disk).
//! Every op's records are sent as one batch when the op completes, through
//! a bounded queue and a buffered writer ([`crate::history::writer`]), so
//! such a history may lack any completed op, not only the last ones, and
//! an event may have some of its attempts recorded and not others.
//!
//! The checkers then apply only the rules that stay sound when any set of
//! ops is missing from the history, and each says which of its premises
//! needs the whole history (`docs/groups.md` and `docs/outbox.md`, "A cut
//! history"). What the final tables hold is still the whole truth: only
//! what the history says of the ops is partial.
//!
//! It sits with the history, below every workload's checkers and the
//! audit of a killed run, which read it.
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

/// Whether a history holds every op the run invoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Completeness {
    /// Written to the end (it has a footer): every op the run invoked is in
    /// it, completed or not; an interrupted run's history too.
    #[default]
    Whole,
    /// No footer: any op may be missing from it (see the module's doc).
    Cut,
}

impl Completeness {
    /// The history may lack ops.
    pub fn is_cut(self) -> bool {
        self == Completeness::Cut
    }
}

/// The words every checker's note on a cut history starts with.
pub const CUT: &str = "the history was cut (no footer: the bench was killed or its writer \
                       failed), so any op may be missing from it";
