//! Several load generators against one HTTP target: `specstorm run
//! --shard i/n --run-id ID` (what a shard runs: each workload's own
//! shard) and `specstorm merge RUN_DIR... --out DIR` ([`merge`]), which
//! turns the shards' run folders into one run folder that `audit` and the
//! summary readers take as any other: one history, one latency log, one
//! audit of the shared target's final tables, one summary. What every
//! workload's merge shares is here (the shards read and checked to be one
//! run of one workload, the time base, the history, the latency log, the
//! final tables; the parts of the summary in
//! [`crate::merge_parts::Merged`]); the rest is the workload's
//! ([`crate::merge_parts::ShardMerge`], which the registry's workload
//! named in the shards' headers hands out: how a shard's scenario is read,
//! the keys shards split, the export of the final tables, the judgement of
//! the merged run), and each argues its own soundness.
//!
//! What every workload's judgement may rely on:
//! - Each shard's times are put on one time base through the UTC of its
//!   clock's origin, which is only known up to the disagreement of the
//!   runners' clocks: `--clock-skew D` bounds it. Every op's window is
//!   widened by D/2 on each side (starts earlier, ends later), so "A ended
//!   before B began" holds in the merged history only if A.end + D/2 <
//!   B.start - D/2, and then it held in reality whatever the two clocks'
//!   error within D. Widening can only add candidates and overlaps, which
//!   turn violations into unknowns or holds, never the reverse; within one
//!   shard it only loses precision.
//! - The final tables are read after every shard's load ended (re-read
//!   from the target, or a shard's export that began after every other
//!   shard's export, each of which began after its own load drained), and
//!   their read instant is after every entry of the merged history.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::audit_history::{entry_time, read_header};
use crate::fault_kind::FaultKind;
use crate::history::writer::HistoryFile;
use crate::history::{reader, Entry, FaultAction, Footer, Header, MergeOffset, MergedHeader};
use crate::history::{CompletionType, OpKind};
use crate::report::hlog::{self, Interval, Log, INTERVAL_NS};
use crate::scenario::{Scenario, TargetKind};
use crate::summary::Summary;
use crate::target::http::client::HttpClient;
use crate::whole::{write_whole, WholeFile, WriteError};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Default `--clock-skew`: runners on one machine read one system clock;
/// what separates their time bases is the few µs between reading the
/// monotonic clock and the UTC clock, so 2 ms is ample. Across machines,
/// pass the clock synchronisation's worst-case error, doubled (e.g. from
/// `chronyc tracking`: |System time| + root dispersion on each machine);
/// 50ms for NTP on a LAN is a reasonable bound, more over the internet.
pub const DEFAULT_CLOCK_SKEW: Duration = Duration::from_millis(2);

pub use crate::merge_parts::{MergeError, MergeOptions};
use crate::merge_parts::{Merged, Part, ShardMerge};

