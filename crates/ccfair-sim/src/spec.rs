//! The resolved run spec: what the Python layer hands the engine after parsing, validating
//! and normalising a scenario (see docs/spec.md for the user-facing schema).
//!
//! Everything here is already checked and in engine units: node and link references are
//! indices, routes are lists of channel ids, buffers are packets, times are nanoseconds.
//! The engine still rejects inconsistent input with an error (never a panic).
//!
//! Channels: every link is full duplex. Link `i` has channel `2*i` carrying packets from
//! `a` to `b` and channel `2*i + 1` carrying packets from `b` to `a`; each channel has its
//! own serialiser, drop-tail buffer and random-loss process.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use ccfair_cc::params::ParamError;

use crate::error::SimError;

/// A resolved run: the topology (nodes, links), the flows with their routes, algorithms and
/// TCP options, and the run's timing. The Python layer builds it from a scenario
/// (`ccfair check --engine` prints it as JSON); [`Simulation::new`](crate::Simulation::new)
/// checks it and runs it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// Simulated time the run lasts, ns.
    pub duration_ns: u64,
    /// Seed of every random stream of the run (each flow, channel and queue discipline derives
    /// its own from it, so adding one changes no other's draws).
    pub seed: u64,
    /// Interval of the per-flow and per-link time series.
    pub sample_interval_ns: u64,
    /// Goodput is measured over `[measure_start_ns, measure_end_ns)`.
    pub measure_start_ns: u64,
    /// End of the measurement window, ns (at most `duration_ns`).
    pub measure_end_ns: u64,
    /// Node names; links and flows refer to nodes by index into this list.
    pub nodes: Vec<String>,
    /// The links; link `i` carries channels `2*i` (a to b) and `2*i + 1` (b to a).
    pub links: Vec<LinkSpec>,
    /// The flows, each a TCP connection from `src` to `dst`.
    pub flows: Vec<FlowSpec>,
    /// Flows (indices) whose packets are traced hop by hop (`trace.rs`); a diagnostic that
    /// changes no result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trace_flows: Vec<usize>,
}

/// A full-duplex link between two nodes: its rate, propagation delay, buffer, loss and
/// queue apply to each direction.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// The link's name in results (`link_name`).
    pub name: String,
    /// One end (node index): channel `2*i` runs from `a` to `b`.
    pub a: usize,
    /// The other end (node index).
    pub b: usize,
    /// Rate of each direction, bit/s (on-the-wire bytes, headers included).
    pub rate_bps: u64,
    /// One-way propagation delay, ns.
    pub delay_ns: u64,
    /// Drop-tail capacity in packets, counting the packet in service (see docs/model.md).
    pub buffer_pkts: u32,
    /// Bernoulli loss probability of the a->b channel.
    #[serde(default)]
    pub loss_ab: f64,
    /// Bernoulli loss probability of the b->a channel.
    #[serde(default)]
    pub loss_ba: f64,
    /// The queue (`netem.rs`, `qdisc/`): `droptail` (default: a FIFO whose buffer counts the
    /// queued packets and the one in service), `netem` (the buffer also counts the packets
    /// in the delay line, as netem's `limit`), or a queue discipline as Linux's: `codel`,
    /// `fq_codel`, `pie`, `red` (the buffer is its packet limit, the packet being
    /// serialised not counted, as Linux's `qdisc_qlen`).
    #[serde(default, skip_serializing_if = "Queue::is_droptail")]
    pub queue: Queue,
    /// The queue discipline's parameters (`qdisc::params`): a table of the options of the
    /// discipline `queue` names, those left out at Linux's defaults; absent (null) for
    /// drop-tail and netem, which take none.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub qdisc: Value,
}

/// What a channel's queue is (`LinkSpec::queue`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Queue {
    /// A drop-tail FIFO in front of the serialiser (a `pfifo`, or a device's `txqueuelen`):
    /// at most `buffer_pkts` packets queued or in service.
    #[default]
    Droptail,
    /// netem holding both the delay and the queue: its `limit` counts every packet it
    /// holds, queued, in service or in the delay line (net/sched/sch_netem.c).
    Netem,
    /// CoDel (net/sched/sch_codel.c).
    Codel,
    /// fq_codel (net/sched/sch_fq_codel.c).
    FqCodel,
    /// PIE (net/sched/sch_pie.c).
    Pie,
    /// RED (net/sched/sch_red.c).
    Red,
}

impl Queue {
    /// The default queue (which a spec need not write).
    pub fn is_droptail(&self) -> bool {
        *self == Queue::Droptail
    }

    /// A queue discipline that decides at its own time (`qdisc/`): the channel serves it
    /// packet by packet (`link/serve.rs`) and is never fed ahead.
    #[inline]
    pub fn is_qdisc(self) -> bool {
        !matches!(self, Queue::Droptail | Queue::Netem)
    }

    /// The name a spec uses.
    pub fn name(self) -> &'static str {
        match self {
            Queue::Droptail => "droptail",
            Queue::Netem => "netem",
            Queue::Codel => "codel",
            Queue::FqCodel => "fq_codel",
            Queue::Pie => "pie",
            Queue::Red => "red",
        }
    }
}

