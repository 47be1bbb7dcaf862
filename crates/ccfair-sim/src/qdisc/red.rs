//! RED, Random Early Detection (net/sched/sch_red.c, include/net/red.h; Floyd and
//! Jacobson 1993): an exponentially weighted average of the queue in bytes, updated at each
//! arrival and decayed over idle time; below `min` nothing happens, above `max` every
//! packet is dropped (or marked), in between packets are marked with a probability rising
//! linearly to `probability`, spread out by counting the packets since the last mark
//! (`red_action`, `red_mark_probability`). The queue itself is a byte FIFO (`bfifo`) of
//! `limit` bytes.
//!
//! The constants come from the parameters as `tc qdisc add ... red` computes them
//! (tc/q_red.c, tc/tc_red.c): the averaging weight 2^-Wlog from `burst` and `avpkt`
//! (`tc_red_eval_ewma`), `Plog` (`tc_red_eval_P`), and the idle-damping table `Stab` with
//! its cell `Scell_log` (`tc_red_eval_idle_damping`), in the units tc uses: transmission
//! times in psched ticks (1e6 / 64 ticks per us... tc's `tick_in_usec` of 15.625, from a
//! modern kernel's /proc/net/psched) while the kernel indexes the table by idle
//! microseconds (`red_calc_qavg_from_idle_time`), as Linux does.

use ccfair_cc::params::ParamError;
use ccfair_cc::rng::Rng;

use super::params::RedParams;
use super::{DropCause, MarkCause, PacketFifo, Queued, Sink};
use crate::link::OnWire;

const STAB_SIZE: usize = 256;
/// tc's psched ticks per microsecond (/proc/net/psched of a kernel with 64 ns ticks:
/// t2us 1000, us2t 64, clock resolution 1e6; tc_core_init).
const TC_TICK_IN_USEC: f64 = 1000.0 / 64.0;
/// Adaptive RED updates every HZ / 2 jiffies.
const ADAPT_INTERVAL_NS: u64 = 500_000_000;
/// Adaptive RED's bounds and step on max_P, a Q0.32 fraction (`RED_ONE_PERCENT`).
const RED_ONE_PERCENT: u32 = (((1u64 << 32) + 50) / 100) as u32;
const MAX_P_MIN: u32 = RED_ONE_PERCENT;
const MAX_P_MAX: u32 = 50 * RED_ONE_PERCENT;

/// RED's parameters in its units (`struct red_parms`), from tc's computations.
#[derive(Clone, Debug, PartialEq)]
pub struct RedConsts {
    /// Hard limit of the byte FIFO.
    pub limit_bytes: u32,
    /// The thresholds in bytes scaled by 2^Wlog, as the average is kept.
    pub qth_min: u64,
    /// The maximum threshold, bytes scaled by 2^Wlog (see `qth_min`).
    pub qth_max: u64,
    /// `max - min` in bytes, unscaled (the divisor of adaptive RED's `max_p_delta`).
    pub qth_delta: u32,
    /// log2 of the averaging weight's inverse: the average moves 2^-Wlog of the way to each
    /// sample.
    pub wlog: u8,
    /// log2 of the probability scale of `tc_red_eval_P` (`Plog`).
    pub plog: u8,
    /// log2 of the idle table's cell, µs (`Scell_log`).
    pub scell_log: u8,
    /// Longest idle time the table covers, µs (255 cells).
    pub scell_max: u32,
    /// The idle-damping table: entry `i` is how many times to halve the average after `i` cells
    /// of idle time (`Stab`).
    pub stab: [u8; STAB_SIZE],
    /// Marking probability at max as a Q0.32 fraction (`max_P`).
    pub max_p: u32,
    /// max_P / (max - min), the divisor of the random draw (`max_P_reciprocal`).
    pub max_p_delta: u32,
    /// Adaptive RED's target range of the average (bytes).
    pub target_min: u32,
    /// Upper end of the target range (bytes).
    pub target_max: u32,
}

