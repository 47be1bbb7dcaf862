//! The simulation: channels, flows and the event loop. What is recorded, and how tables
//! are built from it, lives in `record.rs` (shared with the kernel backend).
//!
//! Determinism: all state changes happen in event order (time, then insertion order); all
//! randomness comes from streams derived from (scenario seed, entity id).

use ccfair_cc::rng::derive_seed;

use crate::error::SimError;
use crate::estimate::Limits;
use crate::event::{Event, EventQueue, TimerKind, N_TIMER_KINDS};
use crate::fifo::Fifo;
use crate::host::{FlowHosts, Side};
use crate::link::{Ahead, Channel, ChannelCounters, Enqueued, OnWire, Service};
use crate::packet::{Ecn, Kind, Packet, PacketRef, PacketSlab};
use crate::qdisc::{DropCause, Fate};
use crate::record::{self, FlowRecorder, FlowSample, FlowSummary, LinkSamples};
use crate::spec::{Queue, RunSpec};
use crate::table::Table;
use crate::tcp::receiver::Receiver;
use crate::tcp::sender::{Conn, Sender};
use crate::trace::{Trace, TraceEvent, TraceRow};

/// Seed stream tags, so that flows and links draw from independent streams (public: the
/// kernel backend's forwarder draws a channel's random losses from the same stream).
pub const STREAM_FLOW: u64 = 1;
/// The stream of a link direction's random losses: (seed, STREAM_CHANNEL, link, direction).
pub const STREAM_CHANNEL: u64 = 2;
/// The stream of a link direction's queue discipline: (seed, STREAM_QDISC, link,
/// direction), for PIE's and RED's draws and fq_codel's hash key.
pub const STREAM_QDISC: u64 = 5;
const NOT_SCHEDULED: u64 = u64::MAX;
/// Events at one instant after which the progress guard stops a run. Far above any real
/// burst (every flow of the largest allowed spec starting at once, each with its window).
pub const STALL_EVENTS: u64 = 50_000_000;

struct Flow {
    sender: Sender,
    receiver: Receiver,
    /// Where the data path and the ACK path start in `Simulation::routes`.
    route_start: [u32; 2],
    start_ns: u64,
    scheduled: [u64; N_TIMER_KINDS],
    data_dropped: u64,
    acks_dropped: u64,
    acks_received: u64,
    bytes_at_measure_start: u64,
    bytes_at_measure_end: Option<u64>,
    bytes_at_last_sample: u64,
    /// The three-way handshake is simulated (`tcp.handshake`).
    handshake: bool,
    conn: ConnectionTimes,
    /// The hosts' latency draws (`host.rs`).
    hosts: FlowHosts,
}

impl Flow {
    /// Where the route of a packet of `kind` starts in `Simulation::routes`: the data path
    /// or the ACK path.
    #[inline]
    fn route_start(&self, kind: Kind) -> u32 {
        self.route_start[!kind.is_forward() as usize]
    }
}

/// Above this many bytes of channels (1 MiB: about 3,300 channels of 320 bytes, a dumbbell
/// of about 800 flows) an end host's reply channel is prefetched while the host handles the
/// packet (`Simulation::channel_arrival`). Performance only: nothing a run computes depends
/// on it.
const CHANNEL_PREFETCH_ABOVE_BYTES: usize = 1 << 20;

/// At most this many channels in a row are fed ahead (`feed_ahead`). A packet handed on
/// through a chain of fed-ahead channels holds an entry in each of them until it has left
/// it, so without a bound a chain of k such channels holds k entries per packet in flight
/// (a 2,500-link chain held 335 MB for 2,424 packets; the estimate counts a few). Results
/// do not depend on it (tests/feed_ahead.rs); a dumbbell or a parking lot feeds at most one
/// channel in a row.
const MAX_FEED_AHEAD_RUN: usize = 4;

/// In `Simulation::routes`: the end of a route.
const ROUTE_END: u32 = u32::MAX;
/// In `Simulation::routes`: the channel is fed ahead of time (`feed_ahead`), so a packet
/// entering the channel before it is offered to it at once.
const ROUTE_FED: u32 = 1 << 31;

/// Engine counters of a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct EngineStats {
    /// Events the engine ran.
    pub events: u64,
    /// Packets that finished serialisation on a channel (one per packet per hop).
    pub packet_hops: u64,
    /// The most events pending at once.
    pub peak_heap_len: usize,
    /// Bytes the engine held for packets at the run's peak: packet slots, retransmission-queue
    /// slots, and the channels' buffer and pipe slots. None of these storages shrinks, so
    /// their size at the end is their peak; the estimate's packet part bounds this
    /// (`estimate.rs`, `PACKET_STATE_BYTES`).
    pub packet_state_bytes: u64,
    /// The most packets in the network at once (in channels, between their hosts): the
    /// packet slab's slots (`packet.rs`).
    pub peak_packets: u64,
}

/// What a run produced: the result tables (columns as `schema.rs` lists them) and the
/// engine's own counters.
pub struct RunResult {
    /// Per-flow summary (one row per flow), with every algorithm's counters as columns.
    pub flows: Table,
    /// Per-flow time series.
    pub timeseries: Table,
    /// Per-channel time series.
    pub links: Table,
    /// Per-channel summary (one row per link direction).
    pub link_summary: Table,
    /// Per-packet trace of the flows in `RunSpec::trace_flows` (`trace.rs`), if any.
    pub trace: Option<Table>,
    /// The engine's counters (events, packet-hops, peak memory).
    pub stats: EngineStats,
}

/// A run being simulated: the channels of every link direction, the flows' senders and
/// receivers, the event queue, and the recorders.
pub struct Simulation {
    spec: RunSpec,
    now: u64,
    queue: EventQueue,
    channels: Vec<Channel<PacketRef>>,
    /// The packets the channels hold (`packet.rs`).
    packets: PacketSlab,
    flows: Vec<Flow>,
    out: Vec<Packet>,
    stats: EngineStats,
    fseries: FlowRecorder,
    lseries: LinkSamples,
    last_sample_ns: u64,
    last_channel_counters: Vec<ChannelCounters>,
    measure_start_counters: Vec<ChannelCounters>,
    measure_end_counters: Option<Vec<ChannelCounters>>,
    metric_buf: Vec<(&'static str, f64)>,
    trace: Option<Trace>,
    /// Every flow's data path and ACK path, one after the other, each channel marked
    /// `ROUTE_FED` if fed ahead of time and each route closed by `ROUTE_END`: a packet's next
    /// channel is the next entry (a packet keeps its place in `Packet::hop`).
    routes: Vec<u32>,
    /// Per entry of `routes`: the flow and direction of the route (`flow_key`), which a
    /// queue discipline classifies by (fq_codel).
    route_keys: Vec<u32>,
    /// Drops decided ahead of their time on fed-ahead channels, oldest first: (input time,
    /// flow, kind). Until then the packet counts as in the network (`conservation`).
    drops_ahead: Fifo<(u64, u32, Kind)>,
    /// The channels take more room than stays in the cache between two packets of one
    /// flow (`CHANNEL_PREFETCH_ABOVE_BYTES`): an end host's reply channel is prefetched.
    prefetch_channels: bool,
}

impl Simulation {
    /// Build a simulation from a resolved spec. Errors name the offending field.
    ///
    /// ```
    /// use ccfair_sim::{SimError, Simulation};
    /// # let spec = serde_json::json!({
    /// #     "duration_ns": 2_000_000_000u64, "seed": 1, "sample_interval_ns": 100_000_000,
    /// #     "measure_start_ns": 0, "measure_end_ns": 2_000_000_000u64, "nodes": ["h1", "h2"],
    /// #     "links": [{"name": "h1-h2", "a": 0, "b": 1, "rate_bps": 10_000_000,
    /// #                "delay_ns": 20_000_000, "buffer_pkts": 50}],
    /// #     "flows": [{"name": "flow1", "src": 0, "dst": 1, "path": [0], "ack_path": [1],
    /// #                "cca": "cubic", "cca_params": {}, "start_ns": 0}],
    /// # });
    /// # let spec = ccfair_sim::parse_spec(&spec.to_string()).unwrap();
    /// // A two-host spec (see the crate documentation) whose flow sends its data on
    /// // channel 1, which runs from h2 to h1.
    /// let mut bad = spec.clone();
    /// bad.flows[0].path = vec![1];
    /// let Err(SimError::Spec { path, message }) = Simulation::new(bad) else {
    ///     panic!("refused")
    /// };
    /// assert_eq!(path, "flows[0].path");
    /// assert_eq!(message, "channel 1 does not start at node 0");
    /// assert!(Simulation::new(spec).is_ok());
    /// ```
    pub fn new(spec: RunSpec) -> Result<Self, SimError> {
        Self::with_feed_ahead(spec, true)
    }

