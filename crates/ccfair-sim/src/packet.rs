//! Packets as they travel the simulated network.
//!
//! A packet is a small `Copy` value. While it crosses the network it stays in one slot of a
//! [`PacketSlab`] and channels move a 12-byte [`PacketRef`] to it, not the 64-byte packet
//! (hand-offs by value cost about a tenth of the engine's instructions per packet-hop).
//! Slots are reused, so nothing is allocated per packet once the slab has grown to the
//! largest number of packets in flight. Sequence numbers count segments (see
//! `ccfair_cc::sock`).

/// Up to 3 SACK blocks fit next to the timestamps option (40 B of options: 12 for
/// timestamps, 2 + 8 x 3 for SACK), as Linux sends them.
pub const MAX_SACK_BLOCKS: usize = 3;

/// A range of segments a SACK block reports received, `start..end`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    /// First segment covered.
    pub start: u64,
    /// One past the last segment covered.
    pub end: u64,
}

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A data segment (MSS payload, or less for the last one of a finite flow).
    Data,
    /// A pure ACK from the receiver (possibly with SACK blocks).
    Ack,
    /// The three-way handshake (RFC 9293 section 3.5): SYN and the final ACK travel on the
    /// data path, SYN-ACK on the ACK path. Sequence numbers count data segments only, so
    /// these carry none.
    Syn,
    /// The receiver's SYN-ACK.
    SynAck,
    /// The sender's ACK that completes the handshake.
    HandshakeAck,
}

impl Kind {
    /// Travels from the flow's sender to its receiver (the data path).
    pub fn is_forward(self) -> bool {
        matches!(self, Kind::Data | Kind::Syn | Kind::HandshakeAck)
    }

    /// The kind as the trace table writes it (`"data"`, `"synack"`).
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

/// The ECN field of the IP header (RFC 3168 section 5): what the sender declares and what a
/// router's queue discipline may change. Linux's names: `INET_ECN_NOT_ECT`, `INET_ECN_ECT_1`,
/// `INET_ECN_ECT_0`, `INET_ECN_CE` (include/net/inet_ecn.h), with the same codepoints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Ecn {
    /// Not ECN-capable transport: a queue that would mark drops instead.
    #[default]
    NotEct = 0,
    /// ECN-capable transport, codepoint 1 (`INET_ECN_ECT_1`; L4S uses it, ccfair's senders
    /// never set it).
    Ect1 = 1,
    /// ECN-capable transport, codepoint 0 (`INET_ECN_ECT_0`): what an ECN sender sets.
    Ect0 = 2,
    /// Congestion experienced: set by a queue instead of a drop.
    Ce = 3,
}

impl Ecn {
    /// Whether a queue may mark the packet instead of dropping it (`INET_ECN_is_capable`).
    #[inline]
    pub fn is_capable(self) -> bool {
        self != Ecn::NotEct
    }
}

/// The TCP header's ECN flags (RFC 3168 section 6.1): ECE (echo of a CE mark, receiver to
/// sender) and CWR (the sender reduced its window). Linux: `TCPHDR_ECE`, `TCPHDR_CWR`
/// (include/net/tcp.h). The SYN's ECE|CWR and the SYN-ACK's ECE negotiate ECN.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    /// No flag.
    pub const NONE: TcpFlags = TcpFlags(0);
    /// ECN-Echo (`TCPHDR_ECE`).
    pub const ECE: TcpFlags = TcpFlags(0x40);
    /// Congestion Window Reduced (`TCPHDR_CWR`).
    pub const CWR: TcpFlags = TcpFlags(0x80);

    /// Whether every flag of `other` is set.
    #[inline]
    pub fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// These flags and those of `other`.
    #[inline]
    pub fn with(self, other: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | other.0)
    }
}

/// A SACK block as the option carries it: the low 32 bits of its edges (RFC 2018 section 3:
/// each edge is a 32-bit sequence number). Read against the ACK's cumulative number
/// ([`Packet::sack_blocks`]), as Linux compares sequence numbers modulo 2^32 (`before()`
/// and `after()` in include/net/tcp.h): an edge within 2^31 segments of the ACK reads back
/// exactly, and a receiver's blocks lie within its window of it. It keeps a packet to one
/// cache line (it took 88 bytes with 64-bit edges).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireSack {
    start: u32,
    end: u32,
}

impl WireSack {
    /// No block (the unused entries of a packet's `sack`).
    pub const NONE: WireSack = WireSack { start: 0, end: 0 };

    fn from_block(b: SackBlock) -> Self {
        WireSack {
            start: b.start as u32,
            end: b.end as u32,
        }
    }

    fn block(self, ack: u64) -> SackBlock {
        let edge = |e: u32| ack.wrapping_add_signed(e.wrapping_sub(ack as u32) as i32 as i64);
        SackBlock {
            start: edge(self.start),
            end: edge(self.end),
        }
    }
}

