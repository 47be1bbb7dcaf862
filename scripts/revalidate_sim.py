"""Rerun the simulator side of a finished `ccfair validate` study and compare it with the
study's stored Linux runs, without running anything on the kernel backend.

A study directory of docs/validation/ holds `validate_runs.csv` (per point, repetition and
flow: the kernel's share and goodput and the simulator's of the time). This script expands
the study's scenario or sweep files into the same points and repetitions as `ccfair
validate` does (hosts of a Linux generation moved to the kernel backend's, 6.18; the
simulator at the kernel's HZ, 250), runs each on the simulator one at a time, replaces the
simulator's columns of the stored runs with the new ones (joined on the point's label,
the repetition and the flow) and summarises per point exactly as `ccfair validate` does
(kernel means over reliable runs only).

It writes to --out:
- `validate_runs.csv`: the stored runs with the new simulator columns, plus the old
  simulator share (`share_sim_before`), the simulator's largest and mean data in flight per
  flow (`inflight_max_sim_pkts`, `inflight_mean_sim_pkts`) and its retransmissions;
- `validate_points.csv`: per point and flow, as `ccfair validate` writes it, with the
  stored difference beside the new one (`share_diff_before`);
- `summary.csv`: per algorithm pair, the median and largest |difference| before and after.

    python3 scripts/revalidate_sim.py docs/validation/dumbbell \\
        scenarios/validate/harada-dumbbell.toml --out /tmp/reval/dumbbell

Which points bind on the stock socket buffers (the kernel side must be rerun there): run
the script twice, the second time with `--sim-tcp wmem=fit --sim-tcp rmem=fit`, then

    python3 scripts/revalidate_sim.py buffers /tmp/reval/dumbbell /tmp/reval/dumbbell-fit

Options: --sim-tcp KEY=VALUE as `ccfair validate --sim-tcp` (e.g. `tso=linux` for a study
that ran the offload model explicitly), --host-latency FILE, --points REGEX (only points
whose label matches), --keep-flagged (average the kernel runs the self-checks flagged
too, for a study without reliable ones), --testbed NAME (e.g. `ideal`: the old hosts on
today's simulator), --runs-csv (a stored runs table other than the study's
`validate_runs.csv`), --results DIR (save every simulator run there).
"""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from ccfair.errors import SpecError
from ccfair.execution.runs import run
from ccfair.spec.scenario import Scenario
from ccfair.validate.compare import summarize_pairs, summarize_points
from ccfair.validate.points import (
    measured_host_latency,
    sim_variant,
    validation_points,
    with_kernel,
)

#: The kernel backend's hosts (Linux 6.18.44 on the machine of the studies) and its HZ.
REFERENCE_KERNEL = "6.18"
REFERENCE_HZ = 250

#: The send buffer's cap in packets of data in flight, at its lowest: Linux 6.18's
#: tcp_wmem[2] (4 MiB) over a 1448-byte segment plus its share of an skb's 832 bytes of
#: overhead in skbs of two segments (tcp_sendmsg_locked charges the payload byte for byte,
#: sk_wmem_queued_add(sk, copy), and each skb head's truesize; crates/ccfair-sim
#: tcp/sender/sndbuf.rs). Larger GSO skbs raise it to about 2,860 packets.
SNDBUF_CAP_MIN_PKTS = (4 << 20) // (1448 + 832 // 2)

#: The simulator's columns of a stored runs table, replaced by the new run's.
SIM_COLUMNS = [
    "goodput_sim_mbps",
    "share_sim",
    "rtt_mean_sim_ms",
    "rtt_min_sim_ms",
    "retrans_sim",
    "cwnd_mean_sim",
    "srtt_mean_sim",
]


class StudyError(Exception):
    """The inputs do not describe a study this script can rerun (one line for the user)."""


