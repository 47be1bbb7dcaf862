//! Sans-IO congestion control with the semantics of Linux `struct tcp_congestion_ops`.
//!
//! ccfair compares congestion control algorithms by running them against each other. This
//! crate holds the algorithms, written as Linux writes them: the TCP substrate (the
//! simulator's sender in `ccfair-sim`, or the test driver of this crate) owns the
//! connection state Linux keeps in `struct tcp_sock` and calls the hooks of
//! [`CongestionControl`] at the points `net/ipv4/tcp_input.c` calls them. Algorithms read
//! and write the fields of [`TcpSock`] as Linux modules read and write `tp->snd_cwnd` and
//! friends, so a rule can be checked line by line against its kernel source.
//!
//! The crate has no clock and no I/O: time arrives as [`TcpSock::now_ns`], randomness as a
//! seed given at construction, so the same inputs always give the same window, bit for bit.
//!
//! # Main types
//!
//! - [`CongestionControl`]: the hooks (`ssthresh`, `cong_avoid`, `cong_control`, ...) and
//!   what the algorithm reports to the results (`state_name`, `sample_metrics`).
//! - [`TcpSock`]: the connection state the hooks see, in Linux's names and units (windows in
//!   packets, sequence numbers in segments, times in ns and µs).
//! - [`RateSample`] and [`AckSample`]: what one ACK delivered (`tcp_rate_gen`, `ack_sample`).
//! - The registry ([`ALGORITHMS`], [`algorithm`], [`build`], [`normalize_params`]): every
//!   algorithm by the name a spec uses (`"cubic"`), with its parameter table.
//! - The algorithms: [`reno`], [`cubic`] (with HyStart), [`dctcp`], [`bbr`] (v1, with the
//!   kernel versions' differences as options) and [`copa`].
//! - `testing` (feature `testing`): `TestSender`, a minimal Linux sender around one
//!   module, and `path::Path`, flows over one bottleneck, for the algorithms' tests.
//!
//! # Example
//!
//! Build CUBIC by name, as a spec names it, and drive it through the test driver: a window
//! of packets sent and acknowledged one RTT later, then a loss.
//!
//! ```
//! use ccfair_cc::testing::{Ack, TestSender};
//! use ccfair_cc::CaState;
//! use serde_json::json;
//!
//! // CUBIC with Linux's defaults except HyStart, on a socket with MSS 1448 and IW 10.
//! let mut s = TestSender::registered("cubic", &json!({"hystart": false}), 1);
//! assert_eq!(s.tp.snd_cwnd, 10);
//!
//! // Slow start: the whole window goes out, its ACK comes 40 ms later and every packet it
//! // acknowledges grows the window by one.
//! let sent = s.send_to_cwnd();
//! assert_eq!(sent, 0..10);
//! s.advance(40_000_000);
//! s.ack(&Ack::to(sent.end));
//! assert_eq!(s.tp.snd_cwnd, 20);
//! assert_eq!(s.tp.srtt_us, 40_000);
//!
//! // The next window: the first packet is lost, the ACK SACKs the rest and the sender's
//! // loss detection marks it lost. CUBIC's multiplicative decrease (beta = 717/1024)
//! // sets ssthresh, and recovery begins.
//! let sent = s.send_to_cwnd();
//! s.advance(40_000_000);
//! s.ack(&Ack::to(sent.start).sack(sent.start + 1..sent.end).lose(sent.start..sent.start + 1));
//! assert_eq!(s.tp.ca_state, CaState::Recovery);
//! assert_eq!(s.tp.snd_ssthresh, 20 * 717 / 1024);
//! ```
//!
//! Outside tests, a substrate builds an algorithm with [`build`] and calls its hooks itself;
//! `ccfair-sim` does so for every flow of a run.

// Algorithms are arithmetic on a socket's fields: nothing here needs `unsafe`.
#![forbid(unsafe_code)]

pub mod minmax;
pub mod params;
pub mod registry;
pub mod rng;
pub mod sock;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub mod bbr;
pub mod copa;
pub mod cubic;
pub mod dctcp;
pub mod reno;

pub use registry::{
    algorithm, build, internal_names, known_algorithms, metadata_json, normalize_params, Algorithm,
    CcaError, Family, ALGORITHMS,
};
pub use sock::{
    AckSample, CaEvent, CaState, RateSample, TcpSock, CA_ACK_ECE, CA_ACK_SLOWPATH,
    CA_ACK_WIN_UPDATE,
};

/// Linux `struct tcp_congestion_ops`, hook for hook (include/net/tcp.h).
///
/// Default bodies are the no-ops Linux uses when a module leaves a hook NULL.
pub trait CongestionControl: Send {
    /// Module name as in `/proc/sys/net/ipv4/tcp_available_congestion_control`.
    fn name(&self) -> &'static str;

