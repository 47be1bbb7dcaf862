//! CUBIC as Linux implements it (`net/ipv4/tcp_cubic.c`, "v2.3", with HyStart).
//!
//! The arithmetic follows the kernel's integer code so that cwnd trajectories match Linux
//! where the inputs do: cwnd in packets, epoch and throttle in jiffies (`tp.hz`), K and t in
//! 1/1024 s (`BICTCP_HZ` = 10), `delay_min` in µs. See cca-spec section 3.
//!
//! Known differences from a kernel run, all deliberate:
//! - `cubic_root` uses a 64-entry table derived here from its defining formula
//!   (`cbrt(i << 18) - 1`). The kernel's table is the same formula refined by hand, so K can
//!   differ from Linux by a fraction of a percent (measured: mean 0.07 %, max 0.35 % from the
//!   exact cube root; `exact_cbrt = true` uses the f64 cube root instead).
//! - `hystart_ack_delay` (the TSO/GRO cushion of the ACK-train threshold) is 0: the simulator
//!   has no GSO.
//! - `CA_EVENT_TX_START` measures idleness from `tp.delivered_mstamp_ns` (the last ACK) because
//!   [`TcpSock`] has no `lsndtime` (the last send); see [`Cubic::cwnd_event`].

use serde::{Deserialize, Serialize};

use crate::{AckSample, CaEvent, CaState, CongestionControl, TcpSock};

/// `BICTCP_BETA_SCALE`: beta is in 1/1024.
const BETA_SCALE: u32 = 1024;
/// `BICTCP_HZ`: K and t are in 1/2^10 s.
const BICTCP_HZ: u32 = 10;
/// `HYSTART_ACK_TRAIN` bit of `hystart_detect`.
pub const HYSTART_ACK_TRAIN: u32 = 0x1;
/// `HYSTART_DELAY` bit of `hystart_detect`.
pub const HYSTART_DELAY: u32 = 0x2;
/// `HYSTART_MIN_SAMPLES`: RTT samples per round before the delay test runs.
const HYSTART_MIN_SAMPLES: u8 = 8;
/// `HYSTART_DELAY_MIN` / `HYSTART_DELAY_MAX`, µs: clamp of the delay-increase threshold.
const HYSTART_DELAY_MIN_US: u32 = 4_000;
const HYSTART_DELAY_MAX_US: u32 = 16_000;

/// Module parameters of `tcp_cubic.c` (`/sys/module/tcp_cubic/parameters/*`), defaults as in
/// Linux, plus `exact_cbrt`, which is ours.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CubicParams {
    /// `beta`: multiplicative decrease, in 1/1024 (717 = 0.7002). After a loss,
    /// `ssthresh = max(cwnd * beta / 1024, 2)` packets. Range 0..=1023.
    pub beta: u32,
    /// `bic_scale`: the cubic coefficient C in 1/10240 packets/s³ (C = bic_scale * 10 / 1024;
    /// 41 gives C = 0.4004). Range 1..=100000.
    pub bic_scale: u32,
    /// `fast_convergence`: on a loss below the previous Wmax, remember only
    /// `cwnd * (1024 + beta) / 2048` as Wmax, releasing bandwidth to newer flows.
    pub fast_convergence: bool,
    /// `tcp_friendliness`: never grow slower than the Reno-emulation window (AIMD with the
    /// same beta: 3(1 - beta)/(1 + beta) packets per RTT).
    pub tcp_friendliness: bool,
    /// `initial_ssthresh`, packets: initial `snd_ssthresh`, used only when `hystart` is off;
    /// 0 keeps the substrate's value (`TCP_INFINITE_SSTHRESH`).
    pub initial_ssthresh: u32,
    /// `hystart`: hybrid slow start (leave slow start before the first loss).
    pub hystart: bool,
    /// `hystart_detect`: bit set of HyStart detectors, 1 = ACK train, 2 = delay increase,
    /// 3 = both. Range 0..=3.
    pub hystart_detect: u32,
    /// `hystart_low_window`, packets: HyStart runs only when cwnd is at least this.
    pub hystart_low_window: u32,
    /// `hystart_ack_delta_us`, µs: largest ACK spacing that still continues an ACK train.
    /// Range 0..=2^31-1.
    pub hystart_ack_delta_us: u32,
    /// Not in Linux. false: K from Linux's `cubic_root` scheme (6-bit table and one
    /// Newton-Raphson step, about 0.1 % error); true: K = round(cbrt(x)) in f64.
    pub exact_cbrt: bool,
}

