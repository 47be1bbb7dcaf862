//! The parameters of the queue disciplines, as a link of the engine's spec takes them
//! (`LinkSpec::qdisc`, a table read by the discipline named in `LinkSpec::queue`). Each is
//! an option of `tc qdisc add ... <discipline>` in engine units (ns, bytes, bit/s), with
//! Linux's default. The packet limit is the link's `buffer_pkts` (docs/model.md, "Queue
//! disciplines"), so that a buffer swept in BDPs means the same for every discipline.

use ccfair_cc::params::{ParamError, ParamTable};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::spec::Queue;

ccfair_cc::param_table! {
    /// CoDel (`queue = "codel"`; net/sched/sch_codel.c, include/net/codel_impl.h).
    #[derive(Clone, Debug, PartialEq)]
    pub struct CodelParams {
        /// Acceptable standing sojourn time (`target`; codel_params_init: 5 ms).
        pub target_ns: u64 = 5_000_000, unit "ns";
        /// Window over which the sojourn must stay above target before CoDel drops, and the
        /// base of its control law (`interval`; 100 ms).
        pub interval_ns: u64 = 100_000_000, unit "ns";
        /// Mark ECN-capable packets CE instead of dropping them (`ecn`; off in sch_codel.c).
        pub ecn: bool = false, unit "";
        /// Mark CE every ECN-capable packet whose sojourn exceeds this (`ce_threshold`;
        /// null: off, as by default).
        pub ce_threshold_ns: Option<u64> = None, unit "ns";
        /// CoDel never drops while at most this many bytes wait (`codel_params.mtu` =
        /// `psched_mtu`: 1514 B on Ethernet).
        pub mtu_bytes: u32 = 1514, unit "B";
    }
}

/// How fq_codel maps a flow to one of its queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FqHash {
    /// As Linux: a hash of the flow (ccfair: its index and direction) with a random key
    /// drawn from the link's seeded stream, scaled to the number of queues
    /// (`fq_codel_hash`): two flows share a queue with probability 1 / `flows`.
    Perturbed,
    /// Flow and direction `k` (2 x flow index, + 1 for the ACK path) in queue `k mod
    /// flows`: no collision while fewer than `flows` / 2 flows cross the link.
    PerFlow,
}

ccfair_cc::choice!(FqHash: FqHash::Perturbed, FqHash::PerFlow);

ccfair_cc::param_table! {
    /// fq_codel (`queue = "fq_codel"`; net/sched/sch_fq_codel.c).
    #[derive(Clone, Debug, PartialEq)]
    pub struct FqCodelParams {
        /// CoDel's target, per flow queue (5 ms).
        pub target_ns: u64 = 5_000_000, unit "ns";
        /// CoDel's interval (100 ms).
        pub interval_ns: u64 = 100_000_000, unit "ns";
        /// Mark instead of dropping (`ecn`; on in sch_fq_codel.c).
        pub ecn: bool = true, unit "";
        /// CoDel's ce_threshold (null: off).
        pub ce_threshold_ns: Option<u64> = None, unit "ns";
        /// Number of flow queues (`flows`: 1024; Linux accepts 1 to 65536).
        pub flows: u32 = 1024, unit "queues";
        /// Bytes a queue may send per round of the deficit round robin (`quantum` =
        /// `psched_mtu`: 1514 B on Ethernet; at least 256).
        pub quantum_bytes: u32 = 1514, unit "B";
        /// Memory the queued packets may take, counted as `skb->truesize` (`memory_limit`:
        /// 32 MiB).
        pub memory_limit_bytes: u32 = 32 << 20, unit "B";
        /// At most this many packets dropped from the fattest queue when the queue is full
        /// (`drop_batch`: 64).
        pub drop_batch_pkts: u32 = 64, unit "packets";
        /// CoDel's mtu (1514 B).
        pub mtu_bytes: u32 = 1514, unit "B";
        /// How flows map to queues: `perturbed` (Linux) or `per_flow`.
        pub hash: FqHash = FqHash::Perturbed, unit "";
    }
}

