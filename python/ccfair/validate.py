"""``ccfair validate``: the fidelity study of the simulator against Linux.

Every point runs on both backends: the simulator and the kernel backend (real Linux TCP,
docs/kernel.md). Points come from scenarios, scenario files, sweep files or a preset's grid;
a sweep's repetitions (different seeds) are runs of one point. For every point and flow the
study reports the mean share of the total goodput on each backend with its 95% confidence
interval over the repetitions, the difference of the means (kernel minus simulator) and
whether the intervals overlap; per algorithm pair, the median and largest difference over
the grid; heatmaps of the difference over two grid axes; overlaid time series of the points
that differ most; and a Markdown report section. Runs are saved as they finish into
``OUT/results``, so an interrupted study resumes where it stopped (kernel runs are kept; the
simulator's, which take a fraction of a second, always run again, so that they are the
current model's), and a kernel run the self-checks flag is run again (``retries``).

The simulator runs at the kernel's ``HZ`` unless the scenario sets ``tcp.hz`` itself: the
simulator's default (1000) would otherwise be a difference of configuration, not of model.

Example:
    >>> v = validate(preset="harada-dumbbell", quick=True, out="validation")  # doctest: +SKIP
    >>> v.summary[["pair", "points", "median_abs_diff_pp", "max_abs_diff_pp"]]  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ccfair import backends
from ccfair.analysis.stats import ci95
from ccfair.errors import SpecError
from ccfair.execution.runs import run
from ccfair.execution.threads import run_in_threads
from ccfair.results.run import RunResult, load
from ccfair.spec.identity import run_id_of
from ccfair.spec.scenario import Scenario, as_scenario
from ccfair.store.directory import finished_run_ids

__all__ = [
    "Validation",
    "VPoint",
    "validate",
    "compare",
    "expand_inputs",
    "validation_points",
    "summarize_points",
    "summarize_pairs",
    "flagged_points",
]

#: The study's targets (issue: fidelity across the grid): median and largest difference of a
#: flow's share between the backends, in percentage points.
TARGET_MEDIAN_PP = 3.0
TARGET_MAX_PP = 10.0

#: The study's two sides, as registered in :mod:`ccfair.backends`: the model under test and
#: the reference it is compared with (the tables' columns say ``sim`` and ``kernel``).
MODEL_BACKEND = "sim"
REFERENCE_BACKEND = "kernel"


@dataclass
class Validation:
    """The outcome of :func:`validate`.

    Attributes:
        runs: one row per point, repetition and flow: goodput, share, RTT and
            retransmissions on both backends and their differences (kernel minus simulator).
        points: one row per point and flow: the mean share on each backend with its 95%
            confidence half-width over the repetitions, the difference of the means, whether
            the intervals overlap, and the mean goodputs.
        summary: one row per algorithm pair: points, median and largest |difference| (pp),
            points beyond 10 pp, fraction of points whose intervals overlap.
        out: the output directory (tables, figures, report), if any.
        figures: paths of the figures written.
    """

    runs: pd.DataFrame
    points: pd.DataFrame
    summary: pd.DataFrame
    out: Path | None = None
    figures: list[Path] = field(default_factory=list)

    def format_table(self) -> str:
        """The per-point comparison and the summary as text, for terminals.

        Example:
            >>> print(v.format_table())  # doctest: +SKIP
        """
        p = self.points
        table = pd.DataFrame(
            {
                "point": p["point"],
                "flow": p["flow"],
                "cca": p["cca"],
                "n": p["n_kernel"],
                "sim_share_%": _pm(p["share_sim_mean"], p["share_sim_ci"]),
                "kernel_share_%": _pm(p["share_kernel_mean"], p["share_kernel_ci"]),
                "diff_pp": (100 * p["share_diff"]).round(1),
                "overlap": p["ci_overlap"].map({True: "yes", False: "NO"}),
                "sim_Mbps": p["goodput_sim_mbps"].round(2),
                "kernel_Mbps": p["goodput_kernel_mbps"].round(2),
            }
        )
        lines = [table.to_string(index=False), "", self.summary.to_string(index=False)]
        bad = self.runs[~self.runs["kernel_reliable"]].drop_duplicates(["point", "rep"])
        for _, r in bad.iterrows():
            lines.append(f"UNRELIABLE kernel run at {r['point']} r{r['rep']}: {r['kernel_flags']}")
        return "\n".join(lines)


def _pm(mean: pd.Series, ci: pd.Series) -> pd.Series:
    return [
        f"{100 * m:.1f}" + ("" if c != c else f" +- {100 * c:.1f}")
        for m, c in zip(mean, ci, strict=True)
    ]


# --------------------------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True)
class VPoint:
    """One run of the study: a grid point (``label``, ``params``) and a repetition.

    Attributes:
        label: the point's label (without the repetition).
        params: grid key -> value label (empty for a plain scenario).
        rep: repetition number (0-based).
        scenario: the scenario to run on both backends.
    """

    label: str
    params: dict[str, str]
    rep: int
    scenario: Scenario


def _is_sweep(path: Path) -> bool:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return "grid" in data or "base" in data


def _sweep_points(sw: Any) -> list[VPoint]:
    out = []
    for p in sw.expand():
        label = f"{sw.name}[" + ",".join(f"{k}={v}" for k, v in p.params.items()) + "]"
        if p.baseline is not None:
            label += f" baseline {p.baseline}"
        out.append(VPoint(label, {k: str(v) for k, v in p.params.items()}, p.rep, p.scenario))
    return out


def validation_points(
    inputs: Sequence[Scenario | str | os.PathLike[str]] = (),
    *,
    preset: str | None = None,
    quick: bool = False,
) -> list[VPoint]:
    """Every run of the study: the points of the inputs (scenarios, scenario files, sweep
    files) and of a preset's grid (``quick``: its reduced grid), with their repetitions.

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> [p.label for p in validation_points([dumbbell(1, "reno", name="a")])]
        ['a']
    """
    out: list[VPoint] = []
    if preset is not None:
        from ccfair.presets import get

        out += _sweep_points(get(preset).sweep(quick=quick))
    for item in inputs:
        if isinstance(item, Scenario):
            out.append(VPoint(item.name, {}, 0, item))
            continue
        path = Path(item)
        if path.is_file() and _is_sweep(path):
            from ccfair.spec.sweep import Sweep

            out += _sweep_points(Sweep.from_toml(path))
            continue
        sc = as_scenario(path)
        out.append(VPoint(sc.name if sc.name != "scenario" else path.stem, {}, 0, sc))
    # Distinct labels for distinct plain scenarios of the same name.
    seen: dict[tuple[str, int], int] = {}
    unique = []
    for p in out:
        n = seen.get((p.label, p.rep), 0)
        seen[(p.label, p.rep)] = n + 1
        unique.append(p if n == 0 else VPoint(f"{p.label}#{n + 1}", p.params, p.rep, p.scenario))
    return unique


def expand_inputs(
    inputs: Sequence[Scenario | str | os.PathLike[str]],
) -> list[tuple[str, Scenario]]:
    """(label, scenario) for every run of the inputs, the repetition in the label when the
    inputs have several (see :func:`validation_points`).

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> [label for label, _ in expand_inputs([dumbbell(1, "reno", name="a")])]
        ['a']
    """
    points = validation_points(inputs)
    reps = len({p.rep for p in points}) > 1
    return [(p.label + (f" r{p.rep}" if reps else ""), p.scenario) for p in points]


def sim_variant(sc: Scenario, hz: int | None, sim_tcp: Mapping[str, Any] | None = None) -> Scenario:
    """The scenario the simulator runs: at the kernel's ``HZ`` unless ``tcp.hz`` is set,
    and with the TCP options ``sim_tcp`` (e.g. the testbed's measured ``host_latency``, or
    ``tso = "linux"``) where the scenario does not set them itself.

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> sim_variant(dumbbell(1, "cubic"), 250).tcp
        {'hz': 250}
        >>> sim_variant(dumbbell(1, "cubic"), None, {"tso": "linux"}).tcp
        {'tso': 'linux'}
    """

    def own(key: str) -> bool:
        return key in sc.tcp or any(key in f.tcp for f in sc.flows)

    extra = {k: v for k, v in (sim_tcp or {}).items() if not own(k)}
    if hz is not None and not own("hz") and "hz" not in extra:
        extra["hz"] = hz
    if not extra:
        return sc
    data = sc.to_dict()
    data["tcp"] = {**data.get("tcp", {}), **extra}
    data.pop("backend", None)
    return Scenario.from_dict(data)


def sim_tcp_label(sim_tcp: Mapping[str, Any] | None) -> str:
    """How a study's report names the simulator's TCP options.

    Example:
        >>> sim_tcp_label({"tso": "linux", "host_latency": {"measured": {}}})
        'tso = linux, host_latency = measured'
    """
    if not sim_tcp:
        return "defaults"
    show = [f"{k} = {next(iter(v)) if isinstance(v, Mapping) else v}" for k, v in sim_tcp.items()]
    return ", ".join(show)


def measured_host_latency(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``tcp.host_latency`` value of a turnaround measurement: the JSON that
    ``scripts/measure_host_latency.py --out FILE`` writes (its ``receiver_turnaround_us``
    and ``sender_turnaround_us``, 17 quantiles each).

    Example:
        >>> measured_host_latency("host_latency_10m.json")  # doctest: +SKIP
        {'measured': {'receiver_us': [...], 'sender_us': [...]}}
    """
    try:
        doc = json.loads(Path(path).read_text())
        table = {
            "receiver_us": [float(v) for v in doc["receiver_turnaround_us"]],
            "sender_us": [float(v) for v in doc["sender_turnaround_us"]],
        }
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise SpecError(
            "host_latency",
            str(path),
            f"is not a turnaround measurement of scripts/measure_host_latency.py ({exc})",
        ) from None
    return {"measured": table}


