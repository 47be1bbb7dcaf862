//! Recording, apart from the event loop and shared by both backends: the typed rows of the
//! results tables (a flow's sample, a link's sample, a flow's summary, a link direction's
//! summary), the recorders that store them column by column, and the assembly of a run's
//! tables. The simulator fills the rows from its own state (`world.rs`), the kernel
//! backend from TCP_INFO and its forwarder (`ccfair-emu`); the column list of each table is
//! generated from its row type, so the schema ([`crate::schema`]) is written once.
//!
//! Memory: time series grow in chunks of [`CHUNK_ROWS`] rows, so a long run at a fine
//! sampling interval costs what it records and no more than one chunk per column beyond
//! it. A recorder that knows its row count (the simulator: samples x flows or link
//! directions) reserves at the start the room that growth would reach
//! ([`chunked_capacity`]): the same memory, without the reallocations and copies.

use crate::link::{Channel, ChannelCounters, OnWire};
use crate::schema::{self, By, Column, Dtype};
use crate::spec::{Queue, RunSpec};
use crate::table::{ColumnData, Table};

/// Rows a time-series column grows by when it is full.
pub const CHUNK_ROWS: usize = 1 << 14;

/// A label column's value: a fixed name (CA state, direction).
pub type Label = &'static str;

/// How a field type is stored.
pub trait Cell: Copy {
    /// The column type in the results schema.
    const DTYPE: Dtype;
    /// A column of these values.
    fn column(v: Vec<Self>) -> ColumnData;
}

impl Cell for u64 {
    const DTYPE: Dtype = Dtype::I64;
    fn column(v: Vec<Self>) -> ColumnData {
        ColumnData::U64(v)
    }
}

impl Cell for f64 {
    const DTYPE: Dtype = Dtype::F64;
    fn column(v: Vec<Self>) -> ColumnData {
        ColumnData::F64(v)
    }
}

impl Cell for Label {
    const DTYPE: Dtype = Dtype::Str;
    fn column(v: Vec<Self>) -> ColumnData {
        ColumnData::Str(v)
    }
}

/// Grow a column when it is full: doubling while it is small (a short run stays small),
/// then by [`CHUNK_ROWS`] at a time (a long run never holds more than one chunk unused).
pub(crate) fn push_chunked<T>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        v.reserve_exact(v.len().clamp(64, CHUNK_ROWS));
    }
    v.push(x);
}

/// The capacity `push_chunked` gives a column of `rows` rows: 64, doubling up to a
/// chunk, then whole chunks.
pub fn chunked_capacity(rows: usize) -> usize {
    if rows == 0 {
        0
    } else if rows <= CHUNK_ROWS {
        rows.next_power_of_two().max(64)
    } else {
        rows.div_ceil(CHUNK_ROWS).saturating_mul(CHUNK_ROWS)
    }
}

