//! Host latency: how long real end hosts take to react (docs/model.md, "Host latency").
//!
//! A simulated host reacts at the instant an event reaches it; a real one takes a few tens
//! of microseconds, differently each time: a sleeping application thread must be woken,
//! the kernel processes the packet, the NIC (here, the kernel backend's TUN device and
//! forwarder) hands the reply on. Without that, flows that start together stay in lock-step
//! forever and drop-tail queues allocate losses by exact phase (Floyd and Jacobson, "On
//! traffic phase effects in packet-switched gateways", 1992), which no testbed reproduces.
//!
//! Two options model it, each `"kernel"` (default: the distributions measured on ccfair's
//! kernel backend, `scripts/measure_host_latency.py`) or `"none"` (the idealisation);
//! `tcp.host_latency` also takes a testbed's own measured turnaround quantiles:
//! - `tcp.app_latency`: the application's side, from the flow's start to its SYN on the
//!   wire and from the handshake's end to its first data on the wire;
//! - `tcp.host_latency`: every packet a host sends in reaction to a packet or a timer
//!   leaves after a turnaround drawn per reaction (the sender's or the receiver's
//!   distribution), never overtaking what the same host sent before.
//!
//! Draws come from per-flow, per-host streams (scenario seed, `STREAM_HOST`, flow, side),
//! so they are reproducible and adding a flow changes no other flow's draws.

use serde::{Deserialize, Serialize};

use ccfair_cc::rng::{derive_seed, Rng};

/// Seed stream tag of the host latency draws (see `world::STREAM_FLOW`).
pub const STREAM_HOST: u64 = 4;

/// Where a latency model comes from.
// One per flow's options, read once at setup: the tables' 272 bytes cost nothing, and a
// box would only make the type harder to copy around.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Latency {
    /// The distributions measured on ccfair's kernel backend.
    Kernel,
    /// No latency: hosts react at the instant (an idealisation).
    None,
    /// Turnaround quantiles (us) measured on a testbed, at the probabilities of
    /// [`PROBS`] (what `scripts/measure_host_latency.py` prints): host latency depends on
    /// the machine and its load (on ccfair's kernel backend the receiver's median is 25 us
    /// in the first seconds of a 50 Mbit/s run and about 100 us in a 10 Mbit/s steady
    /// state, docs/model.md). `tcp.host_latency` only.
    Measured {
        /// The receiver's turnaround quantiles (us): from a data segment's arrival to the ACK it
        /// triggers leaving.
        receiver_us: [f64; N_PROBS],
        /// The sender's turnaround quantiles (us): from an ACK's arrival to the data it releases
        /// leaving.
        sender_us: [f64; N_PROBS],
    },
}

impl Latency {
    /// A measured table's problem, naming the table: quantiles must be finite, between 0
    /// and 1 s, and non-decreasing.
    pub fn check(&self) -> Result<(), LatencyError> {
        let Latency::Measured {
            receiver_us,
            sender_us,
        } = self
        else {
            return Ok(());
        };
        for (name, us) in [("receiver_us", receiver_us), ("sender_us", sender_us)] {
            if let Some(&value) = us.iter().find(|v| !(0.0..=1e6).contains(*v)) {
                return Err(LatencyError::OutOfRange { table: name, value });
            }
            if let Some(w) = us.windows(2).find(|w| w[1] < w[0]) {
                return Err(LatencyError::Decreasing {
                    table: name,
                    before: w[0],
                    after: w[1],
                });
            }
        }
        Ok(())
    }
}

/// Why a measured latency table is rejected ([`Latency::check`]); the message names the
/// table (`measured.receiver_us`) and the value.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LatencyError {
    /// A quantile is not a latency between 0 and 1 s (NaN, negative, infinite or larger).
    #[error("measured.{table}: {value:?} is not a latency in us between 0 and 1e6")]
    OutOfRange {
        /// The table: `receiver_us` or `sender_us`.
        table: &'static str,
        /// The rejected quantile (us).
        value: f64,
    },
    /// A quantile is smaller than the one before it.
    #[error("measured.{table}: quantiles must not decrease ({before} then {after})")]
    Decreasing {
        /// The table: `receiver_us` or `sender_us`.
        table: &'static str,
        /// The earlier quantile (us).
        before: f64,
        /// The next quantile, smaller (us).
        after: f64,
    },
}

