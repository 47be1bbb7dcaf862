"""Curves over the buffer (the Copa study: throughput against the buffer per algorithm, with
intervals), a metric against a grid key, dots per point, and per-flow distributions.

Intervals are 95% Student t over the repetitions, clipped to the metric's physical range
(:func:`ccfair.analysis.stats.bounds_of`), with each repetition drawn as a dot and n stated.
A grid axis a figure is not told to show gets a panel per value (:func:`hidden_axes`): no
line, dot or box mixes two configurations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ccfair.analysis.stats import bounds_of, clipped_interval
from ccfair.present.style import (
    FLOW_COLORS,
    LINK_COLOR,
    axis_label,
    axis_order,
    cca_color,
    cca_marker,
    check_one_point,
    grid,
    hidden_axes,
    key_combos,
    legend_outside,
    level_style,
    panel_title,
    point_label,
    reps_text,
    results_capacity,
    select,
    slug,
    tick,
)

if TYPE_CHECKING:  # pandas and matplotlib are imported where a figure is made
    import pandas as pd
    from matplotlib.figure import Figure

    from ccfair.results.directory import Results


def _log2_axis(ax: Any, values: Any) -> None:
    """Log2 x axis ticked at the grid values, labelled as written (0.5, 1, 2, ...)."""
    ticks = sorted({float(v) for v in values})
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()


def _interval_band(
    ax: Any, xv: np.ndarray, mean: np.ndarray, half: np.ndarray, bounds: tuple, color: str
) -> None:
    lo_hi = [clipped_interval(m, h, bounds) for m, h in zip(mean, half, strict=True)]
    lo = np.array([a for a, _ in lo_hi])
    hi = np.array([b for _, b in lo_hi])
    ok = np.isfinite(lo) & np.isfinite(hi)
    if ok.any():
        ax.fill_between(xv[ok], lo[ok], hi[ok], color=color, alpha=0.18, linewidth=0)


def hollow(ax: Any, x: Any, y: Any, color: str, marker: str, *, s: float = 9) -> None:
    """Single runs (repetitions) as small hollow markers, the same in every figure."""
    ax.scatter(
        x,
        y,
        s=s,
        marker=marker,
        facecolors="none",
        edgecolors=color,
        linewidths=0.6,
        alpha=0.8,
        zorder=2,
    )


def _rep_dots(
    ax: Any, xv: np.ndarray, values: list[np.ndarray], color: str, marker: str, log_x: bool = True
) -> None:
    """Each repetition as a small hollow marker, spread a little along x so they do not hide
    each other."""
    for x0, vals in zip(xv, values, strict=True):
        k = len(vals)
        if k <= 1:
            continue
        spread = np.linspace(-1, 1, k) * 0.06
        xs = x0 * np.power(2.0, spread) if log_x else x0 + spread
        hollow(ax, xs, vals, color, marker, s=9)


def throughput_vs_buffer(
    results: Results,
    *,
    x: str = "alpha",
    panels: Sequence[str] = (),
    value: str = "per_flow_mbps",
    ylabel: str | None = None,
) -> list[tuple[str, Figure]]:
    """Mean ``value`` per algorithm against the buffer axis ``x`` (log2): one line per
    algorithm (its colour and marker), each repetition as a dot, the 95% interval as a band
    clipped to [0, capacity]; the fair share (capacity / number of flows) dashed; one panel
    per combination of the ``panels`` grid keys and of any other axis that varies, in one
    figure."""
    table = results.ccas()
    table = table[table["baseline"].isna()]
    if table.empty:
        return []
    # Every other axis that varies gets panels too: a line must have one point per buffer.
    varying = hidden_axes(results, table, [x])
    keys = [k for k in dict.fromkeys([*panels, *varying]) if k in table.columns]
    summary = results.point_summary(table, [value], ["cca"])
    check_one_point(summary, [*keys, "cca", x], "throughput against the buffer")
    combos = key_combos(summary, keys, results.axes)
    fig, axes = grid(len(combos))
    capacity = results_capacity(results)
    bounds = (0.0, capacity if math.isfinite(capacity) else None)
    xs_order = results.axes.get(x)
    handles: dict[str, Any] = {}
    runs_per_flow = table.groupby("run_id")["flow_count"].sum()
    for ax, combo in zip(axes, combos, strict=False):
        sel = select(summary, keys, combo)
        raw = select(table, keys, combo)
        for label, h in _cca_lines(ax, sel, raw, x, value, xs_order, bounds).items():
            handles.setdefault(label, h)
        n_flows = runs_per_flow.reindex(raw["run_id"]).dropna()
        if math.isfinite(capacity) and len(n_flows):
            share = capacity / float(n_flows.iloc[0])
            h = ax.axhline(share, color=LINK_COLOR, lw=0.8, ls="--", label="fair share")
            handles.setdefault("fair share", h)
        _log2_axis(ax, summary[x])
        ax.set_xlabel(axis_label(x))
        ax.set_ylabel(ylabel or axis_label(value))
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.set_title(panel_title(keys, combo), fontsize=10)
    n_text = reps_text(summary["n"])
    legend_outside(
        fig,
        list(handles.values()),
        title=f"mean, repetitions (dots), 95% interval (band); {n_text} per point",
    )
    return [("throughput-vs-buffer", fig)]


def _cca_lines(
    ax: Any,
    sel: pd.DataFrame,
    raw: pd.DataFrame,
    x: str,
    value: str,
    x_order: Sequence[Any] | None,
    bounds: tuple[float | None, float | None],
) -> dict[str, Any]:
    """A panel's line per algorithm in its colour and marker, as in every figure; handles."""
    handles: dict[str, Any] = {}
    for cca in dict.fromkeys(sel["cca"]):
        color, marker = cca_color(str(cca)), cca_marker(str(cca))
        line, mine = sel[sel["cca"] == cca], raw[raw["cca"] == cca]
        h = _mean_line(ax, line, mine, x, value, x_order, bounds, color, marker, str(cca))
        handles.setdefault(str(cca), h)
    return handles


