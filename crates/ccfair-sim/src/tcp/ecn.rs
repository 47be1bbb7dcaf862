//! ECN negotiation on the three-way handshake (RFC 3168 section 6.1.1), as Linux 6.18 does
//! it in its classic (RFC 3168) mode.
//!
//! - The client asks on its SYN with ECE and CWR when its `net.ipv4.tcp_ecn` is 1, or when
//!   its congestion control needs ECN (`tcp_ecn_send_syn`, include/net/tcp_ecn.h). Such an
//!   algorithm (DCTCP) also sends the SYN ECN-capable (`INET_ECN_xmit`); otherwise it is
//!   Not-ECT.
//! - A retransmitted SYN no longer asks when `tcp_ecn_fallback` is on (`tcp_ecn_clear_syn`,
//!   from `__tcp_retransmit_skb`); the client still counts on ECN if a SYN-ACK with ECE
//!   answers an earlier SYN.
//! - The server accepts (`tcp_ecn_create_request`, net/ipv4/tcp_input.c) a SYN with both
//!   ECE and CWR when its `tcp_ecn` is not 0 and the SYN is Not-ECT (an ECN-capable SYN
//!   is not RFC 3168's), or, whatever either says, when its own algorithm needs ECN. It
//!   decides on the first SYN it receives: the request socket answers later SYNs alike.
//! - The server's SYN-ACK carries ECE when it accepted (`tcp_ecn_make_synack`); the client
//!   then has ECN if it asked and the SYN-ACK has ECE without CWR (`tcp_ecn_rcv_synack`).
//!
//! Without a handshake (`tcp.handshake = false`) both ends take the outcome of a handshake
//! that loses nothing: ECN is on when the sender would ask and the receiver would accept
//! ([`negotiated_without_handshake`]).
//!
//! Accurate ECN (`tcp_ecn` 3 to 5) is not modelled (`TcpOptions::validate` refuses it).

use crate::packet::{Ecn, TcpFlags};
use crate::spec::TcpOptions;

/// `TCP_ECN_IN_ECN_OUT_ECN`: request ECN on outgoing connections, accept it on incoming ones.
pub const ECN_REQUEST: u8 = 1;
/// `TCP_ECN_IN_NOECN_OUT_NOECN`: no ECN at all (unless the algorithm needs it).
pub const ECN_OFF: u8 = 0;

/// Whether the client's SYN asks for ECN (`tcp_ecn_send_syn`).
pub fn syn_requests(ecn: u8, needs_ecn: bool) -> bool {
    ecn == ECN_REQUEST || needs_ecn
}

/// The ECN field of the client's SYNs: ECT(0) when the algorithm needs ECN (its socket is
/// ECN-capable from the start, `tcp_assign_congestion_control`), else Not-ECT.
pub fn syn_field(needs_ecn: bool) -> Ecn {
    if needs_ecn {
        Ecn::Ect0
    } else {
        Ecn::NotEct
    }
}

/// The TCP flags of a SYN: ECE and CWR when it asks for ECN.
pub fn syn_flags(requests: bool) -> TcpFlags {
    if requests {
        TcpFlags::ECE.with(TcpFlags::CWR)
    } else {
        TcpFlags::NONE
    }
}

/// Whether the server accepts ECN on this SYN (`tcp_ecn_create_request`): its `tcp_ecn`
/// is `ecn_receiver`, `needs_ecn` says whether its algorithm needs ECN.
pub fn server_accepts(ecn_receiver: u8, needs_ecn: bool, flags: TcpFlags, field: Ecn) -> bool {
    let asks = flags.contains(TcpFlags::ECE.with(TcpFlags::CWR));
    if !asks {
        return false;
    }
    let ect = field != Ecn::NotEct;
    (!ect && ecn_receiver != ECN_OFF) || needs_ecn
}

/// Whether the client has ECN after a SYN-ACK with these flags, having asked or not
/// (`tcp_ecn_rcv_synack`: ECE without CWR).
pub fn client_accepts(asked: bool, synack: TcpFlags) -> bool {
    asked && synack.contains(TcpFlags::ECE) && !synack.contains(TcpFlags::CWR)
}

/// ECN on a connection that starts without a handshake (`tcp.handshake = false`): what a
/// handshake that loses no SYN would decide with the sender's `tcp.ecn` and the receiver's
/// `tcp.ecn_receiver`, both ends running the flow's algorithm (`needs_ecn`).
pub fn negotiated_without_handshake(ecn: u8, ecn_receiver: u8, needs_ecn: bool) -> bool {
    let asks = syn_requests(ecn, needs_ecn);
    let accepts = server_accepts(
        ecn_receiver,
        needs_ecn,
        syn_flags(asks),
        syn_field(needs_ecn),
    );
    client_accepts(asks, synack_flags(accepts))
}

/// [`negotiated_without_handshake`] with a flow's TCP options.
pub fn negotiated_without_handshake_for(opts: &TcpOptions, needs_ecn: bool) -> bool {
    negotiated_without_handshake(opts.ecn, opts.ecn_receiver, needs_ecn)
}

/// The TCP flags of the server's SYN-ACK: ECE when it accepted ECN (`tcp_ecn_make_synack`).
pub fn synack_flags(accepted: bool) -> TcpFlags {
    if accepted {
        TcpFlags::ECE
    } else {
        TcpFlags::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(ecn: u8, ecn_receiver: u8) -> TcpOptions {
        TcpOptions {
            ecn,
            ecn_receiver,
            ..TcpOptions::default()
        }
    }

    /// Linux's sysctl on each side: only a client with 1 asks, only a server with 0
    /// refuses; an algorithm that needs ECN (both ends run it) always has it.
    #[test]
    fn the_negotiation_matrix() {
        for client in 0..=2u8 {
            for server in 0..=2u8 {
                let o = opts(client, server);
                let expect = client == 1 && server != 0;
                assert_eq!(
                    negotiated_without_handshake_for(&o, false),
                    expect,
                    "client {client}, server {server}"
                );
                assert!(
                    negotiated_without_handshake_for(&o, true),
                    "{client} {server}"
                );
            }
        }
    }

    /// An ECN-capable SYN is not RFC 3168's: a server whose algorithm does not need ECN
    /// refuses it (so DCTCP against a non-DCTCP server runs without ECN).
    #[test]
    fn an_ect_syn_needs_a_server_that_needs_ecn() {
        let asks = syn_flags(true);
        assert!(!server_accepts(1, false, asks, Ecn::Ect0));
        assert!(!server_accepts(2, false, asks, Ecn::Ce));
        assert!(server_accepts(0, true, asks, Ecn::Ect0));
        assert!(server_accepts(2, false, asks, Ecn::NotEct));
        assert!(
            !server_accepts(2, true, TcpFlags::ECE, Ecn::Ect0),
            "ECE alone"
        );
        assert!(!client_accepts(false, TcpFlags::ECE));
        assert!(!client_accepts(true, TcpFlags::ECE.with(TcpFlags::CWR)));
        assert!(client_accepts(true, TcpFlags::ECE));
    }
}
