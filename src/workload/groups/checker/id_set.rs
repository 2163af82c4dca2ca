//! [`IdSet`]: the ids of the final `error_events` rows, held compactly.
//!
//! The audit of a long run holds one id per event row, so its layout is a
//! large part of the audit's memory. The ids the bench makes (and most
//! services keep) are 128 bits written as 32 lowercase hex digits, with or
//! without the four dashes of a UUID: those are held as their bits, 16
//! bytes each, beside no text at all. Any other id is held as its text. A
//! bit pattern is taken only from text that prints back to the very same
//! bytes (lowercase hex, dashes exactly where a UUID has them), so an id
//! is in the set exactly when the same text was inserted.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use crate::workload::groups::id_bits::{bits, text};
use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// A set of event ids (see the module's doc).
#[derive(Debug, Clone, Default)]
pub struct IdSet {
    dashed: HashSet<u128, Mix>,
    plain: HashSet<u128, Mix>,
    other: HashSet<Box<str>>,
}

impl IdSet {
    /// Adds `id`; false if it was there.
    pub fn insert(&mut self, id: &str) -> bool {
        match bits(id) {
            Some((true, b)) => self.dashed.insert(b),
            Some((false, b)) => self.plain.insert(b),
            None => self.other.insert(id.into()),
        }
    }

    /// Whether `id` was inserted.
    pub fn contains(&self, id: &str) -> bool {
        if self.is_empty() {
            return false;
        }
        match bits(id) {
            Some((true, b)) => self.dashed.contains(&b),
            Some((false, b)) => self.plain.contains(&b),
            None => self.other.contains(id),
        }
    }

    /// Ids held.
    pub fn len(&self) -> usize {
        self.dashed.len() + self.plain.len() + self.other.len()
    }

    /// No id held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every id, as the text inserted (in no particular order).
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, str>> {
        let dashed = self.dashed.iter().map(|&b| Cow::Owned(text(b, true)));
        let plain = self.plain.iter().map(|&b| Cow::Owned(text(b, false)));
        let other = self.other.iter().map(|s| Cow::Borrowed(&**s));
        dashed.chain(plain).chain(other)
    }
}

/// A cheap hash of a u128 (the ids are not chosen by an adversary: an
/// audit reads the user's own run), mixing every bit into the low and the
/// high ones the hash table uses.
#[derive(Default)]
struct MixHasher(u64);

type Mix = BuildHasherDefault<MixHasher>;

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_u128(&mut self, v: u128) {
        let x = (v as u64) ^ ((v >> 64) as u64).rotate_left(32);
        let m = u128::from(x) * 0x9e37_79b9_7f4a_7c15_u128;
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_held_exactly_when_the_same_text_was_inserted() {
        let mut s = IdSet::default();
        let dashed = "0123abcd-4567-89ef-0123-456789abcdef";
        let plain = "0123abcd456789ef0123456789abcdef";
        assert!(s.insert(dashed));
        assert!(!s.insert(dashed));
        assert!(s.contains(dashed));
        // The same bits in the other shape, or in capitals, are other ids.
        assert!(!s.contains(plain));
        assert!(!s.contains(&dashed.to_uppercase()));
        assert!(s.insert(plain));
        assert!(s.insert("e1"));
        assert!(s.insert("0123ABCD-4567-89ef-0123-456789abcdef"));
        // Dashes elsewhere, a non-hex digit, a sign: text, not bits.
        assert!(s.insert("0123abcd4-567-89ef-0123-456789abcdef"));
        assert!(s.insert("0123abcd-4567-89ef-0123-456789abcdeg"));
        assert!(s.insert("+123abcd456789ef0123456789abcdef"));
        assert_eq!(s.len(), 7);
        let mut all: Vec<String> = s.iter().map(|c| c.into_owned()).collect();
        all.sort();
        let mut want = vec![
            dashed.to_string(),
            plain.to_string(),
            "e1".to_string(),
            "0123ABCD-4567-89ef-0123-456789abcdef".to_string(),
            "0123abcd4-567-89ef-0123-456789abcdef".to_string(),
            "0123abcd-4567-89ef-0123-456789abcdeg".to_string(),
            "+123abcd456789ef0123456789abcdef".to_string(),
        ];
        want.sort();
        assert_eq!(all, want);
        for w in &want {
            assert!(s.contains(w), "{w}");
        }
        assert!(!s.contains("e2"));
        assert!(!s.contains(""));
    }

    #[test]
    fn leading_zeros_and_the_largest_value_print_back() {
        let mut s = IdSet::default();
        for id in [
            "00000000-0000-0000-0000-000000000000",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
            "00000000000000000000000000000001",
        ] {
            s.insert(id);
            assert!(s.contains(id));
            assert!(s.iter().any(|c| c == id));
        }
    }
}
