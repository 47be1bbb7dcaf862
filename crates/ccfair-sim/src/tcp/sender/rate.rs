//! RTT samples (`tcp_ack_update_rtt`) and the delivery-rate sampler (net/ipv4/tcp_rate.c:
//! `tcp_rate_skb_delivered`, `tcp_rate_gen`).

use super::*;

impl Sender {
    /// `tcp_rate_skb_delivered`.
    pub(super) fn rate_skb_delivered(&mut self, seq: u64, st: &mut AckState) {
        let s = *self.seg(seq);
        self.rate_sample_from(seq, &s, st);
        if s.rate_pending && s.flags & SACKED != 0 {
            self.seg_mut(seq).rate_pending = false;
        }
    }

    /// The part of `tcp_rate_skb_delivered` that reads segment `seq` (`s`, its state) into
    /// the sample; `rate_skb_delivered` then marks a SACKed segment as counted.
    #[inline]
    pub(super) fn rate_sample_from(&mut self, seq: u64, s: &Seg, st: &mut AckState) {
        if !s.rate_pending {
            return;
        }
        if !st.rs_prior_set
            || sent_after(
                s.tx_ns,
                self.first_tx_mstamp_ns,
                seq + 1,
                st.rs_last_end_seq,
            )
        {
            self.rate_sample_set(seq, s, st);
        }
    }

    /// The sample takes segment `seq` (`s`, its state) as its packet: the latest sent of
    /// those delivered so far.
    #[inline]
    pub(super) fn rate_sample_set(&mut self, seq: u64, s: &Seg, st: &mut AckState) {
        st.rs_prior_set = true;
        st.rs.prior_delivered = s.delivered;
        st.rs.prior_mstamp_ns = s.delivered_mstamp_ns;
        st.rs_prior_mstamp_set = true;
        st.rs.is_app_limited = s.is_app_limited;
        st.rs.is_retrans = s.flags & RETRANS != 0;
        st.rs_last_end_seq = seq + 1;
        self.first_tx_mstamp_ns = s.tx_ns;
        st.rs_snd_interval_ns = s.tx_ns - s.first_tx_mstamp_ns;
    }

    /// `tcp_ack_update_rtt`.
    pub(super) fn ack_update_rtt(
        &mut self,
        flag: u32,
        mut seq_rtt_us: i64,
        sack_rtt_us: i64,
        mut ca_rtt_us: i64,
        st: &mut AckState,
    ) -> bool {
        if seq_rtt_us < 0 {
            seq_rtt_us = sack_rtt_us;
        }
        if seq_rtt_us < 0 && self.rcv_tsecr != 0 && flag & FLAG_ACKED != 0 {
            // tcp_rtt_tsopt_us: ms granularity, at least one tick.
            let delta = ticks(self.tp.now_ns).wrapping_sub(self.rcv_tsecr).max(1) as i64;
            seq_rtt_us = delta * 1_000;
            ca_rtt_us = seq_rtt_us;
        }
        st.rs.rtt_us = ca_rtt_us;
        if seq_rtt_us < 0 {
            return false;
        }
        let now_j = self.now_jiffies();
        self.rtt.update_min_rtt(
            ca_rtt_us.max(0) as u64,
            now_j,
            flag & FLAG_ACK_MAYBE_DELAYED != 0,
        );
        self.rtt
            .sample(seq_rtt_us as u64, self.tp.snd_una, self.tp.snd_nxt);
        self.set_rto();
        self.backoff = 0;
        self.tp.srtt_us = self.rtt.srtt_us() as u32;
        self.tp.min_rtt_us = self.rtt.min_rtt_us();
        if ca_rtt_us >= 0 {
            let r = ca_rtt_us as u64;
            self.stats.rtt_sum_us += r;
            self.stats.rtt_samples += 1;
            self.stats.rtt_min_us = self.stats.rtt_min_us.min(r);
        }
        true
    }

    /// `tcp_rate_gen`.
    pub(super) fn rate_gen(&mut self, delivered: u32, lost: u32, st: &mut AckState) {
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
        if !st.rs_prior_mstamp_set {
            rs.delivered = -1;
            rs.interval_us = -1;
            return;
        }
        rs.delivered = (self.tp.delivered - rs.prior_delivered) as i64;
        // The send interval in µs, converted once here rather than per segment delivered.
        let snd_us = (st.rs_snd_interval_ns / 1_000) as i64;
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
}
