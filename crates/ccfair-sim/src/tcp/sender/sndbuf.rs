//! The sender's socket buffer (`tcp.wmem`): how much a bulk application can have queued,
//! sent and unacknowledged or not yet sent, in Linux 6.18 (net/ipv4/tcp.c,
//! net/ipv4/tcp_input.c, include/net/sock.h).
//!
//! - **Memory.** Every skb of the write and retransmission queues costs its `truesize`:
//!   the payload (page fragments) plus 832 B for the skb (`tcp_stream_alloc_skb`:
//!   `SKB_TRUESIZE` of a `MAX_TCP_HEADER` head from the small-head cache on x86_64).
//!   `sk_wmem_queued` is their sum; an acknowledged skb frees all of it, a partly
//!   acknowledged one its acknowledged payload (`tcp_trim_head`).
//! - **The buffer.** `sk_sndbuf` starts at `tcp_wmem[1]`, and `tcp_init_buffer_space` ->
//!   `tcp_sndbuf_expand` raises it to `factor x max(10, cwnd, reordering + 1) x per_mss`
//!   (factor 2, or the algorithm's `sndbuf_expand`: BBR 3; `per_mss` = 2304 B on x86_64
//!   with a 1460-byte MSS clamp), at most `tcp_wmem[2]` (4 MiB by default).
//! - **Growth** (`tcp_check_space` -> `tcp_new_space`): after an ACK, when the application
//!   is waiting for space (`SOCK_NOSPACE`) and the flow is not using its whole cwnd
//!   (`tcp_should_expand_sndbuf`), the buffer is expanded again from the current cwnd.
//!   So it follows cwnd until it reaches `tcp_wmem[2]`; from then on it caps the window.
//! - **The application** (`tcp_sendmsg_locked`) appends skbs of the size goal while
//!   `sk_wmem_queued < sk_sndbuf` (`sk_stream_memory_free`), then sleeps; it is woken when
//!   at least a third of the buffer is free again (`sk_stream_write_space`:
//!   `sk_stream_wspace >= sk_stream_min_wspace`, free >= queued / 2).
//!
//! `wmem = "fit"` (the default) disables all of this: the application has written
//! everything, as in earlier versions; the kernel backend then raises `tcp_wmem[2]` until
//! the buffer cannot limit a flow. Simplifications: the application writes the moment it is
//! woken (its wake-up latency is not drawn), and SACK's merging of skbs
//! (`tcp_shift_skb_data`) does not shrink the queue's overhead.

use super::Sender;
use crate::spec::{RmemName, TcpOptions, Wmem};

/// `SKB_TRUESIZE(skb_end_offset)` of a `tcp_stream_alloc_skb` head: a `MAX_TCP_HEADER`
/// (192 B) head from the 576-byte small-head cache (256 B of it usable), plus
/// `struct sk_buff` (256 B aligned) and `skb_shared_info` (320 B).
const SKB_OVERHEAD_BYTES: u64 = 832;
/// `MAX_TCP_HEADER` + `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`, the terms of
/// `tcp_sndbuf_expand`'s `per_mss` besides the MSS.
const PER_MSS_HEADROOM_BYTES: u64 = 192 + 320;
/// `SKB_DATA_ALIGN(sizeof(struct sk_buff))`.
const SK_BUFF_BYTES: u64 = 256;
/// `TCP_INIT_CWND`, the floor of `tcp_sndbuf_expand`'s segment count.
const INIT_CWND: u64 = 10;
/// Bytes of the timestamps option, between the MSS clamp (the peer's MSS option) and the
/// MSS in use.
const TS_OPTION_BYTES: u64 = 12;

/// Resolved `tcp_wmem` (min, default, max); `None` for `"fit"` (never limits).
pub fn wmem_bytes(wmem: Wmem) -> Option<[u64; 3]> {
    match wmem {
        Wmem::Named(RmemName::Fit) => None,
        Wmem::Named(RmemName::Linux) => Some([4096, 16_384, 4 << 20]),
        Wmem::Bytes(b) => Some(b),
    }
}

