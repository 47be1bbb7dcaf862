//! End-to-end checks of BBR on the engine: one or two flows on the dumbbell of the
//! experiments (50 Mbit/s, 18 ms one-way bottleneck delay, 1 ms access links: RTT 40 ms).

mod common;
use common::*;
use serde_json::{json, Value};

use ccfair_sim::host::Latency;
use ccfair_sim::table::{ColumnData, Table};
use ccfair_sim::{RunResult, Simulation};

const RATE: u64 = 50_000_000;
const DELAY: u64 = 18 * MS;

fn ceiling() -> f64 {
    RATE as f64 * 1448.0 / 1500.0
}

fn strs<'a>(t: &'a Table, name: &str) -> &'a [&'static str] {
    match t.column(name) {
        Some(ColumnData::Str(v)) => v,
        _ => panic!("no string column {name}"),
    }
}

fn run(ccas: &[(&str, Value)], alpha: f64, secs: u64) -> RunResult {
    let buffer = (alpha * bdp_pkts(RATE, DELAY)).round() as u32;
    Simulation::new(dumbbell(ccas, RATE, DELAY, buffer, secs * S))
        .unwrap()
        .run()
}

fn counter(r: &RunResult, flow: u64, name: &str) -> f64 {
    r.flows
        .f64(name)
        .unwrap_or_else(|| panic!("no counter {name}"))[flow as usize]
}

/// PROBE_RTT episodes of a flow in the 10 ms time series: (start s, duration s), and
/// checks that cwnd is at most 4 in every sample taken in PROBE_RTT.
fn probe_rtt_episodes(r: &RunResult, flow: u64) -> Vec<(f64, f64)> {
    let ts = &r.timeseries;
    let fl = ts.u64("flow").unwrap();
    let t = ts.u64("t_ns").unwrap();
    let st = strs(ts, "cca_state");
    let cwnd = ts.f64("cwnd_pkts").unwrap();
    let mut eps = Vec::new();
    let mut start: Option<f64> = None;
    for i in (0..t.len()).filter(|&i| fl[i] == flow) {
        let s = t[i] as f64 / 1e9;
        if st[i] == "PROBE_RTT" {
            assert!(
                cwnd[i] <= 4.0,
                "flow {flow}: cwnd {} in PROBE_RTT at {s}",
                cwnd[i]
            );
            start.get_or_insert(s);
        } else if let Some(s0) = start.take() {
            eps.push((s0, s - s0));
        }
    }
    eps
}

#[test]
fn single_bbr_flow_fills_the_pipe_at_1_and_2_bdp() {
    for alpha in [1.0, 2.0] {
        let r = run(&[("bbr", json!({}))], alpha, 30);
        let g = goodput(&r.flows)[0];
        eprintln!(
            "bbr alone, {alpha} BDP: {:.3}% of the goodput ceiling",
            100.0 * g / ceiling()
        );
        // 95 to 99%: pacing at 99% of bw in cruise, minus the PROBE_RTT dips.
        assert!(g >= 0.95 * ceiling(), "{alpha} BDP: {g}");
        assert!(g <= 0.99 * ceiling(), "{alpha} BDP: {g}");
        // The model found the bottleneck: btl_bw within 1% of the payload rate.
        let bw = r.timeseries.f64("bbr_btl_bw_mbps").unwrap();
        let last = *bw.last().unwrap() * 1e6;
        assert!((last / ceiling() - 1.0).abs() < 0.01, "btl_bw {last}");
        // The handshake ("connecting"), STARTUP, DRAIN, then PROBE_BW for good (no
        // loss-based exit).
        let st = strs(&r.timeseries, "cca_state");
        let first_probe_bw = st.iter().position(|s| *s == "PROBE_BW").unwrap();
        let before: Vec<&str> = st[..first_probe_bw].to_vec();
        assert!(
            before
                .iter()
                .all(|s| matches!(*s, "connecting" | "STARTUP" | "DRAIN")),
            "states before PROBE_BW: {before:?}"
        );
        assert!(before.contains(&"STARTUP"), "no STARTUP: {before:?}");
        assert!(
            first_probe_bw < 100,
            "PROBE_BW only after {first_probe_bw} samples"
        );
    }
}

