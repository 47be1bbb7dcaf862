//! BBRv1 as Linux `net/ipv4/tcp_bbr.c` (6.18, or 4.13/4.15 with `version`) runs it,
//! function by function, in Linux's
//! units: bandwidth in packets/µs << 24 (`BW_SCALE`), gains in 1/256 (`BBR_SCALE`), min_rtt
//! in µs, the min-RTT and PROBE_RTT stamps in jiffies. docs/reference.md section 4 is the checklist.
//!
//! Written from the kernel source's behaviour, not copied from it. Each function names the
//! `tcp_bbr.c` function it follows. Deviations from Linux are options in [`BbrParams`]; the
//! only structural one is that counters which Linux keeps in u32 or narrower bit fields
//! (`rtt_cnt`, `delivered`, `extra_acked`) are u64/u32 here and never wrap.
//!
//! On top of stock BBRv1 sit the two RTprop modifications of reference 6.3 (forced expire
//! and RTprop update), both off by default; see `Bbr::rtprop_modification`.

pub mod params;
#[cfg(test)]
mod tests;

pub use params::{BbrParams, RtpropAction, RtpropTrigger, TsoModel, Version};

use crate::params::ParamError;
use crate::registry::{self, Algorithm, Family};

/// BBR's entry in the registry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "bbr",
    summary: "BBRv1 as Linux implements it (net/ipv4/tcp_bbr.c), with the RTprop \
              modifications of the literature as options: paces at the estimated bottleneck \
              bandwidth, cwnd 2 x BDP, PROBE_RTT every 10 s",
    family: Family::ModelBased,
    linux_name: Some("bbr"),
    params: <BbrParams as crate::params::ParamTable>::params,
    normalize: |v| registry::to_table(&parse_resolved(v)?),
    build: |v, seed| Ok(Box::new(Bbr::new(&parse_resolved(v)?, seed))),
};

/// The table parsed, range-checked and with the version's defaults resolved (so that
/// results record e.g. whether extra_acked ran).
fn parse_resolved(params: &serde_json::Value) -> Result<BbrParams, ParamError> {
    check_renamed(params)?;
    let p: BbrParams = registry::parse(params)?;
    p.validate()?;
    Ok(p.resolved())
}

/// The spellings of earlier ccfair versions: the key `profile` (now `version`) and its two
/// values, which name the BBR that replaces them.
pub fn check_renamed(params: &serde_json::Value) -> Result<(), ParamError> {
    let serde_json::Value::Object(map) = params else {
        return Ok(());
    };
    let instead = |old: &serde_json::Value| match old.as_str() {
        Some("linux-5.x") => {
            " (\"linux-5.x\" is version = \"linux-6.18\", the same BBR)".to_string()
        }
        Some("linux-4.9") => " (\"linux-4.9\" matched neither 4.13 nor 4.15: choose \
                              version = \"linux-4.13\" or \"linux-4.15\")"
            .to_string(),
        _ => String::new(),
    };
    if let Some(old) = map.get("profile") {
        return Err(ParamError::new(
            "profile",
            format!("renamed `version`{}", instead(old)),
        ));
    }
    if let Some(old) = map.get("version") {
        let hint = instead(old);
        if !hint.is_empty() {
            return Err(ParamError::new(
                "version",
                format!("{old} is no longer a version{hint}"),
            ));
        }
    }
    Ok(())
}

use std::cell::Cell;

use crate::minmax::MinMax;
use crate::rng::Rng;
use crate::{CaEvent, CaState, CongestionControl, RateSample, TcpSock};

/// Bandwidth unit: packets per µs scaled by 2^24 (about 715 bit/s per unit at MSS 1448).
pub const BW_SCALE: u32 = 24;
/// One packet per µs in bandwidth units (`BW_UNIT` of tcp_bbr.c).
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gains are fractions of 256.
pub const BBR_SCALE: u32 = 8;
/// A gain of 1.0 (`BBR_UNIT`): gains are in 1/256ths.
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;

/// Phases of the PROBE_BW gain cycle.
pub const CYCLE_LEN: u32 = 8;
/// `bbr_high_gain` = 2/ln2 rounded up: 739/256 = 2.8867 (STARTUP pacing and cwnd gain).
pub const HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
/// `bbr_drain_gain` = 1/high_gain: 88/256 = 0.34375.
pub const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// `bbr_cwnd_gain` of PROBE_BW (the default of [`BbrParams::cwnd_gain`]).
pub const CWND_GAIN: u32 = BBR_UNIT * 2;
/// `bbr_pacing_gain[]`: probe at 1.25, drain at 0.75, cruise at 1.0 for six phases.
pub const PACING_GAIN: [u32; CYCLE_LEN as usize] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
/// `bbr_cycle_rand`: the start phase is drawn among this many phases (all but 0.75).
const CYCLE_RAND: u32 = 7;
/// `bbr_cwnd_min_target`: cwnd floor, and the PROBE_RTT cap.
pub const CWND_MIN_TARGET: u32 = 4;
/// `bbr_full_bw_thresh`: bandwidth growth of 25% means the pipe is not full yet.
const FULL_BW_THRESH: u64 = (BBR_UNIT * 5 / 4) as u64;
/// `bbr_full_bw_cnt`: rounds without that growth before the pipe is declared full.
const FULL_BW_CNT: u32 = 3;
/// `bbr_lt_intvl_min_rtts`: minimum long-term sampling interval, rounds.
const LT_INTVL_MIN_RTTS: u32 = 4;
/// `bbr_lt_loss_thresh`: 50/256 (about 20%) lost/delivered makes an interval "lossy".
const LT_LOSS_THRESH: u64 = 50;
/// `bbr_lt_bw_ratio`: two intervals within 1/8 of each other are consistent.
const LT_BW_RATIO: u64 = (BBR_UNIT / 8) as u64;
/// `bbr_lt_bw_diff`: or within 4 kbit/s (in bytes/s).
const LT_BW_DIFF: u64 = 4000 / 8;
/// `bbr_lt_bw_max_rtts`: how long lt_bw is used once engaged, rounds.
const LT_BW_MAX_RTTS: u32 = 48;
/// `bbr_extra_acked_gain` when extra_acked is on.
const EXTRA_ACKED_GAIN: u64 = BBR_UNIT as u64;
/// `bbr_extra_acked_win_rtts`: each of the two extra_acked slots lives this many rounds.
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// `bbr_ack_epoch_acked_reset_thresh`.
const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// `bbr_extra_acked_max_us`: extra_acked is clamped to bw x 100 ms.
const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// `bbr_min_tso_rate` in bit/s: below it one TSO segment is enough.
const MIN_TSO_RATE: u64 = 1_200_000;
/// `bbr_pacing_margin_percent`: pace 1% below bw x gain.
const PACING_MARGIN_PERCENT: u64 = 1;
/// Bytes a data packet adds to its payload on the wire (IPv4 20, TCP 20, timestamps 12):
/// `tcp_mss_to_mtu` - `mss_cache`, the 4.x pacing basis (`pacing_on_mtu`).
const MTU_OVERHEAD_BYTES: u64 = 52;
/// `TCP_INIT_CWND` (a constant in Linux, independent of the route's initcwnd).
const TCP_INIT_CWND: u32 = 10;
/// `sk->sk_pacing_shift` default: TSO bursts of about 1 ms (2^-10 s) of data.
const SK_PACING_SHIFT: u32 = 10;
/// `GSO_MAX_SIZE - 1 - MAX_TCP_HEADER` with a typical x86-64 config (MAX_TCP_HEADER = 320).
const GSO_MAX_BYTES: u64 = 65_536 - 1 - 320;
/// `bbr_tso_segs_goal` never exceeds 0x7F segments.
const TSO_MAX_SEGS: u64 = 0x7F;