ccfair_cc::param_table! {
    /// PIE (`queue = "pie"`; net/sched/sch_pie.c, include/net/pie.h, RFC 8033).
    #[derive(Clone, Debug, PartialEq)]
    pub struct PieParams {
        /// Target queueing delay (`target`; pie_params_init: 15 ms).
        pub target_ns: u64 = 15_000_000, unit "ns";
        /// Interval of the drop probability's update (`tupdate`: 15 ms).
        pub tupdate_ns: u64 = 15_000_000, unit "ns";
        /// Gain on the distance to the target (`alpha`: 2, i.e. 0.125).
        pub alpha_16ths: u32 = 2, unit "1/16";
        /// Gain on the delay's change (`beta`: 20, i.e. 1.25).
        pub beta_16ths: u32 = 20, unit "1/16";
        /// Mark ECN-capable packets CE instead of dropping them while the drop probability
        /// is at most 10% (`ecn`; off).
        pub ecn: bool = false, unit "";
        /// Scale the drop probability by packet size over the MTU (`bytemode`; off).
        pub bytemode: bool = false, unit "";
        /// Estimate the delay from the departure rate (Little's law) instead of packet
        /// timestamps (`dq_rate_estimator`; off).
        pub dq_rate_estimator: bool = false, unit "";
        /// Time after a quiet period during which PIE does not drop (`burst_time` set by
        /// pie_vars_init: 150 ms; not an option of Linux's).
        pub burst_allowance_ns: u64 = 150_000_000, unit "ns";
        /// The device's MTU (`psched_mtu`: 1514 B): no early drop below two of them queued.
        pub mtu_bytes: u32 = 1514, unit "B";
    }
}

ccfair_cc::param_table! {
    /// RED (`queue = "red"`; net/sched/sch_red.c, include/net/red.h; thresholds computed as
    /// `tc qdisc add ... red` does, tc/q_red.c and tc/tc_red.c).
    #[derive(Clone, Debug, PartialEq)]
    pub struct RedParams {
        /// Hard limit of the queue in bytes (tc's `limit`, required by tc; null: the link's
        /// `buffer_pkts` full-size packets of 1500 B).
        pub limit_bytes: Option<u32> = None, unit "B";
        /// Average queue below which nothing is marked (tc's `min`; null: max / 3).
        pub min_bytes: Option<u32> = None, unit "B";
        /// Average queue from which every packet is marked (tc's `max`; null: 3 x min if min
        /// is set, else limit / 4).
        pub max_bytes: Option<u32> = None, unit "B";
        /// Average packet size, for the averaging constant and idle damping (tc's `avpkt`,
        /// required by tc; 1000 B, tc's documented value).
        pub avpkt_bytes: u32 = 1000, unit "B";
        /// Burst of packets the average lets through (tc's `burst`; null: (2 x min + max) /
        /// (3 x avpkt)).
        pub burst_pkts: Option<u32> = None, unit "packets";
        /// Marking probability at the maximum threshold (tc's `probability`: 0.02).
        pub probability: f64 = 0.02, unit "fraction";
        /// Link rate the idle damping is computed for (tc's `bandwidth`, 10 Mbit/s when
        /// left out; null: the link's rate).
        pub bandwidth_bps: Option<u64> = None, unit "bit/s";
        /// Mark ECN-capable packets CE instead of dropping them (tc's `ecn`; off).
        pub ecn: bool = false, unit "";
        /// Drop above the maximum threshold even ECN-capable packets (tc's `harddrop`; off).
        pub harddrop: bool = false, unit "";
        /// Adaptive RED: adjust the probability every 500 ms (tc's `adaptive`; off).
        pub adaptive: bool = false, unit "";
    }
}

/// A link's queue discipline with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum QdiscConfig {
    /// `queue = "codel"`.
    Codel(CodelParams),
    /// `queue = "fq_codel"`.
    FqCodel(FqCodelParams),
    /// `queue = "pie"`.
    Pie(PieParams),
    /// `queue = "red"`.
    Red(RedParams),
}

/// Longest time parameter: 1000 s (CoDel's clock holds 2199 s in signed differences;
/// tc passes these in microseconds of 32 bits, up to 4295 s).
const MAX_TIME_PARAM_NS: u64 = 1_000_000_000_000;

impl QdiscConfig {
    /// The discipline `queue` names with its parameters from `table` (a JSON object, null:
    /// every default); `None` for drop-tail and netem, which take none. The error names
    /// the parameter. RED's thresholds depend on the link too: see [`QdiscConfig::check_link`].
    pub fn parse(queue: Queue, table: &Value) -> Result<Option<QdiscConfig>, ParamError> {
        fn parse<T: serde::de::DeserializeOwned + ParamTable>(v: &Value) -> Result<T, ParamError> {
            ccfair_cc::registry::parse(v)
        }
        let config = match queue {
            Queue::Droptail | Queue::Netem => {
                if !table.is_null() {
                    return Err(ParamError::new(
                        "",
                        format!(
                            "queue {} takes no parameters; they are for codel, fq_codel, pie \
                             and red",
                            queue.name()
                        ),
                    ));
                }
                return Ok(None);
            }
            Queue::Codel => QdiscConfig::Codel(parse(table)?),
            Queue::FqCodel => QdiscConfig::FqCodel(parse(table)?),
            Queue::Pie => QdiscConfig::Pie(parse(table)?),
            Queue::Red => QdiscConfig::Red(parse(table)?),
        };
        config.validate()?;
        Ok(Some(config))
    }

