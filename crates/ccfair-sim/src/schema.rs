//! The results schema, defined once: every column of every results table, with its type and
//! meaning, in the order the tables store them (docs/results.md).
//!
//! Engine columns come from the typed rows of [`crate::record`] (both backends fill the
//! same rows); columns that only the Python layer knows (names, the normalised spec,
//! provenance) are declared here with `by: By::Python`. Algorithm internals are one column
//! each for every name any registered algorithm reports ([`ccfair_cc::internal_names`]),
//! so every run's file has the same columns and a plain `pandas.read_parquet(DIR/table)`
//! returns all of them. Python reads this schema (`ccfair._core.schema()`) and conforms
//! every table to it before writing.
//!
//! Naming convention: snake_case; the unit is the last part of the name (`_s` time points
//! and run durations, `_ms` delays and RTTs, `_ns` exact engine time, `_mbps` rates in
//! Mbit/s, `_pkts`, `_bytes`, `_count` events, `_frac` fractions in [0, 1], `_gain`
//! multipliers); identifiers are `run_id` and the bare entity (`flow`, `link`) with
//! `<entity>_name` beside it; labels and 0/1 flags have no unit.

use crate::record::{FlowSample, FlowSummary, LinkSample, LinkSummary};

/// Storage type of a column (Parquet: int64, float64, string, bool).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// Integer (stored as int64; the engine's counters are u64).
    I64,
    /// Floating point (NaN for "not available").
    F64,
    /// Text.
    Str,
    /// Boolean.
    Bool,
}

impl Dtype {
    /// The Parquet/Arrow type name (`"int64"`, `"float64"`, `"string"`, `"bool"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Dtype::I64 => "int64",
            Dtype::F64 => "float64",
            Dtype::Str => "string",
            Dtype::Bool => "bool",
        }
    }
}

/// Who fills a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// The recorder of either backend.
    Engine,
    /// The Python layer (names, spec, provenance, derived shares).
    Python,
}

/// One column of a results table.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// Column name, with its unit as a suffix (`goodput_mbps`).
    pub name: String,
    /// Storage type.
    pub dtype: Dtype,
    /// Who fills it.
    pub by: By,
    /// One-line description (what docs/results.md lists).
    pub doc: String,
}

/// Bumped whenever a column is added, renamed, removed or changes meaning (every file of a
/// table has exactly the schema's columns, so a plain read of a directory needs one
/// version); recorded in every run (`runs.schema_version`) so that old directories are
/// recognised. 3: the BPF programs' counters (`BPF_COUNTERS`). 4: queue disciplines
/// (`links.mark_pkts`; `link_summary.queue`, sojourn percentiles, AQM drops and marks,
/// fq_codel's statistics), ECN's per-flow columns and DCTCP's internals.
pub const SCHEMA_VERSION: u32 = 4;

/// The tables of a results directory, in writing order (`runs` last: its file marks a
/// finished run).
pub const TABLES: [&str; 5] = ["flows", "timeseries", "links", "link_summary", "runs"];

type Decl = (&'static str, Dtype, &'static str);

