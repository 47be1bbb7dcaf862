//! [`Recording`]: a congestion control module that logs every hook call before passing it
//! to the module it wraps, so that two substrates driven through the same sequence (the
//! simulator's sender and [`super::TestSender`]) can be compared call for call.

use std::sync::{Arc, Mutex};

use crate::{AckSample, CaEvent, CaState, CongestionControl, RateSample, TcpSock};

/// One hook call with its arguments and the socket fields the hooks read most.
#[derive(Clone, Debug, PartialEq)]
pub enum Hook {
    /// `init`.
    Init,
    /// `ssthresh`, with cwnd when it was called.
    Ssthresh {
        /// `snd_cwnd` at the call, packets.
        cwnd: u32,
    },
    /// `cong_avoid` with its arguments.
    CongAvoid {
        /// The cumulative ACK, segment number.
        ack: u64,
        /// Packets newly (S)ACKed.
        acked: u32,
        /// `snd_cwnd` at the call, packets.
        cwnd: u32,
    },
    /// `cong_control` with the rate sample and the delivery counters it is read against.
    CongControl {
        /// The rate sample passed.
        rs: RateSampleFields,
        /// `tp.delivered` at the call, packets.
        delivered: u64,
        /// `tp.delivered_mstamp_ns` at the call.
        delivered_mstamp_ns: u64,
        /// `snd_cwnd` at the call, packets.
        cwnd: u32,
    },
    /// `set_state` with the new state.
    SetState(CaState),
    /// `cwnd_event` with the event.
    CwndEvent(CaEvent),
    /// `pkts_acked` with the [`AckSample`]'s fields.
    PktsAcked {
        /// `AckSample::pkts_acked`.
        pkts_acked: u32,
        /// `AckSample::rtt_us`.
        rtt_us: i64,
        /// `AckSample::in_flight`.
        in_flight: u32,
    },
    /// `undo_cwnd`.
    UndoCwnd,
    /// `in_ack_event` with its flags and the delivery counters.
    InAckEvent {
        /// The `CA_ACK_*` flags.
        flags: u32,
        /// `tp.delivered` at the call, packets.
        delivered: u64,
        /// `tp.delivered_ce` at the call, packets.
        delivered_ce: u64,
    },
}

/// The fields of a [`RateSample`] (which has no `PartialEq` of its own, being engine API).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSampleFields {
    /// `RateSample::prior_mstamp_ns`.
    pub prior_mstamp_ns: u64,
    /// `RateSample::prior_delivered`.
    pub prior_delivered: u64,
    /// `RateSample::delivered`.
    pub delivered: i64,
    /// `RateSample::interval_us`.
    pub interval_us: i64,
    /// `RateSample::rtt_us`.
    pub rtt_us: i64,
    /// `RateSample::losses`.
    pub losses: u32,
    /// `RateSample::acked_sacked`.
    pub acked_sacked: u32,
    /// `RateSample::prior_in_flight`.
    pub prior_in_flight: u32,
    /// `RateSample::is_app_limited`.
    pub is_app_limited: bool,
    /// `RateSample::is_retrans`.
    pub is_retrans: bool,
    /// `RateSample::is_ack_delayed`.
    pub is_ack_delayed: bool,
}

impl From<&RateSample> for RateSampleFields {
    fn from(rs: &RateSample) -> Self {
        RateSampleFields {
            prior_mstamp_ns: rs.prior_mstamp_ns,
            prior_delivered: rs.prior_delivered,
            delivered: rs.delivered,
            interval_us: rs.interval_us,
            rtt_us: rs.rtt_us,
            losses: rs.losses,
            acked_sacked: rs.acked_sacked,
            prior_in_flight: rs.prior_in_flight,
            is_app_limited: rs.is_app_limited,
            is_retrans: rs.is_retrans,
            is_ack_delayed: rs.is_ack_delayed,
        }
    }
}

/// The shared log of a [`Recording`] (the module itself moves into the substrate).
pub type HookLog = Arc<Mutex<Vec<(u64, Hook)>>>;

/// Wraps `inner`, appending `(tp.now_ns, hook)` to `log` on every call.
pub struct Recording<C> {
    /// The module whose calls are logged.
    pub inner: C,
    /// The log, shared with the handle [`Recording::new`] returns.
    pub log: HookLog,
}

impl<C: CongestionControl> Recording<C> {
    /// Wrap `inner`; returns the recording and a handle to its log, to read after the module
    /// has moved into a substrate.
    pub fn new(inner: C) -> (Self, HookLog) {
        let log = HookLog::default();
        (
            Recording {
                inner,
                log: log.clone(),
            },
            log,
        )
    }

    fn push(&self, tp: &TcpSock, h: Hook) {
        self.log.lock().unwrap().push((tp.now_ns, h));
    }
}

