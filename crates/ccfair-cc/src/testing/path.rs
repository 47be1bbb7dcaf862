//! [`Path`]: bulk flows of [`TestSender`]s over one bottleneck: serialization at a fixed
//! packet rate, a drop-tail buffer, optional random loss, each flow's own propagation
//! delay, and receivers that ACK every packet with SACK blocks. The sender's policies that
//! [`TestSender`] leaves to the test are filled in simply: loss is declared when three
//! packets sent after a dropped one are delivered (dupthresh over transmissions, roughly
//! what RACK concludes), lost segments are retransmitted before new data, and an RTO
//! fires after srtt + 200 ms (Linux's `tcp_rto_min`; 1 s before the first sample) without
//! progress, doubling on each expiry. Pacing follows `tp.wstamp_ns` when the module paces.
//!
//! With [`Path::with_ce_marking`] the bottleneck marks instead of dropping: a packet of a
//! flow with ECN on (`tp.ecn_ok`; new data, or any packet of an algorithm that needs ECN)
//! that finds `k` or more packets queued is CE-marked (DCTCP's step marking, RFC 8257
//! section 3.1, a test-only stand-in for a queue discipline). Receivers echo marks as
//! Linux does: ECE on every ACK from a mark until a segment with CWR arrives, or, for an
//! algorithm that needs ECN, ECE on the ACK of each marked segment (DCTCP's receiver).
//!
//! Packets join the bottleneck's queue in the order they are sent (exact when flows have
//! the same delay before the bottleneck, as in the tests). This is a scenario generator for
//! algorithm tests, not a simulator of record: `ccfair-sim` is. Rate samples and hook
//! order are the [`TestSender`]'s, which `ccfair-sim`'s tests compare with its sender.

use std::collections::{BTreeSet, VecDeque};
use std::ops::Range;

use super::{Ack, TestSender};
use crate::rng::Rng;
use crate::CongestionControl;

/// `tcp_rto_min`.
const RTO_MIN_NS: u64 = 200_000_000;
/// `TCP_TIMEOUT_INIT`.
const RTO_INIT_NS: u64 = 1_000_000_000;
/// Packets delivered after a dropped one before it is declared lost.
const DUPTHRESH: u32 = 3;

/// What [`Path::step`] processed, for which flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The flow started sending.
    Start,
    /// An ACK of the segment with this sequence number arrived.
    Ack(u64),
    /// The pacer allowed the next packet.
    PacingWake,
    /// The retransmission timer fired.
    Rto,
}

/// A transmission the bottleneck dropped, waiting to be detected.
struct Drop {
    seq: u64,
    /// Transmission index of the dropped packet, and later transmissions delivered since.
    tx_index: u64,
    delivered_after: u32,
}

/// One flow: its sender, delays, receiver and loss detection.
pub struct Flow<C> {
    /// The flow's sender (its module and socket state).
    pub s: TestSender<C>,
    /// Propagation before the bottleneck and after it (data, then the ACK's return).
    d1_ns: u64,
    d2_ns: u64,
    start_ns: Option<u64>,
    /// ACKs on their way back: (arrival time, segment, transmission index, ECE), in time
    /// order.
    acks: VecDeque<(u64, u64, u64, bool)>,
    drops: Vec<Drop>,
    rcv_cum: u64,
    rcv_above: BTreeSet<u64>,
    pacing_wake_ns: Option<u64>,
    last_progress_ns: u64,
    backoff: u32,
    /// The receiver's `TCP_ECN_DEMAND_CWR`.
    demand_cwr: bool,
    /// CE-marked packets that reached the receiver.
    pub ce_received: u64,
}

impl<C: CongestionControl> Flow<C> {
    fn rto_deadline(&self) -> Option<u64> {
        if self.s.tp.packets_out == 0 {
            return None;
        }
        let srtt_ns = self.s.srtt_us() * 1_000;
        let base = if srtt_ns == 0 {
            RTO_INIT_NS
        } else {
            srtt_ns + RTO_MIN_NS
        };
        Some(self.last_progress_ns + (base << self.backoff.min(6)))
    }

