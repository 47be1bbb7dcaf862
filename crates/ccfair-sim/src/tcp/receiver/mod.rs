//! The Linux receiver: what `tcp_data_queue`, `tcp_event_data_recv` and
//! `__tcp_ack_snd_check` (net/ipv4/tcp_input.c) decide about ACKs.
//!
//! - Quick-ACK mode for the first `quickacks` (16) ACKs, and again after a gap longer than the
//!   RTO or on duplicate data (`tcp_incr_quickack`, `tcp_enter_quickack_mode`).
//! - Otherwise an immediate ACK once more than one full segment arrived since the last ACK
//!   (`rcv_nxt - rcv_wup > rcv_mss`), i.e. one ACK per two full segments, else the delayed-ACK
//!   timer (`tcp_send_delayed_ack`, `ato` from `tcp_event_data_recv`, 40 ms in bulk transfer).
//! - An immediate ACK when in-order data empties the out-of-order queue (RFC 5681 4.2).
//! - Out-of-order data: the first 3 ACKs for one `rcv_nxt` are immediate, later ones are
//!   compressed (`tcp_comp_sack_delay_ns` 1 ms or 5% of the RTT, `tcp_comp_sack_nr` 44;
//!   the timer's 100 µs slack, `tcp_comp_sack_slack_ns`, is not modelled: it fires at the
//!   earliest). `tcp.sack_compression = false` (4.x): every one is ACKed at once.
//! - `tcp.ofo_quickack = true` (4.x `tcp_data_queue`): out-of-order data enters quick-ACK
//!   mode, and filling the last hole sets no `ICSK_ACK_NOW` (quick-ACK mode ACKs it).
//! - SACK blocks in recency order (`tcp_sack_new_ofo_skb`, `tcp_sack_extend`), a D-SACK
//!   block first for duplicate data (`tcp_dsack_set`), at most 3 blocks next to timestamps.
//! - Without SACK (`tcp.sack = false`: the handshake negotiates it only when both ends
//!   enable it, and a flow's two ends share the option; `tcp_is_sack`): no SACK or D-SACK
//!   blocks, no SACK compression (every out-of-order segment gets an immediate duplicate
//!   ACK), and out-of-order data does not grow the window (6.18 `tcp_data_queue_ofo`: "For
//!   non sack flows, do not grow window to force DUPACK"), so duplicate ACKs stay pure.
//! - The receive buffer and advertised window (`rcvbuf.rs`): while the window grows, every
//!   segment asks for an immediate ACK; every ACK carries the window.
//! - ECN (`ecn.rs`): the SYN-ACK's answer, the CE marks of data segments, ECE on every
//!   ACK until a segment with CWR arrives, and DCTCP's per-segment echo.
//!
//! The application reads in-order data as soon as it arrives.

mod ecn;

use super::rcvbuf::RcvBuf;
use crate::packet::{Ecn, Kind, Packet, SackBlock, TcpFlags, MAX_SACK_BLOCKS, NO_SACK, SYN_BYTES};
use crate::spec::{RcvWindow, TcpOptions, ACK_BYTES, SACK_BLOCK_BYTES, SACK_OPTION_BASE_BYTES};

/// `TCP_NUM_SACKS`: blocks the receiver remembers.
const NUM_SACKS: usize = 4;
/// `TCP_FASTRETRANS_THRESH`: immediate dupacks before SACK compression.
const FASTRETRANS_THRESH: u32 = 3;
/// `sysctl_tcp_comp_sack_nr`.
const COMP_SACK_NR: u32 = 44;
/// `sysctl_tcp_comp_sack_delay_ns`.
const COMP_SACK_DELAY_NS: u64 = 1_000_000;

/// The receiving end of one flow, as Linux's: in-order and out-of-order delivery, SACK
/// blocks and D-SACK, delayed and quick ACKs, SACK compression, the receive window and ECN
/// echo.
pub struct Receiver {
    flow: u32,
    jiffy_ns: u64,
    quickacks_max: u32,
    ato_min_jiffies: u64,
    /// Gaps between data segments shorter than this are at most `ato_min / 2` jiffies
    /// (`tcp_event_data_recv`'s first case), without dividing by the jiffy.
    ato_fast_gap_ns: u64,
    /// HZ/2 and `TCP_DELACK_MAX` (200 ms) in jiffies: the delayed-ACK timeout's bounds.
    half_second_jiffies: u64,
    delack_max_jiffies: u64,
    /// The receiver's `icsk_rto` and `srtt_us`: set once by the handshake RTT sample (a pure
    /// receiver takes no other RTT sample): SYN-ACK sent to the final ACK (or the first
    /// data) received, `tcp_synack_rtt_meas`. Without the handshake (`tcp.handshake =
    /// false`) the path's round-trip propagation time stands in for it.
    rto_jiffies: u64,
    srtt_jiffies: u64,
    /// `tp->srtt_us` (x 8) from the same sample.
    srtt_us8: u64,
    rto_min_ns: u64,
    /// The passive open: the handshake completed (always, without the handshake).
    established: bool,
    synacks_sent: u32,
    synack_first_tx_ns: u64,
    /// `tp->rcv_nxt`: the next segment expected in order.
    pub rcv_nxt: u64,
    /// `rcv_nxt` when the last ACK was sent.
    rcv_wup: u64,
    /// Out-of-order data as sorted disjoint segment ranges.
    ofo: Vec<SackBlock>,
    /// SACK blocks in recency order (`tp->selective_acks`).
    sacks: [SackBlock; NUM_SACKS],
    n_sacks: usize,
    dsack: Option<SackBlock>,
    /// `icsk_ack.quick`.
    quick: u32,
    /// `icsk_ack.ato` in jiffies; 0 before the first data packet.
    ato_jiffies: u64,
    lrcvtime_ns: u64,
    /// `ICSK_ACK_NOW`.
    ack_now: bool,
    /// Delayed-ACK timer deadline.
    pub delack_at: Option<u64>,
    /// SACK compression state (`tp->compressed_ack`, `dup_ack_counter`).
    compressed_ack: u32,
    compressed_ack_rcv_nxt: u64,
    dup_ack_counter: u32,
    /// SACK compression timer deadline (ns), when armed.
    pub comp_sack_at: Option<u64>,
    /// SACK negotiated (`tcp_is_sack`): `tcp.sack` (both ends of a flow share it).
    sack: bool,
    /// Out-of-order data grows the window (`tcp_data_queue_ofo` -> `tcp_grow_window`): 6.18
    /// grows it for SACK flows only; 4.13/4.15 (the 4.x window model) for every flow.
    ofo_grows_window: bool,
    /// `tcp.sack_compression` and `tcp.ofo_quickack` (4.x: false, true).
    sack_compression: bool,
    ofo_quickack: bool,
    /// `tp->rx_opt.ts_recent`: TSval to echo.
    ts_recent: u32,
    /// Payload bytes per segment (`advmss`): positions in bytes are segments x mss.
    mss: u64,
    /// Receive buffer, autotuning and advertised window.
    pub buf: RcvBuf,
    /// Payload bytes delivered in order to the application.
    pub delivered_bytes: u64,
    /// Data segments received (duplicates included).
    pub data_pkts_received: u64,
    /// Data segments received that held nothing new (already received).
    pub dup_pkts_received: u64,
    /// ACKs sent (not counting the SYN-ACK).
    pub acks_sent: u64,
    /// Time the last in-order byte arrived (flow completion).
    pub last_delivery_ns: u64,
    /// ECN state and counters (`ecn.rs`).
    ecn: ecn::RcvEcn,
}