def _kernel_variant(sc: Scenario, reference: str = REFERENCE_BACKEND) -> Scenario:
    return Scenario.from_dict({**sc.to_dict(), "backend": reference})


def _with_duration(sc: Scenario, duration: str) -> Scenario:
    data = sc.to_dict()
    data["duration"] = duration
    data.pop("measure", None)
    return Scenario.from_dict(data)


def pair_of(p: VPoint) -> str:
    """The algorithm pair a point belongs to: its ``ccas`` grid value when that lists
    algorithms (``"cubic-cubic"`` -> "cubic vs cubic"), else its flows' algorithms in flow
    order ("bbr vs cubic"; one algorithm: "copa alone"), which is also what a named value of
    the axis gets (``copa-vs-cubic = ["copa", "cubic"]``).

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> pair_of(VPoint("x", {}, 0, dumbbell(2, ["reno", "bbr"])))
        'reno vs bbr'
        >>> pair_of(VPoint("x", {"ccas": "copa-alone"}, 0, dumbbell(4, "copa")))
        'copa alone'
    """
    from ccfair.algorithms import names

    if "ccas" in p.params:
        listed = re.split(r"[,+ -]+", p.params["ccas"].strip("[]"))
        if set(listed) <= set(names()):
            return " vs ".join(listed)
    ccas = list(dict.fromkeys(f.cca for f in p.scenario.flows))
    return " vs ".join(ccas) if len(ccas) > 1 else f"{ccas[0]} alone"