/// `tc_red_eval_ewma`: the smallest Wlog such that a burst of `burst` packets of `avpkt`
/// bytes passes a queue at `qmin` (burst + 1 - qmin / avpkt <= (1 - (1 - W)^burst) / W).
fn eval_ewma(qmin: u32, burst: u32, avpkt: u32) -> Result<u8, ParamError> {
    let a = burst as f64 + 1.0 - qmin as f64 / avpkt as f64;
    if a < 1.0 {
        return Err(ParamError::new(
            "burst_pkts",
            format!(
                "{burst} is too small for min_bytes {qmin} and avpkt_bytes {avpkt}; tc suggests {}",
                1 + qmin / avpkt
            ),
        )
        .related_to("min_bytes"));
    }
    let mut w: f64 = 0.5;
    for wlog in 1..32u8 {
        if a <= (1.0 - (1.0 - w).powf(burst as f64)) / w {
            return Ok(wlog);
        }
        w /= 2.0;
    }
    Err(ParamError::new(
        "burst_pkts",
        format!("{burst}: no averaging constant fits (tc: failed to calculate EWMA constant)"),
    ))
}

/// `tc_red_eval_P`: Plog with max_P = (max - min) / 2^Plog.
fn eval_p(qmin: u32, qmax: u32, prob: f64) -> Result<u8, ParamError> {
    let span = qmax as i64 - qmin as i64;
    if span <= 0 {
        return Err(ParamError::new(
            "max_bytes",
            format!("{qmax} must be above min_bytes {qmin}"),
        )
        .related_to("min_bytes"));
    }
    let mut p = prob / span as f64;
    for i in 0..32u8 {
        if p > 1.0 {
            return Ok(i);
        }
        p *= 2.0;
    }
    Err(ParamError::new(
        "probability",
        format!("{prob} is too small for the thresholds (tc: failed to calculate probability)"),
    ))
}

/// `tc_calc_xmittime`: the transmission time of `size` bytes at `rate` bytes/s in tc's
/// psched ticks (truncated as tc's unsigned conversions do).
fn xmittime_ticks(rate_bytes_per_s: f64, size: u32) -> f64 {
    let us = (1e6 * size as f64 / rate_bytes_per_s).trunc();
    (us * TC_TICK_IN_USEC).trunc()
}

/// `tc_red_eval_idle_damping`: Stab[i] = -log(1 - W) x (i << Scell_log) / xmit_time,
/// capped at 31, with Scell_log the smallest that fits 31 / lW in 512 cells.
fn eval_idle_damping(
    wlog: u8,
    avpkt: u32,
    rate_bytes_per_s: f64,
) -> Result<(u8, [u8; STAB_SIZE]), ParamError> {
    let xmit_time = xmittime_ticks(rate_bytes_per_s, avpkt);
    let lw = -(1.0 - 1.0 / (1u64 << wlog) as f64).ln() / xmit_time;
    let maxtime = 31.0 / lw;
    let Some(clog) = (0..32u8).find(|&c| maxtime / ((1u64 << c) as f64) < 512.0) else {
        return Err(ParamError::new(
            "bandwidth_bps",
            "no idle damping table fits (tc: failed to calculate idle damping table)",
        ));
    };
    let mut stab = [0u8; STAB_SIZE];
    for (i, s) in stab.iter_mut().enumerate().take(255).skip(1) {
        // C's conversion of a double to u8 truncates (values here are non-negative).
        let v = ((i as u64) << clog) as f64 * lw;
        *s = if v >= 31.0 { 31 } else { v as u8 };
    }
    stab[255] = 31;
    Ok((clog, stab))
}

/// Highest set bit, 1-based (`fls`).
fn fls(x: u32) -> u32 {
    32 - x.leading_zeros()
}

