//! Queue disciplines a channel can run instead of its drop-tail FIFO: CoDel, fq_codel, PIE
//! and RED (`LinkSpec::queue`), each written after Linux's own code (net/sched/sch_codel.c,
//! sch_fq_codel.c, sch_pie.c, sch_red.c and their headers), with Linux's constants and
//! integer arithmetic. Each module cites the functions it follows.
//!
//! A queue discipline only holds packets and decides: what to accept, what to drop or mark
//! and which packet leaves next. The channel around it (`link/serve.rs`) asks it for a
//! packet whenever its serialiser is free, as a Linux device asks its root qdisc: CoDel and
//! fq_codel drop at dequeue, so a packet's fate is known only when it would leave.
//!
//! Limits count what Linux's `qdisc_qlen` counts: the packets waiting, not the one being
//! serialised (a device holds that one). ccfair's packet sizes are IP packet sizes (1500 B for
//! a full segment); Linux on an Ethernet device counts 14 bytes of header more (1514 B), which
//! its defaults for a quantum or an MTU (`psched_mtu`, 1514 B) include.
//!
//! What a discipline decides goes to a [`Sink`]: drops always, marks and acceptances for
//! traces. The channel hands them to the engine, which frees dropped packets and counts them.

pub mod codel;
pub mod fq_codel;
pub mod params;
pub mod pie;
pub mod red;

use std::collections::VecDeque;

use ccfair_cc::rng::Rng;

use crate::fifo::Fifo;
use crate::link::OnWire;
use crate::packet::Ecn;

pub use params::QdiscConfig;

/// A packet held by a queue discipline, with the time it entered and its ECN field.
#[derive(Clone, Copy, Debug)]
pub struct Queued<P> {
    /// The packet (a reference to it in the simulator, a handle in the kernel backend).
    pub pkt: P,
    /// When it entered the discipline, ns: its sojourn time counts from here.
    pub enqueue_ns: u64,
    /// Its IP ECN field, which a mark turns to CE.
    pub ecn: Ecn,
}

impl<P: OnWire> Queued<P> {
    /// Set CE if the packet is ECN-capable, as a queue discipline marks instead of
    /// dropping: Linux's `INET_ECN_set_ce` (include/net/inet_ecn.h). ECT(0) and ECT(1)
    /// become CE; a packet already CE stays so and counts as marked; a Not-ECT packet is
    /// left alone and `false` says so (the discipline drops it instead).
    #[inline]
    pub fn set_ce(&mut self) -> bool {
        match self.ecn {
            Ecn::NotEct => false,
            Ecn::Ce => true,
            Ecn::Ect0 | Ecn::Ect1 => {
                self.ecn = Ecn::Ce;
                self.pkt.mark_ce();
                true
            }
        }
    }
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The queue was full: the packet or byte limit (Linux's `drop_overlimit`, `pdrop`,
    /// `overlimit`), or fq_codel's memory limit.
    Overlimit,
    /// The AQM decided to drop (CoDel's control law, PIE's and RED's early drops, RED's
    /// forced drops above its maximum threshold).
    Aqm,
    /// Random loss on the wire (the link's loss probability).
    Random,
}

/// Why a packet was marked CE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkCause {
    /// Instead of an AQM drop (`ecn_mark`, RED's `prob_mark` and `forced_mark`).
    Aqm,
    /// Its sojourn exceeded CoDel's `ce_threshold` (`ce_mark`).
    CeThreshold,
}

/// What a queue discipline did with a packet, for the engine (drops) and traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Entered the queue (reported only when traced).
    Enqueued,
    /// Dropped, for this reason.
    Dropped(DropCause),
    /// Marked CE and kept.
    Marked(MarkCause),
}

/// Drops and marks by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FateCounts {
    /// [`DropCause::Overlimit`] drops.
    pub drops_overlimit: u64,
    /// [`DropCause::Aqm`] drops.
    pub drops_aqm: u64,
    /// [`DropCause::Random`] drops.
    pub drops_random: u64,
    /// [`MarkCause::Aqm`] marks.
    pub marks_aqm: u64,
    /// [`MarkCause::CeThreshold`] marks.
    pub marks_ce_threshold: u64,
}

