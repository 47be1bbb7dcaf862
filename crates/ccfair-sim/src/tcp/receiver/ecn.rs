//! The receiver's side of ECN (RFC 3168 section 6.1.3), as Linux 6.18 does it
//! (net/ipv4/tcp_input.c, include/net/tcp_ecn.h, net/ipv4/tcp_output.c):
//!
//! - The SYN-ACK accepts ECN or not (`tcp_ecn_create_request`, `tcp/ecn.rs`); the passive
//!   side decides on the first SYN it receives.
//! - Each data segment's IP ECN field (`tcp_ecn_check_ce`, `__tcp_ecn_check_ce`): a CE
//!   mark sets `TCP_ECN_DEMAND_CWR`, and the first of a run enters quick-ACK mode for two
//!   ACKs ("the sender can have a very low cwnd"); a Not-ECT segment after ECN-capable ones
//!   is "probably a retransmit" and enters quick-ACK mode too. Checked on in-order data
//!   (`tcp_event_data_recv`) and on out-of-order data (`tcp_data_queue_ofo`), not on old
//!   duplicates.
//! - Every ACK carries ECE while `TCP_ECN_DEMAND_CWR` holds (`tcp_ecn_send`), until a
//!   segment with CWR arrives (`tcp_ecn_accept_cwr`, called from `tcp_ack` for every
//!   segment); a data segment with CWR is ACKed at once (`ICSK_ACK_NOW`). ACKs are
//!   Not-ECT, unless the algorithm needs ECN (`tcp_ca_needs_ecn`).
//! - With an algorithm that needs ECN (DCTCP), each data segment's mark goes to the
//!   algorithm (`CA_EVENT_ECN_IS_CE`, `CA_EVENT_ECN_NO_CE`): DCTCP's receiver echoes the
//!   mark of every segment rather than latching it (`dctcp_ece_ack_update`,
//!   net/ipv4/tcp_dctcp.h). When the mark changes, an ACK held by the delayed-ACK timer
//!   leaves first, for the data before this segment with the old mark, and this segment
//!   is ACKed at once.

use super::Receiver;
use crate::packet::{Ecn, Packet, TcpFlags};
use crate::spec::TcpOptions;
use crate::tcp::ecn;

/// Quick ACKs a CE mark or a Not-ECT segment asks for (`tcp_enter_quickack_mode(sk, 2)`).
const ECN_QUICKACKS: u32 = 2;

/// The receiving socket's ECN state (`tp->ecn_flags`) and DCTCP's receiver state.
#[derive(Clone, Copy, Debug)]
pub(super) struct RcvEcn {
    /// The receiving host's `net.ipv4.tcp_ecn` (`tcp.ecn_receiver`).
    setting: u8,
    /// The receiver's algorithm (the flow's) needs ECN (`tcp_ca_needs_ecn`).
    needs_ecn: bool,
    /// `TCP_ECN_OK`: negotiated.
    ok: bool,
    /// `TCP_ECN_DEMAND_CWR`: ACKs carry ECE.
    demand_cwr: bool,
    /// `TCP_ECN_SEEN`: an ECN-capable data segment arrived.
    seen: bool,
    /// DCTCP's `ce_state`: the last data segment was CE-marked.
    dctcp_ce_state: bool,
    /// DCTCP's `prior_rcv_nxt`: `rcv_nxt` after the previous data segment.
    dctcp_prior_rcv_nxt: u64,
    /// Data segments that arrived CE-marked.
    ce_received: u64,
}

impl RcvEcn {
    /// Without a handshake ECN is what a loss-free handshake would decide (`tcp/ecn.rs`).
    pub(super) fn new(opts: &TcpOptions, needs_ecn: bool) -> Self {
        RcvEcn {
            setting: opts.ecn_receiver,
            needs_ecn,
            ok: !opts.handshake && ecn::negotiated_without_handshake_for(opts, needs_ecn),
            demand_cwr: false,
            seen: false,
            dctcp_ce_state: false,
            dctcp_prior_rcv_nxt: 0,
            ce_received: 0,
        }
    }
}

impl Receiver {
    /// Whether ECN was negotiated (for the summary).
    pub fn ecn_ok(&self) -> bool {
        self.ecn.ok
    }

    /// Data segments that arrived CE-marked, whether or not ECN was negotiated.
    pub fn ce_received(&self) -> u64 {
        self.ecn.ce_received
    }

    /// The first SYN decides (`tcp_ecn_create_request`).
    pub(super) fn ecn_on_syn(&mut self, syn: &Packet) {
        let e = &mut self.ecn;
        e.ok = ecn::server_accepts(e.setting, e.needs_ecn, syn.tcp_flags, syn.ecn);
    }

