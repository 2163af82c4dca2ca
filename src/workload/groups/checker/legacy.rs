//! Histories written before the runtimes recorded three facts as fields:
//! a failed step's kind (`error_kind`), why an op was abandoned
//! (`aborted`), and what the server answered to a request whose answer
//! the fault proxy dropped (`dropped`). Such a history says them only in
//! words (a step's `error`, an op's `error`, a fault's `detail`); these
//! functions read the words exactly as the checkers read them before the
//! fields existed, so that a saved run folder audits as it did. An entry
//! that has the field is read by the field; nothing else reads the words.
//!
//! Workload layer, the checkers' own: imports the history's types and the
//! stop signals' causes, nothing above.

use crate::control::AbortCause;
use crate::history::StepErrorKind;

/// A failed step's kind, from a step entry without `error_kind`: busy
/// when SQLite's message says "locked" or "busy" (SQLITE_BUSY's "database
/// is locked", SQLITE_LOCKED's "database table is locked").
pub fn step_error_kind(message: &str) -> StepErrorKind {
    if message.contains("locked") || message.contains("busy") {
        StepErrorKind::Busy
    } else {
        StepErrorKind::Other
    }
}

/// Why an op was abandoned, from a completion without `aborted`: by the
/// user when its error says "aborted" (`aborted by the user between
/// steps`); None otherwise (an abandonment at the end of `stop.grace` was
/// read as any other error, and still is).
pub fn abort_cause(error: &str) -> Option<AbortCause> {
    error.contains("aborted").then_some(AbortCause::ByUser)
}

/// The fault proxy's drop, from a proxy fault entry without `dropped`:
/// None when its `detail` does not begin with `drop_response` (no
/// drop); else the server's (status, body) where the words hold them
/// (`drop_response: upstream answered STATUS: BODY`; without a body, or
/// one that broke off, None).
pub fn dropped(detail: Option<&str>) -> Option<Option<(u16, &str)>> {
    let detail = detail.filter(|d| d.starts_with("drop_response"))?;
    let answer = (|| {
        let rest = detail.strip_prefix("drop_response: upstream answered ")?;
        let (status, body) = rest.split_once(": ")?;
        Some((status.parse().ok()?, body))
    })();
    Some(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Entry, FaultEntry};

    /// A line of a schema-3 history written before the fields existed.
    fn line(json: &str) -> Entry {
        serde_json::from_str(json).expect("an old history line")
    }

    #[test]
    fn an_old_failed_step_is_busy_by_its_message() {
        let Entry::Step(s) = line(
            r#"{"type":"step","op":7,"idx":1,"step":"s2","start":10,"end":12,"changes":0,"rows":0,"error":"database is locked"}"#,
        ) else {
            panic!("a step line")
        };
        assert_eq!(s.error_kind, None);
        assert_eq!(
            step_error_kind(s.error.as_deref().unwrap()),
            StepErrorKind::Busy
        );
        assert_eq!(
            step_error_kind("UNIQUE constraint failed: events.id"),
            StepErrorKind::Other
        );
    }

    #[test]
    fn an_old_abandoned_op_is_by_the_user_by_its_error() {
        let Entry::Info(c) = line(
            r#"{"type":"info","t":30,"op":7,"worker":0,"f":"ingest","error":"aborted by the user between steps"}"#,
        ) else {
            panic!("an info line")
        };
        assert_eq!(c.result.aborted, None);
        assert_eq!(
            abort_cause(c.result.error.as_deref().unwrap()),
            Some(AbortCause::ByUser)
        );
        let grace = "abandoned: still in flight 30s after the load stopped (stop.grace)";
        assert_eq!(abort_cause(grace), None);
    }

    #[test]
    fn an_old_proxy_drop_is_read_from_its_detail() {
        let Entry::Fault(f) = line(
            r#"{"type":"fault","t":40,"fault":0,"kind":"proxy","action":"inject","op":7,"forwarded":true,"detail":"drop_response: upstream answered 200: {\"accepted\":true,\"group_id\":\"g:p:f\"}"}"#,
        ) else {
            panic!("a fault line")
        };
        let f: FaultEntry = f;
        assert_eq!(f.dropped, None);
        assert_eq!(
            dropped(f.detail.as_deref()),
            Some(Some((200, r#"{"accepted":true,"group_id":"g:p:f"}"#)))
        );
        // A drop whose body was not kept, or broke off: a drop, no answer.
        assert_eq!(
            dropped(Some("drop_response: upstream answered 200")),
            Some(None)
        );
        assert_eq!(
            dropped(Some(
                "drop_response: upstream answered 200, its body broke off: reset"
            )),
            Some(None)
        );
        // Any other toxic is no drop.
        for other in ["reset", "error 503", "latency 5ms"] {
            assert_eq!(dropped(Some(other)), None, "{other}");
        }
        assert_eq!(dropped(None), None);
    }
}
