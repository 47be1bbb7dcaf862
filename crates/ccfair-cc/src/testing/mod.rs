//! One test driver for every algorithm: [`TestSender`] plays the part of the TCP substrate
//! around a congestion control module, so that unit tests, the conformance suite and the
//! trajectory snapshots all see the hooks called in the order, and with the rate samples,
//! of `ccfair-sim`'s sender (which follows net/ipv4/tcp_input.c and tcp_rate.c).
//!
//! Two levels:
//! - Segments: [`TestSender::send`], [`TestSender::ack`] (cumulative, SACKs, losses marked
//!   on the ACK, recovery entered on it), [`TestSender::lose`], [`TestSender::rto`],
//!   [`TestSender::retransmit`], [`TestSender::set_app_limited`]. Each segment keeps the
//!   snapshot of `tcp_rate_skb_sent`; an ACK builds its [`RateSample`] with
//!   `tcp_rate_skb_delivered` and `tcp_rate_gen`, and the RTT with `tcp_ack_update_rtt`
//!   (srtt x8 as `tcp_rtt_estimator`, windowed min RTT as `tcp_update_rtt_min`).
//!   A test in `ccfair-sim` (tests/harness.rs) drives the real sender and this one
//!   through the same sequence and compares every hook call.
//! - Samples: [`TestSender::deliver`] applies one ACK whose rate sample the test writes
//!   itself (to test a rule of the algorithm on a sample the pipe would rarely produce);
//!   the socket's accounting and the hook order are still the substrate's.
//!
//! What the driver leaves to the test: loss detection (RACK, dupthresh), timers, the
//! retransmission policy and time itself. [`path::Path`] adds a bottleneck (rate,
//! propagation delay, drop-tail buffer) and those policies for end-to-end scenarios.
//!
//! Layout: this file has the driver's state, sending, losses and state changes; `ack.rs`
//! the ACK path; `record.rs` the hook recorder; `path.rs` the bottleneck; the conformance
//! suite and the trajectory snapshots are this crate's tests of every registered algorithm.
//!
//! Available to this crate's tests and, with the `testing` feature, to other crates' tests;
//! never compiled into the engine.

mod ack;
#[cfg(test)]
mod conformance;
pub mod path;
pub mod record;
#[cfg(test)]
mod snapshots;

use std::collections::VecDeque;
use std::ops::Range;

use crate::minmax::MinMax;
use crate::sock::TCP_INFINITE_SSTHRESH;
use crate::{CaEvent, CaState, CongestionControl, RateSample, TcpSock};

/// `tp->mss_cache` of the tests: a 1500-byte MTU with timestamps.
pub const MSS: u32 = 1448;
/// `tcp_min_rtt_wlen` (s), Linux's default, as the simulator's `min_rtt_wlen_s`.
const MIN_RTT_WLEN_S: u64 = 300;
/// `tcp_pacing_ss_ratio` and `tcp_pacing_ca_ratio` (percent), Linux's defaults.
const PACING_SS_RATIO: u64 = 200;
const PACING_CA_RATIO: u64 = 120;

/// One segment of the retransmission queue: the scoreboard bits of
/// `TCP_SKB_CB(skb)->sacked` and the rate snapshot of `TCP_SKB_CB(skb)->tx`.
#[derive(Clone, Copy, Debug, Default)]
struct Seg {
    tx_ns: u64,
    delivered: u64,
    delivered_mstamp_ns: u64,
    first_tx_mstamp_ns: u64,
    is_app_limited: bool,
    /// Not yet counted by the rate sampler (`tx.delivered_mstamp != 0`).
    rate_pending: bool,
    sacked: bool,
    lost: bool,
    /// A retransmission is in flight (`TCPCB_SACKED_RETRANS`).
    retrans: bool,
    ever_retrans: bool,
}