    /// The SYN-ACK's flags (`tcp_ecn_make_synack`).
    pub(super) fn synack_flags(&self) -> TcpFlags {
        ecn::synack_flags(self.ecn.ok)
    }

    /// What every data segment does first (`tcp_ecn_accept_cwr` from `tcp_ack`, before the
    /// segment is queued): CWR ends the echo of CE marks and is ACKed at once; and count a
    /// CE mark. Per data segment: the test inline, the work out of line (the event loop's
    /// code stays as it was without ECN).
    #[inline(always)]
    pub(super) fn ecn_on_segment(&mut self, pkt: &Packet) {
        if self.ecn.ok || pkt.ecn == Ecn::Ce {
            self.ecn_accept_cwr(pkt);
        }
    }

    #[inline(never)]
    fn ecn_accept_cwr(&mut self, pkt: &Packet) {
        if pkt.ecn == Ecn::Ce {
            self.ecn.ce_received += 1;
        }
        if self.ecn.ok && pkt.tcp_flags.contains(TcpFlags::CWR) {
            self.ecn.demand_cwr = false;
            self.ack_now = true;
        }
    }

    /// `tcp_ecn_check_ce` of a data segment with ECN field `field`, queued in order or out
    /// of order; `out` takes DCTCP's ACK of the data before it.
    #[inline(always)]
    pub(super) fn ecn_check_ce(&mut self, now: u64, field: Ecn, out: &mut Vec<Packet>) {
        if self.ecn.ok {
            self.ecn_check_ce_on(now, field, out);
        }
    }

    #[inline(never)]
    fn ecn_check_ce_on(&mut self, now: u64, field: Ecn, out: &mut Vec<Packet>) {
        match field {
            Ecn::NotEct => {
                // "If ECT is not set on a segment, and we already seen ECT on a previous
                // segment, it is probably a retransmit."
                if self.ecn.seen {
                    self.enter_quickack_mode(ECN_QUICKACKS);
                }
            }
            Ecn::Ce => {
                if self.ecn.needs_ecn {
                    self.dctcp_ece_ack_update(now, true, out);
                }
                if !self.ecn.demand_cwr {
                    // "Better not delay acks, sender can have a very low cwnd."
                    self.enter_quickack_mode(ECN_QUICKACKS);
                    self.ecn.demand_cwr = true;
                }
                self.ecn.seen = true;
            }
            Ecn::Ect0 | Ecn::Ect1 => {
                if self.ecn.needs_ecn {
                    self.dctcp_ece_ack_update(now, false, out);
                }
                self.ecn.seen = true;
            }
        }
    }

    /// `dctcp_ece_ack_update` (net/ipv4/tcp_dctcp.h): ACKs echo the CE state of the last
    /// segment. On a change, an ACK waiting for the delayed-ACK timer leaves now with the
    /// old state for the data before this segment (`__tcp_send_ack(sk, prior_rcv_nxt)`),
    /// and this segment is ACKed at once.
    fn dctcp_ece_ack_update(&mut self, now: u64, is_ce: bool, out: &mut Vec<Packet>) {
        if self.ecn.dctcp_ce_state != is_ce {
            if self.delack_at.is_some() {
                // dctcp_ece_ack_cwr with the old state.
                self.ecn.demand_cwr = self.ecn.dctcp_ce_state;
                let prior = self.ecn.dctcp_prior_rcv_nxt;
                self.send_dctcp_ack(now, prior, out);
            }
            self.ack_now = true;
        }
        self.ecn.dctcp_prior_rcv_nxt = self.rcv_nxt;
        self.ecn.dctcp_ce_state = is_ce;
        self.ecn.demand_cwr = is_ce;
    }

    /// DCTCP's ACK of `ack_seq`, below `rcv_nxt` (`__tcp_send_ack(sk, prior_rcv_nxt)`): a
    /// normal ACK in all but its cumulative point, except that `tcp_event_ack_sent` stops
    /// after clearing SACK compression ("Special ACK sent by DCTCP to reflect ECN"): the
    /// delayed-ACK timer and quick-ACK count stay.
    fn send_dctcp_ack(&mut self, now: u64, ack_seq: u64, out: &mut Vec<Packet>) {
        let window_now = self.buf.select_window_now();
        self.push_ack(now, ack_seq, window_now, out);
        self.comp_sack_at = None;
        self.compressed_ack = 0;
    }