impl Receiver {
    /// `rmem` is the resolved `tcp_rmem` (min, default, max bytes; `RunSpec::rmem_bytes`);
    /// `needs_ecn` whether the flow's algorithm, which the receiver runs too, needs ECN
    /// (`CongestionControl::needs_ecn`).
    pub fn new(
        flow: u32,
        opts: &TcpOptions,
        base_rtt_ns: u64,
        rmem: [u64; 3],
        needs_ecn: bool,
    ) -> Self {
        let jiffy_ns = 1_000_000_000 / opts.hz as u64;
        let ms_to_jiffies = |ms: u32| (ms as u64 * 1_000_000).div_ceil(jiffy_ns);
        // tcp_rtt_estimator on the first sample: RTO = rtt + max(2 rtt, rto_min).
        let rto_min_ns = opts.rto_min_ms as u64 * 1_000_000;
        let ato_min_jiffies = ms_to_jiffies(opts.delack_ms).max(1);
        let mut r = Receiver {
            flow,
            jiffy_ns,
            quickacks_max: opts.quickacks,
            ato_min_jiffies,
            ato_fast_gap_ns: (ato_min_jiffies / 2 + 1) * jiffy_ns,
            half_second_jiffies: 1_000_000_000 / jiffy_ns / 2,
            delack_max_jiffies: (200_000_000u64).div_ceil(jiffy_ns),
            rto_jiffies: 0,
            srtt_jiffies: 0,
            srtt_us8: 0,
            rto_min_ns,
            established: !opts.handshake,
            synacks_sent: 0,
            synack_first_tx_ns: 0,
            rcv_nxt: 0,
            rcv_wup: 0,
            ofo: Vec::with_capacity(8),
            sacks: [SackBlock::default(); NUM_SACKS],
            n_sacks: 0,
            dsack: None,
            quick: 0,
            ato_jiffies: 0,
            lrcvtime_ns: 0,
            ack_now: false,
            delack_at: None,
            compressed_ack: 0,
            compressed_ack_rcv_nxt: u64::MAX,
            dup_ack_counter: 0,
            comp_sack_at: None,
            sack: opts.sack,
            ofo_grows_window: opts.sack || opts.rcv_window == RcvWindow::Linux4x,
            sack_compression: opts.sack_compression,
            ofo_quickack: opts.ofo_quickack,
            ts_recent: 0,
            mss: opts.mss as u64,
            buf: RcvBuf::new(opts.rcv_window, opts.mss, opts.rcv_truesize_bytes, rmem),
            delivered_bytes: 0,
            data_pkts_received: 0,
            dup_pkts_received: 0,
            acks_sent: 0,
            last_delivery_ns: 0,
            ecn: ecn::RcvEcn::new(opts, needs_ecn),
        };
        r.set_rtt(base_rtt_ns);
        if r.established {
            r.buf.establish(0);
        }
        r
    }

    /// The window the SYN-ACK advertises (the sender's first `snd_wnd`).
    pub fn synack_window(&self) -> u64 {
        self.buf.synack_window()
    }

    /// The receiver's srtt and RTO from one RTT sample, as `tcp_rtt_estimator` and
    /// `__tcp_set_rto` set them on a first sample: RTO = rtt + max(2 rtt, rto_min).
    fn set_rtt(&mut self, rtt_ns: u64) {
        let rto_ns = rtt_ns + (2 * rtt_ns).max(self.rto_min_ns);
        self.rto_jiffies = rto_ns.div_ceil(self.jiffy_ns);
        self.srtt_jiffies = rtt_ns.div_ceil(self.jiffy_ns);
        self.srtt_us8 = (rtt_ns / 1_000).max(1) << 3;
    }

