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

fn with_loss(mut spec: ccfair_sim::spec::RunSpec, p: f64) -> ccfair_sim::spec::RunSpec {
    let n = spec.flows.len();
    spec.links[n].loss_ab = p; // the bottleneck, data direction
    spec
}

/// The flows table of one Reno flow, 20 Mbit/s, 10 ms, a 50-packet buffer, 30 s, through
/// random loss at `loss`, with its TCP options changed by `tweak`.
fn lossy_reno_flow(
    loss: f64,
    tweak: impl Fn(&mut ccfair_sim::spec::TcpOptions),
) -> ccfair_sim::table::Table {
    let mut spec = with_loss(
        dumbbell(&[("reno", json!({}))], 20_000_000, 10 * MS, 50, 30 * S),
        loss,
    );
    tweak(&mut spec.flows[0].tcp);
    Simulation::new(spec).unwrap().run().flows
}

/// A count column of a one-flow table.
fn col(t: &ccfair_sim::table::Table, c: &str) -> u64 {
    t.u64(c).unwrap()[0]
}

/// Prints what the lossy-flow tests compare, for a reader of a failure.
fn print_recovery(name: &str, t: &ccfair_sim::table::Table) {
    eprintln!(
        "{name}: goodput {:.2} Mbit/s, dropped {}, retrans {}, recoveries {}, rto {}, tlp {}, \
         acks {}",
        goodput(t)[0] / 1e6,
        col(t, "data_dropped_pkts"),
        col(t, "retrans_pkts"),
        col(t, "recovery_count"),
        col(t, "rto_count"),
        col(t, "tlp_count"),
        col(t, "ack_sent_pkts"),
    );
}

/// `tcp.sack = false`: a Reno flow through 1% random loss recovers by NewReno (dupack
/// counting, one hole per partial ACK) without loss probes, mostly by fast recovery, and
/// keeps most of the SACK flow's rate; its receiver sends an immediate dupack for every
/// out-of-order segment (no SACK compression), so more ACKs than with SACK. Without SACK
/// a timeout marks the whole window lost and resends what the receiver already holds
/// (`tcp_timeout_mark_lost`), so retransmissions exceed drops, but boundedly.
#[test]
fn lossy_reno_without_sack_recovers_by_newreno() {
    let (with, without) = (
        lossy_reno_flow(0.01, |_| {}),
        lossy_reno_flow(0.01, |tcp| tcp.sack = false),
    );
    for (name, t) in [("sack", &with), ("no sack", &without)] {
        print_recovery(name, t);
    }
    assert_eq!(col(&without, "tlp_count"), 0, "no loss probes without SACK");
    let dropped = col(&without, "data_dropped_pkts");
    let retrans = col(&without, "retrans_pkts");
    assert!(dropped > 100, "{dropped}");
    assert!(
        retrans >= dropped - 5 && retrans <= 2 * dropped,
        "{retrans} vs {dropped}"
    );
    // With SACK every retransmission repairs a drop.
    assert!(col(&with, "retrans_pkts") <= col(&with, "data_dropped_pkts") + 5);
    // Fast recovery, not timeouts, repairs most losses.
    let (recoveries, rtos) = (col(&without, "recovery_count"), col(&without, "rto_count"));
    assert!(
        recoveries > 4 * rtos,
        "{recoveries} recoveries, {rtos} RTOs"
    );
    assert!(
        goodput(&without)[0] > 0.6 * goodput(&with)[0],
        "NewReno keeps most of SACK's rate"
    );
    assert!(col(&without, "ack_sent_pkts") > col(&with, "ack_sent_pkts"));
}

