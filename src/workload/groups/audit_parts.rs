//! `specstorm audit` of a long groups history in bounded memory: the
//! history and the final tables are split by (project, fingerprint) key
//! into temp files, each part is judged alone with the checkers of a
//! whole history, and the parts' verdicts are merged
//! ([`super::judge_parts`]). Memory then grows with the largest part, not
//! with the run.
//!
//! Pass 1 reads the history once and writes each entry to the bucket of
//! its op's key (an invoke carries the key; its steps and completion
//! follow it by op id), the header and every fault entry not tied to a
//! known op to every bucket, each entry with its place in the history, so
//! that a part of several buckets is read back in history order. It also
//! writes (event id, bucket) to a file per hash of the id. The final
//! tables are read once: group rows and the rows per key go to their
//! key's bucket, event ids to the file of their id's hash; each id file
//! is then joined with its history ids, giving per bucket the event ids
//! of its events that are in the table, which are marked on the part's
//! facts (what the checkers look up), so no id set of the table is held.
//! A part's event map is sized beforehand from pass 1's count of its
//! ingests, and each key's counting steps from its count of the key's
//! ingests, so neither grows by copying; a history with no fault window
//! keeps no acknowledged intervals ([`Facts::acked_unread`]). Op records
//! are read back where they lie in the temp file's buffer, a step with no
//! entry built ([`Facts::add_peeked`]).
//! Buckets are judged in parts of consecutive buckets holding at most
//! [`Budget::part_ops`] ops (a bucket above it is a part alone).
//!
//! Where the split cannot be exact (an event id under two keys, an op id
//! invoked twice under two keys, an unreadable entry, no header or two)
//! or the merge has no exact form, [`judge`] gives None and the caller
//! judges the whole history as before, which also reports any error.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use super::audit_spill::{hash, SpillReader, SpillWriter};
use super::checker::tables::{text, GroupRow, RowSink, Tables};
use super::checker::{Completeness, Facts};
use super::config::MinEvidence;
use super::judge_parts::{self, Merged};
use crate::audit_error::AuditError;
use crate::audit_history::entry_time;
use crate::history::codec::{self, Peek};
use crate::history::reader::Payloads;
use crate::history::{Entry, FaultAction, Footer, Header};
use crate::workload::Value;
use foldhash::fast::RandomState as Fast;
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

/// Buckets of keys (parts are made of consecutive buckets).
const BUCKETS: usize = 64;
/// Buckets of event ids (for the join of the history's ids and the table's).
const ID_BUCKETS: usize = 64;

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
    let Some(routed) = route(payloads, dir.path()).map_err(temp)? else {
        return Ok(None);
    };
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
    let Some(present) = join(&routed, router.ids, dir.path()).map_err(temp)? else {
        return Ok(None);
    };
    let mut groups = router.groups;
    let mut per_key: Vec<HashMap<(String, String), u64>> = vec![HashMap::new(); BUCKETS];
    for (p, fingerprints) in router.per_key {
        for (f, n) in fingerprints {
            per_key[key_bucket(&p, &f)].insert((p.clone(), f), n);
        }
    }
    let mut hints: Vec<Vec<(&str, &str, u64)>> = vec![Vec::new(); BUCKETS];
    for (p, fingerprints) in &routed.key_ingests {
        for (f, &n) in fingerprints {
            hints[key_bucket(p, f)].push((p, f, n));
        }
    }
    let mut parts = Vec::new();
    let (mut ops, mut unfinished) = (0, 0);
    for range in ranges(&routed.ops, budget.part_ops) {
        let ingests = routed.ingests[range.clone()]
            .iter()
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let mut facts = Facts::default();
        facts.acked_unread = !routed.fault_windows;
        for &(p, f, n) in hints[range.clone()].iter().flatten() {
            count_key(&mut facts.ingest_hint, (p, f), n);
        }
        let Some(mut facts) =
            read_facts(facts, &routed.buckets[range.clone()], ingests).map_err(temp)?
        else {
            return Ok(None);
        };
        facts.completeness = complete;
        ops += facts.ops;
        unfinished += facts.unfinished;
        let mut t = Tables {
            event_rows: router.rows,
            ..Default::default()
        };
        let mut rows: Vec<(u64, GroupRow)> = Vec::new();
        for b in range {
            rows.append(&mut groups[b]);
            t.events_per_key.extend(std::mem::take(&mut per_key[b]));
            // The part's events in the table, marked on their facts: every
            // id here is one of the part's events (the join wrote only
            // those), and the checkers ask only about the history's events.
            let mut r = SpillReader::open(&present[b]).map_err(temp)?;
            while let Some((id, _)) = r.next_record().map_err(temp)? {
                let marked = match std::str::from_utf8(id) {
                    Ok(id) => facts.mark_in_table(id),
                    Err(_) => facts.mark_in_table(&String::from_utf8_lossy(id)),
                };
                if !marked {
                    return Ok(None);
                }
            }
        }
        rows.sort_by_key(|(i, _)| *i);
        t.groups = rows.into_iter().map(|(_, g)| g).collect();
        tables(&mut t, routed.footer.as_ref(), routed.last_t);
        parts.push(judge_parts::judge(&facts, &t));
    }
    let Some(merged) = judge_parts::merge(parts, min) else {
        return Ok(None);
    };
    let judged = Judged {
        merged,
        header: routed.header,
        footer: routed.footer,
        ops,
        unfinished,
    };
    Ok(Some((judged, source)))
}

