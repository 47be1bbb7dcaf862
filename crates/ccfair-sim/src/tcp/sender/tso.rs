//! TCP segmentation offload as Linux 6.18 sizes it (`tcp.tso = "linux"`).
//!
//! Linux TCP always builds GSO skbs ("tcp: switch to GSO being always on", 4.12): one skb
//! carries several segments, which the device (or the kernel's software GSO, just before
//! the device) cuts into packets that leave back to back at the line rate. What the
//! simulator models, from net/ipv4/tcp_output.c:
//!
//! - **Size** (`tcp_tso_segs`, `tcp_tso_autosize`): about 1 ms of data at the pacing rate
//!   (`sk_pacing_rate >> sk_pacing_shift`, shift 10), plus a bonus for sub-millisecond
//!   RTTs (`gso_max_size >> (min_rtt_us >> tcp_tso_rtt_log)`, log 9; 5.18+, off with
//!   `tcp.tso_min_rtt_bonus = false` as in 4.x), at most the device's
//!   GSO size less the header room (`sk_dst_gso_max_size`: 65536 - 193 bytes, so 45
//!   segments of 1448 B), at least the algorithm's `min_tso_segs` (BBR: 1 below 1.2 Mbit/s,
//!   else 2) or `tcp_min_tso_segs` (2). Linux computes a pacing rate for every flow
//!   (`tcp_update_pacing_rate`), so unpaced CUBIC's skbs are sized from it too.
//! - **The congestion window's share** (`tcp_cwnd_test`): an skb takes at most half the
//!   cwnd ("ensure at least 2 GSO packets in flight") and what cwnd leaves free; the
//!   receive window trims it (`tcp_mss_split_point`).
//! - **The write queue**: the application's writes are queued as skbs of
//!   `tcp_xmit_size_goal` (half the peer's largest window, at most the GSO size), which
//!   `tcp_write_xmit` cuts to size (`tso_fragment`) or grows to the cwnd's share
//!   (`tcp_grow_skb`). The skb at the head of the queue matters for deferral; it is
//!   modelled as starting where the previous one ended, of the size goal at that time.
//! - **Deferral** (`tcp_tso_should_defer`, `tcp.tso_defer`): an skb that cwnd or the
//!   receive window would cut short waits for the next ACK when that ACK is due within
//!   min(srtt/2, 1 ms) of now, unless the flow is in Recovery or Loss, the last skb left
//!   more than 1 ms ago, a full-size skb fits, a third of the window fits
//!   (`tcp_tso_win_divisor` 3), or the skb ends the application's data. The 4.13/4.15 rule
//!   (`tso_defer = "linux-4.x"`) differs in its two timing tests: the last skb left in an
//!   earlier jiffy (`tcp_jiffies32 - lsndtime > 0`), and the oldest unacknowledged skb left
//!   less than srtt/2 ago (`age < srtt_us >> 4`): then it sends at once.
//! - **Pacing per skb** (`tcp_update_skb_after_send`, `tcp_pacing_check`): the pacer (sch_fq
//!   or TCP's internal pacing, `tcp_needs_internal_pacing`) lets a whole skb go, then
//!   waits the skb's length at the pacing rate: paced flows send ~1 ms bursts.
//! - **Retransmissions** (`tcp_xmit_retransmit_queue`): a lost skb is retransmitted whole
//!   (up to the cwnd's room and the TSO size), its lost segments back to back.
//!
//! Not modelled: TCP Small Queues (`tcp_small_queue_check`: the device queues of the
//! kernel backend's TUN devices drain within microseconds), Nagle on partial segments,
//! and SACK's splitting and merging of skbs beyond what per-segment state gives.

use ccfair_cc::CaState;

use crate::spec::TsoDefer;

use crate::packet::Packet;

use super::{Sender, LOST, SACKED, SACKED_RETRANS, SKB_HEAD};

/// `sk_pacing_shift` (`sock_init_data`): skbs of about 2^-10 s of data.
const PACING_SHIFT: u32 = 10;
/// `sysctl_tcp_tso_rtt_log`.
const TSO_RTT_LOG: u32 = 9;
/// `sysctl_tcp_min_tso_segs`.
const MIN_TSO_SEGS: u32 = 2;
/// `MAX_TCP_HEADER` of the kernel backend's kernel (x86_64 without tunnels: 128 + 32,
/// cache-aligned; docs/model.md).
const MAX_TCP_HEADER_BYTES: u64 = 192;
/// `sk_dst_gso_max_size`: the device's `gso_ipv4_max_size` (`GSO_LEGACY_MAX_SIZE` for TUN
/// and veth) less `MAX_TCP_HEADER + 1`.
pub(super) const GSO_MAX_BYTES: u64 = 65_536 - (MAX_TCP_HEADER_BYTES + 1);
/// `dev->gso_max_segs` (`GSO_MAX_SEGS`).
const GSO_MAX_SEGS: u64 = 65_535;
/// `sysctl_tcp_tso_win_divisor`.
const TSO_WIN_DIVISOR: u64 = 3;
/// `TCP_MSS_DEFAULT` (`tcp_bound_to_half_wnd`).
const MSS_DEFAULT: u64 = 536;
const NSEC_PER_MSEC: u64 = 1_000_000;

