//! BBR's parameter table: the Linux constants ccfair exposes (reference 8.1) and the two
//! RTprop modifications of reference 6.3 (forced expire, RTprop update).
//!
//! Every default is Linux 6.18's `tcp_bbr.c` with both modifications off; `version` selects
//! the BBR of the studies' 4.13 and 4.15 kernels instead.

use serde::{Deserialize, Serialize};

use crate::params::ParamError;

/// Which Linux kernel's `tcp_bbr.c` (BBRv1) to run: it sets the default of every
/// version-dependent flag below (each can still be set on its own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Version {
    /// Linux 6.18 (the same BBRv1 since 5.10): pacing at bw x MSS x gain x 99 %, the EDT
    /// in-network estimate, `extra_acked`, and every fix of 4.16-5.10.
    #[default]
    #[serde(rename = "linux-6.18")]
    Linux618,
    /// Linux 4.15 (4.15.11 read): pacing at bw x MTU x gain, no EDT term, no `extra_acked`,
    /// `rtt <= min_rtt`, gains set at transitions; undo resets the full-pipe and policer
    /// sampling, and the gain cycle advances (gain 1) while the policer rate is used.
    #[serde(rename = "linux-4.15")]
    Linux415,
    /// Linux 4.13 (4.13.9 read): as 4.15 without the undo resets, and with the gain cycle
    /// frozen while the policer rate is used.
    #[serde(rename = "linux-4.13")]
    Linux413,
}

impl Version {
    /// A 4.x kernel (before the 4.16-5.10 changes).
    pub fn is_4x(self) -> bool {
        self != Version::Linux618
    }
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

crate::choice!(Version: Version::Linux618, Version::Linux415, Version::Linux413);
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
        /// Which Linux kernel's BBR runs (`linux-6.18`, `linux-4.15` or `linux-4.13`): the
        /// default of every flag below that is `null`.
        pub version: Version = Version::Linux618, unit "";
        /// TSO quantisation budget model (`linux` or `none`).
        pub tso_model: TsoModel = TsoModel::Linux, unit "";
        /// Long-term (policer) bandwidth estimation, `bbr_lt_bw_sampling`.
        pub lt_bw: bool = true, unit "";
        /// ACK-aggregation cwnd (`bbr_extra_acked_gain` = 1.0 when on, 0 when off; Linux 5.1+).
        /// `null` takes the version's value (true for 6.18, false for 4.x); the normalised
        /// table records the resolved boolean, as for every flag below.
        pub extra_acked: Option<bool> = None, unit "";
        /// Whether an RTT sample equal to min_rtt refreshes the min-RTT stamp (postponing
        /// PROBE_RTT). Linux had `rtt <= min_rtt` until the 2020 fix "tcp: only postpone
        /// PROBE_RTT if RTT is < current min_rtt estimate" (v5.10 and stable kernels), `<`
        /// since. `null`: false for 6.18, true for 4.x.
        pub min_rtt_refresh_on_equal: Option<bool> = None, unit "";
        /// Pacing rate on the packet size on the wire (4.x `bbr_rate_bytes_per_sec`: bw x MTU
        /// x gain, no margin) instead of bw x MSS x gain x 99 % (4.20+). `null`: true for 4.x.
        pub pacing_on_mtu: Option<bool> = None, unit "";
        /// The EDT in-network estimate (`bbr_packets_in_net_at_edt`, 4.20+) in the gain-cycle
        /// and DRAIN tests; off: the in-flight count as is. `null`: true for 6.18.
        pub inflight_at_edt: Option<bool> = None, unit "";
        /// An expired min-RTT filter takes no sample from a possibly delayed ACK
        /// (`!rs->is_ack_delayed`, 4.16+). `null`: true for 6.18.
        pub min_rtt_skip_delayed_ack: Option<bool> = None, unit "";
        /// +2 packets of cwnd in the 1.25 phase of PROBE_BW (`bbr_quantization_budget`: not in
        /// 4.16, in 4.20; for `cycle_idx == 0` since 5.4). `null`: true for 6.18.
        pub probe_bw_plus_two: Option<bool> = None, unit "";
        /// The PROBE_RTT cap of 4 packets applies on ACKs that acknowledge nothing too (not in
        /// 4.16, in 4.20; 4.x `bbr_set_cwnd` returned first). `null`: true for 6.18.
        pub probe_rtt_cap_zero_acked: Option<bool> = None, unit "";
        /// Leaving PROBE_RTT restores cwnd at once, and a restart from idle can end it
        /// (`bbr_check_probe_rtt_done`: not in 4.16, in 4.20); off: the 4.x `restore_cwnd`
        /// flag, applied by the next ACK that acknowledges data. `null`: true for 6.18.
        pub probe_rtt_restore_at_exit: Option<bool> = None, unit "";
        /// A restart from idle ends only once an ACK delivers data (in 4.16); off: on every
        /// ACK (4.13, 4.15). `null`: true for 6.18.
        pub idle_restart_needs_delivery: Option<bool> = None, unit "";
        /// Leaving STARTUP sets ssthresh to the BDP plus the quantisation budget, and
        /// entering recovery keeps it (not in 4.16, in 4.20); off: ssthresh stays infinite
        /// (`bbr_ssthresh` returns `TCP_INFINITE_SSTHRESH`, 4.x). `null`: true for 6.18.
        pub ssthresh_at_drain: Option<bool> = None, unit "";
        /// The gains follow the mode on every ACK (`bbr_update_gains`: not in 4.16, in 4.20);
        /// off: they are set when the mode or the gain-cycle phase changes (4.x), so that a
        /// policer rate found in STARTUP or DRAIN keeps gain 1 until the next change. `null`:
        /// true for 6.18.
        pub gains_every_ack: Option<bool> = None, unit "";
        /// A spurious-recovery undo resets full-pipe detection and policer sampling
        /// (`bbr_undo_cwnd`, 4.15+). `null`: false for 4.13, true otherwise.
        pub undo_resets_sampling: Option<bool> = None, unit "";
        /// While the policer rate (`lt_bw`) is in use the gain cycle stands still and the
        /// pacing gain is whatever was set last (4.13); off: the cycle advances with gain 1
        /// (4.15+). `null`: true for 4.13 only.
        pub lt_bw_freezes_cycle: Option<bool> = None, unit "";
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
    /// Fill in the version-dependent defaults, so that results record what ran.
    pub fn resolved(mut self) -> Self {
        let v = self.version;
        let new = !v.is_4x();
        let fill = |flag: &mut Option<bool>, value: bool| {
            flag.get_or_insert(value);
        };
        fill(&mut self.extra_acked, new);
        fill(&mut self.min_rtt_refresh_on_equal, !new);
        fill(&mut self.pacing_on_mtu, !new);
        fill(&mut self.inflight_at_edt, new);
        fill(&mut self.min_rtt_skip_delayed_ack, new);
        fill(&mut self.probe_bw_plus_two, new);
        fill(&mut self.probe_rtt_cap_zero_acked, new);
        fill(&mut self.probe_rtt_restore_at_exit, new);
        fill(&mut self.idle_restart_needs_delivery, new);
        fill(&mut self.ssthresh_at_drain, new);
        fill(&mut self.gains_every_ack, new);
        fill(&mut self.undo_resets_sampling, v != Version::Linux413);
        fill(&mut self.lt_bw_freezes_cycle, v == Version::Linux413);
        self
    }

    /// A resolved flag (`resolved` fills every one).
    pub fn flag(value: Option<bool>) -> bool {
        value.expect("BbrParams::resolved fills every version-dependent flag")
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
