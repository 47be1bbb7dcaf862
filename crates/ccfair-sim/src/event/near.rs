//! The events of the queue's current bucket (and the earliest, by construction): a sorted
//! run while few, a binary min-heap while many.
//!
//! - Few (most buckets hold 0 to 5 events): a sorted run, latest first, so that the earliest
//!   event leaves from the end and a new one is put in place by stepping over the few
//!   events due before it.
//! - Many (a bucket of a run with thousands of flows or a fast link): a binary min-heap.
//!   `replace_first` serves the engine's common step, an event whose handler schedules
//!   the next (a channel arrival its channel's next one), in one pass over the heap
//!   instead of a pop and a push.
//!
//! A new event (`push_newest`) has the largest insertion sequence of all, so an entry sorts
//! before it exactly when it is due at its time or earlier: its place is found comparing
//! 64-bit times, not 128-bit entries (0.5 BDP dumbbell: 682 -> 670 instructions per
//! packet-hop; 10-hop parking lot, a heap: 615 -> 602; issue 16).
//!
//! It turns into a heap above `HEAP_ABOVE` events and back below `RUN_BELOW` (far apart, so
//! that a size hovering near one changes nothing). Which way it is kept changes nothing
//! else: entries are unique, so any exact priority queue takes them out in the same order.

/// Above this many events the entries are a heap.
const HEAP_ABOVE: usize = 32;
/// Below this many events they are a sorted run again.
const RUN_BELOW: usize = 12;

/// Unique `u128` entries, smallest first out.
#[derive(Default)]
pub(super) struct Near {
    /// The entries: sorted latest first (`heap` false), or a min-heap.
    entries: Vec<u128>,
    heap: bool,
    /// The earliest entry was taken (`take`) and is still here: the next `push` replaces
    /// it, or `settle` removes it.
    taken: bool,
}

impl Near {
    /// Add `e`. If an entry was taken, `e` (not earlier than it) takes its place.
    #[inline(always)]
    pub(super) fn push(&mut self, e: u128) {
        if self.taken {
            self.taken = false;
            self.replace_first(e);
            return;
        }
        self.entries.push(e);
        let n = self.entries.len();
        if self.heap {
            self.sift_up(n - 1, e);
        } else if n > HEAP_ABOVE {
            // Sorted latest first: reversed, a sorted run is a min-heap.
            self.entries.pop();
            self.entries.reverse();
            self.heap = true;
            self.entries.push(e);
            self.sift_up(n - 1, e);
        } else {
            self.place_from_end(n - 1, e);
        }
    }

    /// Add `e`, a new entry: its insertion sequence is the largest of all entries, so it
    /// sorts after every entry due at its time or earlier, and its place is found by time
    /// alone (one 64-bit compare per entry stepped over instead of a 128-bit one).
    #[inline(always)]
    pub(super) fn push_newest(&mut self, e: u128) {
        debug_assert!(self
            .entries
            .iter()
            .all(|&x| x as u64 >> super::EVENT_BITS < e as u64 >> super::EVENT_BITS));
        if self.heap {
            if self.taken {
                self.taken = false;
                self.sift_down_newest(e);
            } else {
                self.entries.push(e);
                self.sift_up_newest(self.entries.len() - 1, e);
            }
            return;
        }
        let i = if self.taken {
            self.taken = false;
            self.entries.len() - 1
        } else if self.entries.len() < HEAP_ABOVE {
            self.entries.push(e);
            self.entries.len() - 1
        } else {
            return self.push(e);
        };
        self.place_newest_from_end(i, e);
    }

    /// Fill the empty `near` with the entries `fill` gives, in any order, sorted once at
    /// the end (a bucket moving in from the wheel) instead of each put in place.
    pub(super) fn fill(&mut self, fill: impl FnOnce(&mut Vec<u128>)) {
        debug_assert!(self.entries.is_empty() && !self.taken);
        fill(&mut self.entries);
        if self.entries.len() > HEAP_ABOVE {
            // Sorted earliest first: a min-heap.
            self.entries.sort_unstable();
            self.heap = true;
        } else {
            self.entries.sort_unstable_by(|a, b| b.cmp(a));
            self.heap = false;
        }
    }

    /// Remove every entry (none may be taken) and return them, in no particular order.
    pub(super) fn take_all(&mut self) -> Vec<u128> {
        debug_assert!(!self.taken);
        self.heap = false;
        std::mem::take(&mut self.entries)
    }