    /// `init`: connection start (after the substrate set `snd_cwnd = init_cwnd`).
    fn init(&mut self, _tp: &mut TcpSock) {}

    /// `ssthresh`: entering Recovery, CWR or Loss. Returns the new `snd_ssthresh`.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32;

    /// `cong_avoid`: per ACK when not in cwnd reduction and `tcp_may_raise_cwnd`.
    /// `ack` is the cumulative ACK (segment number), `acked` the packets newly (S)ACKed.
    fn cong_avoid(&mut self, _tp: &mut TcpSock, _ack: u64, _acked: u32) {}

    /// True when the module defines `cong_control` (BBR, Copa): it then replaces PRR,
    /// `tcp_end_cwnd_reduction` and `cong_avoid`.
    fn has_cong_control(&self) -> bool {
        false
    }

    /// `cong_control`: per ACK with the delivery-rate sample of `tcp_rate_gen`.
    fn cong_control(&mut self, _tp: &mut TcpSock, _rs: &RateSample) {}

    /// `set_state`: called before every CA state change (`tcp_set_ca_state`).
    fn set_state(&mut self, _tp: &mut TcpSock, _new_state: CaState) {}

    /// `cwnd_event`.
    fn cwnd_event(&mut self, _tp: &mut TcpSock, _event: CaEvent) {}

    /// `pkts_acked`: per ACK from `tcp_clean_rtx_queue`.
    fn pkts_acked(&mut self, _tp: &mut TcpSock, _sample: &AckSample) {}

    /// False when the module leaves `pkts_acked` NULL: `tcp_clean_rtx_queue` then builds no
    /// sample and makes no call (it tests `icsk_ca_ops->pkts_acked` for NULL).
    fn has_pkts_acked(&self) -> bool {
        true
    }

    /// `in_ack_event`: per ACK with the `CA_ACK_*` flags, after `tcp_clean_rtx_queue` and
    /// before loss detection (`tcp_in_ack_event`, net/ipv4/tcp_input.c, as in Linux 6.18;
    /// also on an ACK that finds nothing in flight).
    fn in_ack_event(&mut self, _tp: &mut TcpSock, _flags: u32) {}

    /// False when the module leaves `in_ack_event` NULL (most do): no call is made.
    fn has_in_ack_event(&self) -> bool {
        false
    }

    /// `TCP_CONG_NEEDS_ECN` (DCTCP): the connection asks for ECN whatever
    /// `net.ipv4.tcp_ecn` says and accepts it when asked, every packet is ECN-capable
    /// (`tcp_ecn_send`, `tcp_ca_needs_ecn`), and the receiving side reports each data
    /// segment's CE mark to the algorithm (`CA_EVENT_ECN_IS_CE`/`_NO_CE`, which the
    /// simulator's receiver implements with DCTCP's state machine, net/ipv4/tcp_dctcp.h).
    fn needs_ecn(&self) -> bool {
        false
    }

    /// `undo_cwnd`: spurious-loss undo. Returns the cwnd to restore.
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        // tcp_reno_undo_cwnd (tcp_cong.c), the default of most modules.
        tp.snd_cwnd.max(tp.prior_cwnd)
    }

    /// `sk_pacing_status == SK_PACING_NEEDED`: the module asks TCP to pace at
    /// `tp.pacing_rate_bytes_per_sec` (BBR, Copa).
    fn wants_pacing(&self) -> bool {
        false
    }

    /// `min_tso_segs`: the fewest segments per TSO skb the module wants; `None` leaves it to
    /// `tcp_min_tso_segs` (2). Used by the simulator's TSO model (`tcp.tso`).
    fn min_tso_segs(&self, _tp: &TcpSock) -> Option<u32> {
        None
    }

    /// `sndbuf_expand`: the send buffer in multiples of cwnd x per-segment memory
    /// (`tcp_sndbuf_expand`; 2 when the module leaves the hook NULL).
    fn sndbuf_expand(&self) -> u32 {
        2
    }

    /// Short name of the algorithm's current state for time series ("slow_start", "PROBE_BW", ...).
    fn state_name(&self, tp: &TcpSock) -> &'static str {
        if tp.in_slow_start() {
            "slow_start"
        } else {
            "cong_avoid"
        }
    }

    /// Algorithm internals sampled into the time series (e.g. BBR's btl_bw). The set of names
    /// must not change over a connection's life. Units belong in the names.
    fn sample_metrics(&self, _tp: &TcpSock, _out: &mut Vec<(&'static str, f64)>) {}

    /// Counters for the per-flow summary (e.g. PROBE_RTT entries), at the end of a run.
    fn summary_counters(&self, _tp: &TcpSock, _out: &mut Vec<(&'static str, f64)>) {}
}
