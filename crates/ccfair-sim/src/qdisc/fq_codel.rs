//! fq_codel (net/sched/sch_fq_codel.c): packets hashed to `flows` queues, each with its own
//! CoDel; a deficit round robin serves new flows before old ones; a packet limit and a
//! memory limit, over which the fattest queue loses up to `drop_batch` packets from its
//! head.
//!
//! Packets wait in a node pool with one linked list per flow queue, as Linux chains skbs
//! (`flow->head`, `flow->tail`): the pool grows to the most packets ever queued and is
//! reused, so nothing is allocated per packet. The new-flows and old-flows lists are rings
//! of queue indices: fq_codel only ever takes the first flow of a list and appends at the
//! tail (`list_first_entry`, `list_add_tail`, `list_move_tail`, `list_del_init`).

use super::codel::{self, CodelConsts, CodelQueue, CodelStats, CodelVars};
use super::params::{FqCodelParams, FqHash};
use super::{DropCause, FqStats, Queued, Sink};
use crate::fifo::Fifo;
use crate::link::OnWire;

const NIL: u32 = u32::MAX;

/// One flow queue (`struct fq_codel_flow`).
#[derive(Clone, Copy, Debug, Default)]
struct Flow {
    head: u32,
    tail: u32,
    /// Bytes it may still send in this round (`deficit`).
    deficit: i32,
    /// In the new-flows or the old-flows list (`!list_empty(&flow->flowchain)`).
    listed: bool,
    cvars: CodelVars,
}

struct Node<P> {
    item: Queued<P>,
    next: u32,
}

/// `skb->truesize` of a packet of `wire_bytes` as a Linux router holds it: the linear
/// buffer of a received packet (`__alloc_skb` via the TUN device's `tun_alloc_skb`, the
/// kernel backend's device): NET_SKB_PAD (64) plus the packet, cache-aligned
/// (`SKB_DATA_ALIGN`), plus `skb_shared_info` (320 B), rounded up to the kmalloc size class,
/// plus `struct sk_buff` (256 B aligned); x86_64. 2304 B for 1500 B, 768 B for 52 B.
pub fn truesize(wire_bytes: u32) -> u32 {
    let data = (64 + wire_bytes).div_ceil(64) * 64 + 320;
    let slab = match data {
        0..=96 => 96,
        97..=128 => 128,
        129..=192 => 192,
        _ => data.next_power_of_two(),
    };
    slab + 256
}

/// The fq_codel queue discipline.
pub struct FqCodel<P> {
    consts: CodelConsts,
    flows: Vec<Flow>,
    /// Bytes queued per flow queue (`q->backlogs`), scanned for the fattest on overflow.
    backlogs: Vec<u32>,
    nodes: Vec<Node<P>>,
    free: u32,
    new_flows: Fifo<u32>,
    old_flows: Fifo<u32>,
    quantum: i32,
    limit: u32,
    memory_limit: u32,
    drop_batch: u32,
    /// Packets, bytes and truesize queued (`sch->q.qlen`, `sch->qstats.backlog`,
    /// `q->memory_usage`).
    qlen: u32,
    backlog: u64,
    memory_usage: u64,
    hash: FqHash,
    perturbation: u64,
    cstats: CodelStats,
    stats: FqStats,
}

