//! The outbox's part of the history's header ([`OutboxHeader`], under the
//! header's `outbox` key): the input queue's shape, as the checkers need
//! it. The run puts it ([`put`]); the checkers read it back ([`of`]).
//!
//! Layer: model. May import the modules of its own layer and of the
//! layers below it (core).

use crate::history::Header;
use serde::{Deserialize, Serialize};

/// The input queue of an outbox run, as the checkers need it: which
/// deliveries exist, and when one is given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxHeader {
    /// Message ids are 1..=messages.
    pub messages: u64,
    /// Dup ids are 1..=deliveries.
    pub deliveries: u32,
    /// A delivery whose attempts reach this many without an `ok` is given up.
    pub max_attempts: u32,
}

/// The header's keys the outbox owns.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outbox: Option<OutboxHeader>,
}

/// Puts the queue's shape `q` into the header `h`.
pub fn put(h: &mut Header, q: OutboxHeader) {
    h.put(&Part { outbox: Some(q) });
}

/// The queue's shape in the header `h`; None: not an outbox run's header
/// (or one without it).
pub fn of(h: &Header) -> Option<OutboxHeader> {
    h.part::<Part>().and_then(|p| p.outbox)
}

impl OutboxHeader {
    /// The header's workload part that holds `self` (for a header made by
    /// hand, e.g. in a test).
    pub fn into_part(self) -> crate::history::part::WorkloadPart {
        crate::history::part::WorkloadPart::of(&Part { outbox: Some(self) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header's JSON is the one histories of schemas 2 and 3 hold:
    /// the queue's shape under `outbox`, after the common keys.
    #[test]
    fn the_header_json_keeps_its_outbox_key() {
        let line = r#"{"schema_version":3,"workload":"outbox","scenario":"s","variant":"v","seed":7,"started_utc":"2026-01-01T00:00:00Z","step_log":true,"counting_step":0,"namespace":"","outbox":{"messages":5,"deliveries":2,"max_attempts":3}}"#;
        let h: Header = serde_json::from_str(line).unwrap();
        let q = OutboxHeader {
            messages: 5,
            deliveries: 2,
            max_attempts: 3,
        };
        assert_eq!(of(&h), Some(q));
        assert_eq!(serde_json::to_string(&h).unwrap(), line);
        let mut made: Header = serde_json::from_str(&line.replace(
            r#","outbox":{"messages":5,"deliveries":2,"max_attempts":3}"#,
            "",
        ))
        .unwrap();
        assert_eq!(of(&made), None);
        put(&mut made, q);
        assert_eq!(serde_json::to_string(&made).unwrap(), line);
        assert_eq!(made.workload_part, q.into_part());
    }
}