/// `tcp.rack = false` (`net.ipv4.tcp_recovery = 0` on Linux before 6.17): a SACK flow
/// through 5% random loss marks losses by the duplicate threshold instead of RACK. A hole
/// with fewer than three SACKed segments above it, and a lost retransmission, are then
/// found only by the retransmission timer (no loss probe outside Open and CWR), so the flow
/// times out more often than with RACK; it still repairs most losses by fast recovery,
/// and every retransmission still repairs a drop.
#[test]
fn lossy_sack_flow_without_rack_recovers_by_dupthresh() {
    let (with, without) = (
        lossy_reno_flow(0.05, |_| {}),
        lossy_reno_flow(0.05, |tcp| tcp.rack = false),
    );
    for (name, t) in [("rack", &with), ("no rack", &without)] {
        print_recovery(name, t);
    }
    assert!(
        !with.identical(&without),
        "rack = false must change the run"
    );
    let rto = |t: &ccfair_sim::table::Table| col(t, "rto_count");
    assert!(
        rto(&without) >= rto(&with) + 5,
        "RACK repairs what dupthresh leaves to the timer: {} vs {} RTOs",
        rto(&without),
        rto(&with)
    );
    // Still SACK: every retransmission repairs a drop (no go-back-N after a timeout).
    assert!(col(&without, "retrans_pkts") <= col(&without, "data_dropped_pkts") + 5);
    assert!(col(&without, "recovery_count") > 4 * rto(&without));
    assert!(goodput(&without)[0] > 0.8 * goodput(&with)[0]);
}

#[test]
fn same_seed_gives_identical_tables() {
    let mk = || {
        let s = dumbbell(
            &[("reno", json!({})), ("reno", json!({}))],
            20_000_000,
            10 * MS,
            50,
            10 * S,
        );
        with_loss(s, 0.005)
    };
    let a = Simulation::new(mk()).unwrap().run();
    let b = Simulation::new(mk()).unwrap().run();
    assert!(a.flows.identical(&b.flows));
    assert!(a.timeseries.identical(&b.timeseries));
    assert!(a.links.identical(&b.links));
    assert!(a.link_summary.identical(&b.link_summary));
    assert!(a.timeseries.n_rows() > 0);
}

#[test]
fn different_seeds_differ_where_randomness_is_used() {
    let mk = |seed| {
        let mut s = dumbbell(&[("reno", json!({}))], 20_000_000, 10 * MS, 50, 10 * S);
        s.seed = seed;
        with_loss(s, 0.005)
    };
    let a = Simulation::new(mk(1)).unwrap().run();
    let b = Simulation::new(mk(2)).unwrap().run();
    assert_ne!(a.flows.u64("retrans_pkts"), b.flows.u64("retrans_pkts"));
    // Hosts take a random time to react (host.rs), so even without random loss two seeds
    // differ; with ideal hosts nothing is random and seeds give identical results.
    let seeded = |seed, ideal: bool| {
        let mut s = dumbbell(&[("reno", json!({}))], 20_000_000, 10 * MS, 50, 5 * S);
        s.seed = seed;
        let s = if ideal { ideal_hosts(s) } else { s };
        Simulation::new(s).unwrap().run()
    };
    assert!(!seeded(1, false)
        .timeseries
        .identical(&seeded(2, false).timeseries));
    assert!(seeded(1, true).flows.identical(&seeded(2, true).flows));
}

#[test]
fn adding_an_unrelated_flow_does_not_perturb_random_streams() {
    let mut a = dumbbell(&[("reno", json!({}))], 20_000_000, 10 * MS, 50, 5 * S);
    a.links[1].loss_ab = 0.01; // the bottleneck
    let mut b = a.clone();
    // A second, disjoint network with its own lossy link and flow.
    let x = b.nodes.len();
    b.nodes.push("x".into());
    b.nodes.push("y".into());
    b.links.push(link("xy", x, x + 1, 10_000_000, 5 * MS, 20));
    let ch = 2 * (b.links.len() - 1);
    b.links.last_mut().unwrap().loss_ab = 0.02;
    let mut f = b.flows[0].clone();
    f.name = "other".into();
    f.src = x;
    f.dst = x + 1;
    f.path = vec![ch];
    f.ack_path = vec![ch + 1];
    b.flows.push(f);
    let ra = Simulation::new(a).unwrap().run();
    let rb = Simulation::new(b).unwrap().run();
    let first = |t: &ccfair_sim::table::Table| t.u64("retrans_pkts").unwrap()[0];
    assert!(first(&ra.flows) > 0, "random loss drops packets of flow 0");
    assert_eq!(first(&ra.flows), first(&rb.flows));
    assert_eq!(
        goodput(&ra.flows)[0].to_bits(),
        goodput(&rb.flows)[0].to_bits()
    );
    assert!(rb.flows.u64("retrans_pkts").unwrap()[1] > 0);
}

