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
//!
//! `tcp.rcv_window = "linux-4.x"` is the receiver of Linux 4.13/4.15 instead (read in
//! 4.13.9 and 4.15.11; `RcvWindow::Linux4x`):
//! - the window is half the buffer space, whatever the skbs' truesize
//!   (`tcp_win_from_space` with `tcp_adv_win_scale` 1: `space - (space >> 1)`);
//! - the SYN-ACK offers at most 20 segments (`tcp_select_initial_window` with
//!   `tcp_default_init_rwnd`, 2 x `TCP_INIT_CWND`): 28,960 B;
//! - the buffer starts at `tcp_fixup_rcvbuf`'s 4 x 2 x 20 x `SKB_TRUESIZE(advmss +
//!   MAX_TCP_HEADER)` (374,400 B), computed before the passive opener takes the timestamps
//!   off `advmss` (`tcp_rcv_state_process`, `TCP_SYN_RECV`);
//! - `tcp_rcv_space_adjust`: per receiver RTT, if more was read than in any earlier RTT,
//!   rcvwin = 2 x copied + 16 x advmss, x1.5 if copied grew by 25 %, x2 if by 50 %; the
//!   buffer is rcvwin / advmss x rcvmem (`SKB_TRUESIZE(advmss + MAX_TCP_HEADER)` raised in
//!   128-byte steps until half of it holds an advmss: 2968 B), and `window_clamp = rcvwin`;
//! - `tcp_grow_window` caps `rcv_ssthresh` at `window_clamp` only;
//! - the receiver RTT (`tcp_rcv_rtt_update`) averages every timestamp sample (1/8 new), a
//!   zero-millisecond sample counting as 1 ms, and keeps the minimum of window samples;
//! - no autotuning from out-of-order data.

