//! The BBR of the 4.13 and 4.15 kernels (`version`) and its flags: each test shows one
//! behaviour that differs from 6.18, read in that kernel's `tcp_bbr.c`, and that each flag
//! switches it alone.

use super::*;

fn v(version: Version) -> BbrParams {
    BbrParams {
        version,
        ..BbrParams::default()
    }
}

const V4X: [Version; 2] = [Version::Linux415, Version::Linux413];

#[test]
fn versions_resolve_their_flags_and_a_flag_can_be_set_alone() {
    let r = |p: BbrParams| Flags::of(&p.resolved());
    let new = r(BbrParams::default());
    assert!(new.inflight_at_edt && new.probe_bw_plus_two && new.gains_every_ack);
    assert!(!new.pacing_on_mtu && !new.lt_bw_freezes_cycle && new.undo_resets_sampling);
    for version in V4X {
        let old = r(v(version));
        assert!(old.pacing_on_mtu && !old.inflight_at_edt && !old.min_rtt_skip_delayed_ack);
        assert!(!old.probe_bw_plus_two && !old.probe_rtt_cap_zero_acked);
        assert!(!old.probe_rtt_restore_at_exit && !old.idle_restart_needs_delivery);
        assert!(!old.ssthresh_at_drain && !old.gains_every_ack);
        let resolved = v(version).resolved();
        assert_eq!(
            (resolved.extra_acked, resolved.min_rtt_refresh_on_equal),
            (Some(false), Some(true))
        );
    }
    assert!(r(v(Version::Linux415)).undo_resets_sampling);
    assert!(!r(v(Version::Linux415)).lt_bw_freezes_cycle);
    assert!(!r(v(Version::Linux413)).undo_resets_sampling);
    assert!(r(v(Version::Linux413)).lt_bw_freezes_cycle);
    // One behaviour switched on its own, the rest of the version kept.
    let mixed = r(BbrParams {
        pacing_on_mtu: Some(false),
        ..v(Version::Linux413)
    });
    assert!(!mixed.pacing_on_mtu && mixed.lt_bw_freezes_cycle && !mixed.inflight_at_edt);
}

#[test]
fn old_names_are_errors_that_name_the_new_ones() {
    use serde_json::json;
    let err = |v: serde_json::Value| match crate::normalize_params("bbr", &v) {
        Err(crate::registry::CcaError::BadParams { error, .. }) => error,
        other => panic!("{other:?}"),
    };
    let e = err(json!({"profile": "linux-4.9"}));
    assert_eq!(e.key, "profile");
    assert!(
        e.message.contains("version") && e.message.contains("linux-4.13"),
        "{e}"
    );
    assert!(e.message.contains("linux-4.15"), "{e}");
    let e = err(json!({"profile": "linux-5.x"}));
    assert!(e.message.contains("linux-6.18"), "{e}");
    let e = err(json!({"version": "linux-5.x"}));
    assert_eq!(e.key, "version");
    assert!(e.message.contains("linux-6.18"), "{e}");
    let e = err(json!({"version": "linux-4.9"}));
    assert!(e.message.contains("linux-4.13"), "{e}");
    for ok in ["linux-6.18", "linux-4.15", "linux-4.13"] {
        let t = crate::normalize_params("bbr", &json!({ "version": ok })).unwrap();
        assert_eq!(t["version"], ok);
        // The normalised table records every flag resolved.
        assert!(t["pacing_on_mtu"].is_boolean() && t["lt_bw_freezes_cycle"].is_boolean());
    }
}

/// 4.x `bbr_rate_bytes_per_sec`: bw x `tcp_mss_to_mtu` x gain, no 99 % margin.
#[test]
fn v4x_paces_on_the_mtu_without_margin() {
    let tp = TcpSock::new(MSS, 10, 1000);
    for version in V4X {
        let bbr = Bbr::new(&v(version), 0);
        // 1 packet per µs at gain 1: 1500 bytes per µs.
        assert_eq!(bbr.rate_bytes_per_sec(&tp, BW_UNIT, 256), 1_500_000_000);
        let bw = bw_of(10, 1_000);
        let expect = (((bw * 1500 * 320) >> 8) * 1_000_000) >> 24;
        assert_eq!(bbr.rate_bytes_per_sec(&tp, bw, 320), expect);
    }
    // The socket's rate in PROBE_BW: 1500/1448 = 1.036 x bw in payload, against 0.99 x.
    let rate_over_bw = |p: BbrParams| {
        let h = H::steady(p, 10_500);
        assert_eq!(h.cc.pacing_gain, PACING_GAIN[h.cc.cycle_idx as usize]);
        let bw_bytes = h.cc.bw() as f64 * MSS as f64 * 1e6 / BW_UNIT as f64;
        h.tp.pacing_rate_bytes_per_sec as f64 / (bw_bytes * h.cc.pacing_gain as f64 / 256.0)
    };
    let old = rate_over_bw(v(Version::Linux415));
    assert!((old - 1500.0 / 1448.0).abs() < 1e-6, "{old}");
    let new = rate_over_bw(BbrParams::default());
    assert!((new - 0.99).abs() < 1e-6, "{new}");
    let flag_off = rate_over_bw(BbrParams {
        pacing_on_mtu: Some(false),
        ..v(Version::Linux415)
    });
    assert!((flag_off - 0.99).abs() < 1e-6, "{flag_off}");
}