    /// An ACK's IP ECN field and TCP flags with ECN on (`tcp_ecn_send` on a pure ACK):
    /// ECE while a CE mark waits for CWR, ECT(0) only for an algorithm that needs ECN.
    #[inline(never)]
    pub(super) fn ecn_ack_fields(&self, ack: &mut Packet) {
        if self.ecn.needs_ecn {
            ack.ecn = Ecn::Ect0;
        }
        if self.ecn.demand_cwr {
            ack.tcp_flags = TcpFlags::ECE;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Kind;

    /// A data segment as the tests send it, with ECN field `field` and `flags`.
    fn data(seq: u64, field: Ecn, flags: TcpFlags) -> Packet {
        Packet {
            ecn: field,
            tcp_flags: flags,
            ..super::super::tests::data(seq)
        }
    }

    fn rx(ecn_receiver: u8, needs_ecn: bool) -> Receiver {
        let opts = TcpOptions {
            ecn_receiver,
            ..TcpOptions::default()
        };
        Receiver::new(0, &opts, 40_000_000, [4096, 131_072, 32 << 20], needs_ecn)
    }

    fn syn(flags: TcpFlags, field: Ecn) -> Packet {
        Packet {
            kind: Kind::Syn,
            seq: 0,
            payload_bytes: 0,
            ..data(0, field, flags)
        }
    }

    /// Segments 100 us apart.
    const GAP_NS: u64 = 100_000;

    /// A receiver past the handshake (ECN per the SYN, the SYN ECN-capable when `ect`), its
    /// quick ACKs and the growth of its window: the next segment and its time.
    fn established(r: &mut Receiver, asks: bool, ect: bool, out: &mut Vec<Packet>) -> (u64, u64) {
        let field = if ect { Ecn::Ect0 } else { Ecn::NotEct };
        r.on_syn(0, &syn(ecn::syn_flags(asks), field), out);
        out.clear();
        let mut seq = 0;
        while r.quick > 0 || seq < 40 {
            r.on_data(
                seq * GAP_NS,
                &data(seq, Ecn::Ect0, TcpFlags::NONE),
                |_| 1448,
                out,
            );
            seq += 1;
        }
        out.clear();
        (seq, seq * GAP_NS)
    }

    #[test]
    fn the_synack_answers_the_first_syn() {
        let mut out = Vec::new();
        for (setting, asks, expect) in [(2, true, true), (0, true, false), (1, false, false)] {
            let mut r = rx(setting, false);
            r.on_syn(0, &syn(ecn::syn_flags(asks), Ecn::NotEct), &mut out);
            // A retransmitted SYN without ECE|CWR gets the same answer (the request sock).
            r.on_syn(1, &syn(TcpFlags::NONE, Ecn::NotEct), &mut out);
            let answers: Vec<bool> = out
                .drain(..)
                .map(|p| p.tcp_flags.contains(TcpFlags::ECE))
                .collect();
            assert_eq!(answers, vec![expect, expect], "{setting} {asks}");
            assert_eq!(r.ecn_ok(), expect);
        }
    }

    /// RFC 3168 6.1.3 as Linux does it: a CE mark makes every ACK carry ECE until a data
    /// segment with CWR arrives; the first mark is ACKed at once (quick-ACK mode).
    #[test]
    fn ece_on_every_ack_until_cwr() {
        let mut r = rx(2, false);
        let mut out = Vec::new();
        let (mut seq, mut t) = established(&mut r, true, false, &mut out);
        // A lone segment waits for the delayed-ACK timer.
        r.on_data(t, &data(seq, Ecn::Ect0, TcpFlags::NONE), |_| 1448, &mut out);
        seq += 1;
        assert!(out.is_empty() && r.delack_at.is_some());
        // A CE mark: an immediate ACK with ECE.
        t += GAP_NS;
        r.on_data(t, &data(seq, Ecn::Ce, TcpFlags::NONE), |_| 1448, &mut out);
        seq += 1;
        assert_eq!(out.len(), 1);
        assert!(out[0].tcp_flags.contains(TcpFlags::ECE));
        assert_eq!(out[0].ecn, Ecn::NotEct, "ACKs are not ECN-capable");
        // Unmarked segments: every ACK (one per two segments now) still echoes ECE.
        for _ in 0..10 {
            t += GAP_NS;
            r.on_data(t, &data(seq, Ecn::Ect0, TcpFlags::NONE), |_| 1448, &mut out);
            seq += 1;
        }
        assert!(out.len() >= 5);
        assert!(out.iter().all(|a| a.tcp_flags.contains(TcpFlags::ECE)));
        // CWR: acknowledged at once, without ECE; later ACKs neither.
        out.clear();
        t += GAP_NS;
        r.on_data(t, &data(seq, Ecn::Ect0, TcpFlags::CWR), |_| 1448, &mut out);
        seq += 1;
        assert_eq!(out.len(), 1, "a segment with CWR is ACKed at once");
        assert_eq!(out[0].tcp_flags, TcpFlags::NONE);
        for _ in 0..4 {
            t += GAP_NS;
            r.on_data(t, &data(seq, Ecn::Ect0, TcpFlags::NONE), |_| 1448, &mut out);
            seq += 1;
        }
        assert!(out.iter().all(|a| a.tcp_flags == TcpFlags::NONE));
        assert_eq!(r.ce_received(), 1);
    }

    /// Without ECN negotiated, a CE mark (which a conforming queue never sets on Not-ECT
    /// packets) is counted but echoes nothing.
    #[test]
    fn no_echo_without_ecn() {
        let mut r = rx(0, false);
        let mut out = Vec::new();
        let (seq, t) = established(&mut r, true, false, &mut out);
        r.on_data(t, &data(seq, Ecn::Ce, TcpFlags::NONE), |_| 1448, &mut out);
        r.on_data(
            t,
            &data(seq + 1, Ecn::Ce, TcpFlags::NONE),
            |_| 1448,
            &mut out,
        );
        assert!(out.iter().all(|a| a.tcp_flags == TcpFlags::NONE));
        assert_eq!(r.ce_received(), 2);
        assert!(!r.ecn_ok());
    }

    /// "Funny extension": a Not-ECT data segment after ECN-capable ones is taken for a
    /// retransmission and ACKed at once (two quick ACKs).
    #[test]
    fn a_not_ect_segment_after_ect_ones_is_acked_at_once() {
        let mut r = rx(2, false);
        let mut out = Vec::new();
        let (seq, t) = established(&mut r, true, false, &mut out);
        r.on_data(
            t,
            &data(seq, Ecn::NotEct, TcpFlags::NONE),
            |_| 1448,
            &mut out,
        );
        assert_eq!(out.len(), 1);
        assert_eq!(r.quick, 1, "two quick ACKs, one used");
    }

    /// DCTCP's receiver echoes each segment's mark: ECE exactly on the ACKs of marked
    /// segments, an ACK at every change of mark, and the delayed ACK of the data before a
    /// change leaves first with the old mark.
    #[test]
    fn dctcp_echoes_each_mark() {
        let mut r = rx(2, true);
        let mut out = Vec::new();
        let (seq, t) = established(&mut r, true, true, &mut out);
        assert!(r.ecn_ok(), "a receiver that needs ECN accepts an ECT SYN");
        // An unmarked segment waits for the timer.
        r.on_data(t, &data(seq, Ecn::Ect0, TcpFlags::NONE), |_| 1448, &mut out);
        assert!(out.is_empty());
        // A marked one: the held ACK (of `seq`, unmarked) leaves first, then this one's.
        r.on_data(
            t + 1,
            &data(seq + 1, Ecn::Ce, TcpFlags::NONE),
            |_| 1448,
            &mut out,
        );
        let acks: Vec<(u64, bool)> = out
            .iter()
            .map(|a| (a.seq, a.tcp_flags.contains(TcpFlags::ECE)))
            .collect();
        assert_eq!(acks, vec![(seq + 1, false), (seq + 2, true)]);
        assert!(
            out.iter().all(|a| a.ecn == Ecn::Ect0),
            "DCTCP's ACKs are ECT"
        );
        out.clear();
        // Marked again: no change, the usual one ACK per two segments, with ECE.
        r.on_data(
            t + 2,
            &data(seq + 2, Ecn::Ce, TcpFlags::NONE),
            |_| 1448,
            &mut out,
        );
        assert!(out.is_empty());
        r.on_data(
            t + 3,
            &data(seq + 3, Ecn::Ce, TcpFlags::NONE),
            |_| 1448,
            &mut out,
        );
        assert_eq!(out.len(), 1);
        assert!(out[0].tcp_flags.contains(TcpFlags::ECE));
        out.clear();
        // Unmarked: an immediate ACK without ECE (no ACK was held).
        r.on_data(
            t + 4,
            &data(seq + 4, Ecn::Ect0, TcpFlags::NONE),
            |_| 1448,
            &mut out,
        );
        let acks: Vec<(u64, bool)> = out
            .iter()
            .map(|a| (a.seq, a.tcp_flags.contains(TcpFlags::ECE)))
            .collect();
        assert_eq!(acks, vec![(seq + 5, false)]);
    }
}
