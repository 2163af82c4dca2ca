//! The binary history against the JSON lines it replaces: every entry
//! variant, every optional field set and unset, random entries, and a file
//! cut at every byte.
//!
//! Test-only: it imports the history's own modules and the types its
//! entries hold.

use super::codec;
use super::print::print;
use super::reader::{cut_tail, read, read_prefix};
use super::writer::{Batch, HistoryFile, HistoryWriter};
use super::*;
use crate::control::AbortCause;
use crate::fault_kind::FaultKind;
use crate::workload::value::Value;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn s(t: &str) -> String {
    t.to_string()
}

fn header() -> Header {
    let mut h = Header {
        schema_version: HISTORY_SCHEMA_VERSION,
        workload: s("w"),
        scenario: s("sc"),
        variant: s("v"),
        seed: 7,
        started_utc: s("2026-01-01T00:00:00.000Z"),
        step_log: true,
        counting_step: 2,
        event_step: Some(1),
        namespace: s("ns-"),
        ingest_steps: vec![s("s1"), s("s2")],
        ingest_block: Some([0, 2]),
        shard: Some(ShardHeader {
            index: 0,
            count: 2,
            run_id: s("r"),
            clock_utc_ns: 5,
        }),
        merged: None,
        workload_part: Default::default(),
    };
    h.put(&serde_json::json!({"hot_groups": 4, "z": [1, -2, 0.5, null, "x"]}));
    h
}

fn invoke(full: bool) -> Invoke {
    Invoke {
        t: 1_234_567_890,
        op: 42,
        worker: 3,
        f: if full { OpKind::Handle } else { OpKind::Ingest },
        delivery: full.then_some(Delivery {
            msg_id: -5,
            dup_id: 2,
            attempt: 3,
            tx_id: i64::MAX,
        }),
        event_id: full.then(|| s("ev-ü-1")),
        project: if full { s("p1") } else { String::new() },
        fingerprint: if full { s("f1") } else { String::new() },
        group_id: if full { s("g1") } else { String::new() },
        attempt: full.then_some(0),
        intended: full.then_some(u64::MAX),
    }
}

fn step(full: bool, kind: StepErrorKind) -> Step {
    Step {
        op: u64::MAX,
        idx: 4,
        step: s("s3_write"),
        start: 0,
        end: full.then_some(99),
        changes: 1,
        rows: 300,
        error: full.then(|| s("database is locked")),
        error_kind: full.then_some(kind),
        maybe_applied: full,
        returned: full.then(|| vec![Value::Text(s("resolved")), Value::Int(-3), Value::Null]),
    }
}

fn result(full: bool, yes: bool) -> OpResult {
    OpResult {
        accepted: full.then_some(yes),
        resolved: full.then_some(!yes),
        event_count: full.then_some(i64::MIN),
        status: full.then(|| s("resolved")),
        effect_step: full.then_some(2),
        error: full.then(|| s("boom")),
        aborted: None,
        crashed_after: full.then(|| s("s1")),
        sent: full.then_some([-1, 7]),
        ambiguous: full.then(|| s("the answer does not say")),
        hook_steps: Vec::new(),
    }
}

fn completion(full: bool, yes: bool) -> Completion {
    Completion {
        t: 77,
        op: 42,
        worker: 0,
        f: OpKind::Resolve,
        result: result(full, yes),
    }
}

