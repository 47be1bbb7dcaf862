//! Sans-IO tests of Copa: hand-built ACK sequences for each rule, then a tiny packet-level
//! bottleneck model (drop-tail FIFO, fixed propagation delay) for the closed-form
//! equilibrium of reference 8.3 item 10 and the behaviours of the item 5.

use super::*;
use crate::reno::{Reno, RenoParams};
use crate::testing::path::{Event, Path};
use crate::testing::{Delivery, TestSender};
use serde_json::json;

const MSS: u32 = 1448;

fn params(v: serde_json::Value) -> CopaParams {
    serde_json::from_value(v).unwrap()
}

/// Drives one Copa instance in the common test driver (`crate::testing`) with hand-made
/// ACKs. Each ACK at `now` acknowledges packets "sent" at `now - rtt`, so `prior_delivered`
/// (and with it the packet-timed rounds) follow from the ACK history, as the substrate's
/// rate sampler would produce them; the driver does the socket's accounting (srtt as
/// `tcp_rtt_estimator`) and calls the hooks. Derefs to the driver (`h.cc`, `h.tp`).
struct Hand {
    s: TestSender<Copa>,
    hist: Vec<(u64, u64)>,
}

impl std::ops::Deref for Hand {
    type Target = TestSender<Copa>;
    fn deref(&self) -> &Self::Target {
        &self.s
    }
}

impl std::ops::DerefMut for Hand {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.s
    }
}

impl Hand {
    fn new(p: serde_json::Value) -> Self {
        let tp = TcpSock::new(MSS, 10, 1000);
        Hand {
            s: TestSender::new(Copa::new(&params(p)).unwrap(), tp),
            hist: vec![(0, 0)],
        }
    }

    fn ack_with(&mut self, now_us: u64, rtt_us: u64, acked: u32, losses: u32) {
        self.ack_ece(now_us, rtt_us, acked, losses, false)
    }

    /// `ack_with`, the ACK carrying ECE or not.
    fn ack_ece(&mut self, now_us: u64, rtt_us: u64, acked: u32, losses: u32, ece: bool) {
        self.s.tp.now_ns = now_us * 1_000;
        let prior = self
            .hist
            .iter()
            .rev()
            .find(|(t, _)| t + rtt_us <= now_us)
            .map(|h| h.1)
            .unwrap_or(0);
        let delivered = self.tp.delivered + acked as u64 - prior;
        self.s.deliver(Delivery {
            acked,
            losses,
            rtt_us: rtt_us as i64,
            packets_out: None,
            rs: RateSample {
                prior_delivered: prior,
                delivered: delivered as i64,
                interval_us: rtt_us as i64,
                ..Default::default()
            },
            ece,
        });
        let delivered = self.tp.delivered;
        self.hist.push((now_us, delivered));
    }

    fn ack(&mut self, now_us: u64, rtt_us: u64) {
        self.ack_with(now_us, rtt_us, 1, 0)
    }

    /// One ACK per ms from `from_us` (inclusive) to `to_us` (exclusive), RTT from `f`.
    fn run(&mut self, from_us: u64, to_us: u64, mut f: impl FnMut(u64) -> u64) {
        let mut t = from_us;
        while t < to_us {
            let r = f(t);
            self.ack(t, r);
            t += 1_000;
        }
    }

    /// Leave slow start with a given cwnd (tests of the congestion-avoidance rules).
    fn force_ca(&mut self, cwnd: f64) {
        self.cc.slow_start = false;
        self.cc.cwnd = cwnd;
        self.cc.round_start_cwnd = cwnd;
    }
}

