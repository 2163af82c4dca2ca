//! The temp-file form of an [`OpFact`]: varints and flags, an ingest's
//! instants written as their distance from its invoke (a few bytes each,
//! where an instant since run start takes six), its event id as its 16
//! bytes where the bench made it. [`decode`] gives back exactly what
//! [`encode`] was given (every u64 instant, wrapping arithmetic).
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::op_fact::{HeldId, IngestOp, OpFact, ResolveOp, ResolveOutcome};
use super::op_types::{Effect, Probe, ReadStep, ResolveFact, Span, UnknownResolve};
use crate::history::codec::{put, varint_inlined};

/// A temp record that does not read back: the file was cut or changed.
#[derive(Debug, thiserror::Error)]
#[error("an op's facts in a temp file of the audit cannot be read back")]
pub struct Corrupt;

const NOTHING: u8 = 0;
const INGEST: u8 = 1;
const RESOLVE: u8 = 2;

const EFFECTS: [Effect; 6] = [
    Effect::May,
    Effect::Pending,
    Effect::Failed,
    Effect::NeverForwarded,
    Effect::KillDown,
    Effect::NothingChanged,
];

fn effect_byte(e: Effect) -> u8 {
    EFFECTS.iter().position(|&x| x == e).unwrap_or(0) as u8
}

fn bit(n: u32, set: bool) -> u64 {
    u64::from(set) << n
}

fn has(flags: u64, n: u32) -> bool {
    flags & (1 << n) != 0
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

fn text(out: &mut Vec<u8>, s: &str) {
    put(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Appends the record of an ingest's summary (as [`encode`] of it).
pub fn encode_ingest(i: &IngestOp, out: &mut Vec<u8>) {
    ingest(i, out);
}

/// Appends `f`'s record.
pub fn encode(f: &OpFact, out: &mut Vec<u8>) {
    match f {
        OpFact::Nothing => out.push(NOTHING),
        OpFact::Ingest(i) => ingest(i, out),
        OpFact::Resolve(r) => resolve(r, out),
    }
}

/// Bytes gathered on the stack and appended to the record at once: an
/// ingest's numbers (a dozen varints per op, the audit's hottest write)
/// with no capacity check of the record's vector per byte.
struct Stage {
    /// Room for the most an ingest stages, and for the eight bytes a
    /// number is written as ([`Stage::num`]) past them.
    b: [u8; 176],
    n: usize,
}

impl Stage {
    fn new() -> Self {
        Stage { b: [0; 176], n: 0 }
    }

    /// `x` as a LEB128 varint (as [`put`] writes it), with no loop: one
    /// of two to four bytes (an op id, most distances) is written as the
    /// bytes of a u32, one of up to eight (an instant) as those of a
    /// u64: each seven bits spread to a byte of their own, a
    /// continuation bit on each but the last.
    #[inline(always)]
    fn num(&mut self, x: u64) {
        let at = self.n;
        if x < 1 << 7 {
            self.b[at] = x as u8;
            self.n = at + 1;
        } else if x < 1 << 28 {
            let len = if x < 1 << 14 {
                2
            } else if x < 1 << 21 {
                3
            } else {
                4
            };
            let x = x as u32;
            let spread =
                (x & 0x7f) | ((x & 0x3f80) << 1) | ((x & 0x1f_c000) << 2) | ((x & 0xfe0_0000) << 3);
            let more = 0x0080_8080u32 >> (8 * (4 - len));
            self.b[at..at + 4].copy_from_slice(&(spread | more).to_le_bytes());
            self.n = at + len;
        } else if x < 1 << 56 {
            // 5 to 8 bytes.
            let len = (64 - x.leading_zeros() as usize).div_ceil(7);
            let x = (x & 0x0fff_ffff) | ((x & 0x00ff_ffff_f000_0000) << 4);
            let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x0fff_c000_0fff_c000) << 2);
            let x = (x & 0x007f_007f_007f_007f) | ((x & 0x3f80_3f80_3f80_3f80) << 1);
            let more = 0x8080_8080_8080_8080 & ((1u64 << (8 * (len - 1))) - 1);
            self.b[at..at + 8].copy_from_slice(&(x | more).to_le_bytes());
            self.n = at + len;
        } else {
            self.long(x);
        }
    }

    /// [`Stage::num`] of a number of 2^56 or more: byte by byte.
    #[inline(never)]
    fn long(&mut self, mut x: u64) {
        while x >= 0x80 {
            self.b[self.n] = (x as u8) | 0x80;
            self.n += 1;
            x >>= 7;
        }
        self.b[self.n] = x as u8;
        self.n += 1;
    }

    /// `x` as its distance from `base` (exact for any two u64).
    #[inline]
    fn near(&mut self, base: u64, x: u64) {
        self.num(zigzag(x.wrapping_sub(base) as i64));
    }

    #[inline(always)]
    fn bytes(&mut self, b: &[u8]) {
        self.b[self.n..self.n + b.len()].copy_from_slice(b);
        self.n += b.len();
    }

    fn flush(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.b[..self.n]);
        self.n = 0;
    }
}