def _mean_line(
    ax: Any,
    line: pd.DataFrame,
    mine: pd.DataFrame,
    x: str,
    value: str,
    x_order: Sequence[Any] | None,
    bounds: tuple[float | None, float | None],
    color: str,
    marker: str,
    label: str,
    **line_kw: Any,
) -> Any:
    """One configuration's mean, 95% band and repetitions (``mine``): its spread shows."""
    order = axis_order(line[x], x_order)
    line = line.set_index(x).loc[order].reset_index()
    xv = np.asarray([float(v) for v in line[x]])
    mean = line[value].to_numpy(dtype=float)
    half = line[f"{value}_ci95"].to_numpy(dtype=float)
    reps = [mine[mine[x] == v][value].to_numpy(dtype=float) for v in order]
    _interval_band(ax, xv, mean, half, bounds, color)
    _rep_dots(ax, xv, reps, color, marker)
    (h,) = ax.plot(xv, mean, marker=marker, ms=4, color=color, label=label, **line_kw)
    return h


def metric_vs_buffer(
    results: Results,
    *,
    metric: str,
    x: str = "alpha",
    lines: str | None = None,
    panels: Sequence[str] = (),
    ylabel: str | None = None,
    name: str | None = None,
    diagonal: bool = False,
) -> list[tuple[str, Figure]]:
    """A run metric (e.g. ``jain_index``, ``utilisation_frac``) against the buffer axis,
    one line per value of ``lines`` (greys, markers and line styles), each repetition a dot,
    95% bands clipped to the metric's range (:func:`ccfair.analysis.stats.bounds_of`), one panel per
    ``panels`` combination. ``diagonal`` draws y = x (e.g. a queue against its buffer)."""
    runs = results.run_metrics()
    runs = runs[runs["baseline"].isna()]
    if runs.empty or metric not in runs.columns:
        return []
    bounds = bounds_of(metric)
    summary = results.point_summary(runs, [metric])
    keys = [
        k for k in panels if k in summary.columns and len(results.axes.get(k, [None, None])) > 1
    ]
    lines = lines if lines in summary.columns else None
    # Every axis neither on x, nor a line, nor a panel gets panels too: a line is one
    # configuration's points.
    keys += hidden_axes(results, summary, [x, lines, *keys])
    check_one_point(summary, [*keys, *([lines] if lines else []), x], f"{metric} against {x}")
    combos = key_combos(summary, keys, results.axes)
    fig, axes = grid(len(combos))
    handles: dict[str, Any] = {}
    for ax, combo in zip(axes, combos, strict=False):
        sel = select(summary, keys, combo)
        raw = select(runs, keys, combo)
        for label, h in _level_lines(ax, sel, raw, x, metric, lines, results.axes, bounds).items():
            handles.setdefault(label, h)
        if diagonal:
            handles.setdefault("diagonal", _diagonal(ax, summary[x]))
        _log2_axis(ax, summary[x])
        ax.set_xlabel(axis_label(x))
        ax.set_ylabel(ylabel or axis_label(metric))
        if bounds == (0.0, 1.0):
            ax.set_ylim(0, 1.03)
        ax.grid(alpha=0.3)
        ax.set_title(panel_title(keys, combo), fontsize=10)
    n_text = reps_text(summary["n"])
    legend_outside(
        fig,
        list(handles.values()),
        title=f"mean, repetitions (dots), 95% interval (band); {n_text} per point",
    )
    return [(name or f"{metric}-vs-{x}", fig)]