impl RedParams {
    /// The constants as tc computes them for a link whose buffer is `buffer_pkts` packets
    /// and rate `rate_bps` (q_red.c `red_parse_opt`), checked as the kernel checks them
    /// (`red_check_params`), set as `red_set_parms` sets them.
    pub fn consts(&self, buffer_pkts: u32, rate_bps: u64) -> Result<RedConsts, ParamError> {
        let limit = match self.limit_bytes {
            Some(l) => l,
            None => buffer_pkts.checked_mul(1500).ok_or_else(|| {
                ParamError::new(
                    "limit_bytes",
                    format!("{buffer_pkts} packets of 1500 B exceed 2^32 bytes; set limit_bytes"),
                )
            })?,
        };
        let avpkt = self.avpkt_bytes;
        let qth_max = match self.max_bytes {
            Some(m) if m > 0 => m,
            _ => match self.min_bytes {
                Some(m) if m > 0 => m.saturating_mul(3),
                _ => limit / 4,
            },
        };
        let qth_min = match self.min_bytes {
            Some(m) if m > 0 => m,
            _ => qth_max / 3,
        };
        let burst = match self.burst_pkts {
            Some(b) if b > 0 => b,
            _ => ((2 * qth_min as u64 + qth_max as u64) / (3 * avpkt as u64)) as u32,
        };
        if qth_max <= qth_min {
            return Err(ParamError::new(
                "max_bytes",
                format!("{qth_max} must be above min_bytes {qth_min}"),
            )
            .related_to("min_bytes"));
        }
        let wlog = eval_ewma(qth_min, burst, avpkt)?;
        let plog = eval_p(qth_min, qth_max, self.probability)?;
        let rate = self.bandwidth_bps.unwrap_or(rate_bps) as f64 / 8.0;
        let (scell_log, stab) = eval_idle_damping(wlog, avpkt, rate)?;
        // red_check_params: the scaled thresholds fit 32 bits.
        if fls(qth_min) + wlog as u32 >= 32 || fls(qth_max) + wlog as u32 >= 32 {
            return Err(ParamError::new(
                "max_bytes",
                format!(
                    "thresholds {qth_min} and {qth_max} B with Wlog {wlog} exceed 32 bits \
                     (the kernel refuses them)"
                ),
            ));
        }
        if scell_log >= 32 {
            return Err(ParamError::new("bandwidth_bps", "Scell_log of 32 or more"));
        }
        // tc: max_P = probability x 2^32, converted to a u32.
        let max_p = (self.probability * 4_294_967_296.0) as u32;
        let delta = (qth_max - qth_min).max(1);
        Ok(RedConsts {
            limit_bytes: limit,
            qth_min: (qth_min as u64) << wlog,
            qth_max: (qth_max as u64) << wlog,
            qth_delta: delta,
            wlog,
            plog,
            scell_log,
            scell_max: 255 << scell_log,
            stab,
            max_p,
            max_p_delta: (max_p / delta).max(1),
            target_min: qth_min + 2 * (delta / 5),
            target_max: qth_min + 3 * (delta / 5),
        })
    }
}

/// RED's state (`struct red_vars`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedVars {
    /// Packets since the last mark, -1 below min (`qcount`).
    pub qcount: i32,
    /// The random number the count is compared with (`qR`).
    pub qr: u32,
    /// The average queue in bytes, scaled by 2^Wlog (`qavg`).
    pub qavg: u64,
    /// When the queue went idle (`qidlestart`).
    pub idle_since_ns: Option<u64>,
}

/// What RED does with an arriving packet (`red_action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Below `min`: accept.
    DontMark,
    /// Between `min` and `max`: the probability draw chose this packet.
    ProbMark,
    /// Above `max`: every packet.
    HardMark,
}

/// `red_calc_qavg`: the average after an arrival meeting `backlog` bytes, or, after idle
/// time, the average decayed by the table (`red_calc_qavg_from_idle_time`).
pub fn calc_qavg(c: &RedConsts, v: &RedVars, backlog: u64, now_ns: u64) -> u64 {
    match v.idle_since_ns {
        None => v.qavg.wrapping_add(backlog.wrapping_sub(v.qavg >> c.wlog)),
        Some(start) => {
            // ktime_us_delta, bounded by Scell_max.
            let us_idle = (((now_ns - start) / 1000) as i64).min(c.scell_max as i64);
            let shift = c.stab[((us_idle >> c.scell_log) as usize) & (STAB_SIZE - 1)];
            if shift != 0 {
                v.qavg >> shift
            } else {
                // (1 - W)^m ~ 1 - m W for short idle times.
                let decay = v.qavg.wrapping_mul(us_idle as u64) >> c.scell_log;
                if decay < v.qavg >> 1 {
                    v.qavg - decay
                } else {
                    v.qavg >> 1
                }
            }
        }
    }
}

/// `red_action` with the count-based spreading of marks (`red_mark_probability`): between
/// the thresholds, mark when (avg - min) x count reaches a uniform draw over
/// [0, (max - min) / max_P), i.e. once count x p_b reaches a uniform [0, 1) draw, p_b =
/// max_P x (avg - min) / (max - min): marks come every 1 to 1 / p_b packets, uniformly.
pub fn action(c: &RedConsts, v: &mut RedVars, qavg: u64, draw: &mut impl FnMut() -> u32) -> Action {
    if qavg < c.qth_min {
        v.qcount = -1;
        Action::DontMark
    } else if qavg >= c.qth_max {
        v.qcount = -1;
        Action::HardMark
    } else {
        v.qcount += 1;
        if v.qcount != 0 {
            let mark = ((qavg - c.qth_min) >> c.wlog).wrapping_mul(v.qcount as u64) >= v.qr as u64;
            if mark {
                v.qcount = 0;
                v.qr = random(c, draw);
                return Action::ProbMark;
            }
        } else {
            v.qr = random(c, draw);
        }
        Action::DontMark
    }
}