/// The bucket of a (project, fingerprint) key.
fn key_bucket(project: &str, fingerprint: &str) -> usize {
    (hash(&[project.as_bytes(), fingerprint.as_bytes()]) % BUCKETS as u64) as usize
}

/// The bucket of an event id.
fn id_bucket(id: &[u8]) -> usize {
    ((hash(&[id]) >> 32) % ID_BUCKETS as u64) as usize
}

/// Pass 1's output: the buckets' files and figures.
struct Routed {
    buckets: Vec<PathBuf>,
    /// Ops (invokes) per bucket.
    ops: Vec<u64>,
    /// Per bucket, ingests with an event id and the bytes of those ids:
    /// at most as many events, of at most as much text.
    ingests: Vec<(u64, u64)>,
    /// Per id bucket: (event id, key bucket) of every ingest.
    ids: Vec<PathBuf>,
    header: Header,
    footer: Option<Footer>,
    last_t: u64,
    /// Ingests per (project, fingerprint): [`Facts::ingest_hint`].
    key_ingests: KeyCounts,
    /// Some fault has a window (a `start` entry): [`Facts::acked_unread`]
    /// only without one.
    fault_windows: bool,
}

/// A count per (project, fingerprint), looked up by the key's text.
type KeyCounts = HashMap<String, HashMap<String, u64, Fast>, Fast>;

/// Adds `n` to `key`'s count.
fn count_key(counts: &mut KeyCounts, (project, fingerprint): (&str, &str), n: u64) {
    let fingerprints = match counts.get_mut(project) {
        Some(f) => f,
        None => counts.entry(project.to_string()).or_default(),
    };
    match fingerprints.get_mut(fingerprint) {
        Some(c) => *c += n,
        None => {
            fingerprints.insert(fingerprint.to_string(), n);
        }
    }
}

/// The key bucket of each op id seen: ids are dense, so a vector, with a
/// map for ids far beyond the rest.
#[derive(Default)]
struct OpBuckets {
    dense: Vec<u16>,
    sparse: HashMap<u64, u16>,
}

const NO_BUCKET: u16 = u16::MAX;

impl OpBuckets {
    fn get(&self, op: u64) -> Option<u16> {
        match self.dense.get(op as usize) {
            Some(&NO_BUCKET) => None,
            Some(&b) => Some(b),
            None => self.sparse.get(&op).copied(),
        }
    }

    fn set(&mut self, op: u64, b: u16) {
        let i = op as usize;
        if i < self.dense.len() {
            self.dense[i] = b;
        } else if i <= 2 * self.dense.len() + (1 << 20) {
            self.dense.resize(i + 1, NO_BUCKET);
            self.dense[i] = b;
        } else {
            self.sparse.insert(op, b);
        }
    }
}

