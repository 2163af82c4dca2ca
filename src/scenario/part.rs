//! One workload section of a resolved scenario, typed: [`Section`] is
//! what a workload's section type implements (its table's name), [`Part`]
//! the same with its type erased, as [`crate::scenario::parts::Parts`]
//! holds it, and [`read_part`] how a section's spec reads it.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::any::Any;
use std::fmt;

/// The type of one workload section: what it is read as and
/// the table it is written under.
pub trait Section:
    Any + Clone + PartialEq + fmt::Debug + Serialize + DeserializeOwned + Send + Sync
{
    /// Its table's name in a scenario.
    const TABLE: &'static str;
}

/// A section held by [`Parts`], its type erased (compared, cloned and
/// written as that type).
pub trait Part: Any + fmt::Debug + Send + Sync {
    /// A copy, as a part.
    fn clone_part(&self) -> Box<dyn Part>;
    /// Equal to `other` (which is of the same type).
    fn eq_part(&self, other: &dyn Part) -> bool;
    /// As `Any`, to be handed back as its type.
    fn as_any(&self) -> &dyn Any;
    /// As `Any`, mutably.
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// As serde writes it.
    fn as_serialize(&self) -> &dyn erased_serde::Serialize;
}

impl<T: Section> Part for T {
    fn clone_part(&self) -> Box<dyn Part> {
        Box::new(self.clone())
    }

    fn eq_part(&self, other: &dyn Part) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn as_serialize(&self) -> &dyn erased_serde::Serialize {
        self
    }
}

/// Type-erased parts by name, in the order they are written: what both
/// the scenario's workload sections ([`crate::scenario::parts::Parts`])
/// and `[api]`'s workload requests (`crate::scenario::api::ApiParts`)
/// hold, cloned, compared and shown part by part as their own types.
#[derive(Default)]
pub struct Named(pub Vec<(&'static str, Box<dyn Part>)>);

impl std::ops::Deref for Named {
    type Target = Vec<(&'static str, Box<dyn Part>)>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Named {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Clone for Named {
    fn clone(&self) -> Self {
        Named(self.0.iter().map(|(n, p)| (*n, p.clone_part())).collect())
    }
}

impl PartialEq for Named {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|((na, a), (nb, b))| na == nb && a.eq_part(b.as_ref()))
    }
}

impl fmt::Debug for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(n, p)| (n, p)))
            .finish()
    }
}

/// How a [`crate::scenario::section::SectionSpec`] reads its table:
/// [`read_part`] of the section's type.
pub type ReadPart =
    fn(&mut dyn erased_serde::Deserializer<'_>) -> Result<Box<dyn Part>, erased_serde::Error>;

/// Reads a section as its type `T`: what a [`SectionSpec`]'s `read` is.
///
/// # Errors
/// Serde's, when the table is no `T`.
pub fn read_part<T: Section>(
    d: &mut dyn erased_serde::Deserializer<'_>,
) -> Result<Box<dyn Part>, erased_serde::Error> {
    erased_serde::deserialize::<T>(d).map(|t| Box::new(t) as Box<dyn Part>)
}
