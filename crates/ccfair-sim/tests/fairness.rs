//! A netsim-style fairness table end to end: every pair of registered algorithms (each
//! with itself too) shares the Python builder's two-flow dumbbell (20 Mbit/s, 24 ms RTT,
//! BDP 40 packets) at three bottleneck buffers (0.5, 1 and 4 BDP); goodput shares over
//! 5-20 s are compared with tests/snapshots/fairness.txt, so that a change in how
//! algorithms share a bottleneck is a reviewed diff. The same pairs behind each queue
//! discipline (CoDel, CoDel with ECN-asking hosts, fq_codel, PIE, RED), with Linux's
//! defaults and a limit of 4 BDP, are compared with tests/snapshots/fairness-aqm.txt.
//! Regenerate after a deliberate change with
//! `CCFAIR_UPDATE_SNAPSHOTS=1 cargo test -p ccfair-sim --test fairness`.

mod common;

use ccfair_sim::spec::{Queue, RunSpec};
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
    shares_row(
        two_flows(a, b, (buffer_bdp * BDP_PKTS) as u32),
        a,
        b,
        buffer_bdp,
        w,
    )
}

fn shares_row(spec: RunSpec, a: &str, b: &str, buffer_bdp: f64, w: usize) -> String {
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

/// The bottleneck's queue disciplines of the AQM table: the queue, its options, and
/// whether the hosts ask for ECN (`tcp.ecn = 1`; Linux's default 2 never asks).
fn disciplines() -> Vec<(&'static str, Queue, serde_json::Value, bool)> {
    vec![
        ("codel", Queue::Codel, json!({}), false),
        ("codel+ecn", Queue::Codel, json!({"ecn": true}), true),
        ("fq_codel", Queue::FqCodel, json!({}), false),
        ("pie", Queue::Pie, json!({}), false),
        ("red", Queue::Red, json!({}), false),
    ]
}

/// Every pair of registered algorithms behind every discipline of [`disciplines`], the
/// discipline's limit 4 BDP.
fn aqm_table() -> String {
    let names = ccfair_cc::known_algorithms();
    let w = names.iter().map(|n| n.len()).max().unwrap_or(0);
    let mut out = String::from(
        "# two flows, 20 Mbit/s, RTT 24 ms, BDP 40 pkts, queue limit 4 BDP; goodput 5-20 s\n\
         # queue: flow1  flow2  buffer_bdp  share1 share2 jain utilisation\n",
    );
    for (label, queue, options, ecn) in disciplines() {
        for (i, a) in names.iter().enumerate() {
            for b in &names[i..] {
                let mut spec = two_flows(a, b, (4.0 * BDP_PKTS) as u32);
                let bottleneck = spec.links.iter_mut().find(|l| l.name == "bottleneck");
                let bottleneck = bottleneck.unwrap();
                bottleneck.queue = queue;
                bottleneck.qdisc = ccfair_sim::qdisc::params::normalize(queue, &options).unwrap();
                if ecn {
                    for flow in &mut spec.flows {
                        flow.tcp.ecn = 1;
                    }
                }
                out.push_str(&format!("{label:<9} "));
                out.push_str(&shares_row(spec, a, b, 4.0, w));
                out.push('\n');
            }
        }
    }
    out
}

#[test]
fn fairness_table_matches_its_snapshot() {
    compare_with_snapshot(table(), "fairness.txt", 3);
}

#[test]
fn fairness_behind_queue_disciplines_matches_its_snapshot() {
    compare_with_snapshot(aqm_table(), "fairness-aqm.txt", 4);
}

/// `got` against tests/snapshots/`name`, rows keyed by their first `key_fields` fields.
fn compare_with_snapshot(got: String, name: &str, key_fields: usize) {
    let file = format!("{}/tests/snapshots/{name}", env!("CARGO_MANIFEST_DIR"));
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
                    let key = l.split_whitespace().take(key_fields);
                    let key = key.collect::<Vec<_>>().join(" ");
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
             the diff of tests/snapshots/{name}.",
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
