//! The kernel backend of ccfair: the simulator's scenarios on the real Linux TCP stack.
//!
//! The simulator (`ccfair-sim`) follows Linux; this crate checks it against Linux itself.
//! Every host of a scenario (a node that is a flow endpoint) is a network namespace with
//! one TUN device. One forwarder thread holds every TUN device and drives the simulator's
//! own link model ([`ccfair_sim::link::Channel`]: serialisation at the link rate, the
//! buffer, propagation delay, random loss, the queue disciplines) against the wall clock,
//! for any topology the spec allows. ccfair's own bulk sender and receiver (threads inside
//! the host namespaces) set TCP_CONGESTION per socket and sample TCP_INFO and TCP_CC_INFO
//! every sampling interval. The result has the simulator's tables
//! ([`ccfair_sim::RunResult`]) plus the emulation's self-checks ([`SelfCheck`]: lateness,
//! CPU, achieved link rates), so the two backends' results compare column by column. With
//! the veth data path the kernel carries the packets itself (veth pairs with tc qdiscs,
//! set up by the Python backend) and this crate runs only the traffic. See
//! docs/kernel.md.
//!
//! # Why this crate has `unsafe`
//!
//! It is the only crate of ccfair that talks to the kernel: setns(2), TUN devices,
//! socket options, ppoll(2), bpf(2), and libbpf loaded at run time with dlopen(3) for
//! ccfair's own BPF congestion controls (BBR's variants and Copa as struct_ops). None of
//! these has a safe interface in the standard library, so [`sys`] and [`bpfsys`] wrap them:
//! every `unsafe` block there passes buffers it owns, with their real length, and checks
//! the result, with a `// SAFETY:` comment saying why it is sound. The workspace's
//! `unsafe_code` lint is allowed by name in those two modules and for the two `#[repr(C)]`
//! layouts of [`bpfcc`] shared with the BPF programs; everything else is safe code.
//!
//! # Main types
//!
//! - [`EmuConfig`]: what the Python backend sends (JSON): the simulator's resolved spec,
//!   the hosts (namespace, device, address, sysctls) and each flow's port and Linux
//!   congestion control.
//! - [`Emulation`]: a run set up ([`setup_json`]: devices created, BPF programs
//!   registered) and then run ([`run()`]); [`EmuResult`] is what it returns.
//! - [`forwarder::Control`]: stops a run from another thread (SIGINT).
//! - [`EmuError`] and [`BpfError`]: why a run failed, in one line naming the flow, host or
//!   system call; the Python bindings raise it as `ccfair.errors.RunError`.
//!
//! Layout: `config` (what Python hands over), `sys` and `bpfsys` (system calls and libbpf;
//! the only `unsafe`), `bpfcc` (ccfair's BPF congestion controls: registration, parameters,
//! internals), `ipv4` (packet classification), `forwarder`, `traffic` (sender and
//! receiver) with `grid` (their sampling grid), `tcpinfo` (TCP_INFO to time-series
//! columns), `lateness`, `turnaround` (hosts' reaction times), `run` (one run end to end),
//! `error`.
//!
//! # Example
//!
//! One CUBIC flow between two hosts over a 10 Mbit/s link. Not run as a test: it needs
//! root (CAP_NET_ADMIN, CAP_SYS_ADMIN), /dev/net/tun and the two namespaces, which the
//! Python backend creates (`ip netns add`) and removes around a run; `ccfair run
//! --backend kernel` does all of it.
//!
//! ```no_run
//! use serde_json::json;
//!
//! let spec = json!({
//!     "duration_ns": 10_000_000_000u64, "seed": 1, "sample_interval_ns": 100_000_000,
//!     "measure_start_ns": 2_000_000_000u64, "measure_end_ns": 10_000_000_000u64,
//!     "nodes": ["h1", "h2"],
//!     "links": [{"name": "h1-h2", "a": 0, "b": 1, "rate_bps": 10_000_000,
//!                "delay_ns": 20_000_000, "buffer_pkts": 50}],
//!     "flows": [{"name": "flow1", "src": 0, "dst": 1, "path": [0], "ack_path": [1],
//!                "cca": "cubic", "cca_params": {}, "start_ns": 0}],
//! });
//! let host = |node: usize, netns: &str, dev: &str, addr: &str| {
//!     json!({"node": node, "netns": netns, "dev": dev, "addr": addr,
//!            "route": "10.200.0.0/16"})
//! };
//! let config = json!({
//!     "tag": "demo",
//!     "spec": spec,
//!     // The namespaces exist already (bound at /run/netns/NAME).
//!     "hosts": [host(0, "ccf-demo-0-h1", "ccfdemo-0", "10.200.0.1"),
//!               host(1, "ccf-demo-1-h2", "ccfdemo-1", "10.200.0.2")],
//!     // The receiver listens on this port; the sender sets TCP_CONGESTION to "cubic".
//!     "flows": [{"port": 5201, "kernel_cca": "cubic"}],
//! });
//! // Creates each host's TUN device, address and route; nothing is sent yet.
//! let emulation = ccfair_emu::setup_json(&config.to_string())?;
//! // Runs the scenario in real time (10 s) and joins every thread.
//! let out = ccfair_emu::run(emulation)?;
//! println!("goodput {:?} Mbit/s", out.result.flows.f64("goodput_mbps"));
//! println!("forwarder lateness {:?}", out.selfcheck.forwarder.lateness);
//! # Ok::<(), ccfair_emu::EmuError>(())
//! ```

