//! Queue disciplines at a dumbbell's bottleneck, end to end: TCP flows through CoDel,
//! fq_codel, PIE and RED (`qdisc/`, `link/serve.rs`), against what each is built to do;
//! determinism; and results that do not depend on when they are sampled.

mod common;

use ccfair_sim::spec::{Queue, RunSpec};
use ccfair_sim::table::Table;
use ccfair_sim::{RunResult, SimError, Simulation};
use common::*;
use serde_json::{json, Value};

const RATE: u64 = 50_000_000;
const DELAY: u64 = 20 * MS;

/// Two flows over a 50 Mbit/s, 20 ms bottleneck (RTT 44 ms, BDP 183 packets) with
/// `buffer` packets and the queue `queue` (`params` its table), measured from 5 s.
fn dumbbell_with(ccas: [&str; 2], queue: Queue, params: Value, buffer: u32, secs: u64) -> RunSpec {
    let ccas: Vec<(&str, Value)> = ccas.iter().map(|&c| (c, Value::Null)).collect();
    let mut spec = dumbbell(&ccas, RATE, DELAY, buffer, secs * S);
    let b = spec
        .links
        .iter_mut()
        .find(|l| l.name == "bottleneck")
        .unwrap();
    b.queue = queue;
    b.qdisc = params;
    spec.measure_start_ns = 5 * S;
    spec
}

fn run(spec: &RunSpec) -> RunResult {
    Simulation::new(spec.clone()).unwrap().run()
}

/// The bottleneck's a->b row of the link summary.
fn bottleneck_row(spec: &RunSpec, r: &RunResult) -> usize {
    let link = spec
        .links
        .iter()
        .position(|l| l.name == "bottleneck")
        .unwrap() as u64;
    let links = r.link_summary.u64("link").unwrap();
    (0..links.len())
        .find(|&i| links[i] == link)
        .expect("the bottleneck's row")
}

fn f(t: &Table, col: &str, row: usize) -> f64 {
    t.f64(col).unwrap_or_else(|| panic!("{col}"))[row]
}

fn u(t: &Table, col: &str, row: usize) -> u64 {
    t.u64(col).unwrap_or_else(|| panic!("{col}"))[row]
}

/// The bottleneck's numbers, for messages.
fn report(spec: &RunSpec, r: &RunResult) -> String {
    let row = bottleneck_row(spec, r);
    let t = &r.link_summary;
    format!(
        "sojourn p50/p95/p99 {:.2}/{:.2}/{:.2} ms, mean {:.2} ms, drops aqm {} queue {}, marks {}, utilisation {:.3}, goodput {:?}",
        f(t, "sojourn_p50_ms", row),
        f(t, "sojourn_p95_ms", row),
        f(t, "sojourn_p99_ms", row),
        f(t, "sojourn_mean_ms", row),
        u(t, "drop_aqm_pkts", row),
        u(t, "drop_queue_pkts", row),
        u(t, "mark_aqm_pkts", row),
        f(t, "utilisation_frac", row),
        r.flows.f64("goodput_mbps").unwrap(),
    )
}

fn shares(r: &RunResult) -> Vec<f64> {
    let g = goodput(&r.flows);
    let total: f64 = g.iter().sum();
    g.iter().map(|x| x / total).collect()
}

/// CUBIC fills a drop-tail buffer of 1000 packets (240 ms at 50 Mbit/s); CoDel holds the
/// standing queue near its 5 ms target instead, dropping at dequeue, with the link still
/// nearly full.
#[test]
fn codel_keeps_the_sojourn_near_its_target() {
    let codel = dumbbell_with(["cubic", "cubic"], Queue::Codel, Value::Null, 1000, 30);
    let r = run(&codel);
    let row = bottleneck_row(&codel, &r);
    let t = &r.link_summary;
    let p50 = f(t, "sojourn_p50_ms", row);
    let p95 = f(t, "sojourn_p95_ms", row);
    let what = report(&codel, &r);
    // At least a packet's serialisation (0.24 ms), below the target most of the time.
    assert!(p50 > 0.24 && p50 < 5.0, "{what}");
    assert!(p95 < 15.0, "{what}");
    // CUBIC backs off a few seconds apart: a handful of drops per flow suffice.
    assert!(u(t, "drop_aqm_pkts", row) >= 5, "{what}");
    assert_eq!(u(t, "drop_queue_pkts", row), 0, "{what}");
    assert!(f(t, "utilisation_frac", row) > 0.95, "{what}");
    assert_eq!(
        t.column("queue"),
        Some(&ccfair_sim::table::ColumnData::Str(
            (0..t.n_rows())
                .map(|i| if i / 2 == row / 2 {
                    "codel"
                } else {
                    "droptail"
                })
                .collect()
        ))
    );
    let droptail = dumbbell_with(["cubic", "cubic"], Queue::Droptail, Value::Null, 1000, 30);
    let d = run(&droptail);
    let mean = f(&d.link_summary, "sojourn_mean_ms", row);
    assert!(mean > 100.0, "drop-tail sojourn {mean} ms");
    assert!(f(&d.link_summary, "sojourn_p50_ms", row).is_nan());
}

