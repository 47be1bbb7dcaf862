"""Run results: pandas tables, Parquet storage with provenance, and summaries.

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
import platform
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ccfair import _core
from ccfair.errors import CcfairError

TABLES = ("flows", "timeseries", "links", "link_summary")
#: The table whose file marks a finished run.
MARKER_TABLE = "runs"
#: A run id: the first 16 hex digits of a content hash (:func:`ccfair.api.run_id_of`).
RUN_ID = re.compile(r"[0-9a-f]{16}")


class ResultsError(CcfairError, ValueError):
    """A results directory or file is missing, foreign, damaged or cannot be written."""


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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def remove_stale_temporaries(root: Path) -> int:
    """Delete the temporary files that ccfair writers left in ``root``'s table folders and
    whose writer process is gone (killed mid-write); returns how many. Files ccfair did
    not create, and temporaries of writers still running, are never touched."""
    n = 0
    for table in (MARKER_TABLE, *TABLES):
        folder = root / table
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


def make_dir(path: Path) -> None:
    """Create a directory (and parents) or fail with a :class:`ResultsError` saying why
    (a file in the way, no permission, a read-only file system)."""
    if path.exists() and not path.is_dir():
        raise ResultsError(f"{path}: is a file, not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsError(f"{path}: cannot create the directory ({exc.strerror or exc})") from None


def write_file_atomic(path: Path, write: Any) -> None:
    """Write ``path`` through its temporary name (``write(tmp_path)``), fsync it, and rename
    it into place; a failure leaves no temporary behind and raises :class:`ResultsError`."""
    table_folder(path.parent.parent, path.parent.name)
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
    if kind == "u8":
        return np.frombuffer(data, dtype="<u8").astype(np.int64)
    if kind == "f8":
        return np.frombuffer(data, dtype="<f8").copy()
    if kind == "cat":
        codes, categories = data
        return pd.Categorical.from_codes(
            np.frombuffer(codes, dtype="<u4").astype(np.int32), categories
        )
    return pd.Categorical(list(data))


def _frame(raw: dict[str, tuple[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame({name: _column(kind, data) for name, (kind, data) in raw.items()})


@dataclass
class RunResult:
    """The tables of one run, as pandas DataFrames.

    Attributes:
        run_id: content hash of the normalised spec and backend.
        runs: one row of provenance (spec, versions, host, times).
        flows: per-flow summary: goodput over the measurement window (``goodput_bps``,
            ``goodput_mbps``), ``share`` of all goodput, bytes, retransmissions, RTT mean/min
            and the algorithm's own counters.
        timeseries: per-flow samples at the sampling interval (``t_s``, cwnd, inflight, srtt,
            min RTT, pacing and delivery rate, goodput, CA state, algorithm internals).
        links: per link direction samples (queue in packets and bytes, drops, utilisation).
        link_summary: per link direction over the measurement window.
        trace: the per-packet trace of the flows a run was asked to trace
            (``ccfair.run(..., trace=[...])``; docs/results.md, "Traces"), else None. Not
            saved with the tables.

    Example:
        >>> import ccfair
        >>> r = ccfair.run(ccfair.dumbbell(2, "reno", duration="5s"))
        >>> float(round(r.flows["share"].sum(), 6))
        1.0
    """

    run_id: str
    runs: pd.DataFrame
    flows: pd.DataFrame
    timeseries: pd.DataFrame
    links: pd.DataFrame
    link_summary: pd.DataFrame
    trace: pd.DataFrame | None = None

    @property
    def spec(self) -> dict[str, Any]:
        """The normalised scenario this run executed."""
        return json.loads(self.runs["spec_json"].iloc[0])

    def jain_index(self) -> float:
        """Jain's fairness index of the flows' goodput, (sum x)^2 / (n sum x^2)."""
        return jain_index(self.flows["goodput_bps"].to_numpy())

    def summary(self) -> pd.DataFrame:
        """The per-flow table the CLI prints (Mbit/s, ms, percent)."""
        f = self.flows
        return pd.DataFrame(
            {
                "flow": f["name"],
                "cca": f["cca"],
                "path": f["node_path"],
                "goodput_Mbps": f["goodput_mbps"].round(3),
                "share_%": (100 * f["share"]).round(1),
                "retrans": f["retrans_pkts"],
                "rto": f["rto_count"],
                "rtt_mean_ms": (f["rtt_mean_us"] / 1e3).round(2),
                "rtt_min_ms": (f["rtt_min_us"] / 1e3).round(2),
            }
        )

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
        if run["backend"] == "kernel":
            lines.append(self.format_selfcheck())
        busiest = self.link_summary.sort_values("utilisation", ascending=False).head(1)
        if len(busiest):
            b = busiest.iloc[0]
            lines.append(
                f"busiest link {b['link_name']} ({b['direction']}): utilisation "
                f"{100 * b['utilisation']:.2f}%, drops {int(b['drops_queue'])}, "
                f"mean sojourn {b['mean_sojourn_us'] / 1e3:.2f} ms"
            )
        return "\n".join(lines)

    @property
    def reliable(self) -> bool:
        """False when a kernel run exceeded a self-check bound (see ``runs.flags``)."""
        return bool(self.runs["reliable"].iloc[0])

    def format_selfcheck(self) -> str:
        """One line on the kernel backend's self-checks, and why a run is flagged.

        Example:
            >>> r.format_selfcheck()  # doctest: +SKIP
            'self-check ok: lateness p50/p99/p99.9 16/42/68 us, forwarder CPU 40%, ...'
        """
        run = self.runs.iloc[0]
        text = (
            f"lateness p50/p99/p99.9 {run['emu_lateness_p50_us']:.0f}/"
            f"{run['emu_lateness_p99_us']:.0f}/{run['emu_lateness_p999_us']:.0f} us, "
            f"forwarder CPU {run['emu_cpu_frac']:.0%}, "
            f"slowest link {run['emu_rate_ratio_min']:.2%} of its rate, "
            f"missed samples {run['emu_missed_samples']:.0f}"
        )
        if run["reliable"]:
            return f"self-check ok: {text}"
        return f"UNRELIABLE RUN: {run['flags']} ({text})"

    def save(self, results_dir: str | os.PathLike[str]) -> Path:
        """Write this run into ``results_dir`` atomically; returns the directory.

        Example:
            >>> r.save("results")  # doctest: +SKIP
            PosixPath('results')
        """
        root = Path(results_dir)
        make_dir(root)
        for table in (*TABLES, MARKER_TABLE):
            frame = self.runs if table == MARKER_TABLE else getattr(self, table)
            _write_atomic(frame, root / table / f"{self.run_id}.parquet")
        return root


def jain_index(x: Any) -> float:
    """Jain's index (sum x)^2 / (n sum x^2); 1 means equal shares.

    Example:
        >>> jain_index([1.0, 1.0])
        1.0
        >>> round(jain_index([3.0, 1.0]), 3)
        0.8
    """
    arr = np.asarray(x, dtype=float)
    denom = len(arr) * float(np.sum(arr * arr))
    return float(np.sum(arr) ** 2 / denom) if denom > 0 else float("nan")


def _write_atomic(frame: pd.DataFrame, path: Path) -> None:
    write_file_atomic(path, lambda tmp: frame.to_parquet(tmp, index=False))


def finished_run_ids(results_dir: str | os.PathLike[str]) -> list[str]:
    """Run ids whose results are complete in ``results_dir`` (files of other names are
    not runs and are ignored)."""
    marker = Path(results_dir) / MARKER_TABLE
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
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - any failure means the file is unusable
        raise ResultsError(
            f"{path}: cannot be read ({' '.join(str(exc).split())[:200]}); if it belongs to a "
            "sweep, rerun the sweep into this directory to recompute the damaged run"
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
    return pd.concat([read_run_table(p) for p in paths], ignore_index=True)


def provenance() -> dict[str, str]:
    """Versions and host facts recorded with every run."""
    return {
        "ccfair_version": _core.__version__,
        "git_revision": _core.__git_revision__,
        "host": platform.node(),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def _selfcheck_columns(selfcheck: dict[str, Any] | None, flags: list[str]) -> dict[str, Any]:
    """The run-level self-check columns (docs/results.md, runs): ``reliable`` and ``flags``
    on every backend; ``emu_*`` measured by the kernel backend's emulator, NaN otherwise."""
    nan = float("nan")

    def num(v: Any) -> float:
        return float(v) if isinstance(v, int | float) else nan

    out: dict[str, Any] = {"reliable": not flags, "flags": "; ".join(flags)}
    fwd = (selfcheck or {}).get("forwarder", {})
    late = fwd.get("lateness", {})
    rates = [
        r["achieved_bps"] / r["rate_bps"]
        for r in fwd.get("rates", [])
        if r.get("achieved_bps") is not None and r.get("busy_s", 0) >= 1.0
    ]
    out.update(
        {
            "emu_lateness_p50_us": num(late.get("p50_us")),
            "emu_lateness_p99_us": num(late.get("p99_us")),
            "emu_lateness_p999_us": num(late.get("p999_us")),
            "emu_lateness_max_us": num(late.get("max_us")),
            "emu_cpu_frac": num(fwd.get("cpu_frac")),
            "emu_process_cpu_frac": num((selfcheck or {}).get("process_cpu_frac")),
            "emu_rate_ratio_min": min(rates) if rates else nan,
            "emu_missed_samples": num((selfcheck or {}).get("missed_samples")),
            "emu_sampling_p99_us": num(
                (selfcheck or {}).get("sampling_lateness", {}).get("p99_us")
            ),
            "emu_host_tx_drops": num((selfcheck or {}).get("host_tx_drops")),
            "kernel_hz": num((selfcheck or {}).get("kernel_hz")),
            "selfcheck_json": json.dumps(selfcheck, sort_keys=True) if selfcheck else "",
        }
    )
    return out


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
) -> RunResult:
    """Turn the engine's column dict into labelled DataFrames.

    ``selfcheck`` and ``flags`` come from the kernel backend (see docs/kernel.md): the
    emulator's measurements of itself and the bounds they exceeded. The ``runs`` table has
    the same columns on both backends (NaN / empty for the simulator).
    """
    spec = resolved.engine_spec
    flow_info = resolved.flows
    link_info = resolved.links

    flows = _frame(raw["flows"])
    flows.insert(0, "run_id", run_id)
    flows.insert(2, "name", [f.name for f in flow_info])
    flows.insert(3, "cca", [f.cca for f in flow_info])
    flows.insert(4, "src", [f.src for f in flow_info])
    flows.insert(5, "dst", [f.dst for f in flow_info])
    flows.insert(6, "node_path", [">".join(f.node_path) for f in flow_info])
    flows["cca_params"] = [json.dumps(f["cca_params"], sort_keys=True) for f in spec["flows"]]
    # Effective start times (nominal start plus seeded start jitter), as the engine used them.
    flows["start_s"] = [t / 1e9 for t in _core.flow_starts(resolved.engine_json)]
    flows["base_rtt_ms"] = [f.base_rtt_ns / 1e6 for f in flow_info]
    flows["bdp_pkts"] = [f.bdp_pkts for f in flow_info]
    flows["goodput_mbps"] = flows["goodput_bps"] / 1e6
    total = flows["goodput_bps"].sum()
    flows["share"] = flows["goodput_bps"] / total if total > 0 else np.nan
    counters = _frame(raw["flow_counters"])
    if len(counters):
        wide = counters.pivot_table(index="flow", columns="name", values="value", observed=True)
        flows = flows.merge(wide, left_on="flow", right_index=True, how="left")

    names = [f.name for f in flow_info]
    ts = _frame(raw["timeseries"])
    ts.insert(0, "run_id", run_id)
    ts.insert(1, "t_s", ts["t_ns"] / 1e9)
    ts.insert(3, "flow_name", pd.Categorical([names[i] for i in ts["flow"]]))

    lnames = [link.name for link in link_info]
    links = _frame(raw["links"])
    links.insert(0, "run_id", run_id)
    links.insert(1, "t_s", links["t_ns"] / 1e9)
    links.insert(3, "link_name", pd.Categorical([lnames[i] for i in links["link"]]))

    ls = _frame(raw["link_summary"])
    ls.insert(0, "run_id", run_id)
    ls.insert(2, "link_name", [lnames[i] for i in ls["link"]])
    ls["rate_bps"] = [link_info[i].rate_bps for i in ls["link"]]
    ls["delay_ms"] = [link_info[i].delay_ns / 1e6 for i in ls["link"]]
    ls["buffer_pkts"] = [link_info[i].buffer_pkts for i in ls["link"]]
    ls["buffer_bdp"] = [link_info[i].buffer_bdp for i in ls["link"]]
    arrivals = ls["arrivals"].replace(0, np.nan)
    ls["loss_rate"] = (ls["drops_queue"] + ls["drops_random"]) / arrivals

    normalized = resolved.normalized
    runs = pd.DataFrame(
        [
            {
                "run_id": run_id,
                "scenario": normalized.get("name", "scenario"),
                "backend": backend,
                "seed": spec["seed"],
                "duration_s": spec["duration_ns"] / 1e9,
                "measure_start_s": spec["measure_start_ns"] / 1e9,
                "measure_end_s": spec["measure_end_ns"] / 1e9,
                "n_flows": len(spec["flows"]),
                "n_links": len(spec["links"]),
                "spec_json": json.dumps(normalized, sort_keys=True),
                **provenance(),
                "started_at": started_at,
                "wall_time_s": wall_time_s,
                "engine_events": raw["engine"]["events"],
                "engine_packet_hops": raw["engine"]["packet_hops"],
                **_selfcheck_columns(selfcheck, flags or []),
            }
        ]
    )
    trace = None
    if "trace" in raw:
        trace = _frame(raw["trace"])
        trace.insert(0, "run_id", run_id)
        trace.insert(1, "t_s", trace["t_ns"] / 1e9)
        trace.insert(3, "flow_name", pd.Categorical([names[i] for i in trace["flow"]]))
        trace.insert(5, "link_name", pd.Categorical([lnames[i] for i in trace["link"]]))
    return RunResult(
        run_id=run_id,
        runs=runs,
        flows=flows,
        timeseries=ts,
        links=links,
        link_summary=ls,
        trace=trace,
    )
