//! Which action of BacktalkGroups.tla each step of a groups statement file
//! takes, found from what the step does to the tables (SQLite's authorizer
//! on a scratch database, as `check` finds the event-insert step), never
//! from its name. A design whose steps do not map one-to-one onto the
//! spec's actions is refused, naming the first step that has no action:
//! it needs a refinement mapping, which `validate` does not build.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use crate::statements::origin::{accesses, origins, Act};
use crate::statements::{open_scratch, StopIf};
use crate::workload::groups::statements::GroupsVariant;

/// The spec's `Variant` a design implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecVariant {
    /// s3 is one conditional UPDATE (`S3Atomic`).
    Atomic,
    /// s3 is a read of the status, then a write (`S3ReadNaive`, `S3WriteNaive`).
    Naive,
}

impl SpecVariant {
    /// The spec's name for it.
    pub fn name(self) -> &'static str {
        match self {
            SpecVariant::Atomic => "atomic",
            SpecVariant::Naive => "naive",
        }
    }
}

/// A design that maps onto the spec: ingest steps 0..3 are s1, s2, s3
/// (atomic) or s1, s2, s3 read, s3 write (naive); resolve step 0 is the
/// resolve, step 1 (if any) the refused resolve's probe.
#[derive(Debug, Clone)]
pub struct Design {
    /// Which s3 the design has.
    pub variant: SpecVariant,
    /// The ingest's step names, by index.
    pub ingest: Vec<String>,
    /// The resolve's step names, by index.
    pub resolve: Vec<String>,
}

/// Why a design is refused: the step with no action, and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("`{step}` has no action in the spec: {why}")]
pub struct Refused {
    /// `ingest.NAME` or `resolve.NAME` (or the op when a step is missing).
    pub step: String,
    /// What it does instead.
    pub why: String,
}

/// What one statement does to the two tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Does {
    InsertEvent,
    InsertGroup,
    UpdateGroup,
    ReadGroup,
    Other,
}

impl Does {
    fn words(self) -> &'static str {
        match self {
            Does::InsertEvent => "inserts the event row",
            Does::InsertGroup => "inserts the group row",
            Does::UpdateGroup => "updates the group row",
            Does::ReadGroup => "reads the group row",
            Does::Other => {
                "does something no single action of the spec does (another table, \
                            several tables, an insert that also updates, a trigger)"
            }
        }
    }
}

/// Maps `v`'s steps onto the spec's actions. Errors: the first step with
/// no action.
pub fn map(v: &GroupsVariant) -> Result<Design, Refused> {
    let refuse = |op: &str, name: &str, why: String| Refused {
        step: format!("{op}.{name}"),
        why,
    };
    for (op, p) in [("ingest", &v.ingest), ("resolve", &v.resolve)] {
        if let Some(t) = p.txns.first() {
            return Err(refuse(
                op,
                &p.steps[t.first].name,
                "it opens a transaction block: several statements take effect as one, \
                 which no single action of the spec does"
                    .into(),
            ));
        }
    }
    let does = classify(v).map_err(|why| Refused {
        step: "schema".into(),
        why,
    })?;
    let (ingest, resolve) = (&does.0, &does.1);
    let name = |i: usize| v.ingest.steps[i].name.as_str();
    let expect = |i: usize, want: Does, action: &str| -> Result<(), Refused> {
        match ingest.get(i) {
            None => Err(Refused {
                step: "ingest".into(),
                why: format!("it has no step for the spec's {action}"),
            }),
            Some(d) if *d == want => Ok(()),
            Some(d) => Err(refuse(
                "ingest",
                name(i),
                format!("it {}, where the spec's {action} comes", d.words()),
            )),
        }
    };
    expect(0, Does::InsertEvent, "s1 (the event insert)")?;
    if v.event_step != Some(0) || v.ingest.steps[0].stop_if != Some(StopIf::ChangesZero) {
        return Err(refuse(
            "ingest",
            name(0),
            "the event insert must stop the attempt when it changed nothing \
             (`stop-if: changes = 0`), as s1 does on a duplicate"
                .into(),
        ));
    }
    expect(1, Does::InsertGroup, "s2 (the group insert)")?;
    let variant = match ingest.get(2) {
        Some(Does::ReadGroup) => SpecVariant::Naive,
        _ => SpecVariant::Atomic,
    };
    let counting = if variant == SpecVariant::Naive { 3 } else { 2 };
    expect(counting, Does::UpdateGroup, "s3 (the counting update)")?;
    if v.counting_step != counting {
        return Err(refuse(
            "ingest",
            name(counting),
            "it is not the counting step, where the spec's s3 comes".into(),
        ));
    }
    if let Some(extra) = v.ingest.steps.get(counting + 1) {
        return Err(refuse(
            "ingest",
            &extra.name,
            "it comes after the counting step, where the spec's attempt has ended".into(),
        ));
    }
    let rname = |i: usize| v.resolve.steps[i].name.as_str();
    match resolve.first() {
        Some(Does::UpdateGroup) if v.resolve.steps[0].stop_if.is_some() => {}
        Some(d) => {
            return Err(refuse(
                "resolve",
                rname(0),
                format!(
                    "it {}, where the spec's Resolve (one UPDATE that stops the op) comes",
                    d.words()
                ),
            ))
        }
        None => unreachable!("a groups variant has a resolve step"),
    }
    if let Some(d) = resolve.get(1) {
        if *d != Does::ReadGroup {
            return Err(refuse(
                "resolve",
                rname(1),
                format!(
                    "it {}, where only the refused resolve's probe may come",
                    d.words()
                ),
            ));
        }
    }
    if let Some(extra) = v.resolve.steps.get(2) {
        return Err(refuse(
            "resolve",
            &extra.name,
            "a resolve has the update and its probe only".into(),
        ));
    }
    Ok(Design {
        variant,
        ingest: v.ingest.steps.iter().map(|s| s.name.clone()).collect(),
        resolve: v.resolve.steps.iter().map(|s| s.name.clone()).collect(),
    })
}

