"""A results directory as a whole: its finished runs with their grid points, its tables named
as one run's (``res.runs``, ``res.flows``, ``res.timeseries``, ``res.links``,
``res.link_summary``, each with the point's labels), and the metrics derived from them (per
run, per point, per algorithm; harm; two directories compared).

Definitions (docs/experiments.md, "Metrics"; docs/reference.md 8.4):

- goodput: payload bytes delivered in order within the measurement window x 8 / window
  length (the ``flows`` table's ``goodput_mbps``), in Mbit/s here;
- share of an algorithm: its flows' goodput / all flows' goodput;
- Jain index: (sum x)^2 / (n sum x^2) over the flows' goodput;
- bottleneck links of a run: on every flow's data path, the link direction(s) of the lowest
  rate; utilisation, loss rate and queue wait are taken over them;
- loss rate: (queue drops + random drops) / arrivals at the bottleneck(s);
- queue wait (``queue_wait_mean_ms``): mean sojourn at the bottleneck minus one packet's
  serialisation time (the time spent waiting in the queue), in ms;
- stability of a flow's goodput: coefficient of variation and 5th-95th percentile swing of
  its goodput over 1 s windows (:mod:`ccfair.analysis.flows`);
- harm (Ware et al., HotNets 2019): for the flows of algorithm A in a run against other
  algorithms, against the *baseline* run (the same scenario with every flow running A):
  goodput harm = (baseline - with) / baseline, delay harm = (with - baseline) / with;
  computed wherever the sweep includes the baseline run;
- mean and 95% confidence interval over repetitions: Student t (:mod:`ccfair.analysis.stats`),
  with the 5th, 50th and 95th percentiles of the repetitions.

Example:
    >>> res = Results("results/harada-dumbbell")  # doctest: +SKIP
    >>> res.point_metrics(["jain_index"]).head()  # doctest: +SKIP
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from ccfair.analysis.flows import STABILITY_COLUMNS
from ccfair.analysis.stats import summarize
from ccfair.errors import ResultsError, SpecError, show
from ccfair.present.views import ResultsPlots, results_html
from ccfair.results.columns import check_columns, column_names, percentiles_of
from ccfair.results.compare import compare_results
from ccfair.results.derived import (
    DERIVED_COLUMNS,
    STABILITY_INPUT,
    flow_facts,
    with_facts,
    with_stability,
)
from ccfair.results.harm import harm_table
from ccfair.results.metrics import cca_table, run_metric_table
from ccfair.results.points import points_table
from ccfair.store.directory import check_versions, finished_run_ids
from ccfair.store.files import looked_up
from ccfair.store.read import load_table, read_run_table, read_tables
from ccfair.store.schema import MARKER_TABLE, TABLES
from ccfair.store.sweep_record import read_sweep_record
from ccfair.units import plain

__all__ = ["PERCENTILES", "RUN_METRICS", "Results"]

#: Percentiles of the repetitions in every point summary (:meth:`Results.point_summary`).
PERCENTILES = (5, 50, 95)

#: The run metrics :meth:`Results.point_metrics` summarises by default (with every
#: ``<cca>_share_frac``).
RUN_METRICS = (
    "goodput_mbps",
    "jain_index",
    "utilisation_frac",
    "loss_frac",
    "queue_wait_mean_ms",
    "queue_delay_p95_ms",
    "queue_p99_bdp",
    *STABILITY_COLUMNS,
)


class _RunsTable(pd.DataFrame):
    """``res.runs``: a plain DataFrame that, called as the method ``runs()`` once was (it
    gave the derived metrics), says what to write instead."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            "Results.runs is the runs table (an attribute, as RunResult.runs), not a method; "
            "the per-run metrics that Results.runs() returned are Results.run_metrics(), "
            "their summary per point Results.point_metrics()"
        )


class _FlowsTable(pd.DataFrame):
    """``res.flows``; ``res.flows()`` (a method before) still gives the same table."""

    def __call__(self) -> pd.DataFrame:
        return pd.DataFrame(self)