    /// `new`, choosing whether packets are handed on ahead of time where that is exact
    /// (`feed_ahead`): the results are the same either way, one event per packet-hop fewer
    /// with it (tests/feed_ahead.rs checks the sameness).
    pub fn with_feed_ahead(spec: RunSpec, feed_ahead_on: bool) -> Result<Self, SimError> {
        spec.check()?;
        let max_id = crate::event::MAX_EVENT_ID as usize;
        if spec.flows.len() > max_id || 2 * spec.links.len() > max_id {
            return Err(SimError::spec(
                "flows",
                format!(
                    "at most {max_id} flows and {} links are supported",
                    max_id / 2
                ),
            ));
        }
        let mut channels = build_channels(&spec);
        if feed_ahead_on {
            feed_ahead(&spec, &mut channels);
        }
        let mut routes = Vec::new();
        let mut route_keys = Vec::new();
        let starts = spec.flow_starts_ns();
        let rmem = spec.rmem_bytes();
        let mut flows = Vec::with_capacity(spec.flows.len());
        for (i, f) in spec.flows.iter().enumerate() {
            let seed = derive_seed(spec.seed, &[STREAM_FLOW, i as u64]);
            let cc = ccfair_cc::build(&f.cca, &f.cca_params, seed)
                .map_err(|e| SimError::spec(format!("flows[{i}].cca"), e.to_string()))?;
            // The receiver runs the flow's algorithm too: it matters when it needs ECN.
            let needs_ecn = cc.needs_ecn();
            flows.push(Flow {
                sender: Sender::new(i as u32, &f.tcp, cc, f.size_bytes),
                receiver: Receiver::new(
                    i as u32,
                    &f.tcp,
                    {
                        let delay = |ch: &usize| spec.links[ch / 2].delay_ns;
                        f.path.iter().map(delay).sum::<u64>()
                            + f.ack_path.iter().map(delay).sum::<u64>()
                    },
                    rmem[i],
                    needs_ecn,
                ),
                route_start: [(&f.path, false), (&f.ack_path, true)].map(|(path, ack)| {
                    let start = routes.len() as u32;
                    for &c in path {
                        let fed = if channels[c].is_fed_ahead() {
                            ROUTE_FED
                        } else {
                            0
                        };
                        routes.push(c as u32 | fed);
                    }
                    routes.push(ROUTE_END);
                    route_keys.resize(routes.len(), flow_key(i, ack));
                    start
                }),
                start_ns: starts[i],
                scheduled: [NOT_SCHEDULED; N_TIMER_KINDS],
                data_dropped: 0,
                acks_dropped: 0,
                acks_received: 0,
                bytes_at_measure_start: 0,
                bytes_at_measure_end: None,
                bytes_at_last_sample: 0,
                handshake: f.tcp.handshake,
                conn: ConnectionTimes::default(),
                hosts: FlowHosts::new(spec.seed, i, f.tcp.app_latency, f.tcp.host_latency),
            });
        }
        let trace = Trace::new(spec.flows.len(), &spec.trace_flows);
        if trace.is_some() {
            channels.iter_mut().for_each(Channel::trace_qdisc);
        }
        let n_ch = channels.len();
        // One sample per interval (spec validation: 0 < interval <= duration).
        let samples = (spec.duration_ns / spec.sample_interval_ns) as usize;
        let fseries = FlowRecorder::with_capacity(samples.saturating_mul(spec.flows.len()));
        let lseries = LinkSamples::with_capacity(samples.saturating_mul(n_ch));
        Ok(Simulation {
            spec,
            now: 0,
            queue: EventQueue::default(),
            channels,
            packets: PacketSlab::default(),
            flows,
            out: Vec::with_capacity(64),
            stats: EngineStats::default(),
            fseries,
            lseries,
            last_sample_ns: 0,
            last_channel_counters: vec![ChannelCounters::default(); n_ch],
            measure_start_counters: vec![ChannelCounters::default(); n_ch],
            measure_end_counters: None,
            metric_buf: Vec::with_capacity(16),
            trace,
            routes,
            route_keys,
            drops_ahead: Fifo::new(),
            prefetch_channels: n_ch * std::mem::size_of::<Channel<PacketRef>>()
                > CHANNEL_PREFETCH_ABOVE_BYTES,
        })
    }

    /// Run to the end of the scenario without an event budget (tests, benchmarks).
    ///
    /// Panics if the loop's progress guard stops the run (`run_bounded`).
    ///
    /// ```
    /// use ccfair_sim::Simulation;
    /// # let spec = serde_json::json!({
    /// #     "duration_ns": 2_000_000_000u64, "seed": 1, "sample_interval_ns": 100_000_000,
    /// #     "measure_start_ns": 0, "measure_end_ns": 2_000_000_000u64, "nodes": ["h1", "h2"],
    /// #     "links": [{"name": "h1-h2", "a": 0, "b": 1, "rate_bps": 10_000_000,
    /// #                "delay_ns": 20_000_000, "buffer_pkts": 50}],
    /// #     "flows": [{"name": "flow1", "src": 0, "dst": 1, "path": [0], "ack_path": [1],
    /// #                "cca": "cubic", "cca_params": {}, "start_ns": 0}],
    /// # });
    /// # let spec = ccfair_sim::parse_spec(&spec.to_string()).unwrap();
    /// // The same spec and seed give the same tables, bit for bit.
    /// let a = Simulation::new(spec.clone()).unwrap().run();
    /// let b = Simulation::new(spec.clone()).unwrap().run();
    /// assert!(a.timeseries.identical(&b.timeseries) && a.flows.identical(&b.flows));
    /// // Another seed draws other host latencies, so the packets' timing differs.
    /// let mut reseeded = spec;
    /// reseeded.seed = 2;
    /// let c = Simulation::new(reseeded).unwrap().run();
    /// assert!(!a.timeseries.identical(&c.timeseries));
    /// ```
    pub fn run(self) -> RunResult {
        self.run_bounded(u64::MAX)
            .expect("the run stopped making progress")
    }