/// Every entry variant, with every optional field set and unset, and the
/// rare fields that make a record JSON text.
fn every_entry() -> Vec<Entry> {
    let mut v = vec![Entry::Header(header())];
    for full in [false, true] {
        v.push(Entry::Invoke(invoke(full)));
        for kind in [StepErrorKind::Busy, StepErrorKind::Other] {
            v.push(Entry::Step(step(full, kind)));
        }
        for yes in [false, true] {
            for t in CompletionType::ALL {
                v.push(Entry::completion(t, completion(full, yes)));
            }
        }
    }
    let mut rare = completion(true, true);
    rare.result.aborted = Some(AbortCause::Grace);
    rare.result.hook_steps = vec![HookStep {
        step: s("s1"),
        changes: 1,
    }];
    v.push(Entry::Info(rare));
    let mut aborted = completion(false, true);
    aborted.result.aborted = Some(AbortCause::ByUser);
    v.push(Entry::Fail(aborted));
    for full in [false, true] {
        v.push(Entry::Fault(FaultEntry {
            t: 1,
            fault: 2,
            kind: FaultKind::Proxy,
            action: FaultAction::Inject,
            op: full.then_some(3),
            step: full.then(|| s("s2")),
            forwarded: full.then_some(true),
            detail: full.then(|| s("drop")),
            dropped: full.then(|| DroppedResponse {
                status: 200,
                body: Some(s("{}")),
            }),
        }));
        v.push(Entry::Bench(BenchEntry {
            t: 1,
            end: 2,
            action: BenchAction::TxnRollback,
            detail: full.then(|| s("d")),
            op: full.then_some(9),
            fuzz: full.then(|| FuzzChoice {
                step: Some(s("s1")),
                n: 1,
                ns: 5,
            }),
            txn: full.then(|| TxnRollback {
                block: s("s1"),
                step: s("s2"),
                attempt: 0,
                code: Some(517),
                wait_ns: 3,
                retried: true,
                backoff_ns: 4,
            }),
        }));
        v.push(Entry::Footer(Footer {
            t: 100,
            partial: full,
            ops: 2,
            tables_read: full.then_some([98, 99]),
        }));
    }
    v
}

fn json_lines(entries: &[Entry]) -> String {
    entries
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect()
}

fn write_bin(path: &std::path::Path, entries: &[Entry]) {
    let w = HistoryWriter::create(path).unwrap();
    let sink = w.sink();
    for e in entries {
        sink.send_entry(e);
    }
    drop(sink);
    w.finish().unwrap();
}

#[test]
fn both_formats_read_back_every_entry_and_print_the_same_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let entries = every_entry();
    let bin = dir.path().join(file::FILE);
    write_bin(&bin, &entries);
    let jsonl = dir.path().join(file::JSON_LINES_FILE);
    std::fs::write(&jsonl, json_lines(&entries)).unwrap();
    assert_eq!(file::format_of(&bin).unwrap(), file::Format::Binary);
    assert_eq!(file::format_of(&jsonl).unwrap(), file::Format::JsonLines);
    for p in [&bin, &jsonl] {
        let back: Vec<Entry> = read(p).unwrap().map(Result::unwrap).collect();
        assert_eq!(back, entries, "{}", p.display());
        let mut out = Vec::new();
        let printed = print(p, &mut out).unwrap();
        assert_eq!(printed.entries, entries.len() as u64);
        assert_eq!(String::from_utf8(out).unwrap(), json_lines(&entries));
    }
    // The folder: the new name first, the old one when alone.
    assert_eq!(file::in_folder(dir.path()), bin);
    std::fs::remove_file(&bin).unwrap();
    assert_eq!(file::in_folder(dir.path()), jsonl);
}

#[test]
fn an_ops_records_take_far_fewer_bytes_than_its_json() {
    let e = Entry::Invoke(invoke(false));
    let mut b = Vec::new();
    codec::encode(&e, &mut b);
    assert!(
        b.len() * 3 < serde_json::to_string(&e).unwrap().len(),
        "{}",
        b.len()
    );
    // The rare ones are JSON text.
    let e = &every_entry()[0];
    b.clear();
    codec::encode(e, &mut b);
    assert!(b.ends_with(serde_json::to_string(e).unwrap().as_bytes()));
}

fn random_text(r: &mut ChaCha8Rng) -> Option<String> {
    let n = r.random_range(0..4usize);
    (n > 0).then(|| {
        "aé\"\n\u{1F600}x"
            .chars()
            .cycle()
            .take(n * 37 % 200)
            .collect()
    })
}

