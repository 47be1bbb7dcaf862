//! The retransmission queue's scoreboard: SACK tagging (`tcp_sacktag_write_queue`,
//! `tcp_sacktag_one`), cumulative ACKs (`tcp_clean_rtx_queue`), loss marking
//! (`tcp_mark_skb_lost`) and the time-sorted list of segments in flight.

use super::*;

impl Sender {
    // Twice per segment (sent, acknowledged): inlined, the call cost a fifth of it.
    #[inline]
    pub(super) fn ts_remove(&mut self, seq: u64) {
        let (prev, next, in_ts) = {
            let s = self.seg(seq);
            (s.ts_prev, s.ts_next, s.in_ts)
        };
        if !in_ts {
            return;
        }
        self.ts_unlink(prev, next);
        let s = self.seg_mut(seq);
        s.in_ts = false;
        s.ts_prev = NONE;
        s.ts_next = NONE;
    }

    /// Joins the neighbours `prev` and `next` of a segment leaving the time-sorted list
    /// (the segment's own links are left as they are).
    #[inline]
    fn ts_unlink(&mut self, prev: u64, next: u64) {
        if prev == NONE {
            self.ts_head = next;
        } else {
            self.seg_mut(prev).ts_next = next;
        }
        if next == NONE {
            self.ts_tail = prev;
        } else {
            self.seg_mut(next).ts_prev = prev;
        }
    }

    pub(super) fn ts_push_tail(&mut self, seq: u64) {
        self.ts_remove(seq);
        let tail = self.ts_tail;
        {
            let s = self.seg_mut(seq);
            s.ts_prev = tail;
            s.ts_next = NONE;
            s.in_ts = true;
        }
        self.ts_link_after_tail(seq, tail);
    }

    /// Makes `seq`, whose own links already say it follows `tail`, the list's tail.
    #[inline]
    pub(super) fn ts_link_after_tail(&mut self, seq: u64, tail: u64) {
        if tail == NONE {
            self.ts_head = seq;
        } else {
            self.seg_mut(tail).ts_next = seq;
        }
        self.ts_tail = seq;
    }

    /// `tcp_check_sack_reordering`.
    pub(super) fn check_sack_reordering(&mut self, low_seq: u64, _ts: u32) {
        let fack = self.highest_sack_end.max(self.tp.snd_una);
        if low_seq >= fack {
            return;
        }
        let metric = (fack - low_seq) as u32;
        if metric > self.reordering {
            self.reordering = metric.min(MAX_REORDERING);
        }
        self.reord_seen += 1;
    }

    /// `tcp_limit_reno_sacked`: without SACK, duplicate ACKs beyond the segments that can
    /// be out of order (all but the holes: at least one, at most `packets_out`) are not
    /// counted. Returns whether `sacked_out` had to be cut.
    fn limit_reno_sacked(&mut self) -> bool {
        let holes = self.tp.lost_out.max(1).min(self.tp.packets_out);
        if self.tp.sacked_out + holes > self.tp.packets_out {
            self.tp.sacked_out = self.tp.packets_out - holes;
            return true;
        }
        false
    }

    /// `tcp_check_reno_reordering`: more duplicate ACKs than segments that could cause them
    /// means reordering.
    fn check_reno_reordering(&mut self, addend: u32) {
        if !self.limit_reno_sacked() {
            return;
        }
        self.reordering = (self.tp.packets_out + addend).min(MAX_REORDERING);
        self.reord_seen += 1;
    }

    /// `tcp_add_reno_sack`: a duplicate ACK without SACK stands for one more segment
    /// received above the hole, delivered (`tcp_count_delivered`, CE-marked with `ece`).
    pub(super) fn add_reno_sack(&mut self, num_dupack: u32, ece: bool) {
        if num_dupack == 0 {
            return;
        }
        let prior_sacked = self.tp.sacked_out;
        self.tp.sacked_out += num_dupack;
        self.check_reno_reordering(0);
        let delivered = self.tp.sacked_out.saturating_sub(prior_sacked) as u64;
        self.tp.delivered += delivered;
        if ece {
            self.tp.delivered_ce += delivered;
        }
    }

    /// `tcp_remove_reno_sacks`: a cumulative ACK of `acked` segments without SACK filled
    /// one hole; the rest were counted by duplicate ACKs already.
    fn remove_reno_sacks(&mut self, acked: u32) {
        if acked > 0 {
            self.tp.delivered += acked.saturating_sub(self.tp.sacked_out).max(1) as u64;
            self.tp.sacked_out = self.tp.sacked_out.saturating_sub(acked - 1);
        }
        self.check_reno_reordering(acked);
    }

    /// `tcp_reset_reno_sack`.
    pub(super) fn reset_reno_sack(&mut self) {
        self.tp.sacked_out = 0;
    }

