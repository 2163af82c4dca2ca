//! What a workload plugs into the reference server: its [`ServerPart`]
//! (which statement files are its variants, how it loads one, its routes),
//! and the choice of the part that serves a statement file ([`load`]).
//!
//! Why a link-time list ([`linkme::distributed_slice`]), as
//! `crate::scenario::section`: each workload's routes live in its folder
//! (`src/workload/<name>/server.rs`, this layer), and a list here would
//! name every workload; `specstorm serve` would then change with each new
//! one. Every part's routes are mounted on every server, so that a
//! workload's endpoints on another workload's server answer the 404 that
//! says which one it runs, not axum's bare one.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::state::{AppState, Served, Variant};
use crate::statements::{FileError, StatementFile};
use crate::variant::locate;
use axum::Router;
use std::sync::Arc;

/// One workload's part of the reference server.
pub struct ServerPart {
    /// The workload's name (the 404 of its endpoints names it).
    pub workload: &'static str,
    /// Whether a statement file is this workload's variant. A file no part
    /// claims is checked as the default workload's
    /// (`crate::scenario::section::default_workload`), whose errors say
    /// what it lacks.
    pub claims: fn(&StatementFile) -> bool,
    /// Loads and checks `variant` (a built-in name or a file). Errors: the
    /// file's (exit 2).
    pub load: fn(&str) -> Result<Arc<dyn Variant>, FileError>,
    /// Its routes, served whatever the variant: each answers the 404 of
    /// [`super::state::wrong_workload`] on another workload's server.
    pub routes: fn() -> Router<Arc<AppState>>,
}

/// Every workload's part, gathered at link time.
#[linkme::distributed_slice]
pub static PARTS: [ServerPart];

/// The parts in a fixed order (by workload name): the link order of
/// [`PARTS`] is the linker's.
pub fn parts() -> Vec<&'static ServerPart> {
    let mut all: Vec<&ServerPart> = PARTS.iter().collect();
    all.sort_by_key(|p| p.workload);
    all
}

/// Loads `variant` (a built-in name or a file) as the workload that
/// claims it, else as the default workload's. Errors: the file's (exit 2).
pub fn load(variant: &str) -> Result<Served, FileError> {
    let (path, text) = locate(variant, None)?;
    let file = crate::statements::parse(&path, &text)?;
    let all = parts();
    let part = match all.iter().find(|p| (p.claims)(&file)) {
        Some(p) => p,
        None => {
            let default = crate::scenario::section::default_workload().workload;
            all.iter()
                .find(|p| p.workload == default)
                .expect("the default workload has a server part")
        }
    };
    Ok(Served::new(part.workload, (part.load)(variant)?))
}