/// The sender's socket-buffer state.
#[derive(Clone, Copy, Debug)]
pub(super) struct SndBuf {
    /// `tcp_wmem`; `None`: the buffer never limits (`"fit"`).
    wmem: Option<[u64; 3]>,
    /// `sk_sndbuf` (bytes).
    pub sk_sndbuf: u64,
    /// `tcp_sndbuf_expand`'s per-segment cost.
    per_mss: u64,
    /// Skb heads among the segments after `snd_una`: the retransmission queue holds these
    /// skbs plus the one `snd_una` is in.
    pub heads_after_una: u64,
    /// The application waits for space (`SOCK_NOSPACE`).
    nospace: bool,
    /// End (segment) of what the application has written.
    pub written_end: u64,
}

impl SndBuf {
    pub fn new(opts: &TcpOptions) -> Self {
        let wmem = wmem_bytes(opts.wmem);
        let mss_clamp = opts.mss as u64 + TS_OPTION_BYTES;
        let per_mss = (mss_clamp + PER_MSS_HEADROOM_BYTES).next_power_of_two() + SK_BUFF_BYTES;
        SndBuf {
            wmem,
            sk_sndbuf: wmem.map_or(u64::MAX, |w| w[1]),
            per_mss,
            heads_after_una: 0,
            nospace: false,
            written_end: 0,
        }
    }

    pub fn limits(&self) -> bool {
        self.wmem.is_some()
    }
}

impl Sender {
    /// `snd_nxt` may not pass this: the end of the application's data, or of what it has
    /// written so far when the socket buffer limits it.
    pub(super) fn send_limit(&self) -> u64 {
        if self.sndbuf.limits() {
            self.app_end.min(self.sndbuf.written_end)
        } else {
            self.app_end
        }
    }

    /// `tcp_sndbuf_expand`.
    fn sndbuf_expand(&mut self) {
        let Some(wmem) = self.sndbuf.wmem else {
            return;
        };
        let nr_segs = INIT_CWND
            .max(self.tp.snd_cwnd as u64)
            .max(self.reordering as u64 + 1);
        let sndmem = (*self.cc).sndbuf_expand() as u64 * nr_segs * self.sndbuf.per_mss;
        if self.sndbuf.sk_sndbuf < sndmem {
            self.sndbuf.sk_sndbuf = sndmem.min(wmem[2]);
        }
    }

    /// `sk_wmem_queued`: truesize of the retransmission and write queues.
    pub(super) fn wmem_queued(&self) -> u64 {
        let mss = self.tp.mss as u64;
        let out = self.tp.packets_out as u64;
        let rtx_skbs = self.sndbuf.heads_after_una + u64::from(out > 0);
        let unsent = self.sndbuf.written_end.saturating_sub(self.tp.snd_nxt);
        let wq_skbs = unsent.div_ceil(self.size_goal_segs());
        (out + unsent) * mss + (rtx_skbs + wq_skbs) * SKB_OVERHEAD_BYTES
    }

    /// The connection is established: `tcp_init_buffer_space` sizes the buffer and the
    /// application starts writing.
    pub(super) fn sndbuf_init(&mut self) {
        self.sndbuf_expand();
        self.sndbuf.written_end = self.tp.snd_nxt;
    }

    /// The application writes (`tcp_sendmsg_locked`): skbs of the size goal while the
    /// queues hold less than `sk_sndbuf`, then it waits for space.
    pub(super) fn app_fill(&mut self) {
        if !self.sndbuf.limits() {
            return;
        }
        self.track_max_window();
        let goal = self.size_goal_segs();
        while self.sndbuf.written_end < self.app_end {
            if self.wmem_queued() >= self.sndbuf.sk_sndbuf {
                self.sndbuf.nospace = true;
                return;
            }
            self.sndbuf.written_end += goal.min(self.app_end - self.sndbuf.written_end);
        }
        self.sndbuf.nospace = false;
    }

    /// `tcp_check_space` after an ACK was processed and new data pushed: expand the buffer
    /// if the window is not full, and wake the application when a third of it is free.
    /// Returns true if the application wrote.
    pub(super) fn check_space(&mut self) -> bool {
        if !self.sndbuf.nospace {
            return false;
        }
        if self.tp.packets_in_flight() < self.tp.snd_cwnd {
            self.sndbuf_expand();
        }
        let queued = self.wmem_queued();
        let free = self.sndbuf.sk_sndbuf.saturating_sub(queued);
        if free < queued >> 1 || queued >= self.sndbuf.sk_sndbuf {
            return false;
        }
        let before = self.sndbuf.written_end;
        self.app_fill();
        self.sndbuf.written_end > before
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Ecn, Kind, Packet, TcpFlags, NO_SACK};
    use ccfair_cc::reno::{Reno, RenoParams};

