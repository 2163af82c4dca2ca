//! (stub) Rendering of one dashboard frame.
