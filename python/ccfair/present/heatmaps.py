"""Heatmaps of a grid (the Harada study: delay x alpha, darker = higher, values annotated).

A heatmap shows two grid axes, and ``by`` one figure per value of a third; every other axis
that varies gets figures of its own, one per combination of its values, so that each cell
is the mean over the repetitions of one configuration. A parking lot's cross flows share
one panel (their mean, said in its title) once there are more than two of them.

Example:
    >>> res = Results("results/harada-dumbbell")  # doctest: +SKIP
    >>> for name, fig in heatmaps(res, x="delay", y="alpha", by="ccas"):  # doctest: +SKIP
    ...     save(fig, "figures", name)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ccfair.present.style import (
    axis_label,
    axis_order,
    check_one_point,
    hidden_axes,
    key_combos,
    new_figure,
    panel_title,
    point_label,
    reps_text,
    select,
    slug,
    tick,
)

if TYPE_CHECKING:  # pandas and matplotlib are imported where a figure is made
    import pandas as pd
    from matplotlib.figure import Figure

    from ccfair.results.directory import Results


#: Cross flows of a parking lot beyond which they share one heatmap panel by default.
_CROSS_PANELS = 2


def parking_lot_groups(name: str) -> str:
    """Flow grouping for parking lots: the main flow, and the cross flows together."""
    return "cross flows" if name.startswith("cross") else name


def _flow_groups(flows: pd.DataFrame) -> list[str]:
    """The default panel of each flow: its own, but a parking lot's cross flows (``role``)
    share one once a run has more than :data:`_CROSS_PANELS` of them."""
    names = [str(n) for n in flows["flow_name"]]
    if "role" not in flows.columns:
        return names
    cross = flows[flows["role"] == "cross"]
    if cross.empty or cross.groupby("run_id")["flow_name"].nunique().max() <= _CROSS_PANELS:
        return names
    return ["cross flows" if r == "cross" else n for n, r in zip(names, flows["role"], strict=True)]


def heatmaps(
    results: Results,
    *,
    x: str,
    y: str,
    by: str | None = None,
    value: str = "goodput_mbps",
    flow_group: Callable[[str], str] | None = None,
    cmap: str = "Greys",
    unit: str = "Mbit/s",
) -> list[tuple[str, Figure]]:
    """One figure per value of ``by`` (e.g. the CCA pair) and of every other axis that
    varies, with one heatmap per flow (or flow group: ``flow_group`` maps a flow's name to
    its panel; by default each flow its own, a parking lot's cross flows together) of the
    mean ``value`` over repetitions, on the grid axes ``x`` and ``y``; darker = higher, each
    cell annotated with the mean and, below it, the lowest and highest repetition. All
    panels of a figure share one grey scale (no hue: it prints, and no algorithm colour is
    reused).

    Returns (name, figure) pairs, names like ``heatmap-reno-bbr`` (and
    ``heatmap-reno-bbr-ideal`` with a value of another axis).
    """
    flows = results.flows
    flows = flows[flows["baseline"].isna()]
    if flows.empty:
        return []
    names = (
        _flow_groups(flows)
        if flow_group is None
        else [flow_group(str(n)) for n in flows["flow_name"]]
    )
    flows = flows.assign(group=names)
    hidden = hidden_axes(results, flows, [x, y, by])
    check_one_point(flows, [*hidden, *([by] if by else []), x, y], f"heatmap of {value}")
    out = []
    groups = axis_order(flows[by], results.axes.get(by)) if by else [None]
    xs_all = axis_order(flows[x], results.axes.get(x))
    ys_all = axis_order(flows[y], results.axes.get(y))
    for g, combo in ((g, c) for g in groups for c in key_combos(flows, hidden, results.axes)):
        data = flows if g is None else flows[flows[by] == g]
        data = select(data, hidden, combo)
        if data.empty:
            continue
        panels, cells = _heatmap_cells(data, x, y, value)
        vmax = float(np.nanmax(cells["v"])) if len(cells) else 1.0
        ncol = len(panels)
        fig = new_figure(
            figsize=(1.4 + 3.3 * ncol, 1.2 + 0.5 * len(ys_all) + 0.9), layout="constrained"
        )
        axes = fig.subplots(1, ncol, squeeze=False)[0]
        image = None
        for ax, panel in zip(axes, panels, strict=True):
            image = _heatmap_panel(ax, cells, panel, (x, xs_all), (y, ys_all), cmap, vmax)
        if image is not None:
            label = "mean goodput" if value == "goodput_mbps" else value.replace("_", " ")
            fig.colorbar(image, ax=list(axes), label=f"{label} [{unit}]")
        title = results.record["name"] if results.record else results.root.name
        n_text = reps_text(cells["n"])
        where = [point_label(by, g)] if g is not None and by else []
        where += [panel_title(hidden, combo)] if hidden else []
        head = f"{title}: {', '.join(where)}" if where else title
        fig.suptitle(f"{head} ({n_text} repetitions per cell)" if n_text else head, fontsize=11)
        name = "-".join([*([slug(g)] if g is not None else []), *(slug(v) for v in combo)])
        name = name or "all"
        out.append((f"heatmap-{name}", fig))
    return out


def _heatmap_cells(
    data: pd.DataFrame, x: str, y: str, value: str
) -> tuple[list[Any], pd.DataFrame]:
    """The flow groups (one panel each) and, per (x, y, group) cell, the mean, lowest and
    highest repetition of ``value``, their number, the group's algorithms and its number of
    flows."""
    # Mean over the flows of a group within a run, then over repetitions.
    per_run = (
        data.groupby(["run_id", x, y, "group"], sort=False)
        .agg(
            v=(value, "mean"),
            cca=("cca", lambda c: "/".join(dict.fromkeys(c))),
            flows=("flow_name", "nunique"),
        )
        .reset_index()
    )
    cells = per_run.groupby([x, y, "group"], sort=False).agg(
        v=("v", "mean"),
        lo=("v", "min"),
        hi=("v", "max"),
        n=("v", "count"),
        cca=("cca", "first"),
        flows=("flows", "max"),
    )
    return list(dict.fromkeys(per_run["group"])), cells


def _heatmap_panel(
    ax: Any,
    cells: pd.DataFrame,
    panel: Any,
    x_axis: tuple[str, Sequence[Any]],
    y_axis: tuple[str, Sequence[Any]],
    cmap: str,
    vmax: float,
) -> Any:
    """One group's heatmap, each cell annotated; returns the image (for the colour bar)."""
    (x, xs_all), (y, ys_all) = x_axis, y_axis
    grid = np.full((len(ys_all), len(xs_all)), np.nan)
    ranges: dict[tuple[int, int], tuple[float, float, int]] = {}
    cca = ""
    n_flows = 1
    for i, yv in enumerate(ys_all):
        for j, xv in enumerate(xs_all):
            key: Any = (xv, yv, panel)  # a label of the cells' MultiIndex
            if key in cells.index:
                cell = cells.loc[key]
                grid[i, j] = cell["v"]
                ranges[(i, j)] = (cell["lo"], cell["hi"], int(cell["n"]))
                cca = cell["cca"]
                n_flows = max(n_flows, int(cell["flows"]))
    image = ax.imshow(grid, cmap=cmap, vmin=0, vmax=vmax or 1.0, origin="lower", aspect="auto")
    for (i, j), (lo, hi, n) in ranges.items():
        v = grid[i, j]
        colour = "white" if v > 0.5 * (vmax or 1.0) else "black"
        ax.text(
            j,
            i + (0.1 if n > 1 else 0),
            f"{v:.1f}",
            ha="center",
            va="center",
            fontsize=8,
            color=colour,
        )
        if n > 1:
            ax.text(
                j,
                i - 0.25,
                f"{lo:.1f}-{hi:.1f}",
                ha="center",
                va="center",
                fontsize=5.5,
                color=colour,
            )
    ax.set_xticks(range(len(xs_all)), [tick(x, v) for v in xs_all])
    ax.set_yticks(range(len(ys_all)), [tick(y, v) for v in ys_all])
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(axis_label(y))
    name = f"{panel} (mean of {n_flows})" if n_flows > 1 else str(panel)
    ax.set_title(f"{name} ({cca})" if cca else name, fontsize=10)
    return image