/// An empirical distribution: quantiles `us` at probabilities `probs`, interpolated
/// linearly in between and clamped at the ends.
#[derive(Clone, Copy, Debug)]
pub struct Distribution {
    /// Probabilities of the quantiles, increasing from 0 to 1 ([`PROBS`]).
    pub probs: &'static [f64; N_PROBS],
    /// The quantiles, us, non-decreasing.
    pub us: [f64; N_PROBS],
    /// `starts[b]`: the last index `i >= 1` with `probs[i] <= b / BUCKETS`, else 0
    /// ([`bucket_starts`]): where the search for the interval of `u` in bucket `b` begins.
    pub starts: &'static [u8; BUCKETS],
}

/// Buckets of equal width over [0, 1) that index `Distribution::starts`.
pub const BUCKETS: usize = 128;

/// `Distribution::starts` of sorted `probs` (fewer than 256), at compile time.
pub const fn bucket_starts(probs: &[f64]) -> [u8; BUCKETS] {
    let mut starts = [0u8; BUCKETS];
    let mut b = 0;
    while b < BUCKETS {
        let low = b as f64 / BUCKETS as f64;
        let mut j = 1;
        while j < probs.len() && probs[j] <= low {
            j += 1;
        }
        starts[b] = (j - 1) as u8;
        b += 1;
    }
    starts
}

impl Distribution {
    /// The value (ns) at probability `u` in [0, 1).
    ///
    /// Drawn once per host reaction, so it is kept cheap: the interval's search starts at
    /// the precomputed last probability at or below the low end of `u`'s bucket (with 128
    /// buckets, at most a step or two from the answer; the same index as a binary
    /// search), and the rounding avoids a libm call (`round_half_away_ns`, the same value
    /// as `f64::round`).
    // Per host reaction: inlined into `egress_ns`.
    #[inline]
    pub fn at_ns(&self, u: f64) -> u64 {
        // `us` by reference: binding the array by value copied its 17 values (a memcpy call)
        // on every draw.
        let (p, v) = (self.probs, &self.us);
        let us = if u <= p[0] {
            v[0]
        } else if u >= p[p.len() - 1] {
            v[v.len() - 1]
        } else {
            // p[0] < u < p[last] <= 1. The bucket's low end b / 128 is at most u (exact:
            // a product by a power of two), so the start is at or below the last index with
            // p[i] <= u, and the loop stops before the last index since u < p[last].
            let mut i = self.starts[(u * BUCKETS as f64) as i32 as usize] as usize;
            while p[i + 1] <= u {
                i += 1;
            }
            v[i] + (v[i + 1] - v[i]) * (u - p[i]) / (p[i + 1] - p[i])
        };
        round_half_away_ns(us * 1e3)
    }
}

/// `x.round() as u64` for `0 <= x < 2^63` (latencies in ns are far below), without the libm
/// call and in signed conversions (one instruction each, where `f64` to `u64` takes a
/// dozen): below 2^52 the fraction `x - trunc(x)` is exact, and `round` goes up from exactly
/// one half (half away from zero); from 2^52 on every `f64` is an integer already.
fn round_half_away_ns(x: f64) -> u64 {
    debug_assert!((0.0..9.2e18).contains(&x), "{x}");
    let t = x as i64;
    (if x - t as f64 >= 0.5 { t + 1 } else { t }) as u64
}

/// Quantiles per table.
pub const N_PROBS: usize = 17;

/// The probabilities of every table's quantiles.
pub const PROBS: [f64; N_PROBS] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999,
];
const PROBS_STARTS: [u8; BUCKETS] = bucket_starts(&PROBS);

