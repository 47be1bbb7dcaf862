//! The event queue: a binary heap ordered by (time, insertion sequence).
//!
//! Ties at the same nanosecond are broken by insertion order, so a run is a pure function of
//! its spec and seed. Events are small `Copy` values; packets never live in the heap (channels
//! keep them in FIFO order and only the head of each channel is scheduled).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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

/// Heap entries are 16 bytes: the time and one key packing the insertion sequence (high
/// 40 bits) above the event (low 24 bits). Comparing (time, key) orders by time, then by
/// insertion, since sequence numbers are unique.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    time_ns: u64,
    key: u64,
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap, we pop the earliest.
        (other.time_ns, other.key).cmp(&(self.time_ns, self.key))
    }
}

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

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
}

impl EventQueue {
    pub fn push(&mut self, time_ns: u64, event: Event) {
        let key = (self.next_seq << EVENT_BITS) | encode(event);
        self.next_seq += 1;
        self.heap.push(Entry { time_ns, key });
    }

    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap
            .pop()
            .map(|e| (e.time_ns, decode(e.key & ((1 << EVENT_BITS) - 1))))
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
}
