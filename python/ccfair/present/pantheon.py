"""Throughput against delay, Pantheon style: per run, each algorithm's mean goodput per flow
against its flows' delay; the mean over a point's repetitions with its 1-standard-deviation
ellipse, labelled with the point it is (its grid values) wherever a panel holds several.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ccfair.present.curves import hollow
from ccfair.present.style import cca_color, cca_marker, grid, legend_outside, point_label

if TYPE_CHECKING:  # pandas and matplotlib are imported where a figure is made
    import pandas as pd
    from matplotlib.figure import Figure


def _ellipse(ax: Any, x: np.ndarray, y: np.ndarray, color: str) -> None:
    """The 1-standard-deviation ellipse of (x, y) points (as Pantheon draws its runs)."""
    from matplotlib.patches import Ellipse

    cov = np.cov(x, y)
    if not np.all(np.isfinite(cov)):
        return
    vals, vecs = np.linalg.eigh(cov)
    vals = np.clip(vals, 0, None)
    angle = float(np.degrees(np.arctan2(vecs[1, -1], vecs[0, -1])))
    width, height = 2 * np.sqrt(vals[-1]), 2 * np.sqrt(vals[0])
    ax.add_patch(
        Ellipse(
            (float(np.mean(x)), float(np.mean(y))),
            width,
            height,
            angle=angle,
            facecolor=color,
            alpha=0.18,
            edgecolor=color,
        )
    )


def throughput_delay(
    flows: pd.DataFrame,
    *,
    delay: str = "rtt_p95_ms",
    by: str | None = None,
    title: str = "",
    point_labels: Mapping[str, str] | None = None,
) -> Figure:
    """Throughput against delay per algorithm, Pantheon style: for every run, each
    algorithm's mean goodput per flow against its flows' mean ``delay`` (default the 95th
    percentile RTT; ``qdelay_p95_ms`` for queueing delay); the delay axis runs right to left
    so that better is up and to the right. Runs of one point and algorithm (repetitions)
    get their mean as a large marker and their 1-standard-deviation ellipse.

    ``flows`` is a flows table (``RunResult.flows``, ``Results.flows`` or
    ``load_table(DIR, "flows")``); ``by`` (a column, e.g. the grid key ``"ccas"``) draws one
    panel per value. ``point_labels`` (``point_key`` -> text, e.g. "buffer 4 x BDP, D =
    18 ms") names the point of each mean marker beside it.

    Example:
        >>> fig = throughput_delay(ccfair.load_table("results", "flows"))  # doctest: +SKIP
    """
    if delay not in flows.columns:
        raise ValueError(f"delay: {delay!r} is not a column of the flows table")
    keys = ["run_id", "cca"] + (["point_key"] if "point_key" in flows.columns else [])
    if by is not None:
        keys.append(by)
    per_run = (
        flows.groupby(keys, sort=False, dropna=False)
        .agg(goodput_mbps=("goodput_mbps", "mean"), delay_ms=(delay, "mean"))
        .reset_index()
    )
    panels = list(dict.fromkeys(per_run[by])) if by is not None else [None]
    fig, axes = grid(len(panels), w=4.2, h=3.4)
    handles: dict[str, Any] = {}
    for ax, panel in zip(axes, panels, strict=False):
        data = per_run if panel is None else per_run[per_run[by] == panel]
        for cca in dict.fromkeys(data["cca"]):
            color, marker = cca_color(str(cca)), cca_marker(str(cca))
            mine = data[data["cca"] == cca]
            hollow(ax, mine["delay_ms"], mine["goodput_mbps"], color, marker, s=10)
            groups = mine.groupby("point_key", sort=False) if "point_key" in mine else [(0, mine)]
            for _, reps in groups:
                h = _point_mean(ax, reps, str(cca), color, marker, point_labels)
                handles.setdefault(str(cca), h)
        ax.invert_xaxis()
        ax.set_xlabel(f"{delay.removesuffix('_ms').replace('_', ' ')} [ms] (better: right)")
        ax.set_ylabel("goodput per flow [Mbit/s]")
        ax.grid(alpha=0.3)
        if panel is not None:
            ax.set_title(point_label(by, panel) if by else str(panel), fontsize=10)
    named = ", labelled with its point" if point_labels else ""
    legend_outside(
        fig,
        list(handles.values()),
        title=f"hollow: one run; filled: mean of a point's repetitions{named}; "
        "shaded: 1-sd ellipse (3+ repetitions)",
    )
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def _point_mean(
    ax: Any,
    reps: pd.DataFrame,
    cca: str,
    color: str,
    marker: str,
    point_labels: Mapping[str, str] | None,
) -> Any:
    """A point's mean marker, 1-sd ellipse and name: repetitions drawn as Pantheon does."""
    x = reps["delay_ms"].to_numpy(dtype=float)
    y = reps["goodput_mbps"].to_numpy(dtype=float)
    h = ax.scatter(
        [np.nanmean(x)],
        [np.nanmean(y)],
        s=50,
        marker=marker,
        color=color,
        edgecolor="black",
        lw=0.5,
        label=cca,
        zorder=3,
    )
    if len(reps) >= 3:
        _ellipse(ax, x, y, color)
    if point_labels and "point_key" in reps:
        ax.annotate(
            point_labels.get(str(reps["point_key"].iloc[0]), ""),
            (float(np.nanmean(x)), float(np.nanmean(y))),
            xytext=(4, 3),
            textcoords="offset points",
            fontsize=5.5,
            color="#333333",
            zorder=4,
        )
    return h
