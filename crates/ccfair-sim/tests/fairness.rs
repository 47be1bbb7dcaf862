//! A netsim-style fairness table end to end: every pair of registered algorithms (each
//! with itself too) shares the Python builder's two-flow dumbbell (20 Mbit/s, 24 ms RTT,
//! BDP 40 packets) at three bottleneck buffers (0.5, 1 and 4 BDP); goodput shares over
//! 5-20 s are compared with tests/snapshots/fairness.txt, so that a change in how
//! algorithms share a bottleneck is a reviewed diff. Regenerate after a deliberate change
//! with `CCFAIR_UPDATE_SNAPSHOTS=1 cargo test -p ccfair-sim --test fairness`.

mod common;

use ccfair_sim::spec::RunSpec;
use ccfair_sim::Simulation;
use common::*;
use serde_json::json;

const UPDATE_VAR: &str = "CCFAIR_UPDATE_SNAPSHOTS";
/// Bottleneck buffers in BDPs of the fixture's path (40 packets).
const BUFFERS_BDP: [f64; 3] = [0.5, 1.0, 4.0];
const BDP_PKTS: f64 = 40.0;

fn two_flows(a: &str, b: &str, buffer_pkts: u32) -> RunSpec {
    let mut spec = fixture("dumbbell-2flows.json");
    for (flow, cca) in spec.flows.iter_mut().zip([a, b]) {
        flow.cca = cca.to_string();
        flow.cca_params = ccfair_cc::normalize_params(cca, &json!({})).unwrap();
    }
    let bottleneck = spec.links.iter_mut().find(|l| l.name == "bottleneck");
    bottleneck.unwrap().buffer_pkts = buffer_pkts;
    spec
}

/// One row: the pair, the buffer, each flow's share of the total goodput, Jain's index
/// and the bottleneck's utilisation. Names are padded to `w` columns.
fn row(a: &str, b: &str, buffer_bdp: f64, w: usize) -> String {
    let spec = two_flows(a, b, (buffer_bdp * BDP_PKTS) as u32);
    let capacity_bps = spec
        .links
        .iter()
        .find(|l| l.name == "bottleneck")
        .unwrap()
        .rate_bps;
    let r = Simulation::new(spec).unwrap().run();
    let g = goodput(&r.flows);
    let total: f64 = g.iter().sum();
    format!(
        "{a:<w$} {b:<w$} {buffer_bdp:>4} {:.3} {:.3} {:.3} {:.3}",
        g[0] / total,
        g[1] / total,
        jain(&g),
        total / capacity_bps as f64
    )
}

fn table() -> String {
    let names = ccfair_cc::known_algorithms();
    let w = names.iter().map(|n| n.len()).max().unwrap_or(0);
    let mut out = String::from(
        "# two flows, 20 Mbit/s, RTT 24 ms, BDP 40 pkts; goodput 5-20 s\n\
         # flow1  flow2  buffer_bdp  share1 share2 jain utilisation\n",
    );
    for (i, a) in names.iter().enumerate() {
        for b in &names[i..] {
            for buffer in BUFFERS_BDP {
                out.push_str(&row(a, b, buffer, w));
                out.push('\n');
            }
        }
    }
    out
}

#[test]
fn fairness_table_matches_its_snapshot() {
    let got = table();
    let file = format!(
        "{}/tests/snapshots/fairness.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os(UPDATE_VAR).is_some() {
        std::fs::create_dir_all(std::path::Path::new(&file).parent().unwrap()).unwrap();
        std::fs::write(&file, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&file).unwrap_or_default();
    if want != got {
        // Rows by their pair and buffer (the first three fields), to name what changed.
        let rows = |t: &str| -> Vec<(String, String)> {
            t.lines()
                .filter(|l| !l.starts_with('#'))
                .map(|l| {
                    let key = l.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
                    (key, l.to_string())
                })
                .collect()
        };
        let (old, new) = (rows(&want), rows(&got));
        let find = |v: &[(String, String)], k: &str| v.iter().find(|r| r.0 == k).cloned();
        let mut report = Vec::new();
        for (k, line) in &new {
            match find(&old, k) {
                Some((_, was)) if was != *line => {
                    report.push(format!("  changed: {was}\n       now: {line}"))
                }
                None => report.push(format!("  new:     {line}")),
                _ => {}
            }
        }
        for (k, line) in &old {
            if find(&new, k).is_none() {
                report.push(format!("  gone:    {line}"));
            }
        }
        panic!(
            "the fairness table changed:\n{}\nIf intended, run with {UPDATE_VAR}=1 and review \
             the diff of tests/snapshots/fairness.txt.",
            report.join("\n")
        );
    }
}

/// The hand-built dumbbell the other tests use is the Python builder's (the fixture), so
/// that the engine's tests run the topology users run.
#[test]
fn the_hand_built_dumbbell_is_the_python_builders() {
    let python = fixture("dumbbell-2flows.json");
    let mut rust = dumbbell(
        &[("reno", json!({})), ("reno", json!({}))],
        20_000_000,
        10 * MS,
        40,
        20 * S,
    );
    rust.measure_start_ns = 5 * S;
    let as_json = |s: &RunSpec| serde_json::to_value(s).unwrap();
    assert_eq!(as_json(&rust), as_json(&python));
}
