//! Thin PyO3 bindings. Specs cross the boundary as JSON strings; the Python package
//! (`python/ccfair`) owns parsing, validation messages and result tables.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use pyo3::types::{PyBytes, PyDict, PyList};

use ccfair_emu::forwarder::Control;
use ccfair_emu::Emulation;

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

fn le_bytes<'py, const N: usize, T: Copy>(
    py: Python<'py>,
    v: &[T],
    to_bytes: impl Fn(T) -> [u8; N],
) -> PyResult<Bound<'py, PyBytes>> {
    // Filled in place: no intermediate Vec<u8>.
    PyBytes::new_with(py, v.len() * N, |buf| {
        for (chunk, x) in buf.chunks_exact_mut(N).zip(v) {
            chunk.copy_from_slice(&to_bytes(*x));
        }
        Ok(())
    })
}

fn table_to_py<'py>(py: Python<'py>, table: Table) -> PyResult<Bound<'py, PyDict>> {
    // Numeric columns cross as raw little-endian bytes (numpy.frombuffer on the Python side);
    // string columns as categorical codes plus their categories. Columns are freed as they go.
    let d = PyDict::new(py);
    for (name, col) in table.columns {
        let v: Bound<'py, PyAny> = match col {
            ColumnData::U64(v) => ("u8", le_bytes(py, &v, u64::to_le_bytes)?)
                .into_pyobject(py)?
                .into_any(),
            ColumnData::F64(v) => ("f8", le_bytes(py, &v, f64::to_le_bytes)?)
                .into_pyobject(py)?
                .into_any(),
            ColumnData::Str(v) => {
                let mut categories: Vec<&'static str> = Vec::new();
                let codes: Vec<u32> = v
                    .iter()
                    .map(|s| match categories.iter().position(|c| c == s) {
                        Some(i) => i as u32,
                        None => {
                            categories.push(s);
                            (categories.len() - 1) as u32
                        }
                    })
                    .collect();
                let codes = le_bytes(py, &codes, u32::to_le_bytes)?;
                ("cat", (codes, PyList::new(py, categories)?))
                    .into_pyobject(py)?
                    .into_any()
            }
            ColumnData::Text(v) => ("str", PyList::new(py, v)?).into_pyobject(py)?.into_any(),
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
    result_to_py(py, result)
}

/// The tables of a run (simulator or kernel backend) as the dict `run` returns.
fn result_to_py<'py>(
    py: Python<'py>,
    result: ccfair_sim::RunResult,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let stats_src = result.stats;
    d.set_item("flows", table_to_py(py, result.flows)?)?;
    d.set_item("timeseries", table_to_py(py, result.timeseries)?)?;
    d.set_item("links", table_to_py(py, result.links)?)?;
    d.set_item("link_summary", table_to_py(py, result.link_summary)?)?;
    if let Some(trace) = result.trace {
        d.set_item("trace", table_to_py(py, trace)?)?;
    }
    let stats = PyDict::new(py);
    stats.set_item("events", stats_src.events)?;
    stats.set_item("packet_hops", stats_src.packet_hops)?;
    stats.set_item("peak_heap_len", stats_src.peak_heap_len)?;
    d.set_item("engine", stats)?;
    Ok(d)
}

/// One run on the kernel backend (crates/ccfair-emu). Construction creates the hosts' TUN
/// devices in their (existing) network namespaces; `run()` executes the scenario in real
/// time and returns the same dict as `run` plus "selfcheck" (JSON). Raises RuntimeError
/// with a one-line message on failure, KeyboardInterrupt if a signal handler raises one
/// while it runs (every thread is stopped and joined first).
#[pyclass(name = "Emulation")]
struct PyEmulation {
    inner: Mutex<Option<Emulation>>,
    control: Arc<Control>,
}

#[pymethods]
impl PyEmulation {
    #[new]
    fn new(py: Python<'_>, config_json: &str) -> PyResult<Self> {
        let cfg = config_json.to_string();
        let emu = py
            .detach(move || ccfair_emu::setup_json(&cfg))
            .map_err(PyRuntimeError::new_err)?;
        Ok(PyEmulation {
            control: emu.control(),
            inner: Mutex::new(Some(emu)),
        })
    }

    /// Ask a running emulation to stop (from any thread).
    fn stop(&self) {
        self.control.request_stop();
    }

    /// Release the TUN devices without running (they vanish with their fds).
    fn close(&self) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    fn run<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let emu = self
            .inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("this emulation has already run"))?;
        let handle = std::thread::spawn(move || emu.run());
        // Wait with the GIL released, but look at Python's signal handlers every 20 ms so
        // that Ctrl-C (and a SIGTERM handler that raises) stops the run cleanly.
        while !handle.is_finished() {
            py.detach(|| std::thread::sleep(Duration::from_millis(20)));
            if let Err(e) = py.check_signals() {
                self.control.request_stop();
                let _ = py.detach(|| handle.join());
                return Err(e);
            }
        }
        let out = handle
            .join()
            .map_err(|_| PyRuntimeError::new_err("the emulation panicked"))?
            .map_err(PyRuntimeError::new_err)?;
        let selfcheck = serde_json::to_string(&out.selfcheck)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        let d = result_to_py(py, out.result)?;
        d.set_item("selfcheck", selfcheck)?;
        Ok(d)
    }
}

/// What this machine lacks to run ccfair's BPF congestion controls (one sentence), or
/// None when it has everything (crates/ccfair-emu/src/bpfcc.rs `unavailable`).
#[pyfunction]
fn bpf_unavailable() -> Option<String> {
    ccfair_emu::bpfcc::unavailable()
}

/// Each flow's effective start time (ns) for a resolved spec: the nominal start plus its
/// seeded start jitter, as both backends apply it.
/// Per flow, the receiver's resolved `tcp_rmem` (min, default, max bytes); per node, the
/// socket-buffer maximum that fits every flow of the node (`RunSpec::rmem_bytes`): the
/// kernel backend sets these as each namespace's sysctls.
#[pyfunction]
fn socket_buffers(spec_json: &str) -> PyResult<(Vec<[u64; 3]>, Vec<u64>)> {
    let spec: ccfair_sim::spec::RunSpec =
        serde_json::from_str(spec_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((spec.rmem_bytes(), spec.fit_socket_buffer_bytes()))
}

#[pyfunction]
fn flow_starts(spec_json: &str) -> PyResult<Vec<u64>> {
    let spec: ccfair_sim::spec::RunSpec =
        serde_json::from_str(spec_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(spec.flow_starts_ns())
}

/// The results schema (crates/ccfair-sim/src/schema.rs) as JSON: every column of every
/// table with its type, who fills it and what it means.
#[pyfunction]
fn schema() -> String {
    ccfair_sim::schema::schema_json()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEmulation>()?;
    m.add_function(wrap_pyfunction!(known_ccas, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(flow_starts, m)?)?;
    m.add_function(wrap_pyfunction!(socket_buffers, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_cca, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_tcp, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_unavailable, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("__git_revision__", env!("CCFAIR_GIT_REVISION"))?;
    Ok(())
}
