//! Copa (Arun & Balakrishnan, "Copa: Practical Delay-Based Congestion Control for the
//! Internet", NSDI 2018), on the Linux-like substrate through `cong_control`.
//!
//! Summary of the paper's algorithm (reference 5.1, 5.2), as implemented here:
//!
//! * Signals (section 2.1). `RTTmin` = min RTT over 10 s; `RTTstanding` = min RTT over the
//!   last srtt/2; queueing delay `dq = RTTstanding - RTTmin`.
//! * Target rate `lambda_t = 1 / (delta * dq)` packets/s; current rate
//!   `lambda = cwnd / RTTstanding`. Per ACKed packet, `cwnd += v / (delta * cwnd)` if
//!   `lambda <= lambda_t`, else `cwnd -= v / (delta * cwnd)`.
//! * Velocity `v`: once per window compare cwnd with its value at the start of the window;
//!   double v once the direction has been the same for 3 windows, else v = 1.
//! * Slow start: cwnd doubles per RTT (+1 per ACKed packet) until the first decrease.
//! * Pacing at `2 * cwnd / RTTstanding`; cwnd never below 2 packets.
//! * Competitive mode (section 2.2): if the queueing delay has not come below 10% of its
//!   recent maximum within the last 5 RTTs, a buffer-filler is present: run AIMD on 1/delta
//!   (+1 per RTT without loss, halve on loss at most once per RTT, delta <= 0.5). When the
//!   queue nearly empties again, go back to default mode with delta = 0.5.
//! * Default mode ignores loss; the substrate does loss recovery (SACK/RACK).
//!
//! Choices the paper leaves open, and what this module does (each is an option in
//! [`CopaParams`] when the reference code differs):
//!
//! * "srtt" is the substrate's (Linux) srtt; "RTT" for every per-RTT rule is srtt, and
//!   "once per window" uses packet-timed rounds (a round ends when a packet sent after the
//!   previous round's end is (S)ACKed, as `bbr_update_bw` does).
//! * With delayed ACKs one ACK can cover several packets: the per-ACK change is applied
//!   once per delivered packet (`v * acked / (delta * cwnd)`, as ccp_copa and mvfst do).
//! * The "recent maximum" of the detector is taken over the same 5 RTTs (genericCC
//!   `RTTWindow::is_copa` uses one window for both). A queue that never rose (max = 0)
//!   counts as empty.
//! * `snd_cwnd` is Copa's fractional cwnd rounded to the nearest packet (floor 2).
//! * RTO: cwnd = init_cwnd and slow start again (reference 5.4 recommended default, as
//!   ccp_copa `handle_timeout`); in competitive mode an RTO also counts as a loss for delta.
//! * Before the first RTT sample the flow is not paced (Linux initialises
//!   `sk_pacing_rate` to ~0, i.e. unlimited).
//! * The paper does not say which way v applies when a per-ACK decision opposes the
//!   direction v was built up in. Like ccp_copa (by the paper's first author) and mvfst,
//!   such a decision resets v to 1 at once (`velocity_reset_on_opposite`); applied the
//!   wrong way, a large v makes cwnd run away on a delayed-ACK substrate.
//! * v is capped at 2^16 (ccp_copa caps at 0xffff) only to keep the arithmetic finite.
//! * ECN: neither the paper nor genericCC reads it, so by default an ECE changes nothing in
//!   Copa (`ecn_response = "none"`; the TCP core still enters CWR, which `cong_control`
//!   ignores). `"loss"` treats a mark as a loss for the loss rules of competitive mode.

mod params;
#[cfg(test)]
mod tests;
pub mod window;

pub use params::{CopaParams, CopaVariant, EcnResponse, ModeSignal, Resolved, VelocityRule};

use crate::params::ParamError;
use crate::registry::{self, Algorithm, Family};

