//! (stub) proxy fault.
