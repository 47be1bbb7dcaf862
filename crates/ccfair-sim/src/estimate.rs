//! What a run will cost before it starts: events, time-series rows and bytes, memory, files.
//!
//! The estimate is an upper bound built from the spec alone, so that a run that would not
//! fit (a time series of 10^9 samples, an initial window of 4 billion packets, a buffer of
//! 4 billion packets on a long run) is refused with a one-line error naming the field that
//! costs the most, instead of aborting the process when an allocation fails.
//!
//! Memory has four parts, each tied to the spec field that drives it:
//! - time series: `flows x samples` and `2 x links x samples` rows, with `samples =
//!   duration / sample_interval`. A row costs the engine one value per column of the
//!   results schema that the recorder fills (`schema::columns`, `by: Engine`): the sample's
//!   fields and every registered algorithm's internals, which every run stores (NaN for
//!   other algorithms). Columns grow in chunks (`record::push_chunked`), so the engine holds
//!   at most one chunk beyond what it recorded, never a preallocation by duration. The
//!   Python layer's copies (numpy arrays, pandas frames, the Arrow table written as
//!   Parquet, with the names and provenance columns it adds) are a measured multiple of the
//!   engine's bytes (docs/spec.md, "Limits");
//! - packets: a flow keeps at most its congestion window in its retransmission queue and in
//!   the network. The window starts at `init_cwnd` and grows at most by the packets
//!   delivered (slow start), and past the network's capacity on its path (buffers plus
//!   packets in propagation) losses bring it down within one round trip, so at most twice
//!   that capacity: `init_cwnd + min(delivered, 2 x capacity + 64)` packets, and never more
//!   than the receive buffer's largest window (`tcp_rmem[2]`, `tcp/rcvbuf.rs`) allows.
//!   Flows that share a bottleneck share its buffers and its pipe, so together they hold
//!   at most what those hold for all of them (`RunSpec::packets_held`): the engine's
//!   memory grows with what is in flight, and so does the estimate;
//! - the flows' and links' own state, before any packet;
//! - traces: a row per traced packet and hop event.
//!
//! Events bound the run's CPU time: per link direction, at most the packets its rate can
//! carry and the flows crossing it can send (flows that share a bottleneck send together
//! at most at its rate), times the events per packet hop (arrival, timers), plus the
//! samples.

use serde::Serialize;

use crate::error::SimError;
use crate::record::CHUNK_ROWS;
use crate::schema::{self, By, Dtype};
use crate::spec::{RunSpec, ACK_BYTES, DATA_HEADER_BYTES};

/// Peak memory of a run per engine byte of its time series, in tenths: the engine's columns,
/// the bytes handed to Python, the numpy arrays, the pandas frames (with the columns Python
/// adds) and the Arrow table written as Parquet. Measured with the chunked recorder: 2.58
/// (the slope between a 10-hop parking lot sampled every 1 ms for 30 s and for 120 s, 2.25
/// and 9.0 million rows: `scripts/fuzz_campaign.py --calibrate`), 2.66 for the 120 s run
/// alone, 2.44 for the same lot over 3600 s at 10 ms (27 million rows, 7.8 GB peak); 3.0
/// leaves a margin of 13% over the largest.
const TIMESERIES_PEAK_TENTHS: u64 = 30;
/// Copies of a trace row the Python layer holds (as for the time series).
const PYTHON_COPIES: u64 = 3;
/// Bytes per packet a flow keeps: its retransmission-queue segment, the packet in the
/// engine's send burst, the packet in a channel (pipe and backlog entries), the receiver's
/// out-of-order range and event-queue entries. Rounded up from the struct sizes.
const PACKET_STATE_BYTES: u64 = 400;
/// The windows of the flows that share a bottleneck hold at most this many times its
/// buffers, its bandwidth-delay product and `SHARED_WINDOW_ALLOWANCE_S` at its rate
/// (`packets_held`): twice because a window at most doubles in the round trip before its
/// loss is detected, and twice again because storage grows by doubling (`SegRing`, `Fifo`,
/// `PacketSlab`). Checked against measured runs (`benches/README.md`, "Memory and events
/// of many flows").
const SHARED_WINDOW_FACTOR: f64 = 4.0;
/// Beyond the bandwidth-delay product, windows that follow an estimate rather than losses
/// hold up to this long at the bottleneck's rate: BBR's ACK-aggregation allowance lets its
/// cwnd exceed 2 x its BDP by up to 100 ms of its bandwidth estimate
/// (`bbr_extra_acked_max_us`, net/ipv4/tcp_bbr.c), and a lost segment stays in the
/// retransmission queue until the hole before it is repaired. Without it (and with a
/// factor of 2), 2 BBR flows on a 1 Gbit/s, 8 ms path with a 0.1 BDP buffer held 1.7 times
/// the bound: retransmission queues of 4096 and 8192 slots for a BDP of 667 packets.
const SHARED_WINDOW_ALLOWANCE_S: f64 = 0.1;
/// Bytes of the engine's state of one flow (sender, receiver, its first retransmission-queue
/// slots, its spec), and of one link (two channels and their first buffer and pipe slots),
/// before any packet: rounded up from 8.1 kB and 2.3 kB measured (peak resident memory
/// of 1 ms runs of dumbbells with 1000 to 10,000 flows and of chains of 2000 and 8000
/// links, `benches/README.md`, "Scale").
const FLOW_STATE_BYTES: u64 = 12_000;
const LINK_STATE_BYTES: u64 = 3_000;
/// Bytes of one trace row in the engine and in Python.
const TRACE_ROW_BYTES: u64 = 48 * (1 + PYTHON_COPIES);
/// Events per packet hop: the arrival, plus the timers a packet can arm (pacing,
/// delayed ACK, loss probe, retransmission), bounded above. Runs measure 0.7 to 1.1 where
/// windows are large and up to 1.26 where they are a few packets (200 Copa flows sharing
/// 50 Mbit/s over 2 ms, where many packets wait for a timer; `benches/README.md`, "Memory
/// and events of many flows").
const EVENTS_PER_HOP: f64 = 3.0;
/// The largest window a receive buffer can give: 65535 << `TCP_MAX_WSCALE` (14).
const MAX_WINDOW_BYTES: f64 = (65_535u64 << 14) as f64;
/// Files a run writes: one per table (flows, timeseries, links, link_summary, runs).
pub const FILES_PER_RUN: u64 = 5;

