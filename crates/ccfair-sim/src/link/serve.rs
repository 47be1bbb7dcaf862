//! A channel whose queue is a queue discipline (`qdisc/`): served packet by packet.
//!
//! A drop-tail channel knows a packet's departure when it accepts it. A queue discipline
//! decides when the serialiser asks for a packet: CoDel and fq_codel drop at dequeue,
//! fq_codel picks which flow sends. So this channel works as a Linux device with its root
//! qdisc: an arriving packet is enqueued (the discipline may drop or mark it), and whenever
//! the serialiser is free it dequeues the next packet and serialises it; an empty dequeue
//! leaves it idle until the next arrival. A packet that meets an empty queue and an idle
//! serialiser skips CoDel and fq_codel altogether (`TCQ_F_CAN_BYPASS` in `__dev_xmit_skb`).
//!
//! Time: the channel processes its own moments in time order (serialiser free, the
//! discipline's timer, packets arriving) up to the time it is asked about (`serve_until`),
//! departures first at equal times, as the drop-tail channel's rule for simultaneous
//! events. So a decision depends on the channel's state at that moment, never on the order
//! in which the engine ran simultaneous events. The engine must wake the channel when a
//! dequeue is due and packets wait (an event per departure under load), and when a packet
//! offered ahead of time arrives (a host's packets enter their first link after the host's
//! turnaround): the channel says when (`Service::wake`). The timers of PIE and adaptive RED
//! need no event: their effect is computed when the channel next serves, in order.
//!
//! A question (a sample, the measurement window's counters) does not serve the channel: it
//! reads the state as of its time (`qdisc_view`), so how often a run is sampled changes no
//! result.
//!
//! What the discipline drops or marks is reported through its sink (`qdisc::Sink`) for the
//! engine to take (`Channel::qdisc_take`): it frees a dropped packet, and writes CE into a
//! marked one (the simulator's channels carry references without the ECN field; the
//! kernel backend's packets carry it, `OnWire::mark_ce`). A packet lost on the wire at
//! random (the link's loss probability) is lost after its serialisation, as on a drop-tail
//! channel.

use std::collections::VecDeque;

use super::{Channel, ChannelCounters, OnWire};
use crate::packet::Ecn;
use crate::qdisc::{Fate, Qdisc, QdiscConfig, Queued, Sink};
use crate::sojourn::SojournHistogram;

/// A packet offered before it reaches the channel.
#[derive(Clone, Copy, Debug)]
struct Inbound<P> {
    t_ns: u64,
    pkt: P,
    key: u32,
    ecn: Ecn,
}

/// What the engine must schedule after a call: the arrival of the first packet put into
/// an empty pipe, and a wake-up of the channel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Service {
    /// When the first packet put into an empty propagation pipe reaches the far end (ns), to
    /// schedule as a `ChannelArrival`.
    pub arrival: Option<u64>,
    /// When the queue discipline next needs the channel (ns), to schedule as a `ChannelWake`.
    pub wake: Option<u64>,
}

/// Running totals of the packets the serialiser took (their counts as of departure are
/// these minus the packet in service).
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    arrivals: u64,
    tx_pkts: u64,
    tx_bytes: u64,
    sojourn_ns_sum: u64,
}

/// The state of a channel served through a queue discipline.
pub struct Serve<P> {
    qdisc: Qdisc<P>,
    inbox: VecDeque<Inbound<P>>,
    busy: bool,
    /// When the packet in service finishes serialising (when `busy`).
    busy_until: u64,
    /// Bytes and sojourn of the packet in service.
    in_service: (u32, u64),
    /// The time the channel has been served up to.
    served_to: u64,
    /// The time its counters describe (`advance_for`): a packet whose serialisation ended
    /// by then has left, even if the dequeue that follows is still to run at that instant.
    view_ns: u64,
    sink: Sink<P>,
    totals: Totals,
    sojourn: SojournHistogram,
    /// The first packet put into an empty pipe since the last report.
    arrival_pending: Option<u64>,
    /// The time of the wake-up the engine has scheduled (`u64::MAX`: none).
    wake_scheduled: u64,
}