impl<P: OnWire> FqCodel<P> {
    /// With `limit_pkts` (`sch->limit`) and the hash key `perturbation`.
    ///
    /// ```
    /// use ccfair_sim::link::OnWire;
    /// use ccfair_sim::packet::Ecn;
    /// use ccfair_sim::qdisc::fq_codel::FqCodel;
    /// use ccfair_sim::qdisc::{QdiscConfig, Queued, Sink};
    /// use ccfair_sim::spec::Queue;
    /// use serde_json::json;
    ///
    /// #[derive(Clone, Copy, Debug, PartialEq)]
    /// struct Pkt(char);
    /// impl OnWire for Pkt {
    ///     fn wire_bytes(&self) -> u32 {
    ///         1500
    ///     }
    /// }
    ///
    /// // One queue per flow direction, so that the two flows below cannot collide.
    /// let table = json!({"hash": "per_flow"});
    /// let Some(QdiscConfig::FqCodel(p)) = QdiscConfig::parse(Queue::FqCodel, &table).unwrap()
    /// else {
    ///     unreachable!()
    /// };
    /// let mut q: FqCodel<Pkt> = FqCodel::new(&p, 100, 0);
    /// let mut sink = Sink::default();
    /// // Flow 0 (key 0) queues three packets, then flow 1 (key 2) one.
    /// for (pkt, key) in [('a', 0), ('a', 0), ('a', 0), ('b', 2)] {
    ///     let item = Queued { pkt: Pkt(pkt), enqueue_ns: 0, ecn: Ecn::NotEct };
    ///     q.enqueue(item, key, &mut sink);
    /// }
    /// // Deficit round robin with a quantum of 1514 bytes: flow 0 spends its quantum (two
    /// // packets), then flow 1's packet goes before flow 0's third.
    /// let order: String = std::iter::from_fn(|| q.dequeue(1_000, &mut sink))
    ///     .map(|item| item.pkt.0)
    ///     .collect();
    /// assert_eq!(order, "aaba");
    /// ```
    pub fn new(p: &FqCodelParams, limit_pkts: u32, perturbation: u64) -> Self {
        let n = p.flows as usize;
        let flow = Flow {
            head: NIL,
            tail: NIL,
            ..Flow::default()
        };
        let mut new_flows = Fifo::new();
        let mut old_flows = Fifo::new();
        new_flows.reserve(n);
        old_flows.reserve(n);
        FqCodel {
            consts: CodelConsts::new(
                p.target_ns,
                p.interval_ns,
                p.ce_threshold_ns,
                p.mtu_bytes,
                p.ecn,
            ),
            flows: vec![flow; n],
            backlogs: vec![0; n],
            nodes: Vec::new(),
            free: NIL,
            new_flows,
            old_flows,
            quantum: p.quantum_bytes as i32,
            limit: limit_pkts,
            memory_limit: p.memory_limit_bytes,
            drop_batch: p.drop_batch_pkts,
            qlen: 0,
            backlog: 0,
            memory_usage: 0,
            hash: p.hash,
            perturbation,
            cstats: CodelStats::default(),
            stats: FqStats::default(),
        }
    }

    /// The flow queue of `key` (2 x flow index + 1 on the ACK path): Linux's
    /// `reciprocal_scale(skb_get_hash(skb), flows_cnt)`, with ccfair's flow key hashed under
    /// the link's random key in place of the 5-tuple's (`FqHash`).
    pub fn queue_of(&self, key: u32) -> usize {
        let n = self.flows.len() as u64;
        match self.hash {
            FqHash::Perturbed => {
                let mut s = self.perturbation ^ (key as u64);
                let hash = (ccfair_cc::rng::splitmix64(&mut s) >> 32) as u32;
                ((hash as u64 * n) >> 32) as usize
            }
            FqHash::PerFlow => (key as u64 % n) as usize,
        }
    }

    /// `fq_codel_enqueue`.
    pub fn enqueue(&mut self, item: Queued<P>, key: u32, sink: &mut Sink<P>) {
        let idx = self.queue_of(key);
        let len = item.pkt.wire_bytes();
        let now_ns = item.enqueue_ns;
        self.push(idx, item);
        sink.enqueued(now_ns, item.pkt);
        self.backlogs[idx] += len;
        self.backlog += len as u64;
        let flow = &mut self.flows[idx];
        if !flow.listed {
            flow.listed = true;
            flow.deficit = self.quantum;
            self.new_flows.push_back(idx as u32);
            self.stats.new_flow_count += 1;
        }
        self.memory_usage += truesize(len) as u64;
        let memory_limited = self.memory_usage > self.memory_limit as u64;
        self.qlen += 1;
        if self.qlen <= self.limit && !memory_limited {
            return;
        }
        // Over a limit: drop up to half the fattest queue, at most drop_batch packets.
        let before = self.qlen;
        self.drop_fattest(now_ns, sink);
        let dropped = (before - self.qlen) as u64;
        if memory_limited {
            self.stats.drop_overmemory += dropped;
        }
    }

