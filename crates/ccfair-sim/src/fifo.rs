//! A first-in first-out ring of `Copy` values, for the channels' queues (`link.rs`).
//!
//! `std::collections::VecDeque` wraps its indices with a compare and a conditional
//! subtract, for any capacity. Here the capacity is a power of two, so an index wraps
//! with one mask, and a push or pop is a handful of instructions: each packet-hop pushes
//! and pops twice (buffer and pipe). It grows by doubling, like `VecDeque`, and never
//! shrinks; nothing is allocated while it holds fewer values than its capacity.
//!
//! It takes 32 bytes (a boxed slice, head and length), so that a channel's two rings share
//! one cache line (`link.rs`, `Channel`).

/// A FIFO ring. The storage's length is its capacity: 0, or a power of two.
#[derive(Clone, Debug)]
pub struct Fifo<T> {
    buf: Box<[T]>,
    /// Index of the first value.
    head: usize,
    len: usize,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Fifo {
            buf: Box::new([]),
            head: 0,
            len: 0,
        }
    }
}

impl<T: Copy> Fifo<T> {
    /// An empty ring; nothing is allocated until the first push.
    pub fn new() -> Self {
        Self::default()
    }

    /// Values held.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// No value held.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The oldest value, left in the ring.
    #[inline]
    pub fn front(&self) -> Option<&T> {
        if self.len == 0 {
            None
        } else {
            Some(&self.buf[self.head])
        }
    }

    /// Append `x`, doubling the storage when it is full.
    #[inline]
    pub fn push_back(&mut self, x: T) {
        if self.len == self.buf.len() {
            self.grow(x);
        }
        let i = (self.head + self.len) & (self.buf.len() - 1);
        self.buf[i] = x;
        self.len += 1;
    }

    /// Remove and return the oldest value.
    #[inline]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let x = self.buf[self.head];
        self.head = (self.head + 1) & (self.buf.len() - 1);
        self.len -= 1;
        Some(x)
    }

    /// Values it holds without growing.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Remove every value (nothing is freed).
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// The `k`-th value from the front.
    #[inline]
    pub fn get(&self, k: usize) -> Option<&T> {
        if k < self.len {
            Some(&self.buf[(self.head + k) & (self.buf.len() - 1)])
        } else {
            None
        }
    }

    /// The last value.
    #[inline]
    pub fn back(&self) -> Option<&T> {
        self.len.checked_sub(1).and_then(|k| self.get(k))
    }

    /// The values, first to last.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        let mask = self.buf.len().wrapping_sub(1);
        (0..self.len).map(move |k| &self.buf[(self.head + k) & mask])
    }

    /// Double the capacity (at least 4), the values first in order; `fill` (any value of
    /// the type) fills the free slots.
    #[cold]
    fn grow(&mut self, fill: T) {
        self.grow_to((2 * self.buf.len()).max(4), fill);
    }

    fn grow_to(&mut self, capacity: usize, fill: T) {
        debug_assert!(capacity.is_power_of_two() && capacity >= self.len);
        let mut buf = Vec::with_capacity(capacity);
        buf.extend(self.iter().copied());
        buf.resize(capacity, fill);
        self.buf = buf.into_boxed_slice();
        self.head = 0;
    }
}

impl<T: Copy + Default> Fifo<T> {
    /// Room for `additional` more values without growing.
    pub fn reserve(&mut self, additional: usize) {
        let need = self.len + additional;
        if need > self.buf.len() {
            self.grow_to(need.next_power_of_two().max(4), T::default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Against `VecDeque` under random pushes and pops, through several growths and
    /// wrap-arounds, with a reservation in between.
    #[test]
    fn behaves_as_a_vecdeque() {
        let mut rng = ccfair_cc::rng::Rng::new(3);
        let mut f: Fifo<u64> = Fifo::new();
        let mut d: VecDeque<u64> = VecDeque::new();
        for step in 0..100_000u64 {
            if step == 50_000 {
                f.reserve(300);
                let cap = f.buf.len();
                for k in 0..300 {
                    f.push_back(k);
                    d.push_back(k);
                }
                assert_eq!(f.buf.len(), cap, "no growth within the reservation");
            }
            let grow = (step / 5_000) % 2 == 0;
            if rng.uniform() < if grow { 0.6 } else { 0.4 } {
                f.push_back(step);
                d.push_back(step);
            } else {
                assert_eq!(f.pop_front(), d.pop_front(), "step {step}");
            }
            assert_eq!(f.len(), d.len());
            assert_eq!(f.front(), d.front());
            assert_eq!(f.back(), d.back());
            let k = (step % 7) as usize;
            assert_eq!(f.get(k), d.get(k));
            if step % 1_000 == 0 {
                assert!(f.iter().eq(d.iter()), "step {step}");
            }
            if step % 9_999 == 0 {
                f.clear();
                d.clear();
            }
        }
    }
}
