//! [`EventMap`]: the facts of every event id of a history (the checkers'
//! `EventFacts`), held densely.
//!
//! The audit holds one entry per event of the run, so its layout is most
//! of the audit's memory. A map from id to facts keeps, per event, a slot
//! of the whole facts (a hash table is up to half empty, and twice as
//! large while it grows) and a heap allocation for the id's text. Here the
//! facts sit in one vector, each once, in the order their ids were first
//! seen; the ids' texts sit one after another in one string, and the hash
//! table holds only each event's index (4 bytes a slot).
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use foldhash::fast::RandomState;
use hashbrown::HashTable;
use std::hash::BuildHasher;

/// Event id to its facts `T`. Iteration is in the order the ids were first
/// added; the checkers sort what they report all the same.
#[derive(Debug, Clone)]
pub struct EventMap<T> {
    /// Every id's text, one after another.
    text: String,
    /// Where each id's text ends in `text` (id i starts where i - 1 ends).
    ends: Vec<usize>,
    /// Indexes into `facts`, by the hash of their id.
    index: HashTable<u32>,
    hasher: RandomState,
    facts: Vec<T>,
}

impl<T> Default for EventMap<T> {
    fn default() -> Self {
        EventMap {
            text: String::new(),
            ends: Vec::new(),
            index: HashTable::new(),
            hasher: RandomState::default(),
            facts: Vec::new(),
        }
    }
}

/// The text of id `i`.
fn id_at<'a>(text: &'a str, ends: &[usize], i: usize) -> &'a str {
    let start = if i == 0 { 0 } else { ends[i - 1] };
    &text[start..ends[i]]
}

impl<T: Default> EventMap<T> {
    /// Room for `ids` more ids of `text` bytes in all, taken at once: an
    /// audit that knows its count beforehand then never copies a table
    /// while it grows (a copy holds both, and leaves a hole behind).
    pub fn reserve(&mut self, ids: usize, text: usize) {
        self.text.reserve(text);
        self.ends.reserve(ids);
        self.facts.reserve(ids);
        let EventMap {
            text,
            ends,
            index,
            hasher,
            ..
        } = self;
        index.reserve(ids, |&j| hasher.hash_one(id_at(text, ends, j as usize)));
    }

    /// Event ids held.
    pub fn len(&self) -> usize {
        self.facts.len()
    }

    /// No event held.
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }

    fn find(&self, id: &str) -> Option<usize> {
        let hash = self.hasher.hash_one(id);
        self.index
            .find(hash, |&i| id_at(&self.text, &self.ends, i as usize) == id)
            .map(|&i| i as usize)
    }

    /// The facts of event `id`, if the history had it.
    pub fn get(&self, id: &str) -> Option<&T> {
        self.find(id).map(|i| &self.facts[i])
    }

    pub(super) fn get_mut(&mut self, id: &str) -> Option<&mut T> {
        self.find(id).map(|i| &mut self.facts[i])
    }

    /// The facts of event `id`, empty ones added if it had none.
    pub(super) fn or_default(&mut self, id: &str) -> &mut T {
        let i = match self.find(id) {
            Some(i) => i,
            None => {
                let i = self.facts.len();
                let slot = u32::try_from(i).expect("fewer than 2^32 event ids");
                self.text.push_str(id);
                self.ends.push(self.text.len());
                self.facts.push(T::default());
                let EventMap {
                    text,
                    ends,
                    index,
                    hasher,
                    ..
                } = self;
                let hash = hasher.hash_one(id);
                index.insert_unique(hash, slot, |&j| {
                    hasher.hash_one(id_at(text, ends, j as usize))
                });
                i
            }
        };
        &mut self.facts[i]
    }

    /// The id and facts of the `i`th id first added (the `i`th of
    /// [`EventMap::iter`]): a list of events held as indexes (4 bytes).
    pub fn at(&self, i: usize) -> (&str, &T) {
        (id_at(&self.text, &self.ends, i), &self.facts[i])
    }

    /// Every (id, facts).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &T)> {
        self.facts
            .iter()
            .enumerate()
            .map(|(i, f)| (id_at(&self.text, &self.ends, i), f))
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

    #[test]
    fn every_id_is_found_after_the_table_grew_and_iteration_keeps_first_seen_order() {
        let mut m = EventMap::<u64>::default();
        let ids: Vec<String> = (0..10_000u64)
            .map(|i| format!("id-{}", i * 7919 % 10_007))
            .collect();
        for (n, id) in ids.iter().enumerate() {
            *m.or_default(id) = n as u64;
        }
        for (n, id) in ids.iter().enumerate() {
            assert_eq!(m.get(id), Some(&(n as u64)), "{id}");
            // A prefix or an extension of a held id is another id.
            assert!(m.get(&format!("{id}x")).is_none());
            assert!(m.get(&id[..id.len() - 1]).is_none_or(|&v| v != n as u64));
        }
        let order: Vec<&str> = m.iter().map(|(id, _)| id).collect();
        assert_eq!(order, ids.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(m.len(), ids.len());
    }

    #[test]
    fn a_reserved_map_finds_every_id_and_at_gives_the_nth_first_seen() {
        let mut m = EventMap::<u64>::default();
        *m.or_default("before") = 7;
        m.reserve(1000, 1000 * 8);
        for i in 0..1000u64 {
            *m.or_default(&format!("id-{i}")) = i;
        }
        assert_eq!(m.len(), 1001);
        assert_eq!(m.at(0), ("before", &7));
        for i in 0..1000u64 {
            assert_eq!(m.at(i as usize + 1), (format!("id-{i}").as_str(), &i));
            assert_eq!(m.get(&format!("id-{i}")), Some(&i));
        }
    }
}
