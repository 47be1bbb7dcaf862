//! The event queue: `u128` entries ordered by (time, insertion sequence), in buckets of
//! time (see `EventQueue`): the current bucket's events sorted (`near.rs`), the next
//! buckets' in unsorted lists on a wheel (`wheel.rs`), later ones in a heap.
//!
//! Ties at the same nanosecond are broken by insertion order, so a run is a pure function of
//! its spec and seed. Events are small `Copy` values; packets never live in the queue
//! (channels keep them in FIFO order and only the head of each channel is scheduled).

mod near;
mod wheel;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use near::Near;
use wheel::{Wheel, SLOTS};

/// Everything the engine schedules. Flow and channel ids are indices into the run's flows
/// and channel list (at most [`MAX_EVENT_ID`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The head of a channel's propagation pipe reaches the far end.
    ChannelArrival(u32),
    /// A channel with a queue discipline has a dequeue due, or a packet offered ahead
    /// arrives (`link/serve.rs`).
    ChannelWake(u32),
    /// The application of a flow starts: it connects (or, without the handshake, writes).
    FlowStart(u32),
    /// `connect()` returned to the application, which now writes its data.
    AppWrite(u32),
    /// The application of a flow stops writing.
    FlowStop(u32),
    /// A flow timer (see `TimerKind`).
    FlowTimer(u32, TimerKind),
    /// Record one row of time series (every `sample_interval_ns`).
    Sample,
    /// The measurement window starts (`measure_start_ns`): counters are taken as its zero.
    MeasureStart,
    /// The measurement window ends (`measure_end_ns`).
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

/// Number of [`TimerKind`]s (the size of a flow's table of timer deadlines).
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
        Event::ChannelWake(c) => (11, c),
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
        10 => Event::AppWrite(id),
        _ => Event::ChannelWake(id),
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

    /// The event, decoded.
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

/// With the wheel on, entries are grouped in buckets of `2^BUCKET_SHIFT` ns (65.5 us): about
/// twenty events each on a 1 Gbit/s dumbbell with a thousand flows (an event every ~3 us).
/// Measured there (callgrind, instructions per packet-hop): 2^13 ns 716.5, 2^14 688.9, 2^15
/// 682.1, 2^16 681.1, 2^17 690.5, 2^18 743.5; 10,000 flows 792.7 at 2^14, 783.7 at 2^16.
/// Wider buckets mean fewer bucket changes (each drains a wheel list and sorts it) and
/// fewer events beyond the wheel, narrower ones a cheaper `near`.
const BUCKET_SHIFT: u32 = 16;
/// Above this many events the wheel is used; below `WHEEL_OFF_BELOW` no longer (far apart,
/// so that a size hovering near one changes nothing).
const WHEEL_ABOVE: usize = 256;
const WHEEL_OFF_BELOW: usize = 64;

fn bucket(e: u128) -> u64 {
    entry_time(e) >> BUCKET_SHIFT
}

/// Events ordered by (time, insertion sequence), kept in one of two ways by how many are
/// pending.
///
/// - Up to a few hundred (the dumbbells hold 10 to 30, the 10-hop parking lot ~60): all in
///   `near`, a sorted run while small, then a binary heap (`near.rs`). Most new events are
///   due soon (a channel's next arrival, a pacing release): on the 0.5 BDP dumbbell a new
///   event steps over 2 to 5 earlier ones, about 40 instructions.
/// - More (a thousand flows: ~4000 events, whose heap passes cost ~180 instructions per
///   packet-hop): by bucket of time. `near` holds the current bucket (`cur`), the earliest
///   events; the wheel the next `wheel::SLOTS` buckets (268 ms), one unsorted list per
///   bucket; `far` later ones (retransmission timeouts, the end of the run), in a heap. A
///   push is a list insertion for most events, and when `near` runs empty the next
///   non-empty bucket (the bitmap's next set bit, or the far heap's earliest) moves in.
///
/// Entries are unique, so the order is exactly that of one sorted list whichever way they
/// are kept: a run is a pure function of its spec and seed.
pub struct EventQueue {
    near: Near,
    /// The events are kept by bucket (the wheel is on).
    wheel_on: bool,
    /// The bucket `near` covers: every event in `near` is due in it or earlier, every
    /// other one later (`u64::MAX` while the wheel is off: all are in `near`).
    cur: u64,
    wheel: Wheel,
    far: BinaryHeap<Reverse<u128>>,
    /// The bucket of the far heap's earliest event (`u64::MAX` when it is empty).
    far_first: u64,
    next_seq: u64,
    /// The most events the queue has held at once (counted where it grows, in `push`).
    peak_len: usize,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            near: Near::default(),
            wheel_on: false,
            cur: u64::MAX,
            wheel: Wheel::default(),
            far: BinaryHeap::new(),
            far_first: u64::MAX,
            next_seq: 0,
            peak_len: 0,
        }
    }
}

