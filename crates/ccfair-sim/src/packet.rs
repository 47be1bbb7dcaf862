//! Packets as they travel the simulated network.
//!
//! A packet is a small `Copy` value moved through channel queues; nothing is allocated per
//! packet. Sequence numbers count segments (see `ccfair_cc::sock`).

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
    /// Index into the flow's data path (Data) or ACK path (Ack) of the channel it is on.
    pub hop: u16,
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