/// `red_random`: a u32 draw divided by max_P / (max - min) (`reciprocal_divide`, exact).
fn random(c: &RedConsts, draw: &mut impl FnMut() -> u32) -> u32 {
    draw() / c.max_p_delta
}

/// The `red` queue discipline (with its byte FIFO child).
pub struct Red<P> {
    /// The packets waiting: `Qdisc` reads their count, bytes and storage from it.
    pub(super) queue: PacketFifo<P>,
    consts: RedConsts,
    vars: RedVars,
    ecn: bool,
    harddrop: bool,
    adaptive: bool,
    next_timer_ns: u64,
    rng: Rng,
}

impl<P: OnWire> Red<P> {
    /// Created at `origin_ns` with an empty queue: idle from then (`red_change`).
    pub fn new(p: &RedParams, consts: RedConsts, origin_ns: u64, rng: Rng) -> Self {
        Red {
            queue: PacketFifo::new(),
            consts,
            vars: RedVars {
                qcount: -1,
                qr: 0,
                qavg: 0,
                idle_since_ns: Some(origin_ns),
            },
            ecn: p.ecn,
            harddrop: p.harddrop,
            adaptive: p.adaptive,
            next_timer_ns: if p.adaptive {
                origin_ns + ADAPT_INTERVAL_NS
            } else {
                u64::MAX
            },
            rng,
        }
    }

    /// `red_enqueue`.
    pub fn enqueue(&mut self, mut item: Queued<P>, sink: &mut Sink<P>) {
        let now_ns = item.enqueue_ns;
        let c = &self.consts;
        self.vars.qavg = calc_qavg(c, &self.vars, self.queue.bytes(), now_ns);
        self.vars.idle_since_ns = None;
        let rng = &mut self.rng;
        let mut draw = || (rng.next_u64() >> 32) as u32;
        let qavg = self.vars.qavg;
        match action(c, &mut self.vars, qavg, &mut draw) {
            Action::DontMark => {}
            Action::ProbMark => {
                if !self.ecn || !item.set_ce() {
                    sink.drop(now_ns, item.pkt, DropCause::Aqm);
                    return;
                }
                sink.mark(now_ns, item.pkt, MarkCause::Aqm);
            }
            Action::HardMark => {
                if self.harddrop || !self.ecn || !item.set_ce() {
                    sink.drop(now_ns, item.pkt, DropCause::Aqm);
                    return;
                }
                sink.mark(now_ns, item.pkt, MarkCause::Aqm);
            }
        }
        // The bfifo child (bfifo_enqueue): within the byte limit, or a drop (`pdrop`).
        if self.queue.bytes() + item.pkt.wire_bytes() as u64 <= c.limit_bytes as u64 {
            self.queue.push(item);
            sink.enqueued(now_ns, item.pkt);
        } else {
            sink.drop(now_ns, item.pkt, DropCause::Overlimit);
        }
    }

    /// `red_dequeue`: an empty queue starts an idle period.
    pub fn dequeue(&mut self, now_ns: u64) -> Option<Queued<P>> {
        let item = self.queue.pop();
        if item.is_none() && self.vars.idle_since_ns.is_none() {
            self.vars.idle_since_ns = Some(now_ns);
        }
        item
    }

    /// When adaptive RED's update runs next, ns (every 500 ms, also when not adaptive).
    pub fn next_timer_ns(&self) -> u64 {
        self.next_timer_ns
    }

    /// Adaptive RED's update (`red_adaptative_algo`), every 500 ms.
    pub fn on_timer(&mut self) {
        let now = self.next_timer_ns;
        self.next_timer_ns = self.next_timer_ns.saturating_add(ADAPT_INTERVAL_NS);
        if !self.adaptive {
            return;
        }
        let c = &mut self.consts;
        let mut qavg = self.vars.qavg;
        if self.vars.idle_since_ns.is_some() {
            qavg = calc_qavg(c, &self.vars, 0, now);
        }
        qavg >>= c.wlog;
        if qavg > c.target_max as u64 && c.max_p <= MAX_P_MAX {
            c.max_p += MAX_P_MIN.min(c.max_p / 4);
        } else if qavg < c.target_min as u64 && c.max_p >= MAX_P_MIN {
            c.max_p = (c.max_p / 10) * 9;
        }
        // DIV_ROUND_CLOSEST
        c.max_p_delta = ((c.max_p + c.qth_delta / 2) / c.qth_delta).max(1);
    }