impl EventQueue {
    fn entry(&mut self, time_ns: u64, event: Event) -> u128 {
        let key = (self.next_seq << EVENT_BITS) | encode(event);
        self.next_seq += 1;
        ((time_ns as u128) << 64) | key as u128
    }

    /// Schedule `event` at `time_ns`; among events at the same time, it runs after those pushed
    /// before it.
    #[inline]
    pub fn push(&mut self, time_ns: u64, event: Event) {
        let e = self.entry(time_ns, event);
        if !self.wheel_on {
            // (With an event taken, this one takes its place: `pop_push`.)
            self.near.push_newest(e);
            let pending = self.near.len();
            self.peak_len = self.peak_len.max(pending);
            if pending > WHEEL_ABOVE {
                self.wheel_start();
            }
        } else if self.near.is_taken() && bucket(e) <= self.cur {
            // The taken event leaves as this one enters (`pop_push`).
            self.near.push_newest(e);
        } else {
            self.place(e, true);
            self.peak_len = self.peak_len.max(self.len());
        }
    }

    /// Put `e` in `near`, the wheel or the far heap by its bucket; `newest`: `e` was just
    /// made (`entry`), so `near` places it by time alone (`Near::push_newest`). Inlined
    /// into `push`: with a thousand flows most new events go to the wheel, and the call
    /// cost ~12 instructions per packet-hop.
    #[inline(always)]
    fn place(&mut self, e: u128, newest: bool) {
        let b = bucket(e);
        if b <= self.cur {
            if newest {
                self.near.push_newest(e);
            } else {
                self.near.push(e);
            }
        } else if b - self.cur < SLOTS as u64 {
            self.wheel.insert(b as usize % SLOTS, e);
        } else {
            self.far.push(Reverse(e));
            self.far_first = self.far_first.min(b);
        }
    }

    /// Keep the events by bucket from now on: the earliest one's bucket is the current one.
    #[cold]
    fn wheel_start(&mut self) {
        debug_assert!(!self.near.is_taken());
        let entries = self.near.take_all();
        self.cur = entries.iter().min().map_or(0, |&e| bucket(e));
        self.wheel_on = true;
        for e in entries {
            self.place(e, false);
        }
    }

    /// Keep all events in `near` again (few are left).
    #[cold]
    fn wheel_stop(&mut self) {
        debug_assert!(!self.near.is_taken());
        self.wheel_on = false;
        self.cur = u64::MAX;
        let near = &mut self.near;
        self.wheel.drain_all(|e| near.push(e));
        for Reverse(e) in self.far.drain() {
            self.near.push(e);
        }
        self.far_first = u64::MAX;
    }

    /// Take the earliest event off the queue (its handler runs next), lazily: the first
    /// `push` before `settle` takes its place if it is due in the current bucket (the same
    /// order as `pop` then `push`, in one pass: `pop_push`), and `settle` removes it if
    /// none did. Until `settle`, pushes may come (they sort after the taken event: not
    /// earlier, and later in sequence), but no `pop`, `peek` or `pop_push`.
    ///
    /// Panics if the queue is empty.
    #[inline]
    pub fn take(&mut self) {
        assert!(
            !self.near.is_taken() && self.first().is_some(),
            "take on an empty queue, or twice before settle"
        );
        self.near.take();
    }

