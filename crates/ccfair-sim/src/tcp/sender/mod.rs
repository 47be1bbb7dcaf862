//! The Linux TCP sender: the ACK path of `tcp_ack` (net/ipv4/tcp_input.c), the SACK
//! scoreboard, RACK loss detection (tcp_recovery.c), PRR, RTO and TLP (tcp_timer.c,
//! tcp_output.c), the delivery-rate sampler (tcp_rate.c) and EDT pacing.
//!
//! Without SACK (`tcp.sack = false`, `tcp_is_reno`), Linux's NewReno emulation: duplicate
//! ACKs count as SACKed segments (`sacked_out` without tags: `tcp_add_reno_sack`,
//! `tcp_remove_reno_sacks`, `tcp_check_reno_reordering`), loss detection marks the head
//! lost at `reordering` dupacks and on each partial ACK in Recovery
//! (`tcp_newreno_mark_lost`) instead of RACK, no loss probes, and Recovery is held until
//! something above `high_seq` is ACKed (`tcp_is_non_sack_preventing_reopen`).
//!
//! Function names in comments are Linux's; the code follows their order of operations so
//! that congestion control modules see the same hook sequence as in the kernel.
//! Sequence numbers count segments. What is not modelled is listed in docs/fidelity.md.

#[cfg(test)]
mod ecn_tests;
mod handshake;
mod rack;
mod rate;
mod recovery;
mod ring;
mod scoreboard;
mod sndbuf;
mod timers;
mod tso;

use ccfair_cc::{
    AckSample, CaEvent, CaState, CongestionControl, RateSample, TcpSock, CA_ACK_ECE,
    CA_ACK_SLOWPATH, CA_ACK_WIN_UPDATE,
};

use crate::packet::{Ecn, Kind, Packet, SackBlock, TcpFlags, NO_SACK};
use crate::spec::{TcpOptions, DATA_HEADER_BYTES};
use crate::tcp::rtt::{RttEstimator, RTO_MAX_US};

pub use handshake::Conn;
pub use sndbuf::wmem_bytes;

// Scoreboard tag bits (`TCP_SKB_CB(skb)->sacked`).
const SACKED: u8 = 0x01; // TCPCB_SACKED_ACKED
const SACKED_RETRANS: u8 = 0x02; // TCPCB_SACKED_RETRANS: retransmit in flight
const LOST: u8 = 0x04; // TCPCB_LOST
const EVER_RETRANS: u8 = 0x08; // TCPCB_EVER_RETRANS
const RETRANS: u8 = SACKED_RETRANS | EVER_RETRANS; // TCPCB_RETRANS
/// The first segment of an skb as first sent (`tso.rs`; every segment without TSO).
const SKB_HEAD: u8 = 0x10;

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

/// Bytes of a data segment's TCP header with the timestamps option (20 + 12): what
/// `skb->len` adds to the payload when the 4.x pacer charges an skb.
const TCP_HEADER_BYTES: u64 = DATA_HEADER_BYTES as u64 - 20;
/// `TCP_TIMEOUT_MIN_US`.
const TIMEOUT_MIN_US: u64 = 2_000;
/// `TCP_RACK_RECOVERY_THRESH`.
const RACK_RECOVERY_THRESH: u8 = 16;
/// `sysctl_tcp_max_reordering`.
const MAX_REORDERING: u32 = 300;
const NONE: u64 = u64::MAX;

/// What the one retransmission timer (`icsk_retransmit_timer`) is armed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XmitTimer {
    /// The retransmission timeout (`ICSK_TIME_RETRANS`).
    Retrans,
    /// A tail loss probe (`ICSK_TIME_LOSS_PROBE`).
    LossProbe,
    /// RACK's reordering timeout (`ICSK_TIME_REO_TIMEOUT`).
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

impl Seg {
    /// A slot of the ring before its segment is sent.
    const EMPTY: Seg = Seg {
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
    };
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
    /// Send interval of the sample's packet (`tx.first_tx_mstamp` to its send time), ns.
    rs_snd_interval_ns: u64,
}

/// The optional hooks a module defines (`tcp_congestion_ops` members left NULL or not).
#[derive(Clone, Copy, Debug)]
struct CcHooks {
    cong_control: bool,
    pkts_acked: bool,
    in_ack_event: bool,
    /// `tcp_ca_needs_ecn`: every packet ECN-capable once ECN is on.
    needs_ecn: bool,
}

/// The TCP options the sender reads once it is made: a copy of these fields of
/// `TcpOptions`, not the whole (688 bytes with the hosts' latency tables, inside every
/// flow's state, which at a thousand flows is read from memory per ACK: issue 16).
#[derive(Clone, Copy, Debug)]
struct SenderOptions {
    mss: u32,
    init_cwnd: u32,
    rto_init_ms: u32,
    reordering: u32,
    pacing_ss_ratio: u32,
    pacing_ca_ratio: u32,
    /// SACK negotiated (`tcp_is_sack`; false: `tcp_is_reno`).
    sack: bool,
    /// RACK loss detection (`tcp_is_rack`: `tcp_recovery` bit 0). Off: SACK flows mark
    /// losses by the duplicate threshold (`tcp_update_scoreboard`), and an RTO marks every
    /// unSACKed segment lost (`tcp_timeout_mark_lost`).
    rack: bool,
    /// Loss probes: `tlp`, and only for SACK flows (`tcp_schedule_loss_probe`).
    tlp: bool,
    frto: bool,
    undo: bool,
    ecn: u8,
    ecn_receiver: u8,
    ecn_fallback: bool,
    /// The pacer (`pacer`, `update_wstamp_after_send`): segments sent before it starts (6.18:
    /// 10, as sch_fq's initial quantum; 4.x: 0), bytes charged per skb beyond its payload
    /// (4.x: the 32-byte TCP header), and the mask of the credit for a late send (4.x: 0).
    unpaced_segs: u64,
    pace_header_bytes: u64,
    pace_credit_mask: u64,
    /// `prr = "linux-4.x"`.
    prr_4x: bool,
    tlp_schedule: crate::spec::TlpSchedule,
    /// `undo_rules = "linux-4.x"`.
    undo_4x: bool,
}

