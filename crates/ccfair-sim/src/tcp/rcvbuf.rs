//! The Linux receive buffer and advertised window of one connection (Linux 6.18): how much
//! the receiver lets the sender have in flight, and when the growth of that window makes
//! it ACK every segment.
//!
//! - Memory: every queued segment costs its skb's `truesize` (`rcv_truesize_bytes`, 2304 B
//!   for a 1500-byte packet from a TUN device on x86_64, the kernel backend's device: a
//!   kmalloc'd 2 KiB head, `tun_get_user` -> `tun_alloc_skb`). The payload/truesize ratio is
//!   `scaling_ratio` (`tcp_measure_rcv_mss`), which turns buffer space into window
//!   (`tcp_win_from_space`, include/net/tcp.h).
//! - `rcv_ssthresh` grows by two segments per in-order segment while there is room under
//!   `min(window_clamp, tcp_space)`, and each growth step asks for an immediate ACK
//!   (`tcp_grow_window` sets `icsk_ack.quick |= 1`, net/ipv4/tcp_input.c).
//! - Autotuning: once per receiver RTT, if the application read more than in any earlier
//!   RTT, `sk_rcvbuf` grows to about ten times that (`tcp_rcv_space_adjust`,
//!   `tcp_rcvbuf_grow` with its slow-start term, 6.18), up to `tcp_rmem[2]`, and
//!   `window_clamp` follows.
//! - The advertised window (`__tcp_select_window`, `tcp_select_window`,
//!   net/ipv4/tcp_output.c): the free space capped at `rcv_ssthresh`, rounded up to the
//!   window-scale unit, never shrinking the right edge already offered.
//!
//! The application reads in-order data at once (ccfair's bulk receiver), so only the
//! segment being processed and out-of-order data occupy the buffer. Windows and positions
//! are in bytes; the caller converts segments.

use crate::spec::{Rmem, RmemName};

/// `TCP_RMEM_TO_WIN_SCALE`: `scaling_ratio` is payload/truesize in 1/256.
const RMEM_TO_WIN_SCALE: u32 = 8;
/// `TCP_DEFAULT_SCALING_RATIO`: 50% until the first full segment is measured.
const DEFAULT_SCALING_RATIO: u64 = 1 << (RMEM_TO_WIN_SCALE - 1);
/// `net.core.rmem_max` (4 MiB in 6.18): enters the window-scale choice.
const CORE_RMEM_MAX_BYTES: u64 = 4 << 20;
/// `TCP_MAX_WSCALE`.
const MAX_WSCALE: u32 = 14;
/// `TCP_MSS_DEFAULT`: `tcp_initialize_rcv_mss`'s cap on the first `rcv_mss` guess.
const MSS_DEFAULT: u64 = 536;
/// `TCP_INIT_CWND`: `rcvq_space.space` starts at ten segments.
const INIT_CWND: u64 = 10;
/// Payload of the SYN's MSS option on a 1500-byte MTU (`dst_metric_advmss`): the SYN-ACK's
/// window is rounded to it before timestamps are known.
const SYN_MSS: u64 = 1460;

/// Bytes of window for `space` bytes of buffer (`__tcp_win_from_space`).
fn win_from_space(ratio: u64, space: i64) -> i64 {
    (space * ratio as i64) >> RMEM_TO_WIN_SCALE
}

/// Bytes of buffer for `win` bytes of window (`__tcp_space_from_win`).
fn space_from_win(ratio: u64, win: u64) -> u64 {
    if win <= u64::MAX >> RMEM_TO_WIN_SCALE {
        // The shift fits in 64 bits: the same quotient without a 128-bit division.
        return (win << RMEM_TO_WIN_SCALE) / ratio;
    }
    let space = ((win as u128) << RMEM_TO_WIN_SCALE) / ratio as u128;
    space.min(u64::MAX as u128) as u64
}

