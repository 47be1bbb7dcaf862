//! Sojourn-time percentiles of a channel over the measurement window, without storing
//! every packet's: a log-linear histogram (16 buckets per power of two of nanoseconds, as
//! HdrHistogram with 4 significant bits), so that a percentile comes back within 1/32
//! (3.1%) of the true value (the midpoint of a bucket whose width is at most 1/16 of its
//! lower edge). Values below 16 ns are exact. It allocates its 7.8 kB once, at its first
//! value.

/// Sub-buckets per power of two: 2^4.
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;
/// Buckets for every u64: values below 16, then 16 per power of two from 2^4 to 2^63.
const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB as usize;

/// The histogram of the sojourn times of packets that finished serialisation within
/// `(start_ns, end_ns]` (the window the link summary covers).
#[derive(Clone, Debug, Default)]
pub struct SojournHistogram {
    counts: Vec<u64>,
    total: u64,
    start_ns: u64,
    end_ns: u64,
}

/// The bucket of `v`.
#[inline]
fn bucket(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // v in [2^e, 2^(e+1)), e >= 4
    let m = (v >> (e - SUB_BITS)) & (SUB - 1);
    ((e - SUB_BITS + 1) as u64 * SUB + m) as usize
}

/// The midpoint of bucket `i` (its value for values below 16).
fn midpoint(i: usize) -> f64 {
    let i = i as u64;
    if i < SUB {
        return i as f64;
    }
    let e = i / SUB + SUB_BITS as u64 - 1;
    let m = i % SUB;
    let width = 1u64 << (e - SUB_BITS as u64);
    let lower = (SUB + m) * width;
    lower as f64 + (width as f64 - 1.0) / 2.0
}

impl SojournHistogram {
    /// Count the packets that finish serialisation in `(start_ns, end_ns]`.
    pub fn with_window(start_ns: u64, end_ns: u64) -> Self {
        SojournHistogram {
            start_ns,
            end_ns,
            ..SojournHistogram::default()
        }
    }

    /// A packet finished serialisation at `departure_ns` after `sojourn_ns` in the channel.
    #[inline]
    pub fn record(&mut self, departure_ns: u64, sojourn_ns: u64) {
        if departure_ns <= self.start_ns || departure_ns > self.end_ns {
            return;
        }
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        self.counts[bucket(sojourn_ns)] += 1;
        self.total += 1;
    }

    /// Packets recorded (those that left inside the window).
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The `q`-th percentile (0 < q <= 100) in ns, nearest rank: the smallest value at
    /// least q% of the packets did not exceed, as its bucket's midpoint. NaN when empty.
    pub fn percentile_ns(&self, q: f64) -> f64 {
        if self.total == 0 {
            return f64::NAN;
        }
        let rank = ((q / 100.0 * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return midpoint(i);
            }
        }
        unreachable!("the counts sum to the total")
    }

    /// Heap bytes the histogram holds (its buckets, once the first packet is recorded).
    pub fn reserved_bytes(&self) -> u64 {
        (self.counts.capacity() * 8) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccfair_cc::rng::Rng;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for v in (0..5000u64).chain([u64::MAX / 3, u64::MAX - 1, u64::MAX]) {
            let b = bucket(v);
            assert!(b >= last && b < BUCKETS, "{v}");
            last = b;
        }
        for v in [17u64, 1000, 123_456, 5_000_000_000, 1 << 40] {
            let mid = midpoint(bucket(v));
            assert!(
                (mid - v as f64).abs() / v as f64 <= 1.0 / 32.0,
                "{v}: {mid}"
            );
        }
        assert_eq!(midpoint(bucket(7)), 7.0);
    }

    /// Against exact nearest-rank percentiles of random sojourns spread over six orders of
    /// magnitude: within 1/32. Packets outside the window are not counted.
    #[test]
    fn percentiles_are_within_a_thirty_second_of_exact() {
        let mut rng = Rng::new(4);
        let mut h = SojournHistogram::with_window(1_000, 2_000_000);
        let mut exact = Vec::new();
        for k in 0..100_000u64 {
            let v = (10f64.powf(3.0 + 6.0 * rng.uniform())) as u64;
            let departure = k * 30;
            h.record(departure, v);
            if departure > 1_000 && departure <= 2_000_000 {
                exact.push(v);
            }
        }
        exact.sort_unstable();
        assert_eq!(h.count(), exact.len() as u64);
        for q in [1.0, 50.0, 95.0, 99.0, 100.0] {
            let rank = ((q / 100.0 * exact.len() as f64).ceil() as usize).max(1);
            let want = exact[rank - 1] as f64;
            let got = h.percentile_ns(q);
            assert!(
                (got - want).abs() / want <= 1.0 / 32.0,
                "p{q}: {got} vs {want}"
            );
        }
        assert!(SojournHistogram::default().percentile_ns(50.0).is_nan());
    }
}
