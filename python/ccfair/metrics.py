"""Metrics over a results directory: per flow, per algorithm, per run and per grid point.

Definitions (docs/experiments.md, "Metrics"; docs/reference.md 8.4):

- goodput: payload bytes delivered in order within the measurement window x 8 / window
  length (the ``flows`` table's ``goodput_mbps``), in Mbit/s here;
- share of an algorithm: its flows' goodput / all flows' goodput;
- Jain index: (sum x)^2 / (n sum x^2) over the flows' goodput;
- bottleneck links of a run: on every flow's data path, the link direction(s) of the lowest
  rate; utilisation, loss rate and queueing delay are taken over them;
- loss rate: (queue drops + random drops) / arrivals at the bottleneck(s);
- queueing delay: mean sojourn at the bottleneck minus one packet's serialisation time (the
  time spent waiting in the queue), in ms;
- harm (Ware et al., HotNets 2019): for the flows of algorithm A in a run against other
  algorithms, against the *baseline* run (the same scenario with every flow running A):
  goodput harm = (baseline - with) / baseline, delay harm = (with - baseline) / with;
  computed wherever the sweep includes the baseline run;
- mean and 95% confidence interval over repetitions: Student t, half-width
  t(0.975, n-1) x s / sqrt(n).
"""

from __future__ import annotations

import json
import math
import os
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ccfair.errors import SpecError
from ccfair.results import (
    ResultsError,
    check_schema,
    finished_run_ids,
    jain_index,
    load_table,
    looked_up,
)
from ccfair.topology import PACKET_BYTES
from ccfair.units import parse_duration, parse_rate

__all__ = ["Results", "bottlenecks", "ci95", "summarize", "t_quantile", "welch_ci95"]


# --------------------------------------------------------------------------------------------
# Statistics


def _t_pdf(x: float, df: int) -> float:
    c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(c - (df + 1) / 2 * math.log1p(x * x / df))


def _t_cdf_above_half(x: float, df: int, steps: int = 4000) -> float:
    # Composite Simpson's rule of the density on [0, x]; the density is smooth there.
    h = x / steps
    total = _t_pdf(0.0, df) + _t_pdf(x, df)
    for i in range(1, steps):
        total += (4 if i % 2 else 2) * _t_pdf(i * h, df)
    return 0.5 + total * h / 3