# --------------------------------------------------------------------------------------------
# Comparison


def compare(point: str, sim: RunResult, kern: RunResult) -> pd.DataFrame:
    """Per-flow comparison of one run's two backends (kernel minus simulator).

    Example:
        >>> flows = compare("p", sim_result, kernel_result)  # doctest: +SKIP
    """
    s = sim.flows.set_index("flow_name")
    k = kern.flows.set_index("flow_name")
    flows = pd.DataFrame(
        {
            "point": point,
            "flow": s.index,
            "cca": s["cca"].astype(str).to_numpy(),
            "goodput_sim_mbps": s["goodput_mbps"].to_numpy(),
            "goodput_kernel_mbps": k.loc[s.index, "goodput_mbps"].to_numpy(),
            "share_sim": s["share_frac"].to_numpy(),
            "share_kernel": k.loc[s.index, "share_frac"].to_numpy(),
            "rtt_mean_sim_ms": s["rtt_mean_ms"].to_numpy(),
            "rtt_mean_kernel_ms": k.loc[s.index, "rtt_mean_ms"].to_numpy(),
            "rtt_min_sim_ms": s["rtt_min_ms"].to_numpy(),
            "rtt_min_kernel_ms": k.loc[s.index, "rtt_min_ms"].to_numpy(),
            "retrans_sim": s["retrans_pkts"].to_numpy(),
            "retrans_kernel": k.loc[s.index, "retrans_pkts"].to_numpy(),
        }
    )
    flows["goodput_diff_mbps"] = flows["goodput_kernel_mbps"] - flows["goodput_sim_mbps"]
    flows["share_diff"] = flows["share_kernel"] - flows["share_sim"]
    for col, name in (("cwnd_pkts", "cwnd"), ("srtt_ms", "srtt")):
        for label, r in (("sim", sim), ("kernel", kern)):
            means = r.timeseries.groupby("flow_name", observed=True)[col].mean()
            flows[f"{name}_mean_{label}"] = [means.get(f, np.nan) for f in flows["flow"]]
    return flows