#[test]
fn v4x_has_no_plus_two_in_the_probing_phase() {
    let mut tp = TcpSock::new(MSS, 10, 1000);
    tp.pacing_rate_bytes_per_sec = 12_500_000; // 8 segments per skb
    for (params, plus) in [(BbrParams::default(), 2), (v(Version::Linux415), 0)] {
        let mut bbr = Bbr::new(&params, 0);
        bbr.mode = Mode::ProbeBw;
        bbr.cycle_idx = 0;
        assert_eq!(bbr.quantization_budget(&tp, 100), 124 + plus);
    }
}

/// 4.x `bbr_update_min_rtt`: an expired filter adopts the sample even from an ACK that
/// may have been delayed (the filter came in 4.16).
#[test]
fn v4x_expiry_takes_a_delayed_ack_sample() {
    for (params, adopted) in [
        (BbrParams::default(), 10_000),
        (v(Version::Linux415), 50_000),
        (v(Version::Linux413), 50_000),
    ] {
        let mut h = H::steady(params, 10_500);
        h.cc.min_rtt_stamp = 0;
        h.tp.now_ns = 20_000_000_000;
        h.ack(Ack {
            dt_us: 0,
            rtt_us: 50_000,
            ack_delayed: true,
            new_round: Some(false),
            ..Ack::default()
        });
        assert_eq!(h.cc.mode, Mode::ProbeRtt);
        assert_eq!(h.cc.min_rtt_us, adopted);
    }
}

/// A flow just entered PROBE_RTT (cwnd 4) with `prior_cwnd` saved.
fn in_probe_rtt(params: BbrParams) -> (H, u32) {
    let mut h = H::steady(params, 10_500);
    let cwnd0 = h.tp.snd_cwnd;
    h.cc.min_rtt_stamp = 0;
    h.tp.now_ns = 20_000_000_000;
    h.pipe(1, 10_500);
    assert_eq!(h.cc.mode, Mode::ProbeRtt);
    assert!(h.tp.snd_cwnd <= 4);
    (h, cwnd0)
}

/// 4.x `bbr_set_cwnd` returns on an ACK that acknowledges nothing, before the PROBE_RTT cap.
#[test]
fn v4x_probe_rtt_cap_needs_acked_data() {
    for (params, capped) in [(BbrParams::default(), true), (v(Version::Linux415), false)] {
        let (mut h, _) = in_probe_rtt(params);
        h.tp.snd_cwnd = 50; // e.g. raised by an undo on this ACK
        h.ack(Ack {
            acked: 0,
            inflight: 50,
            sample: Some((0, 10_000)),
            new_round: Some(false),
            ..Ack::default()
        });
        assert_eq!(h.tp.snd_cwnd <= 4, capped);
        if !capped {
            assert_eq!(h.tp.snd_cwnd, 50);
            h.ack(Ack {
                acked: 1,
                inflight: 50,
                new_round: Some(false),
                ..Ack::default()
            });
            assert!(h.tp.snd_cwnd <= 4, "capped on the next ACK of data");
        }
    }
}

