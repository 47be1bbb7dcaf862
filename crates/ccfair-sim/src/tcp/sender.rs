//! The Linux TCP sender: the ACK path of `tcp_ack` (net/ipv4/tcp_input.c), the SACK
//! scoreboard, RACK loss detection (tcp_recovery.c), PRR, RTO and TLP (tcp_timer.c,
//! tcp_output.c), the delivery-rate sampler (tcp_rate.c) and EDT pacing.
//!
//! Function names in comments are Linux's; the code follows their order of operations so
//! that congestion control modules see the same hook sequence as in the kernel.
//! Sequence numbers count segments. What is not modelled is listed in docs/fidelity.md.

use std::collections::VecDeque;

use ccfair_cc::{AckSample, CaEvent, CaState, CongestionControl, RateSample, TcpSock};

use super::rtt::{RttEstimator, RTO_MAX_US};
use crate::packet::{Kind, Packet, SackBlock};
use crate::spec::{TcpOptions, DATA_HEADER_BYTES};

// Scoreboard tag bits (`TCP_SKB_CB(skb)->sacked`).
const SACKED: u8 = 0x01; // TCPCB_SACKED_ACKED
const SACKED_RETRANS: u8 = 0x02; // TCPCB_SACKED_RETRANS: retransmit in flight
const LOST: u8 = 0x04; // TCPCB_LOST
const EVER_RETRANS: u8 = 0x08; // TCPCB_EVER_RETRANS
const RETRANS: u8 = SACKED_RETRANS | EVER_RETRANS; // TCPCB_RETRANS

// tcp_ack flags (subset of FLAG_* in tcp_input.c).
const FLAG_DATA: u32 = 0x01;
const FLAG_SND_UNA_ADVANCED: u32 = 0x400;
const FLAG_DATA_ACKED: u32 = 0x04;
const FLAG_RETRANS_DATA_ACKED: u32 = 0x08;
const FLAG_DATA_SACKED: u32 = 0x20;
const FLAG_ECE: u32 = 0x40;
const FLAG_LOST_RETRANS: u32 = 0x80;
const FLAG_ORIG_SACK_ACKED: u32 = 0x200;
const FLAG_DSACKING_ACK: u32 = 0x800;
const FLAG_SET_XMIT_TIMER: u32 = 0x1000;
const FLAG_ACK_MAYBE_DELAYED: u32 = 0x10000;
const FLAG_DSACK_TLP: u32 = 0x20000;
const FLAG_WIN_UPDATE: u32 = 0x02;
const FLAG_ACKED: u32 = FLAG_DATA_ACKED;
const FLAG_NOT_DUP: u32 = FLAG_DATA | FLAG_WIN_UPDATE | FLAG_ACKED;
const FLAG_CA_ALERT: u32 = FLAG_DATA_SACKED | FLAG_ECE | FLAG_DSACKING_ACK;