/// Limits a run must fit. Defaults suit a machine of 2 cores and 24 GiB (docs/spec.md,
/// "Limits"); every one can be raised explicitly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Estimated peak memory of one run.
    pub memory_bytes: u64,
    /// Events of one run: the estimate must fit, and the engine stops a run that exceeds it.
    pub events: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 2_000_000_000,
            events: 20_000_000_000,
        }
    }
}

/// One part of a run's memory and the spec field that drives it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryPart {
    /// User-level field path (`sample_interval`, `flows[0].tcp.init_cwnd`, `links[2].buffer`).
    pub field: String,
    /// What the bytes hold, for messages (`time series`, `packets of flow 0`).
    pub what: String,
    /// Estimated bytes.
    pub bytes: u64,
}

/// The estimate of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// Sampling instants (`duration / sample_interval`).
    pub samples: u64,
    /// Rows of the per-flow time series (at most: flows that start late have fewer).
    pub timeseries_rows: u64,
    /// Rows of the per-link time series (exact: one per link direction per sample).
    pub link_rows: u64,
    /// Bytes of both time series in the engine.
    pub timeseries_bytes: u64,
    /// Rows of the per-packet trace (0 without traced flows).
    pub trace_rows: u64,
    /// Packets the flows can hold at once (retransmission queues and network).
    pub packets: u64,
    /// Engine events.
    pub events: u64,
    /// Peak memory of the run (engine and Python tables).
    pub memory_bytes: u64,
    /// Bytes written (uncompressed; Parquet files are usually several times smaller).
    pub output_bytes: u64,
    /// Files written.
    pub files: u64,
    /// Memory by cause, largest first.
    pub memory_parts: Vec<MemoryPart>,
}

fn sat(x: f64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= u64::MAX as f64 {
        u64::MAX
    } else {
        x.ceil() as u64
    }
}

/// Packets a channel can hold: its buffer plus what is in propagation at its rate.
fn channel_capacity_pkts(spec: &RunSpec, ch: usize) -> f64 {
    let l = &spec.links[ch / 2];
    let in_flight = l.rate_bps as f64 * l.delay_ns as f64 / 1e9 / (8.0 * ACK_BYTES as f64);
    l.held_pkts_bound() as f64 + in_flight.ceil() + 1.0
}

/// Engine bytes of one row of a time-series table: one value per column the recorder
/// fills (numbers 8 bytes, state and direction names a 16-byte `&str`).
pub fn engine_row_bytes(table: &str) -> u64 {
    schema::columns(table)
        .iter()
        .filter(|c| c.by == By::Engine)
        .map(|c| if c.dtype == Dtype::Str { 16 } else { 8 })
        .sum()
}

/// Rows a column that grew to hold `rows` rows has room for (`record::push_chunked`: 64,
/// doubling up to a chunk, then one chunk at a time).
fn capacity_rows(rows: u64) -> u64 {
    let chunk = CHUNK_ROWS as u64;
    if rows == 0 {
        0
    } else if rows <= chunk {
        rows.next_power_of_two().max(64)
    } else {
        rows.div_ceil(chunk).saturating_mul(chunk)
    }
}

