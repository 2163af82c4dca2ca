//! One history entry as a compact record of the binary history
//! ([`super::file`]): a length, a tag byte, then the fields. The entries of
//! every op (invoke, step, completion with its common result fields) are
//! varints, flag bits for the optional fields and length-prefixed strings;
//! the rare ones (header, footer, fault, bench, and an op entry with a rare
//! field: a registered workload's op kind, an aborted op, a crashed op's
//! hook steps) are their JSON text in a record, which keeps every field
//! exact with little code. A record decodes to the very entry encoded.
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use super::{
    Completion, CompletionType, Delivery, Entry, HookStep, Invoke, OpKind, OpResult, Step,
    StepErrorKind,
};

/// Why a record cannot be decoded: the file is not one the bench wrote.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The record ends before its fields do.
    #[error("a record ends before its fields do")]
    Short,
    /// An unknown tag byte.
    #[error("unknown record tag {0}")]
    Tag(u8),
    /// A string field is not UTF-8.
    #[error("a text field is not UTF-8")]
    Utf8,
    /// A number does not fit its field.
    #[error("a number does not fit its field")]
    Range,
    /// A JSON record is no history entry.
    #[error("not a history entry: {0}")]
    Json(#[from] serde_json::Error),
}

/// A record's tag byte (its first): its entry in JSON.
pub const JSON: u8 = 0;
/// A record's tag byte: an invoke ([`invoke_raw`]).
pub const INVOKE: u8 = 1;
/// A record's tag byte: a step ([`step_raw`]).
pub const STEP: u8 = 2;
/// A record's tag byte: an `ok` completion ([`completion_view`]).
pub const OK: u8 = 3;
/// A record's tag byte: a `fail` completion.
pub const FAIL: u8 = 4;
/// A record's tag byte: an `info` completion.
pub const INFO: u8 = 5;

/// Appends `entry` as one record (its length first) to `out`.
pub fn encode(entry: &Entry, out: &mut Vec<u8>) {
    let start = out.len();
    // Room for a one-byte length; a longer one is made room for below.
    out.push(0);
    encode_payload(entry, out);
    let len = out.len() - start - 1;
    if len < 0x80 {
        out[start] = len as u8;
    } else {
        let mut prefix = [0u8; 10];
        let n = varint_into(len as u64, &mut prefix);
        out.splice(start..start + 1, prefix[..n].iter().copied());
    }
}

/// Appends `entry`'s record without its length (what [`decode`] takes).
pub fn encode_payload(entry: &Entry, out: &mut Vec<u8>) {
    match entry {
        Entry::Invoke(i) if i.f.is_built_in() => invoke(i, out),
        Entry::Step(s) => step(s, out),
        Entry::Ok(c) | Entry::Fail(c) | Entry::Info(c) if completion_is_common(c) => {
            let tag = match entry {
                Entry::Ok(_) => OK,
                Entry::Fail(_) => FAIL,
                _ => INFO,
            };
            completion(tag, c, out)
        }
        _ => {
            out.push(JSON);
            serde_json::to_writer(&mut *out, entry).expect("history entries always serialize");
        }
    }
}

/// Whether a completion has only the fields the binary record holds.
fn completion_is_common(c: &Completion) -> bool {
    c.f.is_built_in() && c.result.aborted.is_none() && c.result.hook_steps.is_empty()
}

fn invoke(i: &Invoke, out: &mut Vec<u8>) {
    out.push(INVOKE);
    put(out, i.t);
    put(out, i.op);
    put(out, i.worker.into());
    out.push(i.f.index() as u8);
    let flags = bit(0, i.delivery.is_some())
        | bit(1, i.event_id.is_some())
        | bit(2, !i.project.is_empty())
        | bit(3, !i.fingerprint.is_empty())
        | bit(4, !i.group_id.is_empty())
        | bit(5, i.attempt.is_some())
        | bit(6, i.intended.is_some());
    put(out, flags);
    if let Some(d) = &i.delivery {
        put(out, zigzag(d.msg_id));
        put(out, d.dup_id.into());
        put(out, d.attempt.into());
        put(out, zigzag(d.tx_id));
    }
    if let Some(e) = &i.event_id {
        text(out, e);
    }
    for s in [&i.project, &i.fingerprint, &i.group_id] {
        if !s.is_empty() {
            text(out, s);
        }
    }
    if let Some(a) = i.attempt {
        put(out, a.into());
    }
    if let Some(t) = i.intended {
        put(out, t);
    }
}