    /// A SYN arrived (`tcp_v4_conn_request`): answer with a SYN-ACK at once. A duplicate
    /// SYN (the SYN-ACK was lost, or is late) gets another one (`tcp_check_req`).
    pub fn on_syn(&mut self, now: u64, pkt: &Packet, out: &mut Vec<Packet>) {
        if self.established {
            return;
        }
        self.ts_recent = pkt.tsval;
        if self.synacks_sent == 0 {
            self.synack_first_tx_ns = now;
            self.ecn_on_syn(pkt);
        }
        self.synacks_sent += 1;
        out.push(Packet {
            flow: self.flow,
            kind: Kind::SynAck,
            wire_bytes: SYN_BYTES,
            seq: 0,
            payload_bytes: 0,
            tsval: Self::now_ticks(now),
            tsecr: pkt.tsval,
            n_sack: 0,
            ecn: Ecn::NotEct,
            tcp_flags: self.synack_flags(),
            window_bytes: self.buf.synack_window() as u32,
            sack: NO_SACK,
        });
    }

    /// The final ACK of the handshake, or the first data when that ACK was lost, completes
    /// the passive open (`tcp_check_req` -> `tcp_synack_rtt_meas`): the SYN-ACK's RTT, or
    /// the timestamp echo after a SYN-ACK was sent more than once.
    pub fn on_handshake_ack(&mut self, now: u64, pkt: &Packet) {
        if self.established || self.synacks_sent == 0 {
            return;
        }
        self.established = true;
        let rtt_ns = if self.synacks_sent == 1 {
            now - self.synack_first_tx_ns
        } else {
            Self::now_ticks(now).wrapping_sub(pkt.tsecr).max(1) as u64 * 1_000_000
        };
        self.set_rtt(rtt_ns.max(1));
        // tcp_init_transfer -> tcp_init_buffer_space.
        self.buf.establish(now);
    }

    fn now_ticks(now: u64) -> u32 {
        (now / 1_000_000) as u32 + 1
    }

    /// `tcp_incr_quickack`: as many quick ACKs as half the receive window holds
    /// segments, at most `max_quickacks` (`quickacks`, 16, or 2 for ECN's).
    fn incr_quickack(&mut self, max_quickacks: u32) {
        let q = match self.buf.rcv_wnd / (2 * self.buf.rcv_mss) {
            0 => 2,
            q => q,
        };
        let q = q.min(max_quickacks as u64) as u32;
        self.quick = self.quick.max(q);
    }

    /// `tcp_enter_quickack_mode`.
    fn enter_quickack_mode(&mut self, max_quickacks: u32) {
        self.incr_quickack(max_quickacks);
        self.ato_jiffies = self.ato_min_jiffies;
    }

    /// Handle a data segment; ACKs to send go to `out`.
    // Per data segment, one call site (the event loop's): inlined there, whatever the
    // code-generation units.
    #[inline]
    pub fn on_data(
        &mut self,
        now: u64,
        pkt: &Packet,
        seg_bytes: impl Fn(u64) -> u32,
        out: &mut Vec<Packet>,
    ) {
        self.data_pkts_received += 1;
        if !self.established {
            self.on_handshake_ack(now, pkt);
        }
        self.ecn_on_segment(pkt);
        let seq = pkt.seq;
        let end = seq + 1;
        let len = seg_bytes(seq) as u64;
        // tcp_rcv_rtt_measure_ts: the segment echoes one of our ACK timestamps.
        self.buf.rtt_sample_ts(Self::now_ticks(now), pkt.tsecr, len);
        // tcp_replace_ts_recent: only segments covering the last ACK point update ts_recent.
        if seq <= self.rcv_wup {
            self.ts_recent = pkt.tsval;
        }

        if end <= self.rcv_nxt {
            // Old data (tcp_data_queue, "A retransmit"): D-SACK, quick-ACK mode, ACK now.
            self.dup_pkts_received += 1;
            self.dsack_set(seq, end);
            self.enter_quickack_mode(self.quickacks_max);
            self.send_ack(now, out);
            return;
        }
        if self.ofo.iter().any(|b| b.start <= seq && seq < b.end) {
            // Already queued out of order (tcp_data_queue_ofo, "All the bits are present"):
            // D-SACK, its SACK block moves first, and the ACK takes the out-of-order path.
            self.ecn_check_ce(now, pkt.ecn, out);
            self.ofo_arrival_quickack();
            self.dup_pkts_received += 1;
            self.dsack_set(seq, end);
            if self.sack {
                self.sack_new_ofo(seq, end);
            }
            self.ack_snd_check(now, out);
            return;
        }

        if seq == self.rcv_nxt {
            // tcp_queue_rcv, then tcp_event_data_recv (the in-order path only).
            self.rcv_nxt = end;
            self.buf.queue_in_order();
            self.event_data_recv(now, len, pkt.ecn, out);
            self.delivered_bytes += len;
            self.last_delivery_ns = now;
            let had_ofo = !self.ofo.is_empty();
            let mut read = 1;
            // tcp_ofo_queue: pull now-contiguous out-of-order data.
            while let Some(first) = self.ofo.first().copied() {
                if first.start > self.rcv_nxt {
                    break;
                }
                for s in self.rcv_nxt.max(first.start)..first.end {
                    self.delivered_bytes += seg_bytes(s) as u64;
                    read += 1;
                }
                self.rcv_nxt = self.rcv_nxt.max(first.end);
                self.ofo.remove(0);
            }
            // tcp_sack_remove: drop blocks now below rcv_nxt.
            self.remove_acked_sacks();
            if had_ofo && self.ofo.is_empty() && !self.ofo_quickack {
                // 4.18+ "SHOULD send immediate ACK, when gap in queue is filled" (4.x clears
                // pingpong only: its quick-ACK mode sends that ACK).
                self.ack_now = true;
            }
            // tcp_ack_snd_check -> __tcp_ack_snd_check(sk, 1): with holes left, an advance
            // of rcv_nxt is ACKed at once (SACK compression path, new rcv_nxt).
            self.ack_snd_check(now, out);
            self.app_read(now, read, out);
        } else {
            self.ecn_check_ce(now, pkt.ecn, out);
            self.ofo_arrival_quickack();
            // tcp_data_queue_ofo: dropped when the buffer is over-committed.
            if !self.buf.admit_out_of_order() {
                return;
            }
            self.insert_ofo(seq, end);
            // SACK flows grow the window on out-of-order data too (tcp_grow_window); 6.18
            // does not grow it for non-SACK flows, so that their dupacks stay duplicates
            // (4.13/4.15 grew it for every flow).
            if self.ofo_grows_window && self.buf.measure_and_grow(len) {
                self.quick |= 1;
            }
            self.buf.charge_out_of_order();
            self.buf.ofo_grow(self.ofo_span_bytes());
            self.ack_snd_check(now, out);
        }
    }

