//! One direction of a link: a serialiser at the link rate, a drop-tail buffer and a fixed
//! propagation delay, with optional Bernoulli loss.
//!
//! Buffer definition (used everywhere in ccfair, and by the kernel backend's forwarder): a
//! channel holds at most `buffer_pkts` packets **counting the packet in service**. A packet
//! arriving when `buffer_pkts` packets are queued or being serialised is dropped. So a buffer
//! of 1 packet means "no queue, only the packet on the wire".
//!
//! Random loss happens on the wire: the packet uses its serialisation time, then is lost.
//!
//! With `queue = Netem` the buffer counts the packets in the delay line too, and random
//! loss strikes when a packet is offered, as netem does (`netem.rs`).
//!
//! With a queue discipline (`queue` = codel, fq_codel, pie, red) the channel is served
//! packet by packet instead (`link/serve.rs`): the discipline decides when the serialiser
//! asks for a packet, and the buffer is its packet limit, not counting the packet in
//! service (Linux's `qdisc_qlen`).
//!
//! A channel may be *fed ahead* (`feed_ahead`): the engine offers it each packet when the
//! packet enters the channel before it, with the later time it will reach this one's input
//! (`enqueue_ahead`), which saves an event per packet where that is exact (`world.rs`,
//! "Handing packets on ahead of time"). Such a channel answers every question about its
//! state (occupancy, counters) as of the engine's clock, leaving out what it was told ahead.

mod serve;

use ccfair_cc::rng::Rng;

pub use serve::Service;

use crate::fifo::Fifo;
use crate::packet::{Packet, PacketRef};
use crate::spec::Queue;

/// What one channel (a link direction) did, since the start of the run. Samples and the
/// link summaries take differences of these.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChannelCounters {
    /// Packets offered to the channel.
    pub arrivals: u64,
    /// Dropped because the buffer (or a queue discipline's limit) was full.
    pub drops_queue: u64,
    /// Lost on the wire by the link's random loss (`loss_ab`, `loss_ba`).
    pub drops_random: u64,
    /// Dropped by a queue discipline's decision, and marked CE by it instead of a drop or
    /// for its ce_threshold (0 without one).
    pub drops_aqm: u64,
    /// Packets a queue discipline marked CE instead of dropping (0 without one).
    pub marks_aqm: u64,
    /// Packets marked CE for the discipline's `ce_threshold` (fq_codel, CoDel; 0 otherwise).
    pub marks_ce_threshold: u64,
    /// fq_codel: flows that became active, and over-limit drops while over its memory
    /// limit (0 for other queues).
    pub fq_new_flows: u64,
    /// fq_codel: over-limit drops made while the queue was over its memory limit
    /// (`drop_overmemory`; 0 for other queues).
    pub fq_drops_overmemory: u64,
    /// Packets that finished serialisation.
    pub tx_pkts: u64,
    /// Bytes (on the wire) that finished serialisation.
    pub tx_bytes: u64,
    /// Sum over departures of the time the packet spent queued + in service (ns).
    pub sojourn_ns_sum: u64,
}

/// What a channel needs to know about what it carries: the size on the wire. The simulator
/// moves references to its packets ([`PacketRef`]); the kernel backend's forwarder (crates/ccfair-emu) moves
/// handles to real IP packets, so both share one link model.
pub trait OnWire: Copy {
    /// Bytes on the wire (IP packet size).
    fn wire_bytes(&self) -> u32;

    /// A queue discipline marked the packet CE (`qdisc::Queued::set_ce`). The simulator's
    /// references leave it to the engine, which marks the packet in its slab when the
    /// discipline reports the mark; a packet that carries its own header copies it here.
    #[inline]
    fn mark_ce(&mut self) {}
}

impl OnWire for Packet {
    fn wire_bytes(&self) -> u32 {
        self.wire_bytes
    }

    fn mark_ce(&mut self) {
        self.ecn = crate::packet::Ecn::Ce;
    }
}

impl OnWire for PacketRef {
    fn wire_bytes(&self) -> u32 {
        self.wire_bytes
    }
}

/// A packet accepted by the buffer and not yet fully serialised, with the channel's
/// running totals over the packets accepted up to and including it: when it departs they
/// are the departed totals, so `advance` retires a packet without adding to counters.
#[derive(Clone, Copy, Debug, Default)]
struct Backlogged {
    departure_ns: u64,
    bytes_through: u64,
    sojourn_ns_through: u64,
    /// When it reaches the channel's input, and when that arrival was announced (both
    /// `now` for a packet offered when it arrives).
    input: Ahead,
}