    /// `fq_codel_drop`: from the queue with the most bytes (the first such), drop from the
    /// head until half its bytes are gone or `drop_batch` packets; its CoDel count grows by
    /// as many (a stronger signal).
    fn drop_fattest(&mut self, now_ns: u64, sink: &mut Sink<P>) {
        let (mut idx, mut most) = (0, 0);
        for (i, &b) in self.backlogs.iter().enumerate() {
            if b > most {
                most = b;
                idx = i;
            }
        }
        let threshold = most >> 1;
        let (mut i, mut len, mut mem) = (0u32, 0u32, 0u64);
        loop {
            let item = self.pop(idx).expect("the fattest queue holds packets");
            let bytes = item.pkt.wire_bytes();
            len += bytes;
            mem += truesize(bytes) as u64;
            sink.drop(now_ns, item.pkt, DropCause::Overlimit);
            i += 1;
            if !(i < self.drop_batch && len < threshold) {
                break;
            }
        }
        let flow = &mut self.flows[idx];
        flow.cvars.count = flow.cvars.count.wrapping_add(i);
        self.backlogs[idx] -= len;
        self.memory_usage -= mem;
        self.backlog -= len as u64;
        self.qlen -= i;
    }

    /// `fq_codel_dequeue`: the first flow of the new-flows list, else of the old-flows list,
    /// serves while it has deficit; a flow out of deficit gets a quantum more and goes to
    /// the end of the old flows; an empty flow leaves the lists (a new one passes through
    /// the old flows first, so that it cannot starve them by coming back as new).
    pub fn dequeue(&mut self, now_ns: u64, sink: &mut Sink<P>) -> Option<Queued<P>> {
        loop {
            let (from_new, idx) = match self.new_flows.front() {
                Some(&f) => (true, f as usize),
                None => (false, *self.old_flows.front()? as usize),
            };
            if self.flows[idx].deficit <= 0 {
                self.flows[idx].deficit += self.quantum;
                self.unlist_front(from_new);
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let mut vars = self.flows[idx].cvars;
            let mut cstats = self.cstats;
            let consts = self.consts;
            let item = codel::dequeue(
                &mut FlowQueue { fq: self, idx },
                now_ns,
                &consts,
                &mut vars,
                &mut cstats,
                sink,
            );
            self.flows[idx].cvars = vars;
            self.cstats = cstats;
            match item {
                None => {
                    self.unlist_front(from_new);
                    if from_new && !self.old_flows.is_empty() {
                        self.old_flows.push_back(idx as u32);
                    } else {
                        self.flows[idx].listed = false;
                    }
                }
                Some(item) => {
                    self.flows[idx].deficit -= item.pkt.wire_bytes() as i32;
                    return Some(item);
                }
            }
        }
    }

    /// Take the first flow off the list it heads.
    fn unlist_front(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    fn push(&mut self, idx: usize, item: Queued<P>) {
        let node = Node { item, next: NIL };
        let at = if self.free != NIL {
            let at = self.free;
            self.free = self.nodes[at as usize].next;
            self.nodes[at as usize] = node;
            at
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        };
        let flow = &mut self.flows[idx];
        if flow.head == NIL {
            flow.head = at;
        } else {
            self.nodes[flow.tail as usize].next = at;
        }
        flow.tail = at;
    }

    fn pop(&mut self, idx: usize) -> Option<Queued<P>> {
        let flow = &mut self.flows[idx];
        if flow.head == NIL {
            return None;
        }
        let at = flow.head;
        let node = &mut self.nodes[at as usize];
        flow.head = node.next;
        if flow.head == NIL {
            flow.tail = NIL;
        }
        let item = node.item;
        node.next = self.free;
        self.free = at;
        Some(item)
    }

    /// Packets waiting over all flows (`qdisc_qlen`).
    pub fn len(&self) -> usize {
        self.qlen as usize
    }

    /// No packet waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes waiting over all flows (`sch->qstats.backlog`).
    pub fn backlog_bytes(&self) -> u64 {
        self.backlog
    }

    /// New flows and over-memory drops so far.
    pub fn stats(&self) -> FqStats {
        self.stats
    }

    /// The memory the queued packets take (`memory_usage`).
    pub fn memory_usage(&self) -> u64 {
        self.memory_usage
    }

    /// Call `f` on every packet waiting, flow by flow.
    pub fn for_each(&self, f: &mut dyn FnMut(&P)) {
        for flow in &self.flows {
            let mut at = flow.head;
            while at != NIL {
                let node = &self.nodes[at as usize];
                f(&node.item.pkt);
                at = node.next;
            }
        }
    }

    /// Make room for `packets` more, so that queueing them allocates nothing.
    pub fn reserve(&mut self, packets: usize) {
        self.nodes.reserve(packets);
    }

    /// Heap bytes of the flow table, the packet nodes and the flow lists.
    pub fn reserved_bytes(&self) -> u64 {
        (self.flows.capacity() * std::mem::size_of::<Flow>()
            + self.backlogs.capacity() * 4
            + self.nodes.capacity() * std::mem::size_of::<Node<P>>()
            + (self.new_flows.capacity() + self.old_flows.capacity()) * 4) as u64
    }
}

/// One flow queue as CoDel takes from it (`dequeue_func`: the qdisc's counts go down).
struct FlowQueue<'a, P> {
    fq: &'a mut FqCodel<P>,
    idx: usize,
}

impl<P: OnWire> CodelQueue<P> for FlowQueue<'_, P> {
    fn take(&mut self) -> Option<Queued<P>> {
        let item = self.fq.pop(self.idx)?;
        let bytes = item.pkt.wire_bytes();
        self.fq.backlogs[self.idx] -= bytes;
        self.fq.memory_usage -= truesize(bytes) as u64;
        self.fq.qlen -= 1;
        self.fq.backlog -= bytes as u64;
        Some(item)
    }