/// Pass 1 (see the module's doc). Ok(None): a history this cannot split.
/// An op's record is routed as it is, read but not decoded
/// ([`codec::peek`] checks it as decoding would); the others are decoded.
fn route(mut payloads: Payloads, dir: &Path) -> io::Result<Option<Routed>> {
    let mut out = (0..BUCKETS)
        .map(|b| SpillWriter::create(dir.join(format!("bucket-{b}"))))
        .collect::<io::Result<Vec<_>>>()?;
    let mut ids = (0..ID_BUCKETS)
        .map(|b| SpillWriter::create(dir.join(format!("ids-{b}"))))
        .collect::<io::Result<Vec<_>>>()?;
    let mut ops = vec![0u64; BUCKETS];
    let mut ingests = vec![(0u64, 0u64); BUCKETS];
    let mut op_bucket = OpBuckets::default();
    let (mut header, mut footer, mut last_t) = (None, None, 0u64);
    let mut key_ingests = KeyCounts::default();
    let mut fault_windows = false;
    let mut seq = 0u64;
    while let Some(payload) = payloads.next_payload() {
        let Ok(payload) = payload else {
            return Ok(None);
        };
        let this = seq;
        seq += 1;
        let op = match codec::peek(payload) {
            Err(_) => return Ok(None),
            Ok(Peek::Invoke {
                op,
                t,
                project,
                fingerprint,
                event_id,
            }) => {
                last_t = last_t.max(t);
                let key = (project, fingerprint);
                let Some(b) = invoked(
                    op,
                    key,
                    event_id,
                    &mut op_bucket,
                    (&mut ops, &mut ingests),
                    &mut ids,
                )?
                else {
                    return Ok(None);
                };
                if event_id.is_some() {
                    count_key(&mut key_ingests, key, 1);
                }
                Some(b)
            }
            // A step or completion of an op never invoked: bucket 0's
            // facts refuse it, and the whole history is judged instead.
            Ok(Peek::Op { op, t }) => {
                last_t = last_t.max(t);
                Some(op_bucket.get(op).unwrap_or(0))
            }
            Ok(Peek::Json) => {
                let Ok(e) = codec::decode(payload) else {
                    return Ok(None);
                };
                match &e {
                    Entry::Footer(f) => {
                        footer = Some(f.clone());
                        continue;
                    }
                    other => last_t = last_t.max(entry_time(other)),
                }
                match &e {
                    Entry::Header(h) => {
                        if header.is_some() {
                            return Ok(None);
                        }
                        header = Some(h.clone());
                        None
                    }
                    // A rare op entry (in JSON): routed as the others.
                    Entry::Invoke(i) => {
                        let key = (i.project.as_str(), i.fingerprint.as_str());
                        let id = i.event_id.as_deref();
                        let Some(b) = invoked(
                            i.op,
                            key,
                            id,
                            &mut op_bucket,
                            (&mut ops, &mut ingests),
                            &mut ids,
                        )?
                        else {
                            return Ok(None);
                        };
                        if id.is_some() {
                            count_key(&mut key_ingests, key, 1);
                        }
                        Some(b)
                    }
                    Entry::Step(s) => Some(op_bucket.get(s.op).unwrap_or(0)),
                    Entry::Ok(c) | Entry::Fail(c) | Entry::Info(c) => {
                        Some(op_bucket.get(c.op).unwrap_or(0))
                    }
                    Entry::Fault(f) if f.action == FaultAction::Inject => {
                        f.op.and_then(|op| op_bucket.get(op))
                    }
                    Entry::Fault(f) => {
                        fault_windows |= f.action == FaultAction::Start;
                        None
                    }
                    // The bench's own checkpoints are no fact of any op.
                    Entry::Bench(_) | Entry::Footer(_) => continue,
                }
            }
        };
        match op {
            Some(b) => out[b as usize].record(payload, this)?,
            None => {
                for w in &mut out {
                    w.record(payload, this)?;
                }
            }
        }
    }
    let Some(header) = header else {
        return Ok(None);
    };
    Ok(Some(Routed {
        buckets: out
            .into_iter()
            .map(SpillWriter::finish)
            .collect::<io::Result<_>>()?,
        ops,
        ingests,
        ids: ids
            .into_iter()
            .map(SpillWriter::finish)
            .collect::<io::Result<_>>()?,
        header,
        footer,
        last_t,
        key_ingests,
        fault_windows,
    }))
}

/// An invoke's bucket, counted and its event id written to its id file.
/// Ok(None): the op id was invoked under a key of another bucket before.
fn invoked(
    op: u64,
    (project, fingerprint): (&str, &str),
    event_id: Option<&str>,
    op_bucket: &mut OpBuckets,
    (ops, ingests): (&mut [u64], &mut [(u64, u64)]),
    ids: &mut [SpillWriter],
) -> io::Result<Option<u16>> {
    let b = key_bucket(project, fingerprint) as u16;
    if op_bucket.get(op).is_some_and(|o| o != b) {
        return Ok(None);
    }
    op_bucket.set(op, b);
    ops[b as usize] += 1;
    if let Some(id) = event_id {
        let n = &mut ingests[b as usize];
        *n = (n.0 + 1, n.1 + id.len() as u64);
        ids[id_bucket(id.as_bytes())].record(id.as_bytes(), u64::from(b))?;
    }
    Ok(Some(b))
}

/// Where the final rows go: group rows and rows per key by key bucket
/// (kept, they are one per key), event ids to their id bucket's file.
struct Router {
    ids: Vec<SpillWriter>,
    groups: Vec<Vec<(u64, GroupRow)>>,
    // Looked up by the row's text, so a row costs no (String, String)
    // of its own.
    per_key: KeyCounts,
    rows: u64,
    group_rows: u64,
    err: Option<io::Error>,
}

impl Router {
    fn new(dir: &Path) -> io::Result<Router> {
        Ok(Router {
            ids: (0..ID_BUCKETS)
                .map(|b| SpillWriter::create(dir.join(format!("table-ids-{b}"))))
                .collect::<io::Result<_>>()?,
            groups: vec![Vec::new(); BUCKETS],
            per_key: HashMap::default(),
            rows: 0,
            group_rows: 0,
            err: None,
        })
    }
}

