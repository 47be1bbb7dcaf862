//! The event queue: `u128` entries ordered by (time, insertion sequence), kept in one of two
//! ways by size.
//!
//! - Small (the dumbbells: 10 to 20 events pending): a sorted run, latest first, so that the
//!   earliest event leaves from the end and a new one is put in place by stepping over the
//!   few events due before it. Most new events are due soon (a channel's next arrival, a
//!   pacing release): callgrind on the 0.5 BDP dumbbell counts 2 to 5 earlier events for
//!   most, about 40 instructions to place one where a binary heap's sift took about 100.
//! - Large (parking lots, many flows): a binary min-heap, where a new event may belong
//!   anywhere among hundreds. `pop_push` serves the engine's common step, a channel arrival
//!   that schedules the channel's next arrival, in one pass over the heap instead of a pop
//!   and a push. (A 4-ary heap was tried and counted slightly more instructions.)
//!
//! The queue turns into a heap above `HEAP_ABOVE` events and back below `RUN_BELOW` (far
//! apart, so that a size hovering near one changes nothing). Which way it is kept changes
//! nothing else: entries are unique, so any exact priority queue takes them out in the same
//! order.
//!
//! Ties at the same nanosecond are broken by insertion order, so a run is a pure function of
//! its spec and seed. Events are small `Copy` values; packets never live in the heap (channels
//! keep them in FIFO order and only the head of each channel is scheduled).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The head of a channel's propagation pipe reaches the far end.
    ChannelArrival(u32),
    /// The application of a flow starts: it connects (or, without the handshake, writes).
    FlowStart(u32),
    /// `connect()` returned to the application, which now writes its data.
    AppWrite(u32),
    /// The application of a flow stops writing.
    FlowStop(u32),
    /// A flow timer (see `TimerKind`).
    FlowTimer(u32, TimerKind),
    Sample,
    MeasureStart,
    MeasureEnd,
}

/// Per-flow timers. Each is lazily scheduled: the flow keeps its deadline, the heap may hold
/// stale entries that are ignored when they fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimerKind {
    /// Retransmission, loss probe or RACK reordering timer (Linux's one `icsk_retransmit_timer`).
    Xmit = 0,
    /// Pacing: the next packet may leave.
    Pacing = 1,
    /// Receiver delayed-ACK timer.
    Delack = 2,
    /// Receiver SACK compression timer.
    CompSack = 3,
}

pub const N_TIMER_KINDS: usize = 4;

/// Heap entries are one `u128`: the time (high 64 bits), then the insertion sequence (40
/// bits), then the event (24 bits). Comparing entries as integers orders by time, then by
/// insertion, since sequence numbers are unique.
const EVENT_BITS: u32 = 24;
const ID_BITS: u32 = 19;
/// Largest flow or channel index an event can carry.
pub const MAX_EVENT_ID: u32 = (1 << ID_BITS) - 1;

fn encode(ev: Event) -> u64 {
    let (kind, id): (u64, u32) = match ev {
        Event::ChannelArrival(c) => (0, c),
        Event::FlowStart(f) => (1, f),
        Event::FlowStop(f) => (2, f),
        Event::FlowTimer(f, TimerKind::Xmit) => (3, f),
        Event::FlowTimer(f, TimerKind::Pacing) => (4, f),
        Event::FlowTimer(f, TimerKind::Delack) => (5, f),
        Event::FlowTimer(f, TimerKind::CompSack) => (6, f),
        Event::Sample => (7, 0),
        Event::MeasureStart => (8, 0),
        Event::MeasureEnd => (9, 0),
        Event::AppWrite(f) => (10, f),
    };
    debug_assert!(id <= MAX_EVENT_ID);
    (kind << ID_BITS) | id as u64
}

fn decode(code: u64) -> Event {
    let id = (code & MAX_EVENT_ID as u64) as u32;
    match code >> ID_BITS {
        0 => Event::ChannelArrival(id),
        1 => Event::FlowStart(id),
        2 => Event::FlowStop(id),
        3 => Event::FlowTimer(id, TimerKind::Xmit),
        4 => Event::FlowTimer(id, TimerKind::Pacing),
        5 => Event::FlowTimer(id, TimerKind::Delack),
        6 => Event::FlowTimer(id, TimerKind::CompSack),
        7 => Event::Sample,
        8 => Event::MeasureStart,
        9 => Event::MeasureEnd,
        _ => Event::AppWrite(id),
    }
}