/// The sender's TSO state.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tso {
    pub on: bool,
    defer: crate::spec::TsoDefer,
    /// `tcp_tso_autosize`'s small-RTT bonus (5.18+).
    min_rtt_bonus: bool,
    /// End (segment) of the write-queue skb at the send head.
    head_skb_end: u64,
    /// `tp->max_window`: the largest window the peer offered (bytes).
    max_window: u64,
}

impl Tso {
    pub fn new(opts: &crate::spec::TcpOptions) -> Self {
        Tso {
            on: opts.tso == crate::spec::Tso::Linux,
            defer: opts.tso_defer,
            min_rtt_bonus: opts.tso_min_rtt_bonus,
            head_skb_end: 0,
            max_window: 0,
        }
    }
}

impl Sender {
    /// `tcp_tso_segs`: segments per skb.
    pub(super) fn tso_segs(&self) -> u32 {
        let min_tso = (*self.cc).min_tso_segs(&self.tp).unwrap_or(MIN_TSO_SEGS) as u64;
        let mut bytes = self.tp.pacing_rate_bytes_per_sec >> PACING_SHIFT;
        let r = self.tp.min_rtt_us >> TSO_RTT_LOG;
        if r < 32 && self.tso.min_rtt_bonus {
            bytes = bytes.saturating_add(GSO_MAX_BYTES >> r);
        }
        let bytes = bytes.min(GSO_MAX_BYTES);
        let segs = (bytes / self.tp.mss.max(1) as u64).max(min_tso);
        segs.min(GSO_MAX_SEGS) as u32
    }

    /// `tcp_cwnd_test`: segments cwnd lets the next skb have (0: none).
    pub(super) fn cwnd_quota(&self) -> u32 {
        let in_flight = self.tp.packets_in_flight();
        let cwnd = self.tp.snd_cwnd;
        if in_flight >= cwnd {
            return 0;
        }
        (cwnd >> 1).max(1).min(cwnd - in_flight)
    }

    /// `tcp_xmit_size_goal` in segments: the skbs the application's writes are queued in
    /// (one segment each without TSO).
    pub(super) fn size_goal_segs(&self) -> u64 {
        if !self.tso.on {
            return 1;
        }
        let mw = self.tso.max_window;
        let cutoff = if mw > MSS_DEFAULT { mw >> 1 } else { mw };
        let bytes = GSO_MAX_BYTES.min(cutoff);
        (bytes / self.tp.mss.max(1) as u64).clamp(1, GSO_MAX_SEGS)
    }

    /// `tp->max_window` follows the largest window the peer offered.
    pub(super) fn track_max_window(&mut self) {
        if self.snd_wnd != u64::MAX {
            self.tso.max_window = self.tso.max_window.max(self.snd_wnd);
        }
    }

    /// New data as skbs (`tcp_write_xmit` with TSO). Returns (segments sent, cwnd-limited).
    pub(super) fn write_loop_tso(&mut self, out: &mut Vec<Packet>, probe: bool) -> (u32, bool) {
        self.track_max_window();
        let max_segs = self.tso_segs();
        let (mut sent, mut cwnd_limited) = (0u32, false);
        while self.has_new_data() {
            if self.pacing_blocked() {
                break;
            }
            let mut quota = self.cwnd_quota();
            if quota == 0 {
                if !probe {
                    cwnd_limited = true;
                    break;
                }
                quota = 1; // tcp_send_loss_probe forces one segment out
            }
            let quota = quota.min(max_segs) as u64;
            let (skb_segs, is_tail, ends_data) = self.head_skb(quota);
            if !self.snd_wnd_allows(self.tp.snd_nxt) {
                break;
            }
            if skb_segs > 1 && !probe {
                if let Some(cwnd) = self.tso_should_defer(skb_segs, max_segs, is_tail, ends_data) {
                    cwnd_limited |= cwnd;
                    break;
                }
            }
            // tcp_mss_split_point: the cwnd's share, the skb, the receive window.
            let seq = self.tp.snd_nxt;
            let mut n = 1;
            while n < quota.min(skb_segs) && self.snd_wnd_allows(seq + n) {
                n += 1;
            }
            self.send_new(n, out);
            sent += n as u32;
            if probe {
                break;
            }
        }
        (sent, cwnd_limited)
    }

