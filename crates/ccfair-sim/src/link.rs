//! One direction of a link: a serialiser at the link rate, a drop-tail buffer and a fixed
//! propagation delay, with optional Bernoulli loss.
//!
//! Buffer definition (used everywhere in ccfair, and by the kernel backend's forwarder): a
//! channel holds at most `buffer_pkts` packets **counting the packet in service**. A packet
//! arriving when `buffer_pkts` packets are queued or being serialised is dropped. So a buffer
//! of 1 packet means "no queue, only the packet on the wire".
//!
//! Random loss happens on the wire: the packet uses its serialisation time, then is lost.
//!
//! With `queue = Netem` the buffer counts the packets in the delay line too, and random
//! loss strikes when a packet is offered, as netem does (`netem.rs`).

use ccfair_cc::rng::Rng;

use crate::fifo::Fifo;
use crate::packet::{Packet, PacketRef};
use crate::spec::Queue;

#[derive(Clone, Copy, Debug, Default)]
pub struct ChannelCounters {
    pub arrivals: u64,
    pub drops_queue: u64,
    pub drops_random: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    /// Sum over departures of the time the packet spent queued + in service (ns).
    pub sojourn_ns_sum: u64,
}

/// What a channel needs to know about what it carries: the size on the wire. The simulator
/// moves references to its packets ([`PacketRef`]); the kernel backend's forwarder (crates/ccfair-emu) moves
/// handles to real IP packets, so both share one link model.
pub trait OnWire: Copy {
    /// Bytes on the wire (IP packet size).
    fn wire_bytes(&self) -> u32;
}

impl OnWire for Packet {
    fn wire_bytes(&self) -> u32 {
        self.wire_bytes
    }
}

impl OnWire for PacketRef {
    fn wire_bytes(&self) -> u32 {
        self.wire_bytes
    }
}

/// A packet accepted by the buffer and not yet fully serialised, with the channel's
/// running totals over the packets accepted up to and including it: when it departs they
/// are the departed totals, so `advance` retires a packet without adding to counters.
#[derive(Clone, Copy, Debug, Default)]
struct Backlogged {
    departure_ns: u64,
    bytes_through: u64,
    sojourn_ns_through: u64,
}

/// What became of a packet offered to a channel.
#[derive(Debug)]
pub enum Enqueued<P = Packet> {
    /// Accepted; it reaches the far end at its time. `Some(t)`: the pipe was empty, so the
    /// engine must schedule an arrival at `t`.
    Accepted(Option<u64>),
    /// Dropped by the full drop-tail buffer.
    BufferFull(P),
    /// Accepted and serialised, then lost on the wire (random loss).
    LostOnWire(P),
}

/// One direction of a link.
///
/// Service is FIFO at a constant rate, so a packet's departure time is known when it is
/// accepted: max(now, previous departure) + serialisation time. The channel therefore needs
/// no event per departure; it keeps the departure times of accepted packets and counts as
/// "in the buffer" those whose departure lies in the future (`advance` retires the others).
pub struct Channel<P: OnWire = Packet> {
    /// Fixed at creation (the serialisation time of the last packet size is cached).
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub buffer_pkts: u32,
    pub loss_prob: f64,
    /// What `buffer_pkts` counts (`netem.rs`).
    pub queue: Queue,
    rng: Rng,
    backlog: Fifo<Backlogged>,
    /// Totals over the packets the buffer accepted: bytes, and time queued + in service.
    accepted_bytes: u64,
    accepted_sojourn_ns: u64,
    /// The same totals over those that departed by the last `advance`.
    departed_bytes: u64,
    departed_sojourn_ns: u64,
    last_departure_ns: u64,
    /// Accepted packets not lost, with their arrival time at the far end (FIFO: constant
    /// delay after in-order departures).
    pipe: Fifo<(u64, P)>,
    counters: ChannelCounters,
    /// The last packet size serialised and its time: a channel carries mostly one size
    /// (full segments, or bare ACKs), so this skips the division for most packets.
    last_size: (u32, u64),
}

impl<P: OnWire> Channel<P> {
    pub fn new(rate_bps: u64, delay_ns: u64, buffer_pkts: u32, loss_prob: f64, seed: u64) -> Self {
        let mut channel = Channel {
            rate_bps,
            delay_ns,
            buffer_pkts,
            loss_prob,
            queue: Queue::Droptail,
            rng: Rng::new(seed),
            // Grows with the queue: memory follows what is in flight, not the configured
            // buffer (reserving it cost up to 4096 entries of 24 bytes, ~100 KB, per channel
            // direction, mostly never used).
            backlog: Fifo::new(),
            accepted_bytes: 0,
            accepted_sojourn_ns: 0,
            departed_bytes: 0,
            departed_sojourn_ns: 0,
            last_departure_ns: 0,
            pipe: Fifo::new(),
            counters: ChannelCounters::default(),
            last_size: (0, 0),
        };
        channel.last_size = (0, channel.serialisation_ns(0));
        channel
    }

