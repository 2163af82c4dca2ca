//! [`EventMap`]: the facts of every event id of a history (the checkers'
//! `EventFacts`), held densely.
//!
//! The audit holds one entry per event of the run, so its layout is most
//! of the audit's memory. A map from id to facts keeps, per event, a slot
//! of the whole facts (a hash table is up to half empty, and twice as
//! large while it grows) and a heap allocation for the id's text. Here the
//! facts sit in one vector, each once, in the order their ids were first
//! seen, and the hash table holds only each event's index (4 bytes a slot).
//!
//! The ids sit in one vector beside the facts. The ids the bench makes are
//! 128 bits written as 32 lowercase hex digits, with or without a UUID's
//! dashes ([`crate::workload::groups::id_bits`]): while every id of the
//! map has one of those two shapes (the same one), each is held as its 16
//! bytes, not as its 32 or 36 bytes of text and the 8 of its end, and it
//! is hashed and compared as one number. The first id of another shape
//! turns the whole map to text, once (the ids are printed back, the index
//! hashed again). Bits are taken only from text that prints back to the
//! same bytes, so an id is found exactly when the same text was added, and
//! ids of one shape order as their numbers exactly as their texts do.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use crate::workload::groups::id_bits;
use foldhash::fast::RandomState;
use hashbrown::HashTable;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::BuildHasher;

/// An event id of an [`EventMap`], as the map holds it: its text, or the
/// 128 bits of a bench-made id (true: with a UUID's dashes). Shown,
/// compared and ordered as its text.
#[derive(Debug, Clone, Copy)]
pub enum Id<'a> {
    /// An id held as text.
    Text(&'a str),
    /// An id held as its bits, and whether its text has a UUID's dashes.
    Bits(u128, bool),
}

impl<'a> Id<'a> {
    /// The id's text.
    pub fn text(self) -> Cow<'a, str> {
        match self {
            Id::Text(s) => Cow::Borrowed(s),
            Id::Bits(v, dashed) => Cow::Owned(id_bits::text(v, dashed)),
        }
    }
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Text(s) => f.write_str(s),
            Id::Bits(..) => f.write_str(&self.text()),
        }
    }
}

impl PartialEq for Id<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}

impl Eq for Id<'_> {}

impl PartialOrd for Id<'_> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Id<'_> {
    fn cmp(&self, o: &Self) -> Ordering {
        match (self, o) {
            // Same shape, fixed width, lowercase hex: the numbers order as
            // the texts do.
            (Id::Bits(a, da), Id::Bits(b, db)) if da == db => a.cmp(b),
            (Id::Text(a), Id::Text(b)) => a.cmp(b),
            _ => self.text().cmp(&o.text()),
        }
    }
}

impl PartialEq<&str> for Id<'_> {
    fn eq(&self, o: &&str) -> bool {
        match self {
            Id::Text(s) => s == o,
            Id::Bits(v, dashed) => id_bits::bits(o) == Some((*dashed, *v)),
        }
    }
}

/// How the map holds its ids (see the module's doc).
#[derive(Debug, Clone)]
enum Ids {
    /// No id yet.
    Empty,
    /// Every id as its bits; true: each with a UUID's dashes.
    Bits(Vec<u128>, bool),
    /// Every id's text, one after another, and where each ends (id i
    /// starts where i - 1 ends).
    Text(String, Vec<usize>),
}

/// The text of id `i`.
fn id_at<'a>(text: &'a str, ends: &[usize], i: usize) -> &'a str {
    let start = if i == 0 { 0 } else { ends[i - 1] };
    &text[start..ends[i]]
}

impl Ids {
    fn at(&self, i: usize) -> Id<'_> {
        match self {
            Ids::Bits(v, dashed) => Id::Bits(v[i], *dashed),
            Ids::Text(text, ends) => Id::Text(id_at(text, ends, i)),
            Ids::Empty => unreachable!("an index of an empty map"),
        }
    }

    /// The hash of id `i`.
    fn hash_at(&self, h: &RandomState, i: usize) -> u64 {
        match self {
            Ids::Bits(v, _) => h.hash_one(v[i]),
            Ids::Text(text, ends) => h.hash_one(id_at(text, ends, i)),
            Ids::Empty => unreachable!("an index of an empty map"),
        }
    }
}

