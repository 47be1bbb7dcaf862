"""Figures for papers: heatmaps, throughput-vs-buffer curves, time series, model vs measured.

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot (no global
state, no backend switch); :func:`save` writes it as PNG and SVG. Colours of the algorithms are
fixed (:data:`CCA_COLORS`) so that figures of one report agree.

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ccfair.metrics import Results, bottlenecks
from ccfair.results import replace_via_temporary

__all__ = [
    "CCA_COLORS",
    "ResultsPlots",
    "RunPlots",
    "run_timeseries",
    "throughput_delay",
    "bars",
    "heatmaps",
    "metric_vs_buffer",
    "model_vs_measured",
    "save",
    "throughput_vs_buffer",
    "timeseries",
    "timeseries_rows",
]

#: One colour per algorithm (matplotlib's tab10 palette), the same in every figure.
CCA_COLORS = {
    "reno": "#1f77b4",
    "cubic": "#ff7f0e",
    "bbr": "#2ca02c",
    "copa": "#d62728",
}
_EXTRA_COLORS = ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]

# Reproducible SVG files: fixed ids, no date stamp.
matplotlib.rcParams["svg.hashsalt"] = "ccfair"


def cca_color(cca: str) -> str:
    """The colour of an algorithm: its own in :data:`CCA_COLORS`, else a spare colour fixed
    by the algorithm's place in the registry (:func:`ccfair.algorithms.names`), so that a new
    algorithm has one colour in every figure whatever order figures meet it in.

    Example:
        >>> cca_color("cubic")
        '#ff7f0e'
    """
    if cca in CCA_COLORS:
        return CCA_COLORS[cca]
    from ccfair.algorithms import names

    spare = [n for n in names() if n not in CCA_COLORS]
    # A name the registry lacks (results of another version) still gets a stable colour.
    i = spare.index(cca) if cca in spare else len(spare) + zlib.crc32(cca.encode())
    return _EXTRA_COLORS[i % len(_EXTRA_COLORS)]


def save(
    fig: Figure,
    out_dir: str | os.PathLike[str],
    name: str,
    formats: Sequence[str] | None = None,
) -> list[Path]:
    """Write ``fig`` as ``out_dir/name.png`` (150 dpi) and ``out_dir/name.svg`` (or the
    ``formats`` asked for: png, svg, pdf); returns the paths. Files are written under a
    temporary name and renamed.

    Example:
        >>> save(timeseries(res, run_id), "figures", "ts-" + run_id)  # doctest: +SKIP
        [PosixPath('figures/ts-....png'), PosixPath('figures/ts-....svg')]
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    options = {
        "png": {"dpi": 150, "metadata": {"Software": None}},
        "svg": {"metadata": {"Date": None, "Creator": None}},
        "pdf": {"metadata": {"CreationDate": None, "Creator": None, "Producer": None}},
    }
    for ext in formats or ("png", "svg"):
        kwargs = options[ext]
        path = out / f"{name}.{ext}"
        # The figures use constrained layout; the temporary is ccfair-named (results.py).
        replace_via_temporary(
            path, lambda tmp, ext=ext, kwargs=kwargs: fig.savefig(tmp, format=ext, **kwargs)
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
    cmap: str = "Blues",
    unit: str = "Mbit/s",
) -> list[tuple[str, Figure]]:
    """One figure per value of ``by`` (e.g. the CCA pair), with one heatmap per flow (or flow
    group) of the mean ``value`` over repetitions, on the grid axes ``x`` and ``y``; darker =
    higher, each cell annotated. All panels of a figure share one colour scale.

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
        # Mean over the flows of a group within a run, then over repetitions.
        per_run = (
            data.groupby(["run_id", x, y, "group"], sort=False)
            .agg(v=(value, "mean"), cca=("cca", lambda c: "/".join(dict.fromkeys(c))))
            .reset_index()
        )
        cells = per_run.groupby([x, y, "group"], sort=False).agg(
            v=("v", "mean"), cca=("cca", "first")
        )
        panels = list(dict.fromkeys(per_run["group"]))
        vmax = float(np.nanmax(cells["v"])) if len(cells) else 1.0
        ncol = len(panels)
        fig = Figure(
            figsize=(0.9 + 3.1 * ncol, 0.8 + 0.42 * len(ys_all) + 0.9), layout="constrained"
        )
        axes = fig.subplots(1, ncol, squeeze=False)[0]
        image = None
        for ax, panel in zip(axes, panels, strict=True):
            grid = np.full((len(ys_all), len(xs_all)), np.nan)
            cca = ""
            for i, yv in enumerate(ys_all):
                for j, xv in enumerate(xs_all):
                    key = (xv, yv, panel)
                    if key in cells.index:
                        grid[i, j] = cells.loc[key, "v"]
                        cca = cells.loc[key, "cca"]
            image = ax.imshow(
                grid, cmap=cmap, vmin=0, vmax=vmax or 1.0, origin="lower", aspect="auto"
            )
            for i in range(len(ys_all)):
                for j in range(len(xs_all)):
                    v = grid[i, j]
                    if math.isfinite(v):
                        dark = v > 0.55 * (vmax or 1.0)
                        ax.text(
                            j,
                            i,
                            f"{v:.1f}",
                            ha="center",
                            va="center",
                            fontsize=8,
                            color="white" if dark else "black",
                        )
            ax.set_xticks(range(len(xs_all)), [str(v) for v in xs_all])
            ax.set_yticks(range(len(ys_all)), [str(v) for v in ys_all])
            ax.set_xlabel(x)
            ax.set_ylabel(y)
            ax.set_title(f"{panel} ({cca})" if cca else str(panel), fontsize=10)
        if image is not None:
            fig.colorbar(image, ax=list(axes), label=f"{value.replace('_mbps', '')} [{unit}]")
        title = results.record["name"] if results.record else results.root.name
        fig.suptitle(f"{title}: {by} = {g}" if g is not None else title, fontsize=11)
        out.append((f"heatmap-{slug(g) if g is not None else 'all'}", fig))
    return out


def _log2_axis(ax: Any, values: Any) -> None:
    """Log2 x axis ticked at the grid values, labelled as written (0.5, 1, 2, ...)."""
    ticks = sorted({float(v) for v in values})
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()


# --------------------------------------------------------------------------------------------
# Curves over the buffer (Copa study: throughput vs buffer per CCA, with CI bands)


def throughput_vs_buffer(
    results: Results,
    *,
    x: str = "alpha",
    panels: Sequence[str] = (),
    value: str = "per_flow_mbps",
    ylabel: str = "mean throughput per flow [Mbit/s]",
) -> list[tuple[str, Figure]]:
    """Mean ``value`` per algorithm against the buffer axis ``x`` (log2), one line per
    algorithm with its 95% CI over repetitions as a band; one panel per combination of the
    ``panels`` grid keys, in one figure."""
    table = results.ccas()
    table = table[table["baseline"].isna()]
    if table.empty:
        return []
    keys = [k for k in panels if k in table.columns]
    summary = results.point_summary(table, [value], ["cca"])
    combos = (
        [tuple(r) for r in summary[keys].drop_duplicates().itertuples(index=False)]
        if keys
        else [()]
    )
    ncol = min(len(combos), 3)
    nrow = math.ceil(len(combos) / ncol)
    fig = Figure(figsize=(4.2 * ncol, 3.2 * nrow), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    xs_order = results.axes.get(x)
    for ax, combo in zip(axes, combos, strict=False):
        sel = summary
        for k, v in zip(keys, combo, strict=True):
            sel = sel[sel[k] == v]
        for cca in dict.fromkeys(sel["cca"]):
            line = sel[sel["cca"] == cca]
            order = _order(line[x], xs_order)
            line = line.set_index(x).loc[order].reset_index()
            xv = np.asarray([float(v) for v in line[x]])
            mean = line[value].to_numpy(dtype=float)
            ci = np.nan_to_num(line[f"{value}_ci95"].to_numpy(dtype=float))
            color = cca_color(str(cca))
            ax.plot(xv, mean, marker="o", ms=3.5, color=color, label=str(cca))
            lo = np.clip(mean - ci, 0, None)  # throughput is never negative
            ax.fill_between(xv, lo, mean + ci, color=color, alpha=0.2, linewidth=0)
        _log2_axis(ax, summary[x])
        ax.set_xlabel(f"buffer [{x} x BDP]" if x == "alpha" else x)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.set_title(", ".join(f"{k}={v}" for k, v in zip(keys, combo, strict=True)), fontsize=10)
        ax.legend(fontsize=8)
    for ax in axes[len(combos) :]:
        ax.set_visible(False)
    return [("throughput-vs-buffer", fig)]


#: Run metrics that live in [0, 1]: their axes and CI bands are kept there.
_UNIT_INTERVAL = {"jain_index", "utilisation_frac", "loss_frac"}


def metric_vs_buffer(
    results: Results,
    *,
    metric: str,
    x: str = "alpha",
    lines: str | None = None,
    panels: Sequence[str] = (),
    ylabel: str | None = None,
    name: str | None = None,
) -> list[tuple[str, Figure]]:
    """A run metric (e.g. ``jain_index``, ``utilisation_frac``) against the buffer axis,
    one line per value of ``lines`` with 95% CI bands, one panel per ``panels`` combination.
    Metrics in [0, 1] (Jain index, utilisation, loss rate, shares) get a [0, 1] axis and bands
    clipped to it."""
    runs = results.runs()
    runs = runs[runs["baseline"].isna()]
    if runs.empty or metric not in runs.columns:
        return []
    bounded = metric in _UNIT_INTERVAL or metric.endswith("_share_frac")
    summary = results.point_summary(runs, [metric])
    keys = [k for k in panels if k in summary.columns]
    combos = (
        [tuple(r) for r in summary[keys].drop_duplicates().itertuples(index=False)]
        if keys
        else [()]
    )
    ncol = min(len(combos), 3)
    nrow = math.ceil(len(combos) / ncol)
    fig = Figure(figsize=(4.2 * ncol, 3.2 * nrow), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax, combo in zip(axes, combos, strict=False):
        sel = summary
        for k, v in zip(keys, combo, strict=True):
            sel = sel[sel[k] == v]
        line_values = _order(sel[lines], results.axes.get(lines)) if lines else [None]
        for i, lv in enumerate(line_values):
            line = sel if lv is None else sel[sel[lines] == lv]
            order = _order(line[x], results.axes.get(x))
            line = line.groupby(x, sort=False).first().loc[order].reset_index()
            xv = np.asarray([float(v) for v in line[x]])
            mean = line[metric].to_numpy(dtype=float)
            ci = np.nan_to_num(line[f"{metric}_ci95"].to_numpy(dtype=float))
            color = f"C{i}"
            ax.plot(
                xv, mean, marker="o", ms=3.5, color=color, label=f"{lines}={lv}" if lines else None
            )
            lo, hi = mean - ci, mean + ci
            if bounded:  # a CI of 2 repetitions can leave [0, 1]; the metric cannot
                lo, hi = np.clip(lo, 0, 1), np.clip(hi, 0, 1)
            ax.fill_between(xv, lo, hi, color=color, alpha=0.2, linewidth=0)
        _log2_axis(ax, summary[x])
        ax.set_xlabel(f"buffer [{x} x BDP]" if x == "alpha" else x)
        ax.set_ylabel(ylabel or metric)
        if bounded:
            ax.set_ylim(0, 1.03)
        ax.grid(alpha=0.3)
        ax.set_title(", ".join(f"{k}={v}" for k, v in zip(keys, combo, strict=True)), fontsize=10)
        if lines:
            ax.legend(fontsize=8)
    for ax in axes[len(combos) :]:
        ax.set_visible(False)
    return [(name or f"{metric}-vs-{x}", fig)]


def bars(
    results: Results,
    *,
    value: str,
    x: str,
    hue: str | None = None,
    panels: Sequence[str] = (),
    cca: str | None = None,
    ylabel: str | None = None,
    name: str | None = None,
) -> list[tuple[str, Figure]]:
    """Grouped bars of a per-algorithm ``value`` (from :meth:`Results.ccas`, e.g.
    ``per_flow_mbps`` or ``share_frac``) of algorithm ``cca`` over the grid key ``x``, one bar per
    value of ``hue``, one panel per ``panels`` combination; error bars are 95% CIs."""
    table = results.ccas()
    table = table[table["baseline"].isna()]
    if cca is not None:
        table = table[table["cca"] == cca]
    if table.empty:
        return []
    summary = results.point_summary(table, [value], ["cca"])
    keys = [k for k in panels if k in summary.columns]
    combos = (
        [tuple(r) for r in summary[keys].drop_duplicates().itertuples(index=False)]
        if keys
        else [()]
    )
    fig = Figure(figsize=(4.8 * len(combos), 3.4), layout="constrained")
    axes = fig.subplots(1, len(combos), squeeze=False)[0]
    xs = _order(summary[x], results.axes.get(x))
    hues = _order(summary[hue], results.axes.get(hue)) if hue else [None]
    width = 0.8 / len(hues)
    for ax, combo in zip(axes, combos, strict=True):
        sel = summary
        for k, v in zip(keys, combo, strict=True):
            sel = sel[sel[k] == v]
        for i, h in enumerate(hues):
            part = sel if h is None else sel[sel[hue] == h]
            means, cis = [], []
            for xv in xs:
                row = part[part[x] == xv]
                means.append(float(row[value].mean()) if len(row) else np.nan)
                cis.append(float(row[f"{value}_ci95"].mean()) if len(row) else np.nan)
            pos = np.arange(len(xs)) + (i - (len(hues) - 1) / 2) * width
            ax.bar(
                pos,
                means,
                width,
                yerr=np.nan_to_num(cis),
                capsize=2,
                color=f"C{i}",
                label=f"{hue}={h}" if hue else None,
            )
        ax.set_xticks(range(len(xs)), [str(v) for v in xs], rotation=20, ha="right")
        ax.set_xlabel(x)
        ax.set_ylabel(ylabel or value)
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(", ".join(f"{k}={v}" for k, v in zip(keys, combo, strict=True)), fontsize=10)
        if hue:
            ax.legend(fontsize=8)
    return [(name or f"{value}-by-{slug(x)}", fig)]


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


def timeseries(
    results: Results,
    run_id: str,
    *,
    title: str | None = None,
    smooth_s: float = 0.5,
    max_flows: int = 6,
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


def run_timeseries(
    ts: pd.DataFrame,
    links: pd.DataFrame,
    spec: dict[str, Any],
    *,
    title: str = "",
    smooth_s: float = 0.5,
    max_flows: int = 6,
    flows: Sequence[str] | None = None,
    window: tuple[float, float] | None = None,
) -> Figure:
    """Time series of one run: goodput per flow (moving average over ``smooth_s``), cwnd
    and in-flight packets, smoothed RTT, RTprop (BBR) or min RTT, the bottleneck queue, and,
    when Copa flows are present, Copa's delta and mode. ``flows`` names the flows to draw
    (default: the first ``max_flows``; the title says when some are left out); ``window``
    = (start s, end s) limits the time axis. Legends name each flow and its algorithm."""
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
    rows = 6 if has_copa else 5
    fig = Figure(figsize=(8.5, 1.9 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, 1, sharex=True)
    dt = float(np.median(np.diff(np.unique(ts["t_s"])))) if len(ts) > 1 else 0.01
    window_n = max(1, round(smooth_s / dt)) if dt > 0 else 1
    styles = ["-", "--", ":", "-."]
    by_flow = dict(tuple(ts.groupby("flow_name", sort=False)))
    for name in shown:
        f = by_flow.get(name, ts.iloc[0:0]).sort_values("t_s")
        color = cca_color(ccas[name])
        ls = styles[[n for n in shown if ccas[n] == ccas[name]].index(name) % len(styles)]
        label = f"{name} ({ccas[name]})"
        t = f["t_s"].to_numpy()
        axes[0].plot(
            t,
            _smooth(f["goodput_mbps"].to_numpy(), window_n),
            color=color,
            ls=ls,
            lw=1,
            label=label,
        )
        axes[1].plot(t, f["cwnd_pkts"], color=color, ls=ls, lw=1, label=f"{name} cwnd")
        axes[1].plot(t, f["inflight_pkts"], color=color, ls=ls, lw=0.6, alpha=0.5)
        axes[2].plot(t, f["srtt_ms"], color=color, ls=ls, lw=1)
        if f["bbr_rtprop_ms"].notna().any():
            axes[3].plot(t, f["bbr_rtprop_ms"], color=color, ls=ls, lw=1.2, label=f"{name} RTprop")
        else:
            axes[3].plot(t, f["min_rtt_ms"], color=color, ls=ls, lw=1, label=f"{name} min RTT")
        if has_copa and ccas[name] == "copa":
            axes[5].plot(t, f["copa_delta"], color=color, ls=ls, lw=1, label=f"{name} delta")
            comp = f["copa_mode_competitive"].to_numpy(dtype=float)
            axes[5].fill_between(
                t,
                0,
                np.nan_to_num(comp) * np.nanmax(f["copa_delta"]),
                color=color,
                alpha=0.12,
                step="post",
            )
    bns = bottlenecks(spec)
    for bn_name, direction in bns:
        q = links[
            (links["link_name"].astype(str) == bn_name)
            & (links["direction"].astype(str) == direction)
        ]
        q = q.sort_values("t_s")
        axes[4].plot(q["t_s"], q["queue_pkts"], lw=0.8, label=f"{bn_name} ({direction})")
    buffers = [link["buffer_pkts"] for link in spec["links"] if (link["name"], "ab") in bns]
    if buffers:
        axes[4].axhline(max(buffers), color="black", lw=0.6, ls=":", label="buffer")
    axes[0].set_ylabel("goodput\n[Mbit/s]")
    axes[1].set_ylabel("cwnd (thin: in flight)\n[packets]")
    axes[2].set_ylabel("smoothed RTT\n[ms]")
    axes[3].set_ylabel("RTprop / min RTT\n[ms]")
    axes[4].set_ylabel("bottleneck queue\n[packets]")
    if has_copa:
        axes[5].set_ylabel("Copa delta\n(shaded: competitive)")
    axes[-1].set_xlabel("time [s]")
    axes[0].legend(fontsize=7, ncol=min(3, len(shown)), loc="upper right")
    if len(bns) <= 3:
        axes[4].legend(fontsize=7, loc="upper right")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].set_ylim(bottom=0)
    if window is not None:
        axes[-1].set_xlim(*window)
    more = f" (flows {', '.join(shown)} of {len(names)})" if len(shown) < len(names) else ""
    fig.suptitle(title + more, fontsize=10)
    return fig


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
    ncol = min(len(panels), 3)
    nrow = math.ceil(len(panels) / ncol)
    fig = Figure(figsize=(4.4 * ncol, 3.6 * nrow), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax, panel in zip(axes, panels, strict=False):
        data = per_run if panel is None else per_run[per_run[by] == panel]
        for cca in dict.fromkeys(data["cca"]):
            color = cca_color(str(cca))
            mine = data[data["cca"] == cca]
            ax.scatter(mine["delay_ms"], mine["goodput_mbps"], s=10, color=color, alpha=0.5)
            groups = mine.groupby("point_key", sort=False) if "point_key" in mine else [(0, mine)]
            first = True
            for _, reps in groups:
                x = reps["delay_ms"].to_numpy(dtype=float)
                y = reps["goodput_mbps"].to_numpy(dtype=float)
                ax.scatter(
                    [np.nanmean(x)],
                    [np.nanmean(y)],
                    s=60,
                    color=color,
                    edgecolor="black",
                    lw=0.5,
                    label=str(cca) if first else None,
                    zorder=3,
                )
                first = False
                if len(reps) >= 3:
                    _ellipse(ax, x, y, color)
        ax.invert_xaxis()
        ax.set_xlabel(f"{delay.removesuffix('_ms').replace('_', ' ')} [ms] (better: right)")
        ax.set_ylabel("goodput per flow [Mbit/s]")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        if panel is not None:
            ax.set_title(f"{by} = {panel}", fontsize=10)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
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
        smooth_s: float = 0.5,
        title: str | None = None,
    ) -> Figure:
        """Goodput, cwnd, RTT, RTprop and the bottleneck queue over time (see
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


def timeseries_rows(
    results: Results,
    runs: Sequence[tuple[str, str]],
    *,
    what: str = "goodput",
    smooth_s: float = 0.5,
    title: str | None = None,
) -> Figure:
    """One row per (label, run id), sharing the time axis, to compare runs: ``what`` is
    ``"goodput"`` (each flow's goodput, moving average over ``smooth_s``) or ``"rtt"`` (each
    flow's smoothed RTT, and BBR's RTprop estimate, dashed)."""
    if what not in ("goodput", "rtt"):
        raise ValueError(f"what: {what!r} is not 'goodput' or 'rtt'")
    fig = Figure(figsize=(8.5, 1.6 * len(runs) + 0.8), layout="constrained")
    axes = fig.subplots(len(runs), 1, sharex=True, squeeze=False)[:, 0]
    specs = results.specs()
    for ax, (label, rid) in zip(axes, runs, strict=True):
        ts = results.run_tables(rid)["timeseries"]
        ccas = {f["name"]: f["cca"] for f in specs[rid]["flows"]}
        dt = float(np.median(np.diff(np.unique(ts["t_s"])))) if len(ts) > 1 else 0.01
        window = max(1, round(smooth_s / dt)) if dt > 0 else 1
        for name, cca in ccas.items():
            f = ts[ts["flow_name"].astype(str) == name].sort_values("t_s")
            t = f["t_s"].to_numpy()
            color = cca_color(cca)
            if what == "goodput":
                y = _smooth(f["goodput_mbps"].to_numpy(), window)
                ax.plot(t, y, color=color, lw=1, label=f"{name} ({cca})")
            else:
                ax.plot(t, f["srtt_ms"], color=color, lw=1, label=f"{name} ({cca}) RTT")
                if "bbr_rtprop_ms" in f.columns and f["bbr_rtprop_ms"].notna().any():
                    ax.plot(
                        t,
                        f["bbr_rtprop_ms"],
                        color=color,
                        lw=1.3,
                        ls="--",
                        label=f"{name} RTprop",
                    )
        ax.set_title(label, fontsize=9, loc="left")
        ax.set_ylabel("goodput [Mbit/s]" if what == "goodput" else "RTT [ms]")
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="upper right", ncol=3)
    axes[-1].set_xlabel("time [s]")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