def _level_lines(
    ax: Any,
    sel: pd.DataFrame,
    raw: pd.DataFrame,
    x: str,
    metric: str,
    lines: str | None,
    axes: Mapping[str, Sequence[Any]],
    bounds: tuple[float | None, float | None],
) -> dict[str, Any]:
    """A panel's line per value of ``lines``, in greys: no algorithm's colour; handles."""
    handles: dict[str, Any] = {}
    line_values = axis_order(sel[lines], axes.get(lines)) if lines else [None]
    for i, lv in enumerate(line_values):
        line = sel if lv is None else sel[sel[lines] == lv]
        mine = raw if lv is None else raw[raw[lines] == lv]
        st = level_style(i)
        label = point_label(lines, lv) if lines else axis_label(metric)
        h = _mean_line(
            ax,
            line,
            mine,
            x,
            metric,
            axes.get(x),
            bounds,
            st["color"],
            st["marker"],
            label,
            ls=st["ls"],
        )
        handles.setdefault(label, h)
    return handles


def _diagonal(ax: Any, xs: Any) -> Any:
    """y = x on log2 axes, to read a queue against its buffer; returns the line."""
    ticks = np.asarray(sorted({float(v) for v in xs}))
    h = ax.plot(ticks, ticks, color=LINK_COLOR, lw=0.8, ls=":", label="y = x (the buffer)")[0]
    ax.set_yscale("log", base=2)
    return h


def dots(
    results: Results,
    *,
    value: str,
    x: str,
    hue: str | None = None,
    panels: Sequence[str] = (),
    table: str = "ccas",
    where: Mapping[str, Any] | None = None,
    ylabel: str | None = None,
    name: str | None = None,
) -> list[tuple[str, Figure]]:
    """A value over a categorical grid key ``x`` (e.g. the BBR variant): each repetition a
    dot, the mean a larger marker with its 95% interval (clipped to the value's range), one
    group per value of ``hue`` (algorithm colours when ``hue`` is ``"cca"``, greys otherwise),
    one panel per ``panels`` combination. ``table`` is ``"ccas"`` (per-algorithm values, e.g.
    ``per_flow_mbps``) or ``"runs"`` (run metrics, e.g. ``jain_index``); ``where`` keeps rows
    whose columns have these values."""
    frame = results.ccas() if table == "ccas" else results.run_metrics()
    frame = frame[frame["baseline"].isna()]
    for k, v in (where or {}).items():
        if k in frame.columns:
            frame = frame[frame[k] == v]
    if frame.empty or value not in frame.columns:
        return []
    extra = ["cca"] if table == "ccas" else []
    summary = results.point_summary(frame, [value], extra)
    keys = [k for k in panels if k in summary.columns and len(set(summary[k])) > 1]
    keys += hidden_axes(results, summary, [x, hue, *keys])
    check_one_point(summary, [*keys, *extra, *([hue] if hue else []), x], f"{value} by {x}")
    combos = key_combos(summary, keys, results.axes)
    ncol = len(list(dict.fromkeys(summary[keys[-1]]))) if keys else 1
    fig, axes = grid(len(combos), ncol_max=max(1, min(ncol, 4)), w=3.6, h=3.0)
    bounds = _value_bounds(results, value)
    xs = axis_order(summary[x], results.axes.get(x))
    hues = axis_order(summary[hue], results.axes.get(hue)) if hue else [None]
    handles: dict[str, Any] = {}
    for ax, combo in zip(axes, combos, strict=False):
        sel = select(summary, keys, combo)
        raw = select(frame, keys, combo)
        for label, mk in _dot_groups(ax, sel, raw, x, xs, value, hue, hues, bounds).items():
            handles.setdefault(label, mk)
        _dots_axes(ax, [str(v) for v in xs], axis_label(x), ylabel or axis_label(value), bounds)
        ax.set_title(panel_title(keys, combo), fontsize=10)
    n_text = reps_text(summary["n"])
    title = f"repetitions (hollow), mean with 95% interval (filled); {n_text} per point"
    legend_outside(fig, list(handles.values()) if hue else [], title=title)
    if not hue:
        fig.suptitle(title, fontsize=8)
    return [(name or f"{value}-by-{slug(x)}", fig)]