    /// The earliest event of this flow: (time, kind) with kind 0 start, 1 ACK, 2 pacing,
    /// 3 RTO (the order in which simultaneous events run).
    fn next_event(&self) -> Option<(u64, u8)> {
        if let Some(t) = self.start_ns {
            return Some((t, 0));
        }
        [
            self.acks.front().map(|a| (a.0, 1)),
            self.pacing_wake_ns.map(|t| (t, 2)),
            self.rto_deadline().map(|t| (t, 3)),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The receiver takes `seq`; returns the ACK it sends (cumulative point, SACK blocks).
    fn receive(&mut self, seq: u64) -> Ack {
        if seq >= self.rcv_cum {
            self.rcv_above.insert(seq);
        }
        while self.rcv_above.remove(&self.rcv_cum) {
            self.rcv_cum += 1;
        }
        let mut ack = Ack::to(self.rcv_cum.max(self.s.tp.snd_una));
        let mut block: Option<Range<u64>> = None;
        for &q in &self.rcv_above {
            match &mut block {
                Some(b) if b.end == q => b.end += 1,
                _ => {
                    if let Some(b) = block.take() {
                        ack.sacks.push(b);
                    }
                    block = Some(q..q + 1);
                }
            }
        }
        ack.sacks.extend(block);
        ack
    }

    /// The sender's loss detection on the ACK of transmission `tx_index`.
    fn detect_losses(&mut self, tx_index: u64, mut ack: Ack) -> Ack {
        for d in &mut self.drops {
            if tx_index > d.tx_index {
                d.delivered_after += 1;
            }
        }
        let (found, waiting): (Vec<Drop>, Vec<Drop>) = std::mem::take(&mut self.drops)
            .into_iter()
            .partition(|d| d.delivered_after >= DUPTHRESH);
        self.drops = waiting;
        for d in found {
            if self.s.outstanding(d.seq) {
                ack = ack.lose(d.seq..d.seq + 1);
            }
        }
        ack
    }
}

/// Flows over one bottleneck.
pub struct Path<C> {
    /// The flows, in the order they were added; their index is the flow's id.
    pub flows: Vec<Flow<C>>,
    /// Serialization time of one packet at the bottleneck.
    ser_ns: u64,
    /// Drop-tail buffer in packets (None: unlimited).
    buffer_pkts: Option<usize>,
    /// Probability that a packet is lost after the bottleneck (it used its capacity).
    loss_prob: f64,
    rng: Rng,
    last_departure_ns: u64,
    /// Departure times of the packets in the bottleneck's queue.
    queue: VecDeque<u64>,
    tx_count: u64,
    /// Packets the bottleneck dropped (buffer full) or lost at random.
    pub dropped: u64,
    /// Mark CE on ECN-capable packets that find this many packets queued (None: never).
    mark_at_pkts: Option<usize>,
    /// Packets the bottleneck marked.
    pub marked: u64,
}

impl<C: CongestionControl> Path<C> {
    /// A bottleneck serving one packet per `ser_ns` with `buffer_pkts` of buffer.
    pub fn new(ser_ns: u64, buffer_pkts: Option<usize>) -> Self {
        Path {
            flows: Vec::new(),
            ser_ns,
            buffer_pkts,
            loss_prob: 0.0,
            rng: Rng::new(0),
            last_departure_ns: 0,
            queue: VecDeque::new(),
            tx_count: 0,
            dropped: 0,
            mark_at_pkts: None,
            marked: 0,
        }
    }

    /// Mark CE instead of queueing silently once `k` packets are queued (see the module
    /// doc); the drop-tail buffer still drops when full.
    pub fn with_ce_marking(mut self, k: usize) -> Self {
        self.mark_at_pkts = Some(k);
        self
    }

    /// One flow with `rtt_ns` of propagation (half on each side of the bottleneck); it
    /// sends nothing until [`Path::send`].
    pub fn single(s: TestSender<C>, rtt_ns: u64, ser_ns: u64, buffer_pkts: Option<usize>) -> Self {
        let mut p = Path::new(ser_ns, buffer_pkts);
        p.add(s, rtt_ns, None);
        p
    }

    /// Lose each packet with probability `p` after the bottleneck (seeded).
    pub fn with_random_loss(mut self, p: f64, seed: u64) -> Self {
        self.loss_prob = p;
        self.rng = Rng::new(seed);
        self
    }

    /// Add a flow with `rtt_ns` of propagation, starting at `start_ns` (None: when the
    /// test calls [`Path::send`]). Returns its index.
    pub fn add(&mut self, s: TestSender<C>, rtt_ns: u64, start_ns: Option<u64>) -> usize {
        let now = s.now_ns();
        self.flows.push(Flow {
            s,
            d1_ns: rtt_ns / 2,
            d2_ns: rtt_ns - rtt_ns / 2,
            start_ns,
            acks: VecDeque::new(),
            drops: Vec::new(),
            rcv_cum: 0,
            rcv_above: BTreeSet::new(),
            pacing_wake_ns: None,
            last_progress_ns: now,
            backoff: 0,
            demand_cwr: false,
            ce_received: 0,
        });
        self.flows.len() - 1
    }

    /// Flow 0's sender.
    pub fn s(&self) -> &TestSender<C> {
        &self.flows[0].s
    }

    /// Flow 0's sender, mutable.
    pub fn s_mut(&mut self) -> &mut TestSender<C> {
        &mut self.flows[0].s
    }

    /// Flow 0 sends what cwnd (and the pacer) allows now: its start.
    pub fn send(&mut self) {
        self.flows[0].start_ns = None;
        self.transmit(0);
    }

    /// Packets waiting in the bottleneck's buffer at `t_ns`.
    pub fn queue_pkts(&mut self, t_ns: u64) -> usize {
        while self.queue.front().is_some_and(|&d| d <= t_ns) {
            self.queue.pop_front();
        }
        self.queue.len()
    }

    /// Put segment `seq` of flow `i`, just transmitted, on the path: new data or a
    /// retransmission (`fresh`), with CWR or not.
    fn enqueue(&mut self, i: usize, seq: u64, fresh: bool, cwr: bool) {
        let at_bottleneck = self.flows[i].s.now_ns() + self.flows[i].d1_ns;
        let q = self.queue_pkts(at_bottleneck);
        self.tx_count += 1;
        let tx_index = self.tx_count;
        let mut dropped = self.buffer_pkts.is_some_and(|b| q >= b);
        if !dropped {
            let departure = self.last_departure_ns.max(at_bottleneck) + self.ser_ns;
            self.last_departure_ns = departure;
            self.queue.push_back(departure);
            dropped = self.loss_prob > 0.0 && self.rng.uniform() < self.loss_prob;
            if !dropped {
                let f = &mut self.flows[i];
                let ect = f.s.tp.ecn_ok && (fresh || f.s.cc.needs_ecn());
                let ce = ect && self.mark_at_pkts.is_some_and(|k| q >= k);
                self.marked += u64::from(ce);
                // The receiver: CWR (tcp_ecn_accept_cwr), then the mark (tcp_ecn_check_ce).
                f.ce_received += u64::from(ce);
                if f.s.tp.ecn_ok {
                    if cwr {
                        f.demand_cwr = false;
                    }
                    if f.s.cc.needs_ecn() {
                        f.demand_cwr = ce;
                    } else if ce {
                        f.demand_cwr = true;
                    }
                }
                f.acks
                    .push_back((departure + f.d2_ns, seq, tx_index, f.demand_cwr));
            }
        }
        if dropped {
            self.dropped += 1;
            self.flows[i].drops.push(Drop {
                seq,
                tx_index,
                delivered_after: 0,
            });
        }
    }

    /// Flow `i` retransmits what is lost, then sends new data, within cwnd and the pacer.
    fn transmit(&mut self, i: usize) {
        let mut seq = self.flows[i].s.tp.snd_una;
        loop {
            let s = &mut self.flows[i].s;
            if seq >= s.tp.snd_nxt || s.cwnd_room() == 0 || !s.pacing_allows() {
                break;
            }
            if s.needs_retransmit(seq) {
                s.retransmit(seq);
                self.enqueue(i, seq, false, false);
            }
            seq += 1;
        }
        let sent = self.flows[i].s.write_xmit(u64::MAX);
        for seq in sent {
            let cwr = self.flows[i].s.take_cwr();
            self.enqueue(i, seq, true, cwr);
        }
        let f = &mut self.flows[i];
        f.pacing_wake_ns =
            (f.s.cwnd_room() > 0 && !f.s.pacing_allows()).then_some(f.s.tp.wstamp_ns);
    }

    /// Process the next event at or before `limit_ns`, if any; that flow's clock moves to
    /// it. Returns the flow and the event.
    pub fn step(&mut self, limit_ns: u64) -> Option<(usize, Event)> {
        let (t, kind, i) = (0..self.flows.len())
            .filter_map(|i| self.flows[i].next_event().map(|(t, k)| (t, k, i)))
            .min()?;
        if t > limit_ns {
            return None;
        }
        let f = &mut self.flows[i];
        f.s.advance_to(t);
        let ev = match kind {
            0 => {
                f.start_ns = None;
                f.last_progress_ns = t;
                Event::Start
            }
            1 => {
                let (_, seq, tx_index, ece) = f.acks.pop_front().expect("an ACK in flight");
                let mut ack = f.receive(seq);
                ack.ece = ece;
                let ack = f.detect_losses(tx_index, ack);
                if ack.cum > f.s.tp.snd_una {
                    f.last_progress_ns = t;
                    f.backoff = 0;
                }
                f.s.ack(&ack);
                Event::Ack(seq)
            }
            2 => Event::PacingWake,
            _ => {
                f.s.rto();
                f.backoff += 1;
                f.last_progress_ns = t;
                f.drops.clear();
                Event::Rto
            }
        };
        self.transmit(i);
        Some((i, ev))
    }

    /// Process every event up to `t_ns`, then set every flow's clock to `t_ns`.
    pub fn run_until(&mut self, t_ns: u64) {
        while self.step(t_ns).is_some() {}
        for f in &mut self.flows {
            f.s.advance_to(t_ns);
        }
    }
}