    /// Serialisation time of `bytes` at the link rate, rounded to the nearest ns and at
    /// least 1 ns: the engine's clock ticks in ns, and a packet that took no time on a link
    /// would let a zero-delay path loop without the clock advancing (a livelock). The floor
    /// only matters above ~1.6 Tbit/s (a 52-byte ACK in under 0.5 ns).
    pub fn serialisation_ns(&self, bytes: u32) -> u64 {
        let rate = self.rate_bps.max(1);
        // In 64 bits whenever the rounded numerator fits (bytes * 8e9 + rate / 2 < 2^64: any
        // packet below ~2.3 GB at any rate), else in 128 bits: the same value either way,
        // without a 128-bit division (a library call) per packet.
        match (bytes as u64).checked_mul(8_000_000_000) {
            Some(bits) if bits <= u64::MAX - rate / 2 => ((bits + rate / 2) / rate).max(1),
            _ => serialisation_ns_wide(bytes, rate),
        }
    }

    /// Reserve room for `packets` more queued packets up front, so that enqueueing up to
    /// that many allocates nothing (the kernel backend's real-time forwarder).
    pub fn reserve(&mut self, packets: usize) {
        self.backlog.reserve(packets);
    }

    /// Retire packets whose serialisation finished by `now` (counters, occupancy).
    pub fn advance(&mut self, now: u64) {
        while let Some(&b) = self.backlog.front() {
            if b.departure_ns > now {
                break;
            }
            self.departed_bytes = b.bytes_through;
            self.departed_sojourn_ns = b.sojourn_ns_through;
            self.backlog.pop_front();
        }
    }

    /// Packets in the buffer at the last `advance`, counting the one in service.
    pub fn occupancy_pkts(&self) -> usize {
        self.backlog.len()
    }

    pub fn occupancy_bytes(&self) -> u64 {
        self.accepted_bytes - self.departed_bytes
    }

    /// Counters as of the last `advance`.
    pub fn counters(&self) -> ChannelCounters {
        ChannelCounters {
            tx_pkts: self.counters.tx_pkts - self.backlog.len() as u64,
            tx_bytes: self.departed_bytes,
            sojourn_ns_sum: self.departed_sojourn_ns,
            ..self.counters
        }
    }

    /// Offer a packet at time `now`. Inlined into the engine's one call site (`forward`):
    /// the call's register saves and the outcome passed through memory cost about 15% of it.
    #[inline]
    pub fn enqueue(&mut self, now: u64, pkt: P) -> Enqueued<P> {
        self.advance(now);
        self.counters.arrivals += 1;
        let held = match self.queue {
            Queue::Droptail => self.backlog.len(),
            Queue::Netem => {
                // netem_enqueue: random loss first, then the limit.
                if self.loss_prob > 0.0 && self.rng.uniform() < self.loss_prob {
                    self.counters.drops_random += 1;
                    return Enqueued::LostOnWire(pkt);
                }
                crate::netem::held(&self.pipe, now)
            }
        };
        if held >= self.buffer_pkts as usize {
            self.counters.drops_queue += 1;
            return Enqueued::BufferFull(pkt);
        }
        let bytes = pkt.wire_bytes();
        if self.last_size.0 != bytes {
            self.last_size = (bytes, self.serialisation_ns(bytes));
        }
        let departure = now.max(self.last_departure_ns) + self.last_size.1;
        self.last_departure_ns = departure;
        // `counters.tx_pkts` counts accepted packets here; `counters()` subtracts those
        // still in the buffer.
        self.counters.tx_pkts += 1;
        self.accepted_bytes += bytes as u64;
        self.accepted_sojourn_ns += departure - now;
        self.backlog.push_back(Backlogged {
            departure_ns: departure,
            bytes_through: self.accepted_bytes,
            sojourn_ns_through: self.accepted_sojourn_ns,
        });
        debug_assert!(self.backlog.len() <= self.buffer_pkts as usize);
        // Random loss happens on the wire: the packet still takes its serialisation time.
        if self.queue == Queue::Droptail
            && self.loss_prob > 0.0
            && self.rng.uniform() < self.loss_prob
        {
            self.counters.drops_random += 1;
            return Enqueued::LostOnWire(pkt);
        }
        let at = departure + self.delay_ns;
        let was_empty = self.pipe.is_empty();
        self.pipe.push_back((at, pkt));
        Enqueued::Accepted(was_empty.then_some(at))
    }

    /// The head of the pipe reached the far end. Returns it and the time of the next arrival.
    pub fn arrival(&mut self) -> (P, Option<u64>) {
        let (_, pkt) = self.pipe.pop_front().expect("arrival on an empty pipe");
        (pkt, self.pipe.front().map(|&(t, _)| t))
    }

    /// Packets accepted and not yet delivered (queued, in service or propagating).
    pub fn held_packets(&self) -> impl Iterator<Item = &P> {
        self.pipe.iter().map(|(_, p)| p)
    }
}

