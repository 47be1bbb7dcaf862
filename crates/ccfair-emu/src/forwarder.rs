//! The forwarder: every link of the scenario, in one thread, against the wall clock.
//!
//! It holds the TUN device of every host and the simulator's own link model
//! (`ccfair_sim::link::Channel`, one per link direction) and event queue
//! (`ccfair_sim::event::EventQueue`). A packet a host's kernel sends is read from its TUN
//! device, classified to its flow by address and port, and offered to the first channel of
//! the flow's route (data path or ACK path) at the time it was read. The channels decide,
//! exactly as in the simulator, when it finishes serialising, whether it is dropped
//! (drop-tail buffer counting the packet in service, or random loss on the wire) and when it
//! reaches the far end; the forwarder only executes those decisions when the wall clock gets
//! there, and writes the packet to the destination host's TUN device after the last hop.
//! This is the Mahimahi idea (one emulator process per link) generalised to any topology
//! with one event heap for all hops.
//!
//! A link with a queue discipline (`queue` = codel, fq_codel, pie, red) runs the
//! simulator's own (`ccfair_sim::qdisc`, through `Channel::qdisc_offer`): the forwarder
//! wakes it when a dequeue is due, frees what it drops, and sets CE in the IP header of a
//! packet it marked (checksum updated, `ipv4::set_ce`) as the packet leaves the last link.
//!
//! Model time is `CLOCK_MONOTONIC` in ns. A drop-tail channel fixes a packet's departure
//! when it accepts it, so its only packet events are arrivals at the far end of a channel;
//! a channel with a queue discipline adds a wake-up per departure while packets wait. Events run
//! in time order and never early; the difference between the wall clock and an event's
//! scheduled time is its lateness, which the forwarder records (`lateness`) as its main
//! self-check.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use ccfair_cc::rng::{derive_seed, Rng};
use ccfair_sim::event::{Event, EventQueue};
use ccfair_sim::link::{Channel, ChannelCounters, Enqueued, OnWire, Service};
use ccfair_sim::packet::Ecn;
use ccfair_sim::qdisc::{DropCause, Fate};
use ccfair_sim::record::{self, LinkSamples};
use ccfair_sim::table::Table;
use ccfair_sim::trace::{Trace, TraceEvent, TraceRow};
use ccfair_sim::world::{build_channels_at, flow_key};
use serde::Serialize;

use crate::config::EmuConfig;
use crate::error::EmuError;
use crate::ipv4;
use crate::lateness::{Histogram, Summary};
use crate::sys;

/// Stall episodes listed in the self-check record (all are counted).
const MAX_STALLS_LISTED: usize = 50;

/// Largest packet a TUN read may return with MTU 1500 and no packet-information header; the
/// slot size keeps a margin so that a larger packet is detected rather than truncated.
const SLOT_BYTES: usize = 2048;
/// The forwarder wakes at least this often to notice the start time and a stop request.
const MAX_SLEEP_NS: u64 = 2_000_000;

/// What is shared between the thread that drives a run and its worker threads.
#[derive(Debug, Default)]
pub struct Control {
    stop: AtomicBool,
    /// CLOCK_MONOTONIC time of t = 0 of the run; 0 until it is known.
    t0: AtomicU64,
    /// The first error of a worker thread (which also stops the others).
    failure: Mutex<Option<EmuError>>,
}

impl Control {
    /// Ask every thread of the run to stop (e.g. on SIGINT).
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// A worker failed: remember the first error and stop the others.
    pub fn fail(&self, error: EmuError) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            *f = Some(error);
        }
        drop(f);
        self.request_stop();
    }

    /// The first failure a thread recorded, if any: the run's error.
    pub fn failure(&self) -> Option<EmuError> {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A stop was requested (or a thread failed): every thread winds down.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Fix t = 0 of the run (`CLOCK_MONOTONIC`, ns); the threads start their schedules from it.
    pub fn set_t0(&self, t0: u64) {
        self.t0.store(t0, Ordering::SeqCst);
    }

    /// t = 0 of the run (`CLOCK_MONOTONIC`, ns), once fixed.
    pub fn t0(&self) -> Option<u64> {
        match self.t0.load(Ordering::SeqCst) {
            0 => None,
            t => Some(t),
        }
    }
}

/// A packet inside the forwarder: a handle to its bytes plus its place on its route.
#[derive(Clone, Copy, Debug)]
struct Pkt {
    slot: u32,
    flow: u32,
    hop: u16,
    ack: bool,
    /// Carries TCP payload (data segments; not SYN, FIN or pure ACKs).
    payload: bool,
    /// A SYN or SYN-ACK (the handshake whose RTT Linux samples first).
    syn: bool,
    /// Data: the sequence number after its payload; ACKs: the acknowledgment number.
    seq_mark: u32,
    /// For traces: the packet's kind and its position in the flow's byte stream (data: the
    /// payload's first byte; ACKs: the acknowledgment), from the flow's ISN on.
    kind: &'static str,
    seq_bytes: u64,
    /// ACKs and SYN-ACK: the receive window advertised, bytes (for traces).
    window_bytes: u32,
    bytes: u32,
    /// The IP header's ECN field; CE once a queue discipline marked it (written into the
    /// header as the packet leaves the last link).
    ecn: Ecn,
}

impl OnWire for Pkt {
    fn wire_bytes(&self) -> u32 {
        self.bytes
    }

    fn mark_ce(&mut self) {
        self.ecn = Ecn::Ce;
    }
}

struct Route {
    path: Vec<u32>,
    ack_path: Vec<u32>,
    /// Host indices (into the TUN list) of the flow's sender and receiver.
    src_host: usize,
    dst_host: usize,
}