fn ingest(i: &IngestOp, out: &mut Vec<u8>) {
    // At most 101 bytes before the texts and 55 after: 156 staged.
    let mut w = Stage::new();
    w.b[0] = INGEST;
    w.n = 1;
    w.num(i.op);
    w.num(i.t);
    w.num(i.named.into());
    let (id_kind, pending_at) = (
        match i.event {
            HeldId::Bits(_, false) => 0,
            HeldId::Bits(_, true) => 1,
            _ => 2,
        },
        i.pending.flatten(),
    );
    let flags = id_kind
        | bit(2, i.done)
        | bit(3, i.maybe)
        | bit(4, i.acked)
        | bit(5, i.count_from.is_some())
        | bit(6, i.counted_by.is_some())
        | bit(7, i.pending.is_some())
        | bit(8, pending_at.is_some())
        | bit(9, i.decided.is_some())
        | bit(10, i.stop.is_some())
        | bit(11, i.own_insert)
        | bit(12, i.indeterminate)
        | bit(13, i.inserted)
        | bit(14, i.cause.is_some())
        | bit(15, i.hook_insert.is_some())
        | bit(16, i.counting.is_some())
        | bit(17, i.counting.is_some_and(|c| c.1.is_some()))
        | bit(18, i.read.is_some())
        | bit(19, i.acked_at.is_some());
    w.num(flags);
    match &i.event {
        HeldId::Bits(v, _) => w.bytes(&v.to_le_bytes()),
        HeldId::Text(s) => {
            w.flush(out);
            text(out, s);
        }
        HeldId::None => w.num(0),
    }
    w.bytes(&[effect_byte(i.effect)]);
    let t = i.t;
    w.near(t, i.start);
    // One by one, not as an array of four iterated: a dozen numbers an
    // op, one op an event.
    if let Some(x) = i.count_from {
        w.near(t, x);
    }
    if let Some(x) = i.counted_by {
        w.near(t, x);
    }
    if let Some(x) = pending_at {
        w.near(t, x);
    }
    if let Some(x) = i.decided {
        w.near(t, x);
    }
    if let Some(s) = i.stop {
        w.num(s.into());
    }
    if i.cause.is_some() || i.hook_insert.is_some() {
        w.flush(out);
        for s in [&i.cause, &i.hook_insert].into_iter().flatten() {
            text(out, s);
        }
    }
    if let Some((start, end)) = i.counting {
        w.near(t, start);
        if let Some(e) = end {
            w.near(t, e);
        }
    }
    if let Some(r) = &i.read {
        w.num(r.idx.into());
        w.near(t, r.start);
        w.near(t, r.end);
    }
    if let Some(a) = i.acked_at {
        w.near(t, a);
    }
    w.flush(out);
}