/// No SACK blocks: a packet's `sack` when `n_sack` is 0.
pub const NO_SACK: [WireSack; MAX_SACK_BLOCKS] = [WireSack::NONE; MAX_SACK_BLOCKS];

/// 64 bytes: one cache line in its slot of the [`PacketSlab`] (`Slot`).
#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// The flow's index in the spec.
    pub flow: u32,
    /// What the packet is.
    pub kind: Kind,
    /// Ack: number of valid entries in `sack`. The first may be a D-SACK block.
    pub n_sack: u8,
    /// The IP header's ECN field ([`Ecn`]); queues with ECN on mark `Ce` instead of dropping.
    pub ecn: Ecn,
    /// The TCP header's ECE and CWR flags ([`TcpFlags`]).
    pub tcp_flags: TcpFlags,
    /// Bytes on the wire (IP packet size).
    pub wire_bytes: u32,
    /// Data: segment number. Ack: cumulative ACK (next expected segment).
    pub seq: u64,
    /// Data: payload bytes.
    pub payload_bytes: u32,
    /// TCP timestamps option (RFC 7323), in the sender's millisecond ticks.
    pub tsval: u32,
    /// The timestamp echoed (`tsecr`): the `tsval` of the packet this one answers.
    pub tsecr: u32,
    /// Ack and SynAck: the receive window advertised, in bytes (the header's field shifted
    /// by the window scale; the SYN-ACK's is unscaled).
    pub window_bytes: u32,
    /// Ack: the SACK option's blocks, `n_sack` of them; read with [`Packet::sack_blocks`].
    pub sack: [WireSack; MAX_SACK_BLOCKS],
}

const _: () = assert!(std::mem::size_of::<Packet>() == 64);

/// The SACK blocks of an ACK, in the order it carries them (a slice by `Deref`).
#[derive(Clone, Copy, Debug)]
pub struct SackBlocks {
    blocks: [SackBlock; MAX_SACK_BLOCKS],
    len: usize,
}

impl std::ops::Deref for SackBlocks {
    type Target = [SackBlock];

    fn deref(&self) -> &[SackBlock] {
        &self.blocks[..self.len]
    }
}

impl Packet {
    /// The SACK blocks, their edges read against the cumulative ACK `seq` ([`WireSack`]).
    pub fn sack_blocks(&self) -> SackBlocks {
        let len = (self.n_sack as usize).min(MAX_SACK_BLOCKS);
        let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
        for (b, w) in blocks.iter_mut().zip(&self.sack[..len]) {
            *b = w.block(self.seq);
        }
        SackBlocks { blocks, len }
    }

    /// Carry `b` as SACK block `i` (set `seq`, the cumulative ACK, first; `n_sack` counts
    /// the blocks).
    #[inline]
    pub fn set_sack_block(&mut self, i: usize, b: SackBlock) {
        self.sack[i] = WireSack::from_block(b);
        debug_assert_eq!(
            self.sack[i].block(self.seq),
            b,
            "a block within 2^31 of the ACK"
        );
    }

    /// Carry exactly `blocks` (at most [`MAX_SACK_BLOCKS`]) as the SACK option, after `seq`
    /// is set.
    pub fn set_sack_blocks(&mut self, blocks: &[SackBlock]) {
        for (i, &b) in blocks.iter().enumerate() {
            self.set_sack_block(i, b);
        }
        self.n_sack = blocks.len() as u8;
    }
}

/// What a channel carries in the simulator: a packet's slot in the [`PacketSlab`], its
/// size on the wire (all a channel needs to know) and where it is on its route (all the
/// engine needs to know to pass it on, so that a packet crossing a switch is not read
/// from its slot: at many flows that read missed the cache on most hops).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketRef {
    /// The packet's slot in the [`PacketSlab`].
    pub slot: u32,
    /// Bytes on the wire (IP packet size).
    pub wire_bytes: u32,
    /// The packet's channel is the engine's route table entry `hop` (`world.rs`,
    /// `Simulation::routes`, which holds every flow's data path and ACK path), so the next
    /// channel is the next entry.
    pub hop: u32,
}

/// Above this many slots (1 MiB of packets), the engine prefetches a packet's slot before
/// its end host reads it ([`PacketSlab::outgrows_cache`]). Below, the slots stay in the
/// second-level cache (1.25-4 MiB per core on current x86 servers) and a prefetch would
/// only cost instructions. Performance only: nothing a run computes depends on it.
pub const PREFETCH_ABOVE_SLOTS: usize = 16_384;

/// A packet's place in the [`PacketSlab`]: one cache line, aligned to it. The engine reads
/// a packet once, where it arrives at its end host, long after it was written, and
/// prefetches that line an arrival ahead (`world.rs`, `prefetch_next_arrival`); unaligned
/// (a large allocation starts 16 bytes into a line), every slot would straddle two lines.
/// Packets elsewhere (a host's send burst) need no alignment.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct Slot(Packet);

