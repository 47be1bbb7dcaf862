"""Figures for papers: heatmaps, curves over the buffer, per-flow distributions, time series,
Jain over time, model vs measured, throughput against delay.

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot (no global
state, no backend switch); :func:`save` writes it as PNG, SVG and PDF. One style throughout
(docs/experiments.md, "Figures"):

- **colour per algorithm** (:data:`CCA_COLORS`, Okabe-Ito, colourblind-safe) with a marker per
  algorithm in figures of algorithms (curves, dots, scatter);
- **colour per flow** (:data:`FLOW_COLORS`, Paul Tol's "muted" set, also colourblind-safe)
  with a **line style per algorithm** (:data:`CCA_LINESTYLES`) in figures of flows (time
  series), so that two flows of one algorithm never look alike;
- **greys with markers and line styles** (:data:`LEVEL_STYLES`) for any other variable (delay,
  number of flows, variant), so that no algorithm colour means anything else; links (queues,
  capacity, buffer) are black or grey;
- axis labels name the quantity and its unit; legends sit outside the data; goodput time
  series are a moving average over :data:`SMOOTH_S` seconds (``smooth_s=0``: raw samples) with
  the bottleneck capacity drawn; intervals are 95% Student t over the repetitions, clipped to
  the metric's physical range, with each repetition drawn as a dot and n stated.

Example:
    >>> from ccfair.metrics import Results
    >>> res = Results("results/harada-dumbbell")  # doctest: +SKIP
    >>> for name, fig in heatmaps(res, x="delay", y="alpha", by="ccas"):  # doctest: +SKIP
    ...     save(fig, "figures", name)
"""

from __future__ import annotations

import math
import os
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ccfair.analysis.stats import jain_index
from ccfair.metrics import Results, bottlenecks, bounds_of, clipped_interval
from ccfair.store.files import make_dir, replace_via_temporary
from ccfair.units import parse_duration, parse_rate

__all__ = [
    "CCA_COLORS",
    "CCA_LINESTYLES",
    "CCA_MARKERS",
    "FLOW_COLORS",
    "LEVEL_STYLES",
    "SMOOTH_S",
    "ResultsPlots",
    "RunPlots",
    "axis_label",
    "dots",
    "flow_distribution",
    "heatmaps",
    "jain_over_time",
    "metric_vs_buffer",
    "model_vs_measured",
    "run_timeseries",
    "save",
    "throughput_delay",
    "throughput_vs_buffer",
    "timeseries",
    "timeseries_rows",
]

# --------------------------------------------------------------------------------------------
# Style

#: One colour per algorithm (Okabe & Ito's colourblind-safe palette), the same in every
#: figure; these colours mean nothing else anywhere.
CCA_COLORS = {
    "reno": "#0072B2",  # blue
    "cubic": "#E69F00",  # orange
    "bbr": "#009E73",  # bluish green
    "copa": "#CC79A7",  # reddish purple
}
_EXTRA_CCA_COLORS = ["#D55E00", "#56B4E9", "#F0E442"]
#: A marker per algorithm (figures of algorithms).
CCA_MARKERS = {"reno": "s", "cubic": "^", "bbr": "o", "copa": "D"}
#: A line style per algorithm (figures of flows, where colour is the flow).
CCA_LINESTYLES: dict[str, Any] = {
    "bbr": "-",
    "cubic": (0, (5, 1.5)),
    "reno": (0, (1.2, 1.2)),
    "copa": (0, (6, 1.5, 1.2, 1.5)),
}
_EXTRA_LINESTYLES: list[Any] = [(0, (3, 1, 1, 1, 1, 1)), (0, (8, 2))]
#: A colour per flow, in flow order (Paul Tol's "muted" scheme, then black and grey): none
#: is an algorithm colour.
FLOW_COLORS = [
    "#332288",
    "#88CCEE",
    "#44AA99",
    "#117733",
    "#999933",
    "#DDCC77",
    "#CC6677",
    "#882255",
    "#AA4499",
    "#000000",
    "#888888",
]
#: Styles of the levels of any other variable (delay, n, variant, ...): greys, markers and
#: line styles, so that they print in black and white and never look like an algorithm.
LEVEL_STYLES = [
    {"color": "#000000", "marker": "o", "ls": "-"},
    {"color": "#6b6b6b", "marker": "s", "ls": (0, (5, 1.5))},
    {"color": "#a6a6a6", "marker": "^", "ls": (0, (1.2, 1.2))},
    {"color": "#3d3d3d", "marker": "D", "ls": (0, (6, 1.5, 1.2, 1.5))},
    {"color": "#8a8a8a", "marker": "v", "ls": (0, (3, 1, 1, 1, 1, 1))},
    {"color": "#202020", "marker": "P", "ls": (0, (8, 2))},
]
#: Links: queues, capacity and buffer lines.
LINK_COLOR = "#000000"
#: Default moving-average window of goodput time series, seconds.
SMOOTH_S = 1.0

#: Full axis labels of grid keys and metrics (quantity and unit).
AXIS_LABELS = {
    "delay": "bottleneck one-way delay D [ms]",
    "alpha": "buffer [x BDP]",
    "n_flows": "number of flows",
    "per_cca": "flows per algorithm n",
    "rtt_ratio": "RTT spread (longest / shortest base RTT)",
    "params.bbr": "BBR variant",
    "ccas": "algorithms",
    "rate": "bottleneck rate",
    "loss": "random loss probability",
    "jain_index": "Jain index",
    "utilisation_frac": "bottleneck utilisation",
    "loss_frac": "loss rate at the bottleneck",
    "goodput_mbps": "goodput [Mbit/s]",
    "per_flow_mbps": "goodput per flow [Mbit/s]",
    "share_frac": "share of goodput",
    "queue_p99_bdp": "queue, 99th percentile [BDP]",
    "queue_p99_pkts": "queue, 99th percentile [packets]",
    "qdelay_mean_ms": "queueing delay [ms]",
    "queue_delay_p95_ms": "queueing delay, 95th percentile [ms]",
}
#: Short names of grid keys for titles and legends ("D = 18 ms").
_SHORT = {
    "delay": "D",
    "alpha": "buffer",
    "n_flows": "n",
    "per_cca": "n",
    "rtt_ratio": "RTT spread",
    "params.bbr": "BBR",
    "ccas": "",
}

# Reproducible SVG files: fixed ids, no date stamp.
matplotlib.rcParams["svg.hashsalt"] = "ccfair"


