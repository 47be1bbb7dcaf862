//! Lateness of the forwarder: how long after its scheduled time each packet event actually
//! happened on the wall clock. Kept as a histogram with 1 us buckets up to 100 ms, so that
//! percentiles are exact to 1 us without storing every event.

use serde::Serialize;

const MAX_US: usize = 100_000;

/// A histogram of lateness (or any delay) in 1 µs buckets up to 100 ms, with the exact
/// maximum and mean.
#[derive(Clone, Debug)]
pub struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    max_ns: u64,
    sum_ns: u128,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: vec![0; MAX_US + 1],
            count: 0,
            max_ns: 0,
            sum_ns: 0,
        }
    }
}

/// Percentiles of a histogram, in microseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Summary {
    /// Events recorded.
    pub count: u64,
    /// Mean, µs (NaN without events).
    pub mean_us: f64,
    /// Median, µs (bucket resolution).
    pub p50_us: f64,
    /// 90th percentile, µs.
    pub p90_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// Largest, µs (exact; NaN without events).
    pub max_us: f64,
}

/// The probabilities at which [`Quantiles`] describe a distribution.
pub const QUANTILE_PROBS: [f64; 17] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999,
];

/// A distribution as quantiles (us) at [`QUANTILE_PROBS`], with the middle of each 1 us
/// bucket as its value: enough to describe it to a model (docs/model.md, host latency).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Quantiles {
    /// Events recorded.
    pub count: u64,
    /// The probabilities ([`QUANTILE_PROBS`]).
    pub probs: Vec<f64>,
    /// The quantile at each probability, µs.
    pub us: Vec<f64>,
}

impl Histogram {
    /// The distribution as quantiles at [`QUANTILE_PROBS`].
    pub fn quantiles(&self) -> Quantiles {
        Quantiles {
            count: self.count,
            probs: QUANTILE_PROBS.to_vec(),
            us: QUANTILE_PROBS
                .iter()
                .map(|&q| self.quantile_us(q) + 0.5)
                .collect(),
        }
    }

    /// Count one event `late_ns` late (above 100 ms in the last bucket; the maximum stays
    /// exact).
    pub fn record(&mut self, late_ns: u64) {
        let us = ((late_ns / 1_000) as usize).min(MAX_US);
        self.buckets[us] += 1;
        self.count += 1;
        self.max_ns = self.max_ns.max(late_ns);
        self.sum_ns += late_ns as u128;
    }

    /// The smallest bucket value (us) at or below which a fraction `q` of events lie.
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.count == 0 {
            return f64::NAN;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (us, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return if us == MAX_US {
                    self.max_ns as f64 / 1e3
                } else {
                    us as f64
                };
            }
        }
        self.max_ns as f64 / 1e3
    }

    /// Count, mean, percentiles and maximum.
    pub fn summary(&self) -> Summary {
        Summary {
            count: self.count,
            mean_us: if self.count == 0 {
                f64::NAN
            } else {
                self.sum_ns as f64 / self.count as f64 / 1e3
            },
            p50_us: self.quantile_us(0.5),
            p90_us: self.quantile_us(0.9),
            p99_us: self.quantile_us(0.99),
            p999_us: self.quantile_us(0.999),
            max_us: if self.count == 0 {
                f64::NAN
            } else {
                self.max_ns as f64 / 1e3
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = Histogram::default();
        for us in 0..1000u64 {
            h.record(us * 1_000 + 500); // 0.5 us .. 999.5 us
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        assert_eq!(s.p50_us, 499.0);
        assert_eq!(s.p99_us, 989.0);
        assert_eq!(s.p999_us, 998.0);
        assert_eq!(s.max_us, 999.5);
        assert!((s.mean_us - 500.0).abs() < 1e-9);
    }

    #[test]
    fn beyond_the_range_reports_the_maximum() {
        let mut h = Histogram::default();
        h.record(1_000);
        h.record(250_000_000); // 250 ms
        assert_eq!(h.quantile_us(1.0), 250_000.0);
        assert_eq!(h.quantile_us(0.5), 1.0);
    }

    #[test]
    fn empty_is_nan() {
        assert!(Histogram::default().summary().p99_us.is_nan());
    }
}
