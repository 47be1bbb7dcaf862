//! What Linux reports about a TCP socket, mapped onto the simulator's time-series columns.
//!
//! `struct tcp_info` is laid out as in include/uapi/linux/tcp.h of Linux 6.18 (6.7 added
//! `tcpi_total_rto*`, 6.18 Accurate ECN's counters after them); `struct tcp_bbr_info` as in
//! include/uapi/linux/inet_diag.h. The mapping to ccfair's columns follows docs/results.md;
//! each field says where it comes from. An older kernel fills fewer bytes (getsockopt
//! reports how many): [`TcpInfo::has_received_ce`] says whether it filled the 6.18 fields.

/// `struct tcp_info` (include/uapi/linux/tcp.h). Plain integers only, so every byte pattern
/// is a valid value; the kernel fills min(sizeof, its own size) bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpInfo {
    /// `sk_state` (include/net/tcp_states.h: 1 established, 2 SYN sent, 7 closed, ...).
    pub tcpi_state: u8,
    /// `icsk_ca_state` (`enum tcp_ca_state`: Open, Disorder, CWR, Recovery, Loss).
    pub tcpi_ca_state: u8,
    /// `icsk_retransmits`: RTO expiries since the last forward progress.
    pub tcpi_retransmits: u8,
    /// `icsk_probes_out`: unanswered zero-window probes.
    pub tcpi_probes: u8,
    /// `icsk_backoff`: doublings of the RTO in force.
    pub tcpi_backoff: u8,
    /// `TCPI_OPT_*` flags: timestamps, SACK, window scaling, ECN, ...
    pub tcpi_options: u8,
    /// `tcpi_snd_wscale : 4, tcpi_rcv_wscale : 4`.
    pub tcpi_wscale: u8,
    /// `tcpi_delivery_rate_app_limited : 1, tcpi_fastopen_client_fail : 2`.
    pub tcpi_flags: u8,

    /// Retransmission timeout, µs.
    pub tcpi_rto: u32,
    /// Delayed-ACK timeout (`icsk_ack.ato`), µs.
    pub tcpi_ato: u32,
    /// `mss_cache`: payload bytes per full segment sent.
    pub tcpi_snd_mss: u32,
    /// `icsk_ack.rcv_mss`: the receiver's estimate of the peer's segment size, bytes.
    pub tcpi_rcv_mss: u32,

    /// `packets_out`: packets sent and not cumulatively acknowledged.
    pub tcpi_unacked: u32,
    /// `sacked_out`: packets of `packets_out` SACKed.
    pub tcpi_sacked: u32,
    /// `lost_out`: packets of `packets_out` marked lost.
    pub tcpi_lost: u32,
    /// `retrans_out`: retransmissions in flight.
    pub tcpi_retrans: u32,
    /// Always 0 since Linux 4.15 (FACK was removed).
    pub tcpi_fackets: u32,

    /// Time since the last data was sent, ms.
    pub tcpi_last_data_sent: u32,
    /// Not maintained by Linux (always 0).
    pub tcpi_last_ack_sent: u32,
    /// Time since the last data was received, ms.
    pub tcpi_last_data_recv: u32,
    /// Time since the last ACK was received, ms.
    pub tcpi_last_ack_recv: u32,

    /// Path MTU, bytes.
    pub tcpi_pmtu: u32,
    /// `rcv_ssthresh`: the current cap on the advertised window, bytes.
    pub tcpi_rcv_ssthresh: u32,
    /// Smoothed RTT (`srtt_us >> 3`), µs.
    pub tcpi_rtt: u32,
    /// RTT mean deviation (`mdev_us >> 2`), µs.
    pub tcpi_rttvar: u32,
    /// `snd_ssthresh`, packets ([`TCP_INFINITE_SSTHRESH`] before the first reduction).
    pub tcpi_snd_ssthresh: u32,
    /// `snd_cwnd`, packets.
    pub tcpi_snd_cwnd: u32,
    /// The MSS this end advertised, bytes.
    pub tcpi_advmss: u32,
    /// `reordering`: the dupthresh in use, packets.
    pub tcpi_reordering: u32,

    /// The receiver's RTT estimate (`rcv_rtt_est`), µs.
    pub tcpi_rcv_rtt: u32,
    /// `rcvq_space.space`: what the application read in the last receiver RTT, bytes (the
    /// base of receive-buffer autotuning).
    pub tcpi_rcv_space: u32,

    /// Segments retransmitted over the connection's life.
    pub tcpi_total_retrans: u32,

    /// `sk_pacing_rate`, bytes per second (`~0`: unlimited).
    pub tcpi_pacing_rate: u64,
    /// `sk_max_pacing_rate`, bytes per second.
    pub tcpi_max_pacing_rate: u64,
    /// Bytes cumulatively acknowledged (RFC 4898 tcpEStatsAppHCThruOctetsAcked).
    pub tcpi_bytes_acked: u64,
    /// Bytes received in order (RFC 4898 tcpEStatsAppHCThruOctetsReceived).
    pub tcpi_bytes_received: u64,
    /// Segments sent, retransmissions and pure ACKs included.
    pub tcpi_segs_out: u32,
    /// Segments received, pure ACKs included.
    pub tcpi_segs_in: u32,

    /// Bytes written by the application and not yet sent.
    pub tcpi_notsent_bytes: u32,
    /// `tcp_min_rtt`: the windowed min RTT, µs (`~0` before a sample).
    pub tcpi_min_rtt: u32,
    /// Segments received that carried data.
    pub tcpi_data_segs_in: u32,
    /// Segments sent that carried data, retransmissions included.
    pub tcpi_data_segs_out: u32,

    /// Payload bytes per second of the last delivery-rate sample (`tcp_rate_gen`).
    pub tcpi_delivery_rate: u64,

    /// Time with data outstanding, µs.
    pub tcpi_busy_time: u64,
    /// Time limited by the peer's receive window, µs.
    pub tcpi_rwnd_limited: u64,
    /// Time limited by the send buffer, µs.
    pub tcpi_sndbuf_limited: u64,

    /// `delivered`: packets delivered (SACKed or acknowledged), retransmissions included.
    pub tcpi_delivered: u32,
    /// `delivered_ce`: packets delivered by ACKs that echoed a CE mark.
    pub tcpi_delivered_ce: u32,

    /// Bytes sent, retransmissions included (RFC 4898 tcpEStatsPerfHCDataOctetsOut).
    pub tcpi_bytes_sent: u64,
    /// Bytes retransmitted (RFC 4898 tcpEStatsPerfOctetsRetrans).
    pub tcpi_bytes_retrans: u64,
    /// Segments the peer reported as received twice (D-SACK).
    pub tcpi_dsack_dups: u32,
    /// Reordering events detected.
    pub tcpi_reord_seen: u32,

    /// Out-of-order packets received.
    pub tcpi_rcv_ooopack: u32,

    /// The peer's advertised receive window, bytes (scaled).
    pub tcpi_snd_wnd: u32,
    /// The receive window this end advertises, bytes.
    pub tcpi_rcv_wnd: u32,

    /// Times the connection's path hash was changed (PLB, RTOs).
    pub tcpi_rehash: u32,

    /// Retransmission timeouts over the connection's life (Linux 6.7+).
    pub tcpi_total_rto: u16,
    /// Recoveries that began with an RTO (Linux 6.7+).
    pub tcpi_total_rto_recoveries: u16,
    /// Time spent in RTO recoveries, ms (Linux 6.7+).
    pub tcpi_total_rto_time: u32,

    /// CE-marked segments received (Linux 6.18: `tp->received_ce`, counted by
    /// `tcp_ecn_received_counters` in include/net/tcp_ecn.h for every ECN mode, GRO
    /// segments counted one by one).
    pub tcpi_received_ce: u32,
    // Accurate ECN's byte counters (6.18); not used by ccfair, which runs classic ECN.
    /// Accurate ECN: bytes delivered with ECT(1) (6.18).
    pub tcpi_delivered_e1_bytes: u32,
    /// Accurate ECN: bytes delivered with ECT(0) (6.18).
    pub tcpi_delivered_e0_bytes: u32,
    /// Accurate ECN: bytes delivered with CE (6.18).
    pub tcpi_delivered_ce_bytes: u32,
    /// Accurate ECN: bytes received with ECT(1) (6.18).
    pub tcpi_received_e1_bytes: u32,
    /// Accurate ECN: bytes received with ECT(0) (6.18).
    pub tcpi_received_e0_bytes: u32,
    /// Accurate ECN: bytes received with CE (6.18).
    pub tcpi_received_ce_bytes: u32,
    /// `tcpi_ecn_mode : 2, tcpi_accecn_opt_seen : 2, tcpi_accecn_fail_mode : 4,
    /// tcpi_options2 : 24` (6.18).
    pub tcpi_ecn_bits: u32,
}

