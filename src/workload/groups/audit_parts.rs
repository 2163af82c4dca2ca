//! `specstorm audit` of a long groups history in bounded memory: the
//! history and the final tables are split by (project, fingerprint) key
//! into temp files, each part is judged alone with the checkers of a
//! whole history, and the parts' verdicts are merged
//! ([`super::judge_parts`]). Memory then grows with the largest part, not
//! with the run.
//!
//! Pass 1 ([`super::audit_route`]) reads the history once and writes
//! each op's summary to the bucket of its key. The final tables are read
//! once: group rows and the rows per key go to their key's bucket, and
//! so does each event row's id, which its part then marks on its event's
//! facts (what the checkers look up), so no id set of the table is held.
//! An event row whose id is no event of its key's bucket (an event of
//! another key, or of no op: TypeOK's `events ⊆ Events`) sends the audit
//! to the whole judge. The event map is sized beforehand from pass 1's
//! count of the largest part's ingests, and each key's counting steps
//! from its count of the key's ingests, so neither grows by copying; the
//! map and the largest key's steps are emptied and kept from part to part,
//! so no part takes fresh pages for them; a history with no
//! fault window keeps no acknowledged intervals ([`Facts::acked_unread`]).
//! Buckets are judged in parts of consecutive buckets holding at most
//! [`Budget::part_ops`] ops (a bucket above it is a part alone).
//!
//! Where the split cannot be exact (an event id under keys of two
//! buckets, in the history or between the history and the table, an op
//! id invoked twice under two keys, an unreadable entry, no header or two)
//! or the merge has no exact form, [`judge`] gives None and the caller
//! judges the whole history as before, which also reports any error.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use super::audit_route::{self, count_key, key_bucket, Routed, BUCKETS};
use super::audit_spill::{SpillReader, SpillWriter};
use super::checker::op_fact::HeldId;
use super::checker::op_fact_codec;
use super::checker::tables::{text, GroupRow, RowSink, Tables};
use super::checker::{Completeness, Facts};
use super::config::MinEvidence;
use super::judge_parts::{self, Merged};
use crate::audit_error::AuditError;
use crate::history::reader::Payloads;
use crate::history::{codec, Footer, Header};
use crate::workload::Value;
use std::cmp::Reverse;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

/// How large a history is judged in parts, and how large the parts are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// A history file below this size is judged whole, as before.
    pub whole_below_bytes: u64,
    /// Ops (invokes) per part at most, unless one bucket holds more.
    pub part_ops: u64,
}

impl Budget {
    /// The audit's: a part of 400,000 ops takes about 200 MB.
    pub const DEFAULT: Budget = Budget {
        whole_below_bytes: 16 << 20,
        part_ops: 400_000,
    };
}

/// What a judge in parts gives: the merged verdicts and what the history
/// held.
pub struct Judged {
    /// Verdicts, stranded report, evidence and coverage.
    pub merged: Merged,
    /// The history's header.
    pub header: Header,
    /// Its footer, if it was written to the end.
    pub footer: Option<Footer>,
    /// Ops invoked.
    pub ops: u64,
    /// Ops never completed.
    pub unfinished: u64,
    /// Events acknowledged (an ingest answered ok) at least once.
    pub acked: u64,
    /// Parts judged (0: the whole history at once).
    pub parts: u64,
}

/// Where the final rows come from: fills a sink, returns where they were
/// read from. Given the header's namespace and whether the history is cut
/// (it has no footer).
pub type ReadRows<'a> = dyn FnMut(&mut dyn RowSink, &str, bool) -> Result<String, AuditError> + 'a;

