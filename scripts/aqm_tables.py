"""The tables of the AQM study (docs/validation/aqm/README.md) from a results directory of
its sweep: per algorithm pair the first flow's share of the goodput, and per queue the
bottleneck's sojourn percentiles, each as a mean over the repetitions, per point.

    ccfair sweep docs/validation/aqm/full-sim.toml --out results/aqm-full-sim
    python3 scripts/aqm_tables.py results/aqm-full-sim --csv docs/validation/aqm/sim_points.csv

Prints Markdown; ``--csv`` also writes one row per point (pair, queue, D, alpha) with the
shares, their spread over the repetitions, the sojourn percentiles, the discipline's drops
and marks per second and the retransmissions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

#: The queue labels of the study's grid, in the order of its tables.
QUEUE_ORDER = ["fq_codel", "codel", "codel+ecn", "pie"]


def points(results: Path) -> pd.DataFrame:
    """One row per point: the first flow's share (mean and range over the repetitions), the
    bottleneck's sojourn percentiles (forward direction) and the discipline's counters."""
    from ccfair.results.directory import Results

    res = Results(results)
    flows = res.flows()
    keys = ["ccas", "bottleneck_queue", "delay", "alpha"]
    first = flows[flows["flow_name"] == "flow1"]
    retrans = flows.groupby("run_id")["retrans_pkts"].sum().rename("retrans_pkts")
    ls = res.table("link_summary")
    bn = ls[(ls["link_name"] == "bottleneck") & (ls["direction"] == "ab")].set_index("run_id")
    runs = first.set_index("run_id")[[*keys, "cca", "share_frac"]].join(bn).join(retrans)
    duration_s = 30.0
    runs["aqm_drops_per_s"] = runs["drop_aqm_pkts"] / duration_s
    runs["marks_per_s"] = runs["mark_aqm_pkts"] / duration_s
    runs["limit_drops_per_s"] = runs["drop_queue_pkts"] / duration_s
    g = runs.groupby(keys, observed=True, sort=False)
    out = g.agg(
        flow1_cca=("cca", "first"),
        share_mean=("share_frac", "mean"),
        share_min=("share_frac", "min"),
        share_max=("share_frac", "max"),
        reps=("share_frac", "size"),
        buffer_pkts=("buffer_pkts", "first"),
        sojourn_p50_ms=("sojourn_p50_ms", "mean"),
        sojourn_p95_ms=("sojourn_p95_ms", "mean"),
        sojourn_p99_ms=("sojourn_p99_ms", "mean"),
        aqm_drops_per_s=("aqm_drops_per_s", "mean"),
        marks_per_s=("marks_per_s", "mean"),
        limit_drops_per_s=("limit_drops_per_s", "mean"),
        retrans_pkts=("retrans_pkts", "mean"),
    ).reset_index()
    return out


def _grid(df: pd.DataFrame, value: str, fmt: str) -> str:
    """A Markdown table: rows queue x D, columns alpha."""
    alphas = sorted(df["alpha"].astype(float).unique())
    lines = [
        "| queue | D | " + " | ".join(f"{a:g}" for a in alphas) + " |",
        "|---|---|" + "---|" * len(alphas),
    ]
    for queue in [q for q in QUEUE_ORDER if q in set(df["bottleneck_queue"])]:
        for delay in sorted(df["delay"].unique(), key=lambda d: float(d.rstrip("ms"))):
            sub = df[(df["bottleneck_queue"] == queue) & (df["delay"] == delay)]
            by_alpha = dict(zip(sub["alpha"].astype(float), sub[value], strict=True))
            cells = [fmt.format(by_alpha[a]) if a in by_alpha else "" for a in alphas]
            lines.append(f"| {queue} | {delay} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(pts: pd.DataFrame) -> str:
    """The README's tables: per pair the first flow's share (%), then per pair the sojourn's
    95th percentile (ms), then per queue the median over the pairs of the 50th/95th/99th."""
    parts = []
    for pair, df in pts.groupby("ccas", sort=False, observed=True):
        a, b = str(pair).split("-")
        parts += [
            f"#### {a} vs {b}: {a}'s share (%)",
            "",
            _grid(df.assign(pct=100 * df["share_mean"]), "pct", "{:.1f}"),
            "",
        ]
    for pair, df in pts.groupby("ccas", sort=False, observed=True):
        a, b = str(pair).split("-")
        parts += [
            f"#### {a} vs {b}: sojourn p95 (ms)",
            "",
            _grid(df, "sojourn_p95_ms", "{:.1f}"),
            "",
        ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="results directory of the study's sweep")
    ap.add_argument("--csv", type=Path, help="write one row per point here")
    args = ap.parse_args(argv)
    if not (args.results / "sweep.json").is_file():
        print(f"error: {args.results} is not a sweep's results directory", file=sys.stderr)
        return 2
    pts = points(args.results)
    if args.csv is not None:
        pts.round(4).to_csv(args.csv, index=False)
    print(markdown(pts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