/// An event as the queue stores it (see [`EventQueue::peek_code`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventCode(u64);

impl EventCode {
    /// The channel, if this is a channel arrival: one test, no decoding.
    #[inline]
    pub fn channel_arrival(self) -> Option<u32> {
        (self.0 >> ID_BITS == 0).then_some(self.0 as u32)
    }

    #[inline]
    pub fn event(self) -> Event {
        decode(self.0)
    }
}

fn entry_time(e: u128) -> u64 {
    (e >> 64) as u64
}

fn entry_event(e: u128) -> Event {
    decode(e as u64 & ((1 << EVENT_BITS) - 1))
}

/// Above this many events the queue is a heap.
const HEAP_ABOVE: usize = 32;
/// Below this many events the queue is a sorted run again.
const RUN_BELOW: usize = 12;

/// Events ordered by (time, insertion sequence): a sorted run or a binary min-heap.
#[derive(Default)]
pub struct EventQueue {
    /// The entries: sorted latest first (`heap` false), or a min-heap.
    entries: Vec<u128>,
    heap: bool,
    next_seq: u64,
    /// The earliest event was taken (`take`) and is still in the queue: the next `push`
    /// replaces it, or `settle` removes it.
    taken: bool,
    /// The most events the queue has held at once (counted where it grows, in `push`).
    peak_len: usize,
}

impl EventQueue {
    fn entry(&mut self, time_ns: u64, event: Event) -> u128 {
        let key = (self.next_seq << EVENT_BITS) | encode(event);
        self.next_seq += 1;
        ((time_ns as u128) << 64) | key as u128
    }

