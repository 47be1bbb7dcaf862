//! The algorithms' test driver (`ccfair_cc::testing::TestSender`) against this crate's
//! sender: both run the same module (wrapped in a hook recorder) through the same ACKs,
//! and must call the same hooks, in the same order, with the same arguments and rate
//! samples. The sender decides (loss detection, retransmissions, pacing, timers); the
//! driver is told what it decided, as a unit test tells it. A path with a FIFO
//! bottleneck, per-packet ACKs with SACK blocks, chosen drops and an outage (which makes
//! the retransmission timer fire) feeds both; with ECN on, chosen CE marks, echoed by the
//! receiver as Linux's (ECE until CWR, or per segment for an algorithm that needs ECN),
//! and the sender's CWR flags must be where the driver puts them.

use std::collections::BTreeSet;

use ccfair_cc::testing::record::{Hook, HookLog, Recording};
use ccfair_cc::testing::{Ack, TestSender};
use ccfair_cc::{CaState, CongestionControl, TcpSock};
use ccfair_sim::packet::{Ecn, Kind, Packet, SackBlock, TcpFlags, NO_SACK};
use ccfair_sim::spec::TcpOptions;
use ccfair_sim::tcp::sender::Sender;
use serde_json::json;

const MS: u64 = 1_000_000;

type Driver = TestSender<Recording<Box<dyn CongestionControl>>>;

/// What the path does to data packets.
struct PathSpec {
    rtt_ns: u64,
    ser_ns: u64,
    /// Transmissions (counted from 1, retransmissions included) the bottleneck drops.
    drop_tx: BTreeSet<u64>,
    /// Every packet reaching the bottleneck in this interval is dropped.
    outage_ns: Option<(u64, u64)>,
    /// Transmissions (counted from 1) the bottleneck marks CE if they are ECN-capable.
    mark_tx: BTreeSet<u64>,
    /// The sender's `tcp.ecn` (the receiver's is Linux's default, 2).
    ecn: u8,
    /// The receiver ACKs every `ack_every` in-order packets (2: delayed ACKs, with a 40 ms
    /// timer); out-of-order data and data filling a hole are ACKed at once.
    ack_every: u32,
    end_ns: u64,
}

struct Twin {
    real: Sender,
    real_log: HookLog,
    h: Driver,
    h_log: HookLog,
    spec: PathSpec,
    last_departure_ns: u64,
    tx_count: u64,
    /// Data on its way to the receiver: (arrival, segment, CE, CWR), in time order (FIFO
    /// path).
    acks: std::collections::VecDeque<(u64, u64, bool, bool)>,
    /// The receiver's TCP_ECN_DEMAND_CWR.
    demand_cwr: bool,
    /// Dropped transmissions the sender has not yet declared lost, oldest first.
    undetected_drops: Vec<u64>,
    rcv_cum: u64,
    rcv_above: BTreeSet<u64>,
    /// In-order packets received and not yet ACKed, and the delayed-ACK deadline.
    rcv_unacked: u32,
    delack_ns: Option<u64>,
    /// Hook calls already compared.
    checked: usize,
}

fn opts(ecn: u8) -> TcpOptions {
    TcpOptions {
        // The driver models neither loss probes nor F-RTO: the test compares what both do.
        tlp: false,
        frto: false,
        ecn,
        ..TcpOptions::default()
    }
}

impl Twin {
    fn new(cca: &str, spec: PathSpec) -> Self {
        let o = opts(spec.ecn);
        let (rec, real_log) = Recording::new(ccfair_cc::build(cca, &json!({}), 1).unwrap());
        let mut real = Sender::new(0, &o, Box::new(rec), None);
        let mut out = Vec::new();
        real.set_peer_window(1 << 30);
        real.start_without_handshake(0, &mut out);
        // The connection's ECN, as the sender negotiated it, before the driver's `init`.
        let mut tp = TcpSock::new(o.mss, o.init_cwnd, o.hz);
        tp.ecn_ok = real.tp.ecn_ok;
        let (rec, h_log) = Recording::new(ccfair_cc::build(cca, &json!({}), 1).unwrap());
        let h = TestSender::new(rec, tp);
        let mut t = Twin {
            real,
            real_log,
            h,
            h_log,
            spec,
            last_departure_ns: 0,
            tx_count: 0,
            acks: Default::default(),
            demand_cwr: false,
            undetected_drops: Vec::new(),
            rcv_cum: 0,
            rcv_above: BTreeSet::new(),
            rcv_unacked: 0,
            delack_ns: None,
            checked: 0,
        };
        t.mirror(&out);
        t
    }