#[test]
fn packets_are_conserved_and_queues_stay_within_buffers() {
    let rate = 20_000_000;
    let s = with_loss(
        dumbbell(
            &[
                ("reno", json!({})),
                ("reno", json!({})),
                ("reno", json!({})),
            ],
            rate,
            5 * MS,
            8,
            10 * S,
        ),
        0.01,
    );
    let buffers: Vec<u32> = s.links.iter().map(|l| l.buffer_pkts).collect();
    let r = Simulation::new(s).unwrap().run();
    let f = &r.flows;
    let sent = f.u64("data_sent_pkts").unwrap();
    let recv = f.u64("data_received_pkts").unwrap();
    let drop = f.u64("data_dropped_pkts").unwrap();
    let net = f.u64("data_in_network_pkts").unwrap();
    for i in 0..sent.len() {
        assert_eq!(sent[i], recv[i] + drop[i] + net[i], "flow {i}");
        assert!(
            drop[i] > 0,
            "the shallow buffer and random loss drop packets"
        );
    }
    let q = r.links.u64("queue_pkts").unwrap();
    let link = r.links.u64("link").unwrap();
    for (qi, li) in q.iter().zip(link) {
        assert!(*qi <= buffers[*li as usize] as u64);
    }
    assert!(q.contains(&8), "the bottleneck queue reaches its buffer");
}

#[test]
fn two_reno_flows_with_equal_rtt_share_fairly_over_120s() {
    let rate = 50_000_000;
    let delay = 18 * MS;
    let bdp = bdp_pkts(rate, delay).round() as u32;
    let spec = dumbbell(
        &[("reno", json!({})), ("reno", json!({}))],
        rate,
        delay,
        bdp,
        120 * S,
    );
    let r = Simulation::new(spec).unwrap().run();
    let g = goodput(&r.flows);
    let j = jain(&g);
    eprintln!(
        "reno x2: {:?} Mbit/s, Jain {j:.4}",
        g.iter().map(|x| x / 1e6).collect::<Vec<_>>()
    );
    assert!(j >= 0.95, "Jain {j}");
    let total: f64 = g.iter().sum();
    assert!(total >= 0.95 * rate as f64 * 1448.0 / 1500.0);
}

#[test]
fn single_cubic_flow_fills_the_pipe_at_one_and_two_bdp() {
    let rate = 50_000_000;
    let delay = 18 * MS;
    let bdp = bdp_pkts(rate, delay);
    for alpha in [1.0, 2.0] {
        let buffer = (alpha * bdp).round() as u32;
        let spec = dumbbell(&[("cubic", json!({}))], rate, delay, buffer, 60 * S);
        let r = Simulation::new(spec).unwrap().run();
        let g = goodput(&r.flows)[0];
        let ceiling = rate as f64 * 1448.0 / 1500.0;
        eprintln!(
            "cubic alpha {alpha}: {:.2}% of ceiling",
            100.0 * g / ceiling
        );
        assert!(g >= 0.95 * ceiling, "alpha {alpha}: {g} < 95% of {ceiling}");
    }
}