/// Judges a history in parts: its records' `payloads` in file order; `read_rows` reads
/// the final tables;
/// `tables` sets the final read's fields of each part's tables.
/// Ok(None): no exact judge in parts (see the module's doc). Errors: a
/// temp file cannot be written or read, or the tables cannot be read.
pub fn judge(
    payloads: Payloads,
    read_rows: &mut ReadRows<'_>,
    tables: &dyn Fn(&mut Tables, Option<&Footer>, u64),
    completeness: &dyn Fn(bool) -> Result<Completeness, AuditError>,
    min: &MinEvidence,
    budget: Budget,
) -> Result<Option<(Judged, String)>, AuditError> {
    let temp = |e: io::Error| AuditError::Unreadable(format!("a temp file of the audit: {e}"));
    let dir = tempfile::tempdir().map_err(temp)?;
    // Where a long audit's time goes, phase by phase, for
    // RUST_LOG=specstorm::workload::groups::audit_parts=debug.
    let started = std::time::Instant::now();
    let phase = |name: &str| tracing::debug!(phase = name, elapsed = ?started.elapsed(), "audit");
    let Some(routed) = audit_route::route(payloads, dir.path()).map_err(temp)? else {
        return Ok(None);
    };
    if !routed.ids.one_bucket_each().map_err(temp)? {
        return Ok(None);
    }
    phase("route");
    let complete = completeness(routed.footer.is_some())?;
    let mut router = Router::new(dir.path()).map_err(temp)?;
    let source = read_rows(
        &mut router,
        &routed.header.namespace,
        routed.footer.is_none(),
    )?;
    if let Some(e) = router.err.take() {
        return Err(temp(e));
    }
    let present = router
        .present
        .into_iter()
        .map(SpillWriter::finish)
        .collect::<io::Result<Vec<_>>>()
        .map_err(temp)?;
    phase("rows");
    let mut groups = router.groups;
    let mut per_key: Vec<HashMap<(String, String), u64>> = vec![HashMap::new(); BUCKETS];
    for (p, f, b, n) in router.per_key.keys {
        per_key[b as usize].insert((p, f), n);
    }
    let mut hints: Vec<Vec<(&str, &str, u64)>> = vec![Vec::new(); BUCKETS];
    for (p, fingerprints) in &routed.key_ingests {
        for (f, &n) in fingerprints {
            hints[key_bucket(p, f)].push((p, f, n));
        }
    }
    let mut parts = Vec::new();
    let mut acked = 0u64;
    let ranges = ranges(&routed.ops, budget.part_ops);
    let ingests = |r: &std::ops::Range<usize>| {
        routed.ingests[r.clone()]
            .iter()
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    };
    // The largest lists' room, taken once at the largest part's size and
    // kept from part to part (room a part does not touch costs no
    // memory): the event map, sized for the part with most ingests, and
    // the counting steps of the key with most.
    let most = ranges.iter().map(ingests).max().unwrap_or_default();
    let steps = hints.iter().flatten().map(|h| h.2).max().unwrap_or(0);
    let mut room = (
        super::checker::event_map::EventMap::default(),
        Vec::with_capacity(usize::try_from(steps).unwrap_or(0)),
    );
    for range in ranges {
        let mut facts = Facts::default();
        (facts.events, facts.spare_steps) = std::mem::take(&mut room);
        facts.acked_unread = !routed.fault_windows;
        for &(p, f, n) in hints[range.clone()].iter().flatten() {
            count_key(&mut facts.ingest_hint, (p, f), n);
        }
        let Some(mut facts) =
            read_facts(facts, &routed, &routed.buckets[range.clone()], most).map_err(temp)?
        else {
            return Ok(None);
        };
        facts.completeness = complete;
        acked += facts.acked_events();
        phase("part facts");
        let mut t = Tables {
            event_rows: router.rows,
            ..Default::default()
        };
        let mut rows: Vec<(u64, GroupRow)> = Vec::new();
        for b in range {
            rows.append(&mut groups[b]);
            t.events_per_key.extend(std::mem::take(&mut per_key[b]));
            // An event row whose id no event of its key's bucket has is
            // an event of another key, or of no op at all (TypeOK's
            // `events ⊆ Events`): either way a finding no part can judge
            // alone, so the whole history is judged.
            if !mark_present(&mut facts, &present[b]).map_err(temp)? {
                return Ok(None);
            }
        }
        rows.sort_by_key(|(i, _)| *i);
        t.groups = rows.into_iter().map(|(_, g)| g).collect();
        tables(&mut t, routed.footer.as_ref(), routed.last_t);
        phase("part tables");
        parts.push(judge_parts::judge(&facts, &t));
        phase("part judged");
        room = facts.take_room();
    }
    let parts_judged = parts.len() as u64;
    let Some(merged) = judge_parts::merge(parts, min) else {
        return Ok(None);
    };
    let judged = Judged {
        merged,
        header: routed.header,
        footer: routed.footer,
        ops: routed.op_count,
        unfinished: routed.unfinished,
        acked,
        parts: parts_judged,
    };
    Ok(Some((judged, source)))
}

