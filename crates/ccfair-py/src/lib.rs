//! Thin PyO3 bindings. Specs cross the boundary as JSON strings; the Python package
//! (`python/ccfair`) owns parsing, validation messages and result tables.
//!
//! Errors: every binding returns a [`CoreError`], and [`CoreError::into_py`] is the one
//! place that turns them into Python exceptions (the classes of `ccfair.errors`). A panic
//! never crosses the boundary: bindings that run Rust code catch it and raise
//! `ccfair.errors.RunError` naming the run.

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use pyo3::prelude::*;

use pyo3::types::{PyBytes, PyDict, PyList};

use ccfair_emu::forwarder::Control;
use ccfair_emu::{EmuError, Emulation};

use ccfair_cc::params::ParamError;
use ccfair_cc::CcaError;
use ccfair_sim::spec::TcpOptions;
use ccfair_sim::table::{ColumnData, Table};
use ccfair_sim::{Limits, SimError};

/// Everything a binding can fail with.
#[derive(Debug)]
enum CoreError {
    Sim(SimError),
    Cca(CcaError),
    Emu(EmuError),
    /// A table of options (TCP options, limits) is invalid; `key` names the option.
    Param(ParamError),
    /// Input that is not JSON, or a result that cannot be serialised.
    Json(String),
    /// Rust code panicked while running `run` (a bug in ccfair).
    Panic {
        run: String,
        message: String,
    },
    /// `Emulation.run` called twice.
    AlreadyRun,
}

impl From<SimError> for CoreError {
    fn from(e: SimError) -> Self {
        CoreError::Sim(e)
    }
}

impl CoreError {
    /// The one mapping from Rust errors to Python exceptions (docs/spec.md, "Errors"):
    /// spec problems are `SpecError` (naming the field), limits `LimitError`, engine stops
    /// and panics `RunError`.
    fn into_py(self, py: Python<'_>) -> PyErr {
        let made = (|| -> PyResult<PyErr> {
            let errors = py.import("ccfair.errors")?;
            let spec_error = |path: &str, message: &str| -> PyResult<PyErr> {
                let kwargs = PyDict::new(py);
                kwargs.set_item("with_value", false)?;
                let exc = errors
                    .getattr("SpecError")?
                    .call((path, py.None(), message), Some(&kwargs))?;
                Ok(PyErr::from_value(exc))
            };
            // A parameter's error: the path is the key within its table (the caller puts
            // the table's own path in front); `related` names other keys the check used.
            let param_error = |e: &ParamError| -> PyResult<PyErr> {
                let err = spec_error(&e.key, &e.message)?;
                err.value(py).setattr("related", e.related.clone())?;
                Ok(err)
            };
            let run_error = |message: String| -> PyResult<PyErr> {
                let exc = errors.getattr("RunError")?.call1((message,))?;
                Ok(PyErr::from_value(exc))
            };
            match self {
                CoreError::Sim(SimError::Parse(m)) => spec_error("", &format!("run spec: {m}")),
                CoreError::Sim(SimError::Spec { path, message }) => spec_error(&path, &message),
                CoreError::Sim(SimError::Limit { field, message }) => {
                    let exc = errors.getattr("LimitError")?.call1((field, message))?;
                    Ok(PyErr::from_value(exc))
                }
                CoreError::Sim(SimError::Stopped(m)) => run_error(m),
                CoreError::Cca(CcaError::BadParams { error, .. }) | CoreError::Param(error) => {
                    param_error(&error)
                }
                CoreError::Cca(e @ CcaError::UnknownAlgorithm(_)) => spec_error("", &e.to_string()),
                CoreError::Json(m) => spec_error("", &m),
                CoreError::Emu(e @ EmuError::Config(_)) => spec_error("", &e.to_string()),
                CoreError::Emu(e) => run_error(e.to_string()),
                CoreError::Panic { run, message } => run_error(format!(
                    "run {run}: the engine panicked ({message}); this is a bug in ccfair, \
                     please report it with the scenario"
                )),
                CoreError::AlreadyRun => run_error("this emulation has already run".into()),
            }
        })();
        made.unwrap_or_else(|e| e)
    }
}