/// Where a queue discipline reports what it did: every drop (the engine must free the
/// packet) and mark (the engine marks the packet), and, when the channel is traced, every
/// acceptance; with counts.
pub struct Sink<P> {
    events: Fifo<(u64, P, Fate)>,
    /// Report acceptances and marks too (a traced run).
    pub traced: bool,
    /// Drops and marks reported so far, by cause.
    pub counts: FateCounts,
}

impl<P: Copy> Default for Sink<P> {
    fn default() -> Self {
        Sink {
            events: Fifo::new(),
            traced: false,
            counts: FateCounts::default(),
        }
    }
}

impl<P: Copy> Sink<P> {
    /// Report a drop at `t_ns` (always kept: the engine frees the packet).
    pub fn drop(&mut self, t_ns: u64, pkt: P, cause: DropCause) {
        match cause {
            DropCause::Overlimit => self.counts.drops_overlimit += 1,
            DropCause::Aqm => self.counts.drops_aqm += 1,
            DropCause::Random => self.counts.drops_random += 1,
        }
        self.events.push_back((t_ns, pkt, Fate::Dropped(cause)));
    }

    /// Report a CE mark at `t_ns` (always kept: the engine marks its copy of the packet).
    pub fn mark(&mut self, t_ns: u64, pkt: P, cause: MarkCause) {
        match cause {
            MarkCause::Aqm => self.counts.marks_aqm += 1,
            MarkCause::CeThreshold => self.counts.marks_ce_threshold += 1,
        }
        self.events.push_back((t_ns, pkt, Fate::Marked(cause)));
    }

    /// Report an acceptance at `t_ns`; kept only when the channel is traced.
    pub fn enqueued(&mut self, t_ns: u64, pkt: P) {
        if self.traced {
            self.events.push_back((t_ns, pkt, Fate::Enqueued));
        }
    }

    /// The oldest report not yet taken.
    pub fn take(&mut self) -> Option<(u64, P, Fate)> {
        self.events.pop_front()
    }

    /// No report waiting.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// fq_codel's statistics beyond drops and marks (`tc_fq_codel_qd_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FqStats {
    /// Flows that became active: entered the new-flows list (`new_flow_count`).
    pub new_flow_count: u64,
    /// Packets dropped while over the memory limit (`drop_overmemory`, part of the
    /// over-limit drops).
    pub drop_overmemory: u64,
}

/// A queue discipline.
pub enum Qdisc<P> {
    /// CoDel (net/sched/sch_codel.c).
    Codel(codel::Codel<P>),
    /// fq_codel (net/sched/sch_fq_codel.c).
    FqCodel(fq_codel::FqCodel<P>),
    /// PIE (net/sched/sch_pie.c).
    Pie(pie::Pie<P>),
    /// RED (net/sched/sch_red.c).
    Red(red::Red<P>),
}

