//! (stub) lock fault.
