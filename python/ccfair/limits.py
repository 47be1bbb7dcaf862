"""Resource limits and the estimate of what a run or a sweep will cost (docs/spec.md, "Limits").

Before anything runs, ccfair estimates each run from its resolved spec (the Rust core computes
it: crates/ccfair-sim/src/estimate.rs): engine events, time-series rows and bytes, peak
memory, files and bytes written. A run whose estimate exceeds a limit is refused with one line
naming the field that costs the most (:class:`~ccfair.errors.LimitError`); the engine also stops
a run that exceeds its event limit while it runs. The defaults suit a machine of 2 cores and
24 GiB of memory; raise them explicitly with :class:`Limits` (Python) or ``--max-memory``,
``--max-events``, ``--max-runs`` (CLI).

Fixed bounds on the spec itself (flows, links, names, nesting, file sizes) are constants
here: they keep validation fast and messages short, whatever the input.

Example:
    >>> import ccfair
    >>> est = estimate(ccfair.dumbbell(2, "reno", duration="10s").resolve())
    >>> est.samples, est.link_rows
    (1000, 10000)
    >>> Limits(memory="8GB").memory
    8000000000
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ccfair import _core
from ccfair.errors import LimitError, SpecError, show
from ccfair.units import SIZE_HINT, parse_size

__all__ = [
    "Estimate",
    "Limits",
    "MAX_FLOWS",
    "MAX_LINKS",
    "MAX_NAME_CHARS",
    "MAX_NESTING",
    "MAX_NODES",
    "MAX_SPEC_FILE_BYTES",
    "MAX_STRING_CHARS",
    "MAX_REPETITIONS",
    "MAX_WORKERS_PER_CORE",
    "estimate",
    "estimate_sweep",
    "format_bytes",
    "most_parallel",
    "sweep_totals",
]

#: Flows of one scenario (validation stays within seconds; the engine allows 2^19).
MAX_FLOWS = 10_000
#: Links of one scenario (a dumbbell of MAX_FLOWS flows has 2 x MAX_FLOWS + 1).
MAX_LINKS = 30_000
#: Nodes of one scenario.
MAX_NODES = 60_000
#: Characters of a name (scenario, sweep, node, link, flow).
MAX_NAME_CHARS = 200
#: Characters of any other string in a spec (descriptions, filter expressions, values).
MAX_STRING_CHARS = 10_000
#: Depth of nested tables and lists in a spec (the schema needs 5).
MAX_NESTING = 32
#: Bytes of a scenario or sweep file (TOML); larger files are refused before reading.
MAX_SPEC_FILE_BYTES = 16 * 2**20
#: Repetitions of a sweep point.
MAX_REPETITIONS = 10_000
#: Local worker processes of a sweep per core (each a process of its own; more only compete).
MAX_WORKERS_PER_CORE = 8
#: Files one run writes: one per table (crates/ccfair-sim/src/estimate.rs FILES_PER_RUN).
FILES_PER_RUN = 5

_DEFAULT_MEMORY = 2_000_000_000
_DEFAULT_EVENTS = 20_000_000_000
_DEFAULT_RUNS = 50_000


def most_parallel() -> int:
    """Parallel runs (sweep workers, ``run_many`` jobs) this machine takes at most:
    :data:`MAX_WORKERS_PER_CORE` per core.

    Example:
        >>> most_parallel() >= MAX_WORKERS_PER_CORE
        True
    """
    return MAX_WORKERS_PER_CORE * (os.cpu_count() or 1)


def _positive_int(name: str, value: Any, parse: Any = None, hint: str = "") -> int:
    out = value
    if parse is not None and not isinstance(value, bool):
        out = parse(value)
    if isinstance(out, bool) or not isinstance(out, int) or out < 1:
        raise SpecError(f"limits.{name}", value, f"is not a positive {hint or 'integer'}")
    if out >= 2**64:
        raise SpecError(f"limits.{name}", value, "is too large (at most 2^64-1)")
    return out


@dataclass(frozen=True)
class Limits:
    """Resource limits of runs and sweeps; every field can be raised.

    Attributes:
        memory: estimated peak memory of one run, in bytes (or a size string, ``"8GB"``);
            default 2 GB.
        events: engine events of one run (its CPU time: about 10 million per second);
            the estimate must fit, and the engine stops a run that exceeds it. Default 2e10.
        runs: distinct runs of one sweep (grid points x repetitions); default 50,000.

    Example:
        >>> Limits(memory="16GB", runs=200_000).runs
        200000
    """

    memory: int = _DEFAULT_MEMORY
    events: int = _DEFAULT_EVENTS
    runs: int = _DEFAULT_RUNS

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "memory", _positive_int("memory", self.memory, parse_size, f"size ({SIZE_HINT})")
        )
        object.__setattr__(self, "events", _positive_int("events", self.events))
        object.__setattr__(self, "runs", _positive_int("runs", self.runs))

    def engine_json(self) -> str:
        """The limits the engine enforces, as JSON (crates/ccfair-sim/src/estimate.rs)."""
        return json.dumps({"memory_bytes": self.memory, "events": self.events})


def as_limits(limits: Limits | dict[str, Any] | None) -> Limits:
    """``None`` (the defaults), a :class:`Limits`, or a dict of its fields.

    Example:
        >>> as_limits({"memory": "4GB"}).memory
        4000000000
    """
    if limits is None:
        return Limits()
    if isinstance(limits, Limits):
        return limits
    if isinstance(limits, dict):
        unknown = [k for k in limits if k not in ("memory", "events", "runs")]
        if unknown:
            raise SpecError(
                f"limits.{unknown[0]}", limits[unknown[0]], "is not a limit (memory, events, runs)"
            )
        return Limits(**limits)
    raise SpecError("limits", limits, "is not a ccfair.Limits or a dict of limits")


@dataclass(frozen=True)
class Estimate:
    """What one run will cost (crates/ccfair-sim/src/estimate.rs: upper bounds).

    Attributes:
        samples: sampling instants (duration / sample_interval).
        timeseries_rows: rows of the per-flow time series (at most).
        link_rows: rows of the per-link time series.
        timeseries_bytes: bytes of both time series in the engine.
        trace_rows: rows of the packet trace (0 without traced flows).
        packets: packets the flows can hold at once.
        events: engine events.
        memory_bytes: peak memory (engine and Python tables).
        output_bytes: bytes written, uncompressed (Parquet is usually smaller).
        files: files written.
        memory_parts: memory by cause, largest first: dicts of field, what, bytes.
    """

    samples: int
    timeseries_rows: int
    link_rows: int
    timeseries_bytes: int
    trace_rows: int
    packets: int
    events: int
    memory_bytes: int
    output_bytes: int
    files: int
    memory_parts: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> str:
        """One line for terminals.

        Example:
            >>> print(Estimate(1000, 2000, 10000, 896000, 0, 100, 2_000_000, 34_000_000,
            ...                945_152, 5).summary())  # doctest: +NORMALIZE_WHITESPACE
            estimate: 2.00e+06 events, 12000 time-series rows (896.0 kB), memory 34.0 MB,
            5 files (945.2 kB)
        """
        return (
            f"estimate: {format_count(self.events)} events, "
            f"{format_count(self.timeseries_rows + self.link_rows)} time-series rows "
            f"({format_bytes(self.timeseries_bytes)}), memory {format_bytes(self.memory_bytes)}, "
            f"{self.files} files ({format_bytes(self.output_bytes)})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The estimate as a plain dict."""
        return asdict(self)


