//! The contract every registered algorithm keeps, checked over random sequences of sends,
//! cumulative and selective ACKs, losses with recovery, RTOs, undos, idle periods and
//! app-limited marks (proptest: a failure shrinks to a short sequence). The loop runs over
//! `registry::ALGORITHMS`, so a new algorithm is covered by registering it.
//!
//! The contract (include/net/tcp.h and what the substrate relies on):
//! - cwnd >= 1 (Linux warns on a zero window, `tcp_snd_cwnd_set`) and <= `snd_cwnd_clamp`;
//! - ssthresh >= 2 (or `TCP_INFINITE_SSTHRESH`): the floor of `tcp_reno_ssthresh` and of
//!   every module's `ssthresh`, which the substrate copies to cwnd on leaving Recovery;
//! - a module that asks for pacing has a pacing rate (> 0) from `init` on, a finite one
//!   once an ACK carried an RTT sample (> 0 µs), and never above `max_pacing_rate`;
//! - the internals it reports keep their names over its life and are numbers (NaN allowed
//!   for "not measured yet", infinities not); summary counters are finite;
//! - no panic: the modules' debug assertions and overflow checks are on in tests.

use proptest::prelude::*;

use super::{Ack, TestSender};
use crate::sock::TCP_INFINITE_SSTHRESH;
use crate::{CaState, CongestionControl, ALGORITHMS};

/// One thing that happens to a connection.
#[derive(Clone, Debug)]
enum Op {
    /// Time passes (µs).
    Advance(u32),
    /// The sender retransmits what is lost, then sends up to `n` new segments within cwnd
    /// and the pacer (`tcp_write_xmit`).
    Send(u8),
    /// A cumulative ACK of the next `n` outstanding segments.
    Ack(u8),
    /// A duplicate ACK SACKing `n` segments above the first hole.
    Sack(u8),
    /// A duplicate ACK SACKing above the hole that marks it lost (Recovery).
    Loss(u8),
    /// The retransmission timer fires; the head is retransmitted.
    Rto,
    /// A spurious reduction is undone.
    Undo,
    /// The application runs out of data (`tcp_rate_check_app_limited`).
    AppLimited,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u32..200_000).prop_map(Op::Advance),
        1 => (1_000_000u32..3_000_000).prop_map(Op::Advance),
        4 => (1u8..64).prop_map(Op::Send),
        6 => (1u8..16).prop_map(Op::Ack),
        1 => (1u8..8).prop_map(Op::Sack),
        1 => (1u8..8).prop_map(Op::Loss),
        1 => Just(Op::Rto),
        1 => Just(Op::Undo),
        1 => Just(Op::AppLimited),
    ]
}

type Sender = TestSender<Box<dyn CongestionControl>>;

fn apply(s: &mut Sender, op: &Op) {
    let (una, nxt) = (s.tp.snd_una, s.tp.snd_nxt);
    match *op {
        Op::Advance(us) => s.advance(us as u64 * 1_000),
        Op::Send(n) => {
            for seq in una..nxt {
                if s.cwnd_room() > 0 && s.pacing_allows() && s.needs_retransmit(seq) {
                    s.retransmit(seq);
                }
            }
            s.write_xmit(n as u64);
        }
        Op::Ack(n) => {
            s.ack(&Ack::to((una + n as u64).min(nxt)));
        }
        Op::Sack(n) if nxt > una + 1 => {
            s.ack(&Ack::to(una).sack(una + 1..(una + 1 + n as u64).min(nxt)));
        }
        Op::Loss(n) if nxt > una + 1 => {
            let ack = Ack::to(una)
                .sack(una + 1..(una + 1 + n as u64).min(nxt))
                .lose(una..una + 1);
            s.ack(&ack);
        }
        Op::Rto if s.tp.packets_out > 0 => {
            s.rto();
            if s.needs_retransmit(una) {
                s.retransmit(una);
            }
        }
        Op::Undo if s.tp.ca_state != CaState::Open => s.undo(),
        Op::AppLimited => s.set_app_limited(),
        _ => {}
    }
}

