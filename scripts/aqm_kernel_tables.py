"""The kernel side of the AQM study (docs/validation/aqm/README.md, "Kernel side"): from the
output directory of ``ccfair validate``, the first flow's share on both backends per point,
the differences against the study's targets, and the bottleneck's sojourn percentiles.

    sudo ccfair validate scenarios/validate/aqm.toml --out validation/aqm
    python3 scripts/aqm_kernel_tables.py validation/aqm --csv docs/validation/aqm/kernel_points.csv

Targets (as for drop-tail): the first flow's share within 5 pp of Linux's at the median point
and 10 pp at the largest; the 95th percentile of the bottleneck's sojourn within 20% of
Linux's. Each is reported twice: over the runs that passed the kernel backend's self-checks
(the validation numbers) and over all runs, flagged ones included (the same comparison with
more points, as evidence). Prints Markdown; ``--csv`` writes one row per point.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

#: The study's targets: share differences in percentage points, sojourn p95 relative.
MEDIAN_PP, LARGEST_PP, SOJOURN_P95_REL = 5.0, 10.0, 0.20
QUEUE_ORDER = ["fq_codel", "codel", "codel+ecn", "pie"]
KEYS = ["pair", "param_bottleneck_queue", "param_delay", "param_alpha"]


def _runs(out: Path) -> pd.DataFrame:
    """One row per repetition: the first flow's share on each backend, the bottleneck's
    forward sojourn percentiles on each, and whether the kernel run passed its self-checks."""
    runs = pd.read_csv(out / "validate_runs.csv")
    first = runs[runs["flow"] == "flow1"]
    links = pd.read_csv(out / "validate_link_runs.csv")
    bottleneck = links[(links["link"] == "bottleneck") & (links["direction"] == "ab")]
    cols = ["point", "rep", "sojourn_p50_sim", "sojourn_p50_kernel", "sojourn_p95_sim"]
    cols += ["sojourn_p95_kernel", "sojourn_p99_sim", "sojourn_p99_kernel"]
    return first.merge(bottleneck[cols], on=["point", "rep"], how="left")


def points(out: Path) -> pd.DataFrame:
    """Per point: the first flow's share (%) on each backend as the mean over reliable kernel
    runs and over all, the differences (pp, Linux minus simulator) and the sojourn p95 (ms)."""
    runs = _runs(out)
    runs["share_sim_pct"] = 100 * runs["share_sim"]
    runs["share_kernel_pct"] = 100 * runs["share_kernel"]
    rows = []
    for key, g in runs.groupby(KEYS, sort=False):
        ok = g[g["kernel_reliable"].astype(bool)]
        row = dict(zip(KEYS, key, strict=True))
        row["cca"] = g["cca"].iloc[0]
        row["runs"] = len(g)
        row["reliable_runs"] = len(ok)
        row["share_sim_pct"] = g["share_sim_pct"].mean()
        row["share_kernel_all_pct"] = g["share_kernel_pct"].mean()
        row["share_kernel_reliable_pct"] = ok["share_kernel_pct"].mean() if len(ok) else None
        row["sojourn_p95_sim_ms"] = g["sojourn_p95_sim"].mean()
        row["sojourn_p95_kernel_all_ms"] = g["sojourn_p95_kernel"].mean()
        row["sojourn_p95_kernel_reliable_ms"] = ok["sojourn_p95_kernel"].mean() if len(ok) else None
        rows.append(row)
    pts = pd.DataFrame(rows)
    for which in ("all", "reliable"):
        kernel = pd.to_numeric(pts[f"share_kernel_{which}_pct"])
        pts[f"diff_{which}_pp"] = kernel - pts["share_sim_pct"]
        soj = pd.to_numeric(pts[f"sojourn_p95_kernel_{which}_ms"])
        pts[f"sojourn_p95_rel_{which}"] = (pts["sojourn_p95_sim_ms"] - soj) / soj
    return pts


def summary(pts: pd.DataFrame, which: str) -> pd.DataFrame:
    """Per pair and queue: points compared, the median and largest |difference| of the first
    flow's share (pp), and how many points have the sojourn p95 within 20% of Linux's."""
    rows = []
    groups = [*pts.groupby(["pair", "param_bottleneck_queue"], sort=False)]
    groups.append((("all", "all"), pts))
    for (pair, queue), g in groups:
        d = g[f"diff_{which}_pp"].dropna().abs()
        rel = g[f"sojourn_p95_rel_{which}"].dropna().abs()
        rows.append(
            {
                "pair": pair,
                "queue": queue,
                "points": len(d),
                "median_abs_diff_pp": round(float(d.median()), 1) if len(d) else None,
                "max_abs_diff_pp": round(float(d.max()), 1) if len(d) else None,
                "p95_within_20pct": f"{int((rel <= SOJOURN_P95_REL).sum())} of {len(rel)}",
            }
        )
    return pd.DataFrame(rows)


def _md(df: pd.DataFrame) -> str:
    head = "| " + " | ".join(df.columns) + " |"
    rule = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join("" if pd.isna(v) else str(v) for v in r) + " |" for r in df.values]
    return "\n".join([head, rule, *body])


def markdown(pts: pd.DataFrame) -> str:
    """The study's kernel tables: the summaries (reliable runs, all runs) and every point."""
    out = []
    for which, title in (("reliable", "runs that passed the self-checks"), ("all", "all runs")):
        s = summary(pts, which)
        whole = s.iloc[-1]
        met = (
            whole["points"] > 0
            and whole["median_abs_diff_pp"] <= MEDIAN_PP
            and whole["max_abs_diff_pp"] <= LARGEST_PP
        )
        out.append(f"#### Over {title}: share targets {'met' if met else 'not met'}\n")
        out.append(_md(s) + "\n")
    cols = ["pair", "param_bottleneck_queue", "param_delay", "param_alpha", "reliable_runs"]
    cols += ["share_sim_pct", "share_kernel_all_pct", "diff_all_pp", "sojourn_p95_sim_ms"]
    cols += ["sojourn_p95_kernel_all_ms"]
    table = pts[cols].copy()
    for c in cols[5:]:
        table[c] = pd.to_numeric(table[c]).round(1)
    table.columns = ["pair", "queue", "D", "alpha", "reliable", "sim %", "Linux %", "diff pp"] + [
        "sim p95 ms",
        "Linux p95 ms",
    ]
    out.append("#### Every point (the first flow's share; Linux over all its runs)\n")
    out.append(_md(table))
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("validate_dir", help="the --out directory of ccfair validate")
    p.add_argument("--csv", help="write one row per point to this file")
    args = p.parse_args(argv)
    out = Path(args.validate_dir)
    missing = [n for n in ("validate_runs.csv", "validate_link_runs.csv") if not (out / n).exists()]
    if missing:
        print(
            f"error: {out} has no {', '.join(missing)}: not an output of ccfair validate",
            file=sys.stderr,
        )
        return 2
    try:
        pts = points(out)
    except (KeyError, ValueError, pd.errors.ParserError) as e:
        print(f"error: {out}: its validate tables lack what this needs ({e})", file=sys.stderr)
        return 2
    if pts.empty:
        print(f"error: {out}: no runs in its validate tables", file=sys.stderr)
        return 2
    if args.csv:
        pts.to_csv(args.csv, index=False, float_format="%.4g")
    sys.stdout.write(markdown(pts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
