"""One run's result: its tables as Arrow tables with a lazy pandas view.

Importing this module does not import pandas: a result of ``ccfair.run`` holds its tables as
Arrow tables and converts each to pandas the first time it is read (:class:`RunResult`).
Saved (:meth:`RunResult.save`) into a results directory (:mod:`ccfair.store.directory`), a
run is one Parquet file per table, the ``runs`` file last; :func:`load` reads one back.

Example:
    >>> import ccfair
    >>> r = ccfair.run(ccfair.dumbbell(2, "reno", duration="2s"))
    >>> r.flows["flow_name"].tolist()
    ['flow1', 'flow2']
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ccfair import backends
from ccfair.analysis.stats import jain_index
from ccfair.errors import ResultsError, show
from ccfair.present.views import RunPlots, run_html
from ccfair.results.derived import (
    DERIVED_COLUMNS,
    STABILITY_INPUT,
    flow_facts,
    stored,
    with_facts,
    with_stability,
)
from ccfair.spec.resolved import Resolved
from ccfair.store.directory import (
    check_schema,
    finished_run_ids,
    parquet_bytes_of,
    prepare_run_dir,
    write_arrow_tables,
)
from ccfair.store.read import read_run_table
from ccfair.store.schema import MARKER_TABLE, TABLES, WRITE_ORDER
from ccfair.store.tables import arrow_table, build_tables, labels

if TYPE_CHECKING:  # pandas is imported where a frame is made, not with this module
    import pandas as pd


__all__ = ["RunResult", "build_result", "load"]


def _column(kind: str, data: Any) -> Any:
    if kind == "u64":  # little-endian
        return np.frombuffer(data, dtype="<u8").astype(np.int64)
    if kind == "f64":
        return np.frombuffer(data, dtype="<f8").copy()
    if kind == "cat":
        codes, categories = data
        return _labels(np.frombuffer(codes, dtype="<u4"), categories)
    return np.asarray(list(data), dtype=object)


def _labels(codes: np.ndarray, categories: Sequence[str]) -> Any:
    """The pandas ``str`` column whose row i is ``categories[codes[i]]`` (traces' flow and
    link names), decoded from an Arrow dictionary (:func:`ccfair.store.tables.labels`).

    Example:
        >>> list(_labels(np.array([1, 0, 1]), ["ab", "ba"]))
        ['ba', 'ab', 'ba']
    """
    import pandas as pd

    return pd.array(labels(codes, categories), dtype="str")


def _frame(raw: dict[str, tuple[str, Any]]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({name: _column(kind, data) for name, (kind, data) in raw.items()})


#: A :class:`_Table` without a default (a required field of the dataclass).
_REQUIRED = object()


class _Table:
    """A table attribute of :class:`RunResult`: the pandas DataFrame it was given, or, for
    a result made from Arrow tables (``ccfair.run``, :meth:`RunResult.from_tables`), the
    frame converted from its Arrow table the first time it is read. pandas (0.2-0.3 s to
    import) is then imported by the first read, not by the run.

    A data descriptor storing the frame in the instance's ``__dict__`` under its own name,
    so that the dataclass's ``__init__``, ``dataclasses.replace``, pickling and copies see
    plain attributes."""

    def __init__(self, default: Any = _REQUIRED) -> None:
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            if self.default is _REQUIRED:  # no default: the dataclass field is required
                name = "RunResult" if owner is None else owner.__name__
                raise AttributeError(f"type object {name!r} has no attribute {self.name!r}")
            return self.default
        state = obj.__dict__
        if self.name in state:
            return state[self.name]
        source = state.get("_sources", {}).get(self.name)
        if source is None:
            if self.name in state:  # converted by another thread meanwhile
                return state[self.name]
            raise AttributeError(f"{type(obj).__name__!r} object has no attribute {self.name!r}")
        frame = state.setdefault(self.name, obj._frame_of(self.name, source))
        # The frame is the table from now on (a caller may change it; save() writes it):
        # its Arrow source is dropped, as it would otherwise be held twice.
        state["_sources"].pop(self.name, None)
        return frame

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = value
        obj.__dict__.get("_sources", {}).pop(self.name, None)

    def __delete__(self, obj: Any) -> None:
        had_frame = self.name in obj.__dict__
        obj.__dict__.pop(self.name, None)
        had_source = obj.__dict__.get("_sources", {}).pop(self.name, None) is not None
        if not (had_frame or had_source):
            raise AttributeError(self.name)


@dataclass
class RunResult:
    """The tables of one run, as pandas DataFrames.

    A result of ``ccfair.run`` holds the tables as the Arrow tables the run built and
    converts each to a DataFrame the first time it is read (the first ``r.flows`` imports
    pandas, not the run); then that frame is the table: changes to it are what
    :meth:`save` writes. Tables never read are saved as built, without pandas.

    Attributes:
        run_id: content hash of the normalised spec and backend.
        runs: one row of provenance (spec, versions, host, times).
        flows: per-flow summary: goodput over the measurement window (``goodput_mbps``),
            ``share_frac`` of all goodput, bytes, retransmissions, RTT mean/min/percentiles,
            queueing delay percentiles and the algorithms' own counters.
        timeseries: per-flow samples at the sampling interval (``t_s``, cwnd, inflight, srtt,
            min RTT, pacing and delivery rate, goodput, CA state, algorithm internals).
            Column meanings: docs/results.md or :mod:`ccfair.store.schema`.
        links: per link direction samples (queue in packets and bytes, drops, utilisation).
        link_summary: per link direction over the measurement window.
        trace: the per-packet trace of the flows a run was asked to trace
            (``ccfair.run(..., trace=[...])``; docs/results.md, "Traces"), else None. Not
            saved with the tables.

    Example:
        >>> import ccfair
        >>> r = ccfair.run(ccfair.dumbbell(2, "reno", duration="5s"))
        >>> float(round(r.flows["share_frac"].sum(), 6))
        1.0
        >>> fig = r.plot.timeseries()  # a matplotlib Figure (Jupyter shows it)
    """

    run_id: str
    runs: pd.DataFrame = _Table()  # type: ignore[assignment]
    flows: pd.DataFrame = _Table()  # type: ignore[assignment]
    timeseries: pd.DataFrame = _Table()  # type: ignore[assignment]
    links: pd.DataFrame = _Table()  # type: ignore[assignment]
    link_summary: pd.DataFrame = _Table()  # type: ignore[assignment]
    trace: pd.DataFrame | None = _Table(default=None)  # type: ignore[assignment]

    @classmethod
    def from_tables(cls, run_id: str, tables: Mapping[str, Any]) -> RunResult:
        """The result of run ``run_id`` from its Arrow tables in the schema's exact form
        (:func:`ccfair.store.tables.build_tables`, :meth:`arrow_tables`), each converted to
        pandas the first time it is read. Saved before, the tables are written as they are.

        Example:
            >>> import ccfair
            >>> r0 = ccfair.run(ccfair.dumbbell(1, "reno", duration="1s"))
            >>> r = RunResult.from_tables(r0.run_id, r0.arrow_tables())
            >>> r.flows["flow_name"].tolist(), r.trace
            (['flow1'], None)
        """
        missing = [t for t in (MARKER_TABLE, *TABLES) if t not in tables]
        if missing:
            raise ValueError(f"run {run_id}: no {', '.join(missing)} table")
        return cls._lazy(run_id, dict(tables))

    @classmethod
    def _lazy(cls, run_id: str, sources: dict[str, Any]) -> RunResult:
        # Not through __init__, which would need the frames: each table attribute finds
        # its source in _sources (the Arrow tables; the engine's trace columns).
        result = cls.__new__(cls)
        result.run_id = run_id
        result.__dict__["_sources"] = sources
        if "trace" not in sources:
            result.trace = None
        return result

    def _frame_of(self, table: str, source: Any) -> pd.DataFrame:
        if table == "trace":
            return _trace_frame(self.run_id, *source)
        # The frames are what reading the files back gives (tests/test_results_arrow.py),
        # and the columns derived from them (ccfair.results.derived).
        frame: pd.DataFrame = source.to_pandas()
        if table not in DERIVED_COLUMNS:
            return frame
        return _with_derived(table, frame, self.spec, self._stability_inputs)

    def _stability_inputs(self) -> tuple[pd.DataFrame | None, pd.DataFrame]:
        """The time series' goodput samples (from its Arrow table while it was never read,
        else from its frame; None without one) and the run's measurement window."""
        import pandas as pd

        window = pd.DataFrame(
            {
                "run_id": [self.run_id],
                "measure_start_s": [float(self._run_value("measure_start_s"))],
                "measure_end_s": [float(self._run_value("measure_end_s"))],
            }
        )
        source = self.__dict__.get("_sources", {}).get("timeseries")
        if source is not None and "timeseries" not in self.__dict__:
            return source.select(STABILITY_INPUT).to_pandas(), window
        try:
            frame = self.timeseries
        except AttributeError:
            return None, window
        return frame[STABILITY_INPUT], window

    def _run_value(self, column: str) -> Any:
        # One value of the runs row without converting the table: from the Arrow table while
        # the frame was never read, else from the frame (it may have been changed).
        source = self.__dict__.get("_sources", {}).get(MARKER_TABLE)
        if source is not None and MARKER_TABLE not in self.__dict__:
            return source.column(column)[0].as_py()
        return self.runs[column].iloc[0]

    @property
    def spec(self) -> dict[str, Any]:
        """The normalised scenario this run executed."""
        spec: dict[str, Any] = json.loads(self._run_value("spec_json"))
        return spec

    def jain_index(self) -> float:
        """Jain's fairness index of the flows' goodput, (sum x)^2 / (n sum x^2)."""
        return jain_index(self.flows["goodput_mbps"].to_numpy())

    @property
    def plot(self) -> Any:
        """Figures of this run: ``r.plot.timeseries()``, ``r.plot.throughput_delay()`` (matplotlib
        Figures; see :class:`ccfair.present.views.RunPlots`)."""
        return RunPlots(self)

    def __repr__(self) -> str:
        run = self.runs.iloc[0]
        flows = zip(self.flows["flow_name"], self.flows["cca"], strict=True)
        ccas = ", ".join(f"{n}:{c}" for n, c in flows)
        return (
            f"<RunResult {self.run_id} {run['scenario']!r} {run['backend']} seed {run['seed']}: "
            f"{len(self.flows)} flows ({ccas[:80]}), Jain {self.jain_index():.3f}, "
            f"{self.flows['goodput_mbps'].sum():.2f} Mbit/s>"
        )

    def _repr_html_(self) -> str:
        return run_html(self)

    def summary(self) -> pd.DataFrame:
        """The per-flow table the CLI prints: the flows table's own columns, rounded."""
        cols = [
            "flow_name",
            "cca",
            "node_path",
            "goodput_mbps",
            "share_frac",
            "retrans_pkts",
            "rto_count",
            "rtt_mean_ms",
            "rtt_p95_ms",
            "qdelay_p95_ms",
        ]
        digits = {"goodput_mbps": 3, "share_frac": 3}
        digits.update({c: 2 for c in ("rtt_mean_ms", "rtt_p95_ms", "qdelay_p95_ms")})
        return self.flows[cols].round(digits)

    def format_summary(self) -> str:
        """Per-flow table plus run-level lines (Jain index, bottleneck use), for terminals."""
        run = self.runs.iloc[0]
        lines = [
            f"scenario {run['scenario']!r}  backend {run['backend']}  seed {run['seed']}  "
            f"duration {run['duration_s']:g} s  run {self.run_id}",
            self.summary().to_string(index=False),
            f"Jain index {self.jain_index():.4f}   total goodput "
            f"{self.flows['goodput_mbps'].sum():.3f} Mbit/s   wall {run['wall_time_s']:.2f} s",
        ]
        if backends.has(run["backend"], "self_checked"):
            lines.append(self.format_selfcheck())
        busiest = self.link_summary.sort_values("utilisation_frac", ascending=False).head(1)
        if len(busiest):
            b = busiest.iloc[0]
            lines.append(
                f"busiest link {b['link_name']} ({b['direction']}): utilisation_frac "
                f"{b['utilisation_frac']:.4f}, drop_queue_pkts {int(b['drop_queue_pkts'])}, "
                f"sojourn_mean_ms {b['sojourn_mean_ms']:.2f}, "
                f"queue_delay_p95_ms {b['queue_delay_p95_ms']:.2f}"
            )
        return "\n".join(lines)

    @property
    def reliable(self) -> bool:
        """False when a kernel run exceeded a self-check bound (see ``runs.selfcheck_flags``)."""
        return bool(self._run_value("reliable"))

    def format_selfcheck(self) -> str:
        """One line on the kernel backend's self-checks, and why a run is flagged.

        Example:
            >>> r.format_selfcheck()  # doctest: +SKIP
            'self-check ok: lateness p50/p99/p99.9 16/42/68 us, forwarder CPU 40%, ...'
        """
        run = self.runs.iloc[0]
        if run["emu_lateness_p99_us"] != run["emu_lateness_p99_us"]:
            # No forwarder (the veth data path): the kernel carried the packets.
            text = (
                f"kernel-forwarded packets, process CPU {run['emu_process_cpu_frac']:.0%}, "
                f"sampling p99 {run['emu_sampling_p99_us']:.0f} us, "
                f"missed samples {run['emu_missed_samples_count']:.0f}"
            )
            return (
                f"self-check ok: {text}"
                if run["reliable"]
                else (f"UNRELIABLE RUN: {run['selfcheck_flags']} ({text})")
            )
        text = (
            f"lateness p50/p99/p99.9 {run['emu_lateness_p50_us']:.0f}/"
            f"{run['emu_lateness_p99_us']:.0f}/{run['emu_lateness_p999_us']:.0f} us, "
            f"forwarder CPU {run['emu_cpu_frac']:.0%}, "
            f"slowest link {run['emu_rate_ratio_min_frac']:.2%} of its rate, "
            f"missed samples {run['emu_missed_samples_count']:.0f}"
        )
        if run["reliable"]:
            return f"self-check ok: {text}"
        return f"UNRELIABLE RUN: {run['selfcheck_flags']} ({text})"

    def save(self, results_dir: str | os.PathLike[str]) -> Path:
        """Write this run into ``results_dir`` atomically; returns the directory.

        Each table is written as it is now: a table never read as a frame as the run built
        it (no pandas is imported; the files are those a sweep writes), one that was read
        from its frame, with any changes made to it.

        Example:
            >>> r.save("results")  # doctest: +SKIP
            PosixPath('results')
        """
        root = prepare_run_dir(results_dir)
        self.write_tables(root)
        return root

    def write_tables(self, root: Path) -> None:
        """Write this run's tables into the results directory ``root``, the ``runs`` file
        last, each in the schema's exact columns and types, through ccfair-named
        temporaries. Unlike :meth:`save` it does not check the directory's schema version:
        for a writer that checked it once (a sweep, under the directory's lock)."""
        write_arrow_tables(root, self.run_id, self.arrow_tables())

    def parquet_bytes(self) -> dict[str, bytes]:
        """Each table as the bytes of the Parquet file :meth:`write_tables` would write (a
        cluster worker sends these; the sweep's process writes them)."""
        return {table: parquet_bytes_of(arrow) for table, arrow in self.arrow_tables().items()}

    def arrow_tables(self) -> dict[str, Any]:
        """Each table (not the trace) as the Arrow table :meth:`write_tables` writes: one
        never read as a frame as the run built it (no pandas is imported), one that was read,
        or given as a frame, converted from the frame as it is now (a caller may have changed
        it since the run).

        Example:
            >>> import ccfair
            >>> list(ccfair.run(ccfair.dumbbell(1, "reno", duration="1s")).arrow_tables())
            ['flows', 'timeseries', 'links', 'link_summary', 'runs']
        """
        sources = self.__dict__.get("_sources", {})
        out = {}
        for table in WRITE_ORDER:
            source = sources.get(table)
            if source is not None and table not in self.__dict__:
                out[table] = source
            else:  # the schema's columns: those the result adds are derived when read
                out[table] = arrow_table(stored(table, getattr(self, table)), table)
        return out


