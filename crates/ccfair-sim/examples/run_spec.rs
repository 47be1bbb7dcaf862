//! Run a resolved spec (JSON file, e.g. from `ccfair check --engine`) and print engine
//! statistics and per-flow goodput: for profiling and comparing engines without Python.
//!
//! `cargo run --release -p ccfair-sim --example run_spec -- [--digest] spec.json [MEMORY_LIMIT_GB [EVENTS]]`
//!
//! `--digest` also prints a digest of every result table (`Table::digest`) and the packet-hop
//! count: engine work that must not change results is checked by comparing these before and
//! after, without building the Python package (benches/README.md, "Bit-identical"). It also
//! prints one digest per column (`digest-column TABLE COLUMN HASH`), so that work which adds
//! columns can show that every column that was there before is unchanged.
//!
//! The optional arguments raise the estimated-memory limit (default 2 GB) and the events
//! limit (default 2e10), e.g. for the 1000- and 10,000-flow dumbbells of the scale curve
//! (benches/scale_curve.py), whose estimates are far above what they use.

fn main() {
    let usage = "usage: run_spec [--digest] SPEC.json [MEMORY_LIMIT_GB [EVENTS]]";
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let digest = args.first().is_some_and(|a| a == "--digest");
    if digest {
        args.remove(0);
    }
    let mut args = args.into_iter();
    let path = args.next().expect(usage);
    let mut limits = ccfair_sim::Limits::default();
    if let Some(gb) = args.next() {
        let gb: f64 = gb.parse().expect(usage);
        limits.memory_bytes = (gb * 1e9) as u64;
    }
    if let Some(events) = args.next() {
        limits.events = events.parse().expect(usage);
    }
    let json = std::fs::read_to_string(&path).expect("read spec");
    let t0 = std::time::Instant::now();
    match ccfair_sim::run_json(&json, &limits) {
        Ok(r) => {
            println!(
                "wall {:.3} s, {} events, {} packet-hops, peak heap {}, {} timeseries rows, \
                 packet state {:.1} MB, at most {} packets in the network",
                t0.elapsed().as_secs_f64(),
                r.stats.events,
                r.stats.packet_hops,
                r.stats.peak_heap_len,
                r.timeseries.n_rows(),
                r.stats.packet_state_bytes as f64 / 1e6,
                r.stats.peak_packets
            );
            if digest {
                let mut tables = vec![
                    ("flows", &r.flows),
                    ("timeseries", &r.timeseries),
                    ("links", &r.links),
                    ("link_summary", &r.link_summary),
                ];
                if let Some(trace) = &r.trace {
                    tables.push(("trace", trace));
                }
                println!("digest packet_hops {}", r.stats.packet_hops);
                for (name, table) in &tables {
                    println!("digest {name} {:016x}", table.digest());
                }
                for (name, table) in &tables {
                    for (column, data) in &table.columns {
                        let one = ccfair_sim::table::Table {
                            columns: vec![(column.clone(), data.clone())],
                        };
                        println!("digest-column {name} {column} {:016x}", one.digest());
                    }
                }
            }
            let g = r.flows.f64("goodput_mbps").unwrap();
            let rt = r.flows.u64("retrans_pkts").unwrap();
            for (i, (g, rt)) in g.iter().zip(rt).enumerate() {
                println!("flow {i}: {g:.3} Mbit/s, {rt} retransmissions");
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