impl<C: CongestionControl> CongestionControl for Recording<C> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn init(&mut self, tp: &mut TcpSock) {
        self.push(tp, Hook::Init);
        self.inner.init(tp)
    }
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        self.push(tp, Hook::Ssthresh { cwnd: tp.snd_cwnd });
        self.inner.ssthresh(tp)
    }
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        let cwnd = tp.snd_cwnd;
        self.push(tp, Hook::CongAvoid { ack, acked, cwnd });
        self.inner.cong_avoid(tp, ack, acked)
    }
    fn has_cong_control(&self) -> bool {
        self.inner.has_cong_control()
    }
    /// The recording itself defines the hook (it logs every call).
    fn has_pkts_acked(&self) -> bool {
        true
    }
    fn cong_control(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        let h = Hook::CongControl {
            rs: rs.into(),
            delivered: tp.delivered,
            delivered_mstamp_ns: tp.delivered_mstamp_ns,
            cwnd: tp.snd_cwnd,
        };
        self.push(tp, h);
        self.inner.cong_control(tp, rs)
    }
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        self.push(tp, Hook::SetState(new_state));
        self.inner.set_state(tp, new_state)
    }
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        self.push(tp, Hook::CwndEvent(event));
        self.inner.cwnd_event(tp, event)
    }
    fn pkts_acked(&mut self, tp: &mut TcpSock, sample: &AckSample) {
        let h = Hook::PktsAcked {
            pkts_acked: sample.pkts_acked,
            rtt_us: sample.rtt_us,
            in_flight: sample.in_flight,
        };
        self.push(tp, h);
        self.inner.pkts_acked(tp, sample)
    }
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        self.push(tp, Hook::UndoCwnd);
        self.inner.undo_cwnd(tp)
    }
    fn in_ack_event(&mut self, tp: &mut TcpSock, flags: u32) {
        let h = Hook::InAckEvent {
            flags,
            delivered: tp.delivered,
            delivered_ce: tp.delivered_ce,
        };
        self.push(tp, h);
        self.inner.in_ack_event(tp, flags)
    }
    /// The recording itself defines the hook (it logs every call).
    fn has_in_ack_event(&self) -> bool {
        true
    }
    fn needs_ecn(&self) -> bool {
        self.inner.needs_ecn()
    }
    fn wants_pacing(&self) -> bool {
        self.inner.wants_pacing()
    }
    fn min_tso_segs(&self, tp: &TcpSock) -> Option<u32> {
        self.inner.min_tso_segs(tp)
    }
    fn sndbuf_expand(&self) -> u32 {
        self.inner.sndbuf_expand()
    }
    fn state_name(&self, tp: &TcpSock) -> &'static str {
        self.inner.state_name(tp)
    }
    fn sample_metrics(&self, tp: &TcpSock, out: &mut Vec<(&'static str, f64)>) {
        self.inner.sample_metrics(tp, out)
    }
    fn summary_counters(&self, tp: &TcpSock, out: &mut Vec<(&'static str, f64)>) {
        self.inner.summary_counters(tp, out)
    }
}

/// A boxed module is a module: lets [`super::TestSender`] hold any registered algorithm.
impl CongestionControl for Box<dyn CongestionControl> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn init(&mut self, tp: &mut TcpSock) {
        (**self).init(tp)
    }
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        (**self).ssthresh(tp)
    }
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        (**self).cong_avoid(tp, ack, acked)
    }
    fn has_cong_control(&self) -> bool {
        (**self).has_cong_control()
    }
    fn has_pkts_acked(&self) -> bool {
        (**self).has_pkts_acked()
    }
    fn cong_control(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        (**self).cong_control(tp, rs)
    }
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        (**self).set_state(tp, new_state)
    }
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        (**self).cwnd_event(tp, event)
    }
    fn pkts_acked(&mut self, tp: &mut TcpSock, sample: &AckSample) {
        (**self).pkts_acked(tp, sample)
    }
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        (**self).undo_cwnd(tp)
    }
    fn in_ack_event(&mut self, tp: &mut TcpSock, flags: u32) {
        (**self).in_ack_event(tp, flags)
    }
    fn has_in_ack_event(&self) -> bool {
        (**self).has_in_ack_event()
    }
    fn needs_ecn(&self) -> bool {
        (**self).needs_ecn()
    }
    fn wants_pacing(&self) -> bool {
        (**self).wants_pacing()
    }
    fn min_tso_segs(&self, tp: &TcpSock) -> Option<u32> {
        (**self).min_tso_segs(tp)
    }
    fn sndbuf_expand(&self) -> u32 {
        (**self).sndbuf_expand()
    }
    fn state_name(&self, tp: &TcpSock) -> &'static str {
        (**self).state_name(tp)
    }
    fn sample_metrics(&self, tp: &TcpSock, out: &mut Vec<(&'static str, f64)>) {
        (**self).sample_metrics(tp, out)
    }
    fn summary_counters(&self, tp: &TcpSock, out: &mut Vec<(&'static str, f64)>) {
        (**self).summary_counters(tp, out)
    }
}