impl LinkSpec {
    /// The most packets the link's buffer can hold (not counting the one in service): its
    /// `buffer_pkts`, or for RED, whose limit is in bytes, that limit in the smallest
    /// packets (bare ACKs). For the resource estimate.
    pub fn held_pkts_bound(&self) -> u64 {
        match self.qdisc_config() {
            Ok(Some(crate::qdisc::QdiscConfig::Red(p))) => {
                let limit = p
                    .limit_bytes
                    .map_or(self.buffer_pkts as u64 * 1500, u64::from);
                (self.buffer_pkts as u64).max(limit.div_ceil(ACK_BYTES as u64))
            }
            _ => self.buffer_pkts as u64,
        }
    }

    /// Bytes a channel's queue discipline takes before any packet (fq_codel's flow table:
    /// about 56 B per flow queue).
    pub fn qdisc_table_bytes(&self) -> u64 {
        match self.qdisc_config() {
            Ok(Some(crate::qdisc::QdiscConfig::FqCodel(p))) => p.flows as u64 * 56,
            _ => 0,
        }
    }

    /// The link's queue discipline with its parameters (`None` for drop-tail and netem).
    pub fn qdisc_config(&self) -> Result<Option<crate::qdisc::QdiscConfig>, ParamError> {
        let config = crate::qdisc::QdiscConfig::parse(self.queue, &self.qdisc)?;
        if let Some(c) = &config {
            c.check_link(self.buffer_pkts, self.rate_bps)?;
        }
        Ok(config)
    }
}

/// One TCP connection: where it goes, the algorithm it runs, when it starts and stops, and
/// its TCP options.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// The flow's name in results (`flow_name`).
    pub name: String,
    /// The sending node (index into `RunSpec::nodes`).
    pub src: usize,
    /// The receiving node (index into `RunSpec::nodes`).
    pub dst: usize,
    /// Channels crossed by data, in order from `src` to `dst`.
    pub path: Vec<usize>,
    /// Channels crossed by ACKs, in order from `dst` to `src`.
    pub ack_path: Vec<usize>,
    /// Congestion control module name (see `ccfair_cc::known_algorithms`).
    pub cca: String,
    /// Module parameters (JSON object; defaults filled in by normalisation).
    #[serde(default)]
    pub cca_params: Value,
    /// When the application starts (connects, or writes without the handshake), ns.
    pub start_ns: u64,
    /// The flow starts at `start_ns` plus a uniform random offset in `[0, start_jitter_ns]`
    /// drawn from the flow's own stream (0 = exactly at `start_ns`). Makes repetitions of
    /// otherwise deterministic scenarios differ, as testbed runs do.
    #[serde(default)]
    pub start_jitter_ns: u64,
    /// The application stops writing at this time (bulk flows: none).
    #[serde(default)]
    pub stop_ns: Option<u64>,
    /// Bytes the application writes in total (bulk flows: none = infinite).
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// The TCP substrate's options (Linux's defaults unless set).
    #[serde(default)]
    pub tcp: TcpOptions,
}

