//! Copa's parameter table.
//!
//! `variant` picks which reference the other options default to: `paper` (Arun &
//! Balakrishnan, NSDI 2018) or `genericcc` (the authors' code, venkatarun95/genericCC
//! `markoviancc.cc` / `rtt-window.cc` @18299d6, the code behind the paper's plots; docs/reference.md
//! 5.5). Every way in which genericCC differs from the paper is its own option below, so a
//! run can take the paper and switch on one reference-code behaviour at a time. Options left
//! out take the variant's value; the normalised table (what results record) has them all.

use serde::{Deserialize, Serialize};

use crate::params::ParamError;

/// Which reference the variant-dependent options default to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CopaVariant {
    /// The NSDI 2018 paper (reference 5.1, 5.2).
    #[default]
    Paper,
    /// The authors' genericCC code (reference 5.3, 5.4, 5.5).
    Genericcc,
}

/// The RTT series the competitive-mode detector looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModeSignal {
    /// `RTTstanding` at each ACK, so the detector watches dq = RTTstanding - RTTmin (paper).
    Standing,
    /// Raw per-ACK RTT samples (genericCC `RTTWindow::is_copa`, min and max of raw RTTs).
    Raw,
}

/// How the velocity `v` evolves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VelocityRule {
    /// Paper section 2.1 "Velocity": once per window compare cwnd with its value at the
    /// start of the window; double v when the direction has been the same for
    /// `velocity_rtts` windows, else v = 1.
    Paper,
    /// genericCC `update_intersend_time`: once per latest RTT, double v as soon as the net
    /// direction of the per-ACK decisions repeats (no 3-RTT wait), halve v while
    /// v > delta * cwnd, floor 1.
    Genericcc,
}

/// What Copa does with an ECN mark echoed by its receiver (ECE).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EcnResponse {
    /// Nothing: neither the paper nor the authors' code (genericCC) reads ECN.
    #[default]
    None,
    /// A mark is a loss (RFC 3168 section 6.1.2: respond to a mark as to a drop) for
    /// Copa's loss rules: in competitive mode 1/delta halves (at most once per srtt with
    /// `delta_halve_once_per_rtt`) and the round does not count as loss-free; default
    /// mode ignores marks as it ignores losses.
    Loss,
}

crate::choice!(CopaVariant: CopaVariant::Paper, CopaVariant::Genericcc);
crate::choice!(EcnResponse: EcnResponse::None, EcnResponse::Loss);
crate::choice!(ModeSignal: ModeSignal::Standing, ModeSignal::Raw);
crate::choice!(VelocityRule: VelocityRule::Paper, VelocityRule::Genericcc);

