//! The receiver's ACKs with the 4.x options: no SACK compression (`sack_compression =
//! false`), quick-ACK mode on out-of-order data (`ofo_quickack`), and the quick-ACK count
//! of the 4.x initial window (`rcv_window = "linux-4.x"`).

use super::tests::{data, past_quickacks, rx_with as rx};
use super::*;

/// 4.x `__tcp_ack_snd_check`: with out-of-order data queued, every segment is ACKed at
/// once, each ACK with its SACK blocks (6.18: three, then compressed).
#[test]
fn without_sack_compression_every_out_of_order_segment_is_acked() {
    for (compression, acks) in [(true, 4), (false, 10)] {
        let mut r = rx(TcpOptions {
            sack_compression: compression,
            ..TcpOptions::default()
        });
        let mut out = Vec::new();
        let next = past_quickacks(&mut r, &mut out);
        for s in next + 1..next + 11 {
            r.on_data(1_000, &data(s), |_| 1448, &mut out);
        }
        assert_eq!(out.len(), acks, "compression {compression}");
        assert_eq!(r.comp_sack_at.is_some(), compression);
        let last = out.last().unwrap();
        assert_eq!(last.seq, next);
        if !compression {
            assert_eq!(
                last.sack_blocks()[0],
                SackBlock {
                    start: next + 1,
                    end: next + 11
                }
            );
        }
    }
}

/// 4.x `tcp_data_queue`: an out-of-order segment enters quick-ACK mode (16 quick ACKs at
/// this window, re-armed by each), so after the hole is filled the next segments are ACKed
/// one by one; 4.18+
/// ACKs every second one (the gap-filling segment itself at once, `ICSK_ACK_NOW`).
#[test]
fn out_of_order_data_enters_quickack_mode_in_4x() {
    let acks_after_fill = |ofo_quickack: bool| {
        let mut r = rx(TcpOptions {
            ofo_quickack,
            sack_compression: !ofo_quickack,
            ..TcpOptions::default()
        });
        let mut out = Vec::new();
        let next = past_quickacks(&mut r, &mut out);
        // `next` lost, three more arrive.
        for s in next + 1..next + 4 {
            r.on_data(1_000, &data(s), |_| 1448, &mut out);
        }
        assert_eq!(out.len(), 3, "each out-of-order segment ACKed");
        // Each out-of-order segment re-arms the 16 (tcp_incr_quickack takes the larger).
        assert_eq!(r.quick, if ofo_quickack { 15 } else { 0 });
        out.clear();
        // The retransmission fills the hole: ACKed at once either way.
        r.on_data(2_000, &data(next), |_| 1448, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, next + 4);
        out.clear();
        for s in next + 4..next + 24 {
            r.on_data(3_000 + s * 100_000, &data(s), |_| 1448, &mut out);
        }
        out.len()
    };
    // 14 quick ACKs left, then one per two of the remaining 6.
    assert_eq!(acks_after_fill(true), 14 + 3);
    assert_eq!(acks_after_fill(false), 10);
}

/// `tcp_incr_quickack` on the first segment: half the offered window in segments, at most
/// 16 (`TCP_MAX_QUICKACKS`): 10 with the 4.x 20-segment SYN-ACK window, 16 with 6.18's.
#[test]
fn quickack_count_follows_the_initial_window() {
    for (rcv_window, quick) in [(RcvWindow::Linux618, 16), (RcvWindow::Linux4x, 10)] {
        let mut r = rx(TcpOptions {
            rcv_window,
            handshake: false,
            ..TcpOptions::default()
        });
        let mut out = Vec::new();
        r.on_data(0, &data(0), |_| 1448, &mut out);
        // One quick ACK used, and the window's growth (`quick |= 1`) kept the count odd
        // before it.
        assert_eq!(r.quick, (quick | 1) - 1, "{rcv_window:?}");
        assert!(out[0].window_bytes as u64 >= 28_960);
    }
}
