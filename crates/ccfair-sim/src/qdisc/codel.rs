//! CoDel: its control law and dequeue decision (include/net/codel.h,
//! include/net/codel_impl.h), which `codel` and `fq_codel` share, and the `codel` queue
//! discipline (net/sched/sch_codel.c): one FIFO, a packet limit, drops at dequeue.
//!
//! CoDel keeps time in units of 1024 ns in a wrapping u32 compared by signed difference
//! (`codel_time_t`, `codel_get_time`: ns >> 10), and the reciprocal of sqrt(count) as a
//! 16-bit fraction refined by one Newton step per change of count (`codel_Newton_step`),
//! so its next drop comes `interval / sqrt(count)` after the last one
//! (`codel_control_law`). Both are reproduced here with Linux's integer arithmetic.

use super::{params::CodelParams, DropCause, MarkCause, PacketFifo, Queued, Sink};
use crate::link::OnWire;

/// CoDel's clock: ns >> 10 (`CODEL_SHIFT`).
pub const CODEL_SHIFT: u32 = 10;
/// `ce_threshold` off (`CODEL_DISABLED_THRESHOLD` = INT_MAX).
pub const DISABLED_THRESHOLD: u32 = i32::MAX as u32;
/// `rec_inv_sqrt` is a u16 fraction; shifted by 16 it is a Q0.32 number.
const REC_INV_SQRT_SHIFT: u32 = 16;

/// CoDel time of an engine time (`codel_get_time`).
#[inline]
pub fn codel_time(ns: u64) -> u32 {
    (ns >> CODEL_SHIFT) as u32
}

/// `codel_time_after(a, b)`: a is after b, modulo 2^32.
#[inline]
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

#[inline]
fn after_eq(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

#[inline]
fn before(a: u32, b: u32) -> bool {
    after(b, a)
}

/// CoDel's parameters in its own units (`struct codel_params`).
#[derive(Clone, Copy, Debug)]
pub struct CodelConsts {
    /// Target sojourn time, CoDel time units (1024 ns).
    pub target: u32,
    /// Interval over which the sojourn must stay above target before dropping, CoDel time
    /// units.
    pub interval: u32,
    /// Sojourn above which ECN-capable packets are marked CE regardless of the control law,
    /// CoDel time units ([`DISABLED_THRESHOLD`]: off).
    pub ce_threshold: u32,
    /// Bytes of backlog at or below which CoDel does not drop.
    pub mtu: u32,
    /// Mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
}

impl CodelConsts {
    /// From engine units, as sch_codel.c converts tc's microseconds: `ns >> CODEL_SHIFT`.
    pub fn new(
        target_ns: u64,
        interval_ns: u64,
        ce_threshold_ns: Option<u64>,
        mtu_bytes: u32,
        ecn: bool,
    ) -> Self {
        CodelConsts {
            target: codel_time(target_ns),
            interval: codel_time(interval_ns),
            ce_threshold: ce_threshold_ns.map_or(DISABLED_THRESHOLD, codel_time),
            mtu: mtu_bytes,
            ecn,
        }
    }
}

/// A CoDel instance's state (`struct codel_vars`; zero at start, `codel_vars_init`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelVars {
    /// Drops (and marks) since entering the dropping state.
    pub count: u32,
    /// `count` when the dropping state was last entered.
    pub lastcount: u32,
    /// In the dropping state: drops follow the control law until the sojourn falls below
    /// target.
    pub dropping: bool,
    /// 1 / sqrt(count) as a fraction of 2^16.
    pub rec_inv_sqrt: u16,
    /// When the sojourn will have been above target for an interval (0: not above).
    pub first_above_time: u32,
    /// When to drop next (or when the last drop was).
    pub drop_next: u32,
    /// Sojourn of the last packet dequeued.
    pub ldelay: u32,
}

/// Statistics CoDel keeps (`struct codel_stats`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CodelStats {
    /// Largest packet seen, bytes.
    pub maxpacket: u32,
    /// Packets the control law dropped (`drop_count`; marks are not counted).
    pub drop_count: u32,
}

