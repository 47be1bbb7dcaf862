//! Run a resolved spec (JSON file, e.g. from `ccfair check --engine`) and print engine
//! statistics and per-flow goodput: for profiling and comparing engines without Python.
//!
//! `cargo run --release -p ccfair-sim --example run_spec -- spec.json`

fn main() {
    let path = std::env::args().nth(1).expect("usage: run_spec SPEC.json");
    let json = std::fs::read_to_string(&path).expect("read spec");
    let t0 = std::time::Instant::now();
    match ccfair_sim::run_json(&json, &ccfair_sim::Limits::default()) {
        Ok(r) => {
            println!(
                "wall {:.3} s, {} events, {} packet-hops, {} timeseries rows",
                t0.elapsed().as_secs_f64(),
                r.stats.events,
                r.stats.packet_hops,
                r.timeseries.n_rows()
            );
            let g = r.flows.f64("goodput_bps").unwrap();
            let rt = r.flows.u64("retrans_pkts").unwrap();
            for (i, (g, rt)) in g.iter().zip(rt).enumerate() {
                println!("flow {i}: {:.3} Mbit/s, {rt} retransmissions", g / 1e6);
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
