"""Types of ccfair's native module (crates/ccfair-py/src/lib.rs), for type checkers.

Specs, options and metadata cross the boundary as JSON strings. Every function raises the
classes of :mod:`ccfair.errors` (mapped in one place, ``CoreError::into_py``): ``SpecError``
for a malformed spec or option (its path names the key within the table), ``LimitError``
when a run exceeds its limits, ``RunError`` when the engine stops or panics.

tests/test_core_stub.py checks that this file declares exactly what the module exports,
with the same parameters. Names that begin with an underscore and are a ``TypeAlias`` or a
``TypedDict`` exist only here, to describe the values.
"""

from typing import Literal, NotRequired, TypeAlias, TypedDict

__version__: str
#: The git revision the module was built from (crates/ccfair-py/build.rs).
__git_revision__: str
#: Built with profile-guided optimisation (scripts/install_pgo.sh); results are the same.
BUILD_PGO: bool

#: A numeric column as raw little-endian bytes (``numpy.frombuffer`` with the dtype tag);
#: a string column as categorical codes (u32 little-endian) with their categories; or text.
_Column: TypeAlias = (
    tuple[Literal["u64", "f64"], bytes]
    | tuple[Literal["cat"], tuple[bytes, list[str]]]
    | tuple[Literal["str"], list[str]]
)
#: A table: column name to column (crates/ccfair-sim/src/schema.rs lists the columns).
_Table: TypeAlias = dict[str, _Column]

class _EngineStats(TypedDict):
    events: int
    packet_hops: int
    peak_heap_len: int
    packet_state_bytes: int
    peak_packets: int

class _RunTables(TypedDict):
    flows: _Table
    timeseries: _Table
    links: _Table
    link_summary: _Table
    #: Only when the spec asks for per-packet traces (``trace_flows``).
    trace: NotRequired[_Table]
    engine: _EngineStats

class _EmulationTables(_RunTables):
    #: The kernel backend's self-check as JSON (docs/kernel.md).
    selfcheck: str

def known_ccas() -> list[str]:
    """Names of the congestion controls the simulator knows."""

def algorithms() -> str:
    """Every algorithm's metadata as JSON (family, pacing, Linux module, parameters)."""

def bpf_programs() -> list[str]:
    """The algorithms ccfair has a BPF congestion control of (kernel backend)."""

def bpf_unavailable() -> str | None:
    """What this machine lacks to run ccfair's BPF congestion controls, or None."""

def normalize_cca(name: str, params_json: str) -> str:
    """An algorithm's parameters (JSON object) with defaults filled in, as JSON."""

def normalize_tcp(options_json: str) -> str:
    """TCP options (JSON object) with Linux defaults filled in, as JSON."""

def normalize_qdisc(queue: str, params_json: str) -> str:
    """A link's queue-discipline parameters (JSON object or null) for ``queue``, with Linux's
    defaults filled in (null for ``droptail`` and ``netem``), as JSON."""

def qdiscs() -> str:
    """Every queue discipline's parameters (kinds, units, docs, defaults) as JSON."""

def estimate(spec_json: str) -> str:
    """The resource estimate of a resolved spec, as JSON."""

def check_limits(spec_json: str, limits_json: str | None = None) -> None:
    """Raise ``LimitError`` if a resolved spec's estimate exceeds the limits."""

def run(spec_json: str, run_id: str | None = None, limits_json: str | None = None) -> _RunTables:
    """Run a resolved spec on the simulator; ``run_id`` names the run in errors."""

def flow_starts(spec_json: str) -> list[int]:
    """Each flow's effective start time in ns (nominal start plus seeded jitter)."""

def socket_buffers(spec_json: str) -> tuple[list[list[int]], list[list[int]], list[int]]:
    """Per flow the receiver's ``tcp_rmem`` and the sender's ``tcp_wmem`` (min, default,
    max bytes, ``"fit"`` resolved per host); per node the socket-buffer maximum that fits
    every flow of the node."""

def schema() -> str:
    """The results schema as JSON: every column of every table."""

def _panic_for_test(run_id: str) -> None:
    """Panic inside the guard ``run`` uses; always raises ``RunError`` naming ``run_id``."""

class Emulation:
    """One run on the kernel backend (root, network namespaces, real time)."""

    def __init__(self, config_json: str) -> None: ...
    def stop(self) -> None:
        """Ask a running emulation to stop (from any thread)."""

    def close(self) -> None:
        """Release the TUN devices without running."""

    def run(self) -> _EmulationTables:
        """Run the scenario in real time; the tables of ``run`` plus ``selfcheck``."""
