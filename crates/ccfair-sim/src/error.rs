//! The errors of the engine's entry points. Every way a run can fail on user input is one
//! of these variants, never a panic; the Python bindings (crates/ccfair-py) map each variant
//! to one ccfair exception in one place.

use thiserror::Error;

/// Why a run could not start or did not finish. The message is one line naming the field
/// (or the limit, or the guard) and the value; it reaches the user as a Python `SpecError`,
/// `LimitError` or `RunError`.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SimError {
    /// The run spec is not valid JSON of the `RunSpec` shape.
    #[error("run spec: {0}")]
    Parse(String),
    /// A field of the run spec is invalid. `path` names it (`links[1].rate_bps`).
    #[error("{path}: {message}")]
    Spec {
        /// Path of the field in the run spec.
        path: String,
        /// What is wrong with its value.
        message: String,
    },
    /// The run's resource estimate exceeds a limit. `field` names the part of the spec that
    /// costs the most (`sample_interval`, `flows[0].tcp.init_cwnd`, `links[2].buffer`).
    #[error("{field}: {message}")]
    Limit {
        /// The spec field that costs the most.
        field: String,
        /// The estimate against the limit, in words.
        message: String,
    },
    /// The run was stopped because it stopped making progress or exceeded its event budget
    /// (the engine's guards against livelock; see `world::RunBudget`).
    #[error("{0}")]
    Stopped(String),
}

impl SimError {
    /// A `Spec` error at `path`.
    pub fn spec(path: impl Into<String>, message: impl Into<String>) -> Self {
        SimError::Spec {
            path: path.into(),
            message: message.into(),
        }
    }
}
