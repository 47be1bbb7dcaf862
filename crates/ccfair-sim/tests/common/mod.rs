//! Test helpers: resolved specs for small topologies. The user-facing builders live in
//! Python; `fixture` loads what they produce (scripts/engine_fixtures.py writes
//! tests/fixtures/), and `dumbbell` builds the same shape for any number of flows and
//! parameters (tests/fairness.rs checks it against the Python builder's fixture).
#![allow(dead_code)]

use ccfair_sim::spec::{FlowSpec, LinkSpec, RunSpec, TcpOptions};
use ccfair_sim::table::Table;
use serde_json::Value;

pub const MS: u64 = 1_000_000;
pub const S: u64 = 1_000_000_000;

/// Dumbbell: senders 0..n, switch n (s1), switch n+1 (s2), receivers n+2..2n+2.
/// Access links 1 Gbit/s with `access_delay_ns`, bottleneck `rate_bps`, `delay_ns`.
/// Flow i's data path: access i (a->b), bottleneck (a->b), receiver access (b->a reversed).
pub fn dumbbell(
    ccas: &[(&str, Value)],
    rate_bps: u64,
    delay_ns: u64,
    buffer_pkts: u32,
    duration_ns: u64,
) -> RunSpec {
    let n = ccas.len();
    let mut nodes = Vec::new();
    for i in 0..n {
        nodes.push(format!("h{}", i + 1));
    }
    nodes.push("s1".into());
    nodes.push("s2".into());
    for i in 0..n {
        nodes.push(format!("h{}", n + i + 1));
    }
    let s1 = n;
    let s2 = n + 1;
    let mut links = Vec::new();
    // links 0..n: sender access (h_i -> s1); link n: bottleneck; n+1..2n+1: receiver access (s2 -> r).
    for i in 0..n {
        links.push(link(
            &format!("h{}-s1", i + 1),
            i,
            s1,
            1_000_000_000,
            MS,
            1000,
        ));
    }
    links.push(link("bottleneck", s1, s2, rate_bps, delay_ns, buffer_pkts));
    for i in 0..n {
        links.push(link(
            &format!("s2-h{}", n + i + 1),
            s2,
            n + 2 + i,
            1_000_000_000,
            MS,
            1000,
        ));
    }
    let flows = ccas
        .iter()
        .enumerate()
        .map(|(i, (cca, params))| {
            let a = 2 * i; // a->b of access link i
            let b = 2 * n; // bottleneck a->b
            let r = 2 * (n + 1 + i); // receiver access a->b
            FlowSpec {
                name: format!("flow{}", i + 1),
                src: i,
                dst: n + 2 + i,
                path: vec![a, b, r],
                ack_path: vec![r + 1, b + 1, a + 1],
                cca: cca.to_string(),
                cca_params: params.clone(),
                start_ns: 0,
                start_jitter_ns: 0,
                stop_ns: None,
                size_bytes: None,
                tcp: TcpOptions::default(),
            }
        })
        .collect();
    RunSpec {
        duration_ns,
        seed: 1,
        sample_interval_ns: 10 * MS,
        measure_start_ns: 0,
        measure_end_ns: duration_ns,
        nodes,
        links,
        flows,
        trace_flows: vec![],
    }
}

pub fn link(name: &str, a: usize, b: usize, rate_bps: u64, delay_ns: u64, buffer: u32) -> LinkSpec {
    LinkSpec {
        name: name.into(),
        a,
        b,
        rate_bps,
        delay_ns,
        buffer_pkts: buffer,
        loss_ab: 0.0,
        loss_ba: 0.0,
        queue: Default::default(),
        qdisc: serde_json::Value::Null,
    }
}

/// BDP in packets of 1500 B for a dumbbell with 1 ms access links.
/// Ideal hosts for every flow: no application or turnaround latency (a jitter-free path,
/// for tests of an algorithm's mechanics in isolation).
pub fn ideal_hosts(mut spec: RunSpec) -> RunSpec {
    for f in &mut spec.flows {
        f.tcp.app_latency = ccfair_sim::host::Latency::None;
        f.tcp.host_latency = ccfair_sim::host::Latency::None;
    }
    spec
}

pub fn bdp_pkts(rate_bps: u64, delay_ns: u64) -> f64 {
    let rtt_ns = 2 * (MS + delay_ns + MS);
    rate_bps as f64 * rtt_ns as f64 / 1e9 / 8.0 / 1500.0
}

/// Each flow's goodput in bit/s.
pub fn goodput(t: &Table) -> Vec<f64> {
    t.f64("goodput_mbps")
        .unwrap()
        .iter()
        .map(|g| g * 1e6)
        .collect()
}

pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * s2)
}

/// The engine input of a scenario built by the Python builders (tests/fixtures/, written
/// by scripts/engine_fixtures.py).
pub fn fixture(name: &str) -> RunSpec {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    ccfair_sim::parse_spec(&text).unwrap()
}