impl<P: OnWire> Serve<P> {
    /// Room for `packets` waiting.
    pub(super) fn reserve(&mut self, packets: usize) {
        self.qdisc.reserve(packets);
    }

    /// The earliest moment the engine must wake the channel for: a dequeue while packets
    /// wait, or a packet offered ahead arriving.
    fn next_wake(&self) -> u64 {
        let dequeue = if self.busy && !self.qdisc.is_empty() {
            self.busy_until
        } else {
            u64::MAX
        };
        dequeue.min(self.inbox.front().map_or(u64::MAX, |i| i.t_ns))
    }
}

impl<P: OnWire> Channel<P> {
    /// Serve this channel through the queue discipline `config` (channel creation; its
    /// timers count from `origin_ns`), with `rng` for its random draws (PIE, RED, the
    /// fq_codel hash key), counting sojourn percentiles over `(start_ns, end_ns]`.
    pub fn set_qdisc(
        &mut self,
        config: &QdiscConfig,
        rng: ccfair_cc::rng::Rng,
        origin_ns: u64,
        window: (u64, u64),
    ) {
        debug_assert!(self.queue.is_qdisc() && !self.fed_ahead);
        self.serve = Some(Box::new(Serve {
            qdisc: Qdisc::new(config, self.buffer_pkts, self.rate_bps, origin_ns, rng),
            inbox: VecDeque::new(),
            busy: false,
            busy_until: 0,
            in_service: (0, 0),
            served_to: 0,
            view_ns: 0,
            sink: Sink::default(),
            totals: Totals::default(),
            sojourn: SojournHistogram::with_window(window.0, window.1),
            arrival_pending: None,
            wake_scheduled: u64::MAX,
        }));
    }

    /// Count sojourn percentiles over `(start_ns, end_ns]` (the kernel backend knows its
    /// window once the run starts). Forgets what was counted.
    pub fn set_sojourn_window(&mut self, start_ns: u64, end_ns: u64) {
        if let Some(s) = self.serve.as_mut() {
            s.sojourn = SojournHistogram::with_window(start_ns, end_ns);
        }
    }

    /// Report acceptances and marks too (traced runs).
    pub fn trace_qdisc(&mut self) {
        if let Some(s) = self.serve.as_mut() {
            s.sink.traced = true;
        }
    }

    /// Whether this channel runs a queue discipline.
    #[inline(always)]
    pub fn has_qdisc(&self) -> bool {
        self.queue.is_qdisc()
    }

    /// The queue discipline's state, if the channel runs one.
    #[inline]
    pub(super) fn qdisc_state(&self) -> Option<&Serve<P>> {
        if self.queue.is_qdisc() {
            self.serve.as_deref()
        } else {
            None
        }
    }

    /// Offer a packet that reaches the channel at `t_ns` (`now_ns` or later), of the flow
    /// and direction `key`, with the ECN field `ecn`, at the engine's time `now_ns`.
    pub fn qdisc_offer(&mut self, now_ns: u64, t_ns: u64, pkt: P, key: u32, ecn: Ecn) -> Service {
        let mut s = self
            .serve
            .take()
            .expect("a channel with a queue discipline");
        if t_ns > now_ns {
            // After the others offered for the same time (a host's packets in order).
            let at = s.inbox.partition_point(|i| i.t_ns <= t_ns);
            let inbound = Inbound {
                t_ns,
                pkt,
                key,
                ecn,
            };
            s.inbox.insert(at, inbound);
        } else {
            self.serve_until(&mut s, now_ns);
            self.arrive(&mut s, now_ns, pkt, key, ecn);
        }
        let service = Self::report(&mut s);
        self.serve = Some(s);
        service
    }

