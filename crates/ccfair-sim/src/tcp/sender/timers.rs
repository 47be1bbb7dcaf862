//! The retransmission timer and its other uses (net/ipv4/tcp_timer.c, tcp_output.c): RTO
//! arming and backoff (`tcp_rearm_rto`, `tcp_retransmit_timer`) and tail loss probes
//! (`tcp_schedule_loss_probe`, `tcp_send_loss_probe`).

use super::*;

impl Sender {
    /// `inet_csk_reset_xmit_timer`: delay in jiffies.
    pub(super) fn reset_xmit_timer(&mut self, kind: XmitTimer, delay_jiffies: u64) {
        let delay = delay_jiffies.min(self.rto_max_jiffies);
        self.xmit_timer = Some((self.tp.now_ns + delay * self.jiffy_ns, kind));
    }

    pub(super) fn pending(&self) -> Option<XmitTimer> {
        self.xmit_timer.map(|(_, k)| k)
    }

    /// `tcp_rto_delta_us`: time left until the head's RTO.
    pub(super) fn rto_delta_us(&self) -> i64 {
        let head_tx_us = (self.segs.front().map_or(self.tp.now_ns, |s| s.tx_ns) / 1_000) as i64;
        head_tx_us + self.rto_us() as i64 - (self.tp.now_ns / 1_000) as i64
    }

    /// `tcp_rearm_rto`.
    // Per ACK or send: inlined (issue 16, instructions per packet-hop).
    #[inline]
    pub(super) fn rearm_rto(&mut self) {
        if self.tp.packets_out == 0 {
            self.xmit_timer = None;
            return;
        }
        let mut rto = self.rto_jiffies;
        if matches!(
            self.pending(),
            Some(XmitTimer::ReoTimeout) | Some(XmitTimer::LossProbe)
        ) {
            let delta = self.rto_delta_us().max(1) as u64;
            rto = self.usecs_to_jiffies(delta);
        }
        self.reset_xmit_timer(XmitTimer::Retrans, rto);
    }

    /// `tcp_schedule_loss_probe`.
    // Per ACK or send: inlined (issue 16, instructions per packet-hop); the 4.x schedules
    // stay out of line.
    #[inline(always)]
    pub(super) fn schedule_loss_probe(&mut self, advancing_rto: bool) -> bool {
        if self.opts.tlp_schedule != crate::spec::TlpSchedule::Linux618 {
            return self.schedule_loss_probe_4x(advancing_rto);
        }
        if !self.opts.tlp
            || self.tp.packets_out == 0
            || !matches!(self.tp.ca_state, CaState::Open | CaState::Cwr)
        {
            return false;
        }
        let mut timeout = if self.rtt.srtt_us8 != 0 {
            let mut us = self.rtt.srtt_us8 >> 2; // 2 x srtt
            us += if self.tp.packets_out == 1 {
                self.rtt.rto_min_us
            } else {
                TIMEOUT_MIN_US
            };
            self.usecs_to_jiffies(us)
        } else {
            self.usecs_to_jiffies(self.opts.rto_init_ms as u64 * 1_000)
        };
        let rto_delta_us = if advancing_rto {
            self.rto_us() as i64
        } else {
            self.rto_delta_us()
        };
        if rto_delta_us > 0 {
            timeout = timeout.min(self.usecs_to_jiffies(rto_delta_us as u64));
        }
        self.reset_xmit_timer(XmitTimer::LossProbe, timeout);
        true
    }