impl<P: OnWire> Qdisc<P> {
    /// A discipline of `config` for a channel of `rate_bps` whose buffer is `limit_pkts`
    /// packets, created at `origin_ns` (its timers count from there), drawing from `rng`.
    ///
    /// ```
    /// use ccfair_cc::rng::Rng;
    /// use ccfair_sim::link::OnWire;
    /// use ccfair_sim::packet::Ecn;
    /// use ccfair_sim::qdisc::{DropCause, Fate, Qdisc, QdiscConfig, Queued, Sink};
    /// use ccfair_sim::spec::Queue;
    /// use serde_json::json;
    ///
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Pkt(u32);
    /// impl OnWire for Pkt {
    ///     fn wire_bytes(&self) -> u32 {
    ///         self.0
    ///     }
    /// }
    ///
    /// // CoDel as a link's spec names it (target 5 ms, interval 100 ms: Linux's defaults),
    /// // with a limit of 20 packets waiting.
    /// let config = QdiscConfig::parse(Queue::Codel, &json!({})).unwrap().unwrap();
    /// let mut q: Qdisc<Pkt> = Qdisc::new(&config, 20, 10_000_000, 0, Rng::new(1));
    /// let mut sink = Sink::default();
    /// let ms = 1_000_000;
    /// for _ in 0..21 {
    ///     let item = Queued { pkt: Pkt(1500), enqueue_ns: 0, ecn: Ecn::NotEct };
    ///     q.enqueue(item, 0, &mut sink);
    /// }
    /// // The 21st packet found the queue full.
    /// assert_eq!(sink.take(), Some((0, Pkt(1500), Fate::Dropped(DropCause::Overlimit))));
    /// assert_eq!(q.len(), 20);
    ///
    /// // A packet that waited 10 ms (above target) starts CoDel's interval; one that has
    /// // waited above target for a whole interval makes CoDel drop at dequeue.
    /// assert!(q.dequeue(10 * ms, &mut sink).is_some());
    /// assert!(sink.is_empty());
    /// assert!(q.dequeue(120 * ms, &mut sink).is_some());
    /// assert_eq!(sink.take(), Some((120 * ms, Pkt(1500), Fate::Dropped(DropCause::Aqm))));
    /// assert_eq!(q.len(), 17);
    /// ```
    pub fn new(
        config: &QdiscConfig,
        limit_pkts: u32,
        rate_bps: u64,
        origin_ns: u64,
        rng: Rng,
    ) -> Self {
        match config {
            QdiscConfig::Codel(p) => Qdisc::Codel(codel::Codel::new(p, limit_pkts)),
            QdiscConfig::FqCodel(p) => Qdisc::FqCodel(fq_codel::FqCodel::new(
                p,
                limit_pkts,
                rng.clone().next_u64(),
            )),
            QdiscConfig::Pie(p) => Qdisc::Pie(pie::Pie::new(p, limit_pkts, origin_ns, rng)),
            QdiscConfig::Red(p) => {
                let consts = p
                    .consts(limit_pkts, rate_bps)
                    .expect("RED parameters are checked with the spec");
                Qdisc::Red(red::Red::new(p, consts, origin_ns, rng))
            }
        }
    }

    /// Offer a packet arriving at `item.enqueue_ns`; `key` identifies its flow and
    /// direction (fq_codel hashes it). Drops and marks go to `sink`.
    #[inline]
    pub fn enqueue(&mut self, item: Queued<P>, key: u32, sink: &mut Sink<P>) {
        match self {
            Qdisc::Codel(q) => q.enqueue(item, sink),
            Qdisc::FqCodel(q) => q.enqueue(item, key, sink),
            Qdisc::Pie(q) => q.enqueue(item, sink),
            Qdisc::Red(q) => q.enqueue(item, sink),
        }
    }

    /// The packet to serialise next at `now_ns`, if any (the device asks; an empty answer
    /// is itself an event for CoDel, fq_codel and RED).
    #[inline]
    pub fn dequeue(&mut self, now_ns: u64, sink: &mut Sink<P>) -> Option<Queued<P>> {
        match self {
            Qdisc::Codel(q) => q.dequeue(now_ns, sink),
            Qdisc::FqCodel(q) => q.dequeue(now_ns, sink),
            Qdisc::Pie(q) => q.dequeue(now_ns),
            Qdisc::Red(q) => q.dequeue(now_ns),
        }
    }

    /// When the discipline's timer fires next (PIE's probability update, adaptive RED's
    /// max_p update), `u64::MAX` if it has none.
    #[inline]
    pub fn next_timer_ns(&self) -> u64 {
        match self {
            Qdisc::Pie(q) => q.next_timer_ns(),
            Qdisc::Red(q) => q.next_timer_ns(),
            Qdisc::Codel(_) | Qdisc::FqCodel(_) => u64::MAX,
        }
    }

    /// Run the timer due at `next_timer_ns()`.
    pub fn on_timer(&mut self) {
        match self {
            Qdisc::Pie(q) => q.on_timer(),
            Qdisc::Red(q) => q.on_timer(),
            Qdisc::Codel(_) | Qdisc::FqCodel(_) => {}
        }
    }

