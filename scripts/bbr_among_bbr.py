"""Tables and figures of docs/validation/bbr-among-bbr/README.md (BBR among BBR flows).

2, 4 and 8 BBR flows on the 50 Mbit/s dumbbell (D = 18 ms), buffers 0.5 to 8 BDP of the
shortest path, equal RTTs or two halves at R and 2R or 4R (scenarios/validate/
bbr-among-bbr.toml). The simulator side is a sweep, the kernel side `ccfair validate`:

    chrt -i 0 ccfair sweep scenarios/validate/bbr-among-bbr.toml --workers 1 \
        --out results/bbr-among-bbr
    sudo ccfair validate scenarios/validate/bbr-among-bbr.toml --out validation/bbr-among-bbr
    python3 scripts/bbr_among_bbr.py tables results/bbr-among-bbr \
        validation/bbr-among-bbr/results --out docs/validation/bbr-among-bbr

`tables` reads one or more results directories (runs of either backend, in any mix; a run
of one backend, point and seed found twice counts once), keeps the runs where every flow is
BBR, and writes per backend and point (number of flows, buffer in BDP of the shortest path,
RTT ratio):
`jain.csv` (Jain's index over the repetitions: median, range, mean and 95% interval),
`shares.csv` (each flow's share, mean and 95% interval), `ranked_shares.csv` (the largest,
second largest, ... share of each run, which is what compares runs of exchangeable flows)
and, with both backends present, `compare.csv` (the target: medians within 0.05, ranked
share intervals overlapping; and, since a median of 3 runs strays by chance where Jain's
index spreads widely between seeds, the 95% spread of the median of as many simulator runs
as Linux had and the chance of a median as far from the simulator's as Linux's). Kernel
runs the self-checks flagged are left out and counted. It prints the Markdown tables of the
README.

    python3 scripts/bbr_among_bbr.py timeseries RESULTS --out DIR [--prefix NAME]

`timeseries` draws, for every run of RESULTS (either backend), one figure of each flow's
time series (goodput per second, cwnd, pacing rate, bandwidth estimate, min_rtt, BBR mode)
and, when the run was traced (`ccfair run --trace`), the bottleneck drops per flow over
time; it prints per flow: share, drops, drop share, retransmissions, RTOs, PROBE_RTT
entries, long-term (policer) bandwidth engagements and the time in each mode.

    python3 scripts/bbr_among_bbr.py mechanisms --out docs/validation/bbr-among-bbr

`mechanisms` runs on the simulator the point of the mechanisms section (4 flows, 0.5 BDP,
equal RTT, 40 s) over seeds 1-10 on the default host and, to isolate mechanisms, with single
host options switched (segmentation offload off; no host latency), prints Jain's index per
seed and the per-flow statistics, and draws the figures of the section (seed 1 traced).

    python3 scripts/bbr_among_bbr.py arrivals KERNEL_RESULTS SIM_RESULTS --out DIR

`arrivals` compares traced runs of the mechanism point (docs/validation/bbr-among-bbr/
mechanism-point.toml, `--trace flow1 ... flow4`) of either backend: per flow its drops per
packet delivered, the fraction of 0.5-s windows at the long-term estimator's loss threshold,
burst sizes, how often a burst trails another flow's packet at the bottleneck and what that
costs, data packets per ACK, RTOs and time in Recovery (`arrivals_flows.csv`); per run the
order in which two flows' packets entered the network by the gap between them
(`arrivals_order.csv`); and `arrivals.png`.

    python3 scripts/bbr_among_bbr.py seeds --repetitions 20 --out results/bbr-among-bbr-20

`seeds` runs the study's grid on the simulator with more seeds per point (1 to N), so that
`tables` compares Linux's runs with the simulator's spread, not with three runs of it.

    python3 scripts/bbr_among_bbr.py losses --out docs/validation/bbr-among-bbr

`losses` reruns on the simulator the BBR-vs-BBR points at 0.5 BDP of the 10 Mbit/s parking
lot studies (docs/validation/2hop-10m, docs/validation/10hop), on the default host and with
segmentation offload off, and compares their retransmissions with those studies' Linux runs.

    python3 scripts/bbr_among_bbr.py timing KERNEL_RESULTS... --out DIR [--seeds 20]

`timing` takes the Linux runs of the grid's 8-flow point with RTTs 40 and 160 ms at 0.5 BDP
(scenarios/validate/bbr-8flow-4r-point.toml adds repetitions) and runs the simulator there
on the default host and with the hosts' timing changed (exact timing, offload off; BBR
without its long-term estimator for scale), seeds 1 to N each. It writes, per run, Jain's
index, the long-RTT half's share and Jain's index in time windows (`timing_point.csv`,
`timing_point.png`) and prints the table of medians per group, Linux's runs that passed the
self-checks apart from the flagged ones.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import ccfair  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from ccfair.analysis.stats import ci95  # noqa: E402
from ccfair.errors import ResultsError  # noqa: E402

#: The target of the study: the simulator's median Jain's index within this of Linux's.
JAIN_TOLERANCE = 0.05
MODES = ["STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"]
POINT = ["n_flows", "buffer_bdp", "rtt_ratio"]


class Refused(Exception):
    """An input the script cannot use: one line on stderr, exit status 2."""


def jain_index(goodputs: Sequence[float]) -> float:
    """Jain's fairness index of the flows' goodputs: (sum x)^2 / (n sum x^2).

    Example:
        >>> jain_index([10.0, 10.0]), round(jain_index([30.0, 10.0]), 3)
        (1.0, 0.8)
    """
    x = np.asarray(goodputs, dtype=float)
    denom = len(x) * float((x**2).sum())
    return float(x.sum() ** 2 / denom) if denom > 0 else float("nan")


def _bottleneck(spec: dict) -> dict:
    links = [link for link in spec.get("links", []) if link.get("name") == "bottleneck"]
    if not links:
        raise Refused("a run has no link named bottleneck: not a dumbbell of this study")
    return links[0]


def load_study_runs(dirs: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runs (one row each: backend, point, seed, reliable, Jain's index) and their flows
    (share, base RTT, rank) of every all-BBR dumbbell run in ``dirs``."""
    runs_parts, flows_parts = [], []
    for d in dirs:
        path = Path(d)
        if not path.is_dir():
            raise Refused(f"{d}: no such directory")
        if not (path / "runs").is_dir():
            raise Refused(f"{d} is not a results directory (no runs/ folder)")
        try:
            runs_parts.append(ccfair.load_table(path, "runs"))
            flows_parts.append(ccfair.load_table(path, "flows"))
        except ResultsError as exc:
            raise Refused(f"{d}: {exc}") from None
    runs = pd.concat(runs_parts).drop_duplicates("run_id")
    flows = pd.concat(flows_parts).drop_duplicates(["run_id", "flow"])
    bbr_only = flows.groupby("run_id")["cca"].agg(lambda c: bool((c == "bbr").all()))
    runs = runs[runs.run_id.map(bbr_only).fillna(False).astype(bool)].copy()
    if runs.empty:
        raise Refused(f"{', '.join(dirs)}: no run where every flow is BBR")
    runs["buffer_bdp"] = [
        float(_bottleneck(json.loads(s)).get("buffer_bdp", math.nan)) for s in runs.spec_json
    ]
    flows = flows[flows.run_id.isin(runs.run_id)].copy()
    rtt = flows.groupby("run_id")["base_rtt_ms"].agg(["min", "max"])
    ratio = (rtt["max"] / rtt["min"]).round(2)
    runs["rtt_ratio"] = runs.run_id.map(ratio)
    runs["backend"] = runs.backend.astype(str)
    runs["reliable"] = runs.reliable.fillna(True).astype(bool)
    # One run per backend, point and seed: a sweep's simulator run and the one `ccfair
    # validate` made at the kernel's HZ (the same model, another run id) count once; the
    # later directory's is kept.
    runs = runs.drop_duplicates(["backend", *POINT, "seed"], keep="last")
    flows = flows[flows.run_id.isin(runs.run_id)].copy()
    runs["jain"] = runs.run_id.map(flows.groupby("run_id")["goodput_mbps"].agg(jain_index))
    runs["goodput_mbps"] = runs.run_id.map(flows.groupby("run_id")["goodput_mbps"].sum())
    flows["share"] = flows.goodput_mbps / flows.run_id.map(runs.set_index("run_id").goodput_mbps)
    flows["rank"] = flows.groupby("run_id")["share"].rank(ascending=False, method="first")
    flows["rank"] = flows["rank"].astype(int)
    for key in ("backend", "reliable", *POINT, "seed"):
        flows[key] = flows.run_id.map(runs.set_index("run_id")[key])
    return runs.reset_index(drop=True), flows.reset_index(drop=True)