/// Merges the shards of one run into one run folder (history, latency
/// log, final tables, checks, summary); prints the summary; returns it
/// (its `exit.code` is the process's). Errors: see [`MergeError`].
pub fn merge(opts: &MergeOptions) -> Result<Summary, MergeError> {
    let mut parts = opts
        .runs
        .iter()
        .map(|d| read_part(d))
        .collect::<Result<Vec<_>, _>>()?;
    check_one_run(&mut parts)?;
    let sm = shard_merge(&parts[0].dir, &parts[0].header.workload)?;
    sm.check_parts(&parts)?;
    let out = &opts.out;
    // One merge per folder (see `run_dir`).
    crate::run_dir::claim(out).map_err(|e| MergeError::Input(e.to_string()))?;

    // The time base: the earliest shard's clock origin, moved back by half
    // the skew so that widened starts stay >= 0.
    let half = (opts.clock_skew.as_nanos() as u64).div_ceil(2);
    let t0 = parts
        .iter()
        .map(|p| p.shard.clock_utc_ns)
        .min()
        .unwrap_or(0);
    let origin = t0 - half.min(t0);
    let mut offsets = Vec::new();
    let (mut op_base, mut worker_base) = (0u64, 0u32);
    for p in &parts {
        offsets.push(MergeOffset {
            shard: p.shard.index,
            t_ns: p.shard.clock_utc_ns - origin,
            op: op_base,
            worker: worker_base,
        });
        op_base += p.max_op + 1;
        worker_base += p.max_worker + 1;
    }
    let merged_header = MergedHeader {
        from: parts.iter().map(|p| p.dir.display().to_string()).collect(),
        run_id: parts[0].shard.run_id.clone(),
        shards: parts.len() as u32,
        clock_skew_ns: opts.clock_skew.as_nanos() as u64,
        clock_utc_ns: origin,
        offsets: offsets.clone(),
    };

    // The final tables first: their read instant goes into the footer.
    let (tables_source, read) = final_tables(&parts, &offsets, half, origin, out, sm)?;
    let history = out.join(crate::history::file::FILE);
    let bytes = write_history(&parts, &offsets, half, &merged_header, read, &history)?;
    let merged_log = merge_hlogs(&parts, &offsets, origin)?;
    hlog::write(&out.join(hlog::FILE), &merged_log)?;
    let mut scenario = sm.whole(&parts);
    scenario.variant = "variant.sql".into();
    write_whole(&out.join("scenario.toml"), scenario.to_toml())?;
    let variant = parts[0].dir.join("variant.sql");
    let variant = std::fs::read(&variant)
        .map_err(|e| MergeError::Target(format!("cannot read {}: {e}", variant.display())))?;
    write_whole(&out.join("variant.sql"), variant)?;
    let merged = Merged {
        parts: &parts,
        scenario: &scenario,
        opts,
        header: &merged_header,
        tables_source,
        log: &merged_log,
        history: &history,
        history_bytes: bytes,
        t0,
    };
    sm.judge(&merged)
}

fn read_part(dir: &Path) -> Result<Part, MergeError> {
    let need = |name: &str| {
        crate::run_dir::folder_file(dir, name).map_err(|is| {
            MergeError::Input(format!(
                "{} is not a shard's run folder: {name} {is}",
                dir.display()
            ))
        })
    };
    let history = crate::history::file::in_folder(dir);
    let history = need(&history.file_name().unwrap_or_default().to_string_lossy())?;
    let summary_path = need("summary.json")?;
    need(hlog::FILE)?;
    need("variant.sql")?;
    let scenario_path = need("scenario.toml")?;
    let header = read_header(&history)
        .map_err(|e| MergeError::Input(format!("{e:#}")))?
        .ok_or_else(|| MergeError::Input(format!("{}: no history header", history.display())))?;
    let Some(shard) = header.shard.clone() else {
        return Err(MergeError::Input(format!(
            "{} is not a shard: its history header has no shard (run with --shard i/n --run-id ID)",
            dir.display()
        )));
    };
    let summary: Summary = crate::input::read_to_string(&summary_path, crate::input::RUN_JSON)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        .map_err(|e| {
            MergeError::Input(format!(
                "{}: not the summary of a finished run ({e})",
                summary_path.display()
            ))
        })?;
    let scenario = shard_merge(dir, &header.workload)?
        .read_scenario(&scenario_path)
        .map_err(|e| MergeError::Input(format!("{}: {e}", scenario_path.display())))?;
    let (mut max_op, mut max_worker, mut footer) = (0u64, 0u32, None);
    for e in reader::read(&history)? {
        match e? {
            Entry::Invoke(i) => {
                max_op = max_op.max(i.op);
                max_worker = max_worker.max(i.worker);
            }
            Entry::Footer(f) => footer = Some(f),
            _ => {}
        }
    }
    Ok(Part {
        dir: dir.to_path_buf(),
        header,
        shard,
        summary,
        scenario,
        max_op,
        max_worker,
        footer,
    })
}

