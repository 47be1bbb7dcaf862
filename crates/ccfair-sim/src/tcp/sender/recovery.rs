//! The congestion state machine of net/ipv4/tcp_input.c: `tcp_fastretrans_alert`, recovery
//! entry and exit, PRR (`tcp_cwnd_reduction`), the RTO loss state (`tcp_enter_loss`), F-RTO
//! (`tcp_process_loss`), TLP ACK processing and undo of spurious reductions.

use super::*;

impl Sender {
    /// `tcp_init_undo`: `undo_retrans` counts the retransmissions still in flight (each may
    /// come back as a D-SACK); 0 would mean "undo now", so none is -1. 6.18 counts a loss
    /// probe's retransmission in flight too, before mapping 0 to -1 (a probe alone gives 1);
    /// 4.13/4.15 (`undo_rules = "linux-4.x"`): `retrans_out ? : -1`, no probe term.
    pub(super) fn init_undo(&mut self) {
        self.undo_marker = Some(self.tp.snd_una);
        let mut in_flight = self.tp.retrans_out as i64;
        if !self.opts.undo_4x && self.tlp_high_seq.is_some() && self.tlp_retrans {
            in_flight += 1;
        }
        self.undo_retrans = if in_flight > 0 { in_flight } else { -1 };
    }

    /// `tcp_current_ssthresh`.
    pub(super) fn current_ssthresh(&self) -> u32 {
        if self.tp.in_cwnd_reduction() {
            self.tp.snd_ssthresh
        } else {
            self.tp
                .snd_ssthresh
                .max((self.tp.snd_cwnd >> 1) + (self.tp.snd_cwnd >> 2))
        }
    }

    /// `tcp_init_cwnd_reduction`.
    pub(super) fn init_cwnd_reduction(&mut self) {
        self.high_seq = self.tp.snd_nxt;
        self.tlp_high_seq = None;
        self.tp.snd_cwnd_cnt = 0;
        self.tp.prior_cwnd = self.tp.snd_cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.tp.snd_ssthresh = (*self.cc).ssthresh(&mut self.tp);
        self.ecn_queue_cwr();
    }

    /// `tcp_ecn_queue_cwr`: with ECN on, tell the receiver (CWR on the next new data
    /// segment) that the window was reduced, so that it stops echoing ECE.
    pub(super) fn ecn_queue_cwr(&mut self) {
        if self.tp.ecn_ok {
            self.ecn_queue_cwr = true;
        }
    }

    /// `tcp_enter_cwr`: the once-per-window reduction an ECE asks for, unless a reduction
    /// (CWR, Recovery or Loss) is under way. ssthresh comes from the algorithm; the
    /// reduction cannot be undone; PRR brings cwnd down (`tcp_cwnd_reduction`) and
    /// `tcp_end_cwnd_reduction` sets it to ssthresh once something sent after the ECE's
    /// window is ACKed. An algorithm with `cong_control` (BBR, Copa) sees `ssthresh` and
    /// `set_state(CWR)` and keeps its own cwnd.
    pub(super) fn enter_cwr(&mut self) {
        self.prior_ssthresh = 0;
        if self.tp.ca_state < CaState::Cwr {
            self.undo_marker = None;
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
        }
    }

    /// `tcp_end_cwnd_reduction`.
    pub(super) fn end_cwnd_reduction(&mut self) {
        if self.cc_hooks.cong_control {
            return;
        }
        if self.tp.snd_ssthresh < ccfair_cc::sock::TCP_INFINITE_SSTHRESH
            && (self.tp.ca_state == CaState::Cwr || self.undo_marker.is_some())
        {
            self.tp.snd_cwnd = self.tp.snd_ssthresh;
        }
        (*self.cc).cwnd_event(&mut self.tp, CaEvent::CompleteCwr);
    }

