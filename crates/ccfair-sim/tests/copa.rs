//! Copa end to end on the Linux-like substrate (issue item 5), in the setting of
//! docs/experiments.md experiment 4: 50 Mbit/s bottleneck, 40 ms round-trip propagation time
//! (1 ms access links, D = 18 ms), SACK, timestamps, delayed ACKs.

mod common;
use common::*;
use serde_json::{json, Value};

use ccfair_sim::spec::RunSpec;
use ccfair_sim::table::{ColumnData, Table};
use ccfair_sim::{RunResult, Simulation};

const RATE: u64 = 50_000_000;
const DELAY: u64 = 18 * MS;

fn rate_pps() -> f64 {
    RATE as f64 / 8.0 / 1500.0
}

fn bdp() -> u32 {
    bdp_pkts(RATE, DELAY).round() as u32
}

fn run(ccas: &[(&str, Value)], buffer: u32, secs: u64, loss: f64) -> RunResult {
    Simulation::new(spec(ccas, buffer, secs, loss))
        .unwrap()
        .run()
}

fn spec(ccas: &[(&str, Value)], buffer: u32, secs: u64, loss: f64) -> RunSpec {
    let mut spec = dumbbell(ccas, RATE, DELAY, buffer, secs * S);
    let n = ccas.len();
    spec.links[n].loss_ab = loss;
    spec
}

