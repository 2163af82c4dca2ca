//! The resolved scenario as TOML, as a run folder saves it
//! (`scenario.toml`): every key present, unset ones as comments saying
//! what they mean, and nothing an outbox scenario would refuse.
//!
//! May import: its sibling files and `scenario`'s types.

use super::faults::unset_fault_keys;
use super::workload::NOT_REGISTERED;
use crate::scenario::Scenario;
use toml_edit::{DocumentMut, Item};

impl Scenario {
    /// The resolved configuration as TOML, every key present (a key whose
    /// value is "not set" appears as a comment; an outbox scenario leaves
    /// out groups' `[load]`, `[keys]`, `[retry]`, `[resolve]`,
    /// `stop.events`, `[api]`'s groups keys and `audit.events`; one of a
    /// workload registered at run time also the tables it does not take).
    /// Loading this text gives the same scenario back.
    pub fn to_toml(&self) -> String {
        let mut text = toml::to_string(self).expect("a Scenario always serializes to TOML");
        if self.workload != crate::scenario::Workload::Groups {
            // Groups' keys mean nothing to outbox and are refused when
            // given: the saved scenario leaves them out, so it loads again.
            let mut doc: DocumentMut = text.parse().expect("toml output parses");
            // Another workload's sections, filled as they always were, are
            // refused when given: the saved scenario leaves them out.
            for table in self.parts.tables() {
                if crate::scenario::section::owner_of(table)
                    .is_some_and(|(owner, _)| owner != self.workload.name())
                {
                    doc.remove(table);
                }
            }
            if let Some(stop) = doc.get_mut("stop").and_then(Item::as_table_like_mut) {
                stop.remove("events");
            }
            // Likewise groups' request kinds in `[api]`, and `audit.events`.
            if let Some(api) = doc.get_mut("api").and_then(Item::as_table_like_mut) {
                for key in ["group_ids", "release", "ingest", "resolve", "lookup"] {
                    api.remove(key);
                }
            }
            if let Some(audit) = doc.get_mut("audit").and_then(Item::as_table_like_mut) {
                audit.remove("events");
            }
            if let crate::scenario::Workload::Registered(_) = self.workload {
                // A registered workload takes none of the built-in ones'
                // tables (refused when given): left out too.
                for table in NOT_REGISTERED {
                    doc.remove(table);
                }
            }
            text = doc.to_string();
        }
        // Serde leaves out None values; say what they mean instead.
        let sqlite = &self.target;
        let own = crate::scenario::section::of(self.workload.name());
        let mut faults = self.faults.iter();
        let mut out = String::new();
        for line in text.lines() {
            out.push_str(line);
            out.push('\n');
            if line == "[[faults]]" {
                if let Some(fault) = faults.next() {
                    out.push_str(&unset_fault_keys(fault));
                }
            }
            if line == "[target]" && sqlite.path.is_none() {
                out.push_str("# path: not set (target.db inside the run folder)\n");
            }
            if let Some(note) = own.and_then(|own| (own.unset_note)(self, line)) {
                out.push_str(note);
            }
            if line == "[stop]" && self.stop.duration.is_none() {
                out.push_str("# duration: not set (no time limit)\n");
            }
        }
        out
    }
}
