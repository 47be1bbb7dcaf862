//! The ACK path of [`TestSender`]: `tcp_ack` in the order of net/ipv4/tcp_input.c (SACK
//! tagging, the cumulative ACK, `tcp_fastretrans_alert`), the rate sample of tcp_rate.c
//! (`tcp_rate_skb_delivered`, `tcp_rate_gen`), the RTT estimators, and congestion control
//! (`tcp_cong_control`, PRR, `tcp_update_pacing_rate`).

use std::ops::Range;

use super::{
    Ack, Delivery, RateState, TestSender, MIN_RTT_WLEN_S, PACING_CA_RATIO, PACING_SS_RATIO,
};
use crate::{
    AckSample, CaState, CongestionControl, RateSample, CA_ACK_ECE, CA_ACK_SLOWPATH,
    CA_ACK_WIN_UPDATE,
};

impl<C: CongestionControl> TestSender<C> {
    /// Process one ACK (`tcp_ack`): SACK tagging, the cumulative ACK (`pkts_acked`),
    /// losses and recovery entry as `a` says, the end of Recovery/Loss once `high_seq` is
    /// passed, `tcp_rate_gen`, then `cong_control` (or PRR / `cong_avoid`) and the pacing
    /// rate. Returns the rate sample.
    pub fn ack(&mut self, a: &Ack) -> RateSample {
        assert!(
            a.cum >= self.tp.snd_una && a.cum <= self.tp.snd_nxt,
            "ACK {} outside [{}, {}]",
            a.cum,
            self.tp.snd_una,
            self.tp.snd_nxt
        );
        self.cwnd_before_ack = self.tp.snd_cwnd;
        // tcp_ecn_rcv_ecn_echo: ECE counts once ECN was negotiated.
        let ece = a.ece && self.tp.ecn_ok;
        let una_advanced = a.cum > self.tp.snd_una;
        // Header prediction fails on SACK blocks, the ECE bit and ACKs that advance nothing.
        let slow_path = !una_advanced || !a.sacks.is_empty() || a.ece;
        if self.tp.packets_out == 0 {
            // tcp_ack's no_queue: nothing in flight, no rate sample, no congestion control.
            self.in_ack_event(una_advanced, slow_path, ece, 0);
            return RateSample {
                delivered: -1,
                interval_us: -1,
                rtt_us: -1,
                ..RateSample::default()
            };
        }
        let prior_delivered = self.tp.delivered;
        // Only losses marked on this ACK count (as `tcp_ack`): the RTO's do not.
        let prior_lost = self.tp.lost;
        let mut st = RateState::default();
        st.rs.prior_in_flight = self.tp.packets_in_flight();
        st.rs.rtt_us = -1;
        if una_advanced {
            self.retransmits = 0;
        }
        let sacked = self.sacktag(a, &mut st);
        self.clean_rtx_queue(a.cum, sacked, &mut st);
        let newly_delivered = self.tp.delivered - prior_delivered;
        self.in_ack_event(una_advanced, slow_path, ece, newly_delivered);
        // tcp_fastretrans_alert on a dubious ACK (one that advances nothing, SACKs something
        // new, carries ECE, or arrives outside Open), with `a.lost` as the loss detection's
        // verdict.
        if !una_advanced || sacked.is_some() || ece || self.tp.ca_state != CaState::Open {
            self.fastretrans_alert(&a.lost, ece, a.undo);
        }
        let delivered = (self.tp.delivered - prior_delivered) as u32;
        let lost = (self.tp.lost - prior_lost) as u32;
        self.rate_gen(delivered, lost, &mut st);
        let rs = st.rs;
        self.cong_control(a.cum, delivered, una_advanced, &rs);
        self.last_rs = rs;
        rs
    }

    /// `tcp_sacktag_write_queue`: tags what `a` newly SACKs. Returns, if anything was newly
    /// SACKed, the send times of the first and last never-retransmitted ones (RTT samples;
    /// None inside when all were retransmissions).
    fn sacktag(&mut self, a: &Ack, st: &mut RateState) -> Option<Option<(u64, u64)>> {
        let mut newly_sacked = false;
        let mut times: Option<(u64, u64)> = None;
        let mut blocks = a.sacks.clone();
        blocks.sort_by_key(|b| b.start);
        for b in blocks {
            for seq in b.start.max(a.cum)..b.end.min(self.tp.snd_nxt) {
                newly_sacked |= !self.seg(seq).sacked;
                if let Some(tx) = self.sacktag_one(seq, st) {
                    let first = times.map_or(tx, |t| t.0);
                    times = Some((first, tx));
                }
            }
        }
        newly_sacked.then_some(times)
    }

