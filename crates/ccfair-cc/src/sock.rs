//! The part of Linux `struct tcp_sock` that congestion control modules see, plus the
//! helpers of `net/ipv4/tcp_cong.c` they call.
//!
//! Sequence numbers count segments (one segment = one MSS of payload), not bytes: every
//! counter Linux keeps in packets (`snd_cwnd`, `packets_out`, `delivered`, ...) keeps its
//! meaning, and `snd_una`/`snd_nxt` are segment indices.

/// `enum tcp_ca_state` (include/uapi/linux/tcp.h). Ordered as in Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum CaState {
    /// `TCP_CA_Open`: nothing outstanding looks lost or reordered.
    #[default]
    Open = 0,
    /// `TCP_CA_Disorder`: SACKs or duplicate ACKs seen, not yet a loss.
    Disorder = 1,
    /// `TCP_CA_CWR`: reducing cwnd after an ECN echo (or a local congestion signal).
    Cwr = 2,
    /// `TCP_CA_Recovery`: fast recovery after a loss detected by SACK, dupacks or RACK.
    Recovery = 3,
    /// `TCP_CA_Loss`: after an RTO (`tcp_enter_loss`), retransmitting from `snd_una`.
    Loss = 4,
}

impl CaState {
    /// The state's name as `ss -i` prints it (`"Open"`, `"CWR"`), for the time series.
    pub fn as_str(self) -> &'static str {
        match self {
            CaState::Open => "Open",
            CaState::Disorder => "Disorder",
            CaState::Cwr => "CWR",
            CaState::Recovery => "Recovery",
            CaState::Loss => "Loss",
        }
    }
}

/// `enum tcp_ca_event` (include/net/tcp.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaEvent {
    /// First transmit when no packets are in flight.
    TxStart,
    /// Congestion window restart after idle.
    CwndRestart,
    /// End of a congestion window reduction (CWR or Recovery).
    CompleteCwr,
    /// RTO fired (`tcp_enter_loss`).
    Loss,
}

// `enum tcp_ca_ack_event_flags` (include/net/tcp.h): the flags of `in_ack_event`.
/// The ACK took the slow path (no header prediction: SACK blocks, ECE, a window change,
/// or no advance of `snd_una`).
pub const CA_ACK_SLOWPATH: u32 = 1 << 0;
/// The ACK updated the send window.
pub const CA_ACK_WIN_UPDATE: u32 = 1 << 1;
/// The ACK carried ECE and ECN was negotiated (`FLAG_ECE`).
pub const CA_ACK_ECE: u32 = 1 << 2;

/// Delivery-rate sample (`struct rate_sample`, include/net/tcp.h), built by `tcp_rate_gen`.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    /// Time (ns) when the packet that started this sample's interval was delivered.
    pub prior_mstamp_ns: u64,
    /// `tp.delivered` at the time the acked packet was sent.
    pub prior_delivered: u64,
    /// Packets delivered over the interval; negative when the sample is invalid.
    pub delivered: i64,
    /// Sample interval in microseconds; negative (-1) when invalid.
    pub interval_us: i64,
    /// RTT (µs) of the most recently sent packet (S)ACKed by this ACK; -1 if none.
    pub rtt_us: i64,
    /// Packets newly marked lost on this ACK.
    pub losses: u32,
    /// Packets newly (S)ACKed by this ACK.
    pub acked_sacked: u32,
    /// `tcp_packets_in_flight()` before this ACK.
    pub prior_in_flight: u32,
    /// The sample's packet was sent while the connection was application limited.
    pub is_app_limited: bool,
    /// The sample's packet was a retransmission.
    pub is_retrans: bool,
    /// `FLAG_ACK_MAYBE_DELAYED`: the ACK may have been delayed by the receiver.
    pub is_ack_delayed: bool,
}

/// `struct ack_sample` passed to `pkts_acked`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckSample {
    /// Packets newly (S)ACKed by this ACK.
    pub pkts_acked: u32,
    /// RTT in µs of the last newly acked never-retransmitted packet, -1 if none.
    pub rtt_us: i64,
    /// Packets in flight when the hook runs (`tcp_packets_in_flight()` after the ACK's
    /// cleaning). Linux (since 4.18) fills this field with the bytes delivered since the
    /// acked packet was sent instead; no algorithm of ccfair reads it.
    pub in_flight: u32,
}

/// `TCP_INFINITE_SSTHRESH`.
pub const TCP_INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// Connection state visible to congestion control, with Linux names and units.
#[derive(Clone, Debug)]
pub struct TcpSock {
    // --- clock (`tp->tcp_mstamp`, jiffies derived from it with `hz`)
    /// `tp->tcp_mstamp`: the time of the event being processed, ns since the start of the run.
    pub now_ns: u64,
    /// `HZ`: jiffies per second, for the modules that count in jiffies (CUBIC's epoch).
    pub hz: u32,