    /// 4.x `tcp_data_queue` (`tcp.ofo_quickack`): a segment beyond `rcv_nxt` enters
    /// quick-ACK mode before `tcp_data_queue_ofo` ("tcp: do not force quickack when
    /// receiving out-of-order packets" removed it in 4.18).
    fn ofo_arrival_quickack(&mut self) {
        if self.ofo_quickack {
            self.enter_quickack_mode(self.quickacks_max);
        }
    }

    /// `tcp_dsack_set`: only a SACK flow reports duplicate data.
    fn dsack_set(&mut self, seq: u64, end: u64) {
        if self.sack {
            self.dsack = Some(SackBlock { start: seq, end });
        }
    }

    /// Bytes from `rcv_nxt` to the end of the highest out-of-order data.
    fn ofo_span_bytes(&self) -> u64 {
        self.ofo
            .last()
            .map_or(0, |b| (b.end - self.rcv_nxt) * self.mss)
    }

    /// The application read `segments` segments (`tcp_recvmsg`): receive-buffer
    /// autotuning, then `tcp_cleanup_rbuf` (net/ipv4/tcp.c): the once-per-two-segments ACK
    /// that `__tcp_ack_snd_check` held back, else the window update (an ACK when the window
    /// the freed space allows is at least twice what is still offered).
    // Per in-order data segment, one call site: inlined.
    #[inline]
    fn app_read(&mut self, now: u64, segments: u64, out: &mut Vec<Packet>) {
        let copied = self.rcv_nxt * self.mss;
        let span = self.ofo_span_bytes();
        self.buf.app_read(now, segments, copied, span);
        // "Once-per-two-segments ACK was not sent by tcp_input.c": in-order data scheduled
        // an ACK (tcp_event_data_recv) and more than one full segment is unacknowledged.
        // __tcp_ack_snd_check holds that ACK back while the segment just queued makes the
        // window smaller than the one offered (a buffer-limited window); the read that
        // frees it sends it. Without this, such a receiver ACKs only on its delayed-ACK
        // timer and its sender sends bursts.
        if (self.rcv_nxt - self.rcv_wup) * self.mss > self.buf.rcv_mss {
            self.send_ack(now, out);
            return;
        }
        let offered = self.buf.receive_window(self.rcv_wup * self.mss, copied);
        if 2 * offered <= self.buf.window_clamp {
            let window_now = self.buf.select_window_now();
            if window_now.1 {
                self.quick = 0;
            }
            let window = window_now.0;
            if window > 0 && window >= 2 * offered {
                self.send_ack_with(now, window_now, out);
            }
        }
    }

    /// `tcp_event_data_recv` for a segment of `len` bytes with ECN field `field`: the
    /// receiver's window-based RTT sample, the delayed-ACK engine's `ato`, quick-ACK
    /// re-arming, `tcp_ecn_check_ce` and `tcp_grow_window`.
    // Per data segment, one call site: inlined.
    #[inline]
    fn event_data_recv(&mut self, now: u64, len: u64, field: Ecn, out: &mut Vec<Packet>) {
        self.buf.rtt_measure_window(now, self.rcv_nxt * self.mss);
        let grew = self.buf.measure_and_grow(len);
        if self.ato_jiffies == 0 {
            self.incr_quickack(self.quickacks_max);
            self.ato_jiffies = self.ato_min_jiffies;
        } else {
            // m = the gap in jiffies; m <= ato_min / 2 is a gap below ato_fast_gap_ns.
            let gap_ns = now - self.lrcvtime_ns;
            if gap_ns < self.ato_fast_gap_ns {
                self.ato_jiffies = (self.ato_jiffies >> 1) + self.ato_min_jiffies / 2;
            } else {
                let m = gap_ns / self.jiffy_ns;
                if m < self.ato_jiffies {
                    self.ato_jiffies = ((self.ato_jiffies >> 1) + m).min(self.rto_jiffies);
                } else if m > self.rto_jiffies {
                    self.incr_quickack(self.quickacks_max);
                }
            }
        }
        self.lrcvtime_ns = now;
        self.ecn_check_ce(now, field, out);
        if grew {
            self.quick |= 1;
        }
    }

    fn insert_ofo(&mut self, seq: u64, end: u64) {
        // Sorted interval insert with merge.
        let pos = self.ofo.partition_point(|b| b.end < seq);
        if pos < self.ofo.len() && self.ofo[pos].start <= end {
            self.ofo[pos].start = self.ofo[pos].start.min(seq);
            self.ofo[pos].end = self.ofo[pos].end.max(end);
            if pos + 1 < self.ofo.len() && self.ofo[pos + 1].start <= self.ofo[pos].end {
                self.ofo[pos].end = self.ofo[pos + 1].end;
                self.ofo.remove(pos + 1);
            }
        } else {
            self.ofo.insert(pos, SackBlock { start: seq, end });
        }
        if self.sack {
            self.sack_new_ofo(seq, end);
        }
    }

