"""Compact views of results for terminals and notebooks: what ``repr`` and Jupyter's rich
display of :class:`ccfair.RunResult` and :class:`ccfair.Results` show.

Example:
    >>> import ccfair
    >>> html = run_html(ccfair.run(ccfair.dumbbell(2, "reno", duration="2s")))
    >>> html.startswith("<div")
    True
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["results_html", "run_html"]


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
    runs = res.runs()
    values = [
        c
        for c in ["goodput_mbps", "jain_index", "utilisation_frac", "qdelay_mean_ms"]
        if c in runs.columns
    ]
    values += [c for c in runs.columns if c.endswith("_share_frac")]
    summary = res.point_summary(runs, values).drop(columns=["point_key"], errors="ignore")
    table = summary.head(max_rows).to_html(
        index=False, float_format=lambda v: f"{v:.4g}", na_rep=""
    )
    more = f"<p>({len(summary) - max_rows} more points)</p>" if len(summary) > max_rows else ""
    return f"<div><p>{_esc(repr(res))}</p>{table}{more}</div>"
