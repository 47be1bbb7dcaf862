//! A deterministic discrete-event packet simulator whose TCP follows Linux.
//!
//! ccfair runs congestion control algorithms against each other on a network and measures
//! how fairly they share it. This crate is the engine behind the Python package's
//! `ccfair.run` (the default backend): links with a rate, a propagation delay, a buffer and
//! optionally random loss or a queue discipline; hosts whose TCP sender and receiver follow
//! net/ipv4/tcp_*.c (SACK, RACK-TLP, PRR, delayed ACKs, pacing, TSO, the receive window,
//! ECN); and the algorithms of `ccfair-cc`, called at Linux's points. A run is a pure
//! function of its spec and seed: the same input gives the same tables, bit for bit.
//!
//! # Main types
//!
//! - [`spec::RunSpec`]: a resolved run (nodes, links, flows with their routes, algorithm
//!   parameters and TCP options, timing) in engine units: ns, bytes, bit/s, indices. Python
//!   builds it from a scenario; [`parse_spec`] reads it from JSON.
//! - [`Simulation`]: checks a spec ([`Simulation::new`]) and runs it
//!   ([`Simulation::run`], or [`Simulation::run_bounded`] with an event budget).
//! - [`RunResult`]: the result tables ([`table::Table`]): per-flow summary and time series,
//!   per-link time series and summary, an optional per-packet trace; their columns are
//!   declared once in [`schema`].
//! - [`link::Channel`] (one direction of a link) and [`qdisc::Qdisc`] (CoDel, fq_codel, PIE,
//!   RED after Linux's sch_*.c): the link model, which the kernel backend (`ccfair-emu`)
//!   drives against the wall clock.
//! - [`SimError`]: why a spec was refused or a run stopped, naming the field; never a
//!   panic on bad input.
//!
//! Layout: `spec` (the resolved run spec), `event` (queue), `link` (channels), `qdisc`
//! (queue disciplines), `netem`, `sojourn` (percentiles), `packet`, `host` (host latency),
//! `tcp` (sender, receiver, RTT), `world` (the event loop), `estimate` (resource limits),
//! `prefetch` (cache hints for large runs), `record` (typed result rows and the recorders
//! both backends share), `schema` (every results column), `table` (column storage).
//!
//! # Example
//!
//! One CUBIC flow over a single 10 Mbit/s link between two hosts: 20 ms each way, a buffer
//! of 50 packets, 10 simulated seconds, goodput measured from 2 s on.
//!
//! ```
//! use ccfair_sim::Simulation;
//! use serde_json::json;
//!
//! let spec = json!({
//!     "duration_ns": 10_000_000_000u64,
//!     "seed": 1,
//!     "sample_interval_ns": 100_000_000,
//!     "measure_start_ns": 2_000_000_000u64,
//!     "measure_end_ns": 10_000_000_000u64,
//!     "nodes": ["h1", "h2"],
//!     // Link 0 carries channel 0 (h1 to h2) and channel 1 (h2 to h1).
//!     "links": [{"name": "h1-h2", "a": 0, "b": 1, "rate_bps": 10_000_000,
//!                "delay_ns": 20_000_000, "buffer_pkts": 50}],
//!     // Data on channel 0, ACKs on channel 1; Linux's TCP defaults.
//!     "flows": [{"name": "flow1", "src": 0, "dst": 1, "path": [0], "ack_path": [1],
//!                "cca": "cubic", "cca_params": {}, "start_ns": 0}],
//! });
//! let mut spec = ccfair_sim::parse_spec(&spec.to_string())?;
//! // The spec is plain data: change it in Rust as well.
//! spec.flows[0].tcp.init_cwnd = 10;
//!
//! let result = Simulation::new(spec)?.run();
//!
//! // The flows table: one row per flow. 1448 of every 1500 bytes on the wire are
//! // payload, so a link kept busy delivers 9.65 Mbit/s of goodput.
//! let goodput = result.flows.f64("goodput_mbps").unwrap()[0];
//! assert!((goodput - 9.65).abs() < 0.05, "{goodput}");
//! // The time series: one row per flow and sampling instant (every 100 ms).
//! assert_eq!(result.timeseries.n_rows(), 100);
//! let cwnd = result.timeseries.f64("cwnd_pkts").unwrap();
//! assert!(cwnd.iter().all(|&c| c >= 2.0));
//! # Ok::<(), ccfair_sim::SimError>(())
//! ```
//!
//! The same spec as a file runs with `cargo run --release -p ccfair-sim --example run_spec
//! -- SPEC.json`; `ccfair check --engine SCENARIO` prints the spec Python makes of a
//! scenario.

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