crate::param_table! {
    /// Parameters of `copa`. All fields are optional in a spec.
    #[derive(Clone, Debug, PartialEq)]
    pub struct CopaParams {
        /// Reference the options below default to: "paper" (default) or "genericcc".
        pub variant: CopaVariant = CopaVariant::Paper, unit "";
        /// delta in default mode, and the upper bound of delta in competitive mode. Unit:
        /// 1/packets (a flow aims at 1/delta packets of standing queue). Default 0.5 (paper;
        /// genericCC `auto:0.5`).
        pub delta: f64 = 0.5, unit "1/packets";
        /// Competitive mode (paper section 2.2): detect buffer-filling competitors and run
        /// AIMD on 1/delta. `false` keeps default mode and delta fixed. Default true.
        pub competitive: bool = true, unit "";
        /// Velocity (paper section 2.1). `false` keeps v = 1. Default true.
        pub velocity: bool = true, unit "";
        /// RTTmin window, seconds. Default 10 (paper and genericCC).
        pub rtt_min_window_s: f64 = 10.0, unit "s";
        /// RTTmin window is at least this many RTTmin (genericCC: max(10 s, 20 RTTmin)).
        /// 0 disables. Unit: RTTmin. Default: paper 0, genericcc 20.
        pub rtt_min_window_rtts: Option<f64> = None, unit "RTTmin";
        /// Gain of Copa's own srtt EWMA, updated on every RTT sample (genericCC `RTTWindow`:
        /// 1/16). 0 means use the TCP substrate's srtt (Linux `tcp_rtt_estimator`, gain 1/8),
        /// the "standard" srtt of the paper. Unitless. Default: paper 0, genericcc 0.0625.
        pub srtt_gain: Option<f64> = None, unit "";
        /// Competitive-mode detector window, in srtt: the queue must not have come near empty
        /// within this many RTTs (paper: 5; genericCC `is_copa`: 4). The "recent maximum"
        /// queueing delay is taken over the same window. Default: paper 5, genericcc 4.
        pub mode_window_rtts: Option<f64> = None, unit "srtt";
        /// Window of the "recent maximum" queueing delay, in srtt. The paper says "recent";
        /// genericCC uses the detector window. Default: `mode_window_rtts`.
        pub mode_max_window_rtts: Option<f64> = None, unit "srtt";
        /// "Nearly empty" threshold as a fraction of the recent maximum queueing delay.
        /// Unitless. Default 0.1 (paper and genericCC).
        pub mode_threshold: f64 = 0.1, unit "fraction";
        /// Series the detector watches: "standing" (dq from RTTstanding, paper) or "raw"
        /// (raw RTT samples, genericCC). Default: paper "standing", genericcc "raw".
        pub mode_signal: Option<ModeSignal> = None, unit "";
        /// Leave competitive mode only on a new nearly-empty reading ("when the queue empties
        /// again", paper). `false` re-evaluates the windowed test on every ACK as genericCC's
        /// `is_copa` does. Default: paper true, genericcc false.
        pub mode_return_needs_new_empty: Option<bool> = None, unit "";
        /// Velocity rule: "paper" or "genericcc". Default: the variant.
        pub velocity_rule: Option<VelocityRule> = None, unit "";
        /// Same-direction windows (RTTs) before v starts doubling, paper rule only. Default 3.
        pub velocity_rtts: u32 = 3, unit "RTTs";
        /// Paper rule only: when v > 1 and an ACK's decision opposes the current direction,
        /// reset v to 1 and start a new direction at once, instead of applying the large v
        /// the wrong way until the window ends. The paper does not say which way v applies;
        /// ccp_copa `delay_control` (by the paper's first author) and mvfst `changeDirection`
        /// both reset. Without it, on a delayed-ACK substrate the per-ACK decisions flip
        /// within a window while the window's net change keeps one sign, so v doubles every
        /// RTT and cwnd swings without bound. (genericCC bounds v by delta * cwnd instead.)
        /// Default: paper true, genericcc false.
        pub velocity_reset_on_opposite: Option<bool> = None, unit "";
        /// ACKs at connection start during which cwnd is not updated (genericCC: the first
        /// `2 * num_probe_pkts - 1` = 19 ACKs are "for probing"). Unit: ACKs. Default: paper 0,
        /// genericcc 19.
        pub probe_acks: Option<u32> = None, unit "ACKs";
        /// genericCC `ReduceOnLoss`: over windows of at least 2 RTTs and more than 20 packets,
        /// if more than 30% were lost, cwnd *= 0.7. Default: paper false, genericcc true.
        pub loss_reduce: Option<bool> = None, unit "";
        /// In competitive mode, halve 1/delta at most once per srtt (paper, "on loss"). `false`
        /// halves on every ACK that reports a loss (genericCC `update_delta(true)` is called
        /// with cur_rtt = 0, so its once-per-RTT guard never holds). Default: paper true,
        /// genericcc false.
        pub delta_halve_once_per_rtt: Option<bool> = None, unit "";
        /// In competitive mode, add 1 to 1/delta only at the end of an RTT without loss
        /// (paper). `false` adds 1 every RTT regardless (genericCC). Default: paper true,
        /// genericcc false.
        pub delta_ai_needs_lossless_rtt: Option<bool> = None, unit "";
        /// On an RTO (`set_state(Loss)`): `true` sets cwnd = init_cwnd and restarts slow start
        /// (reference 5.4 recommended default, as ccp_copa `handle_timeout`); `false` keeps
        /// Copa's cwnd (genericCC `onTimeout` is a no-op). Default: paper true, genericcc false.
        pub rto_restart: Option<bool> = None, unit "";
        /// What an ECN mark (an ACK with ECE, with ECN negotiated) does: "none" (default:
        /// the paper and genericCC ignore ECN; the TCP core still enters its CWR state, as
        /// for BBR) or "loss" (a mark counts as a loss for competitive mode's AIMD on
        /// 1/delta and its loss-free rounds, RFC 3168 section 6.1.2; default mode ignores
        /// it as it ignores losses; genericCC's ReduceOnLoss still counts only losses).
        pub ecn_response: EcnResponse = EcnResponse::None, unit "";
    }
}

