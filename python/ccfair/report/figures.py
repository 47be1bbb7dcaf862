"""The report's figures: a preset's own when the directory holds a preset's sweep, otherwise
generic ones chosen from the grid axes; both end with throughput against delay. Saved as PNG,
SVG and PDF, in processes of their own.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ccfair.analysis.models import model_table
from ccfair.present.curves import throughput_vs_buffer
from ccfair.present.heatmaps import heatmaps
from ccfair.present.model import model_vs_measured
from ccfair.present.style import SMOOTH_S, point_label, save, varying_keys
from ccfair.present.timeseries import timeseries
from ccfair.presets import PRESETS
from ccfair.results.directory import Results

Figures = list[tuple[str, str, Any]]


def make_figures(res: Results) -> Figures:
    """The figures of a results directory: its preset's when the sweep came from one,
    otherwise generic ones chosen from the grid axes; both end with throughput against
    delay per algorithm."""
    preset = (res.record or {}).get("sweep", {}).get("preset")
    # A preset run on several testbeds or host kernels has an axis its own figures do not
    # know; the generic ones show every axis rather than mixing the testbeds' runs.
    hosts = [k for k in ("testbed", "kernel") if k in res.grid_keys and len(res.axes[k]) > 1]
    if preset in PRESETS and not hosts:
        figs = PRESETS[preset].figures(res)
    else:
        figs = _generic_figures(res)
    return [*figs, _throughput_delay_figure(res)]


def _throughput_delay_figure(res: Results) -> tuple[str, str, Any]:
    by = "ccas" if "ccas" in res.grid_keys and len(res.axes["ccas"]) > 1 else None
    caption = (
        "Throughput against delay, Pantheon style: per run, each algorithm's mean goodput per "
        "flow against its flows' 95th percentile RTT (sampled smoothed RTT over the "
        "measurement window); filled markers: mean over the repetitions of a point, shaded: "
        "their 1-standard-deviation ellipse (3 or more repetitions). Better is up and right."
    )
    return ("throughput-delay", caption, res.plot.throughput_delay(by=by))


def _generic_figures(res: Results) -> Figures:
    figs: Figures = []
    axes = varying_keys(res) if res.axes else []
    group = "ccas" if "ccas" in axes else None
    numericish = [k for k in axes if k not in ("ccas",) and not k.startswith("params.")]
    if len(numericish) >= 2:
        x, y = numericish[0], numericish[1]
        if "delay" in numericish and "alpha" in numericish:
            x, y = "delay", "alpha"
        figs += [
            (n, f"Mean goodput per flow (Mbit/s) over {x} and {y}; darker = higher.", f)
            for n, f in heatmaps(res, x=x, y=y, by=group)
        ]
    if "alpha" in axes:
        others = [k for k in axes if k != "alpha"][:2]
        figs += [
            (
                n,
                "Mean throughput per flow per algorithm against the buffer: mean, repetitions "
                "(dots), 95% interval (band).",
                f,
            )
            for n, f in throughput_vs_buffer(res, x="alpha", panels=others)
        ]
    fig = model_vs_measured(model_table(res), by=group)
    if fig is not None:
        figs.append(("model-vs-measured", "Measured BBR share vs Ware et al. (IMC 2019).", fig))
    pts = res.points()
    pts = pts[(pts["rep"] == 0) & pts["baseline"].isna()]
    for rid in list(dict.fromkeys(pts["run_id"]))[:3]:
        row = pts[pts["run_id"] == rid].iloc[0]
        label = ", ".join(point_label(k, row[k]) for k in axes) or f"run {rid}"
        figs.append(
            (
                f"timeseries-{rid}",
                f"Time series of one run ({label}); goodput is a {SMOOTH_S:g} s moving average.",
                timeseries(res, rid, title=label),
            )
        )
    return figs


#: Figures handed to forked worker processes (they inherit them; nothing is pickled).
_PENDING: Figures = []


def _save_one(args: tuple[int, str]) -> list[Path]:
    i, out = args
    name, _, fig = _PENDING[i]
    return save(fig, out, name)


def save_figures(
    figures: Figures,
    out: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    say: Callable[[str], None] | None = None,
) -> list[list[Path]]:
    """Write every figure as PNG, SVG and PDF into ``out``; returns each one's paths, in
    order (PNG first).

    Rendering takes most of a report's time, so figures are written by ``jobs`` forked
    processes at once (default: one per core), which inherit the figures instead of pickling
    them; without fork, or with one core, one after the other.
    """
    global _PENDING
    say = say or (lambda msg: None)
    jobs = jobs or min(len(figures), os.cpu_count() or 1)
    if jobs <= 1 or len(figures) <= 1 or "fork" not in mp.get_all_start_methods():
        paths = []
        for i, (name, _, fig) in enumerate(figures, 1):
            paths.append(save(fig, out, name))
            say(f"report: figure {i}/{len(figures)} {name}")
        return paths
    _PENDING = figures
    try:
        with mp.get_context("fork").Pool(jobs) as pool:
            paths = []
            for i, p in enumerate(
                pool.imap(_save_one, [(i, str(out)) for i in range(len(figures))])
            ):
                paths.append(p)
                say(f"report: figure {i + 1}/{len(figures)} {figures[i][0]}")
            return paths
    finally:
        _PENDING = []