/// Copa's entry in the registry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "copa",
    summary: "Copa (Arun & Balakrishnan, NSDI 2018), the authors' genericCC code as a \
              variant: aims at 1/delta packets of standing queue, with a competitive mode \
              against buffer-filling flows",
    family: Family::DelayBased,
    linux_name: None,
    params: <CopaParams as crate::params::ParamTable>::params,
    // Copa's variant decides the defaults of several options: record them resolved.
    normalize: |v| registry::to_table(&registry::parse::<CopaParams>(v)?.normalized()?),
    build: |v, _seed| Ok(Box::new(Copa::new(&registry::parse::<CopaParams>(v)?)?)),
};
use window::{Extremum, WindowedExtremum};

use crate::{CaState, CongestionControl, RateSample, TcpSock, CA_ACK_ECE};

/// Smallest cwnd Copa sets, packets (genericCC `max(2.0, _the_window)`).
pub const MIN_CWND: f64 = 2.0;
/// Upper bound on the velocity, for numerical safety only (ccp_copa caps at 0xffff).
const MAX_VELOCITY: f64 = 65536.0;

/// Copa's mode (paper section 2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// delta fixed at `CopaParams::delta`: aim at 1/delta packets of standing queue.
    Default = 0,
    /// A buffer-filling competitor is present: AIMD on 1/delta (+1 per loss-free RTT, halved on
    /// loss).
    Competitive = 1,
}

impl Mode {
    /// The mode's name in the time series' `cca_state` (`"default"`, `"competitive"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::Competitive => "competitive",
        }
    }
}

/// Copa's state for one connection: its RTT filters, fractional cwnd, velocity, mode and
/// delta (see the module documentation for the rules and the choices the paper leaves open).
#[derive(Debug)]
pub struct Copa {
    p: Resolved,

    // --- RTT signals (paper section 2.1; genericCC `RTTWindow`)
    /// Copa's own srtt in µs when `srtt_gain > 0`; 0 before the first sample.
    own_srtt_us: f64,
    latest_rtt_us: u64,
    first_sample_us: Option<u64>,
    rtt_min_filter: WindowedExtremum,
    standing_filter: WindowedExtremum,
    mode_min_filter: WindowedExtremum,
    mode_max_filter: WindowedExtremum,
    rtt_min_us: u64,
    rtt_standing_us: u64,
    dq_us: u64,
    target_rate_pps: f64,

    // --- window control
    cwnd: f64,
    slow_start: bool,
    /// 1/delta, packets. delta = 1/inv_delta <= params.delta always.
    inv_delta: f64,
    mode: Mode,
    acks: u64,

    // --- packet-timed rounds ("once per window")
    next_round_delivered: u64,
    rounds: u64,
    round_start_cwnd: f64,
    loss_in_round: bool,

    // --- velocity
    velocity: f64,
    /// Paper rule: direction of the last finished window (+1 up, -1 down, 0 none yet).
    direction: i8,
    same_direction_rounds: u32,
    /// genericCC rule: `last_update_time`, `update_dir`, `prev_update_dir`.
    g_last_update_us: u64,
    g_update_dir: i64,
    g_prev_update_dir: i64,

    // --- competitive-mode delta updates
    last_halving_us: Option<u64>,

    // --- genericCC ReduceOnLoss
    rol_lost: u64,
    rol_pkts: u64,
    rol_window_start_us: u64,

    // --- ECN
    /// The ACK being processed carried ECE (`in_ack_event` runs before `cong_control`).
    ece_on_ack: bool,

    // --- accounting for the summary
    last_account_ns: u64,
    time_in_mode_ns: [u64; 2],
    mode_switches: u64,
}

impl Copa {
    /// Parameters must come from [`CopaParams::resolve`] (the registry checks them).
    pub fn new(params: &CopaParams) -> Result<Self, ParamError> {
        Ok(Self::from_resolved(params.resolve()?))
    }