/// TCP substrate options. Defaults are Linux's (reference 1.12, 8.1); every deviation from
/// Linux that the simulator offers is one of these switches.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TcpOptions {
    /// Payload bytes per segment (`mss_cache`); 1448 = 1500 B packets with timestamps.
    pub mss: u32,
    /// `TCP_INIT_CWND`.
    pub init_cwnd: u32,
    /// Linux `HZ` (jiffies per second); affects CUBIC's per-jiffy arithmetic.
    pub hz: u32,
    /// `TCP_RTO_MIN` in ms (the floor sits on rttvar, as in `__tcp_set_rto`).
    pub rto_min_ms: u32,
    /// `TCP_TIMEOUT_INIT` in ms (RTO before any RTT sample).
    pub rto_init_ms: u32,
    /// `TCP_DELACK_MIN` / `TCP_ATO_MIN` in ms.
    pub delack_ms: u32,
    /// `TCP_MAX_QUICKACKS`.
    pub quickacks: u32,
    /// Selective acknowledgements (RFC 2018), `net.ipv4.tcp_sack` of both ends of the flow
    /// (the handshake negotiates SACK only when both enable it). Off: the receiver sends no
    /// SACK blocks and the sender recovers by NewReno dupack counting (`tcp_is_reno`).
    pub sack: bool,
    /// RACK loss detection (`tcp_recovery` bit 0). Off: SACK flows detect losses by the
    /// duplicate threshold, as Linux up to 6.16 (6.17 removed that code and ignores 0). Loss
    /// probes (`tlp`) do not depend on it.
    pub rack: bool,
    /// Tail loss probe (`tcp_early_retrans` = 3).
    pub tlp: bool,
    /// F-RTO (`tcp_frto` = 2).
    pub frto: bool,
    /// Undo of spurious cwnd reductions (DSACK, timestamps, F-RTO).
    pub undo: bool,
    /// `sysctl_tcp_reordering`.
    pub reordering: u32,
    /// Pace Reno/CUBIC like the fq qdisc does (`tcp_pacing_ss_ratio`/`ca_ratio`); Linux
    /// without fq does not pace them.
    pub fq_pacing: bool,
    /// `tcp_pacing_ss_ratio` in percent.
    pub pacing_ss_ratio: u32,
    /// `tcp_pacing_ca_ratio` in percent.
    pub pacing_ca_ratio: u32,
    /// `tcp_min_rtt_wlen` in seconds (window of `tcp_min_rtt`).
    pub min_rtt_wlen_s: u32,
    /// The receivers' `tcp_rmem` (min, default, max bytes): `"fit"` (default) raises the
    /// maximum until no window can limit a flow (four times the flow path's BDP plus its
    /// buffers, at least 8 MiB, as the kernel backend sets it); `"linux"` is Linux 6.18's
    /// stock setting (4096 131072 33554432); or three numbers (`tcp/rcvbuf.rs`).
    pub rmem: Rmem,
    /// The senders' `tcp_wmem` (min, default, max bytes): `"fit"` (default) never limits a
    /// sender (the kernel backend raises the maximum as for `rmem`); `"linux"` is Linux's
    /// stock setting (4096 16384 4194304), whose maximum caps what a sender may have
    /// queued, in flight or not yet sent (`tcp/sender/sndbuf.rs`); or three numbers.
    pub wmem: Wmem,
    /// TCP segmentation offload as Linux sizes it (`tcp/sender/tso.rs`): `"off"` (default,
    /// the idealisation of earlier versions: one segment per skb, paced segment by segment)
    /// or `"linux"` (`tcp_tso_autosize`: skbs of about 1 ms of data at the pacing rate,
    /// their segments back to back; pacing per skb; the kernel backend then takes GSO
    /// packets from its TUN devices and cuts them itself).
    pub tso: Tso,
    /// With `tso = "linux"`: TSO deferral (`tcp_tso_should_defer`), which holds back a
    /// short skb while an ACK is due soon, so that unpaced flows send fuller bursts: `true`
    /// (Linux 6.18's rule: the last skb left within 1 ms and the ACK is due within
    /// min(srtt/2, 1 ms)), `"linux-4.x"` (4.13/4.15: the last skb left in this jiffy and the
    /// oldest unacknowledged one left at least srtt/2 ago) or `false`.
    pub tso_defer: TsoDefer,
    /// With `tso = "linux"`: `tcp_tso_autosize`'s bonus for small RTTs
    /// (`gso_max_size >> (min_rtt_us >> tcp_tso_rtt_log)`, Linux 5.18+); `false` is the 4.x
    /// sizing (about 1 ms of data at the pacing rate only).
    pub tso_min_rtt_bonus: bool,
    /// How TCP paces a flow that asks for pacing (BBR, Copa) without the fq qdisc:
    /// `"linux-6.18"` (the earliest-departure-time pacer, `tcp_update_skb_after_send`: the
    /// payload of each skb at the pacing rate, late sends credited up to half an skb, the
    /// first 10 segments unpaced) or `"linux-4.x"` (4.13/4.15 `tcp_internal_pacing`: a
    /// timer of skb->len, payload plus the 32-byte TCP header, at the pacing rate, started
    /// when the skb leaves; no credit, no unpaced start).
    pub pacer: Pacer,
    /// Proportional rate reduction in recovery (`tcp_cwnd_reduction`) while in flight is
    /// below ssthresh: `"linux-6.18"` (5.19+: `max(prr_delivered - prr_out, newly acked)`,
    /// plus one when `snd_una` advanced and nothing was newly lost) or `"linux-4.x"` (that
    /// bound plus one only when retransmitted data was acknowledged and no retransmission was
    /// lost, else `newly acked`: conservation).
    pub prr: Prr,
    /// When a tail loss probe is scheduled and how long it waits (`tcp_schedule_loss_probe`):
    /// `"linux-6.18"` (Open or CWR; 2 srtt + 2 ms, with one packet out 2 srtt + `rto_min`),
    /// `"linux-4.15"` (Open only, and not while cwnd has room and data is waiting; 2 srtt + 2
    /// jiffies, with one packet out + `rto_min`) or `"linux-4.13"` (as 4.15, but max(2 srtt,
    /// 10 ms), with one packet out at least 1.5 srtt + 200 ms).
    pub tlp_schedule: TlpSchedule,
    /// The undo rules of a kernel generation (tcp_input.c): `"linux-6.18"` (`tcp_init_undo`
    /// counts a loss probe's retransmission in flight before mapping 0 to -1;
    /// `tcp_enter_recovery` first clears a retransmission stamp left with nothing
    /// retransmitted, `tcp_retrans_stamp_cleanup`; `tcp_packet_delayed` with no stamp is true
    /// except for a non-SACK flow at or past `high_seq`) or `"linux-4.x"` (4.13/4.15:
    /// `undo_retrans = retrans_out ? : -1`, no probe term; no cleanup at recovery entry;
    /// `tcp_packet_delayed` is `!retrans_stamp || tcp_tsopt_ecr_before(..)`).
    pub undo_rules: UndoRules,
    /// The receiver's window model (`tcp/rcvbuf.rs`): `"linux-6.18"` (the window is the
    /// buffer times the measured payload/truesize ratio, SYN-ACK window 64 KiB,
    /// `tcp_rcvbuf_grow` autotuning, min-seeking receiver RTT) or `"linux-4.x"`
    /// (4.13/4.15: the window is half the buffer, `tcp_adv_win_scale` 1; SYN-ACK window
    /// 20 segments; `tcp_fixup_rcvbuf`'s initial buffer; 4.x `tcp_rcv_space_adjust` and its
    /// averaging receiver RTT).
    pub rcv_window: RcvWindow,
    /// SACK compression (`__tcp_ack_snd_check`, Linux 4.18+): after three immediate
    /// duplicate ACKs, later ones for the same `rcv_nxt` wait up to min(1 ms, 5 % of the
    /// RTT) or 44 segments. `false` (4.x): every out-of-order segment is ACKed at once.
    pub sack_compression: bool,
    /// An out-of-order segment puts the receiver in quick-ACK mode (`tcp_data_queue`,
    /// before 4.18), so that the segments after a loss are ACKed one by one; `false`
    /// (4.18+): it does not, and the segment that fills the last hole is ACKed at once
    /// (`ICSK_ACK_NOW`) instead.
    pub ofo_quickack: bool,
    /// `skb->truesize` of one received full-size segment: the memory it costs in the
    /// receive buffer, which sets how much window a buffer gives (`scaling_ratio`). 2304 B:
    /// a 1500-byte packet from a TUN device on x86_64 (the kernel backend's device).
    pub rcv_truesize_bytes: u32,
    /// The three-way handshake: data follows SYN, SYN-ACK and ACK, and the SYN-ACK's RTT
    /// is the connection's first sample (srtt, RTO, min RTT), as in Linux. `false` is an
    /// idealisation: data at the start with the initial window and no RTT sample.
    pub handshake: bool,
    /// The sending host's `net.ipv4.tcp_ecn` (`tcp/ecn.rs`): 0 never uses ECN, 1 asks for
    /// it on the SYN (and accepts it when asked), 2 (Linux's default) only accepts it when
    /// the peer asks. An algorithm that needs ECN (DCTCP) asks whatever this says. Linux's
    /// Accurate ECN values (3, 4, 5) are not modelled.
    pub ecn: u8,
    /// The receiving host's `net.ipv4.tcp_ecn`: 0 refuses ECN (unless the receiver's
    /// algorithm needs it), 1 or 2 (default) accept it when the SYN asks.
    pub ecn_receiver: u8,
    /// The sending host's `net.ipv4.tcp_ecn_fallback` (default on): a retransmitted SYN no
    /// longer asks for ECN (RFC 3168 section 6.1.1.1), so a path that drops ECN-setup SYNs
    /// still connects, without ECN.
    pub ecn_fallback: bool,
    /// The application's wake-up latency, from the flow's start to connect() and from the
    /// handshake's end to its first write (`host.rs`): `kernel` (measured on ccfair's kernel
    /// backend) or `none` (an idealisation: flows that start together start in lock-step).
    pub app_latency: crate::host::Latency,
    /// The hosts' turnaround for every packet they send in reaction to a packet or a timer
    /// (`host.rs`): `kernel` (measured on ccfair's kernel backend), `none` (an
    /// idealisation: exact phase-locked timing, prone to phase effects), or a testbed's own
    /// measured quantiles, `{ measured = { receiver_us = [...], sender_us = [...] } }`.
    pub host_latency: crate::host::Latency,
}

