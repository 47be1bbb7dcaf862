"""The style every figure shares, and what figures are made and saved with (docs/experiments.md,
"Figures"):

- **colour per algorithm** (:data:`CCA_COLORS`, Okabe-Ito, colourblind-safe) with a marker per
  algorithm in figures of algorithms (curves, dots, scatter);
- **colour per flow** (:data:`FLOW_COLORS`, Paul Tol's "muted" set, also colourblind-safe)
  with a **line style per algorithm** (:data:`CCA_LINESTYLES`) in figures of flows (time
  series), so that two flows of one algorithm never look alike;
- **greys with markers and line styles** (:data:`LEVEL_STYLES`) for any other variable (delay,
  number of flows, variant), so that no algorithm colour means anything else; links (queues,
  capacity, buffer) are black or grey;
- axis labels name the quantity and its unit; legends sit outside the data;
- **nothing pooled**: a grid axis a figure does not draw (as its x axis, a line, a colour
  or a panel) gets panels or figures of its own (:func:`hidden_axes`), so that every mean,
  interval and "n" is over the repetitions of one configuration (:func:`check_one_point`).

Every figure is a :class:`matplotlib.figure.Figure` built without pyplot (no global state, no
backend switch) by :func:`new_figure`, which imports matplotlib on the first figure;
:func:`save` writes it as PNG, SVG and PDF.

Example:
    >>> cca_color("cubic"), axis_label("alpha")
    ('#E69F00', 'buffer [x BDP]')
"""

from __future__ import annotations

import math
import os
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ccfair.algorithms import names as algorithm_names
from ccfair.errors import ResultsError
from ccfair.spec.topology import bottlenecks
from ccfair.store.files import make_dir, replace_via_temporary
from ccfair.units import parse_duration, parse_rate

if TYPE_CHECKING:  # pandas and matplotlib are imported where a figure is made
    import pandas as pd
    from matplotlib.figure import Figure

    from ccfair.results.directory import Results


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
LEVEL_STYLES: list[dict[str, Any]] = [
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
    "queue_wait_mean_ms": "queue wait at the bottleneck [ms]",
    "qdelay_mean_ms": "queueing delay [ms]",
    "goodput_1s_cv": "coefficient of variation of 1 s goodput",
    "goodput_1s_swing_mbps": "swing of 1 s goodput, p95 - p5 [Mbit/s]",
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
    "bottleneck_queue": "queue",
    "tcp.ecn": "hosts' tcp_ecn",
}


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
    spare = [n for n in algorithm_names() if n not in own]
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


def tick(key: str, value: Any) -> str:
    return _ms_text(value) if key == "delay" else str(value)


def hidden_axes(results: Results, frame: pd.DataFrame, shown: Sequence[str | None]) -> list[str]:
    """The grid keys that vary among ``frame``'s rows and that a figure does not show (not
    in ``shown``): the figure draws a panel or a figure per combination of their values
    rather than average over them.

    Example:
        >>> hidden_axes(res, res.run_metrics(), ["alpha"])  # doctest: +SKIP
        ['ccas', 'delay']
    """
    return [
        k
        for k in results.grid_keys
        if k not in shown and k in frame.columns and frame[k].nunique(dropna=False) > 1
    ]


def check_one_point(frame: pd.DataFrame, keys: Sequence[str], what: str) -> None:
    """Refuse to draw ``what`` if one combination of ``keys`` (what a figure tells apart)
    holds runs of more than one point (``point_key``): their mean would pool
    configurations (:class:`ResultsError` naming the labels)."""
    if "point_key" not in frame.columns or frame.empty:
        return
    keys = [k for k in dict.fromkeys(keys) if k in frame.columns]
    counts = frame.groupby(keys, dropna=False, sort=False)["point_key"].nunique() if keys else None
    if counts is None:
        n = frame["point_key"].nunique()
        if n > 1:
            raise ResultsError(f"{what}: would pool the runs of {n} points; name the axes to show")
        return
    if (counts > 1).any():
        where = counts[counts > 1].index[0]
        where = where if isinstance(where, tuple) else (where,)
        label = ", ".join(f"{k}={v}" for k, v in zip(keys, where, strict=True))
        raise ResultsError(
            f"{what}: {int(counts.max())} points share the labels {label} (runs outside the "
            "sweep's grid, or of two backends); drawing them as one would pool them"
        )


def varying_keys(results: Results) -> list[str]:
    """Grid keys with more than one value (a one-value axis is part of the setup)."""
    return [k for k, v in results.axes.items() if len(v) > 1] or list(results.axes)


def legend_outside(
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


def legend_right(ax: Any, **kw: Any) -> None:
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


def axis_order(values: Iterable[Any], axis: Sequence[Any] | None) -> list[Any]:
    present = list(dict.fromkeys(values))
    if axis:
        ordered = [v for v in axis if v in present]
        return ordered + [v for v in present if v not in ordered]
    try:
        return sorted(present)
    except TypeError:
        return present


def reps_text(counts: Any) -> str:
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


def results_capacity(results: Results) -> float:
    caps = [capacity_mbps(s) for s in results.specs().values()]
    caps = [c for c in caps if math.isfinite(c)]
    return max(caps) if caps else float("nan")


def grid(n: int, ncol_max: int = 3, w: float = 4.0, h: float = 3.0) -> tuple[Figure, np.ndarray]:
    nrow = math.ceil(n / ncol_max)
    ncol = math.ceil(n / nrow)
    fig = new_figure(figsize=(w * ncol + 1.6, h * nrow + 0.9), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes


def key_combos(frame: pd.DataFrame, keys: list[str], axes: Mapping[str, Any]) -> list[tuple]:
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


def panel_title(keys: list[str], combo: tuple) -> str:
    return ", ".join(point_label(k, v) for k, v in zip(keys, combo, strict=True))


def select(frame: pd.DataFrame, keys: list[str], combo: tuple) -> pd.DataFrame:
    sel = frame
    for k, v in zip(keys, combo, strict=True):
        sel = sel[sel[k] == v]
    return sel


def new_figure(**kwargs: Any) -> Figure:
    """A matplotlib Figure (``Figure(**kwargs)``, no pyplot). matplotlib is imported by the
    first figure, not with ccfair; SVG files get a fixed hash salt (reproducible files: fixed
    ids, no date stamp).

    Example:
        >>> new_figure(figsize=(2, 1)).get_size_inches().tolist()
        [2.0, 1.0]
    """
    import matplotlib
    from matplotlib.figure import Figure

    matplotlib.rcParams["svg.hashsalt"] = "ccfair"
    return Figure(**kwargs)
