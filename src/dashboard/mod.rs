//! The live terminal dashboard (ratatui + crossterm): it only reads
//! [`crate::live::Snapshot`]s, a few times a second, on its own thread, so
//! rendering never slows the load.

pub mod view;