fn span(out: &mut Vec<u8>, s: &Span) {
    put(out, s.start);
    match s.end {
        Some(e) => {
            out.push(1);
            put(out, e);
        }
        None => out.push(0),
    }
}

fn resolve(r: &ResolveOp, out: &mut Vec<u8>) {
    out.push(RESOLVE);
    put(out, r.op);
    put(out, r.named.into());
    match r.wide {
        Some(n) => {
            out.push(1);
            put(out, n);
        }
        None => out.push(0),
    }
    // Every fact of the outcome names the resolve's own op: not written.
    match &r.outcome {
        ResolveOutcome::Nothing => out.push(0),
        ResolveOutcome::Resolved(f) => {
            out.push(1);
            span(out, &f.span);
            put(out, zigzag(f.count));
        }
        ResolveOutcome::Unknown(u) => {
            out.push(2);
            match u.completed {
                Some(c) => {
                    out.push(1);
                    put(out, c);
                }
                None => out.push(0),
            }
            span(out, &u.span);
        }
        ResolveOutcome::Probe(p) | ResolveOutcome::Observation(p) => {
            out.push(if matches!(r.outcome, ResolveOutcome::Probe(_)) {
                3
            } else {
                4
            });
            span(out, &p.span);
            put(out, zigzag(p.count));
        }
    }
}

/// Reads the fields of one record in order. Each read is inlined: an
/// ingest's record is a dozen of them, read once per op of the audit.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    #[inline(always)]
    fn num(&mut self) -> Result<u64, Corrupt> {
        let (n, len) = varint_inlined(self.0).ok_or(Corrupt)?;
        self.0 = self.0.get(len..).ok_or(Corrupt)?;
        Ok(n)
    }
    #[inline(always)]
    fn u32(&mut self) -> Result<u32, Corrupt> {
        u32::try_from(self.num()?).map_err(|_| Corrupt)
    }
    #[inline(always)]
    fn byte(&mut self) -> Result<u8, Corrupt> {
        let (&b, rest) = self.0.split_first().ok_or(Corrupt)?;
        self.0 = rest;
        Ok(b)
    }
    #[inline(always)]
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        if n > self.0.len() {
            return Err(Corrupt);
        }
        let (b, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(b)
    }
    #[inline(always)]
    fn text(&mut self) -> Result<&'a str, Corrupt> {
        let n = usize::try_from(self.num()?).map_err(|_| Corrupt)?;
        std::str::from_utf8(self.bytes(n)?).map_err(|_| Corrupt)
    }
    #[inline(always)]
    fn near(&mut self, base: u64) -> Result<u64, Corrupt> {
        Ok(base.wrapping_add(unzigzag(self.num()?) as u64))
    }
    #[inline(always)]
    fn near_if(&mut self, set: bool, base: u64) -> Result<Option<u64>, Corrupt> {
        if set {
            self.near(base).map(Some)
        } else {
            Ok(None)
        }
    }
    #[inline(always)]
    fn text_if(&mut self, set: bool) -> Result<Option<String>, Corrupt> {
        if set {
            self.text().map(|s| Some(s.to_string()))
        } else {
            Ok(None)
        }
    }
    #[inline(always)]
    fn span(&mut self) -> Result<Span, Corrupt> {
        let start = self.num()?;
        let end = match self.byte()? {
            0 => None,
            _ => Some(self.num()?),
        };
        Ok(Span { start, end })
    }
}

/// The [`OpFact`] of a record [`encode`] wrote. Errors: it is not one.
pub fn decode(record: &[u8]) -> Result<OpFact, Corrupt> {
    let mut f = Fields(record);
    match f.byte()? {
        NOTHING => Ok(OpFact::Nothing),
        INGEST => decode_ingest(&mut f).map(|i| OpFact::Ingest(Box::new(i))),
        RESOLVE => decode_resolve(&mut f).map(|r| OpFact::Resolve(Box::new(r))),
        _ => Err(Corrupt),
    }
}