#[test]
fn cubic_recovers_to_seventy_percent_after_loss() {
    // After each fast recovery, CUBIC's cwnd is 0.7 x cwnd at loss (PRR ends at ssthresh).
    let rate = 20_000_000;
    let spec = dumbbell(&[("cubic", json!({}))], rate, 10 * MS, 40, 30 * S);
    let r = Simulation::new(spec).unwrap().run();
    let ts = &r.timeseries;
    let state = match ts.column("tcp_ca_state").unwrap() {
        ccfair_sim::table::ColumnData::Str(v) => v.clone(),
        _ => unreachable!(),
    };
    let cwnd = ts.f64("cwnd_pkts").unwrap();
    let ssthresh = ts.f64("ssthresh_pkts").unwrap();
    assert!(r.flows.u64("recovery_count").unwrap()[0] >= 3);
    // Whenever the flow is back in Open after a recovery, ssthresh ~ 0.7 of a previous cwnd
    // and cwnd starts from ssthresh.
    let mut checked = 0;
    for i in 1..state.len() {
        if state[i - 1] == "Recovery" && state[i] == "Open" {
            assert!(
                cwnd[i] >= ssthresh[i] && cwnd[i] <= ssthresh[i] + 10.0,
                "{i}"
            );
            let peak = cwnd[..i].iter().cloned().fold(0.0, f64::max);
            assert!(ssthresh[i] <= 0.7 * peak + 1.0);
            checked += 1;
        }
    }
    assert!(checked >= 2, "saw {checked} recovery exits");
}

#[test]
fn start_jitter_makes_repetitions_differ_and_stays_in_its_window() {
    let mk = |seed: u64, jitter: u64| {
        let mut s = dumbbell(
            &[("reno", json!({})), ("cubic", json!({}))],
            20_000_000,
            10 * MS,
            50,
            10 * S,
        );
        s.seed = seed;
        for f in &mut s.flows {
            f.start_ns = 100 * MS;
            f.start_jitter_ns = jitter;
        }
        s
    };
    for seed in 1..20 {
        for (i, t) in mk(seed, 5 * MS).flow_starts_ns().into_iter().enumerate() {
            assert!(
                (100 * MS..=105 * MS).contains(&t),
                "seed {seed} flow {i}: {t}"
            );
        }
    }
    assert_ne!(
        mk(1, 5 * MS).flow_starts_ns(),
        mk(2, 5 * MS).flow_starts_ns()
    );
    assert_eq!(mk(3, 0).flow_starts_ns(), vec![100 * MS, 100 * MS]);
    // With ideal hosts and without jitter the seed changes nothing here; with it,
    // repetitions differ.
    let g = |s| goodput(&Simulation::new(ideal_hosts(s)).unwrap().run().flows);
    assert_eq!(g(mk(1, 0)), g(mk(2, 0)));
    assert_ne!(g(mk(1, 5 * MS)), g(mk(2, 5 * MS)));
}

