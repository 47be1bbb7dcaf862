//! The algorithms, each described once: [`ALGORITHMS`] lists the [`Algorithm`] entry every
//! module declares next to its code (name, family, Linux module, parameter table, how to
//! normalise parameters and build an instance). Everything else reads this table: the
//! simulator builds algorithms through it, the results schema takes the internals' names
//! from it, and the Python layer gets it as metadata ([`metadata_json`]): `ccfair ccas`,
//! the model table (which algorithms are loss-based), the kernel backend (which Linux module
//! runs an algorithm) and the figures (an algorithm's colour) read it there.
//!
//! Parameters arrive as JSON objects (from the scenario spec). Unknown keys and wrong types
//! are errors that name the key; missing keys take the documented defaults. The normalised
//! table (all keys, defaults filled in) is what results record.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::params::{ParamDoc, ParamError, ParamTable};
use crate::{bbr, copa, cubic, dctcp, reno, CongestionControl};

/// Every algorithm, in the order of `ccfair ccas` and of the results schema's columns.
/// Adding an algorithm: its module declares `pub const ALGORITHM`, and one line here.
pub const ALGORITHMS: &[Algorithm] = &[
    reno::ALGORITHM,
    cubic::ALGORITHM,
    copa::ALGORITHM,
    bbr::ALGORITHM,
    dctcp::ALGORITHM,
];

/// How an algorithm decides how much to send (the usual families of the literature).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Reacts to packet loss (Reno, CUBIC).
    LossBased,
    /// Reacts to queueing delay (Copa, Vegas).
    DelayBased,
    /// Paces at a model of the path (BBR's bottleneck bandwidth and RTprop).
    ModelBased,
}

/// Builds an instance from a parameter table and the seed of the algorithm's randomness.
pub type BuildFn = fn(&Value, u64) -> Result<Box<dyn CongestionControl>, ParamError>;

/// One algorithm: what it is and how to make it.
pub struct Algorithm {
    /// Name in `flows[].cca` (and `CongestionControl::name`).
    pub name: &'static str,
    /// One sentence: what it does and the source it follows.
    pub summary: &'static str,
    /// How it decides how much to send (loss-, delay- or model-based).
    pub family: Family,
    /// The Linux module of the same algorithm (`tcp_available_congestion_control`), which
    /// the kernel backend runs when the flow's parameters are the defaults; None if Linux
    /// has none.
    pub linux_name: Option<&'static str>,
    /// The parameter table (types, units, docs), in normalised-table order.
    pub params: fn() -> Vec<ParamDoc>,
    /// Check parameters and return the full table with every default filled in.
    pub normalize: fn(&Value) -> Result<Value, ParamError>,
    /// Build an instance; `seed` feeds the algorithm's own randomness.
    pub build: BuildFn,
}

impl Algorithm {
    /// A fresh instance with default parameters (every table has defaults for all keys).
    fn default_instance(&self) -> Box<dyn CongestionControl> {
        (self.build)(&Value::Null, 0).expect("every algorithm builds with its defaults")
    }

    /// Whether the algorithm has TCP pace its packets (`wants_pacing`, Linux
    /// `SK_PACING_NEEDED`): then its sender transmits from a pacing timer, not in reaction
    /// to ACKs.
    pub fn paces(&self) -> bool {
        self.default_instance().wants_pacing()
    }
}

/// What can go wrong naming or configuring an algorithm.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CcaError {
    /// `flows[].cca` names no algorithm of [`ALGORITHMS`]; the message lists the known names.
    #[error("unknown congestion control {0:?}; known: {known}", known = known_algorithms().join(", "))]
    UnknownAlgorithm(String),
    /// A parameter is invalid; `error.key` names it within the algorithm's table.
    #[error("{algorithm} parameter {error}")]
    BadParams {
        /// The algorithm whose table was checked.
        algorithm: &'static str,
        /// The parameter check's error, naming the key.
        error: ParamError,
    },
}