impl Default for CubicParams {
    fn default() -> Self {
        CubicParams {
            beta: 717,
            bic_scale: 41,
            fast_convergence: true,
            tcp_friendliness: true,
            initial_ssthresh: 0,
            hystart: true,
            hystart_detect: HYSTART_ACK_TRAIN | HYSTART_DELAY,
            hystart_low_window: 16,
            hystart_ack_delta_us: 2000,
            exact_cbrt: false,
        }
    }
}

impl CubicParams {
    /// Range checks that serde cannot express. The message names the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.beta >= BETA_SCALE {
            return Err(format!(
                "cubic parameter `beta` must be in 0..=1023 (1/1024 units), got {}",
                self.beta
            ));
        }
        if !(1..=100_000).contains(&self.bic_scale) {
            return Err(format!(
                "cubic parameter `bic_scale` must be in 1..=100000, got {}",
                self.bic_scale
            ));
        }
        if self.hystart_detect > (HYSTART_ACK_TRAIN | HYSTART_DELAY) {
            return Err(format!(
                "cubic parameter `hystart_detect` must be in 0..=3 (1 = ack train, 2 = delay), got {}",
                self.hystart_detect
            ));
        }
        if self.hystart_ack_delta_us > i32::MAX as u32 {
            return Err(format!(
                "cubic parameter `hystart_ack_delta_us` must be at most {}, got {}",
                i32::MAX,
                self.hystart_ack_delta_us
            ));
        }
        Ok(())
    }
}

/// Floor of the cube root of `n`, for building [`CBRT_TABLE`] at compile time.
const fn icbrt(n: u32) -> u32 {
    let mut r = 0u32;
    while (r + 1) * (r + 1) * (r + 1) <= n {
        r += 1;
    }
    r
}

/// Seed table of `cubic_root`: entry i is `cbrt(i << 18) - 1` = 64·cbrt(i) − 1, the cube root
/// of a 6-bit mantissa with 6 fractional bits. Built from the formula; the kernel's table
/// starts from the same formula but was then tuned by hand.
const CBRT_TABLE: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut i = 1;
    while i < 64 {
        t[i] = (icbrt((i as u32) << 18) - 1) as u8;
        i += 1;
    }
    t
};

/// Cube root in the manner of Linux `cubic_root` (tcp_cubic.c): a table seed from the six
/// most significant bits, then one Newton-Raphson step, all in integers.
fn cubic_root_table(a: u64) -> u32 {
    // fls64: 1-based index of the highest set bit.
    let bits = 64 - a.leading_zeros();
    if bits < 7 {
        // a < 64: the table is the answer (rounded from 6 fractional bits).
        return (CBRT_TABLE[a as usize] as u32 + 35) >> 6;
    }
    // Split a into mantissa (6 significant bits) and exponent 3*e, with e ≈ bits/3 - 1
    // (84/256 ≈ 1/3), so the root is cbrt(mantissa) << e.
    let e = ((bits * 84) >> 8) - 1;
    let mantissa = (a >> (3 * e)) as usize;
    let x = ((CBRT_TABLE[mantissa] as u32 + 10) << e) >> 6;
    // Newton-Raphson for x^3 = a: x' = (2x + a/x^2)/3. As in the kernel, x^2 is taken as
    // x(x-1) and the division by 3 as *341/1024; u32 arithmetic wraps as in C.
    let q = (a / (x as u64 * (x as u64 - 1))) as u32;
    let x = x.wrapping_mul(2).wrapping_add(q);
    x.wrapping_mul(341) >> 10
}

/// Exact cube root, rounded to the nearest integer (`exact_cbrt = true`).
fn cubic_root_exact(a: u64) -> u32 {
    (a as f64).cbrt().round() as u32
}

