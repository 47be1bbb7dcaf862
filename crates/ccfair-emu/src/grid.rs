//! The sampling grid the sender and the receiver of a flow share: points t0 + k x interval
//! for k up to duration / interval (ns on CLOCK_MONOTONIC), as the simulator samples.
//!
//! A thread takes the point that is due and then moves past every point that went by while
//! it was late by a whole interval or more; those are counted as missed, not taken late
//! (docs/kernel.md, "Self-checks").

/// Where a thread is on its flow's sampling grid.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    t0_ns: u64,
    interval_ns: u64,
    duration_ns: u64,
    /// The next point to take.
    k: u64,
}

impl Grid {
    /// A grid of the run starting at `t0_ns` whose next point is `first_k`.
    pub fn new(t0_ns: u64, interval_ns: u64, duration_ns: u64, first_k: u64) -> Self {
        Grid {
            t0_ns,
            interval_ns,
            duration_ns,
            k: first_k,
        }
    }

    /// The index of the next point.
    pub fn k(&self) -> u64 {
        self.k
    }

    /// Whether a point is left within the run's duration.
    pub fn pending(&self) -> bool {
        self.k * self.interval_ns <= self.duration_ns
    }

    /// When the next point falls (ns on the monotonic clock).
    pub fn point_ns(&self) -> u64 {
        self.t0_ns + self.k * self.interval_ns
    }

    /// Whether the next point is left and has come at `now_ns`.
    pub fn due(&self, now_ns: u64) -> bool {
        self.pending() && now_ns >= self.point_ns()
    }

    /// Move past the point just taken at `now_ns` and past every later one that `now_ns`
    /// has reached too; returns how many of those were missed.
    pub fn advance(&mut self, now_ns: u64) -> u64 {
        self.k += 1;
        let mut missed = 0;
        while self.pending() && self.point_ns() <= now_ns {
            self.k += 1;
            missed += 1;
        }
        missed
    }

    /// `deadline_ns`, or the next point if one is left and it comes earlier.
    pub fn next_before(&self, deadline_ns: u64) -> u64 {
        if self.pending() {
            deadline_ns.min(self.point_ns())
        } else {
            deadline_ns
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Grid;

    #[test]
    fn points_are_due_on_the_grid_until_the_duration() {
        // t0 = 1000, 10 ns apart, 30 ns long: points k = 1, 2, 3 at 1010, 1020, 1030.
        let mut g = Grid::new(1000, 10, 30, 1);
        assert!(!g.due(1009));
        assert!(g.due(1010));
        assert_eq!(g.advance(1010), 0);
        assert_eq!((g.k(), g.point_ns()), (2, 1020));
        assert_eq!(g.next_before(5000), 1020);
        assert_eq!(g.next_before(1015), 1015);
        assert_eq!(g.advance(1020), 0);
        assert!(g.pending());
        assert_eq!(g.advance(1030), 0);
        assert!(!g.pending());
        assert!(!g.due(u64::MAX / 2));
        assert_eq!(g.next_before(5000), 5000);
    }

    #[test]
    fn a_late_thread_counts_the_points_it_passed() {
        let mut g = Grid::new(0, 10, 100, 1);
        // Taken at 45 (due at 10): 20, 30 and 40 went by.
        assert_eq!(g.advance(45), 3);
        assert_eq!(g.k(), 5);
        // Beyond the duration nothing more is missed.
        assert_eq!(g.advance(1_000), 5);
        assert!(!g.pending());
    }
}
