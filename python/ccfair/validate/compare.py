"""The comparison of the two sides: per flow and run (kernel minus simulator), per point with
95% intervals over the repetitions, per algorithm pair against the study's targets; the
study's outcome (:class:`Validation`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ccfair.analysis.stats import ci95
from ccfair.results.run import RunResult

#: The study's targets (issue: fidelity across the grid): median and largest difference of a
#: flow's share between the backends, in percentage points.
TARGET_MEDIAN_PP = 3.0


TARGET_MAX_PP = 10.0


#: The target for a queue discipline's queueing delay: the 95th percentile of the sojourn at
#: each link with a discipline within 20% between the backends (relative to the simulator).
TARGET_SOJOURN_REL = 0.20

#: The sojourn percentiles compared (link_summary columns, docs/results.md).
SOJOURN_COLUMNS = ("sojourn_p50_ms", "sojourn_p95_ms", "sojourn_p99_ms")


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
        link_runs: one row per point, repetition and direction of a link with a queue
            discipline: the sojourn percentiles, marks and drops on both backends
            (:func:`compare_links`).
        link_points: those per point over the repetitions, with the relative difference of
            the 95th percentile (:func:`summarize_link_points`); empty without disciplines.
    """

    runs: pd.DataFrame
    points: pd.DataFrame
    summary: pd.DataFrame
    out: Path | None = None
    figures: list[Path] = field(default_factory=list)
    link_runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    link_points: pd.DataFrame = field(default_factory=pd.DataFrame)

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
                "sim_share_%": pm(p["share_sim_mean"], p["share_sim_ci"]),
                "kernel_share_%": pm(p["share_kernel_mean"], p["share_kernel_ci"]),
                "diff_pp": (100 * p["share_diff"]).round(1),
                "overlap": p["ci_overlap"].map({True: "yes", False: "NO"}),
                "sim_Mbps": p["goodput_sim_mbps"].round(2),
                "kernel_Mbps": p["goodput_kernel_mbps"].round(2),
            }
        )
        lines = [table.to_string(index=False), "", self.summary.to_string(index=False)]
        if not self.link_points.empty:
            lp = self.link_points
            sojourn = pd.DataFrame(
                {
                    "point": lp["point"],
                    "link": lp["link"] + " " + lp["direction"],
                    "queue": lp["queue"],
                    "sim_p95_ms": lp["sojourn_p95_sim_ms"].round(2),
                    "kernel_p95_ms": lp["sojourn_p95_kernel_ms"].round(2),
                    "diff_%": (100 * lp["sojourn_p95_rel_diff"]).round(1),
                }
            )
            lines += ["", "sojourn at the queue disciplines:", sojourn.to_string(index=False)]
        bad = self.runs[~self.runs["kernel_reliable"]].drop_duplicates(["point", "rep"])
        for _, r in bad.iterrows():
            lines.append(f"UNRELIABLE kernel run at {r['point']} r{r['rep']}: {r['kernel_flags']}")
        return "\n".join(lines)


def pm(mean: pd.Series, ci: pd.Series) -> list[str]:
    return [
        f"{100 * m:.1f}" + ("" if c != c else f" +- {100 * c:.1f}")
        for m, c in zip(mean, ci, strict=True)
    ]


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


def compare_links(point: str, sim: RunResult, kern: RunResult) -> pd.DataFrame:
    """Per direction of each link with a queue discipline (whose sojourn the simulator
    measures): the sojourn percentiles, the discipline's marks and drops and the drops over
    its limit on both backends. Empty when no link has a discipline. The kernel backend's
    forwarder measures the sojourn as the simulator does; Linux's own qdiscs (the veth path)
    keep no distribution, so there the kernel's percentiles are NaN.

    Example:
        >>> links = compare_links("p", sim_result, kernel_result)  # doctest: +SKIP
    """
    s = sim.link_summary
    if s.empty or "sojourn_p95_ms" not in s.columns:
        return pd.DataFrame()
    s = s[s["sojourn_p95_ms"].notna() & ~s["queue"].astype(str).isin(["droptail", "netem"])]
    if s.empty:
        return pd.DataFrame()
    k = kern.link_summary.set_index(["link_name", "direction"])
    rows = []
    for _, row in s.iterrows():
        key = (row["link_name"], row["direction"])
        kr = k.loc[key] if key in k.index else None
        out = {
            "point": point,
            "link": row["link_name"],
            "direction": row["direction"],
            "queue": str(row["queue"]),
        }
        for col in (*SOJOURN_COLUMNS, "mark_aqm_pkts", "drop_aqm_pkts", "drop_queue_pkts"):
            name = col.removesuffix("_ms").removesuffix("_pkts")
            out[f"{name}_sim"] = float(row[col])
            out[f"{name}_kernel"] = float(kr[col]) if kr is not None else np.nan
        rows.append(out)
    return pd.DataFrame(rows)


def summarize_link_points(link_runs: pd.DataFrame) -> pd.DataFrame:
    """Per point and link direction over the repetitions: the mean sojourn percentiles on
    each backend (kernel: reliable runs only) and the relative difference of the 95th
    percentile's means, kernel / simulator - 1.

    Example:
        >>> runs = pd.DataFrame({"point": "p", "pair": "a vs b", "link": "bottleneck",
        ...     "direction": "ab", "queue": "codel", "rep": [0, 1],
        ...     "sojourn_p50_sim": 3.0, "sojourn_p50_kernel": 3.3,
        ...     "sojourn_p95_sim": [6.0, 6.2], "sojourn_p95_kernel": [6.6, 6.8],
        ...     "sojourn_p99_sim": 9.0, "sojourn_p99_kernel": 9.0,
        ...     "kernel_reliable": True})
        >>> round(float(summarize_link_points(runs).iloc[0]["sojourn_p95_rel_diff"]), 3)
        0.098
    """
    if link_runs.empty:
        return pd.DataFrame()
    rows = []
    keys = ["point", "pair", "link", "direction", "queue"]
    extra = [c for c in link_runs.columns if c.startswith("param_")]
    for key, g in link_runs.groupby(keys, sort=False, observed=True):
        row: dict[str, Any] = dict(zip(keys, key, strict=True))
        row.update({c: g[c].iloc[0] for c in extra})
        reliable = g[g["kernel_reliable"].astype(bool)]
        row["n_kernel"] = len(reliable)
        for col in SOJOURN_COLUMNS:
            name = col.removesuffix("_ms")
            row[f"{name}_sim_ms"] = float(g[f"{name}_sim"].mean())
            vals = reliable[f"{name}_kernel"].dropna()
            row[f"{name}_kernel_ms"] = float(vals.mean()) if len(vals) else np.nan
        sim95 = row["sojourn_p95_sim_ms"]
        row["sojourn_p95_rel_diff"] = (
            row["sojourn_p95_kernel_ms"] / sim95 - 1 if sim95 > 0 else np.nan
        )
        rows.append(row)
    return pd.DataFrame(rows)


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
        row: dict[str, Any] = dict(zip(keys, key, strict=True))
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
    return pd.DataFrame([_pair_row(str(pair), g) for pair, g in [*groups, ("all", points)]])


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
