//! The sender's ECN (RFC 3168 sections 6.1.1 and 6.1.2, as Linux 6.18): negotiation with
//! the receiver on the handshake, which packets are ECN-capable, and the once-per-window
//! reduction an ECE starts, on a path that marks the packets the test chooses.

use std::collections::{BTreeSet, VecDeque};

use ccfair_cc::{CaState, CongestionControl, TcpSock};
use serde_json::json;

use super::*;
use crate::tcp::receiver::Receiver;

const MS: u64 = 1_000_000;

fn opts(ecn: u8, ecn_receiver: u8, handshake: bool) -> TcpOptions {
    TcpOptions {
        ecn,
        ecn_receiver,
        handshake,
        ..TcpOptions::default()
    }
}

/// Reno that needs ECN, as DCTCP does (`TCP_CONG_NEEDS_ECN`).
struct NeedsEcn(Box<dyn CongestionControl>);

impl CongestionControl for NeedsEcn {
    fn name(&self) -> &'static str {
        "needs-ecn"
    }
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        (*self.0).ssthresh(tp)
    }
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        (*self.0).cong_avoid(tp, ack, acked)
    }
    fn needs_ecn(&self) -> bool {
        true
    }
}

fn algorithm(name: &str, needs_ecn: bool) -> Box<dyn CongestionControl> {
    let cc = ccfair_cc::build(name, &json!({}), 1).unwrap();
    if needs_ecn {
        Box::new(NeedsEcn(cc))
    } else {
        cc
    }
}

/// Connect a sender and a receiver with `o`; `lose` drops the SYN or SYN-ACK transmissions
/// it names (SYN i, SYN-ACK i, counted from 1). Returns both ends and the SYNs sent.
fn connect(o: &TcpOptions, needs_ecn: bool, lose: &[&str]) -> (Sender, Receiver, Vec<Packet>) {
    let mut s = Sender::new(0, o, algorithm("reno", needs_ecn), None);
    let mut r = Receiver::new(0, o, 20 * MS, [4096, 131_072, 1 << 25], needs_ecn);
    let mut out = Vec::new();
    let mut syns = Vec::new();
    let mut synacks = 0;
    s.connect(0, &mut out);
    let mut t = 0;
    while s.conn() == Conn::SynSent {
        let syn = out.pop().expect("a SYN");
        syns.push(syn);
        let mut back = Vec::new();
        if !lose.contains(&format!("syn{}", syns.len()).as_str()) {
            r.on_syn(t + 10 * MS, &syn, &mut back);
        }
        if let Some(synack) = back.pop() {
            synacks += 1;
            if !lose.contains(&format!("synack{synacks}").as_str()) {
                s.on_synack(t + 20 * MS, &synack, &mut out);
                break;
            }
        }
        t = s.xmit_timer_deadline().expect("SYN timer");
        s.on_xmit_timer(t, &mut out);
    }
    (s, r, syns)
}

/// RFC 3168 6.1.1 with Linux's sysctl on each end: only a client with `tcp_ecn` 1 asks,
/// only a server with 0 refuses; both ends agree, with the handshake or without.
#[test]
fn the_negotiation_matrix_with_and_without_the_handshake() {
    for client in 0..=2u8 {
        for server in 0..=2u8 {
            let expect = client == 1 && server != 0;
            let o = opts(client, server, true);
            let (s, r, syns) = connect(&o, false, &[]);
            assert_eq!(s.tp.ecn_ok, expect, "client {client}, server {server}");
            assert_eq!(r.ecn_ok(), expect, "client {client}, server {server}");
            let asks = syns[0].tcp_flags == TcpFlags::ECE.with(TcpFlags::CWR);
            assert_eq!(asks, client == 1);
            assert_eq!(
                syns[0].ecn,
                Ecn::NotEct,
                "RFC 3168 SYNs are not ECN-capable"
            );

            let o = opts(client, server, false);
            let mut s = Sender::new(0, &o, algorithm("reno", false), None);
            let r = Receiver::new(0, &o, 20 * MS, [4096, 131_072, 1 << 25], false);
            s.start_without_handshake(0, &mut Vec::new());
            assert_eq!(
                (s.tp.ecn_ok, r.ecn_ok()),
                (expect, expect),
                "{client} {server}"
            );
        }
    }
}

