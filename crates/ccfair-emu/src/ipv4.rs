//! The few IPv4 and TCP header fields the forwarder reads to classify a packet
//! (RFC 791 section 3.1, RFC 9293 section 3.1). Packets are never modified.

use std::net::Ipv4Addr;

pub const PROTO_TCP: u8 = 6;
/// TCP header flag bits (RFC 9293 section 3.1).
pub const TCP_SYN: u8 = 0x02;
pub const TCP_ACK: u8 = 0x10;

/// What the forwarder needs to know about one packet read from a TUN device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: u8,
    /// IP total length (bytes on the wire).
    pub total_len: u16,
    /// TCP ports, when the packet is an unfragmented TCP segment.
    pub ports: Option<(u16, u16)>,
    /// TCP payload bytes (0 for pure ACKs, SYN, FIN), when `ports` is set.
    pub tcp_payload: u32,
    /// TCP flags byte (`TCP_SYN`, `TCP_ACK`, ...), when `ports` is set; 0 otherwise.
    pub tcp_flags: u8,
    /// TCP sequence and acknowledgment numbers, when `ports` is set.
    pub tcp_seq: u32,
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
        ports,
        tcp_payload,
        tcp_flags,
        tcp_seq,
        tcp_ack,
        tcp_window,
        tcp_wscale,
    })
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

    #[test]
    fn fragments_have_no_ports() {
        let mut p = segment(100);
        p[6] = 0x20; // more fragments
        let h = parse(&p).unwrap();
        assert_eq!(h.ports, None);
    }
}
