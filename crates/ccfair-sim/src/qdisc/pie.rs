//! PIE, Proportional Integral controller Enhanced (net/sched/sch_pie.c, include/net/pie.h;
//! RFC 8033): a FIFO that drops (or marks) arriving packets at random with a probability a
//! timer updates every `tupdate` from the queueing delay, its distance to the target and
//! its trend, with gains that shrink while the probability is small.
//!
//! Linux's units and arithmetic: times in psched ticks of 64 ns (`PSCHED_NS2TICKS`),
//! probabilities as fractions of `MAX_PROB` = 2^56 - 1, the gains `alpha` and `beta` in
//! sixteenths. The timer first fires half a second after the qdisc is created
//! (`mod_timer(jiffies + HZ / 2)` in pie_init), then every `tupdate`. The random draw
//! comes from the link's seeded stream instead of `get_random_bytes`.

use ccfair_cc::rng::Rng;

use super::params::PieParams;
use super::{DropCause, MarkCause, PacketFifo, Queued, Sink};
use crate::link::OnWire;

/// Probability 1 (`MAX_PROB` = U64_MAX >> 8).
pub const MAX_PROB: u64 = u64::MAX >> 8;
const DTIME_INVALID: u64 = u64::MAX;
const QUEUE_THRESHOLD: u64 = 16_384;
const DQCOUNT_INVALID: u64 = u64::MAX;
const PIE_SCALE: u32 = 8;
const PSCHED_SHIFT: u32 = 6;
const PSCHED_TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;
/// The timer's first run after the qdisc is created (HZ / 2 jiffies).
const FIRST_TIMER_NS: u64 = 500_000_000;

#[inline]
fn ticks(ns: u64) -> u64 {
    ns >> PSCHED_SHIFT
}

/// PIE's parameters in its units (`struct pie_params`).
#[derive(Clone, Copy, Debug)]
pub struct PieConsts {
    /// Target queueing delay, psched ticks (64 ns).
    pub target: u64,
    /// Interval of the probability update, ns.
    pub tupdate_ns: u64,
    /// Gain on the delay's distance to target, sixteenths.
    pub alpha: u32,
    /// Gain on the delay's trend, sixteenths.
    pub beta: u32,
    /// Mark ECN-capable packets instead of dropping them while the probability is at most
    /// 10%.
    pub ecn: bool,
    /// Scale the drop probability by the packet's size relative to the MTU.
    pub bytemode: bool,
    /// Estimate the delay from the dequeue rate (RFC 8033) instead of packet timestamps.
    pub dq_rate_estimator: bool,
    /// Time after start during which no packet is dropped early, psched ticks.
    pub burst_allowance: u64,
    /// Bytes per MTU-sized packet (`psched_mtu`), for the 2-packet floor and byte mode.
    pub mtu: u32,
}

impl PieConsts {
    /// From the spec's parameters, as sch_pie.c converts tc's values to its units.
    pub fn new(p: &PieParams) -> Self {
        PieConsts {
            target: ticks(p.target_ns),
            tupdate_ns: p.tupdate_ns,
            alpha: p.alpha_16ths,
            beta: p.beta_16ths,
            ecn: p.ecn,
            bytemode: p.bytemode,
            dq_rate_estimator: p.dq_rate_estimator,
            burst_allowance: ticks(p.burst_allowance_ns),
            mtu: p.mtu_bytes,
        }
    }
}

/// PIE's state (`struct pie_vars`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PieVars {
    /// Current queueing delay, psched ticks.
    pub qdelay: u64,
    /// Queueing delay at the previous probability update, psched ticks.
    pub qdelay_old: u64,
    /// Burst allowance left, psched ticks (no early drop while above 0).
    pub burst_time: u64,
    /// Start of the current dequeue-rate measurement, psched ticks.
    pub dq_tstamp: u64,
    /// Drop probability, a fraction of [`MAX_PROB`].
    pub prob: u64,
    /// Probability accumulated since the last drop (the derandomisation of RFC 8033 section
    /// 5.1), a fraction of [`MAX_PROB`].
    pub accu_prob: u64,
    /// Bytes dequeued in the current measurement (`DQCOUNT_INVALID` outside one).
    pub dq_count: u64,
    /// Average dequeue rate, bytes per psched tick scaled by 2^8 (`PIE_SCALE`).
    pub avg_dq_rate: u32,
    /// Backlog at the previous probability update, bytes.
    pub backlog_old: u32,
}

