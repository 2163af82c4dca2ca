//! Sharded runs and their merge, for either workload: `specstorm merge`
//! of shard folders, and a run folder's latency totals (what the merged
//! log must add up to).

use super::bench::specstorm;
use specstorm::history::{CompletionType, OpKind};
use specstorm::report::hlog;
use std::path::Path;
use std::process::Output;

/// `specstorm merge DIRS... --out OUT`, run to its end.
pub fn merge(dirs: &[&Path], out: &Path) -> Output {
    let mut args = vec!["merge".to_string()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.push("--out".into());
    args.push(out.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    specstorm(&args)
}

/// The op counts of `run`'s `latency.hlog`, per kind of `kinds` and per
/// completion type (ok, fail, info), in that order.
pub fn hlog_totals(run: &Path, kinds: &[OpKind]) -> Vec<u64> {
    let log = hlog::read(&run.join(hlog::FILE)).unwrap();
    let mut v = Vec::new();
    for &k in kinds {
        for c in CompletionType::ALL {
            v.push(log.total(k, c).len());
        }
    }
    v
}