/// When a packet offered ahead of time reaches a fed-ahead channel, and when the engine
/// would have scheduled that arrival had it not been offered ahead: the time the channel
/// before scheduled the packet's arrival at its far end, which orders the arrival among
/// simultaneous events (`Channel::advance_for`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Ahead {
    /// When the packet reaches the channel's input (ns).
    pub input_ns: u64,
    /// When the engine would have scheduled that arrival (ns): it orders the arrival among
    /// events at the same time.
    pub announced_ns: u64,
}

/// What a fed-ahead channel has been told ahead of the moment its counters describe:
/// packets accepted (and their bytes), queue drops and random losses still to come.
#[derive(Clone, Copy, Debug, Default)]
struct ToldAhead {
    packets: u64,
    bytes: u64,
    drops_queue: u64,
    drops_random: u64,
}

/// What became of a packet offered to a channel.
#[derive(Debug)]
pub enum Enqueued<P = Packet> {
    /// Accepted; it reaches the far end at its time. `Some(t)`: the pipe was empty, so the
    /// engine must schedule an arrival at `t`.
    Accepted(Option<u64>),
    /// Dropped by the full drop-tail buffer.
    BufferFull(P),
    /// Accepted and serialised, then lost on the wire (random loss).
    LostOnWire(P),
    /// Not taken: the channel runs a queue discipline, which takes its packets through
    /// `qdisc_offer` (tested where the netem queue is, so the drop-tail path pays nothing).
    Qdisc(P),
}

/// One direction of a link.
///
/// ```
/// use ccfair_sim::link::{Channel, Enqueued, OnWire};
///
/// // What the channel carries only needs a size on the wire.
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Pkt(u32);
/// impl OnWire for Pkt {
///     fn wire_bytes(&self) -> u32 {
///         self.0
///     }
/// }
///
/// // 12 Mbit/s (a 1500-byte packet takes 1 ms), 10 ms of propagation, a buffer of two
/// // packets counting the one in service, no random loss.
/// let mut ch: Channel<Pkt> = Channel::new(12_000_000, 10_000_000, 2, 0.0, 1);
/// assert_eq!(ch.serialisation_ns(1500), 1_000_000);
///
/// // Three packets at t = 0: the first is serialised at once, the second waits, the
/// // third finds the buffer full.
/// let first = ch.enqueue(0, Pkt(1500));
/// // The pipe was empty: the engine schedules the first arrival, 1 ms + 10 ms later.
/// assert!(matches!(first, Enqueued::Accepted(Some(11_000_000))));
/// assert!(matches!(ch.enqueue(0, Pkt(1500)), Enqueued::Accepted(None)));
/// assert!(matches!(ch.enqueue(0, Pkt(1500)), Enqueued::BufferFull(Pkt(1500))));
///
/// // At the first arrival the channel hands the packet over and says when the next
/// // one arrives: one serialisation time later.
/// let (pkt, next) = ch.arrival();
/// assert_eq!((pkt, next), (Pkt(1500), Some(12_000_000)));
/// ch.advance(12_000_000);
/// let c = ch.counters();
/// assert_eq!((c.arrivals, c.tx_pkts, c.drops_queue), (3, 2, 1));
/// ```
///
/// Service is FIFO at a constant rate, so a packet's departure time is known when it is
/// accepted: max(now, previous departure) + serialisation time. The channel therefore needs
/// no event per departure; it keeps the departure times of accepted packets and counts as
/// "in the buffer" those whose departure lies in the future (`advance` retires the others).
///
/// The fields are laid out by when they are read (`repr(C)`, aligned to a cache line): a
/// packet offered to a channel reads the first three lines, its arrival the second, the
/// rest only samples and channels fed ahead. With a thousand flows most channels are cold
/// when a packet comes, and in the compiler's order an enqueue touched five or six lines.
#[repr(C, align(64))]
pub struct Channel<P: OnWire = Packet> {
    // Line 0: the departures.
    last_departure_ns: u64,
    /// Totals over the packets the buffer accepted: bytes, and time queued + in service.
    accepted_bytes: u64,
    accepted_sojourn_ns: u64,
    /// The same totals over those that departed by the last `advance`.
    departed_bytes: u64,
    departed_sojourn_ns: u64,
    /// The last packet size serialised and its time: a channel carries mostly one size
    /// (full segments, or bare ACKs), so this skips the division for most packets.
    last_size: (u32, u64),
    /// Probability that a packet is lost on the wire after its serialisation (Bernoulli).
    pub loss_prob: f64,