/// An algorithm that needs ECN asks with an ECN-capable SYN whatever `tcp_ecn` says, and
/// its receiver (running it too) accepts even with `tcp_ecn` 0.
#[test]
fn an_algorithm_that_needs_ecn_always_negotiates_it() {
    for (client, server) in [(0, 0), (2, 0), (2, 2)] {
        let (s, r, syns) = connect(&opts(client, server, true), true, &[]);
        assert!(s.tp.ecn_ok && r.ecn_ok(), "{client} {server}");
        assert_eq!(syns[0].ecn, Ecn::Ect0);
    }
}

/// `tcp_ecn_fallback`: a retransmitted SYN no longer asks, so a lost first SYN leaves the
/// connection without ECN; without the fallback it still asks. A lost SYN-ACK does not
/// matter: the server answers the retransmitted SYN as it answered the first.
#[test]
fn retransmitted_syns_fall_back_to_no_ecn() {
    let o = opts(1, 2, true);
    let (s, r, syns) = connect(&o, false, &["syn1"]);
    assert_eq!(syns.len(), 2);
    assert_eq!(syns[1].tcp_flags, TcpFlags::NONE);
    assert!(!s.tp.ecn_ok && !r.ecn_ok());
    let no_fallback = TcpOptions {
        ecn_fallback: false,
        ..o.clone()
    };
    let (s, r, syns) = connect(&no_fallback, false, &["syn1"]);
    assert_eq!(syns[1].tcp_flags, TcpFlags::ECE.with(TcpFlags::CWR));
    assert!(s.tp.ecn_ok && r.ecn_ok());
    let (s, r, _) = connect(&o, false, &["synack1"]);
    assert!(
        s.tp.ecn_ok && r.ecn_ok(),
        "the request sock keeps the first answer"
    );
}

/// A sender on a path with a constant RTT, a bottleneck of 1 ms per packet and no queue
/// limit, whose receiver ACKs every packet and echoes CE marks as RFC 3168 says: ECE on
/// every ACK from a marked packet until a packet with CWR arrives. The test marks the
/// transmissions it chooses.
struct Path {
    s: Sender,
    now: u64,
    last_departure_ns: u64,
    /// ACKs on their way back: (arrival, cumulative ACK, ECE).
    acks: VecDeque<(u64, u64, bool)>,
    /// The receiver's TCP_ECN_DEMAND_CWR.
    demand_cwr: bool,
    /// Packets the sender sent, in order.
    sent: Vec<Packet>,
    /// Segments whose next transmission the bottleneck marks.
    mark: BTreeSet<u64>,
}

impl Path {
    /// `ssthresh`: slow start ends there (the path has no queue limit to end it).
    fn new(cca: &str, o: &TcpOptions, ssthresh: u32) -> Self {
        let mut s = Sender::new(0, o, algorithm(cca, false), None);
        s.set_peer_window(1 << 30);
        let mut out = Vec::new();
        s.start_without_handshake(0, &mut out);
        s.tp.snd_ssthresh = ssthresh;
        let mut p = Path {
            s,
            now: 0,
            last_departure_ns: 0,
            acks: VecDeque::new(),
            demand_cwr: false,
            sent: Vec::new(),
            mark: BTreeSet::new(),
        };
        p.take(out);
        p
    }

    fn take(&mut self, out: Vec<Packet>) {
        for mut pkt in out {
            let departure = self.last_departure_ns.max(self.now) + MS;
            self.last_departure_ns = departure;
            if self.mark.remove(&pkt.seq) && pkt.ecn.is_capable() {
                pkt.ecn = Ecn::Ce;
            }
            // The receiver: CWR first (tcp_ack), then the mark (tcp_ecn_check_ce).
            if pkt.tcp_flags.contains(TcpFlags::CWR) {
                self.demand_cwr = false;
            }
            if pkt.ecn == Ecn::Ce {
                self.demand_cwr = true;
            }
            let cum = self.acks.back().map_or(0, |a| a.1).max(pkt.seq + 1);
            self.acks
                .push_back((departure + 20 * MS, cum, self.demand_cwr));
            self.sent.push(pkt);
        }
    }

