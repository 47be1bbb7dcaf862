//! BBR's parameter table: the Linux constants ccfair exposes (reference 8.1) and the two
//! RTprop modifications of reference 6.3 (forced expire, RTprop update).
//!
//! Every default is Linux `tcp_bbr.c` (v5.x) with both modifications off.

use serde::{Deserialize, Serialize};

use crate::params::ParamError;

/// Which kernel generation's BBRv1 to run (reference 4.11, 9.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Profile {
    /// All features of the v5.x `tcp_bbr.c`: ACK-aggregation cwnd (`extra_acked`) and the
    /// EDT in-network estimate (`bbr_packets_in_net_at_edt`).
    #[default]
    #[serde(rename = "linux-5.x")]
    Linux5x,
    /// As `linux-5.x` without `extra_acked` (added in 5.1) and without the EDT term (4.20):
    /// phase and DRAIN tests use the plain in-flight count.
    #[serde(rename = "linux-4.9")]
    Linux49,
}

/// How `bbr_tso_segs_goal` is computed (reference 4.9).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TsoModel {
    /// About 1 ms of data at the pacing rate, at least 1 or 2 segments, at most 64 KB or
    /// 127 segments, as Linux computes it.
    #[default]
    Linux,
    /// One segment always (the quantisation budget is then +3 packets, as in ns-3).
    None,
}

/// When the RTprop modification fires (reference 6.3 a, a2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtpropTrigger {
    /// Stock BBRv1.
    #[default]
    Off,
    /// `rs.rtt_us > rate_th x min_rtt_us`.
    RttRatio,
    /// The ratio test, or any ACK that marks packets lost (`rs.losses > 0`).
    RttRatioOrLoss,
}

/// What the RTprop modification does when it fires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtpropAction {
    /// Forced expire (Sasaki/Ogawa et al., CANDAR 2020): behave as if the min-RTT filter had
    /// expired on this ACK. The current sample becomes min_rtt and BBR enters PROBE_RTT.
    #[default]
    Expire,
    /// RTprop update (Katsumata, Ogawa & Yamaguchi):
    /// `min_rtt <- a x rtt + (1 - a) x min_rtt`, with no PROBE_RTT and no cwnd cut.
    Update,
}

crate::choice!(Profile: Profile::Linux5x, Profile::Linux49);
crate::choice!(TsoModel: TsoModel::Linux, TsoModel::None);
crate::choice!(
    RtpropTrigger: RtpropTrigger::Off,
    RtpropTrigger::RttRatio,
    RtpropTrigger::RttRatioOrLoss
);
crate::choice!(RtpropAction: RtpropAction::Expire, RtpropAction::Update);