    // Line 1: the buffer and the pipe.
    backlog: Fifo<Backlogged>,
    /// Accepted packets not lost, with their arrival time at the far end (FIFO: constant
    /// delay after in-order departures).
    pipe: Fifo<(u64, P)>,

    // Line 2.
    /// Propagation delay, ns.
    pub delay_ns: u64,
    /// When the last packet accepted and not lost reaches the far end, whether it went into
    /// the pipe or was handed on ahead of time.
    last_arrival_ns: u64,
    /// Packets offered, and accepted (`counters()` subtracts those still in the buffer).
    arrivals: u64,
    accepted_pkts: u64,
    /// Buffer size, packets, counting the packet in service (see the module documentation;
    /// `netem.rs` and `link/serve.rs` for what it counts with netem and a queue discipline).
    pub buffer_pkts: u32,
    /// What `buffer_pkts` counts (`netem.rs`).
    pub queue: Queue,
    /// Fed ahead of time (`feed_ahead`); its bookkeeping is at the end.
    fed_ahead: bool,
    drops_queue: u64,
    drops_random: u64,
    /// Fixed at creation (the serialisation time of the last packet size is cached).
    pub rate_bps: u64,

    // Then what samples and channels fed ahead read.
    rng: Rng,
    /// What it had been told ahead of the last `advance`.
    told_ahead: ToldAhead,
    /// Packets accepted in all whose departure is at or before the latest input time.
    departed_by_input: u64,
    /// Drops decided ahead of their time, oldest first, and whether by random loss.
    drops_ahead: Fifo<(Ahead, bool)>,
    /// The queue discipline and its serialiser, when `queue` names one (`link/serve.rs`).
    serve: Option<Box<serve::Serve<P>>>,
}

impl<P: OnWire> Channel<P> {
    /// A drop-tail channel at `rate_bps` (bit/s), with `delay_ns` of propagation, a buffer of
    /// `buffer_pkts` packets counting the one in service, and random loss `loss_prob` drawn
    /// from a stream seeded with `seed`. Nothing is allocated until packets come.
    pub fn new(rate_bps: u64, delay_ns: u64, buffer_pkts: u32, loss_prob: f64, seed: u64) -> Self {
        let mut channel = Channel {
            rate_bps,
            delay_ns,
            buffer_pkts,
            loss_prob,
            queue: Queue::Droptail,
            rng: Rng::new(seed),
            // Grows with the queue: memory follows what is in flight, not the configured
            // buffer (reserving it cost up to 4096 entries of 24 bytes, ~100 KB, per channel
            // direction, mostly never used).
            backlog: Fifo::new(),
            accepted_bytes: 0,
            accepted_sojourn_ns: 0,
            departed_bytes: 0,
            departed_sojourn_ns: 0,
            last_departure_ns: 0,
            last_arrival_ns: 0,
            pipe: Fifo::new(),
            arrivals: 0,
            accepted_pkts: 0,
            drops_queue: 0,
            drops_random: 0,
            last_size: (0, 0),
            fed_ahead: false,
            told_ahead: ToldAhead::default(),
            departed_by_input: 0,
            drops_ahead: Fifo::new(),
            serve: None,
        };
        channel.last_size = (0, channel.serialisation_ns(0));
        channel
    }

    /// Serialisation time of `bytes` at the link rate, rounded to the nearest ns and at
    /// least 1 ns: the engine's clock ticks in ns, and a packet that took no time on a link
    /// would let a zero-delay path loop without the clock advancing (a livelock). The floor
    /// only matters above ~1.6 Tbit/s (a 52-byte ACK in under 0.5 ns).
    ///
    /// Not inlined: the channel caches the last size's time, and inlined the compiler
    /// computed the products for a cache miss on every packet.
    #[inline(never)]
    pub fn serialisation_ns(&self, bytes: u32) -> u64 {
        let rate = self.rate_bps.max(1);
        // In 64 bits whenever the rounded numerator fits (bytes * 8e9 + rate / 2 < 2^64: any
        // packet below ~2.3 GB at any rate), else in 128 bits: the same value either way,
        // without a 128-bit division (a library call) per packet.
        match (bytes as u64).checked_mul(8_000_000_000) {
            Some(bits) if bits <= u64::MAX - rate / 2 => ((bits + rate / 2) / rate).max(1),
            _ => serialisation_ns_wide(bytes, rate),
        }
    }