fn random_entry(r: &mut ChaCha8Rng) -> Entry {
    let num = |r: &mut ChaCha8Rng| match r.random_range(0..3) {
        0 => r.random_range(0..128u64),
        1 => r.random::<u64>() >> r.random_range(0..64),
        _ => u64::MAX,
    };
    let kinds = [OpKind::Ingest, OpKind::Resolve, OpKind::Handle];
    let f = kinds[r.random_range(0..3usize)];
    match r.random_range(0..3) {
        0 => Entry::Invoke(Invoke {
            t: num(r),
            op: num(r),
            worker: num(r) as u32,
            f,
            delivery: r.random::<bool>().then(|| Delivery {
                msg_id: num(r) as i64,
                dup_id: num(r) as u32,
                attempt: num(r) as u32,
                tx_id: num(r) as i64,
            }),
            event_id: random_text(r),
            project: random_text(r).unwrap_or_default(),
            fingerprint: random_text(r).unwrap_or_default(),
            group_id: random_text(r).unwrap_or_default(),
            attempt: r.random::<bool>().then(|| num(r) as u32),
            intended: r.random::<bool>().then(|| num(r)),
        }),
        1 => {
            let error = random_text(r);
            Entry::Step(Step {
                op: num(r),
                idx: num(r) as u32,
                step: random_text(r).unwrap_or_default(),
                start: num(r),
                end: r.random::<bool>().then(|| num(r)),
                changes: num(r),
                rows: num(r),
                error_kind: error.as_ref().map(|_| {
                    [StepErrorKind::Busy, StepErrorKind::Other][r.random_range(0..2usize)]
                }),
                maybe_applied: error.is_some() && r.random(),
                error,
                returned: r
                    .random::<bool>()
                    .then(|| vec![Value::Int(num(r) as i64), Value::Text(s("open"))]),
            })
        }
        _ => {
            let opt_bool = |r: &mut ChaCha8Rng| r.random::<bool>().then(|| r.random::<bool>());
            let c = Completion {
                t: num(r),
                op: num(r),
                worker: num(r) as u32,
                f,
                result: OpResult {
                    accepted: opt_bool(r),
                    resolved: opt_bool(r),
                    event_count: r.random::<bool>().then(|| num(r) as i64),
                    status: random_text(r),
                    effect_step: r.random::<bool>().then(|| num(r) as u32),
                    error: random_text(r),
                    aborted: None,
                    crashed_after: random_text(r),
                    sent: r.random::<bool>().then(|| [num(r) as i64, num(r) as i64]),
                    ambiguous: random_text(r),
                    hook_steps: Vec::new(),
                },
            };
            Entry::completion(CompletionType::ALL[r.random_range(0..3usize)], c)
        }
    }
}

#[test]
fn random_entries_round_trip_through_records_and_a_file() {
    let mut r = ChaCha8Rng::seed_from_u64(21);
    let entries: Vec<Entry> = (0..5000).map(|_| random_entry(&mut r)).collect();
    for e in &entries {
        let mut b = Batch::default();
        b.push(e);
        let mut rec = Vec::new();
        codec::encode(e, &mut rec);
        let (len, head) = codec::varint(&rec).unwrap();
        assert_eq!(head + len as usize, rec.len());
        assert_eq!(&codec::decode(&rec[head..]).unwrap(), e);
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("h.bin");
    write_bin(&p, &entries);
    let back: Vec<Entry> = read(&p).unwrap().map(Result::unwrap).collect();
    assert_eq!(back, entries);
}

#[test]
fn a_file_cut_anywhere_reads_every_whole_chunk_before_the_cut() {
    // Three chunks of a few entries each, as a writer flushes them.
    let entries = every_entry();
    let groups = [&entries[..3], &entries[3..10], &entries[10..]];
    let mut h = HistoryFile::new(Vec::new()).unwrap();
    let mut ends = Vec::new();
    let mut counts = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        for e in *g {
            h.push(e).unwrap();
        }
        h.flush().unwrap();
        counts.push(groups[..=i].iter().map(|g| g.len()).sum::<usize>());
    }
    // What a killed writer leaves: no end of stream.
    let whole = h.get_ref().clone();
    let mut at = file::MAGIC.len();
    while at < whole.len() {
        let (n, head) = codec::varint(&whole[at..]).unwrap();
        at += head + n as usize;
        ends.push(at);
    }
    assert_eq!(ends.len(), 3);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("h.bin");
    for cut in file::MAGIC.len()..=whole.len() {
        std::fs::write(&p, &whole[..cut]).unwrap();
        let kept = ends.iter().rposition(|&e| e <= cut);
        let whole_end = kept.map_or(file::MAGIC.len(), |k| ends[k]);
        let expect = if whole_end == cut {
            None
        } else {
            Some(whole_end as u64)
        };
        assert_eq!(cut_tail(&p).unwrap(), expect, "cut at {cut}");
        let n = kept.map_or(0, |k| counts[k]);
        let read_whole: Vec<Entry> = read_prefix(&p, whole_end as u64)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(read_whole, entries[..n], "cut at {cut}");
        // Read to the end, a cut chunk is an error after the whole ones.
        let all: Vec<_> = read(&p).unwrap().collect();
        assert_eq!(all.len(), n + usize::from(expect.is_some()), "cut at {cut}");
        if expect.is_some() {
            assert!(all[n].is_err());
        }
        let mut out = Vec::new();
        let printed = print(&p, &mut out).unwrap();
        assert_eq!(printed.entries as usize, n);
        assert_eq!(printed.cut_bytes, (cut - whole_end) as u64);
    }
}

