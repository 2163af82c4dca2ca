//! The counter's audit (`specstorm audit` of a counter run folder): its
//! saved history read again into the increments' facts, the final count
//! read again from the folder's `target.db` through the saved statement
//! file's `export.count` (the database is opened as the audit opens every
//! database it does not trust), and `NoLostIncrement` judged again. The
//! comparison with the run's `checks.json` and the exit are the audit's
//! own, shared by every workload.

use super::{checker, load};
use specstorm::audit_error::AuditError;
use specstorm::audit_record::{AuditFolder, HistoryRead, Rejudged};
use specstorm::history::Entry;

/// Judges the counter run folder `f` again.
pub fn judge(f: &AuditFolder<'_>) -> Result<Rejudged, AuditError> {
    let unusable = |e: String| AuditError::Input(format!("the saved scenario cannot be used: {e}"));
    let (scenario, _) =
        specstorm::scenario::load(Some(f.scenario), &[]).map_err(|e| unusable(e.to_string()))?;
    let (file, text) = specstorm::variant::locate(&scenario.variant, f.scenario.parent())
        .map_err(|e| unusable(e.to_string()))?;
    let file = specstorm::statements::parse(&file, &text).map_err(|e| unusable(e.to_string()))?;
    let statements = load::Statements::of(&file).map_err(|e| unusable(e.to_string()))?;

    let (entries, cut_line_bytes) = specstorm::audit_killed::entries(f.history)?;
    let (mut facts, mut completions, mut footer) = (checker::Facts::default(), 0, None);
    for e in entries {
        match e.map_err(|e| AuditError::Unreadable(format!("{e:#}")))? {
            Entry::Invoke(_) => facts.ops += 1,
            Entry::Ok(_) => facts.ok += 1,
            Entry::Fail(_) => facts.fail += 1,
            Entry::Info(_) => facts.info += 1,
            Entry::Footer(x) => footer = Some(x),
            _ => {}
        }
        completions = facts.ok + facts.fail + facts.info;
    }
    // An op without a completion may have happened, as the run counts it.
    let unfinished = facts.ops.saturating_sub(completions);
    facts.info += unfinished;

    let db = f.run_dir.join("target.db");
    let conn = specstorm::audit_db::open_untrusted(&db, f.limits)?;
    let count: i64 = conn
        .query_row(&statements.export_count, [], |r| r.get(0))
        .map_err(|e| conn.error(&e))?;
    Ok(Rejudged {
        tables: "target.db".to_string(),
        results: vec![checker::no_lost_increment(&facts, count)],
        stranded: Default::default(),
        coverage: Default::default(),
        evidence: Default::default(),
        history: HistoryRead {
            footer: footer.is_some(),
            partial: footer.as_ref().is_some_and(|x| x.partial),
            ops: facts.ops,
            unfinished,
            cut_line_bytes,
        },
        in_flight: load::WORKERS as u64,
        expect: scenario.expectation().0,
    })
}