fn step(s: &Step, out: &mut Vec<u8>) {
    out.push(STEP);
    put(out, s.op);
    put(out, s.idx.into());
    text(out, &s.step);
    put(out, s.start);
    let flags = bit(0, s.end.is_some())
        | bit(1, s.error.is_some())
        | bit(2, s.error_kind.is_some())
        | bit(3, s.error_kind == Some(StepErrorKind::Other))
        | bit(4, s.maybe_applied)
        | bit(5, s.returned.is_some());
    put(out, flags);
    if let Some(e) = s.end {
        put(out, e);
    }
    put(out, s.changes);
    put(out, s.rows);
    if let Some(e) = &s.error {
        text(out, e);
    }
    if let Some(r) = &s.returned {
        // Rare and small (a read's status, a resolve's count): JSON text
        // keeps every SQL type exact with no codec of its own.
        text(out, &serde_json::to_string(r).unwrap_or_default());
    }
}

fn completion(tag: u8, c: &Completion, out: &mut Vec<u8>) {
    out.push(tag);
    put(out, c.t);
    put(out, c.op);
    put(out, c.worker.into());
    out.push(c.f.index() as u8);
    let r = &c.result;
    let flags = bit(0, r.accepted.is_some())
        | bit(1, r.accepted == Some(true))
        | bit(2, r.resolved.is_some())
        | bit(3, r.resolved == Some(true))
        | bit(4, r.event_count.is_some())
        | bit(5, r.status.is_some())
        | bit(6, r.effect_step.is_some())
        | bit(7, r.error.is_some())
        | bit(8, r.crashed_after.is_some())
        | bit(9, r.sent.is_some())
        | bit(10, r.ambiguous.is_some());
    put(out, flags);
    if let Some(n) = r.event_count {
        put(out, zigzag(n));
    }
    if let Some(s) = &r.status {
        text(out, s);
    }
    if let Some(n) = r.effect_step {
        put(out, n.into());
    }
    for s in [&r.error, &r.crashed_after].into_iter().flatten() {
        text(out, s);
    }
    if let Some([a, b]) = r.sent {
        put(out, zigzag(a));
        put(out, zigzag(b));
    }
    if let Some(s) = &r.ambiguous {
        text(out, s);
    }
}