/// Leaving PROBE_RTT: 6.18 restores cwnd in `bbr_check_probe_rtt_done` (also on an idle
/// restart); 4.x sets `restore_cwnd`, which the next ACK of data applies.
#[test]
fn v4x_restores_cwnd_after_probe_rtt_on_the_next_ack_of_data() {
    for (params, at_exit) in [(BbrParams::default(), true), (v(Version::Linux413), false)] {
        let (mut h, cwnd0) = in_probe_rtt(params);
        // At 4 packets: done stamp set, then a round passes.
        h.ack(Ack {
            inflight: 4,
            new_round: Some(false),
            ..Ack::default()
        });
        let done = h.cc.probe_rtt_done_stamp.expect("armed");
        h.ack(Ack {
            inflight: 4,
            new_round: Some(true),
            ..Ack::default()
        });
        assert!(h.cc.probe_rtt_round_done);
        h.tp.now_ns = (done + 2) * 1_000_000;
        // The exit comes with an ACK that acknowledges nothing.
        h.ack(Ack {
            dt_us: 0,
            acked: 0,
            inflight: 4,
            sample: Some((0, 10_000)),
            new_round: Some(false),
            ..Ack::default()
        });
        assert_eq!(h.cc.mode, Mode::ProbeBw);
        assert_eq!(h.tp.snd_cwnd >= cwnd0, at_exit);
        assert_eq!(h.cc.restore_cwnd, !at_exit);
        h.ack(Ack {
            acked: 2,
            inflight: 4,
            new_round: Some(false),
            ..Ack::default()
        });
        assert!(h.tp.snd_cwnd >= cwnd0.min(target(&h)), "restored by now");
        assert!(!h.cc.restore_cwnd);
    }
    // An idle restart ends a finished PROBE_RTT in 6.18 only.
    for (params, ends) in [(BbrParams::default(), true), (v(Version::Linux415), false)] {
        let (mut h, _) = in_probe_rtt(params);
        h.ack(Ack {
            inflight: 4,
            new_round: Some(false),
            ..Ack::default()
        });
        let done = h.cc.probe_rtt_done_stamp.unwrap();
        h.tp.now_ns = (done + 2) * 1_000_000;
        h.tp.app_limited = h.tp.delivered + 1;
        h.s.cc.cwnd_event(&mut h.s.tp, CaEvent::TxStart);
        assert_eq!(h.cc.mode != Mode::ProbeRtt, ends);
    }
}

/// 4.x clears `idle_restart` at the end of every `bbr_update_min_rtt`; 4.16+ only when the
/// ACK delivered data.
#[test]
fn v4x_ends_an_idle_restart_on_any_ack() {
    for (params, kept) in [(BbrParams::default(), true), (v(Version::Linux415), false)] {
        let mut h = H::steady(params, 10_500);
        h.tp.app_limited = h.tp.delivered + 1;
        h.s.cc.cwnd_event(&mut h.s.tp, CaEvent::TxStart);
        assert!(h.cc.idle_restart);
        h.ack(Ack {
            acked: 0,
            sample: Some((0, 10_000)),
            new_round: Some(false),
            ..Ack::default()
        });
        assert_eq!(h.cc.idle_restart, kept);
    }
}

/// 4.x never sets ssthresh (`bbr_ssthresh` returns `TCP_INFINITE_SSTHRESH`); 4.20+ sets it
/// to the BDP plus budget when STARTUP ends and keeps it on entering recovery.
#[test]
fn v4x_keeps_ssthresh_infinite() {
    let infinite = crate::sock::TCP_INFINITE_SSTHRESH;
    let mut h = in_drain(BbrParams::default());
    assert_ne!(h.tp.snd_ssthresh, infinite);
    let set = h.tp.snd_ssthresh;
    assert_eq!(h.s.cc.ssthresh(&mut h.s.tp), set);
    for version in V4X {
        let mut h = in_drain(v(version));
        assert_eq!(h.tp.snd_ssthresh, infinite);
        h.tp.snd_ssthresh = 77; // whatever the substrate holds
        assert_eq!(h.s.cc.ssthresh(&mut h.s.tp), infinite);
    }
}

/// 4.x sets the gains when the mode or phase changes, not on every ACK: a policer rate
/// found in STARTUP leaves pacing gain 1 until DRAIN (`bbr_lt_bw_interval_done` sets it).
#[test]
fn v4x_sets_gains_at_transitions_only() {
    for (params, gain) in [
        (BbrParams::default(), HIGH_GAIN),
        (v(Version::Linux415), 256),
    ] {
        let mut h = H::new(params);
        round(&mut h, 10, 1_000, false);
        assert_eq!(h.cc.mode, Mode::Startup);
        assert_eq!(h.cc.pacing_gain, HIGH_GAIN);
        // Two consistent lossy intervals, as bbr_lt_bw_sampling would end them.
        h.cc.lt_bw = bw_of(4, 1_000);
        let tp = h.tp.clone();
        h.cc.lt_bw_interval_done(&tp, bw_of(4, 1_000));
        assert!(h.cc.lt_use_bw);
        h.ack(Ack {
            new_round: Some(false),
            ..Ack::default()
        });
        assert_eq!(h.cc.mode, Mode::Startup);
        assert_eq!(h.cc.pacing_gain, gain);
    }
    // 4.x sets STARTUP's gains in bbr_init already (6.18: on the first ACK).
    let mut tp = TcpSock::new(MSS, 10, 1000);
    let mut bbr = Bbr::new(&v(Version::Linux413), 0);
    bbr.init(&mut tp);
    assert_eq!((bbr.pacing_gain, bbr.cwnd_gain), (HIGH_GAIN, HIGH_GAIN));
}

