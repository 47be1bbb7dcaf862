//! RTT estimation and RTO, as `tcp_rtt_estimator`, `tcp_set_rto` and `tcp_update_rtt_min`
//! (net/ipv4/tcp_input.c) and `__tcp_set_rto` (include/net/tcp.h).
//!
//! Linux keeps `srtt_us` scaled by 8 and `mdev_us` scaled by 4; so do we. The RTO floor
//! sits on `rttvar` (>= `tcp_rto_min`), so RTO = srtt + max(4 x mdev, 200 ms) in practice.

use ccfair_cc::minmax::MinMax;

/// `TCP_RTO_MAX`: 120 s.
pub const RTO_MAX_US: u64 = 120_000_000;

/// A connection's RTT estimator: srtt, mdev and rttvar as Linux keeps them, the RTO, and
/// the windowed min RTT.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    /// Smoothed RTT in µs << 3 (0 = no sample yet).
    pub srtt_us8: u64,
    /// Mean deviation in µs << 2.
    pub mdev_us: u64,
    /// `tp->mdev_max_us`: the largest mdev in the current RTT window, µs << 2.
    pub mdev_max_us: u64,
    /// `tp->rttvar_us`: the RTO's variance term, µs (RTO = srtt + rttvar): the smoothed
    /// `mdev_max_us`, at least `rto_min_us`.
    pub rttvar_us: u64,
    /// `rtt_seq`: snd_nxt when the current RTT window started.
    pub rtt_seq: u64,
    /// `tcp_rto_min` (the floor of `rttvar_us`), µs.
    pub rto_min_us: u64,
    /// Windowed min RTT (`tp->rtt_min`), time base in jiffies.
    min_rtt: MinMax,
    has_min_rtt: bool,
    min_rtt_win_jiffies: u64,
}

impl RttEstimator {
    /// No sample yet; the RTO floor is `rto_min_us` and the min-RTT window
    /// `min_rtt_win_jiffies` (`tcp_min_rtt_wlen` x HZ).
    pub fn new(rto_min_us: u64, min_rtt_win_jiffies: u64) -> Self {
        RttEstimator {
            srtt_us8: 0,
            mdev_us: 0,
            mdev_max_us: 0,
            rttvar_us: 0,
            rtt_seq: 0,
            rto_min_us,
            min_rtt: MinMax::default(),
            has_min_rtt: false,
            min_rtt_win_jiffies,
        }
    }

    /// `tcp_rtt_estimator`.
    pub fn sample(&mut self, mrtt_us: u64, snd_una: u64, snd_nxt: u64) {
        let mut m = mrtt_us as i64;
        let mut srtt = self.srtt_us8 as i64;
        if srtt != 0 {
            m -= srtt >> 3; // m is now the error in the estimate
            srtt += m; // rtt = 7/8 rtt + 1/8 new
            let mdev = self.mdev_us as i64;
            if m < 0 {
                m = -m;
                m -= mdev >> 2;
                // Eifel-like damping: a falling RTT only grows mdev by 1/8 of the excess.
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= mdev >> 2;
            }
            self.mdev_us = (mdev + m) as u64; // mdev = 3/4 mdev + 1/4 new
            if self.mdev_us > self.mdev_max_us {
                self.mdev_max_us = self.mdev_us;
                if self.mdev_max_us > self.rttvar_us {
                    self.rttvar_us = self.mdev_max_us;
                }
            }
            if snd_una > self.rtt_seq {
                if self.mdev_max_us < self.rttvar_us {
                    self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max_us = self.rto_min_us;
            }
        } else {
            srtt = m << 3;
            self.mdev_us = (m as u64) << 1; // make sure rto = 3 * rtt
            self.rttvar_us = self.mdev_us.max(self.rto_min_us);
            self.mdev_max_us = self.rttvar_us;
            self.rtt_seq = snd_nxt;
        }
        self.srtt_us8 = (srtt as u64).max(1);
    }

    /// `__tcp_set_rto` in µs (before conversion to jiffies and the 120 s bound).
    pub fn rto_us(&self) -> u64 {
        ((self.srtt_us8 >> 3) + self.rttvar_us).min(RTO_MAX_US)
    }

    /// Smoothed RTT, µs (0 before the first sample).
    pub fn srtt_us(&self) -> u64 {
        self.srtt_us8 >> 3
    }

    /// `tcp_update_rtt_min`.
    pub fn update_min_rtt(&mut self, rtt_us: u64, now_jiffies: u64, maybe_delayed_ack: bool) {
        if maybe_delayed_ack && rtt_us > self.min_rtt_us() as u64 {
            return;
        }
        let v = if rtt_us == 0 { 1 } else { rtt_us };
        if !self.has_min_rtt {
            self.min_rtt.reset(now_jiffies, v);
            self.has_min_rtt = true;
        } else {
            self.min_rtt
                .running_min(self.min_rtt_win_jiffies, now_jiffies, v);
        }
    }

    /// `tcp_min_rtt`: `u32::MAX` before any sample (Linux's ~0U).
    pub fn min_rtt_us(&self) -> u32 {
        if self.has_min_rtt {
            self.min_rtt.get().min(u32::MAX as u64) as u32
        } else {
            u32::MAX
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// reference 8.3.9: after a first sample m = 10 ms, RTO = m + max(2m, 200 ms) = 210 ms.
    #[test]
    fn rto_after_first_sample() {
        let mut e = RttEstimator::new(200_000, 300_000);
        e.sample(10_000, 0, 10);
        assert_eq!(e.rto_us(), 210_000);
        // With a long RTT the 2m term dominates: 300 ms -> 300 + 600.
        let mut e = RttEstimator::new(200_000, 300_000);
        e.sample(300_000, 0, 10);
        assert_eq!(e.rto_us(), 900_000);
    }

    #[test]
    fn steady_rtt_converges_to_srtt_plus_rto_min() {
        let mut e = RttEstimator::new(200_000, 300_000);
        let mut una = 0;
        for i in 0..500 {
            una += 1;
            e.sample(40_000, una, una + 10 + i % 2);
        }
        assert_eq!(e.srtt_us(), 40_000);
        assert_eq!(e.rto_us(), 240_000);
    }
}