@cache
def t_quantile(p: float, df: int) -> float:
    """Quantile of Student's t distribution with ``df`` degrees of freedom, for p >= 0.5.

    Computed by bisection on the numerically integrated density (no SciPy needed).

    Example:
        >>> round(t_quantile(0.975, 1), 3), round(t_quantile(0.975, 10), 3)
        (12.706, 2.228)
    """
    if not 0.5 <= p < 1 or df < 1:
        raise ValueError(f"t_quantile: need 0.5 <= p < 1 and df >= 1 (got p={p}, df={df})")
    lo, hi = 0.0, 1.0
    while _t_cdf_above_half(hi, df) < p:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if _t_cdf_above_half(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def ci95(values: Any) -> float:
    """Half-width of the 95% confidence interval of the mean (NaN for fewer than 2 values).

    Example:
        >>> round(ci95([1.0, 2.0, 3.0]), 3)
        2.484
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n < 2:
        return float("nan")
    return t_quantile(0.975, n - 1) * float(np.std(x, ddof=1)) / math.sqrt(n)


def summarize(
    frame: pd.DataFrame, by: list[str], values: list[str], *, sort: bool = False
) -> pd.DataFrame:
    """Mean, 95% CI half-width (``<col>_ci95``) and count (``n``) of ``values`` per group.

    Example:
        >>> df = pd.DataFrame({"k": ["a", "a", "b"], "x": [1.0, 3.0, 5.0]})
        >>> summarize(df, ["k"], ["x"]).to_dict("records")[0]["x"]
        2.0
    """
    rows = []
    for key, group in frame.groupby(by, sort=sort, dropna=False, observed=True):
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(by, key, strict=True))
        row["n"] = len(group)
        for col in values:
            row[col] = float(group[col].mean())
            row[f"{col}_ci95"] = ci95(group[col])
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Bottlenecks


def bottlenecks(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """(link name, direction) of the bottleneck(s) of a normalised spec: on each flow's data
    path, the link direction(s) of the lowest rate.

    Example:
        >>> import ccfair
        >>> bottlenecks(ccfair.dumbbell(2, "reno").resolve().normalized)
        [('bottleneck', 'ab')]
    """
    by_pair: dict[tuple[str, str], tuple[str, str, int]] = {}
    for link in spec["links"]:
        a, b = link["between"]
        rate = parse_rate(link["rate"]) or 0
        by_pair[(a, b)] = (link["name"], "ab", rate)
        by_pair[(b, a)] = (link["name"], "ba", rate)
    out: list[tuple[str, str]] = []
    for flow in spec["flows"]:
        hops = [by_pair[(u, v)] for u, v in zip(flow["path"], flow["path"][1:], strict=False)]
        low = min(h[2] for h in hops)
        for name, direction, rate in hops:
            if rate == low and (name, direction) not in out:
                out.append((name, direction))
    return out


# --------------------------------------------------------------------------------------------
# A results directory


class Results:
    """The finished runs of a results directory with their grid points, and the metric
    tables over them. Tables are read once and cached.

    Attributes:
        root: the directory.
        record: its ``sweep.json`` record, or None (a directory of ``ccfair run --out``).
        run_ids: finished runs.
        axes: grid key -> labels in grid order (empty without a sweep record).

    Example:
        >>> res = Results("results/harada-dumbbell")  # doctest: +SKIP
        >>> res.point_summary(res.runs(), ["jain_index"]).head()  # doctest: +SKIP
    """

    def __init__(self, results_dir: str | os.PathLike[str]) -> None:
        from ccfair.executor import read_sweep_record

        self.root = looked_up(Path(results_dir))
        if not self.root.is_dir():
            raise ResultsError(f"{self.root}: no such results directory")
        self.record = read_sweep_record(self.root)
        self.run_ids = finished_run_ids(self.root)
        if not self.run_ids:
            raise ResultsError(f"{self.root}: no finished runs")
        check_schema(self.root)
        self.axes: dict[str, list[Any]] = dict(self.record["axes"]) if self.record else {}
        self._cache: dict[str, pd.DataFrame] = {}

    # ---- display ----------------------------------------------------------------------

    def __repr__(self) -> str:
        pts = self.points()
        ccas = sorted(set(self.table("flows")["cca"]))
        what = (
            f"sweep {self.record['name']!r}, grid {', '.join(self.grid_keys)}"
            if self.record
            else "runs"
        )
        return (
            f"<Results {self.root}: {len(self.run_ids)} runs, {pts['point_key'].nunique()} points "
            f"({what}); algorithms {', '.join(ccas)}>"
        )

    def _repr_html_(self) -> str:
        from ccfair.present import results_html

        return results_html(self)

    @property
    def plot(self) -> Any:
        """Figures of this directory: ``res.plot.heatmap(x=..., y=...)``,
        ``res.plot.throughput_delay()``, ``res.plot.timeseries(run_id)``,
        ``res.plot.metric("jain_index")`` (see :class:`ccfair.plots.ResultsPlots`)."""
        from ccfair.plots import ResultsPlots

        return ResultsPlots(self)

    # ---- raw tables -------------------------------------------------------------------

    def table(self, name: str) -> pd.DataFrame:
        """A results table over all finished runs (``runs``, ``flows``, ``link_summary``,
        ``timeseries``, ``links``)."""
        if name not in self._cache:
            self._cache[name] = load_table(self.root, name, self.run_ids)
        return self._cache[name]

    def run_tables(self, run_id: str) -> dict[str, pd.DataFrame]:
        """The time series tables of one run (``timeseries``, ``links``)."""
        from ccfair.results import read_run_table

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
            self._cache["_specs"] = {  # type: ignore[assignment]
                rid: json.loads(s) for rid, s in zip(runs["run_id"], runs["spec_json"], strict=True)
            }
        return self._cache["_specs"]  # type: ignore[return-value]

    # ---- points -----------------------------------------------------------------------

    def points(self) -> pd.DataFrame:
        """One row per finished run with what groups it: ``point_key`` (the normalised spec
        and backend without the seed: runs with the same key are repetitions of one point),
        ``scenario``, ``backend``, ``seed``, ``rep`` (0, 1, ... by seed within the point),
        ``index`` and ``baseline`` from the sweep record, and a column per grid key (its
        label; missing for runs the record does not list, e.g. plain ``ccfair run``s)."""
        if "points" in self._cache:
            return self._cache["points"]
        runs = self.table("runs")
        frame = runs[["run_id", "point_key", "scenario", "backend", "seed"]].copy()
        by_run = {p["run_id"]: p for p in (self.record or {}).get("points", [])}
        frame["index"] = [by_run[r]["index"] if r in by_run else None for r in frame["run_id"]]
        frame["baseline"] = [
            by_run[r]["baseline"] if r in by_run else None for r in frame["run_id"]
        ]
        # Keep labels as written (2 stays 2, not 2.0 next to 0.5).
        for key in self.grid_keys:
            frame[key] = pd.Series(
                [by_run[r]["params"].get(key) if r in by_run else None for r in frame["run_id"]],
                index=frame.index,
                dtype=object,
            )
        # Sweep order where there is one, then the order of the runs table.
        order = frame["index"].fillna(len(frame) + pd.Series(range(len(frame)), index=frame.index))
        frame = frame.assign(_order=order.astype(float)).sort_values("_order", kind="stable")
        frame["index"] = range(len(frame)) if self.record is None else frame["_order"].astype(int)
        frame["rep"] = frame.groupby("point_key", sort=False)["seed"].rank(method="dense") - 1
        frame["rep"] = frame["rep"].astype(int)
        frame = frame.drop(columns="_order").reset_index(drop=True)
        self._cache["points"] = frame
        return frame

    # ---- metric tables ----------------------------------------------------------------

    def flows(self) -> pd.DataFrame:
        """One row per run and flow: the point's labels, rep, and the flow's summary
        (``goodput_mbps``, ``share_frac``, ``rtt_mean_ms``, ``rtt_p95_ms``,
        ``qdelay_p95_ms``, ``retrans_pkts``...)."""
        flows = self.table("flows")
        return self.points().merge(flows, on="run_id", how="inner", suffixes=("", "_of_run"))

    def runs(self) -> pd.DataFrame:
        """One row per run: the point's labels, rep, and run metrics: ``goodput_mbps`` (all
        flows), ``jain_index``, ``<cca>_share_frac`` per algorithm, and at the bottleneck(s)
        ``utilisation_frac``, ``loss_frac``, ``qdelay_mean_ms`` (mean sojourn minus one
        packet's serialisation), ``queue_delay_p95_ms``, ``buffer_pkts``, ``buffer_bdp``."""
        flows = self.table("flows")
        links = self.table("link_summary")
        specs = self.specs()
        ccas = list(dict.fromkeys(flows["cca"]))
        links_by_run = dict(tuple(links.groupby("run_id", sort=False)))
        rows = []
        for rid, group in flows.groupby("run_id", sort=False):
            total = float(group["goodput_mbps"].sum())
            row: dict[str, Any] = {
                "run_id": rid,
                "n_flows": len(group),
                "goodput_mbps": total,
                "jain_index": jain_index(group["goodput_mbps"].to_numpy()),
            }
            for cca in ccas:
                mine = group[group["cca"] == cca]
                row[f"{cca}_share_frac"] = (
                    float(mine["goodput_mbps"].sum()) / total if len(mine) and total > 0 else np.nan
                )
            bn = bottlenecks(specs[rid])
            ls = links_by_run.get(rid, links.iloc[0:0])
            keep = [
                (n, d) in bn
                for n, d in zip(
                    ls["link_name"].astype(str), ls["direction"].astype(str), strict=True
                )
            ]
            sel = ls[keep]
            row["bottleneck"] = ",".join(f"{n}:{d}" for n, d in bn)
            if len(sel):
                service_ms = PACKET_BYTES * 8 / (sel["rate_mbps"] * 1e6) * 1e3
                arrivals = float(sel["arrival_pkts"].sum())
                drops = float((sel["drop_queue_pkts"] + sel["drop_random_pkts"]).sum())
                row["utilisation_frac"] = float(sel["utilisation_frac"].mean())
                row["loss_frac"] = drops / arrivals if arrivals > 0 else np.nan
                qdelay_ms = (sel["sojourn_mean_ms"] - service_ms).clip(lower=0).mean()
                row["qdelay_mean_ms"] = float(qdelay_ms)
                row["queue_delay_p95_ms"] = float(sel["queue_delay_p95_ms"].max())
                row["buffer_pkts"] = float(sel["buffer_pkts"].mean())
                row["buffer_bdp"] = float(sel["buffer_bdp"].mean())
            rows.append(row)
        return self.points().merge(
            pd.DataFrame(rows), on="run_id", how="inner", suffixes=("", "_of_run")
        )

    def ccas(self) -> pd.DataFrame:
        """One row per run and algorithm: ``flow_count``, ``per_flow_mbps`` (mean over its
        flows), ``share_frac``, ``rtt_mean_ms``, ``rtt_p95_ms``, ``qdelay_p95_ms`` (means over
        its flows) and ``retrans_pkts`` (sum)."""
        flows = self.flows()
        keys = list(self.points().columns)
        data = flows.assign(baseline=flows["baseline"].fillna(""))
        total = data.groupby(["run_id"])["goodput_mbps"].transform("sum")
        data = data.assign(_total=total)
        out = (
            data.groupby([*keys, "cca"], sort=False, dropna=False)
            .agg(
                flow_count=("flow_name", "count"),
                goodput_mbps=("goodput_mbps", "sum"),
                total_mbps=("_total", "first"),
                per_flow_mbps=("goodput_mbps", "mean"),
                rtt_mean_ms=("rtt_mean_ms", "mean"),
                rtt_p95_ms=("rtt_p95_ms", "mean"),
                qdelay_p95_ms=("qdelay_p95_ms", "mean"),
                retrans_pkts=("retrans_pkts", "sum"),
            )
            .reset_index()
        )
        out["share_frac"] = out["goodput_mbps"] / out["total_mbps"]
        out["baseline"] = out["baseline"].replace("", None)
        return out.drop(columns=["goodput_mbps", "total_mbps"])

    def harm(self) -> pd.DataFrame:
        """Harm (Ware et al., HotNets 2019) wherever the baseline run is in the directory.

        One row per point and incumbent algorithm A of a mixed run: ``contender`` (the other
        algorithms), ``goodput_mbps`` of A's flows and ``baseline_mbps`` of the same flows in
        the baseline run (every flow running A; same scenario and seed), ``harm_goodput_frac`` =
        (baseline - with) / baseline, and ``harm_rtt_frac`` = (with - baseline) / with of their
        mean RTT. Empty when no baseline run is present.
        """
        from ccfair.api import run_id_of
        from ccfair.spec import Scenario
        from ccfair.sweep import baseline_spec

        runs = self.table("runs")
        flows = self.table("flows")
        specs = self.specs()
        backend = dict(zip(runs["run_id"], runs["backend"], strict=True))
        finished = set(self.run_ids)
        by_run = dict(tuple(flows.groupby("run_id", sort=False)))
        rows = []
        for rid, group in by_run.items():
            ccas = list(dict.fromkeys(group["cca"]))
            if len(ccas) < 2:
                continue
            for cca in ccas:
                bspec = baseline_spec(specs[rid], cca)
                try:
                    normalized = Scenario.from_normalized(bspec).resolve().normalized
                except ValueError:  # e.g. an algorithm no longer registered
                    continue
                brid = run_id_of(normalized, backend[rid])
                if brid not in finished:
                    continue
                mine = group[group["cca"] == cca]
                base = by_run[brid]
                base = base[base["flow_name"].isin(mine["flow_name"])]
                with_mbps = float(mine["goodput_mbps"].sum())
                base_mbps = float(base["goodput_mbps"].sum())
                with_rtt = float(mine["rtt_mean_ms"].mean())
                base_rtt = float(base["rtt_mean_ms"].mean())
                rows.append(
                    {
                        "run_id": rid,
                        "baseline_run_id": brid,
                        "incumbent": cca,
                        "contender": "+".join(c for c in ccas if c != cca),
                        "goodput_mbps": with_mbps,
                        "baseline_mbps": base_mbps,
                        "harm_goodput_frac": (base_mbps - with_mbps) / base_mbps
                        if base_mbps > 0
                        else np.nan,
                        "rtt_ms": with_rtt,
                        "baseline_rtt_ms": base_rtt,
                        "harm_rtt_frac": (with_rtt - base_rtt) / with_rtt
                        if with_rtt > 0
                        else np.nan,
                    }
                )
        frame = pd.DataFrame(rows, columns=_HARM_COLUMNS)
        points = self.points()
        return points[points["baseline"].isna()].merge(
            frame, on="run_id", how="inner", suffixes=("", "_of_run")
        )

    # ---- aggregation over repetitions -------------------------------------------------

    def point_summary(
        self, frame: pd.DataFrame, values: list[str], extra_keys: list[str] | None = None
    ) -> pd.DataFrame:
        """Mean and 95% CI of ``values`` over the repetitions of each point (and per
        ``extra_keys``, e.g. ``["flow_name"]`` for flows, ``["cca"]`` for algorithms), in grid
        order. Repetitions are the runs of one ``point_key`` (same normalised spec and
        backend, different seeds), so runs of different scenarios are never averaged, in a
        sweep's directory or one of plain runs. Points are labelled by the grid keys, or by
        ``scenario`` and ``backend`` without a sweep record. Baseline points are kept apart
        (column ``baseline``, "" for grid points)."""
        labels = self.grid_keys or ["scenario", "backend"]
        by = [*labels, "baseline", "point_key", *(extra_keys or [])]
        data = frame.assign(baseline=frame["baseline"].fillna(""))
        data = data.sort_values("index", kind="stable")
        out = summarize(data, by, [v for v in values if v in data.columns])
        if len(out) and (out["baseline"] == "").all():
            out = out.drop(columns=["baseline"])
        return out

    # ---- export and comparison ----------------------------------------------------------

    def to_xarray(self, values: list[str] | None = None) -> Any:
        """The run metrics as an ``xarray.Dataset`` with one dimension per grid key plus
        ``rep`` (without a sweep record: ``scenario``, ``backend`` and ``rep``); baseline runs
        are left out. ``values`` picks metrics of :meth:`runs` (default: every numeric one).
        Needs xarray (``pip install 'ccfair[xarray]'``).

        Example:
            >>> ds = Results("results/harada-dumbbell-quick").to_xarray()  # doctest: +SKIP
            >>> ds["jain_index"].mean("rep").sel(ccas="reno-bbr")  # doctest: +SKIP
        """
        try:
            import xarray  # noqa: F401
        except ImportError:
            raise ImportError(
                "Results.to_xarray needs xarray: pip install 'ccfair[xarray]' (or xarray)"
            ) from None
        runs = self.runs()
        runs = runs[runs["baseline"].isna()]
        dims = [*(self.grid_keys or ["scenario", "backend"]), "rep"]
        skip = {"index", "seed", "n_flows", *dims}
        if values is None:
            values = [
                c for c in runs.columns if c not in skip and pd.api.types.is_numeric_dtype(runs[c])
            ]
        frame = runs.assign(**{k: runs[k].astype(str) for k in dims if k != "rep"})
        if frame.duplicated(dims).any():
            raise ResultsError(f"{self.root}: two runs share one {dims} cell; cannot make a grid")
        return frame.set_index(dims)[values].to_xarray()

    def compare(
        self, other: Results | str | os.PathLike[str], values: list[str] | None = None
    ) -> pd.DataFrame:
        """Line up the matching points of this directory (A) and ``other`` (B) and compare
        run metrics: per point and metric, each side's mean, 95% CI half-width and count over
        repetitions, ``diff`` = B - A and ``diff_ci95`` (Welch's t interval of the
        difference), ``significant`` when the interval excludes 0. Points match on the grid
        keys both directories share (e.g. two versions or two settings of one sweep, or the
        simulator against the kernel backend), else on the scenario name.

        Example:
            >>> Results("results/v1").compare("results/v2")  # doctest: +SKIP
        """
        b = other if isinstance(other, Results) else Results(other)
        a_runs, b_runs = self.runs(), b.runs()
        keys = [k for k in self.grid_keys if k in b.grid_keys] or ["scenario"]
        keys = [*keys, "baseline"]
        if values is None:
            values = [
                "goodput_mbps",
                "jain_index",
                "utilisation_frac",
                "loss_frac",
                "qdelay_mean_ms",
                *sorted(
                    c
                    for c in set(a_runs.columns) & set(b_runs.columns)
                    if c.endswith("_share_frac")
                ),
            ]
        else:
            shared = set(a_runs.columns) & set(b_runs.columns)
            unknown = [v for v in values if v not in shared]
            if unknown:
                raise SpecError(
                    "values",
                    unknown[0],
                    "is not a runs column of both directories (docs/results.md, 'runs')",
                )
        rows = []
        a_groups = dict(
            tuple(
                a_runs.assign(baseline=a_runs["baseline"].fillna("")).groupby(
                    keys, sort=False, dropna=False
                )
            )
        )
        b_groups = dict(
            tuple(
                b_runs.assign(baseline=b_runs["baseline"].fillna("")).groupby(
                    keys, sort=False, dropna=False
                )
            )
        )
        for key, ga in a_groups.items():
            gb = b_groups.get(key)
            if gb is None:
                continue
            label = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
            for v in values:
                if v not in ga.columns or v not in gb.columns:
                    continue
                xa = ga[v].to_numpy(dtype=float)
                xb = gb[v].to_numpy(dtype=float)
                xa, xb = xa[np.isfinite(xa)], xb[np.isfinite(xb)]
                diff_ci = welch_ci95(xa, xb)
                diff = float(xb.mean() - xa.mean()) if len(xa) and len(xb) else np.nan
                rows.append(
                    {
                        **label,
                        "metric": v,
                        "a_mean": float(xa.mean()) if len(xa) else np.nan,
                        "a_ci95": ci95(xa),
                        "a_n": len(xa),
                        "b_mean": float(xb.mean()) if len(xb) else np.nan,
                        "b_ci95": ci95(xb),
                        "b_n": len(xb),
                        "diff": diff,
                        "diff_ci95": diff_ci,
                        "significant": bool(abs(diff) > diff_ci) if np.isfinite(diff_ci) else False,
                    }
                )
        out = pd.DataFrame(rows)
        if len(out) and (out["baseline"] == "").all():
            out = out.drop(columns=["baseline"])
        return out


def welch_ci95(a: Any, b: Any) -> float:
    """Half-width of the 95% confidence interval of mean(b) - mean(a) (Welch's t, unequal
    variances); NaN unless both sides have 2 or more values.

    Example:
        >>> round(welch_ci95([1.0, 2.0, 3.0], [2.0, 3.0, 4.0]), 3)
        2.267
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    se2 = va + vb
    if se2 == 0:
        return 0.0
    df = se2 * se2 / (va * va / (len(a) - 1) + vb * vb / (len(b) - 1))
    return t_quantile(0.975, max(1, int(df))) * math.sqrt(se2)


_HARM_COLUMNS = [
    "run_id",
    "baseline_run_id",
    "incumbent",
    "contender",
    "goodput_mbps",
    "baseline_mbps",
    "harm_goodput_frac",
    "rtt_ms",
    "baseline_rtt_ms",
    "harm_rtt_frac",
]


def seconds_of(label: Any) -> float:
    """A duration label (``"18ms"`` or a number of seconds) in seconds, NaN if it is none.

    Example:
        >>> seconds_of("18ms")
        0.018
    """
    ns = parse_duration(label)
    return float("nan") if ns is None else ns / 1e9
