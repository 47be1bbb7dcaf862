//! The queue's next buckets: a ring of `SLOTS` lists, one per bucket after the current
//! one, with a bitmap of the lists that are not empty.
//!
//! A list holds the entries of one bucket, in no order (the near part sorts them when their
//! bucket comes). Nodes live in one pool and are reused, so nothing is allocated once the
//! pool has grown to the most entries the wheel has held.

/// Buckets the wheel reaches ahead of the current one (a power of two).
pub(super) const SLOTS: usize = 4096;
const WORDS: usize = SLOTS / 64;
/// The end of a list.
const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Node {
    key: u128,
    /// The next node of the list (`NIL` at the end of a list, and of the free list).
    next: u32,
}

pub(super) struct Wheel {
    /// The first node of each slot's list.
    heads: Box<[u32; SLOTS]>,
    /// Bit `s` is set when slot `s`'s list is not empty.
    occupied: [u64; WORDS],
    /// The node pool.
    nodes: Vec<Node>,
    /// The first free node (`NIL`: none).
    free: u32,
    len: usize,
}

impl Default for Wheel {
    fn default() -> Self {
        Wheel {
            heads: Box::new([NIL; SLOTS]),
            occupied: [0; WORDS],
            nodes: Vec::new(),
            free: NIL,
            len: 0,
        }
    }
}

impl Wheel {
    /// Entries held.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Add `key` to the list of `slot`.
    #[inline]
    pub(super) fn insert(&mut self, slot: usize, key: u128) {
        let next = self.heads[slot];
        let node = if self.free != NIL {
            let node = self.free;
            let free = &mut self.nodes[node as usize];
            self.free = free.next;
            *free = Node { key, next };
            node
        } else {
            self.nodes.push(Node { key, next });
            u32::try_from(self.nodes.len() - 1).expect("fewer than 2^32 events pending")
        };
        self.heads[slot] = node;
        self.occupied[slot / 64] |= 1 << (slot % 64);
        self.len += 1;
    }

    /// Whether the list of `slot` is not empty.
    #[inline]
    pub(super) fn occupied(&self, slot: usize) -> bool {
        self.occupied[slot / 64] & (1 << (slot % 64)) != 0
    }

    /// How many slots after `from` (0 for `from` itself) the first non-empty list is, or
    /// `None` if the wheel is empty.
    #[inline]
    pub(super) fn distance_to_next(&self, from: usize) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mut word = from / 64;
        let mut bits = self.occupied[word] & (!0u64 << (from % 64));
        if bits != 0 {
            // Most often: within the same 64 buckets.
            return Some(bits.trailing_zeros() as usize - from % 64);
        }
        // At most once round the ring, and a word further for the bits below `from`.
        for _ in 0..=WORDS {
            if bits != 0 {
                let slot = word * 64 + bits.trailing_zeros() as usize;
                return Some((slot + SLOTS - from) % SLOTS);
            }
            word = (word + 1) % WORDS;
            bits = self.occupied[word];
        }
        unreachable!("the wheel holds {} entries but no slot is marked", self.len)
    }

    /// Empty the list of `slot`, giving each entry to `take`.
    #[inline]
    pub(super) fn drain(&mut self, slot: usize, mut take: impl FnMut(u128)) {
        let mut node = self.heads[slot];
        self.heads[slot] = NIL;
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        while node != NIL {
            let n = &mut self.nodes[node as usize];
            take(n.key);
            let after = n.next;
            n.next = self.free;
            self.free = node;
            node = after;
            self.len -= 1;
        }
    }

    /// Empty every list, giving each entry to `take`.
    pub(super) fn drain_all(&mut self, mut take: impl FnMut(u128)) {
        for slot in 0..SLOTS {
            if self.occupied(slot) {
                self.drain(slot, &mut take);
            }
        }
        debug_assert_eq!(self.len, 0);
    }
}
