//! Workloads: what an op is and what its steps mean. [`machine`] is the
//! generic step machine; [`groups`] reads a finished machine as the groups
//! workload's answer (accepted, duplicate, resolved, refused with a probe);
//! [`outbox`] reads an ended `handle` attempt as ok, fail or info.
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

pub mod attempt_end;
pub mod groups;
pub mod machine;
pub mod outbox;
pub mod parts;
pub mod ran;
pub mod registry;
pub mod traits;
pub mod value;

pub use machine::{Next, StepMachine, StepOutcome};
pub use value::Value;
