//! Per-packet traces of chosen flows: every packet of the flow offered to a channel
//! (accepted, dropped by the full buffer, lost on the wire) and every arrival at a
//! channel's far end, with the same columns on both backends (the simulator records in its
//! event loop, the kernel backend's forwarder in its own), so that a mechanism can be
//! followed hop by hop on both (docs/results.md, "Traces").
//!
//! A diagnostic: off unless a run asks for it (`RunSpec::trace_flows`). Rows are appended
//! to growing vectors, so a trace allocates as it grows; the event loop without a trace
//! does one bounds check per packet-hop.

use crate::table::{ColumnData, Table};

/// What happened to a packet at a channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// Accepted by the buffer (queued or in service).
    Enqueue,
    /// Dropped: the drop-tail buffer was full.
    DropQueue,
    /// Accepted, serialised, then lost on the wire (random loss).
    DropWire,
    /// Dropped by a queue discipline's decision (CoDel, PIE, RED).
    DropAqm,
    /// Marked CE by a queue discipline.
    MarkCe,
    /// Reached the channel's far end.
    Arrive,
}

impl TraceEvent {
    /// The event's name in the trace table (`"drop_queue"`).
    pub fn as_str(self) -> &'static str {
        match self {
            TraceEvent::Enqueue => "enqueue",
            TraceEvent::DropQueue => "drop_queue",
            TraceEvent::DropWire => "drop_wire",
            TraceEvent::DropAqm => "drop_aqm",
            TraceEvent::MarkCe => "mark_ce",
            TraceEvent::Arrive => "arrive",
        }
    }
}

/// One packet of a traced flow at one channel.
#[derive(Clone, Copy, Debug)]
pub struct TraceRow {
    /// When it happened, ns.
    pub t_ns: u64,
    /// The flow's index.
    pub flow: u32,
    /// The channel: link `channel / 2`, direction a to b when even, b to a when odd.
    pub channel: u32,
    /// Position on the flow's route (0 = the first link).
    pub hop: u16,
    /// What happened to the packet.
    pub event: TraceEvent,
    /// "data", "ack", "syn", "synack", "handshake_ack".
    pub kind: &'static str,
    /// Data: the payload's first byte; ACKs: the cumulative acknowledgment, both in bytes
    /// from the start of the flow's data (the kernel backend subtracts the ISN).
    pub seq_bytes: u64,
    /// ACKs and SYN-ACK: the receive window advertised, in bytes (0 for other packets).
    pub window_bytes: u32,
    /// Bytes on the wire.
    pub wire_bytes: u32,
}

/// The trace of a run: which flows are traced and what was recorded.
#[derive(Default)]
pub struct Trace {
    traced: Vec<bool>,
    rows: Vec<TraceRow>,
}

impl Trace {
    /// A trace of the flows in `flows` (indices) among `n_flows`; `None` if none is traced.
    pub fn new(n_flows: usize, flows: &[usize]) -> Option<Self> {
        if flows.is_empty() {
            return None;
        }
        let mut traced = vec![false; n_flows];
        for &f in flows {
            if f < n_flows {
                traced[f] = true;
            }
        }
        Some(Trace {
            traced,
            rows: Vec::new(),
        })
    }

    /// Whether `flow` is traced.
    pub fn is_traced(&self, flow: u32) -> bool {
        self.traced.get(flow as usize).copied().unwrap_or(false)
    }

    /// Keep `row` if its flow is traced.
    pub fn record(&mut self, row: TraceRow) {
        if self.is_traced(row.flow) {
            self.rows.push(row);
        }
    }

    /// The trace as a table: `t_ns`, `flow`, `link`, `direction`, `hop`, `event`, `kind`,
    /// `seq_bytes`, `window_bytes`, `wire_bytes`.
    pub fn into_table(self) -> Table {
        let r = &self.rows;
        let mut t = Table::default();
        t.push("t_ns", ColumnData::U64(r.iter().map(|x| x.t_ns).collect()));
        t.push(
            "flow",
            ColumnData::U64(r.iter().map(|x| x.flow as u64).collect()),
        );
        t.push(
            "link",
            ColumnData::U64(r.iter().map(|x| (x.channel / 2) as u64).collect()),
        );
        t.push(
            "direction",
            ColumnData::Str(
                r.iter()
                    .map(|x| if x.channel % 2 == 0 { "ab" } else { "ba" })
                    .collect(),
            ),
        );
        t.push(
            "hop",
            ColumnData::U64(r.iter().map(|x| x.hop as u64).collect()),
        );
        t.push(
            "event",
            ColumnData::Str(r.iter().map(|x| x.event.as_str()).collect()),
        );
        t.push("kind", ColumnData::Str(r.iter().map(|x| x.kind).collect()));
        t.push(
            "seq_bytes",
            ColumnData::U64(r.iter().map(|x| x.seq_bytes).collect()),
        );
        t.push(
            "window_bytes",
            ColumnData::U64(r.iter().map(|x| x.window_bytes as u64).collect()),
        );
        t.push(
            "wire_bytes",
            ColumnData::U64(r.iter().map(|x| x.wire_bytes as u64).collect()),
        );
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_traced_flows_are_recorded() {
        assert!(Trace::new(3, &[]).is_none());
        let mut t = Trace::new(3, &[1]).unwrap();
        for flow in 0..3 {
            t.record(TraceRow {
                t_ns: 5,
                flow,
                channel: 3,
                hop: 0,
                event: TraceEvent::DropQueue,
                kind: "data",
                seq_bytes: 1448,
                window_bytes: 0,
                wire_bytes: 1500,
            });
        }
        let table = t.into_table();
        assert_eq!(table.n_rows(), 1);
        assert_eq!(table.u64("flow").unwrap(), &[1]);
        assert_eq!(table.u64("link").unwrap(), &[1]);
    }
}