def parse_sim_tcp(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` options, VALUE as in TOML (a bare word is a string).

    Example:
        >>> parse_sim_tcp(["tso=linux", "wmem=[4096, 16384, 1048576]"])
        {'tso': 'linux', 'wmem': [4096, 16384, 1048576]}
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise StudyError(f"--sim-tcp {item!r}: expected KEY=VALUE")
        try:
            out[key] = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            out[key] = value
    return out


def with_testbed(sc: Scenario, testbed: str) -> Scenario:
    """``sc`` on another testbed (``"ideal"``: the hosts of ccfair before real hosts became
    the default, to tell the change of default from other changes of the model)."""
    data = sc.to_dict()
    data["testbed"] = testbed
    return Scenario.from_dict(data)


def per_flow(result: Any) -> pd.DataFrame:
    """The simulator's columns of one run, one row per flow (the names of
    :func:`ccfair.validate.compare.compare`), with its data in flight."""
    f = result.flows.set_index("flow_name")
    ts = result.timeseries.groupby("flow_name", observed=True)
    out = pd.DataFrame(
        {
            "flow": f.index.astype(str),
            "goodput_sim_mbps": f["goodput_mbps"].to_numpy(),
            "share_sim": f["share_frac"].to_numpy(),
            "rtt_mean_sim_ms": f["rtt_mean_ms"].to_numpy(),
            "rtt_min_sim_ms": f["rtt_min_ms"].to_numpy(),
            "retrans_sim": f["retrans_pkts"].to_numpy(),
        }
    )
    for col, name, how in (
        ("cwnd_pkts", "cwnd_mean_sim", "mean"),
        ("srtt_ms", "srtt_mean_sim", "mean"),
        ("inflight_pkts", "inflight_mean_sim_pkts", "mean"),
        ("inflight_pkts", "inflight_max_sim_pkts", "max"),
        ("cwnd_pkts", "cwnd_max_sim_pkts", "max"),
    ):
        values = getattr(ts[col], how)()
        out[name] = [values.get(flow, np.nan) for flow in out["flow"]]
    return out


def revalidate(
    study: Path,
    inputs: list[str],
    *,
    sim_tcp: dict[str, Any],
    points_regex: str | None,
    runs_csv: Path | None,
    results: Path | None,
    keep_flagged: bool = False,
    testbed: str | None = None,
    say: Any = print,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(runs, points, summary) of the study under the current simulator (see the module).
    ``keep_flagged``: average the kernel runs the self-checks flagged too (as a study
    without reliable runs reported them, apart)."""
    runs_path = runs_csv or study / "validate_runs.csv"
    if not runs_path.is_file():
        raise StudyError(f"{runs_path} is not a `ccfair validate` runs table (validate_runs.csv)")
    stored = pd.read_csv(runs_path)
    missing_columns = {"point", "rep", "flow", "share_kernel", "kernel_reliable"} - set(stored)
    if missing_columns:
        raise StudyError(f"{runs_path} lacks the columns {sorted(missing_columns)}")
    if keep_flagged:
        stored = stored.assign(kernel_reliable=True)
    if points_regex:
        stored = stored[stored["point"].str.contains(points_regex, regex=True)]
    wanted = set(zip(stored["point"], stored["rep"], strict=True))
    points = [p for p in validation_points(inputs) if (p.label, p.rep) in wanted]
    found = {(p.label, p.rep) for p in points}
    missing = sorted(wanted - found)
    if missing:
        raise StudyError(f"the scenario files do not produce these stored points: {missing[:5]}")
    rows = []
    t0 = time.monotonic()
    for i, p in enumerate(points):
        sc = p.scenario if testbed is None else with_testbed(p.scenario, testbed)
        sc = sim_variant(with_kernel(sc, REFERENCE_KERNEL), REFERENCE_HZ, sim_tcp)
        t = time.monotonic()
        r = run(sc, backend="sim")
        if results is not None:
            r.save(results)
        say(f"[{i + 1}/{len(points)}] {p.label} r{p.rep}: {time.monotonic() - t:.1f} s")
        flows = per_flow(r)
        flows.insert(0, "rep", p.rep)
        flows.insert(0, "point", p.label)
        flows["sim_run_id"] = r.run_id
        rows.append(flows)
    say(f"{len(points)} simulator runs in {time.monotonic() - t0:.0f} s")
    new = pd.concat(rows, ignore_index=True)
    before = stored.rename(columns={"share_sim": "share_sim_before"})
    runs = before.drop(columns=[c for c in SIM_COLUMNS if c in before.columns] + ["sim_run_id"])
    runs = runs.merge(new, on=["point", "rep", "flow"], how="left", validate="one_to_one")
    if runs["share_sim"].isna().any():
        raise StudyError("some stored flows have no simulator flow of the same name")
    runs["share_diff"] = runs["share_kernel"] - runs["share_sim"]
    runs["goodput_diff_mbps"] = runs["goodput_kernel_mbps"] - runs["goodput_sim_mbps"]
    points_df = summarize_points(runs)
    old = summarize_points(stored)[
        ["point", "flow", "share_diff", "share_sim_mean", "goodput_sim_mbps"]
    ].rename(
        columns={
            "share_diff": "share_diff_before",
            "share_sim_mean": "share_sim_before",
            "goodput_sim_mbps": "goodput_sim_before_mbps",
        }
    )
    points_df = points_df.merge(old, on=["point", "flow"], how="left", validate="one_to_one")
    extra = (
        runs.groupby(["point", "flow"], sort=False)[
            ["inflight_max_sim_pkts", "inflight_mean_sim_pkts", "cwnd_max_sim_pkts"]
        ]
        .max()
        .reset_index()
    )
    points_df = points_df.merge(extra, on=["point", "flow"], how="left")
    after = summarize_pairs(points_df)
    prior = summarize_pairs(points_df.assign(share_diff=points_df["share_diff_before"]))
    summary = after[["pair", "points", "no_reliable_kernel"]].copy()
    for name, frame in (("before", prior), ("after", after)):
        for col in ("median_abs_diff_pp", "max_abs_diff_pp", "over_10pp"):
            summary[f"{col}_{name}"] = frame[col].to_numpy()
    return runs, points_df, summary


def buffer_bound(stock: pd.DataFrame, lifted: pd.DataFrame) -> pd.DataFrame:
    """Per point and flow: whether the stock socket buffers bind, from two runs of this
    script's per-point table (``validate_points.csv``): one under the default hosts
    (``stock``) and one with ``--sim-tcp wmem=fit --sim-tcp rmem=fit`` (``lifted``, the
    buffers the kernel backend used to set, which never limit). A flow is bound when its
    data in flight reached the send buffer's cap under stock buffers (at least 90% of
    :data:`SNDBUF_CAP_MIN_PKTS`) and rose more than 5% above that with the buffers lifted.

    Example:
        >>> row = dict(point="p", flow="f", cca="reno", n_kernel=2, share_kernel_mean=0.9)
        >>> s = pd.DataFrame([row | dict(share_sim_mean=0.5, inflight_max_sim_pkts=2800.0)])
        >>> f = pd.DataFrame([row | dict(share_sim_mean=0.9, inflight_max_sim_pkts=9000.0)])
        >>> buffer_bound(s, f)[["bound", "share_shift_pp"]].to_dict("records")
        [{'bound': True, 'share_shift_pp': 40.0}]
    """
    keys = ["point", "flow"]
    cols = ["share_sim_mean", "inflight_max_sim_pkts"]
    both = stock[[*keys, "cca", "n_kernel", "share_kernel_mean", *cols]].merge(
        lifted[[*keys, *cols]], on=keys, suffixes=("", "_lifted"), validate="one_to_one"
    )
    both["bound"] = (both["inflight_max_sim_pkts"] >= 0.9 * SNDBUF_CAP_MIN_PKTS) & (
        both["inflight_max_sim_pkts_lifted"] > 1.05 * both["inflight_max_sim_pkts"]
    )
    both["share_shift_pp"] = (100 * (both["share_sim_mean_lifted"] - both["share_sim_mean"])).round(
        2
    )
    return both


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    try:
        return _main(argv)
    except (StudyError, SpecError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _main(argv: list[str]) -> int:
    if argv[:1] == ["buffers"]:
        if len(argv) != 3:
            raise StudyError("usage: revalidate_sim.py buffers STOCK_OUT LIFTED_OUT")
        tables = []
        for out in argv[1:]:
            path = Path(out) / "validate_points.csv"
            if not path.is_file():
                raise StudyError(f"{out} is not an output directory of this script")
            tables.append(pd.read_csv(path))
        table = buffer_bound(*tables)
        print(table[table["bound"]].to_string(index=False))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("study", type=Path, help="the study's directory (its validate_runs.csv)")
    ap.add_argument("inputs", nargs="+", help="the study's scenario or sweep files")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sim-tcp", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--host-latency", metavar="FILE")
    ap.add_argument("--points", metavar="REGEX", help="only the points whose label matches")
    ap.add_argument("--runs-csv", type=Path, help="stored runs (default: STUDY/validate_runs.csv)")
    ap.add_argument("--results", type=Path, help="save every simulator run in this directory")
    ap.add_argument("--testbed", help="run the simulator on this testbed (e.g. ideal)")
    ap.add_argument(
        "--keep-flagged",
        action="store_true",
        help="average the flagged kernel runs too (a study without reliable ones)",
    )
    args = ap.parse_args(argv)
    sim_tcp = parse_sim_tcp(args.sim_tcp)
    if args.host_latency:
        sim_tcp["host_latency"] = measured_host_latency(args.host_latency)
    runs, points, summary = revalidate(
        args.study,
        args.inputs,
        sim_tcp=sim_tcp,
        points_regex=args.points,
        runs_csv=args.runs_csv,
        results=args.results,
        keep_flagged=args.keep_flagged,
        testbed=args.testbed,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    runs.to_csv(args.out / "validate_runs.csv", index=False)
    points.to_csv(args.out / "validate_points.csv", index=False)
    summary.to_csv(args.out / "summary.csv", index=False)
    print(summary.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
