"""What a result shows of itself: the figure namespaces ``r.plot`` (:class:`RunPlots`) and
``res.plot`` (:class:`ResultsPlots`), and the compact views of ``repr`` and Jupyter's rich
display (:func:`run_html`, :func:`results_html`).

The result objects (:mod:`ccfair.results`) sit above this package and hand themselves in;
nothing here imports them.

Example:
    >>> import ccfair
    >>> html = run_html(ccfair.run(ccfair.dumbbell(2, "reno", duration="2s")))
    >>> html.startswith("<div")
    True
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ccfair.present.curves import metric_vs_buffer
from ccfair.present.heatmaps import heatmaps
from ccfair.present.pantheon import throughput_delay
from ccfair.present.style import SMOOTH_S, hidden_axes, point_label
from ccfair.present.timeseries import run_timeseries, run_title, timeseries

if TYPE_CHECKING:  # pandas and matplotlib are imported where a figure is made
    import pandas as pd
    from matplotlib.figure import Figure

    from ccfair.results.directory import Results


class RunPlots:
    """Figures of one :class:`ccfair.RunResult`, from its tables in memory (no results
    directory needed); each method returns a matplotlib Figure.

    Example:
        >>> r = ccfair.run(ccfair.dumbbell(2, ["bbr", "cubic"], duration="10s"))  # doctest: +SKIP
        >>> r.plot.timeseries(flows=["flow1"], window=(2, 8)).savefig("ts.png")  # doctest: +SKIP
    """

    def __init__(self, result: Any) -> None:
        self._r = result

    def timeseries(
        self,
        *,
        flows: Sequence[str] | None = None,
        window: tuple[float, float] | None = None,
        smooth_s: float = SMOOTH_S,
        title: str | None = None,
    ) -> Figure:
        """Goodput, cwnd, RTT and RTprop, and the bottleneck queue over time (see
        :func:`run_timeseries`)."""
        r = self._r
        return run_timeseries(
            r.timeseries,
            r.links,
            r.spec,
            title=run_title(r.spec, r.run_id, title),
            smooth_s=smooth_s,
            flows=flows,
            window=window,
        )

    def throughput_delay(self, *, delay: str = "rtt_p95_ms") -> Figure:
        """Each algorithm's goodput per flow against its delay (see :func:`throughput_delay`)."""
        r = self._r
        return throughput_delay(r.flows, delay=delay, title=run_title(r.spec, r.run_id))


class ResultsPlots:
    """Figures of a :class:`ccfair.Results` directory; each method returns a matplotlib
    Figure (or, for per-group figures, a list of (name, Figure)).

    Example:
        >>> res = ccfair.Results("results/harada-dumbbell-quick")  # doctest: +SKIP
        >>> res.plot.heatmap(x="delay", y="alpha", by="ccas")  # doctest: +SKIP
    """

    def __init__(self, results: Results) -> None:
        self._res = results

    def heatmap(
        self, *, x: str, y: str, by: str | None = None, value: str = "goodput_mbps"
    ) -> list[tuple[str, Figure]]:
        """Mean ``value`` per flow over two grid keys (see :func:`heatmaps`)."""
        return heatmaps(self._res, x=x, y=y, by=by, value=value)

    def metric(
        self, metric: str, *, x: str = "alpha", lines: str | None = None
    ) -> list[tuple[str, Figure]]:
        """A run metric (``jain_index``, ``utilisation_frac``...) against a grid key."""
        return metric_vs_buffer(self._res, metric=metric, x=x, lines=lines)

    def throughput_delay(self, *, delay: str = "rtt_p95_ms", by: str | None = None) -> Figure:
        """Throughput against delay per algorithm over every run (see
        :func:`throughput_delay`); ``by`` defaults to the grid key ``ccas`` if present. Each
        point's mean marker is labelled with the values of the grid axes that vary and the
        panels do not show."""
        res = self._res
        if by is None and "ccas" in res.grid_keys:
            by = "ccas"
        flows = res.flows
        flows = flows[flows["baseline"].isna()]
        return throughput_delay(
            flows, delay=delay, by=by, point_labels=_point_labels(res, flows, by)
        )

    def timeseries(self, run_id: str | None = None, **kwargs: Any) -> Figure:
        """Time series of one run (the only one if ``run_id`` is omitted)."""
        res = self._res
        if run_id is None:
            if len(res.run_ids) != 1:
                raise ValueError(f"run_id: this directory holds {len(res.run_ids)} runs; name one")
            run_id = res.run_ids[0]
        return timeseries(res, run_id, **kwargs)


def _point_labels(res: Results, flows: pd.DataFrame, by: str | None) -> dict[str, str] | None:
    """``point_key`` -> what tells the point apart within its panel: the values of the grid
    axes that vary and ``by`` does not show; without a grid, the scenario (and backend, and
    the point key where those are alike). None when every panel holds one point."""
    per_panel = flows.groupby(by)["point_key"].nunique() if by else [flows["point_key"].nunique()]
    if max(per_panel, default=0) <= 1:
        return None
    points = flows.drop_duplicates("point_key").set_index("point_key")
    keys = hidden_axes(res, flows, [by])
    if keys:
        return {
            str(pk): ", ".join(point_label(k, row[k]) for k in keys)
            for pk, row in points.iterrows()
        }
    text = points["scenario"].astype(str)
    if points["backend"].nunique() > 1:
        text = text + " (" + points["backend"].astype(str) + ")"
    if text.duplicated(keep=False).any():
        text = text + " " + points.index.str[:6]
    return {str(pk): t for pk, t in text.items()}


def _esc(x: Any) -> str:
    return html.escape(str(x))


def run_html(r: Any) -> str:
    """One run: a header line and the per-flow summary (goodput, share, delay)."""
    run = r.runs.iloc[0]
    head = (
        f"<b>RunResult</b> {_esc(r.run_id)}: scenario {_esc(run['scenario'])!s}, backend "
        f"{_esc(run['backend'])}, seed {_esc(run['seed'])}, {run['duration_s']:g} s; "
        f"Jain index {r.jain_index():.4f}, total goodput {r.flows['goodput_mbps'].sum():.3f} Mbit/s"
    )
    if not bool(run["reliable"]):
        head += f"; <b>unreliable</b>: {_esc(run['selfcheck_flags'])}"
    table = r.summary().to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="")
    hint = "<small>r.plot.timeseries(), r.plot.throughput_delay(), r.flows, r.timeseries</small>"
    return f"<div><p>{head}</p>{table}<p>{hint}</p></div>"


def results_html(res: Any, *, max_rows: int = 20) -> str:
    """A results directory: runs, points and the first rows of the per-point summary."""
    runs = res.run_metrics()
    values = [
        c
        for c in ["goodput_mbps", "jain_index", "utilisation_frac", "queue_wait_mean_ms"]
        if c in runs.columns
    ]
    values += [c for c in runs.columns if c.endswith("_share_frac")]
    summary = res.point_summary(runs, values, percentiles=()).drop(
        columns=["point_key"], errors="ignore"
    )
    table = summary.head(max_rows).to_html(
        index=False, float_format=lambda v: f"{v:.4g}", na_rep=""
    )
    more = f"<p>({len(summary) - max_rows} more points)</p>" if len(summary) > max_rows else ""
    return f"<div><p>{_esc(repr(res))}</p>{table}{more}</div>"