    /// `tcp_sack_new_ofo_skb`: extend an overlapping or adjacent block (`tcp_sack_extend`)
    /// and move it first, or add a new first block.
    fn sack_new_ofo(&mut self, seq: u64, end: u64) {
        let mut hit = None;
        for i in 0..self.n_sacks {
            let b = &mut self.sacks[i];
            if seq <= b.end && b.start <= end {
                b.start = b.start.min(seq);
                b.end = b.end.max(end);
                hit = Some(i);
                break;
            }
        }
        match hit {
            Some(i) => {
                self.sacks[..=i].rotate_right(1);
                // tcp_sack_maybe_coalesce: merge blocks that now touch the first one.
                let mut j = 1;
                while j < self.n_sacks {
                    let (a, b) = (self.sacks[0], self.sacks[j]);
                    if b.start <= a.end && a.start <= b.end {
                        self.sacks[0].start = a.start.min(b.start);
                        self.sacks[0].end = a.end.max(b.end);
                        self.sacks.copy_within(j + 1..self.n_sacks, j);
                        self.n_sacks -= 1;
                    } else {
                        j += 1;
                    }
                }
            }
            None => {
                if self.n_sacks == NUM_SACKS {
                    self.n_sacks -= 1;
                }
                self.sacks.copy_within(0..self.n_sacks, 1);
                self.sacks[0] = SackBlock { start: seq, end };
                self.n_sacks += 1;
            }
        }
    }

    fn remove_acked_sacks(&mut self) {
        let rcv_nxt = self.rcv_nxt;
        let mut k = 0;
        for i in 0..self.n_sacks {
            if self.sacks[i].end > rcv_nxt {
                self.sacks[k] = self.sacks[i];
                k += 1;
            }
        }
        self.n_sacks = k;
    }

    /// `__tcp_ack_snd_check(sk, ofo_possible = 1)` (every data segment calls it so): ACK now
    /// after more than one full segment if the window would not shrink, in quick-ACK mode,
    /// or when asked to; else delay the ACK, or with out-of-order data compress it.
    // Per data segment: inlined (the in-order path's call is the hot one); the SACK
    // compression with out-of-order data stays out of line.
    #[inline(always)]
    fn ack_snd_check(&mut self, now: u64, out: &mut Vec<Packet>) {
        if (self.rcv_nxt - self.rcv_wup) * self.mss > self.buf.rcv_mss {
            let window_now = self.buf.select_window_now();
            if window_now.1 {
                self.quick = 0;
            }
            if window_now.0 >= self.buf.rcv_wnd {
                // The buffer is unchanged since: the ACK offers the window just computed.
                self.send_ack_with(now, window_now, out);
                return;
            }
        }
        if self.quick > 0 || self.ack_now {
            self.send_ack(now, out);
            return;
        }
        if self.ofo.is_empty() {
            self.send_delayed_ack(now, out);
            return;
        }
        self.compress_sack_ack(now, out);
    }

    /// `__tcp_ack_snd_check` with out-of-order data: the first `FASTRETRANS_THRESH` ACKs for
    /// one `rcv_nxt` leave at once, later ones wait for the SACK compression timer.
    /// Without SACK compression (`tcp.sack_compression = false`, before 4.18) every such
    /// ACK leaves at once (`ofo_possible && !RB_EMPTY_ROOT(&tp->out_of_order_queue)`), and
    /// so does every one of a flow without SACK (`!tcp_is_sack(tp)`).
    #[inline(never)]
    fn compress_sack_ack(&mut self, now: u64, out: &mut Vec<Packet>) {
        if !self.sack || !self.sack_compression || self.compressed_ack >= COMP_SACK_NR {
            self.send_ack(now, out);
            return;
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.dup_ack_counter = 0;
        }
        if self.dup_ack_counter < FASTRETRANS_THRESH {
            self.dup_ack_counter += 1;
            self.send_ack(now, out);
            return;
        }
        self.compressed_ack += 1;
        if self.comp_sack_at.is_some() {
            return;
        }
        // 5% of the RTT estimate (the receiver's, or the handshake's if smaller), at most
        // 1 ms.
        let rtt_us8 = match self.buf.rtt_us8 {
            0 => self.srtt_us8,
            r => r.min(self.srtt_us8),
        };
        let rtt_ns = (rtt_us8 >> 3) * 1_000;
        let delay = if rtt_ns == 0 {
            COMP_SACK_DELAY_NS
        } else {
            COMP_SACK_DELAY_NS.min(rtt_ns / 20)
        };
        self.comp_sack_at = Some(now + delay);
    }

    /// `tcp_send_delayed_ack`.
    fn send_delayed_ack(&mut self, now: u64, out: &mut Vec<Packet>) {
        let mut ato = self.ato_jiffies.max(1);
        if ato > self.ato_min_jiffies {
            // Slow arrivals: bound by HZ/2 and by the RTT estimate (at least TCP_DELACK_MIN).
            let max_ato = self
                .half_second_jiffies
                .min(self.srtt_jiffies.max(self.ato_min_jiffies));
            ato = ato.min(max_ato);
        }
        ato = ato.min(self.delack_max_jiffies);
        let mut timeout = now + ato * self.jiffy_ns;
        if let Some(old) = self.delack_at {
            // If the delack timer is about to expire, send the ACK now.
            if old <= now + (ato >> 2) * self.jiffy_ns {
                self.send_ack(now, out);
                return;
            }
            timeout = timeout.min(old);
        }
        self.delack_at = Some(timeout);
    }

    /// Delayed-ACK or SACK-compression timer fired.
    pub fn on_timer(&mut self, now: u64, out: &mut Vec<Packet>) {
        let due = |t: Option<u64>| t.is_some_and(|t| t <= now);
        if due(self.delack_at) {
            // tcp_delack_timer_handler: "Delayed ACK missed: inflate ATO."
            self.ato_jiffies = (self.ato_jiffies << 1).min(self.rto_jiffies);
            self.send_ack(now, out);
        } else if due(self.comp_sack_at) {
            self.send_ack(now, out);
        }
    }

    /// `tcp_send_ack` (with `tcp_select_window`) + `tcp_event_ack_sent`.
    fn send_ack(&mut self, now: u64, out: &mut Vec<Packet>) {
        let window_now = self.buf.select_window_now();
        self.send_ack_with(now, window_now, out);
    }

