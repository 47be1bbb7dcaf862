//! What the Python backend (python/ccfair/kernel.py) hands the emulator: the simulator's
//! resolved run spec plus where each host lives (namespace, TUN device, address) and how
//! each flow is reached (port, Linux congestion control name).

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use ccfair_sim::spec::RunSpec;

use crate::error::EmuError;

/// Everything a kernel-backend run needs, as the Python backend sends it (JSON): the
/// simulator's resolved spec plus where each host lives and how each flow is reached.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmuConfig {
    /// Short run tag (hex); every thread is named after it.
    pub tag: String,
    /// The resolved spec, exactly as the simulator gets it.
    pub spec: RunSpec,
    /// One entry per node that is a flow endpoint. Other nodes are routers: they exist only
    /// inside the forwarder.
    pub hosts: Vec<HostConfig>,
    /// One entry per flow of `spec.flows`, in the same order.
    pub flows: Vec<FlowConfig>,
    /// ccfair's BPF congestion controls this run registers (docs/kernel.md): flows whose
    /// `kernel_cca` is one of these names run the program with their own `cca_params`.
    #[serde(default)]
    pub bpf: Vec<BpfProgram>,
    /// How packets travel between the hosts (default: TUN devices and ccfair's forwarder).
    #[serde(default)]
    pub datapath: Datapath,
    /// Tuning of the real-time machinery (defaults: docs/kernel.md).
    #[serde(default)]
    pub options: EmuOptions,
}

/// How packets travel between the hosts (docs/kernel.md, "Two data paths").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Datapath {
    /// Every host has a TUN device and ccfair's forwarder carries the packets over the
    /// simulator's link model in real time.
    #[default]
    Tun,
    /// The Python backend (python/ccfair/veth.py) has joined the namespaces with veth pairs
    /// and tc qdiscs for the links, as Mininet does; the kernel forwards the packets and
    /// this process only runs the traffic.
    Veth,
}

/// A BPF congestion control registered for the run's lifetime.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BpfProgram {
    /// The ccfair algorithm ("bbr" or "copa").
    pub algorithm: String,
    /// The name it is registered under (TCP_CONGESTION), at most 15 bytes.
    pub name: String,
}

/// A host of the run: a node of the spec that is a flow endpoint, living in its own network
/// namespace.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// Node index in `spec.nodes`.
    pub node: usize,
    /// Namespace name as `ip netns` knows it (bound at /run/netns/NAME).
    pub netns: String,
    /// The host's device inside the namespace (at most 15 bytes): its TUN device, or with
    /// the veth data path its end of its first link.
    pub dev: String,
    /// The host's address (a /32 on its device).
    pub addr: Ipv4Addr,
    /// The prefix routed through the TUN device, e.g. "10.200.0.0/16" (unused with the veth
    /// data path, whose routes the Python backend sets up).
    pub route: String,
    /// Extra `ip route` attributes, e.g. ["initcwnd", "20"].
    #[serde(default)]
    pub route_options: Vec<String>,
    /// (path under /proc/sys, value) pairs written inside the namespace before the TUN
    /// device is created, e.g. ("net/ipv4/tcp_no_metrics_save", "1").
    #[serde(default)]
    pub sysctls: Vec<(String, String)>,
}

/// How a flow of the spec is carried out by the kernel.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// The receiver listens on this port at the flow's `dst` host.
    pub port: u16,
    /// Linux congestion control module (net.ipv4.tcp_available_congestion_control).
    pub kernel_cca: String,
}