/// What one ACK says, and what the sender decides on it before congestion control runs.
#[derive(Clone, Debug, Default)]
pub struct Ack {
    /// The cumulative ACK: every segment below it is acknowledged.
    pub cum: u64,
    /// SACK blocks (segment ranges) above `cum`.
    pub sacks: Vec<Range<u64>>,
    /// Segments the sender's loss detection marks lost on this ACK (RACK's verdict);
    /// the ACK then enters Recovery, as `tcp_fastretrans_alert` does.
    pub lost: Vec<Range<u64>>,
    /// The ACK carries ECE (an echo of a CE mark). It counts only when ECN was
    /// negotiated (`tp.ecn_ok`), as `tcp_ecn_rcv_ecn_echo`.
    pub ece: bool,
    /// The sender's verdict that the reduction was spurious: when this ACK ends Recovery,
    /// it is undone first (`tcp_try_undo_recovery`, e.g. Linux 6.18's `tcp_packet_delayed`
    /// when nothing was retransmitted yet).
    pub undo: bool,
}

impl Ack {
    /// A cumulative ACK of everything below `cum`.
    pub fn to(cum: u64) -> Self {
        Ack {
            cum,
            ..Ack::default()
        }
    }

    /// Also SACK `range`.
    pub fn sack(mut self, range: Range<u64>) -> Self {
        self.sacks.push(range);
        self
    }

    /// Also mark `range` lost on this ACK (and so enter Recovery, if not in it).
    pub fn lose(mut self, range: Range<u64>) -> Self {
        self.lost.push(range);
        self
    }

    /// Also echo a CE mark (ECE).
    pub fn ece(mut self) -> Self {
        self.ece = true;
        self
    }
}

/// One ACK with a rate sample written by the test ([`TestSender::deliver`]).
#[derive(Clone, Copy, Debug)]
pub struct Delivery {
    /// Packets newly (S)ACKed (`rs.acked_sacked`, added to `tp.delivered`).
    pub acked: u32,
    /// Packets newly marked lost (`rs.losses`, added to `tp.lost`).
    pub losses: u32,
    /// The ACK's RTT sample in µs (`rs.rtt_us`, `ack_sample.rtt_us`); -1: none.
    pub rtt_us: i64,
    /// `tp.packets_out` after this ACK (nothing SACKed or lost in the scoreboard); None
    /// leaves it.
    pub packets_out: Option<u32>,
    /// The sample's `prior_delivered`, `prior_mstamp_ns`, `delivered`, `interval_us`,
    /// `is_app_limited`, `is_retrans` and `is_ack_delayed`; the other fields are the
    /// substrate's.
    pub rs: RateSample,
    /// The ACK carries ECE (counted when `tp.ecn_ok`: `delivered_ce`, `CA_ACK_ECE`).
    pub ece: bool,
}

impl Default for Delivery {
    fn default() -> Self {
        Delivery {
            acked: 1,
            losses: 0,
            rtt_us: -1,
            packets_out: None,
            rs: RateSample::default(),
            ece: false,
        }
    }
}

/// Per-ACK scratch state of the rate sampler (`struct rate_sample` under construction).
#[derive(Default)]
struct RateState {
    rs: RateSample,
    prior_set: bool,
    last_end_seq: u64,
}

/// A congestion control module inside a minimal Linux sender. `cc` and `tp` are public:
/// tests read the module's state and set socket fields to build a situation.
pub struct TestSender<C> {
    /// The module under test.
    pub cc: C,
    /// The socket state the module reads and writes; the driver keeps it as Linux would.
    pub tp: TcpSock,
    /// The sample built by the last ACK.
    pub last_rs: RateSample,
    /// cwnd when the last ACK arrived, before any hook ran.
    pub cwnd_before_ack: u32,
    /// Compute `sk_pacing_rate` for modules without `cong_control`, as Linux (and the
    /// simulator) do after every ACK (`tcp_update_pacing_rate`). CUBIC's HyStart reads it.
    pub update_pacing_rate: bool,
    segs: VecDeque<Seg>,
    first_tx_mstamp_ns: u64,
    srtt_us8: u64,
    min_rtt: MinMax,
    has_min_rtt: bool,
    paced: bool,
    data_segs_out: u64,
    high_seq: u64,
    /// RTOs since the last ACK that advanced `snd_una` (`icsk_retransmits`).
    retransmits: u32,
    prior_ssthresh: u32,
    undo_marker: Option<u64>,
    prr_delivered: u32,
    prr_out: u32,
    cwnd_usage_seq: u64,
    rate_delivered: u64,
    rate_interval_us: u64,
    /// Window reductions that ECE started (`tcp_enter_cwr` from `tcp_try_to_open`).
    pub ecn_reductions: u64,
    /// `TCP_ECN_QUEUE_CWR`: the next new segment carries CWR ([`TestSender::take_cwr`]).
    ecn_queue_cwr: bool,
}

