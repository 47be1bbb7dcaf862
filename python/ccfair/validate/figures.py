"""The study's figures: overlaid time series of a point's two runs, the agreement of every
point, and heatmaps of the difference over two grid axes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ccfair.results.run import RunResult
from ccfair.validate.compare import TARGET_MAX_PP


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "point"


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def timeseries_figure(point: str, sim: RunResult, kern: RunResult, path: Path) -> Path:
    """cwnd and smoothed RTT over time, simulator (dashed) and kernel (solid) overlaid, one
    colour per flow; saved as PNG at ``path``."""
    plt = _plt()
    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True, layout="constrained")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    names = list(sim.flows["flow_name"])
    for i, name in enumerate(names):
        c = colors[i % len(colors)]
        cca = sim.flows.set_index("flow_name").loc[name, "cca"]
        for r, style, backend in ((kern, "-", "kernel"), (sim, "--", "sim")):
            ts = r.timeseries[r.timeseries["flow_name"] == name]
            label = f"{name} ({cca}) {backend}"
            axes[0].plot(ts["t_s"], ts["cwnd_pkts"], style, color=c, lw=0.9, label=label)
            axes[1].plot(ts["t_s"], ts["srtt_ms"], style, color=c, lw=0.9, label=label)
    axes[0].set_ylabel("cwnd (packets)")
    axes[1].set_ylabel("smoothed RTT (ms)")
    axes[1].set_xlabel("time (s)")
    axes[0].set_title(f"{point}: kernel (solid) vs simulator (dashed)")
    axes[0].legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def agreement_figure(points: pd.DataFrame, path: Path, flagged: pd.DataFrame | None = None) -> Path:
    """Every point-flow's mean share on the simulator (x) against Linux (y), with the 95%
    intervals as error bars, the identity line and the +-3 and +-10 pp bands; with
    ``flagged`` (:func:`flagged_points`), the flagged kernel runs' means as hollow grey
    markers, apart from the result."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 6), layout="constrained")
    x = np.linspace(0, 1, 2)
    ax.fill_between(x, x - 0.10, x + 0.10, color="0.92", label="+-10 pp")
    ax.fill_between(x, x - 0.03, x + 0.03, color="0.82", label="+-3 pp")
    ax.plot(x, x, color="0.4", lw=0.8)
    markers = "osD^v<>ph*"
    for i, (pair, g) in enumerate(points.groupby("pair", sort=False, observed=True)):
        ax.errorbar(
            g["share_sim_mean"],
            g["share_kernel_mean"],
            xerr=g["share_sim_ci"].fillna(0),
            yerr=g["share_kernel_ci"].fillna(0),
            fmt=markers[i % len(markers)],
            ms=4,
            lw=0.7,
            capsize=1.5,
            label=pair,
        )
    if flagged is not None and not flagged.empty:
        means = [np.mean([float(v) for v in c.split(", ")]) for c in flagged["kernel_flagged_%"]]
        ax.scatter(
            flagged["sim_share_%"] / 100,
            np.asarray(means) / 100,
            s=22,
            facecolors="none",
            edgecolors="0.45",
            lw=0.8,
            label="flagged kernel runs (not counted)",
        )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("share of total goodput, simulator (mean over repetitions)")
    ax.set_ylabel("share of total goodput, Linux (mean over repetitions)")
    ax.set_title("Each flow's share: simulator vs Linux, 95% CI")
    ax.legend(fontsize=7, loc="upper left")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _axes_of(points: pd.DataFrame) -> list[str]:
    """Grid keys (``param_*`` columns) other than the pair that take more than one value."""
    return [
        c
        for c in points.columns
        if c.startswith("param_") and c != "param_ccas" and points[c].nunique() > 1
    ]


def diff_heatmaps(points: pd.DataFrame, figdir: Path) -> list[Path]:
    """Per pair, the first flow's share difference (pp, Linux minus simulator) over the two
    grid axes; cells whose 95% intervals do not overlap are marked with an asterisk."""
    axes = _axes_of(points)
    if len(axes) != 2:
        return []
    plt = _plt()
    xkey, ykey = axes
    out = []
    for pair, g in points.groupby("pair", sort=False, observed=True):
        first = g[g["flow"] == g["flow"].iloc[0]]
        xs = list(dict.fromkeys(first[xkey]))
        ys = list(dict.fromkeys(first[ykey]))
        grid = np.full((len(ys), len(xs)), np.nan)
        mark = np.zeros_like(grid, dtype=bool)
        for _, r in first.iterrows():
            i, j = ys.index(r[ykey]), xs.index(r[xkey])
            grid[i, j] = 100 * r["share_diff"]
            mark[i, j] = not r["ci_overlap"]
        lim = max(TARGET_MAX_PP, float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 0)
        fig, ax = plt.subplots(
            figsize=(1.2 * len(xs) + 2.5, 0.7 * len(ys) + 1.8), layout="constrained"
        )
        im = ax.imshow(grid, cmap="RdBu_r", vmin=-lim, vmax=lim, origin="lower", aspect="auto")
        for i in range(len(ys)):
            for j in range(len(xs)):
                if np.isfinite(grid[i, j]):
                    star = "*" if mark[i, j] else ""
                    ax.text(j, i, f"{grid[i, j]:+.1f}{star}", ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(xs)), xs)
        ax.set_yticks(range(len(ys)), ys)
        ax.set_xlabel(xkey.removeprefix("param_"))
        ax.set_ylabel(ykey.removeprefix("param_"))
        ax.set_title(
            f"{pair}: {first['flow'].iloc[0]} share, Linux minus simulator (pp)", fontsize=9
        )
        fig.colorbar(im, ax=ax, label="pp (* = 95% CIs do not overlap)")
        path = figdir / f"share_diff_{slug(str(pair))}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        out.append(path)
    return out