/// Tuning of the real-time machinery. Defaults are what docs/kernel.md describes.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmuOptions {
    /// `SCHED_FIFO` priority of the forwarder thread; 0 keeps the ordinary scheduler.
    pub realtime_priority: u32,
    /// `SCHED_FIFO` priority of the sender and receiver threads (below the forwarder's, so
    /// it preempts them); 0 keeps the ordinary scheduler. They block in poll between
    /// writes and samples, so they never hold a CPU for long, but other load on the
    /// machine (e.g. a compiler) cannot delay their samples.
    pub traffic_priority: u32,
    /// Timer slack of the forwarder, sender and receiver threads (ns).
    pub timer_slack_ns: u64,
    /// The forwarder busy-waits instead of sleeping when the next event is this close (ns).
    pub spin_ns: u64,
    /// A connection must be established within this time after its flow's start (ms),
    /// plus four round-trip propagation times of the slowest path.
    pub connect_timeout_ms: u64,
    /// Time between the setup (every socket created, every receiver listening) and t = 0
    /// of the run (ms), so that every thread has its start time before anything is due.
    pub start_margin_ms: u64,
    /// Abort the run if a SYN or SYN-ACK was forwarded later than this (us): Linux takes
    /// its first RTT sample from the handshake into its min RTT (and BBR's model), so a
    /// delayed handshake biases the whole run. 0 disables the check. The Python backend
    /// runs the attempt again when this happens (docs/kernel.md).
    pub max_handshake_lateness_us: u64,
    /// A packet event later than this (us) is part of a stall; the forwarder counts stall
    /// episodes (`ForwarderStats::stalls`). 0 disables counting.
    pub stall_threshold_us: u64,
}

/// Prefix of the error a run returns when it aborted because of a delayed handshake.
pub const SETUP_DISTURBED: &str = "handshake disturbed";

impl Default for EmuOptions {
    fn default() -> Self {
        EmuOptions {
            realtime_priority: 10,
            traffic_priority: 5,
            timer_slack_ns: 1,
            spin_ns: 0,
            connect_timeout_ms: 10_000,
            start_margin_ms: 20,
            max_handshake_lateness_us: 500,
            stall_threshold_us: 1_000,
        }
    }
}

impl EmuConfig {
    /// Consistency checks beyond the simulator's own (`RunSpec::check`). Errors name the
    /// field.
    pub fn check(&self) -> Result<(), EmuError> {
        self.spec.check()?;
        if self.flows.len() != self.spec.flows.len() {
            return Err(EmuError::invalid(
                "flows",
                format!(
                    "{} entries for {} flows in the spec",
                    self.flows.len(),
                    self.spec.flows.len()
                ),
            ));
        }
        let n = self.spec.nodes.len();
        let mut seen = vec![false; n];
        for (i, h) in self.hosts.iter().enumerate() {
            let field = || format!("hosts[{i}].node");
            if h.node >= n {
                return Err(EmuError::invalid(
                    field(),
                    format!("{} is not a node", h.node),
                ));
            }
            if seen[h.node] {
                return Err(EmuError::invalid(
                    field(),
                    format!("{} appears twice", h.node),
                ));
            }
            seen[h.node] = true;
            if h.dev.is_empty() || h.dev.len() > 15 {
                return Err(EmuError::invalid(
                    format!("hosts[{i}].dev"),
                    format!("{:?} must have 1 to 15 bytes", h.dev),
                ));
            }
        }
        for (i, f) in self.spec.flows.iter().enumerate() {
            for (what, node) in [("src", f.src), ("dst", f.dst)] {
                if !seen[node] {
                    return Err(EmuError::invalid(
                        format!("flows[{i}].{what}"),
                        format!("node {node} ({}) has no host entry", self.spec.nodes[node]),
                    ));
                }
            }
        }
        for (i, b) in self.bpf.iter().enumerate() {
            if crate::bpfcc::Algorithm::from_name(&b.algorithm).is_none() {
                return Err(EmuError::invalid(
                    format!("bpf[{i}].algorithm"),
                    format!("{:?} has no BPF program (bbr, copa)", b.algorithm),
                ));
            }
        }
        let mut ends = std::collections::HashSet::new();
        for (i, f) in self.flows.iter().enumerate() {
            if !ends.insert((self.spec.flows[i].dst, f.port)) {
                return Err(EmuError::invalid(
                    format!("flows[{i}].port"),
                    format!("{} is already used at the same receiver", f.port),
                ));
            }
        }
        Ok(())
    }

    /// The BPF program a flow runs, if its `kernel_cca` is one of the run's.
    pub fn bpf_of(&self, flow: usize) -> Option<&BpfProgram> {
        self.bpf
            .iter()
            .find(|b| b.name == self.flows[flow].kernel_cca)
    }

    /// The host entry of a node.
    pub fn host_of(&self, node: usize) -> Option<&HostConfig> {
        self.hosts.iter().find(|h| h.node == node)
    }
}