    /// `tcp_enter_recovery`: on an ACK with ECE (`ece_ack`) there is no ssthresh to undo to.
    /// 6.18 first clears a retransmission stamp left from an earlier episode when nothing is
    /// retransmitted (`tcp_retrans_stamp_cleanup`: the clock starts with this episode's fast
    /// retransmit, for undo); 4.13/4.15 (`undo_rules = "linux-4.x"`) keep it.
    pub(super) fn enter_recovery(&mut self, ece_ack: bool) {
        if !self.opts.undo_4x {
            self.retrans_stamp_cleanup();
        }
        self.stats.recoveries += 1;
        self.prior_ssthresh = 0;
        self.init_undo();
        if !self.tp.in_cwnd_reduction() {
            if !ece_ack {
                self.prior_ssthresh = self.current_ssthresh();
            }
            self.init_cwnd_reduction();
        }
        self.set_ca_state(CaState::Recovery);
    }

    /// `tcp_any_retrans_done`.
    pub(super) fn any_retrans_done(&self) -> bool {
        self.tp.retrans_out > 0
            || self
                .segs
                .front()
                .is_some_and(|s| s.flags & EVER_RETRANS != 0)
    }

    /// `tcp_retrans_stamp_cleanup`.
    fn retrans_stamp_cleanup(&mut self) {
        if !self.any_retrans_done() {
            self.retrans_stamp_ticks = 0;
        }
    }

    /// `tcp_try_keep_open`.
    pub(super) fn try_keep_open(&mut self) {
        let state = if self.tp.sacked_out + self.tp.lost_out > 0 || self.any_retrans_done() {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.tp.ca_state != state {
            self.set_ca_state(state);
            self.high_seq = self.tp.snd_nxt;
        }
    }

    /// `tcp_try_to_open`: an ACK with ECE reduces the window once per window (CWR).
    pub(super) fn try_to_open(&mut self, flag: u32) {
        if !self.any_retrans_done() {
            self.retrans_stamp_ticks = 0;
        }
        if flag & FLAG_ECE != 0 {
            if self.tp.ca_state < CaState::Cwr {
                self.stats.ecn_reductions += 1;
            }
            self.enter_cwr();
        }
        if self.tp.ca_state != CaState::Cwr {
            self.try_keep_open();
        }
    }

    /// `tcp_packet_delayed`: the ACK echoes a timestamp older than our first retransmission
    /// (`tcp_tsopt_ecr_before`: false without an echoed timestamp, `rcv_tsecr` 0). With no
    /// retransmission stamp, nothing was retransmitted in this episode, so the loss was a
    /// delay: 4.13/4.15 (`undo_rules = "linux-4.x"`) say so outright; 6.18 makes an exception
    /// for a non-SACK flow at or past `high_seq`, whose stamp
    /// `tcp_is_non_sack_preventing_reopen` cleared although it retransmitted. (6.18's other
    /// exception, SYN_SENT, cannot arise here: the SYN-ACK does not pass through this state
    /// machine, `Sender::on_synack`.)
    pub(super) fn packet_delayed(&self) -> bool {
        if self.retrans_stamp_ticks != 0 {
            return self.rcv_tsecr != 0
                && (self.rcv_tsecr.wrapping_sub(self.retrans_stamp_ticks) as i32) < 0;
        }
        if self.opts.undo_4x {
            return true;
        }
        self.opts.sack || self.tp.snd_una < self.high_seq
    }

    /// `tcp_may_undo`.
    pub(super) fn may_undo(&self) -> bool {
        self.opts.undo
            && self.undo_marker.is_some()
            && (self.undo_retrans == 0 || self.packet_delayed())
    }

    /// `tcp_undo_cwnd_reduction`.
    pub(super) fn undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        self.stats.undo_count += 1;
        if unmark_loss {
            self.segs.for_each_mut(|s| s.flags &= !LOST);
            self.tp.lost_out = 0;
            self.retransmit_hint = self.tp.snd_una;
        }
        if self.prior_ssthresh != 0 {
            self.tp.snd_cwnd = (*self.cc).undo_cwnd(&mut self.tp);
            if self.prior_ssthresh > self.tp.snd_ssthresh {
                self.tp.snd_ssthresh = self.prior_ssthresh;
                // tcp_ecn_withdraw_cwr: the reduction is undone, so no CWR.
                self.ecn_queue_cwr = false;
            }
        }
        self.undo_marker = None;
        self.rack.advanced = true;
    }

