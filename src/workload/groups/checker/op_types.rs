//! The facts of one op that the checkers read, shared by the facts of a
//! history ([`super::facts`]) and the summaries of finished ops
//! ([`super::op_fact`]): instants and intervals, what an attempt may have
//! done to its event's row, where the event-insert step comes from, and
//! what a resolve told of its group.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

/// A closed interval of ns since run start. `end = None`: it never ended
/// (it may take effect at any later time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First instant, ns since run start.
    pub start: u64,
    /// Last instant, ns since run start; None: never ended.
    pub end: Option<u64>,
}

/// Where the index of the ingest step that inserts the event row comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EventStep {
    /// The header names it (found from what the statement does).
    Known(u32),
    /// A history older than the header field: step 0, as its writer
    /// assumed. The stranded report uses it and says so; the duplicate
    /// rules do not rely on it.
    Assumed(u32),
    /// A history of this version whose header names none: which step
    /// inserts the row cannot be told.
    #[default]
    Unknown,
}

impl EventStep {
    /// The index the stranded report uses, if any.
    pub fn index(self) -> Option<u32> {
        match self {
            EventStep::Known(i) | EventStep::Assumed(i) => Some(i),
            EventStep::Unknown => None,
        }
    }
}

/// What an attempt may have done to its event's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// It may have inserted the row, from [`super::facts::Attempt::start`] on.
    May,
    /// Remote and indeterminate: decided once every fault entry is known.
    Pending,
    /// It ended `fail`: certainly no effect.
    Failed,
    /// The fault proxy never forwarded it.
    NeverForwarded,
    /// It was sent while the server was killed and ended before the restart.
    KillDown,
    /// In-process: none of its steps changed a row.
    NothingChanged,
}

impl Effect {
    /// Why an attempt with this effect cannot have inserted the row (for
    /// [`Effect::May`]: nothing, it can).
    pub fn why_not(self) -> &'static str {
        match self {
            Effect::May => "it may have inserted the row",
            Effect::Pending => "its outcome was never settled",
            Effect::Failed => "it failed (certainly no effect)",
            Effect::NeverForwarded => "the fault proxy never forwarded it to the server",
            Effect::KillDown => {
                "it was sent while the server was killed, and ended before the restart"
            }
            Effect::NothingChanged => "none of its steps changed a row",
        }
    }
}

/// A resolve that changed the group to resolved and returned its count.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolveFact {
    /// The resolve op's id.
    pub op: u64,
    /// Interval of the step that returned the count (where steps are logged), else of the whole op.
    pub span: Span,
    /// `event_count` it returned: the group's count at the resolve.
    pub count: i64,
}

/// A resolve whose effect is unknown (info, never completed, or an ok
/// without a count).
#[derive(Debug, Clone, PartialEq)]
pub struct UnknownResolve {
    /// The resolve op's id.
    pub op: u64,
    /// When the client saw it end (None: never).
    pub completed: Option<u64>,
    /// When it may have taken effect: from its invoke to its completion
    /// (in-process: nothing runs after the completion), or open-ended.
    pub span: Span,
}

/// An observation of the group as (`resolved`, count).
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// The refused resolve that probed, or None for the final row.
    pub op: Option<u64>,
    /// Interval of the probing step (else of the whole op); the final read's transaction for the final row.
    pub span: Span,
    /// `event_count` observed with status `resolved`.
    pub count: i64,
}

/// A counting step that certainly changed the group's row.
#[derive(Debug, Clone, PartialEq)]
pub struct CountingStep {
    /// The ingest op's id.
    pub op: u64,
    /// When the ingest op was invoked (before its earlier steps ran).
    pub op_start: u64,
    /// Step start, ns since run start.
    pub start: u64,
    /// Step end, ns since run start.
    pub end: u64,
}

/// A step that read and changed nothing: its index and interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadStep {
    /// Step index within the op.
    pub idx: u32,
    /// Step start, ns since run start.
    pub start: u64,
    /// Step end, ns since run start.
    pub end: u64,
}