fn bit(n: u32, set: bool) -> u64 {
    u64::from(set) << n
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

/// Writes `n` as a LEB128 varint into `buf`; returns its length.
fn varint_into(mut n: u64, buf: &mut [u8; 10]) -> usize {
    let mut i = 0;
    while n >= 0x80 {
        buf[i] = (n as u8) | 0x80;
        n >>= 7;
        i += 1;
    }
    buf[i] = n as u8;
    i + 1
}

/// Appends `n` as a LEB128 varint. Byte by byte: most are one or two
/// bytes, where a copy of a buffer costs a call of its own.
#[inline]
pub fn put(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn text(out: &mut Vec<u8>, s: &str) {
    put(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// A varint at the start of `bytes`, and its length; None when `bytes`
/// ends inside it (or it is longer than a u64's).
#[inline]
pub fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    varint_inlined(bytes)
}

/// [`varint`], inlined at every call: for a reader of records of many
/// numbers of several bytes (an ingest's summary holds half a dozen
/// instants), where a call per number was most of a decode.
#[inline(always)]
pub fn varint_inlined(bytes: &[u8]) -> Option<(u64, usize)> {
    // Most numbers of a record are one byte.
    match bytes.first() {
        Some(&b) if b < 0x80 => return Some((u64::from(b), 1)),
        None => return None,
        Some(_) => {}
    }
    // A longer one (an instant: six bytes) that ends within eight bytes:
    // all at once, as the bytes of a u64.
    if let Some(eight) = bytes.first_chunk::<8>() {
        if let Some((n, len)) = eight_bytes(u64::from_le_bytes(*eight)) {
            return Some((n, len));
        }
    }
    let mut n = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        n |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((n, i + 1));
        }
    }
    None
}

/// The varint that ends within the eight bytes of `w` (the first the
/// lowest), and its length; None if none does.
#[inline(always)]
fn eight_bytes(w: u64) -> Option<(u64, usize)> {
    let ends = !w & 0x8080_8080_8080_8080;
    if ends == 0 {
        return None;
    }
    // The first byte with its top bit clear is the last: it and the
    // bytes before it kept, their seven low bits each.
    let len = (ends.trailing_zeros() / 8 + 1) as usize;
    let x = w & (ends ^ (ends - 1)) & 0x7f7f_7f7f_7f7f_7f7f;
    // Packed: pairs, fours, then the two halves.
    let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    let x = (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4);
    Some((x, len))
}

/// Reads the fields of one record's payload in order: the bytes not yet
/// read, and all of them (the record's, after its tag).
struct Fields<'a>(&'a [u8], &'a [u8]);

// Inlined: each record reads a dozen fields, each a call otherwise.
impl<'a> Fields<'a> {
    fn new(record: &'a [u8]) -> Self {
        Fields(record, record)
    }

    /// A varint ([`varint`]): one byte read in place, a longer one
    /// ([`Fields::long`]) too.
    #[inline(always)]
    fn num(&mut self) -> Result<u64, DecodeError> {
        match self.0.first() {
            Some(&b) if b < 0x80 => {
                self.0 = &self.0[1..];
                Ok(u64::from(b))
            }
            Some(_) => self.long(),
            None => Err(DecodeError::Short),
        }
    }

    /// [`Fields::num`] of a number longer than a byte: the eight bytes
    /// from where it starts read as a u64 at once; where fewer are left,
    /// the record's last eight moved down, so that the bytes past the
    /// record read as zeros (each ends a varint: one that ends there is
    /// cut short, as [`varint`] finds it).
    #[inline(always)]
    fn long(&mut self) -> Result<u64, DecodeError> {
        let left = self.0.len();
        let w = if let Some(eight) = self.0.first_chunk::<8>() {
            u64::from_le_bytes(*eight)
        } else if let Some(last) = self.1.last_chunk::<8>() {
            // `self.0` ends where the record does, 1 to 7 bytes before.
            u64::from_le_bytes(*last) >> (8 * (8 - left))
        } else {
            return self.longest();
        };
        match eight_bytes(w) {
            Some((n, len)) if len <= left => {
                self.0 = &self.0[len..];
                Ok(n)
            }
            Some(_) => Err(DecodeError::Short),
            None => self.longest(),
        }
    }

    /// [`Fields::num`] of a number of more than eight bytes (or one in a
    /// record of fewer).
    #[cold]
    #[inline(never)]
    fn longest(&mut self) -> Result<u64, DecodeError> {
        let (n, len) = varint(self.0).ok_or(DecodeError::Short)?;
        self.0 = &self.0[len..];
        Ok(n)
    }
    #[inline]
    fn u32(&mut self) -> Result<u32, DecodeError> {
        u32::try_from(self.num()?).map_err(|_| DecodeError::Range)
    }
    #[inline]
    fn byte(&mut self) -> Result<u8, DecodeError> {
        let (&b, rest) = self.0.split_first().ok_or(DecodeError::Short)?;
        self.0 = rest;
        Ok(b)
    }
    #[inline]
    fn kind(&mut self) -> Result<OpKind, DecodeError> {
        let k = self.byte()?;
        // Only built-in kinds are written as numbers.
        [OpKind::Ingest, OpKind::Resolve, OpKind::Handle]
            .into_iter()
            .find(|b| b.index() == usize::from(k))
            .ok_or(DecodeError::Range)
    }
    fn text(&mut self) -> Result<String, DecodeError> {
        self.str().map(str::to_string)
    }
    #[inline]
    fn str(&mut self) -> Result<&'a str, DecodeError> {
        let len = usize::try_from(self.num()?).map_err(|_| DecodeError::Range)?;
        if len > self.0.len() {
            return Err(DecodeError::Short);
        }
        let (s, rest) = self.0.split_at(len);
        self.0 = rest;
        std::str::from_utf8(s).map_err(|_| DecodeError::Utf8)
    }
    /// A text's bytes, not checked as UTF-8.
    #[inline]
    fn raw(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = usize::try_from(self.num()?).map_err(|_| DecodeError::Range)?;
        if len > self.0.len() {
            return Err(DecodeError::Short);
        }
        let (s, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(s)
    }
    #[inline]
    fn opt<T>(
        &mut self,
        set: bool,
        f: impl FnOnce(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Option<T>, DecodeError> {
        if set {
            f(self).map(Some)
        } else {
            Ok(None)
        }
    }
}

fn has(flags: u64, n: u32) -> bool {
    flags & (1 << n) != 0
}

/// The entry of one record's payload (its length already taken off).
pub fn decode(payload: &[u8]) -> Result<Entry, DecodeError> {
    let (&tag, rest) = payload.split_first().ok_or(DecodeError::Short)?;
    let mut f = Fields::new(rest);
    match tag {
        JSON => Ok(serde_json::from_slice(rest)?),
        INVOKE => decode_invoke(&mut f).map(Entry::Invoke),
        STEP => decode_step(&mut f).map(Entry::Step),
        OK | FAIL | INFO => {
            let kind = [
                CompletionType::Ok,
                CompletionType::Fail,
                CompletionType::Info,
            ][usize::from(tag - OK)];
            decode_completion(&mut f).map(|c| Entry::completion(kind, c))
        }
        t => Err(DecodeError::Tag(t)),
    }
}

fn decode_invoke(f: &mut Fields) -> Result<Invoke, DecodeError> {
    let (t, op, worker, kind) = (f.num()?, f.num()?, f.u32()?, f.kind()?);
    let flags = f.num()?;
    let delivery = f.opt(has(flags, 0), |f| {
        Ok(Delivery {
            msg_id: unzigzag(f.num()?),
            dup_id: f.u32()?,
            attempt: f.u32()?,
            tx_id: unzigzag(f.num()?),
        })
    })?;
    let event_id = f.opt(has(flags, 1), Fields::text)?;
    let mut strings = [2, 3, 4].map(|n| (has(flags, n), String::new()));
    for (set, s) in &mut strings {
        if *set {
            *s = f.text()?;
        }
    }
    let [(_, project), (_, fingerprint), (_, group_id)] = strings;
    Ok(Invoke {
        t,
        op,
        worker,
        f: kind,
        delivery,
        event_id,
        project,
        fingerprint,
        group_id,
        attempt: f.opt(has(flags, 5), Fields::u32)?,
        intended: f.opt(has(flags, 6), Fields::num)?,
    })
}

/// An invoke record's fields the checkers read, borrowed from its
/// payload ([`invoke_view`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvokeView<'a> {
    /// As [`Invoke::t`].
    pub t: u64,
    /// As [`Invoke::op`].
    pub op: u64,
    /// As [`Invoke::f`].
    pub f: OpKind,
    /// As [`Invoke::event_id`].
    pub event_id: Option<&'a str>,
    /// As [`Invoke::project`].
    pub project: &'a str,
    /// As [`Invoke::fingerprint`].
    pub fingerprint: &'a str,
    /// As [`Invoke::group_id`].
    pub group_id: &'a str,
    /// As [`Invoke::intended`].
    pub intended: Option<u64>,
}

impl<'a> InvokeView<'a> {
    /// The view of a decoded invoke (a JSON history's, or a rare entry
    /// read whole), as the binary records are viewed in place.
    pub fn of(i: &'a Invoke) -> Self {
        InvokeView {
            t: i.t,
            op: i.op,
            f: i.f,
            event_id: i.event_id.as_deref(),
            project: &i.project,
            fingerprint: &i.fingerprint,
            group_id: &i.group_id,
            intended: i.intended,
        }
    }
}

/// An invoke's fields, every one checked as [`decode_invoke`] checks it.
fn invoke_fields<'a>(f: &mut Fields<'a>) -> Result<InvokeView<'a>, DecodeError> {
    let (t, op, _worker, kind) = (f.num()?, f.num()?, f.u32()?, f.kind()?);
    let flags = f.num()?;
    if has(flags, 0) {
        f.num()?;
        f.u32()?;
        f.u32()?;
        f.num()?;
    }
    let event_id = f.opt(has(flags, 1), Fields::str)?;
    let mut strings = [2, 3, 4].map(|n| (has(flags, n), ""));
    for (set, s) in &mut strings {
        if *set {
            *s = f.str()?;
        }
    }
    let [(_, project), (_, fingerprint), (_, group_id)] = strings;
    if has(flags, 5) {
        f.u32()?;
    }
    let intended = f.opt(has(flags, 6), Fields::num)?;
    Ok(InvokeView {
        t,
        op,
        f: kind,
        event_id,
        project,
        fingerprint,
        group_id,
        intended,
    })
}