fn align_up(x: u64, unit: u64) -> u64 {
    x.div_ceil(unit) * unit
}

/// Resolved `tcp_rmem` (min, default, max) in bytes.
pub fn rmem_bytes(rmem: Rmem, fit_max_bytes: u64) -> [u64; 3] {
    match rmem {
        Rmem::Named(RmemName::Fit) => [4096, 131_072, fit_max_bytes],
        Rmem::Named(RmemName::Linux) => [4096, 131_072, 32 << 20],
        Rmem::Bytes(b) => b,
    }
}

pub struct RcvBuf {
    /// `tp->advmss` after the timestamps option (the MSS).
    advmss: u64,
    truesize: u64,
    rmem_max: u64,
    scaling_ratio: u64,
    pub rcv_wscale: u32,
    sk_rcvbuf: u64,
    /// `sk_rmem_alloc`: truesize of the segments queued (unread or out of order).
    rmem_alloc: u64,
    pub window_clamp: u64,
    pub rcv_ssthresh: u64,
    /// The window last advertised (bytes, scale-aligned), from `rcv_wup` (the caller's).
    pub rcv_wnd: u64,
    /// `icsk_ack.rcv_mss`: the receiver's guess of the sender's segment size.
    pub rcv_mss: u64,
    /// `rcvq_space`: the most read in one receiver RTT, and where the current RTT's
    /// measurement started (bytes read, time).
    space: u64,
    space_seq: u64,
    space_time_ns: u64,
    /// `rcv_rtt_est`: the receiver's RTT estimate (µs x 8; 0 = none) and the window-based
    /// sampler's measurement in progress (`rcv_rtt_est.seq`, `.time`; 0 = none).
    pub rtt_us8: u64,
    rtt_seq: u64,
    rtt_time_ns: u64,
    last_tsecr: u32,
    /// Out-of-order segments dropped for lack of buffer space (`TCPOFODrop`).
    pub ofo_drops: u64,
}

impl RcvBuf {
    /// The passive opener's state from the SYN-ACK on (`tcp_openreq_init_rwin`,
    /// `tcp_select_initial_window`): window 65160 (a 64 KiB buffer at the default 50%
    /// ratio, rounded to the SYN's 1460-byte MSS less timestamps), the scale that fits
    /// `tcp_rmem[2]`.
    pub fn new(advmss: u32, truesize: u32, rmem: [u64; 3]) -> Self {
        let advmss = advmss as u64;
        let rcvbuf = rmem[1];
        let full = win_from_space(DEFAULT_SCALING_RATIO, rcvbuf as i64) as u64;
        let mss = (SYN_MSS - 12).min(advmss);
        let rcv_wnd = if full > mss { full / mss * mss } else { full };
        let s = rcv_wnd.max(rmem[2]).max(CORE_RMEM_MAX_BYTES);
        let rcv_wscale = (s.ilog2().saturating_sub(15)).min(MAX_WSCALE);
        RcvBuf {
            advmss,
            truesize: truesize as u64,
            rmem_max: rmem[2],
            scaling_ratio: DEFAULT_SCALING_RATIO,
            rcv_wscale,
            sk_rcvbuf: rcvbuf,
            rmem_alloc: 0,
            window_clamp: 65_535 << rcv_wscale,
            rcv_ssthresh: rcv_wnd,
            rcv_wnd,
            rcv_mss: MSS_DEFAULT,
            space: 0,
            space_seq: 0,
            space_time_ns: 0,
            rtt_us8: 0,
            rtt_seq: 0,
            rtt_time_ns: 0,
            last_tsecr: 0,
            ofo_drops: 0,
        }
    }

    /// The window field of the SYN-ACK (unscaled, as every SYN window).
    pub fn synack_window(&self) -> u64 {
        self.rcv_wnd.min(65_535)
    }