const FLOWS_HEAD: &[Decl] = &[
    (
        "run_id",
        Dtype::Str,
        "the run (content hash of the normalised spec and backend)",
    ),
    ("flow_name", Dtype::Str, "the flow's name in the spec"),
    ("cca", Dtype::Str, "its congestion control algorithm"),
    ("src", Dtype::Str, "sending node"),
    ("dst", Dtype::Str, "receiving node"),
    (
        "node_path",
        Dtype::Str,
        "nodes of the data path, `>`-separated",
    ),
];
const FLOWS_TAIL: &[Decl] = &[
    (
        "cca_params_json",
        Dtype::Str,
        "the algorithm's normalised parameters (JSON)",
    ),
    (
        "start_s",
        Dtype::F64,
        "effective start: nominal start plus seeded start jitter",
    ),
    (
        "base_rtt_ms",
        Dtype::F64,
        "round-trip propagation delay of the data and ACK paths",
    ),
    (
        "bdp_pkts",
        Dtype::F64,
        "bandwidth-delay product of its path (1500 B packets)",
    ),
    (
        "share_frac",
        Dtype::F64,
        "its share of all flows' goodput in the window",
    ),
];
const TS_HEAD: &[Decl] = &[
    ("run_id", Dtype::Str, "the run"),
    ("flow_name", Dtype::Str, "the flow's name"),
];
const LINKS_HEAD: &[Decl] = &[
    ("run_id", Dtype::Str, "the run"),
    ("link_name", Dtype::Str, "the link's name"),
];
const LS_TAIL: &[Decl] = &[(
    "buffer_bdp",
    Dtype::F64,
    "the buffer as a multiple of its reference flow's BDP (NaN without a reference)",
)];
const RUNS: &[Decl] = &[
    ("run_id", Dtype::Str, "content hash of the normalised spec and backend"),
    ("schema_version", Dtype::I64, "version of this schema the run was written with"),
    ("scenario", Dtype::Str, "the scenario's name"),
    ("backend", Dtype::Str, "`sim` or `kernel`"),
    ("seed", Dtype::I64, "the scenario seed"),
    ("duration_s", Dtype::F64, "simulated (or real) duration"),
    ("measure_start_s", Dtype::F64, "start of the measurement window"),
    ("measure_end_s", Dtype::F64, "end of the measurement window"),
    ("n_flows", Dtype::I64, "number of flows"),
    ("n_links", Dtype::I64, "number of links"),
    ("spec_json", Dtype::Str, "the normalised scenario (JSON, every default filled in)"),
    ("point_key", Dtype::Str, "hash of the normalised spec without its seed: runs with the same key are repetitions of one point"),
    ("ccfair_version", Dtype::Str, "version of ccfair"),
    ("git_revision", Dtype::Str, "git revision ccfair was built from"),
    ("host", Dtype::Str, "machine name"),
    ("machine_release", Dtype::Str, "Linux release of the machine that ran ccfair (the modelled hosts' kernel is the spec's `kernel`)"),
    ("python", Dtype::Str, "Python version"),
    ("started_at", Dtype::Str, "start time (UTC, ISO 8601)"),
    ("wall_time_s", Dtype::F64, "wall-clock time of the run"),
    ("engine_events", Dtype::I64, "events executed (simulator) or packet events (kernel forwarder)"),
    ("engine_packet_hops", Dtype::I64, "packets serialised on a link, one per packet per hop"),
    ("reliable", Dtype::Bool, "false when a kernel run exceeded a self-check bound (always true on the simulator)"),
    ("selfcheck_flags", Dtype::Str, "why a run is unreliable, `; `-separated (empty when reliable)"),
    ("emu_lateness_p50_us", Dtype::F64, "kernel: median lateness of the forwarder's packet events (NaN on the simulator)"),
    ("emu_lateness_p99_us", Dtype::F64, "kernel: 99th percentile lateness"),
    ("emu_lateness_p999_us", Dtype::F64, "kernel: 99.9th percentile lateness"),
    ("emu_lateness_max_us", Dtype::F64, "kernel: largest lateness"),
    ("emu_cpu_frac", Dtype::F64, "kernel: forwarder thread CPU time over wall time"),
    ("emu_process_cpu_frac", Dtype::F64, "kernel: whole process CPU time over wall time"),
    ("emu_rate_ratio_min_frac", Dtype::F64, "kernel: lowest achieved over configured link rate"),
    ("emu_missed_samples_count", Dtype::F64, "kernel: sampling grid points skipped"),
    ("emu_sampling_p99_us", Dtype::F64, "kernel: 99th percentile lateness of TCP_INFO samples"),
    ("emu_host_tx_drops_count", Dtype::F64, "kernel: packets the hosts' devices dropped"),
    ("kernel_hz", Dtype::F64, "kernel: CONFIG_HZ of the running kernel"),
    ("selfcheck_json", Dtype::Str, "kernel: everything the emulator measured (JSON; empty on the simulator)"),
];

/// Kernel-only Linux counters in the flows table (NaN on the simulator).
pub const LINUX_COUNTERS: &[(&str, &str)] = &[
    ("linux_data_segs_out_pkts", "tcpi_data_segs_out: data segments sent, retransmissions included"),
    ("linux_retrans_bytes", "tcpi_bytes_retrans: bytes retransmitted"),
    ("linux_rto_recovery_count", "tcpi_total_rto_recoveries: RTO recoveries"),
    ("linux_dsack_dup_count", "tcpi_dsack_dups: duplicate segments reported by D-SACK"),
    ("linux_reord_seen_count", "tcpi_reord_seen: reordering events"),
    ("linux_host_counters_shared", "1 when the host's TcpExt counters (tlp_count, recovery_count, undo_count) are shared with other flows of that host, else 0"),
];

/// Kernel-only counters of ccfair's BPF congestion controls (bpf/, docs/kernel.md) in the
/// flows table: NaN on the simulator and for flows that run another program. The counters
/// the BPF programs share with the simulator's algorithms go to those algorithms' columns.
pub const BPF_COUNTERS: &[(&str, &str)] = &[(
    "bpf_copa_filter_overflow_count",
    "BPF Copa: samples its windowed min/max filters (rings of 512 entries, bpf/ccfair_cc.h) folded into the newest entry because a ring was full; 0 means its filters held every sample as the simulator's do",
)];