    fn backlog(&self) -> u64 {
        self.fq.backlog
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: u64, p: Packet) -> Queued<Packet> {
        Queued {
            pkt: p,
            enqueue_ns: t,
            ecn: p.ecn,
        }
    }
    use crate::packet::{Ecn, Kind, Packet, TcpFlags, NO_SACK};
    use crate::qdisc::Fate;

    fn pkt(flow: u32, bytes: u32) -> Packet {
        Packet {
            flow,
            kind: Kind::Data,
            wire_bytes: bytes,
            seq: 0,
            payload_bytes: 0,
            tsval: 0,
            tsecr: 0,
            n_sack: 0,
            ecn: Ecn::NotEct,
            tcp_flags: TcpFlags::NONE,
            window_bytes: 0,
            sack: NO_SACK,
        }
    }

    fn per_flow(limit: u32) -> FqCodel<Packet> {
        let p = FqCodelParams {
            hash: FqHash::PerFlow,
            ..FqCodelParams::default()
        };
        FqCodel::new(&p, limit, 0)
    }

    #[test]
    fn truesize_of_a_full_segment_is_what_a_tun_device_allocates() {
        assert_eq!(truesize(1500), 2304);
        assert_eq!(truesize(52), 768);
        assert_eq!(truesize(60), 768);
    }