/// `TCPI_OPT_ECN` (include/uapi/linux/tcp.h): the connection negotiated ECN.
pub const TCPI_OPT_ECN: u8 = 8;

impl TcpInfo {
    /// Whether a `tcp_info` of `len` bytes (what getsockopt returned) holds
    /// `tcpi_received_ce`: a 6.18 kernel's does, an older one's ends before it.
    pub fn has_received_ce(len: usize) -> bool {
        len >= std::mem::offset_of!(TcpInfo, tcpi_received_ce) + 4
    }

    /// Whether the connection negotiated ECN (`tcpi_options & TCPI_OPT_ECN`, set by
    /// `tcp_get_info` in net/ipv4/tcp.c for a connection in an ECN mode).
    pub fn ecn_negotiated(&self) -> bool {
        self.tcpi_options & TCPI_OPT_ECN != 0
    }
}

/// `TCP_INFINITE_SSTHRESH` (include/net/tcp.h): ssthresh before the first reduction.
pub const TCP_INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// `BBR_UNIT` (net/ipv4/tcp_bbr.c): gains are fixed point with 8 fractional bits.
pub const BBR_UNIT: u32 = 256;
/// `bbr_high_gain` = BBR_UNIT * 2885 / 1000 + 1 (tcp_bbr.c): STARTUP's pacing and cwnd gain.
pub const BBR_HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
/// `bbr_drain_gain` = BBR_UNIT * 1000 / 2885 (tcp_bbr.c): DRAIN's pacing gain.
pub const BBR_DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// `bbr_cwnd_gain` = BBR_UNIT * 2 (tcp_bbr.c): PROBE_BW's cwnd gain.
pub const BBR_CWND_GAIN: u32 = BBR_UNIT * 2;

