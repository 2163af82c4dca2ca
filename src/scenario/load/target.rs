//! `[target]`: the keys of one target kind are refused on the other, an
//! HTTP target names exactly one service (a URL, or the spawned reference
//! server), a given path is not empty, and the transaction blocks'
//! backoff cap is not below its first wait. (`command` and `workdir` are
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
            for (key, set) in [("url", t.url.is_some()), ("spawn", t.spawn)] {
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
        TargetKind::Http => {
            match (&t.url, t.spawn) {
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
                (Some(url), false) if !url.starts_with("http://") => {
                    return Err(ctx.error(
                        &["target", "url"],
                        format!(
                    "`target.url` must start with http:// (https is not supported), found {url:?}"
                ),
                    ))
                }
                (Some(_), false) if ctx.is_given(&["target", "path"]) => return Err(ctx.error(
                    &["target", "path"],
                    "`target.path` does not apply to an external service (its database is its own)",
                )),
                _ => {}
            }
        }
    }
    Ok(())
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