/// For validate, whose trace compares what a naive design's read returned
/// with the spec's state: the read's first column must be the group
/// row's status (by the column's origin in the schema, never its alias),
/// as `S3ReadNaive` reads it. A read of something else (the count, as a
/// lost-update design reads it) observes nothing the spec's action does:
/// judging it as a status would call a row with a count "no row", so such
/// a design is refused, naming the read. `replay` does not need this: it
/// re-executes the statements themselves.
pub fn read_observes_status(v: &GroupsVariant, d: &Design) -> Result<(), Refused> {
    if d.variant != SpecVariant::Naive {
        return Ok(());
    }
    let read = &v.ingest.steps[2];
    let refused = |why: String| Refused {
        step: format!("ingest.{}", read.name),
        why,
    };
    let schema = v
        .file
        .blocks
        .iter()
        .find(|b| b.name == "schema")
        .ok_or_else(|| refused("the statement file has no schema".into()))?;
    let conn = open_scratch(&v.file, schema).map_err(|e| refused(e.to_string()))?;
    let first = |sql: &str, col: usize| {
        origins(&conn, sql)
            .map_err(|e| refused(e.to_string()))
            .map(|o| o.get(col).cloned().flatten())
    };
    let status = first(&v.export_groups, 3)?;
    let reads = first(&read.sql, 0)?;
    match (&reads, &status) {
        (Some(r), Some(s))
            if r.table.eq_ignore_ascii_case(&s.table)
                && r.column.eq_ignore_ascii_case(&s.column) =>
        {
            Ok(())
        }
        _ => Err(refused(format!(
            "its first column is {}, where the spec's S3ReadNaive reads the group's status \
             ({}): what it returned is not what the spec's read observes",
            reads.map_or("no table's column".into(), |c| format!(
                "{}.{}",
                c.table, c.column
            )),
            status.map_or("the export's status column".into(), |c| format!(
                "{}.{}",
                c.table, c.column
            )),
        ))),
    }
}

/// What each ingest and resolve step does, by SQLite's authorizer on a
/// scratch database with the file's schema. Errors: the schema or a
/// statement cannot be prepared (it was checked when the run began).
fn classify(v: &GroupsVariant) -> Result<(Vec<Does>, Vec<Does>), String> {
    let schema = v
        .file
        .blocks
        .iter()
        .find(|b| b.name == "schema")
        .ok_or("the statement file has no schema")?;
    let mut conn = open_scratch(&v.file, schema).map_err(|e| e.to_string())?;
    let table_of = |sql: &str, col: usize| -> Result<String, String> {
        origins(&conn, sql)
            .map_err(|e| e.to_string())?
            .get(col)
            .cloned()
            .flatten()
            .map(|c| c.table)
            .ok_or_else(|| "an export column comes from no table".to_string())
    };
    let events = table_of(&v.export_events, 0)?;
    let groups = table_of(&v.export_groups, 3)?;
    let mut one = |sql: &str, readonly: bool| -> Result<Does, String> {
        let acc = accesses(&mut conn, sql).map_err(|e| e.to_string())?;
        let is = |t: &str, name: &str| t.eq_ignore_ascii_case(name);
        if acc.iter().any(|a| a.via.is_some() && a.act != Act::Read) {
            return Ok(Does::Other);
        }
        let writes: Vec<_> = acc.iter().filter(|a| a.act != Act::Read).collect();
        let reads_other = acc
            .iter()
            .any(|a| a.act == Act::Read && !is(&a.table, &groups) && !is(&a.table, &events));
        if reads_other {
            return Ok(Does::Other);
        }
        if writes.is_empty() {
            let only_groups = readonly && acc.iter().all(|a| is(&a.table, &groups));
            return Ok(if only_groups && !acc.is_empty() {
                Does::ReadGroup
            } else {
                Does::Other
            });
        }
        let all = |act: Act, t: &str| writes.iter().all(|a| a.act == act && is(&a.table, t));
        let reads_events = acc
            .iter()
            .any(|a| is(&a.table, &events) && a.act == Act::Read);
        Ok(if all(Act::Insert, &events) {
            Does::InsertEvent
        } else if all(Act::Insert, &groups) && !reads_events {
            Does::InsertGroup
        } else if all(Act::Update, &groups) && !reads_events {
            Does::UpdateGroup
        } else {
            Does::Other
        })
    };
    let ingest = v
        .ingest
        .steps
        .iter()
        .map(|s| one(&s.sql, s.readonly))
        .collect::<Result<Vec<_>, _>>()?;
    let resolve = v
        .resolve
        .steps
        .iter()
        .map(|s| one(&s.sql, s.readonly))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((ingest, resolve))
}