    /// Replay the real sender's transmissions on the driver, and put them on the path.
    fn mirror(&mut self, out: &[Packet]) {
        let mut new = 0;
        for p in out.iter().filter(|p| p.kind == Kind::Data) {
            let cwr = p.tcp_flags.contains(TcpFlags::CWR);
            if p.seq < self.h.tp.snd_nxt + new {
                if new > 0 {
                    self.h.send(new);
                    new = 0;
                }
                self.h.retransmit(p.seq);
                assert!(!cwr, "CWR on a retransmission");
            } else {
                assert_eq!(p.seq, self.h.tp.snd_nxt + new, "new data in order");
                // CWR goes on the first new segment after a reduction, on both.
                assert_eq!(cwr, self.h.take_cwr(), "CWR of segment {}", p.seq);
                new += 1;
            }
            self.on_path(p);
        }
        // tcp_write_xmit validates cwnd even when it sent nothing.
        self.h.send(new);
    }

    fn on_path(&mut self, p: &Packet) {
        let seq = p.seq;
        self.tx_count += 1;
        let at = self.h.now_ns() + self.spec.rtt_ns / 2;
        let outage = self.spec.outage_ns.is_some_and(|(a, b)| at >= a && at < b);
        if outage || self.spec.drop_tx.contains(&self.tx_count) {
            self.undetected_drops.push(seq);
            return;
        }
        let ce = p.ecn.is_capable() && self.spec.mark_tx.contains(&self.tx_count);
        let departure = self.last_departure_ns.max(at) + self.spec.ser_ns;
        self.last_departure_ns = departure;
        let arrival = departure + self.spec.rtt_ns - self.spec.rtt_ns / 2;
        let cwr = p.tcp_flags.contains(TcpFlags::CWR);
        self.acks.push_back((arrival, seq, ce, cwr));
    }

    /// The receiver's ECN (Linux's, in order: `tcp_ecn_accept_cwr`, `tcp_ecn_check_ce`).
    fn receive_ecn(&mut self, ce: bool, cwr: bool) {
        if !self.real.tp.ecn_ok {
            return;
        }
        if self.real.cc.needs_ecn() {
            self.demand_cwr = ce;
            return;
        }
        if cwr {
            self.demand_cwr = false;
        }
        if ce {
            self.demand_cwr = true;
        }
    }

    /// The receiver takes `seq`; returns whether it ACKs now.
    fn receive(&mut self, seq: u64, t: u64) -> bool {
        let in_order = seq == self.rcv_cum && self.rcv_above.is_empty();
        if seq >= self.rcv_cum {
            self.rcv_above.insert(seq);
        }
        while self.rcv_above.remove(&self.rcv_cum) {
            self.rcv_cum += 1;
        }
        self.rcv_unacked += 1;
        if in_order && self.rcv_unacked < self.spec.ack_every {
            self.delack_ns.get_or_insert(t + 40 * MS);
            return false;
        }
        true
    }

    /// The ACK the receiver sends now: cumulative point and up to 3 SACK blocks, the
    /// highest first.
    fn ack_packet(&mut self) -> (Packet, Vec<std::ops::Range<u64>>) {
        self.rcv_unacked = 0;
        self.delack_ns = None;
        let mut blocks: Vec<std::ops::Range<u64>> = Vec::new();
        for &q in &self.rcv_above {
            match blocks.last_mut() {
                Some(b) if b.end == q => b.end += 1,
                _ => blocks.push(q..q + 1),
            }
        }
        blocks.reverse();
        blocks.truncate(3);
        let sack: Vec<SackBlock> = (blocks.iter())
            .map(|b| SackBlock {
                start: b.start,
                end: b.end,
            })
            .collect();
        let mut pkt = Packet {
            flow: 0,
            kind: Kind::Ack,
            wire_bytes: 52,
            seq: self.rcv_cum,
            payload_bytes: 0,
            tsval: 1,
            tsecr: 0,
            n_sack: 0,
            ecn: Ecn::NotEct,
            tcp_flags: if self.demand_cwr {
                TcpFlags::ECE
            } else {
                TcpFlags::NONE
            },
            window_bytes: 1 << 30,
            sack: NO_SACK,
        };
        pkt.set_sack_blocks(&sack);
        (pkt, blocks)
    }