    /// `tcp_mark_skb_lost`.
    pub(super) fn mark_lost(&mut self, seq: u64) {
        let flags = self.seg(seq).flags;
        if flags & SACKED != 0 {
            return;
        }
        if seq < self.retransmit_hint {
            self.retransmit_hint = seq;
        }
        if flags & LOST != 0 {
            if flags & SACKED_RETRANS != 0 {
                // A retransmission lost again.
                self.seg_mut(seq).flags &= !SACKED_RETRANS;
                self.tp.retrans_out -= 1;
                self.tp.lost += 1;
            }
        } else {
            self.tp.lost_out += 1;
            self.seg_mut(seq).flags |= LOST;
            self.tp.lost += 1;
        }
    }

    /// `tcp_sacktag_write_queue`, processing only the parts of blocks not seen in the
    /// previous ACK (as Linux's `recv_sack_cache`).
    pub(super) fn sacktag(
        &mut self,
        pkt: &Packet,
        prior_snd_una: u64,
        st: &mut AckState,
        flag: &mut u32,
    ) {
        let blocks = pkt.sack_blocks();
        let ack = pkt.seq;
        // tcp_check_dsack.
        let mut dsack = false;
        if let Some(b0) = blocks.first() {
            if b0.start < ack {
                dsack = true;
            } else if blocks.len() > 1 {
                let b1 = blocks[1];
                if b0.end <= b1.end && b0.start >= b1.start {
                    dsack = true;
                }
            }
        }
        if dsack {
            let b0 = blocks[0];
            *flag |= FLAG_DSACKING_ACK;
            // tcp_check_dsack: a one-segment D-SACK of the loss probe.
            if b0.end - b0.start <= 1 && self.tlp_high_seq.is_some_and(|h| b0.end == h) {
                *flag |= FLAG_DSACK_TLP;
            }
            // tcp_dsack_seen: only D-SACKs after reordering widen RACK's window.
            if self.reord_seen > 0 && *flag & FLAG_DSACK_TLP == 0 {
                self.rack.dsack_seen = true;
            }
            // "A spurious retransmission is delivered" (sack_delivered += dup_segs).
            self.tp.delivered += b0.end - b0.start;
            // D-SACK for already forgotten data: dumb counting.
            if let Some(marker) = self.undo_marker {
                if self.undo_retrans > 0 && b0.end <= prior_snd_una && b0.end > marker {
                    self.undo_retrans = (self.undo_retrans - (b0.end - b0.start) as i64).max(0);
                }
            }
            let (s, e) = (b0.start.max(self.tp.snd_una), b0.end.min(self.tp.snd_nxt));
            for seq in s..e {
                self.sacktag_one(seq, true, st, flag);
            }
        }
        let first = if dsack { 1 } else { 0 };
        let mut sorted = [SackBlock::default(); 3];
        let mut n = 0;
        for b in &blocks[first..] {
            // tcp_is_sackblock_valid.
            if b.start >= b.end || b.end > self.tp.snd_nxt || b.end <= self.tp.snd_una {
                continue;
            }
            sorted[n] = *b;
            n += 1;
        }
        sorted[..n].sort_by_key(|b| b.start);
        for b in &sorted[..n] {
            let mut s = b.start.max(self.tp.snd_una);
            while s < b.end {
                // Skip the part already processed for the previous ACK.
                if let Some(c) = self.sack_cache[..self.n_sack_cache]
                    .iter()
                    .find(|c| c.start <= s && s < c.end)
                {
                    s = c.end;
                    continue;
                }
                let next_cached = self.sack_cache[..self.n_sack_cache]
                    .iter()
                    .filter(|c| c.start > s)
                    .map(|c| c.start)
                    .min()
                    .unwrap_or(u64::MAX);
                let e = b.end.min(next_cached);
                for seq in s..e {
                    self.sacktag_one(seq, false, st, flag);
                }
                s = e;
            }
        }
        self.sack_cache[..n].copy_from_slice(&sorted[..n]);
        self.n_sack_cache = n;
        // End of tcp_sacktag_write_queue: a never-retransmitted segment SACKed below the
        // highest SACK means reordering.
        if self.tp.ca_state != CaState::Loss || self.undo_marker.is_some() {
            self.check_sack_reordering(st.reord, 0);
        }
    }

