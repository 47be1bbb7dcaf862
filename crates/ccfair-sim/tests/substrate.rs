//! End-to-end checks of the TCP substrate on small topologies.

mod common;
use common::*;
use serde_json::json;

use ccfair_sim::Simulation;

#[test]
fn single_reno_flow_fills_the_pipe() {
    let rate = 50_000_000;
    let delay = 18 * MS;
    let bdp = bdp_pkts(rate, delay).round() as u32;
    let spec = dumbbell(&[("reno", json!({}))], rate, delay, bdp, 30 * S);
    let r = Simulation::new(spec).unwrap().run();
    let g = goodput(&r.flows)[0];
    let ceiling = rate as f64 * 1448.0 / 1500.0;
    eprintln!(
        "reno goodput {:.3} Mbit/s = {:.2}% of ceiling",
        g / 1e6,
        100.0 * g / ceiling
    );
    assert!(g >= 0.95 * ceiling, "goodput {g} < 95% of {ceiling}");
    assert!(g <= ceiling * 1.0001);
}

#[test]
fn print_stats_two_reno() {
    let rate = 50_000_000;
    let delay = 18 * MS;
    let bdp = bdp_pkts(rate, delay).round() as u32;
    let spec = dumbbell(&[("reno", json!({})), ("reno", json!({}))], rate, delay, 2 * bdp, 60 * S);
    let t0 = std::time::Instant::now();
    let sim = Simulation::new(spec).unwrap();
    let r = sim.run();
    eprintln!("wall {:?} stats {:?}", t0.elapsed(), r.stats);
    for (name, col) in &r.flows.columns {
        eprintln!("{name}: {col:?}");
    }
    for (name, col) in &r.link_summary.columns {
        eprintln!("{name}: {col:?}");
    }
    let g = goodput(&r.flows);
    eprintln!("jain {}", jain(&g));
}