def _interval(values: pd.Series) -> tuple[float, float]:
    v = values.dropna().to_numpy(dtype=float)
    if len(v) == 0:
        return math.nan, math.nan
    return float(v.mean()), (float(ci95(v)) if len(v) > 1 else math.nan)


def jain_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per backend and point: reliable runs, flagged runs, Jain's median, range, mean and
    95% interval (half-width) over the reliable runs."""
    rows = []
    for (backend, *point), g in runs.groupby(["backend", *POINT]):
        ok = g[g.reliable]
        mean, ci = _interval(ok.jain)
        rows.append(
            {
                "backend": backend,
                **dict(zip(POINT, point, strict=True)),
                "n_runs": len(ok),
                "n_flagged": int((~g.reliable).sum()),
                "jain_median": float(ok.jain.median()) if len(ok) else math.nan,
                "jain_min": float(ok.jain.min()) if len(ok) else math.nan,
                "jain_max": float(ok.jain.max()) if len(ok) else math.nan,
                "jain_mean": mean,
                "jain_ci95": ci,
            }
        )
    return pd.DataFrame(rows)


def share_table(flows: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per backend, point and flow (``by="flow_name"``) or rank (``by="rank"``): the share's
    mean, 95% interval, range over the reliable runs, and the flow's base RTT."""
    ok = flows[flows.reliable]
    rows = []
    for (backend, *point, key), g in ok.groupby(["backend", *POINT, by]):
        mean, ci = _interval(g.share)
        rows.append(
            {
                "backend": backend,
                **dict(zip(POINT, point, strict=True)),
                by: key,
                "base_rtt_ms": float(g.base_rtt_ms.mean()) if by == "flow_name" else math.nan,
                "n_runs": len(g),
                "share_mean": mean,
                "share_ci95": ci,
                "share_min": float(g.share.min()),
                "share_max": float(g.share.max()),
            }
        )
    out = pd.DataFrame(rows)
    if by == "rank":
        out = out.drop(columns="base_rtt_ms")
    return out


def grid_mechanisms(flows: pd.DataFrame) -> pd.DataFrame:
    """Per backend and point (reliable runs): long-term (policer) bandwidth engagements per
    flow (NaN where the backend cannot read them), retransmitted fraction of the data sent,
    and the share of the long-RTT half of the flows (NaN with equal RTTs)."""
    f = flows[flows.reliable].copy()
    f["retrans_frac"] = f.retrans_pkts / f.data_sent_pkts
    f["long"] = f.base_rtt_ms > f.groupby("run_id").base_rtt_ms.transform("min")
    keys = ["backend", *POINT]
    g = f.groupby(keys)
    out = pd.DataFrame(
        {
            "lt_bw_engagements_per_flow": g.bbr_lt_bw_engagement_count.mean(),
            "retrans_frac": g.retrans_frac.mean(),
            "probe_rtt_entries_per_flow": g.bbr_probe_rtt_entry_count.mean(),
        }
    )
    long_share = f[f.long].groupby([*keys, "run_id"]).share.sum().groupby(keys).mean()
    out["long_half_share"] = long_share.reindex(out.index)
    return out.reset_index()


def _overlap(a_mean: float, a_ci: float, b_mean: float, b_ci: float) -> bool:
    """Do two intervals mean +- ci overlap (a missing interval: the mean is the point)?"""
    a_ci = 0.0 if math.isnan(a_ci) else a_ci
    b_ci = 0.0 if math.isnan(b_ci) else b_ci
    return abs(a_mean - b_mean) <= a_ci + b_ci


#: Beyond this many n-subsets of the simulator's runs, a fixed sample of them is drawn.
MAX_SUBSETS = 100_000


def _subset_medians(values: np.ndarray, n: int) -> np.ndarray:
    """The median of every ``n``-subset of ``values`` (drawn without replacement); beyond
    `MAX_SUBSETS` subsets, of that many drawn with a fixed seed (same input, same answer)."""
    if math.comb(len(values), n) <= MAX_SUBSETS:
        return np.array([np.median(c) for c in itertools.combinations(values, n)])
    rng = np.random.default_rng(0)
    draws = [rng.choice(values, size=n, replace=False) for _ in range(MAX_SUBSETS)]
    return np.median(np.array(draws), axis=1)


def _finite(values: Sequence[float]) -> np.ndarray:
    return np.sort(np.asarray([x for x in values if not math.isnan(x)], dtype=float))


def median_of_n_spread(values: Sequence[float], n: int) -> tuple[float, float]:
    """How far the median of ``n`` runs strays by chance: the 2.5% and 97.5% quantiles of the
    median of the ``n``-subsets of ``values`` (the simulator's runs of one point). NaN when
    there are fewer than ``n`` values.

    Example:
        >>> median_of_n_spread([0.7, 0.8, 0.9, 1.0], 3)
        (0.8, 0.9)
    """
    v = _finite(values)
    if n < 1 or len(v) < n:
        return math.nan, math.nan
    low, high = np.quantile(_subset_medians(v, n), [0.025, 0.975])
    return round(float(low), 10), round(float(high), 10)


def chance_of_median_as_far(values: Sequence[float], n: int, linux_median: float) -> float:
    """The fraction of ``n``-subsets of the simulator's runs whose median is at least as far
    from the median of all runs as ``linux_median`` is: the chance that ``n`` simulator runs
    differ as much as Linux's did (two-sided; NaN when undefined).

    Example:
        >>> chance_of_median_as_far([0.7, 0.8, 0.9, 1.0], 1, 1.0)
        0.5
    """
    v = _finite(values)
    if n < 1 or len(v) < n or math.isnan(linux_median):
        return math.nan
    center = float(np.median(v))
    far = np.abs(_subset_medians(v, n) - center) >= abs(linux_median - center) - 1e-12
    return float(far.mean())