def _value_bounds(results: Results, value: str) -> tuple[float | None, float | None]:
    """The range a value's intervals are clipped to: a rate's is up to the capacity."""
    bounds = bounds_of(value)
    if value.endswith("_mbps"):
        cap = results_capacity(results)
        bounds = (0.0, cap if math.isfinite(cap) else None)
    return bounds


def _dot_groups(
    ax: Any,
    sel: pd.DataFrame,
    raw: pd.DataFrame,
    x: str,
    xs: list[Any],
    value: str,
    hue: str | None,
    hues: list[Any],
    bounds: tuple[float | None, float | None],
) -> dict[str, Any]:
    """A panel's groups of :func:`dots`, hues side by side at each ``x``; legend handles."""
    width = 0.7 / len(hues)
    handles: dict[str, Any] = {}
    for i, h in enumerate(hues):
        if hue == "cca":
            color, marker = cca_color(str(h)), cca_marker(str(h))
        else:
            st = level_style(i)
            color, marker = st["color"], st["marker"]
        part = sel if h is None else sel[sel[hue] == h]
        rawp = raw if h is None else raw[raw[hue] == h]
        if part.empty:
            continue
        for j, xv in enumerate(xs):
            row = part[part[x] == xv]
            if row.empty:
                continue
            pos = j + (i - (len(hues) - 1) / 2) * width
            vals = rawp[rawp[x] == xv][value].to_numpy(dtype=float)
            label = str(h) if h is not None else axis_label(value)
            mk = _dot_group(ax, pos, width, vals, row, value, bounds, color, marker, label)
            handles.setdefault(str(h), mk)
    return handles


def _dot_group(
    ax: Any,
    pos: float,
    width: float,
    vals: np.ndarray,
    row: pd.DataFrame,
    value: str,
    bounds: tuple[float | None, float | None],
    color: str,
    marker: str,
    label: str,
) -> Any:
    """One group of :func:`dots` at ``pos``: each repetition a hollow dot (spread across
    the group's ``width``), the mean a filled marker with its clipped 95% interval; returns
    the mean's marker (the legend's handle)."""
    jitter = np.linspace(-0.25, 0.25, len(vals)) * width if len(vals) > 1 else [0.0]
    hollow(ax, pos + np.asarray(jitter), vals, color, marker, s=10)
    m = float(row[value].iloc[0])
    lo, hi = clipped_interval(m, float(row[f"{value}_ci95"].iloc[0]), bounds)
    if math.isfinite(lo):
        ax.plot([pos, pos], [lo, hi], color=color, lw=1.4, zorder=3)
    return ax.scatter(
        [pos],
        [m],
        s=34,
        marker=marker,
        color=color,
        edgecolors="black",
        linewidths=0.5,
        zorder=4,
        label=label,
    )


def _dots_axes(
    ax: Any,
    ticks: Sequence[str],
    xlabel: str,
    ylabel: str,
    bounds: tuple[float | None, float | None],
) -> None:
    """A :func:`dots` panel's axes: categorical x ticks, and y from 0 to the value's upper
    bound (a little above 1 for fractions) when it has one."""
    ax.set_xticks(range(len(ticks)), ticks, rotation=25, ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(ticks) - 0.4)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if bounds == (0.0, 1.0):
        ax.set_ylim(top=1.01)
    elif bounds[1] is not None:
        ax.set_ylim(0, bounds[1] * 1.05)
    else:
        ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)