def summarize_points(runs: pd.DataFrame) -> pd.DataFrame:
    """Per point and flow over the repetitions: mean share and goodput on each backend, 95%
    confidence half-widths (Student t; NaN with one repetition), the difference of the
    means and whether the intervals [mean - ci, mean + ci] overlap (with one repetition,
    whether the two values are equal). Kernel means use only the runs that passed their
    self-checks (``n_kernel``; ``kernel_unreliable`` counts the others): a point without
    one has no kernel mean and no difference.

    Example:
        >>> runs = pd.DataFrame({"point": "p", "pair": "a vs b", "flow": "f1", "cca": "a",
        ...     "rep": [0, 1], "share_sim": [0.5, 0.52], "share_kernel": [0.6, 0.62],
        ...     "goodput_sim_mbps": [1.0, 1.0], "goodput_kernel_mbps": [2.0, 2.0],
        ...     "kernel_reliable": True})
        >>> row = summarize_points(runs).iloc[0]
        >>> float(round(row["share_diff"], 3)), bool(row["ci_overlap"])  # t(0.975, 1) is wide
        (0.1, True)
    """
    rows = []
    keys = ["point", "pair", "flow", "cca"]
    extra = [c for c in runs.columns if c.startswith("param_")]
    for key, g in runs.groupby(keys, sort=False, observed=True):
        row = dict(zip(keys, key, strict=True))
        row.update({c: g[c].iloc[0] for c in extra})
        # Kernel runs the self-checks flagged (after their retries) are counted but not
        # averaged: a stalled forwarder is a different network, not a repetition.
        reliable = g[g["kernel_reliable"].astype(bool)]
        row["n_sim"] = int(g["share_sim"].notna().sum())
        row["n_kernel"] = int(reliable["share_kernel"].notna().sum())
        row["kernel_unreliable"] = int((~g["kernel_reliable"].astype(bool)).sum())
        for b, rows_b in (("sim", g), ("kernel", reliable)):
            vals = rows_b[f"share_{b}"].dropna().to_numpy()
            row[f"share_{b}_mean"] = float(vals.mean()) if len(vals) else np.nan
            row[f"share_{b}_ci"] = ci95(vals) if len(vals) > 1 else np.nan
            gp = rows_b[f"goodput_{b}_mbps"]
            row[f"goodput_{b}_mbps"] = float(gp.mean()) if len(gp) else np.nan
        row["share_diff"] = row["share_kernel_mean"] - row["share_sim_mean"]
        row["ci_overlap"] = _overlap(
            row["share_sim_mean"],
            row["share_sim_ci"],
            row["share_kernel_mean"],
            row["share_kernel_ci"],
        )
        row["goodput_ratio"] = (
            row["goodput_kernel_mbps"] / row["goodput_sim_mbps"]
            if row["goodput_sim_mbps"] > 0
            else np.nan
        )
        rows.append(row)
    return pd.DataFrame(rows)


def flagged_points(runs: pd.DataFrame) -> pd.DataFrame:
    """Per point and flow that has kernel runs its self-checks flagged: the simulator's mean
    share (%), the reliable kernel runs' mean (NaN without one), the flagged runs' shares and
    the difference of their mean from the simulator's (pp). Shown apart and never averaged
    with the reliable runs (a stalled forwarder is a different network): on a machine that
    stalls often they show whether a conclusion could hinge on the runs that failed their
    checks.

    Example:
        >>> runs = pd.DataFrame({"point": "p", "pair": "a vs b", "flow": "f1", "cca": "a",
        ...     "rep": [0, 1], "share_sim": [0.5, 0.6], "share_kernel": [0.6, 0.7],
        ...     "kernel_reliable": [True, False]})
        >>> flagged_points(runs)[["kernel_flagged_%", "diff_flagged_pp"]].to_dict("records")
        [{'kernel_flagged_%': '70.0', 'diff_flagged_pp': 15.0}]
    """
    rows = []
    for (point, pair, flow, cca), g in runs.groupby(
        ["point", "pair", "flow", "cca"], sort=False, observed=True
    ):
        reliable = g["kernel_reliable"].astype(bool)
        flagged = g.loc[~reliable, "share_kernel"].dropna()
        if flagged.empty:
            continue
        sim = float(g["share_sim"].dropna().mean())
        rows.append(
            {
                "point": point,
                "pair": pair,
                "flow": flow,
                "cca": cca,
                "sim_share_%": round(100 * sim, 1),
                "kernel_reliable_%": round(100 * float(g.loc[reliable, "share_kernel"].mean()), 1),
                "kernel_flagged_%": ", ".join(f"{100 * x:.1f}" for x in flagged),
                "diff_flagged_pp": round(100 * (float(flagged.mean()) - sim), 2),
            }
        )
    return pd.DataFrame(rows)


def _overlap(m1: float, c1: float, m2: float, c2: float) -> bool:
    c1 = 0.0 if c1 != c1 else c1
    c2 = 0.0 if c2 != c2 else c2
    return bool(abs(m1 - m2) <= c1 + c2)