impl RowSink for Router {
    fn event(&mut self, id: &Value, project: &Value, fingerprint: &Value) {
        self.rows += 1;
        let key = (text_of(project), text_of(fingerprint));
        count_key(&mut self.per_key, (&key.0, &key.1), 1);
        let id = text_of(id);
        if let Err(e) = self.ids[id_bucket(id.as_bytes())].record(id.as_bytes(), 0) {
            self.err.get_or_insert(e);
        }
    }

    fn group(&mut self, row: GroupRow) {
        let (p, f) = row.key();
        self.groups[key_bucket(&p, &f)].push((self.group_rows, row));
        self.group_rows += 1;
    }
}

/// A value's text as [`text`] gives it, borrowed where it is text.
fn text_of(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::Text(s) => std::borrow::Cow::Borrowed(s),
        other => std::borrow::Cow::Owned(text(other)),
    }
}

/// Per key bucket, a file of the event ids of its events that are in the
/// table. Ok(None): an event id under two keys of different buckets.
fn join(
    routed: &Routed,
    table_ids: Vec<SpillWriter>,
    dir: &Path,
) -> io::Result<Option<Vec<PathBuf>>> {
    let mut present = (0..BUCKETS)
        .map(|b| SpillWriter::create(dir.join(format!("present-{b}"))))
        .collect::<io::Result<Vec<_>>>()?;
    for (m, w) in table_ids.into_iter().enumerate() {
        let path = w.finish()?;
        let mut in_table: HashSet<JoinId, Fast> = HashSet::default();
        let mut r = SpillReader::open(&path)?;
        while let Some((id, _)) = r.next_record()? {
            in_table.insert(JoinId::of(id));
        }
        drop(r);
        std::fs::remove_file(&path)?;
        let mut seen: HashMap<JoinId, u64, Fast> = HashMap::default();
        let mut r = SpillReader::open(&routed.ids[m])?;
        while let Some((id, b)) = r.next_record()? {
            match seen.entry(JoinId::of(id)) {
                std::collections::hash_map::Entry::Occupied(o) if *o.get() != b => return Ok(None),
                std::collections::hash_map::Entry::Occupied(_) => {}
                std::collections::hash_map::Entry::Vacant(v) => {
                    if in_table.contains(v.key()) {
                        present[b as usize].record(id, 0)?;
                    }
                    v.insert(b);
                }
            }
        }
    }
    Ok(Some(
        present
            .into_iter()
            .map(SpillWriter::finish)
            .collect::<io::Result<_>>()?,
    ))
}

/// An event id in the join: a bench-made id as its 128 bits (no heap
/// text, hashed as one number), any other as its bytes. Bits are taken
/// only from text that prints back to the same bytes
/// ([`super::id_bits::bits`]), so two ids are equal exactly when their
/// texts are.
#[derive(Debug, PartialEq, Eq, Hash)]
enum JoinId {
    Bits(u128, bool),
    Text(Box<[u8]>),
}

impl JoinId {
    fn of(id: &[u8]) -> JoinId {
        match std::str::from_utf8(id).ok().and_then(super::id_bits::bits) {
            Some((dashed, v)) => JoinId::Bits(v, dashed),
            None => JoinId::Text(id.into()),
        }
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

/// `facts` (none taken yet, its hints set) with the buckets' entries,
/// read back in history order (an entry written to every bucket taken
/// once). Ok(None): the facts refuse an entry (the whole history's judge
/// reports it).
fn read_facts(
    mut facts: Facts,
    buckets: &[PathBuf],
    (ids, bytes): (u64, u64),
) -> io::Result<Option<Facts>> {
    let mut readers = buckets
        .iter()
        .map(|p| SpillReader::open(p))
        .collect::<io::Result<Vec<_>>>()?;
    facts.events.reserve(ids as usize, bytes as usize);
    loop {
        let mut next: Option<u64> = None;
        for r in &mut readers {
            if let Some(s) = r.peek()? {
                next = Some(next.map_or(s, |n| n.min(s)));
            }
        }
        let Some(seq) = next else {
            break;
        };
        // Each record taken once, from the first bucket holding it, where
        // it lies in that bucket's read buffer.
        let mut refused = None;
        for r in &mut readers {
            if r.peek()? == Some(seq) {
                refused.get_or_insert_with(|| facts.add_peeked(r.current()).is_err());
                r.advance();
            }
        }
        // A record the codec or the facts refuse: the whole history's
        // judge reports it.
        if refused == Some(true) {
            return Ok(None);
        }
    }
    facts.finish();
    Ok(Some(facts))
}