/// fq_codel gives BBR and CUBIC a queue each and serves them byte-fairly: each gets about
/// half, where a shared drop-tail queue of the same size lets one take most of the link.
#[test]
fn fq_codel_isolates_bbr_from_cubic() {
    let fq = dumbbell_with(
        ["bbr", "cubic"],
        Queue::FqCodel,
        json!({"hash": "per_flow"}),
        1000,
        40,
    );
    let r = run(&fq);
    let s = shares(&r);
    let what = report(&fq, &r);
    assert!(s.iter().all(|&x| (0.4..0.6).contains(&x)), "{what}");
    let row = bottleneck_row(&fq, &r);
    let t = &r.link_summary;
    assert!(f(t, "fq_new_flow_count", row) >= 2.0, "{what}");
    assert_eq!(f(t, "fq_shared_flows", row), 0.0);
    assert!(f(t, "sojourn_p50_ms", row) < 15.0, "{what}");
    let dt = dumbbell_with(["bbr", "cubic"], Queue::Droptail, Value::Null, 1000, 40);
    let s = shares(&run(&dt));
    assert!((s[0] - s[1]).abs() > 0.3, "drop-tail shares {s:?}");
}

/// PIE steers the queueing delay to its 15 ms target: the median sojourn within a few
/// ms of it, far below the drop-tail buffer's.
#[test]
fn pie_holds_the_delay_near_its_target() {
    let pie = dumbbell_with(["cubic", "cubic"], Queue::Pie, Value::Null, 1000, 30);
    let r = run(&pie);
    let row = bottleneck_row(&pie, &r);
    let t = &r.link_summary;
    let p50 = f(t, "sojourn_p50_ms", row);
    let what = report(&pie, &r);
    assert!((10.0..20.0).contains(&p50), "{what}");
    assert!(u(t, "drop_aqm_pkts", row) >= 5, "{what}");
    assert_eq!(u(t, "drop_queue_pkts", row), 0, "{what}");
    assert!(f(t, "utilisation_frac", row) > 0.95, "{what}");
}

/// RED marks from its minimum threshold and always at its maximum (tc's defaults from a
/// 1000-packet limit of 1.5 MB: max 375 kB, min 125 kB, i.e. 20 and 60 ms at 50 Mbit/s):
/// CUBIC backs off before the queue reaches the maximum's delay, and after each back-off
/// the queue drains below the minimum (a 30% cut of a window of BDP + 20 ms leaves less
/// than the BDP), so the sojourn stays under 60 ms with early drops only.
#[test]
fn red_keeps_the_queue_between_its_thresholds() {
    let red = dumbbell_with(
        ["cubic", "cubic"],
        Queue::Red,
        json!({"probability": 0.1}),
        1000,
        30,
    );
    let r = run(&red);
    let row = bottleneck_row(&red, &r);
    let t = &r.link_summary;
    let what = report(&red, &r);
    assert!(f(t, "sojourn_p50_ms", row) > 5.0, "{what}");
    assert!(f(t, "sojourn_p99_ms", row) < 60.0, "{what}");
    assert!(u(t, "drop_aqm_pkts", row) >= 5, "{what}");
    assert_eq!(u(t, "drop_queue_pkts", row), 0, "{what}");
    assert!(f(t, "utilisation_frac", row) > 0.95, "{what}");
}

fn assert_identical(name: &str, a: &RunResult, b: &RunResult) {
    for (table, x, y) in [
        ("flows", &a.flows, &b.flows),
        ("timeseries", &a.timeseries, &b.timeseries),
        ("links", &a.links, &b.links),
        ("link_summary", &a.link_summary, &b.link_summary),
    ] {
        assert!(x.identical(y), "{name}: {table} differs");
    }
}

/// Same spec and seed: identical tables, for every discipline (PIE and RED draw from
/// the link's seeded stream, fq_codel's hash key too).
#[test]
fn same_seed_same_results() {
    for (queue, params) in [
        (Queue::Codel, json!({"ecn": true})),
        (Queue::FqCodel, Value::Null),
        (Queue::Pie, Value::Null),
        (Queue::Red, json!({"ecn": true})),
    ] {
        let spec = dumbbell_with(["cubic", "bbr"], queue, params, 300, 8);
        assert_identical(queue.name(), &run(&spec), &run(&spec));
    }
}