impl SenderOptions {
    fn of(o: &TcpOptions) -> Self {
        SenderOptions {
            mss: o.mss,
            init_cwnd: o.init_cwnd,
            rto_init_ms: o.rto_init_ms,
            reordering: o.reordering,
            pacing_ss_ratio: o.pacing_ss_ratio,
            pacing_ca_ratio: o.pacing_ca_ratio,
            sack: o.sack,
            rack: o.rack,
            tlp: o.tlp && o.sack,
            frto: o.frto,
            undo: o.undo,
            ecn: o.ecn,
            ecn_receiver: o.ecn_receiver,
            ecn_fallback: o.ecn_fallback,
            unpaced_segs: if o.pacer == crate::spec::Pacer::Linux4x {
                0
            } else {
                10
            },
            pace_header_bytes: if o.pacer == crate::spec::Pacer::Linux4x {
                TCP_HEADER_BYTES
            } else {
                0
            },
            pace_credit_mask: if o.pacer == crate::spec::Pacer::Linux4x {
                0
            } else {
                u64::MAX
            },
            prr_4x: o.prr == crate::spec::Prr::Linux4x,
            tlp_schedule: o.tlp_schedule,
            undo_4x: o.undo_rules == crate::spec::UndoRules::Linux4x,
        }
    }
}

/// Counters for the per-flow summary.
#[derive(Clone, Copy, Debug, Default)]
pub struct SenderStats {
    /// Data segments sent for the first time.
    pub data_pkts_sent: u64,
    /// Segments retransmitted (loss recovery, RTO and loss probes).
    pub retrans_pkts: u64,
    /// Retransmission timeouts that fired.
    pub rto_count: u64,
    /// Tail loss probes sent.
    pub tlp_count: u64,
    /// Entries into Recovery.
    pub recoveries: u64,
    /// Spurious reductions undone (DSACK, timestamps, F-RTO).
    pub undo_count: u64,
    /// Sum of the RTT samples given to congestion control, µs (for the mean).
    pub rtt_sum_us: u64,
    /// Number of those samples.
    pub rtt_samples: u64,
    /// Smallest RTT sample, µs (`u64::MAX` before any).
    pub rtt_min_us: u64,
    /// ACKs that carried ECE once ECN was on (`FLAG_ECE`).
    pub ece_acks: u64,
    /// Window reductions an ECE started (`tcp_enter_cwr` from `tcp_try_to_open`).
    pub ecn_reductions: u64,
}

/// The sending end of one flow, as Linux's: the retransmission queue and scoreboard, SACK
/// and RACK-TLP loss detection, recovery with PRR, undo, the timers, pacing, TSO and the
/// socket buffer, calling the flow's congestion control at Linux's points.
pub struct Sender {
    /// The connection state the congestion control reads and writes.
    pub tp: TcpSock,
    /// Hooks are called as `(*self.cc).hook(..)`, through the box's vtable: test builds
    /// also have `impl CongestionControl for Box<dyn CongestionControl>`, which method
    /// lookup on the box itself would pick, a second call per hook.
    pub cc: Box<dyn CongestionControl>,
    /// Which optional hooks the module defines (they are fixed for a module).
    cc_hooks: CcHooks,
    flow: u32,
    opts: SenderOptions,
    jiffy_ns: u64,
    /// `TCP_RTO_MAX` in jiffies.
    rto_max_jiffies: u64,
    paced: bool,
    /// Segments the application has written: `snd_nxt` may not pass it. 0 until the
    /// application writes (after the handshake).
    app_end: u64,
    /// Segments the application writes in all (`u64::MAX`: a bulk flow).
    app_total: u64,
    /// The application stopped writing (its stop time passed).
    app_stopped: bool,
    conn: Conn,
    /// SYNs sent and the first one's send time (the handshake, `handshake.rs`).
    syns_sent: u32,
    syn_first_tx_ns: u64,
    /// Payload of the last segment when the flow has a byte count.
    last_seg_bytes: u32,
    total_bytes: Option<u64>,

    segs: ring::SegRing,
    ts_head: u64,
    ts_tail: u64,

    rtt: RttEstimator,
    rto_jiffies: u64,
    /// `rto_jiffies` in µs (`rto_us()`), kept with it: the loss probe reads it per send.
    rto_us: u64,
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
    /// `tp->snd_wnd`: the receive window the peer last advertised, in bytes from `snd_una`
    /// (`u64::MAX` until one is known).
    snd_wnd: u64,
    /// The SYN asked for ECN (`tcp_ecn_send_syn` set RFC 3168 mode); whether ECN is on is
    /// `tp.ecn_ok`.
    ecn_asked: bool,
    /// `TCP_ECN_QUEUE_CWR`: the next new data segment carries CWR.
    ecn_queue_cwr: bool,

