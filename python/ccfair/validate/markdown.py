"""The study's report section (Markdown): the targets, the summary per algorithm pair, the
points beyond the targets, flagged kernel runs and the figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ccfair.validate.compare import (
    TARGET_MAX_PP,
    TARGET_MEDIAN_PP,
    TARGET_SOJOURN_REL,
    Validation,
    flagged_points,
    pm,
)


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


def _sojourn_section(lp: pd.DataFrame) -> list[str]:
    """The queueing delay at the links with a queue discipline, as report lines (none
    without such links)."""
    if lp.empty:
        return []
    rel = lp["sojourn_p95_rel_diff"].abs().dropna()
    if len(rel):
        verdict = "met" if rel.max() <= TARGET_SOJOURN_REL else "not met"
        summary = (
            f"**{verdict}** (median {100 * rel.median():.1f}%, largest {100 * rel.max():.1f}%, "
            f"{int((rel > TARGET_SOJOURN_REL).sum())} of {len(rel)} beyond)"
        )
    else:
        summary = "no Linux sojourn to compare (Linux's own qdiscs keep no distribution)"
    params = [c for c in lp.columns if c.startswith("param_")]
    table = pd.DataFrame({"pair": lp["pair"]})
    for c in params:
        table[c.removeprefix("param_")] = lp[c]
    if not params:
        table.insert(1, "point", lp["point"])
    table["link"] = lp["link"] + " " + lp["direction"]
    table["queue"] = lp["queue"]
    table["n"] = lp["n_kernel"]
    for q in ("50", "95", "99"):
        table[f"sim p{q} ms"] = lp[f"sojourn_p{q}_sim_ms"].round(2)
        table[f"Linux p{q} ms"] = lp[f"sojourn_p{q}_kernel_ms"].round(2)
    table["p95 diff %"] = (100 * lp["sojourn_p95_rel_diff"]).round(1)
    return [
        "### Queueing delay at the queue disciplines",
        "",
        "The sojourn (arrival to the end of serialisation) at each link direction with a queue "
        "discipline, its 50th, 95th and 99th percentiles over the measurement window, means "
        f"over the repetitions. Target: the 95th percentile within "
        f"{100 * TARGET_SOJOURN_REL:g}% of the simulator's: {summary}.",
        "",
        _md_table(table),
        "",
    ]


def _per_point_table(p: pd.DataFrame) -> pd.DataFrame:
    """Every point's row as a reader compares them: shares with intervals side by side, and
    words instead of NaN where no reliable kernel run exists."""
    params = [c for c in p.columns if c.startswith("param_")]
    per_point = pd.DataFrame({"pair": p["pair"]})
    for c in params:
        per_point[c.removeprefix("param_")] = p[c]
    per_point["flow"] = p["flow"]
    per_point["cca"] = p["cca"]
    per_point["n"] = p["n_kernel"]
    per_point["sim share %"] = pm(p["share_sim_mean"], p["share_sim_ci"])
    per_point["Linux share %"] = pm(p["share_kernel_mean"], p["share_kernel_ci"])
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
    return per_point


def _intro_lines(env: dict[str, Any], command: str | None) -> list[str]:
    """The heading, what was compared and how, the command and the environment: what a reader
    needs to trust or repeat the numbers below."""
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
    return parts + ["Environment: " + ", ".join(f"{k} {val}" for k, val in env.items()), ""]


def _summary_lines(s: pd.DataFrame) -> list[str]:
    """The verdict against the targets over all pairs, then the table per pair: the answer
    first, its detail after."""
    overall = s[s["pair"] == "all"].iloc[0]
    verdict = (
        "met"
        if overall["median_abs_diff_pp"] <= TARGET_MEDIAN_PP
        and overall["max_abs_diff_pp"] <= TARGET_MAX_PP
        else "not met"
    )
    return [
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
    ]


def _unreliable_section(runs: pd.DataFrame) -> list[str]:
    """The kernel runs left out of the result, each with its flags, and how far they lie from
    the simulator (none without any)."""
    bad = runs[~runs["kernel_reliable"]].drop_duplicates(["point", "rep"])
    if not len(bad):
        return []
    parts = ["### Kernel runs outside their self-check bounds (after retries)", ""]
    parts += [f"- {r['point']} r{r['rep']}: {r['kernel_flags']}" for _, r in bad.iterrows()]
    parts.append("")
    return parts + _flagged_section(flagged_points(runs))


def _figures_section(v: Validation) -> list[str]:
    """The figures as images, relative to the study's directory so that the report and its
    figures can move together (none without figures)."""
    if not v.figures:
        return []
    parts = ["### Figures", ""]
    base = v.out or Path(".")
    for fig in v.figures:
        rel = fig.relative_to(base) if fig.is_relative_to(base) else fig
        parts.append(f"![{fig.stem}]({rel})")
    parts.append("")
    return parts


def report_section(v: Validation, env: dict[str, Any], command: str | None = None) -> str:
    """The Markdown report section: summary per pair against the targets, the per-point
    table, flagged kernel runs and the figures.

    Example:
        >>> print(report_section(v, {"kernel": "6.18"}))  # doctest: +SKIP
    """
    per_point = _per_point_table(v.points)
    parts = _intro_lines(env, command)
    parts += _summary_lines(v.summary)
    parts += ["### Every point", "", _md_table(per_point), ""]
    parts += _sojourn_section(v.link_points)
    parts += _unreliable_section(v.runs)
    parts += _figures_section(v)
    return "\n".join(parts)