/// One Newton iteration for 1 / sqrt(count) (`codel_Newton_step`):
/// new = (invsqrt / 2) x (3 - count x invsqrt^2), in Q0.32.
pub fn newton_step(vars: &mut CodelVars) {
    let invsqrt = (vars.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
    let invsqrt2 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
    let mut val = (3u64 << 32).wrapping_sub(vars.count as u64 * invsqrt2 as u64);
    val >>= 2; // avoids overflow in the product below
    val = val.wrapping_mul(invsqrt as u64) >> (32 - 2 + 1);
    vars.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
}

/// `t + interval / sqrt(count)` with the stored reciprocal (`codel_control_law`, via
/// `reciprocal_scale`).
pub fn control_law(t: u32, interval: u32, rec_inv_sqrt: u16) -> u32 {
    let scale = (rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
    t.wrapping_add(((interval as u64 * scale as u64) >> 32) as u32)
}

/// Where CoDel takes packets from: a qdisc's FIFO or one of fq_codel's flow queues
/// (`dequeue_func`; taking a packet lowers the qdisc's backlog, which CoDel reads).
pub trait CodelQueue<P> {
    /// Take the head packet (`dequeue_func`).
    fn take(&mut self) -> Option<Queued<P>>;
    /// The whole qdisc's backlog in bytes after the take (`sch->qstats.backlog`; for
    /// fq_codel the sum over all its flows, as Linux passes it).
    fn backlog(&self) -> u64;
}

/// `codel_should_drop`: whether the packet just taken has waited above target for an
/// interval (updating the state).
fn should_drop<P: OnWire>(
    item: Option<&Queued<P>>,
    vars: &mut CodelVars,
    c: &CodelConsts,
    stats: &mut CodelStats,
    backlog: u64,
    now: u32,
) -> bool {
    let Some(item) = item else {
        vars.first_above_time = 0;
        return false;
    };
    let len = item.pkt.wire_bytes();
    vars.ldelay = now.wrapping_sub(codel_time(item.enqueue_ns));
    stats.maxpacket = stats.maxpacket.max(len);
    if before(vars.ldelay, c.target) || backlog <= c.mtu as u64 {
        // Went below: stay below for at least an interval.
        vars.first_above_time = 0;
        return false;
    }
    if vars.first_above_time == 0 {
        // Just went above: if it stays above for an interval, dropping is allowed.
        vars.first_above_time = now.wrapping_add(c.interval);
        false
    } else {
        after(now, vars.first_above_time)
    }
}

/// CoDel's dequeue at `now_ns` (`codel_dequeue`): the packet to send, after dropping (or
/// marking) what the control law asks for. Drops go to `sink` as AQM drops.
pub fn dequeue<P: OnWire, Q: CodelQueue<P>>(
    queue: &mut Q,
    now_ns: u64,
    c: &CodelConsts,
    vars: &mut CodelVars,
    stats: &mut CodelStats,
    sink: &mut Sink<P>,
) -> Option<Queued<P>> {
    let mut item = queue.take();
    if item.is_none() {
        vars.dropping = false;
        return None;
    }
    let now = codel_time(now_ns);
    let drop = should_drop(item.as_ref(), vars, c, stats, queue.backlog(), now);
    'end: {
        if vars.dropping {
            if !drop {
                // Sojourn below target: leave the dropping state.
                vars.dropping = false;
            } else if after_eq(now, vars.drop_next) {
                // Time for the next drop; a large backlog may ask for several at once.
                while vars.dropping && after_eq(now, vars.drop_next) {
                    vars.count = vars.count.wrapping_add(1);
                    newton_step(vars);
                    let head = item.as_mut().expect("a packet while dropping");
                    if c.ecn && head.set_ce() {
                        sink.mark(now_ns, head.pkt, MarkCause::Aqm);
                        vars.drop_next = control_law(vars.drop_next, c.interval, vars.rec_inv_sqrt);
                        break 'end;
                    }
                    sink.drop(now_ns, head.pkt, DropCause::Aqm);
                    stats.drop_count += 1;
                    item = queue.take();
                    if !should_drop(item.as_ref(), vars, c, stats, queue.backlog(), now) {
                        vars.dropping = false;
                    } else {
                        vars.drop_next = control_law(vars.drop_next, c.interval, vars.rec_inv_sqrt);
                    }
                }
            }
        } else if drop {
            let head = item.as_mut().expect("a packet to drop");
            if c.ecn && head.set_ce() {
                sink.mark(now_ns, head.pkt, MarkCause::Aqm);
            } else {
                sink.drop(now_ns, head.pkt, DropCause::Aqm);
                stats.drop_count += 1;
                item = queue.take();
                should_drop(item.as_ref(), vars, c, stats, queue.backlog(), now);
            }
            vars.dropping = true;
            // If the sojourn went above target soon after the last dropping state ended,
            // start from the drop rate that controlled the queue then.
            let delta = vars.count.wrapping_sub(vars.lastcount);
            if delta > 1
                && before(
                    now.wrapping_sub(vars.drop_next),
                    c.interval.wrapping_mul(16),
                )
            {
                vars.count = delta;
                newton_step(vars);
            } else {
                vars.count = 1;
                vars.rec_inv_sqrt = (u32::MAX >> REC_INV_SQRT_SHIFT) as u16;
            }
            vars.lastcount = vars.count;
            vars.drop_next = control_law(now, c.interval, vars.rec_inv_sqrt);
        }
    }
    if let Some(head) = item.as_mut() {
        if after(vars.ldelay, c.ce_threshold) && head.set_ce() {
            sink.mark(now_ns, head.pkt, MarkCause::CeThreshold);
        }
    }
    item
}

/// The `codel` queue discipline (net/sched/sch_codel.c): a FIFO of at most `limit`
/// packets, CoDel at its head.
pub struct Codel<P> {
    /// The packets waiting: `Qdisc` reads their count, bytes and storage from it.
    pub(super) queue: PacketFifo<P>,
    limit: u32,
    consts: CodelConsts,
    vars: CodelVars,
    stats: CodelStats,
}

impl<P> CodelQueue<P> for PacketFifo<P>
where
    P: OnWire,
{
    fn take(&mut self) -> Option<Queued<P>> {
        self.pop()
    }

    fn backlog(&self) -> u64 {
        self.bytes()
    }
}

impl<P: OnWire> Codel<P> {
    /// `codel_init` with `p`'s parameters and a limit of `limit_pkts` packets waiting.
    pub fn new(p: &CodelParams, limit_pkts: u32) -> Self {
        Codel {
            queue: PacketFifo::new(),
            limit: limit_pkts,
            consts: CodelConsts::new(
                p.target_ns,
                p.interval_ns,
                p.ce_threshold_ns,
                p.mtu_bytes,
                p.ecn,
            ),
            vars: CodelVars::default(),
            stats: CodelStats::default(),
        }
    }

    /// `codel_qdisc_enqueue`: below the limit the packet is queued with its time, else
    /// dropped (`drop_overlimit`).
    pub fn enqueue(&mut self, item: Queued<P>, sink: &mut Sink<P>) {
        if self.queue.len() < self.limit as usize {
            self.queue.push(item);
            sink.enqueued(item.enqueue_ns, item.pkt);
        } else {
            sink.drop(item.enqueue_ns, item.pkt, DropCause::Overlimit);
        }
    }

    /// `codel_qdisc_dequeue`.
    pub fn dequeue(&mut self, now_ns: u64, sink: &mut Sink<P>) -> Option<Queued<P>> {
        let Codel {
            queue,
            consts,
            vars,
            stats,
            ..
        } = self;
        dequeue(queue, now_ns, consts, vars, stats, sink)
    }

    /// The CoDel state (tests).
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: u64, p: Packet) -> Queued<Packet> {
        Queued {
            pkt: p,
            enqueue_ns: t,
            ecn: p.ecn,
        }
    }
    use crate::packet::{Ecn, Kind, Packet, TcpFlags, NO_SACK};
    use crate::qdisc::{DropCause, Fate};

    fn pkt(bytes: u32, ecn: Ecn) -> Packet {
        Packet {
            flow: 0,
            kind: Kind::Data,
            wire_bytes: bytes,
            seq: 0,
            payload_bytes: 0,
            tsval: 0,
            tsecr: 0,
            n_sack: 0,
            ecn,
            tcp_flags: TcpFlags::NONE,
            window_bytes: 0,
            sack: NO_SACK,
        }
    }

    /// The reciprocal square root CoDel keeps: Newton steps from count 1 converge to
    /// 1 / sqrt(count) (one step per increment, as Linux runs them), within 0.1% once count
    /// is past a few dozen (the 16-bit fraction's resolution); and the first steps have the values Linux's integer arithmetic
    /// gives (worked by hand from codel_Newton_step: 0xffff at count 1, 0x8000 - 2 at 2).
    #[test]
    fn newton_steps_track_the_reciprocal_square_root() {
        let mut v = CodelVars {
            count: 1,
            rec_inv_sqrt: 0xffff,
            ..CodelVars::default()
        };
        v.count = 2;
        newton_step(&mut v);
        // (0xffff0000 / 2) x (3 - 2 x 0xfffe0001 / 2^32) / 2^16, truncated at each step.
        let invsqrt = 0xffff_0000u64;
        let invsqrt2 = (invsqrt * invsqrt) >> 32;
        let expected = (((((3u64 << 32) - 2 * invsqrt2) >> 2) * invsqrt) >> 31) >> 16;
        assert_eq!(v.rec_inv_sqrt as u64, expected);
        assert!(
            (0x7ffd..=0x8002).contains(&v.rec_inv_sqrt),
            "{:#x}",
            v.rec_inv_sqrt
        );
        for count in 3..=2000u32 {
            v.count = count;
            newton_step(&mut v);
            let exact = 1.0 / (count as f64).sqrt();
            let got = v.rec_inv_sqrt as f64 / 65536.0;
            if count >= 40 {
                assert!(
                    (got - exact).abs() / exact < 2e-3,
                    "count {count}: {got} vs {exact}"
                );
            }
        }
    }

    /// The control law: the next drop `interval / sqrt(count)` after the last, through
    /// the 16-bit reciprocal (at count 1: 97656 x 0xffff / 2^16 = 97654 units).
    #[test]
    fn control_law_is_interval_over_sqrt_count() {
        let interval = codel_time(100_000_000);
        assert_eq!(interval, 97_656);
        assert_eq!(control_law(1000, interval, 0xffff), 1000 + 97_654);
        assert_eq!(control_law(u32::MAX - 10, interval, 0xffff), 97_654 - 11);
        for count in [4u32, 16, 100, 400] {
            let rec = (65536.0 / (count as f64).sqrt()) as u16;
            let step = control_law(0, interval, rec) as f64;
            let exact = interval as f64 / (count as f64).sqrt();
            assert!(
                (step - exact).abs() <= 2.0,
                "count {count}: {step} vs {exact}"
            );
        }
    }

    /// A queue that never drains below target: CoDel drops once the sojourn has stayed
    /// above target for an interval, then at the control law's times, the k-th gap being
    /// interval / sqrt(k) (within 2% once the reciprocal has converged, and never below
    /// it by more: Newton's iterates approach from below). Packets arrive at twice the
    /// service rate so the queue stays long; every drop is reported at its time.
    #[test]
    fn drops_follow_the_control_law() {
        let mut q: Codel<Packet> = Codel::new(&CodelParams::default(), 1_000_000);
        let mut sink = Sink::default();
        let service_ns = 120_000; // 1500 B at 100 Mbit/s
        let mut drops = Vec::new();
        let mut t_in = 0u64;
        let mut t_out = 0u64;
        while t_out < 20_000_000_000 {
            while t_in <= t_out {
                q.enqueue(at(t_in, pkt(1500, Ecn::NotEct)), &mut sink);
                t_in += service_ns / 2;
            }
            let got = q.dequeue(t_out, &mut sink);
            assert!(got.is_some());
            while let Some((t, _, fate)) = sink.take() {
                assert_eq!(fate, Fate::Dropped(DropCause::Aqm));
                drops.push(t);
            }
            t_out += service_ns;
        }
        // The packet dequeued at t waited t / 2: above the 5 ms target from t = 10 ms; the
        // first drop at the first dequeue an interval after that.
        let first = drops[0];
        assert!(
            (110_000_000..110_000_000 + 2 * service_ns).contains(&first),
            "first drop at {first}"
        );
        // Gaps: from drop k to drop k + 1 the control law at count k (interval x
        // rec_inv_sqrt), to within a service time (drops happen at dequeues).
        assert!(drops.len() > 500, "{} drops", drops.len());
        for k in 1..drops.len() {
            let gap = (drops[k] - drops[k - 1]) as f64;
            let count = k as f64;
            let law = 97_656.0 * 1024.0 / count.sqrt();
            if k > 50 {
                assert!(
                    (gap - law).abs() < 0.02 * law + service_ns as f64,
                    "gap {k}: {gap} vs {law}"
                );
            }
        }
        assert_eq!(q.vars().count as usize, drops.len());
    }

    /// After leaving the dropping state, re-entering it within 16 intervals restarts from
    /// count - lastcount (codel_dequeue), not from 1.
    #[test]
    fn reentering_soon_reuses_the_previous_drop_rate() {
        let mut q: Codel<Packet> = Codel::new(&CodelParams::default(), 1_000_000);
        let mut sink = Sink::default();
        let service_ns = 120_000;
        let mut t = 0u64;
        let mut t_in = 0u64;
        // Overload for 3 s: CoDel drops a few hundred times.
        while t < 3_000_000_000 {
            while t_in <= t {
                q.enqueue(at(t_in, pkt(1500, Ecn::NotEct)), &mut sink);
                t_in += service_ns / 2;
            }
            q.dequeue(t, &mut sink);
            t += service_ns;
        }
        assert!(q.vars().dropping);
        // Drain: no arrivals until the queue is empty (which ends the dropping state).
        while q.dequeue(t, &mut sink).is_some() {
            t += service_ns;
        }
        assert!(!q.vars().dropping);
        let count_before = q.vars().count;
        let lastcount_before = q.vars().lastcount;
        assert!(count_before > lastcount_before + 1);
        // Overload again, soon (well within 16 intervals).
        let restart = t + 50_000_000;
        t_in = restart;
        t = restart;
        while !q.vars().dropping {
            while t_in <= t {
                q.enqueue(at(t_in, pkt(1500, Ecn::NotEct)), &mut sink);
                t_in += service_ns / 2;
            }
            q.dequeue(t, &mut sink);
            t += service_ns;
        }
        assert_eq!(q.vars().count, count_before - lastcount_before);
        assert_eq!(q.vars().lastcount, q.vars().count);
    }

    /// With ECN on, an ECN-capable packet CoDel would drop is marked CE and sent; a
    /// Not-ECT one is dropped. The over-limit drop at enqueue is always a drop.
    #[test]
    fn ecn_marks_capable_packets_instead_of_dropping() {
        let params = CodelParams {
            ecn: true,
            ..CodelParams::default()
        };
        let mut q: Codel<Packet> = Codel::new(&params, 3_000);
        let mut sink = Sink::default();
        let service_ns = 120_000;
        let (mut t, mut t_in) = (0u64, 0u64);
        let mut marked = 0;
        let mut n = 0u64;
        while t < 3_000_000_000 {
            while t_in <= t {
                let ecn = if n.is_multiple_of(2) {
                    Ecn::Ect0
                } else {
                    Ecn::NotEct
                };
                q.enqueue(at(t_in, pkt(1500, ecn)), &mut sink);
                t_in += service_ns / 2;
                n += 1;
            }
            if let Some(item) = q.dequeue(t, &mut sink) {
                if item.pkt.ecn == Ecn::Ce {
                    marked += 1;
                }
            }
            t += service_ns;
        }
        let counts = sink.counts;
        assert!(
            marked > 10 && counts.marks_aqm == marked,
            "{counts:?} {marked}"
        );
        assert!(counts.drops_aqm > 10, "{counts:?}");
        assert!(counts.drops_overlimit > 0, "{counts:?}");
        // Every AQM drop was of a Not-ECT packet.
        let mut drained = 0;
        while let Some((_, p, fate)) = sink.take() {
            if fate == Fate::Dropped(DropCause::Aqm) {
                assert_eq!(p.ecn, Ecn::NotEct);
                drained += 1;
            }
        }
        assert_eq!(drained, counts.drops_aqm);
    }

    /// ce_threshold marks every ECN-capable packet whose sojourn exceeds it, with ECN off
    /// and without dropping: at 2 ms, packets that waited 1, 1.9 ms pass, 2.1 and 4 ms are
    /// marked (CoDel's clock has 1.024 us ticks).
    #[test]
    fn ce_threshold_marks_by_sojourn() {
        let params = CodelParams {
            ce_threshold_ns: Some(2_000_000),
            ..CodelParams::default()
        };
        let mut q: Codel<Packet> = Codel::new(&params, 1000);
        let mut sink = Sink::default();
        for (k, wait_us) in [1000u64, 2100, 1900, 4000].iter().enumerate() {
            let t0 = k as u64 * 10_000_000;
            q.enqueue(at(t0, pkt(1500, Ecn::Ect1)), &mut sink);
            let item = q.dequeue(t0 + wait_us * 1_000, &mut sink).unwrap();
            let expect = if *wait_us > 2000 { Ecn::Ce } else { Ecn::Ect1 };
            assert_eq!(item.pkt.ecn, expect, "waited {wait_us} us");
        }
        assert_eq!(sink.counts.marks_ce_threshold, 2);
        assert_eq!(sink.counts.drops_aqm, 0);
    }
}