/// `struct tcp_bbr_info` (include/uapi/linux/inet_diag.h), filled by tcp_bbr.c
/// `bbr_get_info`: `bw` in bytes per second (`bbr_bw() * mss * USEC_PER_SEC >> BW_SCALE`),
/// `min_rtt` in us, gains in `BBR_UNIT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BbrInfo {
    /// BBR's bandwidth estimate, bytes per second (payload).
    pub bw_bytes_per_sec: u64,
    /// BBR's min RTT (RTprop), µs.
    pub min_rtt_us: u32,
    /// Current pacing gain, in [`BBR_UNIT`]s.
    pub pacing_gain: u32,
    /// Current cwnd gain, in [`BBR_UNIT`]s.
    pub cwnd_gain: u32,
}

impl BbrInfo {
    /// Decode the 20 bytes of `struct tcp_bbr_info` (five native-endian u32). Fewer bytes
    /// mean the algorithm has no such report.
    pub fn parse(b: &[u8]) -> Option<BbrInfo> {
        if b.len() < 20 {
            return None;
        }
        let u = |i: usize| u32::from_ne_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes"));
        Some(BbrInfo {
            bw_bytes_per_sec: u(0) as u64 | (u(1) as u64) << 32,
            min_rtt_us: u(2),
            pacing_gain: u(3),
            cwnd_gain: u(4),
        })
    }

    /// BBR's mode. Linux does not export it, but `bbr_update_gains` (tcp_bbr.c) sets a
    /// distinct pair of gains in each mode: STARTUP (high, high), DRAIN (drain, high),
    /// PROBE_BW (cycle gain, 2), PROBE_RTT (1, 1). The names are the simulator's.
    pub fn mode(&self) -> &'static str {
        match (self.pacing_gain, self.cwnd_gain) {
            (_, BBR_CWND_GAIN) => "PROBE_BW",
            (BBR_UNIT, BBR_UNIT) => "PROBE_RTT",
            (BBR_DRAIN_GAIN, BBR_HIGH_GAIN) => "DRAIN",
            (BBR_HIGH_GAIN, BBR_HIGH_GAIN) => "STARTUP",
            _ => "unknown",
        }
    }
}

/// Socket states of include/net/tcp_states.h that matter here.
const TCP_SYN_SENT: u8 = 2;
const TCP_CLOSE: u8 = 7;

/// `enum tcp_ca_state` (include/uapi/linux/tcp.h), named as the simulator names them.
pub fn ca_state_name(s: u8) -> &'static str {
    match s {
        0 => "Open",
        1 => "Disorder",
        2 => "CWR",
        3 => "Recovery",
        4 => "Loss",
        _ => "unknown",
    }
}