crate::param_table! {
    /// Parameters of `"bbr"`. Unknown keys are rejected; missing keys take the defaults below.
    #[derive(Clone, Debug, PartialEq)]
    pub struct BbrParams {
        /// Kernel generation (`linux-5.x` or `linux-4.9`).
        pub profile: Profile = Profile::Linux5x, unit "";
        /// TSO quantisation budget model (`linux` or `none`).
        pub tso_model: TsoModel = TsoModel::Linux, unit "";
        /// Long-term (policer) bandwidth estimation, `bbr_lt_bw_sampling`.
        pub lt_bw: bool = true, unit "";
        /// ACK-aggregation cwnd (`bbr_extra_acked_gain` = 1.0 when on, 0 when off). `null` takes
        /// the profile's value; the normalised table records the resolved boolean.
        pub extra_acked: Option<bool> = None, unit "";
        /// Whether an RTT sample equal to min_rtt refreshes the min-RTT stamp (postponing
        /// PROBE_RTT). Linux had `rtt <= min_rtt` until the 2020 fix "tcp: only postpone PROBE_RTT
        /// if RTT is < current min_rtt estimate" (v5.10 and stable kernels), `<` since. `null`
        /// takes the profile's value: false for `linux-5.x`, true for `linux-4.9`.
        pub min_rtt_refresh_on_equal: Option<bool> = None, unit "";
        /// PROBE_BW starts in this phase (0..=7) instead of a random one of {0, 2..7}.
        pub fixed_start_phase: Option<u8> = None, unit "phase";
        /// `bbr_min_rtt_win_sec`: min-RTT filter window and PROBE_RTT period, seconds.
        pub min_rtt_win_sec: u32 = 10, unit "s";
        /// `bbr_probe_rtt_mode_ms`: time held at 4 packets in PROBE_RTT; 0 disables PROBE_RTT,
        /// as in Linux.
        pub probe_rtt_ms: u32 = 200, unit "ms";
        /// `bbr_bw_rtts`: length of the max-bandwidth filter, in packet-timed rounds.
        pub bw_rtts: u32 = 10, unit "rounds";
        /// `bbr_cwnd_gain` of PROBE_BW as a real number (Linux 2.0 = 512/256); rounded to 1/256.
        pub cwnd_gain: f64 = 2.0, unit "x BDP";
        /// RTprop modification trigger (`off`, `rtt_ratio`, `rtt_ratio_or_loss`). Tested on every
        /// ACK in every mode, STARTUP and PROBE_RTT included, where Linux tests the min-RTT expiry.
        pub rtprop_trigger: RtpropTrigger = RtpropTrigger::Off, unit "";
        /// Threshold of the ratio RTT / RTprop above which the trigger fires (strictly above).
        pub rate_th: f64 = 2.0, unit "RTT / RTprop";
        /// RTprop modification action (`expire` or `update`).
        pub rtprop_action: RtpropAction = RtpropAction::Expire, unit "";
        /// Weight `a` of the RTprop update: 1 adopts the sample, 0.5 takes the midpoint.
        pub update_gain_a: f64 = 1.0, unit "";
        /// The RTprop update also refreshes `min_rtt_stamp` (which postpones the regular expiry).
        pub update_refresh_stamp: bool = false, unit "";
        /// The trigger fires at most once per packet-timed round.
        pub trigger_once_per_round: bool = false, unit "";
    }
}

impl BbrParams {
    /// Fill in the profile-dependent defaults, so that results record what ran.
    pub fn resolved(mut self) -> Self {
        if self.extra_acked.is_none() {
            self.extra_acked = Some(self.profile == Profile::Linux5x);
        }
        if self.min_rtt_refresh_on_equal.is_none() {
            self.min_rtt_refresh_on_equal = Some(self.profile == Profile::Linux49);
        }
        self
    }

    /// Range checks that serde cannot express.
    pub fn validate(&self) -> Result<(), ParamError> {
        if let Some(k) = self.fixed_start_phase {
            if k > 7 {
                return Err(ParamError::new(
                    "fixed_start_phase",
                    format!("{k} is not a phase (0..=7)"),
                ));
            }
        }
        if self.min_rtt_win_sec == 0 {
            return Err(ParamError::new("min_rtt_win_sec", "must be >= 1"));
        }
        if self.bw_rtts == 0 {
            return Err(ParamError::new("bw_rtts", "must be >= 1"));
        }
        if !(self.cwnd_gain.is_finite() && self.cwnd_gain >= 1.0 / 256.0 && self.cwnd_gain <= 16.0)
        {
            return Err(ParamError::new(
                "cwnd_gain",
                format!("{} is outside [1/256, 16]", self.cwnd_gain),
            ));
        }
        if !(self.rate_th.is_finite() && self.rate_th >= 1.0) {
            return Err(ParamError::new(
                "rate_th",
                format!("{} must be a finite ratio >= 1", self.rate_th),
            ));
        }
        if !(0.0..=1.0).contains(&self.update_gain_a) {
            return Err(ParamError::new(
                "update_gain_a",
                format!("{} is outside [0, 1]", self.update_gain_a),
            ));
        }
        Ok(())
    }

    /// PROBE_BW cwnd gain in Linux fixed point (1/256).
    pub fn cwnd_gain_fixed(&self) -> u32 {
        (self.cwnd_gain * 256.0).round() as u32
    }
}