/// 4.15 `bbr_undo_cwnd` resets full-pipe detection and policer sampling; 4.13 only returns
/// cwnd.
#[test]
fn v413_undo_keeps_the_sampling_state() {
    for (version, reset) in [(Version::Linux415, true), (Version::Linux413, false)] {
        let mut h = H::steady(v(version), 10_500);
        h.cc.full_bw_cnt = 2;
        h.cc.lt_bw = 123;
        let cwnd = h.tp.snd_cwnd;
        assert_eq!(h.s.cc.undo_cwnd(&mut h.s.tp), cwnd);
        assert_eq!(h.cc.lt_bw == 0, reset, "{version:?}");
        assert_eq!(h.cc.full_bw_cnt == 0, reset, "{version:?}");
        assert!(h.cc.full_bw_reached, "the decision stays (latched)");
    }
}

/// 4.13 `bbr_update_cycle_phase` skips the cycle while lt_bw is in use, and
/// `bbr_advance_cycle_phase` takes the cycle's gain even then; 4.15 (the 4.16 fix
/// backported) advances the cycle with gain 1.
#[test]
fn v413_freezes_the_gain_cycle_while_policed() {
    for (version, moves) in [(Version::Linux415, true), (Version::Linux413, false)] {
        let mut h = H::steady(v(version), 10_500);
        policed(&mut h, 45, 4, 1);
        policed(&mut h, 45, 4, 1);
        assert!(h.cc.lt_use_bw, "{version:?}");
        assert_eq!(h.cc.pacing_gain, BBR_UNIT);
        let idx = h.cc.cycle_idx;
        h.pipe(30, 10_500); // three min_rtt
        assert_eq!(h.cc.cycle_idx != idx, moves, "{version:?}");
        assert_eq!(h.cc.pacing_gain, BBR_UNIT, "{version:?}");
        // A new PROBE_BW start while policed: 4.13 takes the cycle's gain.
        h.cc.params.fixed_start_phase = Some(0);
        let tp = h.tp.clone();
        h.cc.reset_probe_bw_mode(&tp);
        let expect = if moves { BBR_UNIT } else { PACING_GAIN[0] };
        assert_eq!(h.cc.pacing_gain, expect, "{version:?}");
    }
}

/// The RTprop modifications of the literature run on every version: forced expire and
/// RTprop update fire as in 6.18, and PROBE_RTT then follows the version's rules.
#[test]
fn rtprop_modifications_compose_with_the_versions() {
    for version in [Version::Linux618, Version::Linux415, Version::Linux413] {
        let mut p = modified(RtpropTrigger::RttRatio, RtpropAction::Expire, 1.0);
        p.version = version;
        let mut h = H::steady(p, 10_500);
        let cwnd0 = h.tp.snd_cwnd;
        sample(&mut h, 25_000, 0);
        assert_eq!(h.cc.mode, Mode::ProbeRtt, "{version:?}");
        assert_eq!(h.cc.min_rtt_us, 25_000);
        assert_eq!(h.cc.counters.forced_probe_rtt_entries, 1);
        pipe_until(&mut h, 10_000, 1_000, |h| h.cc.mode != Mode::ProbeRtt);
        assert_eq!(h.cc.min_rtt_us, 10_000);
        assert_eq!(h.tp.snd_cwnd, (cwnd0 + 10).min(target(&h)), "{version:?}");

        let mut p = modified(RtpropTrigger::RttRatio, RtpropAction::Update, 0.5);
        p.version = version;
        let mut h = H::steady(p, 10_500);
        sample(&mut h, 30_000, 0);
        assert_eq!(h.cc.min_rtt_us, 20_000, "{version:?}");
        assert_eq!(h.cc.mode, Mode::ProbeBw);
        assert_eq!(h.cc.counters.rtprop_updates, 1);
        // With 4.x's `<=`, the updated value is refreshed by an equal sample later.
        sample(&mut h, 20_000, 0);
        let refreshed = h.cc.min_rtt_stamp == h.tp.jiffies();
        assert_eq!(refreshed, version.is_4x(), "{version:?}");
    }
}