    /// Copa with parameters already resolved (every variant-dependent option decided), before
    /// the first ACK: slow start, cwnd 10 packets, v = 1, default mode.
    pub fn from_resolved(p: Resolved) -> Self {
        Copa {
            p,
            own_srtt_us: 0.0,
            latest_rtt_us: 0,
            first_sample_us: None,
            rtt_min_filter: WindowedExtremum::new(Extremum::Min, 1),
            standing_filter: WindowedExtremum::new(Extremum::Min, 2),
            mode_min_filter: WindowedExtremum::new(Extremum::Min, 2),
            mode_max_filter: WindowedExtremum::new(Extremum::Max, 2),
            rtt_min_us: 0,
            rtt_standing_us: 0,
            dq_us: 0,
            target_rate_pps: f64::NAN,
            cwnd: 10.0,
            slow_start: true,
            inv_delta: 1.0 / p.delta,
            mode: Mode::Default,
            acks: 0,
            next_round_delivered: 0,
            rounds: 0,
            round_start_cwnd: 10.0,
            loss_in_round: false,
            velocity: 1.0,
            direction: 0,
            same_direction_rounds: 0,
            g_last_update_us: 0,
            g_update_dir: 1,
            g_prev_update_dir: 1,
            last_halving_us: None,
            rol_lost: 0,
            rol_pkts: 0,
            rol_window_start_us: 0,
            ece_on_ack: false,
            last_account_ns: 0,
            time_in_mode_ns: [0; 2],
            mode_switches: 0,
        }
    }

    // ----- read-only views (tests and metrics)

    /// The resolved parameters this instance runs with.
    pub fn params(&self) -> &Resolved {
        &self.p
    }
    /// Current mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// Current delta (1/packets): `params().delta` in default mode, at most that in competitive
    /// mode.
    pub fn delta(&self) -> f64 {
        1.0 / self.inv_delta
    }
    /// Current velocity v (1 to 2^16): how many packets per RTT the next cwnd step is worth.
    pub fn velocity(&self) -> f64 {
        self.velocity
    }
    /// Copa's fractional cwnd, packets.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }
    /// Copa's own slow start (cwnd doubles per RTT) has not ended yet.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }
    /// `RTTmin`: min RTT over the RTTmin window, µs; 0 before the first sample.
    pub fn rtt_min_us(&self) -> u64 {
        self.rtt_min_us
    }
    /// `RTTstanding`: min RTT over the last srtt/2, µs; 0 before the first sample.
    pub fn rtt_standing_us(&self) -> u64 {
        self.rtt_standing_us
    }
    /// Queueing delay `dq = RTTstanding - RTTmin`, µs.
    pub fn dq_us(&self) -> u64 {
        self.dq_us
    }
    /// 1/(delta dq) in packets/s; NaN while dq = 0 (target unbounded) or unknown.
    pub fn target_rate_pps(&self) -> f64 {
        self.target_rate_pps
    }
    /// Switches between default and competitive mode so far.
    pub fn mode_switches(&self) -> u64 {
        self.mode_switches
    }
    /// Seconds spent in (default, competitive) mode up to `now_ns`.
    pub fn time_in_modes_s(&self, now_ns: u64) -> (f64, f64) {
        let mut t = self.time_in_mode_ns;
        t[self.mode as usize] += now_ns.saturating_sub(self.last_account_ns);
        (t[0] as f64 * 1e-9, t[1] as f64 * 1e-9)
    }

    // ----- signals

    /// srtt in µs used for every "per RTT" rule: Copa's own EWMA (genericCC) or the
    /// substrate's (paper: "the standard smoothed RTT estimate").
    fn srtt_us(&self, tp: &TcpSock) -> f64 {
        if self.p.srtt_gain > 0.0 && self.own_srtt_us > 0.0 {
            self.own_srtt_us
        } else if tp.srtt_us > 0 {
            tp.srtt_us as f64
        } else {
            self.latest_rtt_us as f64
        }
    }

    /// RTTmin window, µs: paper 10 s; genericCC `max(10 s, 20 * RTTmin)`
    /// (`RTTWindow::new_rtt_sample`).
    fn rtt_min_window_us(&self) -> u64 {
        let base = self.p.rtt_min_window_s * 1e6;
        let by_rtt = self.p.rtt_min_window_rtts * self.rtt_min_us as f64;
        base.max(by_rtt) as u64
    }