/// One sample of a socket, in the units of the simulator's time series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// `tcpi_snd_cwnd`, packets.
    pub cwnd_pkts: f64,
    /// `inf` before the first reduction, as in the simulator.
    pub ssthresh_pkts: f64,
    /// `tcp_packets_in_flight` (include/net/tcp.h): packets_out - (sacked_out + lost_out)
    /// + retrans_out, i.e. tcpi_unacked - tcpi_sacked - tcpi_lost + tcpi_retrans.
    pub inflight_pkts: f64,
    /// Smoothed RTT (`tcpi_rtt` = srtt_us >> 3); NaN before the first sample.
    pub srtt_us: f64,
    /// `tcpi_min_rtt` (`tcp_min_rtt`); NaN before the first sample (the kernel reports ~0U).
    pub min_rtt_us: f64,
    /// `tcpi_rto`, µs.
    pub rto_us: f64,
    /// `tcpi_pacing_rate` x 8: payload bit/s; NaN when unlimited (~0ULL).
    pub pacing_rate_bps: f64,
    /// `tcpi_delivery_rate` x 8: payload bit/s of the last rate sample.
    pub delivery_rate_bps: f64,
    /// `tcpi_total_retrans` (cumulative).
    pub retrans_pkts: u64,
    /// `tcpi_ca_state` by name ([`ca_state_name`]).
    pub ca_state: &'static str,
    /// BBR's mode (see [`BbrInfo::mode`]), else `slow_start` / `cong_avoid` as in
    /// `tcp_in_slow_start` (cwnd < ssthresh), the simulator's names for Reno and CUBIC.
    pub cca_state: &'static str,
    /// BBR's report (`TCP_CC_INFO`) for Linux's BBR module, once connected.
    pub bbr: Option<BbrInfo>,
}

