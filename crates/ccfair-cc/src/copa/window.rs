//! Sliding-window minimum / maximum over time-stamped samples, for windows whose length
//! changes from one query to the next.
//!
//! Copa needs `RTTstanding` = min RTT over the last `srtt/2`, and `srtt` moves with every
//! ACK. Kathleen Nichols' three-sample filter (`minmax.rs`) assumes a fixed window: when the
//! window shrinks it can keep reporting a sample that is already outside it. genericCC's
//! `ExtremeWindow` (rtt-window.cc) keeps a monotonic deque instead; this is the same idea,
//! written fresh, with two changes:
//!
//! * **Queries take the window.** The deque is monotonic (for a min filter the values
//!   increase from front to back, and so do the times), so the extreme over the last `w`
//!   is the first entry whose time is within `w` of now: a binary search. Entries are kept
//!   for a `horizon >= w` chosen by the caller, so a window that grows again (srtt rises)
//!   still sees the samples it should, up to the horizon.
//! * **Bounded size.** A new sample that arrives less than `window / BUCKETS` after the start
//!   of the newest entry and does not beat it is folded into that entry (the entry keeps its
//!   better value and takes the new time). The stored value may therefore be reported for at
//!   most `window / BUCKETS` longer than an exact filter would; in exchange the deque holds at
//!   most about `BUCKETS * horizon / window + 2` entries, whatever the ACK rate, and its
//!   buffer, reserved up front, is reused without reallocating.

use std::collections::VecDeque;

/// Resolution of a window: samples closer than `window / BUCKETS` may share an entry.
pub const BUCKETS: u64 = 256;

/// Which extreme a [`WindowedExtremum`] keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extremum {
    /// The smallest value of the window (RTTmin, RTTstanding).
    Min,
    /// The largest value of the window (the detector's recent maximum queueing delay).
    Max,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    /// Time of the first sample folded into this entry (µs).
    t_first: u64,
    /// Time of the last sample folded into this entry (µs); the entry expires from here.
    t_last: u64,
    /// The best value among the samples of this entry.
    v: u64,
}

/// Windowed extremum over `(time_us, value)` samples. See the module documentation.
#[derive(Clone, Debug)]
pub struct WindowedExtremum {
    kind: Extremum,
    entries: VecDeque<Entry>,
}

impl WindowedExtremum {
    /// `horizon_windows`: how many windows of history the caller will keep (sizes the buffer).
    pub fn new(kind: Extremum, horizon_windows: u64) -> Self {
        let cap = (BUCKETS * horizon_windows.max(1) + 4) as usize;
        WindowedExtremum {
            kind,
            entries: VecDeque::with_capacity(cap),
        }
    }

    /// Forget every sample (the buffer keeps its capacity).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Entries held (each stands for one or more samples).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No sample held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries the buffer holds without reallocating.
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// `a` is at least as good as `b` (<= for a min filter, >= for a max filter).
    fn at_least_as_good(&self, a: u64, b: u64) -> bool {
        match self.kind {
            Extremum::Min => a <= b,
            Extremum::Max => a >= b,
        }
    }

    /// Add a sample taken at `now_us`. `window_us` is the window the filter is queried with
    /// (it sets the merge resolution), `horizon_us >= window_us` how long entries are kept.
    /// Times must not go backwards.
    pub fn push(&mut self, now_us: u64, v: u64, window_us: u64, horizon_us: u64) {
        let horizon_us = horizon_us.max(window_us);
        // Drop history beyond the horizon.
        while let Some(front) = self.entries.front() {
            if now_us.saturating_sub(front.t_last) > horizon_us {
                self.entries.pop_front();
            } else {
                break;
            }
        }
        // Entries that the new sample beats can never be the answer again: it is newer and
        // at least as good.
        while let Some(back) = self.entries.back() {
            if self.at_least_as_good(v, back.v) {
                self.entries.pop_back();
            } else {
                break;
            }
        }
        let resolution = window_us / BUCKETS;
        if let Some(back) = self.entries.back_mut() {
            debug_assert!(now_us >= back.t_last, "time went backwards");
            if now_us - back.t_first < resolution {
                // Fold: `back` is strictly better than `v`; keep it a little longer instead.
                back.t_last = now_us;
                return;
            }
        }
        self.entries.push_back(Entry {
            t_first: now_us,
            t_last: now_us,
            v,
        });
    }