/// Marks on `facts` the events of a bucket's event rows (its `present`
/// file); false at the first id no event of the part has.
fn mark_present(facts: &mut Facts, present: &Path) -> io::Result<bool> {
    let mut r = SpillReader::open(present)?;
    // A table's rows lie in about the order of their inserts, and its
    // events in the facts in about the order of their ops.
    let mut near = 0;
    while let Some((id, shape)) = r.next_record()? {
        let held = match shape {
            TEXT_ID => HeldId::Text(String::from_utf8_lossy(id).into()),
            _ => {
                let b: [u8; 16] = id.try_into().map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidData, "an event id of 16 bytes")
                })?;
                HeldId::Bits(u128::from_le_bytes(b), shape == DASHED_ID)
            }
        };
        if !facts.mark_in_table_held(&held, &mut near) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// How an event row's id is written to its bucket's `present` file.
const TEXT_ID: u64 = 0;
const BITS_ID: u64 = 1;
const DASHED_ID: u64 = 2;

/// Where the final rows go: group rows, rows per key and each event
/// row's id by key bucket (group rows and counts kept, they are one per
/// key; ids to the bucket's `present` file).
struct Router {
    present: Vec<SpillWriter>,
    groups: Vec<Vec<(u64, GroupRow)>>,
    per_key: RowKeys,
    rows: u64,
    group_rows: u64,
    err: Option<io::Error>,
}

impl Router {
    fn new(dir: &Path) -> io::Result<Router> {
        Ok(Router {
            present: (0..BUCKETS)
                .map(|b| SpillWriter::create(dir.join(format!("present-{b}"))))
                .collect::<io::Result<_>>()?,
            groups: vec![Vec::new(); BUCKETS],
            per_key: RowKeys::default(),
            rows: 0,
            group_rows: 0,
            err: None,
        })
    }
}

impl RowSink for Router {
    fn event(&mut self, id: &Value, project: &Value, fingerprint: &Value) {
        self.event_text(&text_of(id), &text_of(project), &text_of(fingerprint));
    }

    fn event_text(&mut self, id: &str, project: &str, fingerprint: &str) {
        match super::id_bits::bits(id) {
            Some(bits) => self.event_bits(id.as_bytes(), bits, project, fingerprint),
            None => {
                self.rows += 1;
                let b = self.per_key.count(project, fingerprint);
                let done = self.present[b].record(id.as_bytes(), TEXT_ID);
                if let Err(e) = done {
                    self.err.get_or_insert(e);
                }
            }
        }
    }

    fn event_bits(
        &mut self,
        _: &[u8],
        (dashed, v): (bool, u128),
        project: &str,
        fingerprint: &str,
    ) {
        self.rows += 1;
        let b = self.per_key.count(project, fingerprint);
        let shape = if dashed { DASHED_ID } else { BITS_ID };
        if let Err(e) = self.present[b].record(&v.to_le_bytes(), shape) {
            self.err.get_or_insert(e);
        }
    }

    fn group(&mut self, row: GroupRow) {
        let (p, f) = row.key();
        self.groups[key_bucket(&p, &f)].push((self.group_rows, row));
        self.group_rows += 1;
    }
}

/// The event rows per (project, fingerprint), and each key's bucket,
/// found by one hash of the row's text (a row costs no text of its own).
#[derive(Default)]
struct RowKeys {
    /// (project, fingerprint, bucket, rows).
    keys: Vec<(String, String, u16, u64)>,
    index: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

impl RowKeys {
    /// Counts a row of this key; returns the key's bucket.
    fn count(&mut self, project: &str, fingerprint: &str) -> usize {
        use std::hash::BuildHasher;
        let hash = self.hasher.hash_one((project, fingerprint));
        let keys = &mut self.keys;
        let found = self.index.find(hash, |&i| {
            let (p, f, ..) = &keys[i as usize];
            p == project && f == fingerprint
        });
        let i = match found {
            Some(&i) => i as usize,
            None => {
                let i = keys.len();
                let b = key_bucket(project, fingerprint) as u16;
                keys.push((project.to_string(), fingerprint.to_string(), b, 0));
                let hasher = &self.hasher;
                self.index.insert_unique(hash, i as u32, |&j| {
                    let (p, f, ..) = &keys[j as usize];
                    hasher.hash_one((p.as_str(), f.as_str()))
                });
                i
            }
        };
        keys[i].3 += 1;
        usize::from(keys[i].2)
    }
}

/// A value's text as [`text`] gives it, borrowed where it is text.
fn text_of(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::Text(s) => std::borrow::Cow::Borrowed(s),
        other => std::borrow::Cow::Owned(text(other)),
    }
}