fn approx(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

// ---------------------------------------------------------------- signals

#[test]
fn rtt_min_over_10s_and_standing_over_half_srtt() {
    let mut h = Hand::new(json!({}));
    // 30 ms for 100 ms, then 50 ms: RTTstanding follows within srtt/2, RTTmin stays 30 ms.
    h.run(0, 100_000, |_| 30_000);
    assert_eq!(h.cc.rtt_min_us(), 30_000);
    assert_eq!(h.cc.rtt_standing_us(), 30_000);
    h.run(100_000, 200_000, |_| 50_000);
    assert_eq!(h.cc.rtt_min_us(), 30_000);
    assert_eq!(h.cc.rtt_standing_us(), 50_000);
    assert_eq!(h.cc.dq_us(), 20_000);
    // The standing window is srtt/2: 10 ms after the change the 30 ms samples still count.
    let mut h2 = Hand::new(json!({}));
    h2.run(0, 100_000, |_| 30_000);
    h2.run(100_000, 110_000, |_| 50_000);
    assert_eq!(h2.cc.rtt_standing_us(), 30_000);
    // RTTmin expires after 10 s (paper) ...
    h.run(200_000, 10_150_000, |_| 50_000);
    assert_eq!(h.cc.rtt_min_us(), 50_000);
    // ... but genericCC's window is max(10 s, 20 RTTmin): 20 x 1 s = 20 s here.
    let mut g = Hand::new(json!({"variant": "genericcc"}));
    g.run(0, 100_000, |_| 1_000_000);
    g.run(100_000, 15_000_000, |_| 1_200_000);
    assert_eq!(g.cc.rtt_min_us(), 1_000_000);
}

// ---------------------------------------------------------------- target and update

#[test]
fn target_rate_decision_and_per_ack_step() {
    let mut h = Hand::new(json!({"competitive": false}));
    h.ack(0, 40_000);
    h.run(1_000, 100_000, |_| 44_000);
    assert_eq!(
        (h.cc.rtt_min_us(), h.cc.rtt_standing_us()),
        (40_000, 44_000)
    );
    // lambda_t = 1/(0.5 * 4 ms) = 500 pkt/s; lambda = cwnd / 44 ms: threshold cwnd = 22.
    h.force_ca(20.0);
    h.ack(100_000, 44_000);
    assert!(approx(h.cc.target_rate_pps(), 500.0, 1e-9));
    assert!(approx(h.cc.cwnd(), 20.0 + 1.0 / (0.5 * 20.0), 1e-12));
    h.force_ca(23.0);
    h.ack(101_000, 44_000);
    assert!(approx(h.cc.cwnd(), 23.0 - 1.0 / (0.5 * 23.0), 1e-12));
    // A delayed ACK for two packets moves twice as far.
    h.force_ca(23.0);
    h.ack_with(102_000, 44_000, 2, 0);
    assert!(approx(h.cc.cwnd(), 23.0 - 2.0 / (0.5 * 23.0), 1e-12));
    // lambda == lambda_t counts as "increase" (paper: lambda <= lambda_t).
    h.force_ca(22.0);
    h.ack(103_000, 44_000);
    assert!(h.cc.cwnd() > 22.0);
}

#[test]
fn pacing_is_twice_cwnd_per_rtt_standing() {
    let mut h = Hand::new(json!({}));
    // Unpaced until an RTT is known.
    assert_eq!(h.tp.pacing_rate_bytes_per_sec, u64::MAX);
    h.run(0, 50_000, |_| 40_000);
    let want = 2.0 * h.cc.cwnd() * MSS as f64 / 0.040;
    assert!(approx(h.tp.pacing_rate_bytes_per_sec as f64, want, 2.0));
    assert_eq!(h.tp.snd_cwnd, h.cc.cwnd().round() as u32);
    assert!(h.cc.wants_pacing() && h.cc.has_cong_control());
}

#[test]
fn slow_start_doubles_per_rtt_until_first_decrease() {
    let mut h = Hand::new(json!({}));
    assert_eq!(h.cc.state_name(&h.tp), "slow_start");
    // Empty queue: each RTT the whole window is acked once, cwnd doubles.
    let rtt = 40_000;
    let mut t = 0;
    for round in 0..3 {
        let w = h.cc.cwnd() as u64;
        for i in 0..w {
            h.ack(t + i * rtt / w, rtt);
        }
        t += rtt;
        assert_eq!(h.cc.cwnd() as u64, 10 << (round + 1));
    }
    // A queue appears: once RTTstanding shows it, lambda > lambda_t and slow start ends on
    // that ACK, with a decrease.
    let mut exit = None;
    let mut t2 = t;
    while t2 < t + 60_000 {
        let c = h.cc.cwnd();
        h.ack(t2, 60_000);
        if !h.cc.in_slow_start() {
            exit = Some((c, h.cc.cwnd()));
            break;
        }
        t2 += 1_000;
    }
    let (c0, c1) = exit.expect("slow start did not end");
    assert!(approx(c1, c0 - 1.0 / (0.5 * c0), 1e-9), "{c0} -> {c1}");
    assert_eq!(h.cc.state_name(&h.tp), "default");
    // The queue empties again: no return to slow start; growth is 1/(delta cwnd) per ACK.
    let c = h.cc.cwnd();
    h.run(t2 + 1_000, t2 + 201_000, |_| 40_000);
    assert!(!h.cc.in_slow_start());
    assert!(
        h.cc.cwnd() < c + 200.0 * 2.0 / c * 4.0,
        "{c} -> {}",
        h.cc.cwnd()
    );
}

#[test]
fn cwnd_never_below_two() {
    let mut h = Hand::new(json!({}));
    h.ack(0, 10_000);
    h.run(1_000, 300_000, |_| 500_000);
    // Just above the threshold (RTTst / (delta dq) = 2.04 packets) with a large velocity:
    // one ACK would take cwnd far below 2.
    h.force_ca(2.5);
    h.cc.velocity = 64.0;
    h.ack(300_000, 500_000);
    assert_eq!(h.cc.cwnd(), MIN_CWND);
    assert_eq!(h.tp.snd_cwnd, 2);
    // With delta = 0.5, cwnd = 2 is always below target (2 delta dq <= RTTstanding).
    let mut t = 301_000;
    while t < 3_000_000 {
        h.ack(t, 200_000 + (t * 7919) % 400_000);
        assert!(h.cc.cwnd() >= MIN_CWND && h.tp.snd_cwnd >= 2);
        t += 1_000;
    }
}

// ---------------------------------------------------------------- velocity

/// Round ends at which the velocity changed, with the new value.
fn velocity_log(h: &mut Hand, from: u64, to: u64, rtt: impl Fn(u64) -> u64) -> Vec<(u64, f64)> {
    let mut log = Vec::new();
    let mut t = from;
    let mut rounds = h.cc.rounds;
    while t < to {
        h.ack(t, rtt(t));
        if h.cc.rounds != rounds {
            rounds = h.cc.rounds;
            log.push((rounds, h.cc.velocity()));
        }
        t += 1_000;
    }
    log
}

/// 20 packets in CA, then 360 ms of an empty queue (every ACK says "increase").
fn accelerate(p: serde_json::Value) -> (Hand, Vec<f64>) {
    let mut h = Hand::new(p);
    h.run(0, 40_000, |_| 40_000);
    h.force_ca(20.0);
    let log = velocity_log(&mut h, 40_000, 400_000, |_| 40_000);
    (h, log.iter().map(|x| x.1).collect())
}

#[test]
fn velocity_doubles_only_after_three_same_direction_rtts() {
    let (h, v) = accelerate(json!({"competitive": false}));
    // The first window ends on the first ACK (it began before force_ca): no direction.
    // Then windows 1, 2 up: v = 1; window 3 completes three RTTs up: 2, then 4, 8, ...
    assert_eq!(&v[..6], &[1.0, 1.0, 1.0, 2.0, 4.0, 8.0], "{v:?}");
    // cwnd grew by about v/delta per RTT.
    assert!(h.cc.cwnd() > 20.0 + 2.0 * (1.0 + 1.0 + 2.0 + 4.0 + 8.0));
}

#[test]
fn velocity_resets_at_the_first_opposite_decision() {
    let (mut h, v) = accelerate(json!({"competitive": false}));
    let v_up = *v.last().unwrap();
    assert!(v_up >= 64.0);
    // A big queue: once RTTstanding shows it, the first "decrease" ACK resets v to 1 and
    // takes one v = 1 step down (not v_up steps).
    let mut t = 400_000;
    let (before, after) = loop {
        let before = h.cc.cwnd();
        h.ack(t, 400_000);
        t += 1_000;
        if h.cc.cwnd() < before {
            break (before, h.cc.cwnd());
        }
    };
    assert_eq!(h.cc.velocity(), 1.0);
    assert!(approx(before - after, 1.0 / (0.5 * before), 1e-9));
    // The 3-window wait starts over in the new direction (rounds are ~400 ms now).
    let log = velocity_log(&mut h, t, t + 2_000_000, |_| 400_000);
    let v: Vec<f64> = log.iter().map(|x| x.1).collect();
    assert_eq!(&v[..3], &[1.0, 1.0, 2.0], "{log:?}");
}

#[test]
fn literal_velocity_rule_resets_only_at_window_end() {
    // velocity_reset_on_opposite = false: the paper's text read literally. The window in
    // progress at the jump still went up in net (v doubles once more, and applies
    // downwards until the window ends); the first window that went down resets v.
    let (mut h, _) = accelerate(json!({"competitive": false, "velocity_reset_on_opposite": false}));
    let c = h.cc.cwnd();
    let log = velocity_log(&mut h, 400_000, 2_000_000, |_| 400_000);
    let v: Vec<f64> = log.iter().map(|x| x.1).collect();
    assert_eq!(&v[..4], &[128.0, 1.0, 1.0, 2.0], "{log:?}");
    assert!(h.cc.cwnd() < c);
}

#[test]
fn velocity_off_keeps_v_one() {
    let mut h = Hand::new(json!({"velocity": false, "competitive": false}));
    h.run(0, 40_000, |_| 40_000);
    h.force_ca(20.0);
    h.run(40_000, 600_000, |_| 40_000);
    assert_eq!(h.cc.velocity(), 1.0);
    // One ACK per ms, each adding 1/(delta cwnd): cwnd^2 grows by 4 per ms.
    let want = (20.0f64 * 20.0 + 4.0 * 560.0).sqrt();
    assert!(approx(h.cc.cwnd(), want, 0.1), "{} vs {want}", h.cc.cwnd());
}

#[test]
fn genericcc_velocity_doubles_on_first_repeat_and_is_bounded_by_delta_cwnd() {
    let mut h = Hand::new(json!({"variant": "genericcc", "competitive": false}));
    h.run(0, 40_000, |_| 40_000);
    h.force_ca(20.0);
    h.cc.reset_velocity(40_000);
    let mut seen = Vec::new();
    let mut t = 40_000;
    while t < 300_000 {
        h.ack(t, 40_000);
        let v = h.cc.velocity();
        if seen.last() != Some(&v) {
            seen.push(v);
        }
        assert!(v == 1.0 || v <= h.cc.cwnd() * h.cc.delta());
        t += 1_000;
    }
    // No three-RTT wait: v doubles at every RTT boundary from the first.
    assert_eq!(&seen[..4], &[1.0, 2.0, 4.0, 8.0], "{seen:?}");
}

// ---------------------------------------------------------------- competitive mode

/// Queue builds at t = 100 ms and never comes near empty: RTT alternates 60/80 ms.
fn buffer_filler_rtt(t: u64) -> u64 {
    if t < 100_000 {
        40_000
    } else if (t / 1_000).is_multiple_of(2) {
        60_000
    } else {
        80_000
    }
}

#[test]
fn competitive_mode_after_five_rtts_without_an_empty_queue() {
    let mut h = Hand::new(json!({}));
    h.run(0, 250_000, buffer_filler_rtt);
    // 150 ms after the queue appeared is less than 5 RTTs (srtt >= 40 ms).
    assert_eq!(h.cc.mode(), Mode::Default);
    h.run(250_000, 650_000, buffer_filler_rtt);
    assert_eq!(h.cc.mode(), Mode::Competitive);
    assert_eq!(h.cc.mode_switches(), 1);
    // The queue empties: back to default mode with delta reset.
    h.cc.inv_delta = 7.0;
    h.run(650_000, 700_000, |_| 40_000);
    assert_eq!(h.cc.mode(), Mode::Default);
    assert_eq!(h.cc.delta(), 0.5);
    assert_eq!(h.cc.mode_switches(), 2);
}

#[test]
fn copa_like_oscillation_keeps_default_mode() {
    // The queue empties every 4 RTTs (Copa alone empties it about every 5; srtt here
    // ~50 ms so the detector window is ~250 ms).
    let mut h = Hand::new(json!({}));
    h.run(0, 5_000_000, |t| {
        let phase = (t / 1_000) % 160;
        if phase < 20 {
            40_000
        } else {
            40_000 + phase * 150
        }
    });
    assert_eq!(h.cc.mode(), Mode::Default);
    assert_eq!(h.cc.mode_switches(), 0);
}

#[test]
fn a_longer_max_window_remembers_a_past_spike() {
    // 200 ms of 240 ms RTT (dq 200 ms), then a steady 20..30 ms queue. Over 5 RTTs the
    // minimum (20 ms) is well above 10% of the maximum (30 ms): competitive. With the
    // maximum taken over 40 RTTs, the spike keeps the bar at 20 ms: still "nearly empty".
    let rtt = |t: u64| {
        if t < 100_000 {
            40_000
        } else if t < 300_000 {
            240_000
        } else if (t / 1_000).is_multiple_of(2) {
            60_000
        } else {
            70_000
        }
    };
    let mut short = Hand::new(json!({}));
    short.run(0, 1_500_000, rtt);
    assert_eq!(short.cc.mode(), Mode::Competitive);
    let mut long = Hand::new(json!({"mode_max_window_rtts": 40.0}));
    long.run(0, 1_500_000, rtt);
    assert_eq!(long.cc.mode(), Mode::Default);
}

#[test]
fn competitive_off_never_switches() {
    let mut h = Hand::new(json!({"competitive": false}));
    h.run(0, 1_000_000, buffer_filler_rtt);
    assert_eq!(h.cc.mode(), Mode::Default);
    assert_eq!(h.cc.delta(), 0.5);
}

#[test]
fn aimd_on_inverse_delta_in_competitive_mode() {
    let mut h = Hand::new(json!({}));
    h.run(0, 700_000, buffer_filler_rtt);
    assert_eq!(h.cc.mode(), Mode::Competitive);
    // +1 on 1/delta per RTT without loss (RTT here = 60..80 ms packet-timed rounds).
    let (r0, i0) = (h.cc.rounds, h.cc.inv_delta);
    h.run(700_000, 1_300_000, buffer_filler_rtt);
    let rounds = (h.cc.rounds - r0) as f64;
    assert!(rounds >= 5.0);
    assert!(
        approx(h.cc.inv_delta - i0, rounds, 1.0),
        "{} vs {rounds}",
        h.cc.inv_delta - i0
    );
    // Two lossy ACKs within one RTT halve 1/delta once.
    let before = h.cc.inv_delta;
    h.ack_with(1_300_000, 60_000, 1, 1);
    h.ack_with(1_310_000, 80_000, 1, 2);
    assert!(
        approx(h.cc.inv_delta, before / 2.0, 1e-9),
        "{before} -> {}",
        h.cc.inv_delta
    );
    // A loss more than an RTT later halves again, but 1/delta never drops below 2.
    for k in 0..20 {
        h.ack_with(1_400_000 + k * 100_000, 60_000, 1, 1);
        assert!(h.cc.delta() <= 0.5);
    }
    assert_eq!(h.cc.inv_delta, 2.0);
    // The RTT in which a loss happened adds nothing at its end (paper).
    let mut g = Hand::new(json!({}));
    g.run(0, 700_000, buffer_filler_rtt);
    let r0 = g.cc.rounds;
    let mut t = 700_000;
    let mut adds = 0.0;
    while g.cc.rounds < r0 + 6 {
        let before = g.cc.inv_delta;
        g.ack_with(t, buffer_filler_rtt(t), 1, u32::from(t % 5_000 == 0));
        if g.cc.inv_delta > before {
            adds += 1.0;
        }
        t += 1_000;
    }
    assert_eq!(adds, 0.0);
}

#[test]
fn genericcc_halves_on_every_lossy_ack_and_adds_regardless() {
    let mut h = Hand::new(json!({"variant": "genericcc", "loss_reduce": false}));
    h.run(0, 700_000, buffer_filler_rtt);
    assert_eq!(h.cc.mode(), Mode::Competitive);
    h.cc.inv_delta = 40.0;
    h.ack_with(700_000, 60_000, 1, 1);
    h.ack_with(701_000, 80_000, 1, 1);
    assert_eq!(h.cc.inv_delta, 10.0);
}

/// ecn_response: "none" (default, the paper and genericCC) ignores ECE; "loss" halves
/// 1/delta in competitive mode as a loss does, once per RTT, and not in default mode.
#[test]
fn ecn_marks_count_as_losses_only_when_asked() {
    for (response, halves) in [("none", false), ("loss", true)] {
        let mut h = Hand::new(json!({"ecn_response": response}));
        h.s.tp.ecn_ok = true;
        h.run(0, 700_000, buffer_filler_rtt);
        assert_eq!(h.cc.mode(), Mode::Competitive);
        h.cc.inv_delta = 40.0;
        h.ack_ece(700_000, 60_000, 1, 0, true);
        h.ack_ece(710_000, 80_000, 1, 0, true);
        let expect = if halves { 20.0 } else { 40.0 };
        assert_eq!(h.cc.inv_delta, expect, "{response}");
        // An unmarked ACK after an RTT: no halving (a round's end may add 1).
        h.ack_ece(800_000, 60_000, 1, 0, false);
        assert!(h.cc.inv_delta >= expect, "{response}");
    }
    // Default mode ignores marks as it ignores losses.
    let mut h = Hand::new(json!({"ecn_response": "loss"}));
    h.s.tp.ecn_ok = true;
    h.run(0, 40_000, |_| 40_000);
    h.force_ca(30.0);
    let c = h.cc.cwnd();
    h.ack_ece(40_000, 40_000, 1, 0, true);
    assert!(h.cc.cwnd() > c);
    assert_eq!(h.cc.delta(), 0.5);
    // Without ECN negotiated an ECE bit means nothing (tcp_ecn_rcv_ecn_echo).
    let mut h = Hand::new(json!({"ecn_response": "loss"}));
    h.run(0, 700_000, buffer_filler_rtt);
    h.cc.inv_delta = 40.0;
    h.ack_ece(700_000, 60_000, 1, 0, true);
    assert_eq!(h.cc.inv_delta, 40.0);
}

#[test]
fn loss_is_ignored_in_default_mode() {
    let mut h = Hand::new(json!({}));
    h.run(0, 40_000, |_| 40_000);
    h.force_ca(30.0);
    let c = h.cc.cwnd();
    h.ack_with(40_000, 40_000, 1, 5);
    assert!(h.cc.cwnd() > c);
    assert_eq!(h.cc.delta(), 0.5);
}

// ---------------------------------------------------------------- loss, RTO, probing

#[test]
fn rto_restarts_slow_start_from_init_cwnd() {
    let mut h = Hand::new(json!({}));
    h.run(0, 40_000, |_| 40_000);
    h.force_ca(57.0);
    h.tp.snd_cwnd = 1; // tcp_enter_loss: cwnd = in_flight + 1
    h.s.cc.set_state(&mut h.s.tp, CaState::Loss);
    assert_eq!(h.cc.cwnd(), 10.0);
    assert_eq!(h.tp.snd_cwnd, 10);
    assert!(h.cc.in_slow_start());
    // genericCC ignores timeouts: the next ACK restores its cwnd.
    let mut g = Hand::new(json!({"variant": "genericcc"}));
    g.run(0, 40_000, |_| 40_000);
    g.force_ca(57.0);
    g.s.cc.set_state(&mut g.s.tp, CaState::Loss);
    assert_eq!(g.cc.cwnd(), 57.0);
    // Other state changes are not RTOs.
    h.force_ca(57.0);
    h.s.cc.set_state(&mut h.s.tp, CaState::Recovery);
    assert_eq!(h.cc.cwnd(), 57.0);
}

#[test]
fn genericcc_probes_then_reduces_on_heavy_loss() {
    let mut g = Hand::new(json!({"variant": "genericcc"}));
    // 19 probe ACKs: no window change.
    g.run(0, 19_000, |_| 40_000);
    assert_eq!(g.cc.cwnd(), 10.0);
    g.ack(19_000, 40_000);
    assert_eq!(g.cc.cwnd(), 11.0);
    // > 30% of packets lost over 2 RTTs: cwnd x 0.7.
    g.force_ca(100.0);
    let mut t = 20_000;
    let mut cut = false;
    while t < 200_000 && !cut {
        let c = g.cc.cwnd();
        g.ack_with(t, 40_000, 1, 1);
        cut = g.cc.cwnd() < c * 0.75;
        t += 1_000;
    }
    assert!(cut);
    // The paper variant never cuts on loss in default mode.
    let mut p = Hand::new(json!({}));
    p.run(0, 40_000, |_| 40_000);
    p.force_ca(100.0);
    for k in 0..200 {
        let c = p.cc.cwnd();
        p.ack_with(40_000 + k * 1_000, 40_000, 1, 1);
        assert!(p.cc.cwnd() >= c);
    }
}

// ---------------------------------------------------------------- observability

#[test]
fn metrics_and_mode_time_accounting() {
    let mut h = Hand::new(json!({}));
    let mut names = Vec::new();
    h.cc.sample_metrics(&h.tp, &mut names);
    let first: Vec<&str> = names.iter().map(|x| x.0).collect();
    assert_eq!(
        first,
        [
            "copa_mode_competitive",
            "copa_delta",
            "copa_velocity",
            "copa_dq_us",
            "copa_rtt_standing_us",
            "copa_rtt_min_us",
            "copa_target_rate_pps"
        ]
    );
    h.run(0, 1_000_000, buffer_filler_rtt);
    let mut m = Vec::new();
    h.cc.sample_metrics(&h.tp, &mut m);
    assert_eq!(m.iter().map(|x| x.0).collect::<Vec<_>>(), first);
    assert_eq!(m[0].1, 1.0);
    assert_eq!(m[5].1, 40_000.0);
    let mut s = Vec::new();
    h.tp.now_ns = 1_000_000_000;
    h.cc.summary_counters(&h.tp, &mut s);
    assert_eq!(s[0].0, "copa_time_default_s");
    assert_eq!(s[1].0, "copa_time_competitive_s");
    assert_eq!(s[2], ("copa_mode_switch_count", 1.0));
    // Default from 0 to the switch (between 250 and 650 ms), competitive after it.
    assert!(approx(s[0].1 + s[1].1, 1.0, 1e-9), "{s:?}");
    assert!(s[0].1 > 0.25 && s[0].1 < 0.65, "{s:?}");
    assert_eq!(h.cc.state_name(&h.tp), "competitive");
}

// ---------------------------------------------------------------- a tiny bottleneck

/// Flows of the common test driver over the driver's bottleneck (`testing::path`: FIFO,
/// drop-tail, fixed propagation delay, SACK receivers), observed every ms after a warm-up.
struct Net {
    path: Path<Box<dyn CongestionControl>>,
    ser_ns: u64,
}

struct Outcome {
    mean_queue: f64,
    /// Per flow: mean of dq x link rate (the standing queue the flow sees), packets.
    mean_dq_pkts: Vec<f64>,
    competitive_frac: Vec<f64>,
    goodput_frac: Vec<f64>,
}

/// A metric of a flow's module (NaN when it has none of that name).
fn metric(cc: &dyn CongestionControl, tp: &TcpSock, name: &str) -> f64 {
    let mut m = Vec::new();
    cc.sample_metrics(tp, &mut m);
    m.iter().find(|x| x.0 == name).map_or(f64::NAN, |x| x.1)
}

impl Net {
    fn new(rate_pps: u64, buffer: usize, loss_prob: f64, seed: u64) -> Self {
        let ser_ns = 1_000_000_000 / rate_pps;
        Net {
            path: Path::new(ser_ns, Some(buffer)).with_random_loss(loss_prob, seed),
            ser_ns,
        }
    }

    fn add(&mut self, algo: Box<dyn CongestionControl>, base_rtt_ms: u64, start_ms: u64) {
        let mut tp = TcpSock::new(MSS, 10, 1000);
        tp.now_ns = start_ms * 1_000_000;
        let s = TestSender::new(algo, tp);
        self.path
            .add(s, base_rtt_ms * 1_000_000, Some(start_ms * 1_000_000));
    }

    /// Process events up to `t`, checking Copa's invariants (reference 8.2) on every ACK.
    fn run_until(&mut self, t: u64) {
        while let Some((i, ev)) = self.path.step(t) {
            let s = &self.path.flows[i].s;
            if matches!(ev, Event::Ack(_)) && s.cc.name() == "copa" {
                let delta = metric(&*s.cc, &s.tp, "copa_delta");
                assert!(delta <= 0.5 + 1e-12, "delta {delta}");
                assert!(s.tp.snd_cwnd >= 2);
            }
        }
    }

    fn run(&mut self, warmup_s: f64, end_s: f64) -> Outcome {
        let warmup = (warmup_s * 1e9) as u64;
        let end = (end_s * 1e9) as u64;
        let n = self.path.flows.len();
        let (mut samples, mut queue_sum) = (0u64, 0.0);
        let mut dq_pkts_sum = vec![0.0; n];
        let mut competitive = vec![0u64; n];
        let mut delivered_at_warmup = vec![0u64; n];
        let rate_per_us = 1_000.0 / self.ser_ns as f64;
        let mut t = 0;
        while t < end {
            self.run_until(t);
            if t == warmup {
                for (i, f) in self.path.flows.iter().enumerate() {
                    delivered_at_warmup[i] = f.s.tp.delivered;
                }
            }
            if t >= warmup {
                samples += 1;
                queue_sum += self.path.queue_pkts(t) as f64;
                for (i, f) in self.path.flows.iter().enumerate() {
                    if f.s.cc.name() == "copa" {
                        dq_pkts_sum[i] += metric(&*f.s.cc, &f.s.tp, "copa_dq_us") * rate_per_us;
                        let comp = metric(&*f.s.cc, &f.s.tp, "copa_mode_competitive");
                        competitive[i] += (comp == 1.0) as u64;
                    }
                }
            }
            t += 1_000_000;
        }
        self.run_until(end);
        let samples = samples.max(1) as f64;
        let cap = 1e9 / self.ser_ns as f64 * (end_s - warmup_s);
        Outcome {
            mean_queue: queue_sum / samples,
            mean_dq_pkts: dq_pkts_sum.iter().map(|s| s / samples).collect(),
            competitive_frac: competitive.iter().map(|&c| c as f64 / samples).collect(),
            goodput_frac: (0..n)
                .map(|i| (self.path.flows[i].s.tp.delivered - delivered_at_warmup[i]) as f64 / cap)
                .collect(),
        }
    }
}

fn copa_algo(p: serde_json::Value) -> Box<dyn CongestionControl> {
    Box::new(Copa::new(&params(p)).unwrap())
}

fn reno_algo() -> Box<dyn CongestionControl> {
    Box::new(Reno::new(&RenoParams::default()))
}

#[test]
fn n_copa_flows_hold_about_n_over_delta_packets_of_standing_queue() {
    // reference 8.3 item 10: with delta = 0.5 the equilibrium standing queue is n/delta = 2n
    // packets whatever the rate and RTT. The law is about default mode (delta fixed), so
    // competitive mode is off here. 2000 pkt/s (~24 Mbit/s), 40 ms, buffer 4 BDP; flows
    // start 50 ms apart. Both references must satisfy it.
    for variant in ["paper", "genericcc"] {
        for n in 1..=4usize {
            let mut net = Net::new(2_000, 320, 0.0, 7);
            for k in 0..n {
                let p = json!({"variant": variant, "competitive": false});
                net.add(copa_algo(p), 40, 50 * k as u64);
            }
            let out = net.run(10.0, 40.0);
            let dq_pkts: f64 = out.mean_dq_pkts.iter().sum::<f64>() / n as f64;
            let util: f64 = out.goodput_frac.iter().sum();
            let want = 2.0 * n as f64;
            assert!(
                (dq_pkts - want).abs() <= 0.25 * want,
                "{variant} n={n}: standing queue {dq_pkts:.2} pkts, want ~{want}"
            );
            // The mean queue includes the oscillation around the standing level.
            assert!(
                out.mean_queue > dq_pkts && out.mean_queue < 2.0 * want,
                "{variant} n={n}: mean queue {:.2}",
                out.mean_queue
            );
            assert!(util > 0.9, "{variant} n={n}: utilisation {util:.3}");
            // Equal RTTs: equal shares, roughly.
            let min = out.goodput_frac.iter().cloned().fold(f64::MAX, f64::min);
            assert!(
                min > 0.6 * util / n as f64,
                "{variant} n={n}: {:?}",
                out.goodput_frac
            );
        }
    }
}

#[test]
fn copa_alone_stays_in_default_mode() {
    for variant in ["paper", "genericcc"] {
        let mut net = Net::new(2_000, 320, 0.0, 5);
        net.add(copa_algo(json!({"variant": variant})), 40, 0);
        let out = net.run(5.0, 60.0);
        assert_eq!(out.competitive_frac[0], 0.0, "{variant}");
        assert!(
            (out.mean_dq_pkts[0] - 2.0).abs() < 0.5,
            "{variant}: {:?}",
            out.mean_dq_pkts
        );
        assert!(
            out.goodput_frac[0] > 0.95,
            "{variant}: {:?}",
            out.goodput_frac
        );
    }
}

#[test]
fn copa_alone_with_one_percent_random_loss_keeps_ninety_percent() {
    let mut net = Net::new(2_000, 160, 0.01, 11);
    net.add(copa_algo(json!({})), 40, 0);
    let out = net.run(5.0, 30.0);
    let ceiling = 0.99;
    eprintln!("{:?} of capacity", out.goodput_frac);
    assert!(
        out.goodput_frac[0] >= 0.9 * ceiling,
        "{:?}",
        out.goodput_frac
    );
}

#[test]
fn copa_against_a_buffer_filler_in_a_deep_buffer_is_mostly_competitive() {
    // Reno in a 4 BDP buffer never lets the queue empty.
    for variant in ["paper", "genericcc"] {
        let mut net = Net::new(2_000, 320, 0.0, 3);
        net.add(copa_algo(json!({"variant": variant})), 40, 0);
        net.add(reno_algo(), 40, 0);
        let out = net.run(10.0, 60.0);
        eprintln!(
            "{variant}: competitive {:?}, goodput {:?}, queue {:.1}",
            out.competitive_frac, out.goodput_frac, out.mean_queue
        );
        assert!(
            out.competitive_frac[0] > 0.5,
            "{variant}: {:?}",
            out.competitive_frac
        );
        // And without competitive mode Copa gets much less.
        let mut off = Net::new(2_000, 320, 0.0, 3);
        off.add(
            copa_algo(json!({"variant": variant, "competitive": false})),
            40,
            0,
        );
        off.add(reno_algo(), 40, 0);
        let out_off = off.run(10.0, 60.0);
        eprintln!(
            "{variant} competitive off: goodput {:?}",
            out_off.goodput_frac
        );
        assert!(out_off.goodput_frac[0] < out.goodput_frac[0]);
    }
}