impl RunSpec {
    /// The resource estimate of this run (see the module doc). Never panics, whatever the
    /// numbers: arithmetic saturates.
    pub fn estimate(&self) -> Estimate {
        let duration_s = self.duration_ns as f64 / 1e9;
        let samples = self.duration_ns / self.sample_interval_ns.max(1);
        let n_flows = self.flows.len() as u64;
        let n_ch = 2 * self.links.len() as u64;
        let timeseries_rows = samples.saturating_mul(n_flows);
        let link_rows = samples.saturating_mul(n_ch);
        let timeseries_bytes = capacity_rows(timeseries_rows)
            .saturating_mul(engine_row_bytes("timeseries"))
            .saturating_add(capacity_rows(link_rows).saturating_mul(engine_row_bytes("links")));

        let flow_pps = self.flow_pps();
        // Packets held per flow, and the memory part of the flow or link that drives it.
        let groups = self.bottleneck_groups();
        let (packets, mut parts) = self.packets_held(&groups, &flow_pps, duration_s);
        let mut trace_rows = 0f64;
        for (i, f) in self.flows.iter().enumerate() {
            if self.trace_flows.contains(&i) {
                let hops = (f.path.len() + f.ack_path.len()) as f64;
                trace_rows += flow_pps[i] * duration_s * 2.0 * hops;
            }
        }

        let events =
            self.hop_pps(&self.shared_pps(&groups, &flow_pps)) * duration_s * EVENTS_PER_HOP
                + (samples as f64)
                + 64.0 * n_flows as f64
                + 16.0;

        let ts_memory = sat(timeseries_bytes as f64 * TIMESERIES_PEAK_TENTHS as f64 / 10.0);
        parts.push(MemoryPart {
            field: "sample_interval".into(),
            what: format!(
                "time series of {samples} samples x {n_flows} flows and {n_ch} link directions"
            ),
            bytes: ts_memory,
        });
        parts.push(MemoryPart {
            field: "flows".into(),
            what: format!("state of {n_flows} flows and {} links", self.links.len()),
            bytes: n_flows
                .saturating_mul(FLOW_STATE_BYTES)
                .saturating_add((self.links.len() as u64).saturating_mul(LINK_STATE_BYTES))
                .saturating_add(self.links.iter().map(|l| 2 * l.qdisc_table_bytes()).sum()),
        });
        let trace_rows = sat(trace_rows);
        if trace_rows > 0 {
            parts.push(MemoryPart {
                field: "trace".into(),
                what: format!("packet trace of about {trace_rows} rows"),
                bytes: trace_rows.saturating_mul(TRACE_ROW_BYTES),
            });
        }
        parts.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.field.cmp(&b.field)));
        let memory_bytes = parts
            .iter()
            .fold(0u64, |acc, p| acc.saturating_add(p.bytes));
        let output_bytes = timeseries_bytes
            .saturating_add(trace_rows.saturating_mul(48))
            .saturating_add(4096 * (n_flows + n_ch));
        Estimate {
            samples,
            timeseries_rows,
            link_rows,
            timeseries_bytes,
            trace_rows,
            packets: sat(packets),
            events: sat(events),
            memory_bytes,
            output_bytes,
            files: FILES_PER_RUN,
            memory_parts: parts,
        }
    }
    /// Per flow, the rate of its own bottleneck in data packets per second.
    fn flow_pps(&self) -> Vec<f64> {
        let data_wire = |f: &crate::spec::FlowSpec| (f.tcp.mss + DATA_HEADER_BYTES) as f64;
        self.flows
            .iter()
            .map(|f| {
                let rate = f
                    .path
                    .iter()
                    .map(|&c| self.links.get(c / 2).map_or(0, |l| l.rate_bps))
                    .min()
                    .unwrap_or(0);
                rate as f64 / (8.0 * data_wire(f))
            })
            .collect()
    }

    /// Per flow, its rate in data packets per second when the flows that share its
    /// bottleneck (`bottleneck_groups`) send at once: `flow_pps` scaled down so that
    /// together they send at most at the bottleneck's rate. Sustained, they cannot send
    /// faster: what exceeds it is dropped there and the senders back off; bursts above it
    /// are within `EVENTS_PER_HOP`'s margin (runs measure 0.7 to 1.1 events per hop).
    fn shared_pps(&self, groups: &[(Option<usize>, Vec<usize>)], flow_pps: &[f64]) -> Vec<f64> {
        let mut pps = flow_pps.to_vec();
        for (bottleneck, members) in groups {
            let Some(b) = *bottleneck else { continue };
            let wire = self.smallest_data_packet_bytes(members);
            let capacity = self.links[b / 2].rate_bps as f64 / (8.0 * wire);
            let offered: f64 = members.iter().map(|&i| flow_pps[i]).sum();
            if offered > capacity {
                for &i in members {
                    pps[i] *= capacity / offered;
                }
            }
        }
        pps
    }

    /// The packets the flows can hold at once, and the memory parts naming the fields that
    /// bound them.
    ///
    /// Flows are grouped by their bottleneck (`bottleneck_groups`). A group holds at most
    /// the sum of its flows' own bounds (`flow_packets`), and at most what the network can
    /// hold for all of them together: counted per flow, a buffer or a pipe that a thousand
    /// flows share counts a thousand times, and 1000 flows on a 1 Gbit/s dumbbell, which
    /// hold a few megabytes of packets, were estimated at 14 GB. Together, beyond their
    /// initial windows, the windows of flows that share a bottleneck stop growing when the
    /// buffers where their packets can queue (`queueing_channels`) overflow: those buffers
    /// plus what is in propagation at the bottleneck's rate over the group's longest round
    /// trip, times `SHARED_WINDOW_FACTOR`, plus 64 packets per flow.
    fn packets_held(
        &self,
        groups: &[(Option<usize>, Vec<usize>)],
        flow_pps: &[f64],
        duration_s: f64,
    ) -> (f64, Vec<MemoryPart>) {
        let rmem = self.rmem_bytes();
        let queueing = self.queueing_channels();
        let mut parts = Vec::new();
        let mut packets = 0f64;
        for (bottleneck, members) in groups {
            let bottleneck = *bottleneck;
            let own: Vec<(f64, f64, MemoryPart)> = members
                .iter()
                .map(|&i| self.flow_packets(i, flow_pps[i] * duration_s, rmem[i][2]))
                .collect();
            let own_sum: f64 = own.iter().map(|(init, window, _)| init + window).sum();
            let init_sum: f64 = own.iter().map(|(init, _, _)| init).sum();
            let Some(b) = bottleneck else {
                // Flows without a valid path (refused by validation): their own bounds.
                packets += own_sum;
                parts.extend(own.into_iter().map(|(_, _, part)| part));
                continue;
            };
            let link = &self.links[b / 2];
            let rate_bps = link.rate_bps.max(1) as f64;
            let wire = self.smallest_data_packet_bytes(members);
            let rtt_s = members
                .iter()
                .map(|&i| self.round_trip_s(i))
                .fold(0f64, f64::max);
            // Buffers where the group's data can queue, each counted once; the largest is
            // the one to blame.
            let mut buffers: Vec<usize> = members
                .iter()
                .flat_map(|&i| self.flows[i].path.iter().copied())
                .filter(|&c| c / 2 < self.links.len() && queueing[c])
                .collect();
            buffers.sort_unstable();
            buffers.dedup();
            let queued: f64 = buffers
                .iter()
                .map(|&c| self.links[c / 2].held_pkts_bound() as f64)
                .sum();
            let in_propagation = rate_bps * rtt_s / (8.0 * wire);
            let allowance = rate_bps * SHARED_WINDOW_ALLOWANCE_S / (8.0 * wire);
            let window = SHARED_WINDOW_FACTOR
                * (queued + in_propagation.ceil() + allowance.ceil() + 1.0)
                + 64.0 * members.len() as f64;
            let windows = own_sum - init_sum;
            if windows <= window {
                packets += own_sum;
                parts.extend(own.into_iter().map(|(_, _, part)| part));
                continue;
            }
            let held = init_sum + window;
            packets += held;
            let field = if init_sum >= window {
                let biggest = members
                    .iter()
                    .copied()
                    .max_by_key(|&i| (self.flows[i].tcp.init_cwnd, std::cmp::Reverse(i)))
                    .unwrap_or(0);
                format!("flows[{biggest}].tcp.init_cwnd")
            } else {
                let biggest = buffers
                    .iter()
                    .copied()
                    .max_by_key(|&c| (self.links[c / 2].buffer_pkts, std::cmp::Reverse(c)))
                    .unwrap_or(b);
                format!("links[{}].buffer", biggest / 2)
            };
            parts.push(MemoryPart {
                field,
                what: format!(
                    "packets held by the {} flows through link {:?}",
                    members.len(),
                    link.name
                ),
                bytes: sat(held * PACKET_STATE_BYTES as f64),
            });
        }
        (packets, parts)
    }

    /// The smallest data packet on the wire among `members` (the most packets per second
    /// a rate carries).
    fn smallest_data_packet_bytes(&self, members: &[usize]) -> f64 {
        members
            .iter()
            .map(|&i| self.flows[i].tcp.mss + DATA_HEADER_BYTES)
            .min()
            .unwrap_or(DATA_HEADER_BYTES) as f64
    }

    /// Flows by bottleneck: the slowest channel of each flow's data path (on a tie, the one
    /// most flows' data crosses, then the first: where access links are as fast as the
    /// link they share, the shared one), in order of first appearance; `None` gathers
    /// flows without a valid channel.
    fn bottleneck_groups(&self) -> Vec<(Option<usize>, Vec<usize>)> {
        let n_ch = 2 * self.links.len();
        let mut sharing = vec![0usize; n_ch];
        for f in &self.flows {
            for &c in f.path.iter().filter(|&&c| c < n_ch) {
                sharing[c] += 1;
            }
        }
        let mut groups: Vec<(Option<usize>, Vec<usize>)> = Vec::new();
        let mut index_of: std::collections::HashMap<Option<usize>, usize> =
            std::collections::HashMap::new();
        for (i, f) in self.flows.iter().enumerate() {
            let b = f
                .path
                .iter()
                .copied()
                .filter(|&c| c < n_ch)
                .min_by_key(|&c| (self.links[c / 2].rate_bps, std::cmp::Reverse(sharing[c])));
            let g = *index_of.entry(b).or_insert_with(|| {
                groups.push((b, Vec::new()));
                groups.len() - 1
            });
            groups[g].1.push(i);
        }
        groups
    }

    /// Per channel: can a queue build in its buffer? Where the data of two or more
    /// channels (or flows leaving one host) merge, or where it leaves a faster channel, it
    /// can arrive faster than the channel sends. A channel fed by one channel no faster
    /// than itself (the receiver's access link of a dumbbell), or by one sender on its
    /// host (the sender's access link, at its own line rate), keeps a queue only within
    /// the window of the flow it carries, which the bottleneck already bounds.
    fn queueing_channels(&self) -> Vec<bool> {
        #[derive(Clone, Copy, PartialEq)]
        enum Feeder {
            None,
            Channel(usize),
            Flow(usize),
            Several,
        }
        let n_ch = 2 * self.links.len();
        let mut feeder = vec![Feeder::None; n_ch];
        let mut queueing = vec![false; n_ch];
        for (i, f) in self.flows.iter().enumerate() {
            let mut prev: Option<usize> = None;
            for &c in f.path.iter().filter(|&&c| c < n_ch) {
                let from = match prev {
                    None => Feeder::Flow(i),
                    Some(p) => {
                        if self.links[p / 2].rate_bps > self.links[c / 2].rate_bps {
                            queueing[c] = true;
                        }
                        Feeder::Channel(p)
                    }
                };
                feeder[c] = match feeder[c] {
                    Feeder::None => from,
                    seen if seen == from => seen,
                    _ => Feeder::Several,
                };
                if feeder[c] == Feeder::Several {
                    queueing[c] = true;
                }
                prev = Some(c);
            }
        }
        queueing
    }

    /// Flow `i`'s round trip without queueing: propagation and the serialisation of a data
    /// segment on its path and of an ACK on its ACK path, in seconds.
    fn round_trip_s(&self, i: usize) -> f64 {
        let f = &self.flows[i];
        let hop = |c: usize, bytes: u32| {
            self.links.get(c / 2).map_or(0.0, |l| {
                l.delay_ns as f64 / 1e9 + 8.0 * bytes as f64 / l.rate_bps.max(1) as f64
            })
        };
        let data = f.tcp.mss + DATA_HEADER_BYTES;
        f.path.iter().map(|&c| hop(c, data)).sum::<f64>()
            + f.ack_path.iter().map(|&c| hop(c, ACK_BYTES)).sum::<f64>()
    }

    /// The packets flow `i` can hold at once on its own (it can deliver `delivered`
    /// packets over the run; its receive buffer is at most `rmem_max_bytes`): its initial
    /// window and what it can add to it, and the memory part naming the field that bounds
    /// them.
    fn flow_packets(
        &self,
        i: usize,
        delivered: f64,
        rmem_max_bytes: u64,
    ) -> (f64, f64, MemoryPart) {
        let f = &self.flows[i];
        let capacity: f64 = f
            .path
            .iter()
            .chain(&f.ack_path)
            .filter(|&&c| c / 2 < self.links.len())
            .map(|&c| channel_capacity_pkts(self, c))
            .sum();
        // The advertised window is at most the receive buffer's payload share of
        // tcp_rmem[2] (truesize exceeds the payload, so less than the buffer itself).
        let rwnd_pkts = (rmem_max_bytes as f64).min(MAX_WINDOW_BYTES) / f.tcp.mss.max(1) as f64;
        let network = delivered.min(2.0 * capacity + 64.0);
        let window = network.min(rwnd_pkts + 1.0);
        let init = f.tcp.init_cwnd as f64;
        let held = init + window;
        let bytes = sat(held * PACKET_STATE_BYTES as f64);
        // Blame the initial window when it dominates, else the receive buffer if it
        // bounds the window, else the buffers on the path.
        let field = if init >= window {
            format!("flows[{i}].tcp.init_cwnd")
        } else if window < network {
            format!("flows[{i}].tcp.rmem")
        } else {
            let biggest = f
                .path
                .iter()
                .chain(&f.ack_path)
                .filter(|&&c| c / 2 < self.links.len())
                .max_by_key(|&&c| self.links[c / 2].buffer_pkts)
                .map_or(0, |&c| c / 2);
            format!("links[{biggest}].buffer")
        };
        let part = MemoryPart {
            field,
            what: format!("packets held by flow {:?}", f.name),
            bytes,
        };
        (init, window, part)
    }

    /// Packet hops per second over every channel: per channel, the packets it can carry
    /// (its rate) or the flows crossing it can send (`flow_pps`: each at its own
    /// bottleneck's rate, shared with the flows behind the same bottleneck, `shared_pps`),
    /// whichever is smaller.
    ///
    /// One pass over the flows' paths (a scan of every flow per channel took 9 s at 10,000
    /// flows); each channel adds its flows in flow order, once per flow.
    fn hop_pps(&self, flow_pps: &[f64]) -> f64 {
        let n_ch = 2 * self.links.len();
        let mut offered = vec![0f64; n_ch];
        for (i, f) in self.flows.iter().enumerate() {
            let channels = f.path.iter().chain(&f.ack_path);
            for (k, &ch) in channels.clone().enumerate() {
                // A channel on both the data and the ACK path counts the flow once.
                if ch < n_ch && !channels.clone().take(k).any(|&c| c == ch) {
                    offered[ch] += flow_pps[i];
                }
            }
        }
        let mut hop_pps = 0f64;
        for (ch, offered) in offered.into_iter().enumerate() {
            let carried = self.links[ch / 2].rate_bps as f64 / (8.0 * ACK_BYTES as f64);
            hop_pps += offered.min(carried);
        }
        hop_pps
    }
}