/// An id looked up, in the map's own terms: None where no id of the map
/// can equal it.
#[derive(Clone, Copy)]
enum Key<'a> {
    Bits(u128),
    Text(&'a str),
}

/// Event id to its facts `T`. Iteration is in the order the ids were first
/// added; the checkers sort what they report all the same.
#[derive(Debug, Clone)]
pub struct EventMap<T> {
    ids: Ids,
    /// Room asked for before the first id said how ids are held: (ids,
    /// bytes of text).
    reserved: (usize, usize),
    /// Indexes into `facts`, by the hash of their id.
    index: HashTable<u32>,
    hasher: RandomState,
    facts: Vec<T>,
    /// Room for ids as bits left by [`EventMap::clear`], taken by the
    /// first id of bits.
    spare: Vec<u128>,
}

impl<T> Default for EventMap<T> {
    fn default() -> Self {
        EventMap {
            ids: Ids::Empty,
            reserved: (0, 0),
            index: HashTable::new(),
            hasher: RandomState::default(),
            facts: Vec::new(),
            spare: Vec::new(),
        }
    }
}

impl<T> EventMap<T> {
    /// Empties the map, keeping its room: a judge of a history in parts
    /// fills one map per part, and a map of the largest part's size,
    /// kept, costs no fresh pages per part (the kernel zeroes each) and
    /// leaves no freed table behind for the next part's to sit beside.
    pub fn clear(&mut self) {
        self.facts.clear();
        self.index.clear();
        if let Ids::Bits(v, _) = std::mem::replace(&mut self.ids, Ids::Empty) {
            self.spare = v;
            self.spare.clear();
        }
        self.reserved = (0, 0);
    }

    /// The room kept for `n` ids as bits.
    fn bits_room(&mut self, n: usize) -> Vec<u128> {
        let mut v = std::mem::take(&mut self.spare);
        v.reserve(n);
        v
    }
}

impl<T: Default> EventMap<T> {
    /// Room for `ids` more ids of `text` bytes in all, taken at once: an
    /// audit that knows its count beforehand then never copies a table
    /// while it grows (a copy holds both, and leaves a hole behind).
    pub fn reserve(&mut self, ids: usize, text: usize) {
        self.facts.reserve(ids);
        match &mut self.ids {
            Ids::Empty => self.reserved = (ids, text),
            Ids::Bits(v, _) => v.reserve(ids),
            Ids::Text(t, ends) => {
                t.reserve(text);
                ends.reserve(ids);
            }
        }
        let EventMap {
            ids: held,
            index,
            hasher,
            ..
        } = self;
        index.reserve(ids, |&j| held.hash_at(hasher, j as usize));
    }

    /// Event ids held.
    pub fn len(&self) -> usize {
        self.facts.len()
    }