    /// The write-queue skb at `snd_nxt` after `tcp_grow_skb` to `quota` segments: its
    /// segments, whether it is the queue's tail, and whether it ends the application's data.
    fn head_skb(&mut self, quota: u64) -> (u64, bool, bool) {
        let seq = self.tp.snd_nxt;
        let data_end = self.send_limit();
        if self.tso.head_skb_end <= seq {
            self.tso.head_skb_end = seq + self.size_goal_segs();
        }
        if self.tso.head_skb_end < seq + quota {
            self.tso.head_skb_end = seq + quota; // tcp_grow_skb takes from the next skb
        }
        let end = self.tso.head_skb_end.min(data_end);
        (end - seq, end >= data_end, end >= self.app_end)
    }

    /// `tcp_tso_should_defer`: Some(cwnd-limited) if the skb waits for more ACKs.
    fn tso_should_defer(
        &self,
        skb_segs: u64,
        max_segs: u32,
        is_tail: bool,
        ends_data: bool,
    ) -> Option<bool> {
        match self.tso.defer {
            TsoDefer::Off => return None,
            TsoDefer::Linux4x => {
                return self.tso_should_defer_4x(skb_segs, max_segs, is_tail, ends_data)
            }
            TsoDefer::Linux => {}
        }
        if self.tp.ca_state >= CaState::Recovery {
            return None;
        }
        let now = self.tp.now_ns;
        // Defer only if the last skb left within the last millisecond.
        if now > self.tp.wstamp_ns.saturating_add(NSEC_PER_MSEC) {
            return None;
        }
        let mss = self.tp.mss as u64;
        let (send_win, cong_win) = self.defer_windows();
        let limit = send_win.min(cong_win);
        if limit >= max_segs as u64 * mss {
            return None;
        }
        let skb_len = skb_segs * mss;
        if !is_tail && limit >= skb_len {
            return None;
        }
        let chunk = self.snd_wnd.min(self.tp.snd_cwnd as u64 * mss) / TSO_WIN_DIVISOR;
        if limit >= chunk {
            return None;
        }
        let head = self.segs.front()?;
        let srtt_ns = self.rtt.srtt_us8 * 125;
        let expected_ack = head.tx_ns + srtt_ns;
        let threshold = (srtt_ns >> 1).min(NSEC_PER_MSEC);
        // The next ACK is due too late: do not wait for it.
        if expected_ack as i128 - now as i128 - threshold as i128 > 0 {
            return None;
        }
        if cong_win < send_win {
            if cong_win <= skb_len {
                return Some(true);
            }
        } else if send_win <= skb_len {
            return Some(false);
        }
        if ends_data {
            return None; // the FIN's skb gets no more data
        }
        Some(false)
    }

    /// `tcp_tso_should_defer` of Linux 4.13/4.15: the FIN's skb goes at once; defer only
    /// if the last skb left in this jiffy and the oldest unacknowledged skb left at least
    /// srtt/2 ago (its ACK is then expected soon); the window tests are 6.18's.
    fn tso_should_defer_4x(
        &self,
        skb_segs: u64,
        max_segs: u32,
        is_tail: bool,
        ends_data: bool,
    ) -> Option<bool> {
        if ends_data || self.tp.ca_state >= CaState::Recovery {
            return None;
        }
        // "Avoid bursty behavior by allowing defer only if the last write was recent":
        // (s32)(tcp_jiffies32 - tp->lsndtime) > 0 sends now.
        if self.now_jiffies() > self.tp.lsndtime_ns / self.jiffy_ns {
            return None;
        }
        let (send_win, cong_win) = self.defer_windows();
        let limit = send_win.min(cong_win);
        let mss = self.tp.mss as u64;
        let skb_len = skb_segs * mss;
        if limit >= max_segs as u64 * mss
            || (!is_tail && limit >= skb_len)
            || limit >= self.snd_wnd.min(self.tp.snd_cwnd as u64 * mss) / TSO_WIN_DIVISOR
        {
            return None;
        }
        let head = self.segs.front()?;
        // "If next ACK is likely to come too late (half srtt), do not defer": age in µs
        // (tcp_stamp_us_delta) against srtt_us >> 4.
        let age_us = self.tp.now_ns / 1_000 - head.tx_ns / 1_000;
        if age_us < self.rtt.srtt_us8 >> 4 {
            return None;
        }
        Some(cong_win < send_win && cong_win <= skb_len)
    }