/// The invoke of an invoke record's payload, read where it lies (no owned
/// entry built); None for a record of any other kind (a rare invoke
/// written as JSON among them). Checked as [`decode`] checks it.
pub fn invoke_view(payload: &[u8]) -> Result<Option<InvokeView<'_>>, DecodeError> {
    let (&tag, rest) = payload.split_first().ok_or(DecodeError::Short)?;
    if tag != INVOKE {
        return Ok(None);
    }
    invoke_fields(&mut Fields::new(rest)).map(Some)
}

/// [`InvokeView`] with its texts as bytes not yet checked as UTF-8
/// ([`invoke_raw`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvokeRaw<'a> {
    /// As [`Invoke::t`].
    pub t: u64,
    /// As [`Invoke::op`].
    pub op: u64,
    /// As [`Invoke::f`].
    pub f: OpKind,
    /// As [`Invoke::event_id`], its bytes.
    pub event_id: Option<&'a [u8]>,
    /// As [`Invoke::project`], its bytes.
    pub project: &'a [u8],
    /// As [`Invoke::fingerprint`], its bytes.
    pub fingerprint: &'a [u8],
    /// As [`Invoke::group_id`], its bytes.
    pub group_id: &'a [u8],
    /// The three texts above as the record holds them: which of them it
    /// holds (bits 0, 1, 2: project, fingerprint, group id; an empty one
    /// is left out), and the bytes of those it holds, their lengths
    /// included. Equal for two records of equal texts written alike, and
    /// read as the same texts from equal bytes: a reader may know a
    /// triple by one span of bytes, not three.
    pub triple: (u8, &'a [u8]),
    /// As [`Invoke::intended`].
    pub intended: Option<u64>,
}