/// The entry of `name`.
///
/// ```
/// let cubic = ccfair_cc::algorithm("cubic").unwrap();
/// assert_eq!(cubic.linux_name, Some("cubic"));
/// assert!(!cubic.paces());
/// assert!(ccfair_cc::algorithm("bbr").unwrap().paces());
/// let e = ccfair_cc::algorithm("cubik").err().unwrap();
/// assert_eq!(
///     e.to_string(),
///     "unknown congestion control \"cubik\"; known: reno, cubic, copa, bbr, dctcp"
/// );
/// ```
pub fn algorithm(name: &str) -> Result<&'static Algorithm, CcaError> {
    ALGORITHMS
        .iter()
        .find(|a| a.name == name)
        .ok_or_else(|| CcaError::UnknownAlgorithm(name.to_string()))
}

/// Names accepted in `flows[].cca`, in registry order.
///
/// ```
/// assert_eq!(
///     ccfair_cc::known_algorithms(),
///     ["reno", "cubic", "copa", "bbr", "dctcp"]
/// );
/// ```
pub fn known_algorithms() -> Vec<&'static str> {
    ALGORITHMS.iter().map(|a| a.name).collect()
}

/// Parse a parameter struct declared with [`crate::param_table!`]: keys checked against its
/// table, values by serde, errors naming the key.
pub fn parse<P: DeserializeOwned + ParamTable>(params: &Value) -> Result<P, ParamError> {
    let keys: Vec<&str> = P::params().iter().map(|p| p.name).collect();
    crate::params::parse_table(params, &keys)
}

/// A parameter struct as the normalised JSON table.
pub fn to_table<P: Serialize>(p: &P) -> Result<Value, ParamError> {
    serde_json::to_value(p).map_err(|e| ParamError::new("", e.to_string()))
}

/// Build an algorithm. `seed` feeds the algorithm's own randomness (derived by the caller
/// from the scenario seed and the flow id).
///
/// ```
/// use ccfair_cc::{CcaError, CongestionControl, TcpSock};
/// use serde_json::json;
///
/// let mut cc = ccfair_cc::build("reno", &json!({}), 0).unwrap();
/// let mut tp = TcpSock::new(1448, 10, 1000);
/// cc.init(&mut tp);
/// // A loss halves Reno's window (`tcp_reno_ssthresh`).
/// assert_eq!(cc.ssthresh(&mut tp), 5);
///
/// // Parameters are checked: the error names the algorithm and the key.
/// let e = ccfair_cc::build("cubic", &json!({"beta": 2000}), 0).err().unwrap();
/// assert!(matches!(&e, CcaError::BadParams { algorithm: "cubic", error } if error.key == "beta"));
/// ```
pub fn build(
    name: &str,
    params: &Value,
    seed: u64,
) -> Result<Box<dyn CongestionControl>, CcaError> {
    let a = algorithm(name)?;
    (a.build)(params, seed).map_err(|error| CcaError::BadParams {
        algorithm: a.name,
        error,
    })
}

/// Validate parameters and return the full table with defaults filled in (what results
/// record as a flow's `cca_params`, so that a run says exactly what it ran).
///
/// ```
/// use serde_json::json;
///
/// let table = ccfair_cc::normalize_params("cubic", &json!({"beta": 800})).unwrap();
/// assert_eq!(table["beta"], 800);
/// assert_eq!(table["hystart"], true); // a default, filled in
/// // Unknown keys are refused, naming the key.
/// let e = ccfair_cc::normalize_params("cubic", &json!({"bta": 800})).unwrap_err();
/// assert!(e.to_string().contains("bta"), "{e}");
/// ```
pub fn normalize_params(name: &str, params: &Value) -> Result<Value, CcaError> {
    let a = algorithm(name)?;
    (a.normalize)(params).map_err(|error| CcaError::BadParams {
        algorithm: a.name,
        error,
    })
}