    /// `tcp_init_buffer_space` when the handshake completes: `window_clamp` one segment
    /// below the full space (`tcp_app_win` 31), `rcv_ssthresh` under it, and the
    /// autotuning's first measurement of ten segments.
    pub fn establish(&mut self, now: u64) {
        let maxwin = self.full_space();
        if self.window_clamp >= maxwin {
            self.window_clamp = maxwin.max(4 * self.advmss);
        }
        if self.window_clamp > 2 * self.advmss && self.window_clamp + self.advmss > maxwin {
            self.window_clamp = (2 * self.advmss).max(maxwin.saturating_sub(self.advmss));
        }
        self.rcv_ssthresh = self.rcv_ssthresh.min(self.window_clamp);
        self.space = self
            .rcv_ssthresh
            .min(self.rcv_wnd)
            .min(INIT_CWND * self.advmss);
        self.space_time_ns = now;
        self.space_seq = 0;
    }

    fn full_space(&self) -> u64 {
        win_from_space(self.scaling_ratio, self.sk_rcvbuf as i64).max(0) as u64
    }

    /// `tcp_space`: window the free buffer allows (negative when over-committed).
    fn tcp_space(&self) -> i64 {
        win_from_space(
            self.scaling_ratio,
            self.sk_rcvbuf as i64 - self.rmem_alloc as i64,
        )
    }

    /// `tcp_rcv_rtt_measure_ts`: a data segment echoing one of our ACK timestamps; the
    /// sample is whole milliseconds and a zero delta gives none (6.15+).
    pub fn rtt_sample_ts(&mut self, now_ticks: u32, tsecr: u32, len: u64) {
        if tsecr == 0 || tsecr == self.last_tsecr {
            return;
        }
        self.last_tsecr = tsecr;
        if len < self.rcv_mss {
            return;
        }
        let delta_ms = now_ticks.wrapping_sub(tsecr);
        if delta_ms == 0 || delta_ms > 1 << 30 {
            return;
        }
        self.rtt_update(delta_ms as u64 * 1_000, false);
    }

    /// `tcp_rcv_rtt_update` (6.12+): a smaller sample is taken at once; a larger one moves
    /// the estimate by 1/8 for timestamp samples and not at all for window samples.
    fn rtt_update(&mut self, sample_us: u64, win_dep: bool) {
        let m = sample_us.max(1) << 3;
        if self.rtt_us8 == 0 || m < self.rtt_us8 {
            self.rtt_us8 = m;
        } else if !win_dep {
            self.rtt_us8 = self.rtt_us8 - (self.rtt_us8 >> 3) + sample_us;
        }
    }

    /// `tcp_measure_rcv_mss` for a segment of `len` payload bytes: the first full segment
    /// sets `scaling_ratio` from its truesize and re-derives `window_clamp`.
    // Per data segment: inlined; a segment of the size already measured changes nothing
    // but `rcv_mss`'s cap.
    #[inline]
    fn measure_rcv_mss(&mut self, len: u64) {
        if len < self.rcv_mss {
            return;
        }
        if len != self.rcv_mss {
            self.measure_scaling_ratio(len);
        }
        self.rcv_mss = len.min(self.advmss);
    }

    /// `tcp_measure_rcv_mss`'s `scaling_ratio` from a segment of a new size.
    #[cold]
    fn measure_scaling_ratio(&mut self, len: u64) {
        let ratio = ((len << RMEM_TO_WIN_SCALE) / self.truesize).max(1);
        if ratio != self.scaling_ratio {
            self.scaling_ratio = ratio;
            let clamp = self.full_space();
            self.set_window_clamp(clamp);
        }
    }