    /// `tcp_clean_rtx_queue` up to `cum`, then the RTT samples (`tcp_ack_update_rtt`, with
    /// `sacked` from [`Self::sacktag`]) and `pkts_acked`.
    fn clean_rtx_queue(
        &mut self,
        cum: u64,
        sacked: Option<Option<(u64, u64)>>,
        st: &mut RateState,
    ) {
        let now = self.tp.now_ns;
        let mut pkts_acked = 0u32;
        let mut ack_times: Option<(u64, u64)> = None;
        let mut retrans_acked = false;
        while self.tp.snd_una < cum {
            let seq = self.tp.snd_una;
            let s = *self.seg(seq);
            if s.ever_retrans {
                if s.retrans {
                    self.tp.retrans_out -= 1;
                }
                retrans_acked = true;
            } else if !s.sacked {
                let first = ack_times.map_or(s.tx_ns, |t| t.0);
                ack_times = Some((first, s.tx_ns));
            }
            if s.sacked {
                self.tp.sacked_out -= 1;
            } else {
                self.tp.delivered += 1;
            }
            if s.lost {
                self.tp.lost_out -= 1;
            }
            self.tp.packets_out -= 1;
            pkts_acked += 1;
            self.rate_skb_delivered(seq, st);
            self.segs.pop_front();
            self.tp.snd_una += 1;
        }
        let us = |t: u64| ((now - t) / 1_000) as i64;
        let (mut seq_rtt_us, mut ca_rtt_us, mut sack_rtt_us) = (-1, -1, -1);
        if let Some((first, last)) = ack_times.filter(|_| !retrans_acked) {
            seq_rtt_us = us(first);
            ca_rtt_us = us(last);
        }
        if let Some(Some((first, last))) = sacked {
            sack_rtt_us = us(first);
            ca_rtt_us = us(last);
        }
        // FLAG_ACK_MAYBE_DELAYED needs one segment shorter than the MSS acked alone; the
        // test's segments are all full-sized.
        let maybe_delayed = false;
        st.rs.is_ack_delayed = maybe_delayed;
        self.ack_update_rtt(seq_rtt_us, sack_rtt_us, ca_rtt_us, maybe_delayed, st);
        let sample = AckSample {
            pkts_acked,
            rtt_us: st.rs.rtt_us,
            in_flight: self.tp.packets_in_flight(),
        };
        if self.cc.has_pkts_acked() {
            self.cc.pkts_acked(&mut self.tp, &sample);
        }
    }

    /// `tcp_count_delivered` of the ACK's `delivered` packets when it carried ECE (Linux
    /// counts them as it tags and cleans; nothing reads `delivered_ce` in between), then
    /// `tcp_in_ack_event` with the ACK's `CA_ACK_*` flags.
    fn in_ack_event(&mut self, una_advanced: bool, slow_path: bool, ece: bool, delivered: u64) {
        if ece {
            self.tp.delivered_ce += delivered;
        }
        if !self.cc.has_in_ack_event() {
            return;
        }
        // The test's receiver always offers the same window: an update is an advance.
        let mut flags = if una_advanced { CA_ACK_WIN_UPDATE } else { 0 };
        if slow_path {
            flags |= CA_ACK_SLOWPATH;
            if ece {
                flags |= CA_ACK_ECE;
            }
        }
        self.cc.in_ack_event(&mut self.tp, flags);
    }