impl PieVars {
    /// `pie_vars_init` (on a zeroed state at creation; `prob` and the delays are kept).
    fn init(&mut self, c: &PieConsts) {
        self.burst_time = c.burst_allowance;
        self.dq_tstamp = DTIME_INVALID;
        self.accu_prob = 0;
        self.dq_count = DQCOUNT_INVALID;
        self.avg_dq_rate = 0;
    }
}

/// `pie_drop_early`: whether to drop (or mark) a packet of `packet_size` bytes arriving
/// when `backlog` bytes wait. `draw` gives 64 random bits.
pub fn drop_early(
    c: &PieConsts,
    v: &mut PieVars,
    backlog: u64,
    packet_size: u32,
    draw: impl FnOnce() -> u64,
) -> bool {
    let mtu = c.mtu as u64;
    // Burst allowance left: no early drop.
    if v.burst_time > 0 {
        return false;
    }
    // Delay under half the target and a low probability: none either.
    if v.qdelay < c.target / 2 && v.prob < MAX_PROB / 5 {
        return false;
    }
    // Fewer than two MTU-sized packets queued: none (like RED's min_th).
    if backlog < 2 * mtu {
        return false;
    }
    let local_prob = if c.bytemode && packet_size as u64 <= mtu {
        (packet_size as u64).wrapping_mul(v.prob / mtu)
    } else {
        v.prob
    };
    if local_prob == 0 {
        v.accu_prob = 0;
    } else {
        v.accu_prob = v.accu_prob.wrapping_add(local_prob);
    }
    // De-randomisation: never below 0.85 accumulated, always from 8.5.
    if v.accu_prob < (MAX_PROB / 100) * 85 {
        return false;
    }
    if v.accu_prob >= (MAX_PROB / 2) * 17 {
        return true;
    }
    if (draw() >> 8) < local_prob {
        v.accu_prob = 0;
        return true;
    }
    false
}

/// `pie_process_dequeue`: after a packet of `len` bytes, enqueued at `enqueue_ns`, left at
/// `now_ns` with `backlog` bytes behind it.
pub fn process_dequeue(
    c: &PieConsts,
    v: &mut PieVars,
    now_ns: u64,
    enqueue_ns: u64,
    len: u32,
    backlog: u64,
) {
    let now = ticks(now_ns);
    let mut dtime: u32 = 0;
    if !c.dq_rate_estimator {
        // The delay from the packet's timestamp.
        v.qdelay = now.wrapping_sub(ticks(enqueue_ns));
        if v.dq_tstamp != DTIME_INVALID {
            dtime = now.wrapping_sub(v.dq_tstamp) as u32;
        }
        v.dq_tstamp = now;
        if backlog == 0 {
            v.qdelay = 0;
        }
        if dtime == 0 {
            return;
        }
    } else {
        // Start a measurement cycle once about ten packets wait.
        if backlog >= QUEUE_THRESHOLD && v.dq_count == DQCOUNT_INVALID {
            v.dq_tstamp = now;
            v.dq_count = 0;
        }
        if v.dq_count == DQCOUNT_INVALID {
            return;
        }
        v.dq_count = v.dq_count.wrapping_add(len as u64);
        if v.dq_count < QUEUE_THRESHOLD {
            return;
        }
        let count = (v.dq_count << PIE_SCALE) as u32;
        dtime = now.wrapping_sub(v.dq_tstamp) as u32;
        if dtime == 0 {
            return;
        }
        let count = count / dtime;
        v.avg_dq_rate = if v.avg_dq_rate == 0 {
            count
        } else {
            (v.avg_dq_rate - (v.avg_dq_rate >> 3)) + (count >> 3)
        };
        // Below the threshold keep the last rate, else measure again from now.
        if backlog < QUEUE_THRESHOLD {
            v.dq_count = DQCOUNT_INVALID;
        } else {
            v.dq_count = 0;
            v.dq_tstamp = now;
        }
    }
    // Burst allowance reduction.
    if v.burst_time > 0 {
        v.burst_time = v.burst_time.saturating_sub(dtime as u64);
    }
}