/// Consecutive buckets in parts of at most `part_ops` ops (a bucket above
/// it alone).
fn ranges(ops: &[u64], part_ops: u64) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut sum) = (0, 0u64);
    for (b, &n) in ops.iter().enumerate() {
        if b > start && sum + n > part_ops {
            out.push(start..b);
            (start, sum) = (b, 0);
        }
        sum += n;
    }
    out.push(start..ops.len());
    out
}

/// `facts` (none taken yet, its hints set) with the buckets' records,
/// read back in history order (a record written to every bucket taken
/// once): each op's summary recorded, the header and the fault entries
/// taken as entries; the event map made room for `(ids, bytes)` (those
/// of the largest part, once for all). Ok(None): the facts refuse an
/// entry (the whole history's judge reports it).
fn read_facts(
    mut facts: Facts,
    routed: &Routed,
    buckets: &[PathBuf],
    (ids, bytes): (u64, u64),
) -> io::Result<Option<Facts>> {
    let mut readers = buckets
        .iter()
        .map(|p| SpillReader::open(p))
        .collect::<io::Result<Vec<_>>>()?;
    facts.events.reserve(ids as usize, bytes as usize);
    // The facts' own index of each named triple pass 1 numbered.
    let mut named = vec![u32::MAX; routed.named.len()];
    let corrupt = |e: op_fact_codec::Corrupt| io::Error::new(io::ErrorKind::InvalidData, e);
    // The readers merged by their next record's number: each record
    // costs a few comparisons, not a look at every bucket.
    let mut heap = std::collections::BinaryHeap::with_capacity(readers.len());
    for (i, r) in readers.iter_mut().enumerate() {
        if let Some(s) = r.peek()? {
            heap.push(Reverse((s, i)));
        }
    }
    let mut last: Option<u64> = None;
    while let Some(mut top) = heap.peek_mut() {
        let Reverse((seq, i)) = *top;
        let r = &mut readers[i];
        // Each record taken once, from the first bucket holding it (ties
        // pop in bucket order), where it lies in that bucket's read buffer.
        // A number is in a bucket once at most (pass 1 numbers each entry
        // and each unfinished op, and writes it once per bucket), so an
        // equal number popped again is the same record in another bucket.
        if last != Some(seq) {
            last = Some(seq);
            match r.current().split_first() {
                Some((&audit_route::OP_FACT, rest)) => {
                    let mut local = |facts: &mut Facts, n: &mut u32| {
                        let local = &mut named[*n as usize];
                        if *local == u32::MAX {
                            let (p, f, g) = &routed.named[*n as usize];
                            *local = facts.name(p, f, g);
                        }
                        *n = *local;
                    };
                    match op_fact_codec::decode_unboxed(rest).map_err(corrupt)? {
                        Ok(mut ingest) => {
                            local(&mut facts, &mut ingest.named);
                            facts.apply_ingest(&ingest);
                        }
                        Err(mut fact) => {
                            if let Some(n) = fact.named_mut() {
                                local(&mut facts, n);
                            }
                            facts.apply(fact);
                        }
                    }
                }
                Some((_, record)) => {
                    // A record the codec or the facts refuse: the
                    // whole history's judge reports it.
                    let ok = codec::decode(record)
                        .ok()
                        .is_some_and(|e| facts.add(e).is_ok());
                    if !ok {
                        return Ok(None);
                    }
                }
                None => return Ok(None),
            }
        }
        r.advance();
        // The reader's next record takes its place: one sift, not a pop
        // and a push.
        match r.peek()? {
            Some(s) => *top = Reverse((s, i)),
            None => {
                std::collections::binary_heap::PeekMut::pop(top);
            }
        }
    }
    facts.finish();
    Ok(Some(facts))
}