thread_local! {
    /// Set while a binding catches panics on this thread: the panic hook records the
    /// message here instead of printing it.
    static CAUGHT_PANIC: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

static PANIC_HOOK: Once = Once::new();

/// Install (once) a panic hook that stays silent on threads inside [`catch_panic`] and
/// records the message and location there; elsewhere it defers to the default hook.
fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let caught = CAUGHT_PANIC.with(|c| {
                let mut c = c.borrow_mut();
                match c.as_mut() {
                    Some(slot) => {
                        let at = info
                            .location()
                            .map(|l| format!(" at {}:{}", l.file(), l.line()))
                            .unwrap_or_default();
                        *slot = Some(format!("{}{at}", panic_text(info.payload())));
                        true
                    }
                    None => false,
                }
            });
            if !caught {
                default(info);
            }
        }));
    });
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}

/// Run `f`, turning a panic into `CoreError::Panic` naming `run`.
fn catch_panic<T>(run: &str, f: impl FnOnce() -> Result<T, CoreError>) -> Result<T, CoreError> {
    install_panic_hook();
    CAUGHT_PANIC.with(|c| *c.borrow_mut() = Some(None));
    let out = panic::catch_unwind(AssertUnwindSafe(f));
    let recorded = CAUGHT_PANIC.with(|c| c.borrow_mut().take()).flatten();
    out.unwrap_or_else(|payload| {
        Err(CoreError::Panic {
            run: run.to_string(),
            message: recorded.unwrap_or_else(|| panic_text(payload.as_ref())),
        })
    })
}

/// Names of the congestion control modules the simulator knows.
#[pyfunction]
fn known_ccas(py: Python<'_>) -> PyResult<Vec<String>> {
    catch_panic("known_ccas", || {
        Ok(ccfair_cc::known_algorithms()
            .iter()
            .map(|s| s.to_string())
            .collect())
    })
    .map_err(|e| e.into_py(py))
}

/// Every algorithm's metadata (crates/ccfair-cc/src/registry.rs `metadata_json`) as JSON:
/// family, pacing, Linux module, parameters with types, units, defaults and docs.
#[pyfunction]
fn algorithms(py: Python<'_>) -> PyResult<String> {
    catch_panic("algorithms", || Ok(ccfair_cc::metadata_json())).map_err(|e| e.into_py(py))
}

/// The algorithms ccfair has a BPF congestion control of, for the kernel backend
/// (crates/ccfair-emu/src/bpfcc.rs), whether or not this build or machine can load them.
#[pyfunction]
fn bpf_programs(py: Python<'_>) -> PyResult<Vec<String>> {
    catch_panic("bpf_programs", || {
        Ok(ccfair_emu::bpfcc::Algorithm::ALL
            .iter()
            .map(|a| a.name().to_string())
            .collect())
    })
    .map_err(|e| e.into_py(py))
}

fn parse_json(text: &str) -> Result<serde_json::Value, CoreError> {
    serde_json::from_str(text).map_err(|e| CoreError::Json(e.to_string()))
}

/// Validate a module's parameters (JSON object) and return them with defaults filled in.
/// Raises SpecError whose path is the bad key within the table (the caller prefixes it).
#[pyfunction]
fn normalize_cca(py: Python<'_>, name: &str, params_json: &str) -> PyResult<String> {
    catch_panic("normalize_cca", || {
        let v =
            ccfair_cc::normalize_params(name, &parse_json(params_json)?).map_err(CoreError::Cca)?;
        Ok(v.to_string())
    })
    .map_err(|e| e.into_py(py))
}

/// Validate TCP substrate options (JSON object) and return them with Linux defaults filled
/// in. Raises SpecError whose path is the bad option (the caller prefixes it).
#[pyfunction]
fn normalize_tcp(py: Python<'_>, options_json: &str) -> PyResult<String> {
    catch_panic("normalize_tcp", || {
        let v = TcpOptions::parse(&parse_json(options_json)?).map_err(CoreError::Param)?;
        serde_json::to_string(&v).map_err(|e| CoreError::Json(e.to_string()))
    })
    .map_err(|e| e.into_py(py))
}

