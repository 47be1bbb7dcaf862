//! netem's queue semantics for a channel (`LinkSpec::queue = "netem"`).
//!
//! Emulated testbeds (Mininet's `TCLink`, CORE) often let one netem qdisc hold both the
//! delay and the queue: `tc qdisc add dev X root netem rate R delay D limit N` (CORE), or
//! `htb rate R` with a netem child `delay D limit N` (Mininet). netem keeps every packet it
//! holds in one time-ordered queue (`tfifo`) until its time to send, and refuses a packet
//! when that queue already holds `limit` packets (`netem_enqueue`: `q->t_len >=
//! sch->limit`, net/sched/sch_netem.c). The packets waiting out the delay count against
//! the limit as much as those waiting for the rate: at 50 Mbit/s and 100 ms one way, 417
//! of them are in the delay line, so a limit of alpha x BDP packets queues far less than
//! alpha x BDP.
//!
//! Timing does not change: with netem's rate, a packet leaves at max(its arrival + delay,
//! the previous packet's departure) plus its transmission time (`netem_enqueue`, `if
//! (q->rate)`), which with a constant delay is the channel's own serialise-then-propagate
//! time shifted by nothing. So a netem channel is the drop-tail channel with another limit
//! test: a packet is refused when the packets accepted and not yet at the far end (queued,
//! in service or propagating) number `buffer_pkts`. A packet whose time to send has come
//! has left (the channel's rule for simultaneous events, docs/model.md).
//!
//! netem's random `loss` drops a packet when it is offered, before it takes any time
//! (`netem_enqueue` tests `loss_event` first), where a drop-tail channel loses it on the
//! wire after its serialisation.

use crate::fifo::Fifo;

/// Packets a netem channel holds at `now`: those in `pipe` (accepted and not lost, ordered
/// by arrival time at the far end) whose arrival time is still to come.
pub fn held<P: Copy>(pipe: &Fifo<(u64, P)>, now: u64) -> usize {
    let arrived = pipe.iter().take_while(|&&(at, _)| at <= now).count();
    pipe.len() - arrived
}

