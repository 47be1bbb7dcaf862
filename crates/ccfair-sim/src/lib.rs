//! ccfair-sim: a deterministic discrete-event packet simulator whose TCP follows Linux.
//!
//! Layout: `spec` (the resolved run spec), `event` (queue), `link` (channels), `qdisc`
//! (queue disciplines: CoDel, fq_codel, PIE, RED), `sojourn` (percentiles), `packet`,
//! `tcp` (sender, receiver, RTT), `world` (the event loop), `prefetch` (cache hints for
//! large runs), `record` (typed result rows and the recorders both backends share),
//! `schema` (every results column, defined once), `table` (column storage).

pub mod error;
pub mod estimate;
pub mod event;
pub mod fifo;
pub mod host;
pub mod link;
pub mod netem;
pub mod packet;
pub mod prefetch;
pub mod qdisc;
pub mod record;
pub mod schema;
pub mod sojourn;
pub mod spec;
pub mod table;
pub mod tcp;
pub mod trace;
pub mod world;

pub use error::SimError;
pub use estimate::{Estimate, Limits};
pub use world::{parse_spec, run_json, RunResult, Simulation};
