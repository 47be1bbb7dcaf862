"""Figures of runs over time: goodput (a moving average over :data:`SMOOTH_S` seconds, with the
bottleneck capacity drawn), cwnd, RTT and RTprop, algorithm internals and the bottleneck
queues of one run; rows of several runs; Jain's index over time.

Example:
    >>> run_title({"name": "x", "seed": 1}, "0123456789abcdef")
    "scenario 'x', seed 1, run 0123456789abcdef"
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ccfair.analysis.stats import jain_index
from ccfair.present.style import (
    FLOW_COLORS,
    LINK_COLOR,
    SMOOTH_S,
    cca_linestyle,
    legend_outside,
    legend_right,
    level_style,
    new_figure,
)
from ccfair.spec.topology import bottlenecks
from ccfair.units import parse_duration, parse_rate

if TYPE_CHECKING:  # pandas and matplotlib are imported where a figure is made
    import pandas as pd
    from matplotlib.figure import Figure

    from ccfair.results.directory import Results


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
    fig = new_figure(figsize=(9.0, 2.0 * sum(heights) + 1.3), layout="constrained")
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
        legend_right(axes[2])
    for ax in axes[:4]:
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    if window is not None:
        axes[-1].set_xlim(*window)
    more = f" (flows {', '.join(shown)} of {len(names)})" if len(shown) < len(names) else ""
    fig.suptitle(title + more, fontsize=10)
    legend_outside(fig, handles, ncol=min(len(handles), 4))
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
    import pandas as pd

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
    legend_right(axes[3])


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
    fig = new_figure(figsize=(9.0, 1.7 * len(runs) + 1.2), layout="constrained")
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
    dt = _sample_dt(ts)
    _row_flows(ax, ts, spec, what, _window_samples(smooth_s, dt))
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
    legend_right(ax)


def _row_flows(ax: Any, ts: pd.DataFrame, spec: Mapping[str, Any], what: str, window: int) -> None:
    """Each flow of a row; past six flows, ``cross*`` flows thin grey and their mean: readable."""
    import pandas as pd

    names = [f["name"] for f in spec["flows"]]
    ccas = {f["name"]: f["cca"] for f in spec["flows"]}
    colors = flow_colors(names)
    group_cross = len(names) > 6
    cross_lines: list[Any] = []
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
        _row_flow(ax, f, t, y, name, cca, colors[name], what)
    if cross_lines:
        mean = pd.concat(cross_lines, axis=1).mean(axis=1)
        ax.plot(
            mean.index,
            mean.to_numpy(),
            color=LINK_COLOR,
            lw=1.2,
            label=f"mean of {len(cross_lines)} cross flows",
        )


def _row_flow(
    ax: Any,
    f: pd.DataFrame,
    t: np.ndarray,
    y: np.ndarray,
    name: str,
    cca: str,
    color: str,
    what: str,
) -> None:
    """One flow of a row in its colour, with BBR's RTprop beside its RTT."""
    ax.plot(
        t,
        y,
        color=color,
        ls=cca_linestyle(cca),
        lw=1.4 if what == "rtt" else 1.2,
        label=f"{name} ({cca})" + (" RTT" if what == "rtt" else ""),
    )
    if what == "rtt" and "bbr_rtprop_ms" in f.columns and f["bbr_rtprop_ms"].notna().any():
        ax.plot(
            t,
            f["bbr_rtprop_ms"],
            color=color,
            lw=0.7,
            alpha=0.9,
            label=f"{name} RTprop (thin)",
        )


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
    fig = new_figure(figsize=(9.0, 3.4), layout="constrained")
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
    legend_outside(fig, handles, ncol=min(len(handles), 5))
    return fig


def jain_series(ts: pd.DataFrame, window_s: float) -> tuple[np.ndarray, np.ndarray]:
    """(window end times, Jain index per window) of a run's time series table.

    Example:
        >>> import pandas as pd
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