/// The three-way handshake: SYN and SYN-ACK (60 B) cross the path once, data follows one
/// RTT after the start, and the handshake's RTT is the first sample (min RTT, BBR's model).
#[test]
fn data_follows_the_handshake_and_its_rtt_is_the_first_sample() {
    let rate = 50_000_000;
    let spec = dumbbell(&[("bbr", json!({}))], rate, 18 * MS, 1000, 2 * S);
    let r = Simulation::new(ideal_hosts(spec.clone())).unwrap().run();
    let col = |r: &ccfair_sim::RunResult, name: &str| r.flows.f64(name).unwrap()[0];
    // 40 ms of propagation plus 60 B serialised on two 1 Gbit/s links and the bottleneck,
    // each way: 2 x (480 + 9600 + 480) ns.
    let hs_ns = 40 * MS + 2 * (480 + 9_600 + 480);
    assert_eq!(col(&r, "syn_sent_s"), 0.0);
    assert_eq!(col(&r, "handshake_rtt_ms"), hs_ns as f64 / 1e6);
    assert_eq!(col(&r, "first_data_sent_s"), hs_ns as f64 / 1e9);
    assert_eq!(r.flows.u64("syn_retrans_pkts").unwrap()[0], 0);
    assert_eq!(col(&r, "rtt_min_ms"), (hs_ns / 1_000) as f64 / 1e3);
    // BBR's first RTprop is the handshake RTT (bbr_init reads tcp_min_rtt).
    let rtprop = r.timeseries.f64("bbr_rtprop_ms").unwrap();
    assert_eq!(rtprop[5], (hs_ns / 1_000) as f64 / 1e3);

    // With the measured host latency the SYN leaves 73-248 us after the start and the first
    // data 91-333 us after the SYN-ACK arrives (host.rs tables), different per seed.
    let mut syns = Vec::new();
    for seed in 1..6 {
        let mut s = spec.clone();
        s.seed = seed;
        let r = Simulation::new(s).unwrap().run();
        let syn = col(&r, "syn_sent_s");
        let synack = syn + col(&r, "handshake_rtt_ms") / 1e3;
        let write = col(&r, "first_data_sent_s") - synack;
        assert!((73e-6..248e-6).contains(&syn), "seed {seed}: SYN at {syn}");
        assert!(
            (91e-6..334e-6).contains(&write),
            "seed {seed}: data {write} after"
        );
        syns.push(syn);
    }
    syns.dedup();
    assert_eq!(syns.len(), 5, "launch offsets differ per seed: {syns:?}");

    // Without the handshake (an idealisation) data leaves at the start with no sample.
    let mut s = ideal_hosts(spec);
    s.flows[0].tcp.handshake = false;
    let r = Simulation::new(s).unwrap().run();
    assert!(col(&r, "syn_sent_s").is_nan());
    assert_eq!(col(&r, "first_data_sent_s"), 0.0);
}

/// The receive window (tcp/rcvbuf.rs): with `tcp_rmem[2]` = 256 KiB the window is capped at
/// 62.5% of it (the TUN skb's payload/truesize ratio, 1448/2304), 160 KiB, so a CUBIC flow
/// over a 40 ms path with a 4 BDP buffer gets at most 160 KiB per RTT (32.8 Mbit/s)
/// whatever its cwnd; with buffers that fit ("fit", the default) it fills the link; and
/// autotuning grows the window far beyond the 64 KiB of the handshake (13 Mbit/s).
#[test]
fn the_receive_window_caps_a_flow_and_autotuning_grows_it() {
    use ccfair_sim::spec::Rmem;
    let rate = 50_000_000;
    let delay = 18 * MS;
    let bdp = bdp_pkts(rate, delay).round() as u32;
    let run = |rmem: Rmem| {
        let mut spec = dumbbell(&[("cubic", json!({}))], rate, delay, 4 * bdp, 20 * S);
        spec.flows[0].tcp.rmem = rmem;
        Simulation::new(spec).unwrap().run()
    };
    let capped = run(Rmem::Bytes([4096, 131_072, 262_144]));
    let g = goodput(&capped.flows)[0];
    let window_bytes = 262_144.0 * 160.0 / 256.0;
    let ceiling_by_window = window_bytes * 8.0 / 0.040;
    eprintln!("window-capped: {:.2} Mbit/s", g / 1e6);
    assert!(g <= ceiling_by_window, "{g} above {ceiling_by_window}");
    assert!(g >= 0.85 * ceiling_by_window, "{g}");
    // The bottleneck queue stays short: the window, not the buffer, limits the flow.
    let cwnd = capped.timeseries.f64("inflight_pkts").unwrap();
    let most = cwnd.iter().cloned().fold(0.0, f64::max);
    assert!(most <= window_bytes / 1448.0 + 1.0, "inflight {most}");
    let fit = run(Rmem::Named(ccfair_sim::spec::RmemName::Fit));
    let g = goodput(&fit.flows)[0];
    let ceiling = rate as f64 * 1448.0 / 1500.0;
    eprintln!("fit: {:.2} Mbit/s", g / 1e6);
    assert!(g >= 0.95 * ceiling, "{g}");
}