/// The merge of workload `workload`, which the shard folder `dir` names.
/// Errors: the workload is not this build's, or has no merge (exit 2).
fn shard_merge(dir: &Path, workload: &str) -> Result<&'static dyn ShardMerge, MergeError> {
    crate::workload::registry::get(workload)
        .and_then(|w| w.merge())
        .ok_or_else(|| {
            MergeError::Input(format!(
                "{} is a run of workload {workload:?}, which `specstorm merge` cannot merge",
                dir.display()
            ))
        })
}

/// Refuses parts that are not the n shards of one run; sorts them by index.
fn check_one_run(parts: &mut [Part]) -> Result<(), MergeError> {
    let Some(first) = parts.first() else {
        return Err(MergeError::Input(
            "nothing to merge: give the shards' run folders".into(),
        ));
    };
    let refuse = |what: &str, a: &Part, b: &Part, x: String, y: String| {
        MergeError::Input(format!(
            "not shards of one run: {what} differs ({} has {x}, {} has {y})",
            a.dir.display(),
            b.dir.display()
        ))
    };
    for p in parts.iter().skip(1) {
        let checks: [(&str, String, String); 8] = [
            (
                "the workload",
                first.header.workload.clone(),
                p.header.workload.clone(),
            ),
            (
                "the run id",
                first.shard.run_id.clone(),
                p.shard.run_id.clone(),
            ),
            (
                "the shard count",
                first.shard.count.to_string(),
                p.shard.count.to_string(),
            ),
            (
                "the scenario",
                first.summary.scenario.clone(),
                p.summary.scenario.clone(),
            ),
            (
                "the seed",
                first.summary.seed.to_string(),
                p.summary.seed.to_string(),
            ),
            (
                "the statement file (sha256)",
                first.summary.provenance.variant_sha256.clone(),
                p.summary.provenance.variant_sha256.clone(),
            ),
            (
                "the target",
                first.summary.target.clone(),
                p.summary.target.clone(),
            ),
            (
                "the namespace",
                first.header.namespace.clone(),
                p.header.namespace.clone(),
            ),
        ];
        for (what, x, y) in checks {
            if x != y {
                return Err(refuse(what, first, p, x, y));
            }
        }
        // The rest of the resolved scenario must be the same too: only the
        // shares (`stop.events`, `load.rate`) differ between shards.
        let sm = shard_merge(&first.dir, &first.header.workload)?;
        if let Some((key, x, y)) = scenario_difference(sm, &first.scenario, &p.scenario) {
            return Err(refuse(&format!("the scenario's `{key}`"), first, p, x, y));
        }
    }
    parts.sort_by_key(|p| p.shard.index);
    let n = parts[0].shard.count;
    for w in parts.windows(2) {
        if w[0].shard.index == w[1].shard.index {
            return Err(MergeError::Input(format!(
                "shard {} given twice ({} and {})",
                w[0].shard.index,
                w[0].dir.display(),
                w[1].dir.display()
            )));
        }
    }
    let missing: Vec<String> = (0..n)
        .filter(|i| !parts.iter().any(|p| p.shard.index == *i))
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Input(format!(
            "shard(s) {} of run {} missing: a merge needs all {n}",
            missing.join(", "),
            parts[0].shard.run_id
        )));
    }
    if parts[0].scenario.target.kind != TargetKind::Http {
        return Err(MergeError::Input("only HTTP runs are sharded".into()));
    }
    Ok(())
}