/// Counters for the run summary. Not part of Linux's `struct bictcp` (the kernel keeps them
/// as MIB counters), so they survive `bictcp_reset`.
#[derive(Clone, Debug, Default)]
struct Stats {
    /// HyStart exits (`found` 0 -> 1).
    hystart_exits: u64,
    /// `LINUX_MIB_TCPHYSTARTTRAINDETECT`.
    hystart_train: u64,
    /// `LINUX_MIB_TCPHYSTARTDELAYDETECT`.
    hystart_delay: u64,
    /// cwnd at the last HyStart exit, packets.
    hystart_exit_cwnd: u32,
    /// Epochs started in `bictcp_update`.
    epochs: u64,
    /// `set_state(Loss)` resets (RTOs).
    loss_resets: u64,
}

/// CUBIC with HyStart. Field names and units follow Linux `struct bictcp`.
#[derive(Clone, Debug)]
pub struct Cubic {
    p: CubicParams,

    // --- scale factors precomputed in `cubictcp_register`
    /// `beta_scale` = 8(1024 + beta) / 3 / (1024 - beta): Reno-emulation ACK scale (15).
    beta_scale: u32,
    /// `cube_rtt_scale` = bic_scale * 10 (410): C in 1/1024 packets/s³.
    cube_rtt_scale: u32,
    /// `cube_factor` = 2^40 / cube_rtt_scale: K = cbrt(cube_factor * (Wmax - cwnd)), 1/1024 s.
    cube_factor: u64,

    // --- struct bictcp (zeroed by `bictcp_reset`)
    /// Packets acked per +1 cwnd (`cnt`).
    cnt: u32,
    /// Wmax, packets (`last_max_cwnd`).
    last_max_cwnd: u32,
    /// cwnd at the last cnt computation (`last_cwnd`).
    last_cwnd: u32,
    /// jiffies of the last cnt computation (`last_time`).
    last_time: u32,
    /// cwnd at t = K, packets (`bic_origin_point`).
    bic_origin_point: u32,
    /// Time from epoch start to the origin, 1/1024 s (`bic_K`).
    bic_k: u32,
    /// Minimum RTT, µs (`delay_min`); 0 = no sample.
    delay_min: u32,
    /// jiffies when the epoch began (`epoch_start`); 0 = no epoch.
    epoch_start: u32,
    /// Packets acked in this epoch, for Reno emulation (`ack_cnt`).
    ack_cnt: u32,
    /// Reno-emulation window, packets (`tcp_cwnd`).
    tcp_cwnd: u32,

    // --- HyStart (set by `bictcp_hystart_reset`; `found` also by `bictcp_reset`)
    /// RTT samples in this round, up to `HYSTART_MIN_SAMPLES` (`sample_cnt`).
    sample_cnt: u8,
    /// HyStart has found the exit point (`found`).
    found: bool,
    /// µs clock (u32, as `bictcp_clock_us`) when the round began (`round_start`).
    round_start: u32,
    /// The round ends once `snd_una` passes this segment (`end_seq`).
    end_seq: u64,
    /// µs clock of the last ACK in the current train (`last_ack`).
    last_ack: u32,
    /// Minimum RTT of this round, µs (`curr_rtt`).
    curr_rtt: u32,

    stats: Stats,
}

/// `tcp_jiffies32`.
fn jiffies32(tp: &TcpSock) -> u32 {
    tp.jiffies() as u32
}

/// `bictcp_clock_us`: the µs clock truncated to 32 bits as the kernel stores it.
fn clock_us(tp: &TcpSock) -> u32 {
    tp.now_us() as u32
}

/// Linux `after(seq1, seq2)` on u32 timestamps: seq1 is later than seq2.
fn after32(seq1: u32, seq2: u32) -> bool {
    (seq2.wrapping_sub(seq1) as i32) < 0
}