impl TestSender<Box<dyn CongestionControl>> {
    /// A registered algorithm with `params` (JSON) and `seed`, on a default socket.
    pub fn registered(name: &str, params: &serde_json::Value, seed: u64) -> Self {
        let cc = crate::build(name, params, seed).expect("a registered algorithm");
        TestSender::new(cc, TcpSock::new(MSS, 10, 1000))
    }
}

impl<C: CongestionControl> TestSender<C> {
    /// A connection at time `tp.now_ns` with `tp`'s settings; calls `init`.
    pub fn new(mut cc: C, mut tp: TcpSock) -> Self {
        let paced = cc.wants_pacing();
        tp.is_paced = tp.is_paced || paced;
        // tcp_init_transfer: the connection is established now.
        tp.lsndtime_ns = tp.now_ns;
        cc.init(&mut tp);
        let mut s = TestSender {
            cc,
            tp,
            last_rs: RateSample::default(),
            cwnd_before_ack: 0,
            update_pacing_rate: true,
            segs: VecDeque::new(),
            first_tx_mstamp_ns: 0,
            srtt_us8: 0,
            min_rtt: MinMax::default(),
            has_min_rtt: false,
            paced,
            data_segs_out: 0,
            high_seq: 0,
            retransmits: 0,
            prior_ssthresh: 0,
            undo_marker: None,
            prr_delivered: 0,
            prr_out: 0,
            cwnd_usage_seq: 0,
            rate_delivered: 0,
            rate_interval_us: 0,
            ecn_reductions: 0,
            ecn_queue_cwr: false,
        };
        if !s.cc.has_cong_control() {
            s.set_pacing_rate();
        }
        s
    }

    /// A default socket (MSS 1448, IW 10, HZ 1000) around `cc`.
    pub fn with(cc: C) -> Self {
        Self::new(cc, TcpSock::new(MSS, 10, 1000))
    }

    // ------------------------------------------------------------------ time

    /// The sender's clock (`tp.now_ns`), ns.
    pub fn now_ns(&self) -> u64 {
        self.tp.now_ns
    }

    /// Move the clock forward by `dt_ns`.
    pub fn advance(&mut self, dt_ns: u64) {
        self.tp.now_ns += dt_ns;
    }

    /// Move the clock to `t_ns` (never backwards).
    pub fn advance_to(&mut self, t_ns: u64) {
        self.tp.now_ns = self.tp.now_ns.max(t_ns);
    }

    // ------------------------------------------------------------------ queries

    /// Smoothed RTT in µs (0 before the first sample).
    pub fn srtt_us(&self) -> u64 {
        self.srtt_us8 >> 3
    }

    /// Whether segment `seq` is still in the retransmission queue.
    pub fn outstanding(&self, seq: u64) -> bool {
        seq >= self.tp.snd_una && seq < self.tp.snd_nxt
    }

    /// Whether `seq` is marked lost and not yet retransmitted.
    pub fn needs_retransmit(&self, seq: u64) -> bool {
        self.outstanding(seq) && {
            let s = self.seg(seq);
            s.lost && !s.retrans && !s.sacked
        }
    }

    /// Whether `seq` was SACKed.
    pub fn is_sacked(&self, seq: u64) -> bool {
        self.outstanding(seq) && self.seg(seq).sacked
    }

    /// `tp.delivered` and the delivery-rate sample last kept for `tcp_info`
    /// (`rate_delivered`, `rate_interval_us`).
    pub fn rate_info(&self) -> (u64, u64) {
        (self.rate_delivered, self.rate_interval_us)
    }

    /// Room to send: cwnd minus packets in flight (0 when full).
    pub fn cwnd_room(&self) -> u32 {
        self.tp.snd_cwnd.saturating_sub(self.tp.packets_in_flight())
    }