def summarize_pairs(points: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm pair over its points: the median and largest |share difference| (pp,
    per point the largest over its flows), how many points exceed the 10 pp target, the
    fraction of point-flows whose intervals overlap, and how many points have no reliable
    kernel run (they have no difference and count in neither statistic).

    Example:
        >>> pts = pd.DataFrame({"point": ["p", "q"], "pair": "a vs b", "flow": "f1",
        ...     "share_diff": [0.02, -0.12], "ci_overlap": [True, False]})
        >>> summarize_pairs(pts)[["pair", "median_abs_diff_pp", "max_abs_diff_pp", "over_10pp"]]
             pair  median_abs_diff_pp  max_abs_diff_pp  over_10pp
        0  a vs b                 7.0             12.0          1
        1     all                 7.0             12.0          1
    """
    groups = [(pair, g) for pair, g in points.groupby("pair", sort=False, observed=True)]
    return pd.DataFrame([_pair_row(pair, g) for pair, g in [*groups, ("all", points)]])


def _pair_row(pair: str, g: pd.DataFrame) -> dict[str, Any]:
    per_point = g.assign(a=g["share_diff"].abs()).groupby("point", sort=False)["a"].max()
    measured = per_point.dropna()
    compared = g[g["share_diff"].notna()]
    return {
        "pair": pair,
        "points": int(len(measured)),
        "median_abs_diff_pp": round(100 * float(measured.median()), 2) if len(measured) else np.nan,
        "max_abs_diff_pp": round(100 * float(measured.max()), 2) if len(measured) else np.nan,
        "over_10pp": int((measured > TARGET_MAX_PP / 100).sum()),
        "ci_overlap_frac": (
            round(float(compared["ci_overlap"].mean()), 3) if len(compared) else np.nan
        ),
        "no_reliable_kernel": int(per_point.isna().sum()),
    }


# --------------------------------------------------------------------------------------------
# Figures and report


def _slug(text: str) -> str:
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
        path = figdir / f"share_diff_{_slug(pair)}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        out.append(path)
    return out


def _md_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        cells = []
        for c in cols:
            v = row[c]
            cells.append(f"{v:.3g}" if isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _flagged_section(fp: pd.DataFrame) -> list[str]:
    """The flagged kernel runs beside the simulator, as report lines (none without any)."""
    if fp.empty:
        return []
    worst = fp.assign(a=fp["diff_flagged_pp"].abs()).groupby("point", sort=False)["a"].max()
    return [
        "### The flagged kernel runs beside the simulator (not counted above)",
        "",
        "Not a fidelity result: these runs failed their self-checks, so Linux ran over a "
        "network that was not the one specified. They show whether a conclusion could hinge on "
        f"them: over {len(worst)} points, median |difference| {worst.median():.2f} pp, largest "
        f"{worst.max():.2f} pp (the flagged runs' mean minus the simulator's).",
        "",
        _md_table(fp),
        "",
    ]


def report_section(v: Validation, env: dict[str, Any], command: str | None = None) -> str:
    """The Markdown report section: summary per pair against the targets, the per-point
    table, flagged kernel runs and the figures.

    Example:
        >>> print(report_section(v, {"kernel": "6.18"}))  # doctest: +SKIP
    """
    p = v.points
    params = [c for c in p.columns if c.startswith("param_")]
    per_point = pd.DataFrame({"pair": p["pair"]})
    for c in params:
        per_point[c.removeprefix("param_")] = p[c]
    per_point["flow"] = p["flow"]
    per_point["cca"] = p["cca"]
    per_point["n"] = p["n_kernel"]
    per_point["sim share %"] = _pm(p["share_sim_mean"], p["share_sim_ci"])
    per_point["Linux share %"] = _pm(p["share_kernel_mean"], p["share_kernel_ci"])
    per_point["diff pp"] = (100 * p["share_diff"]).round(1)
    per_point["CIs overlap"] = p["ci_overlap"].map({True: "yes", False: "no"})
    per_point["sim Mbit/s"] = p["goodput_sim_mbps"].round(2)
    per_point["Linux Mbit/s"] = p["goodput_kernel_mbps"].round(2)
    missing = p["share_kernel_mean"].isna()
    for col, text in (
        ("Linux share %", "no reliable run"),
        ("diff pp", ""),
        ("CIs overlap", "n/a"),
        ("Linux Mbit/s", ""),
    ):
        per_point[col] = per_point[col].astype(object).where(~missing, text)
    if not params:
        per_point.insert(1, "point", p["point"])
    s = v.summary
    overall = s[s["pair"] == "all"].iloc[0]
    verdict = (
        "met"
        if overall["median_abs_diff_pp"] <= TARGET_MEDIAN_PP
        and overall["max_abs_diff_pp"] <= TARGET_MAX_PP
        else "not met"
    )
    linux = (
        "real Linux TCP in network namespaces over veth pairs with tc qdiscs"
        if str(env.get("Linux runs", "")).startswith("veth")
        else "real Linux TCP in network namespaces behind the same link model"
    )
    parts = [
        "## Fidelity: simulator vs Linux (`ccfair validate`)",
        "",
        f"Each point ran on the simulator and on the kernel backend ({linux}), with its "
        "repetitions (seeds). A flow's share "
        "is its goodput over the total; differences are Linux minus simulator, in percentage "
        "points (pp), of the means over the repetitions; intervals are 95% Student-t "
        "confidence intervals over the repetitions.",
        "",
    ]
    if command:
        parts += [f"Command: `{command}`", ""]
    parts += [
        "Environment: " + ", ".join(f"{k} {val}" for k, val in env.items()),
        "",
        "### Summary per algorithm pair",
        "",
        f"Targets: median |difference| <= {TARGET_MEDIAN_PP:g} pp and largest <= "
        f"{TARGET_MAX_PP:g} pp over reliable runs: **{verdict}** (median "
        f"{overall['median_abs_diff_pp']:.2f} pp, largest {overall['max_abs_diff_pp']:.2f} pp, "
        f"over {overall['points']} points"
        + (
            f"; {overall['no_reliable_kernel']} points had no reliable kernel run and are left out"
            if overall["no_reliable_kernel"]
            else ""
        )
        + ").",
        "",
        _md_table(s),
        "",
        "### Every point",
        "",
        _md_table(per_point),
        "",
    ]
    bad = v.runs[~v.runs["kernel_reliable"]].drop_duplicates(["point", "rep"])
    if len(bad):
        parts += ["### Kernel runs outside their self-check bounds (after retries)", ""]
        parts += [f"- {r['point']} r{r['rep']}: {r['kernel_flags']}" for _, r in bad.iterrows()]
        parts.append("")
        parts += _flagged_section(flagged_points(v.runs))
    if v.figures:
        parts += ["### Figures", ""]
        base = v.out or Path(".")
        for fig in v.figures:
            rel = fig.relative_to(base) if fig.is_relative_to(base) else fig
            parts.append(f"![{fig.stem}]({rel})")
        parts.append("")
    return "\n".join(parts)


# --------------------------------------------------------------------------------------------
# Driver


def validate(
    inputs: Sequence[Scenario | str | os.PathLike[str]] = (),
    *,
    preset: str | None = None,
    quick: bool = False,
    out: str | os.PathLike[str] | None = "validation",
    duration: str | None = None,
    match_hz: bool = True,
    retries: int = 2,
    rerun_flagged: bool = True,
    timeseries_figures: int = 4,
    command: str | None = None,
    progress: Callable[[str], None] | None = None,
    finished_only: bool = False,
    sim_tcp: Mapping[str, Any] | None = None,
    reference: str = REFERENCE_BACKEND,
) -> Validation:
    """Run every point of ``inputs`` (scenarios, scenario files, sweep files) and of
    ``preset`` (``quick``: its reduced grid) on both backends and compare them.

    ``duration`` overrides every scenario's duration (the measurement window then spans the
    whole run). Kernel runs happen one at a time, in real time; a kernel run the self-checks
    flag is run again up to ``retries`` times; a finished kernel run that was flagged is run
    again unless ``rerun_flagged`` is False (it is then reported as flagged). With ``out``,
    every run is saved to ``out/results`` as it finishes (a rerun of the same study skips
    finished runs and reruns flagged ones), and the study writes
    ``out/validate_{runs,points,summary}.{csv,parquet}``, figures in ``out/figures`` (the
    agreement of shares, per-pair heatmaps of the difference over two grid axes, and
    overlaid time series of the ``timeseries_figures`` points that differ most) and the
    report section ``out/validate.md``.

    ``finished_only`` compares only the points whose kernel runs are already in
    ``out/results`` (flagged ones too, reported as such) and starts no kernel run: a study
    whose kernel side ran elsewhere, or was interrupted, can be analysed on any machine,
    without root. The simulator then runs at the HZ those kernel runs recorded.

    ``sim_tcp`` sets TCP options on the simulator's side only, where a point does not set
    them itself: the turnaround measured on the testbed (``{"host_latency":``
    :func:`measured_host_latency` ``(...)}``, docs/model.md, "Connections and host
    latency"), or a model to test against Linux's own behaviour, such as
    ``{"tso": "linux"}`` (the kernel backend always runs Linux's segmentation offload).

    ``reference`` is the backend of the Linux runs: ``"kernel"`` (ccfair's forwarder over
    TUN devices, the default) or ``"veth"`` (veth pairs with tc qdiscs, Mininet's links; on
    a kernel with netem it compares the simulator's netem queue with netem itself).

    Example:
        >>> v = validate(["a.toml", "b.toml"], out="validation")  # doctest: +SKIP
    """
    say = progress or (lambda m: None)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise SpecError("retries", retries, "is not a number of reruns (an integer >= 0)")
    if not isinstance(rerun_flagged, bool):
        raise SpecError("rerun_flagged", rerun_flagged, "is not true or false")
    if not isinstance(finished_only, bool):
        raise SpecError("finished_only", finished_only, "is not true or false")
    points = validation_points(inputs, preset=preset, quick=quick)
    if not points:
        raise SpecError("inputs", list(inputs), "name no scenario, sweep or preset to validate")
    if duration is not None:
        points = [
            VPoint(p.label, p.params, p.rep, _with_duration(p.scenario, duration)) for p in points
        ]
    if sim_tcp is not None and (
        not isinstance(sim_tcp, Mapping) or not all(isinstance(k, str) for k in sim_tcp)
    ):
        raise SpecError("sim_tcp", sim_tcp, "is not a table of TCP options by name")
    if sim_tcp:
        # Checked on one point (the engine names what is wrong) before anything runs.
        sim_variant(points[0].scenario, None, sim_tcp).resolve()
    if (
        not isinstance(reference, str)
        or reference not in backends.names()
        or not (backends.get(reference).real_time)
    ):
        linux = [n for n in backends.names() if backends.get(n).real_time]
        raise SpecError(
            "reference", reference, f"is not a backend of real Linux TCP; choose {', '.join(linux)}"
        )
    ref_name = reference
    reference = backends.get(ref_name)
    kernel_scs = [_kernel_variant(p.scenario, ref_name) for p in points]
    results = Path(out) / "results" if out is not None else None
    if finished_only:
        points, kernel_scs, hz = _finished_points(points, kernel_scs, results, say, ref_name)
        hz = hz if match_hz else None
        rerun_flagged = False
    else:
        for p, ksc in zip(points, kernel_scs, strict=True):
            try:
                reference.check(ksc.resolve())
            except SpecError as exc:
                raise SpecError(
                    exc.path, exc.value, f"{exc.message} (point {p.label})", with_value=False
                ) from None
        reference.preflight()
        reference.warn_if_busy(say)
        hz = reference.clock_hz() if match_hz else None
    sims = _run_sims(points, hz, sim_tcp, results, say)
    kerns = _run_kernels(points, kernel_scs, results, retries, rerun_flagged, say, ref_name)
    v = _study(points, sims, kerns)
    if out is not None:
        label = sim_tcp_label(sim_tcp)
        _write(v, Path(out), points, sims, kerns, hz, label, timeseries_figures, command, ref_name)
    return v


def _finished_points(
    points: list[VPoint],
    kernel_scs: list[Scenario],
    results: Path | None,
    say: Callable[[str], None],
    reference: str = REFERENCE_BACKEND,
) -> tuple[list[VPoint], list[Scenario], int | None]:
    """The points whose kernel run is finished in ``results``, their kernel scenarios, and
    the HZ those runs recorded (None if they did not)."""
    if results is None:
        raise SpecError("out", None, "is needed with finished_only (the study's directory)")
    done = finished_run_ids(results) if results.is_dir() else set()
    identity = backends.get(reference).identity()
    keep = [
        i for i, sc in enumerate(kernel_scs) if run_id_of(sc.resolve().normalized, identity) in done
    ]
    if not keep:
        raise SpecError("out", str(results.parent), "holds no finished kernel run of these points")
    say(f"comparing the {len(keep)} of {len(points)} points whose kernel runs are finished")
    first = load(results, run_id_of(kernel_scs[keep[0]].resolve().normalized, identity))
    hz = first.runs.iloc[0].get("kernel_hz")
    hz = int(hz) if hz is not None and hz == hz else None
    return [points[i] for i in keep], [kernel_scs[i] for i in keep], hz


#: The time-series columns the study uses (means per flow, overlaid time series).
_STUDY_COLUMNS = ["flow_name", "t_s", "cwnd_pkts", "srtt_ms"]


def _slim(r: RunResult) -> RunResult:
    """What the study keeps of a run once it is saved: its flows and runs tables and the
    time series it compares, not every column and link sample (a 10-hop study holds
    over a hundred runs)."""
    return dataclasses.replace(
        r,
        timeseries=r.timeseries[_STUDY_COLUMNS],
        links=r.links.iloc[:0],
        link_summary=r.link_summary.iloc[:0],
        trace=None,
    )


def _cached(results: Path | None, run_id: str) -> RunResult | None:
    if results is None or run_id not in finished_run_ids(results):
        return None
    return load(results, run_id)


def _run_sims(
    points: list[VPoint],
    hz: int | None,
    sim_tcp: Mapping[str, Any] | None,
    results: Path | None,
    say: Callable[[str], None],
) -> list[RunResult]:
    # The simulator side always runs: it is cheap, and it must be the current model (a run
    # id names the scenario, not the simulator's version); kernel runs are kept.
    def one(i: int) -> RunResult:
        p = points[i]
        say(f"simulator: {p.label} r{p.rep}")
        r = run(sim_variant(p.scenario, hz, sim_tcp), backend=MODEL_BACKEND)
        if results is not None:
            r.save(results)
        return _slim(r)

    return run_in_threads(len(points), one, backends_used=[backends.get(MODEL_BACKEND)])


def _run_kernels(
    points: list[VPoint],
    scenarios: list[Scenario],
    results: Path | None,
    retries: int,
    rerun_flagged: bool,
    say: Callable[[str], None],
    reference: str = REFERENCE_BACKEND,
) -> list[RunResult]:
    out: list[RunResult | None] = []
    pending = []
    for i, sc in enumerate(scenarios):
        rid = run_id_of(sc.resolve().normalized, backends.get(reference).identity())
        r = _cached(results, rid)
        if r is not None and not r.reliable and rerun_flagged:
            say(f"kernel: {points[i].label} r{points[i].rep} was flagged; running it again")
            r = None
        out.append(None if r is None else _slim(r))
        if r is None:
            pending.append(i)
    t_start = time.monotonic()

    def one(done: int) -> RunResult:
        i = pending[done]
        p = points[i]
        eta = ""
        if done:
            left = (time.monotonic() - t_start) / done * (len(pending) - done)
            eta = f", about {left / 60:.0f} min left"
        for attempt in range(retries + 1):
            say(f"kernel {done + 1}/{len(pending)}{eta}: {p.label} r{p.rep}")
            r = run(scenarios[i], backend=reference)
            say(f"  {r.format_selfcheck()}")
            if r.reliable or attempt == retries:
                break
            say("  flagged: running it again")
        if results is not None:
            r.save(results)
        return _slim(r)

    # One at a time: the reference runs in real time (docs/kernel.md, "Several runs").
    ran = run_in_threads(len(pending), one, backends_used=[backends.get(reference)])
    for i, r in zip(pending, ran, strict=True):
        out[i] = r
    return [r for r in out if r is not None]


def _study(points: list[VPoint], sims: list[RunResult], kerns: list[RunResult]) -> Validation:
    rows = []
    for p, s, k in zip(points, sims, kerns, strict=True):
        fl = compare(p.label, s, k)
        fl.insert(1, "rep", p.rep)
        fl.insert(1, "pair", pair_of(p))
        for key, value in p.params.items():
            fl[f"param_{key}"] = value
        fl["sim_run_id"] = s.run_id
        fl["kernel_run_id"] = k.run_id
        fl["kernel_reliable"] = k.reliable
        fl["kernel_flags"] = k.runs.iloc[0]["selfcheck_flags"]
        rows.append(fl)
    runs = pd.concat(rows, ignore_index=True)
    points_df = summarize_points(runs)
    return Validation(runs=runs, points=points_df, summary=summarize_pairs(points_df))


def _write(
    v: Validation,
    root: Path,
    points: list[VPoint],
    sims: list[RunResult],
    kerns: list[RunResult],
    hz: int | None,
    sim_options: str,
    n_timeseries: int,
    command: str | None,
    reference: str = REFERENCE_BACKEND,
) -> None:
    import platform

    v.out = root
    root.mkdir(parents=True, exist_ok=True)
    for name, frame in (("runs", v.runs), ("points", v.points), ("summary", v.summary)):
        frame.to_csv(root / f"validate_{name}.csv", index=False)
        frame.to_parquet(root / f"validate_{name}.parquet", index=False)
    figs = root / "figures"
    v.figures.append(agreement_figure(v.points, figs / "agreement.png", flagged_points(v.runs)))
    v.figures += diff_heatmaps(v.points, figs)
    # Time series of the points that differ most (their first repetition).
    worst = (
        v.points.assign(a=v.points["share_diff"].abs())
        .groupby("point", sort=False)["a"]
        .max()
        .sort_values(ascending=False)
    )
    for label in list(worst.index[:n_timeseries]):
        i = next(j for j, p in enumerate(points) if p.label == label)
        v.figures.append(
            timeseries_figure(label, sims[i], kerns[i], figs / f"{_slug(label)}_timeseries.png")
        )
    env = {
        "Linux runs": backends.get(reference).summary,
        "kernel": platform.release(),
        "kernel HZ": hz,
        "simulator hz": hz if hz is not None else "scenario's",
        "simulator TCP options": sim_options,
        "CPUs": os.cpu_count(),
        "ccfair": sims[0].runs.iloc[0]["ccfair_version"],
        "git": sims[0].runs.iloc[0]["git_revision"],
    }
    (root / "validate.md").write_text(report_section(v, env, command))