/// The packets in the network, each in a slot until it reaches its end host or is dropped.
/// Freed slots are reused last-freed first.
#[derive(Default)]
pub struct PacketSlab {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl PacketSlab {
    /// Store a copy of `pkt`, which starts at route table entry `hop`, and return its
    /// reference.
    pub fn insert(&mut self, pkt: &Packet, hop: u32) -> PacketRef {
        let wire_bytes = pkt.wire_bytes;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Slot(*pkt);
                slot
            }
            None => {
                self.slots.push(Slot(*pkt));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 packets in flight")
            }
        };
        PacketRef {
            slot,
            wire_bytes,
            hop,
        }
    }

    /// The packet behind `r`.
    pub fn get(&self, r: PacketRef) -> &Packet {
        &self.slots[r.slot as usize].0
    }

    /// Slots: the most packets the slab held at once (it never shrinks).
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Whether the slots have grown beyond what stays in the cache between a packet's
    /// write and its read (`PREFETCH_ABOVE_SLOTS`), so that prefetching them pays.
    #[inline(always)]
    pub fn outgrows_cache(&self) -> bool {
        self.slots.len() > PREFETCH_ABOVE_SLOTS
    }

    /// Ask the CPU to bring `r`'s slot into the cache ahead of its read.
    #[inline(always)]
    pub fn prefetch(&self, r: PacketRef) {
        crate::prefetch::line(self.slots.as_ptr().wrapping_add(r.slot as usize) as *const u8);
    }

    /// The packet behind `r`, to change it on the way (a queue's CE mark).
    pub fn get_mut(&mut self, r: PacketRef) -> &mut Packet {
        &mut self.slots[r.slot as usize].0
    }

    /// Take the packet out; its slot is free again.
    pub fn remove(&mut self, r: PacketRef) -> Packet {
        self.free(r);
        self.slots[r.slot as usize].0
    }

    /// Free the packet's slot (the packet is no longer needed).
    pub fn free(&mut self, r: PacketRef) {
        self.free.push(r.slot);
    }

    /// Packets stored (slots in use).
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// No packet stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the slots (as many as packets were ever in the network at once).
    pub fn reserved_bytes(&self) -> u64 {
        (self.slots.capacity() * std::mem::size_of::<Slot>()
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
            ecn: Ecn::NotEct,
            tcp_flags: TcpFlags::NONE,
            window_bytes: 0,
            sack: NO_SACK,
        }
    }

    fn block(start: u64, end: u64) -> SackBlock {
        SackBlock { start, end }
    }

    #[test]
    fn sack_blocks_read_back_exactly_around_the_ack() {
        // Above the ACK (out-of-order data), below it (a D-SACK), across 2^32 segments
        // either way, and 2^31 - 1 segments from it, the farthest that reads back.
        let far = (1u64 << 31) - 1;
        let cases: [(u64, [SackBlock; 3]); 4] = [
            (100, [block(90, 91), block(105, 110), block(120, 121)]),
            (
                (1 << 32) - 2,
                [
                    block((1 << 32) - 5, (1 << 32) - 3),
                    block(1 << 32, (1 << 32) + 7),
                    block((1 << 32) + 10, (1 << 32) + 12),
                ],
            ),
            (
                5 << 32,
                [
                    block((5 << 32) - 1, 5 << 32),
                    block((5 << 32) + far - 1, (5 << 32) + far),
                    block((5 << 32) - far, (5 << 32) - far + 1),
                ],
            ),
            (
                far + 10,
                [block(11, 12), block(far + 11, 2 * far), block(12, 13)],
            ),
        ];
        for (ack, blocks) in cases {
            for n in 0..=3 {
                let mut p = pkt(ack);
                p.kind = Kind::Ack;
                p.set_sack_blocks(&blocks[..n]);
                assert_eq!(p.n_sack as usize, n);
                assert_eq!(*p.sack_blocks(), blocks[..n], "ack {ack}, {n} blocks");
            }
        }
    }

    #[test]
    fn a_sack_edge_reads_modulo_2_to_the_32_like_linux_sequence_numbers() {
        // 2^31 segments or more from the ACK the low 32 bits alias, as Linux's 32-bit
        // sequence numbers do: the block reads as the one within 2^31 of the ACK.
        let mut p = pkt(1 << 40);
        p.sack[0] = WireSack::from_block(block((1 << 40) + (1 << 31), (1 << 40) + (1 << 32) + 1));
        p.n_sack = 1;
        assert_eq!(
            p.sack_blocks()[0],
            block((1 << 40) - (1 << 31), (1 << 40) + 1)
        );
    }

    #[test]
    fn every_packet_is_one_cache_line_in_the_slab() {
        let mut slab = PacketSlab::default();
        let refs: Vec<PacketRef> = (0..100).map(|i| slab.insert(&pkt(i), 0)).collect();
        for r in refs {
            let addr = slab.get(r) as *const Packet as usize;
            assert_eq!(addr % 64, 0, "slot {} starts a cache line", r.slot);
            assert_eq!(slab.get(r).seq, r.slot as u64);
        }
        assert_eq!(std::mem::size_of::<Packet>(), 64);
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