/// [`decode`], an ingest's summary given as it is (Ok), not boxed: the
/// audit reads one per event. Errors: as [`decode`]'s.
pub fn decode_unboxed(record: &[u8]) -> Result<Result<IngestOp, OpFact>, Corrupt> {
    let mut f = Fields(record);
    match f.byte()? {
        NOTHING => Ok(Err(OpFact::Nothing)),
        INGEST => decode_ingest(&mut f).map(Ok),
        RESOLVE => decode_resolve(&mut f).map(|r| Err(OpFact::Resolve(Box::new(r)))),
        _ => Err(Corrupt),
    }
}

fn decode_ingest(f: &mut Fields<'_>) -> Result<IngestOp, Corrupt> {
    let (op, t, named) = (f.num()?, f.num()?, f.u32()?);
    let flags = f.num()?;
    let event = match flags & 3 {
        0 | 1 => {
            let b: [u8; 16] = f.bytes(16)?.try_into().map_err(|_| Corrupt)?;
            HeldId::Bits(u128::from_le_bytes(b), flags & 3 == 1)
        }
        _ => HeldId::Text(f.text()?.into()),
    };
    let effect = *EFFECTS.get(usize::from(f.byte()?)).ok_or(Corrupt)?;
    let start = f.near(t)?;
    let count_from = f.near_if(has(flags, 5), t)?;
    let counted_by = f.near_if(has(flags, 6), t)?;
    let pending_at = f.near_if(has(flags, 8), t)?;
    let decided = f.near_if(has(flags, 9), t)?;
    let stop = if has(flags, 10) { Some(f.u32()?) } else { None };
    let cause = f.text_if(has(flags, 14))?;
    let hook_insert = f.text_if(has(flags, 15))?;
    let counting = if has(flags, 16) {
        let s = f.near(t)?;
        Some((s, f.near_if(has(flags, 17), t)?))
    } else {
        None
    };
    let read = if has(flags, 18) {
        Some(ReadStep {
            idx: f.u32()?,
            start: f.near(t)?,
            end: f.near(t)?,
        })
    } else {
        None
    };
    let acked_at = f.near_if(has(flags, 19), t)?;
    Ok(IngestOp {
        op,
        t,
        named,
        event,
        done: has(flags, 2),
        maybe: has(flags, 3),
        acked: has(flags, 4),
        count_from,
        counted_by,
        pending: has(flags, 7).then_some(pending_at),
        start,
        decided,
        stop,
        effect,
        own_insert: has(flags, 11),
        indeterminate: has(flags, 12),
        inserted: has(flags, 13),
        cause,
        hook_insert,
        counting,
        read,
        acked_at,
    })
}

