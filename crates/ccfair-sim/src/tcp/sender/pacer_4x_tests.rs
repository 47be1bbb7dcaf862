//! TCP's own pacer of Linux 4.13/4.15 (`pacer = "linux-4.x"`, `tcp_internal_pacing`)
//! against 6.18's earliest-departure-time pacer.

use super::*;
use crate::spec::{Pacer, Tso};

/// A BBR sender (which asks for pacing) whose pacing rate stays at `rate` (BBR's initial
/// rate capped by `SO_MAX_PACING_RATE`; no ACKs arrive) and whose cwnd never limits.
fn paced(pacer: Pacer, tso: Tso, rate: u64) -> Sender {
    let opts = TcpOptions {
        pacer,
        tso,
        ..TcpOptions::default()
    };
    let cc = ccfair_cc::build("bbr", &serde_json::Value::Null, 1).unwrap();
    let mut s = Sender::new(0, &opts, cc, None);
    s.tp.max_pacing_rate_bytes_per_sec = rate;
    s
}

/// Payload bytes per second the pacer lets out, measured from the 11th segment (after
/// 6.18's unpaced start) over one second of pacing-timer wake-ups.
fn payload_rate(pacer: Pacer, tso: Tso, rate: u64) -> f64 {
    let mut s = paced(pacer, tso, rate);
    let mut out = Vec::new();
    s.start_without_handshake(0, &mut out);
    assert_eq!(s.tp.pacing_rate_bytes_per_sec, rate);
    s.tp.snd_cwnd = 1_000_000;
    while s.stats.data_pkts_sent < 11 {
        let t = s.pacing_deadline().expect("paced");
        s.on_pacing_timer(t, &mut out);
    }
    let (t0, n0) = (s.tp.now_ns, s.stats.data_pkts_sent);
    while s.tp.now_ns < t0 + 1_000_000_000 {
        let t = s.pacing_deadline().expect("paced");
        s.on_pacing_timer(t, &mut out);
    }
    let segs = s.stats.data_pkts_sent - n0;
    segs as f64 * 1448.0 * 1e9 / (s.tp.now_ns - t0) as f64
}

/// 4.x: paced from the first skb (6.18 sends 10 segments unpaced), and the timer of the
/// skb that left is its length with the TCP header, `(payload + 32) / rate`.
#[test]
fn the_4x_pacer_paces_from_the_first_skb_and_charges_the_header() {
    let rate = 6_250_000; // 50 Mbit/s
    let mut out = Vec::new();
    let mut s = paced(Pacer::Linux4x, Tso::Off, rate);
    s.start_without_handshake(0, &mut out);
    assert_eq!(out.len(), 1, "one segment, then the pacing timer");
    assert_eq!(
        s.pacing_deadline(),
        Some((1448 + 32) * 1_000_000_000 / rate)
    );
    let mut out = Vec::new();
    let mut s = paced(Pacer::Linux618, Tso::Off, rate);
    s.start_without_handshake(0, &mut out);
    assert_eq!(out.len(), 10, "6.18: the first 10 segments unpaced");
}

/// The rate the pacers achieve: 6.18 lets out the pacing rate in payload; 4.x charges 32
/// bytes more per skb, 1448/1480 of it with one segment per skb and 5792/5824 with the
/// 4-segment skbs of 50 Mbit/s. So 4.x BBR, pacing at bw x 1500 B, cruises at
/// 1500/1480 = 1.0135 x bw without TSO and 6000/5824 = 1.030 x bw with it (1.036 x for
/// 45-segment skbs), where 6.18 BBR paces at 0.99 x bw.
#[test]
fn the_4x_pacer_lets_out_payload_over_payload_plus_header() {
    let rate = 6_250_000;
    let cases = [
        (Pacer::Linux618, Tso::Off, 1.0),
        (Pacer::Linux618, Tso::Linux, 1.0),
        (Pacer::Linux4x, Tso::Off, 1448.0 / 1480.0),
        (Pacer::Linux4x, Tso::Linux, 5792.0 / 5824.0),
    ];
    for (pacer, tso, expect) in cases {
        let got = payload_rate(pacer, tso, rate) / rate as f64;
        assert!(
            (got - expect).abs() < 2e-4,
            "{pacer:?} {tso:?}: {got} vs {expect}"
        );
    }
    // Against BBR's bandwidth estimate (4.x pacing rate = bw x 1500 x gain).
    let bw_pkts = rate as f64 / 1500.0;
    let cruise = payload_rate(Pacer::Linux4x, Tso::Linux, rate) / (bw_pkts * 1448.0);
    assert!((cruise - 6000.0 / 5824.0).abs() < 2e-4, "{cruise}");
}

/// sch_fq's 4.x pacing is not modelled: asking for it with the 4.x pacer is an error that
/// names both options.
#[test]
fn fq_pacing_with_the_4x_pacer_is_an_error() {
    let e = TcpOptions::parse(&serde_json::json!({"pacer": "linux-4.x", "fq_pacing": true}))
        .unwrap_err();
    assert_eq!(e.key, "pacer");
    assert_eq!(e.related, vec!["fq_pacing"]);
    let e = TcpOptions::parse(&serde_json::json!({"pacer": "edt"})).unwrap_err();
    assert!(e.message.contains("linux-4.x"), "{e}");
}