    /// Run until `until_ns`, calling `each` after every ACK.
    fn run(&mut self, until_ns: u64, mut each: impl FnMut(&Sender)) {
        loop {
            let ack = self.acks.front().map(|a| a.0);
            let pacing = self.s.pacing_deadline();
            let timer = self.s.xmit_timer_deadline();
            let Some(t) = [ack, pacing, timer].into_iter().flatten().min() else {
                return;
            };
            if t > until_ns {
                return;
            }
            self.now = t;
            let mut out = Vec::new();
            if ack == Some(t) {
                let (_, cum, ece) = self.acks.pop_front().unwrap();
                let mut pkt = ack_packet(cum);
                if ece {
                    pkt.tcp_flags = TcpFlags::ECE;
                }
                self.s.on_ack(t, &pkt, &mut out);
                self.take(out);
                each(&self.s);
            } else if pacing == Some(t) {
                self.s.on_pacing_timer(t, &mut out);
                self.take(out);
            } else {
                self.s.on_xmit_timer(t, &mut out);
                self.take(out);
            }
        }
    }
}

fn ack_packet(cum: u64) -> Packet {
    Packet {
        flow: 0,
        kind: Kind::Ack,
        wire_bytes: 52,
        seq: cum,
        payload_bytes: 0,
        tsval: 1,
        tsecr: 0,
        n_sack: 0,
        ecn: Ecn::NotEct,
        tcp_flags: TcpFlags::NONE,
        window_bytes: 1 << 30,
        sack: NO_SACK,
    }
}

/// New data is ECT(0) once ECN is on; retransmissions are not (`INET_ECN_dontxmit`),
/// unless the algorithm needs ECN; without ECN nothing is.
#[test]
fn new_data_is_ect_and_retransmissions_are_not() {
    for (ecn, needs_ecn) in [(1, false), (2, false), (0, true)] {
        let o = TcpOptions {
            tlp: false,
            ..opts(ecn, 2, false)
        };
        let mut s = Sender::new(0, &o, algorithm("reno", needs_ecn), None);
        let mut out = Vec::new();
        s.start_without_handshake(0, &mut out);
        let on = ecn == 1 || needs_ecn;
        assert_eq!(s.tp.ecn_ok, on);
        let fresh = if on { Ecn::Ect0 } else { Ecn::NotEct };
        assert!(out.iter().all(|p| p.ecn == fresh));
        // The RTO retransmits the head.
        out.clear();
        let t = s.xmit_timer_deadline().unwrap();
        s.on_xmit_timer(t, &mut out);
        assert_eq!(out.len(), 1);
        let retrans = if needs_ecn { Ecn::Ect0 } else { Ecn::NotEct };
        assert_eq!(out[0].ecn, retrans, "ecn {ecn}, needs_ecn {needs_ecn}");
        // An RTO is a reduction too: the next new segment carries CWR (`tcp_enter_loss`).
        assert_eq!(
            out[0].tcp_flags,
            TcpFlags::NONE,
            "CWR goes on new data only"
        );
    }
}