    /// Reserve room for `packets` more queued packets up front, so that enqueueing up to
    /// that many allocates nothing (the kernel backend's real-time forwarder).
    pub fn reserve(&mut self, packets: usize) {
        self.backlog.reserve(packets);
        if let Some(s) = self.serve.as_mut() {
            s.reserve(packets);
        }
    }

    /// Let the engine offer packets ahead of time (`enqueue_ahead`). A drop-tail channel
    /// only: netem's limit counts its delay line, which is not kept per input time.
    pub fn feed_ahead(&mut self) {
        assert!(
            self.queue == Queue::Droptail && self.serve.is_none(),
            "only a drop-tail channel is fed ahead"
        );
        self.fed_ahead = true;
    }

    /// Bytes of the buffer's and the pipe's slots (each as many as it ever held at once,
    /// rounded up to a power of two), and of a queue discipline's.
    pub fn reserved_bytes(&self) -> u64 {
        (self.backlog.capacity() * std::mem::size_of::<Backlogged>()
            + self.pipe.capacity() * std::mem::size_of::<(u64, P)>()) as u64
            + self.serve.as_deref().map_or(0, Self::qdisc_reserved_bytes)
    }

    /// Whether the engine offers it packets ahead of time ([`Channel::feed_ahead`]).
    pub fn is_fed_ahead(&self) -> bool {
        self.fed_ahead
    }

    /// Retire packets whose serialisation finished by `now` (counters, occupancy), for a
    /// question asked at `now` by an event scheduled before anything else (at the start).
    pub fn advance(&mut self, now: u64) {
        self.advance_for(now, 0);
    }

    /// Retire packets whose serialisation finished by `now`, for a question asked at `now`
    /// by an event scheduled at `scheduled_ns` (`u64::MAX`: after every event at `now`).
    ///
    /// The engine runs simultaneous events in the order they were scheduled. So a packet
    /// told ahead of time that reaches a fed-ahead channel at `now` itself has arrived for
    /// the question if its arrival was announced before `scheduled_ns` (the engine would
    /// have run that arrival first); what reaches it later has not.
    pub fn advance_for(&mut self, now: u64, scheduled_ns: u64) {
        if self.queue.is_qdisc() {
            self.qdisc_view(now);
            return;
        }
        self.retire(now);
        if self.fed_ahead {
            self.told_ahead = self.told_ahead(now, scheduled_ns);
        }
    }

    #[inline(always)]
    fn retire(&mut self, now: u64) {
        if self.last_departure_ns <= now {
            // Everything accepted has left (the common case on a link that does not
            // queue): the departed totals are the accepted ones.
            self.departed_bytes = self.accepted_bytes;
            self.departed_sojourn_ns = self.accepted_sojourn_ns;
            self.backlog.clear();
            return;
        }
        while let Some(&b) = self.backlog.front() {
            if b.departure_ns > now {
                break;
            }
            self.departed_bytes = b.bytes_through;
            self.departed_sojourn_ns = b.sojourn_ns_through;
            self.backlog.pop_front();
        }
    }