/// Packet counts of one flow as the forwarder saw them, from t = 0 of the run on.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct FlowCounts {
    /// Data segments (with payload) read from the sender's TUN device.
    pub data_in: u64,
    /// Data segments written to the receiver's TUN device.
    pub data_delivered: u64,
    /// Data segments dropped by a link (its buffer, queue discipline or random loss).
    pub data_dropped: u64,
    /// Packets of the receiver (ACKs) read from its TUN device.
    pub acks_in: u64,
    /// The receiver's packets written to the sender's TUN device.
    pub acks_delivered: u64,
    /// The receiver's packets dropped by a link.
    pub acks_dropped: u64,
    /// SYNs read from the sender's TUN device (more than 1: the SYN was retransmitted).
    pub syns_in: u64,
    /// When the first SYN entered the network (ns after t = 0).
    pub syn_in_ns: Option<u64>,
    /// When the first SYN-ACK reached the sender host (model time, ns after t = 0).
    pub synack_delivered_ns: Option<u64>,
    /// When the first data segment entered the network (ns after t = 0).
    pub first_data_in_ns: Option<u64>,
}

/// Achieved rate of a channel on the wall clock. Packets the channel serialised back to back
/// reach the far end exactly one serialisation time apart in model time; over every such
/// pair after t = 0, the bytes of the second packet over the wall-clock time between the two
/// arrivals as the forwarder executed them. Equal to the configured rate when the forwarder
/// keeps up; lower when it falls behind its schedule.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ChannelRate {
    /// The link's index in the spec.
    pub link: usize,
    /// `"ab"` or `"ba"`.
    pub direction: &'static str,
    /// The configured rate, bit/s.
    pub rate_bps: u64,
    /// Total busy time measured (model time, s).
    pub busy_s: f64,
    /// The rate achieved on the wall clock, bit/s.
    pub achieved_bps: f64,
}

/// The last arrival executed on a channel: model time and wall-clock time.
#[derive(Clone, Copy, Default)]
struct LastArrival {
    t: u64,
    wall: u64,
}

#[derive(Clone, Copy, Default)]
struct RateAcc {
    model_ns: u64,
    wall_ns: u64,
    bytes: u64,
}

/// Everything the forwarder reports after a run.
pub struct ForwarderReport {
    /// The per-link time series (the simulator's `links` table).
    pub links: Table,
    /// Per-packet trace of the flows in `RunSpec::trace_flows`, if any.
    pub trace: Option<Table>,
    /// The per-link-direction summary (the simulator's `link_summary` table).
    pub link_summary: Table,
    /// Per flow, the packets the forwarder saw.
    pub flows: Vec<FlowCounts>,
    /// The forwarder's measurements of itself.
    pub stats: ForwarderStats,
    /// Packets in the network at the end, per flow: (data, acks).
    pub in_network: Vec<(u64, u64)>,
}

/// The forwarder's self-checks (docs/kernel.md, "Self-checks"), part of the run's
/// `SelfCheck`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ForwarderStats {
    /// Lateness of every packet event (arrival at the far end of a channel) after t = 0.
    pub lateness: Summary,
    /// Lateness of the writes to the receiving host's TUN device (the last hop).
    pub delivery_lateness: Summary,
    /// Lateness of the handshakes' packet events (SYN and SYN-ACK on every hop): their RTT
    /// is Linux's first sample, which enters its min RTT.
    pub handshake_lateness: Summary,
    /// Episodes in which packet events ran more than `stall_threshold_ns` late (a run of
    /// consecutive late events counts once), and the threshold used (us).
    pub stalls: u64,
    /// The stall threshold used, µs (`EmuOptions::stall_threshold_us`).
    pub stall_threshold_us: f64,
    /// The first stall episodes (at most `MAX_STALLS_LISTED`): when each began (s after
    /// t = 0, model time) and its largest lateness (ms), to tell slow start from steady state.
    pub stall_episodes: Vec<(f64, f64)>,
    /// How fast the hosts react (see `crate::turnaround`): receivers from a data segment
    /// delivered to the ACK it triggers, senders of unpaced flows from an ACK delivered to
    /// the data it releases, as quantiles.
    pub receiver_turnaround: crate::lateness::Quantiles,
    /// Senders' turnaround quantiles (unpaced flows only).
    pub sender_turnaround: crate::lateness::Quantiles,
    /// CPU time of the forwarder thread over the run's wall time. Includes the kernel's
    /// own receive processing of the packets it writes (TCP runs in the writer's context).
    pub cpu_frac: f64,
    /// Whether the forwarder runs under SCHED_FIFO as configured.
    pub realtime: bool,
    /// Achieved rate of every channel (NaN where nothing was measured).
    pub rates: Vec<ChannelRate>,
    /// Packets read that belong to no flow (dropped).
    pub unmatched_pkts: u64,
    /// Writes to a TUN device that failed (the packet is lost).
    pub write_errors: u64,
    /// Events the forwarder ran (packet events and wake-ups).
    pub events: u64,
    /// Packets that finished serialisation on a channel (one per packet per hop).
    pub packet_hops: u64,
    /// The most events pending at once.
    pub peak_heap_len: usize,
    /// The most packet slots in use at once (2 KiB each).
    pub peak_slots: usize,
}

/// The forwarder: the run's links as the simulator's channels, the hosts' TUN devices,
/// and the packets in between (see the module documentation).
pub struct Forwarder {
    channels: Vec<Channel<Pkt>>,
    queue: EventQueue,
    slots: Vec<[u8; SLOT_BYTES]>,
    lens: Vec<u16>,
    free: Vec<u32>,
    tuns: Vec<RawFd>,
    /// Which ready device is read first at each wake-up (see `read_ready`).
    read_turns: ReadTurns,
    routes: Vec<Route>,
    /// (receiver address, receiver port) -> flow.
    by_receiver: HashMap<(Ipv4Addr, u16), u32>,
    sample_interval_ns: u64,
    duration_ns: u64,
    measure_start_ns: u64,
    measure_end_ns: u64,
    /// The run's spec, for the link summaries (`ccfair_sim::record`).
    spec: ccfair_sim::spec::RunSpec,
    t0: Option<u64>,
    next_sample_k: u64,
    finished: bool,
    spin_ns: u64,
    // Measurements.
    counts: Vec<FlowCounts>,
    late_all: Histogram,
    late_delivery: Histogram,
    late_handshake: Histogram,
    /// Abort the run when a handshake packet is later than this (0: never).
    max_handshake_lateness_ns: u64,
    /// Set when a handshake packet exceeded `max_handshake_lateness_ns`: (lateness, flow).
    handshake_disturbed: Option<(u64, u32)>,
    stall_threshold_ns: u64,
    in_stall: bool,
    turnaround: crate::turnaround::Turnaround,
    /// Each flow's ISN and byte positions (for traces).
    streams: Vec<Stream>,
    trace: Option<Trace>,
    last_arrival: Vec<Option<LastArrival>>,
    rate_acc: Vec<RateAcc>,
    last_counters: Vec<ChannelCounters>,
    measure_start_counters: Vec<ChannelCounters>,
    measure_end_counters: Option<Vec<ChannelCounters>>,
    series: LinkSamples,
    cpu_at_t0: u64,
    stats: ForwarderStats,
}

