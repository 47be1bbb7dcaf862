//! The few IPv4 and TCP header fields the forwarder reads to classify a packet
//! (RFC 791 section 3.1, RFC 9293 section 3.1), and the one change it makes: setting CE
//! in the ECN field when a queue discipline marks a packet (RFC 3168 section 5), with the
//! header checksum updated incrementally (RFC 1624).

use std::net::Ipv4Addr;

use ccfair_sim::packet::Ecn;

/// The IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// TCP header flag bits (RFC 9293 section 3.1).
pub const TCP_SYN: u8 = 0x02;
/// The ACK flag.
pub const TCP_ACK: u8 = 0x10;

/// What the forwarder needs to know about one packet read from a TUN device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// The IP protocol number ([`PROTO_TCP`] for TCP).
    pub protocol: u8,
    /// IP total length (bytes on the wire).
    pub total_len: u16,
    /// The ECN field (the two low bits of the TOS byte).
    pub ecn: Ecn,
    /// TCP ports, when the packet is an unfragmented TCP segment.
    pub ports: Option<(u16, u16)>,
    /// TCP payload bytes (0 for pure ACKs, SYN, FIN), when `ports` is set.
    pub tcp_payload: u32,
    /// TCP flags byte (`TCP_SYN`, `TCP_ACK`, ...), when `ports` is set; 0 otherwise.
    pub tcp_flags: u8,
    /// TCP sequence and acknowledgment numbers, when `ports` is set.
    pub tcp_seq: u32,
    /// The TCP acknowledgment number, when `ports` is set.
    pub tcp_ack: u32,
    /// The TCP window field (unscaled), when `ports` is set.
    pub tcp_window: u16,
    /// The window-scale option's shift (RFC 7323 section 2.2), on SYN and SYN-ACK.
    pub tcp_wscale: Option<u8>,
}

impl Header {
    /// A SYN or SYN-ACK: a packet of the three-way handshake whose timing enters Linux's
    /// first RTT sample.
    pub fn is_syn(&self) -> bool {
        self.tcp_flags & TCP_SYN != 0
    }
}

/// Parse an IPv4 packet. `None` for anything else (IPv6, truncated, bad header length).
pub fn parse(p: &[u8]) -> Option<Header> {
    if p.len() < 20 || p[0] >> 4 != 4 {
        return None;
    }
    let ihl = ((p[0] & 0x0f) as usize) * 4;
    let total_len = u16::from_be_bytes([p[2], p[3]]);
    if ihl < 20 || (total_len as usize) < ihl || p.len() < total_len as usize {
        return None;
    }
    let frag = u16::from_be_bytes([p[6], p[7]]);
    // More-fragments flag or a non-zero offset: not a whole TCP segment.
    let fragmented = frag & 0x3fff != 0;
    let protocol = p[9];
    let src = Ipv4Addr::new(p[12], p[13], p[14], p[15]);
    let dst = Ipv4Addr::new(p[16], p[17], p[18], p[19]);
    let mut ports = None;
    let mut tcp_payload = 0;
    let mut tcp_flags = 0;
    let (mut tcp_seq, mut tcp_ack) = (0, 0);
    let mut tcp_window = 0;
    let mut tcp_wscale = None;
    if protocol == PROTO_TCP && !fragmented && total_len as usize >= ihl + 20 {
        let t = &p[ihl..];
        ports = Some((
            u16::from_be_bytes([t[0], t[1]]),
            u16::from_be_bytes([t[2], t[3]]),
        ));
        let data_offset = ((t[12] >> 4) as usize) * 4;
        tcp_payload = (total_len as usize).saturating_sub(ihl + data_offset) as u32;
        tcp_flags = t[13];
        tcp_seq = u32::from_be_bytes([t[4], t[5], t[6], t[7]]);
        tcp_ack = u32::from_be_bytes([t[8], t[9], t[10], t[11]]);
        tcp_window = u16::from_be_bytes([t[14], t[15]]);
        if tcp_flags & TCP_SYN != 0 && data_offset > 20 && t.len() >= data_offset {
            tcp_wscale = window_scale(&t[20..data_offset]);
        }
    }
    Some(Header {
        src,
        dst,
        protocol,
        total_len,
        ecn: ecn_of(p[1]),
        ports,
        tcp_payload,
        tcp_flags,
        tcp_seq,
        tcp_ack,
        tcp_window,
        tcp_wscale,
    })
}

