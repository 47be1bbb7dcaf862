//! The active open: the client side of the three-way handshake, as Linux does it.
//!
//! - `tcp_connect` sends the SYN (60 B with Linux's default options) and arms the SYN
//!   retransmission timer at `TCP_TIMEOUT_INIT` (the option `rto_init_ms`, 1 s).
//! - `tcp_rcv_synsent_state_process` takes the SYN-ACK. Its RTT is the connection's first
//!   sample (`tcp_ack` -> `tcp_clean_rtx_queue` -> `tcp_ack_update_rtt`): srtt, the RTO and
//!   the windowed min RTT (`tcp_update_rtt_min`) start from it. Karn's rule: after a SYN
//!   retransmission the sequence sample is not used, the timestamp echo is (1 ms
//!   granularity). The SYN counts as delivered (`tp->delivered` = 1); it yields no rate sample.
//! - `tcp_init_transfer`: ssthresh infinite, cwnd the initial window (1 if the SYN was
//!   retransmitted more than once, `tp->total_retrans > 1`), `snd_cwnd_stamp`, then the
//!   congestion control's `init` (BBR starts from the handshake's min RTT and srtt;
//!   CUBIC's `init` clears HyStart's delay_min, so the handshake does not enter it).
//!   `tcp_finish_connect` sets `lsndtime`.
//! - The final ACK leaves at once (`tcp_send_ack`): an application that connects, then
//!   writes (blocking connect, or non-blocking connect and poll) has no write pending
//!   during SYN_SENT, so Linux does not delay it to ride on data.
//! - Linux also calls the algorithm's `pkts_acked` (and BBR's main routine) for the SYN's
//!   ACK before `init`; `init` overwrites whatever they set, so they are not called here.
//! - ECN is negotiated on the way (`tcp/ecn.rs`): the first SYN asks or not, retransmitted
//!   SYNs stop asking with `tcp.ecn_fallback`, the SYN-ACK's ECE answers.
//! - SYN retransmissions: the first `SYN_LINEAR_TIMEOUTS` + 1 timeouts last the initial RTO
//!   (`tcp_syn_linear_timeouts`, Linux 6.5+), later ones double it; after `SYN_RETRIES`
//!   retransmissions the connection attempt fails (`tcp_syn_retries`).

use crate::packet::{Ecn, Kind, Packet, NO_SACK, SYN_BYTES};
use crate::tcp::ecn;

use super::{ticks, Sender, XmitTimer};

/// `sysctl_tcp_syn_retries`.
const SYN_RETRIES: u32 = 6;
/// `sysctl_tcp_syn_linear_timeouts`.
const SYN_LINEAR_TIMEOUTS: u32 = 4;

/// Where the connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conn {
    /// Nothing sent yet (before the flow's start).
    Closed,
    /// SYN sent, waiting for the SYN-ACK.
    SynSent,
    /// The handshake completed (or was not simulated).
    Established,
    /// Every SYN retransmission went unanswered: the connection attempt failed.
    Failed,
}

impl Sender {
    /// The application connects (`connect()` -> `tcp_connect`): send the SYN.
    pub fn connect(&mut self, now: u64, out: &mut Vec<Packet>) {
        self.set_now(now);
        self.started = true;
        self.conn = Conn::SynSent;
        self.send_syn(out);
    }

    fn send_syn(&mut self, out: &mut Vec<Packet>) {
        let now = self.tp.now_ns;
        let needs_ecn = self.cc_hooks.needs_ecn;
        if self.syns_sent == 0 {
            self.syn_first_tx_ns = now;
            // tcp_ecn_send_syn: the first SYN decides whether the connection asks.
            self.ecn_asked = ecn::syn_requests(self.opts.ecn, needs_ecn);
        }
        // tcp_ecn_clear_syn: with the fallback on, retransmitted SYNs no longer ask.
        let asks = self.ecn_asked && (self.syns_sent == 0 || !self.opts.ecn_fallback);
        self.syns_sent += 1;
        out.push(Packet {
            flow: self.flow,
            kind: Kind::Syn,
            wire_bytes: SYN_BYTES,
            seq: 0,
            payload_bytes: 0,
            tsval: ticks(now),
            tsecr: 0,
            n_sack: 0,
            ecn: ecn::syn_field(needs_ecn),
            tcp_flags: ecn::syn_flags(asks),
            window_bytes: 0,
            sack: NO_SACK,
        });
        // The initial RTO for the first timeouts, then exponential backoff.
        let retransmits = self.syns_sent - 1;
        let shift = retransmits.saturating_sub(SYN_LINEAR_TIMEOUTS);
        let timeout = self.rto_jiffies << shift.min(16);
        self.reset_xmit_timer(XmitTimer::Retrans, timeout);
    }

