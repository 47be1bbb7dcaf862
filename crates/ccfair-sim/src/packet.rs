//! Packets as they travel the simulated network.
//!
//! A packet is a small `Copy` value. While it crosses the network it stays in one slot of a
//! [`PacketSlab`] and channels move an 8-byte [`PacketRef`] to it, not the 88-byte packet
//! (hand-offs by value cost about a tenth of the engine's instructions per packet-hop).
//! Slots are reused, so nothing is allocated per packet once the slab has grown to the
//! largest number of packets in flight. Sequence numbers count segments (see
//! `ccfair_cc::sock`).

/// Up to 3 SACK blocks fit next to the timestamps option (40 B of options: 12 for
/// timestamps, 2 + 8 x 3 for SACK), as Linux sends them.
pub const MAX_SACK_BLOCKS: usize = 3;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    /// First segment covered.
    pub start: u64,
    /// One past the last segment covered.
    pub end: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Data,
    Ack,
    /// The three-way handshake (RFC 9293 section 3.5): SYN and the final ACK travel on the
    /// data path, SYN-ACK on the ACK path. Sequence numbers count data segments only, so
    /// these carry none.
    Syn,
    SynAck,
    HandshakeAck,
}

impl Kind {
    /// Travels from the flow's sender to its receiver (the data path).
    pub fn is_forward(self) -> bool {
        matches!(self, Kind::Data | Kind::Syn | Kind::HandshakeAck)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Data => "data",
            Kind::Ack => "ack",
            Kind::Syn => "syn",
            Kind::SynAck => "synack",
            Kind::HandshakeAck => "handshake_ack",
        }
    }
}

/// Bytes on the wire of Linux's SYN and SYN-ACK with its default options: MSS (4),
/// SACK-permitted and timestamps (12, packed), NOP and window scale (4) after the 40 B of
/// IPv4 and TCP headers (`tcp_syn_options`, `tcp_synack_options` in net/ipv4/tcp_output.c).
pub const SYN_BYTES: u32 = 60;

#[derive(Clone, Copy, Debug)]
pub struct Packet {
    pub flow: u32,
    pub kind: Kind,
    /// Bytes on the wire (IP packet size).
    pub wire_bytes: u32,
    /// Data: segment number. Ack: cumulative ACK (next expected segment).
    pub seq: u64,
    /// Data: payload bytes.
    pub payload_bytes: u32,
    /// TCP timestamps option (RFC 7323), in the sender's millisecond ticks.
    pub tsval: u32,
    pub tsecr: u32,
    /// Ack: number of valid entries in `sack`. The first may be a D-SACK block.
    pub n_sack: u8,
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    /// Ack and SynAck: the receive window advertised, in bytes (the header's field shifted
    /// by the window scale; the SYN-ACK's is unscaled).
    pub window_bytes: u32,
}

impl Packet {
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.n_sack as usize]
    }
}

/// What a channel carries in the simulator: a packet's slot in the [`PacketSlab`], its
/// size on the wire (all a channel needs to know) and where it is on its route (all the
/// engine needs to know to pass it on, so that a packet crossing a switch is not read
/// from its slot: at many flows that read missed the cache on most hops).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketRef {
    pub slot: u32,
    pub wire_bytes: u32,
    /// The packet's channel is the engine's route table entry `hop` (`world.rs`,
    /// `Simulation::routes`, which holds every flow's data path and ACK path), so the next
    /// channel is the next entry.
    pub hop: u32,
}

/// The packets in the network, each in a slot until it reaches its end host or is dropped.
/// Freed slots are reused last-freed first.
#[derive(Default)]
pub struct PacketSlab {
    slots: Vec<Packet>,
    free: Vec<u32>,
}

impl PacketSlab {
    /// Store a copy of `pkt`, which starts at route table entry `hop`, and return its
    /// reference.
    pub fn insert(&mut self, pkt: &Packet, hop: u32) -> PacketRef {
        let wire_bytes = pkt.wire_bytes;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = *pkt;
                slot
            }
            None => {
                self.slots.push(*pkt);
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 packets in flight")
            }
        };
        PacketRef {
            slot,
            wire_bytes,
            hop,
        }
    }

    pub fn get(&self, r: PacketRef) -> &Packet {
        &self.slots[r.slot as usize]
    }

    pub fn get_mut(&mut self, r: PacketRef) -> &mut Packet {
        &mut self.slots[r.slot as usize]
    }

    /// Take the packet out; its slot is free again.
    pub fn remove(&mut self, r: PacketRef) -> Packet {
        self.free(r);
        self.slots[r.slot as usize]
    }

    /// Free the packet's slot (the packet is no longer needed).
    pub fn free(&mut self, r: PacketRef) {
        self.free.push(r.slot);
    }

    /// Packets stored (slots in use).
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the slots (as many as packets were ever in the network at once).
    pub fn reserved_bytes(&self) -> u64 {
        (self.slots.capacity() * std::mem::size_of::<Packet>()
            + self.free.capacity() * std::mem::size_of::<u32>()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(seq: u64) -> Packet {
        Packet {
            flow: 0,
            kind: Kind::Data,
            wire_bytes: 1500,
            seq,
            payload_bytes: 1448,
            tsval: 0,
            tsecr: 0,
            n_sack: 0,
            window_bytes: 0,
            sack: [SackBlock::default(); MAX_SACK_BLOCKS],
        }
    }

    #[test]
    fn slab_reuses_freed_slots_and_keeps_packets_apart() {
        let mut slab = PacketSlab::default();
        let a = slab.insert(&pkt(1), 0);
        let b = slab.insert(&pkt(2), 7);
        assert_eq!((a.slot, b.slot, a.wire_bytes, b.hop), (0, 1, 1500, 7));
        slab.get_mut(b).tsval = 3;
        assert_eq!(slab.remove(a).seq, 1);
        let c = slab.insert(&pkt(3), 0);
        assert_eq!(c.slot, 0, "the freed slot is reused");
        assert_eq!((slab.get(b).seq, slab.get(b).tsval), (2, 3));
        assert_eq!(slab.get(c).seq, 3);
        assert_eq!(slab.len(), 2);
        slab.free(b);
        assert_eq!(slab.len(), 1);
    }
}
