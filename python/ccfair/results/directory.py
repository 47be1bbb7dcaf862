"""A results directory as a whole: its finished runs with their grid points, and the metric
tables over them (per flow, per algorithm, per run and per grid point; harm; two directories
compared).

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
- mean and 95% confidence interval over repetitions: Student t (:mod:`ccfair.analysis.stats`).

Example:
    >>> res = Results("results/harada-dumbbell")  # doctest: +SKIP
    >>> res.point_summary(res.runs(), ["jain_index"]).head()  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ccfair.analysis.stats import ci95, summarize, welch_ci95
from ccfair.errors import ResultsError, SpecError
from ccfair.present.views import ResultsPlots, results_html
from ccfair.spec.topology import PACKET_BYTES, bottlenecks
from ccfair.store.directory import check_versions, finished_run_ids
from ccfair.store.files import looked_up
from ccfair.store.read import load_table, read_run_table, read_tables
from ccfair.store.schema import MARKER_TABLE, TABLES
from ccfair.store.sweep_record import read_sweep_record

__all__ = ["Results"]


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
        self._cache: dict[str, pd.DataFrame] = {MARKER_TABLE: runs}

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
        """A results table over all finished runs (``runs``, ``flows``, ``link_summary``,
        ``timeseries``, ``links``)."""
        if name not in self._cache:
            if name not in (MARKER_TABLE, *TABLES):
                load_table(self.root, name)  # raises the one-line error naming the tables
            # The schema was checked when this object was made.
            paths = [self.root / name / f"{rid}.parquet" for rid in self.run_ids]
            self._cache[name] = read_tables(paths)
        return self._cache[name]

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
            self._cache["_specs"] = {  # type: ignore[assignment]
                rid: json.loads(s) for rid, s in zip(runs["run_id"], runs["spec_json"], strict=True)
            }
        return self._cache["_specs"]  # type: ignore[return-value]

    # ---- points -----------------------------------------------------------------------

    def points(self) -> pd.DataFrame:
        """One row per sweep point and its finished run, in sweep order, then one per
        finished run the sweep record does not list (e.g. plain ``ccfair run``s), with what
        groups it: ``point_key`` (the normalised spec and backend without the seed: runs
        with the same key are repetitions of one point), ``scenario``, ``backend``,
        ``seed``, ``index``, ``baseline`` and ``rep`` from the sweep record (unlisted runs:
        0, 1, ... by seed within the point), and a column per grid key (its label; missing
        for unlisted runs). Points whose scenarios are the same (a baseline that is also a
        grid point, a named value equal to the default) share one run and each have their
        row."""
        if "points" in self._cache:
            return self._cache["points"]
        runs = self.table("runs")
        base = runs[["run_id", "point_key", "scenario", "backend", "seed"]]
        finished = set(base["run_id"])
        listed = [p for p in (self.record or {}).get("points", []) if p["run_id"] in finished]
        record = pd.DataFrame(
            {
                "run_id": [p["run_id"] for p in listed],
                "index": pd.Series([p["index"] for p in listed], dtype="Int64"),
                "baseline": pd.Series([p["baseline"] for p in listed], dtype=object),
                "rep": pd.Series([p["rep"] for p in listed], dtype="Int64"),
                # Labels as written (2 stays 2, not 2.0 next to 0.5); named apart until the
                # merge, since a grid key may be a column of the runs table (seed).
                **{
                    f"_label_{key}": pd.Series([p["params"].get(key) for p in listed], dtype=object)
                    for key in self.grid_keys
                },
            }
        )
        on_record = base.merge(record, on="run_id", how="inner").sort_values("index", kind="stable")
        unlisted = base[~base["run_id"].isin(record["run_id"])].copy()
        unlisted["index"] = pd.Series(dtype="Int64")
        unlisted["baseline"] = pd.Series(dtype=object)
        unlisted["rep"] = (
            unlisted.groupby("point_key", sort=False)["seed"].rank(method="dense") - 1
        ).astype("Int64")
        for key in self.grid_keys:
            unlisted[f"_label_{key}"] = pd.Series(dtype=object)
        frame = pd.concat([on_record, unlisted[on_record.columns]], ignore_index=True)
        for key in self.grid_keys:  # a label replaces a runs column of its name (seed)
            label = frame.pop(f"_label_{key}")
            frame[key] = label.where(label.notna(), frame[key]) if key in frame else label
        frame["index"] = (
            range(len(frame))
            if self.record is None
            else frame["index"].fillna(pd.Series(range(len(frame))) + len(frame)).astype(int)
        )
        frame["rep"] = frame["rep"].astype(int)
        columns = ["run_id", "point_key", "scenario", "backend", "seed", "index", "baseline"]
        columns = [c for c in columns if c not in self.grid_keys]
        frame = frame[[*columns, *self.grid_keys, "rep"]]
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
        ``utilisation_frac``, ``loss_frac`` (every drop: buffer overflows, a queue
        discipline's drops, random loss), ``qdelay_mean_ms`` (mean sojourn minus one
        packet's serialisation), ``queue_delay_p95_ms``, ``buffer_pkts``, ``buffer_bdp``,
        ``drop_queue_pkts`` (buffer overflows), the sampled queue's 99th percentile
        ``queue_p99_pkts`` and ``queue_p99_bdp`` and, at a queue discipline,
        ``sojourn_p95_ms`` (the largest over the bottlenecks; NaN without a discipline)."""
        if "runs_metrics" in self._cache:
            return self._cache["runs_metrics"].copy()
        flows = self.table("flows")
        links = self.table("link_summary")
        specs = self.specs()
        # Per run over its flows (vectorised: a report of a thousand runs must not loop).
        goodput = flows["goodput_mbps"].astype(float)
        by_run = flows.assign(_g=goodput, _g2=goodput * goodput).groupby("run_id", sort=False)
        per_run = pd.DataFrame(
            {
                "n_flows": by_run["_g"].count(),
                "goodput_mbps": by_run["_g"].sum(),
                "_sumsq": by_run["_g2"].sum(),
            }
        )
        denom = per_run["n_flows"] * per_run["_sumsq"]
        per_run["jain_index"] = (per_run["goodput_mbps"] ** 2 / denom).where(denom > 0)
        per_run = per_run.drop(columns="_sumsq")
        by_cca = flows.assign(_g=goodput).groupby(["run_id", "cca"], sort=False)["_g"].sum()
        total = per_run["goodput_mbps"]
        for cca in dict.fromkeys(flows["cca"]):
            mine = by_cca.xs(cca, level="cca").reindex(per_run.index)
            per_run[f"{cca}_share_frac"] = (mine / total).where(total > 0)
        # The bottleneck link directions of every run, then their link summaries.
        keys = []
        names = {}
        for rid in per_run.index:
            bn = bottlenecks(specs[rid])
            names[rid] = ",".join(f"{n}:{d}" for n, d in bn)
            keys += [(rid, n, d) for n, d in bn]
        per_run["bottleneck"] = pd.Series(names)
        bn_frame = pd.DataFrame(keys, columns=["run_id", "link_name", "direction"])
        sel = links.assign(
            link_name=links["link_name"].astype(str), direction=links["direction"].astype(str)
        ).merge(bn_frame, on=["run_id", "link_name", "direction"], how="inner")
        service_ms = PACKET_BYTES * 8 / (sel["rate_mbps"] * 1e6) * 1e3
        # The sampled queue's 99th percentile in packets and in BDPs of the buffer's
        # reference path (buffer_pkts / buffer_bdp): where it stays below the buffer and
        # nothing is dropped, the buffer never filled.
        q99_pkts = sel["queue_delay_p99_ms"] * sel["rate_mbps"] * 1e3 / (PACKET_BYTES * 8)
        aqm_drops = sel["drop_aqm_pkts"] if "drop_aqm_pkts" in sel.columns else 0
        sojourn_p95 = sel["sojourn_p95_ms"] if "sojourn_p95_ms" in sel.columns else float("nan")
        sel = sel.assign(
            _drops=sel["drop_queue_pkts"] + aqm_drops + sel["drop_random_pkts"],
            _sojourn_p95=sojourn_p95,
            _qdelay=(sel["sojourn_mean_ms"] - service_ms).clip(lower=0),
            _q99=q99_pkts,
            _q99_bdp=q99_pkts / (sel["buffer_pkts"] / sel["buffer_bdp"]),
        )
        agg = sel.groupby("run_id", sort=False).agg(
            utilisation_frac=("utilisation_frac", "mean"),
            _arrivals=("arrival_pkts", "sum"),
            _drops=("_drops", "sum"),
            qdelay_mean_ms=("_qdelay", "mean"),
            queue_delay_p95_ms=("queue_delay_p95_ms", "max"),
            buffer_pkts=("buffer_pkts", "mean"),
            buffer_bdp=("buffer_bdp", "mean"),
            drop_queue_pkts=("drop_queue_pkts", "sum"),
            queue_p99_pkts=("_q99", "max"),
            queue_p99_bdp=("_q99_bdp", "max"),
            sojourn_p95_ms=("_sojourn_p95", "max"),
        )
        arrivals = agg.pop("_arrivals").astype(float)
        drops = agg.pop("_drops").astype(float)
        agg.insert(1, "loss_frac", (drops / arrivals).where(arrivals > 0))
        for col in ("buffer_pkts", "drop_queue_pkts"):
            agg[col] = agg[col].astype(float)
        frame = per_run.join(agg, how="left").reset_index()
        out = self.points().merge(frame, on="run_id", how="inner", suffixes=("", "_of_run"))
        self._cache["runs_metrics"] = out
        return out.copy()

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
        runs = self.table("runs")
        flows = self.table("flows")[["run_id", "cca", "flow_name", "goodput_mbps", "rtt_mean_ms"]]
        specs = self.specs()
        backend = dict(zip(runs["run_id"], runs["backend"], strict=True))

        def dumps(x: Any) -> str:
            return json.dumps(x, sort_keys=True, separators=(",", ":"))

        # The baseline of a run for algorithm A (ccfair.spec.grid.baseline_spec) is the same
        # normalised spec with every flow running A with the (already normalised) parameters
        # of the run's first A flow. So runs are indexed by their spec without the flows'
        # algorithms ("skeleton") and by what each flow runs: finding a baseline is a lookup,
        # with no spec resolved again (that costs milliseconds per run).
        skeleton: dict[str, str] = {}
        by_key: dict[tuple[str, str], str] = {}
        for rid, spec in specs.items():
            bare = {
                **spec,
                "flows": [
                    {k: v for k, v in f.items() if k not in ("cca", "cca_params")}
                    for f in spec["flows"]
                ],
            }
            skeleton[rid] = backend[rid] + dumps(bare)
            what = dumps([[f["cca"], f.get("cca_params", {})] for f in spec["flows"]])
            by_key[(skeleton[rid], what)] = rid
        pairs = []
        for rid in flows["run_id"].unique():
            spec_flows = specs[rid]["flows"]
            ccas = list(dict.fromkeys(f["cca"] for f in spec_flows))
            if len(ccas) < 2:
                continue
            for cca in ccas:
                params = next(f.get("cca_params", {}) for f in spec_flows if f["cca"] == cca)
                what = dumps([[cca, params] for _ in spec_flows])
                brid = by_key.get((skeleton[rid], what))
                if brid is not None:
                    contender = "+".join(c for c in ccas if c != cca)
                    pairs.append((rid, cca, brid, contender))
        # The incumbent's flows in the mixed run, each next to the same flow in its baseline.
        pair_frame = pd.DataFrame(pairs, columns=["run_id", "cca", "baseline_run_id", "contender"])
        mine = flows.merge(pair_frame, on=["run_id", "cca"], how="inner")
        base = flows[["run_id", "flow_name", "goodput_mbps", "rtt_mean_ms"]].rename(
            columns={
                "run_id": "baseline_run_id",
                "goodput_mbps": "baseline_mbps",
                "rtt_mean_ms": "baseline_rtt_ms",
            }
        )
        mine = mine.merge(base, on=["baseline_run_id", "flow_name"], how="left")
        agg = (
            mine.groupby(["run_id", "cca"], sort=False)
            .agg(
                baseline_run_id=("baseline_run_id", "first"),
                contender=("contender", "first"),
                goodput_mbps=("goodput_mbps", "sum"),
                baseline_mbps=("baseline_mbps", "sum"),
                rtt_ms=("rtt_mean_ms", "mean"),
                baseline_rtt_ms=("baseline_rtt_ms", "mean"),
            )
            .reset_index()
            .rename(columns={"cca": "incumbent"})
        )
        base_mbps, with_rtt = agg["baseline_mbps"], agg["rtt_ms"]
        agg["harm_goodput_frac"] = ((base_mbps - agg["goodput_mbps"]) / base_mbps).where(
            base_mbps > 0
        )
        agg["harm_rtt_frac"] = ((with_rtt - agg["baseline_rtt_ms"]) / with_rtt).where(with_rtt > 0)
        rows = agg[_HARM_COLUMNS].to_dict("records")
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
            for v in values:
                if not (
                    pd.api.types.is_numeric_dtype(a_runs[v])
                    and pd.api.types.is_numeric_dtype(b_runs[v])
                ):
                    raise SpecError("values", v, "is not a numeric runs column; it has no mean")
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