    /// The SYN retransmission timer fired (`tcp_retransmit_timer` in SYN_SENT).
    pub(super) fn syn_timeout(&mut self, out: &mut Vec<Packet>) {
        self.xmit_timer = None;
        if self.syns_sent > SYN_RETRIES {
            self.conn = Conn::Failed;
            return;
        }
        self.send_syn(out);
    }

    /// A SYN-ACK arrived. Returns true when it completed the handshake: the application's
    /// `connect()` returns and it may write (`Sender::app_write`).
    pub fn on_synack(&mut self, now: u64, pkt: &Packet, out: &mut Vec<Packet>) -> bool {
        self.set_now(now);
        if pkt.tsval != 0 {
            self.ts_recent = pkt.tsval;
        }
        if self.conn != Conn::SynSent {
            // A retransmitted SYN-ACK after we are established: ACK it again (tcp_ack of a
            // duplicate in ESTABLISHED sends a dupack).
            if self.conn == Conn::Established {
                self.send_handshake_ack(out);
            }
            return false;
        }
        let rtt_us = if self.syns_sent == 1 {
            Some((now - self.syn_first_tx_ns) / 1_000)
        } else if pkt.tsecr != 0 {
            // tcp_rtt_tsopt_us: the echoed timestamp, 1 ms granularity, at least 1 tick.
            Some(ticks(now).wrapping_sub(pkt.tsecr).max(1) as u64 * 1_000)
        } else {
            None
        };
        self.xmit_timer = None;
        if let Some(rtt_us) = rtt_us {
            let rtt_us = rtt_us.max(1);
            let now_j = self.now_jiffies();
            self.rtt.update_min_rtt(rtt_us, now_j, false);
            self.rtt.sample(rtt_us, 0, 0);
            self.set_rto();
            self.tp.srtt_us = self.rtt.srtt_us() as u32;
            self.tp.min_rtt_us = self.rtt.min_rtt_us();
            self.stats.rtt_min_us = self.stats.rtt_min_us.min(rtt_us);
        }
        self.backoff = 0;
        // tcp_ecn_rcv_synack: ECN if the SYN asked and the SYN-ACK's ECE agrees.
        self.tp.ecn_ok = ecn::client_accepts(self.ecn_asked, pkt.tcp_flags);
        // tcp_rcv_synsent_state_process: the SYN-ACK's window, unscaled.
        self.snd_wnd = pkt.window_bytes as u64;
        self.tp.delivered = 1;
        self.tp.delivered_mstamp_ns = now;
        self.send_handshake_ack(out);
        // tcp_init_transfer: cwnd 1 after more than one SYN retransmission.
        self.tp.snd_cwnd = if self.syns_sent > 2 {
            1
        } else {
            self.opts.init_cwnd
        };
        self.establish();
        true
    }

    fn send_handshake_ack(&mut self, out: &mut Vec<Packet>) {
        // tcp_ecn_send on a pure ACK: ECN-capable only for an algorithm that needs ECN.
        let field = if self.tp.ecn_ok && self.cc_hooks.needs_ecn {
            Ecn::Ect0
        } else {
            Ecn::NotEct
        };
        out.push(Packet {
            flow: self.flow,
            kind: Kind::HandshakeAck,
            wire_bytes: crate::spec::ACK_BYTES,
            seq: 0,
            payload_bytes: 0,
            tsval: ticks(self.tp.now_ns),
            tsecr: self.ts_recent,
            n_sack: 0,
            ecn: field,
            tcp_flags: crate::packet::TcpFlags::NONE,
            window_bytes: 0,
            sack: NO_SACK,
        });
    }

    /// `tcp_init_transfer` + `tcp_finish_connect`: the congestion control starts.
    fn establish(&mut self) {
        self.conn = Conn::Established;
        self.tp.snd_ssthresh = ccfair_cc::sock::TCP_INFINITE_SSTHRESH;
        self.tp.lsndtime_ns = self.tp.now_ns;
        (*self.cc).init(&mut self.tp);
        if !self.cc_hooks.cong_control {
            self.update_pacing_rate();
        }
        self.sndbuf_init();
    }

    /// The idealised start without a handshake (`tcp.handshake = false`): established at
    /// once with the initial window and no RTT sample, ECN as a loss-free handshake would
    /// have negotiated it (`tcp/ecn.rs`), and the application writes.
    pub fn start_without_handshake(&mut self, now: u64, out: &mut Vec<Packet>) {
        self.set_now(now);
        self.started = true;
        let needs_ecn = self.cc_hooks.needs_ecn;
        self.ecn_asked = ecn::syn_requests(self.opts.ecn, needs_ecn);
        self.tp.ecn_ok =
            ecn::negotiated_without_handshake(self.opts.ecn, self.opts.ecn_receiver, needs_ecn);
        self.tp.snd_cwnd = self.opts.init_cwnd;
        self.establish();
        self.app_write(now, out);
    }