    /// Run to the end of the scenario, processing at most `max_events` events.
    ///
    /// Two guards keep a run from hanging: the event budget, and a progress guard that
    /// stops a run whose clock does not advance for `STALL_EVENTS` events in a row (a loop
    /// of zero-time events; with the 1 ns floor on serialisation (`link.rs`) none is known,
    /// the guard is the backstop). Either returns `SimError::Stopped`.
    pub fn run_bounded(mut self, max_events: u64) -> Result<RunResult, SimError> {
        let duration = self.spec.duration_ns;
        for (i, f) in self.spec.flows.iter().enumerate() {
            // The application starts; its SYN leaves after the host's launch latency.
            let flow = &mut self.flows[i];
            let t = flow.start_ns + flow.hosts.launch_ns();
            self.queue.push(t, Event::FlowStart(i as u32));
            if let Some(stop) = f.stop_ns {
                self.queue.push(stop, Event::FlowStop(i as u32));
            }
        }
        self.queue
            .push(self.spec.measure_start_ns, Event::MeasureStart);
        self.queue.push(self.spec.measure_end_ns, Event::MeasureEnd);
        self.queue
            .push(self.spec.sample_interval_ns.min(duration), Event::Sample);
        // Counted in locals (registers) and stored at the end: the loop calls out through
        // `&mut self`, so counters in `self.stats` were loaded and stored per event.
        let mut events = 0u64;
        // The event count when the clock last moved (the progress guard).
        let mut events_at_advance = 0u64;
        while let Some((t, code)) = self.queue.peek_code() {
            if t > duration {
                break;
            }
            events += 1;
            if t != self.now {
                self.now = t;
                events_at_advance = events;
            } else if events - events_at_advance > STALL_EVENTS {
                return Err(SimError::Stopped(format!(
                    "the simulation made no progress: {} events at t = {t} ns \
                     without the clock advancing (a loop of zero-time events)",
                    events - events_at_advance
                )));
            }
            if events > max_events {
                return Err(SimError::Stopped(format!(
                    "the run exceeded its budget of {max_events} events at t = {:.3} s of \
                     {:.3} s; raise the event limit to let it finish",
                    t as f64 / 1e9,
                    duration as f64 / 1e9
                )));
            }
            match code.channel_arrival() {
                // Takes the event off the queue itself (`channel_arrival`).
                Some(ch) => self.channel_arrival(ch),
                None => {
                    // The event leaves the queue as the first event its handler schedules
                    // enters (one heap pass for both, `EventQueue::take`).
                    self.queue.take();
                    self.handle(code.event());
                }
            }
            self.queue.settle();
        }
        self.stats.events = events;
        self.stats.peak_heap_len = self.queue.peak_len();
        self.now = duration;
        Ok(self.finish())
    }

    // The event loop's handlers (`handle`, `channel_arrival`, `flow_timer`,
    // `after_flow_call`, `forward`, `FlowHosts::egress_ns`) are inlined into it by
    // attribute, and the rare ones (`sample`, `channel_counters`, `finish`) kept out. Left
    // to LLVM, what it inlined depended on how the crate fell into codegen units: code added
    // elsewhere (the resource estimate's, 75ca5be) moved `after_flow_call` out of the loop,
    // 687 -> 708 instructions per packet-hop on the 0.5 BDP dumbbell; with the attributes
    // 682 (issue 16, benches/README.md).
    #[inline(always)]
    fn handle(&mut self, ev: Event) {
        match ev {
            Event::ChannelArrival(_) => unreachable!("handled by channel_arrival"),
            Event::ChannelWake(ch) => {
                let service = self.channels[ch as usize].qdisc_serve(self.now);
                self.after_qdisc(ch, service);
            }
            Event::FlowStart(f) => {
                let now = self.now;
                let flow = &mut self.flows[f as usize];
                if flow.handshake {
                    flow.sender.connect(now, &mut self.out);
                } else {
                    let window = flow.receiver.synack_window();
                    flow.sender.set_peer_window(window);
                    flow.sender.start_without_handshake(now, &mut self.out);
                }
                self.after_flow_call(f, Side::Sender, false);
            }
            Event::AppWrite(f) => {
                let now = self.now;
                self.flows[f as usize].sender.app_write(now, &mut self.out);
                self.after_flow_call(f, Side::Sender, false);
            }
            Event::FlowStop(f) => self.flows[f as usize].sender.stop_app(),
            Event::FlowTimer(f, kind) => self.flow_timer(f, kind),
            Event::Sample => {
                self.sample();
                let next = self.now + self.spec.sample_interval_ns;
                if next <= self.spec.duration_ns {
                    self.queue.push(next, Event::Sample);
                }
            }
            Event::MeasureStart => {
                for f in &mut self.flows {
                    f.bytes_at_measure_start = f.receiver.delivered_bytes;
                }
                self.measure_start_counters = self.channel_counters(0);
            }
            Event::MeasureEnd => {
                for f in &mut self.flows {
                    f.bytes_at_measure_end = Some(f.receiver.delivered_bytes);
                }
                self.measure_end_counters = Some(self.channel_counters(0));
            }
        }
    }

    /// Counters of every channel as of now.
    #[inline(never)]
    fn channel_counters(&mut self, scheduled_ns: u64) -> Vec<ChannelCounters> {
        let now = self.now;
        self.channels
            .iter_mut()
            .map(|c| {
                c.advance_for(now, scheduled_ns);
                c.counters()
            })
            .collect()
    }

    /// Put a packet on the channel of its current hop (`routes[r.hop]`) at `t`.
    ///
    /// Where the packet's next channel is fed ahead of time, it is offered to that one at
    /// once, with the time it will reach it, and so on down its path: it enters a pipe only
    /// on the last channel before a node where paths merge, or before its end host.
    #[inline(always)]
    fn forward(&mut self, t: u64, mut r: PacketRef) {
        // When the packet reaches the channel's input (with when that arrival would have
        // been scheduled, for a channel fed ahead).
        let now = self.now;
        let mut ahead = Ahead {
            input_ns: t,
            announced_ns: now,
        };
        let mut at = r.hop as usize;
        let mut ch = self.routes[at] & !ROUTE_FED;
        let outcome = loop {
            let next = self.routes[at + 1];
            let hand_on = next != ROUTE_END && next & ROUTE_FED != 0;
            let channel = &mut self.channels[ch as usize];
            let through = match (hand_on, channel.is_fed_ahead()) {
                (false, false) => break channel.enqueue(ahead.input_ns, r),
                (false, true) => match channel.enqueue_ahead(now, ahead, r) {
                    Ok(a) => break Enqueued::Accepted(channel.into_pipe(a.input_ns, r)),
                    Err(refused) => break refused,
                },
                (true, false) => channel.enqueue_through(ahead.input_ns, r),
                (true, true) => channel.enqueue_ahead(now, ahead, r),
            };
            match through {
                Ok(a) => {
                    r.hop += 1;
                    ahead = a;
                    at += 1;
                    ch = next & !ROUTE_FED;
                }
                Err(refused) => break refused,
            }
        };
        if self.trace.is_some() {
            self.trace_offer(ahead.input_ns, ch, r, &outcome);
        }
        match outcome {
            Enqueued::Accepted(Some(t)) => self.queue.push(t, Event::ChannelArrival(ch)),
            Enqueued::Accepted(None) => {}
            // Served by its queue discipline (never fed ahead, nor feeding one).
            Enqueued::Qdisc(r) => self.offer_qdisc(ch, ahead.input_ns, r),
            Enqueued::BufferFull(r) | Enqueued::LostOnWire(r) => {
                let p = self.packets.remove(r);
                if self.channels[ch as usize].is_fed_ahead() {
                    // Decided ahead of its time: the packet still counts as in the network
                    // until then (`conservation`).
                    while self.drops_ahead.front().is_some_and(|d| d.0 < now) {
                        self.drops_ahead.pop_front();
                    }
                    self.drops_ahead.push_back((ahead.input_ns, p.flow, p.kind));
                }
                self.count_drop(&p);
            }
        }
    }

