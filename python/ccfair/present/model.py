"""Model against measurement: BBR's measured share of goodput against Ware et al.'s
predictions (:mod:`ccfair.analysis.models`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ccfair.analysis.models import ware_full_share, ware_simple_share
from ccfair.present.curves import hollow
from ccfair.present.style import (
    LINK_COLOR,
    cca_color,
    cca_marker,
    legend_outside,
    level_style,
    new_figure,
)

if TYPE_CHECKING:  # pandas and matplotlib are imported where a figure is made
    import pandas as pd
    from matplotlib.figure import Figure


def _competitor(ccas_label: Any) -> str:
    """The loss-based algorithm of a BBR pair label ("reno-bbr" -> "reno")."""
    parts = [p for p in str(ccas_label).split("-") if p != "bbr"]
    return parts[0] if parts else "bbr"


def model_vs_measured(model: pd.DataFrame, *, by: str | None = None) -> Figure | None:
    """Measured BBR share against the Ware et al. predictions: left, measured vs the full
    N-flow prediction with the identity line; right, share against the buffer in BDPs (X)
    with both model curves. Each run is a small hollow marker, each point's mean a filled
    one; colour and marker: the loss-based algorithm BBR competes with (when ``by`` is the
    ``ccas`` key), else greys. ``model`` is :func:`ccfair.analysis.models.model_table`."""
    if model.empty:
        return None
    fig = new_figure(figsize=(10, 4.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    groups = list(dict.fromkeys(model[by])) if by and by in model.columns else [None]
    handles = []
    point_cols = [c for c in ("point_key",) if c in model.columns]
    for i, g in enumerate(groups):
        sel = model if g is None else model[model[by] == g]
        color, marker, label = _group_style(by, g, i)
        for ax, xcol in ((left, "ware_full"), (right, "x_bdp")):
            hollow(ax, sel[xcol], sel["measured"], color, marker, s=9)
        means = sel.groupby(point_cols or ["x_bdp"], sort=False)[
            ["ware_full", "x_bdp", "measured"]
        ].mean()
        handles.append(_point_means(left, right, means, color, marker, label))
    (ident,) = left.plot(
        [0, 1], [0, 1], color=LINK_COLOR, lw=0.8, ls="--", label="measured = predicted"
    )
    left.set_xlim(0, 1.02)
    left.set_ylim(0, 1.02)
    left.set_xlabel("predicted BBR share, full N-flow form (Ware et al. 2019)")
    left.set_ylabel("measured BBR share of goodput")
    left.grid(alpha=0.3)
    curves = _model_curves(right, model)
    legend_outside(
        fig,
        [*handles, ident, *curves],
        ncol=3,
        title="hollow: one run; filled: mean over the repetitions of a point",
    )
    return fig


def _group_style(by: str | None, g: Any, i: int) -> tuple[str, str, str]:
    """(colour, marker, legend label) of a group: BBR's competitor's when grouped by pair."""
    if by == "ccas":
        comp = _competitor(g)
        color, marker = cca_color(comp), cca_marker(comp)
    else:
        st = level_style(i)
        color, marker = st["color"], st["marker"]
    label = (
        f"BBR vs {_competitor(g)}"
        if by == "ccas"
        else (f"{by} = {g}" if g is not None else "points")
    )
    return color, marker, label


def _point_means(
    left: Any, right: Any, means: pd.DataFrame, color: str, marker: str, label: str
) -> Any:
    """Each point's mean as a filled marker on both panels; returns the left one (legend)."""
    style = {
        "s": 30,
        "marker": marker,
        "color": color,
        "edgecolors": "black",
        "linewidths": 0.4,
        "zorder": 3,
    }
    h = left.scatter(means["ware_full"], means["measured"], label=label, **style)
    right.scatter(means["x_bdp"], means["measured"], **style)
    return h


def _model_curves(ax: Any, model: pd.DataFrame) -> list[Any]:
    """The model's share against the buffer X on ``ax`` (log2 x axis): the form without
    PROBE_RTT terms, and the full form for each distinct (capacity, RTT, BBR flows) of
    ``model``; returns the curves (legend handles)."""
    xs = np.geomspace(
        max(0.25, float(model["x_bdp"].min()) * 0.8), float(model["x_bdp"].max()) * 1.25, 200
    )
    (simple,) = ax.plot(
        xs,
        [ware_simple_share(x) for x in xs],
        color=LINK_COLOR,
        ls=":",
        label="model without PROBE_RTT terms",
    )
    curves = [simple]
    # The full form depends on c, l and N too: draw it for each distinct (c, l, N).
    for j, (key, _) in enumerate(model.groupby(["c_pps", "l_s", "n_bbr"])):
        c, l_s, n = (float(v) for v in cast("tuple[float, float, float]", key))
        st = level_style(j + 1)
        (h,) = ax.plot(
            xs,
            [ware_full_share(c, l_s, x * c * l_s, int(n)) for x in xs],
            lw=0.9,
            color=st["color"],
            ls=st["ls"],
            label=f"full form, RTT {l_s * 1e3:.0f} ms, N = {int(n)}",
        )
        curves.append(h)
    ax.set_xscale("log", base=2)
    ticks = [2.0**k for k in range(-3, 8) if xs[0] <= 2.0**k <= xs[-1]]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("buffer X [BDP]")
    ax.set_ylabel("measured BBR share of goodput")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    return curves
