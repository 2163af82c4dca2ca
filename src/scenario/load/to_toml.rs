//! The resolved scenario as TOML, as a run folder saves it
//! (`scenario.toml`): every key present, unset ones as comments saying
//! what they mean, and nothing the scenario's workload would refuse.
//!
//! May import: its sibling files and `scenario`'s types.

use super::faults::unset_fault_keys;
use super::workload::NOT_REGISTERED;
use crate::scenario::Scenario;
use toml_edit::{DocumentMut, Item};

impl Scenario {
    /// The resolved configuration as TOML, every key present (a key whose
    /// value is "not set" appears as a comment), but none the scenario's
    /// workload refuses when given (another workload's tables it is filled
    /// with, `stop.events` where it does not apply, `[api]` and `[audit]`
    /// keys of another workload; one of a workload registered at run time
    /// also the tables it does not take).
    /// Loading this text gives the same scenario back.
    pub fn to_toml(&self) -> String {
        let mut text = toml::to_string(self).expect("a Scenario always serializes to TOML");
        let own = crate::scenario::section::of(self.workload.name());
        if own.is_none_or(|own| !own.stop_events || self.parts.tables().any(|t| !own_table(own, t)))
            || self.api.is_some()
            || self.audit.is_some()
        {
            // What the workload refuses when given (another workload's
            // tables, `stop.events`, `[api]` and `[audit]` keys it does not
            // take) is left out, so that the saved scenario loads again.
            let mut doc: DocumentMut = text.parse().expect("toml output parses");
            let rules = super::schema::rules_of(self.workload.name());
            for table in self.parts.tables() {
                if crate::scenario::section::owner_of(table)
                    .is_some_and(|(owner, _)| owner != self.workload.name())
                {
                    doc.remove(table);
                }
            }
            if !own.is_some_and(|own| own.stop_events) {
                if let Some(stop) = doc.get_mut("stop").and_then(Item::as_table_like_mut) {
                    stop.remove("events");
                }
            }
            for (table, shape) in [("api", rules.api), ("audit", rules.audit)] {
                if let Some(t) = doc.get_mut(table).and_then(Item::as_table_like_mut) {
                    let foreign: Vec<String> = t
                        .iter()
                        .map(|(k, _)| k.to_owned())
                        .filter(|k| !shape.iter().any(|(s, _)| s == k))
                        .collect();
                    for key in foreign {
                        t.remove(&key);
                    }
                }
            }
            if own.is_none() {
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

/// Whether `table` is one of `own`'s sections.
fn own_table(own: &crate::scenario::section::WorkloadSections, table: &str) -> bool {
    own.sections.iter().any(|s| s.table == table)
}