    /// Packets waiting (`qdisc_qlen`).
    pub fn len(&self) -> usize {
        match self {
            Qdisc::Codel(q) => q.queue.len(),
            Qdisc::FqCodel(q) => q.len(),
            Qdisc::Pie(q) => q.queue.len(),
            Qdisc::Red(q) => q.queue.len(),
        }
    }

    /// No packet waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes waiting (`sch->qstats.backlog`).
    pub fn backlog_bytes(&self) -> u64 {
        match self {
            Qdisc::Codel(q) => q.queue.bytes(),
            Qdisc::FqCodel(q) => q.backlog_bytes(),
            Qdisc::Pie(q) => q.queue.bytes(),
            Qdisc::Red(q) => q.queue.bytes(),
        }
    }

    /// Whether a packet meeting an empty queue and an idle device skips the discipline
    /// (`TCQ_F_CAN_BYPASS`, which sch_codel.c and sch_fq_codel.c set; `__dev_xmit_skb`).
    pub fn can_bypass(&self) -> bool {
        matches!(self, Qdisc::Codel(_) | Qdisc::FqCodel(_))
    }

    /// Every packet waiting, in no particular order.
    pub fn for_each(&self, f: &mut dyn FnMut(&P)) {
        match self {
            Qdisc::Codel(q) => q.queue.for_each(f),
            Qdisc::FqCodel(q) => q.for_each(f),
            Qdisc::Pie(q) => q.queue.for_each(f),
            Qdisc::Red(q) => q.queue.for_each(f),
        }
    }

    /// fq_codel's own statistics (`None` for the other disciplines).
    pub fn fq_stats(&self) -> Option<FqStats> {
        match self {
            Qdisc::FqCodel(q) => Some(q.stats()),
            _ => None,
        }
    }

    /// Room for `packets` queued packets, so that queueing up to that many allocates
    /// nothing (the kernel backend's real-time forwarder).
    pub fn reserve(&mut self, packets: usize) {
        match self {
            Qdisc::Codel(q) => q.queue.reserve(packets),
            Qdisc::FqCodel(q) => q.reserve(packets),
            Qdisc::Pie(q) => q.queue.reserve(packets),
            Qdisc::Red(q) => q.queue.reserve(packets),
        }
    }

    /// Bytes the discipline holds (its tables and the slots of what it ever held at once).
    pub fn reserved_bytes(&self) -> u64 {
        match self {
            Qdisc::Codel(q) => q.queue.reserved_bytes(),
            Qdisc::FqCodel(q) => q.reserved_bytes(),
            Qdisc::Pie(q) => q.queue.reserved_bytes(),
            Qdisc::Red(q) => q.queue.reserved_bytes(),
        }
    }
}

/// A FIFO of queued packets with its byte count: the queue of `codel`, `pie` and `red`
/// (`sch->q` with `sch->qstats.backlog`).
pub(crate) struct PacketFifo<P> {
    packets: VecDeque<Queued<P>>,
    bytes: u64,
}

impl<P: OnWire> PacketFifo<P> {
    pub(crate) fn new() -> Self {
        PacketFifo {
            packets: VecDeque::new(),
            bytes: 0,
        }
    }

    pub(crate) fn reserve(&mut self, packets: usize) {
        self.packets.reserve(packets);
    }

    #[inline]
    pub(crate) fn push(&mut self, item: Queued<P>) {
        self.bytes += item.pkt.wire_bytes() as u64;
        self.packets.push_back(item);
    }

    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Queued<P>> {
        let item = self.packets.pop_front()?;
        self.bytes -= item.pkt.wire_bytes() as u64;
        Some(item)
    }

    pub(crate) fn len(&self) -> usize {
        self.packets.len()
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    pub(crate) fn for_each(&self, f: &mut dyn FnMut(&P)) {
        for q in self.packets.iter() {
            f(&q.pkt);
        }
    }

    pub(crate) fn reserved_bytes(&self) -> u64 {
        (self.packets.capacity() * std::mem::size_of::<Queued<P>>()) as u64
    }
}
