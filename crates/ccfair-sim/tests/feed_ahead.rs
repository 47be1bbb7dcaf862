//! Handing packets on ahead of time (`world.rs`, `feed_ahead`) saves events and changes no
//! result: every table is bit-identical with it on and off, on paths where fed-ahead
//! channels queue, drop and lose packets, where simultaneous events are common (ideal
//! hosts put every packet on a lattice of serialisation times), and through chains of
//! fed-ahead channels.

mod common;

use ccfair_sim::spec::RunSpec;
use ccfair_sim::Simulation;
use common::*;
use serde_json::Value;

fn run(spec: &RunSpec, feed_ahead: bool) -> ccfair_sim::RunResult {
    Simulation::with_feed_ahead(spec.clone(), feed_ahead)
        .unwrap()
        .run()
}

/// Both runs give identical tables, and feeding ahead saved events.
fn assert_same_with_fewer_events(name: &str, spec: &RunSpec) {
    let on = run(spec, true);
    let off = run(spec, false);
    for (table, a, b) in [
        ("flows", &on.flows, &off.flows),
        ("timeseries", &on.timeseries, &off.timeseries),
        ("links", &on.links, &off.links),
        ("link_summary", &on.link_summary, &off.link_summary),
    ] {
        assert!(a.identical(b), "{name}: {table} differs with feeding ahead");
    }
    assert_eq!(on.stats.packet_hops, off.stats.packet_hops, "{name}");
    assert!(
        on.stats.events < off.stats.events,
        "{name}: {} events fed ahead, {} not",
        on.stats.events,
        off.stats.events
    );
}

/// A dumbbell whose links from the far switch to the receivers (fed ahead) are slower
/// than the bottleneck, with small buffers and random loss both ways: fed-ahead channels
/// queue, drop and lose packets, data and ACKs.
fn lossy_egress_dumbbell(ideal: bool) -> RunSpec {
    let ccas = [
        ("cubic", Value::Null),
        ("bbr", Value::Null),
        ("reno", Value::Null),
    ];
    let mut spec = dumbbell(&ccas, 100_000_000, 10 * MS, 60, 8 * S);
    for l in spec.links.iter_mut().filter(|l| l.name.starts_with("s2-")) {
        l.rate_bps = 40_000_000;
        l.buffer_pkts = 6;
        l.loss_ab = 0.002;
        l.loss_ba = 0.01;
    }
    spec.flows[1].start_ns = 500 * MS;
    spec.flows[2].size_bytes = Some(3_000_000);
    // The measurement window and the samples fall on instants where packets arrive.
    spec.measure_start_ns = 2 * S;
    spec.measure_end_ns = 6 * S;
    spec.sample_interval_ns = 4 * MS;
    if ideal {
        ideal_hosts(spec)
    } else {
        spec
    }
}

#[test]
fn a_dumbbell_with_queues_drops_and_losses_on_fed_channels_is_unchanged() {
    assert_same_with_fewer_events("lattice", &lossy_egress_dumbbell(true));
    assert_same_with_fewer_events("host latency", &lossy_egress_dumbbell(false));
}

#[test]
fn the_python_builders_dumbbell_is_unchanged() {
    let mut spec = fixture("dumbbell-2flows.json");
    spec.flows[0].cca = "bbr".into();
    assert_same_with_fewer_events("fixture", &spec);
}

/// At 10 Gbit/s with a deep buffer more packets are in the network than stay in the cache:
/// the engine prefetches each arrival's packet at its end host (`world.rs`,
/// `prefetch_next_arrival`). A prefetch is a hint; every table is as without feeding ahead.
#[test]
fn a_dumbbell_whose_packets_outgrow_the_cache_is_unchanged() {
    let ccas = [("cubic", Value::Null), ("bbr", Value::Null)];
    let mut spec = dumbbell(&ccas, 10_000_000_000, 10 * MS, 20_000, 600 * MS);
    for l in &mut spec.links {
        l.rate_bps = 10_000_000_000;
    }
    let on = run(&spec, true);
    assert!(
        on.stats.peak_packets > ccfair_sim::packet::PREFETCH_ABOVE_SLOTS as u64,
        "{} packets at most in the network",
        on.stats.peak_packets
    );
    assert_same_with_fewer_events("10 Gbit/s", &spec);
}