    /// `tcp_set_window_clamp`.
    fn set_window_clamp(&mut self, val: u64) {
        // SOCK_MIN_RCVBUF / 2.
        let new = val.max(1152);
        if new == self.window_clamp {
            return;
        }
        let grew = new > self.window_clamp;
        self.window_clamp = new;
        if grew {
            self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(new));
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.min(new);
        }
    }

    /// An in-order segment arrived and was queued (`tcp_queue_rcv`), before
    /// `tcp_event_data_recv`; `rcv_nxt` is already past it.
    pub fn queue_in_order(&mut self) {
        self.rmem_alloc += self.truesize;
    }

    /// The window-based RTT sampler of `tcp_event_data_recv` (`tcp_rcv_rtt_measure`): the
    /// time to receive one advertised window.
    pub fn rtt_measure_window(&mut self, now: u64, rcv_nxt: u64) {
        if self.rtt_time_ns != 0 {
            if rcv_nxt < self.rtt_seq {
                return;
            }
            let us = ((now - self.rtt_time_ns) / 1_000).max(1);
            self.rtt_update(us, true);
        }
        self.rtt_seq = rcv_nxt + self.rcv_wnd;
        self.rtt_time_ns = now.max(1);
    }

    /// `tcp_measure_rcv_mss` and `tcp_grow_window` for a data segment of `len` bytes
    /// (in order: from `tcp_event_data_recv`; out of order: from `tcp_data_queue_ofo`).
    /// Returns whether `rcv_ssthresh` grew, which asks for an immediate ACK.
    // Per data segment: inlined up to the growth, which a full window rarely has room for
    // (the two call sites would otherwise keep it out of line).
    #[inline(always)]
    pub fn measure_and_grow(&mut self, len: u64) -> bool {
        self.measure_rcv_mss(len);
        if len < 128 {
            return false;
        }
        let room = (self.window_clamp as i64).min(self.tcp_space()) - self.rcv_ssthresh as i64;
        if room <= 0 {
            return false;
        }
        self.grow_window(len, room as u64)
    }

    /// `tcp_grow_window` with `room` bytes between `rcv_ssthresh` and its bound.
    #[inline(never)]
    fn grow_window(&mut self, len: u64, room: u64) -> bool {
        let incr = if win_from_space(self.scaling_ratio, self.truesize as i64) <= len as i64 {
            2 * self.advmss
        } else {
            self.grow_slow(len)
        };
        if incr == 0 {
            return false;
        }
        self.rcv_ssthresh += room.min(incr.max(2 * len));
        true
    }

    /// `__tcp_grow_window`: a segment whose truesize overhead is large still grows the
    /// window while `rcv_ssthresh` is small against `tcp_rmem[2]`.
    fn grow_slow(&self, len: u64) -> u64 {
        let mut t = win_from_space(self.scaling_ratio, self.truesize as i64) >> 1;
        let mut w = win_from_space(self.scaling_ratio, self.rmem_max as i64) >> 1;
        while self.rcv_ssthresh as i64 <= w {
            if t <= len as i64 {
                return 2 * self.rcv_mss;
            }
            t >>= 1;
            w >>= 1;
        }
        0
    }

    /// An out-of-order segment (`tcp_data_queue_ofo` -> `tcp_try_rmem_schedule`): may be
    /// queued (then `charge_out_of_order` once `tcp_grow_window` saw it) if
    /// the buffer is not over-committed (`tcp_can_ingest`, 6.18.33: rmem <= rcvbuf), after
    /// `tcp_clamp_window` raised `sk_rcvbuf` to the memory in use if it could. Returns
    /// false when it is dropped: Linux then prunes the highest out-of-order data
    /// (`tcp_prune_ofo_queue`); ccfair drops the arriving segment, which with the window
    /// respected only happens when `tcp_rmem[2]` is smaller than what is in flight.
    pub fn admit_out_of_order(&mut self) -> bool {
        if self.rmem_alloc > self.sk_rcvbuf {
            self.clamp_window();
            if self.rmem_alloc > self.sk_rcvbuf {
                self.ofo_drops += 1;
                return false;
            }
        }
        true
    }

    /// The out-of-order segment is queued (`skb_set_owner_r`).
    pub fn charge_out_of_order(&mut self) {
        self.rmem_alloc += self.truesize;
    }

    /// `tcp_clamp_window`.
    fn clamp_window(&mut self) {
        if self.sk_rcvbuf < self.rmem_max {
            self.sk_rcvbuf = self.rmem_alloc.min(self.rmem_max);
        }
        if self.rmem_alloc > self.sk_rcvbuf {
            self.rcv_ssthresh = self.window_clamp.min(2 * self.advmss);
        }
    }

    /// The application read `segments` in-order segments, `copied` bytes in all so far
    /// (`tcp_recvmsg` -> `tcp_rcv_space_adjust`), with `ofo_span` bytes of out-of-order
    /// data beyond `rcv_nxt`.
    // Per data segment: inlined.
    #[inline]
    pub fn app_read(&mut self, now: u64, segments: u64, copied: u64, ofo_span: u64) {
        self.rmem_alloc = self.rmem_alloc.saturating_sub(segments * self.truesize);
        let rtt_ns = (self.rtt_us8 >> 3) * 1_000;
        if rtt_ns == 0 || now - self.space_time_ns < rtt_ns {
            return;
        }
        let read = copied - self.space_seq;
        if read > self.space {
            self.rcvbuf_grow(read, ofo_span);
        }
        self.space_seq = copied;
        self.space_time_ns = now;
    }

    /// `tcp_rcvbuf_grow` (6.18): twice what was read in the last RTT ("DRS is always one RTT
    /// late"), plus twice its growth (so the sender may double again), plus the
    /// out-of-order span, as buffer space, up to `tcp_rmem[2]`. `newval` = `space` (no
    /// growth) from the out-of-order path.
    pub fn rcvbuf_grow(&mut self, newval: u64, ofo_span: u64) {
        let old = self.space.max(1);
        self.space = newval;
        // Linux computes the growth term in u64 from u32s; u128 keeps it exact here for any
        // amount read, and the sums saturate (the result is capped by tcp_rmem[2] anyway).
        let mut rcvwin = newval.saturating_mul(2);
        let grow = match newval.saturating_sub(old) {
            // No growth (the out-of-order path): no 128-bit division for a zero term.
            0 => 0,
            d => (rcvwin as u128 * d as u128 / old as u128) * 2,
        };
        rcvwin = rcvwin.saturating_add(grow.min(u64::MAX as u128) as u64);
        rcvwin = rcvwin.saturating_add(ofo_span);
        let rcvbuf = space_from_win(self.scaling_ratio, rcvwin).min(self.rmem_max);
        if rcvbuf > self.sk_rcvbuf {
            self.sk_rcvbuf = rcvbuf;
            self.window_clamp = self.full_space();
        }
    }

    /// The out-of-order path's autotuning call (6.16+): no growth term, only the span.
    pub fn ofo_grow(&mut self, ofo_span: u64) {
        self.rcvbuf_grow(self.space, ofo_span);
    }

    /// `__tcp_select_window`: the window the free space allows now. Returns the window and
    /// whether quick-ACK mode must end (the buffer is more than half full).
    pub fn select_window_now(&self) -> (u64, bool) {
        let mut free = self.tcp_space();
        let allowed = self.full_space() as i64;
        let full = (self.window_clamp as i64).min(allowed);
        let mss = (self.rcv_mss as i64).min(full);
        if mss <= 0 {
            return (0, false);
        }
        let unit = 1i64 << self.rcv_wscale;
        let mut end_quick = false;
        if free < full >> 1 {
            end_quick = true;
            free = free.div_euclid(unit) * unit;
            if free < allowed >> 4 || free < mss {
                return (0, true);
            }
        }
        let free = (free as u64).min(self.rcv_ssthresh);
        if self.rcv_wscale > 0 {
            return (align_up(free, unit as u64), end_quick);
        }
        // Without scaling: keep the old window if it is within a segment of the free space.
        let window = if self.rcv_wnd <= free && self.rcv_wnd + mss as u64 > free {
            self.rcv_wnd
        } else {
            free / mss as u64 * mss as u64
        };
        (window, end_quick)
    }

    /// The window still offered beyond `rcv_nxt` (`tcp_receive_window`), the last one
    /// having been offered at `rcv_wup`.
    pub fn receive_window(&self, rcv_wup: u64, rcv_nxt: u64) -> u64 {
        (rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt)
    }

    /// `tcp_select_window` for an ACK sent at `rcv_nxt` (which becomes `rcv_wup`): never
    /// pull back the right edge already offered; returns the advertised window in bytes
    /// (field << scale).
    /// Also returns whether quick-ACK mode must end (see `select_window_now`).
    pub fn select_window(&mut self, rcv_wup: u64, rcv_nxt: u64) -> (u64, bool) {
        let window_now = self.select_window_now();
        self.select_window_from(rcv_wup, rcv_nxt, window_now)
    }

    /// `select_window` given `window_now`, what `select_window_now` returns (computed
    /// earlier, the buffer unchanged since).
    pub fn select_window_from(
        &mut self,
        rcv_wup: u64,
        rcv_nxt: u64,
        window_now: (u64, bool),
    ) -> (u64, bool) {
        let cur = self.receive_window(rcv_wup, rcv_nxt);
        let (mut new, end_quick) = window_now;
        let unit = 1u64 << self.rcv_wscale;
        if new < cur {
            new = align_up(cur, unit);
        }
        new = new.min(65_535 << self.rcv_wscale);
        self.rcv_wnd = new;
        (new >> self.rcv_wscale << self.rcv_wscale, end_quick)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;

    fn established(rmem: [u64; 3]) -> RcvBuf {
        let mut b = RcvBuf::new(MSS, 2304, rmem);
        b.establish(0);
        b
    }

    /// The handshake values Linux 6.18 shows with tcp_rmem = 4096 131072 32 MiB: SYN-ACK
    /// window 65160, scale 10; after the final ACK window_clamp 64088, rcv_ssthresh 64088,
    /// rcvq_space 14480.
    #[test]
    fn handshake_values_are_linuxs() {
        let mut b = RcvBuf::new(MSS, 2304, [4096, 131_072, 32 << 20]);
        assert_eq!(b.synack_window(), 65_160);
        assert_eq!(b.rcv_wscale, 10);
        b.establish(0);
        assert_eq!(b.window_clamp, 64_088);
        assert_eq!(b.rcv_ssthresh, 64_088);
        assert_eq!(b.space, 14_480);
        // A 6 MiB maximum gives scale 7; anything up to 4 MiB too (net.core.rmem_max).
        assert_eq!(
            RcvBuf::new(MSS, 2304, [4096, 131_072, 6 << 20]).rcv_wscale,
            7
        );
        assert_eq!(
            RcvBuf::new(MSS, 2304, [4096, 131_072, 1 << 20]).rcv_wscale,
            7
        );
    }

    /// The first full segment measures the TUN skb's ratio (1448 x 256 / 2304 = 160),
    /// raises window_clamp to 62.5% of the buffer (81920) and rcv_ssthresh to the offered
    /// window; then every segment grows rcv_ssthresh by 2896 until the room runs out.
    #[test]
    fn rcv_ssthresh_grows_two_segments_per_segment_up_to_the_room() {
        let mut b = established([4096, 131_072, 32 << 20]);
        b.queue_in_order();
        assert!(b.measure_and_grow(1448));
        assert_eq!(b.scaling_ratio, 160);
        assert_eq!(b.window_clamp, 81_920);
        // 65160 (raised to the offered window) + 2896.
        assert_eq!(b.rcv_ssthresh, 68_056);
        b.app_read(1, 1, 1448, 0);
        let mut grew = 1;
        while {
            b.queue_in_order();
            let g = b.measure_and_grow(1448);
            b.app_read(1, 1, 1448, 0);
            g
        } {
            grew += 1;
        }
        // Room: min(81920, (131072 - 2304) x 160 / 256 = 80480).
        assert_eq!(b.rcv_ssthresh, 80_480);
        assert_eq!(grew, 6);
    }

    /// Autotuning: reading twice as much as the last RTT grows the buffer to
    /// 1.6 x (2n + 4n) = 9.6 n, capped by tcp_rmem[2]; window_clamp is 62.5% of it.
    #[test]
    fn rcvbuf_grows_once_per_rtt_with_the_slow_start_term() {
        let mut b = established([4096, 131_072, 32 << 20]);
        b.queue_in_order();
        b.measure_and_grow(1448);
        b.rtt_update(40_000, false);
        // Less than one RTT after the start: no measurement.
        b.app_read(30_000_000, 1, 28_960, 0);
        assert_eq!(b.sk_rcvbuf, 131_072);
        // One RTT in, 28960 bytes read (2 x 14480).
        b.app_read(40_000_000, 0, 28_960, 0);
        assert_eq!(b.sk_rcvbuf, 6 * 28_960 * 256 / 160);
        assert_eq!(b.window_clamp, b.sk_rcvbuf * 160 / 256);
        let mut small = established([4096, 131_072, 200_000]);
        small.queue_in_order();
        small.measure_and_grow(1448);
        small.rtt_update(40_000, false);
        small.app_read(40_000_000, 1, 1_000_000, 0);
        assert_eq!(small.sk_rcvbuf, 200_000);
    }

    /// The advertised window: rcv_ssthresh rounded up to the scale unit; out-of-order data
    /// eats free space, and past half the buffer the window is the free space (rounded
    /// down) and quick-ACK mode ends; the right edge never moves back.
    #[test]
    fn window_is_rcv_ssthresh_aligned_and_never_shrinks() {
        let mut b = established([4096, 131_072, 32 << 20]);
        b.queue_in_order();
        b.measure_and_grow(1448);
        assert_eq!(b.select_window(0, 1).0, 68_608); // ALIGN(68056, 1024)
        b.app_read(0, 1, 1448, 0);
        for _ in 0..30 {
            assert!(b.admit_out_of_order());
            b.charge_out_of_order();
        }
        let (w, end_quick) = b.select_window_now();
        let free = ((131_072 - 30 * 2304) * 160) >> 8;
        assert!(end_quick);
        assert_eq!(w, free / 1024 * 1024);
        // Offered right edge: 1 + 68608 bytes; an ACK at rcv_nxt 1 keeps it.
        assert_eq!(b.select_window(1, 1).0, 68_608);
    }

    /// tcp_rcv_rtt_update: window samples only lower the estimate; timestamp samples move
    /// it by 1/8 upwards; a zero-millisecond timestamp delta is no sample.
    #[test]
    fn receiver_rtt_estimate() {
        let mut b = established([4096, 131_072, 32 << 20]);
        b.rcv_mss = 1448;
        b.rtt_sample_ts(100, 100, 1448);
        assert_eq!(b.rtt_us8, 0);
        b.rtt_sample_ts(141, 101, 1448);
        assert_eq!(b.rtt_us8, 40_000 << 3);
        b.rtt_sample_ts(181, 101, 1448); // the same echo again: no sample
        assert_eq!(b.rtt_us8, 40_000 << 3);
        b.rtt_sample_ts(189, 109, 1448); // 80 ms: EWMA
        assert_eq!(b.rtt_us8, (40_000 << 3) - (40_000 << 3 >> 3) + 80_000);
        b.rtt_update(30_000, true);
        assert_eq!(b.rtt_us8, 30_000 << 3);
        b.rtt_update(50_000, true);
        assert_eq!(b.rtt_us8, 30_000 << 3);
    }
}