/// The ECN field of a TOS byte (RFC 3168 section 5: the same codepoints as `Ecn`).
fn ecn_of(tos: u8) -> Ecn {
    match tos & 3 {
        0 => Ecn::NotEct,
        1 => Ecn::Ect1,
        2 => Ecn::Ect0,
        _ => Ecn::Ce,
    }
}

/// Set CE in an IPv4 packet's ECN field if it is ECN-capable, as Linux's `IP_ECN_set_ce`
/// (include/net/inet_ecn.h): ECT(0) and ECT(1) become CE and the header checksum is updated
/// for the changed 16-bit word (version, IHL and TOS) by RFC 1624's equation 3,
/// HC' = ~(~HC + ~m + m'); a CE packet is left as it is; a Not-ECT packet (or no IPv4
/// header) is not changed and `false` says so.
pub fn set_ce(p: &mut [u8]) -> bool {
    if p.len() < 20 || p[0] >> 4 != 4 {
        return false;
    }
    match ecn_of(p[1]) {
        Ecn::NotEct => return false,
        Ecn::Ce => return true,
        Ecn::Ect0 | Ecn::Ect1 => {}
    }
    let old = u16::from_be_bytes([p[0], p[1]]);
    p[1] |= Ecn::Ce as u8;
    let new = u16::from_be_bytes([p[0], p[1]]);
    let check = u16::from_be_bytes([p[10], p[11]]);
    let sum = !check as u32 + !old as u32 + new as u32;
    p[10..12].copy_from_slice(&(!fold(sum)).to_be_bytes());
    true
}

/// A 32-bit sum folded to 16 bits with end-around carry (one's complement addition).
fn fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The IPv4 header checksum of `header` (its checksum field taken as zero): the one's
/// complement of the one's complement sum of its 16-bit words (RFC 791).
pub fn header_checksum(header: &[u8]) -> u16 {
    let mut sum = 0u32;
    for (i, w) in header.chunks(2).enumerate() {
        if i != 5 {
            sum += u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]) as u32;
        }
    }
    !fold(sum)
}

