//! Storage of the retransmission queue (`tcp_rtx_queue`): the segments `snd_una..snd_nxt`
//! in a ring whose size is a power of two, segment `seq` in slot `seq & mask`.
//!
//! Every ACK and every send looks segments up by sequence number several times (the
//! scoreboard, the rate sampler, the time-sorted list). Indexing by the sequence number
//! itself needs no subtraction of `snd_una` and no wrap-around test, which a `VecDeque`
//! indexed by `seq - snd_una` did on every access.

use super::Seg;

pub(super) struct SegRing {
    slots: Vec<Seg>,
    /// `slots.len() - 1`.
    mask: u64,
    /// Sequence numbers held: `head..end` (`snd_una..snd_nxt` once a send completes).
    head: u64,
    end: u64,
}

impl SegRing {
    /// A ring of at least `capacity` slots, holding nothing, starting at sequence 0.
    pub fn with_capacity(capacity: usize) -> Self {
        let n = capacity.max(1).next_power_of_two();
        SegRing {
            slots: vec![Seg::EMPTY; n],
            mask: n as u64 - 1,
            head: 0,
            end: 0,
        }
    }

    /// Bytes of the slots (the most segments ever held, rounded up to a power of two).
    pub fn reserved_bytes(&self) -> u64 {
        (self.slots.capacity() * std::mem::size_of::<Seg>()) as u64
    }

    /// Segments held.
    pub fn len(&self) -> u64 {
        self.end - self.head
    }

    #[inline]
    pub fn get(&self, seq: u64) -> &Seg {
        debug_assert!(
            self.head <= seq && seq < self.end,
            "segment {seq} not in {}..{}",
            self.head,
            self.end
        );
        &self.slots[(seq & self.mask) as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, seq: u64) -> &mut Seg {
        debug_assert!(
            self.head <= seq && seq < self.end,
            "segment {seq} not in {}..{}",
            self.head,
            self.end
        );
        &mut self.slots[(seq & self.mask) as usize]
    }

    /// The segment at `snd_una`, if any.
    #[inline]
    pub fn front(&self) -> Option<&Seg> {
        (self.head < self.end).then(|| &self.slots[(self.head & self.mask) as usize])
    }

    /// Appends segment `end` (the next to send).
    #[inline]
    pub fn push_back(&mut self, seg: Seg) {
        if self.len() == self.slots.len() as u64 {
            self.grow();
        }
        let i = (self.end & self.mask) as usize;
        self.slots[i] = seg;
        self.end += 1;
    }

    /// Forgets the segments before `seq` (acknowledged).
    #[inline]
    pub fn pop_front_to(&mut self, seq: u64) {
        debug_assert!(self.head <= seq && seq <= self.end);
        self.head = seq;
    }

    /// Doubles the ring, moving each segment held to its slot in the larger one.
    #[cold]
    fn grow(&mut self) {
        let n = self.slots.len() * 2;
        let mask = n as u64 - 1;
        let mut slots = vec![Seg::EMPTY; n];
        for seq in self.head..self.end {
            slots[(seq & mask) as usize] = self.slots[(seq & self.mask) as usize];
        }
        self.slots = slots;
        self.mask = mask;
    }

    /// The segments held, from `snd_una` on.
    pub fn iter(&self) -> impl Iterator<Item = &Seg> {
        (self.head..self.end).map(|seq| &self.slots[(seq & self.mask) as usize])
    }

    /// Applies `f` to every segment held.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut Seg)) {
        for seq in self.head..self.end {
            f(&mut self.slots[(seq & self.mask) as usize]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(tx_ns: u64) -> Seg {
        Seg {
            tx_ns,
            ..Seg::EMPTY
        }
    }

    /// Growing keeps every segment findable by its sequence number, across a wrapped ring.
    #[test]
    fn growth_keeps_segments_at_their_sequence_numbers() {
        let mut r = SegRing::with_capacity(4);
        for seq in 0..3 {
            r.push_back(seg(seq));
        }
        r.pop_front_to(2);
        for seq in 3..20 {
            r.push_back(seg(seq));
        }
        assert_eq!(r.len(), 18);
        for seq in 2..20 {
            assert_eq!(r.get(seq).tx_ns, seq);
        }
        assert_eq!(r.front().unwrap().tx_ns, 2);
        assert_eq!(
            r.iter().map(|s| s.tx_ns).collect::<Vec<_>>(),
            (2..20).collect::<Vec<_>>()
        );
        r.pop_front_to(20);
        assert!(r.front().is_none());
    }
}
