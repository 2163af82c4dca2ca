//! What keeps a workload's list of invariants (its `invariants` in
//! `crate::scenario::section`, which the loader checks `expect` against)
//! in step with the checkers that judge them: each workload's checker
//! module asserts [`same_names`] when it compiles.
//!
//! May import: nothing.

/// Whether `listed` names exactly `checkers`, in order: each workload's
/// checker module asserts it when it compiles, so a list cannot drift from
/// the checkers that judge it.
pub const fn same_names(listed: &[&str], checkers: &[&str]) -> bool {
    if listed.len() != checkers.len() {
        return false;
    }
    let mut i = 0;
    while i < listed.len() {
        let (a, b) = (listed[i].as_bytes(), checkers[i].as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut j = 0;
        while j < a.len() {
            if a[j] != b[j] {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}
