//! 4.x PRR (`prr = "linux-4.x"`) and tail-loss-probe schedules (`tlp_schedule`).

use super::*;
use crate::spec::{Prr, TlpSchedule};
use ccfair_cc::reno::{Reno, RenoParams};

fn sender(opts: TcpOptions) -> Sender {
    Sender::new(0, &opts, Box::new(Reno::new(&RenoParams {})), None)
}

/// In recovery with in flight below ssthresh (ssthresh 10, 5 in flight, prr 6 delivered
/// and 2 sent): the segments one ACK of one packet may release, with and without the ACK
/// acknowledging retransmitted data.
fn below_ssthresh_sndcnt(prr: Prr, flag: u32) -> i64 {
    let mut s = sender(TcpOptions {
        prr,
        ..TcpOptions::default()
    });
    s.tp.prior_cwnd = 20;
    s.tp.snd_ssthresh = 10;
    s.tp.ca_state = CaState::Recovery;
    s.tp.packets_out = 5;
    s.prr_delivered = 5;
    s.prr_out = 2;
    s.cwnd_reduction(1, 0, flag);
    s.tp.snd_cwnd as i64 - s.tp.packets_in_flight() as i64
}

/// 4.x: the slow-start bound, max(prr_delivered - prr_out, newly acked) + 1 = 5, only when
/// retransmitted data was acknowledged and no retransmission was lost; else conservation
/// (1). 6.18: the bound always, +1 when snd_una advanced and nothing was newly lost.
#[test]
fn prr_4x_bounds_by_conservation_unless_retransmissions_were_acked() {
    assert_eq!(below_ssthresh_sndcnt(Prr::Linux4x, 0), 1);
    assert_eq!(
        below_ssthresh_sndcnt(Prr::Linux4x, FLAG_RETRANS_DATA_ACKED),
        5
    );
    assert_eq!(
        below_ssthresh_sndcnt(Prr::Linux4x, FLAG_RETRANS_DATA_ACKED | FLAG_LOST_RETRANS),
        1
    );
    assert_eq!(below_ssthresh_sndcnt(Prr::Linux618, 0), 4);
    assert_eq!(
        below_ssthresh_sndcnt(Prr::Linux618, FLAG_SND_UNA_ADVANCED),
        5
    );
}

/// A sender at HZ 250 with `packets_out` in flight, srtt 40 ms, cwnd full, nothing
/// waiting beyond what cwnd allows: the loss probe's delay in ms, if scheduled.
fn probe_delay_ms(schedule: TlpSchedule, packets_out: u32, state: CaState) -> Option<u64> {
    let mut s = sender(TcpOptions {
        tlp_schedule: schedule,
        hz: 250,
        ..TcpOptions::default()
    });
    let mut out = Vec::new();
    s.start_without_handshake(0, &mut out);
    s.rtt.srtt_us8 = 40_000 << 3;
    // RTO 1 s: not the bound.
    s.rto_jiffies = 250;
    s.rto_us = 1_000_000;
    s.tp.packets_out = packets_out;
    s.tp.snd_cwnd = packets_out;
    s.tp.ca_state = state;
    s.xmit_timer = None;
    if !s.schedule_loss_probe(true) {
        return None;
    }
    let (at, kind) = s.xmit_timer.unwrap();
    assert_eq!(kind, XmitTimer::LossProbe);
    Some((at - s.tp.now_ns) / 1_000_000)
}

/// PTOs at HZ 250 (4 ms jiffies), srtt 40 ms. 6.18: usecs_to_jiffies(80 ms + 2 ms) = 21
/// jiffies = 84 ms, one packet out 80 + 200 ms. 4.15: 20 jiffies + 2 = 88 ms, one packet
/// out 20 + 50 jiffies = 280 ms. 4.13: 2 x 10 jiffies = 80 ms, one packet out max(80, 60 +
/// 200) = 260 ms. In CWR only 6.18 probes.
#[test]
fn tlp_timeouts_and_states_by_version() {
    use TlpSchedule::*;
    let open = CaState::Open;
    assert_eq!(probe_delay_ms(Linux618, 10, open), Some(84));
    assert_eq!(probe_delay_ms(Linux415, 10, open), Some(88));
    assert_eq!(probe_delay_ms(Linux413, 10, open), Some(80));
    assert_eq!(probe_delay_ms(Linux618, 1, open), Some(280));
    assert_eq!(probe_delay_ms(Linux415, 1, open), Some(280));
    assert_eq!(probe_delay_ms(Linux413, 1, open), Some(260));
    assert_eq!(probe_delay_ms(Linux618, 10, CaState::Cwr), Some(84));
    assert_eq!(probe_delay_ms(Linux415, 10, CaState::Cwr), None);
    assert_eq!(probe_delay_ms(Linux413, 10, CaState::Cwr), None);
}

/// 4.x schedules no probe while cwnd has room and data waits (it will be sent instead).
#[test]
fn tlp_4x_waits_while_new_data_can_go() {
    for (schedule, probes) in [
        (TlpSchedule::Linux618, true),
        (TlpSchedule::Linux415, false),
        (TlpSchedule::Linux413, false),
    ] {
        let mut s = sender(TcpOptions {
            tlp_schedule: schedule,
            ..TcpOptions::default()
        });
        let mut out = Vec::new();
        s.start_without_handshake(0, &mut out);
        s.rtt.srtt_us8 = 40_000 << 3;
        s.tp.snd_cwnd = s.tp.packets_out + 5;
        assert!(s.has_new_data());
        assert_eq!(s.schedule_loss_probe(true), probes, "{schedule:?}");
    }
}