    /// `tcp_sacktag_one` (+ the per-skb rate and tsorted bookkeeping of `tcp_sacktag_walk`).
    pub(super) fn sacktag_one(
        &mut self,
        seq: u64,
        dup_sack: bool,
        st: &mut AckState,
        flag: &mut u32,
    ) {
        let mut flags = self.seg(seq).flags;
        if dup_sack && flags & RETRANS != 0 {
            if let Some(marker) = self.undo_marker {
                if self.undo_retrans > 0 && seq + 1 > marker {
                    self.undo_retrans -= 1;
                }
            }
            if flags & SACKED != 0 && seq < st.reord {
                st.reord = seq;
            }
        }
        if flags & SACKED == 0 {
            let tx = self.seg(seq).tx_ns;
            self.rack_advance(flags, seq + 1, tx);
            if flags & SACKED_RETRANS != 0 {
                if flags & LOST != 0 {
                    flags &= !(LOST | SACKED_RETRANS);
                    self.tp.lost_out -= 1;
                    self.tp.retrans_out -= 1;
                }
            } else {
                if flags & RETRANS == 0 {
                    if seq < self.highest_sack_end && seq < st.reord {
                        st.reord = seq;
                    }
                    if seq < self.high_seq {
                        *flag |= FLAG_ORIG_SACK_ACKED;
                    }
                    if st.first_sackt_ns.is_none() {
                        st.first_sackt_ns = Some(tx);
                    }
                    st.last_sackt_ns = tx;
                }
                if flags & LOST != 0 {
                    flags &= !LOST;
                    self.tp.lost_out -= 1;
                }
            }
            flags |= SACKED;
            *flag |= FLAG_DATA_SACKED;
            self.tp.sacked_out += 1;
            self.tp.delivered += 1;
            if seq + 1 > self.highest_sack_end {
                self.highest_sack_end = seq + 1;
            }
            self.seg_mut(seq).flags = flags;
            self.rate_skb_delivered(seq, st);
            self.ts_remove(seq);
        }
        if dup_sack && flags & SACKED_RETRANS != 0 {
            flags &= !SACKED_RETRANS;
            self.tp.retrans_out -= 1;
        }
        self.seg_mut(seq).flags = flags;
    }