    /// The trace row of a packet offered to channel `ch` at `t` (a queue discipline traces
    /// its own decisions, `after_qdisc`). Out of the event loop: traces are rare.
    #[inline(never)]
    fn trace_offer(&mut self, t: u64, ch: u32, r: PacketRef, outcome: &Enqueued<PacketRef>) {
        let event = match outcome {
            Enqueued::Accepted(_) => TraceEvent::Enqueue,
            Enqueued::BufferFull(_) => TraceEvent::DropQueue,
            Enqueued::LostOnWire(_) => TraceEvent::DropWire,
            Enqueued::Qdisc(_) => return,
        };
        let pkt = *self.packets.get(r);
        self.trace_row(t, ch, r.hop, &pkt, event);
    }

    /// Offer a packet reaching channel `ch` (with a queue discipline) at `t`.
    #[inline(never)]
    fn offer_qdisc(&mut self, ch: u32, t: u64, r: PacketRef) {
        let key = self.route_keys[r.hop as usize];
        let ecn = self.packets.get(r).ecn;
        let service = self.channels[ch as usize].qdisc_offer(self.now, t, r, key, ecn);
        self.after_qdisc(ch, service);
    }

    /// Schedule what channel `ch`'s queue discipline asks for, free the packets it dropped
    /// and mark CE those it marked (tracing what it did with the traced flows' packets).
    #[inline(never)]
    fn after_qdisc(&mut self, ch: u32, service: Service) {
        if let Some(t) = service.arrival {
            self.queue.push(t, Event::ChannelArrival(ch));
        }
        if let Some(t) = service.wake {
            self.queue.push(t, Event::ChannelWake(ch));
        }
        while let Some((t, r, fate)) = self.channels[ch as usize].qdisc_take() {
            if self.trace.is_some() {
                let event = match fate {
                    Fate::Enqueued => TraceEvent::Enqueue,
                    Fate::Dropped(DropCause::Overlimit) => TraceEvent::DropQueue,
                    Fate::Dropped(DropCause::Aqm) => TraceEvent::DropAqm,
                    Fate::Dropped(DropCause::Random) => TraceEvent::DropWire,
                    Fate::Marked(_) => TraceEvent::MarkCe,
                };
                let pkt = *self.packets.get(r);
                self.trace_row(t, ch, r.hop, &pkt, event);
            }
            match fate {
                Fate::Dropped(_) => {
                    let p = self.packets.remove(r);
                    self.count_drop(&p);
                }
                // The mark reaches the packet where its end host will read it.
                Fate::Marked(_) => self.packets.get_mut(r).ecn = Ecn::Ce,
                Fate::Enqueued => {}
            }
        }
    }

    fn trace_row(&mut self, t: u64, channel: u32, hop: u32, pkt: &Packet, event: TraceEvent) {
        let mss = self.spec.flows[pkt.flow as usize].tcp.mss as u64;
        let seq_bytes = match pkt.kind {
            Kind::Data | Kind::Ack => pkt.seq * mss,
            Kind::Syn | Kind::SynAck | Kind::HandshakeAck => 0,
        };
        if let Some(tr) = &mut self.trace {
            tr.record(TraceRow {
                t_ns: t,
                flow: pkt.flow,
                channel,
                hop: (hop - self.flows[pkt.flow as usize].route_start(pkt.kind)) as u16,
                event,
                kind: pkt.kind.as_str(),
                seq_bytes,
                window_bytes: pkt.window_bytes,
                wire_bytes: pkt.wire_bytes,
            });
        }
    }

    fn count_drop(&mut self, p: &Packet) {
        let f = &mut self.flows[p.flow as usize];
        match p.kind {
            Kind::Data => f.data_dropped += 1,
            Kind::Ack => f.acks_dropped += 1,
            Kind::Syn | Kind::SynAck | Kind::HandshakeAck => {}
        }
    }

    /// The head of channel `ch` arrives: its event is the queue's earliest, still in the
    /// queue. It leaves the queue here, replaced by the channel's next arrival if any (one
    /// heap pass instead of a pop and a push; the same order).
    #[inline(always)]
    fn channel_arrival(&mut self, ch: u32) {
        let (r, next) = self.channels[ch as usize].arrival();
        match next {
            Some(t) => {
                self.queue.pop_push(t, Event::ChannelArrival(ch));
                if self.packets.outgrows_cache() {
                    self.prefetch_next_arrival(ch);
                }
            }
            // Its slot goes to the next event scheduled (often the packet's arrival on its
            // next channel, when that one's pipe was empty).
            None => self.queue.take(),
        }
        if self.trace.is_some() {
            let pkt = *self.packets.get(r);
            self.trace_row(self.now, ch, r.hop, &pkt, TraceEvent::Arrive);
        }
        if self.routes[r.hop as usize + 1] != ROUTE_END {
            let next = PacketRef {
                hop: r.hop + 1,
                ..r
            };
            self.forward(self.now, next);
            return;
        }
        // At its end host: the host reads it in its slot, which is then free again.
        let pkt = self.packets.get(r);
        let f = pkt.flow;
        let side = if pkt.kind.is_forward() {
            Side::Receiver
        } else {
            Side::Sender
        };
        let flow = &mut self.flows[f as usize];
        let now = self.now;
        if self.prefetch_channels {
            // What the host sends in reply enters this channel after the host's work on
            // the packet (`on_ack`, `on_data`: hundreds of instructions); with many flows
            // the channel is cold by then, so it is fetched meanwhile.
            let reply = self.routes[flow.route_start[side as usize] as usize] & !ROUTE_FED;
            self.channels[reply as usize].prefetch_enqueue();
        }
        match pkt.kind {
            Kind::Data => {
                let Flow {
                    sender, receiver, ..
                } = flow;
                receiver.on_data(now, pkt, |s| sender.seg_bytes(s), &mut self.out);
            }
            Kind::Ack => {
                flow.acks_received += 1;
                flow.sender.on_ack(now, pkt, &mut self.out);
            }
            Kind::Syn => flow.receiver.on_syn(now, pkt, &mut self.out),
            Kind::HandshakeAck => flow.receiver.on_handshake_ack(now, pkt),
            Kind::SynAck => {
                flow.conn.synack_delivered_ns.get_or_insert(now);
                if flow.sender.on_synack(now, pkt, &mut self.out) {
                    // connect() returns: the application wakes up and writes.
                    let t = now + flow.hosts.first_write_ns();
                    self.queue.push(t, Event::AppWrite(f));
                }
            }
        }
        self.packets.free(r);
        self.after_flow_call(f, side, true);
    }