/// The internals every registered algorithm reports: the names of its time-series metrics
/// (`sample_metrics`) and of its summary counters (`summary_counters`), each list in
/// registry order without repeats. Results store every name as a column in every run (NaN
/// for flows of other algorithms), so that a table read from a directory that mixes
/// algorithms has every column. The contract says an algorithm reports the same names over
/// its whole life, so a fresh instance with default parameters reports them all.
pub fn internal_names() -> (Vec<&'static str>, Vec<&'static str>) {
    let mut metrics: Vec<&'static str> = Vec::new();
    let mut counters: Vec<&'static str> = Vec::new();
    for a in ALGORITHMS {
        let (m, c) = internals_of(a);
        for (out, names) in [(&mut metrics, m), (&mut counters, c)] {
            for n in names {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        }
    }
    (metrics, counters)
}

/// The metric and counter names of one algorithm (a fresh instance with defaults).
fn internals_of(a: &Algorithm) -> (Vec<&'static str>, Vec<&'static str>) {
    let tp = crate::sock::TcpSock::new(1448, 10, 1000);
    let cc = a.default_instance();
    let mut buf = Vec::new();
    cc.sample_metrics(&tp, &mut buf);
    let metrics = buf.iter().map(|&(n, _)| n).collect();
    buf.clear();
    cc.summary_counters(&tp, &mut buf);
    let counters = buf.iter().map(|&(n, _)| n).collect();
    (metrics, counters)
}

/// One algorithm's metadata as exported to Python (`ccfair._core.algorithms()`).
#[derive(Serialize)]
struct Metadata {
    name: &'static str,
    summary: &'static str,
    family: Family,
    /// `wants_pacing()`: the algorithm sets the pacing rate and TCP paces (SK_PACING_NEEDED).
    paces: bool,
    /// `has_cong_control()`: it replaces PRR and `cong_avoid` with `cong_control`.
    cong_control: bool,
    linux_name: Option<&'static str>,
    params: Vec<ParamMetadata>,
    metrics: Vec<&'static str>,
    counters: Vec<&'static str>,
}

#[derive(Serialize)]
struct ParamMetadata {
    #[serde(flatten)]
    doc: ParamDoc,
    /// The normalised default (variant- and profile-dependent options resolved).
    default: Value,
}

/// Every algorithm's metadata as JSON: name, summary, family, whether it paces and uses
/// `cong_control`, its Linux module, its parameters (type, unit, default, doc) and the
/// names of its internals.
pub fn metadata_json() -> String {
    let all: Vec<Metadata> = ALGORITHMS
        .iter()
        .map(|a| {
            let cc = a.default_instance();
            let defaults = (a.normalize)(&Value::Null).expect("defaults normalise");
            let (metrics, counters) = internals_of(a);
            Metadata {
                name: a.name,
                summary: a.summary,
                family: a.family,
                paces: a.paces(),
                cong_control: cc.has_cong_control(),
                linux_name: a.linux_name,
                params: (a.params)()
                    .into_iter()
                    .map(|doc| ParamMetadata {
                        default: defaults.get(doc.name).cloned().unwrap_or(Value::Null),
                        doc,
                    })
                    .collect(),
                metrics,
                counters,
            }
        })
        .collect();
    serde_json::to_string(&all).expect("metadata serialises")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_entry_builds_under_its_own_name_and_documents_every_key() {
        for a in ALGORITHMS {
            assert_eq!(a.default_instance().name(), a.name);
            let defaults = (a.normalize)(&Value::Null).unwrap();
            let keys: Vec<&str> = defaults
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            let documented: Vec<&str> = (a.params)().iter().map(|p| p.name).collect();
            let mut sorted = documented.clone();
            sorted.sort();
            let mut keys_sorted = keys.clone();
            keys_sorted.sort();
            assert_eq!(keys_sorted, sorted, "{}", a.name);
            for p in (a.params)() {
                assert!(!p.doc.is_empty(), "{}.{} has no doc", a.name, p.name);
            }
        }
        let names = known_algorithms();
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(names, unique);
    }

    #[test]
    fn metadata_names_families_pacing_and_linux_modules() {
        let v: Value = serde_json::from_str(&metadata_json()).unwrap();
        let by = |n: &str| {
            v.as_array()
                .unwrap()
                .iter()
                .find(|a| a["name"] == n)
                .unwrap()
        };
        assert_eq!(by("cubic")["family"], "loss-based");
        assert_eq!(by("cubic")["paces"], false);
        assert_eq!(by("cubic")["linux_name"], "cubic");
        assert_eq!(by("bbr")["family"], "model-based");
        assert_eq!(by("bbr")["paces"], true);
        assert_eq!(by("bbr")["cong_control"], true);
        assert_eq!(by("copa")["family"], "delay-based");
        assert_eq!(by("copa")["linux_name"], Value::Null);
        let beta = &by("cubic")["params"][0];
        assert_eq!(beta["name"], "beta");
        assert_eq!(beta["default"], 717);
        assert_eq!(beta["unit"], "1/1024");
        assert_eq!(beta["kind"]["base"], "integer");
        // Version-dependent defaults are shown resolved.
        let bbr = by("bbr")["params"].as_array().unwrap().clone();
        let extra = bbr.iter().find(|p| p["name"] == "extra_acked").unwrap();
        assert_eq!(extra["default"], true);
        assert_eq!(extra["kind"]["nullable"], true);
        let version = bbr.iter().find(|p| p["name"] == "version").unwrap();
        assert_eq!(
            version["kind"]["choices"],
            json!(["linux-6.18", "linux-4.15", "linux-4.13"])
        );
        assert!(by("bbr")["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "bbr_btl_bw_mbps" || m.as_str().unwrap().starts_with("bbr_")));
    }

    #[test]
    fn unknown_algorithm_lists_known() {
        let e = build("vegas", &Value::Null, 0).err().unwrap();
        assert!(e.to_string().contains("vegas") && e.to_string().contains("reno"));
    }

    #[test]
    fn cubic_builds_with_linux_defaults() {
        let cc = build("cubic", &json!({}), 0).unwrap();
        assert_eq!(cc.name(), "cubic");
        assert!(known_algorithms().contains(&"cubic"));
        let cc = build("cubic", &Value::Null, 0).unwrap();
        assert_eq!(cc.name(), "cubic");
    }

    #[test]
    fn cubic_unknown_parameter_is_named() {
        let e = build("cubic", &json!({"betta": 717}), 0).err().unwrap();
        assert!(matches!(e, CcaError::BadParams { .. }));
        assert!(e.to_string().contains("betta"), "{e}");
        match e {
            CcaError::BadParams { error, .. } => assert_eq!(error.key, "betta"),
            _ => unreachable!(),
        }
    }

    #[test]
    fn cubic_bad_values_are_named() {
        for (key, bad) in [
            ("beta", json!(1024)),
            ("bic_scale", json!(0)),
            ("hystart_detect", json!(4)),
            ("hystart_ack_delta_us", json!(1u64 << 31)),
            ("hystart", json!("yes")),
            ("beta", json!(-1)),
        ] {
            let e = normalize_params("cubic", &json!({ key: bad })).unwrap_err();
            assert!(e.to_string().contains(key), "{key}: {e}");
            match &e {
                CcaError::BadParams { error, .. } => assert_eq!(error.key, key, "{e}"),
                _ => panic!("{e}"),
            }
            assert!(build("cubic", &json!({ key: bad }), 0).is_err(), "{key}");
        }
    }

    #[test]
    fn a_table_that_is_not_an_object_is_refused() {
        let e = normalize_params("cubic", &json!([1, 2])).unwrap_err();
        assert!(e.to_string().contains("not a table"), "{e}");
    }

    #[test]
    fn cubic_normalized_params_list_every_key_with_linux_defaults() {
        let v = normalize_params("cubic", &json!({"beta": 819})).unwrap();
        let expected = json!({
            "beta": 819,
            "bic_scale": 41,
            "fast_convergence": true,
            "tcp_friendliness": true,
            "initial_ssthresh": 0,
            "hystart": true,
            "hystart_detect": 3,
            "hystart_low_window": 16,
            "hystart_ack_delta_us": 2000,
            "exact_cbrt": false,
            "gso_ack_delay": true,
            "hystart_version": "linux-6.18",
        });
        assert_eq!(v, expected);
    }

    #[test]
    fn copa_defaults_are_recorded_resolved() {
        let v = normalize_params("copa", &Value::Null).unwrap();
        assert_eq!(v["variant"], "paper");
        assert_eq!(v["delta"], 0.5);
        assert_eq!(v["mode_window_rtts"], 5.0);
        assert_eq!(v["mode_max_window_rtts"], 5.0);
        assert_eq!(v["mode_signal"], "standing");
        assert_eq!(v["rto_restart"], true);
        let g = normalize_params("copa", &json!({"variant": "genericcc"})).unwrap();
        assert_eq!(g["rtt_min_window_rtts"], 20.0);
        assert_eq!(g["srtt_gain"], 0.0625);
        assert_eq!(g["mode_window_rtts"], 4.0);
        assert_eq!(g["mode_max_window_rtts"], 4.0);
        assert_eq!(g["mode_signal"], "raw");
        assert_eq!(g["velocity_rule"], "genericcc");
        assert_eq!(g["probe_acks"], 19);
        assert_eq!(g["loss_reduce"], true);
        // A single option can be taken from the other reference.
        let m = normalize_params("copa", &json!({"loss_reduce": true})).unwrap();
        assert_eq!(m["loss_reduce"], true);
        assert_eq!(m["velocity_rule"], "paper");
        // The normalised table is a fixed point.
        assert_eq!(normalize_params("copa", &g).unwrap(), g);
        assert!(build("copa", &g, 1).is_ok());
    }

    #[test]
    fn copa_bad_parameters_are_named() {
        let e = normalize_params("copa", &json!({"deltaa": 0.5})).unwrap_err();
        assert!(e.to_string().contains("deltaa"), "{e}");
        let e = normalize_params("copa", &json!({"delta": 0.0})).unwrap_err();
        assert!(e.to_string().contains("delta"), "{e}");
        let e = normalize_params("copa", &json!({"variant": "ccp"})).unwrap_err();
        assert!(e.to_string().contains("ccp"), "{e}");
        let e = normalize_params("copa", &json!({"mode_threshold": 1.5})).unwrap_err();
        assert!(e.to_string().contains("mode_threshold"), "{e}");
        assert!(build("copa", &json!({"srtt_gain": -1.0}), 1).is_err());
    }

    #[test]
    fn internal_names_cover_every_algorithm_and_carry_their_prefix() {
        let (metrics, counters) = internal_names();
        for prefix in ["cubic_", "bbr_", "copa_", "dctcp_"] {
            assert!(metrics.iter().any(|m| m.starts_with(prefix)), "{prefix}");
            assert!(counters.iter().any(|m| m.starts_with(prefix)), "{prefix}");
        }
        for name in metrics.iter().chain(&counters) {
            assert!(
                ["cubic_", "bbr_", "copa_", "dctcp_"]
                    .iter()
                    .any(|p| name.starts_with(p)),
                "{name}: an internal's name starts with its algorithm's"
            );
        }
    }

    #[test]
    fn unknown_parameter_is_named() {
        let e = normalize_params("reno", &json!({"betta": 1})).unwrap_err();
        assert!(e.to_string().contains("betta"), "{e}");
    }
}