def load(results_dir: str | os.PathLike[str], run_id: str | None = None) -> RunResult:
    """Load one run (the only one, or ``run_id``) from a results directory.

    Example:
        >>> r = ccfair.load("results", run_id="3f2a...")  # doctest: +SKIP
    """
    root = Path(results_dir)
    ids = finished_run_ids(root)
    if not ids:
        raise ResultsError(f"{root}: no finished runs (expected {root / MARKER_TABLE}/*.parquet)")
    if run_id is None:
        if len(ids) > 1:
            raise ResultsError(
                f"{root}: holds {len(ids)} runs; pass run_id (one of {', '.join(ids[:5])}...)"
            )
        run_id = ids[0]
    elif not isinstance(run_id, str) or run_id not in ids:
        raise ResultsError(f"{root}: no finished run {show(run_id)}")
    check_schema(root)
    import pandas as pd

    frames = {}
    for table in (MARKER_TABLE, *TABLES):
        # Page checksums verified; a damaged file is one ResultsError naming it.
        frames[table] = read_run_table(root / table / f"{run_id}.parquet")
    spec = json.loads(frames[MARKER_TABLE]["spec_json"].iloc[0])
    run = frames[MARKER_TABLE].iloc[0]
    window = pd.DataFrame(
        {
            "run_id": [run_id],
            "measure_start_s": [float(run["measure_start_s"])],
            "measure_end_s": [float(run["measure_end_s"])],
        }
    )
    inputs = frames["timeseries"][STABILITY_INPUT], window
    for table in DERIVED_COLUMNS:
        frames[table] = _with_derived(table, frames[table], spec, lambda: inputs)
    return RunResult(run_id=run_id, **frames)