pub mod bpfcc;
// How build.rs finds clang and libbpf's headers, compiled here for its unit tests.
pub mod bpfsys;
#[cfg(test)]
#[path = "../build_support.rs"]
mod build_support;
pub mod config;
pub mod error;
pub mod forwarder;
pub mod grid;
pub mod ipv4;
pub mod lateness;
pub mod run;
pub mod sys;
pub mod tcpinfo;
pub mod traffic;
pub mod turnaround;

pub use config::EmuConfig;
pub use error::{BpfError, EmuError};
pub use run::{EmuResult, Emulation, SelfCheck};

/// Parse a configuration (JSON, see [`EmuConfig`]) and set the run up.
///
/// The configuration is checked before anything is created, so a wrong one costs nothing:
///
/// ```
/// use ccfair_emu::EmuError;
/// use serde_json::json;
///
/// let spec = json!({
///     "duration_ns": 1_000_000_000u64, "seed": 1, "sample_interval_ns": 100_000_000,
///     "measure_start_ns": 0, "measure_end_ns": 1_000_000_000u64, "nodes": ["h1", "h2"],
///     "links": [{"name": "h1-h2", "a": 0, "b": 1, "rate_bps": 10_000_000,
///                "delay_ns": 1_000_000, "buffer_pkts": 10}],
///     "flows": [{"name": "flow1", "src": 0, "dst": 1, "path": [0], "ack_path": [1],
///                "cca": "cubic", "cca_params": {}, "start_ns": 0}],
/// });
/// // h2, the flow's receiver, has no host entry.
/// let config = json!({
///     "tag": "demo", "spec": spec,
///     "hosts": [{"node": 0, "netns": "ccf-demo-0-h1", "dev": "ccfdemo-0",
///                "addr": "10.200.0.1", "route": "10.200.0.0/16"}],
///     "flows": [{"port": 5201, "kernel_cca": "cubic"}],
/// });
/// let Err(e) = ccfair_emu::setup_json(&config.to_string()) else { panic!("refused") };
/// assert!(matches!(&e, EmuError::Invalid { field, .. } if field == "flows[0].dst"));
/// assert_eq!(e.to_string(), "flows[0].dst: node 1 (h2) has no host entry");
///
/// // Not JSON of the configuration's shape: the Python bindings raise a SpecError.
/// let e = ccfair_emu::setup_json("{}").err().unwrap();
/// assert!(e.to_string().starts_with("emulator config: missing field"), "{e}");
/// ```
pub fn setup_json(config_json: &str) -> Result<Emulation, EmuError> {
    let cfg: EmuConfig =
        serde_json::from_str(config_json).map_err(|e| EmuError::Config(std::sync::Arc::new(e)))?;
    Emulation::setup(cfg)
}

/// Run a set-up emulation to its end.
pub fn run(emu: Emulation) -> Result<EmuResult, EmuError> {
    emu.run()
}