    /// The averaging state (tests, diagnostics).
    pub fn vars(&self) -> &RedVars {
        &self.vars
    }

    /// The constants in RED's units, `max_p` as adaptive RED left it.
    pub fn consts(&self) -> &RedConsts {
        &self.consts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(limit: u32, min: u32, max: u32) -> RedParams {
        RedParams {
            limit_bytes: Some(limit),
            min_bytes: Some(min),
            max_bytes: Some(max),
            avpkt_bytes: 1000,
            ..RedParams::default()
        }
    }

    /// tc-red(8)'s example (limit 400000 min 30000 max 90000 avpkt 1000 burst 55
    /// bandwidth 10Mbit probability 0.02): a = 55 + 1 - 30 = 26 first fits
    /// (1 - (1 - W)^55) / W at W = 2^-5 (26.4; 15.5 at 2^-4), so Wlog 5; 0.02 / 60000 B
    /// doubled 22 times first exceeds 1, so Plog 22.
    #[test]
    fn tc_computes_the_constants() {
        let mut p = params(400_000, 30_000, 90_000);
        p.burst_pkts = Some(55);
        p.bandwidth_bps = Some(10_000_000);
        let c = p.consts(100, 50_000_000).unwrap();
        assert_eq!(c.wlog, 5);
        assert_eq!(c.plog, 22);
        assert_eq!(c.qth_min, 30_000 << 5);
        assert_eq!(c.max_p, (0.02f64 * 4_294_967_296.0) as u32);
        assert_eq!(c.qth_delta, 60_000);
        // The idle table: 0 at the start, rising, 31 at the end.
        assert_eq!(c.stab[0], 0);
        assert_eq!(c.stab[255], 31);
        assert!(c.stab.windows(2).all(|w| w[0] <= w[1]));
        // Defaults: max = limit / 4, min = max / 3, burst from them.
        let d = RedParams {
            limit_bytes: Some(400_000),
            ..RedParams::default()
        };
        let c = d.consts(100, 10_000_000).unwrap();
        assert_eq!(c.qth_max >> c.wlog, 100_000);
        assert_eq!(c.qth_min >> c.wlog, 33_333);
        // No limit: the buffer in full-size packets.
        let c = RedParams::default().consts(200, 10_000_000).unwrap();
        assert_eq!(c.limit_bytes, 300_000);
    }

    #[test]
    fn bad_thresholds_are_named() {
        let e = params(400_000, 90_000, 30_000).consts(100, 1).unwrap_err();
        assert_eq!(e.key, "max_bytes");
        let mut p = params(400_000, 30_000, 90_000);
        p.burst_pkts = Some(3);
        let e = p.consts(100, 10_000_000).unwrap_err();
        assert_eq!(e.key, "burst_pkts");
        assert!(e.message.contains("31"), "{e}");
    }

    /// The average follows avg += (backlog - avg) x 2^-Wlog per arrival: from 0, n
    /// arrivals at a constant backlog B give B x (1 - (1 - W)^n), in the scaled integers.
    #[test]
    fn the_average_is_an_ewma_of_the_backlog() {
        let c = params(400_000, 30_000, 90_000)
            .consts(100, 10_000_000)
            .unwrap();
        let mut v = RedVars {
            qcount: -1,
            qr: 0,
            qavg: 0,
            idle_since_ns: None,
        };
        let backlog = 50_000u64;
        for _ in 0..2000 {
            v.qavg = calc_qavg(&c, &v, backlog, 0);
        }
        let w = 1.0 / (1u64 << c.wlog) as f64;
        let expected = backlog as f64 * (1.0 - (1.0 - w).powi(2000));
        let got = (v.qavg >> c.wlog) as f64;
        assert!(
            (got - expected).abs() < 0.01 * expected,
            "{got} vs {expected}"
        );
        // Idle: the table decays the average; a long idle time to a 31-bit shift (zero).
        let mut idle = v;
        idle.idle_since_ns = Some(0);
        let short = calc_qavg(&c, &idle, 0, 10_000);
        assert!(
            short < v.qavg && short > v.qavg / 2,
            "{short} vs {}",
            v.qavg
        );
        let long = calc_qavg(&c, &idle, 0, 60_000_000_000);
        assert!(long < v.qavg >> 20, "{long}");
    }

    /// Between the thresholds the marking probability is max_P x (avg - min) / (max -
    /// min), and the count spreads the marks evenly: the gaps between marks are uniform
    /// on 1 ..= 1 / p_b (mean (1 / p_b + 1) / 2), so the fraction marked is about
    /// 2 p_b / (1 + p_b), Floyd and Jacobson's result for this scheme.
    #[test]
    fn marks_follow_the_probability_and_the_count_spreads_them() {
        let mut p = params(400_000, 30_000, 90_000);
        p.probability = 0.1;
        let c = p.consts(100, 10_000_000).unwrap();
        let mut rng = Rng::new(5);
        let mut draw = || (rng.next_u64() >> 32) as u32;
        for avg_bytes in [30_000u64, 45_000, 60_000, 75_000, 89_999] {
            let qavg = avg_bytes << c.wlog;
            let mut v = RedVars {
                qcount: -1,
                qr: 0,
                qavg,
                idle_since_ns: None,
            };
            let pb = 0.1 * (avg_bytes - 30_000) as f64 / 60_000.0;
            let n = 400_000;
            let mut gaps = Vec::new();
            let mut last = 0;
            for k in 0..n {
                if action(&c, &mut v, qavg, &mut draw) == Action::ProbMark {
                    gaps.push(k - last);
                    last = k;
                }
            }
            let frac = gaps.len() as f64 / n as f64;
            let expected = 2.0 * pb / (1.0 + pb);
            assert!(
                (frac - expected).abs() <= 0.03 * expected + 1e-6,
                "avg {avg_bytes}: {frac} vs {expected}"
            );
            if pb > 0.0 {
                let longest = *gaps[1..].iter().max().unwrap() as f64;
                assert!(longest <= 1.0 / pb + 1.0, "avg {avg_bytes}: gap {longest}");
            }
        }
        // At or above max: every packet.
        let mut v = RedVars {
            qcount: 5,
            qr: 0,
            qavg: 0,
            idle_since_ns: None,
        };
        assert_eq!(action(&c, &mut v, c.qth_max, &mut draw), Action::HardMark);
        assert_eq!(v.qcount, -1);
        assert_eq!(
            action(&c, &mut v, c.qth_min - 1, &mut draw),
            Action::DontMark
        );
    }

    /// Adaptive RED (every 500 ms): above the target range max_P grows by min(1%,
    /// max_P / 4) while at most 50%; below it shrinks to 9/10 while at least 1%; the
    /// divisor of the draw follows (DIV_ROUND_CLOSEST).
    #[test]
    fn adaptive_red_moves_max_p_toward_the_target() {
        let mut p = params(400_000, 30_000, 90_000);
        p.adaptive = true;
        p.probability = 0.02;
        let c = p.consts(100, 10_000_000).unwrap();
        let mut q: Red<crate::packet::PacketRef> = Red::new(&p, c, 0, Rng::new(1));
        assert_eq!(q.next_timer_ns(), 500_000_000);
        assert_eq!(RED_ONE_PERCENT, 42_949_673);
        // Average above target_max (30000 + 3 x 12000 = 66000 B).
        q.vars.idle_since_ns = None;
        q.vars.qavg = 80_000 << q.consts.wlog;
        let before = q.consts.max_p;
        q.on_timer();
        assert_eq!(q.consts.max_p, before + (before / 4).min(RED_ONE_PERCENT));
        assert_eq!(
            q.consts.max_p_delta,
            (q.consts.max_p + 30_000) / 60_000,
            "DIV_ROUND_CLOSEST(max_P, 60000)"
        );
        assert_eq!(q.next_timer_ns(), 1_000_000_000);
        // Below target_min (30000 + 2 x 12000 = 54000 B).
        q.vars.qavg = 40_000 << q.consts.wlog;
        let before = q.consts.max_p;
        q.on_timer();
        assert_eq!(q.consts.max_p, before / 10 * 9);
        // Not adaptive: no change.
        let mut fixed: Red<crate::packet::PacketRef> =
            Red::new(&params(400_000, 30_000, 90_000), c_of(), 0, Rng::new(1));
        assert_eq!(fixed.next_timer_ns(), u64::MAX);
        let before = fixed.consts.max_p;
        fixed.on_timer();
        assert_eq!(fixed.consts.max_p, before);
    }

    fn c_of() -> RedConsts {
        params(400_000, 30_000, 90_000)
            .consts(100, 10_000_000)
            .unwrap()
    }
}