/// `(a x b) >> shift` as u64 (truncated as `as u64` does): in u64 while the product fits,
/// else in u128, the same value.
#[inline]
fn mul_shr(a: u64, b: u64, shift: u32) -> u64 {
    match a.checked_mul(b) {
        Some(p) => p >> shift,
        None => ((a as u128 * b as u128) >> shift) as u64,
    }
}

/// `enum bbr_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `BBR_STARTUP`: ramp up at high gain until the bandwidth stops growing.
    Startup,
    /// `BBR_DRAIN`: drain the queue STARTUP built.
    Drain,
    /// `BBR_PROBE_BW`: steady state, cycling the pacing gain to probe for bandwidth.
    ProbeBw,
    /// `BBR_PROBE_RTT`: cut inflight to 4 packets to measure the round-trip propagation time.
    ProbeRtt,
}

impl Mode {
    /// The mode's name as Linux prints it (`"PROBE_BW"`), used as the flow's `cca_state`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Startup => "STARTUP",
            Mode::Drain => "DRAIN",
            Mode::ProbeBw => "PROBE_BW",
            Mode::ProbeRtt => "PROBE_RTT",
        }
    }
}

/// What the RTprop modification did on an ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Modification {
    None,
    /// The min-RTT filter is treated as expired (forced expire).
    ForcedExpiry,
    /// min_rtt was rewritten (RTprop update).
    Updated,
}

/// Counters for the per-flow summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BbrCounters {
    /// Entries into PROBE_RTT, whatever their cause.
    pub probe_rtt_entries: u64,
    /// Forced expiries: ACKs on which the modification declared the min-RTT filter expired
    /// although the 10 s window had not run out. This counts ACKs, not episodes: the trigger
    /// also fires while BBR is already in PROBE_RTT (where it only re-seeds min_rtt), e.g. on
    /// every ACK that marks losses as a burst drains. `forced_probe_rtt_entries` counts episodes.
    pub forced_expiries: u64,
    /// PROBE_RTT entries caused by a forced expiry (a subset of `probe_rtt_entries`).
    pub forced_probe_rtt_entries: u64,
    /// RTprop updates applied by the modification.
    pub rtprop_updates: u64,
    /// Times the long-term (policer) bandwidth was engaged.
    pub lt_bw_engagements: u64,
}

/// BBRv1 state: the fields of Linux `struct bbr`, plus the modification and counters.
#[derive(Debug)]
pub struct Bbr {
    params: BbrParams,
    rng: Rng,
    /// `bbr_extra_acked_gain` for this version (256 or 0).
    extra_acked_gain: u64,
    /// The version-dependent flags of `params`, resolved.
    flags: Flags,
    /// PROBE_BW cwnd gain (1/256).
    probe_bw_cwnd_gain: u32,

    /// Min RTT in the min_rtt_win_sec window, µs; `u32::MAX` before any sample.
    min_rtt_us: u32,
    /// Jiffies when `min_rtt_us` was last set (or PROBE_RTT last ended).
    min_rtt_stamp: u64,
    /// The min-RTT window's end for the stamp it was computed for: (stamp, the first time in
    /// ns at which the window has run out, `None` if never). See [`Bbr::min_rtt_expired`].
    min_rtt_expiry: Option<(u64, Option<u64>)>,
    /// The last `bbr_tso_segs_goal` with the pacing rate and MSS it was computed from: the
    /// rate changes far less often than the goal is read (once or twice per ACK).
    tso_goal_memo: Cell<Option<(u64, u32, u32)>>,
    /// Jiffies at which PROBE_RTT may end; `None` until in-flight first drops to 4.
    probe_rtt_done_stamp: Option<u64>,
    /// Max filter of delivery-rate samples, pkts/µs << 24, over `bw_rtts` rounds.
    bw: MinMax,
    /// Packet-timed rounds elapsed.
    rtt_cnt: u64,
    /// `tp.delivered` at the end of the current round.
    next_rtt_delivered: u64,
    /// Start of the current gain-cycle phase (µs, `delivered_mstamp`).
    cycle_mstamp_us: u64,
    mode: Mode,
    /// CA state seen on the previous ACK.
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    /// Long-term delivery rate, pkts/µs << 24.
    lt_bw: u64,
    lt_last_delivered: u64,
    /// Start of the long-term interval, ms.
    lt_last_stamp_ms: u64,
    lt_last_lost: u64,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    /// 4.x `restore_cwnd`: snap cwnd back to `prior_cwnd` on the next ACK that acknowledges
    /// data (leaving recovery, or PROBE_RTT without `probe_rtt_restore_at_exit`).
    restore_cwnd: bool,
    cycle_idx: u32,
    has_seen_rtt: bool,
    prior_cwnd: u32,
    full_bw: u64,
    /// Start of the ACK-aggregation epoch, µs.
    ack_epoch_mstamp_us: u64,
    extra_acked: [u32; 2],
    ack_epoch_acked: u32,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,

    /// Round in which the RTprop modification last fired (for `trigger_once_per_round`).
    last_trigger_round: Option<u64>,
    counters: BbrCounters,
}

/// The version-dependent behaviours ([`BbrParams`] flags), read on every ACK.
#[derive(Clone, Copy, Debug)]
struct Flags {
    pacing_on_mtu: bool,
    inflight_at_edt: bool,
    min_rtt_skip_delayed_ack: bool,
    probe_bw_plus_two: bool,
    probe_rtt_cap_zero_acked: bool,
    probe_rtt_restore_at_exit: bool,
    idle_restart_needs_delivery: bool,
    ssthresh_at_drain: bool,
    gains_every_ack: bool,
    undo_resets_sampling: bool,
    lt_bw_freezes_cycle: bool,
}