    /// Bring the slot of the packet arriving next on channel `ch` into the cache if it is
    /// at its end host there: the host reads it, long after it was written (the line was
    /// evicted when many packets are in flight), and the next arrival on the channel comes
    /// a serialisation time later (issue 16: 10 flows at 10 Gbit/s). Kept out of the event
    /// loop, which calls it only for large slabs: inlined, it cost the loop 3 instructions
    /// per packet-hop more on runs that never prefetch (0.5 BDP dumbbell).
    #[inline(never)]
    fn prefetch_next_arrival(&self, ch: u32) {
        if let Some(&n) = self.channels[ch as usize].next_arriving() {
            if self.routes[n.hop as usize + 1] == ROUTE_END {
                self.packets.prefetch(n);
            }
        }
    }

    #[inline(always)]
    fn flow_timer(&mut self, f: u32, kind: TimerKind) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        if flow.scheduled[kind as usize] == now {
            flow.scheduled[kind as usize] = NOT_SCHEDULED;
        }
        let due = |d: Option<u64>| d.is_some_and(|d| d <= now);
        let side = match kind {
            TimerKind::Xmit | TimerKind::Pacing => Side::Sender,
            TimerKind::Delack | TimerKind::CompSack => Side::Receiver,
        };
        match kind {
            TimerKind::Xmit => {
                if due(flow.sender.xmit_timer_deadline()) {
                    flow.sender.on_xmit_timer(now, &mut self.out);
                }
            }
            TimerKind::Pacing => {
                if due(flow.sender.pacing_deadline()) {
                    flow.sender.on_pacing_timer(now, &mut self.out);
                }
            }
            TimerKind::Delack | TimerKind::CompSack => {
                if due(flow.receiver.delack_at) || due(flow.receiver.comp_sack_at) {
                    flow.receiver.on_timer(now, &mut self.out);
                }
            }
        }
        self.after_flow_call(f, side, true);
    }

    /// Send what the flow's host on `side` produced (after the host's turnaround when it
    /// reacts to a packet or a timer), and (re)schedule the flow's timers.
    #[inline(always)]
    fn after_flow_call(&mut self, f: u32, side: Side, reaction: bool) {
        let n = self.out.len();
        if n > 0 {
            // What one end of a flow sends takes that end's path: the sender's packets the
            // data path, the receiver's the ACK path (`Kind::is_forward`).
            let flow = &mut self.flows[f as usize];
            let t = flow.hosts.egress_ns(side, self.now, reaction);
            if side == Side::Sender {
                for pkt in &self.out {
                    note_sent(&mut flow.conn, pkt, t);
                }
            }
            let first = flow.route_start[side as usize];
            // Packets leave in the order the flow produced them, each from its slot.
            for i in 0..n {
                let pkt = &self.out[i];
                debug_assert!(pkt.flow == f);
                debug_assert_eq!(pkt.kind.is_forward(), side == Side::Sender);
                let r = self.packets.insert(pkt, first);
                self.forward(t, r);
            }
            self.out.clear();
        }
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        // A host's call changes only its own end's timers (the sender and the receiver are
        // separate state), so only those can need scheduling.
        let deadlines = match side {
            Side::Sender => [
                (TimerKind::Xmit, flow.sender.xmit_timer_deadline()),
                (TimerKind::Pacing, flow.sender.pacing_deadline()),
            ],
            Side::Receiver => [
                (TimerKind::Delack, flow.receiver.delack_at),
                (TimerKind::CompSack, flow.receiver.comp_sack_at),
            ],
        };
        for (kind, deadline) in deadlines {
            if let Some(t) = deadline {
                let t = t.max(now);
                let slot = &mut flow.scheduled[kind as usize];
                if *slot == NOT_SCHEDULED || *slot > t {
                    *slot = t;
                    self.queue.push(t, Event::FlowTimer(f, kind));
                }
            }
        }
    }

    #[inline(never)]
    fn sample(&mut self) {
        let now = self.now;
        let dt = now - self.last_sample_ns;
        for (i, f) in self.flows.iter_mut().enumerate() {
            if !f.sender.started {
                f.bytes_at_last_sample = f.receiver.delivered_bytes;
                continue;
            }
            let tp = &f.sender.tp;
            let srtt = f.sender.srtt_us();
            let pr = tp.pacing_rate_bytes_per_sec;
            let bytes = f.receiver.delivered_bytes - f.bytes_at_last_sample;
            f.bytes_at_last_sample = f.receiver.delivered_bytes;
            let established = f.sender.conn() == Conn::Established;
            let row = FlowSample {
                t_ns: now,
                t_s: now as f64 / 1e9,
                flow: i as u64,
                cwnd_pkts: tp.snd_cwnd as f64,
                ssthresh_pkts: if tp.snd_ssthresh >= ccfair_cc::sock::TCP_INFINITE_SSTHRESH {
                    f64::INFINITY
                } else {
                    tp.snd_ssthresh as f64
                },
                inflight_pkts: tp.packets_in_flight() as f64,
                srtt_ms: if srtt == 0 {
                    f64::NAN
                } else {
                    srtt as f64 / 1e3
                },
                min_rtt_ms: if tp.min_rtt_us == u32::MAX {
                    f64::NAN
                } else {
                    tp.min_rtt_us as f64 / 1e3
                },
                rto_ms: f.sender.rto_us() as f64 / 1e3,
                pacing_rate_mbps: if pr == 0 || pr == u64::MAX {
                    f64::NAN
                } else {
                    pr as f64 * 8.0 / 1e6
                },
                delivery_rate_mbps: f.sender.delivery_rate_bps() * 8.0 / 1e6,
                goodput_mbps: if dt > 0 {
                    bytes as f64 * 8e3 / dt as f64
                } else {
                    0.0
                },
                retrans_pkts: f.sender.stats.retrans_pkts,
                tcp_ca_state: tp.ca_state.as_str(),
                // The algorithm starts when the handshake completes (as the kernel backend
                // reports a socket in SYN_SENT).
                cca_state: if established {
                    f.sender.cc.state_name(tp)
                } else {
                    "connecting"
                },
            };
            self.metric_buf.clear();
            if established {
                f.sender.cc.sample_metrics(tp, &mut self.metric_buf);
            }
            self.fseries.push(&row, &self.metric_buf);
        }
        for (ch, c) in self.channels.iter_mut().enumerate() {
            // This sample was scheduled by the one before (the first at the start).
            c.advance_for(now, self.last_sample_ns);
            let counters = c.counters();
            let prev = &self.last_channel_counters[ch];
            let row = record::link_sample(now, ch, c, prev, &counters, dt);
            self.lseries.push(&row);
            self.last_channel_counters[ch] = counters;
        }
        self.last_sample_ns = now;
    }

