//! ccfair-sim: a deterministic discrete-event packet simulator whose TCP follows Linux.
//!
//! Layout: `spec` (the resolved run spec), `event` (queue), `link` (channels), `packet`,
//! `tcp` (sender, receiver, RTT), `world` (the event loop and recording), `table` (results).

pub mod event;
pub mod host;
pub mod link;
pub mod packet;
pub mod spec;
pub mod table;
pub mod tcp;
pub mod trace;
pub mod world;

pub use world::{run_json, RunResult, Simulation};
