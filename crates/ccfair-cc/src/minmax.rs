//! Kathleen Nichols' windowed min/max filter, as in Linux `lib/win_minmax.c`.
//!
//! Keeps the best, second-best and third-best samples with their times so that the
//! extreme over a sliding window is known in O(1) per update. Time is an abstract `u64`
//! (BBR uses round counts, the substrate's min-RTT filter uses microseconds).

/// One sample of the filter: value `v` measured at time `t` (`struct minmax_sample`; both in
/// the caller's units, e.g. rounds and packets per µs for BBR's bandwidth).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// When the sample was taken (the filter's time unit).
    pub t: u64,
    /// The measured value.
    pub v: u64,
}

/// A windowed running max (or min) over the last `win` time units (`struct minmax`): the best,
/// second-best and third-best samples of the window, so that an expiring best is replaced
/// without a rescan.
#[derive(Clone, Copy, Debug, Default)]
pub struct MinMax {
    s: [Sample; 3],
    /// Where an update is known to change nothing: `(win, lo, hi, bound)` says an update
    /// with window `win` at a time in `lo..=hi` whose value does not reach `bound` (does not
    /// exceed it, for a min filter) leaves every sample as it is. Set after each update.
    quiet: Option<(u64, u64, u64, u64)>,
}

impl MinMax {
    /// `minmax_get`: the current extreme (the best sample's value).
    pub fn get(&self) -> u64 {
        self.s[0].v
    }

    /// `minmax_reset`: forget every sample and start over from `v` at time `t`; returns `v`.
    pub fn reset(&mut self, t: u64, v: u64) -> u64 {
        let val = Sample { t, v };
        self.s = [val; 3];
        self.quiet = None;
        v
    }

    /// The times at which an update changes no sample unless its value beats the samples'
    /// (`quiet`): from the latest sample's time (no wrap-around in the differences) until
    /// the first of the expiry (`t - s[2].t > win` or `t - s[0].t > win`) and the sub-window
    /// refreshes of `subwin_update` (a quarter and half of the window past `s[0]`, while
    /// the 2nd and 3rd samples still equal their predecessors) would apply.
    fn quiet_times(&self, win: u64) -> (u64, u64) {
        let [s0, s1, s2] = self.s;
        let lo = s0.t.max(s2.t);
        let mut hi = s0.t.saturating_add(win).min(s2.t.saturating_add(win));
        if s1.t == s0.t {
            hi = hi.min(s0.t.saturating_add(win / 4));
        }
        if s2.t == s1.t {
            hi = hi.min(s0.t.saturating_add(win / 2));
        }
        (lo, hi)
    }

    /// `minmax_subwin_update`: the best sample aged out, or a sub-window refresh is due.
    fn subwin_update(&mut self, win: u64, val: Sample) -> u64 {
        let dt = val.t.wrapping_sub(self.s[0].t);
        if dt > win {
            // Passed the entire window without a new best: promote 2nd and 3rd.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.wrapping_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter of the window passed without a new 2nd choice: take one.
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // Half the window passed without a new 3rd choice: take one.
            self.s[2] = val;
        }
        self.s[0].v
    }

    /// `minmax_running_max`.
    pub fn running_max(&mut self, win: u64, t: u64, v: u64) -> u64 {
        if let Some((w, lo, hi, below)) = self.quiet {
            if w == win && lo <= t && t <= hi && v < below {
                return self.s[0].v; // no sample would change
            }
        }
        let best = self.running_max_update(win, t, v);
        let (lo, hi) = self.quiet_times(win);
        let below = self.s[0].v.min(self.s[1].v).min(self.s[2].v);
        self.quiet = Some((win, lo, hi, below));
        best
    }

    fn running_max_update(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let val = Sample { t, v };
        if val.v >= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, v);
        }
        if val.v >= self.s[1].v {
            self.s[2] = val;
            self.s[1] = val;
        } else if val.v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_running_min`.
    pub fn running_min(&mut self, win: u64, t: u64, v: u64) -> u64 {
        if let Some((w, lo, hi, above)) = self.quiet {
            if w == win && lo <= t && t <= hi && v > above {
                return self.s[0].v; // no sample would change
            }
        }
        let best = self.running_min_update(win, t, v);
        let (lo, hi) = self.quiet_times(win);
        let above = self.s[0].v.max(self.s[1].v).max(self.s[2].v);
        self.quiet = Some((win, lo, hi, above));
        best
    }

    fn running_min_update(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let val = Sample { t, v };
        if val.v <= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, v);
        }
        if val.v <= self.s[1].v {
            self.s[2] = val;
            self.s[1] = val;
        } else if val.v <= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_holds_best_for_window_then_forgets() {
        let mut f = MinMax::default();
        f.reset(0, 0);
        f.running_max(10, 0, 100);
        for t in 1..=10 {
            assert_eq!(f.running_max(10, t, 50), 100, "t={t}");
        }
        // After the window the old best is gone and a recent sample is reported.
        assert_eq!(f.running_max(10, 11, 50), 50);
    }

    #[test]
    fn min_tracks_lower_sample() {
        let mut f = MinMax::default();
        f.reset(0, 100);
        assert_eq!(f.running_min(5, 1, 120), 100);
        assert_eq!(f.running_min(5, 2, 90), 90);
        assert_eq!(f.running_min(5, 9, 95), 95);
    }
}
