//! CUBIC as Linux implements it (`net/ipv4/tcp_cubic.c`, "v2.3", with HyStart).
//!
//! The arithmetic follows the kernel's integer code so that cwnd trajectories match Linux
//! where the inputs do: cwnd in packets, epoch and throttle in jiffies (`tp.hz`), K and t in
//! 1/1024 s (`BICTCP_HZ` = 10), `delay_min` in µs. See docs/reference.md section 3.
//!
//! Known differences from a kernel run, all deliberate:
//! - `cubic_root` uses a 64-entry table derived here from its defining formula
//!   (`cbrt(i << 18) - 1`). The kernel's table is the same formula refined by hand, so K can
//!   differ from Linux by a fraction of a percent (measured: mean 0.07 %, max 0.35 % from the
//!   exact cube root; `exact_cbrt = true` uses the f64 cube root instead).
//! - `hystart_ack_delay` (the GSO cushion of the ACK-train threshold) is computed as Linux
//!   does from the pacing rate the substrate maintains (`tcp_update_pacing_rate` runs for every
//!   loss-based flow, paced or not); `gso_ack_delay = false` sets it to 0 (a stack without GSO).
//!
//! `hystart_version = "linux-4.x"` runs the HyStart of Linux 4.13/4.15 instead (read in
//! 4.13.9 and 4.15.11 `tcp_cubic.c`; 5.6 rewrote it): a millisecond clock (`bictcp_clock`),
//! delays in 1/8 ms, the ACK train's threshold `delay_min / 2` (no GSO cushion, no pacing
//! test), the delay test on the minimum of the round's first 8 samples only, and the round
//! restarted in `bictcp_cong_avoid` (cwnd-limited, in slow start, `after(ack, end_seq)`).
//! The cubic curve keeps `delay_min` in µs (4.x adds `msecs_to_jiffies(delay_min >> 3)`, at
//! most one jiffy less).

use crate::params::ParamError;
use crate::registry::{self, Algorithm, Family};
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
/// 4.x `HYSTART_DELAY_MIN` / `HYSTART_DELAY_MAX`, in 1/8 ms (4 and 16 ms).
const HYSTART_DELAY_MIN_4X: u32 = 4 << 3;
const HYSTART_DELAY_MAX_4X: u32 = 16 << 3;

/// Which kernel's HyStart runs (`CubicParams::hystart_version`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum HystartVersion {
    /// Linux 5.6+ (µs clock, pacing-aware ACK train, running minimum).
    #[default]
    #[serde(rename = "linux-6.18")]
    Linux618,
    /// Linux 4.13/4.15 (ms clock, `delay_min / 2`, first 8 samples).
    #[serde(rename = "linux-4.x")]
    Linux4x,
}

crate::choice!(HystartVersion: HystartVersion::Linux618, HystartVersion::Linux4x);

crate::param_table! {
    /// Module parameters of `tcp_cubic.c` (`/sys/module/tcp_cubic/parameters/*`), defaults as in
    /// Linux, plus `exact_cbrt`, which is ours.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct CubicParams {
        /// `beta`: multiplicative decrease, in 1/1024 (717 = 0.7002). After a loss,
        /// `ssthresh = max(cwnd * beta / 1024, 2)` packets. Range 0..=1023.
        pub beta: u32 = 717, unit "1/1024";
        /// `bic_scale`: the cubic coefficient C in 1/10240 packets/s³ (C = bic_scale * 10 / 1024;
        /// 41 gives C = 0.4004). Range 1..=100000.
        pub bic_scale: u32 = 41, unit "10/1024 packets/s^3";
        /// `fast_convergence`: on a loss below the previous Wmax, remember only
        /// `cwnd * (1024 + beta) / 2048` as Wmax, releasing bandwidth to newer flows.
        pub fast_convergence: bool = true, unit "";
        /// `tcp_friendliness`: never grow slower than the Reno-emulation window (AIMD with the
        /// same beta: 3(1 - beta)/(1 + beta) packets per RTT).
        pub tcp_friendliness: bool = true, unit "";
        /// `initial_ssthresh`, packets: initial `snd_ssthresh`, used only when `hystart` is off;
        /// 0 keeps the substrate's value (`TCP_INFINITE_SSTHRESH`).
        pub initial_ssthresh: u32 = 0, unit "packets";
        /// `hystart`: hybrid slow start (leave slow start before the first loss).
        pub hystart: bool = true, unit "";
        /// `hystart_detect`: bit set of HyStart detectors, 1 = ACK train, 2 = delay increase,
        /// 3 = both. Range 0..=3.
        pub hystart_detect: u32 = HYSTART_ACK_TRAIN | HYSTART_DELAY, unit "bit set";
        /// `hystart_low_window`, packets: HyStart runs only when cwnd is at least this.
        pub hystart_low_window: u32 = 16, unit "packets";
        /// `hystart_ack_delta_us`, µs: largest ACK spacing that still continues an ACK train.
        /// Range 0..=2^31-1.
        pub hystart_ack_delta_us: u32 = 2000, unit "us";
        /// Not in Linux. false: K from Linux's `cubic_root` scheme (6-bit table and one
        /// Newton-Raphson step, about 0.1 % error); true: K = round(cbrt(x)) in f64.
        pub exact_cbrt: bool = false, unit "";
        /// Include Linux's `hystart_ack_delay` term, min(1 ms, 4 x 64 KiB / pacing rate), in
        /// the ACK-train threshold (true = Linux). False models a stack without GSO. The 4.x
        /// HyStart has no such term.
        pub gso_ack_delay: bool = true, unit "";
        /// Which kernel's HyStart (`linux-6.18` or `linux-4.x`, the 4.13/4.15 one: ms clock,
        /// ACK-train threshold delay_min/2, delay test on the first 8 samples of a round,
        /// rounds restarted in `bictcp_cong_avoid`).
        pub hystart_version: HystartVersion = HystartVersion::Linux618, unit "";
    }
}

/// CUBIC's entry in the registry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "cubic",
    summary: "CUBIC with HyStart as Linux implements it (net/ipv4/tcp_cubic.c): the window \
              grows as a cubic function of the time since the last loss, 0.7 x on a loss",
    family: Family::LossBased,
    linux_name: Some("cubic"),
    params: <CubicParams as crate::params::ParamTable>::params,
    normalize: |v| registry::to_table(&parse_checked(v)?),
    build: |v, _seed| Ok(Box::new(Cubic::new(&parse_checked(v)?))),
};

/// The table parsed and range-checked.
fn parse_checked(params: &serde_json::Value) -> Result<CubicParams, ParamError> {
    let p: CubicParams = registry::parse(params)?;
    p.validate()?;
    Ok(p)
}

