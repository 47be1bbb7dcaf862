//! Algorithms by name, with their parameter tables.
//!
//! Parameters arrive as JSON objects (from the scenario spec). Unknown keys and wrong types
//! are errors that name the key; missing keys take the documented defaults. The normalised
//! table (all keys, defaults filled in) is what results record.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::copa::{Copa, CopaParams};
use crate::reno::{Reno, RenoParams};
use crate::CongestionControl;

/// Names accepted in `flows[].cca.name`.
pub fn known_algorithms() -> &'static [&'static str] {
    &["reno", "copa"]
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
    let p: P = serde_json::from_value(params).map_err(|e| CcaError::BadParams(e.to_string()))?;
    let normalized = serde_json::to_value(&p).map_err(|e| CcaError::BadParams(e.to_string()))?;
    Ok((p, normalized))
}

/// Build an algorithm. `seed` feeds the algorithm's own randomness (derived by the caller
/// from the scenario seed and the flow id).
pub fn build(
    name: &str,
    params: &Value,
    seed: u64,
) -> Result<Box<dyn CongestionControl>, CcaError> {
    let _ = seed;
    match name {
        "reno" => {
            let (p, _) = parse::<RenoParams>(params)?;
            Ok(Box::new(Reno::new(&p)))
        }
        "copa" => {
            let (p, _) = parse::<CopaParams>(params)?;
            Ok(Box::new(Copa::new(&p).map_err(CcaError::BadParams)?))
        }
        _ => Err(CcaError::UnknownAlgorithm(name.to_string())),
    }
}

/// Validate parameters and return the full table with defaults filled in.
pub fn normalize_params(name: &str, params: &Value) -> Result<Value, CcaError> {
    match name {
        "reno" => parse::<RenoParams>(params).map(|(_, v)| v),
        // Copa's variant decides the defaults of several options: record them resolved.
        "copa" => {
            let (p, _) = parse::<CopaParams>(params)?;
            let full = p.normalized().map_err(CcaError::BadParams)?;
            serde_json::to_value(full).map_err(|e| CcaError::BadParams(e.to_string()))
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
    fn unknown_parameter_is_named() {
        let e = normalize_params("reno", &json!({"betta": 1})).unwrap_err();
        assert!(e.to_string().contains("betta"), "{e}");
    }
}