/// A receive-buffer setting (`TcpOptions::rmem`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "must be \"fit\", \"linux\" or three byte counts [min, default, max]"
)]
pub enum Rmem {
    /// `"fit"` or `"linux"`.
    Named(RmemName),
    /// `tcp_rmem` as three numbers of bytes: min, default, max.
    Bytes([u64; 3]),
}

/// The named settings of `rmem` and `wmem`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RmemName {
    /// Large enough that no window limits a flow (see `TcpOptions::rmem`).
    Fit,
    /// Linux's stock sysctl.
    Linux,
}

/// A send-buffer setting (`TcpOptions::wmem`): the same forms as `Rmem`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "wmem: must be \"fit\", \"linux\" or three byte counts [min, default, max]"
)]
pub enum Wmem {
    /// `"fit"` or `"linux"`.
    Named(RmemName),
    /// `tcp_wmem` as three numbers of bytes: min, default, max.
    Bytes([u64; 3]),
}

/// TSO deferral (`TcpOptions::tso_defer`): on (Linux 6.18's rule), off, or the 4.x rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TsoDefer {
    /// No deferral (`false`).
    Off,
    /// Linux 6.18 (`true`).
    Linux,
    /// Linux 4.13/4.15 (`"linux-4.x"`).
    Linux4x,
}

impl Serialize for TsoDefer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            TsoDefer::Off => s.serialize_bool(false),
            TsoDefer::Linux => s.serialize_bool(true),
            TsoDefer::Linux4x => s.serialize_str("linux-4.x"),
        }
    }
}