# --------------------------------------------------------------------------------------------
# Model vs measurement


def model_vs_measured(model: pd.DataFrame, *, by: str | None = None) -> Figure | None:
    """Measured BBR share against the Ware et al. predictions: left, measured vs predicted
    (full N-flow form, and the simple form) with the identity line; right, share against the
    buffer in BDPs (X) with the model curves. ``model`` is :func:`ccfair.models.model_table`."""
    from ccfair.models import ware_full_share, ware_simple_share

    if model.empty:
        return None
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    groups = list(dict.fromkeys(model[by])) if by and by in model.columns else [None]
    for i, g in enumerate(groups):
        sel = model if g is None else model[model[by] == g]
        color = f"C{i}"
        label = f"{by}={g}" if g is not None else "points"
        left.scatter(
            sel["ware_full"], sel["measured"], s=18, color=color, label=f"{label}: full form"
        )
        left.scatter(
            sel["ware_simple"],
            sel["measured"],
            s=18,
            facecolors="none",
            edgecolors=color,
            label=f"{label}: simple form",
        )
        right.scatter(sel["x_bdp"], sel["measured"], s=18, color=color, label=f"{label} measured")
    left.plot([0, 1], [0, 1], color="black", lw=0.8, ls="--", label="measured = predicted")
    left.set_xlim(0, 1.02)
    left.set_ylim(0, 1.02)
    left.set_xlabel("predicted BBR share (Ware et al. 2019)")
    left.set_ylabel("measured BBR share")
    left.legend(fontsize=7)
    left.grid(alpha=0.3)
    xs = np.geomspace(
        max(0.25, float(model["x_bdp"].min()) * 0.8), float(model["x_bdp"].max()) * 1.25, 200
    )
    right.plot(xs, [ware_simple_share(x) for x in xs], color="black", ls=":", label="simple form")
    # The full form depends on c, l and N too: draw it for each distinct (c, l, N).
    for (c, l_s, n), _ in model.groupby(["c_pps", "l_s", "n_bbr"]):
        right.plot(
            xs,
            [ware_full_share(c, l_s, x * c * l_s, int(n)) for x in xs],
            lw=0.9,
            label=f"full form, RTT {l_s * 1e3:.0f} ms, N={int(n)}",
        )
    right.set_xscale("log", base=2)
    right.set_xlabel("buffer X [BDP]")
    right.set_ylabel("BBR share of goodput")
    right.set_ylim(0, 1.02)
    right.legend(fontsize=7)
    right.grid(alpha=0.3)
    return fig