impl Forwarder {
    /// Build the links of `cfg.spec` and the routes of its flows. `tuns[i]` is the TUN fd
    /// of `cfg.hosts[i]`.
    pub fn new(cfg: &EmuConfig, tuns: Vec<RawFd>) -> Result<Self, EmuError> {
        let spec = &cfg.spec;
        // Queue disciplines' timers count from now (the qdisc is created with the links).
        let mut channels: Vec<Channel<Pkt>> = build_channels_at(spec, sys::monotonic_ns());
        // The real-time path allocates no queue room while packets flow (as before the
        // simulator's channels stopped reserving their buffers).
        for ch in &mut channels {
            let room = ch.buffer_pkts.min(4096) as usize;
            ch.reserve(room);
        }
        if !spec.trace_flows.is_empty() {
            channels.iter_mut().for_each(Channel::trace_qdisc);
        }
        let host_index = |node: usize| cfg.hosts.iter().position(|h| h.node == node);
        let mut routes = Vec::new();
        let mut by_receiver = HashMap::new();
        for (i, f) in spec.flows.iter().enumerate() {
            let (Some(src_host), Some(dst_host)) = (host_index(f.src), host_index(f.dst)) else {
                return Err(EmuError::invalid(
                    format!("flows[{i}]"),
                    "an endpoint has no host",
                ));
            };
            routes.push(Route {
                path: f.path.iter().map(|&c| c as u32).collect(),
                ack_path: f.ack_path.iter().map(|&c| c as u32).collect(),
                src_host,
                dst_host,
            });
            by_receiver.insert((cfg.hosts[dst_host].addr, cfg.flows[i].port), i as u32);
        }
        let n_ch = channels.len();
        Ok(Forwarder {
            channels,
            queue: EventQueue::default(),
            slots: Vec::new(),
            lens: Vec::new(),
            free: Vec::new(),
            read_turns: ReadTurns::new(spec.seed, tuns.len()),
            tuns,
            routes,
            by_receiver,
            sample_interval_ns: spec.sample_interval_ns,
            duration_ns: spec.duration_ns,
            measure_start_ns: spec.measure_start_ns,
            measure_end_ns: spec.measure_end_ns,
            spec: spec.clone(),
            t0: None,
            next_sample_k: 1,
            finished: false,
            spin_ns: cfg.options.spin_ns,
            counts: vec![FlowCounts::default(); spec.flows.len()],
            late_all: Histogram::default(),
            late_delivery: Histogram::default(),
            late_handshake: Histogram::default(),
            max_handshake_lateness_ns: cfg.options.max_handshake_lateness_us * 1_000,
            handshake_disturbed: None,
            stall_threshold_ns: cfg.options.stall_threshold_us * 1_000,
            in_stall: false,
            // Paced flows (BBR and Copa, as Linux's module or ccfair's BPF program) send
            // from their pacing timer; only unpaced flows' data answers ACKs.
            turnaround: crate::turnaround::Turnaround::new(
                spec.flows
                    .iter()
                    .map(|f| !ccfair_cc::algorithm(&f.cca).is_ok_and(|a| a.paces()))
                    .collect(),
            ),
            streams: vec![Stream::default(); spec.flows.len()],
            trace: Trace::new(spec.flows.len(), &spec.trace_flows),
            last_arrival: vec![None; n_ch],
            rate_acc: vec![RateAcc::default(); n_ch],
            last_counters: vec![ChannelCounters::default(); n_ch],
            measure_start_counters: vec![ChannelCounters::default(); n_ch],
            measure_end_counters: None,
            series: LinkSamples::default(),
            cpu_at_t0: 0,
            stats: ForwarderStats::default(),
        })
    }