/// A queue discipline is never changed by being looked at: the same run sampled every
/// 10 ms and every 7 ms has the same goodput, drops and link counters (only what comes
/// from the samples differs).
#[test]
fn sampling_changes_no_result() {
    for queue in [Queue::Codel, Queue::FqCodel, Queue::Pie, Queue::Red] {
        let a = dumbbell_with(["cubic", "bbr"], queue, Value::Null, 300, 8);
        let mut b = a.clone();
        b.sample_interval_ns = 7 * MS;
        let (ra, rb) = (run(&a), run(&b));
        let same = |x: &Table, y: &Table, col: &str| {
            let pick = |t: &Table| Table {
                columns: vec![(col.to_string(), t.column(col).unwrap().clone())],
            };
            assert!(pick(x).identical(&pick(y)), "{}: {col}", queue.name());
        };
        for col in ["goodput_mbps", "retrans_pkts", "data_dropped_pkts"] {
            same(&ra.flows, &rb.flows, col);
        }
        for col in [
            "arrival_pkts",
            "drop_queue_pkts",
            "drop_aqm_pkts",
            "tx_pkts",
            "sojourn_mean_ms",
            "sojourn_p99_ms",
        ] {
            same(&ra.link_summary, &rb.link_summary, col);
        }
        assert_eq!(ra.stats.packet_hops, rb.stats.packet_hops);
    }
}

/// Queue disciplines on the hosts' access links too: the hosts' packets reach them after
/// the hosts' turnaround, offered ahead of time (`link/serve.rs`), with random loss on the
/// bottleneck. The run conserves every packet (checked at its end in debug builds) and
/// its trace shows the AQM's drops; tracing changes no result.
#[test]
fn queue_disciplines_everywhere_with_loss_and_a_trace() {
    let mut spec = dumbbell_with(["cubic", "cubic"], Queue::FqCodel, Value::Null, 200, 6);
    for l in &mut spec.links {
        if l.name != "bottleneck" {
            l.queue = Queue::Codel;
            l.qdisc = json!({"ecn": true});
        } else {
            l.loss_ab = 0.001;
        }
    }
    let plain = run(&spec);
    let row = bottleneck_row(&spec, &plain);
    assert!(u(&plain.link_summary, "drop_random_pkts", row) > 0);
    spec.trace_flows = vec![0];
    let traced = run(&spec);
    assert_identical("trace", &plain, &traced);
    let trace = traced.trace.expect("a trace");
    let events = match trace.column("event") {
        Some(ccfair_sim::table::ColumnData::Str(v)) => v.clone(),
        other => panic!("{other:?}"),
    };
    for e in ["enqueue", "arrive", "drop_wire"] {
        assert!(events.contains(&e), "{e}");
    }
    assert!(
        events.contains(&"drop_aqm") || events.contains(&"drop_queue"),
        "no drop traced"
    );
}

/// The engine refuses bad parameters with the field and value named.
#[test]
fn bad_parameters_are_named() {
    let mut spec = dumbbell_with(
        ["cubic", "cubic"],
        Queue::Codel,
        json!({"interval_ns": 0}),
        100,
        6,
    );
    let err = Simulation::new(spec.clone()).err().expect("refused");
    let link = spec
        .links
        .iter()
        .position(|l| l.name == "bottleneck")
        .unwrap();
    match &err {
        SimError::Spec { path, message } => {
            assert_eq!(path, &format!("links[{link}].qdisc.interval_ns"));
            assert_eq!(message, "0 must be > 0");
        }
        other => panic!("{other:?}"),
    }
    spec.links[link].queue = Queue::Droptail;
    spec.links[link].qdisc = json!({"target_ns": 1});
    let err = Simulation::new(spec.clone()).err().expect("refused");
    assert!(err.to_string().contains("takes no parameters"), "{err}");
    spec.links[link].queue = Queue::Red;
    spec.links[link].qdisc = json!({"min_bytes": 90000, "max_bytes": 30000});
    let err = Simulation::new(spec.clone()).err().expect("refused");
    assert!(err.to_string().contains("max_bytes"), "{err}");
    let text = serde_json::to_string(&spec).unwrap();
    let bad = text.replace("\"red\"", "\"sfq\"");
    let err = ccfair_sim::parse_spec(&bad).expect_err("refused");
    assert!(err.to_string().contains("queue"), "{err}");
}