class EngineInput(Protocol):
    """A resolved scenario (:class:`ccfair.spec.resolved.Resolved`) as far as an estimate
    reads it: the engine's input. (The spec sits above this module.)"""

    @property
    def engine_spec(self) -> dict[str, Any]: ...


def estimate(resolved: EngineInput, trace_flows: list[int] | None = None) -> Estimate:
    """The resource estimate of a resolved scenario (:meth:`ccfair.Scenario.resolve`).

    Example:
        >>> import ccfair
        >>> estimate(ccfair.dumbbell(1, "reno", duration="1s").resolve()).files
        5
    """
    spec = dict(resolved.engine_spec)
    if trace_flows:
        spec["trace_flows"] = sorted(set(trace_flows))
    return Estimate(**json.loads(_core.estimate(json.dumps(spec))))


def check(engine_spec: dict[str, Any], limits: Limits) -> None:
    """Raise :class:`~ccfair.errors.LimitError` if the run of ``engine_spec`` does not fit."""
    _core.check_limits(json.dumps(engine_spec), limits.engine_json())


def format_bytes(n: float) -> str:
    """Bytes in decimal units, as the engine's messages write them.

    Example:
        >>> format_bytes(2_000_000_000), format_bytes(512)
        ('2.0 GB', '512 B')
    """
    for name, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {name}"
    return f"{int(n)} B"