    /// Remove the taken event if no push replaced it (see `take`).
    #[inline]
    pub fn settle(&mut self) {
        self.near.settle();
    }

    /// Remove and return the earliest event (the first pushed, among equal times).
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.first()?;
        let top = self.near.pop().expect("filled");
        Some((entry_time(top), entry_event(top)))
    }

    /// Remove the earliest event and schedule `event` at `time_ns`: the same order as `pop`
    /// then `push` (the new event takes the next sequence number). The engine's common
    /// step: a channel's arrival, which schedules that channel's next arrival.
    ///
    /// Panics if the queue is empty.
    #[inline]
    pub fn pop_push(&mut self, time_ns: u64, event: Event) {
        self.take();
        if self.wheel_on {
            self.push(time_ns, event);
            self.settle();
        } else {
            let e = self.entry(time_ns, event);
            self.near.push_newest(e);
        }
    }

    /// The earliest event, left in the queue.
    pub fn peek(&mut self) -> Option<(u64, Event)> {
        self.first().map(|e| (entry_time(e), entry_event(e)))
    }

    /// The earliest event, left in the queue, undecoded: the engine dispatches channel
    /// arrivals (most events) without building an `Event`.
    #[inline]
    pub fn peek_code(&mut self) -> Option<(u64, EventCode)> {
        self.first()
            .map(|e| (entry_time(e), EventCode(e as u64 & ((1 << EVENT_BITS) - 1))))
    }

    /// The time of the earliest event, ns, left in the queue.
    pub fn peek_time(&mut self) -> Option<u64> {
        self.first().map(entry_time)
    }

    /// The earliest event: `near`'s first, once `near` holds it.
    #[inline]
    fn first(&mut self) -> Option<u128> {
        debug_assert!(!self.near.is_taken(), "peek before settle");
        match self.near.first() {
            Some(e) => Some(e),
            None if self.wheel_on && self.next_bucket() => self.near.first(),
            None => None,
        }
    }

    /// `near` is empty: the next bucket with events (in the wheel or the far heap, whichever
    /// comes first) becomes the current one and its events move into `near`; or, with few
    /// events left, all of them do and the wheel is off.
    fn next_bucket(&mut self) -> bool {
        if self.len() < WHEEL_OFF_BELOW {
            self.wheel_stop();
            return !self.is_empty();
        }
        let from = self.cur + 1;
        let next = match self.wheel.distance_to_next(from as usize % SLOTS) {
            Some(d) => (from + d as u64).min(self.far_first),
            None => self.far_first,
        };
        debug_assert!(
            next != u64::MAX,
            "{} events pending, none found",
            self.len()
        );
        self.cur = next;
        // The slot holds bucket `next` only: the wheel's buckets are fewer than `SLOTS`
        // apart.
        let slot = next as usize % SLOTS;
        if self.wheel.occupied(slot) {
            let wheel = &mut self.wheel;
            self.near
                .fill(|entries| wheel.drain(slot, |e| entries.push(e)));
        }
        if self.far_first == next {
            self.far_to_near();
        }
        true
    }

    /// Move the far heap's events of the current bucket into `near`.
    #[cold]
    fn far_to_near(&mut self) {
        while let Some(&Reverse(e)) = self.far.peek() {
            if bucket(e) != self.cur {
                self.far_first = bucket(e);
                return;
            }
            self.near.push(e);
            self.far.pop();
        }
        self.far_first = u64::MAX;
    }

    /// Events pending.
    pub fn len(&self) -> usize {
        self.near.len() + self.wheel.len() + self.far.len()
    }

    /// No event pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most events the queue has held at once.
    pub fn peak_len(&self) -> usize {
        self.peak_len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_decodes_to_itself() {
        let id = MAX_EVENT_ID;
        let all = [
            Event::ChannelArrival(id),
            Event::ChannelWake(id),
            Event::ChannelWake(0),
            Event::FlowStart(id),
            Event::AppWrite(id),
            Event::FlowStop(id),
            Event::FlowTimer(id, TimerKind::Xmit),
            Event::FlowTimer(id, TimerKind::Pacing),
            Event::FlowTimer(id, TimerKind::Delack),
            Event::FlowTimer(id, TimerKind::CompSack),
            Event::Sample,
            Event::MeasureStart,
            Event::MeasureEnd,
        ];
        for ev in all {
            assert_eq!(decode(encode(ev)), ev);
            let code = EventCode(encode(ev));
            assert_eq!(
                code.channel_arrival(),
                matches!(ev, Event::ChannelArrival(_)).then_some(id)
            );
        }
    }

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

    /// Against a reference (an ordered set of (time, sequence)): phases that grow the queue
    /// to a few thousand events and shrink it to a handful, so that it switches to buckets
    /// and back many times; times from the same nanosecond to seconds ahead (the current
    /// bucket, the wheel, the far heap and past the wheel's wrap-around), with `take`,
    /// `settle` and `pop_push` as the engine uses them.
    #[test]
    fn matches_a_reference_across_buckets_wheel_and_far_heap() {
        use std::collections::BTreeSet;
        let mut rng = ccfair_cc::rng::Rng::new(11);
        let mut q = EventQueue::default();
        let mut reference: BTreeSet<(u64, u64, u32)> = BTreeSet::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        let mut switched_on = 0;
        let mut was_on = false;
        let ahead = |rng: &mut ccfair_cc::rng::Rng| -> u64 {
            let scale = match (rng.uniform() * 10.0) as u32 {
                // Ties and the same bucket.
                0..=2 => 3.0,
                // The next buckets.
                3..=5 => (3u64 << BUCKET_SHIFT) as f64,
                // Further on the wheel.
                6..=7 => ((SLOTS as u64 / 8) << BUCKET_SHIFT) as f64,
                // Past the wheel: the far heap.
                8 => ((2 * SLOTS as u64) << BUCKET_SHIFT) as f64,
                // Seconds.
                _ => 3e9,
            };
            (rng.uniform() * scale) as u64
        };
        for step in 0..300_000u64 {
            let grow = (step / 15_000) % 2 == 0;
            let u = rng.uniform();
            let id = (step % 100_000) as u32;
            if u < if grow { 0.5 } else { 0.05 } {
                let t = now + ahead(&mut rng);
                q.push(t, Event::ChannelArrival(id));
                reference.insert((t, seq, id));
                seq += 1;
            } else if u < 0.8 || reference.is_empty() {
                let want = reference.pop_first();
                let got = q.pop();
                assert_eq!(
                    got,
                    want.map(|(t, _, i)| (t, Event::ChannelArrival(i))),
                    "step {step}"
                );
                if let Some((t, _, _)) = want {
                    now = t;
                }
            } else {
                // pop_push, or take, 0 to 3 pushes not earlier than the taken event, settle.
                let (wt, _, wi) = reference.pop_first().unwrap();
                assert_eq!(
                    q.peek(),
                    Some((wt, Event::ChannelArrival(wi))),
                    "step {step}"
                );
                now = wt;
                if u < 0.9 {
                    let t = now + ahead(&mut rng);
                    q.pop_push(t, Event::ChannelArrival(id));
                    reference.insert((t, seq, id));
                    seq += 1;
                } else {
                    q.take();
                    for _ in 0..(step % 4) {
                        let t = now + ahead(&mut rng);
                        q.push(t, Event::ChannelArrival(id));
                        reference.insert((t, seq, id));
                        seq += 1;
                        assert_eq!(q.len(), reference.len(), "step {step}");
                    }
                    q.settle();
                }
            }
            assert_eq!(q.len(), reference.len(), "step {step}");
            if q.wheel_on && !was_on {
                switched_on += 1;
            }
            was_on = q.wheel_on;
        }
        assert!(
            switched_on >= 5,
            "the queue switched to buckets {switched_on} times"
        );
        assert!(q.peak_len() > 2_000, "peak {}", q.peak_len());
    }
}
