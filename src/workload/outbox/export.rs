//! Reads a saved `GET /v1/outbox/export` answer (contract v1, outbox) into
//! the outbox checkers' [`OutboxTables`]. Values are checked as
//! `checker::outbox::tables::read` checks SQLite's: an integer column
//! holding anything but an integer or null is named in `bad_values`
//! (TypeOK reports it), never dropped silently.
//!
//! `state_log` rows may carry `kind` (`init`, `change`, `cleanup`: the
//! reference server sends it). A service that omits it gets it derived:
//! ver 0 is `init`; a row with no tx_id directly after a row of the same
//! message that has one is the `cleanup` of that change (the protocol's
//! two shapes of cleanup); every other row is a `change`. Counting a
//! doubtful row as a change can only make AtMostOneStateChange stricter
//! for services that omit `kind`, never hide a second change.
//!
//! The HTTP target streams the answer to the run folder; this reads it.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use crate::workload::outbox::checker::{OutRow, OutboxTables, StateRow};
use serde::Deserialize;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::path::Path;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Export {
    state_log: Vec<StateJson>,
    // Two-column rows, read as maps so that one reader serves both.
    outbox: Vec<HashMap<String, Json>>,
    out_queue: Vec<OutJson>,
    processed: Vec<HashMap<String, Json>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StateJson {
    ver: Json,
    msg_id: Json,
    tx_id: Json,
    #[serde(default)]
    kind: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutJson {
    seq: Json,
    msg_id: Json,
    ver: Json,
}

/// Reads a saved outbox export into tables; `read_start`/`read_end` are
/// left to the caller. Errors: not the contract's shape (what is wrong,
/// and the first bytes of the file).
pub fn read_outbox_export(path: &Path) -> Result<OutboxTables, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let head = || {
        crate::input::head(path, 200)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    let shape = |e: String| {
        format!(
            "the outbox export is not the contract's shape ({e}); it begins: {}",
            crate::target::http::client::excerpt(&head())
        )
    };
    let x: Export = serde_json::from_reader(std::io::BufReader::with_capacity(1 << 20, file))
        .map_err(|e| shape(e.to_string()))?;
    let mut t = OutboxTables::default();
    let mut bad = Vec::new();
    let mut int = |table: &str, col: &str, v: &Json| -> Option<i64> {
        match v {
            Json::Null => None,
            Json::Number(n) if n.as_i64().is_some() => n.as_i64(),
            other => {
                bad.push(format!("{table}.{col} = {other}"));
                None
            }
        }
    };
    for r in &x.state_log {
        t.state_log.push(StateRow {
            ver: int("state_log", "ver", &r.ver),
            msg_id: int("state_log", "msg_id", &r.msg_id),
            tx_id: int("state_log", "tx_id", &r.tx_id),
            kind: r.kind.clone().unwrap_or_default(),
        });
    }
    derive_kinds(&mut t.state_log, &x.state_log);
    let mut pairs = |rows: &[HashMap<String, Json>], table: &str, b: &str| {
        let mut out = Vec::new();
        for r in rows {
            let (Some(m), Some(v)) = (r.get("msg_id"), r.get(b)) else {
                return Err(shape(format!("a `{table}` row lacks `msg_id` or `{b}`")));
            };
            if r.len() != 2 {
                return Err(shape(format!(
                    "a `{table}` row has keys other than `msg_id` and `{b}`"
                )));
            }
            out.push((int(table, "msg_id", m), int(table, b, v)));
        }
        Ok(out)
    };
    t.outbox = Some(pairs(&x.outbox, "outbox", "ver")?);
    t.processed = pairs(&x.processed, "processed", "dup_id")?;
    for r in &x.out_queue {
        t.out_queue.push(OutRow {
            seq: int("out_queue", "seq", &r.seq),
            msg_id: int("out_queue", "msg_id", &r.msg_id),
            ver: int("out_queue", "ver", &r.ver),
        });
    }
    t.bad_values = bad;
    Ok(t)
}

/// Fills in `kind` where the service did not send it (see the module doc).
fn derive_kinds(rows: &mut [StateRow], json: &[StateJson]) {
    let by_ver: HashMap<i64, usize> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.ver.map(|v| (v, i)))
        .collect();
    for i in 0..rows.len() {
        if json[i].kind.is_some() {
            continue;
        }
        let r = &rows[i];
        let kind = if r.ver == Some(0) {
            "init"
        } else if r.tx_id.is_none()
            && r.ver
                .and_then(|v| by_ver.get(&(v - 1)))
                .is_some_and(|&p| rows[p].msg_id == r.msg_id && rows[p].tx_id.is_some())
        {
            "cleanup"
        } else {
            "change"
        };
        rows[i].kind = kind.to_string();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<OutboxTables, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("export.json");
        std::fs::write(&p, text).unwrap();
        read_outbox_export(&p)
    }

    #[test]
    fn reads_rows_and_derives_a_missing_kind() {
        let t = read(
            r#"{"state_log":[{"ver":0,"msg_id":null,"tx_id":null},
                             {"ver":1,"msg_id":7,"tx_id":3},
                             {"ver":2,"msg_id":7,"tx_id":null},
                             {"ver":3,"msg_id":8,"tx_id":null,"kind":"change"}],
                "outbox":[{"msg_id":7,"ver":0}],
                "out_queue":[{"seq":1,"msg_id":7,"ver":0}],
                "processed":[{"msg_id":7,"dup_id":1}]}"#,
        )
        .unwrap();
        let kinds: Vec<&str> = t.state_log.iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(kinds, ["init", "change", "cleanup", "change"]);
        assert_eq!(t.processed, vec![(Some(7), Some(1))]);
        assert_eq!(t.outbox, Some(vec![(Some(7), Some(0))]));
        assert!(t.bad_values.is_empty());
    }

    #[test]
    fn names_bad_values_and_refuses_other_shapes() {
        let t = read(
            r#"{"state_log":[],"outbox":[],"out_queue":[{"seq":1,"msg_id":"x","ver":0}],
                "processed":[]}"#,
        )
        .unwrap();
        assert_eq!(t.bad_values, vec!["out_queue.msg_id = \"x\"".to_string()]);
        for bad in [
            "hello",
            r#"{"state_log": []}"#,
            r#"{"state_log":[],"outbox":[],"out_queue":[],"processed":[{"msg_id":1}]}"#,
            r#"{"state_log":[],"outbox":[{"msg_id":1,"ver":2,"x":3}],"out_queue":[],"processed":[]}"#,
        ] {
            let e = read(bad).unwrap_err();
            assert!(e.contains("not the contract's shape"), "{e}");
        }
    }
}