/// Rows of the time series of `flow` at or after `from_ns`: values of column `col`.
fn series(ts: &Table, flow: usize, col: &str, from_ns: u64) -> Vec<f64> {
    let t = ts.u64("t_ns").unwrap();
    let f = ts.u64("flow").unwrap();
    let v: Vec<f64> = match ts.column(col).unwrap() {
        ColumnData::F64(v) => v.clone(),
        ColumnData::U64(v) => v.iter().map(|&x| x as f64).collect(),
        _ => panic!("{col} is not numeric"),
    };
    (0..t.len())
        .filter(|&i| f[i] == flow as u64 && t[i] >= from_ns)
        .map(|i| v[i])
        .collect()
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// Mean occupancy of the bottleneck (link `n`, direction a->b) from `from_ns`.
fn mean_bottleneck_queue(r: &RunResult, n: usize, from_ns: u64) -> f64 {
    let l = &r.links;
    let t = l.u64("t_ns").unwrap();
    let link = l.u64("link").unwrap();
    let q = l.u64("queue_pkts").unwrap();
    let dir = match l.column("direction").unwrap() {
        ColumnData::Str(d) => d.clone(),
        _ => unreachable!(),
    };
    let v: Vec<f64> = (0..t.len())
        .filter(|&i| link[i] == n as u64 && dir[i] == "ab" && t[i] >= from_ns)
        .map(|i| q[i] as f64)
        .collect();
    mean(&v)
}

fn counter(r: &RunResult, flow: usize, name: &str) -> f64 {
    r.flows
        .f64(name)
        .unwrap_or_else(|| panic!("no counter {name}"))[flow]
}

/// reference 8.2 invariants on every sample of every Copa flow (the module also asserts
/// them on every ACK in debug builds, which tests use).
/// Samples taken while the handshake is still under way carry no internals (NaN); every
/// sample after it must.
fn check_invariants(r: &RunResult, flows: &[usize]) {
    for &i in flows {
        let deltas = series(&r.timeseries, i, "copa_delta", 0);
        let connecting = deltas.iter().take_while(|d| d.is_nan()).count();
        assert!(connecting < deltas.len(), "flow {i}: never connected");
        for d in &deltas[connecting..] {
            assert!(
                *d > 0.0 && *d <= 0.5,
                "flow {i}: delta {d} outside (0, 0.5]"
            );
        }
        for c in series(&r.timeseries, i, "cwnd_pkts", 0) {
            assert!(c >= 2.0, "flow {i}: cwnd {c} < 2");
        }
    }
}

#[test]
fn n_copa_flows_keep_about_n_over_delta_packets_queued() {
    // Equilibrium (reference 5.1, 8.3 item 10): n/delta = 2n packets of standing queue for
    // delta = 0.5, whatever the link. delta is held at 0.5 (competitive mode off): the law
    // is about default mode.
    for n in 1..=4usize {
        let ccas: Vec<(&str, Value)> = (0..n)
            .map(|_| ("copa", json!({"competitive": false})))
            .collect();
        let r = run(&ccas, 4 * bdp(), 40, 0.0);
        let from = 10 * S;
        // The standing queue each flow measures: dq x link rate.
        let dq_pkts: Vec<f64> = (0..n)
            .map(|i| mean(&series(&r.timeseries, i, "copa_dq_ms", from)) * 1e-3 * rate_pps())
            .collect();
        let standing = mean(&dq_pkts);
        let queue = mean_bottleneck_queue(&r, n, from);
        let g = goodput(&r.flows);
        let util: f64 = g.iter().sum::<f64>() / (RATE as f64 * 1448.0 / 1500.0);
        eprintln!(
            "n={n}: standing {standing:.2} pkts (per flow {dq_pkts:.2?}), mean queue {queue:.2}, \
             utilisation {util:.3}, jain {:.3}",
            jain(&g)
        );
        let want = 2.0 * n as f64;
        assert!(
            (standing - want).abs() <= 0.3 * want,
            "n={n}: standing queue {standing:.2} pkts, want {want} +- 30%"
        );
        assert!(util > 0.9, "n={n}: utilisation {util:.3}");
        check_invariants(&r, &(0..n).collect::<Vec<_>>());
    }
}

#[test]
fn copa_alone_stays_in_default_mode() {
    // A lone Copa drains the queue about every 5 RTTs, so the detector (5 RTTs, 10% of the
    // recent maximum) should not fire. It still does, briefly: after slow start the queue
    // takes more than 5 RTTs to drain, and once RTTmin is re-measured (10 s window) the
    // trough of a 2..5-packet oscillation sits one or two packets above it, and the
    // paper's 5-RTT detector fires in short blips about every 0.55 s. Measured here, 60 s:
    // paper 8.6% of the time (3% before the receiver modelled Linux's window growth, which
    // changes slow start and so the phase of that oscillation), genericcc ~1%. This
    // checks the algorithm's mechanics on a
    // jitter-free path (ideal hosts); with the kernel's measured host latency the noisier
    // RTT minimum makes the paper's detector fire more often (docs/fidelity.md, Copa).
    for variant in ["paper", "genericcc"] {
        let sp = ideal_hosts(spec(
            &[("copa", json!({"variant": variant}))],
            4 * bdp(),
            60,
            0.0,
        ));
        let r = Simulation::new(sp).unwrap().run();
        let comp = counter(&r, 0, "copa_time_competitive_s");
        let def = counter(&r, 0, "copa_time_default_s");
        let switches = counter(&r, 0, "copa_mode_switch_count");
        eprintln!("{variant}: default {def:.1} s, competitive {comp:.2} s, switches {switches}");
        assert!((def + comp - 60.0).abs() < 0.1, "{def} + {comp}");
        let most = if variant == "paper" { 0.10 } else { 0.05 };
        assert!(
            comp < most * 60.0,
            "{variant}: {comp:.2} s in competitive mode"
        );
        let modes = series(&r.timeseries, 0, "copa_mode_competitive", 0);
        let share = modes.iter().filter(|&&m| m == 1.0).count() as f64 / modes.len() as f64;
        assert!(
            share < most,
            "{variant}: competitive in {share:.3} of the samples"
        );
        // Its standing queue is the one-flow equilibrium, 1/delta = 2 packets. Not asserted
        // for the paper's variant: its blips into competitive mode (delta < 0.5) can move a
        // lone flow into a bursty regime with a ~3 ms queue at ~91% utilisation (seed 1
        // here; 1 of 5 seeds with the kernel's host latency), a property of the paper's
        // detector, not of the equilibrium law (checked with competitive mode off above).
        if variant == "genericcc" {
            let dq = mean(&series(&r.timeseries, 0, "copa_dq_ms", 10 * S)) * 1e-3 * rate_pps();
            assert!(
                (dq - 2.0).abs() < 1.0,
                "{variant}: standing queue {dq:.2} pkts"
            );
        }
        check_invariants(&r, &[0]);
    }
}

#[test]
fn copa_against_a_buffer_filler_in_a_deep_buffer_is_mostly_competitive() {
    // CUBIC once it is registered; until then Reno, the other buffer-filler.
    let filler = "cubic";
    for variant in ["paper", "genericcc"] {
        let r = run(
            &[("copa", json!({"variant": variant})), (filler, json!({}))],
            8 * bdp(),
            60,
            0.0,
        );
        let comp = counter(&r, 0, "copa_time_competitive_s");
        let g = goodput(&r.flows);
        let off = run(
            &[
                ("copa", json!({"variant": variant, "competitive": false})),
                (filler, json!({})),
            ],
            8 * bdp(),
            60,
            0.0,
        );
        let g_off = goodput(&off.flows);
        eprintln!(
            "{variant} vs {filler}: competitive {comp:.1} s of 60, goodput copa {:.1} / {filler} {:.1} \
             Mbit/s; competitive off: {:.1} / {:.1}",
            g[0] / 1e6,
            g[1] / 1e6,
            g_off[0] / 1e6,
            g_off[1] / 1e6
        );
        assert!(
            comp > 0.5 * 60.0,
            "{variant}: only {comp:.1} s in competitive mode"
        );
        assert!(
            g_off[0] < g[0],
            "competitive mode should win Copa throughput"
        );
        check_invariants(&r, &[0]);
    }
}

#[test]
fn copa_alone_with_one_percent_random_loss_keeps_ninety_percent() {
    // Default mode ignores loss; the substrate repairs it (SACK, RACK).
    let r = run(&[("copa", json!({}))], bdp(), 60, 0.01);
    let g = goodput(&r.flows)[0];
    let ceiling = RATE as f64 * 1448.0 / 1500.0 * 0.99;
    eprintln!(
        "goodput {:.2} Mbit/s = {:.1}% of the ceiling {:.2}",
        g / 1e6,
        100.0 * g / ceiling,
        ceiling / 1e6
    );
    assert!(g >= 0.9 * ceiling, "goodput {g} < 90% of {ceiling}");
    check_invariants(&r, &[0]);
}