/// What [`codec::peek`] reads of a record is what decoding gives, and it
/// refuses a record exactly where decoding does (cut anywhere, or with a
/// text that is not UTF-8).
#[test]
fn a_peek_agrees_with_decoding_on_every_record_and_every_cut() {
    use codec::Peek;
    let mut r = ChaCha8Rng::seed_from_u64(7);
    let entries: Vec<Entry> = (0..3000).map(|_| random_entry(&mut r)).collect();
    let mut peeked = 0;
    for e in &entries {
        let mut rec = Vec::new();
        codec::encode_payload(e, &mut rec);
        match (codec::peek(&rec).unwrap(), e) {
            (Peek::Json, _) => {}
            (
                Peek::Invoke {
                    op,
                    t,
                    project,
                    fingerprint,
                    event_id,
                },
                Entry::Invoke(i),
            ) => {
                assert_eq!((op, t), (i.op, i.t.max(i.intended.unwrap_or(0))));
                assert_eq!((project, fingerprint), (&*i.project, &*i.fingerprint));
                assert_eq!(event_id, i.event_id.as_deref());
                peeked += 1;
            }
            (Peek::Op { op, t }, Entry::Step(s)) => {
                assert_eq!((op, t), (s.op, s.end.unwrap_or(s.start).max(s.start)));
                peeked += 1;
            }
            (Peek::Op { op, t }, Entry::Ok(c) | Entry::Fail(c) | Entry::Info(c)) => {
                assert_eq!((op, t), (c.op, c.t));
                peeked += 1;
            }
            (p, e) => panic!("{p:?} of {e:?}"),
        }
        for cut in 0..rec.len() {
            let part = &rec[..cut];
            if codec::peek(part).is_ok_and(|p| p == Peek::Json) {
                continue;
            }
            assert_eq!(
                codec::peek(part).is_ok(),
                codec::decode(part).is_ok(),
                "{e:?} cut at {cut}"
            );
        }
        for at in 1..rec.len() {
            let mut bad = rec.clone();
            bad[at] = 0xff;
            if codec::peek(&bad).is_ok_and(|p| p == Peek::Json) {
                continue;
            }
            assert_eq!(
                codec::peek(&bad).is_ok(),
                codec::decode(&bad).is_ok(),
                "{e:?} 0xff at {at}"
            );
        }
    }
    assert!(peeked > 1000, "{peeked} op records");
}

