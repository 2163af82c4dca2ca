//! [`EventMap`]: the facts of every event id of a history (the checkers'
//! `EventFacts`), held densely.
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

use std::collections::HashMap;

/// Event id to its facts `T`. Iteration order is unspecified (as a
/// hash map's): the checkers sort what they report.
#[derive(Debug, Clone)]
pub struct EventMap<T> {
    index: HashMap<Box<str>, u32>,
    facts: Vec<T>,
}

impl<T> Default for EventMap<T> {
    fn default() -> Self {
        EventMap {
            index: HashMap::new(),
            facts: Vec::new(),
        }
    }
}

impl<T: Default> EventMap<T> {
    /// Event ids held.
    pub fn len(&self) -> usize {
        self.facts.len()
    }

    /// No event held.
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }

    /// The facts of event `id`, if the history had it.
    pub fn get(&self, id: &str) -> Option<&T> {
        self.index.get(id).map(|&i| &self.facts[i as usize])
    }

    pub(super) fn get_mut(&mut self, id: &str) -> Option<&mut T> {
        self.index.get(id).map(|&i| &mut self.facts[i as usize])
    }

    /// The facts of event `id`, empty ones added if it had none.
    pub(super) fn or_default(&mut self, id: &str) -> &mut T {
        let i = match self.index.get(id) {
            Some(&i) => i,
            None => {
                let i = u32::try_from(self.facts.len()).expect("fewer than 2^32 event ids");
                self.index.insert(id.into(), i);
                self.facts.push(T::default());
                i
            }
        };
        &mut self.facts[i as usize]
    }

    /// Every (id, facts).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &T)> {
        self.index
            .iter()
            .map(|(id, &i)| (&**id, &self.facts[i as usize]))
    }

    /// Every event's facts.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.facts.iter()
    }
}

impl<T: Default> std::ops::Index<&str> for EventMap<T> {
    type Output = T;

    fn index(&self, id: &str) -> &T {
        self.get(id).expect("an event id of the history")
    }
}

impl<'a, T: Default> IntoIterator for &'a EventMap<T> {
    type Item = (&'a str, &'a T);
    type IntoIter = Box<dyn Iterator<Item = (&'a str, &'a T)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_id_has_one_entry_and_iteration_pairs_ids_with_their_facts() {
        let mut m = EventMap::<u32>::default();
        *m.or_default("e1") += 1;
        *m.or_default("e2") += 5;
        *m.or_default("e1") += 1;
        assert_eq!(m.len(), 2);
        assert_eq!(m["e1"], 2);
        assert_eq!(m.get("e2"), Some(&5));
        assert!(m.get("e3").is_none());
        let mut seen: Vec<(&str, u32)> = m.iter().map(|(id, n)| (id, *n)).collect();
        seen.sort();
        assert_eq!(seen, [("e1", 2), ("e2", 5)]);
        assert_eq!(m.values().sum::<u32>(), 7);
    }
}