impl Flags {
    fn of(p: &BbrParams) -> Self {
        let f = BbrParams::flag;
        Flags {
            pacing_on_mtu: f(p.pacing_on_mtu),
            inflight_at_edt: f(p.inflight_at_edt),
            min_rtt_skip_delayed_ack: f(p.min_rtt_skip_delayed_ack),
            probe_bw_plus_two: f(p.probe_bw_plus_two),
            probe_rtt_cap_zero_acked: f(p.probe_rtt_cap_zero_acked),
            probe_rtt_restore_at_exit: f(p.probe_rtt_restore_at_exit),
            idle_restart_needs_delivery: f(p.idle_restart_needs_delivery),
            ssthresh_at_drain: f(p.ssthresh_at_drain),
            gains_every_ack: f(p.gains_every_ack),
            undo_resets_sampling: f(p.undo_resets_sampling),
            lt_bw_freezes_cycle: f(p.lt_bw_freezes_cycle),
        }
    }
}

impl Bbr {
    /// A BBR flow. `params` are resolved against the version; `seed` drives the random
    /// PROBE_BW start phase (`prandom_u32_max`).
    pub fn new(params: &BbrParams, seed: u64) -> Self {
        let params = params.clone().resolved();
        let extra_acked_gain = if params.extra_acked == Some(true) {
            EXTRA_ACKED_GAIN
        } else {
            0
        };
        Bbr {
            extra_acked_gain,
            flags: Flags::of(&params),
            probe_bw_cwnd_gain: params.cwnd_gain_fixed(),
            params,
            rng: Rng::new(seed),
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            min_rtt_expiry: None,
            tso_goal_memo: Cell::new(None),
            probe_rtt_done_stamp: None,
            bw: MinMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp_us: 0,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp_ms: 0,
            lt_last_lost: 0,
            // Linux zeroes icsk_ca_priv: the gains stay 0 until the first ACK.
            pacing_gain: 0,
            cwnd_gain: 0,
            full_bw_reached: false,
            full_bw_cnt: 0,
            restore_cwnd: false,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp_us: 0,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            last_trigger_round: None,
            counters: BbrCounters::default(),
        }
    }

    /// The parameters this instance runs with (resolved: every version-dependent flag set).
    pub fn params(&self) -> &BbrParams {
        &self.params
    }

    /// Current mode (`bbr->mode`).
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Event counters so far (PROBE_RTT entries, forced expiries, ...), for the flows table.
    pub fn counters(&self) -> BbrCounters {
        self.counters
    }

    /// RTprop estimate (`bbr->min_rtt_us`), µs; `u32::MAX` before any sample.
    pub fn min_rtt_us(&self) -> u32 {
        self.min_rtt_us
    }

    /// `bbr_max_bw`: the max filter, pkts/µs << 24.
    pub fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    /// `bbr_bw`: the bandwidth the model uses, lt_bw while policed.
    pub fn bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    /// Current pacing gain (`bbr->pacing_gain`), in [`BBR_UNIT`]s.
    pub fn pacing_gain(&self) -> u32 {
        self.pacing_gain
    }

    /// Current cwnd gain (`bbr->cwnd_gain`), in [`BBR_UNIT`]s.
    pub fn cwnd_gain(&self) -> u32 {
        self.cwnd_gain
    }

    /// Phase of the PROBE_BW gain cycle (`bbr->cycle_idx`, 0 to `CYCLE_LEN - 1`).
    pub fn cycle_idx(&self) -> u32 {
        self.cycle_idx
    }

    /// STARTUP found the pipe full (`bbr_full_bw_reached`): the bandwidth grew less than 25% in
    /// three rounds.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// `bbr_extra_acked`: max extra ACKed over the last 5 to 10 rounds, packets.
    pub fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// A bandwidth in pkts/µs << 24 as payload bit/s.
    pub fn bw_to_bits_per_sec(bw: u64, mss: u32) -> f64 {
        bw as f64 * mss as f64 * 8.0 * 1e6 / BW_UNIT as f64
    }

    /// Jiffies in the min-RTT window.
    fn min_rtt_win_jiffies(&self, tp: &TcpSock) -> u64 {
        self.params.min_rtt_win_sec as u64 * tp.hz as u64
    }

    // ---------------------------------------------------------------- pacing

