//! Kathleen Nichols' windowed min/max filter, as in Linux `lib/win_minmax.c`.
//!
//! Keeps the best, second-best and third-best samples with their times so that the
//! extreme over a sliding window is known in O(1) per update. Time is an abstract `u64`
//! (BBR uses round counts, the substrate's min-RTT filter uses microseconds).

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    pub t: u64,
    pub v: u64,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct MinMax {
    s: [Sample; 3],
}

impl MinMax {
    pub fn get(&self) -> u64 {
        self.s[0].v
    }

    pub fn reset(&mut self, t: u64, v: u64) -> u64 {
        let val = Sample { t, v };
        self.s = [val; 3];
        v
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
