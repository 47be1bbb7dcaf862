//! Thin PyO3 bindings. Specs cross the boundary as JSON strings; the Python package
//! (`python/ccfair`) owns parsing, validation messages and result tables.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use ccfair_sim::spec::TcpOptions;

/// Names of the congestion control modules the simulator knows.
#[pyfunction]
fn known_ccas() -> Vec<String> {
    ccfair_cc::known_algorithms()
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Validate a module's parameters (JSON object) and return them with defaults filled in.
/// Raises ValueError naming the bad key.
#[pyfunction]
fn normalize_cca(name: &str, params_json: &str) -> PyResult<String> {
    let params: serde_json::Value =
        serde_json::from_str(params_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let v = ccfair_cc::normalize_params(name, &params)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(v.to_string())
}

/// Validate TCP substrate options (JSON object) and return them with Linux defaults filled in.
#[pyfunction]
fn normalize_tcp(options_json: &str) -> PyResult<String> {
    let v: TcpOptions =
        serde_json::from_str(options_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    serde_json::to_string(&v).map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(known_ccas, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_cca, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_tcp, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
