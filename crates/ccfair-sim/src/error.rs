//! The errors of the engine's entry points. Every way a run can fail on user input is one
//! of these variants, never a panic; the Python bindings (crates/ccfair-py) map each variant
//! to one ccfair exception in one place.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SimError {
    /// The run spec is not valid JSON of the `RunSpec` shape.
    #[error("run spec: {0}")]
    Parse(String),
    /// A field of the run spec is invalid. `path` names it (`links[1].rate_bps`).
    #[error("{path}: {message}")]
    Spec { path: String, message: String },
    /// The run's resource estimate exceeds a limit. `field` names the part of the spec that
    /// costs the most (`sample_interval`, `flows[0].tcp.init_cwnd`, `links[2].buffer`).
    #[error("{field}: {message}")]
    Limit { field: String, message: String },
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