impl<'de> Deserialize<'de> for TsoDefer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = TsoDefer;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true, false or \"linux-4.x\"")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<TsoDefer, E> {
                Ok(if v { TsoDefer::Linux } else { TsoDefer::Off })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<TsoDefer, E> {
                match v {
                    "linux-4.x" => Ok(TsoDefer::Linux4x),
                    _ => Err(E::invalid_type(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// TCP's own pacer (`TcpOptions::pacer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pacer {
    /// Earliest departure time (Linux 4.20+).
    #[default]
    #[serde(rename = "linux-6.18")]
    Linux618,
    /// A timer per skb (Linux 4.13 to 4.19).
    #[serde(rename = "linux-4.x")]
    Linux4x,
}

/// PRR's rule below ssthresh (`TcpOptions::prr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Prr {
    /// Linux 5.19+ (`"linux-6.18"`): `max(prr_delivered - prr_out, newly acked)`, plus one when
    /// `snd_una` advanced and nothing was newly lost.
    #[default]
    #[serde(rename = "linux-6.18")]
    Linux618,
    /// Linux 4.x (`"linux-4.x"`): plus one only when retransmitted data was acknowledged and no
    /// retransmission was lost, else packet conservation.
    #[serde(rename = "linux-4.x")]
    Linux4x,
}

/// The tail loss probe's schedule (`TcpOptions::tlp_schedule`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TlpSchedule {
    /// Linux 6.18: Open or CWR; 2 srtt + 2 ms.
    #[default]
    #[serde(rename = "linux-6.18")]
    Linux618,
    /// Linux 4.15: Open only; 2 srtt + 2 jiffies.
    #[serde(rename = "linux-4.15")]
    Linux415,
    /// Linux 4.13: Open only; max(2 srtt, 10 ms).
    #[serde(rename = "linux-4.13")]
    Linux413,
}

/// The undo rules of a kernel generation (`TcpOptions::undo_rules`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum UndoRules {
    /// Linux 6.18: a loss probe in flight counts in `undo_retrans`; a stale retransmission
    /// stamp is cleared at recovery entry; no stamp means delayed, except without SACK at or
    /// past `high_seq`.
    #[default]
    #[serde(rename = "linux-6.18")]
    Linux618,
    /// Linux 4.13/4.15: `undo_retrans = retrans_out ? : -1`; no stamp means delayed.
    #[serde(rename = "linux-4.x")]
    Linux4x,
}

/// The receiver's window model (`TcpOptions::rcv_window`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RcvWindow {
    /// Linux 6.18: window from the measured payload/truesize ratio, `tcp_rcvbuf_grow`.
    #[default]
    #[serde(rename = "linux-6.18")]
    Linux618,
    /// Linux 4.13/4.15: half the buffer (`tcp_adv_win_scale` 1), 4.x autotuning.
    #[serde(rename = "linux-4.x")]
    Linux4x,
}

/// TCP segmentation offload (`TcpOptions::tso`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tso {
    /// One segment per skb, paced segment by segment (the default idealisation).
    Off,
    /// `tcp_tso_autosize`: skbs of about 1 ms of data at the pacing rate.
    Linux,
}

impl Default for TcpOptions {
    fn default() -> Self {
        TcpOptions {
            mss: 1448,
            init_cwnd: 10,
            hz: 1000,
            rto_min_ms: 200,
            rto_init_ms: 1000,
            delack_ms: 40,
            quickacks: 16,
            sack: true,
            rack: true,
            tlp: true,
            frto: true,
            undo: true,
            reordering: 3,
            fq_pacing: false,
            pacing_ss_ratio: 200,
            pacing_ca_ratio: 120,
            min_rtt_wlen_s: 300,
            rmem: Rmem::Named(RmemName::Fit),
            wmem: Wmem::Named(RmemName::Fit),
            tso: Tso::Off,
            tso_defer: TsoDefer::Linux,
            tso_min_rtt_bonus: true,
            pacer: Pacer::Linux618,
            prr: Prr::Linux618,
            tlp_schedule: TlpSchedule::Linux618,
            undo_rules: UndoRules::Linux618,
            rcv_window: RcvWindow::Linux618,
            sack_compression: true,
            ofo_quickack: false,
            rcv_truesize_bytes: 2304,
            handshake: true,
            ecn: 2,
            ecn_receiver: 2,
            ecn_fallback: true,
            app_latency: crate::host::Latency::Kernel,
            host_latency: crate::host::Latency::Kernel,
        }
    }
}

impl TcpOptions {
    fn rmem_triple(&self) -> Option<[u64; 3]> {
        match self.rmem {
            Rmem::Bytes(b) => Some(b),
            Rmem::Named(_) => None,
        }
    }

    /// Parse a table of options (a JSON object; options left out take Linux's defaults)
    /// and check it; the error names the option (`rmem`, `rmem[2]`).
    pub fn parse(table: &Value) -> Result<TcpOptions, ParamError> {
        let defaults = serde_json::to_value(TcpOptions::default()).expect("options serialise");
        let keys: Vec<&str> = match &defaults {
            Value::Object(map) => map.keys().map(String::as_str).collect(),
            _ => unreachable!("TcpOptions serialises as a table"),
        };
        let options: TcpOptions = ccfair_cc::params::parse_table(table, &keys)?;
        options.validate()?;
        Ok(options)
    }

    /// Range checks that serde cannot express; the error names the option.
    pub fn validate(&self) -> Result<(), ParamError> {
        self.check_bounds()?;
        self.check_sizes()
    }

