//! A bounded, seeded fuzz test of the engine's entry point (`run_json`), on stable Rust.
//!
//! cargo-fuzz needs a nightly toolchain, which CI does not install; this harness does the same
//! job within `cargo test`: it mutates a valid resolved spec (numbers set to extremes, types
//! swapped, entries dropped or duplicated) and runs every mutant with small limits, asserting
//! that each one returns a result or a typed error and never panics (the test profile keeps
//! overflow checks on, so an arithmetic overflow is a panic here too). Each mutant is bounded
//! by the event limit, so the whole test takes seconds.
//!
//! `CCFAIR_FUZZ_ITERS=20000 cargo test -p ccfair-sim --test fuzz --release` runs a longer
//! campaign; `CCFAIR_FUZZ_SEED` picks another sequence.

mod common;

use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

/// Where the last panic happened (set by the test's panic hook).
static LAST_PANIC_AT: Mutex<String> = Mutex::new(String::new());

use ccfair_cc::rng::Rng;
use ccfair_sim::spec::{Rmem, RmemName};
use ccfair_sim::{run_json, Limits};
use common::{dumbbell, S};
use serde_json::{json, Value};

fn base_spec() -> Value {
    let ccas: Vec<(&str, Value)> = ["cubic", "bbr", "copa", "reno"]
        .iter()
        .map(|&c| (c, ccfair_cc::normalize_params(c, &json!({})).unwrap()))
        .collect();
    let mut spec = dumbbell(&ccas, 20_000_000, 5_000_000, 50, 2 * S);
    spec.trace_flows = vec![0];
    // Every form of the receive buffer (`tcp/rcvbuf.rs`): "fit" (flows 0, 3), Linux's stock
    // setting, and three numbers small enough that the window limits the flow; and a
    // truesize other than the default, so that mutations reach each of them.
    spec.flows[1].tcp.rmem = Rmem::Named(RmemName::Linux);
    spec.flows[2].tcp.rmem = Rmem::Bytes([4096, 65_536, 262_144]);
    spec.flows[2].tcp.rcv_truesize_bytes = 4096;
    serde_json::to_value(&spec).unwrap()
}

/// Paths (object keys and array indices) to every leaf and container of `v`.
fn paths(v: &Value, prefix: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(prefix.clone());
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                prefix.push(Value::String(k.clone()));
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                prefix.push(json!(i));
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn at<'a>(v: &'a mut Value, path: &[Value]) -> Option<&'a mut Value> {
    let mut node = v;
    for p in path {
        node = match p {
            Value::String(k) => node.get_mut(k.as_str())?,
            Value::Number(i) => node.get_mut(i.as_u64()? as usize)?,
            _ => return None,
        };
    }
    Some(node)
}

fn extreme(rng: &mut Rng, old: &Value) -> Value {
    let near = old.as_f64().unwrap_or(1.0);
    match rng.below(18) {
        0 => json!(0),
        1 => json!(1),
        2 => json!(-1),
        3 => json!(u32::MAX),
        4 => json!(u64::MAX),
        5 => json!(u64::MAX / 2),
        6 => json!(1u64 << 53),
        7 => json!(0.5),
        8 => json!(1e300),
        9 => json!("x"),
        10 => Value::Null,
        11 => json!([]),
        12 => json!({}),
        13 => json!(true),
        14 => json!((near * 2.0).round() as u64),
        15 => json!((near / 2.0).round() as u64),
        16 => json!(i32::MAX),
        _ => json!([1, 1, 1]),
    }
}

fn mutate(rng: &mut Rng, spec: &mut Value) {
    let mut all = Vec::new();
    paths(spec, &mut Vec::new(), &mut all);
    let path = all[rng.below(all.len() as u32) as usize].clone();
    let Some(node) = at(spec, &path) else { return };
    match node {
        Value::Array(a) if !a.is_empty() && rng.below(2) == 0 => {
            let i = rng.below(a.len() as u32) as usize;
            if rng.below(2) == 0 {
                a.remove(i);
            } else {
                let item = a[i].clone();
                a.push(item);
            }
        }
        _ => {
            let old = node.clone();
            *node = extreme(rng, &old);
        }
    }
}

#[test]
fn mutated_specs_never_panic_the_engine() {
    let iters: u64 = std::env::var("CCFAIR_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let seed: u64 = std::env::var("CCFAIR_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11);
    let limits = Limits {
        memory_bytes: 300_000_000,
        events: 200_000,
    };
    let base = base_spec();
    let mut rng = Rng::new(seed);
    let (mut ran, mut refused) = (0, 0);
    let mut failures = Vec::new();
    // Silence the default hook: a panic is recorded below with its spec.
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|info| {
        if let Some(l) = info.location() {
            *LAST_PANIC_AT.lock().unwrap() = format!("{}:{}", l.file(), l.line());
        }
    }));
    for _ in 0..iters {
        let mut spec = base.clone();
        for _ in 0..1 + rng.below(3) {
            mutate(&mut rng, &mut spec);
        }
        let text = spec.to_string();
        match panic::catch_unwind(AssertUnwindSafe(|| run_json(&text, &limits))) {
            Ok(Ok(_)) => ran += 1,
            Ok(Err(e)) => {
                refused += 1;
                assert!(!e.to_string().is_empty());
            }
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                let at = LAST_PANIC_AT.lock().unwrap().clone();
                failures.push(format!("{msg} at {at}\n  spec: {text}"));
            }
        }
    }
    panic::set_hook(hook);
    let mut places: Vec<&str> = failures
        .iter()
        .map(|f| f.split('\n').next().unwrap_or(""))
        .collect();
    places.sort();
    places.dedup();
    assert!(
        failures.is_empty(),
        "{} of {iters} mutants panicked (ran {ran}, refused {refused}) at:\n{}\nfirst:\n{}",
        failures.len(),
        places.join("\n"),
        failures.first().unwrap()
    );
    // The mutants exercise both paths: some run, some are refused.
    assert!(ran > 0 && refused > 0, "ran {ran}, refused {refused}");
}
