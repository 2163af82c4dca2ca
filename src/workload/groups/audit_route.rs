//! Pass 1 of an audit in parts ([`super::audit_parts`]): the history read
//! once, each op put together from its records and summarized when it
//! finishes ([`OpAssembly`], [`OpFact`]), and the summary written to the
//! temp file of its (project, fingerprint) key's bucket; the header and
//! every fault entry are written as they are, to the bucket of the op
//! they hit or to every bucket. Each record carries its place in the
//! history, so that a part of several buckets is read back in history
//! order. Every event id is also written, as a hash with its bucket, to
//! a file per hash range ([`IdHashes`]): an id whose ops lie in two
//! buckets would be judged as two events, so [`IdHashes::one_bucket_each`]
//! refuses it and the caller judges the whole history.
//!
//! Invoke and step records are read where they lie with their texts as
//! bytes ([`codec::invoke_raw`], [`codec::step_raw`]): a (project,
//! fingerprint, group id) triple is checked as UTF-8 when first named, a
//! step name once per step index, an event id of hex digits not at all
//! (it is text as it is); any other text every time. A record decoding
//! would refuse is refused here too, so the whole history's judge
//! reports it.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use super::audit_spill::{hash, SpillWriter};
use super::checker::op_assembly::OpAssembly;
use super::checker::op_fact::{HeldId, IngestOp, InvokeFact, OpFact};
use super::checker::op_fact_codec;
use super::checker::step_fact::StepFact;
use crate::audit_history::entry_time;
use crate::history::codec::{self, InvokeRaw, InvokeView};
use crate::history::reader::Payloads;
use crate::history::{CompletionType, Entry, FaultAction, Footer, Header, OpKind};
use foldhash::fast::RandomState as Fast;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::io;
use std::path::{Path, PathBuf};

/// Buckets of keys (parts are made of consecutive buckets).
pub const BUCKETS: usize = 64;
/// Files of event id hashes.
const ID_FILES: usize = 64;

/// A bucket record's first byte: an op's summary.
pub const OP_FACT: u8 = 0;
/// A bucket record's first byte: a history record as it is (the header, a
/// fault entry).
pub const RECORD: u8 = 1;

/// Pass 1's output: the buckets' files and figures.
pub struct Routed {
    /// Per bucket, its temp file.
    pub buckets: Vec<PathBuf>,
    /// Ops (invokes) per bucket.
    pub ops: Vec<u64>,
    /// Per bucket, ingests with an event id and the bytes of those ids:
    /// at most as many events, of at most as much text.
    pub ingests: Vec<(u64, u64)>,
    /// The event ids' hashes.
    pub ids: IdHashes,
    /// Every (project, fingerprint, group id) an invoke named, by the
    /// index an [`OpFact`] names it by.
    pub named: Vec<(String, String, String)>,
    /// The history's header.
    pub header: Header,
    /// Its footer, if it was written to the end.
    pub footer: Option<Footer>,
    /// The latest time of any entry but the footer.
    pub last_t: u64,
    /// Ingests per (project, fingerprint): [`super::checker::Facts::ingest_hint`].
    pub key_ingests: KeyCounts,
    /// Some fault has a window (a `start` entry):
    /// [`super::checker::Facts::acked_unread`] only without one.
    pub fault_windows: bool,
    /// Ops invoked.
    pub op_count: u64,
    /// Ops never completed.
    pub unfinished: u64,
}

/// A count per (project, fingerprint), looked up by the key's text.
pub type KeyCounts = HashMap<String, HashMap<String, u64, Fast>, Fast>;

