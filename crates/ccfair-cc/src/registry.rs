//! Algorithms by name, with their parameter tables.
//!
//! Parameters arrive as JSON objects (from the scenario spec). Unknown keys and wrong types
//! are errors that name the key; missing keys take the documented defaults. The normalised
//! table (all keys, defaults filled in) is what results record.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::bbr::{Bbr, BbrParams};
use crate::reno::{Reno, RenoParams};
use crate::CongestionControl;

/// Names accepted in `flows[].cca.name`.
pub fn known_algorithms() -> &'static [&'static str] {
    &["reno", "bbr"]
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

/// BBR's table, range-checked and with the profile's defaults resolved (so that results
/// record e.g. whether extra_acked ran).
fn parse_bbr(params: &Value) -> Result<BbrParams, CcaError> {
    let (p, _) = parse::<BbrParams>(params)?;
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
        "bbr" => {
            let p = parse_bbr(params)?;
            Ok(Box::new(Bbr::new(&p, seed)))
        }
        _ => Err(CcaError::UnknownAlgorithm(name.to_string())),
    }
}

/// Validate parameters and return the full table with defaults filled in.
pub fn normalize_params(name: &str, params: &Value) -> Result<Value, CcaError> {
    match name {
        "reno" => parse::<RenoParams>(params).map(|(_, v)| v),
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
    fn unknown_parameter_is_named() {
        let e = normalize_params("reno", &json!({"betta": 1})).unwrap_err();
        assert!(e.to_string().contains("betta"), "{e}");
    }
}
