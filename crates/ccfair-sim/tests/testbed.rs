//! End-to-end checks of the testbed options (issue 14): TSO bursts (`tcp.tso`) and netem's
//! queue (`LinkSpec::queue`) on the dumbbell of the experiments (50 Mbit/s, 18 ms one way,
//! 1 Gbit/s access links with 1 ms).

mod common;
use common::*;
use serde_json::json;

use ccfair_sim::spec::{Queue, Tso};
use ccfair_sim::table::{ColumnData, Table};
use ccfair_sim::{RunResult, Simulation};

const RATE: u64 = 50_000_000;
const DELAY: u64 = 18 * MS;

fn strs<'a>(t: &'a Table, name: &str) -> &'a [&'static str] {
    match t.column(name) {
        Some(ColumnData::Str(v)) => v,
        _ => panic!("no string column {name}"),
    }
}

/// One BBR flow (paced by TCP itself), traced, with TSO as given.
fn bbr_run(tso: Tso) -> RunResult {
    let mut spec = dumbbell(&[("bbr", json!({}))], RATE, DELAY, 100, 4 * S);
    spec.flows[0].tcp.tso = tso;
    spec.trace_flows = vec![0];
    Simulation::new(spec).unwrap().run()
}

/// Sizes of the bursts the sender hands its first link after `from_ns`: data packets
/// offered at the same instant left in one call of the sender (one skb with TSO).
fn bursts(r: &RunResult, from_ns: u64) -> Vec<usize> {
    let tr = r.trace.as_ref().expect("traced");
    let t = tr.u64("t_ns").unwrap();
    let hop = tr.u64("hop").unwrap();
    let ev = strs(tr, "event");
    let kind = strs(tr, "kind");
    let mut out: Vec<usize> = Vec::new();
    let mut last = None;
    for i in 0..t.len() {
        if hop[i] != 0 || kind[i] != "data" || ev[i] == "arrive" || t[i] < from_ns {
            continue;
        }
        if last == Some(t[i]) {
            *out.last_mut().unwrap() += 1;
        } else {
            out.push(1);
            last = Some(t[i]);
        }
    }
    out
}

/// Without TSO a paced flow sends one packet at a time; with TSO it sends skbs of about
/// 1 ms at its pacing rate (tcp_tso_autosize: (rate >> 10) / mss, at least 2), back to back.
#[test]
fn a_paced_flow_sends_skbs_of_a_millisecond_with_tso() {
    let off = bursts(&bbr_run(Tso::Off), S);
    // (A retransmission and a new segment may leave together.)
    let singles = off.iter().filter(|&&n| n == 1).count();
    assert!(
        singles * 100 >= off.len() * 99,
        "without TSO: {singles} of {}",
        off.len()
    );
    assert!(off.iter().all(|&n| n <= 2));

    let r = bbr_run(Tso::Linux);
    let on = bursts(&r, S);
    let mut hist = [0usize; 46];
    for &n in &on {
        assert!(n <= 45, "an skb holds at most 65343 B: {n} segments");
        hist[n] += 1;
    }
    let modal = (0..46).max_by_key(|&n| hist[n]).unwrap();
    // BBR paces at about 50 Mbit/s (gain 1 in PROBE_BW's cruise phase): 6103 B per ms, 4
    // segments; its probing phase (gain 1.25) and drain (0.75) give 5 and 3.
    assert_eq!(modal, 4, "burst sizes {:?}", &hist[..10]);
    let segs: usize = on.iter().sum();
    assert!(
        hist[3..=5]
            .iter()
            .zip(3..)
            .map(|(h, n)| h * n)
            .sum::<usize>()
            * 10
            >= segs * 9,
        "most segments leave in skbs of 3 to 5: {:?}",
        &hist[..10]
    );
    // The goodput is that of the flow without TSO within 2%.
    let g_on = goodput(&r.flows)[0];
    let g_off = goodput(&bbr_run(Tso::Off).flows)[0];
    assert!((g_on - g_off).abs() / g_off < 0.02, "{g_on} vs {g_off}");
}

/// A netem limit counts the delay line: one CUBIC flow whose bottleneck limit is the delay
/// line plus 20 packets queues about 20 packets at most once the delay line is full, where a
/// drop-tail buffer of the same size queues all of them.
#[test]
fn a_netem_limit_queues_only_what_exceeds_the_delay_line() {
    // 50 Mbit/s of 1500-byte packets at 18 ms: 75 packets in the delay line.
    let delay_line = ccfair_sim::netem::delay_line_pkts(RATE, DELAY, 1500);
    assert_eq!(delay_line, 75.0);
    let limit = 75 + 20;
    let run = |queue: Queue| {
        let mut spec = dumbbell(&[("cubic", json!({}))], RATE, DELAY, limit, 20 * S);
        spec.links[1].queue = queue;
        Simulation::new(spec).unwrap().run()
    };
    // Link summary row 2: link 1 (the bottleneck), direction a->b.
    let summary = |r: &RunResult| {
        let ls = &r.link_summary;
        (
            ls.f64("queue_delay_p95_ms").unwrap()[2],
            ls.u64("drop_queue_pkts").unwrap()[2],
            ls.f64("utilisation_frac").unwrap()[2],
        )
    };
    let (netem_p95_ms, netem_drops, netem_util) = summary(&run(Queue::Netem));
    let (tail_p95_ms, tail_drops, tail_util) = summary(&run(Queue::Droptail));
    let pkt_ms = 0.24; // 1500 B at 50 Mbit/s
                       // Sampled queues: netem's stays within the 20 packets above the delay line (one more
                       // for the packet in service), the drop-tail buffer's reaches its 95.
    assert!(netem_p95_ms <= 21.0 * pkt_ms, "netem p95 {netem_p95_ms} ms");
    assert!(
        tail_p95_ms >= 80.0 * pkt_ms,
        "drop-tail p95 {tail_p95_ms} ms"
    );
    // A shallower buffer: more losses, less of the link used.
    assert!(
        netem_drops > 2 * tail_drops,
        "drops {netem_drops} vs {tail_drops}"
    );
    assert!(
        netem_util < tail_util,
        "utilisation {netem_util} vs {tail_util}"
    );
}