/// Validate a link's queue-discipline parameters (JSON object or null) for the queue
/// `queue` ("codel", "fq_codel", "pie", "red"; "droptail" and "netem" take none) and return
/// them with Linux's defaults filled in (null for drop-tail and netem). Raises SpecError
/// whose path is the bad key within the table (the caller prefixes it). RED's thresholds
/// also depend on the link's buffer and rate: the engine checks them with the spec.
#[pyfunction]
fn normalize_qdisc(py: Python<'_>, queue: &str, params_json: &str) -> PyResult<String> {
    catch_panic("normalize_qdisc", || {
        let v = ccfair_sim::qdisc::params::normalize_named(queue, &parse_json(params_json)?)
            .map_err(CoreError::Param)?;
        Ok(v.to_string())
    })
    .map_err(|e| e.into_py(py))
}

/// Every queue discipline's parameters (kinds, units, docs, defaults) as JSON
/// (crates/ccfair-sim/src/qdisc/params.rs `metadata_json`).
#[pyfunction]
fn qdiscs(py: Python<'_>) -> PyResult<String> {
    catch_panic("qdiscs", || Ok(ccfair_sim::qdisc::params::metadata_json()))
        .map_err(|e| e.into_py(py))
}

/// Limits from JSON (absent keys keep their defaults; `None` = all defaults).
fn parse_limits(limits_json: Option<&str>) -> Result<Limits, CoreError> {
    match limits_json {
        None => Ok(Limits::default()),
        Some(js) => serde_json::from_str(js)
            .map_err(|e| CoreError::Sim(SimError::spec("limits", e.to_string()))),
    }
}

/// The resource estimate of a resolved spec (JSON), as JSON (see
/// crates/ccfair-sim/src/estimate.rs). Raises SpecError if the spec is malformed.
#[pyfunction]
fn estimate(py: Python<'_>, spec_json: &str) -> PyResult<String> {
    catch_panic("estimate", || {
        let spec = ccfair_sim::parse_spec(spec_json)?;
        serde_json::to_string(&spec.estimate()).map_err(|e| CoreError::Json(e.to_string()))
    })
    .map_err(|e| e.into_py(py))
}

/// Raise LimitError if a resolved spec's estimate exceeds the limits (JSON, optional).
#[pyfunction]
#[pyo3(signature = (spec_json, limits_json=None))]
fn check_limits(py: Python<'_>, spec_json: &str, limits_json: Option<&str>) -> PyResult<()> {
    catch_panic("check_limits", || {
        let limits = parse_limits(limits_json)?;
        ccfair_sim::parse_spec(spec_json)?
            .estimate()
            .check(&limits)
            .map_err(CoreError::from)
    })
    .map_err(|e| e.into_py(py))
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
            ColumnData::U64(v) => ("u64", le_bytes(py, &v, u64::to_le_bytes)?)
                .into_pyobject(py)?
                .into_any(),
            ColumnData::F64(v) => ("f64", le_bytes(py, &v, f64::to_le_bytes)?)
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

/// Run a resolved spec (JSON, see crates/ccfair-sim/src/spec.rs) within `limits` (JSON,
/// optional; see `ccfair_sim::Limits`). Releases the GIL while the simulation runs. Returns
/// {table: {column: (dtype, data)}} plus engine statistics. `run_id` names the run in
/// errors.
#[pyfunction]
#[pyo3(signature = (spec_json, run_id=None, limits_json=None))]
fn run<'py>(
    py: Python<'py>,
    spec_json: &str,
    run_id: Option<&str>,
    limits_json: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let spec = spec_json.to_string();
    let label = run_id.unwrap_or("(no id)").to_string();
    let limits = parse_limits(limits_json).map_err(|e| e.into_py(py))?;
    let result = py
        .detach(move || {
            catch_panic(&label, || {
                ccfair_sim::run_json(&spec, &limits).map_err(CoreError::from)
            })
        })
        .map_err(|e| e.into_py(py))?;
    result_to_py(py, result)
}