/// The numbers below come from `scripts/measure_host_latency.py` on ccfair's kernel backend
/// (Linux 6.18, 2-vCPU VM, TUN devices and the real-time forwarder; 42 reliable runs of two
/// unpaced flows at bottleneck delays of 2, 18 and 100 ms; docs/model.md). They include
/// everything between the host's decision and the packet entering the emulated network.
///
/// Launch (us): from a flow's start to its SYN entering the network (the application
/// thread's wake-up, connect(), the kernel's SYN, the device).
pub const KERNEL_LAUNCH: Distribution = Distribution {
    probs: &PROBS,
    starts: &PROBS_STARTS,
    us: [
        73.3, 80.1, 84.6, 87.0, 98.0, 113.4, 138.1, 146.4, 154.4, 163.2, 175.4, 193.9, 221.5,
        232.9, 238.8, 243.4, 247.1,
    ],
};

/// First write (us): from the SYN-ACK reaching the client to its first data segment
/// entering the network (the kernel's final ACK, connect() returning to the woken
/// application, its first write()).
pub const KERNEL_FIRST_WRITE: Distribution = Distribution {
    probs: &PROBS,
    starts: &PROBS_STARTS,
    us: [
        91.1, 97.8, 107.7, 118.5, 134.8, 140.6, 145.5, 154.4, 162.3, 175.0, 192.9, 254.7, 289.3,
        306.2, 326.2, 329.8, 332.8,
    ],
};

/// Receiver turnaround (us): a data segment delivered to the ACK it triggers (246,153
/// pairs).
pub const KERNEL_RECEIVER: Distribution = Distribution {
    probs: &PROBS,
    starts: &PROBS_STARTS,
    us: [
        14.6, 15.4, 16.1, 18.4, 21.3, 22.6, 23.6, 24.7, 26.2, 30.4, 36.1, 42.9, 49.1, 58.9, 66.5,
        77.4, 125.8,
    ],
};

/// Sender turnaround (us): an ACK delivered to the data it releases, for unpaced flows
/// (210,459 pairs).
pub const KERNEL_SENDER: Distribution = Distribution {
    probs: &PROBS,
    starts: &PROBS_STARTS,
    us: [
        14.7, 15.3, 16.0, 16.4, 17.3, 17.7, 18.3, 19.2, 20.0, 21.3, 23.2, 27.9, 35.3, 51.0, 65.0,
        84.6, 324.6,
    ],
};

/// Which end of a flow a host is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The data sender (which also receives the ACKs).
    Sender = 0,
    /// The data receiver (which sends the ACKs).
    Receiver = 1,
}

/// A turnaround table: the kernel's, shared by every flow (one copy stays in cache however
/// many flows draw from it), or a testbed's measured one, the flow's own. A pointer either
/// way: the flow's latency state stays small (a `Cow` kept the owned table's 152 bytes in
/// every flow, mostly unused, between the fields each packet reads).
enum Table {
    Kernel(&'static Distribution),
    Measured(Box<Distribution>),
}

impl std::ops::Deref for Table {
    type Target = Distribution;

    fn deref(&self) -> &Distribution {
        match self {
            Table::Kernel(d) => d,
            Table::Measured(d) => d,
        }
    }
}

/// The latency draws of one flow's two hosts.
pub struct FlowHosts {
    app: Option<Rng>,
    /// The sender's and the receiver's draws and distributions.
    turnaround: Option<([Rng; 2], [Table; 2])>,
    /// When each host last put a packet on its link: a host never reorders its own.
    last_egress_ns: [u64; 2],
}

impl FlowHosts {
    /// `app` is `Kernel` or `None` (a measured table is the turnaround's only).
    pub fn new(seed: u64, flow: usize, app: Latency, host: Latency) -> Self {
        let stream = |side: u64| Rng::new(derive_seed(seed, &[STREAM_HOST, flow as u64, side]));
        let table = |us| Distribution {
            probs: &PROBS,
            us,
            starts: &PROBS_STARTS,
        };
        let tables = match host {
            Latency::Kernel => Some([
                Table::Kernel(&KERNEL_SENDER),
                Table::Kernel(&KERNEL_RECEIVER),
            ]),
            Latency::None => None,
            Latency::Measured {
                receiver_us,
                sender_us,
            } => Some([
                Table::Measured(Box::new(table(sender_us))),
                Table::Measured(Box::new(table(receiver_us))),
            ]),
        };
        FlowHosts {
            app: (app == Latency::Kernel).then(|| stream(2)),
            turnaround: tables.map(|t| ([stream(0), stream(1)], t)),
            last_egress_ns: [0; 2],
        }
    }