    /// Every option's lower and upper bound.
    fn check_bounds(&self) -> Result<(), ParamError> {
        if let crate::host::Latency::Measured { .. } = self.app_latency {
            return Err(ParamError::new(
                "app_latency",
                "takes \"kernel\" or \"none\"; measured tables are for host_latency",
            ));
        }
        self.host_latency
            .check()
            .map_err(|e| ParamError::new("host_latency", e.to_string()))?;
        let positive = [
            ("mss", self.mss as u64),
            ("init_cwnd", self.init_cwnd as u64),
            ("hz", self.hz as u64),
            ("rto_min_ms", self.rto_min_ms as u64),
            ("rto_init_ms", self.rto_init_ms as u64),
            ("delack_ms", self.delack_ms as u64),
            ("reordering", self.reordering as u64),
            ("pacing_ss_ratio", self.pacing_ss_ratio as u64),
            ("pacing_ca_ratio", self.pacing_ca_ratio as u64),
            ("min_rtt_wlen_s", self.min_rtt_wlen_s as u64),
        ];
        for (name, v) in positive {
            if v == 0 {
                return Err(ParamError::new(name, "0 must be > 0"));
            }
        }
        // Upper bounds: Linux's own where it has one, else far beyond any real setting; they
        // keep the engine's integer arithmetic in range whatever the input.
        let at_most = [
            ("init_cwnd", self.init_cwnd as u64, i32::MAX as u64), // tcp_snd_cwnd_set
            ("rto_min_ms", self.rto_min_ms as u64, 120_000),       // TCP_RTO_MAX
            ("rto_init_ms", self.rto_init_ms as u64, 120_000),
            ("delack_ms", self.delack_ms as u64, 120_000),
            ("quickacks", self.quickacks as u64, 65_535),
            ("pacing_ss_ratio", self.pacing_ss_ratio as u64, 1000), // sysctl range
            ("pacing_ca_ratio", self.pacing_ca_ratio as u64, 1000),
            ("min_rtt_wlen_s", self.min_rtt_wlen_s as u64, 86_400), // sysctl range
            (
                "rcv_truesize_bytes",
                self.rcv_truesize_bytes as u64,
                1 << 20,
            ),
        ];
        for (name, v, most) in at_most {
            if v > most {
                return Err(ParamError::new(
                    name,
                    format!("{v} is above the maximum {most}"),
                ));
            }
        }
        for (name, v) in [("ecn", self.ecn), ("ecn_receiver", self.ecn_receiver)] {
            match v {
                0..=2 => {}
                3..=5 => {
                    return Err(ParamError::new(
                        name,
                        format!(
                            "{v} asks for Accurate ECN, which ccfair does not model; \
                             0 (off), 1 (request and accept) or 2 (accept only)"
                        ),
                    ))
                }
                _ => {
                    return Err(ParamError::new(
                        name,
                        format!(
                            "{v} is not a net.ipv4.tcp_ecn value; 0 (off), 1 (request and \
                             accept) or 2 (accept only)"
                        ),
                    ))
                }
            }
        }
        if self.mss as u64 + DATA_HEADER_BYTES as u64 > 65_535 {
            return Err(ParamError::new(
                "mss",
                format!("{} makes packets above 65535 bytes", self.mss),
            ));
        }
        if self.hz > 1_000_000 || 1_000_000_000 % self.hz as u64 != 0 {
            return Err(ParamError::new(
                "hz",
                format!("{} must divide 1e9 and be at most 1e6", self.hz),
            ));
        }
        Ok(())
    }

    /// Buffer and packet sizes that must agree with each other, and the reordering bound.
    fn check_sizes(&self) -> Result<(), ParamError> {
        // tcp_rmem is an int sysctl of at least 1 (proc_dointvec_minmax, extra1 = SYSCTL_ONE,
        // net/ipv4/sysctl_net_ipv4.c); ccfair also wants the three in order, as the kernel
        // backend writes them.
        let buffers = [
            ("rmem", self.rmem_triple()),
            (
                "wmem",
                match self.wmem {
                    Wmem::Bytes(b) => Some(b),
                    Wmem::Named(_) => None,
                },
            ),
        ];
        for (name, triple) in buffers {
            if let Some([min, default, max]) = triple {
                if min == 0 || min > default || default > max || max > i32::MAX as u64 {
                    return Err(ParamError::new(
                        name,
                        format!(
                            "[{min}, {default}, {max}] must be 0 < min <= default <= max <= \
                             2147483647 (tcp_{name} is an int sysctl)"
                        ),
                    ));
                }
            }
        }
        // An skb's truesize covers the packet it holds, so the payload/truesize ratio stays
        // below 1 (Linux's scaling_ratio, a u8 in 1/256, tcp_measure_rcv_mss); the upper
        // bound is far beyond any real skb (a 64 KiB packet's is about 66 KiB).
        let packet_bytes = self.mss as u64 + DATA_HEADER_BYTES as u64;
        if (self.rcv_truesize_bytes as u64) < packet_bytes {
            return Err(ParamError::new(
                "rcv_truesize_bytes",
                format!(
                    "{} is below the full-size packet it holds (mss + 52 = {packet_bytes} \
                     bytes); set it with the mss (2304 for 1500-byte packets)",
                    self.rcv_truesize_bytes
                ),
            )
            .related_to("mss"));
        }
        // sch_fq paces by its own rule in 4.x (qdisc_pkt_len per packet, from its dequeue
        // time), which ccfair does not model.
        if self.fq_pacing && self.pacer == Pacer::Linux4x {
            return Err(ParamError::new(
                "pacer",
                "\"linux-4.x\" models TCP's own pacer; the 4.x fq qdisc's pacing \
                 (fq_pacing = true) is not modelled",
            )
            .related_to("fq_pacing"));
        }
        if self.reordering > 300 {
            return Err(ParamError::new(
                "reordering",
                format!("{} above tcp_max_reordering (300)", self.reordering),
            ));
        }
        Ok(())
    }
}