fn decl(d: &[Decl], by: By) -> impl Iterator<Item = Column> + '_ {
    d.iter().map(move |&(name, dtype, doc)| Column {
        name: name.into(),
        dtype,
        by,
        doc: doc.into(),
    })
}

/// A time-series internal's stored name and the divisor to its table unit: the algorithms
/// report µs and bit/s (`_us`, `_bps`); tables store ms and Mbit/s like every other column.
pub fn table_unit(name: &str) -> (String, f64) {
    if let Some(stem) = name.strip_suffix("_us") {
        (format!("{stem}_ms"), 1e3)
    } else if let Some(stem) = name.strip_suffix("_bps") {
        (format!("{stem}_mbps"), 1e6)
    } else {
        (name.to_string(), 1.0)
    }
}

/// The columns of one table, in storage order.
pub fn columns(table: &str) -> Vec<Column> {
    let (metrics, counters) = ccfair_cc::internal_names();
    let internal = |name: &str, what: &str| {
        Column {
        name: table_unit(name).0,
        dtype: Dtype::F64,
        by: By::Engine,
        doc: format!("{what} of the algorithm named by its prefix (NaN for other algorithms' flows and where the backend cannot read it)"),
    }
    };
    match table {
        "flows" => decl(FLOWS_HEAD, By::Python)
            .chain(FlowSummary::columns())
            .chain(decl(FLOWS_TAIL, By::Python))
            .chain(LINUX_COUNTERS.iter().map(|&(name, doc)| Column {
                name: name.into(),
                dtype: Dtype::F64,
                by: By::Engine,
                doc: format!("kernel: {doc} (NaN on the simulator)"),
            }))
            .chain(BPF_COUNTERS.iter().map(|&(name, doc)| Column {
                name: name.into(),
                dtype: Dtype::F64,
                by: By::Engine,
                doc: format!("kernel: {doc} (NaN on the simulator and for other programs)"),
            }))
            .chain(counters.iter().map(|n| internal(n, "counter")))
            .collect(),
        "timeseries" => decl(TS_HEAD, By::Python)
            .chain(FlowSample::columns())
            .chain(metrics.iter().map(|n| internal(n, "internal")))
            .collect(),
        "links" => decl(LINKS_HEAD, By::Python)
            .chain(LinkSample::columns())
            .collect(),
        "link_summary" => decl(LINKS_HEAD, By::Python)
            .chain(LinkSummary::columns())
            .chain(decl(LS_TAIL, By::Python))
            .collect(),
        "runs" => decl(RUNS, By::Python).collect(),
        _ => Vec::new(),
    }
}

/// The whole schema as JSON (what `ccfair._core.schema()` returns):
/// `{"version": 4, "tables": {table: [{name, dtype, by, doc}]}}`.
pub fn schema_json() -> String {
    let tables: serde_json::Map<String, serde_json::Value> = TABLES
        .iter()
        .map(|t| {
            let cols: Vec<serde_json::Value> = columns(t)
                .into_iter()
                .map(|c| {
                    serde_json::json!({
                        "name": c.name,
                        "dtype": c.dtype.as_str(),
                        "by": if c.by == By::Engine { "engine" } else { "python" },
                        "doc": c.doc,
                    })
                })
                .collect();
            (t.to_string(), serde_json::Value::Array(cols))
        })
        .collect();
    serde_json::json!({"version": SCHEMA_VERSION, "tables": tables}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_names_are_unique_snake_case() {
        for t in TABLES {
            let cols = columns(t);
            assert!(!cols.is_empty(), "{t}");
            let mut seen = std::collections::HashSet::new();
            for c in &cols {
                assert!(seen.insert(c.name.clone()), "{t}: {} twice", c.name);
                assert!(
                    c.name
                        .chars()
                        .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_'),
                    "{t}: {}",
                    c.name
                );
                assert!(!c.doc.is_empty(), "{t}: {} undocumented", c.name);
            }
        }
    }

    #[test]
    fn internals_are_stored_in_table_units() {
        assert_eq!(table_unit("bbr_rtprop_us"), ("bbr_rtprop_ms".into(), 1e3));
        assert_eq!(
            table_unit("bbr_btl_bw_bps"),
            ("bbr_btl_bw_mbps".into(), 1e6)
        );
        assert_eq!(table_unit("cubic_k_s"), ("cubic_k_s".into(), 1.0));
        let ts = columns("timeseries");
        assert!(ts.iter().any(|c| c.name == "bbr_rtprop_ms"));
        assert!(ts.iter().any(|c| c.name == "cubic_wmax_pkts"));
        assert!(ts.iter().any(|c| c.name == "copa_delta"));
        assert!(!ts
            .iter()
            .any(|c| c.name.ends_with("_us") || c.name.ends_with("_bps")));
    }
}