    /// `tcp_try_undo_recovery`. Returns true to hold the state (never for SACK flows).
    pub(super) fn try_undo_recovery(&mut self) -> bool {
        if self.may_undo() {
            self.undo_cwnd_reduction(false);
        } else if self.rack.reo_wnd_persist > 0 {
            self.rack.reo_wnd_persist -= 1;
        }
        if self.non_sack_preventing_reopen() {
            return true;
        }
        self.set_ca_state(CaState::Open);
        false
    }

    /// `tcp_is_non_sack_preventing_reopen`: without SACK, the state is held until something
    /// above `high_seq` is ACKed (RFC 6582: no false fast retransmits).
    fn non_sack_preventing_reopen(&mut self) -> bool {
        if !self.opts.sack && self.tp.snd_una == self.high_seq {
            if !self.any_retrans_done() {
                self.retrans_stamp_ticks = 0;
            }
            return true;
        }
        false
    }

    /// `tcp_try_undo_dsack`.
    pub(super) fn try_undo_dsack(&mut self) -> bool {
        if self.opts.undo && self.undo_marker.is_some() && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist = (self.rack.reo_wnd_persist + 1).min(RACK_RECOVERY_THRESH);
            self.undo_cwnd_reduction(false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial`. A partial ACK that undoes nothing sets `do_lost` when the
    /// SACKed data lies `reordering` segments beyond the head (`tcp_force_fast_retransmit`).
    pub(super) fn try_undo_partial(&mut self, prior_snd_una: u64, do_lost: &mut bool) -> bool {
        if self.opts.undo && self.undo_marker.is_some() && self.packet_delayed() {
            self.check_sack_reordering(prior_snd_una, 1);
            if self.tp.retrans_out > 0 {
                return true;
            }
            if !self.any_retrans_done() {
                self.retrans_stamp_ticks = 0;
            }
            self.undo_cwnd_reduction(true);
            self.try_keep_open();
        } else {
            *do_lost = self.force_fast_retransmit();
        }
        false
    }

    /// `tcp_force_fast_retransmit`: the highest SACKed sequence lies more than `reordering`
    /// segments above `snd_una`.
    fn force_fast_retransmit(&self) -> bool {
        self.highest_sack_end > self.tp.snd_una + self.reordering as u64
    }

    /// `tcp_try_undo_loss`.
    pub(super) fn try_undo_loss(&mut self, frto_undo: bool) -> bool {
        if (frto_undo && self.opts.undo) || self.may_undo() {
            self.undo_cwnd_reduction(true);
            self.retransmits = 0;
            if self.non_sack_preventing_reopen() {
                return true;
            }
            // Without SACK only F-RTO's undo reopens; a timestamp undo stays in Loss.
            if frto_undo || self.opts.sack {
                self.set_ca_state(CaState::Open);
            }
            return true;
        }
        false
    }

    /// `tcp_enter_loss`.
    pub(super) fn enter_loss(&mut self) {
        let new_recovery = self.tp.ca_state < CaState::Recovery;
        self.timeout_mark_lost();
        if self.tp.ca_state <= CaState::Disorder
            || self.high_seq <= self.tp.snd_una
            || (self.tp.ca_state == CaState::Loss && self.retransmits == 0)
        {
            self.prior_ssthresh = self.current_ssthresh();
            self.tp.prior_cwnd = self.tp.snd_cwnd;
            self.tp.snd_ssthresh = (*self.cc).ssthresh(&mut self.tp);
            (*self.cc).cwnd_event(&mut self.tp, CaEvent::Loss);
            self.init_undo();
        }
        self.tp.snd_cwnd = self.tp.packets_in_flight() + 1;
        self.tp.snd_cwnd_cnt = 0;
        if self.tp.ca_state <= CaState::Disorder && self.tp.sacked_out >= self.opts.reordering {
            self.reordering = self.reordering.min(self.opts.reordering);
        }
        self.set_ca_state(CaState::Loss);
        self.high_seq = self.tp.snd_nxt;
        self.tlp_high_seq = None;
        self.ecn_queue_cwr();
        self.frto = self.opts.frto && (new_recovery || self.retransmits > 0);
    }

    /// `tcp_timeout_mark_lost`.
    pub(super) fn timeout_mark_lost(&mut self) {
        // SACK reneging is not modelled (the receiver never drops out-of-order data);
        // without SACK the duplicate-ACK count is forgotten.
        if !self.opts.sack {
            self.reset_reno_sack();
        }
        let head = self.tp.snd_una;
        for seq in head..self.tp.snd_nxt {
            if seq != head {
                let s = self.seg(seq);
                let elapsed = (self.tp.now_ns - s.tx_ns) / 1_000;
                // Don't mark recently sent ones lost yet (RACK, reo_wnd 0; only with RACK
                // on, `tcp_is_rack`).
                if self.opts.rack && s.flags & SACKED == 0 && self.rack.rtt_us > elapsed {
                    continue;
                }
            }
            self.mark_lost(seq);
        }
        self.retransmit_hint = self.tp.snd_una;
    }

    /// `tcp_cwnd_reduction` (PRR, RFC 6937 as Linux implements it).
    pub(super) fn cwnd_reduction(&mut self, newly_acked_sacked: u32, newly_lost: u32, flag: u32) {
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
        } else if self.opts.prr_4x {
            sndcnt = self.prr_bound_4x(newly_acked_sacked, flag).min(delta);
        } else {
            sndcnt =
                (self.prr_delivered as i64 - self.prr_out as i64).max(newly_acked_sacked as i64);
            if flag & FLAG_SND_UNA_ADVANCED != 0 && newly_lost == 0 {
                sndcnt += 1;
            }
            sndcnt = sndcnt.min(delta);
        }
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.tp.snd_cwnd = (in_flight + sndcnt) as u32;
    }

    /// 4.x `tcp_cwnd_reduction` below ssthresh ("PRR uses CRB mode by default and SS mode
    /// conditionally", 3759824da87b): the slow-start bound only when this ACK acknowledged
    /// retransmitted data and marked no retransmission lost, else packet conservation.
    fn prr_bound_4x(&self, newly_acked_sacked: u32, flag: u32) -> i64 {
        if flag & FLAG_RETRANS_DATA_ACKED != 0 && flag & FLAG_LOST_RETRANS == 0 {
            (self.prr_delivered as i64 - self.prr_out as i64).max(newly_acked_sacked as i64) + 1
        } else {
            newly_acked_sacked as i64
        }
    }

    /// `tcp_process_tlp_ack`.
    pub(super) fn process_tlp_ack(&mut self, ack: u64, tlp_high: u64, flag: u32) {
        if ack < tlp_high {
            return;
        }
        if !self.tlp_retrans || flag & FLAG_DSACK_TLP != 0 {
            self.tlp_high_seq = None;
        } else if ack > tlp_high {
            // The probe repaired a loss: reduce cwnd once (CWR).
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
            self.end_cwnd_reduction();
            self.try_keep_open();
        } else if flag & (FLAG_SND_UNA_ADVANCED | FLAG_NOT_DUP | FLAG_DATA_SACKED) == 0 {
            self.tlp_high_seq = None;
        }
    }

    /// `tcp_fastretrans_alert`.
    pub(super) fn fastretrans_alert(
        &mut self,
        prior_snd_una: u64,
        num_dupack: u32,
        flag: &mut u32,
        rexmit: &mut Rexmit,
    ) {
        // Without RACK (tcp_fastretrans_alert before 6.17): the dupthresh scoreboard is
        // updated on a duplicate ACK, or on SACKs far enough above the head.
        let mut do_lost =
            num_dupack > 0 || (*flag & FLAG_DATA_SACKED != 0 && self.force_fast_retransmit());
        let mut fast_rexmit = false;
        if self.tp.packets_out == 0 && self.tp.sacked_out > 0 {
            self.tp.sacked_out = 0;
        }
        // "A. ECE, hence prohibit cwnd undoing, the reduction is required."
        if *flag & FLAG_ECE != 0 {
            self.prior_ssthresh = 0;
        }
        // D. Check state exit conditions.
        if self.tp.ca_state == CaState::Open {
            self.retrans_stamp_ticks = 0;
        } else if self.tp.snd_una >= self.high_seq {
            match self.tp.ca_state {
                // CWR is held until something above high_seq is ACKed.
                CaState::Cwr if self.tp.snd_una != self.high_seq => {
                    self.end_cwnd_reduction();
                    self.set_ca_state(CaState::Open);
                }
                CaState::Recovery => {
                    if !self.opts.sack {
                        self.reset_reno_sack();
                    }
                    if self.try_undo_recovery() {
                        return;
                    }
                    self.end_cwnd_reduction();
                }
                _ => {}
            }
        }
        // E. Process state.
        let mut to_default = true;
        match self.tp.ca_state {
            CaState::Recovery => {
                to_default = false;
                if *flag & FLAG_SND_UNA_ADVANCED == 0 {
                    if !self.opts.sack {
                        self.add_reno_sack(num_dupack, *flag & FLAG_ECE != 0);
                    }
                } else if self.try_undo_partial(prior_snd_una, &mut do_lost) {
                    return;
                }
                if self.try_undo_dsack() {
                    self.try_keep_open();
                }
                self.identify_packet_loss(flag);
                if self.tp.ca_state != CaState::Recovery {
                    if !self.time_to_recover() {
                        return;
                    }
                    self.enter_recovery(*flag & FLAG_ECE != 0);
                }
            }
            CaState::Loss => {
                // tcp_process_loss only decides what to retransmit (or undoes): loss
                // detection and the state's exit run on the same ACK, as in Linux.
                self.process_loss(*flag, num_dupack, rexmit);
                self.identify_packet_loss(flag);
                if !(self.tp.ca_state == CaState::Open || *flag & FLAG_LOST_RETRANS != 0) {
                    return;
                }
            }
            _ => {}
        }
        if to_default {
            if !self.opts.sack {
                if *flag & FLAG_SND_UNA_ADVANCED != 0 {
                    self.reset_reno_sack();
                }
                self.add_reno_sack(num_dupack, *flag & FLAG_ECE != 0);
            }
            if self.tp.ca_state <= CaState::Disorder {
                self.try_undo_dsack();
            }
            self.identify_packet_loss(flag);
            if !self.time_to_recover() {
                self.try_to_open(*flag);
                return;
            }
            self.enter_recovery(*flag & FLAG_ECE != 0);
            fast_rexmit = true;
        }
        if !self.opts.rack && do_lost {
            self.update_scoreboard(fast_rexmit);
        }
        *rexmit = Rexmit::Lost;
    }

    /// `tcp_time_to_recover`: a loss is proven, or (without RACK) more segments were
    /// SACKed (duplicate ACKs without SACK) than `reordering` allows
    /// (`tcp_dupack_heuristics`: `sacked_out + 1`).
    pub(super) fn time_to_recover(&self) -> bool {
        self.tp.lost_out > 0 || (!self.opts.rack && self.tp.sacked_out + 1 > self.reordering)
    }

    /// `tcp_update_scoreboard` (SACK flows without RACK, RFC 6675's IsLost): mark lost
    /// every unSACKed segment with at least `reordering` SACKed segments above it; when
    /// there are fewer and Recovery has just begun, the head alone (the fast retransmit).
    fn update_scoreboard(&mut self, fast_rexmit: bool) {
        if !self.opts.sack {
            return;
        }
        if self.tp.sacked_out >= self.reordering {
            self.mark_head_lost(self.tp.sacked_out - self.reordering, false);
        } else if fast_rexmit {
            self.mark_head_lost(1, true);
        }
    }

    /// `tcp_mark_head_lost`: walk from the head, marking segments lost until more than
    /// `sacked_limit` SACKed segments have been passed (or, with `head_only`, just the
    /// head). Linux resumes from a hint (`lost_skb_hint`, `lost_cnt_hint`) that only saves
    /// the walk over segments already marked or SACKed; this walks from `snd_una`.
    fn mark_head_lost(&mut self, sacked_limit: u32, head_only: bool) {
        let mut sacked_passed = 0u32;
        for seq in self.tp.snd_una..self.tp.snd_nxt {
            let flags = self.seg(seq).flags;
            if flags & SACKED != 0 {
                sacked_passed += 1;
            }
            if sacked_passed > sacked_limit {
                break;
            }
            if flags & LOST == 0 {
                self.mark_lost(seq);
            }
            if head_only {
                break;
            }
        }
    }

    /// `tcp_identify_packet_loss`.
    pub(super) fn identify_packet_loss(&mut self, flag: &mut u32) {
        if self.tp.packets_out == 0 {
            return;
        }
        if !self.opts.sack {
            self.newreno_mark_lost(*flag & FLAG_SND_UNA_ADVANCED != 0);
            return;
        }
        if !self.opts.rack {
            // SACK without RACK: losses are marked after the state machine
            // (`tcp_update_scoreboard` from `tcp_fastretrans_alert`).
            return;
        }
        let prior_retrans = self.tp.retrans_out;
        if self.rack_mark_lost() {
            *flag &= !FLAG_SET_XMIT_TIMER;
        }
        if prior_retrans > self.tp.retrans_out {
            *flag |= FLAG_LOST_RETRANS;
        }
    }

    /// `tcp_newreno_mark_lost` (tcp_recovery.c, RFC 6582), loss detection without SACK:
    /// the head is lost after `reordering` duplicate ACKs, and again on each partial ACK in
    /// Recovery.
    fn newreno_mark_lost(&mut self, snd_una_advanced: bool) {
        let state = self.tp.ca_state;
        if (state < CaState::Recovery && self.tp.sacked_out >= self.reordering)
            || (state == CaState::Recovery && snd_una_advanced)
        {
            let head = self.tp.snd_una;
            if self.seg(head).flags & LOST == 0 {
                self.mark_lost(head);
            }
        }
    }

    /// `tcp_process_loss` (with F-RTO, RFC 5682): undo, or decide what to retransmit.
    pub(super) fn process_loss(&mut self, flag: u32, num_dupack: u32, rexmit: &mut Rexmit) {
        let recovered = self.tp.snd_una >= self.high_seq;
        if flag & FLAG_SND_UNA_ADVANCED != 0 && self.try_undo_loss(false) {
            return;
        }
        if self.frto {
            // Step 3.b: never-retransmitted data (s)acked: the timeout was spurious.
            if flag & FLAG_ORIG_SACK_ACKED != 0 && self.try_undo_loss(true) {
                return;
            }
            if self.tp.snd_nxt > self.high_seq {
                // Step 3.a: the loss was real.
                if flag & FLAG_DATA_SACKED != 0 || num_dupack > 0 {
                    self.frto = false;
                }
            } else if flag & FLAG_SND_UNA_ADVANCED != 0 && !recovered {
                self.high_seq = self.tp.snd_nxt;
                // Step 2.b: try to send new data (after cwnd is updated in tcp_ack).
                if self.has_new_data() {
                    *rexmit = Rexmit::New;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            // F-RTO step 2.a and the first part of step 3.b.
            self.try_undo_recovery();
            return;
        }
        if !self.opts.sack {
            // A dupack after F-RTO's new data means that data arrived: fewer in flight.
            if self.tp.snd_nxt > self.high_seq && num_dupack > 0 {
                self.add_reno_sack(num_dupack, flag & FLAG_ECE != 0);
            } else if flag & FLAG_SND_UNA_ADVANCED != 0 {
                self.reset_reno_sack();
            }
        }
        *rexmit = Rexmit::Lost;
    }
}
