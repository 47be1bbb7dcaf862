"""The report's figures: a preset's own when the directory holds a preset's sweep, otherwise
generic ones chosen from the grid axes; both end with throughput against delay. Saved as PNG,
SVG and PDF, in processes of their own.

A preset's figures know its own grid axes. A sweep of it with another axis (a testbed, a
host kernel: ``reproduce --testbed A --testbed B``) gets the preset's figures once per value
of that axis, each named ``<figure>--<key>-<value>`` and captioned with the value, rather
than figures that would mix the values' runs.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ccfair.analysis.models import model_table
from ccfair.errors import CcfairError
from ccfair.present.curves import throughput_vs_buffer
from ccfair.present.heatmaps import heatmaps
from ccfair.present.model import model_vs_measured
from ccfair.present.style import SMOOTH_S, point_label, save, slug, varying_keys
from ccfair.present.timeseries import timeseries
from ccfair.presets import PRESETS, Preset
from ccfair.results.directory import Results

Figures = list[tuple[str, str, Any]]

#: Between a preset figure's name and the axis value it is drawn for.
SPLIT = "--"


def make_figures(res: Results) -> Figures:
    """The figures of a results directory: its preset's when the sweep came from one (once
    per value of any axis the preset's grid lacks), otherwise generic ones chosen from the
    grid axes; both end with throughput against delay per algorithm."""
    preset = PRESETS.get((res.record or {}).get("sweep", {}).get("preset", ""))
    figs = _generic_figures(res) if preset is None else _preset_figures(res, preset)
    return [*figs, _throughput_delay_figure(res)]


def foreign_axes(res: Results, preset: Preset) -> list[str]:
    """The axes of ``res`` with several values that ``preset``'s grids do not have (a
    testbed, a host kernel added to its sweep)."""
    own = {*preset.full["grid"], *preset.quick["grid"]}
    return [k for k in res.grid_keys if k not in own and len(res.axes[k]) > 1]


def _preset_figures(res: Results, preset: Preset) -> Figures:
    """``preset``'s figures, once per combination of the values of its foreign axes, each
    named ``<figure>--<key>-<value>`` and captioned with the combination."""
    keys = foreign_axes(res, preset)
    if not keys:
        return preset.figures(res)
    figs: Figures = []
    for values in itertools.product(*(res.axes[k] for k in keys)):
        labels = dict(zip(keys, values, strict=True))
        try:
            part = res.select(**labels)
        except CcfairError:  # no finished run there (an incomplete sweep)
            continue
        where = ", ".join(point_label(k, v) for k, v in labels.items())
        suffix = "-".join(f"{slug(k)}-{slug(v)}" for k, v in labels.items())
        figs += [
            (f"{name}{SPLIT}{suffix}", f"{caption.rstrip('.')} ({where}).", fig)
            for name, caption, fig in preset.figures(part)
        ]
    return figs


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