    /// What a fed-ahead channel has been told ahead of a question at `now` asked by an
    /// event scheduled at `scheduled_ns` (see `advance_for`).
    fn told_ahead(&self, now: u64, scheduled_ns: u64) -> ToldAhead {
        let later =
            |a: Ahead| a.input_ns > now || (a.input_ns == now && a.announced_ns >= scheduled_ns);
        // The packets told ahead are the newest in the backlog (input times only grow):
        // find the first with an input time of at least `now`, then step over those at
        // `now` that arrive first.
        let len = self.backlog.len();
        let at = |k: usize| self.backlog.get(k).copied().unwrap_or_default();
        let (mut lo, mut hi) = (0, len);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if at(mid).input.input_ns >= now {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        while lo < len && !later(at(lo).input) {
            lo += 1;
        }
        let bytes_before = match lo {
            0 => self.departed_bytes,
            k => at(k - 1).bytes_through,
        };
        let mut told = ToldAhead {
            packets: (len - lo) as u64,
            bytes: self.accepted_bytes - bytes_before,
            ..ToldAhead::default()
        };
        for &(ahead, random) in self.drops_ahead.iter() {
            if later(ahead) {
                if random {
                    told.drops_random += 1;
                } else {
                    told.drops_queue += 1;
                }
            }
        }
        told
    }

    /// Packets in the buffer at the last `advance` (a queue discipline: when last served),
    /// counting the one in service.
    pub fn occupancy_pkts(&self) -> usize {
        if let Some(s) = self.qdisc_state() {
            return Self::qdisc_occupancy(s).0;
        }
        self.backlog.len() - self.told_ahead.packets as usize
    }

    /// Bytes (on the wire) in the buffer at the last `advance`, counting the packet in service.
    pub fn occupancy_bytes(&self) -> u64 {
        if let Some(s) = self.qdisc_state() {
            return Self::qdisc_occupancy(s).1;
        }
        self.accepted_bytes - self.departed_bytes - self.told_ahead.bytes
    }

    /// Counters as of the last `advance` (a queue discipline: when last served).
    #[inline]
    pub fn counters(&self) -> ChannelCounters {
        if let Some(s) = self.qdisc_state() {
            return self.qdisc_counters(s);
        }
        let told = &self.told_ahead;
        ChannelCounters {
            tx_pkts: self.accepted_pkts - self.backlog.len() as u64,
            tx_bytes: self.departed_bytes,
            sojourn_ns_sum: self.departed_sojourn_ns,
            // A packet lost on the wire ahead of time is both in the backlog and a drop.
            arrivals: self.arrivals - told.packets - told.drops_queue,
            drops_queue: self.drops_queue - told.drops_queue,
            drops_random: self.drops_random - told.drops_random,
            ..ChannelCounters::default()
        }
    }

    /// Offer a packet at time `now`. Inlined into the engine's call sites (`forward`): the
    /// call's register saves and the outcome passed through memory cost about 15% of it.
    #[inline(always)]
    pub fn enqueue(&mut self, now: u64, pkt: P) -> Enqueued<P> {
        match self.enqueue_through(now, pkt) {
            Ok(a) => Enqueued::Accepted(self.into_pipe(a.input_ns, pkt)),
            Err(refused) => refused,
        }
    }

    /// `enqueue`, without putting the packet in the pipe: the engine hands it on to the
    /// next channel, fed ahead of time.
    #[inline(always)]
    pub fn enqueue_through(&mut self, now: u64, pkt: P) -> Result<Ahead, Enqueued<P>> {
        self.retire(now);
        self.arrivals += 1;
        let held = if self.queue == Queue::Droptail {
            self.backlog.len()
        } else {
            if self.queue != Queue::Netem {
                return Err(Enqueued::Qdisc(pkt));
            }
            // netem_enqueue: random loss first, then the limit.
            if self.loss_prob > 0.0 && self.rng.uniform() < self.loss_prob {
                self.drops_random += 1;
                return Err(Enqueued::LostOnWire(pkt));
            }
            crate::netem::held(&self.pipe, now)
        };
        let here = Ahead {
            input_ns: now,
            announced_ns: now,
        };
        self.admit(here, held, pkt)
    }

    /// Offer a packet to this fed-ahead channel at the engine's time `now`, `ahead` of its
    /// arrival at the input. What happens to it is what would happen at its input time: it
    /// is refused if the buffer then holds `buffer_pkts` packets (those accepted before it
    /// that depart after that time), else it departs at max(input, previous departure) +
    /// serialisation. The caller puts it in the pipe (`into_pipe`) or hands it on.
    #[inline(always)]
    pub fn enqueue_ahead(&mut self, now: u64, ahead: Ahead, pkt: P) -> Result<Ahead, Enqueued<P>> {
        debug_assert!(self.fed_ahead && ahead.input_ns >= now);
        self.retire(now);
        while self
            .drops_ahead
            .front()
            .is_some_and(|&(a, _)| a.input_ns < now)
        {
            self.drops_ahead.pop_front();
        }
        // Skip the accepted packets that have left by the input time (input times only
        // grow, so the count only grows: each packet is passed over once).
        let departed_by_now = self.accepted_pkts - self.backlog.len() as u64;
        let mut k = (self.departed_by_input.max(departed_by_now) - departed_by_now) as usize;
        while self
            .backlog
            .get(k)
            .is_some_and(|b| b.departure_ns <= ahead.input_ns)
        {
            k += 1;
        }
        self.departed_by_input = departed_by_now + k as u64;
        self.arrivals += 1;
        let outcome = self.admit(ahead, self.backlog.len() - k, pkt);
        match outcome {
            Err(Enqueued::BufferFull(_)) => self.drops_ahead.push_back((ahead, false)),
            Err(Enqueued::LostOnWire(_)) => self.drops_ahead.push_back((ahead, true)),
            _ => {}
        }
        outcome
    }

    /// Accept a packet arriving at its input time when the buffer holds `held` packets, or
    /// refuse it; lose it on the wire at random. Returns its arrival at the far end, and
    /// when the engine would have scheduled that: when the packet entered, if the pipe
    /// was then empty, else when the packet before it reached the far end (whose event
    /// schedules the next arrival).
    #[inline(always)]
    fn admit(&mut self, input: Ahead, held: usize, pkt: P) -> Result<Ahead, Enqueued<P>> {
        if held >= self.buffer_pkts as usize {
            self.drops_queue += 1;
            return Err(Enqueued::BufferFull(pkt));
        }
        let bytes = pkt.wire_bytes();
        if self.last_size.0 != bytes {
            self.last_size = (bytes, self.serialisation_ns(bytes));
        }
        let departure = input.input_ns.max(self.last_departure_ns) + self.last_size.1;
        self.last_departure_ns = departure;
        // `accepted_pkts` counts accepted packets; `counters()` subtracts those
        // still in the buffer.
        self.accepted_pkts += 1;
        self.accepted_bytes += bytes as u64;
        self.accepted_sojourn_ns += departure - input.input_ns;
        self.backlog.push_back(Backlogged {
            departure_ns: departure,
            bytes_through: self.accepted_bytes,
            sojourn_ns_through: self.accepted_sojourn_ns,
            input,
        });
        // (A fed-ahead channel also keeps packets that have left by their successors' input.)
        debug_assert!(self.fed_ahead || self.backlog.len() <= self.buffer_pkts as usize);
        // Random loss happens on the wire: the packet still takes its serialisation time.
        if self.queue == Queue::Droptail
            && self.loss_prob > 0.0
            && self.rng.uniform() < self.loss_prob
        {
            self.drops_random += 1;
            return Err(Enqueued::LostOnWire(pkt));
        }
        let arrival_ns = departure + self.delay_ns;
        let announced_ns = input.input_ns.max(self.last_arrival_ns);
        self.last_arrival_ns = arrival_ns;
        Ok(Ahead {
            input_ns: arrival_ns,
            announced_ns,
        })
    }

    /// Put an accepted packet in the pipe, to reach the far end at `at`. Returns `Some(at)`
    /// if the pipe was empty: the engine must schedule that arrival.
    #[inline(always)]
    pub fn into_pipe(&mut self, at: u64, pkt: P) -> Option<u64> {
        let was_empty = self.pipe.is_empty();
        self.pipe.push_back((at, pkt));
        was_empty.then_some(at)
    }

    /// The head of the pipe reached the far end. Returns it and the time of the next arrival.
    pub fn arrival(&mut self) -> (P, Option<u64>) {
        let (_, pkt) = self.pipe.pop_front().expect("arrival on an empty pipe");
        (pkt, self.pipe.front().map(|&(t, _)| t))
    }

    /// The packet arriving next (after the one `arrival` just delivered), if any.
    #[inline]
    pub fn next_arriving(&self) -> Option<&P> {
        self.pipe.front().map(|(_, p)| p)
    }

    /// Hint the CPU to fetch the lines an enqueue reads (the first three, `Channel`).
    #[inline(always)]
    pub fn prefetch_enqueue(&self) {
        let p = self as *const Self as *const u8;
        for line in 0..3 {
            crate::prefetch::line(p.wrapping_add(64 * line));
        }
    }

    /// Every packet accepted and not yet delivered (queued, in service or propagating;
    /// with a queue discipline also those offered ahead of their arrival).
    pub fn for_each_held(&self, mut f: impl FnMut(&P)) {
        for (_, p) in self.pipe.iter() {
            f(p);
        }
        if let Some(s) = self.serve.as_deref() {
            Self::qdisc_for_each(s, &mut f);
        }
    }
}

/// [`Channel::serialisation_ns`] in 128-bit arithmetic: nanoseconds to serialise `bytes` at
/// `rate_bps`, rounded to nearest, at least 1.
fn serialisation_ns_wide(bytes: u32, rate_bps: u64) -> u64 {
    let bits = bytes as u128 * 8 * 1_000_000_000;
    let rate = rate_bps.max(1) as u128;
    (((bits + rate / 2) / rate) as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Ecn, Kind, TcpFlags, NO_SACK};

    fn pkt(bytes: u32) -> Packet {
        Packet {
            flow: 0,
            kind: Kind::Data,
            wire_bytes: bytes,
            seq: 0,
            payload_bytes: 0,
            tsval: 0,
            tsecr: 0,
            n_sack: 0,
            ecn: Ecn::NotEct,
            tcp_flags: TcpFlags::NONE,
            window_bytes: 0,
            sack: NO_SACK,
        }
    }

    fn arrival_of(e: Enqueued<Packet>) -> Option<u64> {
        match e {
            Enqueued::Accepted(t) => t,
            other => panic!("not accepted: {other:?}"),
        }
    }

    #[test]
    fn serialisation_of_1500_bytes_at_50_mbps_is_240_us() {
        let ch: Channel = Channel::new(50_000_000, 0, 10, 0.0, 1);
        assert_eq!(ch.serialisation_ns(1500), 240_000);
    }

    /// The 64-bit path gives the 128-bit value for every size and rate, at the edges of
    /// both ranges and at random.
    #[test]
    fn serialisation_matches_the_wide_computation() {
        let mut rng = Rng::new(7);
        let mut rates = vec![1, 2, 3, 999, 1_000_000, 50_000_000, 1_000_000_000];
        rates.extend([10_000_000_000, u64::MAX / 2, u64::MAX - 1, u64::MAX]);
        let mut sizes = vec![0, 1, 52, 1500, 65_535, 2_305_843, u32::MAX / 2, u32::MAX];
        for _ in 0..300 {
            rates.push((rng.uniform() * 2f64.powi(rng.below(64) as i32)) as u64);
            sizes.push((rng.uniform() * 2f64.powi(rng.below(33) as i32)) as u32);
        }
        for &rate in &rates {
            let ch: Channel = Channel::new(rate, 0, 10, 0.0, 1);
            for &bytes in &sizes {
                assert_eq!(
                    ch.serialisation_ns(bytes),
                    serialisation_ns_wide(bytes, rate),
                    "{bytes} B at {rate} bit/s"
                );
            }
        }
    }

    #[test]
    fn buffer_counts_packet_in_service() {
        let mut ch: Channel = Channel::new(1_000_000, 0, 2, 0.0, 1);
        assert!(matches!(ch.enqueue(0, pkt(1500)), Enqueued::Accepted(_))); // in service
        assert!(matches!(ch.enqueue(0, pkt(1500)), Enqueued::Accepted(_))); // waiting
        assert!(matches!(ch.enqueue(0, pkt(1500)), Enqueued::BufferFull(_))); // full
        assert_eq!(ch.counters().drops_queue, 1);
        assert_eq!(ch.occupancy_pkts(), 2);
        // 1500 B at 1 Mbit/s = 12 ms: after the first departure there is room again.
        assert!(matches!(
            ch.enqueue(12_000_000, pkt(1500)),
            Enqueued::Accepted(_)
        ));
        assert_eq!(ch.occupancy_pkts(), 2);
        assert_eq!(ch.counters().tx_pkts, 1);
    }

    #[test]
    fn fifo_with_delay() {
        let mut ch: Channel = Channel::new(12_000_000, 5_000, 10, 0.0, 1); // 1 ms per 1500 B
        assert_eq!(arrival_of(ch.enqueue(0, pkt(1500))), Some(1_005_000));
        assert_eq!(arrival_of(ch.enqueue(0, pkt(1500))), None); // pipe already scheduled
        let (_, next) = ch.arrival();
        assert_eq!(next, Some(2_005_000));
        // An idle channel serves at once.
        ch.arrival();
        assert_eq!(
            arrival_of(ch.enqueue(10_000_000, pkt(1500))),
            Some(11_005_000)
        );
        ch.advance(11_000_000);
        assert_eq!(ch.counters().tx_pkts, 3);
        assert_eq!(
            ch.counters().sojourn_ns_sum,
            1_000_000 + 2_000_000 + 1_000_000
        );
    }

    #[test]
    fn random_loss_rate_matches_probability() {
        let mut ch: Channel = Channel::new(1_000_000_000, 0, 100_000, 0.1, 42);
        let mut t = 0;
        for _ in 0..20_000 {
            ch.enqueue(t, pkt(100));
            t += 1_000;
        }
        let lost = ch.counters().drops_random as f64 / 20_000.0;
        assert!((lost - 0.1).abs() < 0.01, "{lost}");
    }

    /// A fed-ahead channel, told of packets before they arrive, answers every question as
    /// a channel offered only the packets that have arrived by then: those with earlier
    /// input times, and those arriving at the question's instant whose arrival was
    /// announced before the question was scheduled. Random sizes, small buffers (drops),
    /// random loss, and questions at the very input times of packets, asked by events
    /// scheduled before and after those arrivals were announced.
    #[test]
    fn a_fed_ahead_channel_answers_as_if_fed_on_time() {
        let mut rng = Rng::new(11);
        let (rate, delay, buffer, loss) = (10_000_000, 2_000, 2, 0.05);
        // Packets: (input time, announced time, size); input times grow (they come from
        // one channel, which serialises them), mostly by whole serialisation times, so
        // that they meet the questions' instants.
        let mut packets = Vec::new();
        let mut t = 1_000_000u64;
        for _ in 0..400 {
            let steps = [
                1_200_000,
                1_200_000,
                600_000,
                1 + rng.below(3_000_000) as u64,
            ];
            t += steps[rng.below(4) as usize];
            let announced = t - rng.below(3) as u64 * 400_000;
            packets.push((t, announced, [1500, 52, 1500][rng.below(3) as usize]));
        }
        let mut fed: Channel = Channel::new(rate, delay, buffer, loss, 3);
        fed.feed_ahead();
        let mut told = 0;
        let mut now = 0;
        for step in 0..300 {
            // The engine's clock moves on; the channel is told of packets up to 5 ms ahead.
            now += rng.below(1_500_000) as u64;
            while told < packets.len() && packets[told].0 <= now + 5_000_000 {
                let (input_ns, announced_ns, bytes) = packets[told];
                let ahead = Ahead {
                    input_ns: input_ns.max(now),
                    announced_ns,
                };
                let _ = fed.enqueue_ahead(now, ahead, pkt(bytes));
                packets[told].0 = ahead.input_ns;
                told += 1;
            }
            // A question at `now`, or at the input time of a packet told ahead, asked by
            // an event scheduled before, at, or after that packet's announcement.
            let at = match told.checked_sub(1 + rng.below(3) as usize) {
                Some(k) if step % 2 == 0 && packets[k].0 >= now => packets[k].0,
                _ => now,
            };
            let scheduled = at - [0, 400_000, 800_000, at][rng.below(4) as usize].min(at);
            if at > now {
                // Questions come at the engine's clock; move it there.
                now = at;
            }
            fed.advance_for(now, scheduled);
            let mut on_time: Channel = Channel::new(rate, delay, buffer, loss, 3);
            for &(input_ns, announced_ns, bytes) in &packets[..told] {
                let arrived = input_ns < now || (input_ns == now && announced_ns < scheduled);
                if arrived {
                    let _ = on_time.enqueue(input_ns, pkt(bytes));
                }
            }
            on_time.advance(now);
            let (a, b) = (fed.counters(), on_time.counters());
            let what = format!("step {step} at {now} scheduled {scheduled}");
            assert_eq!(
                (
                    a.arrivals,
                    a.drops_queue,
                    a.drops_random,
                    a.tx_pkts,
                    a.tx_bytes
                ),
                (
                    b.arrivals,
                    b.drops_queue,
                    b.drops_random,
                    b.tx_pkts,
                    b.tx_bytes
                ),
                "{what}"
            );
            assert_eq!(a.sojourn_ns_sum, b.sojourn_ns_sum, "{what}");
            assert_eq!(fed.occupancy_pkts(), on_time.occupancy_pkts(), "{what}");
            assert_eq!(fed.occupancy_bytes(), on_time.occupancy_bytes(), "{what}");
        }
    }
}

#[cfg(test)]
mod layout {
    use super::*;
    use std::mem::offset_of;

    /// The lines an enqueue reads stay where the layout comment says (a field added in the
    /// wrong place would spill them into a fourth line).
    #[test]
    fn hot_fields_fill_the_first_three_cache_lines() {
        type C = Channel<PacketRef>;
        assert_eq!(std::mem::align_of::<C>(), 64);
        assert!(offset_of!(C, loss_prob) + 8 <= 64);
        assert_eq!(offset_of!(C, backlog), 64);
        assert!(offset_of!(C, pipe) + std::mem::size_of::<Fifo<(u64, PacketRef)>>() <= 128);
        assert_eq!(offset_of!(C, delay_ns), 128);
        assert!(offset_of!(C, rate_bps) + 8 <= 192);
    }
}