/// [`invoke_view`] but for the UTF-8 check of its four texts: every
/// other field is checked as [`decode`] checks it, and a text that is not
/// UTF-8 is where decode would fail, so a caller that accepts a text must
/// know it is UTF-8 (checked, or equal to one checked before). A reader
/// of millions of invokes naming a few keys checks each key once.
#[inline]
pub fn invoke_raw(payload: &[u8]) -> Result<Option<InvokeRaw<'_>>, DecodeError> {
    let (&tag, rest) = payload.split_first().ok_or(DecodeError::Short)?;
    if tag != INVOKE {
        return Ok(None);
    }
    let f = &mut Fields::new(rest);
    let (t, op, _worker, kind) = (f.num()?, f.num()?, f.u32()?, f.kind()?);
    let flags = f.num()?;
    if has(flags, 0) {
        f.num()?;
        f.u32()?;
        f.u32()?;
        f.num()?;
    }
    let event_id = f.opt(has(flags, 1), Fields::raw)?;
    let before = f.0;
    let mut strings = [2, 3, 4].map(|n| (has(flags, n), &b""[..]));
    for (set, s) in &mut strings {
        if *set {
            *s = f.raw()?;
        }
    }
    let triple = ((flags >> 2) as u8 & 7, &before[..before.len() - f.0.len()]);
    let [(_, project), (_, fingerprint), (_, group_id)] = strings;
    if has(flags, 5) {
        f.u32()?;
    }
    let intended = f.opt(has(flags, 6), Fields::num)?;
    Ok(Some(InvokeRaw {
        t,
        op,
        f: kind,
        event_id,
        project,
        fingerprint,
        group_id,
        triple,
        intended,
    }))
}

fn decode_step(f: &mut Fields) -> Result<Step, DecodeError> {
    let (v, returned) = step_fields(f)?;
    Ok(Step {
        op: v.op,
        idx: v.idx,
        step: v.step.to_string(),
        start: v.start,
        end: v.end,
        changes: v.changes,
        rows: v.rows,
        error: v.error.map(str::to_string),
        error_kind: v.error_kind,
        maybe_applied: v.maybe_applied,
        returned: returned
            .map(serde_json::from_str)
            .transpose()
            .map_err(DecodeError::Json)?,
    })
}

/// A step record's fields, borrowed from its payload ([`step_view`]): a
/// [`Step`] without what it returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepView<'a> {
    /// As [`Step::op`].
    pub op: u64,
    /// As [`Step::idx`].
    pub idx: u32,
    /// As [`Step::step`].
    pub step: &'a str,
    /// As [`Step::start`].
    pub start: u64,
    /// As [`Step::end`].
    pub end: Option<u64>,
    /// As [`Step::changes`].
    pub changes: u64,
    /// As [`Step::rows`].
    pub rows: u64,
    /// As [`Step::error`].
    pub error: Option<&'a str>,
    /// As [`Step::error_kind`].
    pub error_kind: Option<StepErrorKind>,
    /// As [`Step::maybe_applied`].
    pub maybe_applied: bool,
}

/// A step's fields, and the JSON text of what it returned (not parsed).
fn step_fields<'a>(f: &mut Fields<'a>) -> Result<(StepView<'a>, Option<&'a str>), DecodeError> {
    let (op, idx, step, start) = (f.num()?, f.u32()?, f.str()?, f.num()?);
    let flags = f.num()?;
    let end = f.opt(has(flags, 0), Fields::num)?;
    let (changes, rows) = (f.num()?, f.num()?);
    let error = f.opt(has(flags, 1), Fields::str)?;
    let returned = f.opt(has(flags, 5), Fields::str)?;
    let view = StepView {
        op,
        idx,
        step,
        start,
        end,
        changes,
        rows,
        error,
        error_kind: has(flags, 2).then(|| {
            if has(flags, 3) {
                StepErrorKind::Other
            } else {
                StepErrorKind::Busy
            }
        }),
        maybe_applied: has(flags, 4),
    };
    Ok((view, returned))
}

