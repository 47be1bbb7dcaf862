//! The undo rules of a kernel generation (`undo_rules`): `tcp_init_undo`,
//! `tcp_packet_delayed` and `tcp_enter_recovery`'s `tcp_retrans_stamp_cleanup` in
//! net/ipv4/tcp_input.c of Linux 6.18 against 4.13/4.15.

use super::*;
use crate::spec::UndoRules;
use ccfair_cc::reno::{Reno, RenoParams};

/// A Reno sender whose whole initial window (segments 0..10) left at t = 0 and whose
/// application has nothing more to send.
fn sender(rules: UndoRules, sack: bool) -> Sender {
    let opts = TcpOptions {
        undo_rules: rules,
        sack,
        ..TcpOptions::default()
    };
    let mut s = Sender::new(0, &opts, Box::new(Reno::new(&RenoParams {})), None);
    let mut out = Vec::new();
    s.start_without_handshake(0, &mut out);
    s.stop_app();
    assert_eq!(s.tp.snd_nxt, 10);
    s
}

/// An ACK at `now_ns` echoing a timestamp one RTT (40 ms) earlier.
fn ack_at(una: u64, sacks: &[(u64, u64)], now_ns: u64) -> Packet {
    super::tests::ack(una, sacks, ticks(now_ns - 40_000_000))
}

/// A loss probe retransmitted the last segment and nothing else is retransmitted
/// (`retrans_out` 0) when Recovery starts. 6.18 counts the probe: `undo_retrans` 1, so an
/// ACK without a D-SACK undoes nothing (the probe's D-SACK is still to come). 4.x knows no
/// probe term: -1, which no D-SACK can bring to 0 either.
#[test]
fn a_loss_probe_in_flight_counts_in_undo_retrans_on_6_18_only() {
    for (rules, undo_retrans) in [(UndoRules::Linux618, 1), (UndoRules::Linux4x, -1)] {
        let mut s = sender(rules, true);
        let mut out = Vec::new();
        let probe_at = s.xmit_timer_deadline().unwrap();
        s.on_xmit_timer(probe_at, &mut out);
        assert_eq!(out.first().map(|p| p.seq), Some(9), "the probe");
        assert!(s.tlp_high_seq.is_some() && s.tlp_retrans);
        assert_eq!(s.tp.retrans_out, 0);
        s.enter_recovery(false);
        assert_eq!(s.undo_retrans, undo_retrans, "{rules:?}");
        // An ACK that SACKs segment 1, no D-SACK: no undo.
        let now = probe_at + 1_000_000;
        out.clear();
        s.on_ack(now, &ack_at(0, &[(1, 2)], now), &mut out);
        assert_eq!(s.stats.undo_count, 0, "{rules:?}");
        assert_eq!(s.tp.ca_state, CaState::Recovery, "{rules:?}");
    }
}

/// Recovery began but its retransmission has not left yet (as when TSQ holds it back:
/// no retransmission stamp). A partial ACK then proves the data was merely delayed, and
/// both generations undo (`tcp_try_undo_partial` -> `tcp_packet_delayed` true).
#[test]
fn a_partial_ack_before_any_retransmission_undoes() {
    for rules in [UndoRules::Linux618, UndoRules::Linux4x] {
        let mut s = sender(rules, true);
        s.enter_recovery(false);
        assert_eq!(s.retrans_stamp_ticks, 0);
        assert!(s.packet_delayed(), "{rules:?}");
        let now = 40_000_000;
        let mut out = Vec::new();
        s.on_ack(now, &ack_at(2, &[], now), &mut out);
        assert!(s.tp.snd_una < s.high_seq, "a partial ACK");
        assert_eq!(s.stats.undo_count, 1, "{rules:?}");
        assert_ne!(s.tp.ca_state, CaState::Recovery, "{rules:?}");
    }
}

/// Without SACK, at `snd_una == high_seq` with no stamp, 6.18 does not take the missing
/// stamp as proof of a delay (`tcp_is_non_sack_preventing_reopen` clears the stamp there
/// although it retransmitted): no undo. 4.x does undo.
#[test]
fn without_sack_at_high_seq_6_18_does_not_undo_on_a_missing_stamp() {
    for (rules, undos) in [(UndoRules::Linux618, 0), (UndoRules::Linux4x, 1)] {
        let mut s = sender(rules, false);
        s.enter_recovery(false);
        let high_seq = s.high_seq;
        let now = 40_000_000;
        let mut out = Vec::new();
        s.on_ack(now, &ack_at(high_seq, &[], now), &mut out);
        assert_eq!(s.tp.snd_una, high_seq);
        assert_eq!(s.stats.undo_count, undos, "{rules:?}");
    }
}

/// A retransmission stamp left from an earlier episode, nothing retransmitted now: 6.18
/// clears it when Recovery starts (`tcp_retrans_stamp_cleanup`), so a partial ACK that
/// echoes a timestamp after the stale stamp still undoes; 4.x keeps the stamp, and the
/// same ACK does not prove a delay.
#[test]
fn a_stale_stamp_is_cleared_at_recovery_entry_on_6_18_only() {
    for (rules, cleared) in [(UndoRules::Linux618, true), (UndoRules::Linux4x, false)] {
        let mut s = sender(rules, true);
        let stale = ticks(1_000_000);
        s.retrans_stamp_ticks = stale;
        s.tp.ca_state = CaState::Disorder;
        assert!(!s.any_retrans_done());
        s.enter_recovery(false);
        let stamp = if cleared { 0 } else { stale };
        assert_eq!(s.retrans_stamp_ticks, stamp, "{rules:?}");
        let now = 80_000_000;
        let mut out = Vec::new();
        s.on_ack(now, &ack_at(2, &[], now), &mut out);
        assert_eq!(s.stats.undo_count, u64::from(cleared), "{rules:?}");
    }
}