    /// From the flow's start to its SYN entering the network (ns).
    pub fn launch_ns(&mut self) -> u64 {
        self.app_draw(&KERNEL_LAUNCH)
    }

    /// From the SYN-ACK reaching the client to its first data entering the network (ns).
    pub fn first_write_ns(&mut self) -> u64 {
        self.app_draw(&KERNEL_FIRST_WRITE)
    }

    fn app_draw(&mut self, dist: &Distribution) -> u64 {
        match &mut self.app {
            Some(rng) => dist.at_ns(rng.uniform()),
            None => 0,
        }
    }

    /// When the packets a host sends at `now` reach its link: after a turnaround if they
    /// react to a packet or a timer (`reaction`), at once if the application's own latency
    /// was already drawn (its first SYN, its first data).
    // Once per host reaction: inlined into the engine's one call site.
    #[inline(always)]
    pub fn egress_ns(&mut self, side: Side, now: u64, reaction: bool) -> u64 {
        let delay = match &mut self.turnaround {
            Some((rngs, dists)) if reaction => {
                dists[side as usize].at_ns(rngs[side as usize].uniform())
            }
            _ => 0,
        };
        let t = (now + delay).max(self.last_egress_ns[side as usize]);
        self.last_egress_ns[side as usize] = t;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_interpolates_and_clamps() {
        // 1000 us x probability: linear in between, clamped outside [0.01, 0.999].
        let d = Distribution {
            probs: &PROBS,
            us: PROBS.map(|p| 1000.0 * p),
            starts: &PROBS_STARTS,
        };
        assert_eq!(d.at_ns(0.0), 10_000);
        assert_eq!(d.at_ns(0.15), 150_000);
        assert_eq!(d.at_ns(0.7), 700_000);
        assert_eq!(d.at_ns(0.9999), 999_000);
    }

    /// A measured table replaces the kernel's turnaround, per side; the application's
    /// latency stays the kernel's.
    #[test]
    fn measured_tables_set_each_sides_turnaround() {
        let host = Latency::Measured {
            receiver_us: [100.0; N_PROBS],
            sender_us: [30.0; N_PROBS],
        };
        let mut h = FlowHosts::new(7, 0, Latency::Kernel, host);
        assert_eq!(h.egress_ns(Side::Receiver, 1_000_000, true), 1_100_000);
        assert_eq!(h.egress_ns(Side::Sender, 1_000_000, true), 1_030_000);
        assert_eq!(h.egress_ns(Side::Sender, 2_000_000, false), 2_000_000);
        let mut kernel = FlowHosts::new(7, 0, Latency::Kernel, Latency::Kernel);
        assert_eq!(h.launch_ns(), kernel.launch_ns());
    }

    #[test]
    fn measured_tables_are_checked() {
        let table = |r: [f64; N_PROBS]| Latency::Measured {
            receiver_us: r,
            sender_us: [20.0; N_PROBS],
        };
        assert!(table([20.0; N_PROBS]).check().is_ok());
        let mut decreasing = [20.0; N_PROBS];
        decreasing[5] = 10.0;
        let e = table(decreasing).check().unwrap_err();
        assert_eq!(
            e,
            LatencyError::Decreasing {
                table: "receiver_us",
                before: 20.0,
                after: 10.0
            }
        );
        // The text the user sees (Python's SpecError at tcp.host_latency).
        assert_eq!(
            e.to_string(),
            "measured.receiver_us: quantiles must not decrease (20 then 10)"
        );
        let message = |bad| table(bad).check().unwrap_err().to_string();
        let mut bad = [20.0; N_PROBS];
        bad[0] = f64::NAN;
        assert!(message(bad).contains("NaN"));
        bad[0] = -1.0;
        assert_eq!(
            message(bad),
            "measured.receiver_us: -1.0 is not a latency in us between 0 and 1e6"
        );
        bad[0] = f64::INFINITY;
        assert!(message(bad).contains("inf"));
        bad[0] = 1e300;
        assert!(message(bad).contains("1e300"));
    }

    /// The cheaper interval search and rounding give `at_ns` as first written (binary search,
    /// `f64::round`) for every kernel table, at random and at the table's own probabilities.
    #[test]
    fn at_ns_matches_binary_search_and_round() {
        fn reference(d: &Distribution, u: f64) -> u64 {
            let (p, v) = (d.probs, d.us);
            let us = if u <= p[0] {
                v[0]
            } else if u >= p[p.len() - 1] {
                v[v.len() - 1]
            } else {
                let i = p.partition_point(|&x| x <= u) - 1;
                v[i] + (v[i + 1] - v[i]) * (u - p[i]) / (p[i + 1] - p[i])
            };
            (us * 1e3).round() as u64
        }
        let mut rng = Rng::new(3);
        for d in [
            KERNEL_LAUNCH,
            KERNEL_FIRST_WRITE,
            KERNEL_RECEIVER,
            KERNEL_SENDER,
        ] {
            let mut us: Vec<f64> = (0..200_000).map(|_| rng.uniform()).collect();
            // Each probability and its neighbouring doubles (all positive: bits +- 1).
            for &p in d.probs {
                let bits = p.to_bits();
                us.extend([p, f64::from_bits(bits - 1), f64::from_bits(bits + 1)]);
            }
            us.extend([0.0, f64::from_bits(1.0f64.to_bits() - 1)]);
            for u in us {
                assert_eq!(d.at_ns(u), reference(&d, u), "u = {u}");
            }
        }
        for x in [
            0.0,
            0.5,
            1.5,
            2.5,
            0.49999999999999994,
            4503599627370495.5,
            1e17,
        ] {
            assert_eq!(round_half_away_ns(x), x.round() as u64, "{x}");
        }
    }

    #[test]
    fn kernel_tables_are_nondecreasing() {
        for d in [
            KERNEL_LAUNCH,
            KERNEL_FIRST_WRITE,
            KERNEL_RECEIVER,
            KERNEL_SENDER,
        ] {
            assert!(d.us.windows(2).all(|w| w[0] <= w[1]), "{:?}", d.us);
            assert!(d.probs.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn a_host_never_reorders_its_packets_and_none_means_none() {
        let mut h = FlowHosts::new(7, 0, Latency::Kernel, Latency::Kernel);
        let mut last = 0;
        for i in 0..10_000u64 {
            let t = h.egress_ns(Side::Sender, i * 1_000, true);
            assert!(t >= last && t >= i * 1_000);
            last = t;
        }
        let mut ideal = FlowHosts::new(7, 0, Latency::None, Latency::None);
        assert_eq!(ideal.egress_ns(Side::Receiver, 123, true), 123);
        assert_eq!(ideal.launch_ns(), 0);
        assert_eq!(ideal.first_write_ns(), 0);
    }

    #[test]
    fn draws_depend_on_seed_and_flow_only() {
        let draws = |seed, flow| {
            let mut h = FlowHosts::new(seed, flow, Latency::Kernel, Latency::Kernel);
            (0..5).map(|_| h.launch_ns()).collect::<Vec<_>>()
        };
        assert_eq!(draws(1, 0), draws(1, 0));
        assert_ne!(draws(1, 0), draws(2, 0));
        assert_ne!(draws(1, 0), draws(1, 1));
    }
}