def cca_color(cca: str) -> str:
    """The colour of an algorithm: its own in :data:`CCA_COLORS`, else a spare colour fixed
    by the algorithm's place in the registry (:func:`ccfair.algorithms.names`), so that a new
    algorithm has one colour in every figure whatever order figures meet it in.

    Example:
        >>> cca_color("cubic")
        '#E69F00'
    """
    if cca in CCA_COLORS:
        return CCA_COLORS[cca]
    return _EXTRA_CCA_COLORS[_spare_index(cca, CCA_COLORS) % len(_EXTRA_CCA_COLORS)]


def _spare_index(cca: str, own: Mapping[str, Any]) -> int:
    """The place of an algorithm without an entry in ``own`` among the registry's algorithms
    without one; a name the registry lacks (results of another version) gets a place from
    its name, so that it too has one style in every figure."""
    from ccfair.algorithms import names

    spare = [n for n in names() if n not in own]
    return spare.index(cca) if cca in spare else len(spare) + zlib.crc32(cca.encode())


def cca_marker(cca: str) -> str:
    """The marker of an algorithm."""
    return CCA_MARKERS.get(cca, "X")


def cca_linestyle(cca: str) -> Any:
    """The line style of an algorithm (in figures of flows)."""
    if cca in CCA_LINESTYLES:
        return CCA_LINESTYLES[cca]
    return _EXTRA_LINESTYLES[_spare_index(cca, CCA_LINESTYLES) % len(_EXTRA_LINESTYLES)]


def level_style(i: int) -> dict[str, Any]:
    """The style of the i-th level of a non-algorithm variable."""
    return LEVEL_STYLES[i % len(LEVEL_STYLES)]


def axis_label(key: str) -> str:
    """The axis label of a grid key or metric: the quantity and its unit.

    Example:
        >>> axis_label("alpha")
        'buffer [x BDP]'
    """
    return AXIS_LABELS.get(key, key.replace("_", " "))


def axis_name(key: str) -> str:
    """A short name of a grid key for titles ("D", "buffer", "n")."""
    return _SHORT.get(key, key)


def point_label(key: str, value: Any) -> str:
    """A grid value as a reader says it.

    Example:
        >>> point_label("delay", "18ms"), point_label("alpha", 2), point_label("ccas", "reno-bbr")
        ('D = 18 ms', 'buffer 2 x BDP', 'reno-bbr')
    """
    if key == "delay":
        return f"D = {_ms_text(value)} ms"
    if key == "alpha":
        return f"buffer {value} x BDP"
    if key in ("n_flows", "per_cca"):
        return f"n = {value}"
    if key == "ccas":
        return str(value)
    return f"{axis_name(key)} {value}"


def _ms_text(value: Any) -> str:
    ns = parse_duration(value)
    return f"{ns / 1e6:g}" if ns is not None else str(value)


def _tick(key: str, value: Any) -> str:
    return _ms_text(value) if key == "delay" else str(value)


def varying_keys(results: Results) -> list[str]:
    """Grid keys with more than one value (a one-value axis is part of the setup)."""
    return [k for k, v in results.axes.items() if len(v) > 1] or list(results.axes)


def _legend_outside(
    fig: Figure, handles: list, *, ncol: int | None = None, title: str | None = None
) -> None:
    """One legend for the whole figure, below the panels (never on data)."""
    if not handles:
        return
    ncol = ncol or min(len(handles), 4)
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=ncol,
        fontsize=8,
        frameon=False,
        title=title,
        title_fontsize=8,
    )


def _legend_right(ax: Any, **kw: Any) -> None:
    """A legend to the right of one axes, outside it."""
    ax.legend(
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0,
        fontsize=7,
        frameon=False,
        **kw,
    )


def save(
    fig: Figure,
    out_dir: str | os.PathLike[str],
    name: str,
    formats: Sequence[str] | None = None,
) -> list[Path]:
    """Write ``fig`` as ``out_dir/name.png`` (150 dpi), ``.svg`` and ``.pdf`` (or the
    ``formats`` asked for: png, svg, pdf); returns the paths, in that order. Files are
    written under a temporary name and renamed, with no date stamp, so that a figure is the
    same byte for byte each time.

    Example:
        >>> save(timeseries(res, run_id), "figures", "ts-" + run_id)  # doctest: +SKIP
        [PosixPath('figures/ts-....png'), PosixPath('figures/ts-....svg'), ...]
    """
    out = Path(out_dir)
    make_dir(out)  # a file in the way is one ResultsError naming it
    paths = []
    options = {
        "png": {"dpi": 150, "metadata": {"Software": None}},
        "svg": {"metadata": {"Date": None, "Creator": None}},
        "pdf": {"metadata": {"CreationDate": None, "Creator": None, "Producer": None}},
    }
    for ext in formats or ("png", "svg", "pdf"):
        if ext not in options:
            raise ValueError(f"formats: {ext!r} is not png, svg or pdf")
        path = out / f"{name}.{ext}"
        # The figures use constrained layout; the temporary is ccfair-named (store/files.py).
        replace_via_temporary(
            path, lambda tmp, ext=ext, kwargs=options[ext]: fig.savefig(tmp, format=ext, **kwargs)
        )
        paths.append(path)
    return paths