/// The step of a step record's payload, read where it lies (no owned
/// entry built); None for a record of any other kind. Checked as
/// [`decode`] checks it: it fails exactly where decode would.
pub fn step_view(payload: &[u8]) -> Result<Option<StepView<'_>>, DecodeError> {
    let (&tag, rest) = payload.split_first().ok_or(DecodeError::Short)?;
    if tag != STEP {
        return Ok(None);
    }
    let (view, returned) = step_fields(&mut Fields::new(rest))?;
    // Checked as decoding parses it, so that the two agree on every record.
    if let Some(r) = returned {
        check_returned(r)?;
    }
    Ok(Some(view))
}

/// [`StepView`] with its name and error as bytes not yet checked as
/// UTF-8 ([`step_raw`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepRaw<'a> {
    /// As [`Step::op`].
    pub op: u64,
    /// As [`Step::idx`].
    pub idx: u32,
    /// As [`Step::step`], its bytes.
    pub step: &'a [u8],
    /// As [`Step::start`].
    pub start: u64,
    /// As [`Step::end`].
    pub end: Option<u64>,
    /// As [`Step::changes`].
    pub changes: u64,
    /// As [`Step::rows`].
    pub rows: u64,
    /// As [`Step::error`], its bytes.
    pub error: Option<&'a [u8]>,
    /// As [`Step::error_kind`].
    pub error_kind: Option<StepErrorKind>,
    /// As [`Step::maybe_applied`].
    pub maybe_applied: bool,
}

/// [`step_view`] but for the UTF-8 check of the step's name and error:
/// every other field (what it returned too) is checked as [`decode`]
/// checks it, and a name or error that is not UTF-8 is where decode
/// would fail, so a caller that accepts one must know it is UTF-8
/// (checked, or equal to one checked before).
#[inline]
pub fn step_raw(payload: &[u8]) -> Result<Option<StepRaw<'_>>, DecodeError> {
    let (&tag, rest) = payload.split_first().ok_or(DecodeError::Short)?;
    if tag != STEP {
        return Ok(None);
    }
    let f = &mut Fields::new(rest);
    let (op, idx, step, start) = (f.num()?, f.u32()?, f.raw()?, f.num()?);
    let flags = f.num()?;
    let end = f.opt(has(flags, 0), Fields::num)?;
    let (changes, rows) = (f.num()?, f.num()?);
    let error = f.opt(has(flags, 1), Fields::raw)?;
    if let Some(r) = f.opt(has(flags, 5), Fields::str)? {
        check_returned(r)?;
    }
    Ok(Some(StepRaw {
        op,
        idx,
        step,
        start,
        end,
        changes,
        rows,
        error,
        error_kind: has(flags, 2).then(|| {
            if has(flags, 3) {
                StepErrorKind::Other
            } else {
                StepErrorKind::Busy
            }
        }),
        maybe_applied: has(flags, 4),
    }))
}

/// [`step_view`] of a record [`peek`] already accepted (the same bytes,
/// e.g. read back from a temp file they were copied to): what the step
/// returned is not checked again. Errors: as [`step_view`]'s, but for
/// what it returned.
pub fn step_view_peeked(payload: &[u8]) -> Result<Option<StepView<'_>>, DecodeError> {
    let (&tag, rest) = payload.split_first().ok_or(DecodeError::Short)?;
    if tag != STEP {
        return Ok(None);
    }
    step_fields(&mut Fields::new(rest)).map(|(view, _)| Some(view))
}

/// What a step returned (its JSON text) checked as decoding parses it
/// ([`SqlScalar`]): the common text (a few integers and words, no space)
/// read by hand ([`plain_returned`]), any other by serde_json.
#[inline]
fn check_returned(r: &str) -> Result<(), DecodeError> {
    if plain_returned(r.as_bytes()) {
        return Ok(());
    }
    serde_json::from_str::<Vec<SqlScalar>>(r).map_err(DecodeError::Json)?;
    Ok(())
}

/// Whether `b` is a JSON array, with no space, of nulls, integers of at
/// most 18 digits and strings of printable ASCII with no escape: text
/// serde_json reads as a `Vec<SqlScalar>` every time. False says
/// nothing (serde_json decides).
fn plain_returned(b: &[u8]) -> bool {
    let [b'[', inner @ .., b']'] = b else {
        return false;
    };
    let mut rest = inner;
    if rest.is_empty() {
        return true;
    }
    loop {
        let len = match rest {
            [b'"', after @ ..] => match after.iter().position(|&c| c == b'"') {
                Some(n)
                    if after[..n]
                        .iter()
                        .all(|&c| (0x20..0x7f).contains(&c) && c != b'\\') =>
                {
                    n + 2
                }
                _ => return false,
            },
            [b'n', b'u', b'l', b'l', ..] => 4,
            _ => {
                let sign = usize::from(rest.first() == Some(&b'-'));
                let digits = rest[sign..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                // No leading zero but a lone one.
                if digits == 0 || digits > 18 || (digits > 1 && rest[sign] == b'0') {
                    return false;
                }
                sign + digits
            }
        };
        match &rest[len..] {
            [] => return true,
            [b',', after @ ..] => rest = after,
            _ => return false,
        }
    }
}

/// One element of what a step returned, checked and not kept: exactly
/// what [`crate::workload::value::Value`] (an untagged enum of null, an
/// i64, an f64 and text) accepts: null, any number (an f64 takes every
/// one serde_json reads) and text; a bool, an array or an object is
/// refused. Parsing into `Value` itself buffers each element and builds
/// an error (with its message) for every variant it tries first.
struct SqlScalar;

impl<'de> serde::Deserialize<'de> for SqlScalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SqlScalar)
    }
}