    /// `send_ack` when `window_now` (`RcvBuf::select_window_now`) was just computed, the
    /// buffer unchanged since.
    fn send_ack_with(&mut self, now: u64, window_now: (u64, bool), out: &mut Vec<Packet>) {
        self.push_ack(now, self.rcv_nxt, window_now, out);
        // tcp_event_ack_sent.
        self.ack_now = false;
        self.delack_at = None;
        self.comp_sack_at = None;
        self.compressed_ack = 0;
        // tcp_dec_quickack_mode.
        if self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato_jiffies = self.ato_min_jiffies;
            }
        }
    }

    /// An ACK of `ack_seq` (`rcv_nxt` but for DCTCP's ACK of earlier data) with the window
    /// `tcp_select_window` offers from `window_now`, SACK blocks and ECN fields.
    #[inline(always)]
    fn push_ack(&mut self, now: u64, ack_seq: u64, window_now: (u64, bool), out: &mut Vec<Packet>) {
        let (window, end_quick) = self.buf.select_window_from(
            self.rcv_wup * self.mss,
            self.rcv_nxt * self.mss,
            window_now,
        );
        if end_quick {
            self.quick = 0;
        }
        // The common ACK carries no SACK block nor ECN: written in place; blocks and ECN
        // fields are added after.
        out.push(Packet {
            flow: self.flow,
            kind: Kind::Ack,
            wire_bytes: ACK_BYTES,
            seq: ack_seq,
            payload_bytes: 0,
            tsval: Self::now_ticks(now),
            tsecr: self.ts_recent,
            n_sack: 0,
            ecn: Ecn::NotEct,
            tcp_flags: TcpFlags::NONE,
            window_bytes: window as u32,
            sack: NO_SACK,
        });
        if self.dsack.is_some() || self.n_sacks > 0 {
            let ack = out.last_mut().expect("just pushed");
            self.add_sack_blocks(ack);
        }
        if self.ecn_ok() {
            let ack = out.last_mut().expect("just pushed");
            self.ecn_ack_fields(ack);
        }
        self.acks_sent += 1;
        // tcp_select_window: the window is offered from rcv_nxt.
        self.rcv_wup = self.rcv_nxt;
    }

    /// The ACK's SACK blocks: the D-SACK block first, then the remembered blocks in
    /// recency order, at most `MAX_SACK_BLOCKS` next to timestamps.
    #[inline(never)]
    fn add_sack_blocks(&mut self, ack: &mut Packet) {
        let mut n = 0;
        if let Some(d) = self.dsack.take() {
            ack.set_sack_block(0, d);
            n = 1;
        }
        for b in &self.sacks[..self.n_sacks] {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            ack.set_sack_block(n, *b);
            n += 1;
        }
        ack.n_sack = n as u8;
        ack.wire_bytes = ACK_BYTES + SACK_OPTION_BASE_BYTES + SACK_BLOCK_BYTES * n as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full-size data segment as the tests send it (also for `tests_4x` and `ecn`).
    pub(super) fn data(seq: u64) -> Packet {
        Packet {
            flow: 0,
            kind: Kind::Data,
            wire_bytes: 1500,
            seq,
            payload_bytes: 1448,
            tsval: 1,
            tsecr: 0,
            n_sack: 0,
            ecn: Ecn::NotEct,
            tcp_flags: TcpFlags::NONE,
            window_bytes: 0,
            sack: NO_SACK,
        }
    }

    /// A receiver with `opts` on a 40 ms path with a 32 MiB `tcp_rmem` maximum.
    pub(super) fn rx_with(opts: TcpOptions) -> Receiver {
        Receiver::new(0, &opts, 40_000_000, [4096, 131_072, 32 << 20], false)
    }

    fn rx() -> Receiver {
        rx_with(TcpOptions::default())
    }

    /// Segments to send before quick-ACK mode ends: 16 quick ACKs (`tcp_incr_quickack`)
    /// plus the 6 segments that grow `rcv_ssthresh` from 65160 to its room of 80480 in the
    /// initial 128 KiB buffer (each sets `quick |= 1`, which on an even count adds one).
    pub(super) const QUICK_SEGMENTS: u64 = 22;

    /// reference 8.3.8: immediate ACKs at connection start (16 quick ACKs, and the growth of
    /// the window keeps them coming), then one ACK per 2 full segments, and a lone segment
    /// is ACKed 40 ms later.
    #[test]
    fn delayed_ack_pattern() {
        let mut r = rx();
        let mut out = Vec::new();
        let mut t = 0;
        for s in 0..QUICK_SEGMENTS {
            r.on_data(t, &data(s), |_| 1448, &mut out);
            t += 100_000;
        }
        assert_eq!(out.len(), 22, "quick-ACK mode acks every segment");
        assert_eq!(r.buf.rcv_ssthresh, 80_480);
        out.clear();
        for s in 22..42 {
            r.on_data(t, &data(s), |_| 1448, &mut out);
            t += 100_000;
        }
        assert_eq!(out.len(), 10, "then one ACK per two segments");
        assert!(out.iter().all(|a| a.seq % 2 == 0));
        out.clear();
        r.on_data(t, &data(42), |_| 1448, &mut out);
        assert!(out.is_empty());
        assert_eq!(r.delack_at, Some(t + 40_000_000));
        r.on_timer(t + 40_000_000, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 43);
        // Every ACK offers rcv_ssthresh rounded up to the scale unit (1024 B with a 32 MiB
        // tcp_rmem[2]).
        assert_eq!(out[0].window_bytes, 80_896);
    }

    /// While the window grows, every segment is ACKed at once, whatever the quick-ACK
    /// count: a buffer that autotuning keeps raising keeps the receiver ACKing every
    /// segment (Linux's slow start); without room, every second segment.
    #[test]
    fn window_growth_acks_every_segment() {
        let mut r = rx();
        let mut out = Vec::new();
        for s in 0..60 {
            r.on_data(s * 100_000, &data(s), |_| 1448, &mut out);
        }
        out.clear();
        // Raise the buffer as one RTT of reading twice as much would (tcp_rcvbuf_grow).
        r.buf.rcvbuf_grow(1 << 20, 0);
        for s in 60..80 {
            r.on_data(s * 100_000, &data(s), |_| 1448, &mut out);
        }
        assert_eq!(out.len(), 20);
        assert!(out
            .windows(2)
            .all(|w| w[1].window_bytes > w[0].window_bytes));
    }

    /// A buffer-limited window: once autotuning set `window_clamp` to the buffer's full
    /// space and `rcv_ssthresh` grew up to it, the segment just queued makes the window
    /// smaller than the one offered, so `__tcp_ack_snd_check` holds the ACK, and the
    /// application's read sends it (`tcp_cleanup_rbuf`): still one ACK per two segments,
    /// not one per delayed-ACK timeout.
    #[test]
    fn buffer_limited_window_still_acks_every_second_segment() {
        let mut r = Receiver::new(
            0,
            &TcpOptions::default(),
            40_000_000,
            [4096, 131_072, 262_144],
            false,
        );
        let mut out = Vec::new();
        for s in 0..60 {
            r.on_data(s * 1_000_000, &data(s), |_| 1448, &mut out);
        }
        r.buf.rcvbuf_grow(1 << 20, 0);
        for s in 60..200 {
            r.on_data(s * 1_000_000, &data(s), |_| 1448, &mut out);
        }
        assert!(
            r.buf.rcv_ssthresh + 2 * 1448 > r.buf.window_clamp,
            "window at its clamp"
        );
        // Out-of-order data grows rcv_ssthresh before it is charged (tcp_data_queue_ofo),
        // so after a loss rcv_ssthresh can reach the empty buffer's window, window_clamp;
        // set that state directly.
        r.buf.rcv_ssthresh = r.buf.window_clamp;
        // A lone segment's delayed ACK leaves with the buffer empty and offers it all ...
        let mut next = 200;
        while r.delack_at.is_none() {
            r.on_data(next * 1_000_000, &data(next), |_| 1448, &mut out);
            next += 1;
        }
        r.on_timer(r.delack_at.unwrap(), &mut out);
        // ... so every later segment, while queued, leaves a smaller window than the one
        // offered.
        assert_eq!(r.buf.rcv_wnd, r.buf.window_clamp);
        let t0 = next * 1_000_000 + 100_000_000;
        r.on_data(t0, &data(next), |_| 1448, &mut out);
        out.clear();
        for s in next + 1..next + 20 {
            r.on_data(t0 + (s - next) * 1_000_000, &data(s), |_| 1448, &mut out);
        }
        assert_eq!(out.len(), 10, "one ACK per two segments");
        let seqs: Vec<u64> = out.iter().map(|a| a.seq - next).collect();
        assert!(seqs.iter().all(|s| s % 2 == 0), "{seqs:?}");
        assert!(r.delack_at.is_none());
    }

    #[test]
    fn out_of_order_gets_immediate_sack_then_compression() {
        let mut r = rx();
        let mut out = Vec::new();
        let next = past_quickacks(&mut r, &mut out);
        // Segment `next` lost; the next 5 arrive.
        for s in next + 1..next + 6 {
            r.on_data(1_000, &data(s), |_| 1448, &mut out);
        }
        // The first out-of-order segment still finds room to grow rcv_ssthresh (it is
        // charged after tcp_grow_window, the in-order ones before), which asks for an
        // immediate ACK; then 3 immediate dupacks; the fifth waits for compression.
        assert_eq!(
            out.len(),
            4,
            "growth ACK, 3 dupacks immediate, then compressed"
        );
        let last = out.last().unwrap();
        assert_eq!(last.seq, next);
        assert_eq!(
            *last.sack_blocks(),
            [SackBlock {
                start: next + 1,
                end: next + 5
            }]
        );
        assert!(r.comp_sack_at.is_some());
        out.clear();
        // Filling the hole empties the ofo queue: immediate ACK, cumulative.
        r.on_data(2_000, &data(next), |_| 1448, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, next + 6);
        assert_eq!(out[0].n_sack, 0);
        assert_eq!(r.delivered_bytes, (next + 6) * 1448);
    }

    #[test]
    fn duplicate_gets_dsack_first() {
        let mut r = rx();
        let mut out = Vec::new();
        for s in 0..20 {
            r.on_data(0, &data(s), |_| 1448, &mut out);
        }
        r.on_data(0, &data(30), |_| 1448, &mut out);
        out.clear();
        r.on_data(0, &data(5), |_| 1448, &mut out);
        assert_eq!(out.len(), 1);
        let blocks = out[0].sack_blocks();
        assert_eq!(blocks[0], SackBlock { start: 5, end: 6 });
        assert_eq!(blocks[1], SackBlock { start: 30, end: 31 });
    }

    #[test]
    fn sack_blocks_most_recent_first_at_most_three() {
        let mut r = rx();
        let mut out = Vec::new();
        let next = past_quickacks(&mut r, &mut out);
        for s in [2u64, 4, 6, 8, 10] {
            r.on_data(0, &data(next + s), |_| 1448, &mut out);
        }
        // Out-of-order data does not start quick-ACK mode: one ACK for the window's last
        // growth, 3 immediate dupacks, then the rest waits for the SACK compression timer
        // (1 ms, below 5% of the 40 ms RTT).
        assert_eq!(out.len(), 4);
        let t = r.comp_sack_at.expect("compressed ACK pending");
        assert_eq!(t, 1_000_000);
        r.on_timer(t, &mut out);
        assert_eq!(out.len(), 5);
        let last = out.last().unwrap();
        assert_eq!(last.n_sack, 3);
        assert_eq!(last.sack_blocks()[0].start, next + 10);
        assert_eq!(last.sack_blocks()[1].start, next + 8);
        assert_eq!(last.sack_blocks()[2].start, next + 6);
        assert_eq!(last.wire_bytes, 52 + 4 + 24);
    }

    /// Segments until quick-ACK mode and the window's growth are over (the 6.18 window);
    /// returns the next segment.
    pub(super) fn past_quickacks(r: &mut Receiver, out: &mut Vec<Packet>) -> u64 {
        for s in 0..QUICK_SEGMENTS {
            r.on_data(0, &data(s), |_| 1448, out);
        }
        assert_eq!(r.quick, 0);
        out.clear();
        QUICK_SEGMENTS
    }

    /// SACK negotiated off (`tcp.sack = false`): `tcp_data_queue_ofo` builds no SACK
    /// block and does not grow the window on out-of-order data ("to force DUPACK"),
    /// `tcp_dsack_set` sends no D-SACK, and `__tcp_ack_snd_check` compresses nothing: every
    /// out-of-order segment gets an immediate pure duplicate ACK, same window, no option.
    #[test]
    fn without_sack_dupacks_carry_no_blocks_and_are_not_compressed() {
        for sack in [true, false] {
            let mut r = rx_with(TcpOptions {
                sack,
                ..TcpOptions::default()
            });
            let mut out = Vec::new();
            let next = past_quickacks(&mut r, &mut out);
            // Segment `next` lost; the next 10 arrive, one twice; then old data again.
            for s in next + 1..next + 11 {
                r.on_data(1_000, &data(s), |_| 1448, &mut out);
            }
            r.on_data(1_000, &data(next + 4), |_| 1448, &mut out);
            r.on_data(1_000, &data(3), |_| 1448, &mut out);
            assert!(out.iter().all(|a| a.seq == next), "sack {sack}");
            if sack {
                // Window growth, 3 immediate dupacks, the rest (the duplicate too) compressed;
                // the old data is ACKed at once with its D-SACK block first.
                assert_eq!(out.len(), 5);
                assert!(out.iter().all(|a| a.n_sack > 0));
                assert_eq!(out[4].sack_blocks()[0], SackBlock { start: 3, end: 4 });
            } else {
                assert_eq!(out.len(), 12, "one immediate dupack per segment");
                for a in &out {
                    assert_eq!(a.n_sack, 0);
                    assert_eq!(a.wire_bytes, ACK_BYTES);
                    assert_eq!(a.window_bytes, out[0].window_bytes, "pure dupacks");
                }
                assert!(r.comp_sack_at.is_none());
            }
            // Filling the hole: a cumulative ACK without blocks either way.
            out.clear();
            r.on_data(2_000, &data(next), |_| 1448, &mut out);
            assert_eq!(out.len(), 1);
            assert_eq!((out[0].seq, out[0].n_sack), (next + 11, 0));
        }
    }

    /// __tcp_ack_snd_check(sk, 1): while holes remain, every advance of rcv_nxt is ACKed at
    /// once (a retransmission filling part of a hole is not held 40 ms).
    #[test]
    fn in_order_data_with_holes_left_is_acked_at_once() {
        let mut r = rx();
        let mut out = Vec::new();
        let next = past_quickacks(&mut r, &mut out);
        // next and next+1 lost; next+2.. arrive.
        for s in next + 2..next + 5 {
            r.on_data(1_000, &data(s), |_| 1448, &mut out);
        }
        out.clear();
        r.on_data(2_000, &data(next), |_| 1448, &mut out);
        assert_eq!(out.len(), 1, "immediate ACK");
        assert_eq!(out[0].seq, next + 1);
        assert_eq!(out[0].sack_blocks()[0].start, next + 2);
    }

    /// An out-of-order duplicate gets a D-SACK but does not enter quick-ACK mode
    /// (tcp_data_queue_ofo); old data does (tcp_enter_quickack_mode).
    #[test]
    fn only_old_duplicates_enter_quickack_mode() {
        let mut r = rx();
        let mut out = Vec::new();
        let next = past_quickacks(&mut r, &mut out);
        r.on_data(1_000, &data(next + 3), |_| 1448, &mut out);
        r.on_data(1_000, &data(next + 3), |_| 1448, &mut out);
        assert_eq!(r.quick, 0);
        assert_eq!(
            out.last().unwrap().sack_blocks()[0],
            SackBlock {
                start: next + 3,
                end: next + 4
            }
        );
        r.on_data(1_000, &data(2), |_| 1448, &mut out);
        assert_eq!(r.quick, 15, "16 quick ACKs, one used by this ACK");
    }

    /// tcp_event_data_recv: a gap longer than the receiver's RTO (handshake RTT + max(2 RTT,
    /// 200 ms) = 240 ms on a 40 ms path) re-arms quick-ACK mode.
    #[test]
    fn a_long_gap_rearms_quickack() {
        let mut r = rx();
        let mut out = Vec::new();
        let next = past_quickacks(&mut r, &mut out);
        r.on_data(0, &data(next), |_| 1448, &mut out);
        out.clear();
        r.on_data(300_000_000, &data(next + 1), |_| 1448, &mut out);
        assert_eq!(out.len(), 1, "lone segment after 300 ms is ACKed at once");
        assert!(r.quick > 0);
        // A 200 ms gap (below the RTO) does not.
        let mut r = rx();
        let next = past_quickacks(&mut r, &mut out);
        r.on_data(0, &data(next), |_| 1448, &mut out);
        out.clear();
        r.on_data(200_000_000, &data(next + 1), |_| 1448, &mut out);
        assert_eq!(r.quick, 0);
    }
}

/// The 4.x receiver options (`sack_compression`, `ofo_quickack`, `rcv_window`).
#[cfg(test)]
mod tests_4x;
