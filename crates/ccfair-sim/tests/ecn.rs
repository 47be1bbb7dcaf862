//! ECN end to end: this crate's sender and receiver (handshake included) over a bottleneck
//! that marks CE instead of queueing further, a test-only stand-in for the queue
//! disciplines (DCTCP's step marking, RFC 8257 section 3.1: an ECN-capable packet that
//! finds `mark_at` or more packets in the buffer is marked). The engine's links are
//! drop-tail; the AQMs that mark are theirs to add.

mod common;

use std::collections::VecDeque;

use ccfair_sim::packet::{Ecn, Kind, Packet};
use ccfair_sim::spec::TcpOptions;
use ccfair_sim::tcp::receiver::Receiver;
use ccfair_sim::tcp::sender::Sender;
use ccfair_sim::world::Simulation;
use serde_json::json;

const MS: u64 = 1_000_000;

/// One flow over a bottleneck of `ser_ns` per packet, `buffer` packets (the one in
/// service included) and the marking threshold `mark_at`, with `rtt_ns` of propagation.
struct Loop {
    s: Sender,
    r: Receiver,
    now: u64,
    rtt_ns: u64,
    ser_ns: u64,
    buffer: usize,
    mark_at: Option<usize>,
    /// Departure times of the packets in the bottleneck.
    queue: VecDeque<u64>,
    last_departure_ns: u64,
    to_receiver: VecDeque<(u64, Packet)>,
    to_sender: VecDeque<(u64, Packet)>,
    marked: u64,
    dropped: u64,
    forwarded: u64,
    max_queue: usize,
    /// Queue length seen by each data packet after `measure_from_ns`.
    queue_seen: Vec<usize>,
    measure_from_ns: u64,
    /// Marked and forwarded data packets after `measure_from_ns`.
    marked_measured: u64,
    forwarded_measured: u64,
}

impl Loop {
    fn new(cca: &str, o: &TcpOptions, buffer: usize, mark_at: Option<usize>) -> Self {
        let cc = ccfair_cc::build(cca, &json!({}), 1).unwrap();
        let needs_ecn = cc.needs_ecn();
        let rtt_ns = 20 * MS;
        let mut l = Loop {
            s: Sender::new(0, o, cc, None),
            r: Receiver::new(0, o, rtt_ns, [4096, 131_072, 1 << 26], needs_ecn),
            now: 0,
            rtt_ns,
            ser_ns: MS,
            buffer,
            mark_at,
            queue: VecDeque::new(),
            last_departure_ns: 0,
            to_receiver: VecDeque::new(),
            to_sender: VecDeque::new(),
            marked: 0,
            dropped: 0,
            forwarded: 0,
            max_queue: 0,
            queue_seen: Vec::new(),
            measure_from_ns: u64::MAX,
            marked_measured: 0,
            forwarded_measured: 0,
        };
        let mut out = Vec::new();
        l.s.connect(0, &mut out);
        l.sender_sent(out);
        l
    }

    /// Packets the sender sent now enter the bottleneck.
    fn sender_sent(&mut self, out: Vec<Packet>) {
        let at = self.now + self.rtt_ns / 2;
        for mut p in out {
            while self.queue.front().is_some_and(|&d| d <= at) {
                self.queue.pop_front();
            }
            let q = self.queue.len();
            if q >= self.buffer {
                self.dropped += 1;
                continue;
            }
            let mark = p.ecn.is_capable() && self.mark_at.is_some_and(|k| q >= k);
            if mark {
                p.ecn = Ecn::Ce;
                self.marked += 1;
            }
            if p.kind == Kind::Data {
                self.forwarded += 1;
                self.max_queue = self.max_queue.max(q);
                if self.now >= self.measure_from_ns {
                    self.queue_seen.push(q);
                    self.forwarded_measured += 1;
                    self.marked_measured += u64::from(mark);
                }
            }
            let departure = self.last_departure_ns.max(at) + self.ser_ns;
            self.last_departure_ns = departure;
            self.queue.push_back(departure);
            self.to_receiver.push_back((departure, p));
        }
    }

    fn receiver_sent(&mut self, out: Vec<Packet>) {
        for p in out {
            self.to_sender.push_back((self.now + self.rtt_ns / 2, p));
        }
    }