    /// Feed one RTT sample into the windows (paper 2.1; genericCC `RTTWindow`).
    fn on_rtt_sample(&mut self, tp: &TcpSock, now_us: u64, rtt_us: u64) {
        self.latest_rtt_us = rtt_us;
        if self.first_sample_us.is_none() {
            self.first_sample_us = Some(now_us);
        }
        if self.p.srtt_gain > 0.0 {
            // genericCC RTTWindow: srtt = rtt on the first sample, then an EWMA per sample.
            if self.own_srtt_us == 0.0 {
                self.own_srtt_us = rtt_us as f64;
            }
            let g = self.p.srtt_gain;
            self.own_srtt_us = g * rtt_us as f64 + (1.0 - g) * self.own_srtt_us;
        }
        let srtt = self.srtt_us(tp);
        let long_w = self.rtt_min_window_us();
        // genericCC caps the short windows at the long one; the paper's never reach it.
        let standing_w = ((srtt * 0.5) as u64).min(long_w);
        let mode_w = ((srtt * self.p.mode_window_rtts) as u64).min(long_w);
        let max_w = ((srtt * self.p.mode_max_window_rtts) as u64).min(long_w);

        self.rtt_min_filter.push(now_us, rtt_us, long_w, long_w);
        self.standing_filter
            .push(now_us, rtt_us, standing_w, 2 * standing_w);
        // The filters hold the sample just pushed, so they are not empty.
        self.rtt_min_us = self.rtt_min_filter.get(now_us, long_w).unwrap_or(rtt_us);
        self.rtt_standing_us = self
            .standing_filter
            .get(now_us, standing_w)
            .unwrap_or(rtt_us);
        self.dq_us = self.rtt_standing_us.saturating_sub(self.rtt_min_us);

        let signal = match self.p.mode_signal {
            ModeSignal::Standing => self.rtt_standing_us,
            ModeSignal::Raw => rtt_us,
        };
        self.mode_min_filter
            .push(now_us, signal, mode_w, 2 * mode_w);
        self.mode_max_filter.push(now_us, signal, max_w, 2 * max_w);
        if self.p.competitive {
            self.update_mode(now_us, mode_w, max_w, signal);
        }
    }

    /// Competitive-mode detector (paper 2.2; genericCC `RTTWindow::is_copa`,
    /// `MarkovianCC::update_delta`). Default -> competitive when, over the last
    /// `mode_window_rtts` RTTs, the queueing delay never came below `mode_threshold` of its
    /// maximum over the last `mode_max_window_rtts` RTTs (by default the same window).
    /// Competitive -> default when the queue empties again: with
    /// `mode_return_needs_new_empty` (paper) the current reading must be nearly empty;
    /// otherwise (genericCC) the same windowed test is re-evaluated on every ACK, which can
    /// flip back and forth while the window, a multiple of srtt, moves across an old empty
    /// reading.
    fn update_mode(&mut self, now_us: u64, mode_w: u64, max_w: u64, signal: u64) {
        let history = now_us - self.first_sample_us.unwrap_or(now_us);
        let hi = self.mode_max_filter.get(now_us, max_w).unwrap_or(signal);
        let dq_hi = hi.saturating_sub(self.rtt_min_us) as f64;
        let threshold = self.p.mode_threshold * dq_hi;
        // A queue that never rose (dq_hi = 0) counts as empty.
        let empty_within_window = if history < mode_w {
            // Less than one window of history: no evidence of a buffer-filler yet.
            true
        } else {
            let lo = self.mode_min_filter.get(now_us, mode_w).unwrap_or(signal);
            lo.saturating_sub(self.rtt_min_us) as f64 <= threshold
        };
        let empty_now = signal.saturating_sub(self.rtt_min_us) as f64 <= threshold;
        match self.mode {
            Mode::Default if !empty_within_window => {
                self.mode = Mode::Competitive;
                self.mode_switches += 1;
            }
            Mode::Competitive
                if (self.p.mode_return_needs_new_empty && empty_now)
                    || (!self.p.mode_return_needs_new_empty && empty_within_window) =>
            {
                // "Switching back to default mode sets delta = default_delta."
                self.mode = Mode::Default;
                self.inv_delta = 1.0 / self.p.delta;
                self.mode_switches += 1;
            }
            _ => {}
        }
    }

    // ----- competitive-mode delta (genericCC `update_delta`)

