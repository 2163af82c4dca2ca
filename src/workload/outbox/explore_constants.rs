//! The outbox world's constants (from the scenario's `[explore]`
//! section) and its deliveries: what the world and its state invariants
//! ([`super::outbox_invariants`]) both read.
//!
//! Workload layer: imports only the scenario's `[explore]`.

use crate::scenario::Explore;

/// One delivery of the input queue: (msg_id, dup_id).
pub type Delivery = (i64, u32);

/// The world's constants, from the scenario's `[explore]` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Constants {
    /// Message ids 1..=M (`MessageCount`).
    pub messages: i64,
    /// Dup ids 1..=D per message (`DupCount`).
    pub deliveries: u32,
    /// Handlers H (`Processes`).
    pub handlers: usize,
    /// `Fail()` branches a behaviour may take in all.
    pub fails: u32,
    /// Failed attempts whose delivery comes back, in all.
    pub redeliveries: u32,
    /// The constant `:now_ms`.
    pub now_ms: i64,
}

impl Constants {
    /// The constants of an `[explore]` section.
    pub fn new(x: &Explore) -> Constants {
        Constants {
            messages: i64::from(x.messages),
            deliveries: x.deliveries,
            handlers: x.handlers as usize,
            fails: x.fails,
            redeliveries: x.redeliveries,
            now_ms: x.now_ms,
        }
    }
}