/// Parameters with every variant-dependent option decided; each field is the
/// [`CopaParams`] option of the same name, where it is documented in full.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Resolved {
    /// Which reference the other options defaulted to.
    pub variant: CopaVariant,
    /// delta in default mode and its upper bound in competitive mode, 1/packets.
    pub delta: f64,
    /// Competitive mode is enabled.
    pub competitive: bool,
    /// Velocity is enabled (else v stays 1).
    pub velocity: bool,
    /// RTTmin window, s.
    pub rtt_min_window_s: f64,
    /// RTTmin window in RTTmin, when longer than `rtt_min_window_s` (0: off).
    pub rtt_min_window_rtts: f64,
    /// Gain of Copa's own srtt EWMA; 0 uses the substrate's srtt.
    pub srtt_gain: f64,
    /// Competitive-mode detector window, srtt.
    pub mode_window_rtts: f64,
    /// Window of the recent maximum queueing delay, srtt.
    pub mode_max_window_rtts: f64,
    /// "Nearly empty" threshold, as a fraction of the recent maximum queueing delay.
    pub mode_threshold: f64,
    /// The RTT series the detector watches.
    pub mode_signal: ModeSignal,
    /// Leave competitive mode only on a new nearly-empty reading.
    pub mode_return_needs_new_empty: bool,
    /// How the velocity evolves.
    pub velocity_rule: VelocityRule,
    /// Same-direction windows before v starts doubling (paper rule).
    pub velocity_rtts: u32,
    /// Reset v to 1 when an ACK's decision opposes the current direction (paper rule).
    pub velocity_reset_on_opposite: bool,
    /// ACKs at connection start that leave cwnd unchanged.
    pub probe_acks: u32,
    /// genericCC's ReduceOnLoss (cwnd x 0.7 after a window with more than 30% loss).
    pub loss_reduce: bool,
    /// In competitive mode, halve 1/delta at most once per srtt.
    pub delta_halve_once_per_rtt: bool,
    /// In competitive mode, add 1 to 1/delta only after an RTT without loss.
    pub delta_ai_needs_lossless_rtt: bool,
    /// An RTO restarts slow start from init_cwnd.
    pub rto_restart: bool,
    /// What an ECN mark does.
    pub ecn_response: EcnResponse,
}