    /// The parameters as a complete table (every default filled in): what a normalised
    /// spec stores.
    pub fn to_table(&self) -> Value {
        let v = match self {
            QdiscConfig::Codel(p) => serde_json::to_value(p),
            QdiscConfig::FqCodel(p) => serde_json::to_value(p),
            QdiscConfig::Pie(p) => serde_json::to_value(p),
            QdiscConfig::Red(p) => serde_json::to_value(p),
        };
        v.expect("parameters serialise")
    }

    /// Range checks that serde cannot express; the error names the parameter.
    fn validate(&self) -> Result<(), ParamError> {
        let times: Vec<(&str, Option<u64>)> = match self {
            QdiscConfig::Codel(p) => vec![
                ("target_ns", Some(p.target_ns)),
                ("interval_ns", Some(p.interval_ns)),
                ("ce_threshold_ns", p.ce_threshold_ns),
            ],
            QdiscConfig::FqCodel(p) => vec![
                ("target_ns", Some(p.target_ns)),
                ("interval_ns", Some(p.interval_ns)),
                ("ce_threshold_ns", p.ce_threshold_ns),
            ],
            QdiscConfig::Pie(p) => vec![
                ("target_ns", Some(p.target_ns)),
                ("tupdate_ns", Some(p.tupdate_ns)),
                ("burst_allowance_ns", Some(p.burst_allowance_ns)),
            ],
            QdiscConfig::Red(_) => vec![],
        };
        for (name, v) in times {
            if let Some(v) = v {
                if v > MAX_TIME_PARAM_NS {
                    return Err(ParamError::new(
                        name,
                        format!("{v} is above the maximum 1e12 ns (1000 s)"),
                    ));
                }
            }
        }
        let positive: Vec<(&str, u64)> = match self {
            QdiscConfig::Codel(p) => vec![
                ("interval_ns", p.interval_ns),
                ("mtu_bytes", p.mtu_bytes as u64),
            ],
            QdiscConfig::FqCodel(p) => vec![
                ("interval_ns", p.interval_ns),
                ("mtu_bytes", p.mtu_bytes as u64),
                ("flows", p.flows as u64),
                ("memory_limit_bytes", p.memory_limit_bytes as u64),
                ("drop_batch_pkts", p.drop_batch_pkts as u64),
            ],
            QdiscConfig::Pie(p) => vec![
                ("tupdate_ns", p.tupdate_ns),
                ("mtu_bytes", p.mtu_bytes as u64),
            ],
            QdiscConfig::Red(p) => vec![("avpkt_bytes", p.avpkt_bytes as u64)],
        };
        for (name, v) in positive {
            if v == 0 {
                return Err(ParamError::new(name, "0 must be > 0"));
            }
        }
        match self {
            QdiscConfig::FqCodel(p) => {
                // fq_codel_change: flows in 1..=65536, quantum raised to 256, memory limit
                // at most 2^31.
                if p.flows > 65_536 {
                    return Err(ParamError::new(
                        "flows",
                        format!("{} is above Linux's maximum 65536", p.flows),
                    ));
                }
                if p.quantum_bytes < 256 {
                    return Err(ParamError::new(
                        "quantum_bytes",
                        format!(
                            "{} is below Linux's minimum 256 (fq_codel_change raises it)",
                            p.quantum_bytes
                        ),
                    ));
                }
                if p.memory_limit_bytes > 1 << 31 {
                    return Err(ParamError::new(
                        "memory_limit_bytes",
                        format!("{} is above Linux's maximum 2^31", p.memory_limit_bytes),
                    ));
                }
            }
            QdiscConfig::Pie(p) => {
                // tc/q_pie.c: alpha and beta in 0..=32.
                for (name, v) in [("alpha_16ths", p.alpha_16ths), ("beta_16ths", p.beta_16ths)] {
                    if v > 32 {
                        return Err(ParamError::new(
                            name,
                            format!("{v} is not in 0..=32 (tc's range)"),
                        ));
                    }
                }
            }
            QdiscConfig::Red(p) => {
                // tc sends probability x 2^32 as a u32 (TCA_RED_MAX_P).
                if !(p.probability > 0.0 && p.probability < 1.0) {
                    return Err(ParamError::new(
                        "probability",
                        format!("{} is not in (0, 1)", p.probability),
                    ));
                }
                if p.limit_bytes == Some(0) {
                    return Err(ParamError::new("limit_bytes", "0 must be > 0"));
                }
                if p.bandwidth_bps == Some(0) {
                    return Err(ParamError::new("bandwidth_bps", "0 must be > 0"));
                }
            }
            QdiscConfig::Codel(_) => {}
        }
        Ok(())
    }

