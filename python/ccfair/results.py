"""Run results: pandas tables, Parquet storage with provenance, and summaries.

Importing this module does not import pandas: a result of ``ccfair.run`` holds its tables as
Arrow tables and converts each to pandas the first time it is read (:class:`RunResult`).

A results directory holds one Parquet file per run and table::

    RESULTS_DIR/runs/<run_id>.parquet          provenance, normalised spec (one row)
    RESULTS_DIR/flows/<run_id>.parquet         per-flow summary
    RESULTS_DIR/timeseries/<run_id>.parquet    per-flow samples
    RESULTS_DIR/links/<run_id>.parquet         per-link-direction samples
    RESULTS_DIR/link_summary/<run_id>.parquet  per-link-direction summary over the window

Every file is written to a temporary name and renamed into place; the ``runs`` file is written
last, so a run counts as finished exactly when its ``runs`` file exists. Reading a table of a
directory is one call: ``pandas.read_parquet(RESULTS_DIR / "flows")`` or :func:`load`.

The directory is ccfair's own: temporary files are named ``.ccfair-<writer>.<file>.tmp`` (the
writer's process id and a random token), and only such files whose writer is gone are ever
deleted; table folders that are symbolic links are refused (ccfair never writes or deletes
through them); every path ccfair writes is a fixed table name and a run id (16 hex digits)
under the directory.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ccfair import backends, schema
from ccfair.errors import ResultsError, SpecError, shorten, show
from ccfair.spec.identity import RUN_ID

if TYPE_CHECKING:  # pandas is imported where a frame is made, not with this module
    import pandas as pd

    from ccfair.tables import RunTables

TABLES = ("flows", "timeseries", "links", "link_summary")
#: The table whose file marks a finished run.
MARKER_TABLE = "runs"
#: The record a sweep keeps in its results directory (ccfair.executor); single runs are not
#: saved into such a directory, so that a sweep's tables hold only its own points.
SWEEP_FILE = "sweep.json"

__all__ = [
    "MARKER_TABLE",
    "SWEEP_FILE",
    "TABLES",
    "ResultsError",
    "RunResult",
    "check_schema",
    "jain_index",
    "load",
    "load_table",
]

# --------------------------------------------------------------------------------------------
# The directory is ccfair's own: temporary names, symlinks, containment

#: This process as a writer: its pid and a random token (pids are reused; tokens are not).
WRITER_ID = f"{os.getpid()}-{secrets.token_hex(4)}"
_TEMPORARY = re.compile(r"\.ccfair-(\d+)-[0-9a-f]{8}\..+\.tmp")


def temporary_path(path: Path) -> Path:
    """Where ``path`` is written before it is renamed into place: a hidden name with the
    ccfair prefix and this writer's id.

    Example:
        >>> temporary_path(Path("r/flows/0123456789abcdef.parquet")).name  # doctest: +ELLIPSIS
        '.ccfair-...-....0123456789abcdef.parquet.tmp'
    """
    if os.getpid() != int(WRITER_ID.split("-")[0]):  # a forked child is another writer
        _renew_writer_id()
    return path.with_name(f".ccfair-{WRITER_ID}.{path.name}.tmp")


def _renew_writer_id() -> None:
    global WRITER_ID
    WRITER_ID = f"{os.getpid()}-{secrets.token_hex(4)}"


#: The largest pid Linux hands out (PID_MAX_LIMIT, include/linux/threads.h, 64-bit).
_PID_MAX_LIMIT = 4 * 1024 * 1024


def _alive(pid: int) -> bool:
    """Whether the writer with this pid may still be running. A pid no process can have
    (0, or above Linux's limit) is not a ccfair writer's: its file is kept, as if alive
    (``os.kill`` would signal a process group for 0, and overflows above a C long)."""
    if not 0 < pid <= _PID_MAX_LIMIT:
        return True
    try:  # a zombie (killed, not yet reaped) writes nothing more: proc(5), state Z
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat[stat.rindex(")") + 2 :].startswith("Z"):
            return False
    except (OSError, ValueError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def remove_stale_temporaries(root: Path) -> int:
    """Delete the temporary files that ccfair writers left in ``root`` and its folders and
    whose writer process is gone (killed mid-write); returns how many. Files ccfair did
    not create, and temporaries of writers still running, are never touched."""
    n = 0
    # The table folders, and what else ccfair writes through temporaries: sweep.json and
    # report.html at the top, figures, traces.
    for folder in (root, *(root / name for name in (MARKER_TABLE, *TABLES, "figures", "trace"))):
        if folder.is_symlink() or not folder.is_dir():
            continue
        for entry in folder.iterdir():
            m = _TEMPORARY.fullmatch(entry.name)
            if m is None or _alive(int(m.group(1))) or not entry.is_file():
                continue
            entry.unlink(missing_ok=True)
            n += 1
    return n


def table_folder(root: Path, table: str) -> Path:
    """``root/table``, created if missing; a symbolic link there (or a file) is refused, so
    that nothing is written or deleted outside ``root`` through it."""
    folder = root / table
    if folder.is_symlink():
        raise ResultsError(
            f"{folder}: is a symbolic link; ccfair writes only into real folders of the "
            "results directory (remove the link or use another --out)"
        )
    make_dir(folder)
    return folder


def looked_up(path: Path) -> Path:
    """``path``, after checking that the file system can look it up (it need not exist): a
    name too long or a parent that may not be searched is a :class:`ResultsError` naming it,
    not an ``OSError`` from deep inside.

    Example:
        >>> looked_up(Path("x" * 300))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ccfair.errors.ResultsError: xxx...(300 chars)...xxx: cannot be used (File name too long)
    """
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:
        raise ResultsError(
            f"{shorten(str(path))}: cannot be used ({exc.strerror or exc})"
        ) from None
    return path


def make_dir(path: Path) -> None:
    """Create a directory (and parents) or fail with a :class:`ResultsError` saying why
    (a file in the way, no permission, a read-only file system, a name too long)."""
    looked_up(path)
    if path.exists() and not path.is_dir():
        raise ResultsError(f"{path}: is a file, not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsError(f"{path}: cannot create the directory ({exc.strerror or exc})") from None


def write_file_atomic(path: Path, write: Any) -> None:
    """Write ``path`` through its temporary name (``write(tmp_path)``), fsync it, and rename
    it into place; a failure leaves no temporary behind and raises :class:`ResultsError`.
    ``path``'s folder is a table folder of a results directory (:func:`table_folder`)."""
    table_folder(path.parent.parent, path.parent.name)
    replace_via_temporary(path, write)


def replace_via_temporary(path: Path, write: Any) -> None:
    """Write ``path`` through its ccfair-named temporary (:func:`temporary_path`) with
    ``write(tmp_path)``, fsync it and rename it into place, in an existing folder (figures,
    reports, table files); a failure leaves no temporary behind and raises
    :class:`ResultsError` naming ``path``."""
    tmp = temporary_path(path)
    try:
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ResultsError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


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
    link names), decoded from an Arrow dictionary (:func:`ccfair.tables.labels`).

    Example:
        >>> list(_labels(np.array([1, 0, 1]), ["ab", "ba"]))
        ['ba', 'ab', 'ba']
    """
    import pandas as pd

    from ccfair.tables import labels

    return pd.array(labels(codes, categories), dtype="str")


def _frame(raw: dict[str, tuple[str, Any]]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({name: _column(kind, data) for name, (kind, data) in raw.items()})


_DTYPES = {"int64": "int64", "float64": "float64", "string": "str", "bool": bool}
#: The name pandas gives each of those types once cast.
_DTYPE_NAMES = {"int64": "int64", "float64": "float64", "string": "str", "bool": "bool"}


def conform(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    """``frame`` with exactly the schema's columns of ``table``, in its order and types.

    A missing or unexpected column is a bug in a backend, not a user error: it raises
    ``RuntimeError`` naming the columns.
    """
    cols = schema.columns(table)
    expected = [c["name"] for c in cols]
    missing = [c for c in expected if c not in frame.columns]
    extra = [c for c in frame.columns if c not in expected]
    if missing or extra:
        raise RuntimeError(
            f"{table}: columns differ from the schema: missing {missing}, extra {extra}"
        )
    out = frame if list(frame.columns) == expected else frame[expected]
    # Cast only what differs: a column already of its type is taken as it is (a cast would
    # copy it for nothing, at about a millisecond per column; the result is the same). A
    # string column the engine's tables bring as Python objects is cast, which is how a
    # missing value becomes the text the schema has always written for it.
    dtypes = out.dtypes
    casts = {
        c["name"]: _DTYPES[c["dtype"]]
        for c in cols
        if str(dtypes[c["name"]]) != _DTYPE_NAMES[c["dtype"]]
    }
    return out.astype(casts) if casts else out


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
            Column meanings: docs/results.md or :mod:`ccfair.schema`.
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
    def from_tables(cls, tables: RunTables) -> RunResult:
        """The result of a run's Arrow tables (:func:`ccfair.api.run_tables`), each
        converted to pandas the first time it is read. Saved before, the tables are written
        as they are: the files :meth:`ccfair.tables.RunTables.write_tables` writes.

        Example:
            >>> import ccfair
            >>> from ccfair.api import run_tables
            >>> r = RunResult.from_tables(run_tables(ccfair.dumbbell(1, "reno", duration="1s")))
            >>> r.flows["flow_name"].tolist(), r.trace
            (['flow1'], None)
        """
        missing = [t for t in (MARKER_TABLE, *TABLES) if t not in tables.tables]
        if missing:
            raise ValueError(f"run {tables.run_id}: no {', '.join(missing)} table")
        return cls._lazy(tables.run_id, dict(tables.tables))

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
        # The frames are what reading the files back gives (tests/test_results_arrow.py).
        return source.to_pandas()

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
        return json.loads(self._run_value("spec_json"))

    def jain_index(self) -> float:
        """Jain's fairness index of the flows' goodput, (sum x)^2 / (n sum x^2)."""
        return jain_index(self.flows["goodput_mbps"].to_numpy())

    @property
    def plot(self) -> Any:
        """Figures of this run: ``r.plot.timeseries()``, ``r.plot.delay()`` (matplotlib
        Figures; see :class:`ccfair.plots.RunPlots`)."""
        from ccfair.plots import RunPlots

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
        from ccfair.present import run_html

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
        write_arrow_tables(root, self.run_id, self._arrow_tables())

    def parquet_bytes(self) -> dict[str, bytes]:
        """Each table as the bytes of the Parquet file :meth:`write_tables` would write (a
        cluster worker sends these; the sweep's process writes them)."""
        return {table: parquet_bytes_of(arrow) for table, arrow in self._arrow_tables().items()}

    def _arrow_tables(self) -> dict[str, Any]:
        # A table never read is the run's Arrow table as built (already in the schema's
        # exact form); one that was read, or given as a frame, is converted from the frame
        # as it is now (a caller may have changed it since the run).
        sources = self.__dict__.get("_sources", {})
        out = {}
        for table in (*TABLES, MARKER_TABLE):
            source = sources.get(table)
            if source is not None and table not in self.__dict__:
                out[table] = source
            else:
                out[table] = arrow_table(getattr(self, table), table)
        return out


def check_run_dir(results_dir: str | os.PathLike[str], extra: Sequence[str] = ()) -> Path:
    """Check, without creating anything, that single runs can be saved into ``results_dir``
    (a CLI run checks before it runs, so that a problem is one :class:`ResultsError` before
    the run rather than after it): a directory path, of this results schema, not a sweep's,
    every table folder (and the ``extra`` ones, e.g. ``trace``) a real folder or missing;
    a directory still to be made must be creatable in its nearest existing parent.

    Example:
        >>> check_run_dir("")
        Traceback (most recent call last):
        ccfair.errors.ResultsError: --out: "" is not a directory path
    """
    if not isinstance(results_dir, str | os.PathLike) or not str(results_dir).strip():
        raise ResultsError(f"--out: {show(results_dir)} is not a directory path")
    root = looked_up(Path(results_dir))
    if not root.exists():
        parent = root.absolute().parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise ResultsError(f"{root}: cannot be created ({parent} is a file)")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise ResultsError(f"{root}: cannot be created (no permission in {parent})")
        return root
    if not root.is_dir():
        raise ResultsError(f"{root}: is a file, not a directory")
    check_schema(root)
    if (root / SWEEP_FILE).exists():
        raise ResultsError(
            f"{root}: is a sweep's results directory ({SWEEP_FILE}); a single run saved there "
            "would mix into the sweep's tables: use another --out"
        )
    check_table_folders(root, (*TABLES, MARKER_TABLE, *extra))
    return root


def check_table_folders(root: Path, tables: Sequence[str]) -> None:
    """Raise :class:`ResultsError` if a table folder of ``root`` is a symbolic link or a
    file, creating nothing (:func:`table_folder` creates)."""
    for table in tables:
        folder = root / table
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            table_folder(root, table)  # raises, naming the folder


def prepare_run_dir(results_dir: str | os.PathLike[str], extra: Sequence[str] = ()) -> Path:
    """:func:`check_run_dir`, then create the directory and its table folders.

    Example:
        >>> prepare_run_dir("results")  # doctest: +SKIP
        PosixPath('results')
    """
    root = check_run_dir(results_dir, extra)
    make_dir(root)
    for table in (*TABLES, MARKER_TABLE, *extra):
        table_folder(root, table)
    return root


def write_arrow_tables(root: Path, run_id: str, tables: dict[str, Any]) -> None:
    """Write one run's Arrow tables (the schema's exact form: :func:`arrow_table`,
    :func:`ccfair.tables.build_tables`) into the results directory ``root``, each through
    a ccfair-named temporary, the ``runs`` file last.

    Example:
        >>> write_arrow_tables(Path("results"), t.run_id, t.tables)  # doctest: +SKIP
    """
    created: list[Path] = []
    try:
        for table in (*TABLES, MARKER_TABLE):
            arrow = tables[table]
            path = root / table / f"{run_id}.parquet"
            new = not path.exists()
            write_file_atomic(path, lambda tmp, arrow=arrow: _write_parquet(arrow, tmp))
            if new:
                created.append(path)
    except BaseException:
        # A run is finished when its runs file is written; without it, the tables written
        # here would be orphans in a plain read of a table folder. Files that were there
        # before (the same run saved earlier) are kept.
        for path in created:
            path.unlink(missing_ok=True)
        raise


def parquet_bytes_of(arrow: Any) -> bytes:
    """The bytes of the Parquet file of one table, as :func:`write_arrow_tables` writes it.

    Example:
        >>> import pyarrow as pa
        >>> parquet_bytes_of(pa.table({"a": [1]}))[:4]
        b'PAR1'
    """
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    _write_parquet(arrow, sink)
    return sink.getvalue().to_pybytes()


def jain_index(x: Any) -> float:
    """Jain's index (sum x)^2 / (n sum x^2); 1 means equal shares, 1/n one flow takes all.

    Defined on non-negative allocations (Jain, Chiu and Hawe, DEC-TR-301, 1984): a negative
    value is an error; no values, all zeros or a NaN give NaN.

    Example:
        >>> jain_index([1.0, 1.0])
        1.0
        >>> round(jain_index([3.0, 1.0]), 3)
        0.8
        >>> jain_index([2.0, -1.0])
        Traceback (most recent call last):
        ccfair.errors.SpecError: x: -1.0 is negative; Jain's index takes allocations >= 0
    """
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 1:
        raise SpecError("x", x, "is not a sequence of numbers (one per flow)")
    negative = arr[arr < 0]
    if len(negative):
        raise SpecError("x", float(negative[0]), "is negative; Jain's index takes allocations >= 0")
    denom = len(arr) * float(np.sum(arr * arr))
    return float(np.sum(arr) ** 2 / denom) if denom > 0 else float("nan")


def arrow_table(frame: pd.DataFrame, table: str) -> Any:
    """``frame`` as an Arrow table with the schema's exact columns and types of ``table`` and
    no pandas metadata: a plain read of the table's folder then returns every column of every
    run (docs/results.md, "One schema, plain reads").

    Column by column rather than ``pa.Table.from_pandas``: the same table (a NaN stored as
    null) in about half the time, above all because a float column's nulls come from numpy's
    NaN mask (:func:`ccfair.tables.floats`) instead of pandas' conversion.

    Example:
        >>> import pandas as pd
        >>> arrow_table(pd.DataFrame({"x": [1.0]}), "flows")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        RuntimeError: flows: columns differ from the schema: missing ['run_id', ...], extra ['x']
    """
    import pyarrow as pa

    from ccfair.tables import floats

    frame = conform(frame, table)
    target = schema.arrow_schema(table)
    arrays = [
        floats(frame[f.name].to_numpy())
        if pa.types.is_float64(f.type)
        else pa.array(frame[f.name], type=f.type, from_pandas=True)
        for f in target
    ]
    return pa.Table.from_arrays(arrays, schema=target)


def _write_parquet(arrow: Any, where: Any) -> None:
    import pyarrow.parquet as pq

    pq.write_table(arrow, where)


def schema_versions(results_dir: str | os.PathLike[str]) -> set[int]:
    """The results schema versions of the finished runs in ``results_dir`` (1: written
    before ``runs.schema_version`` existed). Reads only what it needs of each file."""
    import pyarrow.parquet as pq

    versions: set[int] = set()
    for rid in finished_run_ids(results_dir):
        path = Path(results_dir) / MARKER_TABLE / f"{rid}.parquet"
        try:
            # ParquetFile, not pq.read_table: that imports pyarrow.dataset, which imports
            # pandas (0.4 s in a fresh process) to read one number.
            with pq.ParquetFile(path) as file:
                if "schema_version" not in file.schema_arrow.names:
                    versions.add(1)
                    continue
                col = file.read(columns=["schema_version"]).column(0)
            versions.update(int(v) for v in col.to_pylist())
        except Exception:  # noqa: BLE001 - a damaged file is reported when it is read
            continue
    return versions


def check_schema(results_dir: str | os.PathLike[str]) -> None:
    """Raise :class:`ResultsError` (one line, saying what to do) if ``results_dir`` holds
    runs written with another results schema than this ccfair's: their columns differ, so
    they can neither be read under the current names nor mixed with new runs.

    Example:
        >>> check_schema("results")  # doctest: +SKIP
    """
    check_versions(results_dir, schema_versions(results_dir))


def check_versions(results_dir: str | os.PathLike[str], versions: set[int]) -> None:
    """:func:`check_schema` for versions already read (e.g. from a loaded runs table)."""
    old = sorted(v for v in versions if v != schema.VERSION)
    if old:
        raise ResultsError(
            f"{results_dir}: holds runs written with results schema {old[0]} (another ccfair "
            f"version); this one reads and writes schema {schema.VERSION} (docs/results.md, "
            "'Schema versions'): rerun into a new directory (--out NEW) or move this one away"
        )


def finished_run_ids(results_dir: str | os.PathLike[str]) -> list[str]:
    """Run ids whose results are complete in ``results_dir`` (files of other names are
    not runs and are ignored)."""
    marker = looked_up(Path(results_dir)) / MARKER_TABLE
    if not marker.is_dir():
        return []
    return sorted(p.stem for p in marker.glob("*.parquet") if RUN_ID.fullmatch(p.stem))


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
    elif run_id not in ids:
        raise ResultsError(f"{root}: no finished run {run_id!r}")
    check_schema(root)
    import pandas as pd

    frames = {}
    for table in (MARKER_TABLE, *TABLES):
        path = root / table / f"{run_id}.parquet"
        try:
            frames[table] = pd.read_parquet(path)
        except (OSError, ValueError) as exc:
            raise ResultsError(f"{path}: cannot be read ({exc})") from None
    return RunResult(run_id=run_id, **frames)


def read_run_table(path: Path) -> pd.DataFrame:
    """Read one run's table file; a missing or damaged file raises :class:`ResultsError`
    naming it (never a pyarrow traceback)."""
    return _read_arrow(path).to_pandas()


def _read_arrow(path: Path) -> Any:
    try:
        import pyarrow.parquet as pq

        return pq.read_table(path)
    except Exception as exc:  # noqa: BLE001 - any failure means the file is unusable
        # A resume checks footers only (reading every page of every run would cost what
        # the runs did), so damage inside a file is recomputed once its marker is gone.
        marker = path.parent.parent / MARKER_TABLE / path.name
        raise ResultsError(
            f"{path}: cannot be read ({' '.join(str(exc).split())[:200]}); if it belongs to a "
            f"sweep, delete {marker} and rerun the sweep into this directory to recompute "
            "the run"
        ) from None


def load_table(
    results_dir: str | os.PathLike[str], table: str, run_ids: list[str] | None = None
) -> pd.DataFrame:
    """One table over all finished runs of a results directory (or the given ``run_ids``),
    keyed by ``run_id``.

    Example:
        >>> ccfair.load_table("results", "flows")["goodput_mbps"]  # doctest: +SKIP
    """
    if table not in (MARKER_TABLE, *TABLES):
        raise ResultsError(f"table: {table!r} is not one of {', '.join((MARKER_TABLE, *TABLES))}")
    root = Path(results_dir)
    ids = finished_run_ids(root) if run_ids is None else run_ids
    paths = [root / table / f"{rid}.parquet" for rid in ids]
    if not paths:
        raise ResultsError(f"{root}: no finished runs")
    check_schema(root)
    return read_tables(paths)


def read_tables(paths: list[Path]) -> pd.DataFrame:
    """Several run files of one table as one frame. Each file must have the table's
    columns (:func:`columns_problem`): a missing one would be read as nulls, one of another
    type would fail the concatenation. (The schema version is not checked here.)

    Opening a file costs more than reading it: they are read on a few threads (pyarrow
    releases the GIL) and converted to pandas once, not once per run."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa

    with ThreadPoolExecutor(max_workers=max(1, min(8, len(paths)))) as pool:
        tables = list(pool.map(_read_arrow, paths))
    for path, table in zip(paths, tables, strict=True):
        if path.parent.name == MARKER_TABLE and not _of_this_schema(table):
            continue  # another version's runs: check_versions says so, naming the version
        problem = columns_problem(table.schema, path.parent.name)
        if problem is not None:
            raise ResultsError(
                f"{path}: {problem}; if it belongs to a sweep, rerun the sweep into this "
                "directory to recompute the damaged run"
            )
    return pa.concat_tables(tables, promote_options="default").to_pandas()


def _of_this_schema(runs: Any) -> bool:
    """Whether a runs table (Arrow) was written with this ccfair's results schema."""
    if "schema_version" not in runs.column_names:
        return False
    return set(runs.column("schema_version").to_pylist()) == {schema.VERSION}


def columns_problem(found: Any, table: str) -> str | None:
    """How a file's Arrow schema departs from ``table``'s (names, order, types; a
    dictionary-encoded column counts as its values' type), or None; None also for a table
    the schema does not define.

    Example:
        >>> import pyarrow as pa
        >>> columns_problem(pa.schema([("run_id", pa.string())]), "flows")  # doctest: +ELLIPSIS
        "has other columns than the schema's (missing ['flow_name', 'cca', 'src'], extra [])"
    """
    import pyarrow as pa

    def plain(t: Any) -> Any:
        return t.value_type if pa.types.is_dictionary(t) else t

    if table not in (MARKER_TABLE, *TABLES):
        return None
    want = schema.arrow_schema(table)
    if found.names != want.names:
        missing = [n for n in want.names if n not in found.names]
        extra = [n for n in found.names if n not in want.names]
        return f"has other columns than the schema's (missing {missing[:3]}, extra {extra[:3]})"
    for f, w in zip(found, want, strict=True):
        if plain(f.type) != plain(w.type):
            return f"has column {f.name} of type {f.type}, not {w.type}"
    return None


def build_result(
    resolved: Any,
    raw: dict[str, Any],
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
    (:func:`ccfair.tables.build_tables`), converted to pandas DataFrames when first read
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
    from ccfair.tables import build_tables

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
    ).tables
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