/// With a thousand flows the channels outgrow the cache and an end host's reply channel is
/// prefetched while the host handles a packet (`world.rs`, `CHANNEL_PREFETCH_ABOVE_BYTES`:
/// 4002 channels of 320 bytes). A hint again: every table is as without feeding ahead.
#[test]
fn a_thousand_flow_dumbbell_is_unchanged() {
    let ccas: Vec<(&str, Value)> = (0..1000).map(|_| ("cubic", Value::Null)).collect();
    let spec = dumbbell(&ccas, 1_000_000_000, 10 * MS, 1000, 300 * MS);
    assert_eq!(spec.links.len(), 2001);
    assert_same_with_fewer_events("1000 flows", &spec);
}

/// One flow over a chain of links (`n0` - `n1` - ... ), at the given rates and delay.
fn chain(rates: &[u64], delay_ns: u64, buffer: u32, duration_ns: u64) -> RunSpec {
    let n = rates.len();
    let nodes: Vec<String> = (0..=n).map(|i| format!("n{i}")).collect();
    let links = rates
        .iter()
        .enumerate()
        .map(|(i, &r)| link(&format!("l{i}"), i, i + 1, r, delay_ns, buffer))
        .collect();
    let mut spec = dumbbell(&[("cubic", Value::Null)], 1, 1, 1, duration_ns);
    spec.nodes = nodes;
    spec.links = links;
    let f = &mut spec.flows[0];
    (f.src, f.dst) = (0, n);
    f.path = (0..n).map(|i| 2 * i).collect();
    f.ack_path = (0..n).rev().map(|i| 2 * i + 1).collect();
    spec
}

/// One flow over four links in a row, each slower than the one before: the last three
/// are fed ahead, one after the other, and the slowest queues and drops. And over twelve,
/// where at most four in a row are fed ahead (`MAX_FEED_AHEAD_RUN`).
#[test]
fn a_chain_of_fed_channels_is_unchanged() {
    let rates = [1_000_000_000, 100_000_000, 30_000_000, 20_000_000];
    let short = chain(&rates, 3 * MS, 12, 5 * S);
    let rates: Vec<u64> = (0..12).map(|i| 200_000_000 - 10_000_000 * i).collect();
    let long = chain(&rates, MS, 30, 3 * S);
    for (spec, ideal) in [
        (&short, true),
        (&short, false),
        (&long, true),
        (&long, false),
    ] {
        let spec = if ideal {
            ideal_hosts(spec.clone())
        } else {
            spec.clone()
        };
        assert_same_with_fewer_events(
            &format!("chain of {} ideal={ideal}", spec.links.len()),
            &spec,
        );
    }
}

/// A packet handed on through fed-ahead channels holds an entry in each until it leaves
/// it: on a chain of 400 links that was about 22 kB per packet in flight (a 2,500-link
/// chain held 335 MB for 2,424 packets). At most `MAX_FEED_AHEAD_RUN` in a row are fed
/// ahead, so what a packet holds no longer grows with the chain.
#[test]
fn a_long_chain_holds_a_bounded_state_per_packet() {
    let spec = chain(&[1_000_000_000; 400], 0, 1000, 300 * MS);
    let r = Simulation::new(spec).unwrap().run();
    let per_packet = r.stats.packet_state_bytes / r.stats.peak_packets.max(1);
    assert!(r.stats.peak_packets > 100, "{:?}", r.stats);
    assert!(
        per_packet < 2_000,
        "{per_packet} bytes per packet: {:?}",
        r.stats
    );
}

/// Where packets reach the fed channels at the very instants of samples (a busy
/// bottleneck's lattice of serialisation times meets the 10 ms sampling grid), the samples
/// count them as the engine's order of simultaneous events does.
#[test]
fn simultaneous_arrivals_and_samples_are_ordered_as_without_it() {
    assert_same_with_fewer_events("a0.5", &fixture("dumbbell-bbr-cubic-a0.5.json"));
}
