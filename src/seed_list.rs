//! The seeds of a series (`--seeds 1..10`, `--seeds 3,7,11`): which
//! seeds `run` and `compare` go through one after another.
//!
//! Layer: core. Imports nothing of the crate.

use std::fmt;

/// The most seeds one series may name: a typo (`1..100000000`) is
/// refused rather than started.
pub const MAX_SEEDS: usize = 10_000;

/// The largest seed (a scenario's `seed` is at most 2^63-1).
const MAX_SEED: u64 = i64::MAX as u64;

/// The seeds of a series, in the order they run; no seed twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedList(Vec<u64>);

impl SeedList {
    /// Parses `A..B` (inclusive, A <= B) or a comma list `A,B,C` (each
    /// item a seed or a range). Errors: the reason, in words.
    pub fn parse(text: &str) -> Result<SeedList, String> {
        let mut seeds: Vec<u64> = Vec::new();
        for item in text.split(',').map(str::trim) {
            let (from, to) = match item.split_once("..") {
                Some((a, b)) => (seed(a, text)?, seed(b.trim_start_matches('='), text)?),
                None => {
                    let s = seed(item, text)?;
                    (s, s)
                }
            };
            if from > to {
                return Err(format!(
                    "{item:?} in --seeds {text:?} is empty: write the smaller seed first (1..10)"
                ));
            }
            if to - from >= MAX_SEEDS as u64 || seeds.len() + (to - from) as usize >= MAX_SEEDS {
                return Err(format!(
                    "--seeds {text:?} names more than {MAX_SEEDS} seeds: refused"
                ));
            }
            for s in from..=to {
                if seeds.contains(&s) {
                    return Err(format!("--seeds {text:?} names seed {s} twice"));
                }
                seeds.push(s);
            }
        }
        Ok(SeedList(seeds))
    }

    /// The seeds, in order.
    pub fn seeds(&self) -> &[u64] {
        &self.0
    }
}

impl fmt::Display for SeedList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u64::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

fn seed(word: &str, text: &str) -> Result<u64, String> {
    word.trim()
        .parse::<u64>()
        .ok()
        .filter(|s| *s <= MAX_SEED)
        .ok_or_else(|| {
            format!(
                "--seeds {text:?}: {word:?} is not a seed (0 to 2^63-1); write A..B (inclusive) \
                 or a list A,B,C"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::SeedList;

    #[test]
    fn a_range_is_inclusive_and_a_list_keeps_its_order() {
        assert_eq!(SeedList::parse("1..3").unwrap().seeds(), &[1, 2, 3]);
        assert_eq!(SeedList::parse("1..=3").unwrap().seeds(), &[1, 2, 3]);
        assert_eq!(SeedList::parse("7").unwrap().seeds(), &[7]);
        assert_eq!(SeedList::parse("9, 2,4..5").unwrap().seeds(), &[9, 2, 4, 5]);
    }

    #[test]
    fn empty_reversed_repeated_or_huge_lists_are_refused() {
        for bad in ["", "3..1", "1,1", "1..3,2", "x", "1..", "0..20000", "-1"] {
            assert!(SeedList::parse(bad).is_err(), "{bad}");
        }
    }
}