    // --- written by congestion control
    /// `tp->snd_cwnd`: the congestion window, packets.
    pub snd_cwnd: u32,
    /// `tp->snd_ssthresh`: slow-start threshold, packets ([`TCP_INFINITE_SSTHRESH`] until the
    /// first reduction).
    pub snd_ssthresh: u32,
    /// `tp->snd_cwnd_cnt`: ACKed packets counted towards the next cwnd increase in congestion
    /// avoidance (`tcp_cong_avoid_ai`).
    pub snd_cwnd_cnt: u32,
    /// `tp->snd_cwnd_clamp`: upper bound of `snd_cwnd`, packets.
    pub snd_cwnd_clamp: u32,
    /// `sk->sk_pacing_rate`, payload bytes per second.
    pub pacing_rate_bytes_per_sec: u64,
    /// `sk->sk_max_pacing_rate`, payload bytes per second.
    pub max_pacing_rate_bytes_per_sec: u64,
    /// `tp->app_limited`: delivered count until which samples are app-limited (0 = not).
    pub app_limited: u64,

    // --- read by congestion control
    /// `tp->mss_cache`, payload bytes per full segment.
    pub mss: u32,
    /// Initial window, packets (`tcp_init_cwnd`: the route's `initcwnd` or 10).
    pub init_cwnd: u32,
    /// `tp->snd_una`: first unacknowledged segment (a segment index, not a byte).
    pub snd_una: u64,
    /// `tp->snd_nxt`: next new segment to send (a segment index).
    pub snd_nxt: u64,
    /// `tp->packets_out`: packets sent and not yet cumulatively ACKed.
    pub packets_out: u32,
    /// `tp->sacked_out`: packets of `packets_out` SACKed (or counted by duplicate ACKs).
    pub sacked_out: u32,
    /// `tp->lost_out`: packets of `packets_out` marked lost.
    pub lost_out: u32,
    /// `tp->retrans_out`: retransmissions in flight.
    pub retrans_out: u32,
    /// Packets (S)ACKed, including retransmits (`tp->delivered`).
    pub delivered: u64,
    /// Packets marked lost, cumulative (`tp->lost`).
    pub lost: u64,
    /// Packets (S)ACKed by ACKs that carried ECE, cumulative (`tp->delivered_ce`,
    /// `tcp_count_delivered`).
    pub delivered_ce: u64,
    /// ECN was negotiated on the handshake (`tp->ecn_flags & TCP_ECN_OK`); set before
    /// `init`, never changed after.
    pub ecn_ok: bool,
    /// `tp->delivered_mstamp` in ns.
    pub delivered_mstamp_ns: u64,
    /// Smoothed RTT in µs, unscaled (Linux keeps `srtt_us` x8); 0 before the first sample.
    pub srtt_us: u32,
    /// `tcp_min_rtt()`: windowed min RTT in µs; `u32::MAX` before the first sample.
    pub min_rtt_us: u32,
    /// `icsk_ca_state`: where loss recovery is (`tcp_set_ca_state`).
    pub ca_state: CaState,
    /// cwnd saved by the substrate when a reduction starts (`tp->prior_cwnd`).
    pub prior_cwnd: u32,
    /// `tp->is_cwnd_limited`, maintained by `tcp_cwnd_validate`.
    pub is_cwnd_limited: bool,
    /// `tp->max_packets_out` of the current window.
    pub max_packets_out: u32,
    /// Earliest departure time (ns) of the next packet under pacing (`tp->tcp_wstamp_ns`).
    pub wstamp_ns: u64,
    /// The sender is paced (internal pacing or fq); used by CUBIC HyStart.
    pub is_paced: bool,
    /// Time of the last data transmission (`tp->lsndtime`), ns. Updated after
    /// `CA_EVENT_TX_START` is delivered, as in `tcp_event_data_sent`.
    pub lsndtime_ns: u64,
    /// `INITIAL_JIFFIES`: jiffies at time 0 (Linux: 300 s before wrap-around, so that 0 never
    /// means "now" early in a connection; modules use 0 as "unset").
    pub initial_jiffies: u64,
}

/// Linux starts `jiffies` 300 s before wrap-around (`INITIAL_JIFFIES`), so a jiffies value
/// of 0 never means "now" early in a connection (modules use 0 as "unset").
pub const INITIAL_JIFFIES_S: u64 = 300;