    /// The application writes its data (bulk: everything, forever) after `connect()`
    /// returned; segments leave as the window allows.
    pub fn app_write(&mut self, now: u64, out: &mut Vec<Packet>) {
        self.set_now(now);
        if self.conn != Conn::Established {
            return;
        }
        if !self.app_stopped {
            self.app_end = self.app_total;
        }
        self.app_fill();
        self.push(super::Rexmit::None, out);
    }

    /// The connection's state.
    pub fn conn(&self) -> Conn {
        self.conn
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::TcpFlags;
    use crate::spec::TcpOptions;
    use ccfair_cc::reno::{Reno, RenoParams};

    const MS: u64 = 1_000_000;

    fn sender() -> Sender {
        let opts = TcpOptions::default();
        Sender::new(0, &opts, Box::new(Reno::new(&RenoParams {})), None)
    }

    fn synack(tsecr: u32) -> Packet {
        Packet {
            flow: 0,
            kind: Kind::SynAck,
            wire_bytes: SYN_BYTES,
            seq: 0,
            payload_bytes: 0,
            tsval: 7,
            tsecr,
            n_sack: 0,
            ecn: Ecn::NotEct,
            tcp_flags: TcpFlags::NONE,
            window_bytes: 65_160,
            sack: NO_SACK,
        }
    }

    #[test]
    fn synack_gives_the_first_rtt_sample_and_opens_the_window() {
        let mut s = sender();
        let mut out = Vec::new();
        s.connect(5 * MS, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].kind, out[0].wire_bytes), (Kind::Syn, 60));
        assert_eq!(s.conn(), Conn::SynSent);
        out.clear();
        // No data before the SYN-ACK, whatever the application wants.
        s.app_write(6 * MS, &mut out);
        assert!(out.is_empty());
        let tsval = ticks(5 * MS);
        assert!(s.on_synack(5 * MS + 40_123_000, &synack(tsval), &mut out));
        assert_eq!(s.conn(), Conn::Established);
        // The final ACK leaves at once and echoes the SYN-ACK's timestamp.
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].kind, out[0].tsecr), (Kind::HandshakeAck, 7));
        // tcp_ack_update_rtt on the first sample: srtt = rtt, RTO = rtt + max(2 rtt, 200 ms).
        assert_eq!(s.srtt_us(), 40_123);
        assert_eq!(s.tp.min_rtt_us, 40_123);
        assert_eq!(s.rto_us(), 241_000, "RTO in whole jiffies (HZ 1000)");
        assert_eq!(s.tp.snd_cwnd, 10);
        assert_eq!(s.tp.delivered, 1, "the SYN counts as delivered");
        out.clear();
        s.app_write(5 * MS + 40_200_000, &mut out);
        assert_eq!(
            out.len(),
            10,
            "the initial window leaves when the application writes"
        );
        assert!(out.iter().all(|p| p.kind == Kind::Data));
    }

    #[test]
    fn syn_retransmissions_back_off_and_two_of_them_leave_a_window_of_one() {
        let mut s = sender();
        let mut out = Vec::new();
        s.connect(0, &mut out);
        let mut sent_at = vec![0];
        for _ in 0..6 {
            let t = s.xmit_timer_deadline().unwrap();
            out.clear();
            s.on_xmit_timer(t, &mut out);
            assert_eq!(out.len(), 1);
            assert_eq!(out[0].kind, Kind::Syn);
            sent_at.push(t / 1_000_000_000);
        }
        // tcp_syn_linear_timeouts = 4: five timeouts of the initial RTO, then doubling.
        assert_eq!(sent_at, vec![0, 1, 2, 3, 4, 5, 7]);
        // Karn: the SYN-ACK's RTT comes from the timestamp echo of the SYN it answers.
        out.clear();
        let t = 7_000_000_000 + 30 * MS;
        assert!(s.on_synack(t, &synack(ticks(7_000_000_000)), &mut out));
        assert_eq!(s.srtt_us(), 30_000);
        assert_eq!(
            s.tp.snd_cwnd, 1,
            "tcp_init_transfer after > 1 SYN retransmission"
        );
    }

    #[test]
    fn a_connection_attempt_gives_up_after_six_retransmissions() {
        let mut s = sender();
        let mut out = Vec::new();
        s.connect(0, &mut out);
        for _ in 0..7 {
            let t = s.xmit_timer_deadline().unwrap();
            s.on_xmit_timer(t, &mut out);
        }
        assert_eq!(s.conn(), Conn::Failed);
        assert_eq!(s.xmit_timer_deadline(), None);
        assert_eq!(out.iter().filter(|p| p.kind == Kind::Syn).count(), 7);
    }
}