    fn run(&mut self, until_ns: u64) {
        loop {
            let events = [
                self.to_receiver.front().map(|e| e.0),
                self.to_sender.front().map(|e| e.0),
                self.s.pacing_deadline(),
                self.s.xmit_timer_deadline(),
                self.r.delack_at,
                self.r.comp_sack_at,
            ];
            let Some(t) = events.into_iter().flatten().min() else {
                return;
            };
            if t > until_ns {
                return;
            }
            self.now = t;
            let mut out = Vec::new();
            if events[0] == Some(t) {
                let (_, p) = self.to_receiver.pop_front().unwrap();
                match p.kind {
                    Kind::Syn => self.r.on_syn(t, &p, &mut out),
                    Kind::HandshakeAck => self.r.on_handshake_ack(t, &p),
                    _ => self.r.on_data(t, &p, |_| 1448, &mut out),
                }
                self.receiver_sent(out);
            } else if events[1] == Some(t) {
                let (_, p) = self.to_sender.pop_front().unwrap();
                if p.kind == Kind::SynAck {
                    if self.s.on_synack(t, &p, &mut out) {
                        self.s.app_write(t, &mut out);
                    }
                } else {
                    self.s.on_ack(t, &p, &mut out);
                }
                self.sender_sent(out);
            } else if events[2] == Some(t) {
                self.s.on_pacing_timer(t, &mut out);
                self.sender_sent(out);
            } else if events[3] == Some(t) {
                self.s.on_xmit_timer(t, &mut out);
                self.sender_sent(out);
            } else {
                self.r.on_timer(t, &mut out);
                self.receiver_sent(out);
            }
        }
    }

    fn internal(&self, name: &str) -> f64 {
        let mut m = Vec::new();
        self.s.cc.sample_metrics(&self.s.tp, &mut m);
        m.into_iter().find(|(n, _)| *n == name).unwrap().1
    }
}

fn ecn(on: bool) -> TcpOptions {
    TcpOptions {
        ecn: if on { 1 } else { 2 },
        ..TcpOptions::default()
    }
}

/// Reno and CUBIC with ECN over a marking queue: marks instead of losses, one reduction per
/// window of marks, the link kept busy, every mark counted at the receiver and echoed.
#[test]
fn loss_based_flows_react_to_marks_instead_of_losses() {
    for cca in ["reno", "cubic"] {
        let mut l = Loop::new(cca, &ecn(true), 200, Some(20));
        l.run(20_000 * MS);
        assert!(l.s.tp.ecn_ok && l.r.ecn_ok(), "{cca}: ECN negotiated");
        assert_eq!(l.dropped, 0, "{cca}: no loss");
        assert_eq!(l.s.stats.retrans_pkts, 0, "{cca}");
        assert!(l.marked > 10, "{cca}: {} marks", l.marked);
        assert_eq!(
            l.r.ce_received(),
            l.marked,
            "{cca}: every mark reaches the receiver"
        );
        let reductions = l.s.stats.ecn_reductions;
        assert!(
            reductions > 5 && reductions <= l.marked,
            "{cca}: {reductions}"
        );
        assert!(l.s.stats.ece_acks >= reductions);
        // The queue stays near the threshold (slow start overshoots it once), far below
        // the buffer.
        assert!(l.max_queue < 100, "{cca}: queue up to {}", l.max_queue);
        // Up to 1000 packets/s for 20 s; Reno's halvings empty a queue of 20 packets on
        // a BDP of 20 now and then (measured: 18,173 for Reno, 19,767 for CUBIC).
        assert!(l.forwarded > 17_000, "{cca}: {} packets", l.forwarded);
    }
}

/// Without ECN negotiated the packets are Not-ECT, the queue cannot mark them and fills
/// until it drops; nothing is echoed.
#[test]
fn without_ecn_the_queue_drops() {
    let mut l = Loop::new("reno", &ecn(false), 200, Some(20));
    l.run(20_000 * MS);
    assert!(!l.s.tp.ecn_ok && !l.r.ecn_ok());
    assert_eq!(l.marked, 0);
    assert!(l.dropped > 0);
    assert_eq!(l.s.stats.ecn_reductions + l.s.stats.ece_acks, 0);
}