    /// Segments the real sender just declared lost: the oldest undetected drops.
    fn newly_lost(&mut self, lost_before: u64) -> Vec<u64> {
        let n = (self.real.tp.lost - lost_before) as usize;
        assert!(
            n <= self.undetected_drops.len(),
            "the sender declared {n} lost, the path dropped {}",
            self.undetected_drops.len()
        );
        self.undetected_drops.drain(..n).collect()
    }

    fn run(&mut self) {
        let mut out = Vec::new();
        loop {
            let next_ack = self.acks.front().map(|a| a.0);
            let pacing = self.real.pacing_deadline();
            let timer = self.real.xmit_timer_deadline();
            let delack = self.delack_ns;
            let events = [next_ack, delack, pacing, timer];
            let Some(t) = events.into_iter().flatten().min() else {
                break;
            };
            if t > self.spec.end_ns {
                break;
            }
            out.clear();
            self.h.advance_to(t);
            let lost_before = self.real.tp.lost;
            if next_ack == Some(t) || delack == Some(t) {
                if next_ack == Some(t) {
                    let (_, seq, ce, cwr) = self.acks.pop_front().unwrap();
                    let before = self.demand_cwr;
                    self.receive_ecn(ce, cwr);
                    // DCTCP's receiver ACKs at once when the echoed mark changes.
                    let now = self.real.cc.needs_ecn() && before != self.demand_cwr;
                    if !self.receive(seq, t) && !now {
                        continue;
                    }
                }
                let (pkt, blocks) = self.ack_packet();
                let undos_before = self.real.stats.undo_count;
                let was_recovery = self.real.tp.ca_state == CaState::Recovery;
                self.real.on_ack(t, &pkt, &mut out);
                let mut ack = Ack::to(pkt.seq);
                ack.sacks = blocks;
                // Recovery's end found the reduction spurious (Linux 6.18: nothing was
                // retransmitted yet when the ACK reached high_seq).
                ack.undo = self.real.stats.undo_count > undos_before;
                assert!(!ack.undo || was_recovery, "an undo outside Recovery's end");
                ack.ece = pkt.tcp_flags.contains(TcpFlags::ECE);
                for s in self.newly_lost(lost_before) {
                    ack = ack.lose(s..s + 1);
                }
                self.h.ack(&ack);
            } else if pacing == Some(t) {
                self.real.on_pacing_timer(t, &mut out);
            } else {
                let was = self.real.tp.ca_state;
                self.real.on_xmit_timer(t, &mut out);
                if self.real.tp.ca_state == CaState::Loss && self.real.tp.lost > lost_before {
                    self.h.rto();
                    self.undetected_drops.clear();
                } else {
                    // RACK's reordering timer.
                    for s in self.newly_lost(lost_before) {
                        self.h.lose(s..s + 1);
                    }
                    if was != CaState::Recovery && self.real.tp.ca_state == CaState::Recovery {
                        self.h.enter_recovery_on_reo_timeout();
                    }
                }
            }
            self.mirror(&out);
            self.compare(t);
        }
    }

    fn compare(&mut self, t: u64) {
        let real = self.real_log.lock().unwrap();
        let h = self.h_log.lock().unwrap();
        let end = real.len().max(h.len());
        if let Some(i) = (self.checked..end).find(|&i| real.get(i) != h.get(i)) {
            let from = i.saturating_sub(3);
            panic!(
                "{}: hook calls differ at {t} ns, call {i}\nsender: {:?}\ndriver: {:?}",
                self.h.cc.name(),
                &real[from..(i + 3).min(real.len())],
                &h[from..(i + 3).min(h.len())]
            );
        }
        self.checked = end;
        let (a, b) = (&self.real.tp, &self.h.tp);
        let fields = |tp: &TcpSock| {
            (
                (tp.snd_cwnd, tp.snd_ssthresh, tp.snd_una, tp.snd_nxt),
                (tp.packets_out, tp.sacked_out, tp.lost_out, tp.retrans_out),
                (tp.delivered, tp.lost, tp.srtt_us, tp.min_rtt_us),
                (tp.ca_state, tp.pacing_rate_bytes_per_sec, tp.app_limited),
            )
        };
        assert_eq!(fields(a), fields(b), "socket at {t} ns (sender, driver)");
    }
}