/// The first key (dotted path) whose value differs between two shards'
/// resolved scenarios, apart from the keys shards split
/// ([`ShardMerge::unshare`]); with both values as JSON text.
fn scenario_difference(
    sm: &dyn ShardMerge,
    a: &Scenario,
    b: &Scenario,
) -> Option<(String, String, String)> {
    let norm = |s: &Scenario| {
        let mut s = s.clone();
        sm.unshare(&mut s);
        serde_json::to_value(s).unwrap_or_default()
    };
    fn first_diff(
        a: &serde_json::Value,
        b: &serde_json::Value,
        path: String,
    ) -> Option<(String, String, String)> {
        match (a, b) {
            (serde_json::Value::Object(x), serde_json::Value::Object(y)) => {
                let keys: std::collections::BTreeSet<_> = x.keys().chain(y.keys()).collect();
                keys.into_iter().find_map(|k| {
                    let null = serde_json::Value::Null;
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    first_diff(x.get(k).unwrap_or(&null), y.get(k).unwrap_or(&null), p)
                })
            }
            _ if a != b => Some((path, a.to_string(), b.to_string())),
            _ => None,
        }
    }
    first_diff(&norm(a), &norm(b), String::new())
}

/// Moves one entry onto the merged history: its op ids and worker numbers
/// renumbered; its times shifted by `off.t_ns`, then widened by `half`:
/// instants that open a window (an op's invoke, a step's start, a kill's
/// restart) move earlier, instants that close one (a completion, a step's
/// end, a kill, a proxy's record after the server answered) move later.
/// Each checker reads an instant of the first kind only as "nothing of it
/// happened before" and of the second only as "all of it happened by", so
/// both moves only weaken what the history claims (see the module's doc).
/// Instants no checker reads (`intended`, other fault records) are only
/// shifted.
fn move_entry(e: Entry, off: &MergeOffset, half: u64) -> Entry {
    let early = |t: u64| t + off.t_ns - half;
    let late = |t: u64| t + off.t_ns + half;
    match e {
        Entry::Invoke(mut i) => {
            i.t = early(i.t);
            i.intended = i.intended.map(|t| t + off.t_ns);
            i.op += off.op;
            i.worker += off.worker;
            Entry::Invoke(i)
        }
        Entry::Step(mut s) => {
            s.start = early(s.start);
            s.end = s.end.map(late);
            s.op += off.op;
            Entry::Step(s)
        }
        Entry::Ok(c) => Entry::Ok(move_completion(c, off, late)),
        Entry::Fail(c) => Entry::Fail(move_completion(c, off, late)),
        Entry::Info(c) => Entry::Info(move_completion(c, off, late)),
        Entry::Fault(mut f) => {
            f.t = match (f.kind, f.action) {
                (FaultKind::Kill, FaultAction::Start) => late(f.t),
                (FaultKind::Kill, FaultAction::Stop) => early(f.t),
                (FaultKind::Proxy, FaultAction::Inject) => late(f.t),
                _ => f.t + off.t_ns,
            };
            f.op = f.op.map(|o| o + off.op);
            Entry::Fault(f)
        }
        Entry::Bench(mut b) => {
            b.t = early(b.t);
            b.end = late(b.end);
            b.op = b.op.map(|o| o + off.op);
            Entry::Bench(b)
        }
        other => other,
    }
}

fn move_completion(
    mut c: crate::history::Completion,
    off: &MergeOffset,
    late: impl Fn(u64) -> u64,
) -> crate::history::Completion {
    c.t = late(c.t);
    c.op += off.op;
    c.worker += off.worker;
    c
}