    /// Bring the channel up to `now_ns` (a wake-up the channel asked for).
    pub fn qdisc_serve(&mut self, now_ns: u64) -> Service {
        let mut s = self
            .serve
            .take()
            .expect("a channel with a queue discipline");
        if s.wake_scheduled <= now_ns {
            // That wake-up is now (or runs later at this same time, finding nothing to do).
            s.wake_scheduled = u64::MAX;
        }
        self.serve_until(&mut s, now_ns);
        let service = Self::report(&mut s);
        self.serve = Some(s);
        service
    }

    /// The next packet the discipline dropped (the engine frees it), or, traced, accepted
    /// or marked, with the time.
    pub fn qdisc_take(&mut self) -> Option<(u64, P, Fate)> {
        self.serve.as_mut()?.sink.take()
    }

    fn report(s: &mut Serve<P>) -> Service {
        let next = s.next_wake();
        let wake = if next < s.wake_scheduled {
            s.wake_scheduled = next;
            Some(next)
        } else {
            None
        };
        Service {
            arrival: s.arrival_pending.take(),
            wake,
        }
    }

    /// Process the channel's moments up to `now_ns`, in time order: a departure (the
    /// serialiser asks for the next packet) before the discipline's timer before arrivals.
    fn serve_until(&mut self, s: &mut Serve<P>, now_ns: u64) {
        loop {
            let free = if s.busy { s.busy_until } else { u64::MAX };
            let timer = s.qdisc.next_timer_ns();
            let inbound = s.inbox.front().map_or(u64::MAX, |i| i.t_ns);
            let t = free.min(timer).min(inbound);
            if t > now_ns {
                break;
            }
            if t == free {
                s.busy = false;
                self.dequeue(s, t);
            } else if t == timer {
                s.qdisc.on_timer();
            } else {
                let i = s.inbox.pop_front().expect("an inbound packet");
                self.arrive(s, i.t_ns, i.pkt, i.key, i.ecn);
            }
        }
        s.served_to = s.served_to.max(now_ns);
    }

    /// A packet reaches the channel at `t_ns`.
    fn arrive(&mut self, s: &mut Serve<P>, t_ns: u64, pkt: P, key: u32, ecn: Ecn) {
        s.totals.arrivals += 1;
        let item = Queued {
            pkt,
            enqueue_ns: t_ns,
            ecn,
        };
        if !s.busy && s.qdisc.is_empty() && s.qdisc.can_bypass() {
            s.sink.enqueued(t_ns, pkt);
            self.transmit(s, t_ns, item);
            return;
        }
        s.qdisc.enqueue(item, key, &mut s.sink);
        if !s.busy {
            self.dequeue(s, t_ns);
        }
    }

    /// The serialiser is free at `t_ns`: the next packet, if any, starts.
    fn dequeue(&mut self, s: &mut Serve<P>, t_ns: u64) {
        if let Some(item) = s.qdisc.dequeue(t_ns, &mut s.sink) {
            self.transmit(s, t_ns, item);
        }
    }

    /// Serialise `item` from `t_ns`; then it propagates, or is lost on the wire.
    fn transmit(&mut self, s: &mut Serve<P>, t_ns: u64, item: Queued<P>) {
        let bytes = item.pkt.wire_bytes();
        if self.last_size.0 != bytes {
            self.last_size = (bytes, self.serialisation_ns(bytes));
        }
        let departure = t_ns + self.last_size.1;
        let sojourn = departure - item.enqueue_ns;
        s.busy = true;
        s.busy_until = departure;
        s.in_service = (bytes, sojourn);
        s.totals.tx_pkts += 1;
        s.totals.tx_bytes += bytes as u64;
        s.totals.sojourn_ns_sum += sojourn;
        s.sojourn.record(departure, sojourn);
        if self.loss_prob > 0.0 && self.rng.uniform() < self.loss_prob {
            s.sink
                .drop(departure, item.pkt, crate::qdisc::DropCause::Random);
            return;
        }
        if let Some(at) = self.into_pipe(departure + self.delay_ns, item.pkt) {
            s.arrival_pending.get_or_insert(at);
        }
    }