impl CubicParams {
    /// Range checks that serde cannot express.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.beta >= BETA_SCALE {
            return Err(ParamError::new(
                "beta",
                format!("must be in 0..=1023 (1/1024 units), got {}", self.beta),
            ));
        }
        if !(1..=100_000).contains(&self.bic_scale) {
            return Err(ParamError::new(
                "bic_scale",
                format!("must be in 1..=100000, got {}", self.bic_scale),
            ));
        }
        if self.hystart_detect > (HYSTART_ACK_TRAIN | HYSTART_DELAY) {
            return Err(ParamError::new(
                "hystart_detect",
                format!(
                    "must be in 0..=3 (1 = ack train, 2 = delay), got {}",
                    self.hystart_detect
                ),
            ));
        }
        if self.hystart_ack_delta_us > i32::MAX as u32 {
            return Err(ParamError::new(
                "hystart_ack_delta_us",
                format!(
                    "must be at most {}, got {}",
                    i32::MAX,
                    self.hystart_ack_delta_us
                ),
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
    cubic_hystart_exit_count: u64,
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
    /// µs clock (u32, as `bictcp_clock_us`; 4.x: the ms `bictcp_clock`) when the round
    /// began (`round_start`).
    round_start: u32,
    /// The round ends once `snd_una` passes this segment (`end_seq`).
    end_seq: u64,
    /// µs clock (4.x: ms) of the last ACK in the current train (`last_ack`).
    last_ack: u32,
    /// Minimum RTT of this round, µs (`curr_rtt`; 4.x: of its first 8 samples, 1/8 ms).
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

/// 4.x `bictcp_clock`: milliseconds (`ktime_get_real` below HZ 1000, else
/// `jiffies_to_msecs`; both whole ms of the same clock here).
fn clock_ms(tp: &TcpSock) -> u32 {
    (tp.now_ns / 1_000_000) as u32
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

    /// The parameters this instance runs with (defaults filled in).
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
        let now = match self.p.hystart_version {
            HystartVersion::Linux618 => clock_us(tp),
            HystartVersion::Linux4x => clock_ms(tp),
        };
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

        // Same cwnd and at most HZ/32 jiffies since the last computation: keep cnt (the
        // acked packets still count for Reno emulation).
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
            let acked_per_inc = cwnd.wrapping_mul(self.beta_scale) >> 3;
            // 0 only for cwnd 0, where the kernel's loop would not end.
            if acked_per_inc > 0 {
                while self.ack_cnt > acked_per_inc {
                    self.ack_cnt -= acked_per_inc;
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

    /// `hystart_ack_delay`: the GSO cushion added to the ACK-train threshold,
    /// min(1 ms, 4 * GSO_LEGACY_MAX_SIZE / sk_pacing_rate) µs; 0 while the rate is unset.
    fn hystart_ack_delay(&self, tp: &TcpSock) -> u32 {
        const GSO_LEGACY_MAX_SIZE: u64 = 65_536;
        let rate = tp.pacing_rate_bytes_per_sec;
        if !self.p.gso_ack_delay || rate == 0 || rate == u64::MAX {
            return 0;
        }
        (GSO_LEGACY_MAX_SIZE * 4 * 1_000_000 / rate).min(1_000) as u32
    }

    /// 4.x `hystart_update` for an RTT sample of `delay` 1/8 ms (the caller checked slow
    /// start and `hystart_low_window`; rounds restart in `cong_avoid`).
    fn hystart_update_4x(&mut self, tp: &mut TcpSock, delay: u32) {
        // delay_min in 4.x's unit: (rtt_us << 3) / USEC_PER_MSEC, at least 1.
        let delay_min = ((self.delay_min as u64 * 8 / 1_000) as u32).max(1);
        if self.p.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now = clock_ms(tp);
            // ACKs no more than hystart_ack_delta ms apart; the train fires past
            // delay_min / 2 (`delay_min >> 4` in 1/8 ms).
            let delta_ms = (self.p.hystart_ack_delta_us / 1_000) as i32;
            if (now.wrapping_sub(self.last_ack) as i32) <= delta_ms {
                self.last_ack = now;
                if now.wrapping_sub(self.round_start) > delay_min >> 4 {
                    self.found = true;
                    self.stats.hystart_train += 1;
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
            }
        }
        if self.p.hystart_detect & HYSTART_DELAY != 0 {
            // The minimum of the round's first HYSTART_MIN_SAMPLES samples, then tested
            // on every later sample of the round.
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.curr_rtt = self.curr_rtt.min(delay);
                self.sample_cnt += 1;
            } else {
                let margin = (delay_min >> 3).clamp(HYSTART_DELAY_MIN_4X, HYSTART_DELAY_MAX_4X);
                if self.curr_rtt > delay_min + margin {
                    self.found = true;
                    self.stats.hystart_delay += 1;
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
            }
        }
        if self.found {
            self.stats.cubic_hystart_exit_count += 1;
            self.stats.hystart_exit_cwnd = tp.snd_cwnd;
        }
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
            self.stats.cubic_hystart_exit_count += 1;
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
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, mut acked: u32) {
        if !tp.is_cwnd_limited() {
            return;
        }
        if tp.in_slow_start() {
            // 4.x `bictcp_cong_avoid`: a HyStart round ends once `ack` passes `end_seq`.
            if self.p.hystart_version == HystartVersion::Linux4x
                && self.p.hystart
                && ack > self.end_seq
            {
                self.hystart_reset(tp);
            }
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
    /// Idleness is measured from `tp->lsndtime` (jiffies of the last send).
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        if event != CaEvent::TxStart {
            return;
        }
        let now = jiffies32(tp);
        let last_activity = tp.ns_to_jiffies(tp.lsndtime_ns) as u32;
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
        if self.p.hystart_version == HystartVersion::Linux4x {
            // 4.x bictcp_acked: delays in 1/8 ms, the low-window test here.
            let delay_8 = ((sample.rtt_us as u64 * 8 / 1_000) as u32).max(1);
            if !self.found
                && self.p.hystart
                && tp.in_slow_start()
                && tp.snd_cwnd >= self.p.hystart_low_window
            {
                self.hystart_update_4x(tp, delay_8);
            }
            return;
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
        out.push((
            "cubic_hystart_exit_count",
            self.stats.cubic_hystart_exit_count as f64,
        ));
        out.push((
            "cubic_hystart_train_exit_count",
            self.stats.hystart_train as f64,
        ));
        out.push((
            "cubic_hystart_delay_exit_count",
            self.stats.hystart_delay as f64,
        ));
        out.push((
            "cubic_hystart_exit_cwnd_pkts",
            self.stats.hystart_exit_cwnd as f64,
        ));
        out.push(("cubic_epoch_count", self.stats.epochs as f64));
        out.push(("cubic_loss_reset_count", self.stats.loss_resets as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sock::TCP_INFINITE_SSTHRESH;
    use crate::testing::path::{Event, Path};
    use crate::testing::TestSender;

    const MS: u64 = 1_000_000;
    const SEC: u64 = 1_000_000_000;

    fn metric(cc: &Cubic, tp: &TcpSock, name: &str) -> f64 {
        let mut out = Vec::new();
        cc.sample_metrics(tp, &mut out);
        out.iter().find(|(n, _)| *n == name).unwrap().1
    }

    fn counter(cc: &Cubic, tp: &TcpSock, name: &str) -> f64 {
        let mut out = Vec::new();
        cc.summary_counters(tp, &mut out);
        out.iter().find(|(n, _)| *n == name).unwrap().1
    }

    fn no_hystart() -> CubicParams {
        CubicParams {
            hystart: false,
            ..CubicParams::default()
        }
    }

    /// A bulk flow over one FIFO bottleneck with an unlimited buffer: propagation `rtt`
    /// (half before the bottleneck), `ser` serialization per packet, one ACK per packet;
    /// the sender is the common test driver (`crate::testing`), so the hooks run in the
    /// order of `tcp_ack`. Derefs to the driver (`sim.cc`, `sim.tp`).
    struct Sim(Path<Cubic>);

    impl std::ops::Deref for Sim {
        type Target = TestSender<Cubic>;
        fn deref(&self) -> &Self::Target {
            self.0.s()
        }
    }

    impl std::ops::DerefMut for Sim {
        fn deref_mut(&mut self) -> &mut Self::Target {
            self.0.s_mut()
        }
    }

    impl Sim {
        fn new(params: CubicParams, hz: u32, rtt: u64, ser: u64) -> Self {
            let tp = TcpSock::new(1448, 10, hz);
            Sim(Path::single(
                TestSender::new(Cubic::new(&params), tp),
                rtt,
                ser,
                None,
            ))
        }

        /// Transmit while the window allows.
        fn send(&mut self) {
            self.0.send();
        }

        /// Process the next ACK.
        fn ack(&mut self) {
            let ev = self.0.step(u64::MAX);
            assert!(matches!(ev, Some((0, Event::Ack(_)))), "{ev:?}");
        }

        /// Process every ACK that arrives up to `t` (ns), then set the clock to `t`.
        fn run_until(&mut self, t: u64) {
            self.0.run_until(t);
        }

        /// Process ACKs until `stop` holds after one, or until `limit` (ns). True if stopped.
        fn run_while_not(&mut self, limit: u64, stop: impl Fn(&Sim) -> bool) -> bool {
            while let Some((_, ev)) = self.0.step(limit) {
                if matches!(ev, Event::Ack(_)) && stop(self) {
                    return true;
                }
            }
            false
        }

        /// Fast recovery as the substrate does it (reference 1.5-1.6), collapsed to its end
        /// state: ssthresh from the module, then cwnd = ssthresh on exit. Returns ssthresh.
        fn fast_recovery(&mut self) -> u32 {
            self.enter_recovery();
            let ssthresh = self.tp.snd_ssthresh;
            self.exit_recovery();
            ssthresh
        }

        /// A loss that turns out spurious: recovery starts, then undo restores cwnd
        /// (`undo_cwnd`) and the old ssthresh. CUBIC keeps the Wmax it set.
        fn spurious_recovery_undone(&mut self) {
            self.enter_recovery();
            self.undo();
        }
    }

    // ---------------------------------------------------------------- cube root

    #[test]
    fn cbrt_table_follows_its_formula() {
        // 64·cbrt(i) − 1 at perfect cubes i = 1, 8, 27.
        assert_eq!(CBRT_TABLE[1], 63);
        assert_eq!(CBRT_TABLE[8], 127);
        assert_eq!(CBRT_TABLE[27], 191);
        assert!(CBRT_TABLE.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn cubic_root_of_small_arguments_rounds_up_from_0_47() {
        // a < 64 is answered from the table as (v + 35) >> 6. CUBIC never gets there
        // (cube_factor >= 2^40 / 10^6), but the scheme is pinned: cbrt(42) = 3.476 -> 4.
        for (a, want) in [
            (0, 0),
            (1, 1),
            (7, 2),
            (8, 2),
            (15, 2),
            (26, 3),
            (42, 4),
            (63, 4),
        ] {
            assert_eq!(cubic_root_table(a), want, "cbrt({a})");
        }
    }

    #[test]
    fn cubic_root_table_is_within_half_a_percent_of_exact() {
        for a in 0u64..64 {
            let got = cubic_root_table(a) as f64;
            assert!((got - (a as f64).cbrt()).abs() <= 0.55, "a={a} got {got}");
        }
        // Arguments CUBIC produces: cube_factor * (Wmax - cwnd) for 1..1e6 packets.
        let cube_factor = (1u64 << 40) / 410;
        let (mut sum, mut n, mut worst) = (0.0, 0.0, 0.0f64);
        for d in (1u64..=1_000_000).step_by(7).chain([1_000_000]) {
            let a = cube_factor * d;
            let exact = (a as f64).cbrt();
            let err = (cubic_root_table(a) as f64 - exact).abs() / exact;
            worst = worst.max(err);
            sum += err;
            n += 1.0;
            assert!(
                (cubic_root_exact(a) as f64 - exact).abs() <= 0.5,
                "exact_cbrt d={d}"
            );
        }
        assert!(worst < 0.005, "max relative error {worst}");
        assert!(sum / n < 0.001, "mean relative error {}", sum / n);
    }

    // ---------------------------------------------------------------- K and the curve

    /// Loss at cwnd `wmax` in congestion avoidance, then the first ACK after recovery.
    fn epoch_after_loss(wmax: u32, exact_cbrt: bool) -> (Cubic, TcpSock) {
        let mut cc = Cubic::new(&CubicParams {
            exact_cbrt,
            ..CubicParams::default()
        });
        let mut tp = TcpSock::new(1448, 10, 1000);
        cc.init(&mut tp);
        tp.is_cwnd_limited = true;
        tp.snd_cwnd = wmax;
        tp.snd_ssthresh = wmax;
        let ssthresh = cc.ssthresh(&mut tp);
        assert_eq!(ssthresh, (wmax * 717 / 1024).max(2));
        tp.snd_ssthresh = ssthresh;
        tp.snd_cwnd = ssthresh;
        tp.now_ns = 10 * SEC;
        cc.cong_avoid(&mut tp, 0, 1);
        (cc, tp)
    }

    #[test]
    fn k_matches_closed_form_for_wmax_100_and_1000() {
        // reference 8.3.1: K = cbrt((Wmax - 0.7 Wmax) / 0.4004) s.
        for exact in [false, true] {
            for (wmax, cwnd, k_s) in [(100, 70, 4.215), (1000, 700, 9.081)] {
                let (cc, tp) = epoch_after_loss(wmax, exact);
                assert_eq!(tp.snd_cwnd, cwnd);
                assert_eq!(metric(&cc, &tp, "cubic_wmax_pkts"), wmax as f64);
                assert_eq!(metric(&cc, &tp, "cubic_origin_pkts"), wmax as f64);
                let k = metric(&cc, &tp, "cubic_k_s");
                assert!(
                    (k - k_s).abs() / k_s < 0.005,
                    "exact={exact} Wmax={wmax}: K={k} s, want {k_s}"
                );
            }
        }
    }

    #[test]
    fn target_is_origin_at_k_and_cubic_around_it() {
        let (cc, _) = epoch_after_loss(1000, false);
        let k = cc.bic_k as u64;
        assert_eq!(cc.cubic_target(k), 1000);
        // C·1 s³ = 410/1024 = 0.4004 packets: below one packet, so the integer target stays.
        assert_eq!(cc.cubic_target(k + 1024), 1000);
        let one_second = (410u64 * 1024 * 1024 * 1024) as f64 / (1u64 << 40) as f64;
        assert!((one_second - 0.4004).abs() < 1e-4);
        // 2 s: 3.2 -> 3; 10 s: 400.4 -> 400; symmetric below the origin.
        assert_eq!(cc.cubic_target(k + 2 * 1024), 1003);
        assert_eq!(cc.cubic_target(k + 10 * 1024), 1400);
        assert_eq!(cc.cubic_target(k - 2 * 1024), 997);
        // At the epoch start the curve is back at the post-loss cwnd (700).
        let start = cc.cubic_target(0) as i64;
        assert!((start - 700).abs() <= 7, "W(0) = {start}");
    }

    #[test]
    fn cwnd_after_loss_climbs_the_concave_curve_to_wmax() {
        // Wmax 100, RTT 100 ms, no queue: cwnd(t) tracks W(t + delay_min) with
        // W(x) = 100 - 0.4004 (K - x)^3, K = 4.215 s; the plateau holds it near 100.
        for hz in [100, 250, 1000] {
            let mut sim = Sim::new(no_hystart(), hz, 100 * MS, 10_000);
            sim.tp.snd_cwnd = 100;
            sim.tp.snd_ssthresh = 100;
            sim.send();
            sim.ack();
            assert_eq!(sim.tp.snd_cwnd, 100);
            assert_eq!(sim.fast_recovery(), 70);
            sim.ack(); // first ACK after recovery: the epoch starts here
            let t0 = sim.tp.now_ns;
            let k = metric(&sim.cc, &sim.tp, "cubic_k_s");
            assert!((k - 4.215).abs() < 0.03, "hz {hz}: K {k}");
            let k_ns = (k * 1e9) as u64;
            let w = |x_s: f64| 100.0 - 0.4004 * (k - x_s).powi(3);

            let mut at = |t: u64| {
                sim.run_until(t0 + t);
                sim.tp.snd_cwnd as f64
            };
            let half = at(k_ns / 2);
            let want = w(k / 2.0 + 0.1);
            assert!(
                (half - want).abs() <= 2.0,
                "hz {hz}: cwnd {half} at K/2, W {want}"
            );
            let near = at(k_ns - 100 * MS);
            assert!((98.0..=101.0).contains(&near), "hz {hz}: cwnd {near} at K");
            let plateau = at(k_ns + 500 * MS);
            assert!(plateau <= 101.0, "hz {hz}: cwnd {plateau} at K + 0.5 s");
            let convex = at(k_ns + 3 * SEC);
            let want = 100.0 + 0.4004 * 3.1f64.powi(3);
            assert!(
                (convex - want).abs() <= 3.0,
                "hz {hz}: cwnd {convex} at K + 3 s, W {want}"
            );
        }
    }

    // ---------------------------------------------------------------- Reno emulation

    /// cwnd over one second of 10 ms RTTs after a spurious loss at cwnd 100 was undone,
    /// which leaves Wmax = cwnd = origin (K = 0): the cubic term adds < 0.5 packet.
    fn cwnd_growth_with_flat_cubic(tcp_friendliness: bool) -> (u32, u32) {
        let params = CubicParams {
            tcp_friendliness,
            ..no_hystart()
        };
        let mut sim = Sim::new(params, 1000, 10 * MS, 10_000);
        sim.tp.snd_cwnd = 100;
        sim.tp.snd_ssthresh = 100;
        sim.send();
        sim.ack();
        sim.spurious_recovery_undone();
        assert_eq!(sim.tp.snd_cwnd, 100);
        sim.ack();
        assert_eq!(metric(&sim.cc, &sim.tp, "cubic_k_s"), 0.0);
        assert_eq!(metric(&sim.cc, &sim.tp, "cubic_origin_pkts"), 100.0);
        let t0 = sim.tp.now_ns;
        sim.run_until(t0 + 200 * MS);
        let c20 = sim.tp.snd_cwnd;
        sim.run_until(t0 + SEC);
        (c20, sim.tp.snd_cwnd)
    }

    #[test]
    fn reno_emulation_adds_8_15ths_of_a_packet_per_rtt() {
        // reference 8.3.2: tcp_cwnd += 1 per floor(cwnd * 15 / 8) packets acked, i.e.
        // 3(1 - beta)/(1 + beta) = 0.533 packets per RTT; cwnd follows it.
        let (c20, c100) = cwnd_growth_with_flat_cubic(true);
        let per_rtt = (c100 - c20) as f64 / 80.0;
        assert!(
            (0.48..=0.58).contains(&per_rtt),
            "{c20} -> {c100}: {per_rtt}/RTT"
        );
        // Without it, only the flat cubic curve: almost nothing.
        let (_, c100) = cwnd_growth_with_flat_cubic(false);
        assert!(c100 <= 101, "cwnd {c100} without tcp_friendliness");
    }

    #[test]
    fn a_new_epoch_restarts_reno_emulation_at_cwnd() {
        let mut cc = Cubic::new(&CubicParams::default());
        let mut tp = TcpSock::new(1448, 10, 1000);
        cc.init(&mut tp);
        tp.is_cwnd_limited = true;
        tp.snd_cwnd = 100;
        tp.snd_ssthresh = 100;
        tp.now_ns = 10 * SEC;
        cc.cong_avoid(&mut tp, 0, 1);
        // Throttled calls (same cwnd, < HZ/32) still count acked packets: 1000 here.
        for _ in 0..10 {
            tp.now_ns += MS;
            tp.snd_cwnd_cnt = 0;
            cc.cong_avoid(&mut tp, 0, 100);
            tp.snd_cwnd = 100;
        }
        assert!(cc.ack_cnt >= 1000);
        tp.snd_ssthresh = cc.ssthresh(&mut tp);
        tp.snd_cwnd = tp.snd_ssthresh;
        tp.now_ns += MS;
        cc.cong_avoid(&mut tp, 0, 1);
        assert_eq!(metric(&cc, &tp, "cubic_tcp_cwnd_pkts"), 70.0);
        assert_eq!(cc.ack_cnt, 1);
    }

    // ---------------------------------------------------------------- loss response

    #[test]
    fn ssthresh_and_fast_convergence_match_closed_forms() {
        for fast_convergence in [true, false] {
            let mut cc = Cubic::new(&CubicParams {
                fast_convergence,
                ..CubicParams::default()
            });
            let mut tp = TcpSock::new(1448, 10, 1000);
            cc.init(&mut tp);
            // (cwnd at the loss, Wmax before it)
            for (cwnd, prev_wmax) in [(100, 0), (80, 100), (90, 68), (95, 90), (200, 95)] {
                assert_eq!(
                    cc.last_max_cwnd,
                    if fast_convergence {
                        prev_wmax
                    } else {
                        cc.last_max_cwnd
                    }
                );
                tp.snd_cwnd = cwnd;
                let before = cc.last_max_cwnd;
                let ssthresh = cc.ssthresh(&mut tp);
                assert_eq!(ssthresh, (cwnd * 717 / 1024).max(2));
                let want = if fast_convergence && cwnd < before {
                    cwnd * 1741 / 2048
                } else {
                    cwnd
                };
                assert_eq!(cc.last_max_cwnd, want, "fc={fast_convergence} cwnd={cwnd}");
            }
        }
        // Explicit values: 80 below Wmax 100 -> 68; ssthresh floor 2.
        let mut cc = Cubic::new(&CubicParams::default());
        let mut tp = TcpSock::new(1448, 10, 1000);
        tp.snd_cwnd = 100;
        cc.ssthresh(&mut tp);
        tp.snd_cwnd = 80;
        assert_eq!(cc.ssthresh(&mut tp), 56);
        assert_eq!(cc.last_max_cwnd, 68);
        tp.snd_cwnd = 2;
        assert_eq!(cc.ssthresh(&mut tp), 2);
        tp.snd_cwnd = 1;
        assert_eq!(cc.ssthresh(&mut tp), 2);
        // Another beta: 819/1024.
        let mut cc = Cubic::new(&CubicParams {
            beta: 819,
            ..CubicParams::default()
        });
        tp.snd_cwnd = 100;
        assert_eq!(cc.ssthresh(&mut tp), 79);
        tp.snd_cwnd = 50;
        cc.ssthresh(&mut tp);
        assert_eq!(cc.last_max_cwnd, 50 * (1024 + 819) / 2048);
    }

    #[test]
    fn undo_restores_the_larger_of_cwnd_and_prior_cwnd() {
        let mut cc = Cubic::new(&CubicParams::default());
        let mut tp = TcpSock::new(1448, 10, 1000);
        tp.snd_cwnd = 70;
        tp.prior_cwnd = 100;
        assert_eq!(cc.undo_cwnd(&mut tp), 100);
        tp.snd_cwnd = 120;
        assert_eq!(cc.undo_cwnd(&mut tp), 120);
    }

    // ---------------------------------------------------------------- cnt bounds

    #[test]
    fn without_wmax_growth_is_clamped_to_5_percent_per_rtt() {
        // ssthresh reached without a loss (as after a HyStart exit): last_max_cwnd = 0, the
        // cubic curve from origin = cwnd is flat, so cnt would be huge; the clamp of 20
        // gives +1 per 20 packets acked = 5% per RTT.
        let mut sim = Sim::new(no_hystart(), 1000, 100 * MS, 10_000);
        sim.tp.snd_cwnd = 100;
        sim.tp.snd_ssthresh = 100;
        sim.send();
        sim.run_until(50 * MS);
        let mut prev = sim.tp.snd_cwnd;
        for round in 1..=6u64 {
            sim.run_until(50 * MS + round * 100 * MS);
            let cwnd = sim.tp.snd_cwnd;
            let growth = cwnd as f64 / prev as f64;
            assert!(
                (1.04..=1.065).contains(&growth),
                "round {round}: {prev} -> {cwnd}"
            );
            assert_eq!(metric(&sim.cc, &sim.tp, "cubic_cnt_pkts"), 20.0);
            prev = cwnd;
        }
        // With a Wmax at cwnd (K = 0) the same situation grows far slower.
        let mut sim = Sim::new(no_hystart(), 1000, 100 * MS, 10_000);
        sim.tp.snd_cwnd = 100;
        sim.tp.snd_ssthresh = 100;
        sim.send();
        sim.ack();
        sim.spurious_recovery_undone();
        sim.run_until(650 * MS);
        assert!(sim.tp.snd_cwnd <= 104, "cwnd {}", sim.tp.snd_cwnd);
    }

    #[test]
    fn cnt_floor_of_2_limits_growth_to_one_per_two_acked() {
        // Far below the curve: Wmax 1000, cwnd forced to 20. One delay_min (100 ms) ahead,
        // W = 20 + ~22 (slope 3·C·K² ≈ 218 packets/s at the epoch start), so
        // cwnd/(W - cwnd) = 0. The floor keeps +1 per 2 packets acked (x1.5 per RTT).
        let mut cc = Cubic::new(&CubicParams::default());
        let mut tp = TcpSock::new(1448, 10, 1000);
        cc.init(&mut tp);
        tp.is_cwnd_limited = true;
        tp.now_ns = SEC;
        let sample = AckSample {
            pkts_acked: 1,
            rtt_us: 100_000,
            in_flight: 10,
        };
        cc.pkts_acked(&mut tp, &sample);
        tp.snd_cwnd = 1000;
        cc.ssthresh(&mut tp);
        tp.snd_cwnd = 20;
        tp.snd_ssthresh = 20;
        tp.now_ns = 5 * SEC;
        for i in 0..20 {
            tp.now_ns += 100_000 * (i % 2);
            cc.cong_avoid(&mut tp, 0, 1);
            assert_eq!(cc.cnt, 2);
        }
        assert_eq!(tp.snd_cwnd, 30);
    }

    #[test]
    fn cnt_is_recomputed_at_most_every_hz_over_32_jiffies_at_the_same_cwnd() {
        // Concave region right after a loss at 1000: W(t) rises ~100 packets/s, so a
        // recomputation 32 ms later gives a much smaller cnt. HZ/32 jiffies is 31 at
        // HZ=1000 (31 ms) and 7 at HZ=250 (28 ms); the throttle is "<=".
        for (hz, jiffy_ms, hz_over_32) in [(1000u32, 1u64, 31u64), (250, 4, 7)] {
            let mut cc = Cubic::new(&CubicParams::default());
            let mut tp = TcpSock::new(1448, 10, hz);
            cc.init(&mut tp);
            tp.is_cwnd_limited = true;
            tp.snd_cwnd = 1000;
            let ssthresh = cc.ssthresh(&mut tp);
            tp.snd_cwnd = ssthresh;
            tp.snd_ssthresh = ssthresh;
            let t0 = 10 * SEC;
            tp.now_ns = t0;
            cc.cong_avoid(&mut tp, 0, 1);
            let cnt0 = cc.cnt;
            tp.now_ns = t0 + hz_over_32 * jiffy_ms * MS;
            cc.cong_avoid(&mut tp, 0, 1);
            assert_eq!(tp.snd_cwnd, ssthresh);
            assert_eq!(cc.cnt, cnt0, "hz {hz}: recomputed within HZ/32");
            tp.now_ns = t0 + (hz_over_32 + 1) * jiffy_ms * MS;
            cc.cong_avoid(&mut tp, 0, 1);
            assert!(
                cc.cnt < cnt0 / 2,
                "hz {hz}: cnt {} after HZ/32, was {cnt0}",
                cc.cnt
            );
            // Within the same jiffy a changed cwnd skips the cubic computation (only the
            // Reno-emulation bound runs), so cnt stays although cwnd/(W - cwnd) moved.
            let cnt1 = cc.cnt;
            tp.snd_cwnd += 2;
            cc.cong_avoid(&mut tp, 0, 1);
            assert_eq!(cc.cnt, cnt1, "hz {hz}: recomputed within a jiffy");
            tp.now_ns += jiffy_ms * MS;
            cc.cong_avoid(&mut tp, 0, 1);
            assert_ne!(cc.cnt, cnt1, "hz {hz}: next jiffy recomputes");
        }
    }

    // ---------------------------------------------------------------- delay_min, idle

    #[test]
    fn delay_samples_are_ignored_for_one_second_after_the_epoch_starts() {
        let mut cc = Cubic::new(&no_hystart());
        let mut tp = TcpSock::new(1448, 10, 1000);
        cc.init(&mut tp);
        tp.is_cwnd_limited = true;
        tp.snd_cwnd = 50;
        tp.snd_ssthresh = 50;
        let rtt = |us: i64| AckSample {
            pkts_acked: 1,
            rtt_us: us,
            in_flight: 10,
        };
        tp.now_ns = SEC;
        cc.pkts_acked(&mut tp, &rtt(100_000));
        cc.pkts_acked(&mut tp, &rtt(-1)); // no sample
        assert_eq!(metric(&cc, &tp, "cubic_delay_min_us"), 100_000.0);
        tp.now_ns = 2 * SEC;
        cc.cong_avoid(&mut tp, 0, 1); // epoch starts at jiffy 2000
        for t in [2 * SEC, 2 * SEC + 500 * MS, 3 * SEC - 1] {
            tp.now_ns = t;
            cc.pkts_acked(&mut tp, &rtt(50_000));
            assert_eq!(metric(&cc, &tp, "cubic_delay_min_us"), 100_000.0, "at {t}");
        }
        tp.now_ns = 3 * SEC;
        cc.pkts_acked(&mut tp, &rtt(50_000));
        assert_eq!(metric(&cc, &tp, "cubic_delay_min_us"), 50_000.0);
        // A zero sample counts as 1 µs; larger samples never raise delay_min.
        cc.pkts_acked(&mut tp, &rtt(0));
        cc.pkts_acked(&mut tp, &rtt(70_000));
        assert_eq!(metric(&cc, &tp, "cubic_delay_min_us"), 1.0);
    }

    #[test]
    fn tx_start_after_idle_shifts_the_epoch_by_the_idle_time() {
        let mut cc = Cubic::new(&no_hystart());
        let mut tp = TcpSock::new(1448, 10, 1000);
        cc.init(&mut tp);
        tp.is_cwnd_limited = true;
        tp.snd_cwnd = 50;
        tp.snd_ssthresh = 50;
        // No epoch yet: nothing to shift.
        tp.now_ns = 9 * SEC;
        cc.cwnd_event(&mut tp, CaEvent::TxStart);
        assert_eq!(cc.epoch_start, 0);
        tp.now_ns = 10 * SEC;
        cc.cong_avoid(&mut tp, 0, 1);
        assert_eq!(cc.epoch_start, 310_000);
        // Last activity at 10.1 s, restart at 15.1 s: 5 s idle.
        tp.lsndtime_ns = 10 * SEC + 100 * MS;
        tp.now_ns = 15 * SEC + 100 * MS;
        cc.cwnd_event(&mut tp, CaEvent::CwndRestart);
        cc.cwnd_event(&mut tp, CaEvent::Loss);
        assert_eq!(cc.epoch_start, 310_000, "only TX_START shifts");
        cc.cwnd_event(&mut tp, CaEvent::TxStart);
        assert_eq!(cc.epoch_start, 315_000);
        // The shift never moves the epoch past now.
        tp.lsndtime_ns = 14 * SEC + 500 * MS;
        tp.now_ns = 15 * SEC + 200 * MS;
        cc.cwnd_event(&mut tp, CaEvent::TxStart);
        assert_eq!(
            cc.epoch_start, 315_200,
            "315000 + 700 capped at now (jiffies start at INITIAL_JIFFIES)"
        );
    }

    #[test]
    fn initial_ssthresh_applies_only_without_hystart() {
        for (hystart, want) in [(false, 40), (true, TCP_INFINITE_SSTHRESH)] {
            let mut cc = Cubic::new(&CubicParams {
                hystart,
                initial_ssthresh: 40,
                ..CubicParams::default()
            });
            let mut tp = TcpSock::new(1448, 10, 1000);
            cc.init(&mut tp);
            assert_eq!(tp.snd_ssthresh, want);
        }
    }

    // ---------------------------------------------------------------- HyStart

    fn hystart_only(detect: u32) -> CubicParams {
        CubicParams {
            hystart_detect: detect,
            ..CubicParams::default()
        }
    }

    fn exited(sim: &Sim) -> bool {
        sim.cc.found
    }

    /// Slow start from IW 10 over RTT 100 ms and a 1 packet/ms bottleneck (BDP 101 packets).
    /// Each round's ACKs return 1 ms apart, a round of n packets makes an n ms ACK train, and
    /// rounds are separate while n < 101. delay_min = 101 ms (empty queue at each round's
    /// first packet).
    fn slow_start_sim(params: CubicParams, ser: u64) -> Sim {
        let mut sim = Sim::new(params, 1000, 100 * MS, ser);
        sim.send();
        sim
    }

    #[test]
    fn hystart_ack_train_exits_when_the_train_passes_half_delay_min() {
        // Unpaced: threshold = (delay_min + hystart_ack_delay) >> 1 = (101000 + 1000) >> 1
        // = 51000 µs. The GSO cushion is 1 ms because the sender sets a pacing rate for
        // CUBIC too (tcp_update_pacing_rate: 2 x cwnd / srtt in slow start, about 2 MB/s
        // here, so 4 x 64 KB take far more than 1 ms). Rounds of 10, 20, 40 packets make
        // trains of at most 39 ms; in the round of 80 the 53rd ACK (52 ms after the round
        // start) fires, with cwnd = 80 + 52 = 132 when pkts_acked runs.
        for detect in [HYSTART_ACK_TRAIN, HYSTART_ACK_TRAIN | HYSTART_DELAY] {
            let mut sim = slow_start_sim(hystart_only(detect), MS);
            assert!(sim.run_while_not(5 * SEC, exited), "no exit");
            assert_eq!(sim.cc.delay_min, 101_000);
            assert_eq!(sim.cc.hystart_ack_delay(&sim.tp), 1_000);
            let train = clock_us(&sim.tp) - sim.cc.round_start;
            assert_eq!(train, 52_000);
            assert_eq!(sim.cwnd_before_ack, 132);
            assert_eq!(sim.tp.snd_ssthresh, 132, "ssthresh = cwnd at the exit");
            assert_eq!(counter(&sim.cc, &sim.tp, "cubic_hystart_exit_count"), 1.0);
            assert_eq!(
                counter(&sim.cc, &sim.tp, "cubic_hystart_train_exit_count"),
                1.0
            );
            assert_eq!(
                counter(&sim.cc, &sim.tp, "cubic_hystart_delay_exit_count"),
                0.0
            );
            assert_eq!(
                counter(&sim.cc, &sim.tp, "cubic_hystart_exit_cwnd_pkts"),
                132.0
            );
            // Out of slow start now, with no Wmax: the 5%/RTT clamp applies.
            sim.run_until(sim.tp.now_ns + 200 * MS);
            assert!(!sim.tp.in_slow_start());
            assert_eq!(sim.cc.cnt, 20);
        }
    }

    #[test]
    fn hystart_ack_train_threshold_is_full_delay_min_when_paced() {
        // Paced: threshold 101 ms + the 1 ms GSO cushion. The round of 160 packets is the
        // first whose train can exceed it (from here the ACK stream is continuous); its
        // 104th ACK fires: cwnd = 160 + 103 = 263.
        let mut sim = slow_start_sim(hystart_only(HYSTART_ACK_TRAIN), MS);
        sim.tp.is_paced = true;
        assert!(sim.run_while_not(5 * SEC, exited), "no exit");
        assert_eq!(clock_us(&sim.tp) - sim.cc.round_start, 103_000);
        assert_eq!(sim.tp.snd_ssthresh, 263);
    }

    #[test]
    fn hystart_ack_train_needs_acks_within_ack_delta() {
        // A 3 ms/packet bottleneck spaces ACKs 3 ms apart: beyond hystart_ack_delta_us
        // (2 ms) no train forms and slow start goes on.
        let mut sim = slow_start_sim(hystart_only(HYSTART_ACK_TRAIN), 3 * MS);
        assert!(!sim.run_while_not(4 * SEC, exited));
        assert_eq!(sim.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        assert!(sim.tp.snd_cwnd > 500);
        // With a 4 ms delta it does: threshold (103000 + 1000) >> 1 = 52 ms, reached by the 19th
        // ACK (54 ms) of the round of 20: cwnd 20 + 18 = 38.
        let params = CubicParams {
            hystart_ack_delta_us: 4000,
            ..hystart_only(HYSTART_ACK_TRAIN)
        };
        let mut sim = slow_start_sim(params, 3 * MS);
        assert!(sim.run_while_not(4 * SEC, exited));
        assert_eq!(sim.cc.delay_min, 103_000);
        assert_eq!(sim.tp.snd_ssthresh, 38);
        // The bound is inclusive: ACKs exactly 2 ms apart form a train. delay_min 102 ms,
        // threshold (102000 + 1000) >> 1 = 51.5 ms, reached by the 27th ACK (52 ms) of the round of 40: cwnd 66.
        let mut sim = slow_start_sim(hystart_only(HYSTART_ACK_TRAIN), 2 * MS);
        assert!(sim.run_while_not(4 * SEC, exited));
        assert_eq!(sim.cc.delay_min, 102_000);
        assert_eq!(sim.tp.snd_ssthresh, 66);
    }

    #[test]
    fn hystart_delay_exits_once_the_round_min_rtt_rises() {
        // Delay detector alone: it fires only when a round's minimum RTT (its first
        // packets) sees a standing queue above clamp(delay_min/8, 4, 16) ms = 12.625 ms,
        // i.e. beyond the BDP, later than the ACK train.
        let mut sim = slow_start_sim(hystart_only(HYSTART_DELAY), MS);
        assert!(sim.run_while_not(10 * SEC, exited), "no exit");
        assert_eq!(sim.cc.delay_min, 101_000);
        assert!(
            sim.cc.curr_rtt > 101_000 + 12_625,
            "curr_rtt {}",
            sim.cc.curr_rtt
        );
        assert_eq!(sim.cc.sample_cnt, HYSTART_MIN_SAMPLES);
        assert!(sim.cwnd_before_ack > 131, "exit at {}", sim.cwnd_before_ack);
        assert_eq!(sim.tp.snd_ssthresh, sim.cwnd_before_ack);
        assert_eq!(
            counter(&sim.cc, &sim.tp, "cubic_hystart_delay_exit_count"),
            1.0
        );
        assert_eq!(
            counter(&sim.cc, &sim.tp, "cubic_hystart_train_exit_count"),
            0.0
        );
    }

    /// Hand-driven HyStart rounds: round 1 sets delay_min; round 2 feeds `rtts` (µs), one
    /// ACK per ms. Returns the 1-based sample that made HyStart exit, if any.
    fn delay_round(
        params: CubicParams,
        cwnd: u32,
        delay_min_us: i64,
        rtts: &[i64],
    ) -> Option<usize> {
        let mut cc = Cubic::new(&params);
        let mut tp = TcpSock::new(1448, 10, 1000);
        cc.init(&mut tp);
        tp.snd_cwnd = cwnd;
        let ack = |cc: &mut Cubic, tp: &mut TcpSock, rtt_us: i64| {
            tp.snd_una += 1;
            tp.now_ns += MS;
            let sample = AckSample {
                pkts_acked: 1,
                rtt_us,
                in_flight: cwnd,
            };
            cc.pkts_acked(tp, &sample);
        };
        // Round 1: segments 0..100 outstanding.
        tp.snd_nxt = 100;
        ack(&mut cc, &mut tp, delay_min_us);
        if params.hystart {
            assert_eq!(cc.end_seq, 100);
        }
        assert!(!cc.found);
        // Round 2 starts with the ACK of segment 100.
        tp.snd_una = 100;
        tp.snd_nxt = 1000;
        tp.now_ns += 50 * MS; // a gap: no ACK train across rounds
        for (i, &rtt) in rtts.iter().enumerate() {
            ack(&mut cc, &mut tp, rtt);
            if cc.found {
                assert_eq!(cc.end_seq, 1000, "still round 2");
                assert_eq!(tp.snd_ssthresh, cwnd);
                return Some(i + 1);
            }
        }
        assert_eq!(tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        None
    }

    #[test]
    fn hystart_delay_fires_on_the_ninth_sample_above_delay_min_plus_clamp() {
        let delay = hystart_only(HYSTART_DELAY);
        // delay_min 100 ms: margin 12.5 ms; the first 8 samples only fill curr_rtt.
        assert_eq!(
            delay_round(delay.clone(), 20, 100_000, &[112_501; 20]),
            Some(9)
        );
        assert_eq!(
            delay_round(delay.clone(), 20, 100_000, &[112_500; 20]),
            None
        );
        // One low sample anywhere in the round keeps curr_rtt (the round's min) low.
        let mut rtts = [130_000; 20];
        rtts[3] = 110_000;
        assert_eq!(delay_round(delay.clone(), 20, 100_000, &rtts), None);
        // Clamped at 4 ms for small delay_min, at 16 ms for large.
        assert_eq!(delay_round(delay.clone(), 20, 20_000, &[24_000; 20]), None);
        assert_eq!(
            delay_round(delay.clone(), 20, 20_000, &[24_001; 20]),
            Some(9)
        );
        assert_eq!(
            delay_round(delay.clone(), 20, 200_000, &[216_000; 20]),
            None
        );
        assert_eq!(
            delay_round(delay.clone(), 20, 200_000, &[216_001; 20]),
            Some(9)
        );
        // Off in hystart_detect, or HyStart off: never.
        let train_only = hystart_only(HYSTART_ACK_TRAIN);
        assert_eq!(delay_round(train_only, 20, 100_000, &[200_000; 20]), None);
        assert_eq!(delay_round(no_hystart(), 20, 100_000, &[200_000; 20]), None);
    }

    fn hystart_4x(detect: u32) -> CubicParams {
        CubicParams {
            hystart_version: HystartVersion::Linux4x,
            ..hystart_only(detect)
        }
    }

    /// 4.x HyStart on the same slow start: the train's threshold is delay_min/2 in whole
    /// ms (delay_min 808/8 ms, `>> 4` = 50 ms), no 1 ms GSO cushion, and the round starts
    /// in `bictcp_cong_avoid`, after the first ACK's sample. In the round of 80 the ACK 51
    /// ms after the round start fires: cwnd 80 + 51 (6.18: 52 ms, cwnd 132). Paced or not.
    #[test]
    fn hystart_4x_ack_train_exits_past_half_delay_min_in_ms() {
        for paced in [false, true] {
            let mut sim = slow_start_sim(hystart_4x(HYSTART_ACK_TRAIN), MS);
            sim.tp.is_paced = paced;
            assert!(sim.run_while_not(5 * SEC, exited), "no exit");
            assert_eq!(sim.cc.delay_min, 101_000);
            assert_eq!(clock_ms(&sim.tp) - sim.cc.round_start, 51);
            assert_eq!(sim.tp.snd_ssthresh, 131, "paced {paced}");
            assert_eq!(
                counter(&sim.cc, &sim.tp, "cubic_hystart_train_exit_count"),
                1.0
            );
        }
    }

    /// 4.x: the ACK train counts in whole milliseconds of `hystart_ack_delta` (2 ms): ACKs
    /// 3 ms apart form no train.
    #[test]
    fn hystart_4x_ack_train_needs_acks_within_2_ms() {
        let mut sim = slow_start_sim(hystart_4x(HYSTART_ACK_TRAIN), 3 * MS);
        assert!(!sim.run_while_not(4 * SEC, exited));
        assert_eq!(sim.tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
    }

    /// A 4.x round by hand: round 1's sample sets delay_min, `cong_avoid` with an ACK past
    /// `end_seq` starts round 2 (4.x resets rounds there, not in `pkts_acked`), whose
    /// samples (µs, one per ms) follow. Returns the 1-based sample that made HyStart exit.
    fn delay_round_4x(delay_min_us: i64, rtts: &[i64]) -> Option<usize> {
        let mut cc = Cubic::new(&hystart_4x(HYSTART_DELAY));
        let mut tp = TcpSock::new(1448, 10, 1000);
        cc.init(&mut tp);
        tp.snd_cwnd = 20;
        tp.is_cwnd_limited = true;
        let sample = |rtt_us| AckSample {
            pkts_acked: 1,
            rtt_us,
            in_flight: 20,
        };
        tp.snd_nxt = 100;
        tp.now_ns += MS;
        cc.pkts_acked(&mut tp, &sample(delay_min_us));
        tp.snd_una = 101;
        tp.snd_nxt = 1000;
        tp.snd_cwnd = 20;
        cc.cong_avoid(&mut tp, 101, 0);
        assert_eq!(cc.end_seq, 1000, "round 2 started by cong_avoid");
        for (i, &rtt) in rtts.iter().enumerate() {
            tp.now_ns += MS;
            cc.pkts_acked(&mut tp, &sample(rtt));
            if cc.found {
                return Some(i + 1);
            }
        }
        None
    }

    /// 4.x's delay test compares the minimum of the round's first 8 samples (6.18: of all
    /// of them): a low ninth sample does not stop it. Units of 1/8 ms: delay_min 800,
    /// margin clamp(100, 32, 128) = 100, so the first 8 must exceed 112.5 ms.
    #[test]
    fn hystart_4x_delay_uses_the_first_8_samples_only() {
        let mut rtts = [130_000; 20];
        rtts[8] = 105_000;
        assert_eq!(delay_round_4x(100_000, &rtts), Some(9));
        assert_eq!(
            delay_round(hystart_only(HYSTART_DELAY), 20, 100_000, &rtts),
            None
        );
        // 1/8-ms units: 112.624 ms is 900 (not above 800 + 100); 112.625 ms is 901.
        assert_eq!(delay_round_4x(100_000, &[112_624; 20]), None);
        assert_eq!(delay_round_4x(100_000, &[112_625; 20]), Some(9));
        // A low sample among the first 8 keeps the round's minimum low.
        let mut rtts = [130_000; 20];
        rtts[3] = 110_000;
        assert_eq!(delay_round_4x(100_000, &rtts), None);
    }

    #[test]
    fn hystart_waits_for_the_low_window() {
        // Round 2: 60 ACKs 1 ms apart (a 60 ms train > 50 ms) with RTTs far above the
        // delay threshold. Both detectors would fire, but not below cwnd 16.
        let both = CubicParams::default();
        assert_eq!(delay_round(both.clone(), 15, 100_000, &[150_000; 60]), None);
        let fired = delay_round(both.clone(), 16, 100_000, &[150_000; 60]);
        assert_eq!(fired, Some(9), "delay detector first");
        // Sample k comes (k - 1) ms after the round start: 51 ms > 50 ms at k = 52.
        let train = hystart_only(HYSTART_ACK_TRAIN);
        assert_eq!(
            delay_round(train.clone(), 16, 100_000, &[100_000; 60]),
            Some(52)
        );
        let low = CubicParams {
            hystart_low_window: 32,
            ..train
        };
        assert_eq!(delay_round(low, 31, 100_000, &[100_000; 60]), None);
    }

    #[test]
    fn recovery_keeps_delay_min_and_found_but_rto_resets_them() {
        let mut cc = Cubic::new(&CubicParams::default());
        let mut tp = TcpSock::new(1448, 10, 1000);
        cc.init(&mut tp);
        tp.is_cwnd_limited = true;
        tp.snd_cwnd = 40;
        let rtt = |us| AckSample {
            pkts_acked: 1,
            rtt_us: us,
            in_flight: 40,
        };
        let round = |cc: &mut Cubic, tp: &mut TcpSock, rtt_us: i64| {
            tp.snd_una = tp.snd_nxt + 1;
            tp.snd_nxt += 1000;
            tp.now_ns += 200 * MS;
            for _ in 0..10 {
                tp.snd_una += 1;
                tp.now_ns += 5 * MS; // no ACK train
                cc.pkts_acked(tp, &rtt(rtt_us));
            }
        };
        round(&mut cc, &mut tp, 100_000);
        round(&mut cc, &mut tp, 150_000);
        assert!(cc.found);
        assert_eq!(tp.snd_ssthresh, 40);
        // Loss in congestion avoidance, then fast recovery: Wmax set, delay_min and found
        // kept; a later slow start (cwnd below ssthresh) does not run HyStart again.
        tp.snd_cwnd = 60;
        tp.snd_ssthresh = cc.ssthresh(&mut tp);
        cc.set_state(&mut tp, CaState::Recovery);
        cc.set_state(&mut tp, CaState::Open);
        tp.snd_cwnd = 20;
        tp.now_ns += SEC;
        cc.cong_avoid(&mut tp, 0, 1); // slow start: no epoch
        round(&mut cc, &mut tp, 150_000);
        assert_eq!(metric(&cc, &tp, "cubic_wmax_pkts"), 60.0);
        assert_eq!(metric(&cc, &tp, "cubic_delay_min_us"), 100_000.0);
        assert_eq!(counter(&cc, &tp, "cubic_hystart_exit_count"), 1.0);
        assert_eq!(tp.snd_ssthresh, 42);
        // Also an epoch, to see it cleared.
        tp.snd_cwnd = 42;
        tp.now_ns += SEC;
        cc.cong_avoid(&mut tp, 0, 1);
        assert!(cc.epoch_start != 0 && cc.bic_k != 0);
        // RTO: set_state(Loss) forgets Wmax, K, the epoch, delay_min, and re-arms HyStart.
        tp.snd_ssthresh = cc.ssthresh(&mut tp);
        cc.cwnd_event(&mut tp, CaEvent::Loss);
        cc.set_state(&mut tp, CaState::Loss);
        tp.snd_cwnd = 20;
        for name in [
            "cubic_wmax_pkts",
            "cubic_k_s",
            "cubic_origin_pkts",
            "cubic_delay_min_us",
            "cubic_cnt_pkts",
            "cubic_tcp_cwnd_pkts",
        ] {
            assert_eq!(metric(&cc, &tp, name), 0.0, "{name}");
        }
        assert!(!cc.found && cc.epoch_start == 0);
        assert_eq!(cc.curr_rtt, u32::MAX);
        assert_eq!(cc.end_seq, tp.snd_nxt);
        round(&mut cc, &mut tp, 120_000);
        round(&mut cc, &mut tp, 150_000);
        assert_eq!(counter(&cc, &tp, "cubic_hystart_exit_count"), 2.0);
        assert_eq!(counter(&cc, &tp, "cubic_loss_reset_count"), 1.0);
        assert_eq!(tp.snd_ssthresh, 20);
    }

    #[test]
    fn metric_and_counter_names_are_stable() {
        let cc = Cubic::new(&CubicParams::default());
        let tp = TcpSock::new(1448, 10, 1000);
        let mut out = Vec::new();
        cc.sample_metrics(&tp, &mut out);
        let names: Vec<_> = out.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "cubic_wmax_pkts",
                "cubic_k_s",
                "cubic_origin_pkts",
                "cubic_delay_min_us",
                "cubic_cnt_pkts",
                "cubic_tcp_cwnd_pkts"
            ]
        );
        assert_eq!(cc.state_name(&tp), "slow_start");
        assert_eq!(cc.name(), "cubic");
    }
}