    /// Per flow: (data sent, received, dropped, in network), (acks sent, received, dropped,
    /// in network). Conservation requires sent = received + dropped + in network. A drop
    /// decided ahead of its time (a fed-ahead channel) is still in the network until then.
    pub fn conservation(&self) -> Vec<([u64; 4], [u64; 4])> {
        let mut in_net = vec![(0u64, 0u64); self.flows.len()];
        for c in &self.channels {
            c.for_each_held(|&r| {
                let p = self.packets.get(r);
                match p.kind {
                    Kind::Data => in_net[p.flow as usize].0 += 1,
                    Kind::Ack => in_net[p.flow as usize].1 += 1,
                    Kind::Syn | Kind::SynAck | Kind::HandshakeAck => {}
                }
            });
        }
        let mut dropped_ahead = vec![(0u64, 0u64); self.flows.len()];
        for &(t, flow, kind) in self.drops_ahead.iter() {
            if t > self.now {
                match kind {
                    Kind::Data => dropped_ahead[flow as usize].0 += 1,
                    Kind::Ack => dropped_ahead[flow as usize].1 += 1,
                    Kind::Syn | Kind::SynAck | Kind::HandshakeAck => {}
                }
            }
        }
        self.flows
            .iter()
            .zip(in_net)
            .zip(dropped_ahead)
            .map(|((f, (d, a)), (dd, da))| {
                (
                    [
                        f.sender.stats.data_pkts_sent,
                        f.receiver.data_pkts_received,
                        f.data_dropped - dd,
                        d + dd,
                    ],
                    [
                        f.receiver.acks_sent,
                        f.acks_received,
                        f.acks_dropped - da,
                        a + da,
                    ],
                )
            })
            .collect()
    }

    /// `EngineStats::packet_state_bytes`.
    fn packet_state_bytes(&self) -> u64 {
        self.packets.reserved_bytes()
            + self
                .flows
                .iter()
                .map(|f| f.sender.reserved_segment_bytes())
                .sum::<u64>()
            + self
                .channels
                .iter()
                .map(Channel::reserved_bytes)
                .sum::<u64>()
    }

    #[inline(never)]
    fn finish(mut self) -> RunResult {
        let final_counters = self.channel_counters(u64::MAX);
        self.stats.packet_hops = final_counters.iter().map(|c| c.tx_pkts).sum();
        self.stats.packet_state_bytes = self.packet_state_bytes();
        self.stats.peak_packets = self.packets.slots() as u64;
        let cons = self.conservation();
        for (i, (d, a)) in cons.iter().enumerate() {
            debug_assert_eq!(
                d[0],
                d[1] + d[2] + d[3],
                "data conservation, flow {i}: {d:?}"
            );
            debug_assert_eq!(
                a[0],
                a[1] + a[2] + a[3],
                "ack conservation, flow {i}: {a:?}"
            );
        }
        let window_ns = (self.spec.measure_end_ns - self.spec.measure_start_ns) as f64;
        let end_counters = self.measure_end_counters.clone().unwrap_or(final_counters);
        let mut rows: Vec<FlowSummary> = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| flow_summary(i, f, &cons[i], window_ns))
            .collect();
        record::fill_flow_delays(&self.spec, &self.fseries.samples, &mut rows);
        let counters: Vec<Vec<(&'static str, f64)>> = self
            .flows
            .iter()
            .map(|f| {
                let mut buf = Vec::new();
                f.sender.cc.summary_counters(&f.sender.tp, &mut buf);
                buf
            })
            .collect();
        let extras = record::link_extras(&self.spec, &self.channels);
        let link_rows = record::link_summaries(
            &self.spec,
            &self.measure_start_counters,
            &end_counters,
            &self.lseries,
            &extras,
        );
        RunResult {
            flows: record::flows_table(&rows, None, &counters),
            timeseries: self.fseries.into_table(),
            links: self.lseries.into_table(),
            link_summary: record::link_summary_table(&link_rows),
            trace: self.trace.map(Trace::into_table),
            stats: self.stats,
        }
    }
}

/// A flow's summary row (delay percentiles are filled from the samples afterwards), with
/// its packet counts from `conservation`.
fn flow_summary(
    i: usize,
    f: &Flow,
    (data, acks): &([u64; 4], [u64; 4]),
    window_ns: f64,
) -> FlowSummary {
    let s = &f.sender.stats;
    let window_bytes =
        f.bytes_at_measure_end.unwrap_or(f.receiver.delivered_bytes) - f.bytes_at_measure_start;
    let c = connection_columns(&f.conn);
    FlowSummary {
        flow: i as u64,
        delivered_bytes: f.receiver.delivered_bytes,
        window_delivered_bytes: window_bytes,
        goodput_mbps: window_bytes as f64 * 8e3 / window_ns,
        data_sent_pkts: s.data_pkts_sent,
        data_received_pkts: f.receiver.data_pkts_received,
        data_dropped_pkts: data[2],
        data_in_network_pkts: data[3],
        retrans_pkts: s.retrans_pkts,
        rto_count: s.rto_count,
        tlp_count: s.tlp_count,
        recovery_count: s.recoveries,
        undo_count: s.undo_count,
        ack_sent_pkts: f.receiver.acks_sent,
        ack_dropped_pkts: acks[2],
        rtt_mean_ms: if s.rtt_samples == 0 {
            f64::NAN
        } else {
            s.rtt_sum_us as f64 / s.rtt_samples as f64 / 1e3
        },
        rtt_min_ms: match s.rtt_min_us {
            u64::MAX => f64::NAN,
            v => v as f64 / 1e3,
        },
        rtt_p50_ms: f64::NAN,
        rtt_p95_ms: f64::NAN,
        rtt_p99_ms: f64::NAN,
        qdelay_mean_ms: f64::NAN,
        qdelay_p50_ms: f64::NAN,
        qdelay_p95_ms: f64::NAN,
        qdelay_p99_ms: f64::NAN,
        completion_time_s: match f.sender.completed_ns {
            Some(t) => (t - f.start_ns) as f64 / 1e9,
            None => f64::NAN,
        },
        syn_sent_s: c.syn_sent_s,
        first_data_sent_s: c.first_data_sent_s,
        handshake_rtt_ms: c.handshake_rtt_ms,
        syn_retrans_pkts: c.syn_retrans_pkts,
        ecn_negotiated: if f.sender.tp.ecn_ok { 1.0 } else { 0.0 },
        ce_received_pkts: f.receiver.ce_received() as f64,
        ece_received_pkts: s.ece_acks as f64,
        ecn_reduction_count: s.ecn_reductions as f64,
    }
}

/// Record a flow's SYN or first data segment entering the network.
fn note_sent(conn: &mut ConnectionTimes, pkt: &Packet, now: u64) {
    match pkt.kind {
        Kind::Syn => {
            conn.syns_sent += 1;
            conn.syn_sent_ns.get_or_insert(now);
        }
        Kind::Data => {
            conn.first_data_sent_ns.get_or_insert(now);
        }
        _ => {}
    }
}