/// Adds `n` to `key`'s count.
pub fn count_key(counts: &mut KeyCounts, (project, fingerprint): (&str, &str), n: u64) {
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

/// The bucket of a (project, fingerprint) key.
pub fn key_bucket(project: &str, fingerprint: &str) -> usize {
    (hash(&[project.as_bytes(), fingerprint.as_bytes()]) % BUCKETS as u64) as usize
}

/// A stable 64-bit hash of an event id as held: equal ids hash equal,
/// whether read from the history or from the table.
pub fn id_hash(id: &HeldId) -> u64 {
    match id {
        HeldId::Bits(v, dashed) => {
            let lo = fmix(*v as u64 ^ u64::from(*dashed));
            fmix(lo ^ fmix((*v >> 64) as u64))
        }
        HeldId::Text(t) => hash(&[t.as_bytes()]),
        HeldId::None => 0,
    }
}

/// MurmurHash3's finalizer: every bit of the input moves the output.
fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Every event id's hash with its bucket, one u64 each (the hash's top 56
/// bits, the bucket in the low 8), in a file per range of hashes.
pub struct IdHashes {
    writers: Vec<SpillWriter>,
    files: Vec<PathBuf>,
}

impl IdHashes {
    fn create(dir: &Path) -> io::Result<IdHashes> {
        let files: Vec<PathBuf> = (0..ID_FILES)
            .map(|m| dir.join(format!("id-hashes-{m}")))
            .collect();
        let writers = files
            .iter()
            .map(|p| SpillWriter::create(p.clone()))
            .collect::<io::Result<_>>()?;
        Ok(IdHashes { writers, files })
    }

    fn file(h: u64) -> usize {
        (h >> 58) as usize % ID_FILES
    }

    fn add(&mut self, h: u64, bucket: u16) -> io::Result<()> {
        let entry = (h & !0xff) | u64::from(bucket);
        self.writers[Self::file(h)].raw(&entry.to_le_bytes())
    }

    fn finish(&mut self) -> io::Result<()> {
        for w in std::mem::take(&mut self.writers) {
            w.finish()?;
        }
        Ok(())
    }

    /// The entries of file `m`, sorted.
    fn sorted(&self, m: usize) -> io::Result<Vec<u64>> {
        let bytes = std::fs::read(&self.files[m])?;
        let mut v: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        v.sort_unstable();
        Ok(v)
    }

    /// Whether every hash lies in one bucket: false where some event id
    /// (or two ids of one hash, rarely) has ops in two buckets.
    pub fn one_bucket_each(&self) -> io::Result<bool> {
        for m in 0..ID_FILES {
            let v = self.sorted(m)?;
            if v.windows(2).any(|w| w[0] >> 8 == w[1] >> 8 && w[0] != w[1]) {
                return Ok(false);
            }
        }
        Ok(true)
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

/// The named triples by the bytes their invoke records hold them as
/// ([`InvokeRaw::triple`]): one span hashed and compared, not three
/// texts. Bytes found are those of a triple checked as UTF-8 and named
/// before.
#[derive(Default)]
struct Triples {
    index: hashbrown::HashTable<(u8, Box<[u8]>, u32)>,
    hasher: Fast,
}

impl Triples {
    fn get(&self, (held, bytes): (u8, &[u8])) -> Option<u32> {
        let h = self.hasher.hash_one((held, bytes));
        (self.index)
            .find(h, |(k, b, _)| *k == held && **b == *bytes)
            .map(|e| e.2)
    }

    fn insert(&mut self, (held, bytes): (u8, &[u8]), named: u32) {
        let Triples { index, hasher } = self;
        let h = hasher.hash_one((held, bytes));
        index.insert_unique(h, (held, bytes.into(), named), |(k, b, _)| {
            hasher.hash_one((*k, &**b))
        });
    }
}

/// Pass 1's state.
struct Router {
    out: Vec<SpillWriter>,
    scratch: Vec<u8>,
    asm: OpAssembly,
    triples: Triples,
    op_bucket: OpBuckets,
    ops: Vec<u64>,
    ingests: Vec<(u64, u64)>,
    ids: IdHashes,
    /// Per named triple: its key's bucket, and its ingests with an event
    /// id.
    named: Vec<(u16, u64)>,
    /// Step names checked as UTF-8, by step index ([`step_fact`]).
    step_names: Vec<Box<str>>,
    op_count: u64,
}

impl Router {
    /// An invoke: its bucket counted, its event id's hash written. None:
    /// the op id was invoked under a key of another bucket before.
    fn invoke(&mut self, i: &InvokeView<'_>) -> io::Result<Option<()>> {
        let named = self.asm.name(i.project, i.fingerprint, i.group_id);
        let event = i.event_id.map(|id| (HeldId::of(Some(id)), id.len()));
        self.invoke_named((i.t, i.op, i.f), named, event)
    }

    /// [`Router::invoke`] of an invoke record read with its texts
    /// unchecked ([`codec::invoke_raw`]): each text is checked as UTF-8
    /// unless it is known to be (a triple named before, an id of hex
    /// digits). None: a text is not UTF-8 (the whole history's judge
    /// reports the record), or as [`Router::invoke`].
    fn invoke_raw(&mut self, i: &InvokeRaw<'_>) -> io::Result<Option<()>> {
        let named = match self.triples.get(i.triple) {
            Some(n) => n,
            None => {
                let text = |b| std::str::from_utf8(b).ok();
                let (Some(p), Some(f), Some(g)) =
                    (text(i.project), text(i.fingerprint), text(i.group_id))
                else {
                    return Ok(None);
                };
                let n = self.asm.name(p, f, g);
                self.triples.insert(i.triple, n);
                n
            }
        };
        let event = match i.event_id {
            None => None,
            Some(b) => {
                let held = match super::id_bits::bits_of(b) {
                    Some((dashed, v)) => HeldId::Bits(v, dashed),
                    None => match std::str::from_utf8(b) {
                        Ok(t) => HeldId::Text(t.into()),
                        Err(_) => return Ok(None),
                    },
                };
                Some((held, b.len()))
            }
        };
        self.invoke_named((i.t, i.op, i.f), named, event)
    }

    /// An invoke of (time, op, kind) naming triple `named`, with its
    /// event id as held and the id's length in bytes.
    fn invoke_named(
        &mut self,
        (t, op, f): (u64, u64, OpKind),
        named: u32,
        event: Option<(HeldId, usize)>,
    ) -> io::Result<Option<()>> {
        let n = named as usize;
        if n >= self.named.len() {
            let (p, fp, _) = self.asm.named(named);
            let b = key_bucket(p, fp) as u16;
            self.named.resize(n + 1, (b, 0));
        }
        let b = self.named[n].0;
        if self.op_bucket.get(op).is_some_and(|o| o != b) {
            return Ok(None);
        }
        self.op_bucket.set(op, b);
        self.ops[b as usize] += 1;
        self.op_count += 1;
        let held = match event {
            Some((held, len)) => {
                let c = &mut self.ingests[b as usize];
                *c = (c.0 + 1, c.1 + len as u64);
                self.ids.add(id_hash(&held), b)?;
                self.named[n].1 += 1;
                held
            }
            None => HeldId::None,
        };
        self.asm.invoke_fact(InvokeFact {
            t,
            op,
            f,
            named,
            event: held,
        });
        Ok(Some(()))
    }

    /// An op's summary, written to its bucket (nothing for no fact).
    fn fact(&mut self, op: u64, f: &OpFact, seq: u64) -> io::Result<()> {
        if matches!(f, OpFact::Nothing) {
            return Ok(());
        }
        let b = self.op_bucket.get(op).unwrap_or(0);
        self.scratch.clear();
        self.scratch.push(OP_FACT);
        op_fact_codec::encode(f, &mut self.scratch);
        self.out[b as usize].record(&self.scratch, seq)
    }

    /// A history record as it is, to one bucket or to every one.
    fn record(&mut self, payload: &[u8], bucket: Option<u16>, seq: u64) -> io::Result<()> {
        match bucket {
            Some(b) => self.out[b as usize].record_parts(&[&[RECORD][..], payload], seq),
            None => {
                for w in &mut self.out {
                    w.record_parts(&[&[RECORD][..], payload], seq)?;
                }
                Ok(())
            }
        }
    }
}

/// A step record's facts, its name and error checked as UTF-8 unless
/// known to be: `names` holds, per step index, the last name checked at
/// that index (a run's steps have a few names, one per index). None: a
/// text is not UTF-8 (the whole history's judge reports the record).
fn step_fact(names: &mut Vec<Box<str>>, s: &codec::StepRaw<'_>) -> Option<StepFact> {
    let i = s.idx as usize;
    let known = names.get(i).is_some_and(|n| same(n.as_bytes(), s.step));
    if !known {
        let step = std::str::from_utf8(s.step).ok()?;
        if i >= 64 {
            return step_fact_of(step, s);
        }
        if names.len() <= i {
            names.resize(i + 1, Box::default());
        }
        names[i] = step.into();
    }
    // Equal to the bytes of a name checked before: the same text.
    step_fact_of(&names[i], s)
}

/// An op's summary ([`OpAssembly::complete_with`]) written to its
/// bucket's file `out` (nothing for no fact), encoded in place.
fn write_fact(out: &mut SpillWriter, fact: &Result<IngestOp, OpFact>, seq: u64) -> io::Result<()> {
    match fact {
        Err(OpFact::Nothing) => Ok(()),
        Ok(i) => out.record_with(seq, |buf| {
            buf.push(OP_FACT);
            op_fact_codec::encode_ingest(i, buf);
        }),
        Err(f) => out.record_with(seq, |buf| {
            buf.push(OP_FACT);
            op_fact_codec::encode(f, buf);
        }),
    }
}

/// Whether two short texts (a step's name) are the same bytes: compared
/// in place, where `==` calls a compare of any length for two bytes.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// A step record's facts, its name `step` (its bytes as UTF-8).
fn step_fact_of(step: &str, s: &codec::StepRaw<'_>) -> Option<StepFact> {
    let error = match s.error {
        Some(e) => Some(std::str::from_utf8(e).ok()?),
        None => None,
    };
    Some(StepFact::from_view(&codec::StepView {
        op: s.op,
        idx: s.idx,
        step,
        start: s.start,
        end: s.end,
        changes: s.changes,
        rows: s.rows,
        error,
        error_kind: s.error_kind,
        maybe_applied: s.maybe_applied,
    }))
}

/// Pass 1 (see the module's doc). Ok(None): a history this cannot split
/// (an unreadable record, an op record out of place, no header or two,
/// an op id invoked under keys of two buckets): the whole history's judge
/// reports or judges it.
pub fn route(mut payloads: Payloads, dir: &Path) -> io::Result<Option<Routed>> {
    let mut r = Router {
        out: (0..BUCKETS)
            .map(|b| SpillWriter::create(dir.join(format!("bucket-{b}"))))
            .collect::<io::Result<Vec<_>>>()?,
        scratch: Vec::new(),
        asm: OpAssembly::default(),
        triples: Triples::default(),
        op_bucket: OpBuckets::default(),
        ops: vec![0; BUCKETS],
        ingests: vec![(0, 0); BUCKETS],
        ids: IdHashes::create(dir)?,
        named: Vec::new(),
        step_names: Vec::new(),
        op_count: 0,
    };
    let (mut header, mut footer, mut last_t) = (None, None, 0u64);
    let mut fault_windows = false;
    let mut seq = 0u64;
    while let Some(payload) = payloads.next_payload() {
        let Ok(payload) = payload else {
            return Ok(None);
        };
        let this = seq;
        seq += 1;
        // The common records read where they lie, each checked as
        // decoding checks it; which one, told by its tag byte once.
        match payload.first() {
            Some(&codec::STEP) => {
                let Ok(Some(s)) = codec::step_raw(payload) else {
                    return Ok(None);
                };
                last_t = last_t.max(s.end.unwrap_or(s.start).max(s.start));
                let Some(fact) = step_fact(&mut r.step_names, &s) else {
                    return Ok(None);
                };
                if r.asm.step(s.op, fact).is_err() {
                    return Ok(None);
                }
                continue;
            }
            Some(&codec::INVOKE) => {
                let Ok(Some(i)) = codec::invoke_raw(payload) else {
                    return Ok(None);
                };
                last_t = last_t.max(i.t.max(i.intended.unwrap_or(0)));
                if r.invoke_raw(&i)?.is_none() {
                    return Ok(None);
                }
                continue;
            }
            Some(&(codec::OK | codec::FAIL | codec::INFO)) => {
                let Ok(Some((kind, c))) = codec::completion_view(payload) else {
                    return Ok(None);
                };
                last_t = last_t.max(c.t);
                let Router {
                    asm,
                    out,
                    op_bucket,
                    ..
                } = &mut r;
                let b = op_bucket.get(c.op).unwrap_or(0);
                let written = asm.complete_with(kind, &c, |fact| {
                    write_fact(&mut out[b as usize], &fact, this)
                });
                match written {
                    Err(_) => return Ok(None),
                    Ok(w) => w?,
                }
                continue;
            }
            _ => {}
        }
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
        let (kind, c) = match e {
            Entry::Header(h) => {
                if header.is_some() {
                    return Ok(None);
                }
                r.asm.header(&h);
                header = Some(h);
                r.record(payload, None, this)?;
                continue;
            }
            // A rare op entry (in JSON): taken as the others.
            Entry::Invoke(i) => {
                let view = InvokeView::of(&i);
                if r.invoke(&view)?.is_none() {
                    return Ok(None);
                }
                continue;
            }
            Entry::Step(s) => {
                if r.asm.step(s.op, StepFact::from_step(&s)).is_err() {
                    return Ok(None);
                }
                continue;
            }
            Entry::Fault(f) => {
                let bucket = match f.action {
                    FaultAction::Inject => f.op.and_then(|op| r.op_bucket.get(op)),
                    FaultAction::Start => {
                        fault_windows = true;
                        None
                    }
                    FaultAction::Stop => None,
                };
                r.record(payload, bucket, this)?;
                continue;
            }
            Entry::Ok(c) => (CompletionType::Ok, c),
            Entry::Fail(c) => (CompletionType::Fail, c),
            Entry::Info(c) => (CompletionType::Info, c),
            // The bench's own checkpoints are no fact of any op.
            Entry::Bench(_) | Entry::Footer(_) => continue,
        };
        let op = c.op;
        let Ok(fact) = r.asm.complete(kind, c) else {
            return Ok(None);
        };
        r.fact(op, &fact, this)?;
    }
    let Some(header) = header else {
        return Ok(None);
    };
    let mut unfinished = 0;
    for (op, fact) in r.asm.finish() {
        unfinished += 1;
        r.fact(op, &fact, seq)?;
        seq += 1;
    }
    r.ids.finish()?;
    let named = r.asm.into_named();
    let mut key_ingests = KeyCounts::default();
    for ((p, f, _), &(_, n)) in named.iter().zip(&r.named) {
        if n > 0 {
            count_key(&mut key_ingests, (p, f), n);
        }
    }
    Ok(Some(Routed {
        buckets: r
            .out
            .into_iter()
            .map(SpillWriter::finish)
            .collect::<io::Result<_>>()?,
        ops: r.ops,
        ingests: r.ingests,
        ids: r.ids,
        named,
        header,
        footer,
        last_t,
        key_ingests,
        fault_windows,
        op_count: r.op_count,
        unfinished,
    }))
}