/// Linux since 2020 ("tcp: only postpone PROBE_RTT if RTT is < current min_rtt estimate")
/// refreshes the min-RTT stamp only on a strictly lower sample, so even a lone flow whose
/// queue drains to the exact propagation RTT probes about every 10 s.
#[test]
fn single_flow_probes_rtt_every_10s_and_not_with_the_pre_2020_rule() {
    let r = run(&[("bbr", json!({}))], 1.0, 45);
    let entries = counter(&r, 0, "bbr_probe_rtt_entry_count");
    let eps = probe_rtt_episodes(&r, 0);
    eprintln!("lone flow, 45 s: {entries} PROBE_RTT entries, episodes {eps:?}");
    assert_eq!(entries, 4.0, "entries near 10, 20, 30, 40 s");
    let starts: Vec<f64> = eps.iter().map(|e| e.0).collect();
    for w in starts.windows(2) {
        assert!((10.0..10.6).contains(&(w[1] - w[0])), "period {starts:?}");
    }
    // The pre-2020 rule (rtt <= min_rtt refreshes) with ideal hosts (no latency: a
    // jitter-free path) probes once: the handshake's min RTT (60-byte packets) is below
    // every data sample, so it expires after 10 s; the data RTT measured in that PROBE_RTT
    // is then matched exactly by every later sample.
    let buffer = bdp_pkts(RATE, DELAY).round() as u32;
    let mut spec = dumbbell(
        &[("bbr", json!({"min_rtt_refresh_on_equal": true}))],
        RATE,
        DELAY,
        buffer,
        45 * S,
    );
    spec.flows[0].tcp.app_latency = Latency::None;
    spec.flows[0].tcp.host_latency = Latency::None;
    let old = Simulation::new(spec).unwrap().run();
    assert_eq!(counter(&old, 0, "bbr_probe_rtt_entry_count"), 1.0);
}

#[test]
fn probe_rtt_every_10s_for_200ms_and_a_round_at_4_packets() {
    // Two flows keep a standing queue, so their min RTT is not re-measured in PROBE_BW.
    let r = run(&[("bbr", json!({})), ("bbr", json!({}))], 1.0, 45);
    for flow in 0..2 {
        let eps = probe_rtt_episodes(&r, flow);
        eprintln!("flow {flow} PROBE_RTT (start s, duration s): {eps:?}");
        assert_eq!(
            eps.len() as f64,
            counter(&r, flow, "bbr_probe_rtt_entry_count")
        );
        assert!(eps.len() >= 3, "{eps:?}");
        // 10 s after the last refresh (the previous PROBE_RTT's exit), plus the drain.
        for w in eps.windows(2) {
            let gap = w[1].0 - (w[0].0 + w[0].1);
            assert!((9.95..10.4).contains(&gap), "gap {gap} in {eps:?}");
        }
        // At least 200 ms at 4 packets and a round (RTT at most ~80 ms here), plus the
        // time to drain down to 4 packets, all at 10 ms sampling resolution.
        for &(_, d) in &eps {
            assert!((0.2..=0.45).contains(&d), "duration {d} in {eps:?}");
        }
    }
}

#[test]
fn rtprop_update_variant_loses_at_most_2_percent_alone() {
    for alpha in [1.0, 2.0] {
        let stock = goodput(&run(&[("bbr", json!({}))], alpha, 30).flows)[0];
        for a in [1.0, 0.5] {
            let p = json!({"rtprop_trigger": "rtt_ratio", "rtprop_action": "update",
                           "rate_th": 2.0, "update_gain_a": a});
            let g = goodput(&run(&[("bbr", p)], alpha, 30).flows)[0];
            eprintln!("{alpha} BDP, a = {a}: {:.3}% of stock", 100.0 * g / stock);
            assert!(g >= 0.98 * stock, "{alpha} BDP, a = {a}: {g} vs {stock}");
        }
    }
}

#[test]
fn forced_expire_variant_shows_its_extra_probe_rtts_in_the_counters() {
    // 2 BDP of buffer: STARTUP's queue takes the RTT above 2.4 x RTprop.
    let stock = run(&[("bbr", json!({}))], 2.0, 30);
    let p = json!({"rtprop_trigger": "rtt_ratio", "rtprop_action": "expire", "rate_th": 2.4});
    let forced = run(&[("bbr", p)], 2.0, 30);
    let entries = counter(&forced, 0, "bbr_probe_rtt_entry_count");
    let by_force = counter(&forced, 0, "bbr_forced_probe_rtt_entry_count");
    eprintln!(
        "forced expire: {entries} PROBE_RTT entries ({by_force} forced), stock {}",
        counter(&stock, 0, "bbr_probe_rtt_entry_count")
    );
    assert!(by_force >= 1.0);
    assert!(counter(&forced, 0, "bbr_forced_expiry_count") >= by_force);
    assert!(entries >= counter(&stock, 0, "bbr_probe_rtt_entry_count") + by_force);
    assert_eq!(probe_rtt_episodes(&forced, 0).len() as f64, entries);
    assert_eq!(counter(&stock, 0, "bbr_forced_expiry_count"), 0.0);
}

#[test]
fn forced_expire_fires_against_cubic_in_a_deep_buffer() {
    // CUBIC fills 4 BDP of buffer: BBR's RTT samples exceed 2.4 x its RTprop.
    let p = json!({"rtprop_trigger": "rtt_ratio", "rtprop_action": "expire", "rate_th": 2.4});
    let r = run(&[("bbr", p), ("cubic", json!({}))], 4.0, 30);
    let forced = counter(&r, 0, "bbr_forced_expiry_count");
    eprintln!(
        "bbr(forced) vs cubic at 4 BDP: goodput {:?}, forced expiries {forced}",
        goodput(&r.flows)
    );
    assert!(forced >= 1.0);
    probe_rtt_episodes(&r, 0); // cwnd <= 4 throughout
}