def slug(text: Any) -> str:
    """A file-name-safe form of a label.

    Example:
        >>> slug("reno-bbr / 2ms")
        'reno-bbr-2ms'
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-") or "x"


def _order(values: Sequence[Any], axis: Sequence[Any] | None) -> list[Any]:
    present = list(dict.fromkeys(values))
    if axis:
        ordered = [v for v in axis if v in present]
        return ordered + [v for v in present if v not in ordered]
    try:
        return sorted(present)
    except TypeError:
        return present


def _n_text(counts: Any) -> str:
    """ "n = 5" (or "n = 2-5" when points differ) for captions and legends."""
    ns = sorted({int(c) for c in counts if c == c})
    if not ns:
        return ""
    return f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}-{ns[-1]}"


def capacity_mbps(spec: Mapping[str, Any]) -> float:
    """The lowest bottleneck rate of a normalised spec, in Mbit/s (NaN without links)."""
    rates = {link["name"]: parse_rate(link["rate"]) or 0 for link in spec.get("links", [])}
    names = [n for n, _ in bottlenecks(spec)] if spec.get("flows") else []
    values = [rates[n] for n in names if n in rates]
    return min(values) / 1e6 if values else float("nan")


def _results_capacity(results: Results) -> float:
    caps = [capacity_mbps(s) for s in results.specs().values()]
    caps = [c for c in caps if math.isfinite(c)]
    return max(caps) if caps else float("nan")


def _grid(n: int, ncol_max: int = 3, w: float = 4.0, h: float = 3.0) -> tuple[Figure, np.ndarray]:
    nrow = math.ceil(n / ncol_max)
    ncol = math.ceil(n / nrow)
    fig = Figure(figsize=(w * ncol + 1.6, h * nrow + 0.9), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes


def _combos(frame: pd.DataFrame, keys: list[str], axes: Mapping[str, Any]) -> list[tuple]:
    if not keys:
        return [()]
    seen = [tuple(r) for r in frame[keys].drop_duplicates().itertuples(index=False)]

    # Grid order of every key.
    def rank(combo: tuple) -> tuple:
        out = []
        for k, v in zip(keys, combo, strict=True):
            order = list(axes.get(k) or [])
            out.append(order.index(v) if v in order else len(order))
        return tuple(out)

    return sorted(seen, key=rank)


def _panel_title(keys: list[str], combo: tuple) -> str:
    return ", ".join(point_label(k, v) for k, v in zip(keys, combo, strict=True))


def _select(frame: pd.DataFrame, keys: list[str], combo: tuple) -> pd.DataFrame:
    sel = frame
    for k, v in zip(keys, combo, strict=True):
        sel = sel[sel[k] == v]
    return sel


# --------------------------------------------------------------------------------------------
# Heatmaps (Harada study: delay x alpha, darker = higher, values annotated)


def _flow_group_default(name: str) -> str:
    return name


def parking_lot_groups(name: str) -> str:
    """Flow grouping for parking lots: the main flow, and the cross flows together."""
    return "cross flows (mean)" if name.startswith("cross") else name


def heatmaps(
    results: Results,
    *,
    x: str,
    y: str,
    by: str | None = None,
    value: str = "goodput_mbps",
    flow_group: Callable[[str], str] = _flow_group_default,
    cmap: str = "Greys",
    unit: str = "Mbit/s",
) -> list[tuple[str, Figure]]:
    """One figure per value of ``by`` (e.g. the CCA pair), with one heatmap per flow (or flow
    group) of the mean ``value`` over repetitions, on the grid axes ``x`` and ``y``; darker =
    higher, each cell annotated with the mean and, below it, the lowest and highest
    repetition. All panels of a figure share one grey scale (no hue: it prints, and no
    algorithm colour is reused).

    Returns (name, figure) pairs, names like ``heatmap-reno-bbr``.
    """
    flows = results.flows()
    flows = flows[flows["baseline"].isna()]
    if flows.empty:
        return []
    flows = flows.assign(group=[flow_group(str(n)) for n in flows["flow_name"]])
    out = []
    groups = _order(flows[by], results.axes.get(by)) if by else [None]
    xs_all = _order(flows[x], results.axes.get(x))
    ys_all = _order(flows[y], results.axes.get(y))
    for g in groups:
        data = flows if g is None else flows[flows[by] == g]
        panels, cells = _heatmap_cells(data, x, y, value)
        vmax = float(np.nanmax(cells["v"])) if len(cells) else 1.0
        ncol = len(panels)
        fig = Figure(
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
        n_text = _n_text(cells["n"])
        head = f"{title}: {point_label(by, g)}" if g is not None and by else title
        fig.suptitle(f"{head} ({n_text} repetitions per cell)" if n_text else head, fontsize=11)
        out.append((f"heatmap-{slug(g) if g is not None else 'all'}", fig))
    return out


def _heatmap_cells(
    data: pd.DataFrame, x: str, y: str, value: str
) -> tuple[list[Any], pd.DataFrame]:
    """The flow groups (one panel each) and, per (x, y, group) cell, the mean, lowest and
    highest repetition of ``value``, their number and the group's algorithms."""
    # Mean over the flows of a group within a run, then over repetitions.
    per_run = (
        data.groupby(["run_id", x, y, "group"], sort=False)
        .agg(v=(value, "mean"), cca=("cca", lambda c: "/".join(dict.fromkeys(c))))
        .reset_index()
    )
    cells = per_run.groupby([x, y, "group"], sort=False).agg(
        v=("v", "mean"),
        lo=("v", "min"),
        hi=("v", "max"),
        n=("v", "count"),
        cca=("cca", "first"),
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
    for i, yv in enumerate(ys_all):
        for j, xv in enumerate(xs_all):
            key = (xv, yv, panel)
            if key in cells.index:
                cell = cells.loc[key]
                grid[i, j] = cell["v"]
                ranges[(i, j)] = (cell["lo"], cell["hi"], int(cell["n"]))
                cca = cell["cca"]
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
    ax.set_xticks(range(len(xs_all)), [_tick(x, v) for v in xs_all])
    ax.set_yticks(range(len(ys_all)), [_tick(y, v) for v in ys_all])
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(axis_label(y))
    ax.set_title(f"{panel} ({cca})" if cca else str(panel), fontsize=10)
    return image


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


def _hollow(ax: Any, x: Any, y: Any, color: str, marker: str, *, s: float = 9) -> None:
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
        _hollow(ax, xs, vals, color, marker, s=9)


# --------------------------------------------------------------------------------------------
# Curves over the buffer (Copa study: throughput vs buffer per CCA, with intervals)


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
    varying = [k for k in results.grid_keys if k != x and len(results.axes.get(k, [])) > 1]
    keys = [k for k in dict.fromkeys([*panels, *varying]) if k in table.columns]
    summary = results.point_summary(table, [value], ["cca"])
    combos = _combos(summary, keys, results.axes)
    fig, axes = _grid(len(combos))
    capacity = _results_capacity(results)
    bounds = (0.0, capacity if math.isfinite(capacity) else None)
    xs_order = results.axes.get(x)
    handles: dict[str, Any] = {}
    runs_per_flow = table.groupby("run_id")["flow_count"].sum()
    for ax, combo in zip(axes, combos, strict=False):
        sel = _select(summary, keys, combo)
        raw = _select(table, keys, combo)
        for cca in dict.fromkeys(sel["cca"]):
            line = sel[sel["cca"] == cca]
            order = _order(line[x], xs_order)
            line = line.set_index(x).loc[order].reset_index()
            xv = np.asarray([float(v) for v in line[x]])
            mean = line[value].to_numpy(dtype=float)
            half = line[f"{value}_ci95"].to_numpy(dtype=float)
            color, marker = cca_color(str(cca)), cca_marker(str(cca))
            mine = raw[raw["cca"] == cca]
            reps = [mine[mine[x] == v][value].to_numpy(dtype=float) for v in order]
            _interval_band(ax, xv, mean, half, bounds, color)
            _rep_dots(ax, xv, reps, color, marker)
            (h,) = ax.plot(xv, mean, marker=marker, ms=4, color=color, label=str(cca))
            handles.setdefault(str(cca), h)
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
        ax.set_title(_panel_title(keys, combo), fontsize=10)
    n_text = _n_text(summary["n"])
    _legend_outside(
        fig,
        list(handles.values()),
        title=f"mean, repetitions (dots), 95% interval (band); {n_text} per point",
    )
    return [("throughput-vs-buffer", fig)]


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
    95% bands clipped to the metric's range (:func:`ccfair.metrics.bounds_of`), one panel per
    ``panels`` combination. ``diagonal`` draws y = x (e.g. a queue against its buffer)."""
    runs = results.runs()
    runs = runs[runs["baseline"].isna()]
    if runs.empty or metric not in runs.columns:
        return []
    bounds = bounds_of(metric)
    summary = results.point_summary(runs, [metric])
    keys = [
        k for k in panels if k in summary.columns and len(results.axes.get(k, [None, None])) > 1
    ]
    lines = lines if lines in summary.columns else None
    combos = _combos(summary, keys, results.axes)
    fig, axes = _grid(len(combos))
    handles: dict[str, Any] = {}
    for ax, combo in zip(axes, combos, strict=False):
        sel = _select(summary, keys, combo)
        raw = _select(runs, keys, combo)
        line_values = _order(sel[lines], results.axes.get(lines)) if lines else [None]
        for i, lv in enumerate(line_values):
            line = sel if lv is None else sel[sel[lines] == lv]
            mine = raw if lv is None else raw[raw[lines] == lv]
            order = _order(line[x], results.axes.get(x))
            line = line.groupby(x, sort=False).first().loc[order].reset_index()
            xv = np.asarray([float(v) for v in line[x]])
            mean = line[metric].to_numpy(dtype=float)
            half = line[f"{metric}_ci95"].to_numpy(dtype=float)
            st = level_style(i)
            reps = [mine[mine[x] == v][metric].to_numpy(dtype=float) for v in order]
            _interval_band(ax, xv, mean, half, bounds, st["color"])
            _rep_dots(ax, xv, reps, st["color"], st["marker"])
            label = point_label(lines, lv) if lines else axis_label(metric)
            (h,) = ax.plot(
                xv, mean, marker=st["marker"], ms=4, color=st["color"], ls=st["ls"], label=label
            )
            handles.setdefault(label, h)
        if diagonal:
            ticks = np.asarray(sorted({float(v) for v in summary[x]}))
            h = ax.plot(ticks, ticks, color=LINK_COLOR, lw=0.8, ls=":", label="y = x (the buffer)")[
                0
            ]
            handles.setdefault("diagonal", h)
            ax.set_yscale("log", base=2)
        _log2_axis(ax, summary[x])
        ax.set_xlabel(axis_label(x))
        ax.set_ylabel(ylabel or axis_label(metric))
        if bounds == (0.0, 1.0):
            ax.set_ylim(0, 1.03)
        ax.grid(alpha=0.3)
        ax.set_title(_panel_title(keys, combo), fontsize=10)
    n_text = _n_text(summary["n"])
    _legend_outside(
        fig,
        list(handles.values()),
        title=f"mean, repetitions (dots), 95% interval (band); {n_text} per point",
    )
    return [(name or f"{metric}-vs-{x}", fig)]


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
    frame = results.ccas() if table == "ccas" else results.runs()
    frame = frame[frame["baseline"].isna()]
    for k, v in (where or {}).items():
        if k in frame.columns:
            frame = frame[frame[k] == v]
    if frame.empty or value not in frame.columns:
        return []
    extra = ["cca"] if table == "ccas" else []
    summary = results.point_summary(frame, [value], extra)
    keys = [k for k in panels if k in summary.columns and len(set(summary[k])) > 1]
    combos = _combos(summary, keys, results.axes)
    ncol = len(list(dict.fromkeys(summary[keys[-1]]))) if keys else 1
    fig, axes = _grid(len(combos), ncol_max=max(1, min(ncol, 4)), w=3.6, h=3.0)
    bounds = bounds_of(value)
    if value.endswith("_mbps"):
        cap = _results_capacity(results)
        bounds = (0.0, cap if math.isfinite(cap) else None)
    xs = _order(summary[x], results.axes.get(x))
    hues = _order(summary[hue], results.axes.get(hue)) if hue else [None]
    width = 0.7 / len(hues)
    handles: dict[str, Any] = {}
    for ax, combo in zip(axes, combos, strict=False):
        sel = _select(summary, keys, combo)
        raw = _select(frame, keys, combo)
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
        _dots_axes(ax, [str(v) for v in xs], axis_label(x), ylabel or axis_label(value), bounds)
        ax.set_title(_panel_title(keys, combo), fontsize=10)
    n_text = _n_text(summary["n"])
    title = f"repetitions (hollow), mean with 95% interval (filled); {n_text} per point"
    _legend_outside(fig, list(handles.values()) if hue else [], title=title)
    if not hue:
        fig.suptitle(title, fontsize=8)
    return [(name or f"{value}-by-{slug(x)}", fig)]


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
    _hollow(ax, pos + np.asarray(jitter), vals, color, marker, s=10)
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
    flows = results.flows()
    flows = flows[flows["baseline"].isna()]
    if flows.empty:
        return []
    total = flows.groupby("run_id")["goodput_mbps"].transform("sum")
    count = flows.groupby("run_id")["goodput_mbps"].transform("count")
    flows = flows.assign(rel=flows["goodput_mbps"] * count / total.where(total > 0))
    keys = [k for k in panels if k in flows.columns and len(set(flows[k])) > 1]
    combos = _combos(flows, keys, results.axes)
    fig, axes = _grid(len(combos), ncol_max=3, w=4.2, h=3.0)
    xs = _order(flows[x], results.axes.get(x))
    hues = _order(flows[hue], results.axes.get(hue)) if hue and hue in flows.columns else [None]
    width = 0.8 / len(hues)
    names = list(dict.fromkeys(flows.sort_values("flow")["flow_name"]))
    flow_color = {n: FLOW_COLORS[i % len(FLOW_COLORS)] for i, n in enumerate(names)}
    markers = ["o", "s", "^", "D"]
    ymax = 1.0
    for ax, combo in zip(axes, combos, strict=False):
        sel = _select(flows, keys, combo)
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
        ax.set_xticks(range(len(xs)), [_tick(x, v) for v in xs])
        ax.set_xlabel(axis_label(x))
        ax.set_ylabel("goodput / fair share")
        ax.set_ylim(0, max(2.0, ymax * 1.05))
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(_panel_title(keys, combo), fontsize=10)
    handles = _flow_distribution_handles(flow_color, hue if len(hues) > 1 else None, hues, markers)
    n_text = _n_text(flows.groupby("point_key")["run_id"].nunique())
    _legend_outside(
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


# --------------------------------------------------------------------------------------------
# Time series of one run


def _smooth(values: np.ndarray, window: int) -> np.ndarray:
    """Centred moving average; near the ends it averages the samples that exist (a plain
    convolution would pad with zeros and drag the first and last points down)."""
    if window <= 1 or len(values) < window:
        return values
    kernel = np.ones(window)
    sums = np.convolve(values, kernel, mode="same")
    counts = np.convolve(np.ones(len(values)), kernel, mode="same")
    return sums / counts


def _window_samples(smooth_s: float, dt: float) -> int:
    """Samples in a moving average of ``smooth_s`` seconds at sampling interval ``dt``; a
    window longer than any run (``smooth_s = 1e308``) is capped before it becomes an int.

    Example:
        >>> _window_samples(0.5, 0.01), _window_samples(1e308, 1e-3), _window_samples(0, 0.01)
        (50, 1000000000, 1)
    """
    if not (dt > 0 and smooth_s > 0):
        return 1
    return max(1, round(min(smooth_s / dt, 1e9)))


def _sample_dt(ts: pd.DataFrame) -> float:
    return float(np.median(np.diff(np.unique(ts["t_s"])))) if len(ts) > 1 else 0.01


def _goodput_label(smooth_s: float, dt: float) -> str:
    if smooth_s > 0:
        return f"goodput, {smooth_s:g} s average\n[Mbit/s]"
    return f"goodput per {dt * 1e3:g} ms sample\n[Mbit/s]"


def timeseries(
    results: Results,
    run_id: str,
    *,
    title: str | None = None,
    smooth_s: float = SMOOTH_S,
    max_flows: int = len(FLOW_COLORS),
    flows: Sequence[str] | None = None,
    window: tuple[float, float] | None = None,
) -> Figure:
    """Time series of one run of a results directory (see :func:`run_timeseries`); the
    title names the scenario, the run and ``title`` (e.g. the grid point)."""
    tables = results.run_tables(run_id)
    spec = results.specs()[run_id]
    return run_timeseries(
        tables["timeseries"],
        tables["links"],
        spec,
        title=run_title(spec, run_id, title),
        smooth_s=smooth_s,
        max_flows=max_flows,
        flows=flows,
        window=window,
    )


def run_title(spec: dict[str, Any], run_id: str, label: str | None = None) -> str:
    """A figure title naming the scenario, the run and an optional label.

    Example:
        >>> run_title({"name": "dumbbell", "seed": 1}, "ab12", "alpha=2")
        "scenario 'dumbbell', seed 1, run ab12: alpha=2"
    """
    head = f"scenario {spec.get('name', 'scenario')!r}, seed {spec.get('seed')}, run {run_id}"
    return f"{head}: {label}" if label else head


def _pick_flows(names: list[str], flows: Sequence[str] | None, max_flows: int) -> list[str]:
    if flows is None:
        return names[:max_flows]
    unknown = [f for f in flows if f not in names]
    if unknown:
        raise ValueError(
            f"flows: {unknown[0]!r} is not a flow of this run; flows: {', '.join(names[:20])}"
        )
    return list(flows)


def flow_colors(names: Sequence[str]) -> dict[str, str]:
    """The colour of each flow of a run, by its position in the spec."""
    return {n: FLOW_COLORS[i % len(FLOW_COLORS)] for i, n in enumerate(names)}


def _link_label(spec: Mapping[str, Any], name: str, direction: str) -> str:
    """ "bottleneck (s1 -> s2)": a link direction named by the nodes it goes between."""
    for link in spec.get("links", []):
        if link["name"] == name:
            a, b = link["between"]
            src, dst = (a, b) if direction == "ab" else (b, a)
            return f"{name} ({src} \u2192 {dst})"
    return f"{name} ({direction})"


def _capacity_lines(ax: Any, spec: Mapping[str, Any], shown: Sequence[str]) -> Any:
    rates = {link["name"]: parse_rate(link["rate"]) or 0 for link in spec["links"]}
    sub = {**spec, "flows": [f for f in spec["flows"] if f["name"] in shown]}
    caps = sorted({rates[n] / 1e6 for n, _ in bottlenecks(sub) if n in rates})
    handle = None
    for c in caps:
        handle = ax.axhline(
            c, color=LINK_COLOR, lw=0.8, ls="--", label=f"bottleneck capacity ({c:g} Mbit/s)"
        )
    return handle


def run_timeseries(
    ts: pd.DataFrame,
    links: pd.DataFrame,
    spec: dict[str, Any],
    *,
    title: str = "",
    smooth_s: float = SMOOTH_S,
    max_flows: int = len(FLOW_COLORS),
    flows: Sequence[str] | None = None,
    window: tuple[float, float] | None = None,
) -> Figure:
    """Time series of one run, one panel each: goodput per flow (moving average over
    ``smooth_s`` seconds, 0 = the raw samples) with the bottleneck capacity; cwnd (thick) and
    packets in flight (thin); smoothed RTT with BBR's RTprop estimate (thin) and the base RTT;
    the queue at each bottleneck against its buffer; and, when Copa flows are present, Copa's
    delta and mode. A colour per flow, a line style per algorithm, one legend above the
    panels. ``flows`` names the flows to draw (default: the first ``max_flows``; the title
    says when some are left out); ``window`` = (start s, end s) limits the time axis."""
    names = [f["name"] for f in spec["flows"]]
    ccas = {f["name"]: f["cca"] for f in spec["flows"]}
    shown = _pick_flows(names, flows, max_flows)
    if window is not None:
        lo, hi = window
        if not lo < hi:
            raise ValueError(f"window: start {lo} is not before end {hi}")
        ts = ts[(ts["t_s"] >= lo) & (ts["t_s"] <= hi)]
        links = links[(links["t_s"] >= lo) & (links["t_s"] <= hi)]
    has_copa = (
        "copa_delta" in ts.columns
        and any(ccas[n] == "copa" for n in shown)
        and ts["copa_delta"].notna().any()
    )
    copa_flows = [n for n in shown if ccas[n] == "copa"] if has_copa else []
    rows = 6 if has_copa else 4
    heights = [1.0] * 4 + ([0.8, 0.15 + 0.12 * len(copa_flows)] if has_copa else [])
    fig = Figure(figsize=(9.0, 2.0 * sum(heights) + 1.3), layout="constrained")
    axes = fig.subplots(rows, 1, sharex=True, gridspec_kw={"height_ratios": heights})
    dt = _sample_dt(ts)
    window_n = _window_samples(smooth_s, dt)
    handles = _run_flow_lines(axes, ts, shown, ccas, flow_colors(names), window_n, copa_flows)
    cap = _capacity_lines(axes[0], spec, shown)
    if cap is not None:
        handles.append(cap)
    base_rtts = sorted({round(_base_rtt_ms(spec, n), 3) for n in shown} - {float("nan")})
    for b in base_rtts[:3]:
        axes[2].axhline(b, color=LINK_COLOR, lw=0.6, ls=":")
    _bottleneck_queues(axes[3], links, spec)
    _run_panel_labels(axes, _goodput_label(smooth_s, dt), copa_flows if has_copa else None)
    if base_rtts:
        axes[2].plot([], [], color=LINK_COLOR, lw=0.6, ls=":", label="base RTT")
        _legend_right(axes[2])
    for ax in axes[:4]:
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    if window is not None:
        axes[-1].set_xlim(*window)
    more = f" (flows {', '.join(shown)} of {len(names)})" if len(shown) < len(names) else ""
    fig.suptitle(title + more, fontsize=10)
    _legend_outside(fig, handles, ncol=min(len(handles), 4))
    return fig


def _run_flow_lines(
    axes: Any,
    ts: pd.DataFrame,
    shown: Sequence[str],
    ccas: Mapping[str, str],
    colors: Mapping[str, str],
    window_n: int,
    copa_flows: Sequence[str],
) -> list[Any]:
    """Each shown flow's lines in the panels of :func:`run_timeseries`; returns the
    goodput lines (the legend's handles)."""
    by_flow = dict(tuple(ts.groupby("flow_name", sort=False)))
    handles = []
    for name in shown:
        f = by_flow.get(name, ts.iloc[0:0]).sort_values("t_s")
        style = {"color": colors[name], "ls": cca_linestyle(ccas[name])}
        t = f["t_s"].to_numpy()
        (h,) = axes[0].plot(
            t,
            _smooth(f["goodput_mbps"].to_numpy(), window_n),
            lw=1.2,
            label=f"{name} ({ccas[name]})",
            **style,
        )
        handles.append(h)
        axes[1].plot(t, f["cwnd_pkts"], lw=1.3, **style)
        axes[1].plot(t, f["inflight_pkts"], lw=0.6, alpha=0.6, **style)
        axes[2].plot(t, f["srtt_ms"], lw=1.3, **style)
        if "bbr_rtprop_ms" in f.columns and f["bbr_rtprop_ms"].notna().any():
            axes[2].plot(t, f["bbr_rtprop_ms"], lw=0.7, alpha=0.8, **style)
        if name in copa_flows:
            axes[4].plot(t, f["copa_delta"], lw=1.2, **style)
            # Competitive mode as bars, one row per Copa flow (shading would stack up).
            comp = np.nan_to_num(f["copa_mode_competitive"].to_numpy(dtype=float)) > 0.5
            row = copa_flows.index(name)
            axes[5].fill_between(
                t, row + 0.1, row + 0.9, where=comp, step="post", color=colors[name], linewidth=0
            )
    return handles


def _bottleneck_queues(ax: Any, links: pd.DataFrame, spec: Mapping[str, Any]) -> None:
    """The queue at each bottleneck (more than three: each thin grey, with their mean) and
    up to three buffer sizes."""
    bns = bottlenecks(spec)
    buffers = {link["name"]: link.get("buffer_pkts") for link in spec["links"]}
    many = len(bns) > 3
    qs = []
    for i, (bn_name, direction) in enumerate(bns):
        q = links[
            (links["link_name"].astype(str) == bn_name)
            & (links["direction"].astype(str) == direction)
        ].sort_values("t_s")
        if many:
            ax.plot(
                q["t_s"],
                q["queue_pkts"],
                lw=0.5,
                color="#b0b0b0",
                label="each bottleneck" if i == 0 else None,
            )
            qs.append(q.set_index("t_s")["queue_pkts"])
        else:
            st = level_style(i)
            ax.plot(
                q["t_s"],
                q["queue_pkts"],
                lw=1.0,
                color=st["color"],
                ls=st["ls"],
                label=_link_label(spec, bn_name, direction),
            )
    if many and qs:
        mean_q = pd.concat(qs, axis=1).mean(axis=1)
        ax.plot(
            mean_q.index,
            mean_q.to_numpy(),
            lw=1.1,
            color=LINK_COLOR,
            label=f"mean of {len(qs)} bottlenecks",
        )
    sizes = sorted({buffers[n] for n, _ in bns if buffers.get(n)})
    for s in sizes[:3]:
        ax.axhline(s, color=LINK_COLOR, lw=0.8, ls=":", label=f"buffer ({s} packets)")


def _run_panel_labels(axes: Any, goodput_label: str, copa_flows: Sequence[str] | None) -> None:
    """The panels' axis labels (with the Copa panels' scales when there are Copa flows)
    and the queue panel's legend."""
    axes[0].set_ylabel(goodput_label)
    axes[1].set_ylabel("cwnd (thick), in flight\n(thin) [packets]")
    axes[2].set_ylabel("smoothed RTT [ms]\n(thin: BBR RTprop)")
    axes[3].set_ylabel("bottleneck queue\n[packets]")
    if copa_flows is not None:
        axes[4].set_ylabel("Copa delta")
        axes[4].set_yscale("log", base=2)
        axes[5].set_ylabel("Copa in competitive\nmode (bars)")
        axes[5].set_yticks([i + 0.5 for i in range(len(copa_flows))], copa_flows, fontsize=7)
        axes[5].set_ylim(0, len(copa_flows))
    axes[-1].set_xlabel("time [s]")
    _legend_right(axes[3])


def _base_rtt_ms(spec: Mapping[str, Any], flow: str) -> float:
    for f in spec["flows"]:
        if f["name"] == flow and f.get("base_rtt") is not None:
            ns = parse_duration(f["base_rtt"])
            return ns / 1e6 if ns is not None else float("nan")
    return float("nan")


def timeseries_rows(
    results: Results,
    runs: Sequence[tuple[str, str]],
    *,
    what: str = "goodput",
    smooth_s: float = SMOOTH_S,
    title: str | None = None,
) -> Figure:
    """One row per (label, run id), sharing the time axis, to compare runs: ``what`` is
    ``"goodput"`` (each flow's goodput, moving average over ``smooth_s``, with the
    bottleneck capacity) or ``"rtt"`` (each flow's smoothed RTT, thick, and BBR's RTprop
    estimate, thin and solid). A colour per flow and a line style per algorithm; when a run has more
    than six flows, flows named ``cross*`` are drawn thin grey with their mean in black."""
    if what not in ("goodput", "rtt"):
        raise ValueError(f"what: {what!r} is not 'goodput' or 'rtt'")
    fig = Figure(figsize=(9.0, 1.7 * len(runs) + 1.2), layout="constrained")
    axes = fig.subplots(len(runs), 1, sharex=True, squeeze=False)[:, 0]
    specs = results.specs()
    for ax, (label, rid) in zip(axes, runs, strict=True):
        ts = results.run_tables(rid)["timeseries"]
        _timeseries_row(ax, label, ts, specs[rid], what, smooth_s)
    axes[-1].set_xlabel("time [s]")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def _timeseries_row(
    ax: Any, label: str, ts: pd.DataFrame, spec: Mapping[str, Any], what: str, smooth_s: float
) -> None:
    """One row of :func:`timeseries_rows`: one run's flows."""
    names = [f["name"] for f in spec["flows"]]
    ccas = {f["name"]: f["cca"] for f in spec["flows"]}
    colors = flow_colors(names)
    dt = _sample_dt(ts)
    window = _window_samples(smooth_s, dt)
    group_cross = len(names) > 6
    cross_lines = []
    by_flow = dict(tuple(ts.groupby("flow_name", sort=False)))
    for name in names:
        f = by_flow.get(name, ts.iloc[0:0]).sort_values("t_s")
        t = f["t_s"].to_numpy()
        cca = ccas[name]
        y = (
            _smooth(f["goodput_mbps"].to_numpy(), window)
            if what == "goodput"
            else f["srtt_ms"].to_numpy()
        )
        if group_cross and name.startswith("cross"):
            ax.plot(
                t,
                y,
                color="#b8b8b8",
                lw=0.5,
                ls=cca_linestyle(cca),
                label=f"each cross flow ({cca})" if not cross_lines else None,
            )
            cross_lines.append(pd.Series(y, index=t))
            continue
        ax.plot(
            t,
            y,
            color=colors[name],
            ls=cca_linestyle(cca),
            lw=1.4 if what == "rtt" else 1.2,
            label=f"{name} ({cca})" + (" RTT" if what == "rtt" else ""),
        )
        if what == "rtt" and "bbr_rtprop_ms" in f.columns and f["bbr_rtprop_ms"].notna().any():
            ax.plot(
                t,
                f["bbr_rtprop_ms"],
                color=colors[name],
                lw=0.7,
                alpha=0.9,
                label=f"{name} RTprop (thin)",
            )
    if cross_lines:
        mean = pd.concat(cross_lines, axis=1).mean(axis=1)
        ax.plot(
            mean.index,
            mean.to_numpy(),
            color=LINK_COLOR,
            lw=1.2,
            label=f"mean of {len(cross_lines)} cross flows",
        )
    if what == "goodput":
        _capacity_lines(ax, spec, names)
    else:
        for n in names[:1]:
            b = _base_rtt_ms(spec, n)
            if math.isfinite(b):
                ax.axhline(b, color=LINK_COLOR, lw=0.6, ls=":", label="base RTT")
    ax.set_title(label, fontsize=9, loc="left")
    ax.set_ylabel(_goodput_label(smooth_s, dt) if what == "goodput" else "RTT [ms]")
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    _legend_right(ax)


def jain_over_time(
    results: Results,
    runs: Sequence[tuple[str, str]],
    *,
    window_s: float = SMOOTH_S,
    title: str | None = None,
) -> Figure:
    """Jain's index of the flows' goodput over time, one line per (label, run id): each
    flow's goodput is averaged over consecutive windows of ``window_s`` seconds and the index
    taken over the flows in each window (the first window starts at the first sample)."""
    fig = Figure(figsize=(9.0, 3.4), layout="constrained")
    ax = fig.subplots()
    handles = []
    for i, (label, rid) in enumerate(runs):
        ts = results.run_tables(rid)["timeseries"]
        t, jain = jain_series(ts, window_s)
        st = level_style(i)
        (h,) = ax.plot(
            t,
            jain,
            color=st["color"],
            ls=st["ls"],
            marker=st["marker"],
            ms=3,
            markevery=max(1, len(t) // 12),
            lw=1.1,
            label=label,
        )
        handles.append(h)
    ax.set_ylim(0, 1.03)
    ax.set_xlabel("time [s]")
    ax.set_ylabel(f"Jain index\n(goodput over {window_s:g} s windows)")
    ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    _legend_outside(fig, handles, ncol=min(len(handles), 5))
    return fig


def jain_series(ts: pd.DataFrame, window_s: float) -> tuple[np.ndarray, np.ndarray]:
    """(window end times, Jain index per window) of a run's time series table.

    Example:
        >>> ts = pd.DataFrame({"t_s": [0.5, 1.0, 0.5, 1.0], "flow_name": ["a", "a", "b", "b"],
        ...                    "goodput_mbps": [10.0, 10.0, 10.0, 30.0]})
        >>> jain_series(ts, 1.0)[1].round(3).tolist()
        [0.9]
    """
    wide = ts.pivot_table(
        index="t_s", columns="flow_name", values="goodput_mbps", aggfunc="mean"
    ).sort_index()
    if wide.empty:
        return np.array([]), np.array([])
    t = wide.index.to_numpy(dtype=float)
    dt = float(np.median(np.diff(t))) if len(t) > 1 else window_s
    start = t[0] - dt
    bins = np.floor((t - start - 1e-9) / window_s).astype(int)
    means = wide.groupby(bins).mean()
    ends = start + (means.index.to_numpy() + 1) * window_s
    jain = np.array([jain_index(row[np.isfinite(row)]) for row in means.to_numpy(dtype=float)])
    return ends, jain


# --------------------------------------------------------------------------------------------
# Throughput against delay (Pantheon style)


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
) -> Figure:
    """Throughput against delay per algorithm, Pantheon style: for every run, each
    algorithm's mean goodput per flow against its flows' mean ``delay`` (default the 95th
    percentile RTT; ``qdelay_p95_ms`` for queueing delay); the delay axis runs right to left
    so that better is up and to the right. Runs of one point and algorithm (repetitions)
    get their mean as a large marker and their 1-standard-deviation ellipse.

    ``flows`` is a flows table (``RunResult.flows``, ``Results.flows()`` or
    ``load_table(DIR, "flows")``); ``by`` (a column, e.g. the grid key ``"ccas"``) draws one
    panel per value.

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
    fig, axes = _grid(len(panels), w=4.2, h=3.4)
    handles: dict[str, Any] = {}
    for ax, panel in zip(axes, panels, strict=False):
        data = per_run if panel is None else per_run[per_run[by] == panel]
        for cca in dict.fromkeys(data["cca"]):
            color, marker = cca_color(str(cca)), cca_marker(str(cca))
            mine = data[data["cca"] == cca]
            _hollow(ax, mine["delay_ms"], mine["goodput_mbps"], color, marker, s=10)
            groups = mine.groupby("point_key", sort=False) if "point_key" in mine else [(0, mine)]
            for _, reps in groups:
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
                    label=str(cca),
                    zorder=3,
                )
                handles.setdefault(str(cca), h)
                if len(reps) >= 3:
                    _ellipse(ax, x, y, color)
        ax.invert_xaxis()
        ax.set_xlabel(f"{delay.removesuffix('_ms').replace('_', ' ')} [ms] (better: right)")
        ax.set_ylabel("goodput per flow [Mbit/s]")
        ax.grid(alpha=0.3)
        if panel is not None:
            ax.set_title(point_label(by, panel) if by else str(panel), fontsize=10)
    _legend_outside(
        fig,
        list(handles.values()),
        title="hollow: one run; filled: mean of a point's repetitions; "
        "shaded: 1-sd ellipse (3+ repetitions)",
    )
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


# --------------------------------------------------------------------------------------------
# Plot namespaces: r.plot.timeseries(), res.plot.heatmap(...)


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
        :func:`throughput_delay`); ``by`` defaults to the grid key ``ccas`` if present."""
        res = self._res
        if by is None and "ccas" in res.grid_keys:
            by = "ccas"
        flows = res.flows()
        return throughput_delay(flows[flows["baseline"].isna()], delay=delay, by=by)

    def timeseries(self, run_id: str | None = None, **kwargs: Any) -> Figure:
        """Time series of one run (the only one if ``run_id`` is omitted)."""
        res = self._res
        if run_id is None:
            if len(res.run_ids) != 1:
                raise ValueError(f"run_id: this directory holds {len(res.run_ids)} runs; name one")
            run_id = res.run_ids[0]
        return timeseries(res, run_id, **kwargs)


# --------------------------------------------------------------------------------------------
# Model vs measurement


def _competitor(ccas_label: Any) -> str:
    """The loss-based algorithm of a BBR pair label ("reno-bbr" -> "reno")."""
    parts = [p for p in str(ccas_label).split("-") if p != "bbr"]
    return parts[0] if parts else "bbr"


def model_vs_measured(model: pd.DataFrame, *, by: str | None = None) -> Figure | None:
    """Measured BBR share against the Ware et al. predictions: left, measured vs the full
    N-flow prediction with the identity line; right, share against the buffer in BDPs (X)
    with both model curves. Each run is a small hollow marker, each point's mean a filled
    one; colour and marker: the loss-based algorithm BBR competes with (when ``by`` is the
    ``ccas`` key), else greys. ``model`` is :func:`ccfair.models.model_table`."""
    if model.empty:
        return None
    fig = Figure(figsize=(10, 4.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    groups = list(dict.fromkeys(model[by])) if by and by in model.columns else [None]
    handles = []
    point_cols = [c for c in ("point_key",) if c in model.columns]
    for i, g in enumerate(groups):
        sel = model if g is None else model[model[by] == g]
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
        for ax, xcol in ((left, "ware_full"), (right, "x_bdp")):
            _hollow(ax, sel[xcol], sel["measured"], color, marker, s=9)
        means = sel.groupby(point_cols or ["x_bdp"], sort=False)[
            ["ware_full", "x_bdp", "measured"]
        ].mean()
        h = left.scatter(
            means["ware_full"],
            means["measured"],
            s=30,
            marker=marker,
            color=color,
            edgecolors="black",
            linewidths=0.4,
            label=label,
            zorder=3,
        )
        right.scatter(
            means["x_bdp"],
            means["measured"],
            s=30,
            marker=marker,
            color=color,
            edgecolors="black",
            linewidths=0.4,
            zorder=3,
        )
        handles.append(h)
    (ident,) = left.plot(
        [0, 1], [0, 1], color=LINK_COLOR, lw=0.8, ls="--", label="measured = predicted"
    )
    left.set_xlim(0, 1.02)
    left.set_ylim(0, 1.02)
    left.set_xlabel("predicted BBR share, full N-flow form (Ware et al. 2019)")
    left.set_ylabel("measured BBR share of goodput")
    left.grid(alpha=0.3)
    curves = _model_curves(right, model)
    _legend_outside(
        fig,
        [*handles, ident, *curves],
        ncol=3,
        title="hollow: one run; filled: mean over the repetitions of a point",
    )
    return fig


def _model_curves(ax: Any, model: pd.DataFrame) -> list[Any]:
    """The model's share against the buffer X on ``ax`` (log2 x axis): the form without
    PROBE_RTT terms, and the full form for each distinct (capacity, RTT, BBR flows) of
    ``model``; returns the curves (legend handles)."""
    from ccfair.models import ware_full_share, ware_simple_share

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
    for j, ((c, l_s, n), _) in enumerate(model.groupby(["c_pps", "l_s", "n_bbr"])):
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