/// Longest run: 2^62 ns (146 years), so that times plus delays and timeouts stay in u64.
pub const MAX_TIME_NS: u64 = 1 << 62;
/// Longest one-way link delay: 2^40 ns (about 18 minutes); paths of up to 65535 hops stay
/// far within u64.
pub const MAX_DELAY_NS: u64 = 1 << 40;

/// Seed stream tag of the flows' start-time jitter (see `world::STREAM_FLOW`).
pub const STREAM_START: u64 = 3;

/// Bytes on the wire of a full data segment: IPv4 (20) + TCP (20) + timestamps option (12)
/// + payload. With MSS 1448 this is 1500 B.
pub const DATA_HEADER_BYTES: u32 = 52;
/// Bytes on the wire of a pure ACK without SACK blocks: IPv4 + TCP + timestamps.
pub const ACK_BYTES: u32 = 52;
/// Extra bytes of a SACK option: 2 NOPs + kind + length, then 8 bytes per block.
pub const SACK_OPTION_BASE_BYTES: u32 = 4;
/// Bytes per SACK block (two 32-bit edges).
pub const SACK_BLOCK_BYTES: u32 = 8;

impl RunSpec {
    /// Structural checks the Python layer already makes; repeated here so that the engine
    /// never panics on a hand-written resolved spec. Errors name the field path.
    pub fn check(&self) -> Result<(), SimError> {
        self.check_window()?;
        for (i, l) in self.links.iter().enumerate() {
            self.check_link(i, l)?;
        }
        for (i, f) in self.flows.iter().enumerate() {
            self.check_flow(i, f)?;
        }
        for &f in &self.trace_flows {
            if f >= self.flows.len() {
                return Err(SimError::spec(
                    "trace_flows",
                    format!("flow {f} does not exist"),
                ));
            }
        }
        Ok(())
    }

    /// The duration, the sampling interval and the measurement window.
    fn check_window(&self) -> Result<(), SimError> {
        if self.duration_ns == 0 {
            return Err(SimError::spec("duration_ns", "must be > 0"));
        }
        if self.duration_ns > MAX_TIME_NS {
            return Err(SimError::spec(
                "duration_ns",
                format!("{} is above the maximum 2^62 ns", self.duration_ns),
            ));
        }
        if self.sample_interval_ns == 0 || self.sample_interval_ns > self.duration_ns {
            return Err(SimError::spec(
                "sample_interval_ns",
                "must be > 0 and at most the duration",
            ));
        }
        if self.measure_end_ns <= self.measure_start_ns || self.measure_end_ns > self.duration_ns {
            return Err(SimError::spec(
                "measure_end_ns",
                format!(
                    "window [{}, {}) ns must be non-empty and within the duration {} ns",
                    self.measure_start_ns, self.measure_end_ns, self.duration_ns
                ),
            ));
        }
        Ok(())
    }

    /// Link `i`: two different existing nodes, a rate, a delay and a buffer in range, loss
    /// probabilities in [0, 1).
    fn check_link(&self, i: usize, l: &LinkSpec) -> Result<(), SimError> {
        let n_nodes = self.nodes.len();
        if l.a >= n_nodes || l.b >= n_nodes || l.a == l.b {
            return Err(SimError::spec(
                format!("links[{i}]"),
                format!("bad endpoints {} {}", l.a, l.b),
            ));
        }
        if l.rate_bps == 0 {
            return Err(SimError::spec(
                format!("links[{i}].rate_bps"),
                "must be > 0",
            ));
        }
        if l.delay_ns > MAX_DELAY_NS {
            return Err(SimError::spec(
                format!("links[{i}].delay_ns"),
                format!("{} is above the maximum 2^40 ns (1099 s)", l.delay_ns),
            ));
        }
        if l.buffer_pkts == 0 {
            return Err(SimError::spec(
                format!("links[{i}].buffer_pkts"),
                "must be >= 1",
            ));
        }
        for (name, p) in [("loss_ab", l.loss_ab), ("loss_ba", l.loss_ba)] {
            if !(0.0..1.0).contains(&p) {
                return Err(SimError::spec(
                    format!("links[{i}].{name}"),
                    format!("{p} not in [0, 1)"),
                ));
            }
        }
        l.qdisc_config().map_err(|e| {
            let at = if e.key.is_empty() {
                format!("links[{i}].qdisc")
            } else {
                format!("links[{i}].qdisc.{}", e.key)
            };
            SimError::spec(at, e.message)
        })?;
        Ok(())
    }

    /// Flow `i`: endpoints, both routes, size, times and TCP options.
    fn check_flow(&self, i: usize, f: &FlowSpec) -> Result<(), SimError> {
        let n_nodes = self.nodes.len();
        if f.src >= n_nodes || f.dst >= n_nodes || f.src == f.dst {
            return Err(SimError::spec(format!("flows[{i}]"), "bad endpoints"));
        }
        self.check_route(i, "path", &f.path, f.src, f.dst)?;
        self.check_route(i, "ack_path", &f.ack_path, f.dst, f.src)?;
        if f.size_bytes == Some(0) {
            return Err(SimError::spec(
                format!("flows[{i}].size_bytes"),
                "must be > 0",
            ));
        }
        if f.start_ns.saturating_add(f.start_jitter_ns) >= self.duration_ns {
            return Err(SimError::spec(
                format!("flows[{i}].start_ns"),
                "start_ns + start_jitter_ns is not before the end of the run",
            ));
        }
        if let Some(stop) = f.stop_ns {
            if stop > self.duration_ns {
                return Err(SimError::spec(
                    format!("flows[{i}].stop_ns"),
                    "is beyond the duration",
                ));
            }
        }
        f.tcp
            .validate()
            .map_err(|e| SimError::spec(format!("flows[{i}].tcp.{}", e.key), e.message))
    }