use crate::spec::{RcvWindow, Rmem, RmemName};

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
/// `TCPOLEN_TSTAMP_ALIGNED`: what the timestamps option takes off `advmss`.
const TSTAMP_ALIGNED: u64 = 12;
/// 4.x `sysctl_rmem_max` (`SK_RMEM_MAX`, 212992): enters the window-scale choice.
const CORE_RMEM_MAX_4X_BYTES: u64 = 212_992;
/// `SKB_TRUESIZE(x) - x` on x86_64 4.x: `SKB_DATA_ALIGN(sizeof(struct sk_buff))` 256 +
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))` 320.
const SKB_OVERHEAD_4X_BYTES: u64 = 576;
/// `MAX_TCP_HEADER` of an x86_64 distribution kernel of the 4.x era (128 + `MAX_HEADER`
/// 176: `LL_MAX_HEADER` 128 with Hyper-V, plus 48 with tunnels), as Ubuntu built 4.13/4.15.
const MAX_TCP_HEADER_4X_BYTES: u64 = 304;

/// Bytes of window for `space` bytes of buffer (`__tcp_win_from_space`).
fn win_from_space(ratio: u64, space: i64) -> i64 {
    (space * ratio as i64) >> RMEM_TO_WIN_SCALE
}

/// 4.x `tcp_win_from_space` with `tcp_adv_win_scale` 1: half the space, rounded up.
fn win_from_space_4x(space: i64) -> i64 {
    space - (space >> 1)
}

/// `tcp_default_init_rwnd`: twice `TCP_INIT_CWND` segments, fewer for segments above
/// 1460 bytes (4.x; 4.20 removed it).
fn default_init_rwnd(mss: u64) -> u64 {
    let init_rwnd = 2 * INIT_CWND;
    if mss > 1460 {
        (1460 * init_rwnd / mss).max(2)
    } else {
        init_rwnd
    }
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

/// One receiver's buffer and advertised window (see the module documentation), in bytes.
pub struct RcvBuf {
    /// Linux 6.18's window model or 4.x's (module docs).
    model: RcvWindow,
    /// 128 for 4.x, 0 for 6.18: `win` computes `(space x ratio + win_round) >> 8`, which
    /// with 4.x's ratio of 128 (never measured) is its `space - (space >> 1)` (half, rounded
    /// up) and with 0 is 6.18's `space x ratio >> 8`: no branch on the per-ACK path.
    win_round: i64,
    /// `!0` for 6.18, 0 for 4.x: `last_tsecr` keeps the echo already sampled in 6.18 only
    /// (4.x samples every echo; `last_tsecr` then stays 0, which no echo equals).
    tsecr_mask: u32,
    /// `tp->advmss` after the timestamps option (the MSS).
    advmss: u64,
    truesize: u64,
    rmem_max: u64,
    scaling_ratio: u64,
    /// The receiver's window scale (`rcv_wscale`): advertised windows are multiples of
    /// 2^`rcv_wscale` bytes.
    pub rcv_wscale: u32,
    sk_rcvbuf: u64,
    /// `sk_rmem_alloc`: truesize of the segments queued (unread or out of order).
    rmem_alloc: u64,
    /// `tp->window_clamp`: the largest window the receiver will advertise, bytes.
    pub window_clamp: u64,
    /// `tp->rcv_ssthresh`: the current cap on the advertised window, grown by
    /// `tcp_grow_window`, bytes.
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
    /// `tcp_rmem[2]`. 4.x: at most 20 segments (28960 B) of the half of `tcp_rmem[1]`.
    pub fn new(model: RcvWindow, advmss: u32, truesize: u32, rmem: [u64; 3]) -> Self {
        let advmss = advmss as u64;
        let rcvbuf = rmem[1];
        let (rcv_wnd, rcv_wscale) = match model {
            RcvWindow::Linux618 => {
                let full = win_from_space(DEFAULT_SCALING_RATIO, rcvbuf as i64) as u64;
                let mss = (SYN_MSS - 12).min(advmss);
                let rcv_wnd = if full > mss { full / mss * mss } else { full };
                let s = rcv_wnd.max(rmem[2]).max(CORE_RMEM_MAX_BYTES);
                (rcv_wnd, (s.ilog2().saturating_sub(15)).min(MAX_WSCALE))
            }
            RcvWindow::Linux4x => Self::initial_window_4x(advmss, rmem),
        };
        RcvBuf {
            model,
            win_round: if model == RcvWindow::Linux4x { 128 } else { 0 },
            tsecr_mask: if model == RcvWindow::Linux4x { 0 } else { !0 },
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

    /// 4.x `tcp_select_initial_window`: the full space of `tcp_rmem[1]` (half of it,
    /// `tcp_adv_win_scale` 1) rounded down to the MSS, at most `tcp_default_init_rwnd`
    /// segments (20, fewer above 1460 B); the scale from `tcp_rmem[2]` and `rmem_max`.
    fn initial_window_4x(mss: u64, rmem: [u64; 3]) -> (u64, u32) {
        let full = win_from_space_4x(rmem[1] as i64).max(0) as u64;
        let space = if full > mss { full / mss * mss } else { full };
        let s = space.max(rmem[2]).max(CORE_RMEM_MAX_4X_BYTES);
        let rcv_wscale = (s.ilog2().saturating_sub(15)).min(MAX_WSCALE);
        let rcv_wnd = if mss > 1 << rcv_wscale {
            space.min(default_init_rwnd(mss) * mss)
        } else {
            space
        };
        (rcv_wnd, rcv_wscale)
    }

    /// The window field of the SYN-ACK (unscaled, as every SYN window).
    pub fn synack_window(&self) -> u64 {
        self.rcv_wnd.min(65_535)
    }

    /// `tcp_init_buffer_space` when the handshake completes: `window_clamp` one segment
    /// below the full space (`tcp_app_win` 31), `rcv_ssthresh` under it, and the
    /// autotuning's first measurement of ten segments.
    /// 4.x: first `tcp_fixup_rcvbuf`, and all of it with the `advmss` of the SYN (the
    /// timestamps come off after `tcp_init_transfer`); the autotuning starts from the
    /// window offered (`rcvq_space.space = rcv_wnd`).
    pub fn establish(&mut self, now: u64) {
        let advmss = match self.model {
            RcvWindow::Linux618 => self.advmss,
            RcvWindow::Linux4x => {
                let advmss = self.advmss + TSTAMP_ALIGNED;
                self.fixup_rcvbuf_4x(advmss);
                advmss
            }
        };
        let maxwin = self.full_space();
        if self.window_clamp >= maxwin {
            self.window_clamp = maxwin.max(4 * advmss);
        }
        if self.window_clamp > 2 * advmss && self.window_clamp + advmss > maxwin {
            self.window_clamp = (2 * advmss).max(maxwin.saturating_sub(advmss));
        }
        self.rcv_ssthresh = self.rcv_ssthresh.min(self.window_clamp);
        self.space = match self.model {
            RcvWindow::Linux618 => self
                .rcv_ssthresh
                .min(self.rcv_wnd)
                .min(INIT_CWND * self.advmss),
            RcvWindow::Linux4x => self.rcv_wnd,
        };
        self.space_time_ns = now;
        self.space_seq = 0;
    }

    /// 4.x `tcp_fixup_rcvbuf`: room for 4 x 2 x the initial window's segments of skbs of
    /// `SKB_TRUESIZE(advmss + MAX_TCP_HEADER)` ("DRS has 2 to 3 RTT latency"), at most
    /// `tcp_rmem[2]`.
    fn fixup_rcvbuf_4x(&mut self, advmss: u64) {
        let truesize = advmss + MAX_TCP_HEADER_4X_BYTES + SKB_OVERHEAD_4X_BYTES;
        let rcvmem = (2 * truesize * default_init_rwnd(advmss)) << 2;
        if self.sk_rcvbuf < rcvmem {
            self.sk_rcvbuf = rcvmem.min(self.rmem_max);
        }
    }

    /// `tcp_win_from_space` of the model: 6.18's, or 4.x's half rounded up (the ratio stays
    /// at 128 = 50 %, and `win_round` rounds up).
    #[inline]
    fn win(&self, space: i64) -> i64 {
        let win = (space * self.scaling_ratio as i64 + self.win_round) >> RMEM_TO_WIN_SCALE;
        debug_assert!(self.model == RcvWindow::Linux618 || win == win_from_space_4x(space));
        win
    }

    fn full_space(&self) -> u64 {
        self.win(self.sk_rcvbuf as i64).max(0) as u64
    }

    /// `tcp_space`: window the free buffer allows (negative when over-committed).
    fn tcp_space(&self) -> i64 {
        self.win(self.sk_rcvbuf as i64 - self.rmem_alloc as i64)
    }

    /// `tcp_rcv_rtt_measure_ts`: a data segment echoing one of our ACK timestamps; the
    /// sample is whole milliseconds and a zero delta gives none (6.15+).
    ///
    /// 4.x: every full segment echoing a timestamp is a sample (no test for an echo already
    /// used: `tsecr_mask`), and 0 ms counts as 1 ms (4.15; 4.13 passed 0).
    pub fn rtt_sample_ts(&mut self, now_ticks: u32, tsecr: u32, len: u64) {
        if tsecr == 0 || tsecr == self.last_tsecr {
            return;
        }
        self.last_tsecr = tsecr & self.tsecr_mask;
        if len < self.rcv_mss {
            return;
        }
        let mut delta_ms = now_ticks.wrapping_sub(tsecr);
        if delta_ms == 0 || delta_ms > 1 << 30 {
            if delta_ms != 0 || self.model == RcvWindow::Linux618 {
                return;
            }
            delta_ms = 1;
        }
        self.rtt_update(delta_ms as u64 * 1_000, false);
    }

    /// `tcp_rcv_rtt_update` (6.12+): a smaller sample is taken at once; a larger one moves
    /// the estimate by 1/8 for timestamp samples and not at all for window samples. 4.x:
    /// every timestamp sample moves it by 1/8; window samples keep the minimum.
    fn rtt_update(&mut self, sample_us: u64, win_dep: bool) {
        if self.model == RcvWindow::Linux4x {
            self.rtt_us8 = if self.rtt_us8 == 0 {
                sample_us << 3
            } else if !win_dep {
                self.rtt_us8 - (self.rtt_us8 >> 3) + sample_us
            } else {
                self.rtt_us8.min(sample_us << 3)
            };
            return;
        }
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

    /// `tcp_measure_rcv_mss`'s `scaling_ratio` from a segment of a new size (6.6+; 4.x has
    /// none).
    #[cold]
    fn measure_scaling_ratio(&mut self, len: u64) {
        if self.model == RcvWindow::Linux4x {
            return;
        }
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

    /// `tcp_grow_window` with `room` bytes between `rcv_ssthresh` and its bound (4.x: the
    /// same test, "Check #1", but the growth is capped by `window_clamp` only).
    #[inline(never)]
    fn grow_window(&mut self, len: u64, room: u64) -> bool {
        let incr = if self.win(self.truesize as i64) <= len as i64 {
            2 * self.advmss
        } else {
            self.grow_slow(len)
        };
        if incr == 0 {
            return false;
        }
        match self.model {
            RcvWindow::Linux618 => self.rcv_ssthresh += room.min(incr.max(2 * len)),
            RcvWindow::Linux4x => {
                self.rcv_ssthresh = (self.rcv_ssthresh + incr.max(2 * len)).min(self.window_clamp)
            }
        }
        true
    }

    /// `__tcp_grow_window`: a segment whose truesize overhead is large still grows the
    /// window while `rcv_ssthresh` is small against `tcp_rmem[2]`.
    fn grow_slow(&self, len: u64) -> u64 {
        let mut t = self.win(self.truesize as i64) >> 1;
        let mut w = self.win(self.rmem_max as i64) >> 1;
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
            match self.model {
                RcvWindow::Linux618 => self.rcvbuf_grow(read, ofo_span),
                RcvWindow::Linux4x => self.rcv_space_adjust_4x(read),
            }
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

    /// 4.x `tcp_rcv_space_adjust` once `copied` bytes were read in a receiver RTT, more
    /// than `rcvq_space.space`: rcvwin = 2 x copied + 16 x advmss ("minimal window to cope
    /// with packet losses"), x1.5 if copied grew by 25 % ("assume slow start"), x2 if by
    /// 50 %; as buffer `rcvwin / advmss` skbs of `rcvmem`, at most `tcp_rmem[2]`; if that
    /// raises the buffer, `window_clamp = rcvwin` ("make the window clamp follow along").
    fn rcv_space_adjust_4x(&mut self, copied: u64) {
        let space = self.space;
        let mut rcvwin = copied.saturating_mul(2).saturating_add(16 * self.advmss);
        if copied >= space + (space >> 2) {
            if copied >= space + (space >> 1) {
                rcvwin = rcvwin.saturating_mul(2);
            } else {
                rcvwin = rcvwin.saturating_add(rcvwin >> 1);
            }
        }
        let mut rcvmem = self.advmss + MAX_TCP_HEADER_4X_BYTES + SKB_OVERHEAD_4X_BYTES;
        while self.win(rcvmem as i64) < self.advmss as i64 {
            rcvmem += 128;
        }
        let rcvbuf = (rcvwin / self.advmss)
            .saturating_mul(rcvmem)
            .min(self.rmem_max);
        if rcvbuf > self.sk_rcvbuf {
            self.sk_rcvbuf = rcvbuf;
            self.window_clamp = rcvwin;
        }
        self.space = copied;
    }

    /// The out-of-order path's autotuning call (6.16+): no growth term, only the span (4.x:
    /// none).
    pub fn ofo_grow(&mut self, ofo_span: u64) {
        if self.model == RcvWindow::Linux4x {
            return;
        }
        self.rcvbuf_grow(self.space, ofo_span);
    }

    /// `__tcp_select_window`: the window the free space allows now. Returns the window and
    /// whether quick-ACK mode must end (the buffer is more than half full).
    // Per ACK: inlined (issue 16).
    #[inline]
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
        let mut b = RcvBuf::new(RcvWindow::Linux618, MSS, 2304, rmem);
        b.establish(0);
        b
    }

    /// The handshake values Linux 6.18 shows with tcp_rmem = 4096 131072 32 MiB: SYN-ACK
    /// window 65160, scale 10; after the final ACK window_clamp 64088, rcv_ssthresh 64088,
    /// rcvq_space 14480.
    #[test]
    fn handshake_values_are_linuxs() {
        let mut b = RcvBuf::new(RcvWindow::Linux618, MSS, 2304, [4096, 131_072, 32 << 20]);
        assert_eq!(b.synack_window(), 65_160);
        assert_eq!(b.rcv_wscale, 10);
        b.establish(0);
        assert_eq!(b.window_clamp, 64_088);
        assert_eq!(b.rcv_ssthresh, 64_088);
        assert_eq!(b.space, 14_480);
        // A 6 MiB maximum gives scale 7; anything up to 4 MiB too (net.core.rmem_max).
        assert_eq!(
            RcvBuf::new(RcvWindow::Linux618, MSS, 2304, [4096, 131_072, 6 << 20]).rcv_wscale,
            7
        );
        assert_eq!(
            RcvBuf::new(RcvWindow::Linux618, MSS, 2304, [4096, 131_072, 1 << 20]).rcv_wscale,
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

/// `rcv_window = "linux-4.x"`: values derived by hand from the 4.13/4.15 functions named
/// in the module docs.
#[cfg(test)]
mod tests_4x {
    use super::*;

    const MSS: u32 = 1448;
    /// Ubuntu's 4.x `tcp_rmem`.
    const RMEM_4X: [u64; 3] = [4096, 87_380, 6_291_456];

    fn established(rmem: [u64; 3]) -> RcvBuf {
        let mut b = RcvBuf::new(RcvWindow::Linux4x, MSS, 2304, rmem);
        b.establish(0);
        b
    }

    /// SYN-ACK window min(rounddown(87380 - 43690, 1448), 20 x 1448) = 28960, scale 7;
    /// after the handshake sk_rcvbuf = 8 x 20 x SKB_TRUESIZE(1460 + 304) = 374400,
    /// window_clamp = 374400/2 - 1460 = 185740 (advmss still 1460 there), autotuning
    /// from rcvq_space = 28960.
    #[test]
    fn handshake_values_are_4xs() {
        let mut b = RcvBuf::new(RcvWindow::Linux4x, MSS, 2304, RMEM_4X);
        assert_eq!(b.synack_window(), 28_960);
        assert_eq!(b.rcv_wscale, 7);
        b.establish(0);
        assert_eq!(b.sk_rcvbuf, 374_400);
        assert_eq!(b.window_clamp, 185_740);
        assert_eq!(b.rcv_ssthresh, 28_960);
        assert_eq!(b.space, 28_960);
        // Linux 6.18's tcp_rmem: still 20 segments (4.x caps the SYN-ACK, not the buffer),
        // scale 10; the fixup raises 131072 to 374400 as well.
        let mut b = RcvBuf::new(RcvWindow::Linux4x, MSS, 2304, [4096, 131_072, 32 << 20]);
        assert_eq!((b.synack_window(), b.rcv_wscale), (28_960, 10));
        b.establish(0);
        assert_eq!(b.sk_rcvbuf, 374_400);
        // A small tcp_rmem[2] caps the fixup.
        assert_eq!(established([4096, 87_380, 200_000]).sk_rcvbuf, 200_000);
    }

    /// The window is half the buffer whatever the skbs' truesize (6.18: payload/truesize).
    #[test]
    fn window_is_half_the_buffer() {
        for truesize in [2304, 4096] {
            let mut b = RcvBuf::new(RcvWindow::Linux4x, MSS, truesize, RMEM_4X);
            b.establish(0);
            b.queue_in_order();
            b.measure_and_grow(1448);
            b.app_read(0, 1, 1448, 0);
            assert_eq!(b.full_space(), b.sk_rcvbuf / 2, "truesize {truesize}");
            for _ in 0..20 {
                assert!(b.admit_out_of_order());
                b.charge_out_of_order();
            }
            let free = (b.sk_rcvbuf - 20 * truesize as u64) / 2;
            assert_eq!(b.tcp_space(), free as i64);
        }
        let mut new = RcvBuf::new(RcvWindow::Linux618, MSS, 4096, RMEM_4X);
        new.establish(0);
        new.queue_in_order();
        new.measure_and_grow(1448);
        assert_ne!(new.full_space(), new.sk_rcvbuf / 2);
    }

    /// tcp_grow_window: +2 x advmss per full segment, capped by window_clamp only; every
    /// ACK then offers rcv_ssthresh (rounded up to the 128-byte scale unit).
    #[test]
    fn rcv_ssthresh_grows_to_window_clamp() {
        let mut b = established(RMEM_4X);
        let mut grew = 0;
        loop {
            b.queue_in_order();
            let g = b.measure_and_grow(1448);
            b.app_read(1, 1, 1448, 0);
            if !g {
                break;
            }
            grew += 1;
        }
        assert_eq!(b.rcv_ssthresh, 185_740);
        // (185740 - 28960) / 2896 = 54.1: 55 growth steps, the last one capped.
        assert_eq!(grew, 55);
        assert_eq!(b.select_window(0, 1).0, 185_856);
    }

    /// tcp_rcv_space_adjust on a synthetic read sequence, one receiver RTT (40 ms) apart:
    /// rcvwin = 2 x copied + 16 x 1448, x1.5 at +25 %, x2 at +50 %; the buffer is
    /// rcvwin / 1448 skbs of 2968 B; window_clamp = rcvwin when the buffer grows.
    #[test]
    fn autotuning_steps_follow_copied_per_rtt() {
        let mut b = established(RMEM_4X);
        b.rtt_update(40_000, false);
        let mut copied = 0;
        let mut t = 0;
        let mut read = |b: &mut RcvBuf, bytes: u64| {
            copied += bytes;
            t += 40_000_000;
            b.app_read(t, 0, copied, 0);
        };
        // No more than the initial window: no step.
        read(&mut b, 28_960);
        assert_eq!((b.sk_rcvbuf, b.space), (374_400, 28_960));
        // +25 %: rcvwin = (72400 + 23168) x 1.5 = 143352, 99 skbs = 293832 B: below the
        // fixed-up buffer, so only the measure moves.
        read(&mut b, 36_200);
        assert_eq!(
            (b.sk_rcvbuf, b.window_clamp, b.space),
            (374_400, 185_740, 36_200)
        );
        // +121 %: rcvwin = (160000 + 23168) x 2 = 366336, 252 skbs = 747936 B.
        read(&mut b, 80_000);
        assert_eq!((b.sk_rcvbuf, b.window_clamp), (747_936, 366_336));
        assert_eq!(b.full_space(), 373_968);
        // Less than 25 % more: x1 (203168 -> 415520 B, no growth).
        read(&mut b, 90_000);
        assert_eq!(
            (b.sk_rcvbuf, b.window_clamp, b.space),
            (747_936, 366_336, 90_000)
        );
        // Capped by tcp_rmem[2]; window_clamp still takes rcvwin.
        read(&mut b, 5_000_000);
        assert_eq!(b.sk_rcvbuf, 6_291_456);
        assert_eq!(b.window_clamp, (10_000_000 + 23_168) * 2);
        assert_eq!(b.full_space(), 3_145_728);
        // Out-of-order data does not autotune (6.16+ only).
        b.ofo_grow(10_000_000);
        assert_eq!(b.sk_rcvbuf, 6_291_456);
    }

    /// tcp_rcv_rtt_update: timestamp samples always average (1/8 of the new one), the same
    /// echo again is a new sample, 0 ms counts as 1 ms; window samples keep the minimum.
    #[test]
    fn receiver_rtt_averages_timestamp_samples() {
        let mut b = established(RMEM_4X);
        b.rcv_mss = 1448;
        b.rtt_sample_ts(141, 101, 1448);
        assert_eq!(b.rtt_us8, 40_000 << 3);
        b.rtt_sample_ts(121, 101, 1448); // 20 ms: averaged, not taken
        assert_eq!(b.rtt_us8, (40_000 << 3) - 40_000 + 20_000);
        let before = b.rtt_us8;
        b.rtt_sample_ts(121, 101, 1448); // the same echo again: a sample
        assert_eq!(b.rtt_us8, before - (before >> 3) + 20_000);
        let before = b.rtt_us8;
        b.rtt_sample_ts(200, 200, 1448); // 0 ms: 1 ms
        assert_eq!(b.rtt_us8, before - (before >> 3) + 1_000);
        b.rtt_sample_ts(300, 200, 1000); // shorter than rcv_mss: none
        b.rtt_update(5_000, true);
        assert_eq!(b.rtt_us8, 5_000 << 3);
        b.rtt_update(50_000, true);
        assert_eq!(b.rtt_us8, 5_000 << 3);
    }
}