/// RFC 3168 6.1.2: the sender reduces once per window of data. Two marks in one window
/// give one reduction (ssthresh = cwnd / 2 for Reno, PRR down to it, CWR on the next new
/// segment and nowhere else); a mark after the window another. An ECE without ECN
/// negotiated changes nothing.
#[test]
fn ece_reduces_once_per_window() {
    let mut p = Path::new("reno", &opts(1, 2, false), 30);
    p.run(300 * MS, |_| {});
    let cwnd = p.s.tp.snd_cwnd;
    assert!(cwnd >= 30, "cwnd {cwnd}");
    let first = p.s.tp.snd_nxt;
    p.mark.extend([first, first + 5]);
    let mut states = Vec::new();
    p.run(400 * MS, |s| {
        states.push((s.tp.ca_state, s.tp.snd_cwnd, s.tp.snd_ssthresh))
    });
    assert_eq!(p.s.stats.ecn_reductions, 1);
    assert!(
        p.s.stats.ece_acks >= 6,
        "ECE until CWR: {}",
        p.s.stats.ece_acks
    );
    let cwr: Vec<u64> = (p.sent.iter())
        .filter(|q| q.tcp_flags.contains(TcpFlags::CWR))
        .map(|q| q.seq)
        .collect();
    assert_eq!(cwr.len(), 1, "one CWR: {cwr:?}");
    assert!(cwr[0] > first + 5);
    // The first ECE enters CWR with Reno's ssthresh, half the window it had grown to.
    let (i, &(_, cwnd_at, ssthresh)) = states
        .iter()
        .enumerate()
        .find(|(_, s)| s.0 == CaState::Cwr)
        .unwrap();
    assert!(
        ssthresh >= cwnd / 2 && ssthresh <= cwnd_at / 2 + 1,
        "{cwnd} {ssthresh}"
    );
    // Held in CWR for about a round trip, then Open with cwnd = ssthresh.
    let exit = i + states[i..]
        .iter()
        .position(|s| s.0 == CaState::Open)
        .unwrap();
    assert_eq!(states[exit].1, ssthresh, "cwnd = ssthresh when CWR ends");
    assert!(states[i..exit]
        .iter()
        .all(|s| s.0 == CaState::Cwr && s.2 == ssthresh));
    assert!(exit - i > 10);
    // A mark after the window: a second reduction, from the new window.
    let second = p.s.tp.snd_nxt;
    p.mark.insert(second);
    p.run(600 * MS, |_| {});
    assert_eq!(p.s.stats.ecn_reductions, 2);
    assert!(p.s.tp.snd_ssthresh < ssthresh + 10);

    // Without ECN the segments are Not-ECT, the path cannot mark them, and an ECE bit
    // would be ignored (tcp_ecn_rcv_ecn_echo).
    let mut p = Path::new("reno", &opts(0, 2, false), 30);
    p.run(300 * MS, |_| {});
    let first = p.s.tp.snd_nxt;
    p.mark.extend([first, first + 5]);
    p.run(600 * MS, |_| {});
    assert_eq!((p.s.stats.ecn_reductions, p.s.stats.ece_acks), (0, 0));
    assert_eq!(p.s.tp.snd_ssthresh, 30, "no reduction");
}

/// CUBIC's reduction is its multiplicative decrease (beta 717/1024), also once per window.
#[test]
fn cubic_reduces_by_beta() {
    let mut p = Path::new("cubic", &opts(1, 2, false), 30);
    p.run(300 * MS, |_| {});
    let first = p.s.tp.snd_nxt;
    p.mark.extend([first, first + 3]);
    let mut at_cwr = None;
    p.run(400 * MS, |s| {
        if s.tp.ca_state == CaState::Cwr && at_cwr.is_none() {
            at_cwr = Some((s.tp.prior_cwnd, s.tp.snd_ssthresh));
        }
    });
    let (prior, ssthresh) = at_cwr.expect("CWR");
    assert_eq!(ssthresh, (prior * 717 / 1024).max(2));
    assert_eq!(p.s.stats.ecn_reductions, 1);
}

/// Linux's BBR has no ECN code: the core still enters CWR on an ECE (calling BBR's
/// `ssthresh`, which only saves cwnd, and `set_state(CWR)`), but BBR's `cong_control`
/// replaces PRR, so cwnd, pacing and every packet sent are those of the same run without
/// marks.
#[test]
fn bbr_ignores_ece() {
    let o = opts(1, 2, false);
    let run = |marks: bool| {
        let mut p = Path::new("bbr", &o, ccfair_cc::sock::TCP_INFINITE_SSTHRESH);
        if marks {
            // A mark every 50 segments, for 12 s (PROBE_RTT included).
            p.mark.extend((0..200_000).step_by(50));
        }
        let mut trace = Vec::new();
        p.run(12_000 * MS, |s| {
            trace.push((s.tp.now_ns, s.tp.snd_cwnd, s.tp.pacing_rate_bytes_per_sec))
        });
        let sent: Vec<(u64, u64)> = p.sent.iter().map(|q| (q.seq, q.tsval as u64)).collect();
        (trace, sent, p.s.stats, p.s.tp.ca_state)
    };
    let (marked, marked_sent, stats, _) = run(true);
    let (clean, clean_sent, clean_stats, _) = run(false);
    assert!(stats.ecn_reductions > 10, "{}", stats.ecn_reductions);
    assert_eq!(clean_stats.ecn_reductions, 0);
    assert_eq!(marked.len(), clean.len());
    assert!(marked == clean, "cwnd or pacing differ");
    assert!(marked_sent == clean_sent);
}