    /// Extreme value of the samples taken within `window_us` of `now_us` (inclusive), or
    /// `None` if there are none.
    pub fn get(&self, now_us: u64, window_us: u64) -> Option<u64> {
        let oldest = now_us.saturating_sub(window_us);
        let i = self.entries.partition_point(|e| e.t_last < oldest);
        self.entries.get(i).map(|e| e.v)
    }

    /// Time (µs) of the oldest sample still kept.
    pub fn oldest_time(&self) -> Option<u64> {
        self.entries.front().map(|e| e.t_first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute-force reference: extreme of the samples with t >= now - w.
    fn brute(samples: &[(u64, u64)], now: u64, w: u64, kind: Extremum) -> Option<u64> {
        let it = samples
            .iter()
            .filter(|(t, _)| *t + w >= now && *t <= now)
            .map(|(_, v)| *v);
        match kind {
            Extremum::Min => it.min(),
            Extremum::Max => it.max(),
        }
    }

    #[test]
    fn exact_when_samples_are_sparser_than_the_resolution() {
        // 1 sample per ms, window >= 100 ms: resolution (window/256) < 1 ms, so no folding
        // and the filter must agree with brute force for every window up to the horizon.
        for kind in [Extremum::Min, Extremum::Max] {
            let mut f = WindowedExtremum::new(kind, 2);
            let mut samples = Vec::new();
            let mut x: u64 = 12345;
            for i in 0..5_000u64 {
                let now = i * 1_000;
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = 40_000 + (x >> 40) % 10_000;
                // The window changes at every step, as srtt/2 does (here by up to 72%,
                // so a horizon of 2 windows still covers 1.5 times any later window).
                let w = 100_000 + (i % 37) * 2_000;
                f.push(now, v, w, 3 * w);
                samples.push((now, v));
                for qw in [w / 2, w, 3 * w / 2] {
                    assert_eq!(
                        f.get(now, qw),
                        brute(&samples, now, qw, kind),
                        "{kind:?} i={i} w={qw}"
                    );
                }
            }
        }
    }

    #[test]
    fn shrinking_window_forgets_old_minimum() {
        let mut f = WindowedExtremum::new(Extremum::Min, 2);
        f.push(0, 10, 100_000, 200_000);
        f.push(50_000, 30, 100_000, 200_000);
        f.push(60_000, 20, 100_000, 200_000);
        assert_eq!(f.get(60_000, 100_000), Some(10));
        // A window of 20 ms at t = 60 ms holds t >= 40 ms: samples 30 (t=50) and 20 (t=60).
        assert_eq!(f.get(60_000, 20_000), Some(20));
        // A window of 5 ms contains only t = 60 ms.
        assert_eq!(f.get(60_000, 5_000), Some(20));
        // And it grows back: the t = 0 sample is still within the horizon.
        assert_eq!(f.get(60_000, 60_000), Some(10));
    }

    #[test]
    fn expires_beyond_horizon_and_max_tracks() {
        let mut f = WindowedExtremum::new(Extremum::Max, 1);
        f.push(0, 90, 10_000, 10_000);
        f.push(5_000, 50, 10_000, 10_000);
        assert_eq!(f.get(5_000, 10_000), Some(90));
        f.push(10_001, 40, 10_000, 10_000);
        assert_eq!(f.get(10_001, 10_000), Some(50));
        assert!(f.len() <= 2);
    }

    #[test]
    fn size_is_bounded_and_buffer_reused_under_a_rising_rtt_at_high_ack_rate() {
        // Strictly rising RTT (queue building) with an ACK every microsecond: an exact
        // monotonic deque would keep every sample. Ours keeps about BUCKETS per window.
        let mut f = WindowedExtremum::new(Extremum::Min, 2);
        let w = 20_000;
        let cap0 = f.capacity();
        for i in 0..200_000u64 {
            f.push(i, 10_000 + i, w, 2 * w);
        }
        assert!(f.len() as u64 <= 2 * BUCKETS + 2, "len {}", f.len());
        assert_eq!(f.capacity(), cap0, "the deque reallocated");
        // The answer is late by at most one resolution step.
        let now = 199_999;
        let got = f.get(now, w).unwrap();
        let exact = 10_000 + now - w;
        assert!(
            got <= exact && exact - got <= w / BUCKETS,
            "got {got} exact {exact}"
        );
    }

    #[test]
    fn equal_values_refresh_the_timestamp() {
        let mut f = WindowedExtremum::new(Extremum::Min, 1);
        f.push(0, 10, 1_000_000, 1_000_000);
        f.push(900_000, 10, 1_000_000, 1_000_000);
        assert_eq!(f.get(1_500_000, 1_000_000), Some(10));
        assert_eq!(f.len(), 1);
    }
}