    /// No event held.
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }

    /// `id` in the map's terms, None where no id held can equal it.
    fn key<'a>(&self, id: &'a str) -> Option<Key<'a>> {
        match &self.ids {
            Ids::Empty => None,
            Ids::Bits(_, dashed) => match id_bits::bits(id) {
                Some((d, v)) if d == *dashed => Some(Key::Bits(v)),
                _ => None,
            },
            Ids::Text(..) => Some(Key::Text(id)),
        }
    }

    fn hash_key(&self, k: Key<'_>) -> u64 {
        match k {
            Key::Bits(v) => self.hasher.hash_one(v),
            Key::Text(s) => self.hasher.hash_one(s),
        }
    }

    /// The index of the id `k` whose hash is `hash`, if held.
    fn locate(&self, k: Key<'_>, hash: u64) -> Option<usize> {
        let found = match (k, &self.ids) {
            (Key::Bits(b), Ids::Bits(v, _)) => self.index.find(hash, |&i| v[i as usize] == b),
            (Key::Text(s), Ids::Text(text, ends)) => self
                .index
                .find(hash, |&i| id_at(text, ends, i as usize) == s),
            _ => None,
        };
        found.map(|&i| i as usize)
    }

    fn find(&self, id: &str) -> Option<usize> {
        let k = self.key(id)?;
        self.locate(k, self.hash_key(k))
    }

    /// The facts of event `id`, if the history had it.
    pub fn get(&self, id: &str) -> Option<&T> {
        self.find(id).map(|i| &self.facts[i])
    }

    pub(super) fn get_mut(&mut self, id: &str) -> Option<&mut T> {
        self.find(id).map(|i| &mut self.facts[i])
    }

    /// [`EventMap::get_mut`] of the id of these bits (true: with a UUID's
    /// dashes): no text read or printed while the map holds its ids as
    /// bits of the same shape.
    pub(super) fn get_mut_bits(&mut self, v: u128, dashed: bool) -> Option<&mut T> {
        match &self.ids {
            Ids::Bits(held, d) if *d == dashed => {
                let hash = self.hasher.hash_one(v);
                let i = *self.index.find(hash, |&i| held[i as usize] == v)?;
                Some(&mut self.facts[i as usize])
            }
            Ids::Empty => None,
            _ => self.get_mut(&id_bits::text(v, dashed)),
        }
    }

    /// [`EventMap::get_mut_bits`], looking first at the few ids just
    /// after `*near` (and leaving it past the id found): ids looked up in
    /// about the order they were added, one key bucket of a part after
    /// another, are then found with no hash and no random read. Only a
    /// few are read there: a part of many buckets interleaves their ids,
    /// and a hash lookup costs less than a long walk. The ids held are
    /// distinct, so where it finds one it is the one.
    pub(super) fn get_mut_bits_near(
        &mut self,
        v: u128,
        dashed: bool,
        near: &mut usize,
    ) -> Option<&mut T> {
        /// How many ids from `near` on it reads before it hashes.
        const AHEAD: usize = 4;
        let i = match &self.ids {
            Ids::Bits(held, d) if *d == dashed => {
                let ahead = held.get(*near..).unwrap_or(&[]);
                match ahead.iter().take(AHEAD).position(|&x| x == v) {
                    Some(k) => *near + k,
                    None => {
                        let hash = self.hasher.hash_one(v);
                        *self.index.find(hash, |&i| held[i as usize] == v)? as usize
                    }
                }
            }
            _ => return self.get_mut_bits(v, dashed),
        };
        *near = i + 1;
        Some(&mut self.facts[i])
    }

    /// Turns every id held to text and hashes the index again: an id of
    /// another shape arrived.
    fn switch_to_text(&mut self) {
        let (text, ends) = match &self.ids {
            Ids::Text(..) => return,
            Ids::Empty => {
                let (n, bytes) = std::mem::take(&mut self.reserved);
                (String::with_capacity(bytes), Vec::with_capacity(n))
            }
            Ids::Bits(v, dashed) => {
                let mut text = String::new();
                let mut ends = Vec::with_capacity(v.capacity());
                for &b in v {
                    text.push_str(&id_bits::text(b, *dashed));
                    ends.push(text.len());
                }
                (text, ends)
            }
        };
        self.ids = Ids::Text(text, ends);
        let EventMap {
            ids, index, hasher, ..
        } = self;
        let slots: Vec<u32> = index.drain().collect();
        for j in slots {
            let h = ids.hash_at(hasher, j as usize);
            index.insert_unique(h, j, |&k| ids.hash_at(hasher, k as usize));
        }
    }

    /// Appends `id` to the ids held; returns its hash.
    fn push_id(&mut self, id: &str) -> u64 {
        if let Ids::Empty = self.ids {
            if let Some((dashed, _)) = id_bits::bits(id) {
                let (n, _) = std::mem::take(&mut self.reserved);
                self.ids = Ids::Bits(self.bits_room(n), dashed);
            }
        }
        if let Ids::Bits(_, dashed) = self.ids {
            if id_bits::bits(id).is_none_or(|(d, _)| d != dashed) {
                self.switch_to_text();
            }
        }
        if let Ids::Empty = self.ids {
            self.switch_to_text();
        }
        match &mut self.ids {
            Ids::Bits(v, _) => {
                let b = id_bits::bits(id).expect("checked above").1;
                v.push(b);
                self.hasher.hash_one(b)
            }
            Ids::Text(text, ends) => {
                text.push_str(id);
                ends.push(text.len());
                self.hasher.hash_one(id)
            }
            Ids::Empty => unreachable!("set above"),
        }
    }

    /// The facts of event `id`, empty ones added if it had none.
    pub(super) fn or_default(&mut self, id: &str) -> &mut T {
        // The id is read as bits and hashed once, found or added.
        let key = self.key(id);
        let hash = key.map(|k| self.hash_key(k));
        let found = key.zip(hash).and_then(|(k, h)| self.locate(k, h));
        let i = match found {
            Some(i) => i,
            None => {
                let i = self.facts.len();
                let slot = u32::try_from(i).expect("fewer than 2^32 event ids");
                let hash = match (key, hash, &mut self.ids) {
                    (Some(Key::Bits(b)), Some(h), Ids::Bits(v, _)) => {
                        v.push(b);
                        h
                    }
                    _ => self.push_id(id),
                };
                self.facts.push(T::default());
                let EventMap {
                    ids, index, hasher, ..
                } = self;
                index.insert_unique(hash, slot, |&j| ids.hash_at(hasher, j as usize));
                i
            }
        };
        &mut self.facts[i]
    }

    /// [`EventMap::or_default`] of the id of these bits (true: with a
    /// UUID's dashes), as [`id_bits::bits`] reads them from its text: no
    /// text read or printed while the map holds its ids as bits of the
    /// same shape.
    pub(super) fn or_default_bits(&mut self, v: u128, dashed: bool) -> &mut T {
        let i = match &mut self.ids {
            Ids::Bits(held, d) if *d == dashed => {
                let hash = self.hasher.hash_one(v);
                match self.index.find(hash, |&i| held[i as usize] == v) {
                    Some(&i) => i as usize,
                    None => {
                        let i = self.facts.len();
                        let slot = u32::try_from(i).expect("fewer than 2^32 event ids");
                        held.push(v);
                        self.facts.push(T::default());
                        let EventMap {
                            ids, index, hasher, ..
                        } = self;
                        index.insert_unique(hash, slot, |&j| ids.hash_at(hasher, j as usize));
                        i
                    }
                }
            }
            _ => return self.or_default(&id_bits::text(v, dashed)),
        };
        &mut self.facts[i]
    }

    /// The id and facts of the `i`th id first added (the `i`th of
    /// [`EventMap::iter`]): a list of events held as indexes (4 bytes).
    pub fn at(&self, i: usize) -> (Id<'_>, &T) {
        (self.ids.at(i), &self.facts[i])
    }

    /// Every (id, facts).
    pub fn iter(&self) -> impl Iterator<Item = (Id<'_>, &T)> {
        self.facts
            .iter()
            .enumerate()
            .map(|(i, f)| (self.ids.at(i), f))
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
    type Item = (Id<'a>, &'a T);
    type IntoIter = Box<dyn Iterator<Item = (Id<'a>, &'a T)> + 'a>;

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
        let mut seen: Vec<(String, u32)> = m.iter().map(|(id, n)| (id.to_string(), *n)).collect();
        seen.sort();
        assert_eq!(seen, [("e1".into(), 2), ("e2".into(), 5)]);
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
        let order: Vec<String> = m.iter().map(|(id, _)| id.to_string()).collect();
        assert_eq!(order, ids);
        assert_eq!(m.len(), ids.len());
    }

    #[test]
    fn an_id_looked_up_near_where_it_lies_or_far_from_it_is_found_alike() {
        let mut m = EventMap::<u32>::default();
        let ids: Vec<u128> = (0..200u128).map(|i| i * 7919 + 1).collect();
        for (n, &v) in ids.iter().enumerate() {
            *m.or_default_bits(v, false) = n as u32;
        }
        // In order, out of order, far behind, and an id never added.
        let mut near = 0;
        for &i in &[0usize, 1, 3, 2, 150, 10, 199] {
            assert_eq!(
                m.get_mut_bits_near(ids[i], false, &mut near).copied(),
                Some(i as u32)
            );
            assert_eq!(near, i + 1);
        }
        assert!(m.get_mut_bits_near(5, false, &mut near).is_none());
        assert!(m.get_mut_bits_near(ids[4], true, &mut near).is_none());
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
        assert_eq!(m.at(0), (Id::Text("before"), &7));
        for i in 0..1000u64 {
            assert_eq!(m.at(i as usize + 1), (Id::Text(&format!("id-{i}")), &i));
            assert_eq!(m.get(&format!("id-{i}")), Some(&i));
        }
    }

    /// Bench-made ids: held as bits while every id has one shape, found,
    /// printed and ordered as their text; an id of another shape turns the
    /// map to text, and every id is still found, in first-seen order.
    #[test]
    fn bench_ids_are_held_as_bits_until_another_shape_arrives() {
        for dashed in [true, false] {
            let mut m = EventMap::<u64>::default();
            m.reserve(100, 3600);
            let ids: Vec<String> = (0..100u128)
                .map(|i| {
                    id_bits::text(
                        i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835),
                        dashed,
                    )
                })
                .collect();
            for (n, id) in ids.iter().enumerate() {
                *m.or_default(id) = n as u64;
            }
            assert!(matches!(m.ids, Ids::Bits(_, d) if d == dashed));
            for (n, id) in ids.iter().enumerate() {
                assert_eq!(m.get(id), Some(&(n as u64)));
                assert_eq!(m.at(n).0.to_string(), *id);
                assert!(m.at(n).0 == id.as_str());
                // The same bits in the other shape, or in capitals, are
                // other ids.
                let upper = id.to_uppercase();
                assert!(upper == *id || m.get(&upper).is_none());
                let other = id_bits::text(id_bits::bits(id).unwrap().1, !dashed);
                assert!(m.get(&other).is_none());
            }
            // Ordered as their texts are.
            let mut by_id: Vec<Id<'_>> = m.iter().map(|(id, _)| id).collect();
            by_id.sort();
            let mut by_text = ids.clone();
            by_text.sort();
            assert_eq!(
                by_id.iter().map(|i| i.to_string()).collect::<Vec<_>>(),
                by_text
            );
            // Another shape: everything turns to text, nothing is lost.
            *m.or_default("e-other") = 1000;
            assert!(matches!(m.ids, Ids::Text(..)));
            for (n, id) in ids.iter().enumerate() {
                assert_eq!(m.get(id), Some(&(n as u64)));
                assert_eq!(m.at(n).0, Id::Text(id));
            }
            assert_eq!(m.get("e-other"), Some(&1000));
            assert_eq!(m.len(), 101);
        }
    }

    #[test]
    fn a_text_id_first_keeps_the_map_in_text() {
        let mut m = EventMap::<u64>::default();
        *m.or_default("e1") = 1;
        let id = "0123abcd-4567-89ef-0123-456789abcdef";
        *m.or_default(id) = 2;
        assert!(matches!(m.ids, Ids::Text(..)));
        assert_eq!((m.get("e1"), m.get(id)), (Some(&1), Some(&2)));
    }

    /// A map emptied keeps no id and no facts, and takes ids of either
    /// shape again, each found where it was put.
    #[test]
    fn a_cleared_map_holds_nothing_and_fills_again() {
        let mut m = EventMap::<u64>::default();
        m.reserve(100, 3600);
        let bits = |i: u128| id_bits::text(i.wrapping_mul(0x9e37_79b9_7f4a_7c15), true);
        for i in 0..100u128 {
            *m.or_default(&bits(i)) = i as u64;
        }
        m.clear();
        assert!(m.is_empty());
        assert!(m.get(&bits(3)).is_none());
        for i in 50..80u128 {
            *m.or_default(&bits(i)) = i as u64 + 1;
        }
        assert!(matches!(m.ids, Ids::Bits(..)));
        assert_eq!(m.len(), 30);
        assert!(m.get(&bits(3)).is_none());
        assert_eq!(m.get(&bits(60)), Some(&61));
        assert_eq!(m.at(0).0.to_string(), bits(50));
        m.clear();
        *m.or_default("e1") = 9;
        assert!(m.get(&bits(60)).is_none());
        assert_eq!((m.len(), m.get("e1")), (1, Some(&9)));
    }
}
