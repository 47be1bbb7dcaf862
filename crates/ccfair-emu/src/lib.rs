//! ccfair-emu: the kernel backend. The same scenarios as the simulator, on the real Linux
//! TCP stack.
//!
//! Every host of a scenario (a node that is a flow endpoint) is a network namespace with one
//! TUN device. One forwarder thread holds every TUN device and drives the simulator's own
//! link model (`ccfair_sim::link::Channel`: serialisation at the link rate, drop-tail buffer
//! counting the packet in service, propagation delay, random loss) against the wall clock,
//! for any topology the spec allows. ccfair's own bulk sender and receiver (threads inside
//! the host namespaces) set TCP_CONGESTION per socket and sample TCP_INFO and TCP_CC_INFO
//! every sampling interval. The result has the simulator's tables (`ccfair_sim::RunResult`)
//! plus the emulator's self-checks (lateness, CPU, achieved link rates).
//!
//! Layout: `config` (what Python hands over), `sys` and `bpfsys` (system calls and libbpf;
//! the only `unsafe`), `bpfcc` (ccfair's BPF congestion controls: registration, parameters,
//! internals),
//! `ipv4` (packet classification), `forwarder`, `traffic` (sender and receiver) with `grid`
//! (their sampling grid),
//! `tcpinfo` (TCP_INFO to time-series columns), `lateness`, `run` (one run end to end).
//! See docs/kernel.md.

pub mod bpfcc;
// How build.rs finds clang and libbpf's headers, compiled here for its unit tests.
pub mod bpfsys;
#[cfg(test)]
#[path = "../build_support.rs"]
mod build_support;
pub mod config;
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
pub use run::{EmuResult, Emulation, SelfCheck};

/// The errors of the kernel backend's entry points (the Python bindings map each to one
/// ccfair exception).
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// The configuration is not valid JSON of the [`EmuConfig`] shape.
    #[error("emulator config: {0}")]
    Config(String),
    /// Setting the run up or running it failed (devices, threads, sockets, self-checks);
    /// the message is one line.
    #[error("{0}")]
    System(String),
}

/// Parse a configuration (JSON, see [`EmuConfig`]) and set the run up.
pub fn setup_json(config_json: &str) -> Result<Emulation, EmuError> {
    let cfg: EmuConfig =
        serde_json::from_str(config_json).map_err(|e| EmuError::Config(e.to_string()))?;
    Emulation::setup(cfg).map_err(EmuError::System)
}

/// Run a set-up emulation to its end.
pub fn run(emu: Emulation) -> Result<EmuResult, EmuError> {
    emu.run().map_err(EmuError::System)
}
