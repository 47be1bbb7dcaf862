//! The event queue: a binary heap ordered by (time, insertion sequence).
//!
//! Ties at the same nanosecond are broken by insertion order, so a run is a pure function of
//! its spec and seed. Events are small `Copy` values; packets never live in the heap (channels
//! keep them in FIFO order and only the head of each channel is scheduled).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The packet in service on a channel finished serialising.
    ChannelTxDone(u32),
    /// The head of a channel's propagation pipe reaches the far end.
    ChannelArrival(u32),
    FlowStart(u32),
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

#[derive(Clone, Copy, Debug)]
struct Entry {
    time_ns: u64,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.time_ns == other.time_ns && self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap, we pop the earliest.
        (other.time_ns, other.seq).cmp(&(self.time_ns, self.seq))
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
}

impl EventQueue {
    pub fn push(&mut self, time_ns: u64, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            time_ns,
            seq,
            event,
        });
    }

    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap.pop().map(|e| (e.time_ns, e.event))
    }

    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.time_ns)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (3, Event::FlowStart(1)),
                (3, Event::FlowStart(3)),
                (5, Event::FlowStart(0)),
                (5, Event::FlowStart(2)),
            ]
        );
    }
}