/// Bytes for messages: "2.0 GB", "512 MB", "3.4 kB" (decimal units).
pub fn format_bytes(n: u64) -> String {
    let units = [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)];
    for (name, scale) in units {
        if n as f64 >= scale {
            return format!("{:.1} {name}", n as f64 / scale);
        }
    }
    format!("{n} B")
}

/// A count for messages: "1.2e9" above a million, else the integer.
pub fn format_count(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.2e}", n as f64)
    } else {
        n.to_string()
    }
}

impl Estimate {
    /// Refuse the run if it exceeds a limit: one line naming the field that costs the most,
    /// the estimate and the limit.
    pub fn check(&self, limits: &Limits) -> Result<(), SimError> {
        if self.memory_bytes > limits.memory_bytes {
            let top = &self.memory_parts[0];
            return Err(SimError::Limit {
                field: top.field.clone(),
                message: format!(
                    "the run needs an estimated {} of memory ({}: {}), above the memory \
                     limit of {}",
                    format_bytes(self.memory_bytes),
                    top.what,
                    format_bytes(top.bytes),
                    format_bytes(limits.memory_bytes)
                ),
            });
        }
        if self.events > limits.events {
            return Err(SimError::Limit {
                field: "duration".into(),
                message: format!(
                    "the run needs an estimated {} events, above the event limit of {}",
                    format_count(self.events),
                    format_count(limits.events)
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{FlowSpec, LinkSpec, TcpOptions};

    fn spec(duration_ns: u64, sample_ns: u64, init_cwnd: u32, buffer: u32) -> RunSpec {
        RunSpec {
            duration_ns,
            seed: 1,
            sample_interval_ns: sample_ns,
            measure_start_ns: 0,
            measure_end_ns: duration_ns,
            nodes: vec!["a".into(), "b".into()],
            links: vec![LinkSpec {
                name: "l".into(),
                a: 0,
                b: 1,
                rate_bps: 50_000_000,
                delay_ns: 10_000_000,
                buffer_pkts: buffer,
                loss_ab: 0.0,
                loss_ba: 0.0,
                queue: Default::default(),
                qdisc: serde_json::Value::Null,
            }],
            flows: vec![FlowSpec {
                name: "f".into(),
                src: 0,
                dst: 1,
                path: vec![0],
                ack_path: vec![1],
                cca: "reno".into(),
                cca_params: serde_json::Value::Null,
                start_ns: 0,
                start_jitter_ns: 0,
                stop_ns: None,
                size_bytes: None,
                tcp: TcpOptions {
                    init_cwnd,
                    ..TcpOptions::default()
                },
            }],
            trace_flows: vec![],
        }
    }

    #[test]
    fn nanosecond_sampling_is_refused_naming_sample_interval() {
        let e = spec(1_000_000_000, 1, 10, 100).estimate();
        assert_eq!(e.samples, 1_000_000_000);
        assert_eq!(e.link_rows, 2_000_000_000);
        let err = e.check(&Limits::default()).unwrap_err();
        match err {
            SimError::Limit { field, message } => {
                assert_eq!(field, "sample_interval");
                assert!(message.contains("memory limit of 2.0 GB"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn huge_initial_window_is_refused_naming_init_cwnd() {
        let err = spec(1_000_000_000, 10_000_000, u32::MAX, 100)
            .estimate()
            .check(&Limits::default())
            .unwrap_err();
        assert!(
            matches!(&err, SimError::Limit { field, .. } if field == "flows[0].tcp.init_cwnd"),
            "{err:?}"
        );
    }

    #[test]
    fn extreme_numbers_saturate_instead_of_overflowing() {
        let e = spec(u64::MAX, 1, u32::MAX, u32::MAX).estimate();
        assert_eq!(e.memory_bytes, u64::MAX);
        assert!(e.check(&Limits::default()).is_err());
    }

    /// Bytes the engine's columns of a table reserve (capacity, not length).
    fn reserved_bytes(t: &crate::table::Table) -> u64 {
        use crate::table::ColumnData;
        t.columns
            .iter()
            .map(|(_, c)| match c {
                ColumnData::U64(v) => v.capacity() * 8,
                ColumnData::F64(v) => v.capacity() * 8,
                ColumnData::Str(v) => v.capacity() * 16,
                ColumnData::Text(v) => v.capacity() * 24,
            } as u64)
            .sum()
    }

    /// The estimate covers every column the recorder fills (the sample's fields and every
    /// algorithm's internals) with the room its chunked growth leaves, and is not far above
    /// it: a run of 30,000 samples (more than a chunk) reserves within 5% below it.
    #[test]
    fn time_series_bytes_cover_the_recorder_closely() {
        let mut s = spec(30_000_000_000, 1_000_000, 10, 100);
        s.flows[0].tcp.app_latency = crate::host::Latency::None;
        let est = s.estimate();
        let r = crate::Simulation::new(s).unwrap().run();
        assert_eq!(r.links.n_rows() as u64, est.link_rows);
        let reserved = reserved_bytes(&r.timeseries) + reserved_bytes(&r.links);
        assert!(reserved <= est.timeseries_bytes, "{reserved} > {est:?}");
        assert!(
            reserved as f64 >= 0.95 * est.timeseries_bytes as f64,
            "{reserved} vs {}",
            est.timeseries_bytes
        );
    }

    /// `capacity_rows` bounds the growth of `record::push_chunked` at every size.
    #[test]
    fn capacity_rows_bounds_chunked_growth() {
        for n in [
            1usize,
            63,
            64,
            65,
            1000,
            CHUNK_ROWS,
            CHUNK_ROWS + 1,
            100_000,
            100_001,
        ] {
            let mut v: Vec<u8> = Vec::new();
            for _ in 0..n {
                crate::record::push_chunked(&mut v, 0);
            }
            assert_eq!(v.capacity() as u64, capacity_rows(n as u64), "{n}");
        }
    }

    /// The one-pass sum equals a scan of every flow per channel, bit for bit, also when a
    /// flow's data and ACK paths share a channel or a path names a channel twice.
    #[test]
    fn hop_rate_counts_each_flow_once_per_channel_in_flow_order() {
        let mut s = spec(1_000_000_000, 10_000_000, 10, 100);
        let f = s.flows[0].clone();
        s.flows = (0..7)
            .map(|i| FlowSpec {
                path: match i % 3 {
                    0 => vec![0],
                    1 => vec![0, 0],
                    _ => vec![1],
                },
                ack_path: if i % 2 == 0 { vec![1] } else { vec![0, 1] },
                ..f.clone()
            })
            .collect();
        let pps: Vec<f64> = (0..7).map(|i| 1000.0 + i as f64 * 0.1).collect();
        let mut naive = 0f64;
        for ch in 0..2 {
            let mut offered = 0f64;
            for (i, f) in s.flows.iter().enumerate() {
                if f.path.contains(&ch) || f.ack_path.contains(&ch) {
                    offered += pps[i];
                }
            }
            naive += offered.min(s.links[0].rate_bps as f64 / (8.0 * ACK_BYTES as f64));
        }
        assert_eq!(s.hop_pps(&pps).to_bits(), naive.to_bits());
    }

    /// A dumbbell of `n` flows of `cca`: senders `h0..` -> `s1` -> bottleneck -> `s2` ->
    /// receivers, access links at 1 Gbit/s and 1 ms with 1000-packet buffers (as
    /// `ccfair.dumbbell`), the bottleneck at `rate_bps`, `delay_ns`, `buffer_pkts`.
    fn dumbbell(
        n: usize,
        cca: &str,
        rate_bps: u64,
        delay_ns: u64,
        buffer_pkts: u32,
        duration_ns: u64,
    ) -> RunSpec {
        let mut s = spec(duration_ns, duration_ns / 2, 10, buffer_pkts);
        let template = s.links[0].clone();
        let link = |name: String, a: usize, b: usize, rate_bps, delay_ns, buffer_pkts| LinkSpec {
            name,
            a,
            b,
            rate_bps,
            delay_ns,
            buffer_pkts,
            ..template.clone()
        };
        let (s1, s2) = (n, n + 1);
        s.nodes = (0..2 * n + 2).map(|k| format!("n{k}")).collect();
        s.links = (0..n)
            .map(|i| link(format!("h{i}-s1"), i, s1, 1_000_000_000, 1_000_000, 1000))
            .chain([link(
                "bottleneck".into(),
                s1,
                s2,
                rate_bps,
                delay_ns,
                buffer_pkts,
            )])
            .chain((0..n).map(|i| {
                link(
                    format!("s2-r{i}"),
                    s2,
                    n + 2 + i,
                    1_000_000_000,
                    1_000_000,
                    1000,
                )
            }))
            .collect();
        let template = s.flows[0].clone();
        s.flows = (0..n)
            .map(|i| {
                let rx = n + 1 + i;
                FlowSpec {
                    name: format!("flow{i}"),
                    src: i,
                    dst: n + 2 + i,
                    path: vec![2 * i, 2 * n, 2 * rx],
                    ack_path: vec![2 * rx + 1, 2 * n + 1, 2 * i + 1],
                    cca: cca.into(),
                    ..template.clone()
                }
            })
            .collect();
        s.check().unwrap();
        s
    }

    /// Flows that share a bottleneck share its buffer and its pipe in the estimate: each
    /// flow more adds its initial window and 64 packets, not a path's worth of buffers
    /// (1000 flows on 1 Gbit/s were estimated at 14 GB, and refused).
    #[test]
    fn flows_that_share_a_bottleneck_share_its_packets() {
        let gbit = 1_000_000_000;
        let est = |n| dumbbell(n, "cubic", gbit, 18_000_000, 3100, 10_000_000_000).estimate();
        let (e100, e1000) = (est(100), est(1000));
        assert_eq!(e1000.packets - e100.packets, 900 * (10 + 64), "{e1000:?}");
        assert!(e1000.check(&Limits::default()).is_ok(), "{e1000:?}");
        assert!(est(10_000).check(&Limits::default()).is_ok());
        let top = &e1000.memory_parts[0];
        assert_eq!(
            (top.field.as_str(), top.what.as_str()),
            (
                "links[1000].buffer",
                "packets held by the 1000 flows through link \"bottleneck\""
            )
        );
        // One flow alone keeps its own bound, and the message naming its own field.
        let one = dumbbell(1, "cubic", gbit, 18_000_000, 3100, 10_000_000_000).estimate();
        assert!(one
            .memory_parts
            .iter()
            .any(|p| p.field == "flows[0].tcp.rmem"));
    }

    /// Queues build where traffic merges or leaves a faster link; not on a sender's own
    /// access link, nor after the bottleneck.
    #[test]
    fn queues_build_where_traffic_merges_or_slows() {
        let mut s = dumbbell(3, "cubic", 50_000_000, 10_000_000, 100, 1_000_000_000);
        let q = s.queueing_channels();
        let data: Vec<bool> = (0..7).map(|l| q[2 * l]).collect();
        assert_eq!(data, [false, false, false, true, false, false, false]);
        // Two flows from one host merge on its access link.
        s.flows[1].src = 0;
        s.flows[1].path[0] = 0;
        s.flows[1].ack_path[2] = 1;
        let q = s.queueing_channels();
        assert!(q[0] && !q[2] && q[6]);
        // One flow through a link slower than the one before it: queues there only.
        let mut s = dumbbell(1, "cubic", 50_000_000, 10_000_000, 100, 1_000_000_000);
        let q = s.queueing_channels();
        assert_eq!((q[0], q[2], q[4]), (false, true, false));
        s.links[1].rate_bps = 2_000_000_000;
        let q = s.queueing_channels();
        assert_eq!((q[0], q[2], q[4]), (false, false, true));
    }

    /// The packet memory the engine measures at its peak stays within the estimate in
    /// the runs that come closest to it in the calibration (`benches/README.md`): two BBR
    /// flows overshooting a shallow buffer at 1 Gbit/s, twenty Copa flows over 50 ms.
    #[test]
    fn measured_packet_memory_stays_within_the_estimate() {
        for (n, cca, delay_ns, buffer) in [
            (2, "bbr", 2_000_000, 67),
            (20, "copa", 50_000_000, 900),
            (20, "bbr", 2_000_000, 67),
        ] {
            let s = dumbbell(n, cca, 1_000_000_000, delay_ns, buffer, 3_000_000_000);
            let est = s.estimate();
            let r = crate::Simulation::new(s).unwrap().run();
            let bound = est.packets * PACKET_STATE_BYTES;
            assert!(
                r.stats.packet_state_bytes <= bound,
                "{n} {cca}: measured {} > estimated {bound}",
                r.stats.packet_state_bytes
            );
            assert!(
                r.stats.events <= est.events,
                "{n} {cca}: {} events",
                r.stats.events
            );
        }
    }

    #[test]
    fn an_ordinary_run_fits_the_default_limits() {
        let e = spec(60_000_000_000, 10_000_000, 10, 1000).estimate();
        assert!(e.check(&Limits::default()).is_ok(), "{e:?}");
        assert_eq!(e.timeseries_rows, 6000);
    }
}