    /// Mark the earliest entry taken (see `EventQueue::take`). The caller checked that
    /// there is one and that none is taken.
    #[inline]
    pub(super) fn take(&mut self) {
        debug_assert!(!self.entries.is_empty() && !self.taken);
        self.taken = true;
    }

    #[inline]
    pub(super) fn is_taken(&self) -> bool {
        self.taken
    }

    /// Remove the taken entry if no push replaced it.
    #[inline]
    pub(super) fn settle(&mut self) {
        if self.taken {
            self.taken = false;
            self.pop();
        }
    }

    #[inline]
    pub(super) fn pop(&mut self) -> Option<u128> {
        debug_assert!(!self.taken, "pop before settle");
        if !self.heap {
            return self.entries.pop();
        }
        let top = *self.entries.first()?;
        let last = self.entries.pop().expect("not empty");
        if !self.entries.is_empty() {
            self.sift_down(0, last);
        }
        if self.entries.len() < RUN_BELOW {
            // Latest first.
            self.entries.sort_unstable_by(|a, b| b.cmp(a));
            self.heap = false;
        }
        Some(top)
    }

    /// The earliest entry (the taken one, if any).
    #[inline]
    pub(super) fn first(&self) -> Option<u128> {
        if self.heap {
            self.entries.first().copied()
        } else {
            self.entries.last().copied()
        }
    }

    /// Entries held, not counting a taken one.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.entries.len() - self.taken as usize
    }

    /// Put `e`, not earlier than the earliest entry, in the earliest entry's place.
    #[inline]
    fn replace_first(&mut self, e: u128) {
        if self.heap {
            self.sift_down(0, e);
        } else {
            let last = self.entries.len() - 1;
            self.place_from_end(last, e);
        }
    }

    /// Sorted run: put `e` in slot `i` (the end, free) and move it towards the front past
    /// the entries due before it.
    #[inline]
    fn place_from_end(&mut self, i: usize, e: u128) {
        self.place_from_end_by(i, e, |x| x > e);
    }

    /// `place_from_end` for an entry newer than every other (`push_newest`): an entry sorts
    /// after it if it is due strictly later.
    #[inline(always)]
    fn place_newest_from_end(&mut self, i: usize, e: u128) {
        let time = (e >> 64) as u64;
        self.place_from_end_by(i, e, |x| (x >> 64) as u64 > time);
    }

    /// Heap: move `e` from slot `i` towards the root until its parent is earlier.
    fn sift_up(&mut self, i: usize, e: u128) {
        self.sift_up_by(i, e, |x| x > e);
    }

    #[inline(always)]
    fn sift_up_newest(&mut self, i: usize, e: u128) {
        let time = (e >> 64) as u64;
        self.sift_up_by(i, e, |x| (x >> 64) as u64 > time);
    }

    /// Heap: put `e` in slot `i` and move it down until its children are later.
    fn sift_down(&mut self, i: usize, e: u128) {
        self.sift_down_by(i, e, |x| x > e);
    }

    #[inline(always)]
    fn sift_down_newest(&mut self, e: u128) {
        let time = (e >> 64) as u64;
        self.sift_down_by(0, e, |x| (x >> 64) as u64 > time);
    }

    // The three moves, given `later(x)`: whether entry `x` sorts after `e`. For any entry,
    // `x > e`; for a new one (`push_newest`), comparing times is the same and cheaper.

    #[inline(always)]
    fn place_from_end_by(&mut self, mut i: usize, e: u128, later: impl Fn(u128) -> bool) {
        let run = &mut self.entries[..=i];
        while i > 0 {
            let before = run[i - 1];
            if later(before) {
                break;
            }
            run[i] = before;
            i -= 1;
        }
        run[i] = e;
    }

    #[inline(always)]
    fn sift_up_by(&mut self, mut i: usize, e: u128, later: impl Fn(u128) -> bool) {
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.entries[parent];
            if !later(p) {
                break;
            }
            self.entries[i] = p;
            i = parent;
        }
        self.entries[i] = e;
    }

    #[inline(always)]
    fn sift_down_by(&mut self, mut i: usize, e: u128, later: impl Fn(u128) -> bool) {
        let heap = &mut self.entries[..];
        loop {
            let left = 2 * i + 1;
            let Some(&l) = heap.get(left) else {
                break;
            };
            let (child, c) = match heap.get(left + 1) {
                Some(&r) if r < l => (left + 1, r),
                _ => (left, l),
            };
            if later(c) {
                break;
            }
            heap[i] = c;
            i = child;
        }
        heap[i] = e;
    }
}