/// The shift of a window-scale option (kind 3, length 3) among TCP options.
fn window_scale(options: &[u8]) -> Option<u8> {
    let mut i = 0;
    while i < options.len() {
        match options[i] {
            0 => return None,
            1 => i += 1,
            kind => {
                let len = *options.get(i + 1)? as usize;
                if len < 2 {
                    return None;
                }
                if kind == 3 && len == 3 {
                    return options.get(i + 2).copied();
                }
                i += len;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1500-byte data segment with timestamps: 20 B IP, 32 B TCP, 1448 B payload.
    fn segment(payload: usize) -> Vec<u8> {
        let total = 20 + 32 + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[6] = 0x40; // don't fragment
        p[8] = 64;
        p[9] = PROTO_TCP;
        p[12..16].copy_from_slice(&[10, 200, 0, 1]);
        p[16..20].copy_from_slice(&[10, 200, 0, 3]);
        p[20..22].copy_from_slice(&40_000u16.to_be_bytes());
        p[22..24].copy_from_slice(&5_001u16.to_be_bytes());
        p[32] = 8 << 4; // data offset: 8 words = 32 bytes
        p
    }

    /// A SYN-ACK with Linux's options (MSS, SACK-permitted + timestamps, NOP + wscale 10):
    /// the window field and the scale are read.
    #[test]
    fn synack_window_and_scale() {
        let mut p = segment(0);
        p.resize(20 + 40, 0);
        p[2..4].copy_from_slice(&60u16.to_be_bytes());
        p[32] = 10 << 4; // 40 bytes of TCP header
        p[33] = TCP_SYN | TCP_ACK;
        p[34..36].copy_from_slice(&65_160u16.to_be_bytes());
        p[40..60].copy_from_slice(&[
            2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 10,
        ]);
        let h = parse(&p).unwrap();
        assert_eq!((h.tcp_window, h.tcp_wscale), (65_160, Some(10)));
        let mut q = segment(0);
        q[34..36].copy_from_slice(&63u16.to_be_bytes());
        let h = parse(&q).unwrap();
        assert_eq!((h.tcp_window, h.tcp_wscale), (63, None));
    }

    #[test]
    fn data_segment() {
        let h = parse(&segment(1448)).unwrap();
        assert_eq!(h.total_len, 1500);
        assert_eq!(h.src, Ipv4Addr::new(10, 200, 0, 1));
        assert_eq!(h.dst, Ipv4Addr::new(10, 200, 0, 3));
        assert_eq!(h.ports, Some((40_000, 5_001)));
        assert_eq!(h.tcp_payload, 1448);
    }

    #[test]
    fn sequence_and_ack_numbers() {
        let mut p = segment(100);
        p[24..28].copy_from_slice(&0x0102_0304u32.to_be_bytes());
        p[28..32].copy_from_slice(&0xa0b0_c0d0u32.to_be_bytes());
        let h = parse(&p).unwrap();
        assert_eq!((h.tcp_seq, h.tcp_ack), (0x0102_0304, 0xa0b0_c0d0));
    }

    #[test]
    fn pure_ack_has_no_payload() {
        let h = parse(&segment(0)).unwrap();
        assert_eq!(h.total_len, 52);
        assert_eq!(h.tcp_payload, 0);
        assert!(!h.is_syn());
    }

    #[test]
    fn syn_and_syn_ack_are_handshake_packets() {
        let mut p = segment(0);
        p[33] = TCP_SYN;
        assert!(parse(&p).unwrap().is_syn());
        p[33] = TCP_SYN | TCP_ACK;
        assert!(parse(&p).unwrap().is_syn());
        p[33] = TCP_ACK;
        assert!(!parse(&p).unwrap().is_syn());
    }

    #[test]
    fn rejects_non_ipv4_and_truncated() {
        let mut v6 = segment(0);
        v6[0] = 0x60;
        assert!(parse(&v6).is_none());
        assert!(parse(&segment(10)[..40]).is_none());
        assert!(parse(&[0x45; 10]).is_none());
    }

    /// A real header (RFC 1071's worked example's style: the one on Wikipedia's IPv4 page,
    /// `45 00 00 73 00 00 40 00 40 11 b8 61 c0 a8 00 01 c0 a8 00 c7`): its checksum checks;
    /// made ECT(0) or ECT(1) with a correct checksum, set to CE, the incremental update
    /// equals a full recomputation; CE and Not-ECT packets are left alone.
    #[test]
    fn setting_ce_updates_the_checksum_incrementally() {
        let real: [u8; 20] = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(header_checksum(&real), 0xb861);
        let mut not_ect = real;
        assert!(!set_ce(&mut not_ect));
        assert_eq!(not_ect, real);
        for (tos, dscp) in [(0x02u8, 0x00u8), (0x01, 0x00), (0x02, 0xb8), (0x01, 0xfc)] {
            let mut p = real;
            p[1] = dscp | tos;
            let c = header_checksum(&p);
            p[10..12].copy_from_slice(&c.to_be_bytes());
            assert!(set_ce(&mut p));
            assert_eq!(p[1], dscp | 3);
            assert_eq!(ecn_of(p[1]), Ecn::Ce);
            let expected = header_checksum(&p);
            assert_eq!(
                u16::from_be_bytes([p[10], p[11]]),
                expected,
                "tos {:#x}",
                dscp | tos
            );
            let once = p;
            assert!(set_ce(&mut p), "CE stays CE and counts as marked");
            assert_eq!(p, once);
        }
        // Headers whose checksum word is at the edges of one's complement arithmetic.
        let mut rng = ccfair_cc::rng::Rng::new(3);
        for _ in 0..20_000 {
            let mut p = real;
            for b in p.iter_mut().skip(2) {
                *b = rng.next_u64() as u8;
            }
            p[0] = 0x45;
            p[1] = (rng.next_u64() as u8 & 0xfc) | (1 + rng.below(2) as u8);
            let c = header_checksum(&p);
            p[10..12].copy_from_slice(&c.to_be_bytes());
            assert!(set_ce(&mut p));
            assert_eq!(
                u16::from_be_bytes([p[10], p[11]]),
                header_checksum(&p),
                "{p:x?}"
            );
        }
    }

    #[test]
    fn the_ecn_field_is_read() {
        let mut p = segment(10);
        for (tos, ecn) in [
            (0u8, Ecn::NotEct),
            (1, Ecn::Ect1),
            (2, Ecn::Ect0),
            (0xbb, Ecn::Ce),
        ] {
            p[1] = tos;
            assert_eq!(parse(&p).unwrap().ecn, ecn);
        }
    }

    #[test]
    fn fragments_have_no_ports() {
        let mut p = segment(100);
        p[6] = 0x20; // more fragments
        let h = parse(&p).unwrap();
        assert_eq!(h.ports, None);
    }
}