def format_count(n: int) -> str:
    """A count: exact below a million, else in scientific notation.

    Example:
        >>> format_count(12000), format_count(2_000_000)
        ('12000', '2.00e+06')
    """
    return str(n) if n < 1_000_000 else f"{n:.2e}"


def check_runs(n_runs: int, limits: Limits, what: str) -> None:
    """Refuse a sweep of more than ``limits.runs`` runs (before expanding it).

    Example:
        >>> check_runs(10, Limits(runs=5), "grid")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ccfair.errors.LimitError: grid: the sweep has 10 runs, above the run limit of 5; ...
    """
    if n_runs > limits.runs:
        raise LimitError(
            what,
            f"the sweep has {show(n_runs) if n_runs < 10**30 else 'over 1e30'} runs, "
            f"above the run limit of {limits.runs}",
        )


def sweep_totals(points: Any, estimates: dict[str, Estimate] | None = None) -> dict[str, int]:
    """Totals of a sweep's estimates over its distinct runs: ``runs``, ``events`` and
    ``timeseries_rows`` summed, ``memory_bytes`` of the largest run, ``files`` (with
    ``sweep.json`` and ``.ccfair-lock``) and ``output_bytes`` (uncompressed). ``estimates``
    (run id -> :class:`Estimate`) saves estimating runs again.

    Example:
        >>> from ccfair.spec.sweep import Sweep
        >>> sw = Sweep.from_dict({"base": {"builder": "dumbbell", "duration": "2s"},
        ...                       "grid": {"alpha": [1, 2]}})
        >>> totals = sweep_totals(sw.expand())
        >>> totals["runs"], totals["files"]
        (2, 12)
    """
    runs = {p.run_id: p for p in points}
    known = estimates or {}
    totals = dict.fromkeys(("events", "timeseries_rows", "memory_bytes", "output_bytes"), 0)
    for rid, p in runs.items():
        est = known.get(rid) or estimate(p.scenario.resolve())
        totals["events"] += est.events
        totals["timeseries_rows"] += est.timeseries_rows + est.link_rows
        totals["output_bytes"] += est.output_bytes
        totals["memory_bytes"] = max(totals["memory_bytes"], est.memory_bytes)
    return {
        "runs": len(runs),
        **totals,
        "files": len(runs) * FILES_PER_RUN + 2,  # + sweep.json and .ccfair-lock
    }


def estimate_sweep(points: Any, estimates: dict[str, Estimate] | None = None) -> str:
    """Totals of a sweep's estimates (:func:`sweep_totals`) in one line, as ``ccfair sweep
    --dry-run`` prints them: events and rows summed over its distinct runs, the largest
    run's memory, files and bytes written.

    Example:
        >>> from ccfair.spec.sweep import Sweep
        >>> sw = Sweep.from_dict({"base": {"builder": "dumbbell", "duration": "2s"},
        ...                       "grid": {"alpha": [1, 2]}})
        >>> print(estimate_sweep(sw.expand()))  # doctest: +ELLIPSIS
        estimate: ... events in all, ... time-series rows, largest run ... of memory, 12 files ...
    """
    t = sweep_totals(points, estimates)
    return (
        f"estimate: {format_count(t['events'])} events in all, "
        f"{format_count(t['timeseries_rows'])} time-series rows, largest run "
        f"{format_bytes(t['memory_bytes'])} of memory, {t['files']} files "
        f"({format_bytes(t['output_bytes'])} uncompressed)"
    )
