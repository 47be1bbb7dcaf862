//! One direction of a link: a serialiser at the link rate, a drop-tail buffer and a fixed
//! propagation delay, with optional Bernoulli loss.
//!
//! Buffer definition (used everywhere in ccfair, and by the kernel backend's forwarder): a
//! channel holds at most `buffer_pkts` packets **counting the packet in service**. A packet
//! arriving when `buffer_pkts` packets are queued or being serialised is dropped. So a buffer
//! of 1 packet means "no queue, only the packet on the wire".
//!
//! Random loss happens on the wire: the packet uses its serialisation time, then is lost.

use std::collections::VecDeque;

use ccfair_cc::rng::Rng;

use crate::packet::Packet;

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

pub struct Channel {
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub buffer_pkts: u32,
    pub loss_prob: f64,
    rng: Rng,
    /// Waiting and in-service packets (the front is in service when `busy`), with their
    /// arrival time at this channel.
    queue: VecDeque<(u64, Packet)>,
    queue_bytes: u64,
    busy: bool,
    /// Packets propagating, with their arrival time at the far end (FIFO: constant delay).
    pipe: VecDeque<(u64, Packet)>,
    pub counters: ChannelCounters,
}

/// What the engine must schedule after a channel operation.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ChannelWake {
    pub tx_done_at: Option<u64>,
    pub arrival_at: Option<u64>,
}

impl Channel {
    pub fn new(rate_bps: u64, delay_ns: u64, buffer_pkts: u32, loss_prob: f64, seed: u64) -> Self {
        Channel {
            rate_bps,
            delay_ns,
            buffer_pkts,
            loss_prob,
            rng: Rng::new(seed),
            queue: VecDeque::with_capacity(buffer_pkts.min(4096) as usize),
            queue_bytes: 0,
            busy: false,
            pipe: VecDeque::new(),
            counters: ChannelCounters::default(),
        }
    }

    /// Serialisation time of `bytes` at the link rate, rounded to the nearest ns.
    pub fn serialisation_ns(&self, bytes: u32) -> u64 {
        let bits = bytes as u128 * 8 * 1_000_000_000;
        ((bits + self.rate_bps as u128 / 2) / self.rate_bps as u128) as u64
    }

    /// Packets queued, counting the one in service.
    pub fn occupancy_pkts(&self) -> usize {
        self.queue.len()
    }

    pub fn occupancy_bytes(&self) -> u64 {
        self.queue_bytes
    }

    pub fn in_pipe(&self) -> usize {
        self.pipe.len()
    }

    /// Offer a packet. Returns `Err(packet)` when the drop-tail buffer is full.
    pub fn enqueue(&mut self, now: u64, pkt: Packet) -> Result<ChannelWake, Packet> {
        self.counters.arrivals += 1;
        if self.queue.len() >= self.buffer_pkts as usize {
            self.counters.drops_queue += 1;
            return Err(pkt);
        }
        self.queue_bytes += pkt.wire_bytes as u64;
        self.queue.push_back((now, pkt));
        debug_assert!(self.queue.len() <= self.buffer_pkts as usize);
        let mut wake = ChannelWake::default();
        if !self.busy {
            self.busy = true;
            wake.tx_done_at = Some(now + self.serialisation_ns(pkt.wire_bytes));
        }
        Ok(wake)
    }

    /// The packet in service finished serialising. Returns the next wake-ups and, if the
    /// packet was lost on the wire, the lost packet.
    pub fn tx_done(&mut self, now: u64) -> (ChannelWake, Option<Packet>) {
        let (arrived_at, pkt) = self.queue.pop_front().expect("tx_done on an idle channel");
        self.queue_bytes -= pkt.wire_bytes as u64;
        self.counters.tx_pkts += 1;
        self.counters.tx_bytes += pkt.wire_bytes as u64;
        self.counters.sojourn_ns_sum += now - arrived_at;
        let mut wake = ChannelWake::default();
        let mut lost = None;
        if self.loss_prob > 0.0 && self.rng.uniform() < self.loss_prob {
            self.counters.drops_random += 1;
            lost = Some(pkt);
        } else {
            let at = now + self.delay_ns;
            if self.pipe.is_empty() {
                wake.arrival_at = Some(at);
            }
            self.pipe.push_back((at, pkt));
        }
        if let Some(&(_, next)) = self.queue.front() {
            wake.tx_done_at = Some(now + self.serialisation_ns(next.wire_bytes));
        } else {
            self.busy = false;
        }
        (wake, lost)
    }

    /// The head of the pipe reached the far end. Returns it and the time of the next arrival.
    pub fn arrival(&mut self) -> (Packet, Option<u64>) {
        let (_, pkt) = self.pipe.pop_front().expect("arrival on an empty pipe");
        (pkt, self.pipe.front().map(|&(t, _)| t))
    }

    /// Iterate over packets held (queued, in service, propagating), for conservation checks.
    pub fn held_packets(&self) -> impl Iterator<Item = &Packet> {
        self.queue
            .iter()
            .map(|(_, p)| p)
            .chain(self.pipe.iter().map(|(_, p)| p))
    }
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
            sack: [SackBlock::default(); 3],
        }
    }

    #[test]
    fn serialisation_of_1500_bytes_at_50_mbps_is_240_us() {
        let ch = Channel::new(50_000_000, 0, 10, 0.0, 1);
        assert_eq!(ch.serialisation_ns(1500), 240_000);
    }

    #[test]
    fn buffer_counts_packet_in_service() {
        let mut ch = Channel::new(1_000_000, 0, 2, 0.0, 1);
        assert!(ch.enqueue(0, pkt(1500)).is_ok()); // in service
        assert!(ch.enqueue(0, pkt(1500)).is_ok()); // waiting
        assert!(ch.enqueue(0, pkt(1500)).is_err()); // buffer of 2 is full
        assert_eq!(ch.counters.drops_queue, 1);
        assert_eq!(ch.occupancy_pkts(), 2);
    }

    #[test]
    fn fifo_with_delay() {
        let mut ch = Channel::new(12_000_000, 5_000, 10, 0.0, 1); // 1 ms per 1500 B
        let w = ch.enqueue(0, pkt(1500)).unwrap();
        assert_eq!(w.tx_done_at, Some(1_000_000));
        ch.enqueue(0, pkt(1500)).unwrap();
        let (w, lost) = ch.tx_done(1_000_000);
        assert!(lost.is_none());
        assert_eq!(w.arrival_at, Some(1_005_000));
        assert_eq!(w.tx_done_at, Some(2_000_000));
        let (w, _) = ch.tx_done(2_000_000);
        assert_eq!(w.arrival_at, None); // pipe already scheduled
        let (_, next) = ch.arrival();
        assert_eq!(next, Some(2_005_000));
    }

    #[test]
    fn random_loss_rate_matches_probability() {
        let mut ch = Channel::new(1_000_000_000, 0, 100_000, 0.1, 42);
        let mut t = 0;
        for _ in 0..20_000 {
            ch.enqueue(t, pkt(100)).unwrap();
            t += 1_000;
            ch.tx_done(t);
        }
        let lost = ch.counters.drops_random as f64 / 20_000.0;
        assert!((lost - 0.1).abs() < 0.01, "{lost}");
    }
}