def _with_derived(
    table: str,
    frame: pd.DataFrame,
    spec: dict[str, Any],
    stability_inputs: Callable[[], tuple[pd.DataFrame | None, pd.DataFrame]],
) -> pd.DataFrame:
    """``frame`` of ``table`` with the columns the result adds (:data:`DERIVED_COLUMNS`):
    each flow's facts from the spec and, for the flows, the stability of its goodput."""
    if "flow" not in frame.columns or "run_id" not in frame.columns:
        return frame
    run_ids = list(dict.fromkeys(frame["run_id"])) or [""]
    facts = flow_facts(dict.fromkeys(run_ids, spec))
    if table == "timeseries":
        return with_facts(frame, facts, DERIVED_COLUMNS["timeseries"])
    frame = with_facts(frame, facts, ("role", "bottleneck_hop"))
    timeseries, window = stability_inputs()
    return with_stability(frame, timeseries, window, facts)


def build_result(
    resolved: Resolved,
    raw: Mapping[str, Any],
    *,
    run_id: str,
    backend: str,
    started_at: str,
    wall_time_s: float,
    selfcheck: dict[str, Any] | None = None,
    flags: list[str] | None = None,
    identity: str | None = None,
    facts: dict[str, str] | None = None,
) -> RunResult:
    """Turn the engine's column dict into the run's result: its Arrow tables
    (:func:`ccfair.store.tables.build_tables`), converted to pandas DataFrames when first read
    (:class:`RunResult`); building it imports no pandas.

    ``identity`` is what the run id hashed as the backend when it differs from ``backend``
    (``"kernel-bpf"`` for a ``force_bpf`` run): the point key hashes it too, so such runs
    are never repetitions of the kernel module's runs of the same spec.

    ``selfcheck`` and ``selfcheck_flags`` come from the kernel backend (see docs/kernel.md): the
    emulator's measurements of itself and the bounds they exceeded. The ``runs`` table has
    the same columns on both backends (NaN / empty for the simulator).

    ``facts`` are the versions and host facts the backend records
    (:meth:`ccfair.backends.base.Backend.provenance`; default
    :func:`ccfair.backends.base.provenance`).
    """
    tables = build_tables(
        resolved,
        raw,
        run_id=run_id,
        backend=backend,
        started_at=started_at,
        wall_time_s=wall_time_s,
        selfcheck=selfcheck,
        flags=flags,
        identity=identity,
        facts=facts,
    )
    sources: dict[str, Any] = dict(tables)
    if "trace" in raw:
        names = [f.name for f in resolved.flows]
        lnames = [link.name for link in resolved.links]
        sources["trace"] = (raw["trace"], names, lnames)
    return RunResult._lazy(run_id, sources)


def _trace_frame(
    run_id: str, raw: dict[str, Any], names: Sequence[str], lnames: Sequence[str]
) -> pd.DataFrame:
    """The trace table from the engine's trace columns and the flow and link names."""
    trace = _frame(raw)
    trace.insert(0, "run_id", run_id)
    trace.insert(1, "t_s", trace["t_ns"] / 1e9)
    trace.insert(3, "flow_name", _labels(trace["flow"].to_numpy(), names))
    trace.insert(5, "link_name", _labels(trace["link"].to_numpy(), lnames))
    return trace