    /// `tcp_fastretrans_alert`: the end of Recovery (undone first when the sender says
    /// `undo`), CWR or Loss once `high_seq` is passed, losses (`lost`), then Recovery when
    /// something is lost, else CWR on an ECE, Disorder or Open.
    fn fastretrans_alert(&mut self, lost: &[Range<u64>], ece: bool, undo: bool) {
        // "A. ECE, hence prohibit cwnd undoing, the reduction is required."
        if ece {
            self.prior_ssthresh = 0;
        }
        let recovered = self.tp.snd_una >= self.high_seq;
        if self.tp.ca_state == CaState::Recovery && recovered {
            if undo {
                self.undo_cwnd_reduction();
            }
            self.exit_recovery();
        }
        // CWR is held until something above high_seq is ACKed (for CWR to reach the peer).
        if self.tp.ca_state == CaState::Cwr && recovered && self.tp.snd_una != self.high_seq {
            self.exit_cwr();
        }
        match self.tp.ca_state {
            CaState::Recovery => {
                self.lose_all(lost);
                return;
            }
            CaState::Loss => {
                if recovered {
                    self.set_ca_state(CaState::Open);
                }
                self.lose_all(lost);
                if self.tp.ca_state != CaState::Open {
                    return;
                }
            }
            _ => {}
        }
        self.lose_all(lost);
        if self.tp.lost_out == 0 {
            self.try_to_open(ece);
        } else {
            self.enter_recovery_on(ece);
        }
    }

    /// `tcp_try_to_open`: an ECE reduces the window once (`tcp_enter_cwr`); outside CWR,
    /// Disorder or Open.
    fn try_to_open(&mut self, ece: bool) {
        if ece {
            if self.tp.ca_state < CaState::Cwr {
                self.ecn_reductions += 1;
            }
            self.enter_cwr();
        }
        if self.tp.ca_state != CaState::Cwr {
            self.try_keep_open();
        }
    }

    fn lose_all(&mut self, lost: &[Range<u64>]) {
        for r in lost {
            self.lose(r.clone());
        }
    }