/// `pie_calculate_probability`: the timer's update of the drop probability with `backlog`
/// bytes waiting.
pub fn calculate_probability(c: &PieConsts, v: &mut PieVars, backlog: u64) {
    let (qdelay, qdelay_old) = if c.dq_rate_estimator {
        let old = v.qdelay;
        v.qdelay_old = v.qdelay;
        let qdelay = if v.avg_dq_rate > 0 {
            ((backlog as u32 as u64) << PIE_SCALE) / v.avg_dq_rate as u64
        } else {
            0
        };
        (qdelay, old)
    } else {
        (v.qdelay, v.qdelay_old)
    };
    // A zero delay with a backlog: too small to judge; no update this round.
    let mut update_prob = !(qdelay == 0 && backlog != 0);
    // alpha and beta in sixteenths, per second of delay, scaled to MAX_PROB.
    let mut alpha = (c.alpha as u64 * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4;
    let mut beta = (c.beta as u64 * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4;
    // Smaller steps while the probability is small (RFC 8033, section 4.2).
    if v.prob < MAX_PROB / 10 {
        alpha >>= 1;
        beta >>= 1;
        let mut power = 100u64;
        while v.prob < MAX_PROB / power && power <= 1_000_000 {
            alpha >>= 2;
            beta >>= 2;
            power *= 10;
        }
    }
    let mut delta = alpha
        .wrapping_mul(qdelay.wrapping_sub(c.target))
        .wrapping_add(beta.wrapping_mul(qdelay.wrapping_sub(qdelay_old)))
        as i64;
    let oldprob = v.prob;
    // Steps of at most 2% once the probability is 10% or more.
    if delta > (MAX_PROB / (100 / 2)) as i64 && v.prob >= MAX_PROB / 10 {
        delta = ((MAX_PROB / 100) * 2) as i64;
    }
    // Above 250 ms of delay, 2% more each update.
    if qdelay > ticks(250_000_000) {
        delta = delta.wrapping_add((MAX_PROB / (100 / 2)) as i64);
    }
    v.prob = v.prob.wrapping_add(delta as u64);
    if delta > 0 {
        if v.prob < oldprob {
            // Overflow.
            v.prob = MAX_PROB;
            update_prob = false;
        }
    } else if v.prob > oldprob {
        // Underflow.
        v.prob = 0;
    }
    // No delay for two updates: decay quickly (to 98.4%).
    if qdelay == 0 && qdelay_old == 0 && update_prob {
        v.prob -= v.prob / 64;
    }
    v.qdelay = qdelay;
    v.backlog_old = backlog as u32;
    // Restart the measurement cycle after two low-delay updates with no probability left.
    if v.qdelay < c.target / 2
        && v.qdelay_old < c.target / 2
        && v.prob == 0
        && (!c.dq_rate_estimator || v.avg_dq_rate > 0)
    {
        v.init(c);
    }
    if !c.dq_rate_estimator {
        v.qdelay_old = qdelay;
    }
}

/// The `pie` queue discipline.
pub struct Pie<P> {
    /// The packets waiting: `Qdisc` reads their count, bytes and storage from it.
    pub(super) queue: PacketFifo<P>,
    limit: u32,
    consts: PieConsts,
    vars: PieVars,
    next_timer_ns: u64,
    rng: Rng,
}

impl<P: OnWire> Pie<P> {
    /// Created at `origin_ns` (`pie_init`: its timer first runs half a second later).
    pub fn new(p: &PieParams, limit_pkts: u32, origin_ns: u64, rng: Rng) -> Self {
        let consts = PieConsts::new(p);
        let mut vars = PieVars::default();
        vars.init(&consts);
        Pie {
            queue: PacketFifo::new(),
            limit: limit_pkts,
            consts,
            vars,
            next_timer_ns: origin_ns + FIRST_TIMER_NS,
            rng,
        }
    }

    /// `pie_qdisc_enqueue`: over the limit a drop; else an early drop, or a mark instead
    /// for an ECN-capable packet while the probability is at most 10%.
    pub fn enqueue(&mut self, mut item: Queued<P>, sink: &mut Sink<P>) {
        let now_ns = item.enqueue_ns;
        let cause = if self.queue.len() >= self.limit as usize {
            DropCause::Overlimit
        } else {
            let rng = &mut self.rng;
            let early = drop_early(
                &self.consts,
                &mut self.vars,
                self.queue.bytes(),
                item.pkt.wire_bytes(),
                || rng.next_u64(),
            );
            let enqueue = if !early {
                true
            } else if self.consts.ecn && self.vars.prob <= MAX_PROB / 10 && item.set_ce() {
                sink.mark(now_ns, item.pkt, MarkCause::Aqm);
                true
            } else {
                false
            };
            if enqueue {
                self.queue.push(item);
                sink.enqueued(now_ns, item.pkt);
                return;
            }
            DropCause::Aqm
        };
        self.vars.accu_prob = 0;
        sink.drop(now_ns, item.pkt, cause);
    }

    /// `pie_qdisc_dequeue`.
    pub fn dequeue(&mut self, now_ns: u64) -> Option<Queued<P>> {
        let item = self.queue.pop()?;
        process_dequeue(
            &self.consts,
            &mut self.vars,
            now_ns,
            item.enqueue_ns,
            item.pkt.wire_bytes(),
            self.queue.bytes(),
        );
        Some(item)
    }

    /// When the probability update runs next, ns.
    pub fn next_timer_ns(&self) -> u64 {
        self.next_timer_ns
    }

    /// `pie_timer`: update the probability, run again `tupdate` later.
    pub fn on_timer(&mut self) {
        calculate_probability(&self.consts, &mut self.vars, self.queue.bytes());
        self.next_timer_ns += self.consts.tupdate_ns;
    }

    /// The PIE state (tests, diagnostics).
    pub fn vars(&self) -> &PieVars {
        &self.vars
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consts() -> PieConsts {
        PieConsts::new(&PieParams::default())
    }

    fn prob(p: u64) -> f64 {
        p as f64 / MAX_PROB as f64
    }

    /// From a probability of 0, a queueing delay of 40 ms (25 ms over the 15 ms target)
    /// raises it by alpha x (delay - target) + beta x (delay - old delay), both gains in
    /// units of probability per second and scaled down (x 1/2 x 1/4^k) while the
    /// probability is small: RFC 8033's update with Linux's table, in closed form.
    #[test]
    fn the_update_follows_the_scaled_pi_law() {
        let c = consts();
        let per_tick = (MAX_PROB / PSCHED_TICKS_PER_SEC) as f64;
        let alpha0 = 2.0 * per_tick / 16.0;
        let beta0 = 20.0 * per_tick / 16.0;
        let mut v = PieVars {
            qdelay: ticks(40_000_000),
            qdelay_old: ticks(40_000_000),
            ..PieVars::default()
        };
        v.init(&c);
        calculate_probability(&c, &mut v, 100_000);
        // prob 0 < MAX_PROB / 10: halved, then quartered for each power of ten it is below
        // 1%, 0.1%, ..., down to 1e-6 (power reaches 1e7): 1/2 x 1/4^5.
        let scale = 0.5 / 4f64.powi(5);
        let expected = alpha0 * scale * (ticks(40_000_000) - ticks(15_000_000)) as f64;
        assert!(
            (v.prob as f64 - expected).abs() <= 2.0 * alpha0 * scale,
            "{} vs {expected}",
            v.prob
        );
        // Now at 10% or more: full gains, steps capped at 2%.
        v.prob = MAX_PROB / 5;
        v.qdelay = ticks(16_000_000);
        v.qdelay_old = ticks(15_000_000);
        let before = v.prob;
        calculate_probability(&c, &mut v, 100_000);
        let step = alpha0 * (ticks(16_000_000) - ticks(15_000_000)) as f64
            + beta0 * (ticks(16_000_000) - ticks(15_000_000)) as f64;
        assert!(
            ((v.prob - before) as f64 - step).abs() < 4.0 * beta0,
            "{}",
            prob(v.prob)
        );
        v.qdelay = ticks(200_000_000);
        let before = v.prob;
        calculate_probability(&c, &mut v, 100_000);
        assert_eq!(v.prob - before, (MAX_PROB / 100) * 2, "capped at 2%");
        // Above 250 ms: 2% more on top of the capped step.
        v.qdelay = ticks(300_000_000);
        let before = v.prob;
        calculate_probability(&c, &mut v, 100_000);
        assert_eq!(v.prob - before, (MAX_PROB / 100) * 2 + MAX_PROB / 50);
    }

    /// Below target the probability falls; with no delay for two updates it also decays
    /// to 98.4% (1/64 off) on top.
    #[test]
    fn the_probability_falls_below_target_and_decays_without_delay() {
        let c = consts();
        let mut v = PieVars {
            prob: MAX_PROB / 5,
            ..PieVars::default()
        };
        v.init(&c);
        v.burst_time = 0;
        v.qdelay = ticks(5_000_000);
        v.qdelay_old = ticks(5_000_000);
        let before = v.prob;
        calculate_probability(&c, &mut v, 100_000);
        assert!(v.prob < before);
        v.qdelay = 0;
        v.qdelay_old = 0;
        let before = v.prob;
        calculate_probability(&c, &mut v, 0);
        let per_tick = (MAX_PROB / PSCHED_TICKS_PER_SEC) as f64;
        let alpha = 2.0 * per_tick / 16.0;
        let after_pi = before as f64 - alpha * c.target as f64;
        let expected = after_pi - (after_pi / 64.0).floor();
        assert!(
            (v.prob as f64 - expected).abs() < 1e-9 * expected,
            "{} vs {expected}",
            v.prob
        );
    }

    /// The dequeue measures the delay from timestamps, and spends the burst allowance:
    /// 150 ms of departures after which early drops may start.
    #[test]
    fn dequeues_measure_delay_and_spend_the_burst_allowance() {
        let c = consts();
        let mut v = PieVars::default();
        v.init(&c);
        assert_eq!(v.burst_time, ticks(150_000_000));
        process_dequeue(&c, &mut v, 10_000_000, 2_000_000, 1500, 3000);
        assert_eq!(v.qdelay, ticks(10_000_000) - ticks(2_000_000));
        let mut t = 10_000_000;
        while v.burst_time > 0 {
            t += 1_000_000;
            process_dequeue(&c, &mut v, t, t - 1_000_000, 1500, 3000);
        }
        let spent_ms = (t - 10_000_000) as f64 / 1e6;
        assert!((spent_ms - 150.0).abs() <= 1.0, "{spent_ms}");
        // An empty queue behind the packet: no delay.
        process_dequeue(&c, &mut v, t + 1_000_000, t, 1500, 0);
        assert_eq!(v.qdelay, 0);
    }

    /// Early drops at a fixed probability p, de-randomised as RFC 8033 section 5.1 and
    /// Linux do: no drop until the accumulated probability reaches 0.85, then each packet
    /// with probability p, so one drop per (n0 - 1) + 1 / p packets, n0 the first packet
    /// tested (each drop resets the accumulation, as pie_qdisc_enqueue does). Never within
    /// the burst allowance, never with fewer than two MTUs queued.
    #[test]
    fn early_drops_happen_at_the_derandomised_rate() {
        let c = consts();
        let mut rng = Rng::new(9);
        for p in [0.05, 0.2] {
            let mut v = PieVars::default();
            v.init(&c);
            v.prob = (p * MAX_PROB as f64) as u64;
            v.qdelay = c.target;
            assert!(!drop_early(&c, &mut v, 100_000, 1500, || rng.next_u64()));
            v.burst_time = 0;
            assert!(!drop_early(&c, &mut v, 2 * 1514 - 1, 1500, || rng.next_u64()));
            v.accu_prob = 0;
            let n0 = (1..).find(|k| k * v.prob >= (MAX_PROB / 100) * 85).unwrap() as f64;
            let n = 200_000;
            // Every drop resets the accumulation (pie_qdisc_enqueue's `out:`).
            let mut drops = 0;
            for _ in 0..n {
                if drop_early(&c, &mut v, 100_000, 1500, || rng.next_u64()) {
                    drops += 1;
                    v.accu_prob = 0;
                }
            }
            let rate = drops as f64 / n as f64;
            let expected = 1.0 / (n0 - 1.0 + 1.0 / p);
            assert!(
                (rate - expected).abs() < 0.03 * expected,
                "p {p}: {rate} vs {expected}"
            );
        }
    }

    /// The timer runs half a second after creation, then every tupdate.
    #[test]
    fn the_timer_starts_after_half_a_second() {
        let mut q: Pie<crate::packet::PacketRef> =
            Pie::new(&PieParams::default(), 1000, 7, Rng::new(1));
        assert_eq!(q.next_timer_ns(), 500_000_007);
        q.on_timer();
        assert_eq!(q.next_timer_ns(), 515_000_007);
    }
}