/// A typed row, its column-wise store (`<Row>s`), and its column list: one declaration
/// per table, so the names, types and docs cannot drift apart.
macro_rules! rows {
    ($(#[$meta:meta])* $row:ident, $store:ident { $($field:ident: $ty:ty = $doc:literal,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $row {
            $(#[doc = $doc] pub $field: $ty,)*
        }

        /// Column-wise storage of
        #[doc = concat!("[`", stringify!($row), "`] rows.")]
        #[derive(Default)]
        pub struct $store {
            $(#[doc = concat!("Per row: ", $doc)] pub $field: Vec<$ty>,)*
        }

        impl $store {
            /// Room for `rows` rows in every column: the capacity growth would reach
            /// ([`chunked_capacity`]), so pushing them never reallocates.
            pub fn with_capacity(rows: usize) -> Self {
                let capacity = chunked_capacity(rows);
                $store {
                    $($field: Vec::with_capacity(capacity),)*
                }
            }

            /// Append one row (columns grow in chunks, `push_chunked`).
            pub fn push(&mut self, r: &$row) {
                $(push_chunked(&mut self.$field, r.$field);)*
            }

            /// Rows stored.
            pub fn len(&self) -> usize {
                self.rows_len()
            }

            /// No row stored.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// The rows as a table, columns in declaration order.
            pub fn into_table(self) -> Table {
                let mut t = Table::default();
                $(t.push(stringify!($field), <$ty as Cell>::column(self.$field));)*
                t
            }
        }

        impl $row {
            /// The columns of this row type, in storage order.
            pub fn columns() -> impl Iterator<Item = Column> {
                [$((stringify!($field), <$ty as Cell>::DTYPE, $doc),)*]
                    .into_iter()
                    .map(|(name, dtype, doc)| Column {
                        name: name.to_string(),
                        dtype,
                        by: By::Engine,
                        doc: doc.trim().to_string(),
                    })
            }
        }
    };
}

rows! {
    /// One flow at one sampling instant (`timeseries` table).
    FlowSample, FlowSamples {
        t_ns: u64 = "sampling instant, exact engine time since t = 0",
        t_s: f64 = "sampling instant in seconds",
        flow: u64 = "flow index (order of the spec)",
        cwnd_pkts: f64 = "congestion window (snd_cwnd)",
        ssthresh_pkts: f64 = "slow-start threshold (inf before the first reduction)",
        inflight_pkts: f64 = "packets in flight (tcp_packets_in_flight)",
        srtt_ms: f64 = "smoothed RTT (srtt_us >> 3; NaN before the first sample)",
        min_rtt_ms: f64 = "windowed minimum RTT (tcp_min_rtt)",
        rto_ms: f64 = "retransmission timeout",
        pacing_rate_mbps: f64 = "pacing rate of payload (sk_pacing_rate x 8; NaN when not pacing)",
        delivery_rate_mbps: f64 = "last delivery-rate sample (tcpi_delivery_rate x 8)",
        goodput_mbps: f64 = "payload delivered in order since the previous sample",
        retrans_pkts: u64 = "retransmissions so far (cumulative)",
        tcp_ca_state: Label = "Linux's icsk_ca_state: Open, Disorder, CWR, Recovery, Loss",
        cca_state: Label = "the algorithm's own state (slow_start, cong_avoid, STARTUP, PROBE_BW, ...; connecting before the handshake)",
    }
}

rows! {
    /// One link direction at one sampling instant (`links` table).
    LinkSample, LinkSamples {
        t_ns: u64 = "sampling instant, exact engine time since t = 0",
        t_s: f64 = "sampling instant in seconds",
        link: u64 = "link index (order of the spec)",
        direction: Label = "ab: from the link's first node to its second; ba: the reverse",
        queue_pkts: u64 = "packets in the buffer, the one in service included",
        queue_bytes: u64 = "bytes in the buffer, the packet in service included",
        queue_delay_ms: f64 = "time to drain the buffer at the link rate (queue_bytes x 8 / rate): the wait of a packet arriving now",
        drop_pkts: u64 = "packets dropped (buffer full, a queue discipline's decision, or random loss) since the previous sample",
        mark_pkts: u64 = "packets a queue discipline marked CE since the previous sample (0 without one)",
        utilisation_frac: f64 = "busy fraction of the link since the previous sample",
    }
}

rows! {
    /// One flow over the run (`flows` table; delays and goodput over the measurement window).
    FlowSummary, FlowSummaries {
        flow: u64 = "flow index (order of the spec)",
        delivered_bytes: u64 = "payload delivered in order to the receiving application, whole run",
        window_delivered_bytes: u64 = "payload delivered in order within the measurement window",
        goodput_mbps: f64 = "window_delivered_bytes x 8 / window length",
        data_sent_pkts: u64 = "data packets that entered the network, retransmissions included",
        data_received_pkts: u64 = "data packets that reached the receiver",
        data_dropped_pkts: u64 = "data packets dropped by a link",
        data_in_network_pkts: u64 = "data packets still in the network at the end (sent = received + dropped + in network)",
        retrans_pkts: u64 = "retransmissions, loss probes included",
        rto_count: u64 = "retransmission timeouts",
        tlp_count: u64 = "tail loss probes",
        recovery_count: u64 = "fast-recovery episodes",
        undo_count: u64 = "cwnd reductions undone (spurious retransmissions detected)",
        ack_sent_pkts: u64 = "ACKs the receiver sent",
        ack_dropped_pkts: u64 = "ACKs dropped by a link",
        rtt_mean_ms: f64 = "mean of TCP's RTT samples (ca_rtt, as Linux feeds the algorithms; the kernel backend: mean of sampled srtt)",
        rtt_min_ms: f64 = "smallest RTT sample",
        rtt_p50_ms: f64 = "median of the sampled smoothed RTT (srtt_ms) over the measurement window",
        rtt_p95_ms: f64 = "95th percentile of the sampled smoothed RTT over the window",
        rtt_p99_ms: f64 = "99th percentile of the sampled smoothed RTT over the window",
        qdelay_mean_ms: f64 = "mean queueing delay over the window: sampled srtt minus the base RTT (propagation of both paths)",
        qdelay_p50_ms: f64 = "median queueing delay over the window",
        qdelay_p95_ms: f64 = "95th percentile queueing delay over the window",
        qdelay_p99_ms: f64 = "99th percentile queueing delay over the window",
        completion_time_s: f64 = "from start to the last byte delivered, for flows with a size (NaN otherwise)",
        syn_sent_s: f64 = "the first SYN entered the network (NaN without a handshake)",
        first_data_sent_s: f64 = "the first data segment entered the network",
        handshake_rtt_ms: f64 = "first SYN sent to SYN-ACK received at the sender's host",
        syn_retrans_pkts: u64 = "SYNs sent beyond the first",
        ecn_negotiated: f64 = "1 if the handshake negotiated ECN (tcp.ecn, tcp.ecn_receiver), else 0 (kernel: the sender's tcpi_options)",
        ce_received_pkts: f64 = "data packets that reached the receiver CE-marked (kernel: the receiver's tcpi_received_ce, which also counts duplicates; NaN before Linux 6.18)",
        ece_received_pkts: f64 = "ACKs with ECE the sender took as an echo of a CE mark (ECN negotiated; kernel: NaN, Linux counts no such ACKs)",
        ecn_reduction_count: f64 = "window reductions an ECE started (entries to the CWR state; kernel: NaN, Linux counts none)",
    }
}

rows! {
    /// One link direction over the measurement window (`link_summary` table).
    LinkSummary, LinkSummaries {
        link: u64 = "link index (order of the spec)",
        direction: Label = "ab or ba",
        rate_mbps: f64 = "configured rate",
        delay_ms: f64 = "one-way propagation delay",
        queue: Label = "the queue: droptail, netem, codel, fq_codel, pie or red",
        buffer_pkts: u64 = "the buffer: drop-tail capacity with the packet in service, netem's limit with the delay line, or a queue discipline's packet limit without the packet in service",
        utilisation_frac: f64 = "bits sent over what the rate allows in the window",
        sojourn_mean_ms: f64 = "mean time from arrival to the end of serialisation (queueing plus serialisation)",
        sojourn_p50_ms: f64 = "median time from arrival to the end of serialisation of the packets serialised in the window (within 3.2%; queue disciplines only, NaN otherwise)",
        sojourn_p95_ms: f64 = "95th percentile of that time (as sojourn_p50_ms)",
        sojourn_p99_ms: f64 = "99th percentile of that time (as sojourn_p50_ms)",
        queue_delay_p50_ms: f64 = "median of the sampled queue_delay_ms over the window",
        queue_delay_p95_ms: f64 = "95th percentile of the sampled queue_delay_ms over the window",
        queue_delay_p99_ms: f64 = "99th percentile of the sampled queue_delay_ms over the window",
        arrival_pkts: u64 = "packets offered to the buffer",
        drop_queue_pkts: u64 = "packets dropped because the buffer was full (a queue discipline: over its packet, byte or memory limit)",
        drop_aqm_pkts: u64 = "packets a queue discipline dropped by its decision (CoDel's control law, PIE's and RED's early drops, RED above max)",
        drop_random_pkts: u64 = "packets lost on the wire (random loss)",
        mark_aqm_pkts: u64 = "ECN-capable packets a queue discipline marked CE instead of dropping them",
        mark_ce_threshold_pkts: u64 = "packets CoDel or fq_codel marked CE because their sojourn exceeded ce_threshold",
        loss_frac: f64 = "(drop_queue_pkts + drop_aqm_pkts + drop_random_pkts) / arrival_pkts",
        tx_pkts: u64 = "packets serialised",
        tx_bytes: u64 = "bytes serialised",
        fq_new_flow_count: f64 = "fq_codel: flow queues that became active in the window (new_flow_count; NaN for other queues)",
        fq_drop_overmemory_pkts: f64 = "fq_codel: drop_queue_pkts dropped while over its memory limit (NaN for other queues)",
        fq_shared_flows: f64 = "fq_codel: flow directions on this link that share their flow queue with another (hash collisions; NaN for other queues)",
        achieved_rate_mbps: f64 = "kernel: the rate the forwarder achieved on the wall clock over busy_s (NaN on the simulator)",
        busy_s: f64 = "kernel: model time of back-to-back packets the achieved rate is measured over (NaN on the simulator)",
    }
}

macro_rules! rows_len {
    ($store:ident, $first:ident) => {
        impl $store {
            fn rows_len(&self) -> usize {
                self.$first.len()
            }
        }
    };
}
rows_len!(FlowSamples, t_ns);
rows_len!(LinkSamples, t_ns);
rows_len!(FlowSummaries, flow);
rows_len!(LinkSummaries, link);

/// Per-flow samples plus the algorithms' internals, one column per name any algorithm
/// reports (NaN where a flow's algorithm has no such internal).
///
/// Internals are kept per flow, as its algorithm reports them, and spread into their
/// columns once, in `into_table`: a sample costs a push per value, not a NaN per other
/// algorithm's column (~850 instructions per sample when every column got a value at every
/// sample; ~45 per value when each column filled its NaN gap as it got its next value).
#[derive(Default)]
pub struct FlowRecorder {
    /// The per-flow samples (the fixed columns of the time series).
    pub samples: FlowSamples,
    internals: Vec<Internal>,
    /// Per flow, its internals in runs of samples that report the same names.
    runs_of_flow: Vec<Vec<InternalRun>>,
}

/// One internal's column: the name the algorithm reports, the stored name and the divisor
/// to table units (`schema::table_unit`).
struct Internal {
    raw: &'static str,
    name: String,
    divisor: f64,
}

/// Samples of one flow whose algorithm reported the same names in the same order (it
/// reports the same ones at every sample, so a flow usually has one run).
struct InternalRun {
    /// The names reported, each one's column (`None`: not a registered internal) and
    /// divisor.
    names: Vec<&'static str>,
    columns: Vec<Option<usize>>,
    divisors: Vec<f64>,
    /// The samples' rows in `samples`, and their values in table units, `names.len()` per
    /// row.
    rows: Vec<usize>,
    values: Vec<f64>,
}

impl InternalRun {
    fn new(internals: &[Internal], reported: &[(&'static str, f64)]) -> Self {
        let names: Vec<&'static str> = reported.iter().map(|&(raw, _)| raw).collect();
        let columns: Vec<Option<usize>> = names
            .iter()
            .map(|&raw| {
                // Each name is one column (`internal_names` lists it once).
                let i = internals
                    .iter()
                    .position(|c| std::ptr::eq(c.raw, raw) || c.raw == raw);
                debug_assert!(i.is_some(), "{raw}: not reported by a fresh instance");
                i
            })
            .collect();
        let divisors = columns
            .iter()
            .map(|c| c.map_or(1.0, |i| internals[i].divisor))
            .collect();
        InternalRun {
            names,
            columns,
            divisors,
            rows: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Whether `reported` has this run's names (the same strings), in the same order.
    fn reports(&self, reported: &[(&'static str, f64)]) -> bool {
        self.names.len() == reported.len()
            && (self.names.iter().zip(reported)).all(|(&a, &(b, _))| std::ptr::eq(a, b))
    }
}

impl FlowRecorder {
    /// An empty recorder (columns grow as samples come).
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// A recorder with room for `rows` samples in every column of the samples (see
    /// [`chunked_capacity`]); the internals grow in chunks per flow.
    pub fn with_capacity(rows: usize) -> Self {
        let (metrics, _) = ccfair_cc::internal_names();
        let internals = metrics
            .into_iter()
            .map(|raw| {
                let (name, divisor) = schema::table_unit(raw);
                Internal { raw, name, divisor }
            })
            .collect();
        FlowRecorder {
            samples: FlowSamples::with_capacity(rows),
            internals,
            runs_of_flow: Vec::new(),
        }
    }

    /// Record one flow's sample with its algorithm's internals (raw names and units as
    /// `sample_metrics` reports them).
    pub fn push(&mut self, row: &FlowSample, internals: &[(&'static str, f64)]) {
        self.samples.push(row);
        if internals.is_empty() {
            return;
        }
        let this_row = self.samples.len() - 1;
        let flow = row.flow as usize;
        if self.runs_of_flow.len() <= flow {
            self.runs_of_flow.resize_with(flow + 1, Vec::new);
        }
        let runs = &mut self.runs_of_flow[flow];
        if !runs.last().is_some_and(|run| run.reports(internals)) {
            runs.push(InternalRun::new(&self.internals, internals));
        }
        let run = runs.last_mut().expect("a run reporting these names");
        push_chunked(&mut run.rows, this_row);
        for (&(_, v), &divisor) in internals.iter().zip(&run.divisors) {
            push_chunked(&mut run.values, v / divisor);
        }
    }

    /// The time series: the samples' columns, then one column per internal any registered
    /// algorithm reports, in the schema's name and unit (NaN where a flow's algorithm has no
    /// such internal).
    pub fn into_table(self) -> Table {
        let rows = self.samples.len();
        let mut t = self.samples.into_table();
        let mut columns: Vec<Vec<f64>> = (self.internals.iter())
            .map(|_| vec![f64::NAN; rows])
            .collect();
        for run in self.runs_of_flow.into_iter().flatten() {
            let per_row = run.names.len();
            for (&row, values) in run.rows.iter().zip(run.values.chunks_exact(per_row)) {
                // A name reported twice in one sample: the last value stands.
                for (&column, &v) in run.columns.iter().zip(values) {
                    if let Some(i) = column {
                        columns[i][row] = v;
                    }
                }
            }
        }
        for (col, values) in self.internals.into_iter().zip(columns) {
            t.push(&col.name, ColumnData::F64(values));
        }
        t
    }
}

/// Linear-interpolation percentile of sorted values (numpy's default), NaN if empty.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q / 100.0 * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Sorted finite values, in `f64::total_cmp` order. They are sorted as integers: the key
/// `total_cmp` compares (the bits, with a negative number's other bits flipped) orders as
/// an `i64`, and maps back to the value by the same flip. Equal keys are equal bits, so
/// the unstable sort gives the same sequence as a stable one.
fn sorted(v: Vec<f64>) -> Vec<f64> {
    let total_order_key = |bits: i64| bits ^ (((bits >> 63) as u64) >> 1) as i64;
    let mut keys: Vec<i64> = v
        .into_iter()
        .filter(|x| x.is_finite())
        .map(|x| total_order_key(x.to_bits() as i64))
        .collect();
    keys.sort_unstable();
    keys.into_iter()
        .map(|k| f64::from_bits(total_order_key(k) as u64))
        .collect()
}

fn in_window(spec: &RunSpec, t_ns: u64) -> bool {
    t_ns > spec.measure_start_ns && t_ns <= spec.measure_end_ns
}

/// Round-trip propagation delay of each flow (one-way delays of its data and ACK paths).
pub fn base_rtt_ns(spec: &RunSpec) -> Vec<u64> {
    spec.flows
        .iter()
        .map(|f| {
            f.path
                .iter()
                .chain(&f.ack_path)
                .map(|&c| spec.links[c / 2].delay_ns)
                .sum()
        })
        .collect()
}

/// Fill each summary's delay percentiles from the flow samples taken in the measurement
/// window (sample instants in (start, end]): RTT = srtt, queueing delay = srtt minus the
/// flow's base RTT.
pub fn fill_flow_delays(spec: &RunSpec, samples: &FlowSamples, rows: &mut [FlowSummary]) {
    let base = base_rtt_ns(spec);
    // Every flow has about the same number of samples: room for them up front.
    let per_flow = samples.len() / rows.len().max(1) + 1;
    let mut rtts: Vec<Vec<f64>> = (0..rows.len())
        .map(|_| Vec::with_capacity(per_flow))
        .collect();
    let columns = (samples.t_ns.iter())
        .zip(&samples.flow)
        .zip(&samples.srtt_ms);
    for ((&t_ns, &flow), &srtt_ms) in columns {
        let f = flow as usize;
        if f < rtts.len() && in_window(spec, t_ns) {
            rtts[f].push(srtt_ms);
        }
    }
    for (row, r) in rows.iter_mut().zip(rtts) {
        let r = sorted(r);
        let base_ms = base[row.flow as usize] as f64 / 1e6;
        let q: Vec<f64> = r.iter().map(|x| (x - base_ms).max(0.0)).collect();
        row.rtt_p50_ms = percentile(&r, 50.0);
        row.rtt_p95_ms = percentile(&r, 95.0);
        row.rtt_p99_ms = percentile(&r, 99.0);
        row.qdelay_mean_ms = if q.is_empty() {
            f64::NAN
        } else {
            q.iter().sum::<f64>() / q.len() as f64
        };
        row.qdelay_p50_ms = percentile(&q, 50.0);
        row.qdelay_p95_ms = percentile(&q, 95.0);
        row.qdelay_p99_ms = percentile(&q, 99.0);
    }
}

/// Fill each link summary's queue-delay percentiles from the link samples in the window.
pub fn fill_link_delays(spec: &RunSpec, samples: &LinkSamples, rows: &mut [LinkSummary]) {
    // Every channel has one sample per sampling instant: room for them up front.
    let per_channel = samples.len() / rows.len().max(1) + 1;
    let mut delays: Vec<Vec<f64>> = (0..rows.len())
        .map(|_| Vec::with_capacity(per_channel))
        .collect();
    let columns = (samples.t_ns.iter())
        .zip(&samples.link)
        .zip(&samples.direction)
        .zip(&samples.queue_delay_ms);
    for (((&t_ns, &link), &direction), &delay_ms) in columns {
        let ch = 2 * link as usize + usize::from(direction == "ba");
        if ch < delays.len() && in_window(spec, t_ns) {
            delays[ch].push(delay_ms);
        }
    }
    for (row, d) in rows.iter_mut().zip(delays) {
        let d = sorted(d);
        row.queue_delay_p50_ms = percentile(&d, 50.0);
        row.queue_delay_p95_ms = percentile(&d, 95.0);
        row.queue_delay_p99_ms = percentile(&d, 99.0);
    }
}

/// The flows table: summaries, then the kernel's Linux counters (NaN rows on the
/// simulator), then the counters of ccfair's BPF programs and every algorithm's summary
/// counters, each looked up by name in the flow's `counters` (NaN where a flow has none of
/// that name: other algorithms, other programs, the other backend).
pub fn flows_table(
    rows: &[FlowSummary],
    linux: Option<&[Vec<f64>]>,
    counters: &[Vec<(&'static str, f64)>],
) -> Table {
    let mut store = FlowSummaries::default();
    for r in rows {
        store.push(r);
    }
    let mut t = store.into_table();
    let n = rows.len();
    for (j, (name, _)) in schema::LINUX_COUNTERS.iter().enumerate() {
        let col = (0..n)
            .map(|i| linux.map_or(f64::NAN, |l| l[i][j]))
            .collect();
        t.push(name, ColumnData::F64(col));
    }
    let (_, algorithm_names) = ccfair_cc::internal_names();
    let bpf_names = schema::BPF_COUNTERS.iter().map(|&(name, _)| name);
    let names: Vec<&str> = bpf_names.chain(algorithm_names).collect();
    debug_assert!(
        counters.iter().flatten().all(|(k, _)| names.contains(k)),
        "a counter without a column in the schema: {counters:?}"
    );
    for name in names {
        let col = (0..n)
            .map(|i| {
                counters
                    .get(i)
                    .and_then(|c| c.iter().find(|(k, _)| *k == name))
                    .map_or(f64::NAN, |&(_, v)| v)
            })
            .collect();
        t.push(name, ColumnData::F64(col));
    }
    t
}

/// The link summary table.
pub fn link_summary_table(rows: &[LinkSummary]) -> Table {
    let mut store = LinkSummaries::default();
    for r in rows {
        store.push(r);
    }
    store.into_table()
}

/// A link direction's sample at `t_ns` from its channel and its counters now and at the
/// previous sample `dt_ns` earlier. Both backends sample their channels here.
#[inline]
pub fn link_sample<P: OnWire>(
    t_ns: u64,
    ch: usize,
    c: &Channel<P>,
    prev: &ChannelCounters,
    now: &ChannelCounters,
    dt_ns: u64,
) -> LinkSample {
    let bits = (now.tx_bytes - prev.tx_bytes) as f64 * 8.0;
    LinkSample {
        t_ns,
        t_s: t_ns as f64 / 1e9,
        link: (ch / 2) as u64,
        direction: direction(ch),
        queue_pkts: c.occupancy_pkts() as u64,
        queue_bytes: c.occupancy_bytes(),
        queue_delay_ms: c.occupancy_bytes() as f64 * 8.0 / c.rate_bps as f64 * 1e3,
        drop_pkts: (now.drops_queue + now.drops_aqm + now.drops_random)
            - (prev.drops_queue + prev.drops_aqm + prev.drops_random),
        mark_pkts: (now.marks_aqm + now.marks_ce_threshold)
            - (prev.marks_aqm + prev.marks_ce_threshold),
        utilisation_frac: if dt_ns > 0 {
            bits / (c.rate_bps as f64 * dt_ns as f64 / 1e9)
        } else {
            0.0
        },
    }
}

/// What a link direction's summary takes from its channel besides counters: the sojourn
/// percentiles over the window (ms) and fq_codel's shared queues.
#[derive(Clone, Copy, Debug)]
pub struct LinkExtras {
    /// Sojourn time percentiles (p50, p95, p99) of the packets that left in the measurement
    /// window, ms (NaN when none did).
    pub sojourn_ms: [f64; 3],
    /// fq_codel: how many of the flow directions crossing the channel share their queue with
    /// another (NaN for other queues).
    pub fq_shared_flows: f64,
}

/// The extras of every channel (`LinkExtras`).
pub fn link_extras<P: OnWire>(spec: &RunSpec, channels: &[Channel<P>]) -> Vec<LinkExtras> {
    let shared = crate::world::fq_shared_flows(spec, channels);
    channels
        .iter()
        .zip(shared)
        .map(|(c, fq_shared_flows)| LinkExtras {
            sojourn_ms: c.sojourn_percentiles_ms(),
            fq_shared_flows,
        })
        .collect()
}

/// Each link direction's summary over a measurement window of `window_ns`, from the
/// channel counters at its start and end (the kernel-only columns NaN), with the queue
/// delay percentiles of `samples` and the channels' `extras`.
pub fn link_summaries(
    spec: &RunSpec,
    start: &[ChannelCounters],
    end: &[ChannelCounters],
    samples: &LinkSamples,
    extras: &[LinkExtras],
) -> Vec<LinkSummary> {
    let window_ns = (spec.measure_end_ns - spec.measure_start_ns) as f64;
    let mut rows: Vec<LinkSummary> = (0..2 * spec.links.len())
        .map(|ch| {
            let l = &spec.links[ch / 2];
            let (s, e) = (&start[ch], &end[ch]);
            let tx_pkts = e.tx_pkts - s.tx_pkts;
            let tx_bytes = e.tx_bytes - s.tx_bytes;
            let arrivals = e.arrivals - s.arrivals;
            let drop_queue = e.drops_queue - s.drops_queue;
            let drop_aqm = e.drops_aqm - s.drops_aqm;
            let drop_random = e.drops_random - s.drops_random;
            let sojourn_ns = e.sojourn_ns_sum - s.sojourn_ns_sum;
            let x = extras[ch];
            let fq = |v: u64| {
                if l.queue == Queue::FqCodel {
                    v as f64
                } else {
                    f64::NAN
                }
            };
            LinkSummary {
                link: (ch / 2) as u64,
                direction: direction(ch),
                rate_mbps: l.rate_bps as f64 / 1e6,
                delay_ms: l.delay_ns as f64 / 1e6,
                queue: l.queue.name(),
                buffer_pkts: u64::from(l.buffer_pkts),
                utilisation_frac: tx_bytes as f64 * 8.0 / (l.rate_bps as f64 * window_ns / 1e9),
                sojourn_mean_ms: if tx_pkts == 0 {
                    f64::NAN
                } else {
                    sojourn_ns as f64 / tx_pkts as f64 / 1e6
                },
                sojourn_p50_ms: x.sojourn_ms[0],
                sojourn_p95_ms: x.sojourn_ms[1],
                sojourn_p99_ms: x.sojourn_ms[2],
                queue_delay_p50_ms: f64::NAN,
                queue_delay_p95_ms: f64::NAN,
                queue_delay_p99_ms: f64::NAN,
                arrival_pkts: arrivals,
                drop_queue_pkts: drop_queue,
                drop_aqm_pkts: drop_aqm,
                drop_random_pkts: drop_random,
                mark_aqm_pkts: e.marks_aqm - s.marks_aqm,
                mark_ce_threshold_pkts: e.marks_ce_threshold - s.marks_ce_threshold,
                loss_frac: if arrivals == 0 {
                    f64::NAN
                } else {
                    (drop_queue + drop_aqm + drop_random) as f64 / arrivals as f64
                },
                tx_pkts,
                tx_bytes,
                fq_new_flow_count: fq(e.fq_new_flows - s.fq_new_flows),
                fq_drop_overmemory_pkts: fq(e.fq_drops_overmemory - s.fq_drops_overmemory),
                fq_shared_flows: x.fq_shared_flows,
                achieved_rate_mbps: f64::NAN,
                busy_s: f64::NAN,
            }
        })
        .collect();
    fill_link_delays(spec, samples, &mut rows);
    rows
}

/// The direction label of channel `ch` (channel `2i` = link `i` a->b).
pub fn direction(ch: usize) -> Label {
    if ch.is_multiple_of(2) {
        "ab"
    } else {
        "ba"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 50.0), 2.5);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&v, 100.0), 4.0);
        assert!((percentile(&v, 95.0) - 3.85).abs() < 1e-12);
        assert!(percentile(&[], 50.0).is_nan());
    }

    #[test]
    fn columns_grow_in_chunks_not_by_duration() {
        let mut s = LinkSamples::default();
        let row = LinkSample {
            t_ns: 0,
            t_s: 0.0,
            link: 0,
            direction: "ab",
            queue_pkts: 0,
            queue_bytes: 0,
            queue_delay_ms: 0.0,
            drop_pkts: 0,
            mark_pkts: 0,
            utilisation_frac: 0.0,
        };
        for _ in 0..CHUNK_ROWS + 1 {
            s.push(&row);
        }
        assert_eq!(s.len(), CHUNK_ROWS + 1);
        assert!(s.t_ns.capacity() <= 2 * CHUNK_ROWS);
        for _ in 0..4 * CHUNK_ROWS {
            s.push(&row);
        }
        // Past the first chunk, at most one chunk is unused.
        assert!(s.t_ns.capacity() - s.len() <= CHUNK_ROWS);
    }

    /// A store made for its row count has the capacity chunked growth would reach, and
    /// pushing those rows does not reallocate.
    #[test]
    fn with_capacity_reserves_what_growth_reaches() {
        for n in [
            0,
            1,
            64,
            65,
            1000,
            CHUNK_ROWS,
            CHUNK_ROWS + 1,
            3 * CHUNK_ROWS + 7,
        ] {
            let mut grown: Vec<u64> = Vec::new();
            for _ in 0..n {
                push_chunked(&mut grown, 0);
            }
            assert_eq!(chunked_capacity(n), grown.capacity(), "{n}");
            let mut s = LinkSamples::with_capacity(n);
            assert_eq!(s.t_ns.capacity(), chunked_capacity(n));
            let before = s.queue_delay_ms.as_ptr();
            for _ in 0..n {
                s.push(&LinkSample::default());
            }
            assert_eq!(s.queue_delay_ms.as_ptr(), before, "{n}: reallocated");
            assert_eq!(s.direction.capacity(), chunked_capacity(n));
        }
    }

    #[test]
    fn recorder_stores_every_algorithm_internal_in_table_units() {
        let mut r = FlowRecorder::new();
        let row = FlowSample {
            t_ns: 1,
            t_s: 1e-9,
            flow: 0,
            cwnd_pkts: 10.0,
            ssthresh_pkts: f64::INFINITY,
            inflight_pkts: 0.0,
            srtt_ms: f64::NAN,
            min_rtt_ms: f64::NAN,
            rto_ms: 1000.0,
            pacing_rate_mbps: f64::NAN,
            delivery_rate_mbps: 0.0,
            goodput_mbps: 0.0,
            retrans_pkts: 0,
            tcp_ca_state: "Open",
            cca_state: "STARTUP",
        };
        r.push(
            &row,
            &[("bbr_rtprop_us", 40_000.0), ("bbr_btl_bw_bps", 5e7)],
        );
        let t = r.into_table();
        assert_eq!(t.f64("bbr_rtprop_ms").unwrap(), &[40.0]);
        assert_eq!(t.f64("bbr_btl_bw_mbps").unwrap(), &[50.0]);
        assert!(t.f64("cubic_wmax_pkts").unwrap()[0].is_nan());
        let names: Vec<&str> = t.columns.iter().map(|(n, _)| n.as_str()).collect();
        let schema: Vec<String> = schema::columns("timeseries")
            .into_iter()
            .filter(|c| c.by == By::Engine)
            .map(|c| c.name)
            .collect();
        assert_eq!(names, schema);
    }
}
