//! The hot path does not allocate per packet: allocations grow with the number of samples
//! and queue high-water marks, not with the number of packets.
//!
//! Its own test binary, because it installs a counting global allocator.

// A global allocator is an `unsafe impl GlobalAlloc`: counting needs one, and it only
// forwards to the system allocator.
#![allow(unsafe_code)]

mod common;
use common::*;
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use ccfair_sim::Simulation;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// allocator keeps the system allocator's guarantees; counting touches only an atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract of `GlobalAlloc::alloc`, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through `alloc`/`realloc` above, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` with `layout`; the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_and_hops(secs: u64) -> (u64, u64) {
    let rate = 50_000_000;
    let delay = 18 * MS;
    let bdp = bdp_pkts(rate, delay).round() as u32;
    let mut spec = dumbbell(
        &[
            ("cubic", json!({})),
            ("bbr", json!({})),
            ("reno", json!({})),
        ],
        rate,
        delay,
        2 * bdp,
        secs * S,
    );
    // Sampling allocates per sample (result columns); make it rare so packets dominate.
    spec.sample_interval_ns = S;
    spec.links[3].loss_ab = 0.001; // losses and recoveries on the bottleneck
    let before = ALLOCS.load(Ordering::Relaxed);
    let r = Simulation::new(spec).unwrap().run();
    let after = ALLOCS.load(Ordering::Relaxed);
    (after - before, r.stats.packet_hops)
}

#[test]
fn allocations_do_not_grow_with_packets() {
    let (a10, h10) = allocations_and_hops(10);
    let (a40, h40) = allocations_and_hops(40);
    let extra_allocs = a40.saturating_sub(a10);
    let extra_hops = h40 - h10;
    eprintln!("10 s: {a10} allocations, {h10} hops; 40 s: {a40} allocations, {h40} hops");
    assert!(extra_hops > 400_000, "{extra_hops}");
    // A handful per sample and per queue growth; far below one per thousand packet-hops.
    assert!(
        extra_allocs * 1000 < extra_hops,
        "{extra_allocs} allocations for {extra_hops} more packet-hops"
    );
}