    pub fn push(&mut self, time_ns: u64, event: Event) {
        let e = self.entry(time_ns, event);
        if self.taken {
            // The taken event leaves as this one enters: `pop_push`.
            self.taken = false;
            self.replace_first(e);
            return;
        }
        self.entries.push(e);
        let n = self.entries.len();
        self.peak_len = self.peak_len.max(n);
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

    /// Take the earliest event off the queue (its handler runs next), lazily: the first
    /// `push` before `settle` takes its place (the same order as `pop` then `push`, see
    /// `pop_push`), and `settle` removes it if no push came. Until `settle`, pushes may come
    /// (they sort after the taken event: not earlier, and later in sequence), but no `pop`,
    /// `peek` or `pop_push`. Most events push at least one (a channel arrival its channel's
    /// next one, a pacing timer the next deadline).
    ///
    /// Panics if the queue is empty.
    #[inline]
    pub fn take(&mut self) {
        assert!(
            !self.entries.is_empty() && !self.taken,
            "take on an empty queue, or twice before settle"
        );
        self.taken = true;
    }

    /// Remove the taken event if no push replaced it (see `take`).
    #[inline]
    pub fn settle(&mut self) {
        if self.taken {
            self.taken = false;
            self.pop();
        }
    }

    pub fn pop(&mut self) -> Option<(u64, Event)> {
        debug_assert!(!self.taken, "pop before settle");
        let top = if self.heap {
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
            top
        } else {
            self.entries.pop()?
        };
        Some((entry_time(top), entry_event(top)))
    }

    /// Remove the earliest event and schedule `event` at `time_ns`: the same order as `pop`
    /// then `push` (the new event takes the next sequence number), in one pass over the
    /// queue. The engine's common step: a channel's arrival, which schedules that
    /// channel's next arrival.
    ///
    /// Panics if the queue is empty.
    #[inline]
    pub fn pop_push(&mut self, time_ns: u64, event: Event) {
        assert!(!self.entries.is_empty(), "pop_push on an empty queue");
        debug_assert!(!self.taken, "pop_push before settle");
        let e = self.entry(time_ns, event);
        self.replace_first(e);
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

    /// The earliest event, left in the queue.
    pub fn peek(&self) -> Option<(u64, Event)> {
        debug_assert!(!self.taken, "peek before settle");
        self.first().map(|e| (entry_time(e), entry_event(e)))
    }

    /// The earliest event, left in the queue, undecoded: the engine dispatches channel
    /// arrivals (most events) without building an `Event`.
    #[inline]
    pub fn peek_code(&self) -> Option<(u64, EventCode)> {
        debug_assert!(!self.taken, "peek before settle");
        self.first()
            .map(|e| (entry_time(e), EventCode(e as u64 & ((1 << EVENT_BITS) - 1))))
    }

    pub fn peek_time(&self) -> Option<u64> {
        self.first().map(entry_time)
    }

    #[inline]
    fn first(&self) -> Option<u128> {
        if self.heap {
            self.entries.first().copied()
        } else {
            self.entries.last().copied()
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len() - self.taken as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most events the queue has held at once.
    pub fn peak_len(&self) -> usize {
        self.peak_len
    }

    /// Sorted run: put `e` in slot `i` (the end, free) and move it towards the front past
    /// the entries due before it.
    #[inline]
    fn place_from_end(&mut self, mut i: usize, e: u128) {
        let run = &mut self.entries[..=i];
        while i > 0 {
            let before = run[i - 1];
            if before > e {
                break;
            }
            run[i] = before;
            i -= 1;
        }
        run[i] = e;
    }

    /// Heap: move `e` from slot `i` towards the root until its parent is earlier.
    fn sift_up(&mut self, mut i: usize, e: u128) {
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.entries[parent];
            if p <= e {
                break;
            }
            self.entries[i] = p;
            i = parent;
        }
        self.entries[i] = e;
    }

    /// Heap: put `e` in slot `i` and move it down until its children are later.
    fn sift_down(&mut self, mut i: usize, e: u128) {
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
            if e <= c {
                break;
            }
            heap[i] = c;
            i = child;
        }
        heap[i] = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, Event::FlowStart(0));
        q.push(3, Event::FlowStart(1));
        q.push(5, Event::FlowStart(2));
        q.push(3, Event::FlowStart(3));
        q.push(4, Event::FlowTimer(MAX_EVENT_ID, TimerKind::CompSack));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (3, Event::FlowStart(1)),
                (3, Event::FlowStart(3)),
                (4, Event::FlowTimer(MAX_EVENT_ID, TimerKind::CompSack)),
                (5, Event::FlowStart(0)),
                (5, Event::FlowStart(2)),
            ]
        );
    }

    /// Against a reference (a sorted list of (time, sequence)): random pushes, pops and
    /// pop_push at heap sizes from 0 to a few hundred, with many equal times.
    #[test]
    fn matches_a_sorted_reference_under_random_operations() {
        let mut rng = ccfair_cc::rng::Rng::new(5);
        let mut q = EventQueue::default();
        let mut reference: Vec<(u64, u64, Event)> = Vec::new();
        let mut seq = 0u64;
        for step in 0..200_000u64 {
            let grow = (step / 20_000) % 2 == 0;
            let u = rng.uniform();
            let t = (rng.uniform() * 50.0) as u64 + step / 100;
            let ev = Event::ChannelArrival((step % 1000) as u32);
            if u < if grow { 0.55 } else { 0.3 } {
                q.push(t, ev);
                reference.push((t, seq, ev));
                seq += 1;
            } else if u < 0.8 || reference.is_empty() {
                reference.sort_by_key(|&(t, s, _)| (t, s));
                let want = (!reference.is_empty()).then(|| reference.remove(0));
                assert_eq!(q.pop(), want.map(|(t, _, e)| (t, e)), "step {step}");
            } else if u < 0.9 {
                reference.sort_by_key(|&(t, s, _)| (t, s));
                let (wt, _, we) = reference.remove(0);
                assert_eq!(q.peek(), Some((wt, we)), "step {step}");
                q.pop_push(t, ev);
                reference.push((t, seq, ev));
                seq += 1;
            } else {
                // take, then 0 to 3 pushes not earlier than the taken event, then settle.
                reference.sort_by_key(|&(t, s, _)| (t, s));
                let (wt, _, we) = reference.remove(0);
                assert_eq!(q.peek(), Some((wt, we)), "step {step}");
                q.take();
                for k in 0..(step % 4) {
                    let t = wt + k * (rng.uniform() * 3.0) as u64;
                    q.push(t, ev);
                    reference.push((t, seq, ev));
                    seq += 1;
                    assert_eq!(q.len(), reference.len());
                }
                q.settle();
            }
            assert_eq!(q.len(), reference.len());
        }
    }
}