    /// The receive window's and cwnd's room from `snd_nxt` in bytes (`send_win`, `cong_win`
    /// of `tcp_tso_should_defer`).
    fn defer_windows(&self) -> (u64, u64) {
        let in_flight = self.tp.packets_in_flight();
        let wnd_end = self
            .seg_bytes_upto(self.tp.snd_una)
            .saturating_add(self.snd_wnd);
        let send_win = wnd_end.saturating_sub(self.seg_bytes_upto(self.tp.snd_nxt));
        let cong_win = (self.tp.snd_cwnd - in_flight) as u64 * self.tp.mss as u64;
        (send_win, cong_win)
    }

    /// Segments of the lost skb at `seq` to retransmit at once: the run of lost, not
    /// (re)SACKed segments of the skb it was sent in, at most `most`.
    pub(super) fn lost_skb_run(&self, seq: u64, most: u64) -> u64 {
        let mut n = 1;
        while n < most && seq + n < self.tp.snd_nxt {
            let flags = self.seg(seq + n).flags;
            if flags & SKB_HEAD != 0 || flags & LOST == 0 || flags & (SACKED | SACKED_RETRANS) != 0
            {
                break;
            }
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::TcpOptions;
    use ccfair_cc::reno::{Reno, RenoParams};

    fn sender(tso_defer: bool) -> Sender {
        let opts = TcpOptions {
            tso: crate::spec::Tso::Linux,
            tso_defer: if tso_defer {
                TsoDefer::Linux
            } else {
                TsoDefer::Off
            },
            ..TcpOptions::default()
        };
        Sender::new(0, &opts, Box::new(Reno::new(&RenoParams {})), None)
    }

    /// tcp_tso_autosize: 1 ms of data at the pacing rate, at least 2 segments, at most 45.
    #[test]
    fn skbs_hold_a_millisecond_at_the_pacing_rate() {
        let mut s = sender(true);
        s.tp.min_rtt_us = 40_000; // no small-RTT bonus
                                  // 1 Gbit/s: 122070 B, capped at 65343 B (sk_setup_caps) -> 45 segments.
        for (rate_mbps, segs) in [(1, 2), (50, 4), (100, 8), (1_000, 45), (10_000, 45)] {
            s.tp.pacing_rate_bytes_per_sec = rate_mbps * 1_000_000 / 8;
            // (rate >> 10) / 1448: 50 Mbit/s -> 6103 B -> 4 segments.
            assert_eq!(s.tso_segs(), segs, "{rate_mbps} Mbit/s");
        }
        // Below 16 ms of min RTT a bonus of gso_max_size >> (min_rtt_us >> 9) bytes.
        s.tp.pacing_rate_bytes_per_sec = 50_000_000 / 8;
        s.tp.min_rtt_us = 1_000; // r = 1: + 32671 B
        assert_eq!(s.tso_segs(), (6_103 + 32_671) / 1448);
        s.tp.min_rtt_us = 100; // r = 0: the whole GSO size
        assert_eq!(s.tso_segs(), 45);
    }

    /// tcp_cwnd_test: half the cwnd at most, and what cwnd leaves.
    #[test]
    fn an_skb_takes_at_most_half_the_cwnd() {
        let mut s = sender(true);
        s.tp.snd_cwnd = 10;
        assert_eq!(s.cwnd_quota(), 5);
        s.tp.packets_out = 7;
        assert_eq!(s.cwnd_quota(), 3);
        s.tp.packets_out = 10;
        assert_eq!(s.cwnd_quota(), 0);
        s.tp.snd_cwnd = 1;
        s.tp.packets_out = 0;
        assert_eq!(s.cwnd_quota(), 1);
    }

    /// 4.x `tcp_tso_autosize` has no small-RTT bonus (`tso_min_rtt_bonus = false`).
    #[test]
    fn the_min_rtt_bonus_is_an_option() {
        let mut s = Sender::new(
            0,
            &TcpOptions {
                tso: crate::spec::Tso::Linux,
                tso_min_rtt_bonus: false,
                ..TcpOptions::default()
            },
            Box::new(Reno::new(&RenoParams {})),
            None,
        );
        s.tp.pacing_rate_bytes_per_sec = 50_000_000 / 8;
        s.tp.min_rtt_us = 100;
        assert_eq!(s.tso_segs(), 4, "(50e6/8 >> 10) / 1448 only");
    }

    /// A sender with 10 segments in flight sent at t = 0, cwnd 14 (room for 4 of a
    /// 10-segment skb, less than a third of the window), srtt 40 ms; `now_ms` and the last
    /// send time vary. Returns the decision of each rule: Some(cwnd-limited) = defer.
    fn defer_decision(rule: TsoDefer, now_ms: f64, last_send_ms: f64) -> Option<bool> {
        let mut s = Sender::new(
            0,
            &TcpOptions {
                tso: crate::spec::Tso::Linux,
                tso_defer: rule,
                hz: 250,
                ..TcpOptions::default()
            },
            Box::new(Reno::new(&RenoParams {})),
            None,
        );
        let mut out = Vec::new();
        s.start_without_handshake(0, &mut out);
        assert_eq!(s.tp.packets_out, 10);
        s.tp.snd_cwnd = 14;
        s.rtt.srtt_us8 = 40_000 << 3;
        let ns = |ms: f64| (ms * 1e6) as u64;
        s.tp.lsndtime_ns = ns(last_send_ms);
        s.tp.wstamp_ns = ns(last_send_ms);
        s.tp.now_ns = ns(now_ms);
        s.tso_should_defer(10, 45, true, false)
    }

    /// tcp_tso_should_defer, 4.x against 6.18 (HZ 250: jiffies of 4 ms). 4.x defers while
    /// the last send was in this jiffy and the oldest skb is at least srtt/2 = 20 ms old;
    /// 6.18 while the last send was within 1 ms and the ACK is due within 1 ms.
    #[test]
    fn defer_decision_table_4x_and_618() {
        use TsoDefer::{Linux, Linux4x};
        // (now, last send): 4.x, 6.18.
        let table = [
            // Head 25 ms old, last send 0.5 ms ago in the same jiffy (24-28 ms): 4.x waits
            // for the ACK it expects within srtt/2; 6.18 sees the ACK 15 ms away: sends.
            ((25.0, 24.5), Some(true), None),
            // Last send 1.5 ms ago but in this jiffy: 4.x waits, 6.18 sends (> 1 ms).
            ((25.8, 24.3), Some(true), None),
            // Last send 0.2 ms ago in the previous jiffy: 4.x sends, 6.18 (ACK far) sends.
            ((24.1, 23.9), None, None),
            // Head 10 ms old (< srtt/2): 4.x sends; 6.18 sends too (ACK 30 ms away).
            ((10.0, 9.9), None, None),
            // Head 39.5 ms old, ACK due in 0.5 ms, last send 0.5 ms ago: both wait.
            ((39.5, 39.0), Some(true), Some(true)),
        ];
        for ((now, last), old, new) in table {
            assert_eq!(defer_decision(Linux4x, now, last), old, "4.x at {now} ms");
            assert_eq!(defer_decision(Linux, now, last), new, "6.18 at {now} ms");
        }
        // Off: never.
        assert_eq!(defer_decision(TsoDefer::Off, 39.5, 39.0), None);
    }

    #[test]
    fn tso_defer_takes_true_false_and_linux_4x() {
        let parse =
            |v: serde_json::Value| TcpOptions::parse(&serde_json::json!({ "tso_defer": v }));
        assert_eq!(parse(true.into()).unwrap().tso_defer, TsoDefer::Linux);
        assert_eq!(parse(false.into()).unwrap().tso_defer, TsoDefer::Off);
        assert_eq!(
            parse("linux-4.x".into()).unwrap().tso_defer,
            TsoDefer::Linux4x
        );
        let e = parse("yes".into()).unwrap_err();
        assert_eq!(e.key, "tso_defer");
        assert!(
            e.message.contains("invalid type") && e.message.contains("linux-4.x"),
            "{e}"
        );
        let round = serde_json::to_value(TcpOptions {
            tso_defer: TsoDefer::Linux4x,
            ..TcpOptions::default()
        })
        .unwrap();
        assert_eq!(round["tso_defer"], "linux-4.x");
        assert_eq!(
            serde_json::to_value(TcpOptions::default()).unwrap()["tso_defer"],
            true
        );
    }

    /// The initial window goes out as skbs of half the cwnd's share, all at once.
    #[test]
    fn the_initial_window_leaves_as_two_skbs() {
        let mut s = sender(true);
        let mut out = Vec::new();
        s.start_without_handshake(0, &mut out);
        // No pacing rate yet (no RTT): 45-segment skbs, cut to cwnd/2 = 5.
        assert_eq!(out.len(), 10);
        let heads: Vec<bool> = (0..10).map(|q| s.seg(q).flags & SKB_HEAD != 0).collect();
        assert_eq!(heads.iter().filter(|&&h| h).count(), 2, "{heads:?}");
        assert!(heads[0] && heads[5]);
    }
}
