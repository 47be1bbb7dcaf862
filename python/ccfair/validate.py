"""``ccfair validate``: the fidelity check of the simulator against Linux.

Every scenario runs on both backends: the simulator and the kernel backend (real Linux TCP,
docs/kernel.md). The comparison is per flow (goodput on each backend, the difference, the
flow's share of the total) and per algorithm (its share of all goodput on each backend and
the difference, e.g. BBR's share against CUBIC), plus overlaid time series of cwnd and RTT.
It is written as a table (CSV and Parquet), figures (PNG) and a Markdown report section,
next to the runs' own Parquet tables.

The simulator runs at the kernel's ``HZ`` unless the scenario sets ``tcp.hz`` itself: the
simulator's default (1000) would otherwise be a difference of configuration, not of model.

Example:
    >>> v = validate(["scenarios/dumbbell.toml"], out="validation")  # doctest: +SKIP
    >>> v.flows[["point", "flow", "goodput_sim_mbps", "goodput_kernel_mbps"]]  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ccfair import kernel
from ccfair.api import as_scenario, run, run_many
from ccfair.errors import SpecError
from ccfair.results import RunResult
from ccfair.spec import Scenario

__all__ = ["Validation", "validate", "compare", "expand_inputs"]


@dataclass
class Validation:
    """The outcome of :func:`validate`.

    Attributes:
        flows: one row per point and flow: goodput, share, RTT and retransmissions on both
            backends, and their differences (kernel minus simulator).
        ccas: one row per point and algorithm: its share of all goodput on both backends and
            the difference (``share_diff``, kernel minus simulator).
        points: one row per point: scenario, run ids, whether the kernel run was reliable.
        out: the output directory (tables, figures, report), if any.
        figures: paths of the figures written.
    """

    flows: pd.DataFrame
    ccas: pd.DataFrame
    points: pd.DataFrame
    out: Path | None = None
    figures: list[Path] = field(default_factory=list)

    def format_table(self) -> str:
        """The per-flow comparison as text, for terminals.

        Example:
            >>> print(v.format_table())  # doctest: +SKIP
        """
        f = self.flows
        table = pd.DataFrame(
            {
                "point": f["point"],
                "flow": f["flow"],
                "cca": f["cca"],
                "sim_Mbps": f["goodput_sim_mbps"].round(2),
                "kernel_Mbps": f["goodput_kernel_mbps"].round(2),
                "diff_Mbps": f["goodput_diff_mbps"].round(2),
                "sim_share_%": (100 * f["share_sim"]).round(1),
                "kernel_share_%": (100 * f["share_kernel"]).round(1),
                "rtt_sim_ms": f["rtt_mean_sim_ms"].round(1),
                "rtt_kernel_ms": f["rtt_mean_kernel_ms"].round(1),
            }
        )
        c = self.ccas
        shares = pd.DataFrame(
            {
                "point": c["point"],
                "cca": c["cca"],
                "sim_share_%": (100 * c["share_sim"]).round(1),
                "kernel_share_%": (100 * c["share_kernel"]).round(1),
                "diff_pp": (100 * c["share_diff"]).round(1),
            }
        )
        lines = [table.to_string(index=False), "", shares.to_string(index=False)]
        bad = self.points[~self.points["kernel_reliable"]]
        for _, p in bad.iterrows():
            lines.append(f"UNRELIABLE kernel run at {p['point']}: {p['kernel_flags']}")
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Inputs


def _is_sweep(path: Path) -> bool:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return "grid" in data or "base" in data


def expand_inputs(
    inputs: Sequence[Scenario | str | os.PathLike[str]],
) -> list[tuple[str, Scenario]]:
    """(label, scenario) for every point of the inputs: scenarios, scenario files, or sweep
    files (expanded into their points, docs/experiments.md).

    Example:
        >>> from ccfair.spec import dumbbell
        >>> [label for label, _ in expand_inputs([dumbbell(1, "reno", name="a")])]
        ['a']
    """
    out: list[tuple[str, Scenario]] = []
    for item in inputs:
        if isinstance(item, Scenario):
            out.append((item.name, item))
            continue
        path = Path(item)
        if path.exists() and _is_sweep(path):
            out += _expand_sweep(path)
            continue
        sc = as_scenario(path)
        out.append((sc.name if sc.name != "scenario" else path.stem, sc))
    labels: dict[str, int] = {}
    unique = []
    for label, sc in out:
        n = labels.get(label, 0)
        labels[label] = n + 1
        unique.append((label if n == 0 else f"{label}#{n + 1}", sc))
    return unique


def _expand_sweep(path: Path) -> list[tuple[str, Scenario]]:
    """The points of a sweep file (docs/experiments.md), labelled by their grid values."""
    from ccfair.sweep import Sweep

    sw = Sweep.from_toml(path)
    points = sw.expand()
    reps = len({p.rep for p in points}) > 1
    out = []
    for p in points:
        label = f"{sw.name}[" + ",".join(f"{k}={v}" for k, v in p.params.items()) + "]"
        if p.baseline is not None:
            label += f" baseline {p.baseline}"
        if reps:
            label += f" r{p.rep}"
        out.append((label, p.scenario))
    return out


def sim_variant(sc: Scenario, hz: int | None) -> Scenario:
    """The scenario the simulator runs: at the kernel's ``HZ`` unless ``tcp.hz`` is set.

    Example:
        >>> from ccfair.spec import dumbbell
        >>> sim_variant(dumbbell(1, "cubic"), 250).tcp
        {'hz': 250}
    """
    if hz is None or "hz" in sc.tcp or any("hz" in f.tcp for f in sc.flows):
        return sc
    data = sc.to_dict()
    data["tcp"] = {**data.get("tcp", {}), "hz": hz}
    data.pop("backend", None)
    return Scenario.from_dict(data)


# --------------------------------------------------------------------------------------------
# Comparison


def _cca_shares(r: RunResult) -> pd.Series:
    g = r.flows.groupby("cca", observed=True)["goodput_bps"].sum()
    total = g.sum()
    return g / total if total > 0 else g * np.nan


def compare(point: str, sim: RunResult, kern: RunResult) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-flow and per-algorithm comparison of one point's two runs (kernel minus sim).

    Example:
        >>> flows, ccas = compare("p", sim_result, kernel_result)  # doctest: +SKIP
    """
    s = sim.flows.set_index("name")
    k = kern.flows.set_index("name")
    flows = pd.DataFrame(
        {
            "point": point,
            "flow": s.index,
            "cca": s["cca"].astype(str).to_numpy(),
            "goodput_sim_mbps": s["goodput_bps"].to_numpy() / 1e6,
            "goodput_kernel_mbps": k.loc[s.index, "goodput_bps"].to_numpy() / 1e6,
            "share_sim": s["share"].to_numpy(),
            "share_kernel": k.loc[s.index, "share"].to_numpy(),
            "rtt_mean_sim_ms": s["rtt_mean_us"].to_numpy() / 1e3,
            "rtt_mean_kernel_ms": k.loc[s.index, "rtt_mean_us"].to_numpy() / 1e3,
            "rtt_min_sim_ms": s["rtt_min_us"].to_numpy() / 1e3,
            "rtt_min_kernel_ms": k.loc[s.index, "rtt_min_us"].to_numpy() / 1e3,
            "retrans_sim": s["retrans_pkts"].to_numpy(),
            "retrans_kernel": k.loc[s.index, "retrans_pkts"].to_numpy(),
        }
    )
    flows["goodput_diff_mbps"] = flows["goodput_kernel_mbps"] - flows["goodput_sim_mbps"]
    flows["goodput_rel_diff"] = flows["goodput_diff_mbps"] / flows["goodput_sim_mbps"]
    flows["share_diff"] = flows["share_kernel"] - flows["share_sim"]
    for col, name in (("cwnd_pkts", "cwnd"), ("srtt_us", "srtt")):
        for label, r in (("sim", sim), ("kernel", kern)):
            means = r.timeseries.groupby("flow_name", observed=True)[col].mean()
            flows[f"{name}_mean_{label}"] = [means.get(f, np.nan) for f in flows["flow"]]
    ss, ks = _cca_shares(sim), _cca_shares(kern)
    ccas = pd.DataFrame(
        {
            "point": point,
            "cca": ss.index.astype(str),
            "share_sim": ss.to_numpy(),
            "share_kernel": ks.reindex(ss.index).to_numpy(),
        }
    )
    ccas["share_diff"] = ccas["share_kernel"] - ccas["share_sim"]
    return flows, ccas