/// When a flow's connection packets entered the network (ns after t = 0). Both backends
/// fill the same columns from these (see [`connection_columns`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct ConnectionTimes {
    /// The first SYN entered the network.
    pub syn_sent_ns: Option<u64>,
    /// The first SYN-ACK reached the sender's host.
    pub synack_delivered_ns: Option<u64>,
    /// The first data segment entered the network.
    pub first_data_sent_ns: Option<u64>,
    /// SYNs the sender sent (more than one: the SYN or the SYN-ACK was lost).
    pub syns_sent: u64,
}

/// The flows table's connection columns of one flow: `syn_sent_s` and `first_data_sent_s`
/// (s after t = 0; NaN if it never happened), `handshake_rtt_ms` (first SYN sent to SYN-ACK
/// received: the handshake RTT Linux samples first, when no SYN was lost) and
/// `syn_retrans_pkts`. Both backends fill their summaries from these.
pub fn connection_columns(c: &ConnectionTimes) -> ConnectionColumns {
    let secs = |t: Option<u64>| t.map_or(f64::NAN, |t| t as f64 / 1e9);
    ConnectionColumns {
        syn_sent_s: secs(c.syn_sent_ns),
        first_data_sent_s: secs(c.first_data_sent_ns),
        handshake_rtt_ms: match (c.syn_sent_ns, c.synack_delivered_ns) {
            (Some(s), Some(a)) if a >= s => (a - s) as f64 / 1e6,
            _ => f64::NAN,
        },
        syn_retrans_pkts: c.syns_sent.saturating_sub(1),
    }
}

/// See [`connection_columns`].
pub struct ConnectionColumns {
    /// When the first SYN entered the network, s after t = 0 (NaN if never).
    pub syn_sent_s: f64,
    /// When the first data segment entered the network, s after t = 0 (NaN if never).
    pub first_data_sent_s: f64,
    /// First SYN sent to first SYN-ACK received, ms (NaN if either never happened).
    pub handshake_rtt_ms: f64,
    /// SYNs sent beyond the first.
    pub syn_retrans_pkts: u64,
}

/// The channels of a spec (channel `2i` = link `i` a->b, `2i + 1` = b->a), each with its
/// random-loss stream (seed, STREAM_CHANNEL, link, direction). Both backends build their
/// links here, so the same seed gives the same losses.
pub fn build_channels<P: OnWire>(spec: &RunSpec) -> Vec<Channel<P>> {
    build_channels_at(spec, 0)
}

/// `build_channels` for links created at `origin_ns` (the kernel backend's clock): the
/// time the queue disciplines' timers count from.
pub fn build_channels_at<P: OnWire>(spec: &RunSpec, origin_ns: u64) -> Vec<Channel<P>> {
    let mut channels = Vec::with_capacity(spec.links.len() * 2);
    let window = (spec.measure_start_ns, spec.measure_end_ns);
    for (i, l) in spec.links.iter().enumerate() {
        let qdisc = l
            .qdisc_config()
            .expect("the link's queue discipline is checked with the spec");
        for (dir, loss) in [(0u64, l.loss_ab), (1, l.loss_ba)] {
            let seed = derive_seed(spec.seed, &[STREAM_CHANNEL, i as u64, dir]);
            let mut channel = Channel::new(l.rate_bps, l.delay_ns, l.buffer_pkts, loss, seed);
            channel.queue = l.queue;
            if let Some(config) = &qdisc {
                let seed = derive_seed(spec.seed, &[STREAM_QDISC, i as u64, dir]);
                channel.set_qdisc(config, ccfair_cc::rng::Rng::new(seed), origin_ns, window);
            }
            channels.push(channel);
        }
    }
    channels
}

/// The key a queue discipline classifies a packet of flow `flow` by: 2 x flow, plus 1 on
/// the ACK path (as a 5-tuple differs between a connection's two directions).
pub fn flow_key(flow: usize, ack_path: bool) -> u32 {
    2 * flow as u32 + ack_path as u32
}

/// Per channel, for fq_codel: how many of the flow directions crossing it share their
/// queue with another (NaN for other queues). Both backends report it.
pub fn fq_shared_flows<P: OnWire>(spec: &RunSpec, channels: &[Channel<P>]) -> Vec<f64> {
    let mut keys: Vec<Vec<u32>> = vec![Vec::new(); channels.len()];
    for (i, f) in spec.flows.iter().enumerate() {
        for (path, ack) in [(&f.path, false), (&f.ack_path, true)] {
            for &c in path {
                if c < keys.len() && channels[c].fq_queue_of(0).is_some() {
                    keys[c].push(flow_key(i, ack));
                }
            }
        }
    }
    channels
        .iter()
        .zip(keys)
        .map(|(ch, mut keys)| {
            if ch.fq_queue_of(0).is_none() {
                return f64::NAN;
            }
            keys.sort_unstable();
            keys.dedup();
            let mut queues: Vec<usize> = keys.iter().filter_map(|&k| ch.fq_queue_of(k)).collect();
            queues.sort_unstable();
            let shared = |j: usize| {
                (j > 0 && queues[j - 1] == queues[j])
                    || (j + 1 < queues.len() && queues[j + 1] == queues[j])
            };
            (0..queues.len()).filter(|&j| shared(j)).count() as f64
        })
        .collect()
}

/// Which channels the engine feeds ahead of time (`Channel::feed_ahead`).
///
/// A packet leaving channel `c` would reach the next one, `d`, at the time `c`'s pipe gives;
/// the engine can offer it to `d` when it enters `c` instead (one event per packet fewer)
/// when nothing else can reach `d` in between: every path that crosses `d` comes to it from
/// `c`, and no host sends on it directly. Then `d` receives its packets in the order `c`
/// delivers them (first in, first out, one delay), at the times it would have, and the
/// packet's fate on `d` is decided from the same state. In a dumbbell these are the links
/// from the far switch to each host, in both directions. Both channels must be drop-tail
/// (a netem limit counts its pipe), and nothing is fed ahead while packets are traced, so
/// that trace rows come in time order. Of a longer chain of channels each fed by the one
/// before, every `MAX_FEED_AHEAD_RUN + 1`-th is not fed ahead (memory, see there).
fn feed_ahead<P: OnWire>(spec: &RunSpec, channels: &mut [Channel<P>]) {
    #[derive(Clone, Copy, PartialEq)]
    enum Feeder {
        Nothing,
        Only(usize),
        Several,
    }
    let mut feeder = vec![Feeder::Nothing; channels.len()];
    if !spec.trace_flows.is_empty() {
        return;
    }
    for f in &spec.flows {
        for route in [&f.path, &f.ack_path] {
            for (k, &d) in route.iter().enumerate() {
                feeder[d] = match (k.checked_sub(1).map(|j| route[j]), feeder[d]) {
                    (Some(c), Feeder::Nothing) => Feeder::Only(c),
                    (Some(c), Feeder::Only(b)) if b == c => Feeder::Only(c),
                    _ => Feeder::Several,
                };
            }
        }
    }
    let can_feed = |d: usize| match feeder[d] {
        Feeder::Only(c) => (channels[c].queue == Queue::Droptail
            && channels[d].queue == Queue::Droptail)
            .then_some(c),
        _ => None,
    };
    // Fed ahead in a row: 0 for a channel not fed ahead, else 1 + its feeder's. A feeder
    // chain follows routes, which do not loop, so it ends within `channels.len()` steps.
    let mut run = vec![usize::MAX; channels.len()];
    let mut chain = Vec::new();
    for start in 0..channels.len() {
        let mut d = start;
        while run[d] == usize::MAX {
            chain.push(d);
            match can_feed(d) {
                Some(c) if chain.len() <= channels.len() => d = c,
                _ => break,
            }
        }
        let mut below = if run[d] == usize::MAX { 0 } else { run[d] };
        while let Some(d) = chain.pop() {
            if run[d] != usize::MAX {
                below = run[d];
                continue;
            }
            run[d] = match can_feed(d) {
                Some(_) if below < MAX_FEED_AHEAD_RUN => below + 1,
                _ => 0,
            };
            below = run[d];
        }
    }
    for (d, &r) in run.iter().enumerate() {
        if r > 0 {
            channels[d].feed_ahead();
        }
    }
}