    /// The counters describe the channel at `now_ns` (read-only: a question does not serve
    /// the channel, so that what is asked when changes no result).
    pub(super) fn qdisc_view(&mut self, now_ns: u64) {
        if let Some(s) = self.serve.as_mut() {
            s.view_ns = now_ns;
        }
    }

    /// Whether a packet is being serialised at the time the counters describe.
    fn serialising(s: &Serve<P>) -> bool {
        s.busy && s.busy_until > s.view_ns
    }

    /// Counters as of `view_ns`.
    pub(super) fn qdisc_counters(&self, s: &Serve<P>) -> ChannelCounters {
        let serialising = Self::serialising(s);
        let in_service = |v: u64| if serialising { v } else { 0 };
        let c = s.sink.counts;
        let fq = s.qdisc.fq_stats().unwrap_or_default();
        ChannelCounters {
            arrivals: s.totals.arrivals,
            drops_queue: c.drops_overlimit,
            drops_random: c.drops_random,
            drops_aqm: c.drops_aqm,
            marks_aqm: c.marks_aqm,
            marks_ce_threshold: c.marks_ce_threshold,
            fq_new_flows: fq.new_flow_count,
            fq_drops_overmemory: fq.drop_overmemory,
            tx_pkts: s.totals.tx_pkts - in_service(1),
            tx_bytes: s.totals.tx_bytes - in_service(s.in_service.0 as u64),
            sojourn_ns_sum: s.totals.sojourn_ns_sum - in_service(s.in_service.1),
        }
    }

    /// Packets waiting and in service as of `view_ns`.
    pub(super) fn qdisc_occupancy(s: &Serve<P>) -> (usize, u64) {
        let (pkts, bytes) = if Self::serialising(s) {
            (1, s.in_service.0 as u64)
        } else {
            (0, 0)
        };
        (s.qdisc.len() + pkts, s.qdisc.backlog_bytes() + bytes)
    }

    /// The sojourn times' 50th, 95th and 99th percentiles over the window, in ms (NaN
    /// without a queue discipline or without packets).
    pub fn sojourn_percentiles_ms(&self) -> [f64; 3] {
        match &self.serve {
            Some(s) => [50.0, 95.0, 99.0].map(|q| s.sojourn.percentile_ns(q) / 1e6),
            None => [f64::NAN; 3],
        }
    }

    /// fq_codel's queue for a flow and direction (`None` for other queues).
    pub fn fq_queue_of(&self, key: u32) -> Option<usize> {
        match &self.serve.as_ref()?.qdisc {
            Qdisc::FqCodel(q) => Some(q.queue_of(key)),
            _ => None,
        }
    }

    /// Packets held besides the pipe: offered ahead, waiting, and the one in service when
    /// it is not in the pipe yet (never: it enters the pipe as it starts).
    pub(super) fn qdisc_for_each(s: &Serve<P>, f: &mut dyn FnMut(&P)) {
        for i in &s.inbox {
            f(&i.pkt);
        }
        s.qdisc.for_each(f);
    }