    fn seg(&self, seq: u64) -> &Seg {
        &self.segs[(seq - self.tp.snd_una) as usize]
    }

    fn seg_mut(&mut self, seq: u64) -> &mut Seg {
        let i = (seq - self.tp.snd_una) as usize;
        &mut self.segs[i]
    }

    // ------------------------------------------------------------------ sending

    /// `tcp_set_ca_state`: the module's hook, then the new state.
    pub fn set_ca_state(&mut self, state: CaState) {
        self.cc.set_state(&mut self.tp, state);
        self.tp.ca_state = state;
    }

    /// `__tcp_transmit_skb` of one segment with `tcp_rate_skb_sent` and EDT pacing.
    fn transmit(&mut self, seq: u64) {
        let now = self.tp.now_ns;
        if self.tp.packets_in_flight() == 0 {
            self.cc.cwnd_event(&mut self.tp, CaEvent::TxStart);
        }
        if self.tp.packets_out == 0 {
            self.tp.delivered_mstamp_ns = now;
            self.first_tx_mstamp_ns = now;
        }
        let snapshot = Seg {
            tx_ns: now,
            delivered: self.tp.delivered,
            delivered_mstamp_ns: self.tp.delivered_mstamp_ns,
            first_tx_mstamp_ns: self.first_tx_mstamp_ns,
            is_app_limited: self.tp.app_limited != 0,
            rate_pending: true,
            ..*self.seg(seq)
        };
        *self.seg_mut(seq) = snapshot;
        self.data_segs_out += 1;
        self.update_wstamp_after_send(self.tp.mss);
        self.tp.lsndtime_ns = now;
        if self.tp.in_cwnd_reduction() {
            self.prr_out += 1;
        }
    }

    /// `tcp_update_skb_after_send`: the earliest departure time of the next packet.
    fn update_wstamp_after_send(&mut self, payload: u32) {
        let prior = self.tp.wstamp_ns;
        self.tp.wstamp_ns = self.tp.wstamp_ns.max(self.tp.now_ns);
        let rate = self.tp.pacing_rate_bytes_per_sec;
        // Like sch_fq, the first 10 segments are not paced.
        if self.paced && rate != 0 && rate != u64::MAX && self.data_segs_out >= 10 {
            let mut len_ns = payload as u64 * 1_000_000_000 / rate;
            let credit = self.tp.wstamp_ns - prior;
            len_ns -= (len_ns / 2).min(credit);
            self.tp.wstamp_ns += len_ns;
        }
    }

    /// Send `n` new segments now, whatever cwnd says (the test is the sender's policy),
    /// then `tcp_cwnd_validate` as `tcp_write_xmit` does. Returns their sequence numbers.
    pub fn send(&mut self, n: u64) -> Range<u64> {
        let first = self.tp.snd_nxt;
        for _ in 0..n {
            let seq = self.tp.snd_nxt;
            self.segs.push_back(Seg::default());
            self.transmit(seq);
            self.tp.snd_nxt += 1;
            self.tp.packets_out += 1;
        }
        let cwnd_limited = self.tp.packets_in_flight() >= self.tp.snd_cwnd;
        if n > 0 || cwnd_limited {
            self.cwnd_validate(cwnd_limited);
        }
        first..self.tp.snd_nxt
    }

    /// Send new segments while cwnd has room (a bulk sender; pacing is the test's
    /// business: see [`TestSender::pacing_allows`]). Returns them.
    pub fn send_to_cwnd(&mut self) -> Range<u64> {
        let n = self.cwnd_room() as u64;
        self.send(n)
    }

    /// `tcp_write_xmit` of new data: up to `max` segments while cwnd has room and the
    /// pacer allows, then `tcp_cwnd_validate`. Returns them.
    pub fn write_xmit(&mut self, max: u64) -> Range<u64> {
        let first = self.tp.snd_nxt;
        let mut cwnd_limited = false;
        while self.tp.snd_nxt - first < max && self.pacing_allows() {
            if self.tp.packets_in_flight() >= self.tp.snd_cwnd {
                cwnd_limited = true;
                break;
            }
            let seq = self.tp.snd_nxt;
            self.segs.push_back(Seg::default());
            self.transmit(seq);
            self.tp.snd_nxt += 1;
            self.tp.packets_out += 1;
        }
        cwnd_limited |= self.tp.packets_in_flight() >= self.tp.snd_cwnd;
        if self.tp.snd_nxt > first || cwnd_limited {
            self.cwnd_validate(cwnd_limited);
        }
        first..self.tp.snd_nxt
    }