/// DCTCP (ECN whatever `tcp.ecn` says, both ends running it) holds the queue at the
/// marking threshold without loss, and its alpha tracks the fraction of marked packets.
#[test]
fn dctcp_holds_the_queue_at_the_threshold_and_alpha_tracks_the_marks() {
    let mut l = Loop::new("dctcp", &ecn(false), 200, Some(20));
    l.measure_from_ns = 5_000 * MS;
    let mut alphas = Vec::new();
    for t in (5_000..30_000).step_by(10) {
        l.run(t * MS);
        alphas.push(l.internal("dctcp_alpha_frac"));
    }
    assert!(l.s.tp.ecn_ok && l.r.ecn_ok());
    assert_eq!(l.dropped, 0);
    assert_eq!(l.s.stats.retrans_pkts, 0);
    let f = l.marked_measured as f64 / l.forwarded_measured as f64;
    let mean_alpha = alphas.iter().sum::<f64>() / alphas.len() as f64;
    assert!(f > 0.01 && f < 0.5, "marked fraction {f}");
    assert!(
        (mean_alpha - f).abs() < 0.25 * f + 0.01,
        "mean alpha {mean_alpha}, marked fraction {f}"
    );
    // Queue: mostly between a few packets and the threshold plus a window's growth.
    let mean_q = l.queue_seen.iter().sum::<usize>() as f64 / l.queue_seen.len() as f64;
    assert!(mean_q > 5.0 && mean_q < 30.0, "mean queue {mean_q}");
    assert!(l.max_queue < 60, "{}", l.max_queue);
    // The link stays busy: about 1000 packets/s.
    assert!(l.forwarded_measured > 24_000, "{}", l.forwarded_measured);
}

/// A DCTCP sender whose peer does not run DCTCP: its ECN-capable SYN is refused (not RFC
/// 3168's), so it runs as Reno and fills the queue to a loss.
#[test]
fn dctcp_without_ecn_is_reno() {
    let mut l = Loop::new("dctcp", &ecn(true), 200, Some(20));
    // The receiver runs Reno: it neither needs ECN nor accepts an ECT SYN.
    l.r = Receiver::new(0, &ecn(true), l.rtt_ns, [4096, 131_072, 1 << 26], false);
    l.run(10_000 * MS);
    assert!(!l.s.tp.ecn_ok && !l.r.ecn_ok());
    assert!(l.internal("dctcp_alpha_frac").is_nan());
    assert_eq!(l.marked, 0);
    assert!(l.dropped > 0);
}

/// The engine negotiates per flow from `tcp.ecn` (the sender's host) and
/// `tcp.ecn_receiver` (the receiver's), with and without the handshake, and records it in
/// the flows table; a drop-tail link never marks, so nothing is echoed.
#[test]
fn the_flows_table_records_the_negotiation() {
    for handshake in [true, false] {
        let mut spec = common::dumbbell(
            &[
                ("reno", json!({})),
                ("cubic", json!({})),
                ("cubic", json!({})),
                ("dctcp", json!({})),
                ("bbr", json!({})),
            ],
            20_000_000,
            10 * MS,
            40,
            3_000 * MS,
        );
        let settings = [(1, 2), (2, 2), (1, 0), (0, 0), (1, 1)];
        for (f, (ecn, ecn_receiver)) in spec.flows.iter_mut().zip(settings) {
            f.tcp.ecn = ecn;
            f.tcp.ecn_receiver = ecn_receiver;
            f.tcp.handshake = handshake;
        }
        let r = Simulation::new(spec).unwrap().run();
        let negotiated = r.flows.f64("ecn_negotiated").unwrap();
        assert_eq!(
            negotiated,
            &[1.0, 0.0, 0.0, 1.0, 1.0],
            "handshake {handshake}"
        );
        for col in [
            "ce_received_pkts",
            "ece_received_pkts",
            "ecn_reduction_count",
        ] {
            assert!(r.flows.f64(col).unwrap().iter().all(|&v| v == 0.0), "{col}");
        }
        let alpha = r.timeseries.f64("dctcp_alpha_frac").unwrap();
        assert!(alpha.iter().any(|a| a.is_finite()), "DCTCP reports alpha");
    }
}