    pub(super) fn qdisc_reserved_bytes(s: &Serve<P>) -> u64 {
        s.qdisc.reserved_bytes()
            + s.sojourn.reserved_bytes()
            + (s.inbox.capacity() * std::mem::size_of::<Inbound<P>>()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Ecn, Kind, Packet, TcpFlags, NO_SACK};
    use crate::qdisc::params::{CodelParams, PieParams};
    use crate::qdisc::DropCause;
    use crate::spec::Queue;
    use ccfair_cc::rng::Rng;

    fn pkt(seq: u64, ecn: Ecn) -> Packet {
        Packet {
            flow: 0,
            kind: Kind::Data,
            wire_bytes: 1500,
            seq,
            payload_bytes: 1448,
            tsval: 0,
            tsecr: 0,
            n_sack: 0,
            ecn,
            tcp_flags: TcpFlags::NONE,
            window_bytes: 0,
            sack: NO_SACK,
        }
    }

    /// 12 Mbit/s (1 ms per packet), 5 ms delay, a queue discipline of `buffer` packets.
    fn channel(queue: Queue, config: QdiscConfig, buffer: u32) -> Channel<Packet> {
        let mut ch = Channel::new(12_000_000, 5_000_000, buffer, 0.0, 1);
        ch.queue = queue;
        ch.set_qdisc(&config, Rng::new(2), 0, (0, u64::MAX));
        ch
    }

    /// Drives a channel as the engine does: offers packets at their times, runs the
    /// wake-ups and arrivals it asks for in time order, and collects what arrives and what
    /// is dropped.
    struct Driver {
        ch: Channel<Packet>,
        wakes: Vec<u64>,
        next_arrival: Option<u64>,
        arrived: Vec<(u64, Packet)>,
        dropped: Vec<(u64, Packet, DropCause)>,
    }

    impl Driver {
        fn new(ch: Channel<Packet>) -> Self {
            Driver {
                ch,
                wakes: Vec::new(),
                next_arrival: None,
                arrived: Vec::new(),
                dropped: Vec::new(),
            }
        }

        fn absorb(&mut self, s: Service) {
            if let Some(t) = s.arrival {
                assert!(
                    self.next_arrival.is_none(),
                    "an arrival while the pipe was busy"
                );
                self.next_arrival = Some(t);
            }
            if let Some(t) = s.wake {
                self.wakes.push(t);
            }
            while let Some((t, p, fate)) = self.ch.qdisc_take() {
                if let Fate::Dropped(cause) = fate {
                    self.dropped.push((t, p, cause));
                }
            }
        }

        /// Run the channel's events up to `t` (wake-ups before arrivals at equal times).
        fn run_until(&mut self, t: u64) {
            loop {
                let wake = self.wakes.iter().copied().filter(|&w| w <= t).min();
                let arrival = self.next_arrival.filter(|&a| a <= t);
                match (wake, arrival) {
                    (Some(w), a) if a.is_none_or(|a| w <= a) => {
                        self.wakes.retain(|&x| x != w);
                        let s = self.ch.qdisc_serve(w);
                        self.absorb(s);
                    }
                    (_, Some(a)) => {
                        let (p, next) = self.ch.arrival();
                        self.arrived.push((a, p));
                        self.next_arrival = next;
                    }
                    _ => break,
                }
            }
        }

        fn offer(&mut self, now: u64, t: u64, p: Packet) {
            self.run_until(now);
            let s = self.ch.qdisc_offer(now, t, p, 0, p.ecn);
            self.absorb(s);
        }
    }

    /// A burst into an idle CoDel channel: the first packet bypasses the qdisc and leaves
    /// at once, the others one serialisation time apart; every packet reaches the far end
    /// serialisation + delay after it started, in order; counters and occupancy as of
    /// any instant count the packet in service.
    #[test]
    fn a_burst_leaves_back_to_back() {
        let mut d = Driver::new(channel(
            Queue::Codel,
            QdiscConfig::Codel(CodelParams::default()),
            100,
        ));
        for k in 0..10 {
            d.offer(0, 0, pkt(k, Ecn::NotEct));
        }
        d.ch.advance(500_000);
        assert_eq!(d.ch.occupancy_pkts(), 10);
        assert_eq!(d.ch.counters().tx_pkts, 0);
        d.run_until(1_000_000);
        d.ch.advance(1_000_000);
        assert_eq!(d.ch.counters().tx_pkts, 1);
        assert_eq!(d.ch.occupancy_pkts(), 9);
        d.run_until(100_000_000);
        let times: Vec<u64> = d.arrived.iter().map(|&(t, _)| t).collect();
        let expected: Vec<u64> = (1..=10).map(|k| k * 1_000_000 + 5_000_000).collect();
        assert_eq!(times, expected);
        assert!(d.arrived.iter().map(|(_, p)| p.seq).eq(0..10));
        d.ch.advance(100_000_000);
        let c = d.ch.counters();
        assert_eq!((c.arrivals, c.tx_pkts, c.tx_bytes), (10, 10, 15_000));
        // Sojourn: the k-th waited k ms and took 1 ms: sum of (k + 1) ms.
        assert_eq!(c.sojourn_ns_sum, (1..=10).sum::<u64>() * 1_000_000);
        assert_eq!(d.ch.occupancy_pkts(), 0);
    }

    /// Packets offered ahead of their arrival (a host's turnaround) enter at their time,
    /// in time order even when offered out of order, and the channel asks to be woken then.
    #[test]
    fn packets_offered_ahead_enter_at_their_time() {
        let mut d = Driver::new(channel(
            Queue::Pie,
            QdiscConfig::Pie(PieParams::default()),
            100,
        ));
        d.offer(0, 3_000_000, pkt(1, Ecn::NotEct));
        d.offer(0, 2_000_000, pkt(0, Ecn::NotEct));
        d.offer(0, 3_000_000, pkt(2, Ecn::NotEct));
        assert_eq!(d.wakes, vec![3_000_000, 2_000_000]);
        d.ch.advance(1_000_000);
        assert_eq!(d.ch.counters().arrivals, 0);
        d.run_until(50_000_000);
        let got: Vec<(u64, u64)> = d.arrived.iter().map(|&(t, p)| (t, p.seq)).collect();
        assert_eq!(got, vec![(8_000_000, 0), (9_000_000, 1), (10_000_000, 2)]);
    }

    /// With ECN on, CoDel marks ECN-capable packets instead of dropping them: under a
    /// standing overload, ECT(0) packets reach the far end CE and none is dropped by the
    /// AQM, while Not-ECT packets are dropped; the counters say which.
    #[test]
    fn ecn_capable_packets_arrive_marked() {
        let params = CodelParams {
            ecn: true,
            ..CodelParams::default()
        };
        let mut d = Driver::new(channel(Queue::Codel, QdiscConfig::Codel(params), 10_000));
        // 1.5 packets per ms for 3 s, alternately ECT(0) and Not-ECT.
        let mut t = 0;
        let mut k = 0;
        while t < 3_000_000_000 {
            let ecn = if k % 2 == 0 { Ecn::Ect0 } else { Ecn::NotEct };
            d.offer(t, t, pkt(k, ecn));
            t += 666_667;
            k += 1;
        }
        d.run_until(u64::MAX / 2);
        let marked = d.arrived.iter().filter(|(_, p)| p.ecn == Ecn::Ce).count() as u64;
        assert!(marked > 20, "{marked} marked");
        assert!(d
            .arrived
            .iter()
            .all(|(_, p)| p.ecn != Ecn::NotEct || p.seq % 2 == 1));
        let aqm_drops: Vec<&Packet> = d
            .dropped
            .iter()
            .filter(|(_, _, c)| *c == DropCause::Aqm)
            .map(|(_, p, _)| p)
            .collect();
        assert!(!aqm_drops.is_empty());
        assert!(aqm_drops.iter().all(|p| p.ecn == Ecn::NotEct));
        d.ch.advance(u64::MAX / 2);
        let c = d.ch.counters();
        assert_eq!(c.marks_aqm, marked);
        assert_eq!(c.drops_aqm, aqm_drops.len() as u64);
        assert_eq!(c.arrivals, k);
        assert_eq!(c.tx_pkts, d.arrived.len() as u64);
        assert_eq!(c.arrivals, c.tx_pkts + c.drops_aqm + c.drops_queue);
        // The sojourn percentiles cover every packet serialised.
        let [p50, p95, p99] = d.ch.sojourn_percentiles_ms();
        assert!(p50 > 1.0 && p50 <= p95 && p95 <= p99, "{p50} {p95} {p99}");
    }
}