    fn sender(wmem: Wmem) -> Sender {
        let opts = TcpOptions {
            wmem,
            ..TcpOptions::default()
        };
        Sender::new(0, &opts, Box::new(Reno::new(&RenoParams {})), None)
    }

    fn ack(seq: u64, window: u32) -> Packet {
        Packet {
            flow: 0,
            kind: Kind::Ack,
            wire_bytes: 52,
            seq,
            payload_bytes: 0,
            tsval: 1,
            tsecr: 1,
            n_sack: 0,
            ecn: Ecn::NotEct,
            tcp_flags: TcpFlags::NONE,
            window_bytes: window,
            sack: NO_SACK,
        }
    }

    /// tcp_sndbuf_expand's per_mss on x86_64 with a 1460-byte MSS clamp: 2048 + 256.
    #[test]
    fn per_mss_is_2304_bytes() {
        let s = sender(Wmem::Named(RmemName::Linux));
        assert_eq!(s.sndbuf.per_mss, 2304);
    }

    /// At the start, tcp_init_buffer_space gives 2 x 10 x 2304 B; the application writes
    /// skbs until the queue holds that much, then waits.
    #[test]
    fn the_application_fills_the_initial_buffer_then_waits() {
        let mut s = sender(Wmem::Named(RmemName::Linux));
        s.tso.on = true;
        let mut out = Vec::new();
        s.set_peer_window(65_160);
        s.start_without_handshake(0, &mut out);
        assert_eq!(s.sndbuf.sk_sndbuf, 46_080);
        assert!(s.sndbuf.nospace);
        let queued = s.wmem_queued();
        // Overshoot by at most one skb of the size goal (22 segments for 65160 B / 2).
        assert!(
            (46_080..46_080 + 22 * 1448 + 832).contains(&queued),
            "{queued}"
        );
        assert_eq!(out.len(), 10, "the initial window is sent");
    }

    /// Once the buffer is at tcp_wmem[2], the data in flight stops growing with cwnd.
    #[test]
    fn the_window_is_capped_by_tcp_wmem_max() {
        let wmem = [4096, 16_384, 1 << 20];
        let mut s = sender(Wmem::Bytes(wmem));
        let mut out = Vec::new();
        s.set_peer_window(1 << 30);
        s.start_without_handshake(0, &mut out);
        let mut now = 0;
        let mut peak_out = 0;
        let mut cwnd_at_30 = 0;
        // Acknowledge everything in flight every 10 ms: slow start doubles cwnd.
        for i in 0..40 {
            if i == 30 {
                cwnd_at_30 = s.tp.snd_cwnd;
            }
            now += 10_000_000;
            out.clear();
            let una = s.tp.snd_nxt;
            s.on_ack(now, &ack(una, 1 << 30), &mut out);
            peak_out = peak_out.max(s.tp.packets_out);
            assert!(s.wmem_queued() <= (1 << 20) + 45 * 1448 + 832);
        }
        assert_eq!(s.sndbuf.sk_sndbuf, 1 << 20);
        // The buffer, not cwnd, limits: cwnd exceeds what is in flight, and slow start
        // stops growing it once it is twice the most in flight (tcp_is_cwnd_limited).
        let cwnd = s.tp.snd_cwnd;
        assert!(cwnd > peak_out, "cwnd {cwnd}, in flight {peak_out}");
        assert_eq!(cwnd, cwnd_at_30, "cwnd stopped growing");
        // 1 MiB of truesize holds fewer than 1 MiB / 1448 segments.
        assert!((peak_out as u64) < (1 << 20) / 1448, "in flight {peak_out}");
        assert!(
            (peak_out as u64) > (1 << 20) * 2 / 3 / 2304,
            "in flight {peak_out}"
        );
    }

    /// "fit": the application has written everything; nothing waits.
    #[test]
    fn fit_never_limits() {
        let mut s = sender(Wmem::Named(RmemName::Fit));
        let mut out = Vec::new();
        s.start_without_handshake(0, &mut out);
        assert!(!s.sndbuf.limits());
        assert_eq!(s.send_limit(), u64::MAX);
    }
}