    /// A loss in competitive mode: 1/delta halves (delta doubles), at most once per srtt
    /// unless `delta_halve_once_per_rtt` is off; delta never above its default.
    fn on_loss_delta(&mut self, now_us: u64, srtt_us: f64) {
        if self.mode != Mode::Competitive {
            return;
        }
        if self.p.delta_halve_once_per_rtt {
            if let Some(t) = self.last_halving_us {
                if (now_us.saturating_sub(t) as f64) < srtt_us {
                    return;
                }
            }
        }
        self.inv_delta = (self.inv_delta * 0.5).max(1.0 / self.p.delta);
        self.last_halving_us = Some(now_us);
    }

    /// End of a packet-timed round (one window, about one RTT).
    fn on_round_end(&mut self) {
        // AIMD on 1/delta, additive part: +1 per RTT (without loss, for the paper).
        if self.mode == Mode::Competitive
            && !(self.p.delta_ai_needs_lossless_rtt && self.loss_in_round)
        {
            self.inv_delta += 1.0;
        }
        // Paper velocity rule: compare cwnd with its value at the start of the window.
        if !self.slow_start && self.p.velocity_rule == VelocityRule::Paper {
            let dir: i8 = if self.cwnd > self.round_start_cwnd {
                1
            } else if self.cwnd < self.round_start_cwnd {
                -1
            } else {
                0
            };
            if dir != 0 && dir == self.direction {
                self.same_direction_rounds += 1;
            } else {
                self.direction = dir;
                self.same_direction_rounds = u32::from(dir != 0);
                self.velocity = 1.0;
            }
            // "start doubling v only after the direction has remained the same for three
            // RTTs" (paper 2.1, quoted in mvfst Copa.cpp).
            if self.p.velocity && self.same_direction_rounds >= self.p.velocity_rtts {
                self.velocity = (self.velocity * 2.0).min(MAX_VELOCITY);
            }
        }
    }

    /// ccp_copa `delay_control` / mvfst `changeDirection`: a decision against the current
    /// direction while v > 1 resets v to 1 and starts a new window in the new direction.
    fn velocity_check_opposite(&mut self, increase: bool) {
        if !self.p.velocity_reset_on_opposite || self.velocity <= 1.0 {
            return;
        }
        let dir: i8 = if increase { 1 } else { -1 };
        if dir != self.direction {
            self.velocity = 1.0;
            self.direction = dir;
            self.same_direction_rounds = 0;
            self.round_start_cwnd = self.cwnd;
        }
    }

    fn reset_velocity(&mut self, now_us: u64) {
        self.velocity = 1.0;
        self.direction = 0;
        self.same_direction_rounds = 0;
        self.round_start_cwnd = self.cwnd;
        self.g_last_update_us = now_us;
        self.g_update_dir = 1;
        self.g_prev_update_dir = 1;
    }

    /// genericCC `update_intersend_time`, velocity part: once per latest RTT, double if the
    /// net direction of the per-ACK decisions kept its sign, else reset to 1; then keep
    /// v <= delta * cwnd by halving, floor 1.
    fn genericcc_velocity(&mut self, now_us: u64) {
        if now_us.saturating_sub(self.g_last_update_us) > self.latest_rtt_us {
            if self.g_prev_update_dir * self.g_update_dir > 0 {
                if self.p.velocity {
                    self.velocity = (self.velocity * 2.0).min(MAX_VELOCITY);
                }
            } else {
                self.velocity = 1.0;
                self.g_prev_update_dir = -self.g_prev_update_dir;
            }
            self.g_last_update_us = now_us;
            self.g_update_dir = 0;
        }
        if self.velocity > self.cwnd * self.delta() {
            self.velocity /= 2.0;
        }
        self.velocity = self.velocity.max(1.0);
    }