/// Writes the merged history: the merged header, every shard's entries
/// interleaved by their time on the merged base (each shard's own order
/// kept, which is all the checkers need: an op's invoke comes before its
/// steps and completion), and one footer. Returns its size in bytes.
fn write_history(
    parts: &[Part],
    offsets: &[MergeOffset],
    half: u64,
    merged: &MergedHeader,
    read: [u64; 2],
    path: &Path,
) -> Result<u64, MergeError> {
    // Whole or absent: a full disk leaves no cut-off history behind.
    let mut out = WholeFile::create(path)?;
    let mut history = HistoryFile::new(&mut out).map_err(|e| WriteError::new(path, e))?;
    let mut line = |e: &Entry| -> Result<(), MergeError> {
        history.push(e).map_err(|e| WriteError::new(path, e))?;
        Ok(())
    };
    let h0 = &parts[0].header;
    line(&Entry::Header(Header {
        started_utc: humantime::format_rfc3339_nanos(
            SystemTime::UNIX_EPOCH + Duration::from_nanos(merged.clock_utc_ns),
        )
        .to_string(),
        shard: None,
        merged: Some(merged.clone()),
        ..h0.clone()
    }))?;
    let mut streams = parts
        .iter()
        .map(|p| reader::read(&crate::history::file::in_folder(&p.dir)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut heads: Vec<Option<Entry>> = Vec::new();
    let next =
        |s: &mut dyn Iterator<Item = anyhow::Result<Entry>>| -> Result<Option<Entry>, MergeError> {
            for e in &mut *s {
                match e? {
                    Entry::Header(_) | Entry::Footer(_) => continue,
                    e => return Ok(Some(e)),
                }
            }
            Ok(None)
        };
    for s in streams.iter_mut() {
        heads.push(next(s)?);
    }
    loop {
        let pick = heads
            .iter()
            .enumerate()
            .filter_map(|(k, h)| h.as_ref().map(|e| (order_time(e) + offsets[k].t_ns, k)))
            .min();
        let Some((_, k)) = pick else { break };
        let e = heads[k].take().expect("picked");
        line(&move_entry(e, &offsets[k], half))?;
        heads[k] = next(&mut streams[k])?;
    }
    let end = parts
        .iter()
        .zip(offsets)
        .filter_map(|(p, o)| p.footer.as_ref().map(|f| f.t + o.t_ns + half))
        .max()
        .unwrap_or(0)
        .max(read[1]);
    line(&Entry::Footer(Footer {
        t: end,
        partial: parts
            .iter()
            .any(|p| p.footer.as_ref().is_none_or(|f| f.partial)),
        ops: parts
            .iter()
            .map(|p| p.footer.as_ref().map_or(0, |f| f.ops))
            .sum(),
        tables_read: Some(read),
    }))?;
    let (_, bytes) = history.finish().map_err(|e| WriteError::new(path, e))?;
    out.commit()?;
    Ok(bytes)
}

/// The instant an entry is ordered by (its own time, unwidened).
fn order_time(e: &Entry) -> u64 {
    match e {
        Entry::Invoke(i) => i.t,
        Entry::Step(s) => s.start,
        other => entry_time(other),
    }
}

/// Gets the final tables into `out/export.json` so that they were read
/// after every shard's load ended; returns where they came from and the
/// read's interval on the merged time base (after every merged entry).
/// `sm`: the workload's export of them.
fn final_tables(
    parts: &[Part],
    offsets: &[MergeOffset],
    half: u64,
    origin: u64,
    out: &Path,
    sm: &dyn ShardMerge,
) -> Result<(String, [u64; 2]), MergeError> {
    // The latest instant of the merged history: the read must follow it.
    let last = parts
        .iter()
        .zip(offsets)
        .filter_map(|(p, o)| p.footer.as_ref().map(|f| f.t + o.t_ns + half))
        .max()
        .unwrap_or(0);
    let now = || {
        (SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64)
            .saturating_sub(origin)
    };
    let export = out.join("export.json");
    let url = parts[0].scenario.target.url.clone().unwrap_or_default();
    // Every shard folder is complete, so every shard's load ended before
    // this read began: it may be taken as after them all.
    let reread = (|| -> Result<(), String> {
        let t = &parts[0].scenario.target;
        // The shard's saved scenario holds an absolute `ca_file`.
        let tls = crate::target::http::tls::Tls::of_target(t, std::path::Path::new("/"));
        let client = HttpClient::with_tls(&url, t.connect_timeout, t.request_timeout, &tls)
            .map_err(|e| e.to_string())?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        sm.export(&client, &rt, &export)
    })();
    let endpoint = sm.export_endpoint();
    let why = match reread {
        Ok(()) => {
            let t = now().max(last + 1);
            return Ok((format!("GET {url}{endpoint} at merge time"), [t, t]));
        }
        Err(e) => {
            let _ = std::fs::remove_file(&export);
            e
        }
    };
    // Else the shard whose export began last, if it began after every
    // other shard's export began (each began after its own load drained),
    // by more than the skew between their clocks.
    let reads: Vec<Option<(u64, u64)>> = parts
        .iter()
        .zip(offsets)
        .map(|(p, o)| {
            p.footer
                .as_ref()
                .and_then(|f| f.tables_read)
                .filter(|_| p.dir.join("export.json").is_file())
                .map(|[s, e]| (s + o.t_ns, e + o.t_ns))
        })
        .collect();
    let best = reads
        .iter()
        .enumerate()
        .filter_map(|(k, r)| r.map(|r| (r.0, k)))
        .max();
    if let Some((start, k)) = best {
        let after_all = parts.iter().zip(&reads).enumerate().all(|(j, (p, r))| {
            j == k
                || match (r, &p.footer) {
                    (Some((s, _)), _) => s + half < start - half.min(start),
                    _ => false,
                }
        });
        if after_all {
            let from = parts[k].dir.join("export.json");
            let bytes = std::fs::read(&from)
                .map_err(|e| MergeError::Target(format!("cannot read {}: {e}", from.display())))?;
            write_whole(&export, bytes)?;
            let end = reads[k].map_or(start, |r| r.1) + half;
            return Ok((
                format!(
                    "shard {}'s export.json (GET {url}{endpoint} failed: {why}), read after \
                     every other shard's load ended",
                    parts[k].shard.index
                ),
                [start - half.min(start), end.max(last + 1)],
            ));
        }
    }
    Err(MergeError::Target(format!(
        "cannot read the final tables after every shard finished: GET {url}{endpoint} \
         failed ({why}), and no shard's export.json began after every other shard's load \
         had ended (by more than the clock skew); start the target again and merge, or run \
         the shards one after the other"
    )))
}

/// Adds the shards' latency logs interval by interval on the merged time
/// base: each shard's interval moves by the shard's offset and goes, whole,
/// into the merged second its start falls in (a histogram cannot be split;
/// so an op's time in the merged log is exact to one interval). Adding
/// whole histograms keeps every count: the merged totals are exactly the
/// sums of the parts'.
fn merge_hlogs(parts: &[Part], offsets: &[MergeOffset], origin: u64) -> Result<Log, MergeError> {
    let mut cells: BTreeMap<(u64, OpKind, CompletionType), Interval> = BTreeMap::new();
    let mut end = 0u64;
    for (p, o) in parts.iter().zip(offsets) {
        let log = hlog::read(&p.dir.join(hlog::FILE))?;
        for i in log.intervals {
            let start = i.start_ns + o.t_ns;
            end = end.max(start + i.duration_ns);
            let b = start / INTERVAL_NS;
            let cell = cells
                .entry((b, i.kind, i.completion))
                .or_insert_with(|| Interval {
                    start_ns: b * INTERVAL_NS,
                    duration_ns: INTERVAL_NS,
                    kind: i.kind,
                    completion: i.completion,
                    hist: {
                        let mut h = hdrhistogram::Histogram::<u64>::new_from(&i.hist);
                        h.auto(true);
                        h
                    },
                });
            cell.hist
                .add(&i.hist)
                .map_err(|e| anyhow::anyhow!("cannot add histograms: {e:?}"))?;
        }
    }
    let intervals = cells
        .into_values()
        .map(|mut i| {
            i.duration_ns = INTERVAL_NS.min(end.saturating_sub(i.start_ns)).max(1);
            i
        })
        .collect();
    Ok(Log {
        started: SystemTime::UNIX_EPOCH + Duration::from_nanos(origin),
        intervals,
    })
}