    /// `tcp_try_keep_open`: Disorder while anything is SACKed, lost or retransmitted.
    fn try_keep_open(&mut self) {
        let retrans = self.tp.retrans_out > 0 || self.segs.front().is_some_and(|s| s.ever_retrans);
        let state = if self.tp.sacked_out + self.tp.lost_out > 0 || retrans {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.tp.ca_state != state {
            self.set_ca_state(state);
            self.high_seq = self.tp.snd_nxt;
        }
    }

    /// `tcp_sacktag_one` of a segment not SACKed before; returns its send time when it
    /// was never retransmitted (an RTT sample).
    fn sacktag_one(&mut self, seq: u64, st: &mut RateState) -> Option<u64> {
        let mut s = *self.seg(seq);
        if s.sacked {
            return None;
        }
        let mut rtt_tx = None;
        if s.retrans {
            if s.lost {
                s.lost = false;
                s.retrans = false;
                self.tp.lost_out -= 1;
                self.tp.retrans_out -= 1;
            }
        } else {
            if !s.ever_retrans {
                rtt_tx = Some(s.tx_ns);
            }
            if s.lost {
                s.lost = false;
                self.tp.lost_out -= 1;
            }
        }
        s.sacked = true;
        *self.seg_mut(seq) = s;
        self.tp.sacked_out += 1;
        self.tp.delivered += 1;
        self.rate_skb_delivered(seq, st);
        rtt_tx
    }

    /// `tcp_rate_skb_delivered`: the most recently sent of the (S)ACKed segments starts
    /// the sample's interval.
    fn rate_skb_delivered(&mut self, seq: u64, st: &mut RateState) {
        let s = *self.seg(seq);
        if !s.rate_pending {
            return;
        }
        let sent_after = s.tx_ns > self.first_tx_mstamp_ns
            || (s.tx_ns == self.first_tx_mstamp_ns && seq + 1 > st.last_end_seq);
        if !st.prior_set || sent_after {
            st.prior_set = true;
            st.rs.prior_delivered = s.delivered;
            st.rs.prior_mstamp_ns = s.delivered_mstamp_ns;
            st.rs.is_app_limited = s.is_app_limited;
            st.rs.is_retrans = s.ever_retrans;
            st.last_end_seq = seq + 1;
            self.first_tx_mstamp_ns = s.tx_ns;
            st.rs.interval_us = ((s.tx_ns - s.first_tx_mstamp_ns) / 1_000) as i64;
        }
        if s.sacked {
            self.seg_mut(seq).rate_pending = false;
        }
    }

    /// `tcp_ack_update_rtt` without timestamps: srtt from the first (S)ACKed segment,
    /// the min-RTT filter and `rs.rtt_us` from the last.
    fn ack_update_rtt(
        &mut self,
        mut seq_rtt_us: i64,
        sack_rtt_us: i64,
        ca_rtt_us: i64,
        maybe_delayed: bool,
        st: &mut RateState,
    ) {
        if seq_rtt_us < 0 {
            seq_rtt_us = sack_rtt_us;
        }
        st.rs.rtt_us = ca_rtt_us;
        if seq_rtt_us < 0 {
            return;
        }
        self.update_min_rtt(ca_rtt_us.max(0) as u64, maybe_delayed);
        self.rtt_estimator(seq_rtt_us as u64);
    }

    /// `tcp_rtt_estimator`, the srtt part: srtt x8, gain 1/8.
    fn rtt_estimator(&mut self, mrtt_us: u64) {
        let m = mrtt_us as i64;
        let mut srtt = self.srtt_us8 as i64;
        if srtt != 0 {
            srtt += m - (srtt >> 3);
        } else {
            srtt = m << 3;
        }
        self.srtt_us8 = (srtt as u64).max(1);
        self.tp.srtt_us = (self.srtt_us8 >> 3) as u32;
    }

    /// `tcp_update_rtt_min` over Linux's 300 s window (in jiffies, as the simulator).
    fn update_min_rtt(&mut self, rtt_us: u64, maybe_delayed_ack: bool) {
        if maybe_delayed_ack && rtt_us > self.tp.min_rtt_us as u64 {
            return;
        }
        let v = rtt_us.max(1);
        let now_j = self.tp.now_ns / (1_000_000_000 / self.tp.hz as u64);
        if !self.has_min_rtt {
            self.min_rtt.reset(now_j, v);
            self.has_min_rtt = true;
        } else {
            let win = MIN_RTT_WLEN_S * self.tp.hz as u64;
            self.min_rtt.running_min(win, now_j, v);
        }
        self.tp.min_rtt_us = self.min_rtt.get().min(u32::MAX as u64) as u32;
    }

    /// `tcp_rate_gen`.
    fn rate_gen(&mut self, delivered: u32, lost: u32, st: &mut RateState) {
        let now = self.tp.now_ns;
        if self.tp.app_limited != 0 && self.tp.delivered > self.tp.app_limited {
            self.tp.app_limited = 0;
        }
        if delivered > 0 {
            self.tp.delivered_mstamp_ns = now;
        }
        let rs = &mut st.rs;
        rs.acked_sacked = delivered;
        rs.losses = lost;
        if !st.prior_set {
            rs.delivered = -1;
            rs.interval_us = -1;
            return;
        }
        rs.delivered = (self.tp.delivered - rs.prior_delivered) as i64;
        let snd_us = rs.interval_us;
        let ack_us = ((now - rs.prior_mstamp_ns) / 1_000) as i64;
        rs.interval_us = snd_us.max(ack_us);
        if rs.interval_us < self.tp.min_rtt_us as i64 {
            rs.interval_us = -1;
            return;
        }
        if !rs.is_app_limited
            || rs.delivered as u64 * self.rate_interval_us
                >= self.rate_delivered * rs.interval_us as u64
        {
            self.rate_delivered = rs.delivered as u64;
            self.rate_interval_us = rs.interval_us as u64;
        }
    }

    /// `tcp_cong_control`, then `tcp_update_pacing_rate` for modules without it.
    fn cong_control(&mut self, ack: u64, acked_sacked: u32, una_advanced: bool, rs: &RateSample) {
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.tp, rs);
            return;
        }
        if self.tp.in_cwnd_reduction() {
            self.cwnd_reduction(acked_sacked, rs.losses, una_advanced);
        } else if una_advanced {
            // tcp_may_raise_cwnd without reordering: FLAG_DATA_ACKED.
            self.cc.cong_avoid(&mut self.tp, ack, acked_sacked);
        }
        if self.update_pacing_rate {
            self.set_pacing_rate();
        }
    }

    /// `tcp_rack_reo_timeout` when its losses start Recovery: `tcp_enter_recovery`, then
    /// one PRR step as if a packet was delivered (`tcp_cwnd_reduction(sk, 1, 0, 0)`),
    /// unless the module has `cong_control`.
    pub fn enter_recovery_on_reo_timeout(&mut self) {
        self.enter_recovery();
        if !self.cc.has_cong_control() {
            self.cwnd_reduction(1, 0, false);
        }
    }

    /// `tcp_cwnd_reduction` (PRR).
    fn cwnd_reduction(&mut self, newly_acked_sacked: u32, newly_lost: u32, una_advanced: bool) {
        if newly_acked_sacked == 0 || self.tp.prior_cwnd == 0 {
            return;
        }
        let in_flight = self.tp.packets_in_flight() as i64;
        let delta = self.tp.snd_ssthresh as i64 - in_flight;
        self.prr_delivered += newly_acked_sacked;
        let mut sndcnt: i64;
        if delta < 0 {
            let dividend = self.tp.snd_ssthresh as u64 * self.prr_delivered as u64
                + self.tp.prior_cwnd as u64
                - 1;
            sndcnt = (dividend / self.tp.prior_cwnd as u64) as i64 - self.prr_out as i64;
        } else {
            sndcnt =
                (self.prr_delivered as i64 - self.prr_out as i64).max(newly_acked_sacked as i64);
            if una_advanced && newly_lost == 0 {
                sndcnt += 1;
            }
            sndcnt = sndcnt.min(delta);
        }
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.tp.snd_cwnd = (in_flight + sndcnt) as u32;
    }

    /// `tcp_update_pacing_rate`.
    pub(super) fn set_pacing_rate(&mut self) {
        if self.srtt_us8 == 0 {
            self.tp.pacing_rate_bytes_per_sec = u64::MAX;
            return;
        }
        let ratio = if self.tp.snd_cwnd < self.tp.snd_ssthresh / 2 {
            PACING_SS_RATIO
        } else {
            PACING_CA_RATIO
        };
        let cwnd = self.tp.snd_cwnd.max(self.tp.packets_out) as u128;
        let rate = self.tp.mss as u128 * (1_000_000 / 100 * 8) * ratio as u128 * cwnd
            / self.srtt_us8 as u128;
        let rate = u64::try_from(rate).unwrap_or(u64::MAX);
        self.tp.pacing_rate_bytes_per_sec = rate.min(self.tp.max_pacing_rate_bytes_per_sec);
    }

    /// One ACK whose rate sample the test wrote (`d.rs`): the socket's accounting of an
    /// ACK (`delivered`, `lost`, `delivered_mstamp`, `packets_out`, srtt and min RTT from
    /// `d.rtt_us`, the end of app-limited periods), `pkts_acked`, then `cong_control` or
    /// `cong_avoid`, as [`TestSender::ack`] orders them (`in_ack_event` too, with `d.ece`;
    /// no state change: an ECE's CWR is [`TestSender::ack`]'s).
    /// The scoreboard is not used: tests at this level do not send segments.
    pub fn deliver(&mut self, d: Delivery) -> RateSample {
        self.cwnd_before_ack = self.tp.snd_cwnd;
        let prior_in_flight = self.tp.packets_in_flight();
        self.tp.delivered += d.acked as u64;
        self.tp.lost += d.losses as u64;
        if let Some(p) = d.packets_out {
            self.tp.packets_out = p;
        }
        let mut st = RateState::default();
        st.rs.rtt_us = -1;
        if d.rtt_us >= 0 {
            self.ack_update_rtt(d.rtt_us, -1, d.rtt_us, d.rs.is_ack_delayed, &mut st);
        }
        let sample = AckSample {
            pkts_acked: d.acked,
            rtt_us: d.rtt_us,
            in_flight: self.tp.packets_in_flight(),
        };
        if self.cc.has_pkts_acked() {
            self.cc.pkts_acked(&mut self.tp, &sample);
        }
        let ece = d.ece && self.tp.ecn_ok;
        self.in_ack_event(d.acked > 0, d.acked == 0 || d.ece, ece, d.acked as u64);
        if self.tp.app_limited != 0 && self.tp.delivered > self.tp.app_limited {
            self.tp.app_limited = 0;
        }
        if d.acked > 0 {
            self.tp.delivered_mstamp_ns = self.tp.now_ns;
        }
        let rs = RateSample {
            rtt_us: d.rtt_us,
            losses: d.losses,
            acked_sacked: d.acked,
            prior_in_flight,
            ..d.rs
        };
        let ack = self.tp.snd_una;
        self.cong_control(ack, d.acked, d.acked > 0, &rs);
        self.last_rs = rs;
        rs
    }
}
