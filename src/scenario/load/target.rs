//! `[target]`: the keys of one target kind are refused on the other, an
//! HTTP target names exactly one service (a URL, or the spawned reference
//! server), its TLS keys agree, a given path is not empty, and the
//! transaction blocks' backoff cap is not below its first wait. (`command` and `workdir` are
//! checked with `[api]`, in `api_keys`; `busy_timeout`'s bound in
//! `limits`.)
//!
//! May import: its sibling files and `scenario`'s types.

use super::context::Context;
use super::error::ScenarioError;
use crate::scenario::{Target, TargetKind};

/// The keys of one target kind must not be set on the other, and an HTTP
/// target needs exactly one of `url` and `spawn = true`.
pub(super) fn check_target(ctx: &Context, t: &Target) -> Result<(), ScenarioError> {
    if t.txn_backoff_max < t.txn_backoff {
        let key = if ctx.is_given(&["target", "txn_backoff_max"]) {
            "txn_backoff_max"
        } else {
            "txn_backoff"
        };
        return Err(ctx.error(
            &["target", key],
            format!(
                "`target.txn_backoff_max` ({}) must be at least `target.txn_backoff` ({}): \
                 it caps the doubling wait between a block's rollback and its next BEGIN",
                humantime::format_duration(t.txn_backoff_max),
                humantime::format_duration(t.txn_backoff)
            ),
        ));
    }
    match t.kind {
        TargetKind::Sqlite => {
            for (key, set) in [
                ("url", t.url.is_some()),
                ("spawn", t.spawn),
                ("ca_file", t.ca_file.is_some()),
                ("insecure_skip_verify", t.insecure_skip_verify),
            ] {
                if set {
                    return Err(ctx.error(
                        &["target", key],
                        format!("`target.{key}` only applies to kind = \"http\""),
                    ));
                }
            }
        }
        TargetKind::Http if t.request_timeout.is_zero() || t.connect_timeout.is_zero() => {
            let key = if t.request_timeout.is_zero() {
                "request_timeout"
            } else {
                "connect_timeout"
            };
            return Err(ctx.error(
                &["target", key],
                format!("`target.{key}` must be more than 0s"),
            ));
        }
        TargetKind::Http => match (&t.url, t.spawn) {
            (Some(_), true) => {
                return Err(ctx.error(
                    &["target", "url"],
                    "give either `target.url` (an external service) or `spawn = true` \
                     (the reference server), not both",
                ))
            }
            (None, false) => {
                return Err(ctx.error(
                    &["target", "kind"],
                    "kind = \"http\" needs `target.url` (e.g. \"http://127.0.0.1:8080\") \
                     or `spawn = true`",
                ))
            }
            (Some(url), false) if !url.starts_with("http://") && !url.starts_with("https://") => {
                return Err(ctx.error(
                    &["target", "url"],
                    format!("`target.url` must start with http:// or https://, found {url:?}"),
                ))
            }
            (Some(_), false) if ctx.is_given(&["target", "path"]) => {
                return Err(ctx.error(
                    &["target", "path"],
                    "`target.path` does not apply to an external service (its database is its own)",
                ))
            }
            _ => {}
        },
    }
    check_tls(ctx, t)
}

/// `target.ca_file` names a file, and is not given with
/// `insecure_skip_verify` (which trusts every certificate: a bundle would
/// say nothing).
fn check_tls(ctx: &Context, t: &Target) -> Result<(), ScenarioError> {
    let given = [
        ("ca_file", t.ca_file.is_some()),
        ("insecure_skip_verify", t.insecure_skip_verify),
    ];
    if let (true, Some((key, _))) = (t.spawn, given.iter().find(|(_, set)| *set)) {
        return Err(ctx.error(
            &["target", key],
            format!(
                "`target.{key}` applies to an https:// `target.url`; the spawned reference \
                 server speaks plain http://"
            ),
        ));
    }
    match &t.ca_file {
        Some(f) if f.as_os_str().is_empty() => Err(ctx.error(
            &["target", "ca_file"],
            "`target.ca_file` must not be empty (a PEM file of CA certificates)",
        )),
        Some(_) if t.insecure_skip_verify => Err(ctx.error(
            &["target", "insecure_skip_verify"],
            "give either `target.ca_file` (trust its CAs) or `insecure_skip_verify = true` \
             (trust any certificate), not both",
        )),
        _ => Ok(()),
    }
}

/// `target.path`, when given, names a file.
pub(super) fn check_path(ctx: &Context, sqlite: &Target) -> Result<(), ScenarioError> {
    if sqlite
        .path
        .as_ref()
        .is_some_and(|p| p.as_os_str().is_empty())
    {
        return Err(ctx.error(
            &["target", "path"],
            "`target.path` must not be empty (leave it out to use target.db in the run folder)",
        ));
    }
    Ok(())
}