    xmit_timer: Option<(u64, XmitTimer)>,
    pacing_wake: Option<u64>,
    /// `send_new` sent data that re-arms the RTO (`tcp_event_new_data_sent`); `write_xmit`
    /// does it once at its end unless a loss probe replaces that timer (see there).
    rearm_rto_due: bool,
    /// Segmentation offload (`tso.rs`) and the socket buffer (`sndbuf.rs`).
    tso: tso::Tso,
    sndbuf: sndbuf::SndBuf,
    /// Counters for the flow's summary.
    pub stats: SenderStats,
    /// Time when the last byte of a finite flow was acknowledged.
    pub completed_ns: Option<u64>,
    /// The application has started (connected, or written without the handshake).
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
    /// Flow `flow`'s sender with `opts`, running `cc`; `size_bytes` is what the application
    /// writes (`None`: a bulk flow). Nothing is sent until the application starts.
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
        let cc_hooks = CcHooks {
            cong_control: cc.has_cong_control(),
            pkts_acked: cc.has_pkts_acked(),
            in_ack_event: cc.has_in_ack_event(),
            needs_ecn: cc.needs_ecn(),
        };
        Sender {
            tp,
            cc,
            cc_hooks,
            flow,
            opts: SenderOptions::of(opts),
            jiffy_ns,
            rto_max_jiffies: RTO_MAX_US * 1_000 / jiffy_ns,
            paced,
            app_end: 0,
            app_total: app_end,
            app_stopped: false,
            conn: Conn::Closed,
            syns_sent: 0,
            syn_first_tx_ns: 0,
            last_seg_bytes,
            total_bytes: size_bytes,
            // Grows (doubling) with the segments in flight: memory follows the window, not a
            // reservation (1024 segments were 64 KB per flow, 640 MB at 10,000 flows).
            segs: ring::SegRing::with_capacity(16),
            ts_head: NONE,
            ts_tail: NONE,
            rtt: RttEstimator::new(
                opts.rto_min_ms as u64 * 1_000,
                opts.min_rtt_wlen_s as u64 * opts.hz as u64,
            ),
            rto_jiffies: rto_init_jiffies,
            rto_us: rto_init_jiffies * jiffy_ns / 1_000,
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
            snd_wnd: u64::MAX,
            ecn_asked: false,
            ecn_queue_cwr: false,
            xmit_timer: None,
            pacing_wake: None,
            rearm_rto_due: false,
            tso: tso::Tso::new(opts),
            sndbuf: sndbuf::SndBuf::new(opts),
            stats: SenderStats {
                rtt_min_us: u64::MAX,
                ..SenderStats::default()
            },
            completed_ns: None,
            started: false,
        }
    }

    /// When the retransmission timer fires, ns (`None`: not armed).
    pub fn xmit_timer_deadline(&self) -> Option<u64> {
        self.xmit_timer.map(|(t, _)| t)
    }

    /// When the pacer lets the next packet leave, ns (`None`: not waiting).
    pub fn pacing_deadline(&self) -> Option<u64> {
        self.pacing_wake
    }

    /// Smoothed RTT, µs (0 before the first sample).
    pub fn srtt_us(&self) -> u64 {
        self.rtt.srtt_us()
    }

    /// Current retransmission timeout (`icsk_rto`), µs; each expiry doubles it.
    pub fn rto_us(&self) -> u64 {
        self.rto_us
    }

    /// `tcpi_delivery_rate`: payload bytes per second of the last rate sample.
    pub fn delivery_rate_bps(&self) -> f64 {
        if self.rate_interval_us == 0 {
            return 0.0;
        }
        self.rate_delivered as f64 * self.tp.mss as f64 * 1e6 / self.rate_interval_us as f64
    }

    /// Bytes of the retransmission queue's slots (`SegRing::reserved_bytes`).
    pub fn reserved_segment_bytes(&self) -> u64 {
        self.segs.reserved_bytes()
    }

    /// Payload bytes cumulatively acknowledged.
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
        self.segs.get(seq)
    }

    fn seg_mut(&mut self, seq: u64) -> &mut Seg {
        self.segs.get_mut(seq)
    }

    fn has_new_data(&self) -> bool {
        self.tp.snd_nxt < self.send_limit()
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

    /// `tcp_set_ca_state`.
    fn set_ca_state(&mut self, state: CaState) {
        (*self.cc).set_state(&mut self.tp, state);
        self.tp.ca_state = state;
    }

    fn pacing_blocked(&mut self) -> bool {
        if !self.paced || self.tp.wstamp_ns <= self.tp.now_ns {
            return false;
        }
        self.pacing_wake = Some(self.tp.wstamp_ns);
        true
    }

    /// `tcp_update_skb_after_send`: EDT pacing of the next packet.
    ///
    /// With `pacer = "linux-4.x"` the same arithmetic is 4.13/4.15's `tcp_internal_pacing`:
    /// once an skb of `payload` bytes leaves, an hrtimer of `skb->len` (the payload plus the
    /// TCP header: "should account for header sizes as sch_fq does, but lets make things
    /// simple") at the pacing rate, from the moment it left (a paced skb leaves only once
    /// `wstamp_ns` has passed), with no credit for a late send and no unpaced start
    /// (`unpaced_segs` 0, `pace_header_bytes` 32, `pace_credit_mask` 0).
    fn update_wstamp_after_send(&mut self, payload: u32) {
        let prior = self.tp.wstamp_ns;
        self.tp.wstamp_ns = self.tp.wstamp_ns.max(self.tp.now_ns);
        let rate = self.tp.pacing_rate_bytes_per_sec;
        // Like sch_fq, the first 10 segments are not paced (6.18).
        if self.paced
            && rate != 0
            && rate != u64::MAX
            && self.data_segs_out >= self.opts.unpaced_segs
        {
            let len = payload as u64 + self.opts.pace_header_bytes;
            let mut len_ns = len * 1_000_000_000 / rate;
            let credit = (self.tp.wstamp_ns - prior) & self.opts.pace_credit_mask;
            len_ns -= (len_ns / 2).min(credit);
            self.tp.wstamp_ns += len_ns;
        }
    }

    /// Emit segment `seq` as an skb of its own (`__tcp_transmit_skb` + `tcp_rate_skb_sent`).
    fn transmit(&mut self, seq: u64, out: &mut Vec<Packet>) {
        self.transmit_skb(seq, 1, false, out);
    }

    /// Emit segments `first..first + n` as one skb: they leave together, share the rate
    /// sampler's snapshot, and the pacer counts them as one (`tso.rs`). `fresh`: new data,
    /// appended here to the retransmission queue (`snd_nxt` is `first`), each segment
    /// written once, whole; otherwise a retransmission of queued segments.
    fn transmit_skb(&mut self, first: u64, n: u64, fresh: bool, out: &mut Vec<Packet>) {
        let now = self.tp.now_ns;
        if self.tp.packets_in_flight() == 0 {
            (*self.cc).cwnd_event(&mut self.tp, CaEvent::TxStart);
        }
        if self.tp.packets_out == 0 {
            self.tp.delivered_mstamp_ns = now;
            self.first_tx_mstamp_ns = now;
        }
        let delivered = self.tp.delivered;
        let delivered_mstamp_ns = self.tp.delivered_mstamp_ns;
        let first_tx_mstamp_ns = self.first_tx_mstamp_ns;
        let is_app_limited = self.tp.app_limited != 0;
        let tsval = ticks(now);
        let first_packet = out.len();
        let mut payload = 0;
        for seq in first..first + n {
            if fresh {
                let tail = self.ts_tail;
                self.segs.push_back(Seg {
                    tx_ns: now,
                    delivered,
                    delivered_mstamp_ns,
                    first_tx_mstamp_ns,
                    is_app_limited,
                    rate_pending: true,
                    flags: if seq == first { SKB_HEAD } else { 0 },
                    ts_prev: tail,
                    ts_next: NONE,
                    in_ts: true,
                });
                self.ts_link_after_tail(seq, tail);
            } else {
                let s = self.seg_mut(seq);
                s.tx_ns = now;
                s.delivered = delivered;
                s.delivered_mstamp_ns = delivered_mstamp_ns;
                s.first_tx_mstamp_ns = first_tx_mstamp_ns;
                s.is_app_limited = is_app_limited;
                s.rate_pending = true;
                self.ts_push_tail(seq);
            }
            let bytes = self.seg_bytes(seq);
            payload += bytes;
            // The packets' fields depend on nothing updated below: they go out here.
            out.push(Packet {
                flow: self.flow,
                kind: Kind::Data,
                wire_bytes: bytes + DATA_HEADER_BYTES,
                seq,
                payload_bytes: bytes,
                tsval,
                tsecr: self.ts_recent,
                n_sack: 0,
                ecn: Ecn::NotEct,
                tcp_flags: TcpFlags::NONE,
                window_bytes: 0,
                sack: NO_SACK,
            });
        }
        // The ECN fields, out of the common path: without ECN they are what was written.
        if self.tp.ecn_ok {
            self.ecn_send(fresh, &mut out[first_packet..]);
        }
        // __tcp_transmit_skb counts the segments before tcp_update_skb_after_send.
        self.data_segs_out += n;
        self.update_wstamp_after_send(payload);
        self.tp.lsndtime_ns = now;
        self.stats.data_pkts_sent += n;
        if self.tp.in_cwnd_reduction() {
            self.prr_out += n as u32;
        }
    }

    /// `tcp_ecn_send` with ECN on, for the segments of a data skb, new (`fresh`) or
    /// retransmitted: new data is ECT(0) and the first new skb after a window reduction
    /// carries CWR on its first segment (`TCP_ECN_QUEUE_CWR`; GSO keeps it on the first,
    /// `tcp_gso_segment`); retransmissions stay Not-ECT (`INET_ECN_dontxmit`) unless the
    /// algorithm needs ECN (DCTCP: everything ECT). Without ECN, everything is Not-ECT.
    #[inline(never)]
    fn ecn_send(&mut self, fresh: bool, segments: &mut [Packet]) {
        if !fresh && !self.cc_hooks.needs_ecn {
            return;
        }
        for p in segments.iter_mut() {
            p.ecn = Ecn::Ect0;
        }
        if fresh && std::mem::take(&mut self.ecn_queue_cwr) {
            if let Some(first) = segments.first_mut() {
                first.tcp_flags = TcpFlags::CWR;
            }
        }
    }

    /// Send new segments `snd_nxt..snd_nxt + n` as one skb (`tcp_transmit_skb`, then
    /// `tcp_event_new_data_sent`); without TSO every skb has one segment.
    fn send_new(&mut self, n: u64, out: &mut Vec<Packet>) {
        let first = self.tp.snd_nxt;
        self.transmit_skb(first, n, true, out);
        let prior_packets = self.tp.packets_out;
        self.tp.snd_nxt += n;
        self.tp.packets_out += n as u32;
        if first > self.tp.snd_una {
            self.sndbuf.heads_after_una += 1;
        }
        if prior_packets == 0 || self.pending() == Some(XmitTimer::LossProbe) {
            // tcp_rearm_rto, done by write_xmit (our only caller) after its loop.
            self.rearm_rto_due = true;
        }
    }

    /// `tcp_retransmit_skb` of segment `seq`.
    fn retransmit(&mut self, seq: u64, out: &mut Vec<Packet>) {
        self.retransmit_skb(seq, 1, out);
    }

    /// `tcp_retransmit_skb` of segments `first..first + n` as one skb.
    fn retransmit_skb(&mut self, first: u64, n: u64, out: &mut Vec<Packet>) {
        self.transmit_skb(first, n, false, out);
        for seq in first..first + n {
            self.seg_mut(seq).flags |= RETRANS;
        }
        self.tp.retrans_out += n as u32;
        self.stats.retrans_pkts += n;
        if self.retrans_stamp_ticks == 0 {
            self.retrans_stamp_ticks = ticks(self.tp.now_ns);
        }
        if self.undo_retrans < 0 {
            self.undo_retrans = 0;
        }
        self.undo_retrans += n as i64;
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
            // A lost skb goes out whole, within the cwnd's room and the TSO size.
            let n = if self.tso.on {
                let room = (self.tp.snd_cwnd - self.tp.packets_in_flight()) as u64;
                self.lost_skb_run(seq, room.min(self.tso_segs() as u64))
            } else {
                1
            };
            self.retransmit_skb(seq, n, out);
            if seq == self.tp.snd_una && self.pending() != Some(XmitTimer::ReoTimeout) {
                rearm = true;
            }
            seq += n;
        }
        if rearm {
            self.reset_xmit_timer(XmitTimer::Retrans, self.rto_jiffies);
        }
    }

    /// `tcp_write_xmit` for new data, then `tcp_cwnd_validate`.
    fn write_xmit(&mut self, out: &mut Vec<Packet>, probe: bool) -> u32 {
        debug_assert!(!self.rearm_rto_due);
        let (sent, mut cwnd_limited) = if self.tso.on {
            self.write_loop_tso(out, probe)
        } else {
            self.write_loop(out, probe)
        };
        // Linux re-arms the RTO as the first skb of new data leaves (tcp_event_new_data_sent
        // -> tcp_rearm_rto), then tcp_schedule_loss_probe re-arms the same timer for the
        // probe. Only the last arming stands, and nothing in between reads the timer or
        // changes what tcp_rearm_rto computes from (now, the head's send time, the RTO,
        // the pending kind: the first arming already made it RTO, so later skbs did not
        // re-arm), so the RTO is armed here, once, only when no probe is scheduled.
        let probe_armed = sent > 0 && !probe && self.schedule_loss_probe(false);
        if std::mem::take(&mut self.rearm_rto_due) && !probe_armed {
            self.rearm_rto();
        }
        cwnd_limited |= self.tp.packets_in_flight() >= self.tp.snd_cwnd;
        if sent > 0 || cwnd_limited {
            self.cwnd_validate(cwnd_limited);
        }
        // tcp_rate_check_app_limited runs when the application writes (tcp_sendmsg); our
        // applications write everything up front (or forever), so only BBR's PROBE_RTT
        // marks samples app-limited, as in Linux for such applications.
        sent
    }

    /// New data one segment per skb. Returns (segments sent, cwnd-limited).
    fn write_loop(&mut self, out: &mut Vec<Packet>, probe: bool) -> (u32, bool) {
        let mut sent = 0;
        let mut cwnd_limited = false;
        // Sending moves neither what the application wrote nor the peer's window.
        let send_limit = self.send_limit();
        let wnd_end = self.snd_wnd_end_bytes();
        while self.tp.snd_nxt < send_limit {
            // tcp_write_xmit checks pacing for loss probes too (push_one = 2).
            if self.pacing_blocked() {
                break;
            }
            if !self.seg_ends_within(self.tp.snd_nxt, wnd_end) {
                break;
            }
            if self.tp.packets_in_flight() >= self.tp.snd_cwnd && !(probe && sent == 0) {
                cwnd_limited = true;
                break;
            }
            self.send_new(1, out);
            sent += 1;
            if probe {
                break;
            }
        }
        (sent, cwnd_limited)
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

    /// The application stops writing: no new segments after what was already sent.
    pub fn stop_app(&mut self) {
        self.app_stopped = true;
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
        if self.conn == Conn::SynSent {
            self.syn_timeout(out);
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
        // New data waits for the next ACK: Linux's timer handlers only retransmit (or probe).
    }

    /// `tcp_update_pacing_rate` (fq pacing of loss-based algorithms).
    fn update_pacing_rate(&mut self) {
        let srtt8 = self.rtt.srtt_us8;
        if srtt8 == 0 {
            self.tp.pacing_rate_bytes_per_sec = u64::MAX;
            return;
        }
        let ratio = if self.tp.snd_cwnd < self.tp.snd_ssthresh / 2 {
            self.opts.pacing_ss_ratio
        } else {
            self.opts.pacing_ca_ratio
        } as u64;
        let cwnd = self.tp.snd_cwnd.max(self.tp.packets_out) as u64;
        // mss * cwnd / srtt * ratio/100, with srtt in µs x8.
        // In u128: a huge window times the ratio must not overflow (Linux computes in u64
        // with cwnd bounded by its memory; here options may be extreme).
        let rate = self.tp.mss as u128 * (1_000_000 / 100 * 8) * ratio as u128 * cwnd as u128
            / srtt8 as u128;
        let rate = u64::try_from(rate).unwrap_or(u64::MAX);
        self.tp.pacing_rate_bytes_per_sec = rate.min(self.tp.max_pacing_rate_bytes_per_sec);
    }

    /// An ACK arrived (`tcp_ack`).
    pub fn on_ack(&mut self, now: u64, pkt: &Packet, out: &mut Vec<Packet>) {
        if self.conn != Conn::Established {
            return; // no data was sent yet
        }
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
        // Only a module with `in_ack_event` needs to know.
        let slow_path = self.cc_hooks.in_ack_event
            && (pkt.n_sack > 0
                || pkt.tcp_flags != TcpFlags::NONE
                || ack == prior_snd_una
                || pkt.window_bytes as u64 != self.snd_wnd);
        self.update_window(ack, pkt.window_bytes as u64, &mut flag);
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
        // tcp_ecn_rcv_ecn_echo.
        if pkt.tcp_flags.contains(TcpFlags::ECE) && self.tp.ecn_ok {
            flag |= FLAG_ECE;
            self.stats.ece_acks += 1;
        }
        if prior_packets == 0 {
            // tcp_ack's no_queue: a D-SACK may undo, a loss probe may be settled; no rate
            // sample and no congestion control.
            self.in_ack_event(slow_path, prior_delivered, flag);
            if flag & FLAG_DSACKING_ACK != 0 {
                let mut ignored = Rexmit::None;
                self.fastretrans_alert(prior_snd_una, 0, &mut flag, &mut ignored);
            }
            if let Some(tlp_high) = self.tlp_high_seq {
                self.process_tlp_ack(ack, tlp_high, flag);
            }
            self.push(Rexmit::None, out);
            return;
        }
        let mut rexmit = Rexmit::None;
        {
            self.clean_rtx_queue(ack, prior_fack, prior_snd_una, &mut st, &mut flag);
            self.rack_update_reo_wnd(&st.rs, st.rs_prior_set);
            self.in_ack_event(slow_path, prior_delivered, flag);
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
        self.cong_control(ack, delivered, flag, &st.rs);
        self.push(rexmit, out);
        // tcp_data_snd_check: push, then tcp_check_space (the application may write).
        if self.check_space() {
            self.push(Rexmit::None, out);
        }
        if self.total_bytes.is_some()
            && self.completed_ns.is_none()
            && self.tp.snd_una >= self.app_end
        {
            self.completed_ns = Some(now);
        }
        self.check_invariants();
    }

    /// `tcp_count_delivered` of what an ACK with ECE (S)ACKed (Linux counts as it tags and
    /// cleans; nothing reads `delivered_ce` in between), then `tcp_in_ack_event` with the
    /// ACK's `CA_ACK_*` flags. The slow path is Linux's header prediction failing: SACK
    /// blocks, the ECE or CWR bit, a changed window, or no advance of `snd_una` (the
    /// timestamp checks of `tcp_rcv_established` are not modelled; no modelled algorithm
    /// reads `CA_ACK_SLOWPATH`).
    #[inline(always)]
    fn in_ack_event(&mut self, slow_path: bool, prior_delivered: u64, flag: u32) {
        if flag & FLAG_ECE != 0 || self.cc_hooks.in_ack_event {
            self.in_ack_event_on(slow_path, prior_delivered, flag);
        }
    }

    #[inline(never)]
    fn in_ack_event_on(&mut self, slow_path: bool, prior_delivered: u64, flag: u32) {
        if flag & FLAG_ECE != 0 {
            self.tp.delivered_ce += self.tp.delivered - prior_delivered;
        }
        if !self.cc_hooks.in_ack_event {
            return;
        }
        let mut ev = 0;
        if flag & FLAG_WIN_UPDATE != 0 {
            ev |= CA_ACK_WIN_UPDATE;
        }
        if slow_path {
            ev |= CA_ACK_SLOWPATH;
            if flag & FLAG_ECE != 0 {
                ev |= CA_ACK_ECE;
            }
        }
        (*self.cc).in_ack_event(&mut self.tp, ev);
    }

    /// `tcp_ack_update_window`: an ACK that advances `snd_una`, or offers more window, sets
    /// `snd_wnd` (the receiver sends no data, so `snd_wl1` never moves).
    fn update_window(&mut self, ack: u64, window_bytes: u64, flag: &mut u32) {
        if ack > self.tp.snd_una || window_bytes > self.snd_wnd {
            *flag |= FLAG_WIN_UPDATE;
            self.snd_wnd = window_bytes;
        }
    }

    /// The window the peer offered when a connection starts without a handshake.
    pub fn set_peer_window(&mut self, window_bytes: u64) {
        self.snd_wnd = window_bytes;
    }

    /// `tcp_snd_wnd_test`: segment `seq` ends within `snd_una + snd_wnd`.
    fn snd_wnd_allows(&self, seq: u64) -> bool {
        self.seg_ends_within(seq, self.snd_wnd_end_bytes())
    }

    /// The end of the peer's window, in bytes: `snd_una + snd_wnd`.
    fn snd_wnd_end_bytes(&self) -> u64 {
        self.seg_bytes_upto(self.tp.snd_una)
            .saturating_add(self.snd_wnd)
    }

    /// Segment `seq` ends at or before byte `end`.
    fn seg_ends_within(&self, seq: u64, end: u64) -> bool {
        self.seg_bytes_upto(seq) + self.seg_bytes(seq) as u64 <= end
    }

    /// `tcp_ack_is_dubious`.
    fn ack_is_dubious(&self, flag: u32) -> bool {
        flag & FLAG_NOT_DUP == 0 || flag & FLAG_CA_ALERT != 0 || self.tp.ca_state != CaState::Open
    }

    /// `tcp_cong_control`.
    fn cong_control(&mut self, ack: u64, acked_sacked: u32, flag: u32, rs: &RateSample) {
        if self.cc_hooks.cong_control {
            (*self.cc).cong_control(&mut self.tp, rs);
            return;
        }
        if self.tp.in_cwnd_reduction() {
            self.cwnd_reduction(acked_sacked, rs.losses, flag);
        } else if self.may_raise_cwnd(flag) {
            (*self.cc).cong_avoid(&mut self.tp, ack, acked_sacked);
        }
        // Linux computes sk_pacing_rate for every such flow (tcpi_pacing_rate reports it,
        // CUBIC's HyStart reads it); it only paces when fq_pacing is on.
        self.update_pacing_rate();
    }

    /// `tcp_may_raise_cwnd`.
    fn may_raise_cwnd(&self, flag: u32) -> bool {
        if self.reordering > self.opts.reordering {
            return flag & (FLAG_ACKED | FLAG_DATA_SACKED) != 0;
        }
        flag & FLAG_DATA_ACKED != 0
    }

    /// Invariants of reference 8.2, checked in debug builds.
    fn check_invariants(&mut self) {
        self.acks_processed += 1;
        // The full scoreboard scan is O(window): do it on every 16th ACK.
        if cfg!(debug_assertions) && self.acks_processed.is_multiple_of(16) {
            let tp = &self.tp;
            debug_assert!(
                tp.sacked_out + tp.lost_out <= tp.packets_out,
                "sacked {} + lost {} > packets_out {}",
                tp.sacked_out,
                tp.lost_out,
                tp.packets_out
            );
            debug_assert_eq!(tp.packets_out as u64, tp.snd_nxt - tp.snd_una);
            debug_assert_eq!(self.segs.len(), tp.snd_nxt - tp.snd_una);
            let (mut s, mut l, mut r) = (0, 0, 0);
            for seg in self.segs.iter() {
                s += (seg.flags & SACKED != 0) as u32;
                l += (seg.flags & LOST != 0) as u32;
                r += (seg.flags & SACKED_RETRANS != 0) as u32;
            }
            // Without SACK, `sacked_out` counts duplicate ACKs and no segment is tagged.
            if self.opts.sack {
                debug_assert_eq!(s, tp.sacked_out, "sacked_out");
            } else {
                debug_assert_eq!(s, 0, "SACKed tags without SACK");
            }
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

    /// reference 8.3.9 and `tcp_retransmit_timer`: with no RTT sample the RTO is 1 s, and it
    /// doubles on each consecutive expiry while the head is retransmitted each time.
    #[test]
    fn rto_backs_off_exponentially_without_acks() {
        let mut s = sender(TcpOptions {
            tlp: false,
            ..TcpOptions::default()
        });
        let mut out = Vec::new();
        s.start_without_handshake(0, &mut out);
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
        s.start_without_handshake(0, &mut out);
        s.stop_app();
        let t = s.xmit_timer_deadline().unwrap();
        out.clear();
        s.on_xmit_timer(t, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 9, "probe retransmits the highest segment");
        assert_eq!(s.stats.tlp_count, 1);
        assert_eq!(s.tp.ca_state, CaState::Open, "a probe is not a loss");
    }

    /// reference 8.3.7: PRR with prior_cwnd 20, ssthresh 10 and ACKs of one packet sends
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

    /// An ACK of `seq` with SACK blocks and echoed timestamp `tsecr` (also the fixture of
    /// `rack_off_tests`).
    pub(super) fn ack(seq: u64, sacks: &[(u64, u64)], tsecr: u32) -> Packet {
        let blocks: Vec<SackBlock> = sacks
            .iter()
            .map(|&(start, end)| SackBlock { start, end })
            .collect();
        let mut pkt = Packet {
            flow: 0,
            kind: Kind::Ack,
            wire_bytes: 52,
            seq,
            payload_bytes: 0,
            tsval: 1,
            tsecr,
            n_sack: 0,
            ecn: Ecn::NotEct,
            tcp_flags: TcpFlags::NONE,
            window_bytes: 1 << 30,
            sack: NO_SACK,
        };
        pkt.set_sack_blocks(&blocks);
        pkt
    }

    /// End of tcp_sacktag_write_queue: a never-retransmitted segment SACKed below the highest
    /// SACK is reordering (reord_seen, reordering raised to the distance).
    #[test]
    fn sack_below_the_highest_sack_is_reordering() {
        let mut s = sender(TcpOptions::default());
        let mut out = Vec::new();
        s.start_without_handshake(0, &mut out);
        let t = 40_000_000;
        s.on_ack(t, &ack(0, &[(8, 9)], 1), &mut out);
        assert_eq!(s.reord_seen, 0);
        s.on_ack(t, &ack(0, &[(2, 3), (8, 9)], 1), &mut out);
        assert_eq!(s.reord_seen, 1);
        // metric = fack (9, end of the highest SACK) - low_seq (2) = 7 segments.
        assert_eq!(s.reordering, 7);
    }

    /// tcp_dsack_seen: a D-SACK of a loss probe with no reordering seen does not widen RACK's
    /// window, and the duplicate counts as delivered.
    #[test]
    fn dsack_of_a_probe_counts_as_delivered_and_keeps_reo_wnd() {
        let mut s = sender(TcpOptions::default());
        let mut out = Vec::new();
        s.start_without_handshake(0, &mut out);
        s.stop_app();
        let t = s.xmit_timer_deadline().unwrap();
        out.clear();
        s.on_xmit_timer(t, &mut out);
        assert_eq!(out[0].seq, 9, "probe retransmits the last segment");
        let t2 = t + 40_000_000;
        s.on_ack(t2, &ack(10, &[], 1), &mut out);
        let before = s.tp.delivered;
        s.on_ack(t2 + 1_000_000, &ack(10, &[(9, 10)], 1), &mut out);
        assert!(!s.rack.dsack_seen);
        assert_eq!(s.tp.delivered, before + 1);
        assert_eq!(s.rack.reo_wnd_steps, 1);
    }

    /// tcp_fastretrans_alert in Loss: loss detection and the state's exit run on the ACK that
    /// ends the loss episode, so SACKed data above a hole leaves the flow in Disorder with a
    /// RACK reordering timer, not in Open.
    #[test]
    fn loss_state_exit_runs_rack_on_the_same_ack() {
        let mut s = sender(TcpOptions {
            tlp: false,
            frto: false,
            ..TcpOptions::default()
        });
        let mut out = Vec::new();
        s.start_without_handshake(0, &mut out);
        let t = s.xmit_timer_deadline().unwrap();
        out.clear();
        s.on_xmit_timer(t, &mut out); // RTO: retransmit 0
        let mut now = t + 40_000_000;
        for una in [1u64, 3, 7] {
            out.clear();
            s.on_ack(now, &ack(una, &[], ticks(now - 40_000_000)), &mut out);
            now += 40_000_000;
        }
        let nxt = s.tp.snd_nxt;
        assert!(nxt > 11);
        out.clear();
        s.on_ack(
            now,
            &ack(10, &[(11, nxt)], ticks(now - 40_000_000)),
            &mut out,
        );
        assert_eq!(s.tp.ca_state, CaState::Disorder);
        assert_eq!(s.pending(), Some(XmitTimer::ReoTimeout));
    }

    /// Without SACK (tcp_is_reno): duplicate ACKs count as SACKed segments
    /// (`tcp_add_reno_sack`), the third marks the head lost (`tcp_newreno_mark_lost`) and
    /// starts Recovery with a fast retransmit; each partial ACK retransmits the new head and
    /// takes its duplicates back (`tcp_remove_reno_sacks`); no loss probe is scheduled; an
    /// ACK of exactly `high_seq` holds Recovery (`tcp_is_non_sack_preventing_reopen`).
    #[test]
    fn without_sack_dupacks_drive_newreno_recovery() {
        let mut s = sender(TcpOptions {
            sack: false,
            ..TcpOptions::default()
        });
        let mut out = Vec::new();
        s.start_without_handshake(0, &mut out);
        assert_eq!(s.tp.snd_nxt, 10);
        assert_eq!(s.pending(), Some(XmitTimer::Retrans), "no loss probe");
        let mut now = 40_000_000;
        // Segments 0 and 4 lost: 1..=3 arrive (dupacks of 0).
        out.clear();
        for n in 1..=3u32 {
            now += 10_000;
            out.clear();
            s.on_ack(now, &ack(0, &[], ticks(0)), &mut out);
            assert_eq!(s.tp.sacked_out, n, "dupack {n} counted");
            if n < 3 {
                assert_eq!(s.tp.ca_state, CaState::Disorder);
                assert_eq!(s.pending(), Some(XmitTimer::Retrans), "no loss probe");
                // A dupack takes a segment out of flight: one new segment may leave.
                assert_eq!(out.len(), 1);
                assert_eq!(out[0].seq, 9 + n as u64);
            }
        }
        assert_eq!(s.tp.ca_state, CaState::Recovery);
        assert_eq!(s.stats.recoveries, 1);
        assert_eq!(s.tp.delivered, 3, "each dupack delivered one segment");
        assert_eq!(
            out.first().map(|p| p.seq),
            Some(0),
            "fast retransmit of the head"
        );
        let high_seq = s.high_seq;
        // The retransmission of 0 arrives (the ACK echoes its timestamp): a partial ACK up
        // to the next hole, 4.
        out.clear();
        now += 40_000_000;
        s.on_ack(now, &ack(4, &[], ticks(now - 40_000_000)), &mut out);
        assert_eq!(s.tp.ca_state, CaState::Recovery);
        assert_eq!(
            s.tp.sacked_out, 0,
            "4 acked: the hole and the three dupacks"
        );
        assert_eq!(s.tp.delivered, 4);
        assert!(s.seg(4).flags & LOST != 0, "NewReno: the new head is lost");
        assert_eq!(s.tp.lost_out, 1);
        // PRR (in flight 7 above ssthresh 5) sends nothing yet; the next dupack lets one
        // segment go: the new head's retransmission.
        assert!(out.is_empty());
        now += 10_000;
        s.on_ack(now, &ack(4, &[], ticks(now - 40_000_000)), &mut out);
        assert_eq!(s.tp.sacked_out, 1);
        assert_eq!(
            out.first().map(|p| p.seq),
            Some(4),
            "retransmission of the new head"
        );
        out.clear();
        // Everything up to high_seq: Reno holds Recovery until something above it is ACKed.
        out.clear();
        now += 40_000_000;
        s.on_ack(now, &ack(high_seq, &[], ticks(now - 40_000_000)), &mut out);
        assert_eq!(s.tp.ca_state, CaState::Recovery);
        assert_eq!(s.tp.sacked_out, 0);
        now += 40_000_000;
        let nxt = s.tp.snd_nxt;
        assert!(nxt > high_seq);
        s.on_ack(
            now,
            &ack(high_seq + 1, &[], ticks(now - 40_000_000)),
            &mut out,
        );
        assert_eq!(s.tp.ca_state, CaState::Open);
        assert_eq!(s.tp.snd_cwnd, s.tp.snd_ssthresh);
    }

    #[test]
    fn zero_byte_flows_are_rejected_before_the_engine() {
        let spec = crate::spec::FlowSpec {
            name: "f".into(),
            src: 0,
            dst: 1,
            path: vec![0],
            ack_path: vec![1],
            cca: "reno".into(),
            cca_params: serde_json::Value::Null,
            start_ns: 0,
            start_jitter_ns: 0,
            stop_ns: None,
            size_bytes: Some(0),
            tcp: TcpOptions::default(),
        };
        let run = crate::spec::RunSpec {
            duration_ns: 1_000_000_000,
            seed: 1,
            sample_interval_ns: 10_000_000,
            measure_start_ns: 0,
            measure_end_ns: 1_000_000_000,
            nodes: vec!["a".into(), "b".into()],
            links: vec![crate::spec::LinkSpec {
                name: "ab".into(),
                a: 0,
                b: 1,
                rate_bps: 1_000_000,
                delay_ns: 0,
                buffer_pkts: 10,
                loss_ab: 0.0,
                loss_ba: 0.0,
                queue: Default::default(),
                qdisc: serde_json::Value::Null,
            }],
            flows: vec![spec],
            trace_flows: vec![],
        };
        let err = run.check().unwrap_err();
        assert!(err.to_string().contains("size_bytes"), "{err}");
    }
}

/// The 4.x pacer (`pacer = "linux-4.x"`).
#[cfg(test)]
mod pacer_4x_tests;

/// 4.x PRR and loss-probe schedules (`prr`, `tlp_schedule`).
#[cfg(test)]
mod loss_4x_tests;

/// Loss detection without RACK (`rack = false`).
#[cfg(test)]
mod rack_off_tests;

/// The undo rules of a kernel generation (`undo_rules`).
#[cfg(test)]
mod undo_rules_tests;
