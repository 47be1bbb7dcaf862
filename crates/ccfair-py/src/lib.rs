//! Thin PyO3 bindings. Specs cross the boundary as JSON strings; the Python package
//! (`python/ccfair`) owns parsing, validation messages and result tables.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use pyo3::types::{PyBytes, PyDict, PyList};

use ccfair_sim::spec::TcpOptions;
use ccfair_sim::table::{ColumnData, Table};

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
    v.validate().map_err(PyValueError::new_err)?;
    serde_json::to_string(&v).map_err(|e| PyValueError::new_err(e.to_string()))
}

fn table_to_py<'py>(py: Python<'py>, table: &Table) -> PyResult<Bound<'py, PyDict>> {
    // Numeric columns cross as raw little-endian bytes (numpy.frombuffer on the Python side):
    // no per-element Python objects for long time series.
    let d = PyDict::new(py);
    for (name, col) in &table.columns {
        let v: Bound<'py, PyAny> = match col {
            ColumnData::U64(v) => {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                ("u8", PyBytes::new(py, &bytes)).into_pyobject(py)?.into_any()
            }
            ColumnData::F64(v) => {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                ("f8", PyBytes::new(py, &bytes)).into_pyobject(py)?.into_any()
            }
            ColumnData::Str(v) => ("str", PyList::new(py, v.iter().copied())?).into_pyobject(py)?.into_any(),
            ColumnData::Text(v) => ("str", PyList::new(py, v.iter())?).into_pyobject(py)?.into_any(),
        };
        d.set_item(name, v)?;
    }
    Ok(d)
}

/// Run a resolved spec (JSON, see crates/ccfair-sim/src/spec.rs). Releases the GIL while the
/// simulation runs. Returns {table: {column: (dtype, data)}} plus engine statistics.
#[pyfunction]
fn run<'py>(py: Python<'py>, spec_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let spec = spec_json.to_string();
    let result = py
        .detach(move || ccfair_sim::run_json(&spec))
        .map_err(PyValueError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("flows", table_to_py(py, &result.flows)?)?;
    d.set_item("flow_counters", table_to_py(py, &result.flow_counters)?)?;
    d.set_item("timeseries", table_to_py(py, &result.timeseries)?)?;
    d.set_item("links", table_to_py(py, &result.links)?)?;
    d.set_item("link_summary", table_to_py(py, &result.link_summary)?)?;
    let stats = PyDict::new(py);
    stats.set_item("events", result.stats.events)?;
    stats.set_item("packet_hops", result.stats.packet_hops)?;
    stats.set_item("peak_heap_len", result.stats.peak_heap_len)?;
    d.set_item("engine", stats)?;
    Ok(d)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(known_ccas, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_cca, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_tcp, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("__git_revision__", env!("CCFAIR_GIT_REVISION"))?;
    Ok(())
}