/// Packets in the delay line of a link of `rate_bps` and one-way `delay_ns` when it sends
/// `packet_bytes` packets back to back: what a netem limit holds before any queue forms.
///
/// Example: 50 Mbit/s, 100 ms, 1500 B: 416.7 packets.
pub fn delay_line_pkts(rate_bps: u64, delay_ns: u64, packet_bytes: u32) -> f64 {
    rate_bps as f64 * delay_ns as f64 / 1e9 / (packet_bytes as f64 * 8.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{Channel, Enqueued};
    use crate::packet::{Ecn, Kind, Packet, TcpFlags, NO_SACK};
    use crate::spec::Queue;

    fn pkt() -> Packet {
        Packet {
            flow: 0,
            kind: Kind::Data,
            wire_bytes: 1500,
            seq: 0,
            payload_bytes: 1448,
            tsval: 0,
            tsecr: 0,
            n_sack: 0,
            ecn: Ecn::NotEct,
            tcp_flags: TcpFlags::NONE,
            window_bytes: 0,
            sack: NO_SACK,
        }
    }

    /// Offer 1500-byte packets every `interval_ns` for `duration_ns`; returns (offered,
    /// accepted), taking packets off the far end as they arrive.
    fn offer_cbr(ch: &mut Channel, interval_ns: u64, duration_ns: u64) -> (u64, u64) {
        let (mut offered, mut accepted) = (0, 0);
        let mut next_arrival: Option<u64> = None;
        let mut t = 0;
        while t < duration_ns {
            while let Some(at) = next_arrival.filter(|&at| at <= t) {
                let _ = at;
                next_arrival = ch.arrival().1;
            }
            offered += 1;
            if let Enqueued::Accepted(first) = ch.enqueue(t, pkt()) {
                accepted += 1;
                if first.is_some() {
                    next_arrival = first;
                }
            }
            t += interval_ns;
        }
        (offered, accepted)
    }

    /// Closed form: a netem limit N below the delay line of the offered load caps what gets
    /// through at N packets per (delay + transmission time), whatever the link's rate; a
    /// drop-tail buffer of the same N drops nothing at a load below the rate.
    #[test]
    fn a_limit_below_the_delay_line_caps_throughput_at_limit_over_delay() {
        let (rate, delay, limit) = (50_000_000, 100_000_000, 200u32);
        let interval = 300_000; // 40 Mbit/s of 1500-byte packets: 333 in 100 ms
        let duration = 20_000_000_000;
        let mut netem: Channel = Channel::new(rate, delay, limit, 0.0, 1);
        netem.queue = Queue::Netem;
        let (offered, accepted) = offer_cbr(&mut netem, interval, duration);
        let sojourn_s = (delay + netem.serialisation_ns(1500)) as f64 / 1e9;
        let expected = limit as f64 * duration as f64 / 1e9 / sojourn_s;
        assert_eq!(offered, 66_667);
        let err = (accepted as f64 - expected).abs() / expected;
        assert!(err < 0.01, "accepted {accepted}, closed form {expected:.0}");
        assert_eq!(netem.counters().drops_queue, offered - accepted);
        let mut droptail: Channel = Channel::new(rate, delay, limit, 0.0, 1);
        let (_, accepted) = offer_cbr(&mut droptail, interval, duration);
        assert_eq!(
            accepted, offered,
            "below the rate a drop-tail queue stays empty"
        );
    }

    /// Above the rate, a netem limit N holds the delay line plus a queue of N minus the
    /// delay line: the rate gets through and the queueing delay is (N - rate x delay) / rate.
    #[test]
    fn above_the_rate_the_queue_is_the_limit_less_the_delay_line() {
        let (rate, delay, limit) = (12_000_000, 10_000_000, 30u32); // 1 ms per packet, 10 in flight
        let mut ch: Channel = Channel::new(rate, delay, limit, 0.0, 1);
        ch.queue = Queue::Netem;
        let duration = 10_000_000_000;
        let (offered, accepted) = offer_cbr(&mut ch, 500_000, duration); // twice the rate
        assert_eq!(offered, 20_000);
        let delivered_expected = duration / 1_000_000; // the rate: one packet per ms
        assert!((accepted as i64 - delivered_expected as i64).abs() <= limit as i64);
        // In steady state the queue (before the serialiser) holds limit - 10 packets.
        ch.advance(duration);
        let queued = ch.occupancy_pkts() as i64;
        assert!((queued - (limit as i64 - 10)).abs() <= 1, "queue {queued}");
    }

    #[test]
    fn netem_loss_strikes_on_offer_and_takes_no_transmission_time() {
        let mut ch: Channel = Channel::new(12_000_000, 0, 1_000, 0.5, 7);
        ch.queue = Queue::Netem;
        let (offered, accepted) = offer_cbr(&mut ch, 1_000_000, 1_000_000_000);
        let c = ch.counters();
        assert_eq!(c.drops_random, offered - accepted);
        // Lost packets never reached the serialiser.
        ch.advance(2_000_000_000);
        assert_eq!(ch.counters().tx_pkts, accepted);
    }

    #[test]
    fn packets_whose_time_has_come_have_left() {
        let mut pipe: Fifo<(u64, ())> = Fifo::new();
        for at in [10, 20, 30] {
            pipe.push_back((at, ()));
        }
        assert_eq!(held(&pipe, 5), 3);
        assert_eq!(held(&pipe, 20), 1);
        assert_eq!(held(&pipe, 30), 0);
    }

    #[test]
    fn the_delay_line_of_the_issue_holds_417_packets() {
        assert!((delay_line_pkts(50_000_000, 100_000_000, 1500) - 416.67).abs() < 0.01);
    }
}