impl serde::de::Visitor<'_> for SqlScalar {
    type Value = SqlScalar;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("null, a number or text")
    }
    fn visit_unit<E>(self) -> Result<SqlScalar, E> {
        Ok(SqlScalar)
    }
    fn visit_i64<E>(self, _: i64) -> Result<SqlScalar, E> {
        Ok(SqlScalar)
    }
    fn visit_u64<E>(self, _: u64) -> Result<SqlScalar, E> {
        Ok(SqlScalar)
    }
    fn visit_f64<E>(self, _: f64) -> Result<SqlScalar, E> {
        Ok(SqlScalar)
    }
    fn visit_str<E>(self, _: &str) -> Result<SqlScalar, E> {
        Ok(SqlScalar)
    }
}

fn decode_completion(f: &mut Fields) -> Result<Completion, DecodeError> {
    let (t, op, worker, kind) = (f.num()?, f.num()?, f.u32()?, f.kind()?);
    let flags = f.num()?;
    let event_count = f.opt(has(flags, 4), |f| f.num().map(unzigzag))?;
    let status = f.opt(has(flags, 5), Fields::text)?;
    let effect_step = f.opt(has(flags, 6), Fields::u32)?;
    let error = f.opt(has(flags, 7), Fields::text)?;
    let crashed_after = f.opt(has(flags, 8), Fields::text)?;
    let sent = f.opt(has(flags, 9), |f| {
        Ok([unzigzag(f.num()?), unzigzag(f.num()?)])
    })?;
    let ambiguous = f.opt(has(flags, 10), Fields::text)?;
    Ok(Completion {
        t,
        op,
        worker,
        f: kind,
        result: OpResult {
            accepted: has(flags, 0).then_some(has(flags, 1)),
            resolved: has(flags, 2).then_some(has(flags, 3)),
            event_count,
            status,
            effect_step,
            error,
            aborted: None,
            crashed_after,
            sent,
            ambiguous,
            hook_steps: Vec::new(),
        },
    })
}

/// A completion's fields, borrowed from its record ([`completion_view`])
/// or from a decoded completion ([`CompletionView::of`]): what its op's
/// summary reads, with no owned result built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompletionView<'a> {
    /// As [`Completion::t`].
    pub t: u64,
    /// As [`Completion::op`].
    pub op: u64,
    /// As [`Completion::f`].
    pub f: OpKind,
    /// As [`OpResult::accepted`].
    pub accepted: Option<bool>,
    /// As [`OpResult::resolved`].
    pub resolved: Option<bool>,
    /// As [`OpResult::event_count`].
    pub event_count: Option<i64>,
    /// As [`OpResult::status`].
    pub status: Option<&'a str>,
    /// As [`OpResult::effect_step`].
    pub effect_step: Option<u32>,
    /// As [`OpResult::error`].
    pub error: Option<&'a str>,
    /// As [`OpResult::aborted`] (never in a binary record).
    pub aborted: Option<crate::control::AbortCause>,
    /// As [`OpResult::crashed_after`].
    pub crashed_after: Option<&'a str>,
    /// As [`OpResult::sent`].
    pub sent: Option<[i64; 2]>,
    /// As [`OpResult::ambiguous`].
    pub ambiguous: Option<&'a str>,
    /// As [`OpResult::hook_steps`] (none in a binary record).
    pub hook_steps: &'a [HookStep],
}

impl<'a> CompletionView<'a> {
    /// The view of a decoded completion (a JSON history's, or a rare
    /// entry read whole), as the binary records are viewed in place.
    pub fn of(c: &'a Completion) -> Self {
        let r = &c.result;
        CompletionView {
            t: c.t,
            op: c.op,
            f: c.f,
            accepted: r.accepted,
            resolved: r.resolved,
            event_count: r.event_count,
            status: r.status.as_deref(),
            effect_step: r.effect_step,
            error: r.error.as_deref(),
            aborted: r.aborted,
            crashed_after: r.crashed_after.as_deref(),
            sent: r.sent,
            ambiguous: r.ambiguous.as_deref(),
            hook_steps: &r.hook_steps,
        }
    }
}