/// Metric and counter names of a module.
fn names(cc: &dyn CongestionControl, s: &Sender) -> (Vec<&'static str>, Vec<&'static str>) {
    let (mut m, mut c) = (Vec::new(), Vec::new());
    cc.sample_metrics(&s.tp, &mut m);
    cc.summary_counters(&s.tp, &mut c);
    (
        m.iter().map(|x| x.0).collect(),
        c.iter().map(|x| x.0).collect(),
    )
}

/// Check the contract after `op` (`step` of the sequence, for the message).
fn check(name: &str, s: &Sender, seen_rtt: bool, fresh: &(Vec<&str>, Vec<&str>), step: usize) {
    let tp = &s.tp;
    let at = format!("{name}, step {step}");
    assert!(tp.snd_cwnd >= 1, "{at}: cwnd {}", tp.snd_cwnd);
    assert!(
        tp.snd_cwnd <= tp.snd_cwnd_clamp,
        "{at}: cwnd above the clamp"
    );
    assert!(
        tp.snd_ssthresh >= 2 || tp.snd_ssthresh == TCP_INFINITE_SSTHRESH,
        "{at}: ssthresh {}",
        tp.snd_ssthresh
    );
    let rate = tp.pacing_rate_bytes_per_sec;
    assert!(
        rate <= tp.max_pacing_rate_bytes_per_sec,
        "{at}: pacing {rate}"
    );
    if s.cc.wants_pacing() {
        assert!(rate > 0, "{at}: a pacing module without a pacing rate");
        if seen_rtt {
            assert!(rate < u64::MAX, "{at}: unpaced after an RTT sample");
        }
    }
    let (mut m, mut c) = (Vec::new(), Vec::new());
    s.cc.sample_metrics(tp, &mut m);
    s.cc.summary_counters(tp, &mut c);
    for (n, v) in &m {
        assert!(!v.is_infinite(), "{at}: metric {n} = {v}");
    }
    for (n, v) in &c {
        assert!(v.is_finite(), "{at}: counter {n} = {v}");
    }
    assert_eq!(&names(&*s.cc, s), fresh, "{at}: internals' names changed");
    let _ = s.cc.state_name(tp);
}

fn run(name: &str, seed: u64, ops: &[Op]) {
    let mut s = Sender::registered(name, &serde_json::Value::Null, seed);
    let fresh = names(&*s.cc, &s);
    let mut seen_rtt = false;
    check(name, &s, seen_rtt, &fresh, 0);
    for (i, op) in ops.iter().enumerate() {
        apply(&mut s, op);
        // An ACK with an RTT sample has run congestion control once it is processed (a
        // sample of 0 µs, possible only when no time passed, Copa ignores).
        seen_rtt |= matches!(op, Op::Ack(_) | Op::Sack(_) | Op::Loss(_)) && s.last_rs.rtt_us > 0;
        check(name, &s, seen_rtt, &fresh, i + 1);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_algorithm_keeps_the_contract(
        seed in 0u64..1_000,
        ops in prop::collection::vec(op(), 1..400),
    ) {
        for a in ALGORITHMS {
            run(a.name, seed, &ops);
        }
    }
}

/// A long fixed sequence through every algorithm (so that the contract is exercised in
/// steady states too, beyond what 400 random operations reach).
#[test]
fn every_algorithm_keeps_the_contract_on_a_long_bulk_transfer() {
    let mut ops = Vec::new();
    for round in 0..2_000u32 {
        ops.push(Op::Send(64));
        ops.push(Op::Advance(10_000 + (round % 7) * 1_000));
        if round % 97 == 0 {
            ops.push(Op::Loss(4));
        }
        if round % 501 == 0 {
            ops.push(Op::Rto);
        }
        ops.push(Op::Ack(8));
        ops.push(Op::Ack(8));
        if round % 333 == 0 {
            ops.push(Op::AppLimited);
            ops.push(Op::Advance(1_500_000));
        }
    }
    for a in ALGORITHMS {
        run(a.name, 7, &ops);
    }
}