    /// `bbr_rate_bytes_per_sec`: bw x mss x gain x 99% (4.20+), or bw x MTU x gain with
    /// `pacing_on_mtu` (4.x, whose comment calls leaving out the link-layer headers its
    /// ~1% margin), bytes per second. The order of operations (and so the truncation) is
    /// Linux's; u128 avoids its overflow. Computed in u64 while no product overflows (the
    /// usual case): the same value.
    fn rate_bytes_per_sec(&self, tp: &TcpSock, bw: u64, gain: u32) -> u64 {
        const MARGIN: u64 = 1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT);
        let (size, per_sec) = if self.flags.pacing_on_mtu {
            (tp.mss as u64 + MTU_OVERHEAD_BYTES, 1_000_000)
        } else {
            (tp.mss as u64, MARGIN)
        };
        let narrow = bw
            .checked_mul(size)
            .and_then(|r| r.checked_mul(gain as u64))
            .and_then(|r| (r >> BBR_SCALE).checked_mul(per_sec));
        match narrow {
            Some(rate) => rate >> BW_SCALE,
            None => Self::rate_bytes_per_sec_wide(bw, gain, size, per_sec),
        }
    }

    /// `rate_bytes_per_sec` in u128.
    #[cold]
    fn rate_bytes_per_sec_wide(bw: u64, gain: u32, size: u64, per_sec: u64) -> u64 {
        let mut rate = bw as u128;
        rate *= size as u128;
        rate *= gain as u128;
        rate >>= BBR_SCALE;
        rate *= per_sec as u128;
        (rate >> BW_SCALE) as u64
    }

    /// `bbr_bw_to_pacing_rate`: capped at `sk_max_pacing_rate`.
    fn bw_to_pacing_rate(&self, tp: &TcpSock, bw: u64, gain: u32) -> u64 {
        self.rate_bytes_per_sec(tp, bw, gain)
            .min(tp.max_pacing_rate_bytes_per_sec)
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain x cwnd / RTT (srtt, else a nominal 1 ms).
    fn init_pacing_rate_from_rtt(&mut self, tp: &mut TcpSock) {
        let rtt_us = if tp.srtt_us != 0 {
            self.has_seen_rtt = true;
            tp.srtt_us.max(1) as u64
        } else {
            1_000
        };
        let bw = tp.snd_cwnd as u64 * BW_UNIT / rtt_us;
        tp.pacing_rate_bytes_per_sec = self.bw_to_pacing_rate(tp, bw, HIGH_GAIN);
    }

    /// `bbr_set_pacing_rate`: before the pipe is full the rate only goes up.
    fn set_pacing_rate(&mut self, tp: &mut TcpSock, bw: u64, gain: u32) {
        let rate = self.bw_to_pacing_rate(tp, bw, gain);
        if !self.has_seen_rtt && tp.srtt_us != 0 {
            self.init_pacing_rate_from_rtt(tp);
        }
        let before = tp.pacing_rate_bytes_per_sec;
        if self.full_bw_reached || rate > tp.pacing_rate_bytes_per_sec {
            tp.pacing_rate_bytes_per_sec = rate;
        }
        debug_assert!(
            self.full_bw_reached || tp.pacing_rate_bytes_per_sec >= before,
            "BBR: pacing rate decreased before full_bw_reached"
        );
    }

    /// `bbr_min_tso_segs`: one segment below 1.2 Mbit/s, else two.
    fn min_tso_segs(tp: &TcpSock) -> u64 {
        if tp.pacing_rate_bytes_per_sec < (MIN_TSO_RATE >> 3) {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_goal`: about 1 ms of data at the current pacing rate (`tso_model`).
    pub(crate) fn tso_segs_goal(&self, tp: &TcpSock) -> u32 {
        let (rate, mss) = (tp.pacing_rate_bytes_per_sec, tp.mss);
        if let Some((r, m, goal)) = self.tso_goal_memo.get() {
            if r == rate && m == mss {
                return goal;
            }
        }
        let goal = self.tso_segs_goal_from(tp);
        self.tso_goal_memo.set(Some((rate, mss, goal)));
        goal
    }

    /// `tso_segs_goal` computed (it reads only the pacing rate and the MSS of `tp`).
    fn tso_segs_goal_from(&self, tp: &TcpSock) -> u32 {
        match self.params.tso_model {
            TsoModel::None => 1,
            TsoModel::Linux => {
                let bytes = (tp.pacing_rate_bytes_per_sec >> SK_PACING_SHIFT).min(GSO_MAX_BYTES);
                let segs = (bytes / tp.mss.max(1) as u64).max(Self::min_tso_segs(tp));
                segs.min(TSO_MAX_SEGS) as u32
            }
        }
    }

    // ---------------------------------------------------------------- cwnd

    /// `bbr_save_cwnd`: remember the last good cwnd before Recovery or PROBE_RTT.
    fn save_cwnd(&mut self, tp: &TcpSock) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = tp.snd_cwnd;
        } else {
            // Loss recovery or PROBE_RTT has already cut cwnd: keep the larger value.
            self.prior_cwnd = self.prior_cwnd.max(tp.snd_cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw x min_rtt x gain), packets; TCP_INIT_CWND without an RTT sample.
    pub(crate) fn bdp(&self, bw: u64, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return TCP_INIT_CWND;
        }
        // Round up, so that a small error never shrinks the window below the BDP. In u64
        // while the product fits (the same value as in u128).
        match bw
            .checked_mul(self.min_rtt_us as u64)
            .and_then(|w| w.checked_mul(gain as u64))
        {
            Some(w_gain) => ((w_gain >> BBR_SCALE).div_ceil(BW_UNIT)).min(u32::MAX as u64) as u32,
            None => {
                let w = bw as u128 * self.min_rtt_us as u128;
                let bdp = ((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128);
                bdp.min(u32::MAX as u128) as u32
            }
        }
    }

    /// `bbr_quantization_budget`: room for TSO bursts on both hosts, an even cwnd, and
    /// +2 in the 1.25 phase so that probing raises in-flight even for tiny BDPs
    /// (`probe_bw_plus_two`; 4.x `bbr_target_cwnd` has the first two only).
    pub(crate) fn quantization_budget(&self, tp: &TcpSock, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.saturating_add(3 * self.tso_segs_goal(tp));
        cwnd = (cwnd.saturating_add(1)) & !1;
        if self.flags.probe_bw_plus_two && self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd = cwnd.saturating_add(2);
        }
        cwnd
    }

    /// `bbr_inflight`: BDP x gain plus the quantisation budget.
    pub(crate) fn inflight(&self, tp: &TcpSock, bw: u64, gain: u32) -> u32 {
        let bdp = self.bdp(bw, gain);
        self.quantization_budget(tp, bdp)
    }

    /// `bbr_packets_in_net_at_edt`: in-flight expected when the next packet leaves the
    /// pacer (`tp.wstamp_ns`), counting that packet's TSO burst when inflight is growing.
    /// Without `inflight_at_edt` (4.x) `inflight_now` as is.
    pub(crate) fn packets_in_net_at_edt(&self, tp: &TcpSock, inflight_now: u32) -> u32 {
        if !self.flags.inflight_at_edt {
            return inflight_now;
        }
        let edt_ns = tp.wstamp_ns.max(tp.now_ns);
        let interval_us = (edt_ns - tp.now_ns) / 1_000;
        let interval_delivered = mul_shr(self.bw(), interval_us, BW_SCALE);
        let mut inflight_at_edt = inflight_now as u64;
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt += self.tso_segs_goal(tp) as u64;
        }
        inflight_at_edt.saturating_sub(interval_delivered) as u32
    }

    /// `bbr_ack_aggregation_cwnd`: extra cwnd for ACK aggregation, once the pipe is full.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.extra_acked_gain == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr_cwnd = mul_shr(self.bw(), EXTRA_ACKED_MAX_US, BW_SCALE);
        let aggr_cwnd = (self.extra_acked_gain * self.extra_acked() as u64) >> BBR_SCALE;
        aggr_cwnd.min(max_aggr_cwnd) as u32
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: deduct losses, packet conservation in the first
    /// round of Recovery, restore the saved cwnd on leaving Recovery/Loss. Returns the cwnd
    /// and whether packet conservation decides it.
    fn set_cwnd_to_recover_or_restore(
        &mut self,
        tp: &TcpSock,
        rs: &RateSample,
        acked: u32,
    ) -> (u32, bool) {
        let prev_state = self.prev_ca_state;
        let state = tp.ca_state;
        let mut cwnd = tp.snd_cwnd;

        // An ACK for P packets releases at most 2P: first deduct what was lost (in any CA
        // state), then bbr_set_cwnd slow-starts toward the target.
        if rs.losses > 0 {
            cwnd = (cwnd as i64 - rs.losses as i64).max(1) as u32;
        }

        if state == CaState::Recovery && prev_state != CaState::Recovery {
            // First round of Recovery: packet conservation, and a round starts now.
            self.packet_conservation = true;
            self.next_rtt_delivered = tp.delivered;
            // Cut unused cwnd (app-limited, TSO deferral) down to what is in flight.
            cwnd = tp.packets_in_flight() + acked;
        } else if prev_state >= CaState::Recovery && state < CaState::Recovery {
            // Leaving loss recovery: restore the cwnd saved when it started.
            self.restore_cwnd = true;
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;

        if self.restore_cwnd {
            // Leaving recovery, or (4.x) PROBE_RTT on an earlier ACK.
            cwnd = cwnd.max(self.prior_cwnd);
            self.restore_cwnd = false;
        }

        if self.packet_conservation {
            return (cwnd.max(tp.packets_in_flight() + acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`: slow-start toward the target (2 x BDP + aggregation + budget in
    /// PROBE_BW), or snap down to it once the pipe is full; 4 packets in PROBE_RTT.
    fn set_cwnd(&mut self, tp: &mut TcpSock, rs: &RateSample, acked: u32, bw: u64, gain: u32) {
        if acked == 0 && !self.flags.probe_rtt_cap_zero_acked {
            return; // 4.x: `if (!acked) return;`, before the caps
        }
        let mut cwnd = tp.snd_cwnd;
        let mut conservation = false;
        if acked != 0 {
            let (c, cons) = self.set_cwnd_to_recover_or_restore(tp, rs, acked);
            cwnd = c;
            conservation = cons;
            if !cons {
                let mut target = self.bdp(bw, gain);
                // Extra in-flight for data/ACK aggregation seen in the ACK stream.
                target = target.saturating_add(self.ack_aggregation_cwnd());
                target = self.quantization_budget(tp, target);

                if self.full_bw_reached {
                    // Only cut cwnd once the pipe has been filled.
                    cwnd = cwnd.saturating_add(acked).min(target);
                } else if cwnd < target || tp.delivered < TCP_INIT_CWND as u64 {
                    cwnd = cwnd.saturating_add(acked);
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        // done: (acked == 0 or packet conservation jump here in Linux)
        tp.snd_cwnd = cwnd.min(tp.snd_cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            // Drain the queue and refresh min_rtt.
            tp.snd_cwnd = tp.snd_cwnd.min(CWND_MIN_TARGET);
        }

        // reference 8.2: cwnd >= 4 except with nothing acked (e.g. right after an RTO cut
        // cwnd to 1), in packet conservation, or under a smaller clamp; <= 4 in PROBE_RTT.
        debug_assert!(
            acked == 0
                || conservation
                || tp.snd_cwnd_clamp < CWND_MIN_TARGET
                || tp.snd_cwnd >= CWND_MIN_TARGET,
            "BBR: cwnd {} below the 4-packet floor",
            tp.snd_cwnd
        );
        debug_assert!(
            self.mode != Mode::ProbeRtt || tp.snd_cwnd <= CWND_MIN_TARGET,
            "BBR: cwnd {} above 4 in PROBE_RTT",
            tp.snd_cwnd
        );
    }

    // ---------------------------------------------------------------- gain cycling

    /// `bbr_is_next_cycle_phase`: end the phase after one min_rtt, and for the 1.25 phase
    /// only once in-flight reached 1.25 x BDP (or packets were lost); the 0.75 phase ends
    /// early once in-flight is down to the BDP.
    fn is_next_cycle_phase(&self, tp: &TcpSock, rs: &RateSample) -> bool {
        let delta_us = (tp.delivered_mstamp_ns / 1_000).saturating_sub(self.cycle_mstamp_us);
        let is_full_length = delta_us > self.min_rtt_us as u64;

        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }

        let inflight = self.packets_in_net_at_edt(tp, rs.prior_in_flight);
        let bw = self.max_bw();

        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses > 0 || inflight >= self.inflight(tp, bw, self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    /// `bbr_advance_cycle_phase`; without `gains_every_ack` (4.x) it sets the phase's
    /// pacing gain: 1 while the policer rate is in use (4.15), the cycle's own with
    /// `lt_bw_freezes_cycle` (4.13, where the cycle only advances into PROBE_BW then).
    fn advance_cycle_phase(&mut self, tp: &TcpSock) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp_us = tp.delivered_mstamp_ns / 1_000;
        if !self.flags.gains_every_ack {
            self.pacing_gain = if self.lt_use_bw && !self.flags.lt_bw_freezes_cycle {
                BBR_UNIT
            } else {
                PACING_GAIN[self.cycle_idx as usize]
            };
        }
    }

    /// `bbr_update_cycle_phase`; with `lt_bw_freezes_cycle` (4.13) the cycle stands still
    /// while the policer rate is in use.
    fn update_cycle_phase(&mut self, tp: &TcpSock, rs: &RateSample) {
        if self.mode == Mode::ProbeBw
            && !(self.flags.lt_bw_freezes_cycle && self.lt_use_bw)
            && self.is_next_cycle_phase(tp, rs)
        {
            self.advance_cycle_phase(tp);
        }
    }

    /// Set both gains at a mode change (4.x; with `gains_every_ack` `update_gains` does).
    fn set_gains_at_transition(&mut self, pacing_gain: u32, cwnd_gain: u32) {
        if !self.flags.gains_every_ack {
            self.pacing_gain = pacing_gain;
            self.cwnd_gain = cwnd_gain;
        }
    }

    /// `bbr_reset_startup_mode`.
    fn reset_startup_mode(&mut self) {
        self.mode = Mode::Startup;
        self.set_gains_at_transition(HIGH_GAIN, HIGH_GAIN);
    }

    /// `bbr_reset_probe_bw_mode`: start PROBE_BW in a random phase other than 0.75:
    /// `cycle_idx = 7 - U{0..6}`, then advance once, so the phase is one of {0, 2..7}.
    /// `fixed_start_phase` replaces the draw (and uses no randomness).
    fn reset_probe_bw_mode(&mut self, tp: &TcpSock) {
        self.mode = Mode::ProbeBw;
        self.set_gains_at_transition(BBR_UNIT, self.probe_bw_cwnd_gain);
        match self.params.fixed_start_phase {
            Some(k) => {
                self.cycle_idx = (k as u32 + CYCLE_LEN - 1) & (CYCLE_LEN - 1);
            }
            None => {
                self.cycle_idx = CYCLE_LEN - 1 - self.rng.below(CYCLE_RAND);
            }
        }
        self.advance_cycle_phase(tp);
        debug_assert!(
            self.params.fixed_start_phase.is_some() || self.cycle_idx != 1,
            "BBR: PROBE_BW started in the 0.75 phase"
        );
    }

    /// `bbr_reset_mode`: back to STARTUP if the pipe was never filled, else PROBE_BW.
    fn reset_mode(&mut self, tp: &TcpSock) {
        if !self.full_bw_reached {
            self.reset_startup_mode();
        } else {
            self.reset_probe_bw_mode(tp);
        }
    }

    // ---------------------------------------------------------------- long-term bw

    /// `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_bw_sampling_interval(&mut self, tp: &TcpSock) {
        self.lt_last_stamp_ms = tp.delivered_mstamp_ns / 1_000_000;
        self.lt_last_delivered = tp.delivered;
        self.lt_last_lost = tp.lost;
        self.lt_rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    fn reset_lt_bw_sampling(&mut self, tp: &TcpSock) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// `bbr_lt_bw_interval_done`: two consecutive lossy intervals with consistent delivery
    /// rates mean a policer; then use their average.
    fn lt_bw_interval_done(&mut self, tp: &TcpSock, bw: u64) {
        if self.lt_bw != 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT as u64 <= LT_BW_RATIO * self.lt_bw
                || self.rate_bytes_per_sec(tp, diff, BBR_UNIT) <= LT_BW_DIFF
            {
                // All criteria met: we are policed.
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT; // try to avoid drops
                self.lt_rtt_cnt = 0;
                self.counters.lt_bw_engagements += 1;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// `bbr_lt_bw_sampling`: detect a token-bucket policer from two lossy intervals of 4 to
    /// 16 rounds each with consistent throughput, and hold lt_bw for 48 rounds.
    fn lt_bw_sampling(&mut self, tp: &TcpSock, rs: &RateSample) {
        if !self.params.lt_bw {
            return;
        }
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(tp); // stop using lt_bw
                    self.reset_probe_bw_mode(tp); // restart gain cycling
                }
            }
            return;
        }

        // Wait for the first loss: the policer's tokens are then exhausted, so the
        // interval measures its steady rate rather than the initial burst.
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(tp);
            self.lt_is_sampling = true;
        }

        // Running out of data would underestimate the rate.
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(tp);
            return;
        }

        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(tp); // interval too long
            return;
        }

        // End the interval only on a loss (the tokens are exhausted then).
        if rs.losses == 0 {
            return;
        }

        let lost = tp.lost - self.lt_last_lost;
        let delivered = tp.delivered - self.lt_last_delivered;
        // Lossy enough (lost/delivered >= 50/256)? Else keep waiting.
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered {
            return;
        }

        let t_ms = (tp.delivered_mstamp_ns / 1_000_000) as i64 - self.lt_last_stamp_ms as i64;
        if t_ms < 1 {
            return; // shorter than 1 ms: wait
        }
        if t_ms as u64 >= u32::MAX as u64 / 1_000 {
            self.reset_lt_bw_sampling(tp); // too long for Linux's u32 arithmetic
            return;
        }
        let t_us = t_ms as u64 * 1_000;
        let bw = delivered * BW_UNIT / t_us;
        self.lt_bw_interval_done(tp, bw);
    }

    // ---------------------------------------------------------------- model update

    /// `bbr_update_bw`: count packet-timed rounds and feed the max filter.
    fn update_bw(&mut self, tp: &TcpSock, rs: &RateSample) {
        self.round_start = false;
        if rs.delivered < 0 || rs.interval_us <= 0 {
            return; // not a valid observation
        }

        // A round ends when a packet sent after the previous round's end is ACKed.
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = tp.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }

        self.lt_bw_sampling(tp, rs);

        // delivered / interval is a lower bound of the bottleneck rate.
        let bw = rs.delivered as u64 * BW_UNIT / rs.interval_us as u64;

        // App-limited samples would drag the estimate down; keep them only if they beat it.
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw
                .running_max(self.params.bw_rtts as u64, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_ack_aggregation`: the largest excess of ACKed data over bw x epoch, kept
    /// in two slots of 5 rounds each.
    fn update_ack_aggregation(&mut self, tp: &TcpSock, rs: &RateSample) {
        if self.extra_acked_gain == 0
            || rs.acked_sacked == 0
            || rs.delivered < 0
            || rs.interval_us <= 0
        {
            return;
        }

        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1F);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }

        // Packets expected to be delivered over the epoch at the estimated bw.
        let epoch_us = (tp.delivered_mstamp_ns / 1_000).saturating_sub(self.ack_epoch_mstamp_us);
        let mut expected_acked = mul_shr(self.bw(), epoch_us, BW_SCALE) as u32;

        // ACKs no faster than bw, or a very old epoch: start a new epoch.
        if self.ack_epoch_acked <= expected_acked
            || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp_us = tp.delivered_mstamp_ns / 1_000;
            expected_acked = 0;
        }

        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xFFFFF);
        let extra = (self.ack_epoch_acked - expected_acked).min(tp.snd_cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        if extra > *slot {
            *slot = extra;
        }
    }

    /// `bbr_check_full_bw_reached`: the pipe is full after 3 non-app-limited rounds in a
    /// row without 25% growth of the max filter.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh = (self.full_bw * FULL_BW_THRESH) >> BBR_SCALE;
        if self.max_bw() >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`: STARTUP -> DRAIN once full, then DRAIN -> PROBE_BW once the
    /// in-network estimate is down to one BDP (possibly on the same ACK).
    fn check_drain(&mut self, tp: &mut TcpSock) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.set_gains_at_transition(DRAIN_GAIN, HIGH_GAIN);
            if self.flags.ssthresh_at_drain {
                tp.snd_ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
            }
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(tp, tp.packets_in_flight())
                <= self.inflight(tp, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(tp); // queue estimated drained
        }
    }

    /// `bbr_check_probe_rtt_done`: after 200 ms (and a round) at 4 packets, restart the
    /// min-RTT window, restore cwnd and leave PROBE_RTT. Without
    /// `probe_rtt_restore_at_exit` (4.x) the restore waits for the next ACK of data.
    fn check_probe_rtt_done(&mut self, tp: &mut TcpSock) {
        match self.probe_rtt_done_stamp {
            Some(done) if tp.jiffies() > done => {}
            _ => return,
        }
        self.min_rtt_stamp = tp.jiffies(); // the next PROBE_RTT is a window away
        if self.flags.probe_rtt_restore_at_exit {
            tp.snd_cwnd = tp.snd_cwnd.max(self.prior_cwnd);
        } else {
            self.restore_cwnd = true; // snap to prior_cwnd in bbr_set_cwnd
        }
        self.reset_mode(tp);
    }

    /// The RTprop modification (reference 6.3 a and a2), evaluated in `bbr_update_min_rtt`
    /// before the expiry test.
    ///
    /// Trigger: `rs.rtt_us > rate_th x min_rtt_us` (strictly), or with `rtt_ratio_or_loss`
    /// also `rs.losses > 0`; at most once per round if `trigger_once_per_round`. Skipped
    /// while the stock filter has expired anyway (the regular expiry then runs as is).
    fn rtprop_modification(
        &mut self,
        tp: &TcpSock,
        rs: &RateSample,
        stock_expired: bool,
    ) -> Modification {
        let p = &self.params;
        if p.rtprop_trigger == RtpropTrigger::Off || stock_expired {
            return Modification::None;
        }
        let ratio = rs.rtt_us >= 0
            && self.min_rtt_us != u32::MAX
            && rs.rtt_us as f64 > p.rate_th * self.min_rtt_us as f64;
        let loss = p.rtprop_trigger == RtpropTrigger::RttRatioOrLoss && rs.losses > 0;
        if !(ratio || loss) {
            return Modification::None;
        }
        if p.trigger_once_per_round && self.last_trigger_round == Some(self.rtt_cnt) {
            return Modification::None;
        }
        match p.rtprop_action {
            RtpropAction::Expire => {
                self.last_trigger_round = Some(self.rtt_cnt);
                self.counters.forced_expiries += 1;
                Modification::ForcedExpiry
            }
            RtpropAction::Update => {
                // The update needs a sample above RTprop: a loss-triggered ACK may carry no
                // sample, or a new minimum, which the stock filter takes as usual.
                if rs.rtt_us < 0 || rs.rtt_us <= self.min_rtt_us as i64 {
                    return Modification::None;
                }
                self.last_trigger_round = Some(self.rtt_cnt);
                // RTprop <- a x RTT + (1 - a) x RTprop, to the nearest µs.
                let a = p.update_gain_a;
                let v = a * rs.rtt_us as f64 + (1.0 - a) * self.min_rtt_us as f64;
                self.min_rtt_us = v.round().clamp(0.0, (u32::MAX - 1) as f64) as u32;
                if p.update_refresh_stamp {
                    self.min_rtt_stamp = tp.jiffies();
                }
                self.counters.rtprop_updates += 1;
                Modification::Updated
            }
        }
    }

    /// The expiry test of `bbr_update_min_rtt`, `after(tcp_jiffies32, min_rtt_stamp +
    /// win)`: jiffies(now) > stamp + win, i.e. now_ns / J + I > X with J ns per jiffy, I the
    /// initial jiffies, X = stamp + win. That is now_ns >= (X - I + 1) x J (always if X < I,
    /// never if the product overflows); the bound is computed once per stamp, so that an ACK
    /// divides nothing.
    fn min_rtt_expired(&mut self, tp: &TcpSock) -> bool {
        let stamp = self.min_rtt_stamp;
        let expiry_ns = match self.min_rtt_expiry {
            Some((s, e)) if s == stamp => e,
            _ => {
                let x = stamp + self.min_rtt_win_jiffies(tp);
                let jiffy_ns = 1_000_000_000 / tp.hz as u64;
                let e = match x.checked_sub(tp.initial_jiffies) {
                    None => Some(0),
                    Some(d) => d.checked_add(1).and_then(|n| n.checked_mul(jiffy_ns)),
                };
                self.min_rtt_expiry = Some((stamp, e));
                e
            }
        };
        expiry_ns.is_some_and(|e| tp.now_ns >= e)
    }

    /// `bbr_update_min_rtt`: min-RTT filter, its expiry, and PROBE_RTT.
    ///
    /// Expiry (no new minimum for `min_rtt_win_sec`) does two things on the same ACK: the
    /// current sample, queueing included, becomes min_rtt (unless the ACK may have been
    /// delayed), and BBR enters PROBE_RTT.
    fn update_min_rtt(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        let stock_expired = self.min_rtt_expired(tp);
        let modification = self.rtprop_modification(tp, rs, stock_expired);
        let forced = modification == Modification::ForcedExpiry;
        let filter_expired = stock_expired || forced;

        // (An RTprop update has consumed this sample: with a = 1 the stock test below would
        // otherwise see rtt <= min_rtt and refresh the stamp, which is an option.)
        let new_min = if self.params.min_rtt_refresh_on_equal == Some(true) {
            rs.rtt_us <= self.min_rtt_us as i64
        } else {
            rs.rtt_us < self.min_rtt_us as i64
        };
        // 4.16+ (`min_rtt_skip_delayed_ack`): an expired filter takes no sample from an
        // ACK that may have been delayed.
        let delayed = rs.is_ack_delayed && self.flags.min_rtt_skip_delayed_ack;
        if modification != Modification::Updated
            && rs.rtt_us >= 0
            && (new_min || (filter_expired && !delayed))
        {
            self.min_rtt_us = rs.rtt_us.min(u32::MAX as i64 - 1) as u32;
            self.min_rtt_stamp = tp.jiffies();
        }

        if self.params.probe_rtt_ms > 0
            && filter_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.mode = Mode::ProbeRtt; // dip, drain the queue
            self.set_gains_at_transition(BBR_UNIT, BBR_UNIT);
            self.save_cwnd(tp); // to restore it on exit
            self.probe_rtt_done_stamp = None;
            self.counters.probe_rtt_entries += 1;
            if forced {
                self.counters.forced_probe_rtt_entries += 1;
            }
        }

        if self.mode == Mode::ProbeRtt {
            // Samples taken at 4 packets say nothing about the bottleneck rate.
            tp.app_limited = (tp.delivered + tp.packets_in_flight() as u64).max(1);
            // Hold the minimum in-flight for max(probe_rtt_ms, one round).
            if self.probe_rtt_done_stamp.is_none() && tp.packets_in_flight() <= CWND_MIN_TARGET {
                self.probe_rtt_done_stamp = Some(
                    tp.jiffies() + tp.usecs_to_jiffies(self.params.probe_rtt_ms as u64 * 1_000),
                );
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = tp.delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(tp);
                }
            }
        }
        // The restart after idle ends once an ACK delivers new data (4.x: on every ACK).
        if rs.delivered > 0 || !self.flags.idle_restart_needs_delivery {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        match self.mode {
            Mode::Startup => {
                self.pacing_gain = HIGH_GAIN;
                self.cwnd_gain = HIGH_GAIN;
            }
            Mode::Drain => {
                self.pacing_gain = DRAIN_GAIN; // slow, to drain
                self.cwnd_gain = HIGH_GAIN; // keep cwnd
            }
            Mode::ProbeBw => {
                self.pacing_gain = if self.lt_use_bw {
                    BBR_UNIT
                } else {
                    PACING_GAIN[self.cycle_idx as usize]
                };
                self.cwnd_gain = self.probe_bw_cwnd_gain;
            }
            Mode::ProbeRtt => {
                self.pacing_gain = BBR_UNIT;
                self.cwnd_gain = BBR_UNIT;
            }
        }
    }

    /// `bbr_update_model`; the order matters (e.g. DRAIN can end on the ACK that began it,
    /// and PROBE_RTT entry is decided after the cycle update).
    fn update_model(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        self.update_bw(tp, rs);
        self.update_ack_aggregation(tp, rs);
        self.update_cycle_phase(tp, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(tp);
        self.update_min_rtt(tp, rs);
        if self.flags.gains_every_ack {
            self.update_gains();
        }
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// `bbr_init`.
    fn init(&mut self, tp: &mut TcpSock) {
        self.prior_cwnd = 0;
        tp.snd_ssthresh = crate::sock::TCP_INFINITE_SSTHRESH;
        self.rtt_cnt = 0;
        self.next_rtt_delivered = 0;
        self.prev_ca_state = CaState::Open;
        self.packet_conservation = false;

        self.probe_rtt_done_stamp = None;
        self.probe_rtt_round_done = false;
        self.min_rtt_us = tp.min_rtt_us;
        self.min_rtt_stamp = tp.jiffies();

        self.bw.reset(self.rtt_cnt, 0);

        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(tp);

        self.restore_cwnd = false;
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp_us = 0;
        self.cycle_idx = 0;
        self.reset_lt_bw_sampling(tp);
        self.reset_startup_mode();

        self.ack_epoch_mstamp_us = tp.now_us();
        self.ack_epoch_acked = 0;
        self.extra_acked_win_rtts = 0;
        self.extra_acked_win_idx = 0;
        self.extra_acked = [0; 2];
    }

    /// `bbr_ssthresh`: entering Recovery or Loss; save cwnd, leave ssthresh alone (4.x:
    /// `TCP_INFINITE_SSTHRESH`, "BBR does not use ssthresh").
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        self.save_cwnd(tp);
        if self.flags.ssthresh_at_drain {
            tp.snd_ssthresh
        } else {
            crate::sock::TCP_INFINITE_SSTHRESH
        }
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// `tcp_bbr_cong_ops` has no `pkts_acked`.
    fn has_pkts_acked(&self) -> bool {
        false
    }

    /// `bbr_main`.
    fn cong_control(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        self.update_model(tp, rs);
        let bw = self.bw();
        self.set_pacing_rate(tp, bw, self.pacing_gain);
        self.set_cwnd(tp, rs, rs.acked_sacked, bw, self.cwnd_gain);
    }

    /// `bbr_set_state`: an RTO is treated as the end of a round with a loss.
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        if new_state == CaState::Loss {
            let rs = RateSample {
                losses: 1,
                ..RateSample::default()
            };
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true;
            self.lt_bw_sampling(tp, &rs);
        }
    }

    /// `bbr_cwnd_event`: restart from idle while app-limited.
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        if event == CaEvent::TxStart && tp.app_limited != 0 {
            self.idle_restart = true;
            self.ack_epoch_mstamp_us = tp.now_us();
            self.ack_epoch_acked = 0;
            // No need for more speed: pace at the estimated bw to avoid pointless queueing.
            if self.mode == Mode::ProbeBw {
                let bw = self.bw();
                self.set_pacing_rate(tp, bw, BBR_UNIT);
            } else if self.mode == Mode::ProbeRtt && self.flags.probe_rtt_restore_at_exit {
                self.check_probe_rtt_done(tp);
            }
        }
    }

    /// `bbr_undo_cwnd`: a spurious slow-down; redo full-pipe detection, keep cwnd
    /// (4.13: keep everything, `undo_resets_sampling` off).
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        if self.flags.undo_resets_sampling {
            self.full_bw = 0;
            self.full_bw_cnt = 0;
            self.reset_lt_bw_sampling(tp);
        }
        tp.snd_cwnd
    }

    fn wants_pacing(&self) -> bool {
        true
    }

    /// `bbr_min_tso_segs`.
    fn min_tso_segs(&self, tp: &TcpSock) -> Option<u32> {
        Some(Self::min_tso_segs(tp) as u32)
    }

    /// `bbr_sndbuf_expand`: 3 x cwnd, since BBR may slow-start even during recovery.
    fn sndbuf_expand(&self) -> u32 {
        3
    }

    fn state_name(&self, _tp: &TcpSock) -> &'static str {
        self.mode.as_str()
    }

    /// BBR's model for the time series. Rates are payload bit/s (as `bbr_get_info` reports
    /// them, x8); the RTprop is NaN before the first RTT sample; flags are 0/1.
    fn sample_metrics(&self, tp: &TcpSock, out: &mut Vec<(&'static str, f64)>) {
        let rtprop = if self.min_rtt_us == u32::MAX {
            f64::NAN
        } else {
            self.min_rtt_us as f64
        };
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        out.extend_from_slice(&[
            (
                "bbr_btl_bw_bps",
                Self::bw_to_bits_per_sec(self.bw(), tp.mss),
            ),
            (
                "bbr_max_bw_bps",
                Self::bw_to_bits_per_sec(self.max_bw(), tp.mss),
            ),
            ("bbr_rtprop_us", rtprop),
            ("bbr_pacing_gain", self.pacing_gain as f64 / BBR_UNIT as f64),
            ("bbr_cwnd_gain", self.cwnd_gain as f64 / BBR_UNIT as f64),
            ("bbr_cycle_idx", self.cycle_idx as f64),
            ("bbr_round_count", self.rtt_cnt as f64),
            ("bbr_full_bw_reached", flag(self.full_bw_reached)),
            ("bbr_lt_sampling", flag(self.lt_is_sampling)),
            ("bbr_lt_use_bw", flag(self.lt_use_bw)),
            (
                "bbr_lt_bw_bps",
                Self::bw_to_bits_per_sec(self.lt_bw, tp.mss),
            ),
            ("bbr_extra_acked_pkts", self.extra_acked() as f64),
            ("bbr_packet_conservation", flag(self.packet_conservation)),
        ]);
    }

    /// Per-flow counters (see [`BbrCounters`]).
    fn summary_counters(&self, _tp: &TcpSock, out: &mut Vec<(&'static str, f64)>) {
        let c = &self.counters;
        out.extend_from_slice(&[
            ("bbr_probe_rtt_entry_count", c.probe_rtt_entries as f64),
            ("bbr_forced_expiry_count", c.forced_expiries as f64),
            (
                "bbr_forced_probe_rtt_entry_count",
                c.forced_probe_rtt_entries as f64,
            ),
            ("bbr_rtprop_update_count", c.rtprop_updates as f64),
            ("bbr_lt_bw_engagement_count", c.lt_bw_engagements as f64),
            ("bbr_round_count", self.rtt_cnt as f64),
        ]);
    }
}