def compare_table(
    jain: pd.DataFrame, ranked: pd.DataFrame, runs: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per point with runs of the simulator and of a Linux backend: the medians of Jain's
    index, their difference (Linux minus simulator), whether it is within the tolerance,
    and whether every rank's share interval overlaps. Given the ``runs``, also how far the
    median of as many simulator runs as Linux had strays by chance (`median_of_n_spread`)
    and the chance of a median as far from the simulator's as Linux's."""
    sim = jain[jain.backend == "sim"].set_index(POINT)
    rows = []
    for linux_backend in sorted(set(jain.backend) - {"sim"}):
        lin = jain[jain.backend == linux_backend].set_index(POINT)
        for point in lin.index.intersection(sim.index):
            s, k = sim.loc[point], lin.loc[point]
            key = dict(zip(POINT, point, strict=True))
            rs = ranked[(ranked.backend == "sim")].set_index([*POINT, "rank"])
            rk = ranked[(ranked.backend == linux_backend)].set_index([*POINT, "rank"])
            overlap = True
            for rank in range(1, int(point[0]) + 1):
                idx = (*point, rank)
                if idx in rs.index and idx in rk.index:
                    a, b = rs.loc[idx], rk.loc[idx]
                    overlap &= _overlap(a.share_mean, a.share_ci95, b.share_mean, b.share_ci95)
            reliable = int(k.n_runs) > 0
            diff = float(k.jain_median - s.jain_median) if reliable else math.nan
            spread = {}
            if runs is not None:
                at = (runs.backend == "sim") & runs.reliable
                for col, value in zip(POINT, point, strict=True):
                    at &= runs[col] == value
                sim_jains = runs[at].jain.tolist()
                n_linux = int(k.n_runs)
                low, high = median_of_n_spread(sim_jains, n_linux)
                chance = chance_of_median_as_far(sim_jains, n_linux, float(k.jain_median))
                spread = {
                    "sim_median_of_n_low": low,
                    "sim_median_of_n_high": high,
                    "chance_as_far": chance,
                    "linux_within_sim_spread": bool(low <= k.jain_median <= high),
                }
            rows.append(
                {
                    **key,
                    "linux_backend": linux_backend,
                    "n_sim": int(s.n_runs),
                    "n_linux": int(k.n_runs),
                    "n_linux_flagged": int(k.n_flagged),
                    "jain_median_sim": float(s.jain_median),
                    "jain_median_linux": float(k.jain_median),
                    "jain_diff": diff,
                    "within_tolerance": reliable and abs(diff) <= JAIN_TOLERANCE,
                    "ranked_shares_overlap": reliable and overlap,
                    **spread,
                }
            )
    return pd.DataFrame(rows)


def _fmt(x: float, digits: int = 2) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _ratio_name(r: float) -> str:
    return "equal" if r == 1 else f"{r:g}R"


def markdown_jain(jain: pd.DataFrame, backend: str) -> str:
    """Rows: flows and RTTs; columns: buffers; cells: median (min-max; mean ± 95% interval)
    and the number of runs."""
    j = jain[jain.backend == backend]
    buffers = sorted(j.buffer_bdp.unique())
    lines = [
        "| flows | RTTs | " + " | ".join(f"{b:g} BDP" for b in buffers) + " |",
        "|---|---|" + "---|" * len(buffers),
    ]
    for (n, ratio), g in j.groupby(["n_flows", "rtt_ratio"]):
        cells = []
        for b in buffers:
            row = g[g.buffer_bdp == b]
            if row.empty:
                cells.append("")
                continue
            r = row.iloc[0]
            cells.append(
                f"{_fmt(r.jain_median)} ({_fmt(r.jain_min)}-{_fmt(r.jain_max)}; "
                f"{_fmt(r.jain_mean)}±{_fmt(r.jain_ci95)}) n={r.n_runs}"
            )
        lines.append(f"| {n} | {_ratio_name(ratio)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_shares(shares: pd.DataFrame, backend: str) -> str:
    """Rows: points; cells: each flow's share mean +- 95% interval, short-RTT flows first."""
    s = shares[shares.backend == backend]
    lines = ["| flows | RTTs | buffer | shares (flow1, flow2, ...: mean +- 95% interval) |"]
    lines.append("|---|---|---|---|")
    for (n, ratio, b), g in s.groupby(["n_flows", "rtt_ratio", "buffer_bdp"]):
        g = g.assign(i=g.flow_name.str.removeprefix("flow").astype(int)).sort_values("i")
        cells = ", ".join(f"{r.share_mean:.3f}+-{_fmt(r.share_ci95, 3)}" for r in g.itertuples())
        lines.append(f"| {n} | {_ratio_name(ratio)} | {b:g} | {cells} |")
    return "\n".join(lines)


def markdown_ranked(ranked: pd.DataFrame, backend: str) -> str:
    """Rows: points; cells: the largest, second, ... share, mean +- 95% interval."""
    s = ranked[ranked.backend == backend]
    lines = ["| flows | RTTs | buffer | ranked shares (largest first: mean +- 95% interval) |"]
    lines.append("|---|---|---|---|")
    for (n, ratio, b), g in s.groupby(["n_flows", "rtt_ratio", "buffer_bdp"]):
        cells = ", ".join(
            f"{r.share_mean:.3f}+-{_fmt(r.share_ci95, 3)}"
            for r in g.sort_values("rank").itertuples()
        )
        lines.append(f"| {n} | {_ratio_name(ratio)} | {b:g} | {cells} |")
    return "\n".join(lines)


def markdown_compare(comp: pd.DataFrame) -> str:
    """Rows: points; cells: the simulator's median Jain's index over its runs and the 95%
    spread of a median of as many runs as Linux had, Linux's median (reliable runs, flagged
    runs), the difference, whether it is within the tolerance, the chance of a difference as
    large, and whether the ranked share intervals overlap."""
    lines = [
        "| flows | RTTs | buffer | simulator: median (n; median of n_linux runs: 95% spread) "
        f"| Linux: median (n, flagged) | Linux - simulator | within {JAIN_TOLERANCE} | chance "
        "| ranked shares overlap |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in comp.sort_values(["n_flows", "rtt_ratio", "buffer_bdp"]).itertuples():
        lines.append(
            f"| {r.n_flows} | {_ratio_name(r.rtt_ratio)} | {r.buffer_bdp:g} | "
            f"{_fmt(r.jain_median_sim)} ({r.n_sim}; {_fmt(r.sim_median_of_n_low)}-"
            f"{_fmt(r.sim_median_of_n_high)}) | {_fmt(r.jain_median_linux)} ({r.n_linux}, "
            f"{r.n_linux_flagged}) | {_fmt(r.jain_diff)} | "
            f"{'yes' if r.within_tolerance else '**no**'} | {_fmt(r.chance_as_far)} | "
            f"{'yes' if r.ranked_shares_overlap else 'no'} |"
        )
    return "\n".join(lines)


def draw_jain(jain: pd.DataFrame, path: Path) -> None:
    """Jain's index over the buffer, one panel per number of flows, one line per RTT split
    and backend: the median with the range of the repetitions."""
    counts = sorted(jain.n_flows.unique())
    fig, axes = plt.subplots(1, len(counts), figsize=(3.3 * len(counts), 3), sharey=True)
    axes = np.atleast_1d(axes)
    styles = {"sim": "-", "kernel": "--", "veth": ":"}
    for ax, n in zip(axes, counts, strict=True):
        for i, ratio in enumerate(sorted(jain.rtt_ratio.unique())):
            for backend, g in jain[(jain.n_flows == n) & (jain.rtt_ratio == ratio)].groupby(
                "backend"
            ):
                g = g.sort_values("buffer_bdp")
                x = g.buffer_bdp * (1 + 0.04 * (i - 1))
                err = [g.jain_median - g.jain_min, g.jain_max - g.jain_median]
                ax.errorbar(
                    x,
                    g.jain_median,
                    yerr=err,
                    fmt="o" + styles.get(backend, "-."),
                    ms=3,
                    color=f"C{i}",
                    capsize=2,
                    lw=1,
                    label=f"{_ratio_name(ratio)}, {backend}",
                )
        ax.set_xscale("log", base=2)
        ax.set_xticks([0.5, 1, 2, 8], ["0.5", "1", "2", "8"])
        ax.set_xlabel("buffer (BDP of the 40 ms path)")
        ax.set_title(f"{n} BBR flows", fontsize=9)
    axes[0].set_ylabel("Jain's index (median, range)")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def cmd_tables(args: argparse.Namespace) -> None:
    runs, flows = load_study_runs(args.results)
    jain = jain_table(runs)
    shares = share_table(flows, "flow_name")
    ranked = share_table(flows, "rank")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jain.to_csv(out / "jain.csv", index=False, float_format="%.4f")
    shares.to_csv(out / "shares.csv", index=False, float_format="%.4f")
    ranked.to_csv(out / "ranked_shares.csv", index=False, float_format="%.4f")
    grid_mechanisms(flows).to_csv(out / "grid_mechanisms.csv", index=False, float_format="%.4f")
    draw_jain(jain, out / "jain.png")
    text = []
    for backend in sorted(jain.backend.unique()):
        text += [f"### Jain's index, {backend}", "", markdown_jain(jain, backend), ""]
    comp = compare_table(jain, ranked, runs)
    if not comp.empty:
        comp.to_csv(out / "compare.csv", index=False, float_format="%.4f")
        met = int(comp.within_tolerance.sum())
        have = int((comp.n_linux > 0).sum())
        missed = comp[(comp.n_linux > 0) & ~comp.within_tolerance]
        text += [
            f"Target (median within {JAIN_TOLERANCE}): met at {met} of {have} points with a "
            f"reliable Linux run; ranked share intervals overlap at "
            f"{int(comp.ranked_shares_overlap.sum())}. Of the {len(missed)} misses, Linux's "
            f"median lies within the 95% spread of the median of as many simulator runs at "
            f"{int(missed.linux_within_sim_spread.sum())}.",
            "",
            markdown_compare(comp),
            "",
        ]
    for backend in sorted(jain.backend.unique()):
        text += [f"### Per-flow shares, {backend}", "", markdown_shares(shares, backend), ""]
        text += [f"### Ranked shares, {backend}", "", markdown_ranked(ranked, backend), ""]
    (out / "tables.md").write_text("\n".join(text))
    print("\n".join(text))


# -------------------------------------------------------------------------- time series


def flow_stats(r: ccfair.RunResult) -> pd.DataFrame:
    """Per flow of a run: share, bottleneck drops (from its trace, if any), retransmissions,
    RTOs, PROBE_RTT entries, long-term bandwidth engagements, time in each mode."""
    f = r.flows.set_index("flow_name")
    out = pd.DataFrame(index=f.index)
    out["share"] = f.goodput_mbps / f.goodput_mbps.sum()
    out["goodput_mbps"] = f.goodput_mbps
    out["retrans_pkts"] = f.retrans_pkts
    out["rto_count"] = f.rto_count
    out["recovery_count"] = f.recovery_count
    out["probe_rtt_entries"] = f.bbr_probe_rtt_entry_count
    out["lt_bw_engagements"] = f.bbr_lt_bw_engagement_count
    drops = _bottleneck_drops(r)
    if drops is not None:
        counts = drops.groupby("flow_name").size()
        out["drops"] = counts.reindex(out.index).fillna(0).astype(int)
        out["drop_share"] = out.drops / max(int(out.drops.sum()), 1)
        out = out.join(burst_drop_fracs(r.trace))
    ts = r.timeseries
    for mode in MODES:
        frac = ts.groupby("flow_name")["cca_state"].agg(lambda s, m=mode: float((s == m).mean()))
        out[f"time_{mode.lower()}_frac"] = frac.reindex(out.index)
    out["lt_use_bw_frac"] = ts.groupby("flow_name")["bbr_lt_use_bw"].mean().reindex(out.index)
    out["gain_flat_1s_frac"] = (
        ts.groupby("flow_name")["bbr_pacing_gain"].agg(gain_flat_frac).reindex(out.index)
    )
    out["recovery_frac"] = (
        ts.groupby("flow_name")["tcp_ca_state"]
        .agg(lambda s: float(s.isin(["Recovery", "Loss"]).mean()))
        .reindex(out.index)
    )
    return out


def gain_flat_frac(pacing_gain: pd.Series, window: int = 100) -> float:
    """The fraction of samples in a window of ``window`` samples (1 s at 10 ms) where the
    pacing gain stays at exactly 1.0: the sign of the long-term (policer) rate in use, which
    Linux's TCP_CC_INFO shows too (``bbr_update_gains`` holds the gain at 1.0 while
    ``lt_use_bw``; a cycling flow passes 1.25 and 0.75 every 8 phases of one min_rtt).

    Example:
        >>> round(gain_flat_frac(pd.Series([1.0] * 300 + [1.25, 0.75] * 50), window=100), 2)
        0.5
    """
    g = pacing_gain.to_numpy(dtype=float)
    if len(g) < window:
        return float("nan")
    flat = pd.Series(g == 1.0).rolling(window).min().to_numpy()
    return float(np.nanmean(flat[window - 1 :] == 1.0) * (len(g) - window + 1) / len(g))


#: Two data packets of a flow that reach the bottleneck less than this apart came in one
#: burst (one GSO skb split back to back: 12 us per packet on a 1 Gbit/s access link).
BURST_GAP_NS = 20_000


def burst_drop_fracs(trace: pd.DataFrame) -> pd.DataFrame:
    """Per flow, the fraction of its data packets offered to the bottleneck that were
    dropped, for packets that lead a burst (``drop_frac_lead``) and for packets that follow
    another of the same flow within :data:`BURST_GAP_NS` (``drop_frac_follow``)."""
    t = trace[
        (trace.link_name == "bottleneck")
        & (trace.kind == "data")
        & trace.event.isin(["enqueue", "drop_queue"])
    ].sort_values("t_ns")
    gap = t.groupby("flow_name").t_ns.diff()
    follow = gap < BURST_GAP_NS
    dropped = t.event == "drop_queue"
    return pd.DataFrame(
        {
            "drop_frac_lead": dropped[~follow].groupby(t.flow_name[~follow]).mean(),
            "drop_frac_follow": dropped[follow].groupby(t.flow_name[follow]).mean(),
        }
    )


def _bottleneck_drops(r: ccfair.RunResult) -> pd.DataFrame | None:
    if r.trace is None or len(r.trace) == 0:
        return None
    t = r.trace
    return t[(t.link_name == "bottleneck") & (t.event == "drop_queue") & (t.kind == "data")]


def draw_timeseries(
    r: ccfair.RunResult, path: Path, title: str, window_s: tuple[float, float]
) -> None:
    """One figure of a run: per flow, goodput (1 s), cwnd, pacing rate, bandwidth estimate,
    min_rtt and mode, and the bottleneck's drops per flow (traced runs)."""
    ts = r.timeseries.copy()
    # Goodput over the last second, computed before the window is cut.
    ts["goodput_1s_mbps"] = ts.groupby("flow_name")["goodput_mbps"].transform(
        lambda g: g.rolling(100, min_periods=1).mean()
    )
    ts = ts[(ts.t_s >= window_s[0]) & (ts.t_s <= window_s[1])]
    drops = _bottleneck_drops(r)
    panels = 6 if drops is not None else 5
    fig, axes = plt.subplots(panels, 1, figsize=(8, 1.6 * panels + 0.6), sharex=True)
    names = sorted(ts.flow_name.unique(), key=lambda n: int(n.removeprefix("flow")))
    colours = plt.get_cmap("tab10")
    for i, name in enumerate(names):
        g = ts[ts.flow_name == name]
        c = colours(i)
        axes[0].plot(g.t_s, g.goodput_1s_mbps, color=c, lw=0.8, label=name)
        axes[1].plot(g.t_s, g.cwnd_pkts, color=c, lw=0.6)
        axes[2].plot(g.t_s, g.pacing_rate_mbps, color=c, lw=0.6)
        axes[3].plot(g.t_s, g.bbr_btl_bw_mbps, color=c, lw=0.8)
        lt = g.bbr_lt_use_bw.fillna(0).to_numpy() > 0
        axes[3].plot(g.t_s[lt], g.bbr_btl_bw_mbps[lt], ".", color=c, ms=1.5)
        axes[4].plot(g.t_s, g.bbr_rtprop_ms, color=c, lw=0.8)
        probe_rtt = g[g.cca_state == "PROBE_RTT"]
        axes[4].plot(probe_rtt.t_s, probe_rtt.bbr_rtprop_ms, "|", color=c, ms=8)
        if drops is not None:
            d = drops[(drops.flow_name == name) & drops.t_s.between(*window_s)]
            bins = np.arange(window_s[0], window_s[1] + 0.1, 0.1)
            h, _ = np.histogram(d.t_s, bins=bins)
            axes[5].step(bins[:-1], h, where="post", color=c, lw=0.7)
    axes[0].set_ylabel("goodput\n1 s (Mbit/s)")
    axes[0].legend(fontsize=7, ncol=min(len(names), 8), loc="upper right")
    axes[1].set_ylabel("cwnd (pkts)")
    axes[2].set_ylabel("pacing\n(Mbit/s)")
    axes[3].set_ylabel("bw estimate\n(Mbit/s; dots:\nlt_bw in use)", fontsize=8)
    axes[4].set_ylabel("min_rtt (ms)\n| PROBE_RTT")
    if drops is not None:
        axes[5].set_ylabel("drops\nper 100 ms")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _load_runs_with_traces(d: Path) -> list[ccfair.RunResult]:
    if not (d / "runs").is_dir():
        raise Refused(f"{d} is not a results directory (no runs/ folder)")
    out = []
    for rid in sorted(p.stem for p in (d / "runs").glob("*.parquet")):
        r = ccfair.load(d, rid)
        trace = d / "trace" / f"{rid}.parquet"
        if trace.is_file():
            r = dataclasses.replace(r, trace=pd.read_parquet(trace))
        out.append(r)
    if not out:
        raise Refused(f"{d}: no finished runs")
    return out


def cmd_timeseries(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for r in _load_runs_with_traces(Path(args.results)):
        backend = str(r.runs.backend.iloc[0])
        name = f"{args.prefix}-{backend}-{r.run_id}.png"
        jain = jain_index(r.flows.goodput_mbps)
        duration_s = float(r.runs.duration_s.iloc[0])
        title = f"{backend} run {r.run_id}: Jain {jain:.3f}"
        draw_timeseries(r, out / name, title, (0.0, duration_s))
        print(f"{name}: Jain {jain:.3f}")
        print(flow_stats(r).round(3).to_string())


# -------------------------------------------------------------------------- mechanisms

#: Variants of the mechanisms point: the default (testbed linux-stock, Linux 6.18) and the
#: same scenario with one thing switched, to see which mechanism moves Jain's index. They are
#: diagnostics of the model, not candidate defaults: segmentation offload off, no modelled
#: host latency, the idealised host (testbed ideal), and BBR without its long-term
#: (policer) bandwidth estimator (bbr_lt_bw_sampling).
VARIANTS: dict[str, dict] = {
    "default": {},
    "tso off": {"tcp": {"tso": "off"}},
    "no host latency": {"tcp": {"host_latency": "none", "app_latency": "none"}},
    "ideal host": {"testbed": "ideal"},
    "lt_bw off": {"cca_params": {"lt_bw": False}},
}


def mechanism_scenario(seed: int, variant: dict) -> ccfair.Scenario:
    """The mechanisms point: 4 BBR flows, 0.5 BDP, equal RTT (40 ms), 40 s."""
    return ccfair.dumbbell(4, "bbr", buffer_bdp=0.5, duration="40s", seed=seed, **variant)


def cmd_mechanisms(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, stats = [], []
    for variant, kwargs in VARIANTS.items():
        for seed in range(1, args.seeds + 1):
            traced = seed == 1 and variant == "default"
            sc = mechanism_scenario(seed, kwargs)
            if traced:
                r = ccfair.run(sc, trace=[f"flow{i}" for i in range(1, 5)])
            else:
                r = ccfair.run(sc)
            jain = jain_index(r.flows.goodput_mbps)
            rows.append({"variant": variant, "seed": seed, "jain": jain})
            s = flow_stats(r).reset_index().assign(variant=variant, seed=seed, jain=jain)
            stats.append(s)
            print(f"{variant:16s} seed {seed:2d}: Jain {jain:.3f}", flush=True)
            if traced or (variant == "default" and seed == args.contrast_seed):
                draw_timeseries(
                    r,
                    out / f"mech-timeseries-seed{seed}.png",
                    f"simulator, 4 BBR flows, 0.5 BDP, seed {seed}: Jain {jain:.3f}",
                    (0, 40),
                )
            if traced:
                draw_timeseries(
                    r,
                    out / "mech-zoom-seed1.png",
                    "simulator, seed 1, 10-14 s: drops, cwnd and bw estimates",
                    (10, 14),
                )
    jain = pd.DataFrame(rows)
    per_flow = pd.concat(stats)
    jain.to_csv(out / "mechanisms_jain.csv", index=False, float_format="%.4f")
    per_flow.to_csv(out / "mechanisms_flows.csv", index=False, float_format="%.4f")
    summary = jain.groupby("variant")["jain"].agg(["median", "min", "max", "count"])
    print(summary.round(3).to_string())
    _draw_share_vs(per_flow, out / "mech-lt-bw.png")


def _draw_share_vs(per_flow: pd.DataFrame, path: Path) -> None:
    """Left: each flow of each default-host seed, its share against its time with the
    long-term (policer) bandwidth in use; middle: the same time against the pacing-gain
    proxy that Linux's runs also give; right: Jain's index per seed and variant."""
    d = per_flow[per_flow.variant == "default"]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    axes[0].scatter(d.lt_use_bw_frac, d.share, s=12)
    axes[0].set_xlabel("time pacing at lt_bw (policer mode)")
    axes[0].set_ylabel("share of the flow")
    axes[1].scatter(d.lt_use_bw_frac, d.gain_flat_1s_frac, s=12)
    axes[1].set_xlabel("time pacing at lt_bw")
    axes[1].set_ylabel("time with gain 1.0 for 1 s")
    runs = per_flow.drop_duplicates(["variant", "seed"])
    names = list(dict.fromkeys(runs.variant))
    for i, name in enumerate(names):
        j = runs[runs.variant == name].jain
        axes[2].scatter([i] * len(j), j, s=12)
        axes[2].plot([i - 0.3, i + 0.3], [j.median()] * 2, color="k", lw=1)
    axes[2].axhspan(0.74, 0.82, color="grey", alpha=0.25, label="Linux, 3 runs")
    axes[2].set_xticks(range(len(names)), names, rotation=30, fontsize=7)
    axes[2].set_ylabel("Jain's index")
    axes[2].legend(fontsize=7, loc="lower right")
    fig.suptitle("simulator, 4 BBR flows, 0.5 BDP, equal RTT, seeds 1-10", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


# -------------------------------------------------------------------------- arrivals

#: A burst's first packet is "behind" when another flow's packet reached the bottleneck
#: less than this before it: the two raced for the same free buffer slot.
RACE_GAP_NS = 10_000
#: Windows of the per-window loss ratio, about 8 rounds at this point's 50 to 60 ms RTT
#: (the long-term estimator's intervals are 4 to 16 rounds).
LOSS_WINDOW_S = 0.5
#: `bbr_lt_loss_thresh`: an interval is lossy at lost/delivered >= 50/256.
LT_LOSS_THRESH = 50 / 256
#: Ingress stamps of two flows' packets closer than this came from one pass of the kernel
#: backend's forwarder over its TUN devices (or, on the simulator, by chance).
SAME_PASS_NS = 3_000


def _last_other_flow_ns(t_ns: np.ndarray, flow: np.ndarray) -> np.ndarray:
    """For each packet (sorted by time), the time of the latest earlier packet of another
    flow (-inf if none)."""
    last_other = np.full(len(t_ns), -np.inf)
    for f in np.unique(flow):
        mine = flow == f
        # The latest time of flow f strictly before each packet.
        stamps = np.where(mine, t_ns.astype(float), -np.inf)
        latest = np.maximum.accumulate(stamps)
        before = np.concatenate([[-np.inf], latest[:-1]])
        last_other = np.where(~mine, np.maximum(last_other, before), last_other)
    return last_other


def arrival_flow_stats(r: ccfair.RunResult) -> pd.DataFrame:
    """Per flow of a traced run: how its data packets met the bottleneck's drop-tail buffer.

    `loss_ratio` (drops over packets delivered across the bottleneck), `lossy_window_frac`
    (the fraction of 0.5-s windows after 2 s whose drops reach 50/256 of the packets
    delivered, the long-term estimator's threshold), `burst_pkts` (mean packets per burst),
    `lead_behind_frac` (the fraction of burst leads that reach the bottleneck within
    :data:`RACE_GAP_NS` after another flow's packet), the drop fractions of leads behind and
    clear of another flow, and `data_per_ack` (data packets delivered per ACK sent)."""
    t = r.trace
    b = t[
        (t.link_name == "bottleneck") & (t.kind == "data") & t.event.isin(["enqueue", "drop_queue"])
    ].sort_values("t_ns", kind="stable")
    t_ns, flow = b.t_ns.to_numpy(), b.flow_name.to_numpy()
    dropped = (b.event == "drop_queue").to_numpy()
    own_gap = b.groupby("flow_name").t_ns.diff().to_numpy()
    lead = ~(own_gap < BURST_GAP_NS)
    behind = (t_ns - _last_other_flow_ns(t_ns, flow)) < RACE_GAP_NS
    arrived = t[(t.link_name == "bottleneck") & (t.kind == "data") & (t.event == "arrive")]
    acks = t[(t.kind == "ack") & (t.hop == 0) & (t.event.isin(["enqueue", "drop_queue"]))]
    late = b[b.t_s >= 2.0]
    window = (late.t_s // LOSS_WINDOW_S).astype(int)
    drops_w = late[late.event == "drop_queue"].groupby([late.flow_name, window]).size()
    arr_late = arrived[arrived.t_s >= 2.0]
    deliv_w = arr_late.groupby([arr_late.flow_name, (arr_late.t_s // LOSS_WINDOW_S).astype(int)])
    per_window = pd.concat({"d": drops_w, "a": deliv_w.size()}, axis=1).fillna(0)
    per_window["lossy"] = per_window.d >= LT_LOSS_THRESH * per_window.a.clip(lower=1)
    rows = []
    for name in sorted(set(flow), key=lambda n: int(str(n).removeprefix("flow"))):
        mine = flow == name
        n_arrived = int((arrived.flow_name == name).sum())
        # Drops per burst, for bursts whose lead trailed another flow and for the others.
        burst = np.cumsum(lead[mine])
        burst_drops = np.bincount(burst, weights=dropped[mine].astype(float))[1:]
        burst_behind = behind[mine & lead]
        rows.append(
            {
                "flow_name": name,
                "loss_ratio": dropped[mine].sum() / max(n_arrived, 1),
                "lossy_window_frac": float(per_window.loc[name].lossy.mean()),
                "burst_pkts": mine.sum() / max((mine & lead).sum(), 1),
                "lead_behind_frac": float(behind[mine & lead].mean()),
                "drop_lead_behind": float(dropped[mine & lead & behind].mean()),
                "drop_lead_clear": float(dropped[mine & lead & ~behind].mean()),
                "drops_per_burst_behind": float(burst_drops[burst_behind].mean()),
                "drops_per_burst_clear": float(burst_drops[~burst_behind].mean()),
                "data_per_ack": n_arrived / max(int((acks.flow_name == name).sum()), 1),
            }
        )
    return pd.DataFrame(rows).set_index("flow_name")


def ingress_order(r: ccfair.RunResult) -> pd.DataFrame:
    """Pairs of data packets of two flows stamped one after the other at the first hop
    (the kernel backend's forwarder stamps a packet when it reads it from the sender's TUN
    device), by the gap between them: how many, and the fraction where the lower-numbered
    flow comes first (0.5 when the order is chance)."""
    t = r.trace
    s = t[(t.hop == 0) & (t.kind == "data") & t.event.isin(["enqueue", "drop_queue"])].sort_values(
        "t_ns", kind="stable"
    )
    t_ns, flow = s.t_ns.to_numpy(), s.flow.to_numpy()
    gap = np.diff(t_ns)
    first, second = flow[:-1], flow[1:]
    cross = first != second
    rows = []
    edges_us = [0, 3, 10, 30, 100, math.inf]
    for lo, hi in zip(edges_us[:-1], edges_us[1:], strict=True):
        m = cross & (gap >= lo * 1000) & (gap < hi * 1000)
        rows.append(
            {
                "gap_us": f"{lo}-{hi}",
                "pairs": int(m.sum()),
                "pairs_frac": float(m.sum() / max(cross.sum(), 1)),
                "lower_first_frac": float((first[m] < second[m]).mean()) if m.any() else np.nan,
            }
        )
    return pd.DataFrame(rows)


def cmd_arrivals(args: argparse.Namespace) -> None:
    """Compare traced runs of the mechanisms point on both backends: per flow the loss
    pattern at the bottleneck, per run the order in which the first hop saw the flows."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    flows, orders = [], []
    for d in args.results:
        for r in _load_runs_with_traces(Path(d)):
            if r.trace is None:
                continue
            backend = str(r.runs.backend.iloc[0])
            seed = int(r.runs.seed.iloc[0])
            stats = flow_stats(r)[["share", "rto_count", "recovery_frac", "gain_flat_1s_frac"]]
            a = arrival_flow_stats(r).join(stats)
            flows.append(a.reset_index().assign(backend=backend, seed=seed))
            orders.append(ingress_order(r).assign(backend=backend, seed=seed))
    if not flows:
        raise Refused("no traced runs in the results directories")
    per_flow = pd.concat(flows)
    per_flow["flow"] = per_flow.flow_name.str.removeprefix("flow").astype(int)
    # The drops the order of the races adds to (or spares) a flow, per packet it offers:
    # its share of bursts that trail another flow beyond the run's mean over its flows
    # (an even split of the same races), times the drops such a burst costs.
    even = per_flow.groupby(["backend", "seed"]).lead_behind_frac.transform("mean")
    per_flow["race_excess_loss"] = (
        (per_flow.lead_behind_frac - even)
        * (per_flow.drops_per_burst_behind - per_flow.drops_per_burst_clear)
        / per_flow.burst_pkts
    )
    order = pd.concat(orders)
    per_flow.to_csv(out / "arrivals_flows.csv", index=False, float_format="%.4f")
    order.to_csv(out / "arrivals_order.csv", index=False, float_format="%.4f")
    cols = ["share", "loss_ratio", "lossy_window_frac", "lead_behind_frac"]
    cols += ["drop_lead_behind", "drop_lead_clear", "race_excess_loss"]
    cols += ["burst_pkts", "data_per_ack"]
    cols += ["gain_flat_1s_frac", "rto_count", "recovery_frac"]
    print(per_flow.groupby(["backend", "flow"])[cols].mean().round(3).to_string())
    print(
        order.groupby(["backend", "gap_us"], sort=False)[
            ["pairs", "pairs_frac", "lower_first_frac"]
        ]
        .mean()
        .round(3)
        .to_string()
    )
    _draw_arrivals(per_flow, order, out / "arrivals.png")


def _draw_arrivals(per_flow: pd.DataFrame, order: pd.DataFrame, path: Path) -> None:
    """Left: per flow number, the fraction of its burst leads that trail another flow's
    packet by under 10 us at the bottleneck; middle: the loss ratio; right: per gap between
    two flows' ingress stamps, the fraction ordered lower-numbered flow first."""
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    styles = {"kernel": ("tab:red", "o"), "sim": ("tab:blue", "s")}
    for backend, g in per_flow.groupby("backend"):
        colour, marker = styles.get(str(backend), ("grey", "x"))
        jitter = -0.1 if backend == "kernel" else 0.1
        axes[0].plot(
            g.flow + jitter,
            g.lead_behind_frac,
            marker,
            color=colour,
            ms=4,
            ls="",
            label=str(backend),
        )
        axes[1].plot(g.flow + jitter, g.loss_ratio, marker, color=colour, ms=4, ls="")
        o = order[order.backend == backend].groupby("gap_us", sort=False).lower_first_frac.mean()
        axes[2].plot(range(len(o)), o.to_numpy(), marker + "-", color=colour, label=str(backend))
        axes[2].set_xticks(range(len(o)), list(o.index), fontsize=7)
    axes[0].set_xlabel("flow")
    axes[0].set_ylabel("burst leads < 10 us\nafter another flow")
    axes[0].legend(fontsize=7)
    axes[1].axhline(LT_LOSS_THRESH, color="grey", lw=0.7, ls="--")
    axes[1].set_xlabel("flow")
    axes[1].set_ylabel("drops / delivered")
    axes[2].axhline(0.5, color="grey", lw=0.7, ls="--")
    axes[2].set_xlabel("gap between two flows' ingress stamps (us)")
    axes[2].set_ylabel("lower-numbered flow first")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


#: Earlier studies with BBR-vs-BBR kernel runs at 0.5 BDP: (study directory, sweep file).
LOSS_STUDIES = {
    "2hop-10m": "scenarios/validate/harada-2hop-10m.toml",
    "10hop": "scenarios/validate/harada-10hop.toml",
}


def cmd_losses(args: argparse.Namespace) -> None:
    """Retransmissions of the BBR-vs-BBR points at 0.5 BDP of the 10 Mbit/s studies: the
    simulator now (default host, and the same with segmentation offload off) against the
    kernel runs those studies recorded."""
    from ccfair.validate.points import sim_variant, validation_points

    root = Path(args.root)
    rows = []
    for study, sweep in LOSS_STUDIES.items():
        runs_csv = root / "docs" / "validation" / study / "validate_runs.csv"
        if not runs_csv.is_file():
            raise Refused(f"{runs_csv}: no such file (is --root the repository?)")
        kernel = pd.read_csv(runs_csv)
        points = [
            p
            for p in validation_points([str(root / sweep)])
            if p.params.get("ccas") == "bbr-bbr" and float(p.params.get("alpha")) == 0.5
        ]
        for p in points:
            for host, tcp in (("default", None), ("tso off", {"tso": "off"})):
                r = ccfair.run(sim_variant(p.scenario, 250, tcp))
                k = kernel[(kernel.point == p.label) & (kernel.rep == p.rep)]
                k = k.set_index("flow").retrans_kernel
                for f in r.flows.itertuples():
                    if f.flow_name in k.index:
                        rows.append(
                            {
                                "study": study,
                                "point": p.label,
                                "rep": p.rep,
                                "host": host,
                                "flow": f.flow_name,
                                "retrans_sim": f.retrans_pkts,
                                "retrans_kernel": int(k[f.flow_name]),
                            }
                        )
    d = pd.DataFrame(rows)
    d["kernel_over_sim"] = d.retrans_kernel / d.retrans_sim
    g = d.groupby(["study", "host"])
    summary = g[["retrans_sim", "retrans_kernel"]].sum()
    summary["median_kernel_over_sim"] = g.kernel_over_sim.median()
    summary["runs"] = g.rep.nunique()
    print(summary.round(3).to_string())
    if args.out:
        d.to_csv(Path(args.out) / "losses_10mbit.csv", index=False, float_format="%.4f")


#: The study's sweep; `seeds` runs its simulator side with more repetitions.
STUDY_SWEEP = Path(__file__).resolve().parent.parent / "scenarios/validate/bbr-among-bbr.toml"


def cmd_seeds(args: argparse.Namespace) -> None:
    """The study's grid on the simulator with ``--repetitions`` seeds per point (seeds 1 to
    N; the first three are the runs `ccfair validate` compares with Linux), so that the
    simulator's spread at each point is known, not guessed from three runs."""
    d = ccfair.Sweep.from_toml(STUDY_SWEEP).to_dict()
    d["repetitions"] = args.repetitions
    try:
        outcome = ccfair.run_sweep(ccfair.Sweep.from_dict(d), args.out, workers=args.workers)
    except ccfair.CcfairError as exc:
        raise Refused(f"{args.out}: {exc}") from None
    print(
        f"{args.out}: {outcome.total} runs, {outcome.already} finished before, "
        f"{len(outcome.executed)} run now, {len(outcome.failed)} failed"
    )
    if not outcome.complete:
        raise Refused(f"{args.out}: not every run finished (run the command again to resume)")


# ------------------------------------------------------------------------------ timing

#: The grid's one point where Linux and the simulator differ beyond chance: 8 flows, RTTs 40
#: and 160 ms (flows 5-8 behind a 61-ms sender access link), 0.5 BDP of flow1's path.
TIMING_POINT = {"n_flows": 8, "rtt_ratio": 4.0, "buffer_bdp": 0.5}

#: Host options that change the hosts' timing, to see how Jain's index at the point moves
#: with it (diagnostics, not candidate defaults): exact timing (no modelled host latency,
#: flows launched in lock-step), segmentation offload off (one segment per packet train),
#: and, for scale, BBR without its long-term (policer) estimator.
TIMING_VARIANTS: dict[str, dict] = {
    "default host": {},
    "exact host timing": {"tcp": {"host_latency": "none", "app_latency": "none"}},
    "offload off": {"tcp": {"tso": "off"}},
    "lt_bw off": {"cca_params": {"lt_bw": False}},
}

#: Time windows (s) of :func:`window_jain`: start-up, the first seconds of PROBE_BW, the rest.
TIMING_WINDOWS_S = [(0, 2), (2, 4), (4, 6), (6, 10), (10, 30)]


def timing_point_scenario(seed: int, duration: str, variant: dict) -> ccfair.Scenario:
    """The timing point on the default testbed, with one variant's options."""
    delays = ["1ms"] * 4 + ["61ms"] * 4
    return ccfair.dumbbell(
        8, "bbr", buffer_bdp=0.5, access_delay=delays, duration=duration, seed=seed, **variant
    )


def window_jain(ts: pd.DataFrame, windows_s: Sequence[tuple[float, float]]) -> dict[str, float]:
    """Jain's index of the flows' mean goodput in each time window of a run's time series
    (a flow without samples in a window counts as 0), keyed "lo-hi s".

    Example:
        >>> ts = pd.DataFrame({"t_s": [0.5, 0.5, 1.5, 1.5], "flow": [0, 1, 0, 1],
        ...                    "goodput_mbps": [10.0, 10.0, 30.0, 10.0]})
        >>> {k: round(v, 2) for k, v in window_jain(ts, [(0, 1), (1, 2)]).items()}
        {'0-1 s': 1.0, '1-2 s': 0.8}
    """
    flows = np.sort(ts.flow.unique())
    out = {}
    for lo, hi in windows_s:
        w = ts[(ts.t_s >= lo) & (ts.t_s < hi)].groupby("flow").goodput_mbps.mean()
        out[f"{lo:g}-{hi:g} s"] = jain_index(w.reindex(flows).fillna(0.0).to_numpy())
    return out


def _timing_row(group: str, seed: int, r: ccfair.RunResult) -> dict:
    row = {"group": group, "seed": seed, "jain": jain_index(r.flows.goodput_mbps)}
    g = r.flows.set_index("flow").goodput_mbps
    row["long_half_share"] = float(g[g.index >= 4].sum() / g.sum())
    row["largest_share"] = float(g.max() / g.sum())
    row["largest_is_long_rtt"] = bool(g.idxmax() >= 4)
    return {**row, **window_jain(r.timeseries, TIMING_WINDOWS_S)}


def _kernel_timing_rows(dirs: Sequence[str]) -> list[dict]:
    runs, _ = load_study_runs(dirs)
    at = (runs.backend == "kernel") & np.logical_and.reduce(
        [np.isclose(runs[k].astype(float), v) for k, v in TIMING_POINT.items()]
    )
    if not at.any():
        raise Refused(f"{', '.join(dirs)}: no kernel run of 8 flows, RTTs 40 and 160 ms, 0.5 BDP")
    rows = []
    for _, x in runs[at].iterrows():
        d = next(d for d in dirs if (Path(d) / "runs" / f"{x.run_id}.parquet").is_file())
        group = "Linux, passed the self-checks" if x.reliable else "Linux, flagged (host stalls)"
        rows.append(_timing_row(group, int(x.seed), ccfair.load(d, x.run_id)))
    return sorted(rows, key=lambda row: (not row["group"].startswith("Linux, passed"), row["seed"]))


def cmd_timing(args: argparse.Namespace) -> None:
    """Jain's index at the timing point: Linux's runs (passed the self-checks or flagged)
    against the simulator's default host and the timing variants, per run and per time
    window; writes ``timing_point.csv`` and ``timing_point.png`` and prints the table."""
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise Refused(f"--out {out}: exists and is not a directory")
    try:
        timing_point_scenario(1, args.duration, {})
    except ccfair.CcfairError as exc:
        raise Refused(f"--duration {args.duration!r}: {exc}") from None
    rows = _kernel_timing_rows(args.results)
    for variant, kwargs in TIMING_VARIANTS.items():
        for seed in range(1, args.seeds + 1):
            try:
                r = ccfair.run(timing_point_scenario(seed, args.duration, kwargs))
            except ccfair.CcfairError as exc:
                raise Refused(f"simulator, {variant}, seed {seed}: {exc}") from None
            rows.append(_timing_row(f"simulator, {variant}", seed, r))
            print(f"{variant:18s} seed {seed:2d}: Jain {rows[-1]['jain']:.3f}", flush=True)
    table = pd.DataFrame(rows)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "timing_point.csv", index=False, float_format="%.4f")
    _draw_timing(table, out / "timing_point.png")
    print(markdown_timing(table))


def markdown_timing(table: pd.DataFrame) -> str:
    """Per group: runs, Jain's median (range), the long-RTT half's share, the largest share
    of a run (and in how many runs a long-RTT flow had it) and the median of each time
    window's Jain's index."""
    windows = [c for c in table.columns if c.endswith(" s")]
    head = ["group", "runs", "Jain: median (range)", "long-RTT half", "largest share", *windows]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group, g in table.groupby("group", sort=False):
        cells = [
            str(group),
            str(len(g)),
            f"{g.jain.median():.2f} ({g.jain.min():.2f}-{g.jain.max():.2f})",
            f"{g.long_half_share.median():.2f}",
            f"{g.largest_share.median():.2f} ({int(g.largest_is_long_rtt.sum())} long-RTT)",
            *(f"{g[w].median():.2f}" for w in windows),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _draw_timing(table: pd.DataFrame, path: Path) -> None:
    groups = list(dict.fromkeys(table.group))
    windows = [c for c in table.columns if c.endswith(" s")]
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    for i, group in enumerate(groups):
        j = table.jain[table.group == group].to_numpy()
        jitter = (np.arange(len(j)) % 5 - 2) * 0.05
        color = "C3" if group.startswith("Linux") else "C0"
        a.scatter(j, i + jitter, s=16, color=color, alpha=0.7)
        a.plot([np.median(j)] * 2, [i - 0.3, i + 0.3], color="k", lw=2)
    a.set_yticks(range(len(groups)), groups)
    a.invert_yaxis()
    a.set_xlabel("Jain's index of the run (bar: median)")
    a.grid(axis="x", alpha=0.3)
    keep = [g for g in groups if g.startswith("Linux") or g.endswith(("default host", "timing"))]
    for group in keep:
        g = table[table.group == group]
        style = "-" if group.startswith("Linux") else "--"
        b.plot(
            range(len(windows)), [g[w].median() for w in windows], style, marker="o", label=group
        )
    b.set_xticks(range(len(windows)), windows)
    b.set_xlabel("time window")
    b.set_ylabel("Jain's index in the window (median)")
    b.grid(alpha=0.3)
    b.legend(fontsize=7)
    fig.suptitle("8 BBR flows, RTTs 40 and 160 ms, 0.5 BDP: Linux against the simulator's hosts")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tables", help="tables of Jain's index and shares per point")
    t.add_argument("results", nargs="+", help="results directories (either backend)")
    t.add_argument("--out", required=True, help="directory for the CSV files and tables.md")
    s = sub.add_parser("timeseries", help="per-flow time series of every run of RESULTS")
    s.add_argument("results")
    s.add_argument("--out", required=True)
    s.add_argument("--prefix", default="ts")
    m = sub.add_parser("mechanisms", help="run and draw the mechanisms section")
    m.add_argument("--out", required=True)
    m.add_argument("--seeds", type=int, default=10)
    m.add_argument("--contrast-seed", type=int, default=0)
    ar = sub.add_parser("arrivals", help="traced runs of both backends: how packets met the buffer")
    ar.add_argument("results", nargs="+", help="results directories with traced runs")
    ar.add_argument("--out", required=True)
    se = sub.add_parser("seeds", help="the grid on the simulator with more repetitions")
    se.add_argument("--repetitions", type=int, default=20, help="seeds per point (default 20)")
    se.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    se.add_argument("--out", required=True, help="results directory")
    ti = sub.add_parser("timing", help="the 8-flow 4R 0.5-BDP point against host timing variants")
    ti.add_argument("results", nargs="+", help="results directories with Linux runs of the point")
    ti.add_argument("--seeds", type=int, default=20, help="simulator seeds per variant")
    ti.add_argument("--duration", default="30s", help="simulator run length (default 30s)")
    ti.add_argument("--out", required=True, help="directory for timing_point.csv and .png")
    lo = sub.add_parser("losses", help="retransmissions vs the 10 Mbit/s studies' Linux runs")
    lo.add_argument("--root", default=".", help="the repository (default: .)")
    lo.add_argument("--out", default=None, help="directory for losses_10mbit.csv")
    args = p.parse_args(argv)
    if args.cmd == "mechanisms" and not 1 <= args.seeds <= 100:
        p.exit(2, f"error: --seeds {args.seeds} is not in [1, 100]\n")
    if args.cmd == "timing" and not 1 <= args.seeds <= 100:
        p.exit(2, f"error: --seeds {args.seeds} is not in [1, 100]\n")
    if args.cmd == "seeds" and not 1 <= args.repetitions <= 1000:
        p.exit(2, f"error: --repetitions {args.repetitions} is not in [1, 1000]\n")
    if args.cmd == "seeds" and not 1 <= args.workers <= 256:
        p.exit(2, f"error: --workers {args.workers} is not in [1, 256]\n")
    try:
        commands = {
            "tables": cmd_tables,
            "timeseries": cmd_timeseries,
            "mechanisms": cmd_mechanisms,
            "losses": cmd_losses,
            "arrivals": cmd_arrivals,
            "seeds": cmd_seeds,
            "timing": cmd_timing,
        }
        commands[args.cmd](args)
    except Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