    /// `tcp_clean_rtx_queue`.
    ///
    /// The per-skb work of Linux's loop is folded over the acknowledged run: counters are
    /// summed and applied once, and of the calls to `tcp_rack_advance` and
    /// `tcp_rate_skb_delivered` only what their last effective call leaves is kept (the
    /// latest RTT, the latest sent segment), since nothing reads their state in the loop.
    pub(super) fn clean_rtx_queue(
        &mut self,
        ack: u64,
        prior_fack: u64,
        prior_snd_una: u64,
        st: &mut AckState,
        flag: &mut u32,
    ) {
        let now = self.tp.now_ns;
        let prior_sacked = self.tp.sacked_out;
        let una = self.tp.snd_una;
        let pkts_acked = (ack - una) as u32;
        let mut first_ackt: Option<u64> = None;
        let mut last_ackt = 0u64;
        let mut reord = prior_fack;
        // Segments of the run by tag: SACKed, lost, retransmission in flight, skb heads.
        let (mut sacked, mut lost, mut retrans_in_flight, mut heads) = (0u32, 0u32, 0u32, 0u64);
        // tcp_rack_advance folded: the last advancing segment's send time, the latest sent.
        let mut rack_last_tx: Option<u64> = None;
        let (mut rack_tx, mut rack_end) = (self.rack.mstamp_ns, self.rack.end_seq);
        // tcp_rate_skb_delivered folded: the latest sent segment still to be sampled.
        let mut rate_seq: Option<u64> = None;
        let mut rate_prior_set = st.rs_prior_set;
        let (mut rate_tx, mut rate_end) = (self.first_tx_mstamp_ns, st.rs_last_end_seq);
        for seq in una..ack {
            let (flags, tx, rate_pending, in_ts, ts_prev, ts_next) = {
                let s = self.seg(seq);
                (
                    s.flags,
                    s.tx_ns,
                    s.rate_pending,
                    s.in_ts,
                    s.ts_prev,
                    s.ts_next,
                )
            };
            heads += u64::from(flags & SKB_HEAD != 0);
            if flags & RETRANS != 0 {
                retrans_in_flight += u32::from(flags & SACKED_RETRANS != 0);
                *flag |= FLAG_RETRANS_DATA_ACKED;
            } else if flags & SACKED == 0 {
                last_ackt = tx;
                if first_ackt.is_none() {
                    first_ackt = Some(tx);
                    // The first never-retransmitted, un-SACKed segment has the lowest seq.
                    reord = reord.min(seq);
                    if seq < self.high_seq {
                        *flag |= FLAG_ORIG_SACK_ACKED;
                    }
                }
            }
            if flags & SACKED != 0 {
                sacked += 1;
            } else {
                // tcp_skb_spurious_retrans: the ACK echoes the original transmission.
                let spurious = flags & RETRANS != 0
                    && self.rcv_tsecr != 0
                    && (self.rcv_tsecr.wrapping_sub(ticks(tx)) as i32) < 0;
                // tcp_rack_advance: a retransmission (s)acked within min_rtt is ambiguous.
                // Only SACK flows advance RACK here (`tcp_is_sack`).
                let ambiguous =
                    flags & RETRANS != 0 && (now - tx) / 1_000 < self.tp.min_rtt_us as u64;
                if self.opts.sack && !spurious && !ambiguous {
                    rack_last_tx = Some(tx);
                    if sent_after(tx, rack_tx, seq + 1, rack_end) {
                        (rack_tx, rack_end) = (tx, seq + 1);
                    }
                }
            }
            lost += u32::from(flags & LOST != 0);
            if rate_pending && (!rate_prior_set || sent_after(tx, rate_tx, seq + 1, rate_end)) {
                rate_prior_set = true;
                (rate_tx, rate_end) = (tx, seq + 1);
                rate_seq = Some(seq);
            }
            // The segment leaves the queue: its own rate and list fields need no reset (its
            // slot is reused only by `push_back`, which writes it whole).
            if in_ts {
                self.ts_unlink(ts_prev, ts_next);
            }
        }
        if let Some(tx) = rack_last_tx {
            self.rack.advanced = true;
            self.rack.rtt_us = (now - tx) / 1_000;
            self.rack.mstamp_ns = rack_tx;
            self.rack.end_seq = rack_end;
        }
        if let Some(seq) = rate_seq {
            let s = *self.seg(seq);
            self.rate_sample_set(seq, &s, st);
        }
        if pkts_acked > 0 {
            // Each segment popped decrements the skb heads after snd_una if the new head
            // starts an skb: the heads of una+1..=ack.
            heads -= u64::from(self.seg(una).flags & SKB_HEAD != 0);
            self.segs.pop_front_to(ack);
            self.tp.snd_una = ack;
            if self.segs.front().is_some_and(|f| f.flags & SKB_HEAD != 0) {
                heads += 1;
            }
            self.sndbuf.heads_after_una -= heads;
            self.tp.retrans_out -= retrans_in_flight;
            self.tp.sacked_out -= sacked;
            self.tp.lost_out -= lost;
            // A SACK flow counts what is newly delivered here; without SACK,
            // `tcp_remove_reno_sacks` below does (`tcp_count_delivered`).
            if self.opts.sack {
                self.tp.delivered += (pkts_acked - sacked) as u64;
            }
            self.tp.packets_out -= pkts_acked;
            *flag |= FLAG_ACKED;
        }
        if self.highest_sack_end < self.tp.snd_una {
            self.highest_sack_end = self.tp.snd_una;
        }
        if self.retransmit_hint < self.tp.snd_una {
            self.retransmit_hint = self.tp.snd_una;
        }
        let mut seq_rtt_us: i64 = -1;
        let mut ca_rtt_us: i64 = -1;
        let mut sack_rtt_us: i64 = -1;
        if let Some(first) = first_ackt {
            if *flag & FLAG_RETRANS_DATA_ACKED == 0 {
                seq_rtt_us = ((now - first) / 1_000) as i64;
                ca_rtt_us = ((now - last_ackt) / 1_000) as i64;
                if pkts_acked == 1
                    && prior_sacked == 0
                    && self.seg_bytes(una) < self.opts.mss
                    && st.rs.prior_delivered + 1 == self.tp.delivered
                    && *flag & FLAG_CA_ALERT == 0
                {
                    *flag |= FLAG_ACK_MAYBE_DELAYED;
                }
            }
        }
        if let Some(first) = st.first_sackt_ns {
            sack_rtt_us = ((now - first) / 1_000) as i64;
            ca_rtt_us = ((now - st.last_sackt_ns) / 1_000) as i64;
        }
        let rtt_update = self.ack_update_rtt(*flag, seq_rtt_us, sack_rtt_us, ca_rtt_us, st);
        if *flag & FLAG_ACKED != 0 {
            *flag |= FLAG_SET_XMIT_TIMER;
            if !self.opts.sack {
                self.remove_reno_sacks(pkts_acked);
                // Without SACK tags, progress over a retransmitted segment cannot be told
                // to come from an original transmission.
                if *flag & FLAG_RETRANS_DATA_ACKED != 0 {
                    *flag &= !FLAG_ORIG_SACK_ACKED;
                }
            } else if reord < prior_fack {
                self.check_sack_reordering(reord, 0);
            }
        } else if let Some(head) = self.segs.front() {
            if rtt_update && sack_rtt_us >= 0 && sack_rtt_us as u64 > (now - head.tx_ns) / 1_000 {
                *flag |= FLAG_SET_XMIT_TIMER;
            }
        }
        let _ = prior_snd_una;
        if self.cc_hooks.pkts_acked {
            let sample = AckSample {
                pkts_acked,
                rtt_us: st.rs.rtt_us,
                in_flight: self.tp.packets_in_flight(),
            };
            (*self.cc).pkts_acked(&mut self.tp, &sample);
        }
    }
}