    /// Whether the new segment about to go out carries CWR (`tcp_ecn_send`): once after
    /// each window reduction with ECN on. The test's path calls it for the first segment
    /// of what [`TestSender::send`] or [`TestSender::write_xmit`] returns.
    pub fn take_cwr(&mut self) -> bool {
        std::mem::take(&mut self.ecn_queue_cwr)
    }

    /// Whether the pacer lets a packet leave now (`tp.wstamp_ns <= now` when paced).
    pub fn pacing_allows(&self) -> bool {
        !self.paced || self.tp.wstamp_ns <= self.tp.now_ns
    }

    /// Whether the module asked for pacing (`wants_pacing` at construction).
    pub fn is_paced(&self) -> bool {
        self.paced
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

    /// `tcp_retransmit_skb` of segment `seq` (it must be outstanding and not SACKed).
    pub fn retransmit(&mut self, seq: u64) {
        assert!(self.outstanding(seq), "segment {seq} is not outstanding");
        assert!(!self.seg(seq).sacked, "segment {seq} was SACKed");
        self.transmit(seq);
        let s = self.seg_mut(seq);
        s.retrans = true;
        s.ever_retrans = true;
        self.tp.retrans_out += 1;
    }

    /// `tcp_rate_check_app_limited`: the application has nothing more to send, so samples
    /// taken until what is in flight now is delivered are app-limited.
    pub fn set_app_limited(&mut self) {
        self.tp.app_limited = (self.tp.delivered + self.tp.packets_in_flight() as u64).max(1);
    }

    // ------------------------------------------------------------------ losses and states

    /// `tcp_mark_skb_lost` of `range`, between ACKs (as a timer would: the losses appear
    /// in no rate sample).
    pub fn lose(&mut self, range: Range<u64>) {
        for seq in range {
            self.mark_lost(seq);
        }
    }

    /// `tcp_mark_skb_lost`.
    fn mark_lost(&mut self, seq: u64) {
        if !self.outstanding(seq) {
            return;
        }
        let s = *self.seg(seq);
        if s.sacked {
            return;
        }
        if s.lost {
            if s.retrans {
                // A retransmission lost again.
                self.seg_mut(seq).retrans = false;
                self.tp.retrans_out -= 1;
                self.tp.lost += 1;
            }
        } else {
            self.seg_mut(seq).lost = true;
            self.tp.lost_out += 1;
            self.tp.lost += 1;
        }
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

    /// `tcp_enter_recovery` (with `tcp_init_cwnd_reduction`): `ssthresh` saves what it
    /// needs, then `set_state(Recovery)`.
    pub fn enter_recovery(&mut self) {
        self.enter_recovery_on(false);
    }

    /// `tcp_enter_recovery(sk, ece_ack)`: an ACK with ECE leaves no ssthresh to undo to.
    pub(super) fn enter_recovery_on(&mut self, ece_ack: bool) {
        self.prior_ssthresh = 0;
        self.undo_marker = Some(self.tp.snd_una);
        if !self.tp.in_cwnd_reduction() {
            if !ece_ack {
                self.prior_ssthresh = self.current_ssthresh();
            }
            self.init_cwnd_reduction();
        }
        self.set_ca_state(CaState::Recovery);
    }

    /// `tcp_init_cwnd_reduction`.
    fn init_cwnd_reduction(&mut self) {
        self.high_seq = self.tp.snd_nxt;
        self.tp.snd_cwnd_cnt = 0;
        self.tp.prior_cwnd = self.tp.snd_cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.tp.snd_ssthresh = self.cc.ssthresh(&mut self.tp);
        // tcp_ecn_queue_cwr.
        self.ecn_queue_cwr |= self.tp.ecn_ok;
    }

    /// `tcp_enter_cwr`: the once-per-window reduction an ECE asks for (no undo), unless
    /// one (CWR, Recovery or Loss) is under way.
    pub fn enter_cwr(&mut self) {
        self.prior_ssthresh = 0;
        if self.tp.ca_state < CaState::Cwr {
            self.undo_marker = None;
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
        }
    }

    /// The end of CWR as `tcp_fastretrans_alert` does it once something above `high_seq`
    /// is ACKed: `tcp_end_cwnd_reduction` (cwnd = ssthresh and `CA_EVENT_COMPLETE_CWR`,
    /// unless the module has `cong_control`), then `set_state(Open)`.
    fn exit_cwr(&mut self) {
        if !self.cc.has_cong_control() {
            if self.tp.snd_ssthresh < TCP_INFINITE_SSTHRESH {
                self.tp.snd_cwnd = self.tp.snd_ssthresh;
            }
            self.cc.cwnd_event(&mut self.tp, CaEvent::CompleteCwr);
        }
        self.set_ca_state(CaState::Open);
    }

    /// The end of Recovery as `tcp_fastretrans_alert` does it once `snd_una` passes
    /// `high_seq` ([`TestSender::ack`] calls it; tests may call it to end Recovery
    /// early): `set_state(Open)`, then `tcp_end_cwnd_reduction` (cwnd = ssthresh and
    /// `CA_EVENT_COMPLETE_CWR`, unless the module has `cong_control`).
    pub fn exit_recovery(&mut self) {
        self.set_ca_state(CaState::Open);
        if self.cc.has_cong_control() {
            return;
        }
        if self.tp.snd_ssthresh < TCP_INFINITE_SSTHRESH && self.undo_marker.is_some() {
            self.tp.snd_cwnd = self.tp.snd_ssthresh;
        }
        self.cc.cwnd_event(&mut self.tp, CaEvent::CompleteCwr);
    }

    /// `tcp_undo_cwnd_reduction` (a spurious reduction: `undo_cwnd`, the old ssthresh),
    /// then Open.
    pub fn undo(&mut self) {
        self.undo_cwnd_reduction();
        self.set_ca_state(CaState::Open);
    }

    /// `tcp_undo_cwnd_reduction` alone: `undo_cwnd` and the old ssthresh (when there is
    /// one to return to), no undo marker.
    pub(crate) fn undo_cwnd_reduction(&mut self) {
        if self.prior_ssthresh != 0 {
            self.tp.snd_cwnd = self.cc.undo_cwnd(&mut self.tp);
            if self.prior_ssthresh > self.tp.snd_ssthresh {
                self.tp.snd_ssthresh = self.prior_ssthresh;
                // tcp_ecn_withdraw_cwr.
                self.ecn_queue_cwr = false;
            }
        }
        self.undo_marker = None;
    }

    /// The retransmission timer fired: `tcp_enter_loss` (every segment not SACKed is
    /// lost, `ssthresh` and `CA_EVENT_LOSS` on a new episode, cwnd = in flight + 1,
    /// `set_state(Loss)`). The test retransmits (e.g. [`TestSender::retransmit`] of
    /// `snd_una`).
    pub fn rto(&mut self) {
        for seq in self.tp.snd_una..self.tp.snd_nxt {
            self.mark_lost(seq);
        }
        if self.tp.ca_state <= CaState::Disorder
            || self.high_seq <= self.tp.snd_una
            || (self.tp.ca_state == CaState::Loss && self.retransmits == 0)
        {
            self.prior_ssthresh = self.current_ssthresh();
            self.tp.prior_cwnd = self.tp.snd_cwnd;
            self.tp.snd_ssthresh = self.cc.ssthresh(&mut self.tp);
            self.cc.cwnd_event(&mut self.tp, CaEvent::Loss);
            self.undo_marker = Some(self.tp.snd_una);
        }
        self.tp.snd_cwnd = self.tp.packets_in_flight() + 1;
        self.tp.snd_cwnd_cnt = 0;
        self.set_ca_state(CaState::Loss);
        self.high_seq = self.tp.snd_nxt;
        self.ecn_queue_cwr |= self.tp.ecn_ok;
        self.retransmits += 1;
    }
}