impl TcpSock {
    /// A fresh connection with Linux defaults.
    pub fn new(mss: u32, init_cwnd: u32, hz: u32) -> Self {
        TcpSock {
            now_ns: 0,
            hz,
            snd_cwnd: init_cwnd,
            snd_ssthresh: TCP_INFINITE_SSTHRESH,
            snd_cwnd_cnt: 0,
            snd_cwnd_clamp: u32::MAX,
            pacing_rate_bytes_per_sec: 0,
            max_pacing_rate_bytes_per_sec: u64::MAX,
            app_limited: 0,
            mss,
            init_cwnd,
            snd_una: 0,
            snd_nxt: 0,
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            delivered: 0,
            lost: 0,
            delivered_ce: 0,
            ecn_ok: false,
            delivered_mstamp_ns: 0,
            srtt_us: 0,
            min_rtt_us: u32::MAX,
            ca_state: CaState::Open,
            prior_cwnd: 0,
            is_cwnd_limited: false,
            max_packets_out: 0,
            wstamp_ns: 0,
            is_paced: false,
            lsndtime_ns: 0,
            initial_jiffies: INITIAL_JIFFIES_S * hz as u64,
        }
    }

    /// The clock in µs (`tcp_clock_us`, what the modules' `_us` stamps use).
    pub fn now_us(&self) -> u64 {
        self.now_ns / 1_000
    }

    /// Linux `jiffies` at `now_ns` (offset by `INITIAL_JIFFIES`).
    pub fn jiffies(&self) -> u64 {
        self.ns_to_jiffies(self.now_ns)
    }

    /// Jiffies at simulation time `t_ns`, on the same scale as [`TcpSock::jiffies`].
    pub fn ns_to_jiffies(&self, t_ns: u64) -> u64 {
        t_ns / (1_000_000_000 / self.hz as u64) + self.initial_jiffies
    }

    /// `usecs_to_jiffies` (rounds up, as Linux does).
    pub fn usecs_to_jiffies(&self, us: u64) -> u64 {
        let per = 1_000_000 / self.hz as u64;
        us.div_ceil(per)
    }

    /// `tcp_packets_in_flight` (include/net/tcp.h).
    pub fn packets_in_flight(&self) -> u32 {
        (self.packets_out - (self.sacked_out + self.lost_out)) + self.retrans_out
    }

    /// `tcp_in_slow_start`.
    pub fn in_slow_start(&self) -> bool {
        self.snd_cwnd < self.snd_ssthresh
    }

    /// `tcp_is_cwnd_limited` (include/net/tcp.h).
    pub fn is_cwnd_limited(&self) -> bool {
        // Linux 6.x checks the sticky flag first ("tcp: fix tcp_cwnd_validate() to not forget
        // is_cwnd_limited", 2022).
        if self.is_cwnd_limited {
            return true;
        }
        // "If in slow start, ensure cwnd grows to twice what was ACKed."
        if self.in_slow_start() {
            return self.snd_cwnd < 2 * self.max_packets_out;
        }
        self.is_cwnd_limited
    }

    /// `tcp_in_cwnd_reduction`.
    pub fn in_cwnd_reduction(&self) -> bool {
        matches!(self.ca_state, CaState::Cwr | CaState::Recovery)
    }

    /// `tcp_slow_start` (tcp_cong.c): returns the leftover `acked` for congestion avoidance.
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = (self.snd_cwnd.saturating_add(acked)).min(self.snd_ssthresh);
        let used = cwnd - self.snd_cwnd;
        self.snd_cwnd = cwnd.min(self.snd_cwnd_clamp);
        acked - used
    }

    /// `tcp_cong_avoid_ai` (tcp_cong.c): +1 packet per `w` packets acked.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        // If credits accumulated at a higher w, apply them gently now.
        if self.snd_cwnd_cnt >= w {
            self.snd_cwnd_cnt = 0;
            self.snd_cwnd += 1;
        }
        self.snd_cwnd_cnt += acked;
        if self.snd_cwnd_cnt >= w {
            let delta = self.snd_cwnd_cnt / w;
            self.snd_cwnd_cnt -= delta * w;
            self.snd_cwnd += delta;
        }
        self.snd_cwnd = self.snd_cwnd.min(self.snd_cwnd_clamp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_caps_at_ssthresh_and_returns_leftover() {
        let mut tp = TcpSock::new(1448, 10, 1000);
        tp.snd_ssthresh = 12;
        assert_eq!(tp.slow_start(5), 3);
        assert_eq!(tp.snd_cwnd, 12);
    }

    #[test]
    fn cong_avoid_ai_adds_one_per_window_in_packets() {
        let mut tp = TcpSock::new(1448, 10, 1000);
        // 2 packets per ACK (delayed ACKs): still +1 per 10 packets acked.
        for _ in 0..5 {
            tp.cong_avoid_ai(10, 2);
        }
        assert_eq!(tp.snd_cwnd, 11);
        assert_eq!(tp.snd_cwnd_cnt, 0);
    }

    #[test]
    fn in_flight_counts_retransmits() {
        let mut tp = TcpSock::new(1448, 10, 1000);
        tp.packets_out = 10;
        tp.sacked_out = 3;
        tp.lost_out = 2;
        tp.retrans_out = 1;
        assert_eq!(tp.packets_in_flight(), 6);
    }
}