    /// genericCC `ReduceOnLoss::update` (estimators.cc): returns true when cwnd should be
    /// cut to 0.7x. Counts packets rather than per-packet ACK events.
    fn reduce_on_loss(&mut self, now_us: u64, lost: u64, acked: u64) -> bool {
        self.rol_lost += lost;
        self.rol_pkts += lost + acked;
        if now_us > self.rol_window_start_us + 2 * self.latest_rtt_us && self.rol_pkts > 20 {
            let rate = self.rol_lost as f64 / self.rol_pkts as f64;
            self.rol_window_start_us = now_us;
            self.rol_lost = 0;
            self.rol_pkts = 0;
            return rate > 0.3;
        }
        false
    }

    fn account_time(&mut self, now_ns: u64) {
        let dt = now_ns.saturating_sub(self.last_account_ns);
        self.time_in_mode_ns[self.mode as usize] += dt;
        self.last_account_ns = self.last_account_ns.max(now_ns);
    }

    /// Write cwnd and the pacing rate to the socket (paper: pace at 2 cwnd / RTTstanding;
    /// genericCC intersend time 0.5 RTTstanding / cwnd).
    fn apply(&self, tp: &mut TcpSock) {
        let clamp = tp.snd_cwnd_clamp.max(MIN_CWND as u32);
        tp.snd_cwnd = (self.cwnd.round() as u32).clamp(MIN_CWND as u32, clamp);
        tp.pacing_rate_bytes_per_sec = if self.rtt_standing_us > 0 {
            let bps = 2.0 * self.cwnd * tp.mss as f64 * 1e6 / self.rtt_standing_us as f64;
            (bps as u64).max(1).min(tp.max_pacing_rate_bytes_per_sec)
        } else {
            tp.max_pacing_rate_bytes_per_sec
        };
    }

    fn check_invariants(&self) {
        debug_assert!(
            self.delta() <= self.p.delta * (1.0 + 1e-12),
            "delta {} above default {}",
            self.delta(),
            self.p.delta
        );
        debug_assert!(self.cwnd >= MIN_CWND, "cwnd {} below 2", self.cwnd);
    }
}

