//! [`EventMap`]: the facts of every event id of a history, held densely.
//!
//! The audit holds one entry per event of the run, so its layout is most
//! of the audit's memory: a map from id to the facts themselves keeps a
//! slot of the whole facts per bucket (and a hash table is up to half
//! empty, and twice as large while it grows). Here the map holds only the
//! id and an index, and the facts sit in one vector, each once, in the
//! order their ids were first seen.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::facts::EventFacts;
use std::collections::HashMap;

/// Event id to [`EventFacts`]. Iteration order is unspecified (as a
/// hash map's): the checkers sort what they report.
#[derive(Debug, Clone, Default)]
pub struct EventMap {
    index: HashMap<Box<str>, u32>,
    facts: Vec<EventFacts>,
}

impl EventMap {
    /// Event ids held.
    pub fn len(&self) -> usize {
        self.facts.len()
    }

    /// No event held.
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }

    /// The facts of event `id`, if the history had it.
    pub fn get(&self, id: &str) -> Option<&EventFacts> {
        self.index.get(id).map(|&i| &self.facts[i as usize])
    }

    pub(super) fn get_mut(&mut self, id: &str) -> Option<&mut EventFacts> {
        self.index.get(id).map(|&i| &mut self.facts[i as usize])
    }

    /// The facts of event `id`, empty ones added if it had none.
    pub(super) fn or_default(&mut self, id: &str) -> &mut EventFacts {
        let i = match self.index.get(id) {
            Some(&i) => i,
            None => {
                let i = u32::try_from(self.facts.len()).expect("fewer than 2^32 event ids");
                self.index.insert(id.into(), i);
                self.facts.push(EventFacts::default());
                i
            }
        };
        &mut self.facts[i as usize]
    }

    /// Every (id, facts).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &EventFacts)> {
        self.index
            .iter()
            .map(|(id, &i)| (&**id, &self.facts[i as usize]))
    }

    /// Every event's facts.
    pub fn values(&self) -> impl Iterator<Item = &EventFacts> {
        self.facts.iter()
    }
}

impl std::ops::Index<&str> for EventMap {
    type Output = EventFacts;

    fn index(&self, id: &str) -> &EventFacts {
        self.get(id).expect("an event id of the history")
    }
}

impl<'a> IntoIterator for &'a EventMap {
    type Item = (&'a str, &'a EventFacts);
    type IntoIter = Box<dyn Iterator<Item = (&'a str, &'a EventFacts)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_id_has_one_entry_and_iteration_pairs_ids_with_their_facts() {
        let mut m = EventMap::default();
        m.or_default("e1").attempts += 1;
        m.or_default("e2").attempts += 5;
        m.or_default("e1").attempts += 1;
        assert_eq!(m.len(), 2);
        assert_eq!(m["e1"].attempts, 2);
        assert_eq!(m.get("e2").map(|e| e.attempts), Some(5));
        assert!(m.get("e3").is_none());
        let mut seen: Vec<(&str, u32)> = m.iter().map(|(id, e)| (id, e.attempts)).collect();
        seen.sort();
        assert_eq!(seen, [("e1", 2), ("e2", 5)]);
        assert_eq!(m.values().map(|e| e.attempts).sum::<u32>(), 7);
    }
}