/// Parse a resolved spec from JSON, check its resource estimate against `limits`, and run it
/// within the event limit.
pub fn run_json(spec_json: &str, limits: &Limits) -> Result<RunResult, SimError> {
    let spec = parse_spec(spec_json)?;
    spec.estimate().check(limits)?;
    Simulation::new(spec)?.run_bounded(limits.events)
}

/// Parse a resolved spec from JSON and check its structure; a field of the wrong shape is
/// named by its path (serde_path_to_error).
pub fn parse_spec(spec_json: &str) -> Result<RunSpec, SimError> {
    let mut de = serde_json::Deserializer::from_str(spec_json);
    let spec: RunSpec = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        if path == "." {
            SimError::Parse(message)
        } else {
            SimError::spec(path, message)
        }
    })?;
    spec.check()?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::spec::{FlowSpec, LinkSpec, TcpOptions};

    fn two_node_spec(rate_bps: u64, delay_ns: u64, duration_ns: u64) -> RunSpec {
        RunSpec {
            duration_ns,
            seed: 1,
            sample_interval_ns: duration_ns,
            measure_start_ns: 0,
            measure_end_ns: duration_ns,
            nodes: vec!["a".into(), "b".into()],
            links: vec![LinkSpec {
                name: "l".into(),
                a: 0,
                b: 1,
                rate_bps,
                delay_ns,
                buffer_pkts: 100,
                loss_ab: 0.0,
                loss_ba: 0.0,
                queue: Default::default(),
                qdisc: serde_json::Value::Null,
            }],
            flows: vec![FlowSpec {
                name: "f".into(),
                src: 0,
                dst: 1,
                path: vec![0],
                ack_path: vec![1],
                cca: "cubic".into(),
                cca_params: serde_json::Value::Null,
                start_ns: 0,
                start_jitter_ns: 0,
                stop_ns: None,
                size_bytes: None,
                tcp: TcpOptions {
                    app_latency: crate::host::Latency::None,
                    host_latency: crate::host::Latency::None,
                    ..TcpOptions::default()
                },
            }],
            trace_flows: vec![],
        }
    }

    #[test]
    fn the_event_budget_stops_a_run_with_an_error() {
        let sim = Simulation::new(two_node_spec(10_000_000, 1_000_000, 10_000_000_000)).unwrap();
        let err = sim.run_bounded(1000).err().expect("stopped");
        assert!(
            matches!(&err, SimError::Stopped(m) if m.contains("budget of 1000 events")),
            "{err:?}"
        );
    }

    #[test]
    fn a_zero_delay_terabit_link_still_advances_the_clock() {
        // 100 Tbit/s: a 52-byte ACK takes 0.004 ns, rounded up to the 1 ns floor.
        let ch: Channel<Packet> = Channel::new(100_000_000_000_000, 0, 10, 0.0, 1);
        assert_eq!(ch.serialisation_ns(52), 1);
        let r = Simulation::new(two_node_spec(100_000_000_000_000, 0, 1_000_000))
            .unwrap()
            .run_bounded(100_000_000)
            .expect("finishes");
        assert!(r.stats.events > 0);
    }

    /// What the engine does with a queue discipline's reports: a packet it marks gets CE in
    /// the packet slab (where its end host reads it), a packet it drops is freed and counted.
    /// ECT(0) and Not-ECT packets overload a CoDel link with ECN on, driven as the event loop
    /// drives it (the TCP ends are not involved: nothing in them sends ECT packets yet).
    #[test]
    fn a_queue_disciplines_marks_reach_the_packets() {
        let mut spec = two_node_spec(12_000_000, 1_000_000, 10_000_000_000);
        spec.links[0].queue = Queue::Codel;
        spec.links[0].qdisc = serde_json::json!({"ecn": true});
        spec.links[0].buffer_pkts = 10_000;
        let mut sim = Simulation::new(spec).unwrap();
        let template = Packet {
            flow: 0,
            kind: Kind::Data,
            wire_bytes: 1500,
            seq: 0,
            payload_bytes: 1448,
            tsval: 0,
            tsecr: 0,
            n_sack: 0,
            ecn: Ecn::NotEct,
            tcp_flags: crate::packet::TcpFlags::NONE,
            window_bytes: 0,
            sack: crate::packet::NO_SACK,
        };
        let first = sim.flows[0].route_start[0];
        let mut delivered = Vec::new();
        // Run the engine's channel events up to `t`, keeping what reaches the far end.
        let run_until = |sim: &mut Simulation, t: u64, delivered: &mut Vec<PacketRef>| {
            while let Some((at, ev)) = sim.queue.peek() {
                if at > t {
                    break;
                }
                sim.queue.pop();
                sim.now = at;
                match ev {
                    Event::ChannelWake(ch) => {
                        let s = sim.channels[ch as usize].qdisc_serve(at);
                        sim.after_qdisc(ch, s);
                    }
                    Event::ChannelArrival(ch) => {
                        let (r, next) = sim.channels[ch as usize].arrival();
                        delivered.push(r);
                        if let Some(n) = next {
                            sim.queue.push(n, Event::ChannelArrival(ch));
                        }
                    }
                    _ => {}
                }
            }
        };
        let n = 3000u64;
        for k in 0..n {
            let t = k * 666_667;
            run_until(&mut sim, t, &mut delivered);
            sim.now = t;
            let pkt = Packet {
                seq: k,
                ecn: if k % 2 == 0 { Ecn::Ect0 } else { Ecn::NotEct },
                ..template
            };
            let r = sim.packets.insert(&pkt, first);
            sim.forward(t, r);
        }
        run_until(&mut sim, u64::MAX, &mut delivered);
        let got: Vec<Packet> = delivered.iter().map(|&r| *sim.packets.get(r)).collect();
        let marked = got.iter().filter(|p| p.ecn == Ecn::Ce).count() as u64;
        assert!(marked > 10, "{marked} marked");
        assert!(got.iter().all(|p| p.ecn != Ecn::Ce || p.seq % 2 == 0));
        // Only Not-ECT packets were dropped, each freed and counted.
        let dropped = sim.flows[0].data_dropped;
        assert!(dropped > 0);
        assert_eq!(got.len() as u64 + dropped, n);
        assert_eq!(sim.packets.len(), got.len());
        sim.channels[0].advance(u64::MAX);
        let c = sim.channels[0].counters();
        assert_eq!((c.marks_aqm, c.drops_aqm), (marked, dropped));
    }
}
