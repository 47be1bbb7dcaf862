//! RACK loss detection (net/ipv4/tcp_recovery.c): `tcp_rack_advance`, `tcp_rack_detect_loss`,
//! `tcp_rack_mark_lost`, `tcp_rack_reo_wnd`, `tcp_rack_update_reo_wnd`, `tcp_rack_reo_timeout`.

use super::*;

impl Sender {
    /// `tcp_rack_advance`.
    pub(super) fn rack_advance(&mut self, flags: u8, end_seq: u64, xmit_ns: u64) {
        let rtt_us = (self.tp.now_ns - xmit_ns) / 1_000;
        if rtt_us < self.tp.min_rtt_us as u64 && flags & RETRANS != 0 {
            // Ambiguous: the original or the retransmission may have been (s)acked.
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt_us = rtt_us;
        if sent_after(xmit_ns, self.rack.mstamp_ns, end_seq, self.rack.end_seq) {
            self.rack.mstamp_ns = xmit_ns;
            self.rack.end_seq = end_seq;
        }
    }

    /// `tcp_rack_reo_wnd` in µs.
    pub(super) fn rack_reo_wnd_us(&self) -> u64 {
        if self.reord_seen == 0
            && (self.tp.ca_state >= CaState::Recovery || self.tp.sacked_out >= self.reordering)
        {
            return 0;
        }
        ((self.tp.min_rtt_us as u64 >> 2) * self.rack.reo_wnd_steps as u64).min(self.rtt.srtt_us())
    }

    /// `tcp_rack_detect_loss`: returns the longest wait (µs) of a not-yet-expired candidate.
    pub(super) fn rack_detect_loss(&mut self) -> u64 {
        let reo_wnd = self.rack_reo_wnd_us();
        let now_us = self.tp.now_ns / 1_000;
        let mut timeout = 0u64;
        let mut seq = self.ts_head;
        while seq != NONE {
            let s = *self.seg(seq);
            let next = s.ts_next;
            if s.flags & LOST != 0 && s.flags & SACKED_RETRANS == 0 {
                seq = next;
                continue;
            }
            if !sent_after(self.rack.mstamp_ns, s.tx_ns, self.rack.end_seq, seq + 1) {
                break;
            }
            let elapsed = now_us as i64 - (s.tx_ns / 1_000) as i64;
            let remaining = (self.rack.rtt_us + reo_wnd) as i64 - elapsed;
            if remaining <= 0 {
                self.mark_lost(seq);
                self.ts_remove(seq);
            } else {
                timeout = timeout.max(remaining as u64);
            }
            seq = next;
        }
        timeout
    }

    /// `tcp_rack_mark_lost`.
    pub(super) fn rack_mark_lost(&mut self) -> bool {
        if !self.rack.advanced {
            return false;
        }
        self.rack.advanced = false;
        let timeout = self.rack_detect_loss();
        if timeout > 0 {
            // usecs_to_jiffies(timeout + TCP_TIMEOUT_MIN_US), as current mainline.
            let j = self.usecs_to_jiffies(timeout + TIMEOUT_MIN_US);
            self.reset_xmit_timer(XmitTimer::ReoTimeout, j);
        }
        timeout > 0
    }

    /// `tcp_rack_update_reo_wnd`.
    pub(super) fn rack_update_reo_wnd(&mut self, rs: &RateSample, prior_set: bool) {
        if !prior_set {
            return;
        }
        if rs.prior_delivered < self.rack.last_delivered {
            self.rack.dsack_seen = false;
        }
        if self.rack.dsack_seen {
            self.rack.reo_wnd_steps = (self.rack.reo_wnd_steps + 1).min(0xff);
            self.rack.dsack_seen = false;
            self.rack.last_delivered = self.tp.delivered;
            self.rack.reo_wnd_persist = RACK_RECOVERY_THRESH;
        } else if self.rack.reo_wnd_persist == 0 {
            self.rack.reo_wnd_steps = 1;
        }
    }

    /// `tcp_rack_reo_timeout`.
    pub(super) fn rack_reo_timeout(&mut self, out: &mut Vec<Packet>) {
        let prior_inflight = self.tp.packets_in_flight();
        self.rack_detect_loss();
        if prior_inflight != self.tp.packets_in_flight() {
            if self.tp.ca_state != CaState::Recovery {
                self.enter_recovery(false);
                if !self.cc_hooks.cong_control {
                    self.cwnd_reduction(1, 0, 0);
                }
            }
            self.xmit_retransmit_queue(out);
        }
        if self.pending() != Some(XmitTimer::Retrans) {
            self.rearm_rto();
        }
    }
}