impl CongestionControl for Copa {
    fn name(&self) -> &'static str {
        "copa"
    }

    fn init(&mut self, tp: &mut TcpSock) {
        let p = self.p;
        *self = Copa::from_resolved(p);
        self.cwnd = (tp.snd_cwnd as f64).max(MIN_CWND);
        self.round_start_cwnd = self.cwnd;
        self.last_account_ns = tp.now_ns;
        self.apply(tp);
    }

    /// Copa keeps no ssthresh; like BBR, leave the socket's unchanged.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        tp.snd_ssthresh
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// Copa reads its RTT samples in `cong_control`.
    fn has_pkts_acked(&self) -> bool {
        false
    }

    fn wants_pacing(&self) -> bool {
        true
    }

    /// Copa reads ECE only with `ecn_response = "loss"`.
    fn has_in_ack_event(&self) -> bool {
        self.p.ecn_response == EcnResponse::Loss
    }

    fn in_ack_event(&mut self, _tp: &mut TcpSock, flags: u32) {
        self.ece_on_ack = self.p.ecn_response == EcnResponse::Loss && flags & CA_ACK_ECE != 0;
    }

    fn cong_control(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        self.account_time(tp.now_ns);
        let now_us = tp.now_us();

        if rs.rtt_us > 0 {
            self.on_rtt_sample(tp, now_us, rs.rtt_us as u64);
        }
        let srtt = self.srtt_us(tp);

        // Packet-timed rounds (as bbr_update_bw): a round ends when a packet sent after
        // the previous round ended is delivered.
        if rs.acked_sacked > 0 && rs.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = tp.delivered;
            self.rounds += 1;
            if self.rounds > 1 {
                self.on_round_end();
            }
            self.loss_in_round = false;
            self.round_start_cwnd = self.cwnd;
        }

        let ece = std::mem::take(&mut self.ece_on_ack);
        if rs.losses > 0 || ece {
            self.loss_in_round = true;
            self.on_loss_delta(now_us, srtt);
        }

        if self.first_sample_us.is_none() {
            // No RTT yet: nothing to compare against.
            self.apply(tp);
            return;
        }

        let acked_pkts = rs.acked_sacked;
        let probing = self.acks < self.p.probe_acks as u64;
        if acked_pkts > 0 {
            self.acks += 1;
        }

        // Target rate (paper 2.1): lambda_t = 1/(delta dq); current lambda = cwnd/RTTstanding.
        let delta = self.delta();
        self.target_rate_pps = if self.dq_us > 0 {
            1e6 / (delta * self.dq_us as f64)
        } else {
            f64::NAN
        };
        // lambda <= lambda_t  <=>  cwnd * delta * dq <= RTTstanding (dq = 0: always).
        let increase = self.cwnd * delta * self.dq_us as f64 <= self.rtt_standing_us as f64;

        if acked_pkts > 0 && !probing {
            // A stretch ACK cannot move cwnd by more than one window's worth of ACKs.
            let acked = (acked_pkts as f64).min(self.cwnd.max(1.0));
            if self.slow_start {
                if increase {
                    // Doubles per RTT: +1 per delivered packet.
                    self.cwnd += acked;
                } else {
                    // First decrease: leave slow start for good (until an RTO).
                    self.slow_start = false;
                    self.reset_velocity(now_us);
                }
            }
            if !self.slow_start {
                match self.p.velocity_rule {
                    VelocityRule::Genericcc => {
                        self.genericcc_velocity(now_us);
                        self.g_update_dir += if increase { 1 } else { -1 };
                    }
                    VelocityRule::Paper => self.velocity_check_opposite(increase),
                }
                let v = if self.p.velocity { self.velocity } else { 1.0 };
                let change = v * acked / (delta * self.cwnd);
                if increase {
                    self.cwnd += change;
                } else {
                    self.cwnd -= change;
                }
            }
        }

        if self.p.loss_reduce && self.reduce_on_loss(now_us, rs.losses as u64, acked_pkts as u64) {
            self.cwnd *= 0.7;
        }

        self.cwnd = self.cwnd.max(MIN_CWND);
        self.check_invariants();
        self.apply(tp);
    }

    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        if new_state != CaState::Loss {
            return;
        }
        // RTO (tcp_enter_loss). In competitive mode it is a loss like any other.
        let now_us = tp.now_us();
        let srtt = self.srtt_us(tp);
        self.loss_in_round = true;
        self.on_loss_delta(now_us, srtt);
        if self.p.rto_restart {
            // reference 5.4: cwnd = init_cwnd, slow start again (ccp_copa handle_timeout).
            self.cwnd = (tp.init_cwnd as f64).max(MIN_CWND);
            self.slow_start = true;
            self.reset_velocity(now_us);
            self.apply(tp);
        }
    }

    /// Copa's window lives in the module; an undo restores nothing beyond it.
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tp.snd_cwnd
    }

    fn state_name(&self, _tp: &TcpSock) -> &'static str {
        if self.slow_start {
            "slow_start"
        } else {
            self.mode.as_str()
        }
    }

    /// Units are in the names: mode 0 = default, 1 = competitive; delta in 1/packets;
    /// velocity unitless; delays in µs (NaN before the first RTT sample); target rate in
    /// packets/s (NaN while dq = 0, where the target is unbounded).
    fn sample_metrics(&self, _tp: &TcpSock, out: &mut Vec<(&'static str, f64)>) {
        let known = self.first_sample_us.is_some();
        let us = |v: u64| if known { v as f64 } else { f64::NAN };
        out.push((
            "copa_mode_competitive",
            f64::from(u8::from(self.mode == Mode::Competitive)),
        ));
        out.push(("copa_delta", self.delta()));
        out.push(("copa_velocity", self.velocity));
        out.push(("copa_dq_us", us(self.dq_us)));
        out.push(("copa_rtt_standing_us", us(self.rtt_standing_us)));
        out.push(("copa_rtt_min_us", us(self.rtt_min_us)));
        out.push(("copa_target_rate_pps", self.target_rate_pps));
    }

    fn summary_counters(&self, tp: &TcpSock, out: &mut Vec<(&'static str, f64)>) {
        let (d, c) = self.time_in_modes_s(tp.now_ns);
        out.push(("copa_time_default_s", d));
        out.push(("copa_time_competitive_s", c));
        out.push(("copa_mode_switch_count", self.mode_switches as f64));
    }
}