impl Sample {
    /// The sample of one `tcp_info` (and BBR's report when the flow runs Linux's BBR).
    pub fn from_info(t: &TcpInfo, bbr: Option<BbrInfo>) -> Sample {
        let nan_if = |cond: bool, v: f64| if cond { f64::NAN } else { v };
        let inflight = t.tcpi_unacked as i64 - t.tcpi_sacked as i64 - t.tcpi_lost as i64
            + t.tcpi_retrans as i64;
        // Before the handshake completes (TCP_CLOSE before connect(), TCP_SYN_SENT after it,
        // include/net/tcp_states.h) the algorithm has not started: "connecting", as the
        // simulator names it, and no internals.
        let connecting = matches!(t.tcpi_state, TCP_SYN_SENT | TCP_CLOSE);
        let bbr = if connecting { None } else { bbr };
        let cca_state = match bbr {
            _ if connecting => "connecting",
            Some(b) => b.mode(),
            None if t.tcpi_snd_cwnd < t.tcpi_snd_ssthresh => "slow_start",
            None => "cong_avoid",
        };
        Sample {
            cwnd_pkts: t.tcpi_snd_cwnd as f64,
            ssthresh_pkts: if t.tcpi_snd_ssthresh >= TCP_INFINITE_SSTHRESH {
                f64::INFINITY
            } else {
                t.tcpi_snd_ssthresh as f64
            },
            inflight_pkts: inflight.max(0) as f64,
            srtt_us: nan_if(t.tcpi_rtt == 0, t.tcpi_rtt as f64),
            min_rtt_us: nan_if(
                t.tcpi_min_rtt == 0 || t.tcpi_min_rtt == u32::MAX,
                t.tcpi_min_rtt as f64,
            ),
            rto_us: t.tcpi_rto as f64,
            pacing_rate_bps: nan_if(
                t.tcpi_pacing_rate == 0 || t.tcpi_pacing_rate == u64::MAX,
                t.tcpi_pacing_rate as f64 * 8.0,
            ),
            delivery_rate_bps: t.tcpi_delivery_rate as f64 * 8.0,
            retrans_pkts: t.tcpi_total_retrans as u64,
            ca_state: ca_state_name(t.tcpi_ca_state),
            cca_state,
            bbr,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_uapi_header() {
        // Offsets from include/uapi/linux/tcp.h on x86_64 (pahole of struct tcp_info).
        assert_eq!(std::mem::offset_of!(TcpInfo, tcpi_rto), 8);
        assert_eq!(std::mem::offset_of!(TcpInfo, tcpi_snd_cwnd), 80);
        assert_eq!(std::mem::offset_of!(TcpInfo, tcpi_total_retrans), 100);
        assert_eq!(std::mem::offset_of!(TcpInfo, tcpi_pacing_rate), 104);
        assert_eq!(std::mem::offset_of!(TcpInfo, tcpi_min_rtt), 148);
        assert_eq!(std::mem::offset_of!(TcpInfo, tcpi_delivery_rate), 160);
        assert_eq!(std::mem::offset_of!(TcpInfo, tcpi_snd_wnd), 228);
        assert_eq!(std::mem::offset_of!(TcpInfo, tcpi_total_rto), 240);
        // Linux 6.18's Accurate ECN fields follow tcpi_total_rto_time.
        assert_eq!(std::mem::offset_of!(TcpInfo, tcpi_received_ce), 248);
        assert_eq!(std::mem::offset_of!(TcpInfo, tcpi_ecn_bits), 276);
        assert_eq!(std::mem::size_of::<TcpInfo>(), 280);
    }

    #[test]
    fn ecn_fields_are_read_only_when_the_kernel_filled_them() {
        // A 6.7 .. 6.17 kernel copies 248 bytes, a 6.18 one 280.
        assert!(!TcpInfo::has_received_ce(248));
        assert!(TcpInfo::has_received_ce(252));
        assert!(TcpInfo::has_received_ce(280));
        let t = TcpInfo {
            tcpi_options: 1 | 2 | 4 | TCPI_OPT_ECN,
            ..TcpInfo::default()
        };
        assert!(t.ecn_negotiated());
        let t = TcpInfo {
            tcpi_options: 1 | 2 | 4 | 16,
            ..TcpInfo::default()
        };
        assert!(!t.ecn_negotiated());
    }

    #[test]
    fn gains_are_linux_constants() {
        assert_eq!(BBR_HIGH_GAIN, 739);
        assert_eq!(BBR_DRAIN_GAIN, 88);
        assert_eq!(BBR_CWND_GAIN, 512);
    }

    fn bbr(pacing: u32, cwnd: u32) -> BbrInfo {
        BbrInfo {
            bw_bytes_per_sec: 0,
            min_rtt_us: 0,
            pacing_gain: pacing,
            cwnd_gain: cwnd,
        }
    }

    #[test]
    fn bbr_mode_from_gains() {
        assert_eq!(bbr(739, 739).mode(), "STARTUP");
        assert_eq!(bbr(88, 739).mode(), "DRAIN");
        for g in [320, 192, 256] {
            assert_eq!(bbr(g, 512).mode(), "PROBE_BW");
        }
        assert_eq!(bbr(256, 256).mode(), "PROBE_RTT");
        assert_eq!(bbr(100, 100).mode(), "unknown");
    }

    #[test]
    fn bbr_info_decodes_split_bandwidth() {
        let mut b = Vec::new();
        for v in [0x0000_0001u32, 0x0000_0002, 40_123, 320, 512] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        let i = BbrInfo::parse(&b).unwrap();
        assert_eq!(i.bw_bytes_per_sec, (2u64 << 32) | 1);
        assert_eq!(i.min_rtt_us, 40_123);
        assert_eq!(BbrInfo::parse(&b[..19]), None);
    }

    #[test]
    fn sample_maps_units_and_flight_size() {
        let t = TcpInfo {
            tcpi_ca_state: 3,
            tcpi_snd_cwnd: 100,
            tcpi_snd_ssthresh: 70,
            tcpi_unacked: 120,
            tcpi_sacked: 30,
            tcpi_lost: 10,
            tcpi_retrans: 4,
            tcpi_rtt: 41_000,
            tcpi_min_rtt: 40_300,
            tcpi_pacing_rate: 6_000_000,
            tcpi_delivery_rate: 6_000_000,
            tcpi_total_retrans: 17,
            ..TcpInfo::default()
        };
        let s = Sample::from_info(&t, None);
        assert_eq!(s.inflight_pkts, 84.0); // 120 - 30 - 10 + 4
        assert_eq!(s.pacing_rate_bps, 48e6);
        assert_eq!(s.ca_state, "Recovery");
        assert_eq!(s.cca_state, "cong_avoid");
        assert_eq!(s.retrans_pkts, 17);
        let fresh = TcpInfo {
            tcpi_snd_cwnd: 10,
            tcpi_snd_ssthresh: TCP_INFINITE_SSTHRESH,
            tcpi_min_rtt: u32::MAX,
            tcpi_pacing_rate: u64::MAX,
            ..TcpInfo::default()
        };
        let s = Sample::from_info(&fresh, None);
        assert!(s.ssthresh_pkts.is_infinite());
        assert!(s.srtt_us.is_nan() && s.min_rtt_us.is_nan() && s.pacing_rate_bps.is_nan());
        assert_eq!(s.cca_state, "slow_start");
    }
}