/// The completion of a completion record's payload (ok, fail or info),
/// read where it lies (no owned entry built); None for a record of any
/// other kind (a rare completion written as JSON among them). Checked as
/// [`decode`] checks it: it fails exactly where decode would.
#[inline]
pub fn completion_view(
    payload: &[u8],
) -> Result<Option<(CompletionType, CompletionView<'_>)>, DecodeError> {
    let (&tag, rest) = payload.split_first().ok_or(DecodeError::Short)?;
    let kind = match tag {
        OK => CompletionType::Ok,
        FAIL => CompletionType::Fail,
        INFO => CompletionType::Info,
        _ => return Ok(None),
    };
    let f = &mut Fields::new(rest);
    let (t, op, _worker, kind_f) = (f.num()?, f.num()?, f.u32()?, f.kind()?);
    let flags = f.num()?;
    // The common record (an ingest's answer) has no optional field.
    let mut view = CompletionView {
        t,
        op,
        f: kind_f,
        accepted: has(flags, 0).then_some(has(flags, 1)),
        resolved: has(flags, 2).then_some(has(flags, 3)),
        event_count: None,
        status: None,
        effect_step: None,
        error: None,
        aborted: None,
        crashed_after: None,
        sent: None,
        ambiguous: None,
        hook_steps: &[],
    };
    if flags & 0x7f0 != 0 {
        view.event_count = f.opt(has(flags, 4), |f| f.num().map(unzigzag))?;
        view.status = f.opt(has(flags, 5), Fields::str)?;
        view.effect_step = f.opt(has(flags, 6), Fields::u32)?;
        view.error = f.opt(has(flags, 7), Fields::str)?;
        view.crashed_after = f.opt(has(flags, 8), Fields::str)?;
        view.sent = f.opt(has(flags, 9), |f| {
            Ok([unzigzag(f.num()?), unzigzag(f.num()?)])
        })?;
        view.ambiguous = f.opt(has(flags, 10), Fields::str)?;
    }
    Ok(Some((kind, view)))
}

/// What a reader that routes records needs of an op's record, read
/// without building the entry: [`peek`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peek<'a> {
    /// An invoke: its op, (project, fingerprint), event id, and its
    /// latest time (its invoke or intended time).
    Invoke {
        /// The op's id.
        op: u64,
        /// The latest of its times, ns since run start.
        t: u64,
        /// Its project.
        project: &'a str,
        /// Its fingerprint.
        fingerprint: &'a str,
        /// Its event id, if any.
        event_id: Option<&'a str>,
    },
    /// A step or a completion: its op and its latest time.
    Op {
        /// The op's id.
        op: u64,
        /// The latest of its times, ns since run start.
        t: u64,
    },
    /// A record in JSON (header, footer, fault, bench, a rare op entry):
    /// decode it.
    Json,
}

/// The routing facts of one record's payload (see [`Peek`]). An op's
/// record is checked as [`decode`] checks it (it fails where decode
/// would), without building the entry; a JSON record is not read.
pub fn peek(payload: &[u8]) -> Result<Peek<'_>, DecodeError> {
    let (&tag, rest) = payload.split_first().ok_or(DecodeError::Short)?;
    let mut f = Fields::new(rest);
    match tag {
        JSON => Ok(Peek::Json),
        INVOKE => {
            let i = invoke_fields(&mut f)?;
            Ok(Peek::Invoke {
                op: i.op,
                t: i.t.max(i.intended.unwrap_or(0)),
                project: i.project,
                fingerprint: i.fingerprint,
                event_id: i.event_id,
            })
        }
        STEP => {
            let s = step_view(payload)?.ok_or(DecodeError::Tag(tag))?;
            Ok(Peek::Op {
                op: s.op,
                t: s.end.unwrap_or(s.start).max(s.start),
            })
        }
        OK | FAIL | INFO => {
            let (t, op, _worker, _kind) = (f.num()?, f.num()?, f.u32()?, f.kind()?);
            let flags = f.num()?;
            f.opt(has(flags, 4), Fields::num)?;
            f.opt(has(flags, 5), Fields::str)?;
            f.opt(has(flags, 6), Fields::u32)?;
            f.opt(has(flags, 7), Fields::str)?;
            f.opt(has(flags, 8), Fields::str)?;
            f.opt(has(flags, 9), |f| Ok((f.num()?, f.num()?)))?;
            f.opt(has(flags, 10), Fields::str)?;
            Ok(Peek::Op { op, t })
        }
        t => Err(DecodeError::Tag(t)),
    }
}