    /// Checks that need the link: RED's thresholds as tc computes them from the buffer and
    /// the rate (`RedParams::consts`).
    pub fn check_link(&self, buffer_pkts: u32, rate_bps: u64) -> Result<(), ParamError> {
        match self {
            QdiscConfig::Red(p) => p.consts(buffer_pkts, rate_bps).map(|_| ()),
            _ => Ok(()),
        }
    }
}

/// The normalised parameter table of `queue` (every default filled in), from a table
/// (null: every default); null for drop-tail and netem. For the Python layer, which
/// stores it in the normalised spec.
pub fn normalize(queue: Queue, table: &Value) -> Result<Value, ParamError> {
    Ok(QdiscConfig::parse(queue, table)?.map_or(Value::Null, |c| c.to_table()))
}

/// `normalize` for a queue named as a spec names it (`"fq_codel"`); an unknown name is an
/// error on the empty key, listing the queues there are.
pub fn normalize_named(queue: &str, table: &Value) -> Result<Value, ParamError> {
    let queue: Queue = serde_json::from_value(Value::String(queue.to_string())).map_err(|_| {
        ParamError::new(
            "",
            format!("{queue:?} is not a queue; queues: droptail, netem, codel, fq_codel, pie, red"),
        )
    })?;
    normalize(queue, table)
}

/// Every queue discipline's parameters with their kinds, units, docs and defaults, as JSON:
/// `{"codel": {"params": [{name, kind, unit, doc}], "defaults": {...}}, ...}` (for
/// `ccfair` to list and document them).
pub fn metadata_json() -> String {
    fn entry<P: ParamTable + Default + Serialize>() -> Value {
        serde_json::json!({
            "params": P::params(),
            "defaults": serde_json::to_value(P::default()).expect("parameters serialise"),
        })
    }
    serde_json::json!({
        "codel": entry::<CodelParams>(),
        "fq_codel": entry::<FqCodelParams>(),
        "pie": entry::<PieParams>(),
        "red": entry::<RedParams>(),
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_are_linux_defaults() {
        let Some(QdiscConfig::FqCodel(p)) =
            QdiscConfig::parse(Queue::FqCodel, &Value::Null).unwrap()
        else {
            panic!("fq_codel")
        };
        assert_eq!(
            (p.target_ns, p.interval_ns, p.ecn, p.flows, p.quantum_bytes),
            (5_000_000, 100_000_000, true, 1024, 1514)
        );
        assert_eq!((p.memory_limit_bytes, p.drop_batch_pkts), (32 << 20, 64));
        let Some(QdiscConfig::Codel(c)) = QdiscConfig::parse(Queue::Codel, &json!({})).unwrap()
        else {
            panic!("codel")
        };
        assert!(!c.ecn && c.ce_threshold_ns.is_none());
        let t = normalize(Queue::Pie, &json!({"ecn": true})).unwrap();
        assert_eq!(t["ecn"], json!(true));
        assert_eq!(t["alpha_16ths"], json!(2));
        assert_eq!(t["beta_16ths"], json!(20));
        assert_eq!(
            normalize(Queue::Droptail, &Value::Null).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn errors_name_the_parameter() {
        let e = QdiscConfig::parse(Queue::Codel, &json!({"target": 5})).unwrap_err();
        assert_eq!(e.key, "target");
        assert!(e.message.contains("target_ns"), "{e}");
        let e = QdiscConfig::parse(Queue::FqCodel, &json!({"flows": 0})).unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.message.as_str()),
            ("flows", "0 must be > 0")
        );
        let e = QdiscConfig::parse(Queue::FqCodel, &json!({"quantum_bytes": 100})).unwrap_err();
        assert_eq!(e.key, "quantum_bytes");
        let e = QdiscConfig::parse(Queue::Pie, &json!({"beta_16ths": 33})).unwrap_err();
        assert_eq!(e.key, "beta_16ths");
        let e = QdiscConfig::parse(Queue::Red, &json!({"probability": 1.0})).unwrap_err();
        assert_eq!(e.key, "probability");
        let e = QdiscConfig::parse(Queue::Codel, &json!({"interval_ns": "1s"})).unwrap_err();
        assert_eq!(e.key, "interval_ns");
        let e = QdiscConfig::parse(Queue::Droptail, &json!({"ecn": true})).unwrap_err();
        assert!(e.message.contains("takes no parameters"), "{e}");
        let e = QdiscConfig::parse(Queue::FqCodel, &json!({"hash": "random"})).unwrap_err();
        assert_eq!(e.key, "hash");
    }
}
