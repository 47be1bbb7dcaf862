//! Deterministic discrete-event simulator.
pub mod spec;