/// `TCP_TIMEOUT_MIN_US`.
const TIMEOUT_MIN_US: u64 = 2_000;
/// `TCP_RACK_RECOVERY_THRESH`.
const RACK_RECOVERY_THRESH: u8 = 16;
/// `sysctl_tcp_max_reordering`.
const MAX_REORDERING: u32 = 300;
const NONE: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XmitTimer {
    Retrans,
    LossProbe,
    ReoTimeout,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rexmit {
    None,
    Lost,
    New,
}

/// Per-segment state of the retransmission queue (the skb control block).
#[derive(Clone, Copy, Debug)]
struct Seg {
    /// Time of the latest (re)transmission (`skb->skb_mstamp_ns`).
    tx_ns: u64,
    /// Rate-sampler snapshots (`TCP_SKB_CB(skb)->tx`).
    delivered: u64,
    delivered_mstamp_ns: u64,
    first_tx_mstamp_ns: u64,
    is_app_limited: bool,
    /// `tx.delivered_mstamp != 0`: not yet counted by the rate sampler.
    rate_pending: bool,
    flags: u8,
    /// Time-sorted list of segments in flight (`tsorted_sent_queue`).
    ts_prev: u64,
    ts_next: u64,
    in_ts: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct Rack {
    mstamp_ns: u64,
    end_seq: u64,
    rtt_us: u64,
    advanced: bool,
    reo_wnd_steps: u32,
    dsack_seen: bool,
    last_delivered: u64,
    reo_wnd_persist: u8,
}

/// Per-ACK scratch state (`struct tcp_sacktag_state` + the rate sample under construction).
#[derive(Default)]
struct AckState {
    reord: u64,
    first_sackt_ns: Option<u64>,
    last_sackt_ns: u64,
    rs_prior_set: bool,
    rs_last_end_seq: u64,
    rs: RateSample,
    rs_prior_mstamp_set: bool,
}

/// Counters for the per-flow summary.
#[derive(Clone, Copy, Debug, Default)]
pub struct SenderStats {
    pub data_pkts_sent: u64,
    pub retrans_pkts: u64,
    pub rto_count: u64,
    pub tlp_count: u64,
    pub recoveries: u64,
    pub undo_count: u64,
    pub rtt_sum_us: u64,
    pub rtt_samples: u64,
    pub rtt_min_us: u64,
}

pub struct Sender {
    pub tp: TcpSock,
    pub cc: Box<dyn CongestionControl>,
    flow: u32,
    opts: TcpOptions,
    jiffy_ns: u64,
    paced: bool,
    /// Segments the application has written: `snd_nxt` may not pass it.
    app_end: u64,
    /// Payload of the last segment when the flow has a byte count.
    last_seg_bytes: u32,
    total_bytes: Option<u64>,

    segs: VecDeque<Seg>,
    ts_head: u64,
    ts_tail: u64,

    rtt: RttEstimator,
    rto_jiffies: u64,
    backoff: u32,
    retransmits: u32,

    high_seq: u64,
    undo_marker: Option<u64>,
    undo_retrans: i64,
    prior_ssthresh: u32,
    retrans_stamp_ticks: u32,
    prr_delivered: u32,
    prr_out: u32,
    reordering: u32,
    reord_seen: u32,
    /// End of the highest SACKed segment (`tcp_highest_sack_seq`); `snd_una` when none.
    highest_sack_end: u64,
    retransmit_hint: u64,
    rack: Rack,
    tlp_high_seq: Option<u64>,
    tlp_retrans: bool,
    frto: bool,
    cwnd_usage_seq: u64,
    /// Blocks of the previous ACK (`recv_sack_cache`), to tag only what is new.
    sack_cache: [SackBlock; 3],
    n_sack_cache: usize,
    /// `tp->rx_opt.rcv_tsecr` of the ACK being processed, and the TSval to echo.
    rcv_tsecr: u32,
    ts_recent: u32,
    /// `tp->rate_delivered`, `rate_interval_us`: the last delivery-rate sample (tcp_info).
    rate_delivered: u64,
    rate_interval_us: u64,
    data_segs_out: u64,
    /// `tp->first_tx_mstamp`: send time of the packet that started the current rate interval.
    first_tx_mstamp_ns: u64,
    acks_processed: u64,

    xmit_timer: Option<(u64, XmitTimer)>,
    pacing_wake: Option<u64>,
    pub stats: SenderStats,
    /// Time when the last byte of a finite flow was acknowledged.
    pub completed_ns: Option<u64>,
    pub started: bool,
}

fn ticks(now_ns: u64) -> u32 {
    // TCP timestamps in ms (Linux's default `tcp_time_stamp`), offset so that 0 means "none".
    (now_ns / 1_000_000) as u32 + 1
}

/// `tcp_skb_sent_after`.
fn sent_after(t1: u64, t2: u64, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl Sender {
    pub fn new(
        flow: u32,
        opts: &TcpOptions,
        cc: Box<dyn CongestionControl>,
        size_bytes: Option<u64>,
    ) -> Self {
        let jiffy_ns = 1_000_000_000 / opts.hz as u64;
        let mut tp = TcpSock::new(opts.mss, opts.init_cwnd, opts.hz);
        let paced = cc.wants_pacing() || opts.fq_pacing;
        tp.is_paced = paced;
        let (app_end, last_seg_bytes) = match size_bytes {
            Some(b) => {
                let segs = b.div_ceil(opts.mss as u64);
                let last = (b - (segs - 1) * opts.mss as u64) as u32;
                (segs, last)
            }
            None => (u64::MAX, opts.mss),
        };
        let rto_init_jiffies = (opts.rto_init_ms as u64 * 1_000_000).div_ceil(jiffy_ns);
        Sender {
            tp,
            cc,
            flow,
            opts: opts.clone(),
            jiffy_ns,
            paced,
            app_end,
            last_seg_bytes,
            total_bytes: size_bytes,
            segs: VecDeque::with_capacity(1024),
            ts_head: NONE,
            ts_tail: NONE,
            rtt: RttEstimator::new(
                opts.rto_min_ms as u64 * 1_000,
                opts.min_rtt_wlen_s as u64 * opts.hz as u64,
            ),
            rto_jiffies: rto_init_jiffies,
            backoff: 0,
            retransmits: 0,
            high_seq: 0,
            undo_marker: None,
            undo_retrans: 0,
            prior_ssthresh: 0,
            retrans_stamp_ticks: 0,
            prr_delivered: 0,
            prr_out: 0,
            reordering: opts.reordering,
            reord_seen: 0,
            highest_sack_end: 0,
            retransmit_hint: 0,
            rack: Rack {
                reo_wnd_steps: 1,
                ..Rack::default()
            },
            tlp_high_seq: None,
            tlp_retrans: false,
            frto: false,
            cwnd_usage_seq: 0,
            sack_cache: [SackBlock::default(); 3],
            n_sack_cache: 0,
            rcv_tsecr: 0,
            ts_recent: 0,
            rate_delivered: 0,
            rate_interval_us: 0,
            data_segs_out: 0,
            first_tx_mstamp_ns: 0,
            acks_processed: 0,
            xmit_timer: None,
            pacing_wake: None,
            stats: SenderStats {
                rtt_min_us: u64::MAX,
                ..SenderStats::default()
            },
            completed_ns: None,
            started: false,
        }
    }

    // ------------------------------------------------------------------ accessors

    pub fn xmit_timer_deadline(&self) -> Option<u64> {
        self.xmit_timer.map(|(t, _)| t)
    }

    pub fn pacing_deadline(&self) -> Option<u64> {
        self.pacing_wake
    }

    pub fn srtt_us(&self) -> u64 {
        self.rtt.srtt_us()
    }

    pub fn rto_us(&self) -> u64 {
        self.rto_jiffies * self.jiffy_ns / 1_000
    }

    /// `tcpi_delivery_rate`: payload bytes per second of the last rate sample.
    pub fn delivery_rate_bps(&self) -> f64 {
        if self.rate_interval_us == 0 {
            return 0.0;
        }
        self.rate_delivered as f64 * self.tp.mss as f64 * 1e6 / self.rate_interval_us as f64
    }

    pub fn bytes_acked(&self) -> u64 {
        self.seg_bytes_upto(self.tp.snd_una)
    }

    fn seg_bytes_upto(&self, seq: u64) -> u64 {
        let full = seq * self.opts.mss as u64;
        match self.total_bytes {
            Some(b) => full.min(b),
            None => full,
        }
    }

    /// Payload of segment `seq`.
    pub fn seg_bytes(&self, seq: u64) -> u32 {
        if self.total_bytes.is_some() && seq + 1 == self.app_end {
            self.last_seg_bytes
        } else {
            self.opts.mss
        }
    }

    fn seg(&self, seq: u64) -> &Seg {
        &self.segs[(seq - self.tp.snd_una) as usize]
    }

    fn seg_mut(&mut self, seq: u64) -> &mut Seg {
        let i = (seq - self.tp.snd_una) as usize;
        &mut self.segs[i]
    }

    fn has_new_data(&self) -> bool {
        self.tp.snd_nxt < self.app_end
    }

    fn set_now(&mut self, now: u64) {
        self.tp.now_ns = now;
    }

    fn now_jiffies(&self) -> u64 {
        self.tp.now_ns / self.jiffy_ns
    }

    fn usecs_to_jiffies(&self, us: u64) -> u64 {
        (us * 1_000).div_ceil(self.jiffy_ns)
    }

    // ------------------------------------------------------------------ tsorted list

    fn ts_remove(&mut self, seq: u64) {
        let (prev, next, in_ts) = {
            let s = self.seg(seq);
            (s.ts_prev, s.ts_next, s.in_ts)
        };
        if !in_ts {
            return;
        }
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
        let s = self.seg_mut(seq);
        s.in_ts = false;
        s.ts_prev = NONE;
        s.ts_next = NONE;
    }

    fn ts_push_tail(&mut self, seq: u64) {
        self.ts_remove(seq);
        let tail = self.ts_tail;
        {
            let s = self.seg_mut(seq);
            s.ts_prev = tail;
            s.ts_next = NONE;
            s.in_ts = true;
        }
        if tail == NONE {
            self.ts_head = seq;
        } else {
            self.seg_mut(tail).ts_next = seq;
        }
        self.ts_tail = seq;
    }

    // ------------------------------------------------------------------ CA state helpers

    /// `tcp_set_ca_state`.
    fn set_ca_state(&mut self, state: CaState) {
        self.cc.set_state(&mut self.tp, state);
        self.tp.ca_state = state;
    }

    /// `tcp_init_undo`.
    fn init_undo(&mut self) {
        self.undo_marker = Some(self.tp.snd_una);
        self.undo_retrans = if self.tp.retrans_out > 0 {
            self.tp.retrans_out as i64
        } else {
            -1
        };
    }

    /// `tcp_current_ssthresh`.
    fn current_ssthresh(&self) -> u32 {
        if self.tp.in_cwnd_reduction() {
            self.tp.snd_ssthresh
        } else {
            self.tp
                .snd_ssthresh
                .max((self.tp.snd_cwnd >> 1) + (self.tp.snd_cwnd >> 2))
        }
    }

    /// `tcp_init_cwnd_reduction`.
    fn init_cwnd_reduction(&mut self) {
        self.high_seq = self.tp.snd_nxt;
        self.tlp_high_seq = None;
        self.tp.snd_cwnd_cnt = 0;
        self.tp.prior_cwnd = self.tp.snd_cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.tp.snd_ssthresh = self.cc.ssthresh(&mut self.tp);
    }

    /// `tcp_end_cwnd_reduction`.
    fn end_cwnd_reduction(&mut self) {
        if self.cc.has_cong_control() {
            return;
        }
        if self.tp.snd_ssthresh < ccfair_cc::sock::TCP_INFINITE_SSTHRESH
            && (self.tp.ca_state == CaState::Cwr || self.undo_marker.is_some())
        {
            self.tp.snd_cwnd = self.tp.snd_ssthresh;
        }
        self.cc.cwnd_event(&mut self.tp, CaEvent::CompleteCwr);
    }

    /// `tcp_enter_recovery`.
    fn enter_recovery(&mut self) {
        self.stats.recoveries += 1;
        self.prior_ssthresh = 0;
        self.init_undo();
        if !self.tp.in_cwnd_reduction() {
            self.prior_ssthresh = self.current_ssthresh();
            self.init_cwnd_reduction();
        }
        self.set_ca_state(CaState::Recovery);
    }

    /// `tcp_any_retrans_done`.
    fn any_retrans_done(&self) -> bool {
        self.tp.retrans_out > 0
            || self
                .segs
                .front()
                .is_some_and(|s| s.flags & EVER_RETRANS != 0)
    }

    /// `tcp_try_keep_open`.
    fn try_keep_open(&mut self) {
        let state = if self.tp.sacked_out + self.tp.lost_out > 0
            || self.tp.retrans_out > 0
            || self.undo_marker.is_some()
        {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.tp.ca_state != state {
            self.set_ca_state(state);
            self.high_seq = self.tp.snd_nxt;
        }
    }

    /// `tcp_try_to_open`.
    fn try_to_open(&mut self) {
        if !self.any_retrans_done() {
            self.retrans_stamp_ticks = 0;
        }
        if self.tp.ca_state != CaState::Cwr {
            self.try_keep_open();
        }
    }

    // ------------------------------------------------------------------ undo

    /// `tcp_packet_delayed`: the ACK echoes a timestamp older than our first retransmission.
    fn packet_delayed(&self) -> bool {
        self.retrans_stamp_ticks != 0
            && self.rcv_tsecr != 0
            && (self.rcv_tsecr.wrapping_sub(self.retrans_stamp_ticks) as i32) < 0
    }

    /// `tcp_may_undo`.
    fn may_undo(&self) -> bool {
        self.opts.undo
            && self.undo_marker.is_some()
            && (self.undo_retrans == 0 || self.packet_delayed())
    }

    /// `tcp_undo_cwnd_reduction`.
    fn undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        self.stats.undo_count += 1;
        if unmark_loss {
            for s in self.segs.iter_mut() {
                s.flags &= !LOST;
            }
            self.tp.lost_out = 0;
            self.retransmit_hint = self.tp.snd_una;
        }
        if self.prior_ssthresh != 0 {
            self.tp.snd_cwnd = self.cc.undo_cwnd(&mut self.tp);
            if self.prior_ssthresh > self.tp.snd_ssthresh {
                self.tp.snd_ssthresh = self.prior_ssthresh;
            }
        }
        self.undo_marker = None;
        self.rack.advanced = true;
    }

    /// `tcp_try_undo_recovery`. Returns true to hold the state (never for SACK flows).
    fn try_undo_recovery(&mut self) -> bool {
        if self.may_undo() {
            self.undo_cwnd_reduction(false);
        } else if self.rack.reo_wnd_persist > 0 {
            self.rack.reo_wnd_persist -= 1;
        }
        self.set_ca_state(CaState::Open);
        false
    }

    /// `tcp_try_undo_dsack`.
    fn try_undo_dsack(&mut self) -> bool {
        if self.opts.undo && self.undo_marker.is_some() && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist = (self.rack.reo_wnd_persist + 1).min(RACK_RECOVERY_THRESH);
            self.undo_cwnd_reduction(false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial`.
    fn try_undo_partial(&mut self, prior_snd_una: u64) -> bool {
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
        }
        false
    }

    /// `tcp_try_undo_loss`.
    fn try_undo_loss(&mut self, frto_undo: bool) -> bool {
        if (frto_undo && self.opts.undo) || self.may_undo() {
            self.undo_cwnd_reduction(true);
            self.retransmits = 0;
            self.set_ca_state(CaState::Open);
            return true;
        }
        false
    }

    /// `tcp_check_sack_reordering`.
    fn check_sack_reordering(&mut self, low_seq: u64, _ts: u32) {
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

    // ------------------------------------------------------------------ RACK

    /// `tcp_rack_advance`.
    fn rack_advance(&mut self, flags: u8, end_seq: u64, xmit_ns: u64) {
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
    fn rack_reo_wnd_us(&self) -> u64 {
        if self.reord_seen == 0
            && (self.tp.ca_state >= CaState::Recovery || self.tp.sacked_out >= self.reordering)
        {
            return 0;
        }
        ((self.tp.min_rtt_us as u64 >> 2) * self.rack.reo_wnd_steps as u64).min(self.rtt.srtt_us())
    }

    /// `tcp_rack_detect_loss`: returns the longest wait (µs) of a not-yet-expired candidate.
    fn rack_detect_loss(&mut self) -> u64 {
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
    fn rack_mark_lost(&mut self) -> bool {
        if !self.rack.advanced {
            return false;
        }
        self.rack.advanced = false;
        let timeout = self.rack_detect_loss();
        if timeout > 0 {
            let j = self.usecs_to_jiffies(timeout) + 2; // + TCP_TIMEOUT_MIN
            self.reset_xmit_timer(XmitTimer::ReoTimeout, j);
        }
        timeout > 0
    }

    /// `tcp_rack_update_reo_wnd`.
    fn rack_update_reo_wnd(&mut self, rs: &RateSample, prior_set: bool) {
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

    /// `tcp_mark_skb_lost`.
    fn mark_lost(&mut self, seq: u64) {
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

    // ------------------------------------------------------------------ timers

    /// `inet_csk_reset_xmit_timer`: delay in jiffies.
    fn reset_xmit_timer(&mut self, kind: XmitTimer, delay_jiffies: u64) {
        let delay = delay_jiffies.min(RTO_MAX_US * 1_000 / self.jiffy_ns);
        self.xmit_timer = Some((self.tp.now_ns + delay * self.jiffy_ns, kind));
    }

    fn pending(&self) -> Option<XmitTimer> {
        self.xmit_timer.map(|(_, k)| k)
    }

    /// `tcp_rto_delta_us`: time left until the head's RTO.
    fn rto_delta_us(&self) -> i64 {
        let head_tx_us = (self.segs.front().map_or(self.tp.now_ns, |s| s.tx_ns) / 1_000) as i64;
        head_tx_us + self.rto_us() as i64 - (self.tp.now_ns / 1_000) as i64
    }

    /// `tcp_rearm_rto`.
    fn rearm_rto(&mut self) {
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
    fn schedule_loss_probe(&mut self, advancing_rto: bool) -> bool {
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

    /// `tcp_set_xmit_timer`.
    fn set_xmit_timer(&mut self) {
        if !self.schedule_loss_probe(true) {
            self.rearm_rto();
        }
    }

    /// `tcp_set_rto` + `tcp_bound_rto`.
    fn set_rto(&mut self) {
        self.rto_jiffies = self.usecs_to_jiffies(self.rtt.rto_us());
    }

    // ------------------------------------------------------------------ transmit

    fn pacing_blocked(&mut self) -> bool {
        if !self.paced || self.tp.wstamp_ns <= self.tp.now_ns {
            return false;
        }
        self.pacing_wake = Some(self.tp.wstamp_ns);
        true
    }

    /// `tcp_update_skb_after_send`: EDT pacing of the next packet.
    fn update_wstamp_after_send(&mut self, payload: u32) {
        let prior = self.tp.wstamp_ns;
        self.tp.wstamp_ns = self.tp.wstamp_ns.max(self.tp.now_ns);
        let rate = self.tp.pacing_rate_bps;
        // Like sch_fq, the first 10 segments are not paced.
        if self.paced && rate != 0 && rate != u64::MAX && self.data_segs_out >= 10 {
            let mut len_ns = payload as u64 * 1_000_000_000 / rate;
            let credit = self.tp.wstamp_ns - prior;
            len_ns -= (len_ns / 2).min(credit);
            self.tp.wstamp_ns += len_ns;
        }
    }

    /// Emit segment `seq` (`__tcp_transmit_skb` + `tcp_rate_skb_sent`).
    fn transmit(&mut self, seq: u64, out: &mut Vec<Packet>) {
        let now = self.tp.now_ns;
        if self.tp.packets_in_flight() == 0 {
            self.cc.cwnd_event(&mut self.tp, CaEvent::TxStart);
        }
        if self.tp.packets_out == 0 {
            self.tp.delivered_mstamp_ns = now;
            self.first_tx_mstamp_ns = now;
        }
        let snapshot = (
            self.tp.delivered,
            self.tp.delivered_mstamp_ns,
            self.first_tx_mstamp_ns,
            self.tp.app_limited != 0,
        );
        {
            let s = self.seg_mut(seq);
            s.tx_ns = now;
            s.delivered = snapshot.0;
            s.delivered_mstamp_ns = snapshot.1;
            s.first_tx_mstamp_ns = snapshot.2;
            s.is_app_limited = snapshot.3;
            s.rate_pending = true;
        }
        self.ts_push_tail(seq);
        let payload = self.seg_bytes(seq);
        self.update_wstamp_after_send(payload);
        self.data_segs_out += 1;
        self.stats.data_pkts_sent += 1;
        if self.tp.in_cwnd_reduction() {
            self.prr_out += 1;
        }
        out.push(Packet {
            flow: self.flow,
            kind: Kind::Data,
            hop: 0,
            wire_bytes: payload + DATA_HEADER_BYTES,
            seq,
            payload_bytes: payload,
            tsval: ticks(now),
            tsecr: self.ts_recent,
            n_sack: 0,
            sack: [SackBlock::default(); 3],
        });
    }

    /// Send new segment `snd_nxt` (`tcp_event_new_data_sent`).
    fn send_new(&mut self, out: &mut Vec<Packet>) {
        let seq = self.tp.snd_nxt;
        self.segs.push_back(Seg {
            tx_ns: 0,
            delivered: 0,
            delivered_mstamp_ns: 0,
            first_tx_mstamp_ns: 0,
            is_app_limited: false,
            rate_pending: false,
            flags: 0,
            ts_prev: NONE,
            ts_next: NONE,
            in_ts: false,
        });
        self.transmit(seq, out);
        let prior_packets = self.tp.packets_out;
        self.tp.snd_nxt += 1;
        self.tp.packets_out += 1;
        if prior_packets == 0 || self.pending() == Some(XmitTimer::LossProbe) {
            self.rearm_rto();
        }
    }

    /// `tcp_retransmit_skb`.
    fn retransmit(&mut self, seq: u64, out: &mut Vec<Packet>) {
        self.transmit(seq, out);
        self.seg_mut(seq).flags |= RETRANS;
        self.tp.retrans_out += 1;
        self.stats.retrans_pkts += 1;
        if self.retrans_stamp_ticks == 0 {
            self.retrans_stamp_ticks = ticks(self.tp.now_ns);
        }
        if self.undo_retrans < 0 {
            self.undo_retrans = 0;
        }
        self.undo_retrans += 1;
    }

    /// `tcp_xmit_retransmit_queue`.
    fn xmit_retransmit_queue(&mut self, out: &mut Vec<Packet>) {
        if self.tp.packets_out == 0 {
            return;
        }
        let mut seq = self.retransmit_hint.max(self.tp.snd_una);
        let mut rearm = false;
        while seq < self.tp.snd_nxt {
            if self.pacing_blocked() {
                break;
            }
            self.retransmit_hint = seq;
            if self.tp.snd_cwnd <= self.tp.packets_in_flight() {
                break;
            }
            if self.tp.retrans_out >= self.tp.lost_out {
                break;
            }
            let flags = self.seg(seq).flags;
            if flags & LOST == 0 || flags & (SACKED | SACKED_RETRANS) != 0 {
                seq += 1;
                continue;
            }
            self.retransmit(seq, out);
            if seq == self.tp.snd_una && self.pending() != Some(XmitTimer::ReoTimeout) {
                rearm = true;
            }
            seq += 1;
        }
        if rearm {
            self.reset_xmit_timer(XmitTimer::Retrans, self.rto_jiffies);
        }
    }

    /// `tcp_write_xmit` for new data, then `tcp_cwnd_validate`.
    fn write_xmit(&mut self, out: &mut Vec<Packet>, probe: bool) -> u32 {
        let mut sent = 0;
        let mut cwnd_limited = false;
        while self.has_new_data() {
            if !probe && self.pacing_blocked() {
                break;
            }
            if self.opts.rcv_buf_bytes > 0
                && (self.tp.snd_nxt - self.tp.snd_una) * self.opts.mss as u64
                    >= self.opts.rcv_buf_bytes
            {
                break;
            }
            if self.tp.packets_in_flight() >= self.tp.snd_cwnd && !(probe && sent == 0) {
                cwnd_limited = true;
                break;
            }
            self.send_new(out);
            sent += 1;
            if probe {
                break;
            }
        }
        if sent > 0 && !probe {
            self.schedule_loss_probe(false);
        }
        cwnd_limited |= self.tp.packets_in_flight() >= self.tp.snd_cwnd;
        if sent > 0 || cwnd_limited {
            self.cwnd_validate(cwnd_limited);
        }
        if !self.has_new_data() {
            self.rate_check_app_limited();
        }
        sent
    }

    /// `tcp_cwnd_validate`.
    fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        if self.tp.snd_una >= self.cwnd_usage_seq
            || is_cwnd_limited
            || (!self.tp.is_cwnd_limited && self.tp.packets_out > self.tp.max_packets_out)
        {
            self.tp.is_cwnd_limited = is_cwnd_limited;
            self.tp.max_packets_out = self.tp.packets_out;
            self.cwnd_usage_seq = self.tp.snd_nxt;
        }
    }

    /// `tcp_rate_check_app_limited`.
    fn rate_check_app_limited(&mut self) {
        if self.tp.packets_in_flight() < self.tp.snd_cwnd && self.tp.lost_out <= self.tp.retrans_out
        {
            self.tp.app_limited = (self.tp.delivered + self.tp.packets_in_flight() as u64).max(1);
        }
    }

    /// Retransmissions (if asked) then new data, as after an ACK or a pacing wake-up.
    fn push(&mut self, rexmit: Rexmit, out: &mut Vec<Packet>) {
        self.pacing_wake = None;
        match rexmit {
            Rexmit::None => {}
            Rexmit::New => {
                // F-RTO step 2b: send new data first.
                self.write_xmit(out, false);
                if self.tp.snd_nxt > self.high_seq {
                    return;
                }
                self.frto = false;
                self.xmit_retransmit_queue(out);
            }
            Rexmit::Lost => self.xmit_retransmit_queue(out),
        }
        self.write_xmit(out, false);
    }

    // ------------------------------------------------------------------ events

    /// Connection start: the handshake is not simulated (data starts at `start`).
    pub fn start(&mut self, now: u64, out: &mut Vec<Packet>) {
        self.set_now(now);
        self.started = true;
        self.tp.snd_cwnd = self.opts.init_cwnd;
        self.cc.init(&mut self.tp);
        if !self.cc.has_cong_control() && self.opts.fq_pacing {
            self.update_pacing_rate();
        }
        self.push(Rexmit::None, out);
    }

    /// The application stops writing: no new segments after what was already sent.
    pub fn stop_app(&mut self) {
        self.app_end = self.app_end.min(self.tp.snd_nxt);
    }

    /// Pacing timer fired (`tcp_pace_kick` -> `tcp_tsq_write`).
    pub fn on_pacing_timer(&mut self, now: u64, out: &mut Vec<Packet>) {
        self.set_now(now);
        self.pacing_wake = None;
        let rexmit = if self.tp.lost_out > self.tp.retrans_out
            && self.tp.snd_cwnd > self.tp.packets_in_flight()
        {
            Rexmit::Lost
        } else {
            Rexmit::None
        };
        self.push(rexmit, out);
    }

    /// The retransmission / loss-probe / reordering timer fired.
    pub fn on_xmit_timer(&mut self, now: u64, out: &mut Vec<Packet>) {
        self.set_now(now);
        let Some((deadline, kind)) = self.xmit_timer else {
            return;
        };
        if deadline > now {
            return;
        }
        match kind {
            XmitTimer::Retrans => {
                self.xmit_timer = None;
                self.retransmit_timer(out);
            }
            XmitTimer::LossProbe => self.send_loss_probe(out),
            XmitTimer::ReoTimeout => self.rack_reo_timeout(out),
        }
        self.write_xmit(out, false);
    }

    /// `tcp_retransmit_timer`.
    fn retransmit_timer(&mut self, out: &mut Vec<Packet>) {
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
        self.rto_jiffies = (self.rto_jiffies * 2).min(RTO_MAX_US * 1_000 / self.jiffy_ns);
        self.reset_xmit_timer(XmitTimer::Retrans, self.rto_jiffies);
    }

    /// `tcp_enter_loss`.
    fn enter_loss(&mut self) {
        let new_recovery = self.tp.ca_state < CaState::Recovery;
        self.timeout_mark_lost();
        if self.tp.ca_state <= CaState::Disorder
            || self.high_seq <= self.tp.snd_una
            || (self.tp.ca_state == CaState::Loss && self.retransmits == 0)
        {
            self.prior_ssthresh = self.current_ssthresh();
            self.tp.prior_cwnd = self.tp.snd_cwnd;
            self.tp.snd_ssthresh = self.cc.ssthresh(&mut self.tp);
            self.cc.cwnd_event(&mut self.tp, CaEvent::Loss);
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
        self.frto = self.opts.frto && (new_recovery || self.retransmits > 0);
    }

    /// `tcp_timeout_mark_lost`.
    fn timeout_mark_lost(&mut self) {
        let head = self.tp.snd_una;
        for seq in head..self.tp.snd_nxt {
            if seq != head {
                let s = self.seg(seq);
                let elapsed = (self.tp.now_ns - s.tx_ns) / 1_000;
                // Don't mark recently sent ones lost yet (RACK, reo_wnd 0).
                if s.flags & SACKED == 0 && self.rack.rtt_us > elapsed {
                    continue;
                }
            }
            self.mark_lost(seq);
        }
        self.retransmit_hint = self.tp.snd_una;
    }

    /// `tcp_send_loss_probe`.
    fn send_loss_probe(&mut self, out: &mut Vec<Packet>) {
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

    /// `tcp_rack_reo_timeout`.
    fn rack_reo_timeout(&mut self, out: &mut Vec<Packet>) {
        let prior_inflight = self.tp.packets_in_flight();
        self.rack_detect_loss();
        if prior_inflight != self.tp.packets_in_flight() {
            if self.tp.ca_state != CaState::Recovery {
                self.enter_recovery();
                if !self.cc.has_cong_control() {
                    self.cwnd_reduction(1, 0, 0);
                }
            }
            self.xmit_retransmit_queue(out);
        }
        if self.pending() != Some(XmitTimer::Retrans) {
            self.rearm_rto();
        }
    }

    /// `tcp_cwnd_reduction` (PRR, RFC 6937 as Linux implements it).
    fn cwnd_reduction(&mut self, newly_acked_sacked: u32, newly_lost: u32, flag: u32) {
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
            if flag & FLAG_SND_UNA_ADVANCED != 0 && newly_lost == 0 {
                sndcnt += 1;
            }
            sndcnt = sndcnt.min(delta);
        }
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.tp.snd_cwnd = (in_flight + sndcnt) as u32;
    }

    /// `tcp_update_pacing_rate` (fq pacing of loss-based algorithms).
    fn update_pacing_rate(&mut self) {
        let srtt8 = self.rtt.srtt_us8;
        if srtt8 == 0 {
            self.tp.pacing_rate_bps = u64::MAX;
            return;
        }
        let ratio = if self.tp.snd_cwnd < self.tp.snd_ssthresh / 2 {
            self.opts.pacing_ss_ratio
        } else {
            self.opts.pacing_ca_ratio
        } as u64;
        let cwnd = self.tp.snd_cwnd.max(self.tp.packets_out) as u64;
        // mss * cwnd / srtt * ratio/100, with srtt in µs x8.
        let rate = self.tp.mss as u64 * (1_000_000 / 100 * 8) * ratio * cwnd / srtt8;
        self.tp.pacing_rate_bps = rate.min(self.tp.max_pacing_rate_bps);
    }

    /// An ACK arrived (`tcp_ack`).
    pub fn on_ack(&mut self, now: u64, pkt: &Packet, out: &mut Vec<Packet>) {
        self.set_now(now);
        let ack = pkt.seq;
        let prior_snd_una = self.tp.snd_una;
        if ack > self.tp.snd_nxt {
            return; // acks data we never sent
        }
        if pkt.tsval != 0 {
            self.ts_recent = pkt.tsval;
        }
        self.rcv_tsecr = pkt.tsecr;
        let mut st = AckState {
            reord: self.tp.snd_nxt,
            ..AckState::default()
        };
        let mut flag = 0u32;
        if ack < prior_snd_una {
            // Old ACK: only SACK information (e.g. D-SACK) is processed.
            if pkt.n_sack > 0 {
                self.sacktag(pkt, prior_snd_una, &mut st, &mut flag);
            }
            return;
        }
        let prior_fack = self.highest_sack_end.max(prior_snd_una);
        let prior_packets = self.tp.packets_out;
        let prior_delivered = self.tp.delivered;
        let prior_lost = self.tp.lost;
        st.rs.prior_in_flight = self.tp.packets_in_flight();
        st.rs.rtt_us = -1;
        if ack > prior_snd_una {
            flag |= FLAG_SND_UNA_ADVANCED;
            self.retransmits = 0;
        }
        if pkt.n_sack > 0 {
            self.sacktag(pkt, prior_snd_una, &mut st, &mut flag);
        }
        let mut rexmit = Rexmit::None;
        if prior_packets > 0 {
            self.clean_rtx_queue(ack, prior_fack, prior_snd_una, &mut st, &mut flag);
            let (rs, set) = (st.rs, st.rs_prior_set);
            self.rack_update_reo_wnd(&rs, set);
            if let Some(tlp_high) = self.tlp_high_seq {
                self.process_tlp_ack(ack, tlp_high, flag);
            }
            if self.ack_is_dubious(flag) {
                let num_dupack =
                    if flag & (FLAG_SND_UNA_ADVANCED | FLAG_NOT_DUP | FLAG_DSACKING_ACK) == 0 {
                        1
                    } else {
                        0
                    };
                self.fastretrans_alert(prior_snd_una, num_dupack, &mut flag, &mut rexmit);
            }
            if flag & FLAG_SET_XMIT_TIMER != 0 {
                self.set_xmit_timer();
            }
        }
        let delivered = (self.tp.delivered - prior_delivered) as u32;
        let lost = (self.tp.lost - prior_lost) as u32;
        st.rs.is_ack_delayed = flag & FLAG_ACK_MAYBE_DELAYED != 0;
        self.rate_gen(delivered, lost, &mut st);
        let rs = st.rs;
        self.cong_control(ack, delivered, flag, &rs);
        self.push(rexmit, out);
        if self.total_bytes.is_some()
            && self.completed_ns.is_none()
            && self.tp.snd_una >= self.app_end
        {
            self.completed_ns = Some(now);
        }
        self.check_invariants();
    }

    /// `tcp_ack_is_dubious`.
    fn ack_is_dubious(&self, flag: u32) -> bool {
        flag & FLAG_NOT_DUP == 0 || flag & FLAG_CA_ALERT != 0 || self.tp.ca_state != CaState::Open
    }

    /// `tcp_cong_control`.
    fn cong_control(&mut self, ack: u64, acked_sacked: u32, flag: u32, rs: &RateSample) {
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.tp, rs);
            return;
        }
        if self.tp.in_cwnd_reduction() {
            self.cwnd_reduction(acked_sacked, rs.losses, flag);
        } else if self.may_raise_cwnd(flag) {
            self.cc.cong_avoid(&mut self.tp, ack, acked_sacked);
        }
        if self.opts.fq_pacing {
            self.update_pacing_rate();
        }
    }

    /// `tcp_may_raise_cwnd`.
    fn may_raise_cwnd(&self, flag: u32) -> bool {
        if self.reordering > self.opts.reordering {
            return flag & (FLAG_ACKED | FLAG_DATA_SACKED) != 0;
        }
        flag & FLAG_DATA_ACKED != 0
    }

    /// `tcp_process_tlp_ack`.
    fn process_tlp_ack(&mut self, ack: u64, tlp_high: u64, flag: u32) {
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
    fn fastretrans_alert(
        &mut self,
        prior_snd_una: u64,
        num_dupack: u32,
        flag: &mut u32,
        rexmit: &mut Rexmit,
    ) {
        if self.tp.packets_out == 0 && self.tp.sacked_out > 0 {
            self.tp.sacked_out = 0;
        }
        // D. Check state exit conditions.
        if self.tp.ca_state == CaState::Open {
            self.retrans_stamp_ticks = 0;
        } else if self.tp.snd_una >= self.high_seq {
            match self.tp.ca_state {
                CaState::Cwr => {
                    if self.tp.snd_una != self.high_seq {
                        self.end_cwnd_reduction();
                        self.set_ca_state(CaState::Open);
                    }
                }
                CaState::Recovery => {
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
                if *flag & FLAG_SND_UNA_ADVANCED != 0 && self.try_undo_partial(prior_snd_una) {
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
                    self.enter_recovery();
                }
            }
            CaState::Loss => {
                if self.process_loss(*flag, num_dupack, rexmit) {
                    return;
                }
                self.identify_packet_loss(flag);
                if !(self.tp.ca_state == CaState::Open || *flag & FLAG_LOST_RETRANS != 0) {
                    return;
                }
            }
            _ => {}
        }
        if to_default {
            if self.tp.ca_state <= CaState::Disorder {
                self.try_undo_dsack();
            }
            self.identify_packet_loss(flag);
            if !self.time_to_recover() {
                self.try_to_open();
                return;
            }
            self.enter_recovery();
        }
        *rexmit = Rexmit::Lost;
    }

    fn time_to_recover(&self) -> bool {
        self.tp.lost_out > 0
    }

    /// `tcp_identify_packet_loss`.
    fn identify_packet_loss(&mut self, flag: &mut u32) {
        if self.tp.packets_out == 0 {
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

    /// `tcp_process_loss` (with F-RTO, RFC 5682). Returns true when the caller must return.
    fn process_loss(&mut self, flag: u32, num_dupack: u32, rexmit: &mut Rexmit) -> bool {
        let recovered = self.tp.snd_una >= self.high_seq;
        if flag & FLAG_SND_UNA_ADVANCED != 0 && self.try_undo_loss(false) {
            return true;
        }
        if self.frto {
            // Step 3.b: never-retransmitted data (s)acked: the timeout was spurious.
            if flag & FLAG_ORIG_SACK_ACKED != 0 && self.try_undo_loss(true) {
                return true;
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
                    return true;
                }
                self.frto = false;
            }
        }
        if recovered {
            self.try_undo_recovery();
            return true;
        }
        *rexmit = Rexmit::Lost;
        false
    }

    /// `tcp_sacktag_write_queue`, processing only the parts of blocks not seen in the
    /// previous ACK (as Linux's `recv_sack_cache`).
    fn sacktag(&mut self, pkt: &Packet, prior_snd_una: u64, st: &mut AckState, flag: &mut u32) {
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
            self.rack.dsack_seen = true;
            if self.tlp_high_seq.is_some_and(|h| b0.end == h) {
                *flag |= FLAG_DSACK_TLP;
            }
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
    }

    /// `tcp_sacktag_one` (+ the per-skb rate and tsorted bookkeeping of `tcp_sacktag_walk`).
    fn sacktag_one(&mut self, seq: u64, dup_sack: bool, st: &mut AckState, flag: &mut u32) {
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

    /// `tcp_rate_skb_delivered`.
    fn rate_skb_delivered(&mut self, seq: u64, st: &mut AckState) {
        let s = *self.seg(seq);
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
            st.rs_prior_set = true;
            st.rs.prior_delivered = s.delivered;
            st.rs.prior_mstamp_ns = s.delivered_mstamp_ns;
            st.rs_prior_mstamp_set = true;
            st.rs.is_app_limited = s.is_app_limited;
            st.rs.is_retrans = s.flags & RETRANS != 0;
            st.rs_last_end_seq = seq + 1;
            self.first_tx_mstamp_ns = s.tx_ns;
            st.rs.interval_us = ((s.tx_ns - s.first_tx_mstamp_ns) / 1_000) as i64;
        }
        if s.flags & SACKED != 0 {
            self.seg_mut(seq).rate_pending = false;
        }
    }

    /// `tcp_clean_rtx_queue`.
    fn clean_rtx_queue(
        &mut self,
        ack: u64,
        prior_fack: u64,
        prior_snd_una: u64,
        st: &mut AckState,
        flag: &mut u32,
    ) {
        let now = self.tp.now_ns;
        let prior_sacked = self.tp.sacked_out;
        let mut pkts_acked = 0u32;
        let mut first_ackt: Option<u64> = None;
        let mut last_ackt = 0u64;
        let mut reord = prior_fack;
        let mut acked_bytes = 0u64;
        while self.tp.snd_una < ack {
            let seq = self.tp.snd_una;
            let s = *self.seg(seq);
            if s.flags & RETRANS != 0 {
                if s.flags & SACKED_RETRANS != 0 {
                    self.tp.retrans_out -= 1;
                }
                *flag |= FLAG_RETRANS_DATA_ACKED;
            } else if s.flags & SACKED == 0 {
                last_ackt = s.tx_ns;
                if first_ackt.is_none() {
                    first_ackt = Some(s.tx_ns);
                }
                if seq < reord {
                    reord = seq;
                }
                if seq < self.high_seq {
                    *flag |= FLAG_ORIG_SACK_ACKED;
                }
            }
            if s.flags & SACKED != 0 {
                self.tp.sacked_out -= 1;
            } else {
                self.tp.delivered += 1;
                // tcp_skb_spurious_retrans: the ACK echoes the original transmission.
                let spurious = s.flags & RETRANS != 0
                    && self.rcv_tsecr != 0
                    && (self.rcv_tsecr.wrapping_sub(ticks(s.tx_ns)) as i32) < 0;
                if !spurious {
                    self.rack_advance(s.flags, seq + 1, s.tx_ns);
                }
            }
            if s.flags & LOST != 0 {
                self.tp.lost_out -= 1;
            }
            self.tp.packets_out -= 1;
            pkts_acked += 1;
            acked_bytes += self.seg_bytes(seq) as u64;
            self.rate_skb_delivered(seq, st);
            self.ts_remove(seq);
            self.segs.pop_front();
            self.tp.snd_una += 1;
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
                    && acked_bytes < self.opts.mss as u64
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
            if reord < prior_fack {
                self.check_sack_reordering(reord, 0);
            }
        } else if let Some(head) = self.segs.front() {
            if rtt_update && sack_rtt_us >= 0 && sack_rtt_us as u64 > (now - head.tx_ns) / 1_000 {
                *flag |= FLAG_SET_XMIT_TIMER;
            }
        }
        let _ = prior_snd_una;
        let sample = AckSample {
            pkts_acked,
            rtt_us: st.rs.rtt_us,
            in_flight: self.tp.packets_in_flight(),
        };
        self.cc.pkts_acked(&mut self.tp, &sample);
    }

    /// `tcp_ack_update_rtt`.
    fn ack_update_rtt(
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
    fn rate_gen(&mut self, delivered: u32, lost: u32, st: &mut AckState) {
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

    /// Invariants of cca-spec 8.2, checked in debug builds.
    fn check_invariants(&mut self) {
        self.acks_processed += 1;
        // The full scoreboard scan is O(window): do it on every 16th ACK.
        if cfg!(debug_assertions) && self.acks_processed % 16 == 0 {
            let tp = &self.tp;
            debug_assert!(
                tp.sacked_out + tp.lost_out <= tp.packets_out,
                "sacked {} + lost {} > packets_out {}",
                tp.sacked_out,
                tp.lost_out,
                tp.packets_out
            );
            debug_assert_eq!(tp.packets_out as u64, tp.snd_nxt - tp.snd_una);
            debug_assert_eq!(self.segs.len() as u64, tp.snd_nxt - tp.snd_una);
            let (mut s, mut l, mut r) = (0, 0, 0);
            for seg in &self.segs {
                s += (seg.flags & SACKED != 0) as u32;
                l += (seg.flags & LOST != 0) as u32;
                r += (seg.flags & SACKED_RETRANS != 0) as u32;
            }
            debug_assert_eq!(s, tp.sacked_out, "sacked_out");
            debug_assert_eq!(l, tp.lost_out, "lost_out");
            debug_assert_eq!(r, tp.retrans_out, "retrans_out");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccfair_cc::reno::{Reno, RenoParams};

    fn sender(opts: TcpOptions) -> Sender {
        Sender::new(0, &opts, Box::new(Reno::new(&RenoParams {})), None)
    }

    /// cca-spec 8.3.9 and `tcp_retransmit_timer`: with no RTT sample the RTO is 1 s, and it
    /// doubles on each consecutive expiry while the head is retransmitted each time.
    #[test]
    fn rto_backs_off_exponentially_without_acks() {
        let mut s = sender(TcpOptions {
            tlp: false,
            ..TcpOptions::default()
        });
        let mut out = Vec::new();
        s.start(0, &mut out);
        assert_eq!(out.len(), 10, "initial window of 10 segments");
        let mut expiries = Vec::new();
        for _ in 0..4 {
            let t = s.xmit_timer_deadline().unwrap();
            expiries.push(t);
            out.clear();
            s.on_xmit_timer(t, &mut out);
            assert_eq!(out.len(), 1, "one retransmission of the head per RTO");
            assert_eq!(out[0].seq, 0);
            assert_eq!(s.tp.snd_cwnd, 1);
            assert_eq!(s.tp.ca_state, CaState::Loss);
        }
        let gaps: Vec<u64> = expiries.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(expiries[0], 1_000_000_000);
        assert_eq!(gaps, vec![2_000_000_000, 4_000_000_000, 8_000_000_000]);
        assert_eq!(s.stats.rto_count, 4);
    }

    /// With TLP on, the first timer is a loss probe that retransmits the last segment.
    #[test]
    fn tail_loss_probe_retransmits_last_segment() {
        let mut s = sender(TcpOptions::default());
        let mut out = Vec::new();
        s.start(0, &mut out);
        s.stop_app();
        let t = s.xmit_timer_deadline().unwrap();
        out.clear();
        s.on_xmit_timer(t, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 9, "probe retransmits the highest segment");
        assert_eq!(s.stats.tlp_count, 1);
        assert_eq!(s.tp.ca_state, CaState::Open, "a probe is not a loss");
    }

    /// cca-spec 8.3.7: PRR with prior_cwnd 20, ssthresh 10 and ACKs of one packet sends
    /// ceil(10 * prr_delivered / 20) - prr_out while in flight exceeds ssthresh: about one
    /// packet per two delivered.
    #[test]
    fn prr_proportional_reduction() {
        let mut s = sender(TcpOptions::default());
        s.tp.prior_cwnd = 20;
        s.tp.snd_ssthresh = 10;
        s.tp.ca_state = CaState::Recovery;
        // 19 packets out, one lost: in flight 18 after the first ACK's accounting.
        s.tp.packets_out = 19;
        s.tp.lost_out = 1;
        let mut sent_total = 0i64;
        let mut cwnds = Vec::new();
        for delivered in 1..=8u32 {
            s.tp.sacked_out = delivered;
            s.cwnd_reduction(1, 0, 0);
            let in_flight = s.tp.packets_in_flight() as i64;
            let sndcnt = s.tp.snd_cwnd as i64 - in_flight;
            let expect = ((10 * delivered as i64) + 19) / 20 - sent_total;
            let expect = expect.max(if sent_total > 0 { 0 } else { 1 });
            assert_eq!(sndcnt, expect, "ACK {delivered}");
            // The sender transmits what PRR allows.
            s.prr_out += sndcnt as u32;
            s.tp.packets_out += sndcnt as u32;
            sent_total += sndcnt;
            cwnds.push(s.tp.snd_cwnd);
        }
        assert_eq!(sent_total, 4, "4 sent for 8 delivered: {cwnds:?}");
    }
}
