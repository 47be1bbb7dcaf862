//! Cache prefetch hints for state the engine will read soon but that, in runs larger than
//! the cache, is likely evicted (the packet slab, `packet.rs`; channels, `link.rs`).
//! Performance only: nothing a run computes depends on them.

/// Ask the CPU to bring the cache line at `p` into the first-level cache; a no-op off
/// x86-64.
#[inline(always)]
// The prefetch intrinsic is an `unsafe fn`; it is this crate's only unsafe code.
#[allow(unsafe_code)]
pub fn line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing into the program and never faults,
    // whatever the address; SSE, which it needs, is in every x86-64 CPU.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
