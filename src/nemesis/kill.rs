//! (stub) kill fault.