    /// Backlogged flows with different packet sizes get equal bytes (deficit round robin
    /// with a quantum of 1514 B): flows of 1500-, 500- and 64-byte packets, all
    /// backlogged, dequeued without CoDel interfering (sojourns below target).
    #[test]
    fn drr_shares_bytes_equally_among_backlogged_flows() {
        let p = FqCodelParams {
            hash: FqHash::PerFlow,
            memory_limit_bytes: 1 << 31,
            ..FqCodelParams::default()
        };
        let mut q: FqCodel<Packet> = FqCodel::new(&p, 100_000, 0);
        let mut sink = Sink::default();
        let sizes = [1500u32, 500, 64];
        for (f, &size) in sizes.iter().enumerate() {
            for _ in 0..(2_000_000 / size) {
                q.enqueue(at(0, pkt(f as u32, size)), 2 * f as u32, &mut sink);
            }
        }
        let mut bytes = [0u64; 3];
        // 1.5 MB out, before any flow runs dry; at t = 0 (no sojourn, no drops). Each
        // flow's bytes stay within a packet of rounds x quantum.
        let mut sent = 0;
        while sent < 1_500_000 {
            let item = q.dequeue(0, &mut sink).unwrap();
            bytes[item.pkt.flow as usize] += item.pkt.wire_bytes as u64;
            sent += item.pkt.wire_bytes;
        }
        for b in bytes {
            let share = b as f64 / sent as f64;
            assert!((share - 1.0 / 3.0).abs() < 0.003, "{bytes:?}");
        }
        assert_eq!(sink.counts.drops_aqm + sink.counts.drops_overlimit, 0);
    }

    /// A flow that becomes active goes to the new-flows list and is served before the old
    /// flows: a single packet of a new flow leaves next (after the packet in progress of
    /// a flow with deficit left), not behind the backlog.
    #[test]
    fn a_new_flow_is_served_before_old_flows() {
        let mut q = per_flow(10_000);
        let mut sink = Sink::default();
        for _ in 0..100 {
            q.enqueue(at(0, pkt(0, 1500)), 0, &mut sink);
            q.enqueue(at(0, pkt(1, 1500)), 2, &mut sink);
        }
        // Both flows used their first quantum and sit in the old list.
        for _ in 0..10 {
            q.dequeue(0, &mut sink).unwrap();
        }
        assert_eq!(q.stats().new_flow_count, 2);
        q.enqueue(at(0, pkt(2, 100)), 4, &mut sink);
        assert_eq!(q.stats().new_flow_count, 3);
        let next = q.dequeue(0, &mut sink).unwrap();
        assert_eq!(next.pkt.flow, 2, "the new flow's packet leaves first");
        // Emptied, it moves to the old flows (which are not empty) and is not new again
        // when its next packet comes while it is still listed.
        q.dequeue(0, &mut sink).unwrap();
        q.enqueue(at(0, pkt(2, 100)), 4, &mut sink);
        assert_eq!(q.stats().new_flow_count, 3);
    }

    /// Over the packet limit, the fattest queue loses packets from its head: half its bytes
    /// or `drop_batch` packets, whichever comes first; the other flows lose nothing. Its
    /// CoDel count grows by the number dropped.
    #[test]
    fn overflow_drops_a_batch_from_the_fattest_flow() {
        let mut q = per_flow(200);
        let mut sink = Sink::default();
        for _ in 0..40 {
            q.enqueue(at(0, pkt(0, 1500)), 0, &mut sink);
        }
        for _ in 0..160 {
            q.enqueue(at(0, pkt(1, 1500)), 2, &mut sink);
        }
        assert_eq!(q.len(), 200);
        assert_eq!(sink.counts.drops_overlimit, 0);
        // One more packet (of the small flow): flow 1 holds 240 kB; half is 80 packets, so
        // the batch of 64 ends it.
        q.enqueue(at(0, pkt(0, 1500)), 0, &mut sink);
        assert_eq!(sink.counts.drops_overlimit, 64);
        assert_eq!(q.len(), 201 - 64);
        let mut dropped_flows = Vec::new();
        while let Some((_, p, fate)) = sink.take() {
            assert_eq!(fate, Fate::Dropped(DropCause::Overlimit));
            dropped_flows.push(p.flow);
        }
        assert!(dropped_flows.iter().all(|&f| f == 1));
        assert_eq!(q.flows[q.queue_of(2)].cvars.count, 64);
        // A smaller batch: the threshold (half the fattest's bytes) ends it first.
        let p = FqCodelParams {
            hash: FqHash::PerFlow,
            drop_batch_pkts: 1000,
            ..FqCodelParams::default()
        };
        let mut q: FqCodel<Packet> = FqCodel::new(&p, 10, 0);
        for _ in 0..10 {
            q.enqueue(at(0, pkt(0, 1500)), 0, &mut sink);
        }
        q.enqueue(at(0, pkt(1, 1500)), 2, &mut sink);
        // Flow 0: 15000 B, half is 7500 B: 5 packets.
        assert_eq!(q.len(), 11 - 5);
    }