impl CopaParams {
    /// Fill the variant-dependent options and check ranges. Errors name the key.
    pub fn resolve(&self) -> Result<Resolved, ParamError> {
        let paper = self.variant == CopaVariant::Paper;
        fn pick<T>(paper: bool, p: T, g: T) -> T {
            if paper {
                p
            } else {
                g
            }
        }
        let mode_window_rtts = self.mode_window_rtts.unwrap_or(pick(paper, 5.0, 4.0));
        let r = Resolved {
            variant: self.variant,
            delta: self.delta,
            competitive: self.competitive,
            velocity: self.velocity,
            rtt_min_window_s: self.rtt_min_window_s,
            rtt_min_window_rtts: self.rtt_min_window_rtts.unwrap_or(pick(paper, 0.0, 20.0)),
            srtt_gain: self.srtt_gain.unwrap_or(pick(paper, 0.0, 1.0 / 16.0)),
            mode_window_rtts,
            mode_max_window_rtts: self.mode_max_window_rtts.unwrap_or(mode_window_rtts),
            mode_threshold: self.mode_threshold,
            mode_signal: self.mode_signal.unwrap_or(pick(
                paper,
                ModeSignal::Standing,
                ModeSignal::Raw,
            )),
            mode_return_needs_new_empty: self.mode_return_needs_new_empty.unwrap_or(paper),
            velocity_rule: self.velocity_rule.unwrap_or(pick(
                paper,
                VelocityRule::Paper,
                VelocityRule::Genericcc,
            )),
            velocity_rtts: self.velocity_rtts,
            velocity_reset_on_opposite: self.velocity_reset_on_opposite.unwrap_or(paper),
            probe_acks: self.probe_acks.unwrap_or(pick(paper, 0, 19)),
            loss_reduce: self.loss_reduce.unwrap_or(!paper),
            delta_halve_once_per_rtt: self.delta_halve_once_per_rtt.unwrap_or(paper),
            delta_ai_needs_lossless_rtt: self.delta_ai_needs_lossless_rtt.unwrap_or(paper),
            rto_restart: self.rto_restart.unwrap_or(paper),
            ecn_response: self.ecn_response,
        };
        let finite_pos = |k: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(ParamError::new(
                    k,
                    format!("must be a finite number > 0, got {v}"),
                ))
            }
        };
        finite_pos("delta", r.delta)?;
        finite_pos("rtt_min_window_s", r.rtt_min_window_s)?;
        finite_pos("mode_window_rtts", r.mode_window_rtts)?;
        finite_pos("mode_max_window_rtts", r.mode_max_window_rtts)?;
        if !(r.rtt_min_window_rtts.is_finite() && r.rtt_min_window_rtts >= 0.0) {
            return Err(ParamError::new(
                "rtt_min_window_rtts",
                format!("must be >= 0, got {}", r.rtt_min_window_rtts),
            ));
        }
        if !(0.0..=1.0).contains(&r.srtt_gain) {
            return Err(ParamError::new(
                "srtt_gain",
                format!("must be in [0, 1] (0 = TCP srtt), got {}", r.srtt_gain),
            ));
        }
        if !(0.0..1.0).contains(&r.mode_threshold) {
            return Err(ParamError::new(
                "mode_threshold",
                format!("must be in [0, 1), got {}", r.mode_threshold),
            ));
        }
        if r.velocity_rtts == 0 {
            return Err(ParamError::new("velocity_rtts", "must be >= 1"));
        }
        Ok(r)
    }

    /// The table with every option filled in (what results record).
    pub fn normalized(&self) -> Result<CopaParams, ParamError> {
        let r = self.resolve()?;
        Ok(CopaParams {
            variant: r.variant,
            delta: r.delta,
            competitive: r.competitive,
            velocity: r.velocity,
            rtt_min_window_s: r.rtt_min_window_s,
            rtt_min_window_rtts: Some(r.rtt_min_window_rtts),
            srtt_gain: Some(r.srtt_gain),
            mode_window_rtts: Some(r.mode_window_rtts),
            mode_max_window_rtts: Some(r.mode_max_window_rtts),
            mode_threshold: r.mode_threshold,
            mode_signal: Some(r.mode_signal),
            mode_return_needs_new_empty: Some(r.mode_return_needs_new_empty),
            velocity_rule: Some(r.velocity_rule),
            velocity_rtts: r.velocity_rtts,
            velocity_reset_on_opposite: Some(r.velocity_reset_on_opposite),
            probe_acks: Some(r.probe_acks),
            loss_reduce: Some(r.loss_reduce),
            delta_halve_once_per_rtt: Some(r.delta_halve_once_per_rtt),
            delta_ai_needs_lossless_rtt: Some(r.delta_ai_needs_lossless_rtt),
            rto_restart: Some(r.rto_restart),
            ecn_response: r.ecn_response,
        })
    }
}