    /// Forward until the end of the run (t0 + duration) or a stop request.
    pub fn run(mut self, ctl: &Control, realtime: bool) -> ForwarderReport {
        self.stats.realtime = realtime;
        let mut pollfds: Vec<libc::pollfd> = self
            .tuns
            .iter()
            .map(|&fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // Which devices had packets at the last wake-up (allocated once, not per wake-up).
        let mut readable = vec![false; pollfds.len()];
        loop {
            if ctl.stopped() {
                break;
            }
            if self.t0.is_none() {
                if let Some(t0) = ctl.t0() {
                    self.begin(t0);
                }
            }
            let now = sys::monotonic_ns();
            self.run_due(now);
            if self.finished {
                break;
            }
            if let Some((late, flow)) = self.handshake_disturbed {
                ctl.fail(EmuError::HandshakeDisturbed {
                    flow,
                    late_us: late / 1_000,
                    bound_us: self.max_handshake_lateness_ns / 1_000,
                });
                break;
            }
            let timeout = match self.queue.peek_time() {
                Some(t) => t.saturating_sub(sys::monotonic_ns()).min(MAX_SLEEP_NS),
                None => MAX_SLEEP_NS,
            };
            let timeout = if timeout <= self.spin_ns { 0 } else { timeout };
            let ready = sys::ppoll(&mut pollfds, Some(timeout)).unwrap_or(0);
            if ready == 0 {
                continue;
            }
            let mut broken = None;
            for (host, pfd) in pollfds.iter_mut().enumerate() {
                readable[host] = pfd.revents & libc::POLLIN != 0;
                if !readable[host]
                    && pfd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0
                {
                    broken = Some(host);
                }
                pfd.revents = 0;
            }
            self.read_ready(&mut readable);
            if let Some(host) = broken {
                // The device went away under the run (its namespace was deleted?): polling
                // it again would return at once, forever.
                ctl.fail(EmuError::TunFailed { host });
                break;
            }
        }
        self.finish()
    }

    /// t = 0 is known: schedule the samples, the measurement window and the end.
    fn begin(&mut self, t0: u64) {
        self.t0 = Some(t0);
        self.cpu_at_t0 = sys::thread_cpu_ns();
        self.queue.push(
            t0 + self.sample_interval_ns.min(self.duration_ns),
            Event::Sample,
        );
        self.queue
            .push(t0 + self.measure_start_ns, Event::MeasureStart);
        self.queue.push(t0 + self.measure_end_ns, Event::MeasureEnd);
        for c in &mut self.channels {
            c.set_sojourn_window(t0 + self.measure_start_ns, t0 + self.measure_end_ns);
        }
        self.last_counters = self.counters_at(t0);
        self.measure_start_counters = self.last_counters.clone();
    }

    /// Every channel's counters at model time `t` (packets that departed by then count).
    fn counters_at(&mut self, t: u64) -> Vec<ChannelCounters> {
        self.channels
            .iter_mut()
            .map(|c| {
                c.advance(t);
                c.counters()
            })
            .collect()
    }

    fn in_run(&self, t: u64) -> bool {
        self.t0.is_some_and(|t0| t >= t0)
    }

    fn end_time(&self) -> Option<u64> {
        self.t0.map(|t0| t0 + self.duration_ns)
    }

    /// Execute every event due at or before `now`, in time order.
    fn run_due(&mut self, now: u64) {
        while let Some(t) = self.queue.peek_time() {
            if t > now {
                break;
            }
            if let Some(end) = self.end_time() {
                if t > end {
                    break;
                }
            }
            let (t, ev) = self.queue.pop().expect("peeked");
            self.stats.events += 1;
            self.stats.peak_heap_len = self.stats.peak_heap_len.max(self.queue.len() + 1);
            match ev {
                Event::ChannelArrival(ch) => {
                    let (pkt, next) = self.channels[ch as usize].arrival();
                    self.record_late(t, now, &pkt);
                    if self.trace.is_some() {
                        self.trace_row(t, ch as usize, &pkt, TraceEvent::Arrive);
                    }
                    if let Some(n) = next {
                        self.queue.push(n, Event::ChannelArrival(ch));
                    }
                    self.account_rate(ch as usize, t, now, pkt.bytes);
                    self.advance(t, now, pkt);
                }
                Event::ChannelWake(ch) => {
                    let service = self.channels[ch as usize].qdisc_serve(t);
                    self.after_qdisc(ch as usize, service);
                }
                Event::Sample => self.sample(t),
                Event::MeasureStart => self.measure_start_counters = self.counters_at(t),
                Event::MeasureEnd => self.measure_end_counters = Some(self.counters_at(t)),
                other => unreachable!("the forwarder never schedules {other:?}"),
            }
        }
        if let Some(end) = self.end_time() {
            if now >= end {
                self.finished = true;
            }
        }
    }

    fn record_late(&mut self, t: u64, now: u64, pkt: &Pkt) {
        if !self.in_run(t) {
            return;
        }
        let late = now.saturating_sub(t);
        self.late_all.record(late);
        let stalled = self.stall_threshold_ns > 0 && late > self.stall_threshold_ns;
        if stalled && !self.in_stall {
            self.stats.stalls += 1;
            if self.stats.stall_episodes.len() < MAX_STALLS_LISTED {
                let since_t0 = t.saturating_sub(self.t0.unwrap_or(t));
                self.stats
                    .stall_episodes
                    .push((since_t0 as f64 / 1e9, late as f64 / 1e6));
            }
        } else if stalled && self.stats.stalls as usize <= MAX_STALLS_LISTED {
            if let Some(last) = self.stats.stall_episodes.last_mut() {
                last.1 = last.1.max(late as f64 / 1e6);
            }
        }
        self.in_stall = stalled;
        if pkt.syn {
            self.late_handshake.record(late);
            if self.max_handshake_lateness_ns > 0
                && late > self.max_handshake_lateness_ns
                && self.handshake_disturbed.is_none()
            {
                self.handshake_disturbed = Some((late, pkt.flow));
            }
        }
    }

    /// Back-to-back arrivals measure the achieved rate (see [`ChannelRate`]).
    fn account_rate(&mut self, ch: usize, t: u64, now: u64, bytes: u32) {
        let in_run = self.in_run(t);
        let ser = self.channels[ch].serialisation_ns(bytes);
        if let Some(prev) = self.last_arrival[ch] {
            if in_run && self.in_run(prev.t) && t - prev.t == ser {
                let acc = &mut self.rate_acc[ch];
                acc.model_ns += ser;
                acc.wall_ns += now.saturating_sub(prev.wall);
                acc.bytes += bytes as u64;
            }
        }
        self.last_arrival[ch] = Some(LastArrival { t, wall: now });
    }

    /// A packet reached the far end of a channel at model time `t`: next hop, or the host.
    fn advance(&mut self, t: u64, now: u64, mut pkt: Pkt) {
        let route = &self.routes[pkt.flow as usize];
        let path = if pkt.ack {
            &route.ack_path
        } else {
            &route.path
        };
        if (pkt.hop as usize) + 1 < path.len() {
            pkt.hop += 1;
            let ch = path[pkt.hop as usize] as usize;
            self.offer(t, ch, pkt);
            return;
        }
        let host = if pkt.ack {
            route.src_host
        } else {
            route.dst_host
        };
        let slot = pkt.slot as usize;
        let len = self.lens[slot] as usize;
        if pkt.ecn == Ecn::Ce {
            // A queue marked it (a packet sent as CE stays as it is).
            ipv4::set_ce(&mut self.slots[slot][..len]);
        }
        match sys::write_packet(self.tuns[host], &self.slots[slot][..len]) {
            Ok(()) => {
                if let Some(t0) = self.t0.filter(|&t0| t >= t0) {
                    self.late_delivery.record(now.saturating_sub(t));
                    let c = &mut self.counts[pkt.flow as usize];
                    if pkt.ack && pkt.syn {
                        c.synack_delivered_ns.get_or_insert(t - t0);
                    } else if pkt.ack {
                        c.acks_delivered += 1;
                    } else if pkt.payload {
                        c.data_delivered += 1;
                    }
                    self.turnaround.delivered(
                        pkt.flow as usize,
                        pkt.ack,
                        pkt.payload,
                        pkt.seq_mark,
                        t,
                    );
                }
            }
            Err(_) => self.stats.write_errors += 1,
        }
        self.free.push(pkt.slot);
    }

    fn offer(&mut self, t: u64, ch: usize, pkt: Pkt) {
        if self.channels[ch].has_qdisc() {
            let key = flow_key(pkt.flow as usize, pkt.ack);
            let service = self.channels[ch].qdisc_offer(t, t, pkt, key, pkt.ecn);
            self.after_qdisc(ch, service);
            return;
        }
        let outcome = self.channels[ch].enqueue(t, pkt);
        if self.trace.is_some() {
            let event = match outcome {
                Enqueued::Accepted(_) | Enqueued::Qdisc(_) => TraceEvent::Enqueue,
                Enqueued::BufferFull(_) => TraceEvent::DropQueue,
                Enqueued::LostOnWire(_) => TraceEvent::DropWire,
            };
            self.trace_row(t, ch, &pkt, event);
        }
        match outcome {
            Enqueued::Accepted(at) => {
                self.stats.packet_hops += 1;
                if let Some(at) = at {
                    self.queue.push(at, Event::ChannelArrival(ch as u32));
                }
            }
            Enqueued::LostOnWire(p) => {
                self.stats.packet_hops += 1;
                self.drop_pkt(p);
            }
            Enqueued::BufferFull(p) => self.drop_pkt(p),
            Enqueued::Qdisc(_) => unreachable!("offered to the queue discipline above"),
        }
    }

    /// Schedule what a queue discipline asks for and free what it dropped.
    fn after_qdisc(&mut self, ch: usize, service: Service) {
        if let Some(at) = service.arrival {
            self.queue.push(at, Event::ChannelArrival(ch as u32));
        }
        if let Some(at) = service.wake {
            self.queue.push(at, Event::ChannelWake(ch as u32));
        }
        while let Some((t, pkt, fate)) = self.channels[ch].qdisc_take() {
            if self.trace.is_some() {
                let event = match fate {
                    Fate::Enqueued => TraceEvent::Enqueue,
                    Fate::Dropped(DropCause::Overlimit) => TraceEvent::DropQueue,
                    Fate::Dropped(DropCause::Aqm) => TraceEvent::DropAqm,
                    Fate::Dropped(DropCause::Random) => TraceEvent::DropWire,
                    Fate::Marked(_) => TraceEvent::MarkCe,
                };
                self.trace_row(t, ch, &pkt, event);
            }
            if let Fate::Dropped(_) = fate {
                self.drop_pkt(pkt);
            }
        }
    }

    fn trace_row(&mut self, t: u64, ch: usize, pkt: &Pkt, event: TraceEvent) {
        let t0 = self.t0.unwrap_or(t);
        if let Some(tr) = &mut self.trace {
            tr.record(TraceRow {
                t_ns: t.saturating_sub(t0),
                flow: pkt.flow,
                channel: ch as u32,
                hop: pkt.hop,
                event,
                kind: pkt.kind,
                seq_bytes: pkt.seq_bytes,
                window_bytes: pkt.window_bytes,
                wire_bytes: pkt.bytes,
            });
        }
    }

    fn drop_pkt(&mut self, p: Pkt) {
        if self.t0.is_some() {
            let c = &mut self.counts[p.flow as usize];
            if p.ack && !p.syn {
                c.acks_dropped += 1;
            } else if p.payload {
                c.data_dropped += 1;
            }
        }
        self.free.push(p.slot);
    }

    fn alloc_slot(&mut self) -> u32 {
        match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push([0u8; SLOT_BYTES]);
                self.lens.push(0);
                self.stats.peak_slots = self.slots.len();
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Read every packet waiting on the devices marked ready and put each on its route.
    ///
    /// A TUN read carries no arrival time: packets that several hosts wrote while the
    /// forwarder slept or worked are stamped when read, microseconds apart, in the order
    /// read. Reading each device until empty in host order gave the lower-numbered hosts
    /// the earlier stamps in almost every such tie (96% of the pairs of two flows' packets
    /// read within 3 us), and at a full drop-tail buffer the earlier packet takes the slot a
    /// departure frees: the higher-numbered flows lost more (docs/validation/bbr-among-bbr,
    /// "The kernel backend's service order"). So the devices take
    /// turns, one packet each ([`interleave`]), in an order drawn afresh at every wake-up
    /// ([`ReadTurns`]): any host precedes any other in half of the wake-ups, as two packets
    /// that arrive together do when the order is chance.
    fn read_ready(&mut self, ready: &mut [bool]) {
        self.read_turns.shuffle();
        // Taken out for the reads (which borrow the forwarder) and put back: no allocation.
        let order = std::mem::take(&mut self.read_turns.order);
        interleave(&order, ready, |host| self.read_one(host));
        self.read_turns.order = order;
    }

    /// Read one packet from a host's TUN device and put it on its route; false when the
    /// device had none.
    fn read_one(&mut self, host: usize) -> bool {
        let slot = self.alloc_slot();
        let n = match sys::read_nb(self.tuns[host], &mut self.slots[slot as usize][..]) {
            Ok(Some(n)) if n > 0 => n,
            _ => {
                self.free.push(slot);
                return false;
            }
        };
        let stamp = sys::monotonic_ns();
        // Everything scheduled before this packet arrived happens first.
        self.run_due(stamp);
        self.lens[slot as usize] = n as u16;
        self.ingress(stamp, host, slot, n);
        true
    }

    fn ingress(&mut self, t: u64, host: usize, slot: u32, n: usize) {
        let hdr = if n < SLOT_BYTES {
            ipv4::parse(&self.slots[slot as usize][..n])
        } else {
            None
        };
        let seq_mark = hdr.map_or(0, |h| {
            if h.tcp_payload > 0 {
                h.tcp_seq.wrapping_add(h.tcp_payload)
            } else {
                h.tcp_ack
            }
        });
        let classified = hdr.and_then(|h| {
            let (sport, dport) = h.ports?;
            if let Some(&f) = self.by_receiver.get(&(h.dst, dport)) {
                if self.routes[f as usize].src_host == host {
                    return Some((f, false, h.tcp_payload > 0, h.is_syn()));
                }
            }
            if let Some(&f) = self.by_receiver.get(&(h.src, sport)) {
                if self.routes[f as usize].dst_host == host {
                    return Some((f, true, false, h.is_syn()));
                }
            }
            None
        });
        let Some((flow, ack, payload, syn)) = classified else {
            self.stats.unmatched_pkts += 1;
            self.free.push(slot);
            return;
        };
        let h = hdr.expect("classified packets parsed");
        let stream = &mut self.streams[flow as usize];
        let (kind, seq_bytes) = stream.place(&h, ack, payload, syn);
        let window_bytes = stream.window_bytes(&h, ack, syn);
        if let Some(t0) = self.t0.filter(|&t0| t >= t0) {
            let c = &mut self.counts[flow as usize];
            if ack && !syn {
                c.acks_in += 1;
            } else if payload {
                c.data_in += 1;
                c.first_data_in_ns.get_or_insert(t - t0);
            } else if syn && !ack {
                c.syns_in += 1;
                c.syn_in_ns.get_or_insert(t - t0);
            }
            self.turnaround
                .ingress(flow as usize, ack, payload, syn, seq_mark, t);
        }
        let route = &self.routes[flow as usize];
        let ch = if ack {
            route.ack_path[0]
        } else {
            route.path[0]
        } as usize;
        let pkt = Pkt {
            slot,
            flow,
            hop: 0,
            ack,
            payload,
            syn,
            seq_mark,
            kind,
            seq_bytes,
            window_bytes,
            bytes: n as u32,
            ecn: h.ecn,
        };
        self.offer(t, ch, pkt);
    }

    /// Per-channel sample at model time `t` (exact: the model's state at that instant).
    fn sample(&mut self, t: u64) {
        let t0 = self.t0.expect("samples start at t0");
        let dt = self.sample_interval_ns.min(t - t0).max(1);
        let now_counters = self.counters_at(t);
        for (ch, c) in self.channels.iter().enumerate() {
            let row = record::link_sample(
                t - t0,
                ch,
                c,
                &self.last_counters[ch],
                &now_counters[ch],
                dt,
            );
            self.series.push(&row);
        }
        self.last_counters = now_counters;
        self.next_sample_k += 1;
        let next = self.next_sample_k * self.sample_interval_ns;
        if next <= self.duration_ns {
            self.queue.push(t0 + next, Event::Sample);
        }
    }

    fn finish(mut self) -> ForwarderReport {
        let t0 = self.t0;
        let wall = t0
            .map(|t0| sys::monotonic_ns().saturating_sub(t0))
            .unwrap_or(0);
        if wall > 0 {
            self.stats.cpu_frac =
                sys::thread_cpu_ns().saturating_sub(self.cpu_at_t0) as f64 / wall as f64;
        }
        self.stats.lateness = self.late_all.summary();
        self.stats.delivery_lateness = self.late_delivery.summary();
        self.stats.handshake_lateness = self.late_handshake.summary();
        self.stats.receiver_turnaround = self.turnaround.receiver.quantiles();
        self.stats.sender_turnaround = self.turnaround.sender.quantiles();
        self.stats.stall_threshold_us = self.stall_threshold_ns as f64 / 1e3;
        self.stats.rates = self
            .channels
            .iter()
            .enumerate()
            .map(|(ch, c)| {
                let a = self.rate_acc[ch];
                ChannelRate {
                    link: ch / 2,
                    direction: record::direction(ch),
                    rate_bps: c.rate_bps,
                    busy_s: a.model_ns as f64 / 1e9,
                    achieved_bps: if a.wall_ns == 0 {
                        f64::NAN
                    } else {
                        a.bytes as f64 * 8e9 / a.wall_ns as f64
                    },
                }
            })
            .collect();

        // Packets still held by channels (queued, in service or propagating), per flow.
        let mut in_network = vec![(0u64, 0u64); self.routes.len()];
        for c in &self.channels {
            c.for_each_held(|p| {
                if p.ack {
                    in_network[p.flow as usize].1 += 1;
                } else if p.payload {
                    in_network[p.flow as usize].0 += 1;
                }
            });
        }

        // Packets serialised on links with a queue discipline (counted where they leave it,
        // not where they are offered).
        for c in self.channels.iter_mut().filter(|c| c.has_qdisc()) {
            c.advance(u64::MAX);
            self.stats.packet_hops += c.counters().tx_pkts;
        }
        let link_summary = self.link_summary();
        ForwarderReport {
            links: std::mem::take(&mut self.series).into_table(),
            trace: self.trace.take().map(Trace::into_table),
            link_summary,
            flows: self.counts.clone(),
            stats: self.stats.clone(),
            in_network,
        }
    }

    /// Per channel over the measurement window, with the simulator's columns plus the
    /// achieved rate (`achieved_rate_mbps`, `busy_s`).
    fn link_summary(&mut self) -> Table {
        let end = match self.measure_end_counters.clone() {
            Some(e) => e,
            None => self.counters_at(self.end_time().unwrap_or(0)),
        };
        let extras = record::link_extras(&self.spec, &self.channels);
        let mut rows = record::link_summaries(
            &self.spec,
            &self.measure_start_counters,
            &end,
            &self.series,
            &extras,
        );
        for (row, rate) in rows.iter_mut().zip(&self.stats.rates) {
            row.achieved_rate_mbps = rate.achieved_bps / 1e6;
            row.busy_s = rate.busy_s;
        }
        record::link_summary_table(&rows)
    }
}

/// A flow's byte stream as the forwarder sees it: the ISN (from its first SYN) and the last
/// positions seen each way, to unwrap 32-bit sequence numbers.
#[derive(Clone, Copy, Debug, Default)]
struct Stream {
    isn: Option<u32>,
    data_seen: bool,
    last_data: u64,
    last_ack: u64,
    /// The receiver's window scale, from its SYN-ACK.
    rcv_wscale: u8,
}

impl Stream {
    /// The receive window an ACK or SYN-ACK of the flow advertises, in bytes: the SYN-ACK's
    /// unscaled, later ones shifted by the scale the SYN-ACK announced (RFC 7323).
    fn window_bytes(&mut self, h: &ipv4::Header, ack: bool, syn: bool) -> u32 {
        if !ack {
            return 0;
        }
        if syn {
            self.rcv_wscale = h.tcp_wscale.unwrap_or(0).min(14);
            return h.tcp_window as u32;
        }
        (h.tcp_window as u32) << self.rcv_wscale
    }

    /// The trace kind of a packet and its position in bytes from the first data byte.
    fn place(
        &mut self,
        h: &ipv4::Header,
        ack: bool,
        payload: bool,
        syn: bool,
    ) -> (&'static str, u64) {
        if syn {
            if !ack && self.isn.is_none() {
                self.isn = Some(h.tcp_seq);
            }
            return (if ack { "synack" } else { "syn" }, 0);
        }
        let Some(isn) = self.isn else {
            return (if ack { "ack" } else { "control" }, 0);
        };
        let first = isn.wrapping_add(1);
        if ack {
            self.last_ack = unwrap(self.last_ack, h.tcp_ack.wrapping_sub(first));
            return ("ack", self.last_ack);
        }
        if payload {
            self.data_seen = true;
            self.last_data = unwrap(self.last_data, h.tcp_seq.wrapping_sub(first));
            return ("data", self.last_data);
        }
        (
            if self.data_seen {
                "control"
            } else {
                "handshake_ack"
            },
            0,
        )
    }
}

/// The 64-bit position nearest to `last` whose low 32 bits are `low`.
/// Random stream of the read order (`ccfair_cc::rng::derive_seed`), apart from the
/// simulator's streams.
const READ_ORDER_STREAM: u64 = 0x7265_6164; // "read"

/// The order in which the forwarder reads the devices that are ready at one wake-up: a
/// permutation of the hosts drawn afresh each time (Fisher-Yates over the last one), so
/// that every host takes every place equally often and precedes every other host in half
/// of the wake-ups.
#[derive(Clone, Debug)]
struct ReadTurns {
    order: Vec<usize>,
    rng: Rng,
}

impl ReadTurns {
    fn new(seed: u64, hosts: usize) -> Self {
        ReadTurns {
            order: (0..hosts).collect(),
            rng: Rng::new(derive_seed(seed, &[READ_ORDER_STREAM])),
        }
    }

    /// Draw the next wake-up's order.
    fn shuffle(&mut self) {
        for i in (1..self.order.len()).rev() {
            let j = self.rng.below(i as u32 + 1) as usize;
            self.order.swap(i, j);
        }
    }
}

/// Take turns over the ready devices in `order`, one read each (`read` returns false when
/// the device is empty, which takes it out of the turns), until every device is empty.
fn interleave(order: &[usize], ready: &mut [bool], mut read: impl FnMut(usize) -> bool) {
    while ready.iter().any(|&r| r) {
        for &host in order {
            if ready[host] && !read(host) {
                ready[host] = false;
            }
        }
    }
}

fn unwrap(last: u64, low: u32) -> u64 {
    let delta = low.wrapping_sub(last as u32) as i32 as i64;
    (last as i64 + delta).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `interleave` makes in `order` from devices holding `waiting[i]` packets, as
    /// host numbers.
    fn read_order(order: &[usize], waiting: &[usize]) -> Vec<usize> {
        let mut left = waiting.to_vec();
        let mut ready: Vec<bool> = waiting.iter().map(|&n| n > 0).collect();
        let mut reads = Vec::new();
        interleave(order, &mut ready, |host| {
            if left[host] == 0 {
                return false;
            }
            left[host] -= 1;
            reads.push(host);
            true
        });
        assert!(left.iter().all(|&n| n == 0), "every packet read: {left:?}");
        reads
    }

    /// Devices that were ready together take turns, one packet each, in the wake-up's
    /// order; an empty device drops out (the old order read h0 until empty, then h1, ...).
    #[test]
    fn ready_devices_take_turns_in_the_wake_ups_order() {
        assert_eq!(read_order(&[0, 1, 2], &[3, 2, 0]), vec![0, 1, 0, 1, 0]);
        assert_eq!(read_order(&[1, 0, 2], &[3, 2, 0]), vec![1, 0, 1, 0, 0]);
        assert_eq!(read_order(&[2, 0, 1], &[1, 1, 2]), vec![2, 0, 1, 2]);
        assert_eq!(read_order(&[0, 1, 2], &[0, 0, 0]), Vec::<usize>::new());
    }

    /// Over many wake-ups with a packet on every device, each host is read first about
    /// equally often and each host precedes each other one in about half of the wake-ups
    /// (a rotating first device would not do that: with four hosts h0 would precede h1 in
    /// three wake-ups of four). Same seed, same orders.
    #[test]
    fn no_host_is_read_ahead_of_another_more_often() {
        let hosts = 4;
        let wakes = 8_000;
        let mut turns = ReadTurns::new(7, hosts);
        let mut first = vec![0usize; hosts];
        let mut ahead = vec![vec![0usize; hosts]; hosts];
        for _ in 0..wakes {
            turns.shuffle();
            let reads = read_order(&turns.order, &vec![1; hosts]);
            first[reads[0]] += 1;
            for (k, &a) in reads.iter().enumerate() {
                for &b in &reads[k + 1..] {
                    ahead[a][b] += 1;
                }
            }
        }
        for (host, &n) in first.iter().enumerate() {
            let frac = n as f64 / wakes as f64;
            assert!((0.22..0.28).contains(&frac), "h{host} first in {frac}");
        }
        for (a, row) in ahead.iter().enumerate() {
            for (b, &n) in row.iter().enumerate().skip(a + 1) {
                let frac = n as f64 / wakes as f64;
                assert!((0.47..0.53).contains(&frac), "h{a} ahead of h{b} in {frac}");
            }
        }
        let (mut x, mut y) = (ReadTurns::new(3, 5), ReadTurns::new(3, 5));
        for _ in 0..10 {
            x.shuffle();
            y.shuffle();
            assert_eq!(x.order, y.order);
        }
    }

    /// A two-node spec whose link a->b runs CoDel with ECN at 12 Mbit/s (1 ms per packet).
    fn codel_spec() -> ccfair_sim::spec::RunSpec {
        let json = serde_json::json!({
            "duration_ns": 10_000_000_000u64, "seed": 3, "sample_interval_ns": 10_000_000,
            "measure_start_ns": 0, "measure_end_ns": 10_000_000_000u64,
            "nodes": ["a", "b"],
            "links": [{"name": "l", "a": 0, "b": 1, "rate_bps": 12_000_000, "delay_ns": 1_000_000,
                       "buffer_pkts": 10_000, "queue": "codel", "qdisc": {"ecn": true}}],
            "flows": [{"name": "f", "src": 0, "dst": 1, "path": [0], "ack_path": [1],
                       "cca": "cubic", "start_ns": 0}],
        });
        ccfair_sim::parse_spec(&json.to_string()).unwrap()
    }

    fn pkt(slot: u32, ecn: Ecn) -> Pkt {
        Pkt {
            slot,
            flow: 0,
            hop: 0,
            ack: false,
            payload: true,
            syn: false,
            seq_mark: 0,
            kind: "data",
            seq_bytes: 0,
            window_bytes: 0,
            bytes: 1500,
            ecn,
        }
    }

    /// The forwarder's packets through the simulator's CoDel, as `offer` and `run_due`
    /// drive it: under a standing overload the ECN-capable ones leave marked CE (the mark
    /// the forwarder writes into the IP header as the packet leaves the last link) and the
    /// Not-ECT ones are dropped; nothing else is lost.
    #[test]
    fn codel_marks_the_forwarders_packets() {
        let spec = codel_spec();
        let mut channels: Vec<Channel<Pkt>> = build_channels_at(&spec, 5_000_000_000);
        let ch = &mut channels[0];
        assert!(ch.has_qdisc());
        let t0 = 5_000_000_000u64;
        let mut wakes: Vec<u64> = Vec::new();
        let mut next_arrival: Option<u64> = None;
        let (mut delivered, mut dropped) = (Vec::new(), Vec::new());
        let absorb = |ch: &mut Channel<Pkt>,
                      s: Service,
                      wakes: &mut Vec<u64>,
                      next: &mut Option<u64>,
                      dropped: &mut Vec<Pkt>| {
            if let Some(t) = s.arrival {
                *next = Some(t);
            }
            wakes.extend(s.wake);
            while let Some((_, p, fate)) = ch.qdisc_take() {
                if let Fate::Dropped(_) = fate {
                    dropped.push(p);
                }
            }
        };
        let run_until = |ch: &mut Channel<Pkt>,
                         t: u64,
                         wakes: &mut Vec<u64>,
                         next: &mut Option<u64>,
                         delivered: &mut Vec<Pkt>,
                         dropped: &mut Vec<Pkt>| loop {
            let w = wakes.iter().copied().filter(|&w| w <= t).min();
            let a = next.filter(|&a| a <= t);
            match (w, a) {
                (Some(w), a) if a.is_none_or(|a| w <= a) => {
                    wakes.retain(|&x| x != w);
                    let s = ch.qdisc_serve(w);
                    absorb(ch, s, wakes, next, dropped);
                }
                (_, Some(_)) => {
                    let (p, n) = ch.arrival();
                    delivered.push(p);
                    *next = n;
                }
                _ => break,
            }
        };
        // 1.5 packets per ms for 3 s, ECT(0) and Not-ECT alternately.
        for k in 0..4500u32 {
            let t = t0 + k as u64 * 666_667;
            run_until(
                ch,
                t,
                &mut wakes,
                &mut next_arrival,
                &mut delivered,
                &mut dropped,
            );
            let ecn = if k % 2 == 0 { Ecn::Ect0 } else { Ecn::NotEct };
            let p = pkt(k, ecn);
            let s = ch.qdisc_offer(t, t, p, flow_key(0, false), p.ecn);
            absorb(ch, s, &mut wakes, &mut next_arrival, &mut dropped);
        }
        run_until(
            ch,
            u64::MAX / 2,
            &mut wakes,
            &mut next_arrival,
            &mut delivered,
            &mut dropped,
        );
        let marked = delivered.iter().filter(|p| p.ecn == Ecn::Ce).count();
        assert!(marked > 10, "{marked} marked");
        assert!(delivered
            .iter()
            .all(|p| p.ecn != Ecn::Ce || p.slot % 2 == 0));
        assert!(!dropped.is_empty() && dropped.iter().all(|p| p.ecn == Ecn::NotEct));
        assert_eq!(delivered.len() + dropped.len(), 4500);
        // What the forwarder does with a marked packet's bytes at the last link.
        let mut bytes = vec![0u8; 40];
        bytes[0] = 0x45;
        bytes[1] = 0x02;
        bytes[2..4].copy_from_slice(&40u16.to_be_bytes());
        bytes[8] = 64;
        bytes[9] = ipv4::PROTO_TCP;
        let c = ipv4::header_checksum(&bytes[..20]);
        bytes[10..12].copy_from_slice(&c.to_be_bytes());
        assert!(ipv4::set_ce(&mut bytes));
        let h = ipv4::parse(&bytes).unwrap();
        assert_eq!(h.ecn, Ecn::Ce);
        assert_eq!(
            u16::from_be_bytes([bytes[10], bytes[11]]),
            ipv4::header_checksum(&bytes[..20])
        );
    }
}