def flow_distribution(
    results: Results,
    *,
    x: str = "alpha",
    panels: Sequence[str] = (),
    hue: str | None = None,
    name: str = "flow-distribution",
) -> list[tuple[str, Figure]]:
    """How the flows of each point split the capacity: every flow's goodput relative to its
    fair share (goodput x number of flows / total goodput; 1 = an equal split), each flow of
    each repetition a dot coloured by flow, a box over them per point (middle half, median),
    one group per value of ``hue`` (marker shape), one panel per ``panels`` combination."""
    flows = results.flows
    flows = flows[flows["baseline"].isna()]
    if flows.empty:
        return []
    total = flows.groupby("run_id")["goodput_mbps"].transform("sum")
    count = flows.groupby("run_id")["goodput_mbps"].transform("count")
    flows = flows.assign(rel=flows["goodput_mbps"] * count / total.where(total > 0))
    keys = [k for k in panels if k in flows.columns and len(set(flows[k])) > 1]
    keys += hidden_axes(results, flows, [x, hue, *keys])
    check_one_point(flows, [*keys, *([hue] if hue else []), x], "flow distribution")
    combos = key_combos(flows, keys, results.axes)
    fig, axes = grid(len(combos), ncol_max=4, w=4.2, h=3.0)
    xs = axis_order(flows[x], results.axes.get(x))
    hues = axis_order(flows[hue], results.axes.get(hue)) if hue and hue in flows.columns else [None]
    width = 0.8 / len(hues)
    names = list(dict.fromkeys(flows.sort_values("flow")["flow_name"]))
    flow_color = {n: FLOW_COLORS[i % len(FLOW_COLORS)] for i, n in enumerate(names)}
    markers = ["o", "s", "^", "D"]
    ymax = 1.0
    for ax, combo in zip(axes, combos, strict=False):
        sel = select(flows, keys, combo)
        for i, h in enumerate(hues):
            part = sel if h is None else sel[sel[hue] == h]
            for j, xv in enumerate(xs):
                cell = part[part[x] == xv]
                if cell.empty:
                    continue
                pos = j + (i - (len(hues) - 1) / 2) * width
                colors = [flow_color[n] for n in cell["flow_name"]]
                top = _flow_box(ax, pos, width, cell["rel"], markers[i % len(markers)], colors)
                ymax = max(ymax, top)
        ax.axhline(1.0, color=LINK_COLOR, lw=0.8, ls="--")
        ax.set_xticks(range(len(xs)), [tick(x, v) for v in xs])
        ax.set_xlabel(axis_label(x))
        ax.set_ylabel("goodput / fair share")
        ax.set_ylim(0, max(2.0, ymax * 1.05))
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(panel_title(keys, combo), fontsize=10)
    handles = _flow_distribution_handles(flow_color, hue if len(hues) > 1 else None, hues, markers)
    n_text = reps_text(flows.groupby("point_key")["run_id"].nunique())
    legend_outside(
        fig,
        handles,
        ncol=min(len(handles), 6),
        title=f"each flow of each repetition; {n_text} repetitions per point",
    )
    return [(name, fig)]


def _flow_box(
    ax: Any, pos: float, width: float, rel: pd.Series, marker: str, colors: list[str]
) -> float:
    """One cell of :func:`flow_distribution` at ``pos``: a box over the flows' relative
    goodputs ``rel`` and each flow a dot in its colour; returns the largest value."""
    vals = rel.to_numpy(dtype=float)
    ax.boxplot(
        [vals[np.isfinite(vals)]],
        positions=[pos],
        widths=width * 0.8,
        showfliers=False,
        manage_ticks=False,
        medianprops={"color": "black"},
        boxprops={"color": "#555555"},
        whiskerprops={"color": "#555555"},
        capprops={"color": "#555555"},
    )
    spread = np.linspace(-0.3, 0.3, len(vals)) * width
    ax.scatter(
        pos + spread,
        vals,
        s=8,
        marker=marker,
        c=colors,
        linewidths=0,
        zorder=3,
    )
    return float(np.nanmax(vals))


def _flow_distribution_handles(
    flow_color: Mapping[str, str], hue: str | None, hues: Sequence[Any], markers: Sequence[str]
) -> list[Any]:
    """The legend of :func:`flow_distribution`: each flow's colour, each ``hue`` value's
    marker (when there is more than one) and the fair-share line."""
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], ls="none", marker="o", ms=5, color=c, label=n) for n, c in flow_color.items()
    ]
    if hue:
        handles += [
            Line2D(
                [],
                [],
                ls="none",
                marker=markers[i % 4],
                ms=5,
                color="#555555",
                label=point_label(hue, h),
            )
            for i, h in enumerate(hues)
        ]
    handles.append(Line2D([], [], color=LINK_COLOR, lw=0.8, ls="--", label="fair share"))
    return handles
