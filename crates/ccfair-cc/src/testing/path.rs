//! [`Path`]: one bulk flow of a [`TestSender`] over a bottleneck: propagation delay,
//! serialization at a fixed packet rate, a drop-tail buffer, and a receiver that ACKs
//! every packet with SACK blocks. The sender's policies that [`TestSender`] leaves to the
//! test are filled in simply: loss is declared when three packets sent after a dropped
//! one are delivered (dupthresh over transmissions, roughly what RACK concludes), lost
//! segments are retransmitted before new data, and an RTO fires after srtt + 200 ms
//! (Linux's `tcp_rto_min`; 1 s before the first sample) without progress, doubling on
//! each expiry. Pacing follows `tp.wstamp_ns` when the module paces.
//!
//! This is a scenario generator for algorithm tests (trajectories, conformance), not a
//! simulator of record: `ccfair-sim` is. Its rate samples and hook order are the
//! [`TestSender`]'s, which its tests compare with the simulator's sender.

use std::collections::{BTreeSet, VecDeque};

use super::{Ack, TestSender};
use crate::CongestionControl;

/// `tcp_rto_min`.
const RTO_MIN_NS: u64 = 200_000_000;
/// `TCP_TIMEOUT_INIT`.
const RTO_INIT_NS: u64 = 1_000_000_000;
/// Packets delivered after a dropped one before it is declared lost.
const DUPTHRESH: u32 = 3;

/// What [`Path::step`] processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
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

/// One flow over a bottleneck.
pub struct Path<C> {
    pub s: TestSender<C>,
    /// Propagation before the bottleneck and after it (data, then the ACK's return).
    d1_ns: u64,
    d2_ns: u64,
    /// Serialization time of one packet at the bottleneck.
    ser_ns: u64,
    /// Drop-tail buffer in packets (None: unlimited).
    buffer_pkts: Option<usize>,
    last_departure_ns: u64,
    /// Departure times of the packets in the bottleneck's queue.
    queue: VecDeque<u64>,
    /// ACKs on their way back: (arrival time, segment, transmission index), in time order.
    acks: VecDeque<(u64, u64, u64)>,
    tx_count: u64,
    drops: Vec<Drop>,
    /// Receiver: segments received above the cumulative point.
    rcv_cum: u64,
    rcv_above: BTreeSet<u64>,
    pacing_wake_ns: Option<u64>,
    last_progress_ns: u64,
    backoff: u32,
    /// Packets the bottleneck dropped.
    pub dropped: u64,
}

impl<C: CongestionControl> Path<C> {
    /// `rtt_ns` of propagation (half on each side of the bottleneck), `ser_ns` per packet
    /// at the bottleneck, `buffer_pkts` of buffer; the flow starts sending now.
    pub fn new(s: TestSender<C>, rtt_ns: u64, ser_ns: u64, buffer_pkts: Option<usize>) -> Self {
        let now = s.now_ns();
        let mut p = Path {
            s,
            d1_ns: rtt_ns / 2,
            d2_ns: rtt_ns - rtt_ns / 2,
            ser_ns,
            buffer_pkts,
            last_departure_ns: 0,
            queue: VecDeque::new(),
            acks: VecDeque::new(),
            tx_count: 0,
            drops: Vec::new(),
            rcv_cum: 0,
            rcv_above: BTreeSet::new(),
            pacing_wake_ns: None,
            last_progress_ns: now,
            backoff: 0,
            dropped: 0,
        };
        p.transmit();
        p
    }

    /// Packets waiting in the bottleneck's buffer at `t_ns`.
    pub fn queue_pkts(&mut self, t_ns: u64) -> usize {
        while self.queue.front().is_some_and(|&d| d <= t_ns) {
            self.queue.pop_front();
        }
        self.queue.len()
    }

    /// Put segment `seq`, just transmitted, on the path.
    fn enqueue(&mut self, seq: u64) {
        let at_bottleneck = self.s.now_ns() + self.d1_ns;
        let q = self.queue_pkts(at_bottleneck);
        self.tx_count += 1;
        if self.buffer_pkts.is_some_and(|b| q >= b) {
            self.dropped += 1;
            self.drops.push(Drop {
                seq,
                tx_index: self.tx_count,
                delivered_after: 0,
            });
            return;
        }
        let departure = self.last_departure_ns.max(at_bottleneck) + self.ser_ns;
        self.last_departure_ns = departure;
        self.queue.push_back(departure);
        self.acks
            .push_back((departure + self.d2_ns, seq, self.tx_count));
    }

    /// Retransmit what is lost, then send new data, within cwnd and the pacer.
    fn transmit(&mut self) {
        let mut seq = self.s.tp.snd_una;
        while seq < self.s.tp.snd_nxt && self.s.cwnd_room() > 0 && self.s.pacing_allows() {
            if self.s.needs_retransmit(seq) {
                self.s.retransmit(seq);
                self.enqueue(seq);
            }
            seq += 1;
        }
        let sent = self.s.write_xmit(u64::MAX);
        for seq in sent {
            self.enqueue(seq);
        }
        self.pacing_wake_ns =
            (self.s.cwnd_room() > 0 && !self.s.pacing_allows()).then_some(self.s.tp.wstamp_ns);
    }

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

    /// Process the next event at or before `limit_ns`, if any; the clock moves to it.
    pub fn step(&mut self, limit_ns: u64) -> Option<Event> {
        let ack = self.acks.front().map(|a| a.0);
        let candidates = [
            ack.map(|t| (t, 0)),
            self.pacing_wake_ns.map(|t| (t, 1)),
            self.rto_deadline().map(|t| (t, 2)),
        ];
        let (t, kind) = candidates.into_iter().flatten().min()?;
        if t > limit_ns {
            return None;
        }
        self.s.advance_to(t);
        let ev = match kind {
            0 => self.on_ack(),
            1 => Event::PacingWake,
            _ => {
                self.s.rto();
                self.backoff += 1;
                self.last_progress_ns = t;
                self.drops.clear();
                Event::Rto
            }
        };
        self.transmit();
        Some(ev)
    }

    fn on_ack(&mut self) -> Event {
        let (_, seq, tx_index) = self.acks.pop_front().expect("an ACK in flight");
        // The receiver: one ACK per packet, SACK blocks for what is above the hole.
        if seq >= self.rcv_cum {
            self.rcv_above.insert(seq);
        }
        while self.rcv_above.remove(&self.rcv_cum) {
            self.rcv_cum += 1;
        }
        let mut ack = Ack::to(self.rcv_cum.max(self.s.tp.snd_una));
        let mut block: Option<std::ops::Range<u64>> = None;
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
        // The sender's loss detection.
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
        if ack.cum > self.s.tp.snd_una {
            self.last_progress_ns = self.s.now_ns();
            self.backoff = 0;
        }
        self.s.ack(&ack);
        Event::Ack(seq)
    }

    /// Process every event up to `t_ns`, then set the clock to `t_ns`.
    pub fn run_until(&mut self, t_ns: u64) {
        while self.step(t_ns).is_some() {}
        self.s.advance_to(t_ns);
    }

    /// Process ACKs until `stop` holds after one, or until `limit_ns`. True if stopped.
    pub fn run_while_not(&mut self, limit_ns: u64, stop: impl Fn(&Self) -> bool) -> bool {
        while let Some(ev) = self.step(limit_ns) {
            if matches!(ev, Event::Ack(_)) && stop(self) {
                return true;
            }
        }
        false
    }
}
