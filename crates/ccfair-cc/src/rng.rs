//! Small deterministic PRNG (xoshiro256**, seeded through splitmix64).
//!
//! Own implementation so that results never change with a dependency upgrade: the same
//! spec and seed give identical results, bit for bit.

/// splitmix64 step; also used to derive independent seeds from (scenario seed, stream id).
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Seed of an independent stream, e.g. `derive_seed(scenario_seed, &[STREAM_FLOW, flow_id])`.
/// Adding a flow therefore never perturbs the randomness of the others.
pub fn derive_seed(seed: u64, stream: &[u64]) -> u64 {
    let mut s = seed;
    let mut out = splitmix64(&mut s);
    for &x in stream {
        let mut t = out ^ x.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        out = splitmix64(&mut t);
    }
    out
}

/// xoshiro256** generator: fast, 256 bits of state, and the same stream on every platform and
/// version (it is ccfair's own code, not a dependency's).
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose state is four splitmix64 outputs of `seed` (distinct seeds give
    /// unrelated streams; use [`derive_seed`] for per-entity seeds).
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        Rng { s }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform integer in `[0, n)`, like Linux `prandom_u32_max(n)` / `get_random_u32_below(n)`.
    pub fn below(&mut self, n: u32) -> u32 {
        // Multiply-shift (Lemire) as Linux does; the tiny bias is irrelevant here.
        (((self.next_u64() >> 32) * n as u64) >> 32) as u32
    }

    /// Uniform float in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_covers_range_uniformly() {
        let mut r = Rng::new(7);
        let mut counts = [0u32; 7];
        for _ in 0..70_000 {
            counts[r.below(7) as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn derived_streams_differ_and_repeat() {
        assert_eq!(derive_seed(1, &[2, 3]), derive_seed(1, &[2, 3]));
        assert_ne!(derive_seed(1, &[2, 3]), derive_seed(1, &[2, 4]));
        assert_ne!(derive_seed(1, &[2, 3]), derive_seed(2, &[2, 3]));
    }
}
