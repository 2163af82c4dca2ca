//! Workloads registered at run time (a workload that is not built into
//! the binary, such as one a test suite brings): their names and the
//! invariants an `expect` may name, so that the loader accepts
//! `workload = "<name>"` and checks `expect` against them. The workload
//! itself (its ops, load and checkers) registers with
//! `crate::workload::registry::register`, which records it here.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model): the workloads' sections
//! (`crate::scenario::section`) say which names are built in.

use crate::scenario::section;
use std::sync::RwLock;

/// What the loader knows of a registered workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registered {
    /// Its name in `workload = "..."`.
    pub name: &'static str,
    /// Its invariants, by their spec names, in report order.
    pub invariants: &'static [&'static str],
}

static TABLE: RwLock<Vec<Registered>> = RwLock::new(Vec::new());

/// Records a workload. Registering the same workload again is a no-op.
/// Errors: the name is a built-in one (a workload with sections in
/// [`section::WORKLOADS`]), empty, or taken by a different workload.
pub fn register(r: Registered) -> Result<(), String> {
    if r.name.is_empty() || section::of(r.name).is_some() {
        return Err(format!(
            "workload name {:?} is taken by a built-in workload or empty",
            r.name
        ));
    }
    let mut table = TABLE.write().unwrap_or_else(|e| e.into_inner());
    match table.iter().find(|t| t.name == r.name) {
        Some(t) if *t == r => Ok(()),
        Some(_) => Err(format!(
            "workload {:?} is registered already, with other invariants",
            r.name
        )),
        None => {
            table.push(r);
            Ok(())
        }
    }
}

/// The registered workload named `name`, if any.
pub fn find(name: &str) -> Option<Registered> {
    TABLE
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|t| t.name == name)
        .copied()
}

/// The names of the registered workloads, in registration order.
pub fn names() -> Vec<&'static str> {
    TABLE
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|t| t.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_taken_once_and_never_a_built_in_one() {
        let r = Registered {
            name: "unit-test-workload",
            invariants: &["Inv"],
        };
        assert_eq!(register(r), Ok(()));
        assert_eq!(register(r), Ok(()));
        assert!(register(Registered {
            invariants: &["Other"],
            ..r
        })
        .is_err());
        for built_in in section::built_in_names() {
            assert!(register(Registered {
                name: built_in,
                invariants: &[]
            })
            .is_err());
        }
        assert_eq!(find("unit-test-workload"), Some(r));
        assert_eq!(find("nothing"), None);
    }
}