fn path(drop_tx: &[u64], outage_ns: Option<(u64, u64)>) -> PathSpec {
    PathSpec {
        rtt_ns: 20 * MS,
        ser_ns: MS, // 1000 packets/s, BDP 20 packets
        drop_tx: drop_tx.iter().copied().collect(),
        outage_ns,
        mark_tx: BTreeSet::new(),
        ecn: 2,
        ack_every: 1,
        end_ns: 5_000 * MS,
    }
}

fn check(cca: &str, spec: PathSpec) -> Vec<(u64, Hook)> {
    let mut t = Twin::new(cca, spec);
    t.run();
    let log = t.h_log.lock().unwrap().clone();
    assert!(log.len() > 1_000, "{cca}: only {} hook calls", log.len());
    log
}

#[test]
fn the_driver_calls_every_hook_as_the_sender_on_a_clean_path() {
    for cca in ccfair_cc::known_algorithms() {
        check(cca, path(&[], None));
    }
}

#[test]
fn the_driver_agrees_through_losses_and_recovery() {
    for cca in ccfair_cc::known_algorithms() {
        let log = check(cca, path(&[60, 61, 400, 900, 905], None));
        assert!(
            log.iter()
                .any(|(_, h)| *h == Hook::SetState(CaState::Recovery)),
            "{cca}: no recovery"
        );
    }
}

#[test]
fn the_driver_agrees_through_a_retransmission_timeout() {
    for cca in ccfair_cc::known_algorithms() {
        let log = check(cca, path(&[], Some((500 * MS, 3_000 * MS))));
        assert!(
            log.iter().any(|(_, h)| *h == Hook::SetState(CaState::Loss)),
            "{cca}: no RTO"
        );
    }
}

#[test]
fn the_driver_agrees_with_delayed_acks() {
    for cca in ccfair_cc::known_algorithms() {
        let spec = PathSpec {
            ack_every: 2,
            ..path(&[60, 61, 400, 900, 905], None)
        };
        let log = check(cca, spec);
        let two = |h: &Hook| match h {
            Hook::PktsAcked { pkts_acked, .. } => *pkts_acked == 2,
            _ => false,
        };
        assert!(
            log.iter().any(|(_, h)| two(h)),
            "{cca}: no ACK of two packets"
        );
    }
}

/// BBR's PROBE_RTT marks the samples app-limited (`tp.app_limited`), which the sender's and
/// the driver's `tcp_rate_gen` clear alike.
#[test]
fn the_driver_agrees_through_bbr_probe_rtt_and_app_limited_samples() {
    let spec = PathSpec {
        end_ns: 11_000 * MS,
        ..path(&[], None)
    };
    let log = check("bbr", spec);
    let app_limited = |h: &Hook| match h {
        Hook::CongControl { rs, .. } => rs.is_app_limited,
        _ => false,
    };
    assert!(
        log.iter().any(|(_, h)| app_limited(h)),
        "no app-limited sample"
    );
}

/// With ECN on and a mark on every 40th transmission (and losses among them), an ECE
/// enters CWR once per window, Recovery may start inside CWR, and the CWR flag goes on the
/// same segment on both; DCTCP's alpha follows `delivered_ce` alike.
#[test]
fn the_driver_agrees_with_ecn_marks() {
    for cca in ccfair_cc::known_algorithms() {
        for ack_every in [1, 2] {
            let spec = PathSpec {
                mark_tx: (1..5_000).map(|i| i * 40).collect(),
                ecn: 1,
                ack_every,
                ..path(&[60, 61, 400, 900, 905, 1300], None)
            };
            let log = check(cca, spec);
            assert!(
                log.iter().any(|(_, h)| *h == Hook::SetState(CaState::Cwr)),
                "{cca}: no CWR"
            );
            let ece = |h: &Hook| match h {
                Hook::InAckEvent { flags, .. } => flags & ccfair_cc::CA_ACK_ECE != 0,
                _ => false,
            };
            assert!(log.iter().any(|(_, h)| ece(h)), "{cca}: no ECE");
        }
    }
}