fn decode_resolve(f: &mut Fields<'_>) -> Result<ResolveOp, Corrupt> {
    let (op, named) = (f.num()?, f.u32()?);
    let wide = match f.byte()? {
        0 => None,
        _ => Some(f.num()?),
    };
    let outcome = match f.byte()? {
        0 => ResolveOutcome::Nothing,
        1 => {
            let span = f.span()?;
            ResolveOutcome::Resolved(ResolveFact {
                op,
                span,
                count: unzigzag(f.num()?),
            })
        }
        2 => {
            let completed = match f.byte()? {
                0 => None,
                _ => Some(f.num()?),
            };
            ResolveOutcome::Unknown(UnknownResolve {
                op,
                completed,
                span: f.span()?,
            })
        }
        k @ (3 | 4) => {
            let span = f.span()?;
            let p = Probe {
                op: Some(op),
                span,
                count: unzigzag(f.num()?),
            };
            if k == 3 {
                ResolveOutcome::Probe(p)
            } else {
                ResolveOutcome::Observation(p)
            }
        }
        _ => return Err(Corrupt),
    };
    Ok(ResolveOp {
        op,
        named,
        wide,
        outcome,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A staged number is the varint [`put`] writes, at every length.
    #[test]
    fn a_staged_number_is_written_as_put_writes_it() {
        let mut numbers: Vec<u64> = (0..64).flat_map(|s| [1u64 << s, (1u64 << s) - 1]).collect();
        numbers.extend([u64::MAX, 0, 0x80, 0x3fff, 0x4000, 1_234_567_890_123]);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            numbers.push(x >> (x % 64));
        }
        for n in numbers {
            let mut want = Vec::new();
            put(&mut want, n);
            let mut w = Stage::new();
            w.b[0] = 0xaa;
            w.n = 1;
            w.num(n);
            w.num(5);
            want.push(5);
            assert_eq!(&w.b[1..w.n], &want[..], "{n}");
        }
    }

    fn ingest(event: HeldId, full: bool) -> IngestOp {
        let some = |x: u64| full.then_some(x);
        IngestOp {
            op: 7,
            t: 1_000_000,
            named: 3,
            event,
            done: full,
            maybe: !full,
            acked: full,
            count_from: some(999_000),
            counted_by: some(u64::MAX),
            pending: full.then_some(some(5)),
            start: 0,
            decided: some(1_000_500),
            stop: full.then_some(2),
            effect: if full {
                Effect::KillDown
            } else {
                Effect::NothingChanged
            },
            own_insert: full,
            indeterminate: !full,
            inserted: full,
            cause: full.then(|| "busy at step ingest.s1".into()),
            hook_insert: full.then(|| "crash after step s2 (fault hook)".into()),
            counting: full.then_some((1_000_100, some(1_000_200))),
            read: full.then_some(ReadStep {
                idx: 1,
                start: 3,
                end: 4,
            }),
            acked_at: some(2_000_000),
        }
    }

    #[test]
    fn every_op_fact_reads_back_as_written() {
        let span = Span {
            start: 4,
            end: Some(9),
        };
        let open = Span {
            start: 4,
            end: None,
        };
        let mut facts = vec![OpFact::Nothing];
        for full in [false, true] {
            for event in [
                HeldId::Bits(u128::MAX - 5, false),
                HeldId::Bits(17, true),
                HeldId::Text("evt-1".into()),
            ] {
                facts.push(OpFact::Ingest(Box::new(ingest(event, full))));
            }
        }
        let resolve = |wide, outcome| {
            OpFact::Resolve(Box::new(ResolveOp {
                op: 11,
                named: 2,
                wide,
                outcome,
            }))
        };
        let probe = |span| Probe {
            op: Some(11),
            span,
            count: -3,
        };
        facts.extend([
            resolve(None, ResolveOutcome::Nothing),
            resolve(
                Some(4),
                ResolveOutcome::Resolved(ResolveFact {
                    op: 11,
                    span,
                    count: 12,
                }),
            ),
            resolve(
                None,
                ResolveOutcome::Unknown(UnknownResolve {
                    op: 11,
                    completed: Some(10),
                    span: open,
                }),
            ),
            resolve(
                None,
                ResolveOutcome::Unknown(UnknownResolve {
                    op: 11,
                    completed: None,
                    span,
                }),
            ),
            resolve(None, ResolveOutcome::Probe(probe(span))),
            resolve(None, ResolveOutcome::Observation(probe(open))),
        ]);
        for f in facts {
            let mut out = Vec::new();
            encode(&f, &mut out);
            if let OpFact::Ingest(i) = &f {
                let mut alone = Vec::new();
                encode_ingest(i, &mut alone);
                assert_eq!(alone, out);
            }
            assert_eq!(decode(&out).unwrap(), f);
            // A record cut short never reads back.
            assert!(decode(&out[..out.len() - 1]).is_err());
        }
    }
}