/// Panic inside the guard `run` uses. Exists so that tests can check that a panic of the
/// engine becomes a `RunError` naming the run, never a `PanicException`.
#[pyfunction]
fn _panic_for_test(py: Python<'_>, run_id: &str) -> PyResult<()> {
    py.detach(|| {
        catch_panic(run_id, || -> Result<(), CoreError> {
            panic!("deliberate panic")
        })
    })
    .map_err(|e| e.into_py(py))
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
    stats.set_item("packet_state_bytes", stats_src.packet_state_bytes)?;
    stats.set_item("peak_packets", stats_src.peak_packets)?;
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
            .detach(move || {
                catch_panic("(kernel setup)", || {
                    ccfair_emu::setup_json(&cfg).map_err(CoreError::Emu)
                })
            })
            .map_err(|e| e.into_py(py))?;
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
            .ok_or_else(|| CoreError::AlreadyRun.into_py(py))?;
        install_panic_hook();
        let handle = std::thread::spawn(move || {
            catch_panic("(kernel run)", || {
                ccfair_emu::run(emu).map_err(CoreError::Emu)
            })
        });
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
            .unwrap_or_else(|_| {
                Err(CoreError::Panic {
                    run: "(kernel run)".into(),
                    message: "the emulation thread panicked".into(),
                })
            })
            .map_err(|e| e.into_py(py))?;
        let selfcheck = serde_json::to_string(&out.selfcheck)
            .map_err(|e| CoreError::Json(e.to_string()).into_py(py))?;
        let d = result_to_py(py, out.result)?;
        d.set_item("selfcheck", selfcheck)?;
        Ok(d)
    }
}

/// What this machine lacks to run ccfair's BPF congestion controls (one sentence), or
/// None when it has everything (crates/ccfair-emu/src/bpfcc.rs `unavailable`).
#[pyfunction]
fn bpf_unavailable(py: Python<'_>) -> PyResult<Option<String>> {
    catch_panic("bpf_unavailable", || Ok(ccfair_emu::bpfcc::unavailable()))
        .map_err(|e| e.into_py(py))
}

/// Per flow its receiver's `tcp_rmem` and its sender's `tcp_wmem` (min, default, max bytes,
/// `"fit"` resolved per host), and per node the socket buffer maximum no flow of the node's
/// can fill: what the kernel backend sets in each namespace
/// (`RunSpec::rmem_bytes`, `wmem_bytes`, `fit_socket_buffer_bytes`).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn socket_buffers(
    py: Python<'_>,
    spec_json: &str,
) -> PyResult<(Vec<[u64; 3]>, Vec<[u64; 3]>, Vec<u64>)> {
    catch_panic("socket_buffers", || {
        let spec = ccfair_sim::parse_spec(spec_json)?;
        Ok((
            spec.rmem_bytes(),
            spec.wmem_bytes(),
            spec.fit_socket_buffer_bytes(),
        ))
    })
    .map_err(|e| e.into_py(py))
}

/// Each flow's effective start time (ns) for a resolved spec: the nominal start plus its
/// seeded start jitter, as both backends apply it.
#[pyfunction]
fn flow_starts(py: Python<'_>, spec_json: &str) -> PyResult<Vec<u64>> {
    catch_panic("flow_starts", || {
        Ok(ccfair_sim::parse_spec(spec_json)?.flow_starts_ns())
    })
    .map_err(|e| e.into_py(py))
}

/// The results schema (crates/ccfair-sim/src/schema.rs) as JSON: every column of every
/// table with its type, who fills it and what it means.
#[pyfunction]
fn schema(py: Python<'_>) -> PyResult<String> {
    catch_panic("schema", || Ok(ccfair_sim::schema::schema_json())).map_err(|e| e.into_py(py))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEmulation>()?;
    m.add_function(wrap_pyfunction!(known_ccas, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_programs, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(flow_starts, m)?)?;
    m.add_function(wrap_pyfunction!(socket_buffers, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_cca, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_tcp, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_qdisc, m)?)?;
    m.add_function(wrap_pyfunction!(qdiscs, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_unavailable, m)?)?;
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(check_limits, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("__git_revision__", env!("CCFAIR_GIT_REVISION"))?;
    m.add("BUILD_PGO", env!("CCFAIR_BUILD_PGO") == "true")?;
    Ok(())
}