    /// The memory limit counts truesize: 2304 B per full packet, so a limit of 23040 B holds
    /// 10 packets; the 11th triggers a batch drop counted as over memory.
    #[test]
    fn memory_limit_counts_truesize() {
        let p = FqCodelParams {
            hash: FqHash::PerFlow,
            memory_limit_bytes: 23_040,
            ..FqCodelParams::default()
        };
        let mut q: FqCodel<Packet> = FqCodel::new(&p, 10_240, 0);
        let mut sink = Sink::default();
        for _ in 0..10 {
            q.enqueue(at(0, pkt(0, 1500)), 0, &mut sink);
        }
        assert_eq!(sink.counts.drops_overlimit, 0);
        assert_eq!(q.memory_usage(), 23_040);
        q.enqueue(at(0, pkt(0, 1500)), 0, &mut sink);
        assert_eq!(sink.counts.drops_overlimit, 6); // half of 16500 B: 6 packets
        assert_eq!(q.stats().drop_overmemory, 6);
        assert_eq!(q.memory_usage(), 5 * 2304);
    }

    /// The perturbed hash spreads flows over the queues as a uniform hash would: with 1024
    /// queues, 200 flows (400 keys) collide about as often as the birthday bound says,
    /// and another key gives another assignment.
    #[test]
    fn the_perturbed_hash_collides_like_a_random_one() {
        let p = FqCodelParams::default();
        let count_collisions = |perturbation: u64| {
            let q: FqCodel<Packet> = FqCodel::new(&p, 100, perturbation);
            let mut seen = vec![0u32; 1024];
            for key in 0..400u32 {
                seen[q.queue_of(key)] += 1;
            }
            seen.iter().filter(|&&n| n > 0).count()
        };
        // Expected occupied queues: 1024 x (1 - (1 - 1/1024)^400) = 330.
        let mut total = 0;
        for seed in 0..20u64 {
            total += count_collisions(seed * 7919);
        }
        let mean = total as f64 / 20.0;
        assert!((mean - 330.0).abs() < 6.0, "{mean}");
        let a: FqCodel<Packet> = FqCodel::new(&p, 100, 1);
        let b: FqCodel<Packet> = FqCodel::new(&p, 100, 2);
        assert!((0..50).any(|k| a.queue_of(k) != b.queue_of(k)));
    }

    /// Each flow queue runs its own CoDel: a flow that keeps a standing queue is dropped
    /// from, a flow that does not keep one is not.
    #[test]
    fn codel_acts_per_flow() {
        let mut q = per_flow(100_000);
        let mut sink = Sink::default();
        let service_ns = 120_000;
        let (mut t, mut t_in) = (0u64, 0u64);
        while t < 3_000_000_000 {
            while t_in <= t {
                // Flow 0 sends at the full rate, flow 1 at a tenth of it.
                q.enqueue(at(t_in, pkt(0, 1500)), 0, &mut sink);
                if (t_in / service_ns) % 10 == 0 {
                    q.enqueue(at(t_in, pkt(1, 1500)), 2, &mut sink);
                }
                t_in += service_ns;
            }
            q.dequeue(t, &mut sink);
            t += service_ns;
        }
        let mut drops = [0; 2];
        while let Some((_, p, fate)) = sink.take() {
            assert_eq!(fate, Fate::Dropped(DropCause::Aqm));
            drops[p.flow as usize] += 1;
        }
        assert!(drops[0] > 10, "{drops:?}");
        assert_eq!(drops[1], 0, "{drops:?}");
    }
}