    /// `tcp_schedule_loss_probe` of 4.13 and 4.15 (`tlp_schedule`): in Open only, not while
    /// cwnd has room and data waits to be sent; 4.15: 2 srtt (in jiffies) + 2 jiffies
    /// (`TCP_TIMEOUT_MIN`) or + `TCP_RTO_MIN` with one packet out; 4.13: 2 srtt in jiffies,
    /// with one packet out at least 1.5 srtt + `TCP_DELACK_MAX` (200 ms), at least 10 ms, and
    /// always bounded by the RTO still to run (`tcp_rto_delta_us`).
    #[cold]
    #[inline(never)]
    fn schedule_loss_probe_4x(&mut self, advancing_rto: bool) -> bool {
        use crate::spec::TlpSchedule;
        if !self.opts.tlp || self.tp.packets_out == 0 || self.tp.ca_state != CaState::Open {
            return false;
        }
        if self.tp.snd_cwnd > self.tp.packets_in_flight() && self.has_new_data() {
            return false;
        }
        let rto_min_jiffies = self.usecs_to_jiffies(self.rtt.rto_min_us);
        let init_jiffies = self.usecs_to_jiffies(self.opts.rto_init_ms as u64 * 1_000);
        let mut timeout;
        let rto_delta_us;
        if self.opts.tlp_schedule == TlpSchedule::Linux413 {
            let rtt = self.usecs_to_jiffies(self.rtt.srtt_us8 >> 3);
            timeout = if rtt == 0 { init_jiffies } else { rtt << 1 };
            if self.tp.packets_out == 1 {
                // TCP_DELACK_MAX = HZ/5.
                let delack_max = self.usecs_to_jiffies(200_000);
                timeout = timeout.max(rtt + (rtt >> 1) + delack_max);
            }
            timeout = timeout.max(self.usecs_to_jiffies(10_000));
            rto_delta_us = self.rto_delta_us();
        } else {
            timeout = if self.rtt.srtt_us8 != 0 {
                let base = self.usecs_to_jiffies(self.rtt.srtt_us8 >> 2);
                // TCP_RTO_MIN or TCP_TIMEOUT_MIN (2 jiffies).
                base + if self.tp.packets_out == 1 {
                    rto_min_jiffies
                } else {
                    2
                }
            } else {
                init_jiffies
            };
            rto_delta_us = if advancing_rto {
                self.rto_us() as i64
            } else {
                self.rto_delta_us()
            };
        }
        if rto_delta_us > 0 {
            timeout = timeout.min(self.usecs_to_jiffies(rto_delta_us as u64));
        }
        self.reset_xmit_timer(XmitTimer::LossProbe, timeout);
        true
    }

    /// `tcp_set_xmit_timer`.
    pub(super) fn set_xmit_timer(&mut self) {
        if !self.schedule_loss_probe(true) {
            self.rearm_rto();
        }
    }

    /// `tcp_set_rto` + `tcp_bound_rto`.
    pub(super) fn set_rto(&mut self) {
        self.set_rto_jiffies(self.usecs_to_jiffies(self.rtt.rto_us()));
    }

    /// `icsk_rto`, and the same in µs.
    fn set_rto_jiffies(&mut self, rto_jiffies: u64) {
        self.rto_jiffies = rto_jiffies;
        self.rto_us = rto_jiffies * self.jiffy_ns / 1_000;
    }

    /// `tcp_retransmit_timer`.
    pub(super) fn retransmit_timer(&mut self, out: &mut Vec<Packet>) {
        if self.tp.packets_out == 0 {
            return;
        }
        self.stats.rto_count += 1;
        self.enter_loss();
        self.retransmits += 1;
        let head = self.tp.snd_una;
        // The head is marked lost by tcp_timeout_mark_lost; retransmit it regardless of cwnd.
        if self.seg(head).flags & SACKED == 0 {
            self.retransmit(head, out);
        }
        self.backoff += 1;
        self.set_rto_jiffies((self.rto_jiffies * 2).min(self.rto_max_jiffies));
        self.reset_xmit_timer(XmitTimer::Retrans, self.rto_jiffies);
    }

    /// `tcp_send_loss_probe`.
    pub(super) fn send_loss_probe(&mut self, out: &mut Vec<Packet>) {
        let mut sent = false;
        if self.tlp_high_seq.is_none() {
            self.tlp_retrans = false;
            if self.has_new_data() {
                let before = self.tp.packets_out;
                self.write_xmit(out, true);
                sent = self.tp.packets_out > before;
            } else if self.tp.snd_nxt > self.tp.snd_una {
                let last = self.tp.snd_nxt - 1;
                // __tcp_retransmit_skb: not counted in retrans_out.
                self.transmit(last, out);
                self.seg_mut(last).flags |= EVER_RETRANS;
                self.stats.retrans_pkts += 1;
                self.tlp_retrans = true;
                sent = true;
            }
            if sent {
                self.stats.tlp_count += 1;
                self.tlp_high_seq = Some(self.tp.snd_nxt);
                // Reset so that tcp_rearm_rto restarts the timer from now.
                self.xmit_timer = None;
            }
        }
        self.rearm_rto();
    }
}