/// A step's returned values are refused by [`codec::step_view`] exactly
/// where decoding (into `Value`s) refuses them.
#[test]
fn a_step_view_checks_what_a_step_returned_as_decoding_does() {
    let returned = [
        r#"[]"#,
        r#"[null, 1, -1, 1.5, "text", "\u00e9\n"]"#,
        r#"[18446744073709551615, 9223372036854775808, -9223372036854775808]"#,
        r#"[1e3, -0, 0.0, 1e308]"#,
        r#"[1e400]"#,
        r#"[true]"#,
        r#"[false, 1]"#,
        r#"[[1]]"#,
        r#"[{"a": 1}]"#,
        r#"{}"#,
        r#"null"#,
        r#"1"#,
        r#"[1,]"#,
        r#"[1] x"#,
        r#"["unterminated]"#,
        r#"["\ud800"]"#,
        r#"["resolved",37237]"#,
        r#"[1,null,"",-0,0]"#,
        r#"[01]"#,
        r#"[-]"#,
        r#"[123456789012345678,-123456789012345678]"#,
        r#"[1234567890123456789012]"#,
        r#"["a\"b"]"#,
        r#"["a",]"#,
        r#"[nul]"#,
        r#"[nulls]"#,
        r#"[1.5]"#,
    ];
    // Texts of the bytes the hand reading reads, and others, at random.
    let mut r = ChaCha8Rng::seed_from_u64(17);
    let alphabet = b"[]\",-019nul.e \\\tx";
    let random: Vec<String> = (0..20000)
        .map(|_| {
            let len = r.random_range(0..12);
            let mut t: Vec<u8> = (0..len)
                .map(|_| alphabet[r.random_range(0..alphabet.len())])
                .collect();
            if r.random::<bool>() {
                t.insert(0, b'[');
                t.push(b']');
            }
            String::from_utf8(t).unwrap()
        })
        .collect();
    for text in returned
        .iter()
        .copied()
        .chain(random.iter().map(String::as_str))
    {
        // A step record (tag 2) with an end and this JSON text as what
        // it returned, as the writer lays it out.
        let mut rec = Vec::new();
        rec.push(2u8);
        codec::put(&mut rec, 3);
        codec::put(&mut rec, 1);
        codec::put(&mut rec, "resolve.s1".len() as u64);
        rec.extend_from_slice(b"resolve.s1");
        codec::put(&mut rec, 5);
        codec::put(&mut rec, 1 | 1 << 5);
        codec::put(&mut rec, 6);
        codec::put(&mut rec, 1);
        codec::put(&mut rec, 1);
        codec::put(&mut rec, text.len() as u64);
        rec.extend_from_slice(text.as_bytes());
        assert_eq!(
            codec::step_view(&rec).is_ok(),
            codec::decode(&rec).is_ok(),
            "{text}"
        );
        assert!(codec::step_view_peeked(&rec).unwrap().is_some());
    }
}

/// [`codec::invoke_raw`] and [`codec::step_raw`] read the texts decoding
/// gives, as bytes; with those texts checked as UTF-8 they refuse a
/// record exactly where decoding does (cut anywhere, or a byte changed).
#[test]
fn raw_invokes_and_steps_with_their_texts_checked_refuse_what_decoding_refuses() {
    let utf8 = |b: &[u8]| std::str::from_utf8(b).is_ok();
    // Some(read with every text UTF-8) for an invoke or a step record;
    // None for a record of another kind.
    let raw = |rec: &[u8]| -> Option<bool> {
        match (codec::invoke_raw(rec), codec::step_raw(rec)) {
            (Ok(Some(i)), _) => Some(
                i.event_id.is_none_or(utf8)
                    && utf8(i.project)
                    && utf8(i.fingerprint)
                    && utf8(i.group_id),
            ),
            (_, Ok(Some(s))) => Some(utf8(s.step) && s.error.is_none_or(utf8)),
            (Ok(None), Ok(None)) => None,
            _ => Some(false),
        }
    };
    let mut r = ChaCha8Rng::seed_from_u64(11);
    let entries: Vec<Entry> = (0..3000).map(|_| random_entry(&mut r)).collect();
    let mut read = 0;
    // Each triple's span, and the texts of each span: one for the other.
    let mut spans = std::collections::HashMap::new();
    let mut texts = std::collections::HashMap::new();
    for e in &entries {
        let mut rec = Vec::new();
        codec::encode_payload(e, &mut rec);
        match e {
            Entry::Invoke(i) if rec[0] != 0 => {
                let v = codec::invoke_raw(&rec).unwrap().unwrap();
                assert_eq!(v.event_id, i.event_id.as_deref().map(str::as_bytes));
                assert_eq!(
                    (v.project, v.fingerprint, v.group_id),
                    (
                        i.project.as_bytes(),
                        i.fingerprint.as_bytes(),
                        i.group_id.as_bytes()
                    )
                );
                assert_eq!((v.t, v.op, v.f, v.intended), (i.t, i.op, i.f, i.intended));
                let triple = (i.project.clone(), i.fingerprint.clone(), i.group_id.clone());
                let span = (v.triple.0, v.triple.1.to_vec());
                assert_eq!(spans.entry(triple.clone()).or_insert(span.clone()), &span);
                assert_eq!(texts.entry(span).or_insert(triple.clone()), &triple);
                read += 1;
            }
            Entry::Step(s) if rec[0] != 0 => {
                let v = codec::step_raw(&rec).unwrap().unwrap();
                assert_eq!(v.step, s.step.as_bytes());
                assert_eq!(v.error, s.error.as_deref().map(str::as_bytes));
                assert_eq!((v.op, v.idx, v.start, v.end), (s.op, s.idx, s.start, s.end));
                read += 1;
            }
            _ => {}
        }
        let cuts = (0..rec.len()).map(|cut| rec[..cut].to_vec());
        let bad = (1..rec.len()).map(|at| {
            let mut b = rec.clone();
            b[at] = 0xff;
            b
        });
        for part in cuts.chain(bad) {
            if let Some(ok) = raw(&part) {
                assert_eq!(ok, codec::decode(&part).is_ok(), "{e:?} as {part:?}");
            }
        }
    }
    assert!(read > 500, "{read} raw records");
    assert!(spans.len() > 20, "{} triples", spans.len());
}