# --------------------------------------------------------------------------------------------
# Figures and report


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "point"


def timeseries_figure(point: str, sim: RunResult, kern: RunResult, path: Path) -> Path:
    """cwnd and smoothed RTT over time, simulator (dashed) and kernel (solid) overlaid, one
    colour per flow; saved as PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True, layout="constrained")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    names = list(sim.flows["name"])
    for i, name in enumerate(names):
        c = colors[i % len(colors)]
        cca = sim.flows.set_index("name").loc[name, "cca"]
        for r, style, backend in ((kern, "-", "kernel"), (sim, "--", "sim")):
            ts = r.timeseries[r.timeseries["flow_name"] == name]
            label = f"{name} ({cca}) {backend}"
            axes[0].plot(ts["t_s"], ts["cwnd_pkts"], style, color=c, lw=0.9, label=label)
            axes[1].plot(ts["t_s"], ts["srtt_us"] / 1e3, style, color=c, lw=0.9, label=label)
    axes[0].set_ylabel("cwnd (packets)")
    axes[1].set_ylabel("smoothed RTT (ms)")
    axes[1].set_xlabel("time (s)")
    axes[0].set_title(f"{point}: kernel (solid) vs simulator (dashed)")
    axes[0].legend(fontsize=7, ncol=2, loc="upper right")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def goodput_figure(flows: pd.DataFrame, path: Path) -> Path:
    """Per-flow goodput on both backends, grouped by point; saved as PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [
        f"{p}\n{f} ({c})"
        for p, f, c in zip(flows["point"], flows["flow"], flows["cca"], strict=True)
    ]
    x = np.arange(len(flows))
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(flows) + 2), 4), layout="constrained")
    ax.bar(x - 0.2, flows["goodput_sim_mbps"], 0.4, label="simulator")
    ax.bar(x + 0.2, flows["goodput_kernel_mbps"], 0.4, label="kernel (Linux)")
    ax.set_xticks(x, labels, fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


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


def report_section(v: Validation, env: dict[str, Any]) -> str:
    """The Markdown report section: environment, per-flow and per-algorithm tables,
    flagged kernel runs and the figures.

    Example:
        >>> print(report_section(v, {"kernel": "6.18"}))  # doctest: +SKIP
    """
    f = v.flows
    per_flow = pd.DataFrame(
        {
            "point": f["point"],
            "flow": f["flow"],
            "cca": f["cca"],
            "sim Mbit/s": f["goodput_sim_mbps"],
            "kernel Mbit/s": f["goodput_kernel_mbps"],
            "diff Mbit/s": f["goodput_diff_mbps"],
            "sim share %": 100 * f["share_sim"],
            "kernel share %": 100 * f["share_kernel"],
            "sim RTT ms": f["rtt_mean_sim_ms"],
            "kernel RTT ms": f["rtt_mean_kernel_ms"],
        }
    )
    c = v.ccas
    per_cca = pd.DataFrame(
        {
            "point": c["point"],
            "cca": c["cca"],
            "sim share %": 100 * c["share_sim"],
            "kernel share %": 100 * c["share_kernel"],
            "difference (pp)": 100 * c["share_diff"],
        }
    )
    parts = [
        "## Fidelity: simulator vs Linux (`ccfair validate`)",
        "",
        "Each point ran on the simulator and on the kernel backend (real Linux TCP in network "
        "namespaces behind the same link model). Differences are kernel minus simulator.",
        "",
        "Environment: " + ", ".join(f"{k} {val}" for k, val in env.items()),
        "",
        "### Goodput per flow",
        "",
        _md_table(per_flow),
        "",
        "### Share of each algorithm",
        "",
        _md_table(per_cca),
        "",
    ]
    bad = v.points[~v.points["kernel_reliable"]]
    if len(bad):
        parts += ["### Kernel runs outside their self-check bounds", ""]
        parts += [f"- {p['point']}: {p['kernel_flags']}" for _, p in bad.iterrows()]
        parts.append("")
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
    inputs: Sequence[Scenario | str | os.PathLike[str]],
    *,
    out: str | os.PathLike[str] | None = "validation",
    jobs: int = 1,
    duration: str | None = None,
    match_hz: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Validation:
    """Run every point of ``inputs`` (scenarios, scenario files, sweep files) on both
    backends and compare them.

    ``duration`` overrides every scenario's duration (the measurement window then spans the
    whole run). ``jobs`` kernel runs execute at once (see :func:`ccfair.api.run_many`).
    With ``out``, the runs' Parquet tables go to ``out/results``, the comparison to
    ``out/validate_flows.{csv,parquet}`` and ``out/validate_ccas.{csv,parquet}``, figures
    to ``out/figures`` and the report section to ``out/validate.md``.

    Example:
        >>> v = validate(["a.toml", "b.toml"], out="validation")  # doctest: +SKIP
    """
    say = progress or (lambda m: None)
    points = expand_inputs(inputs)
    if duration is not None:
        points = [(label, _with_duration(sc, duration)) for label, sc in points]
    kernel_scs = [Scenario.from_dict({**sc.to_dict(), "backend": "kernel"}) for _, sc in points]
    for (label, _), ksc in zip(points, kernel_scs, strict=True):
        try:
            kernel.check_scenario(ksc.resolve())
        except SpecError as exc:
            raise SpecError(
                exc.path, exc.value, f"{exc.message} (point {label})", with_value=False
            ) from None
    kernel.preflight()
    hz = kernel.kernel_hz() if match_hz else None
    sims: list[RunResult] = []
    for label, sc in points:
        say(f"simulator: {label}")
        sims.append(run(sim_variant(sc, hz), backend="sim"))
    say(f"kernel: {len(points)} run(s) in real time, {jobs} at a time")
    kerns = run_many(
        kernel_scs,
        backend="kernel",
        jobs=jobs,
        on_result=lambda i, r: say(f"kernel: {points[i][0]} done ({r.format_selfcheck()})"),
    )
    flow_rows, cca_rows, point_rows = [], [], []
    for (label, sc), s, k in zip(points, sims, kerns, strict=True):
        fl, cc = compare(label, s, k)
        flow_rows.append(fl)
        cca_rows.append(cc)
        point_rows.append(
            {
                "point": label,
                "scenario": sc.name,
                "sim_run_id": s.run_id,
                "kernel_run_id": k.run_id,
                "kernel_reliable": k.reliable,
                "kernel_flags": k.runs.iloc[0]["flags"],
                "sim_hz": json.loads(s.runs.iloc[0]["spec_json"])["tcp"].get("hz"),
                "kernel_hz": k.runs.iloc[0]["kernel_hz"],
                "duration_s": s.runs.iloc[0]["duration_s"],
            }
        )
    v = Validation(
        flows=pd.concat(flow_rows, ignore_index=True),
        ccas=pd.concat(cca_rows, ignore_index=True),
        points=pd.DataFrame(point_rows),
    )
    if out is not None:
        _write(v, Path(out), points, sims, kerns, hz)
    return v


def _with_duration(sc: Scenario, duration: str) -> Scenario:
    data = sc.to_dict()
    data["duration"] = duration
    data.pop("measure", None)
    return Scenario.from_dict(data)


def _write(
    v: Validation,
    root: Path,
    points: list[tuple[str, Scenario]],
    sims: list[RunResult],
    kerns: list[RunResult],
    hz: int | None,
) -> None:
    import platform

    v.out = root
    root.mkdir(parents=True, exist_ok=True)
    for r in (*sims, *kerns):
        r.save(root / "results")
    for name, frame in (("flows", v.flows), ("ccas", v.ccas), ("points", v.points)):
        frame.to_csv(root / f"validate_{name}.csv", index=False)
        frame.to_parquet(root / f"validate_{name}.parquet", index=False)
    figs = root / "figures"
    v.figures.append(goodput_figure(v.flows, figs / "goodput.png"))
    for (label, _), s, k in zip(points, sims, kerns, strict=True):
        v.figures.append(timeseries_figure(label, s, k, figs / f"{_slug(label)}_timeseries.png"))
    env = {
        "kernel": platform.release(),
        "kernel HZ": hz,
        "simulator hz": hz if hz is not None else "scenario's",
        "CPUs": os.cpu_count(),
    }
    (root / "validate.md").write_text(report_section(v, env))