    /// Flow `i`'s route `what` ("path" or "ack_path"): a chain of existing channels from
    /// node `from` to node `to`, at most 65535 hops.
    fn check_route(
        &self,
        i: usize,
        what: &str,
        path: &[usize],
        from: usize,
        to: usize,
    ) -> Result<(), SimError> {
        let at_path = || format!("flows[{i}].{what}");
        if path.is_empty() {
            return Err(SimError::spec(at_path(), "empty"));
        }
        if path.len() > u16::MAX as usize {
            return Err(SimError::spec(at_path(), "longer than 65535 hops"));
        }
        let mut at = from;
        for &ch in path {
            if ch >= 2 * self.links.len() {
                return Err(SimError::spec(
                    at_path(),
                    format!("channel {ch} does not exist"),
                ));
            }
            let (s, d) = self.channel_ends(ch);
            if s != at {
                return Err(SimError::spec(
                    at_path(),
                    format!("channel {ch} does not start at node {at}"),
                ));
            }
            at = d;
        }
        if at != to {
            return Err(SimError::spec(
                at_path(),
                format!("ends at node {at}, not {to}"),
            ));
        }
        Ok(())
    }

    /// Each flow's receive buffer setting, `tcp_rmem` (min, default, max bytes), with
    /// `"fit"` resolved per host as the kernel backend sets its namespace: four times the
    /// largest BDP plus path buffers of the flows the host takes part in, at least 8 MiB,
    /// at most 1 GiB (`tcp/rcvbuf.rs`).
    pub fn rmem_bytes(&self) -> Vec<[u64; 3]> {
        let fit = self.fit_socket_buffer_bytes();
        self.flows
            .iter()
            .map(|f| crate::tcp::rcvbuf::rmem_bytes(f.tcp.rmem, fit[f.dst]))
            .collect()
    }

    /// Each flow's send buffer setting, `tcp_wmem` (min, default, max bytes), with `"fit"`
    /// resolved per host as the kernel backend sets its namespace (the sender's fitting
    /// maximum, [`RunSpec::fit_socket_buffer_bytes`]; the simulator's `"fit"` sender is never
    /// limited at all, `tcp/sender/sndbuf.rs`).
    pub fn wmem_bytes(&self) -> Vec<[u64; 3]> {
        let fit = self.fit_socket_buffer_bytes();
        self.flows
            .iter()
            .map(|f| {
                crate::tcp::sender::wmem_bytes(f.tcp.wmem).unwrap_or([4096, 16_384, fit[f.src]])
            })
            .collect()
    }

    /// Per node: the socket buffer maximum that no flow of the node's can fill, four times
    /// (bottleneck rate x round-trip propagation time + the bytes of every buffer on the
    /// path) for the most demanding flow, within [8 MiB, 1 GiB].
    pub fn fit_socket_buffer_bytes(&self) -> Vec<u64> {
        let mut need = vec![0u64; self.nodes.len()];
        for f in &self.flows {
            let links = |path: &[usize]| {
                path.iter()
                    .map(|&ch| &self.links[ch / 2])
                    .collect::<Vec<_>>()
            };
            let fwd = links(&f.path);
            let rtt_ns: u64 = fwd
                .iter()
                .chain(links(&f.ack_path).iter())
                .map(|l| l.delay_ns)
                .sum();
            let rate = fwd.iter().map(|l| l.rate_bps).min().unwrap_or(0);
            let bdp = (rate as u128 * rtt_ns as u128 / 8_000_000_000) as u64;
            let buffers: u64 = fwd.iter().map(|l| l.buffer_pkts as u64 * 1500).sum();
            for node in [f.src, f.dst] {
                need[node] = need[node].max(bdp.saturating_add(buffers));
            }
        }
        need.iter()
            .map(|n| n.saturating_mul(4).clamp(8 << 20, 1 << 30))
            .collect()
    }

    /// Each flow's start time: `start_ns` plus a uniform offset in `[0, start_jitter_ns]`
    /// from the stream (seed, STREAM_START, flow index), so adding a flow changes no other
    /// flow's start. Both backends start flows at these times.
    pub fn flow_starts_ns(&self) -> Vec<u64> {
        self.flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                if f.start_jitter_ns == 0 {
                    return f.start_ns;
                }
                let seed = ccfair_cc::rng::derive_seed(self.seed, &[STREAM_START, i as u64]);
                let mut rng = ccfair_cc::rng::Rng::new(seed);
                f.start_ns + rng.next_u64() % (f.start_jitter_ns + 1)
            })
            .collect()
    }

    /// (from node, to node) of a channel.
    pub fn channel_ends(&self, ch: usize) -> (usize, usize) {
        let l = &self.links[ch / 2];
        if ch.is_multiple_of(2) {
            (l.a, l.b)
        } else {
            (l.b, l.a)
        }
    }
}