/// [`Channel::serialisation_ns`] in 128-bit arithmetic: nanoseconds to serialise `bytes` at
/// `rate_bps`, rounded to nearest, at least 1.
fn serialisation_ns_wide(bytes: u32, rate_bps: u64) -> u64 {
    let bits = bytes as u128 * 8 * 1_000_000_000;
    let rate = rate_bps.max(1) as u128;
    (((bits + rate / 2) / rate) as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Kind, SackBlock};

    fn pkt(bytes: u32) -> Packet {
        Packet {
            flow: 0,
            kind: Kind::Data,
            hop: 0,
            wire_bytes: bytes,
            seq: 0,
            payload_bytes: 0,
            tsval: 0,
            tsecr: 0,
            n_sack: 0,
            window_bytes: 0,
            sack: [SackBlock::default(); 3],
        }
    }

    fn arrival_of(e: Enqueued<Packet>) -> Option<u64> {
        match e {
            Enqueued::Accepted(t) => t,
            other => panic!("not accepted: {other:?}"),
        }
    }

    #[test]
    fn serialisation_of_1500_bytes_at_50_mbps_is_240_us() {
        let ch: Channel = Channel::new(50_000_000, 0, 10, 0.0, 1);
        assert_eq!(ch.serialisation_ns(1500), 240_000);
    }

    /// The 64-bit path gives the 128-bit value for every size and rate, at the edges of
    /// both ranges and at random.
    #[test]
    fn serialisation_matches_the_wide_computation() {
        let mut rng = Rng::new(7);
        let mut rates = vec![1, 2, 3, 999, 1_000_000, 50_000_000, 1_000_000_000];
        rates.extend([10_000_000_000, u64::MAX / 2, u64::MAX - 1, u64::MAX]);
        let mut sizes = vec![0, 1, 52, 1500, 65_535, 2_305_843, u32::MAX / 2, u32::MAX];
        for _ in 0..300 {
            rates.push((rng.uniform() * 2f64.powi(rng.below(64) as i32)) as u64);
            sizes.push((rng.uniform() * 2f64.powi(rng.below(33) as i32)) as u32);
        }
        for &rate in &rates {
            let ch: Channel = Channel::new(rate, 0, 10, 0.0, 1);
            for &bytes in &sizes {
                assert_eq!(
                    ch.serialisation_ns(bytes),
                    serialisation_ns_wide(bytes, rate),
                    "{bytes} B at {rate} bit/s"
                );
            }
        }
    }

    #[test]
    fn buffer_counts_packet_in_service() {
        let mut ch: Channel = Channel::new(1_000_000, 0, 2, 0.0, 1);
        assert!(matches!(ch.enqueue(0, pkt(1500)), Enqueued::Accepted(_))); // in service
        assert!(matches!(ch.enqueue(0, pkt(1500)), Enqueued::Accepted(_))); // waiting
        assert!(matches!(ch.enqueue(0, pkt(1500)), Enqueued::BufferFull(_))); // full
        assert_eq!(ch.counters().drops_queue, 1);
        assert_eq!(ch.occupancy_pkts(), 2);
        // 1500 B at 1 Mbit/s = 12 ms: after the first departure there is room again.
        assert!(matches!(
            ch.enqueue(12_000_000, pkt(1500)),
            Enqueued::Accepted(_)
        ));
        assert_eq!(ch.occupancy_pkts(), 2);
        assert_eq!(ch.counters().tx_pkts, 1);
    }

    #[test]
    fn fifo_with_delay() {
        let mut ch: Channel = Channel::new(12_000_000, 5_000, 10, 0.0, 1); // 1 ms per 1500 B
        assert_eq!(arrival_of(ch.enqueue(0, pkt(1500))), Some(1_005_000));
        assert_eq!(arrival_of(ch.enqueue(0, pkt(1500))), None); // pipe already scheduled
        let (_, next) = ch.arrival();
        assert_eq!(next, Some(2_005_000));
        // An idle channel serves at once.
        ch.arrival();
        assert_eq!(
            arrival_of(ch.enqueue(10_000_000, pkt(1500))),
            Some(11_005_000)
        );
        ch.advance(11_000_000);
        assert_eq!(ch.counters().tx_pkts, 3);
        assert_eq!(
            ch.counters().sojourn_ns_sum,
            1_000_000 + 2_000_000 + 1_000_000
        );
    }

    #[test]
    fn random_loss_rate_matches_probability() {
        let mut ch: Channel = Channel::new(1_000_000_000, 0, 100_000, 0.1, 42);
        let mut t = 0;
        for _ in 0..20_000 {
            ch.enqueue(t, pkt(100));
            t += 1_000;
        }
        let lost = ch.counters().drops_random as f64 / 20_000.0;
        assert!((lost - 0.1).abs() < 0.01, "{lost}");
    }
}
