//! Algorithms by name, with their parameter tables.
//!
//! Parameters arrive as JSON objects (from the scenario spec). Unknown keys and wrong types
//! are errors that name the key; missing keys take the documented defaults. The normalised
//! table (all keys, defaults filled in) is what results record.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::bbr::{Bbr, BbrParams};
use crate::copa::{Copa, CopaParams};
use crate::cubic::{Cubic, CubicParams};
use crate::reno::{Reno, RenoParams};
use crate::CongestionControl;

/// Names accepted in `flows[].cca.name`.
pub fn known_algorithms() -> &'static [&'static str] {
    &["reno", "cubic", "copa", "bbr"]
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CcaError {
    UnknownAlgorithm(String),
    /// A parameter is invalid: message from the parameter parser (names the key).
    BadParams(String),
}

impl std::fmt::Display for CcaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CcaError::UnknownAlgorithm(name) => write!(
                f,
                "unknown congestion control {name:?}; known: {}",
                known_algorithms().join(", ")
            ),
            CcaError::BadParams(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for CcaError {}

fn parse<P: DeserializeOwned + Serialize>(params: &Value) -> Result<(P, Value), CcaError> {
    let params = if params.is_null() {
        Value::Object(Default::default())
    } else {
        params.clone()
    };
    let p: P = serde_json::from_value(params.clone())
        .map_err(|e| blame_key::<P>(&params, CcaError::BadParams(e.to_string())))?;
    let normalized = serde_json::to_value(&p).map_err(|e| CcaError::BadParams(e.to_string()))?;
    Ok((p, normalized))
}

/// `serde_json::from_value` does not say which key had the wrong type. Find it by parsing
/// each key alone (the tables default every field), and name it in the error.
fn blame_key<P: DeserializeOwned>(params: &Value, err: CcaError) -> CcaError {
    if let Value::Object(map) = params {
        for (key, value) in map {
            let one = Value::Object([(key.clone(), value.clone())].into_iter().collect());
            if let Err(e) = serde_json::from_value::<P>(one) {
                let msg = e.to_string();
                return CcaError::BadParams(if msg.contains(key.as_str()) {
                    msg
                } else {
                    format!("parameter `{key}`: {msg}")
                });
            }
        }
    }
    err
}

/// CUBIC's table: serde checks keys and types, [`CubicParams::validate`] the ranges.
fn parse_cubic(params: &Value) -> Result<(CubicParams, Value), CcaError> {
    let (p, normalized) = parse::<CubicParams>(params)?;
    p.validate().map_err(CcaError::BadParams)?;
    Ok((p, normalized))
}

/// BBR's table, range-checked and with the profile's defaults resolved (so that results
/// record e.g. whether extra_acked ran).
fn parse_bbr(params: &Value) -> Result<BbrParams, CcaError> {
    let (p, _) = parse::<BbrParams>(params).map_err(|e| blame_key::<BbrParams>(params, e))?;
    p.validate().map_err(CcaError::BadParams)?;
    Ok(p.resolved())
}

/// Build an algorithm. `seed` feeds the algorithm's own randomness (derived by the caller
/// from the scenario seed and the flow id).
pub fn build(
    name: &str,
    params: &Value,
    seed: u64,
) -> Result<Box<dyn CongestionControl>, CcaError> {
    match name {
        "reno" => {
            let (p, _) = parse::<RenoParams>(params)?;
            Ok(Box::new(Reno::new(&p)))
        }
        "cubic" => {
            let (p, _) = parse_cubic(params)?;
            Ok(Box::new(Cubic::new(&p)))
        }
        "copa" => {
            let (p, _) = parse::<CopaParams>(params)?;
            Ok(Box::new(Copa::new(&p).map_err(CcaError::BadParams)?))
        }
        "bbr" => {
            let p = parse_bbr(params)?;
            Ok(Box::new(Bbr::new(&p, seed)))
        }
        _ => Err(CcaError::UnknownAlgorithm(name.to_string())),
    }
}

/// The internals every registered algorithm reports: the names of its time-series metrics
/// (`sample_metrics`) and of its summary counters (`summary_counters`), each list in
/// registry order without repeats. Results store every name as a column in every run (NaN
/// for flows of other algorithms), so that a table read from a directory that mixes
/// algorithms has every column. The contract says an algorithm reports the same names over
/// its whole life, so a fresh instance with default parameters reports them all.
pub fn internal_names() -> (Vec<&'static str>, Vec<&'static str>) {
    let tp = crate::sock::TcpSock::new(1448, 10, 1000);
    let mut metrics: Vec<&'static str> = Vec::new();
    let mut counters: Vec<&'static str> = Vec::new();
    let mut buf = Vec::new();
    for name in known_algorithms() {
        let cc = build(name, &Value::Null, 0).expect("every algorithm builds with its defaults");
        for (out, sample) in [(&mut metrics, true), (&mut counters, false)] {
            buf.clear();
            if sample {
                cc.sample_metrics(&tp, &mut buf);
            } else {
                cc.summary_counters(&tp, &mut buf);
            }
            for &(n, _) in &buf {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        }
    }
    (metrics, counters)
}

/// Validate parameters and return the full table with defaults filled in.
pub fn normalize_params(name: &str, params: &Value) -> Result<Value, CcaError> {
    match name {
        "reno" => parse::<RenoParams>(params).map(|(_, v)| v),
        "cubic" => parse_cubic(params).map(|(_, v)| v),
        // Copa's variant decides the defaults of several options: record them resolved.
        "copa" => {
            let (p, _) = parse::<CopaParams>(params)?;
            let full = p.normalized().map_err(CcaError::BadParams)?;
            serde_json::to_value(full).map_err(|e| CcaError::BadParams(e.to_string()))
        }
        "bbr" => {
            let p = parse_bbr(params)?;
            serde_json::to_value(&p).map_err(|e| CcaError::BadParams(e.to_string()))
        }
        _ => Err(CcaError::UnknownAlgorithm(name.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert!(matches!(e, CcaError::BadParams(_)));
        assert!(e.to_string().contains("betta"), "{e}");
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
            assert!(build("cubic", &json!({ key: bad }), 0).is_err(), "{key}");
        }
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
        for prefix in ["cubic_", "bbr_", "copa_"] {
            assert!(metrics.iter().any(|m| m.starts_with(prefix)), "{prefix}");
            assert!(counters.iter().any(|m| m.starts_with(prefix)), "{prefix}");
        }
        for name in metrics.iter().chain(&counters) {
            assert!(
                ["cubic_", "bbr_", "copa_"]
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