class Results:
    """The finished runs of a results directory with their grid points: its tables, named as
    one run's (:class:`ccfair.RunResult`), and the metrics derived from them. Tables are
    read once and cached.

    Attributes:
        root: the directory.
        record: its ``sweep.json`` record, or None (a directory of ``ccfair run --out``).
        run_ids: finished runs.
        axes: grid key -> labels in grid order (empty without a sweep record).

    Tables (each with the point's labels: :meth:`points`): ``runs``, ``flows``,
    ``timeseries``, ``links``, ``link_summary``. Derived: :meth:`run_metrics` (one row per
    run), :meth:`point_metrics` (per point, over repetitions), :meth:`ccas`, :meth:`harm`.

    Example:
        >>> res = Results("results/harada-dumbbell")  # doctest: +SKIP
        >>> res.flows.groupby("cca")["goodput_mbps"].mean()  # doctest: +SKIP
        >>> res.point_metrics(["jain_index"]).head()  # doctest: +SKIP
    """

    def __init__(self, results_dir: str | os.PathLike[str]) -> None:
        if not isinstance(results_dir, str | os.PathLike):
            raise ResultsError(f"{show(results_dir)} is not a results directory path")
        self.root = looked_up(Path(results_dir))
        if self.root.exists() and not self.root.is_dir():
            raise ResultsError(f"{self.root}: is a file, not a results directory")
        if not self.root.is_dir():
            raise ResultsError(f"{self.root}: no such results directory")
        self.record = read_sweep_record(self.root)
        self.run_ids = finished_run_ids(self.root)
        if not self.run_ids:
            raise ResultsError(f"{self.root}: no finished runs")
        # The schema version is checked from the runs table itself (one threaded read of
        # every runs file, which the metrics need anyway) rather than file by file.
        runs = read_tables([self.root / MARKER_TABLE / f"{rid}.parquet" for rid in self.run_ids])
        if "schema_version" in runs.columns:
            versions = {1 if v != v else int(v) for v in runs["schema_version"]}
        else:
            versions = {1}
        check_versions(self.root, versions)
        self.axes: dict[str, list[Any]] = dict(self.record["axes"]) if self.record else {}
        self._cache: dict[str, Any] = {MARKER_TABLE: runs}

    # ---- display ----------------------------------------------------------------------

    def __repr__(self) -> str:
        pts = self.points()
        ccas = sorted(set(self.table("flows")["cca"]))
        what = (
            f"sweep {self.record['name']!r}, grid {', '.join(self.grid_keys)}"
            if self.record
            else "runs"
        )
        done = len(self.run_ids)
        runs = f"{done} runs" if done >= self.n_expected else f"{done} of {self.n_expected} runs"
        return (
            f"<Results {self.root}: {runs}, {pts['point_key'].nunique()} points "
            f"({what}); algorithms {', '.join(ccas)}>"
        )

    def incomplete(self) -> str | None:
        """What is missing, if the sweep has not finished every run (else None).

        Example:
            >>> Results("results/harada-dumbbell").incomplete()  # doctest: +SKIP
            'results/harada-dumbbell: 7 of 12 runs finished; the sweep is incomplete ...'
        """
        done, expected = len(self.run_ids), self.n_expected
        if done >= expected:
            return None
        return (
            f"{self.root}: {done} of {expected} runs finished; the sweep is incomplete (rerun "
            "it to finish): tables cover the finished runs only"
        )

    def _repr_html_(self) -> str:
        return results_html(self)

    @property
    def plot(self) -> Any:
        """Figures of this directory: ``res.plot.heatmap(x=..., y=...)``,
        ``res.plot.throughput_delay()``, ``res.plot.timeseries(run_id)``,
        ``res.plot.metric("jain_index")`` (see :class:`ccfair.present.views.ResultsPlots`)."""
        return ResultsPlots(self)

    # ---- raw tables -------------------------------------------------------------------

    def table(self, name: str) -> pd.DataFrame:
        """A results table over all finished runs as its files hold it (``runs``,
        ``flows``, ``link_summary``, ``timeseries``, ``links``): the schema's columns, no
        labels (see :attr:`flows` and the other tables for those)."""
        if not isinstance(name, str):
            load_table(self.root, name)  # raises the one-line error naming the tables
        if name not in self._cache:
            if name not in (MARKER_TABLE, *TABLES):
                load_table(self.root, name)  # raises the one-line error naming the tables
            # The schema was checked when this object was made.
            paths = [self.root / name / f"{rid}.parquet" for rid in self.run_ids]
            self._cache[name] = read_tables(paths)
        return cast("pd.DataFrame", self._cache[name])

    def run_tables(self, run_id: str) -> dict[str, pd.DataFrame]:
        """The time series tables of one run (``timeseries``, ``links``)."""
        return {
            t: read_run_table(self.root / t / f"{run_id}.parquet") for t in ("timeseries", "links")
        }

    @property
    def grid_keys(self) -> list[str]:
        """The grid keys in order."""
        return list(self.axes)

    @property
    def n_expected(self) -> int:
        """Distinct runs of the sweep (finished or not)."""
        return len(self.record["run_ids"]) if self.record else len(self.run_ids)

    def specs(self) -> dict[str, dict[str, Any]]:
        """Run id -> normalised spec."""
        if "_specs" not in self._cache:
            runs = self.table("runs")
            self._cache["_specs"] = {
                rid: json.loads(s) for rid, s in zip(runs["run_id"], runs["spec_json"], strict=True)
            }
        return cast("dict[str, dict[str, Any]]", self._cache["_specs"])

    # ---- points -----------------------------------------------------------------------

    def points(self) -> pd.DataFrame:
        """One row per sweep point and its finished run, in sweep order, then one per
        finished run the sweep record does not list (e.g. plain ``ccfair run``s), with what
        groups it: ``point_key`` (the normalised spec and backend without the seed: runs
        with the same key are repetitions of one point), ``scenario``, ``backend``,
        ``seed``, ``point_index``, ``baseline`` and ``rep`` from the sweep record (unlisted
        runs: 0, 1, ... by seed within the point), and a column per grid key: its label as
        written, missing for unlisted runs. An axis of plain numbers (``alpha``,
        ``n_flows``) is a numeric column; an axis of quantities has, beside its labels
        (``"18ms"``), their value in a column named for the unit: ``<key>_ms`` for
        durations, ``<key>_mbps`` for rates, ``<key>_bytes`` for sizes. Points whose
        scenarios are the same (a baseline that is also a grid point, a named value equal to
        the default) share one run and each have their row.

        Example:
            >>> Results("results/harada-dumbbell").points()[["delay", "delay_ms"]]  # doctest: +SKIP
        """
        if "points" in self._cache:
            return cast("pd.DataFrame", self._cache["points"])
        frame, coordinates = points_table(self.table("runs"), self.record, self.grid_keys)
        self._cache["points"] = frame
        self._cache["_coordinates"] = coordinates
        return frame

    def coordinates(self) -> dict[str, str]:
        """The numeric columns beside quantity labels (:meth:`points`) -> their grid key.

        Example:
            >>> Results("results/harada-dumbbell").coordinates()  # doctest: +SKIP
            {'delay_ms': 'delay'}
        """
        self.points()
        return dict(self._cache["_coordinates"])

    def select(self, **labels: Any) -> Results:
        """The runs of the points with these grid labels, as a :class:`Results` of their
        own (its axes hold the selected value only): a figure or table of one testbed, one
        buffer, ... A value may be written as the label is (``delay="18ms"``, ``alpha=4``).

        Example:
            >>> Results("results/harada-dumbbell").select(testbed="ideal")  # doctest: +SKIP
        """
        labels = {key: plain(value) for key, value in labels.items()}  # numpy's as Python's
        for key, value in labels.items():
            if key not in self.axes:
                raise SpecError(
                    key,
                    value,
                    f"is not a grid key of {self.root} (grid keys: "
                    f"{', '.join(self.grid_keys) or 'none'})",
                    with_value=False,
                )
            if value not in self.axes[key]:
                raise SpecError(
                    key, value, f"is not a value of the axis (values: {show(self.axes[key])})"
                )
        record = copy.deepcopy(self.record) or {}
        keep = [
            p
            for p in record.get("points", [])
            if all(p["params"].get(k) == v for k, v in labels.items())
        ]
        ids = list(dict.fromkeys(p["run_id"] for p in keep))
        finished = [rid for rid in self.run_ids if rid in set(ids)]
        if not finished:
            raise ResultsError(f"{self.root}: no finished run at {labels}")
        where = ", ".join(f"{k} {v}" for k, v in labels.items())
        record.update(
            name=f"{record.get('name', self.root.name)} ({where})",
            points=keep,
            run_ids=ids,
            n_points=len(keep),
            axes={k: ([labels[k]] if k in labels else v) for k, v in self.axes.items()},
        )
        out = copy.copy(self)
        out.record = record
        out.axes = dict(record["axes"])
        out.run_ids = finished
        mine = set(finished)
        out._cache = {
            name: frame[frame["run_id"].isin(mine)].reset_index(drop=True)
            for name, frame in self._cache.items()
            if name in (MARKER_TABLE, *TABLES)
        }
        return out

    # ---- tables, named as a run's -----------------------------------------------------

    def _labelled(self, name: str, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (rows of the ``name`` table) with the point's labels in front: one row
        per point and row of its run (a run shared by two points appears under each)."""
        points = self.points()
        if name in ("links", "link_summary"):  # a link's own delay_ms and rate_mbps stay
            points = points.drop(
                columns=[c for c in points.columns if c in frame.columns and c != "run_id"]
            )
        same = [c for c in points.columns if c != "run_id" and c in frame.columns]
        if name == MARKER_TABLE:  # scenario, backend, seed: the same values
            frame = frame.drop(columns=[c for c in same if c not in self.grid_keys])
        return points.merge(frame, on="run_id", how="inner", suffixes=("", "_of_run"))

    def _facts(self) -> pd.DataFrame:
        if "_facts" not in self._cache:
            self._cache["_facts"] = flow_facts(self.specs())
        return cast("pd.DataFrame", self._cache["_facts"])

    @property
    def runs(self) -> pd.DataFrame:
        """The runs table with each run's point (:meth:`points`): provenance and the
        normalised spec (``spec_json``), one row per point and run. The per-run metrics
        (``runs()`` before) are :meth:`run_metrics`."""
        if "_runs" not in self._cache:
            self._cache["_runs"] = _RunsTable(self._labelled(MARKER_TABLE, self.table("runs")))
        return cast("pd.DataFrame", self._cache["_runs"])

    @property
    def flows(self) -> pd.DataFrame:
        """One row per run and flow: the point's labels, rep, and the flows table
        (``goodput_mbps``, ``share_frac``, ``rtt_mean_ms``, ``rtt_p95_ms``,
        ``qdelay_p95_ms``, ``retrans_pkts``...) with the columns results add: ``role``,
        ``bottleneck_hop``, ``goodput_1s_cv`` and ``goodput_1s_swing_mbps`` (docs/results.md)."""
        if "_flows" not in self._cache:
            flows = with_facts(self.table("flows"), self._facts(), ("role", "bottleneck_hop"))
            runs = self.table("runs")
            windows = runs[["run_id", "measure_start_s", "measure_end_s"]]
            flows = with_stability(flows, self._goodput_samples(), windows, self._facts())
            self._cache["_flows"] = _FlowsTable(self._labelled("flows", flows))
        return cast("pd.DataFrame", self._cache["_flows"])

    def _goodput_samples(self) -> pd.DataFrame:
        """The time series' goodput samples of every run (four columns of its files)."""
        if "timeseries" in self._cache:
            return cast("pd.DataFrame", self._cache["timeseries"][STABILITY_INPUT])
        paths = [self.root / "timeseries" / f"{rid}.parquet" for rid in self.run_ids]
        return read_tables(paths, columns=STABILITY_INPUT)

    @property
    def timeseries(self) -> pd.DataFrame:
        """The time series of every run: the point's labels, rep, the samples and each
        flow's ``cca``, ``role`` and ``bottleneck_hop`` (docs/results.md)."""
        if "_timeseries" not in self._cache:
            ts = with_facts(self.table("timeseries"), self._facts(), DERIVED_COLUMNS["timeseries"])
            self._cache["_timeseries"] = self._labelled("timeseries", ts)
        return cast("pd.DataFrame", self._cache["_timeseries"])

    @property
    def links(self) -> pd.DataFrame:
        """The links' samples of every run, with the point's labels and rep."""
        if "_links" not in self._cache:
            self._cache["_links"] = self._labelled("links", self.table("links"))
        return cast("pd.DataFrame", self._cache["_links"])

    @property
    def link_summary(self) -> pd.DataFrame:
        """The link summaries of every run, with the point's labels and rep."""
        if "_link_summary" not in self._cache:
            table = self.table("link_summary")
            self._cache["_link_summary"] = self._labelled("link_summary", table)
        return cast("pd.DataFrame", self._cache["_link_summary"])

    # ---- metric tables ----------------------------------------------------------------

    def run_metrics(self) -> pd.DataFrame:
        """One row per run: the point's labels, rep, and run metrics: ``goodput_mbps`` (all
        flows), ``jain_index``, ``<cca>_share_frac`` per algorithm, the stability of the
        flows' 1 s goodput (``goodput_1s_cv``, ``goodput_1s_swing_mbps``: means over the
        run's flows), and at the bottleneck(s) ``utilisation_frac``, ``loss_frac`` (every
        drop: buffer overflows, a queue discipline's drops, random loss),
        ``queue_wait_mean_ms`` (mean sojourn minus one packet's serialisation),
        ``queue_delay_p95_ms``, ``buffer_pkts``, ``buffer_bdp``, ``drop_queue_pkts`` (buffer
        overflows), the sampled queue's 99th percentile ``queue_p99_pkts`` and
        ``queue_p99_bdp`` and, at a queue discipline, ``sojourn_p95_ms`` (the largest over
        the bottlenecks; NaN without a discipline).

        Example:
            >>> Results("results/harada-dumbbell").run_metrics()["jain_index"]  # doctest: +SKIP
        """
        if "run_metrics" in self._cache:
            return cast("pd.DataFrame", self._cache["run_metrics"].copy())
        out = run_metric_table(
            self.table("flows"), self.flows, self.table("link_summary"), self.specs(), self.points()
        )
        self._cache["run_metrics"] = out
        return out.copy()

    def point_metrics(
        self, values: Sequence[str] | None = None, *, percentiles: Sequence[float] = PERCENTILES
    ) -> pd.DataFrame:
        """The run metrics per point (:meth:`point_summary` of :meth:`run_metrics`): for
        each of ``values`` (default :data:`RUN_METRICS` and every ``<cca>_share_frac``) the
        mean over the repetitions, its 95% interval's half-width (``<v>_ci95``) and the
        repetitions' percentiles (``<v>_p5``, ``<v>_p50``, ``<v>_p95``), with ``n``.

        Example:
            >>> Results("results/harada-dumbbell").point_metrics(["jain_index"])  # doctest: +SKIP
        """
        runs = self.run_metrics()
        if values is None:
            shares = [c for c in runs.columns if c.endswith("_share_frac")]
            values = [v for v in (*RUN_METRICS, *shares) if v in runs.columns]
        return self.point_summary(runs, column_names(values, "values"), percentiles=percentiles)

    def ccas(self) -> pd.DataFrame:
        """One row per run and algorithm: ``flow_count``, ``per_flow_mbps`` (mean over its
        flows), ``share_frac``, ``rtt_mean_ms``, ``rtt_p95_ms``, ``qdelay_p95_ms``,
        ``goodput_1s_cv``, ``goodput_1s_swing_mbps`` (means over its flows) and
        ``retrans_pkts`` (sum)."""
        return cca_table(self.flows, list(self.points().columns))

    def harm(self) -> pd.DataFrame:
        """Harm (Ware et al., HotNets 2019) wherever the baseline run is in the directory.

        One row per point and incumbent algorithm A of a mixed run: ``contender`` (the other
        algorithms), ``goodput_mbps`` of A's flows and ``baseline_mbps`` of the same flows in
        the baseline run (every flow running A; same scenario and seed), ``harm_goodput_frac`` =
        (baseline - with) / baseline, and ``harm_rtt_frac`` = (with - baseline) / with of their
        mean RTT. Empty when no baseline run is present.
        """
        frame = harm_table(self.table("runs"), self.table("flows"), self.specs())
        points = self.points()
        return points[points["baseline"].isna()].merge(
            frame, on="run_id", how="inner", suffixes=("", "_of_run")
        )

    # ---- aggregation over repetitions -------------------------------------------------

    def point_summary(
        self,
        frame: pd.DataFrame,
        values: Sequence[str],
        extra_keys: Sequence[str] | None = None,
        *,
        percentiles: Sequence[float] = PERCENTILES,
    ) -> pd.DataFrame:
        """Mean, 95% CI (``<v>_ci95``, the half-width) and percentiles (``<v>_p5``,
        ``<v>_p50``, ``<v>_p95``: of the repetitions' values, linearly interpolated between
        them) of ``values`` over the repetitions of each point (and per ``extra_keys``, e.g.
        ``["flow_name"]`` for flows, ``["cca"]`` for algorithms), in grid order, with the
        number of repetitions ``n``. Repetitions are the runs of one ``point_key`` (same
        normalised spec and backend, different seeds), so runs of different scenarios are
        never averaged, in a sweep's directory or one of plain runs. Points are labelled by
        the grid keys (and their numeric columns), or by ``scenario`` and ``backend``
        without a sweep record. Baseline points are kept apart (column ``baseline``, "" for
        grid points). A name that is not a column of ``frame`` is a :class:`SpecError`
        naming the columns there are.

        Example:
            >>> res = Results("results/harada-dumbbell")  # doctest: +SKIP
            >>> res.point_summary(res.ccas(), ["share_frac"], ["cca"])  # doctest: +SKIP
        """
        values = column_names(values, "values")
        percentiles = percentiles_of(percentiles)
        check_columns(frame, values, "values")
        if extra_keys is not None and not (isinstance(extra_keys, list | tuple) and not extra_keys):
            extra_keys = column_names(extra_keys, "extra_keys")
            check_columns(frame, extra_keys, "extra_keys", numeric=False)
        labels = [
            *(self.grid_keys or ["scenario", "backend"]),
            *(c for c in self.coordinates() if c in frame.columns),
        ]
        by = [*labels, "baseline", "point_key", *(extra_keys or [])]
        data = frame.assign(baseline=frame["baseline"].fillna(""))
        data = data.sort_values("point_index", kind="stable")
        out = summarize(data, by, list(values), percentiles=percentiles)
        if len(out) and (out["baseline"] == "").all():
            out = out.drop(columns=["baseline"])
        return out

    # ---- export and comparison ----------------------------------------------------------

    def to_xarray(self, values: list[str] | None = None) -> Any:
        """The run metrics as an ``xarray.Dataset`` with one dimension per grid key plus
        ``rep`` (without a sweep record: ``scenario``, ``backend`` and ``rep``); baseline runs
        are left out. An axis of plain numbers has numeric coordinates
        (``ds.sel(alpha=4)``); an axis of quantities keeps its labels (``ds.sel(delay="18ms")``)
        with their values as a coordinate beside them (``ds["delay_ms"]``). ``values`` picks
        metrics of :meth:`run_metrics` (default: every numeric one). Needs xarray
        (``pip install 'ccfair[xarray]'``).

        Example:
            >>> ds = Results("results/harada-dumbbell-quick").to_xarray()  # doctest: +SKIP
            >>> ds["jain_index"].mean("rep").sel(ccas="reno-bbr", alpha=4)  # doctest: +SKIP
        """
        try:
            import xarray  # noqa: F401
        except ImportError:
            raise ImportError(
                "Results.to_xarray needs xarray: pip install 'ccfair[xarray]' (or xarray)"
            ) from None
        runs = self.run_metrics()
        runs = runs[runs["baseline"].isna()]
        dims = [*(self.grid_keys or ["scenario", "backend"]), "rep"]
        coordinates = {c: k for c, k in self.coordinates().items() if c in runs.columns}
        skip = {"point_index", "seed", "n_flows", *dims, *coordinates}
        if values is None:
            values = [
                c for c in runs.columns if c not in skip and pd.api.types.is_numeric_dtype(runs[c])
            ]
        else:
            check_columns(runs, values, "values")
        frame = runs.assign(
            **{
                k: runs[k].astype(str)
                for k in dims
                if k != "rep" and not pd.api.types.is_numeric_dtype(runs[k])
            }
        )
        if frame.duplicated(dims).any():
            raise ResultsError(f"{self.root}: two runs share one {dims} cell; cannot make a grid")
        ds = frame.set_index(dims)[values].to_xarray()
        for name, key in coordinates.items():
            value_of = dict(zip(frame[key], frame[name], strict=False))
            ds = ds.assign_coords({name: (key, [value_of.get(v, np.nan) for v in ds[key].values])})
        return ds

    def compare(
        self, other: Results | str | os.PathLike[str], values: list[str] | None = None
    ) -> pd.DataFrame:
        """Line up the matching points of this directory (A) and ``other`` (B) and compare
        run metrics: per point and metric, each side's mean, 95% CI half-width and count over
        repetitions, ``diff`` = B - A and ``diff_ci95`` (Welch's t interval of the
        difference), ``significant`` when the interval excludes 0.

        Points match on their grid labels when the two directories have the same grid keys
        (two versions or two settings of one sweep, or the simulator against the kernel
        backend), else on their whole normalised scenario, seed and backend aside. Nothing
        is pooled: an axis one directory has and the other lacks, or several points of one
        side at one label (two backends in one directory), is a :class:`ResultsError`, as
        is a pair of directories with no point in common (it names what differs).
        ``frame.attrs["unmatched"]`` counts the points of each side without a partner.

        Example:
            >>> Results("results/v1").compare("results/v2")  # doctest: +SKIP
        """
        b = other if isinstance(other, Results) else Results(other)
        return compare_results(self, b, None if values is None else column_names(values, "values"))
