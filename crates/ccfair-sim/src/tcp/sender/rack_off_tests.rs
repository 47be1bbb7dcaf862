//! Loss detection without RACK (`rack = false`, `net.ipv4.tcp_recovery = 0`): SACK flows
//! count SACKed segments against the duplicate threshold (`tcp_time_to_recover`,
//! `tcp_update_scoreboard`, `tcp_mark_head_lost` in net/ipv4/tcp_input.c before 6.17).

use super::*;
use ccfair_cc::reno::{Reno, RenoParams};

fn sender(rack: bool) -> Sender {
    let opts = TcpOptions {
        rack,
        ..TcpOptions::default()
    };
    Sender::new(0, &opts, Box::new(Reno::new(&RenoParams {})), None)
}

/// An ACK of `una` with SACK blocks, echoing a timestamp one RTT (40 ms) before `now_ns`.
fn sack_ack(una: u64, sacks: &[(u64, u64)], now_ns: u64) -> Packet {
    super::tests::ack(una, sacks, ticks(now_ns.saturating_sub(40_000_000)))
}

/// Segment 0 of the initial window is lost and 1, 2, 3 are SACKed one ACK after another.
/// Without RACK the first two SACKs leave the flow in Disorder with nothing lost and no
/// reordering timer; the third (`sacked_out + 1 > reordering`) starts Recovery and marks
/// the hole lost, which is retransmitted at once. With RACK the first SACK already arms
/// the reordering timer (RACK's window is min_rtt/4 while fewer than `reordering`
/// segments are SACKed).
#[test]
fn without_rack_the_third_sacked_segment_marks_the_hole_lost() {
    let mut s = sender(false);
    let mut out = Vec::new();
    s.start_without_handshake(0, &mut out);
    assert_eq!(s.tp.snd_nxt, 10);
    let mut now = 40_000_000;
    for n in 1..=3u64 {
        out.clear();
        s.on_ack(now, &sack_ack(0, &[(1, 1 + n)], now), &mut out);
        assert_eq!(s.tp.sacked_out, n as u32);
        if n < 3 {
            assert_eq!(s.tp.ca_state, CaState::Disorder, "SACK {n}");
            assert_eq!(s.tp.lost_out, 0, "SACK {n}: not yet lost");
            assert_ne!(s.pending(), Some(XmitTimer::ReoTimeout), "no RACK timer");
        }
        now += 10_000;
    }
    assert_eq!(s.tp.ca_state, CaState::Recovery);
    assert_eq!(s.stats.recoveries, 1);
    assert!(s.seg(0).flags & LOST != 0);
    assert_eq!(s.tp.lost_out, 1, "only the hole below the SACKed segments");
    assert_eq!(out.first().map(|p| p.seq), Some(0), "fast retransmit");

    let mut s = sender(true);
    out.clear();
    s.start_without_handshake(0, &mut out);
    s.on_ack(40_000_000, &sack_ack(0, &[(1, 2)], 40_000_000), &mut out);
    assert_eq!(s.tp.lost_out, 0);
    assert_eq!(
        s.pending(),
        Some(XmitTimer::ReoTimeout),
        "RACK waits min_rtt/4"
    );
}

/// RFC 6675's IsLost as `tcp_mark_head_lost` counts it: with holes at 0 and 2 and
/// 1, 3, 4, 5 SACKed (sacked_out 4, reordering 3), every hole with at least three SACKed
/// segments above it is lost: 0 and 2, nothing above.
#[test]
fn without_rack_every_hole_below_reordering_sacked_segments_is_lost() {
    let mut s = sender(false);
    let mut out = Vec::new();
    s.start_without_handshake(0, &mut out);
    let now = 40_000_000;
    out.clear();
    s.on_ack(now, &sack_ack(0, &[(1, 2), (3, 6)], now), &mut out);
    assert_eq!(s.tp.sacked_out, 4);
    assert_eq!(s.tp.ca_state, CaState::Recovery);
    let lost: Vec<u64> = (0..10).filter(|&q| s.seg(q).flags & LOST != 0).collect();
    assert_eq!(lost, vec![0, 2]);
    assert_eq!(s.tp.lost_out, 2);
}

/// A larger reordering degree raises the duplicate threshold: with `reordering` 6 (after
/// reordering was seen), three SACKed segments are not enough, six are. RACK, having seen
/// reordering, would still wait min_rtt/4 at six.
#[test]
fn without_rack_the_threshold_follows_reordering() {
    let mut s = sender(false);
    let mut out = Vec::new();
    s.start_without_handshake(0, &mut out);
    s.reordering = 6;
    s.reord_seen = 1;
    let now = 40_000_000;
    s.on_ack(now, &sack_ack(0, &[(1, 4)], now), &mut out);
    assert_eq!(s.tp.ca_state, CaState::Disorder);
    assert_eq!(s.tp.lost_out, 0);
    out.clear();
    s.on_ack(now + 10_000, &sack_ack(0, &[(1, 7)], now), &mut out);
    assert_eq!(s.tp.ca_state, CaState::Recovery);
    assert_eq!(s.tp.lost_out, 1);
    assert_eq!(out.first().map(|p| p.seq), Some(0));
}

/// Two SACKed segments above a tail hole: RACK's timer marks the hole lost and recovers;
/// without RACK nothing is lost and the flow waits in Disorder for the retransmission timer
/// (no loss probe outside Open and CWR, `tcp_schedule_loss_probe`).
#[test]
fn without_rack_a_hole_with_two_sacks_above_waits_for_the_rto() {
    for rack in [true, false] {
        let mut s = sender(rack);
        let mut out = Vec::new();
        s.start_without_handshake(0, &mut out);
        s.stop_app();
        let now = 40_000_000;
        s.on_ack(now, &sack_ack(7, &[(8, 10)], now), &mut out);
        let t = s.xmit_timer_deadline().unwrap();
        out.clear();
        s.on_xmit_timer(t, &mut out);
        if rack {
            assert!(t < now + 40_000_000, "reordering timer within an RTT");
            assert_eq!(s.tp.ca_state, CaState::Recovery);
            assert_eq!(s.stats.rto_count, 0);
        } else {
            assert!(t >= now + 200_000_000, "retransmission timer");
            assert_eq!(s.tp.ca_state, CaState::Loss);
            assert_eq!(s.stats.rto_count, 1);
        }
        assert_eq!(out.first().map(|p| p.seq), Some(7));
    }
}