impl Cubic {
    /// Parameters must have passed [`CubicParams::validate`].
    pub fn new(params: &CubicParams) -> Self {
        debug_assert!(params.validate().is_ok(), "{:?}", params.validate());
        // cubictcp_register: scale factors from the read-only module parameters.
        let beta = params.beta;
        let beta_scale = 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta);
        let cube_rtt_scale = params.bic_scale * 10;
        let cube_factor = (1u64 << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale as u64;
        Cubic {
            p: params.clone(),
            beta_scale,
            cube_rtt_scale,
            cube_factor,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            bic_origin_point: 0,
            bic_k: 0,
            delay_min: 0,
            epoch_start: 0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            sample_cnt: 0,
            found: false,
            round_start: 0,
            end_seq: 0,
            last_ack: 0,
            curr_rtt: 0,
            stats: Stats::default(),
        }
    }

    pub fn params(&self) -> &CubicParams {
        &self.p
    }

    /// `bictcp_reset`: clear the cubic state and `found`; HyStart round fields are left alone.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.bic_origin_point = 0;
        self.bic_k = 0;
        self.delay_min = 0;
        self.epoch_start = 0;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.found = false;
    }

    /// `bictcp_hystart_reset`: start a HyStart round at the current `snd_nxt`.
    fn hystart_reset(&mut self, tp: &TcpSock) {
        let now = clock_us(tp);
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = tp.snd_nxt;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    fn cubic_root(&self, a: u64) -> u32 {
        if self.p.exact_cbrt {
            cubic_root_exact(a)
        } else {
            cubic_root_table(a)
        }
    }

    /// The cubic function of `bictcp_update`: W(t) = origin ± C·|t − K|³ packets, t in
    /// 1/1024 s since the epoch start. u64 products wrap as in C (no overflow below about
    /// a million packets).
    fn cubic_target(&self, t: u64) -> u32 {
        let k = self.bic_k as u64;
        let offs = t.abs_diff(k);
        let delta = ((self.cube_rtt_scale as u64)
            .wrapping_mul(offs)
            .wrapping_mul(offs)
            .wrapping_mul(offs)
            >> (10 + 3 * BICTCP_HZ)) as u32;
        if t < k {
            self.bic_origin_point.wrapping_sub(delta)
        } else {
            self.bic_origin_point.wrapping_add(delta)
        }
    }

    /// `bictcp_update`: recompute `cnt`, the packets to ACK per +1 cwnd.
    fn update(&mut self, tp: &TcpSock, cwnd: u32, acked: u32) {
        let now = jiffies32(tp);
        let hz = tp.hz;

        self.ack_cnt = self.ack_cnt.wrapping_add(acked);

        // Same cwnd and less than HZ/32 jiffies since the last computation: keep cnt.
        if self.last_cwnd == cwnd && (now.wrapping_sub(self.last_time) as i32) <= (hz / 32) as i32 {
            return;
        }

        // At most one cubic computation per jiffy; cwnd reductions clear epoch_start, which
        // forces one.
        if !(self.epoch_start != 0 && now == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = now;

            if self.epoch_start == 0 {
                self.epoch_start = now;
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                self.stats.epochs += 1;
                if self.last_max_cwnd <= cwnd {
                    // At or above the old maximum: convex growth from here.
                    self.bic_k = 0;
                    self.bic_origin_point = cwnd;
                } else {
                    // K = cbrt((Wmax - cwnd) / C), in 1/1024 s.
                    let a = self
                        .cube_factor
                        .wrapping_mul((self.last_max_cwnd - cwnd) as u64);
                    self.bic_k = self.cubic_root(a);
                    self.bic_origin_point = self.last_max_cwnd;
                }
            }

            // t = time since the epoch start plus delay_min (where cwnd should be one RTT
            // from now), converted from jiffies to 1/1024 s. The (s32) difference is widened
            // with its sign, as in the kernel.
            let mut t = now.wrapping_sub(self.epoch_start) as i32 as i64 as u64;
            t = t.wrapping_add(tp.usecs_to_jiffies(self.delay_min as u64));
            t = (t << BICTCP_HZ) / hz as u64;

            let target = self.cubic_target(t);
            self.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                // At or above the curve: almost no growth.
                cwnd.wrapping_mul(100)
            };

            // No Wmax yet (before the first loss, e.g. after a HyStart exit): do not crawl,
            // grow at least 5% per RTT.
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }

        // TCP friendliness: emulate Reno with the same beta. tcp_cwnd gains 1 per
        // cwnd * beta_scale / 8 packets acked, i.e. 3(1 - beta)/(1 + beta) packets per RTT.
        if self.p.tcp_friendliness {
            let per_pkt = cwnd.wrapping_mul(self.beta_scale) >> 3;
            // per_pkt is 0 only for cwnd 0; the kernel would spin, we stop.
            if per_pkt > 0 {
                while self.ack_cnt > per_pkt {
                    self.ack_cnt -= per_pkt;
                    self.tcp_cwnd += 1;
                }
            }
            if self.tcp_cwnd > cwnd {
                // Reno would be ahead: grow at least as fast as it.
                let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
                self.cnt = self.cnt.min(max_cnt);
            }
        }

        // At most +1 per 2 packets acked (x1.5 per RTT).
        self.cnt = self.cnt.max(2);
        debug_assert!(self.cnt >= 2, "CUBIC cnt {} < 2", self.cnt);
    }

    /// `hystart_ack_delay`: the TSO/GRO cushion added to the ACK-train threshold,
    /// min(1 ms, 4 * gso_max_size / pacing_rate) in Linux. 0 here: no GSO in the simulator.
    fn hystart_ack_delay(&self, _tp: &TcpSock) -> u32 {
        0
    }

    /// `hystart_update`: look for the slow-start exit point. `delay` is the RTT sample, µs.
    fn hystart_update(&mut self, tp: &mut TcpSock, delay: u32) {
        if tp.snd_una > self.end_seq {
            self.hystart_reset(tp);
        }

        // Too small a window to judge.
        if tp.snd_cwnd < self.p.hystart_low_window {
            return;
        }

        let was_found = self.found;

        if self.p.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now = clock_us(tp);
            // ACK train: ACKs no more than hystart_ack_delta_us apart, counted from the round
            // start. It fires once the train is longer than delay_min (halved if the sender
            // is not paced: ACKs of a burst return within RTT/2 when cwnd ~ BDP/2 already).
            if (now.wrapping_sub(self.last_ack) as i32) <= self.p.hystart_ack_delta_us as i32 {
                self.last_ack = now;
                let mut threshold = self.delay_min.wrapping_add(self.hystart_ack_delay(tp));
                if !tp.is_paced {
                    threshold >>= 1;
                }
                // Unsigned comparison, as the kernel's (s32) vs u32 promotes to u32.
                if now.wrapping_sub(self.round_start) > threshold {
                    self.found = true;
                    self.stats.hystart_train += 1;
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
            }
        }

        if self.p.hystart_detect & HYSTART_DELAY != 0 {
            // Delay increase: the minimum RTT of this round, once HYSTART_MIN_SAMPLES samples
            // were seen, exceeds delay_min by clamp(delay_min/8, 4 ms, 16 ms).
            self.curr_rtt = self.curr_rtt.min(delay);
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else {
                let margin =
                    (self.delay_min >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
                if self.curr_rtt > self.delay_min.wrapping_add(margin) {
                    self.found = true;
                    self.stats.hystart_delay += 1;
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
            }
        }

        if self.found && !was_found {
            self.stats.hystart_exits += 1;
            self.stats.hystart_exit_cwnd = tp.snd_cwnd;
        }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    /// `cubictcp_init`.
    fn init(&mut self, tp: &mut TcpSock) {
        self.reset();
        if self.p.hystart {
            self.hystart_reset(tp);
        }
        if !self.p.hystart && self.p.initial_ssthresh != 0 {
            tp.snd_ssthresh = self.p.initial_ssthresh;
        }
    }

    /// `cubictcp_recalc_ssthresh`: end the epoch, remember Wmax (with fast convergence) and
    /// return `max(cwnd * beta / 1024, 2)`.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        let cwnd = tp.snd_cwnd;
        self.epoch_start = 0;
        if cwnd < self.last_max_cwnd && self.p.fast_convergence {
            // Losing below the last maximum: another flow is taking bandwidth. Aim lower.
            self.last_max_cwnd = cwnd.wrapping_mul(BETA_SCALE + self.p.beta) / (2 * BETA_SCALE);
        } else {
            self.last_max_cwnd = cwnd;
        }
        (cwnd.wrapping_mul(self.p.beta) / BETA_SCALE).max(2)
    }

    /// `cubictcp_cong_avoid`: slow start below ssthresh, then +1 per `cnt` packets acked.
    fn cong_avoid(&mut self, tp: &mut TcpSock, _ack: u64, mut acked: u32) {
        if !tp.is_cwnd_limited() {
            return;
        }
        if tp.in_slow_start() {
            acked = tp.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.update(tp, tp.snd_cwnd, acked);
        tp.cong_avoid_ai(self.cnt, acked);
    }

    /// `cubictcp_state`: an RTO (Loss) forgets everything, Wmax and delay_min included, and
    /// re-arms HyStart.
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.reset();
            self.hystart_reset(tp);
            self.stats.loss_resets += 1;
        }
    }

    /// `cubictcp_cwnd_event(CA_EVENT_TX_START)`: after application idleness, shift the epoch
    /// by the idle time so that the curve does not jump ahead.
    ///
    /// Linux measures idleness from `tp->lsndtime` (jiffies of the last send). [`TcpSock`]
    /// has no such field, so the last delivery (`delivered_mstamp_ns`) stands in: TX_START
    /// comes with nothing in flight, so the last ACK is later than the last send by up to
    /// one RTT and the shift is shorter than Linux's by that much.
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        if event != CaEvent::TxStart {
            return;
        }
        let now = jiffies32(tp);
        let ns_per_jiffy = 1_000_000_000 / tp.hz as u64;
        let last_activity = (tp.delivered_mstamp_ns / ns_per_jiffy) as u32;
        let delta = now.wrapping_sub(last_activity) as i32;
        if self.epoch_start != 0 && delta > 0 {
            self.epoch_start = self.epoch_start.wrapping_add(delta as u32);
            if after32(self.epoch_start, now) {
                self.epoch_start = now;
            }
        }
    }

    /// `cubictcp_acked`: track delay_min and run HyStart.
    fn pkts_acked(&mut self, tp: &mut TcpSock, sample: &AckSample) {
        // No RTT sample (e.g. only retransmitted packets acked).
        if sample.rtt_us < 0 {
            return;
        }
        // Discard samples for a second after an epoch starts (right after recovery).
        if self.epoch_start != 0
            && (jiffies32(tp).wrapping_sub(self.epoch_start) as i32) < tp.hz as i32
        {
            return;
        }
        let delay = (sample.rtt_us as u32).max(1);
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.found && tp.in_slow_start() && self.p.hystart {
            self.hystart_update(tp, delay);
        }
    }

    /// `tcp_reno_undo_cwnd`, as CUBIC registers it.
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tp.snd_cwnd.max(tp.prior_cwnd)
    }

    fn sample_metrics(&self, _tp: &TcpSock, out: &mut Vec<(&'static str, f64)>) {
        out.push(("cubic_wmax_pkts", self.last_max_cwnd as f64));
        out.push(("cubic_k_s", self.bic_k as f64 / 1024.0));
        out.push(("cubic_origin_pkts", self.bic_origin_point as f64));
        out.push(("cubic_delay_min_us", self.delay_min as f64));
        out.push(("cubic_cnt_pkts", self.cnt as f64));
        out.push(("cubic_tcp_cwnd_pkts", self.tcp_cwnd as f64));
    }

    fn summary_counters(&self, _tp: &TcpSock, out: &mut Vec<(&'static str, f64)>) {
        out.push(("hystart_exits", self.stats.hystart_exits as f64));
        out.push(("hystart_train_exits", self.stats.hystart_train as f64));
        out.push(("hystart_delay_exits", self.stats.hystart_delay as f64));
        out.push((
            "hystart_exit_cwnd_pkts",
            self.stats.hystart_exit_cwnd as f64,
        ));
        out.push(("cubic_epochs", self.stats.epochs as f64));
        out.push(("cubic_loss_resets", self.stats.loss_resets as f64));
    }
}