/// [`codec::completion_view`] reads the fields decoding gives, and it
/// refuses a record exactly where decoding does (cut anywhere, or a byte
/// changed).
#[test]
fn a_completion_view_reads_what_decoding_gives_and_refuses_what_it_refuses() {
    let mut r = ChaCha8Rng::seed_from_u64(13);
    let entries: Vec<Entry> = (0..3000).map(|_| random_entry(&mut r)).collect();
    let mut read = 0;
    for e in &entries {
        let mut rec = Vec::new();
        codec::encode_payload(e, &mut rec);
        match e {
            Entry::Ok(c) | Entry::Fail(c) | Entry::Info(c) if rec[0] != 0 => {
                let (kind, v) = codec::completion_view(&rec).unwrap().unwrap();
                assert_eq!(Entry::completion(kind, c.clone()), *e);
                assert_eq!(v, codec::CompletionView::of(c));
                read += 1;
            }
            _ => assert_eq!(codec::completion_view(&rec).unwrap(), None, "{e:?}"),
        }
        let cuts = (0..rec.len()).map(|cut| rec[..cut].to_vec());
        let bad = (1..rec.len()).map(|at| {
            let mut b = rec.clone();
            b[at] = 0xff;
            b
        });
        for part in cuts.chain(bad) {
            match codec::completion_view(&part) {
                Ok(None) => assert!(
                    !matches!(
                        codec::decode(&part),
                        Ok(Entry::Ok(_) | Entry::Fail(_) | Entry::Info(_))
                    ) || part[0] == 0,
                    "{e:?} as {part:?}"
                ),
                v => assert_eq!(v.is_ok(), codec::decode(&part).is_ok(), "{e:?} as {part:?}"),
            }
        }
    }
    assert!(read > 500, "{read} completion records");
}

/// [`codec::varint`] reads what a plain byte-by-byte reading reads, at
/// every length, cut anywhere, with any bytes after it.
#[test]
fn a_varint_reads_as_the_plain_reading_does() {
    fn plain(bytes: &[u8]) -> Option<(u64, usize)> {
        let mut n = 0u64;
        for (i, &b) in bytes.iter().enumerate().take(10) {
            n |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some((n, i + 1));
            }
        }
        None
    }
    let mut r = ChaCha8Rng::seed_from_u64(5);
    let mut numbers: Vec<u64> = (0..64).flat_map(|s| [1u64 << s, (1u64 << s) - 1]).collect();
    numbers.extend([u64::MAX, 0]);
    numbers.extend((0..2000).map(|_| r.random::<u64>() >> r.random_range(0..64)));
    for n in numbers {
        let mut rec = Vec::new();
        codec::put(&mut rec, n);
        let len = rec.len();
        rec.extend((0..r.random_range(0..12)).map(|_| r.random::<u8>()));
        assert_eq!(codec::varint(&rec), Some((n, len)), "{n}");
        for cut in 0..rec.len() {
            assert_eq!(
                codec::varint(&rec[..cut]),
                plain(&rec[..cut]),
                "{rec:?} cut at {cut}"
            );
        }
    }
    // Any bytes at all, runs of continuation bytes among them.
    for _ in 0..20000 {
        let b: Vec<u8> = (0..r.random_range(0..14))
            .map(|_| r.random::<u8>() | if r.random::<bool>() { 0x80 } else { 0 })
            .collect();
        assert_eq!(codec::varint(&b), plain(&b), "{b:?}");
    }
}
