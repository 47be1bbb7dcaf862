"""Bit-for-bit comparison of whole result tables before and after a change to the engine.

Engine work that must not change behaviour (issue 16: speed) is checked here: every table
of a set of scenarios that between them use all four algorithms, dumbbells and parking
lots, random loss on data and ACK paths, finite flows, stops, start jitter, the handshake
on and off, pacing, a custom graph, a per-packet trace and many flows. ``save`` runs them
and keeps their tables; ``compare`` runs them again and reports every column that differs
in any bit (NaN equal to NaN of the same bits), run by run.

    python3 scripts/result_identity.py save /tmp/identity-before     # on the old commit
    python3 scripts/result_identity.py compare /tmp/identity-before  # on the new one

Only the columns that describe the host and the moment of a run (wall time, start time,
versions, host names) and the engine's own event count are left out of the comparison.
Exit status 1 when anything differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: Columns of ``runs`` that say when and where a run ran, not what it computed.
#: ``engine_events`` counts the engine's own work (a change that saves events changes it;
#: docs/model.md, "Handing packets on ahead of time").
PROVENANCE = {
    "engine_events",
    "ccfair_version",
    "git_revision",
    "host",
    "kernel",
    "machine_release",
    "python",
    "started_at",
    "wall_time_s",
}


def scenarios() -> dict[str, Any]:
    """The scenarios compared, by name (each a few seconds of wall time at most)."""
    from ccfair.spec.scenario import as_scenario
    from ccfair.spec.shapes import dumbbell, parking_lot

    root = Path(__file__).resolve().parent.parent
    out: dict[str, Any] = {}
    for alpha in (0.5, 2.0, 16.0):
        out[f"dumbbell-bbr-cubic-a{alpha:g}"] = dumbbell(
            2, ["bbr", "cubic"], buffer_bdp=alpha, duration="60s"
        )
    out["dumbbell-reno-copa-loss"] = dumbbell(
        2, ["reno", "copa"], buffer_bdp=2.0, bottleneck_loss=0.01, duration="30s", seed=3
    )
    out["dumbbell-four-ccas-mixed"] = dumbbell(
        4,
        ["reno", "cubic", "bbr", "copa"],
        bottleneck_rate="100Mbit/s",
        bottleneck_delay="10ms",
        access_delay=["1ms", "3ms", "5ms", "9ms"],
        buffer_bdp=1.0,
        starts=["0s", "1s", "2s", "3s"],
        start_jitter="5ms",
        stops=[None, "12s", None, None],
        sizes=[None, None, "20MB", None],
        cca_params=[None, None, {"version": "linux-4.15"}, {"variant": "paper"}],
        tcp={"handshake": False, "fq_pacing": True},
        duration="15s",
        seed=11,
    )
    out["dumbbell-cubic-ackloss-hz250"] = dumbbell(
        3,
        "cubic",
        buffer_pkts=20,
        tcp={"hz": 250, "app_latency": "none", "host_latency": "none"},
        duration="30s",
    )
    out["dumbbell-1g-50flows"] = dumbbell(
        50,
        ["cubic", "bbr"] * 25,
        bottleneck_rate="1Gbit/s",
        buffer_bdp=1.0,
        start_jitter="100ms",
        duration="5s",
    )
    out["parking-lot-10hop-bbr-cubic"] = parking_lot(
        10, "bbr", "cubic", buffer_bdp=2.0, duration="10s"
    )
    out["parking-lot-2hop-copa-reno"] = parking_lot(
        2, "copa", ["reno", "cubic"], buffer_bdp=0.5, delay=["2ms", "30ms"], duration="15s"
    )
    out["custom-graph"] = as_scenario(root / "scenarios" / "custom_graph.toml")
    return out


#: Scenarios also run with a per-packet trace of their first flow.
TRACED = {"dumbbell-reno-copa-loss", "parking-lot-2hop-copa-reno"}


def _with_ack_loss(name: str, sc: Any) -> Any:
    """ACK-path random loss for the scenario that asks for it (the builders set data loss)."""
    if name != "dumbbell-cubic-ackloss-hz250":
        return sc
    d = sc.to_dict()
    for link in d["links"]:
        if link.get("name") == "bottleneck":
            link["loss"] = {"forward": 0.002, "reverse": 0.01}
    from ccfair.spec.scenario import Scenario

    return Scenario.from_dict(d)


def run_all() -> dict[str, dict[str, pd.DataFrame]]:
    """Every scenario's tables (and trace), by scenario name and table name."""
    import ccfair
    from ccfair.results.derived import stored

    tables: dict[str, dict[str, pd.DataFrame]] = {}
    for name, sc in scenarios().items():
        sc = _with_ack_loss(name, sc)
        t0 = time.perf_counter()
        trace = [sc.flows[0].name] if name in TRACED else []
        r = ccfair.run(sc, trace=trace)
        frames = {
            "runs": r.runs.drop(columns=sorted(PROVENANCE & set(r.runs.columns))),
            # What the run computed (its files): not the columns a result derives on reading.
            "flows": stored("flows", r.flows),
            "timeseries": stored("timeseries", r.timeseries),
            "links": r.links,
            "link_summary": r.link_summary,
        }
        if r.trace is not None:
            frames["trace"] = r.trace
        tables[name] = frames
        print(f"{name:34s} {time.perf_counter() - t0:6.2f} s", file=sys.stderr)
    return tables


def save(directory: Path) -> None:
    """Run every scenario and keep its tables as pickles in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, frames in run_all().items():
        for table, frame in frames.items():
            frame.to_pickle(directory / f"{name}.{table}.pkl")


def _same(a: pd.Series, b: pd.Series) -> bool:
    if a.dtype != b.dtype or len(a) != len(b):
        return False
    if a.dtype.kind == "f":
        return np.array_equal(a.to_numpy().view(np.uint64), b.to_numpy().view(np.uint64))
    return bool((a.to_numpy() == b.to_numpy()).all())


def differences(before: pd.DataFrame, after: pd.DataFrame) -> list[str]:
    """What differs between two tables: columns added, removed or differing in any bit."""
    out = []
    if list(before.columns) != list(after.columns):
        out.append(f"columns {list(before.columns)} -> {list(after.columns)}")
    if len(before) != len(after):
        out.append(f"rows {len(before)} -> {len(after)}")
        return out
    for col in before.columns:
        if col in after.columns and not _same(before[col], after[col]):
            a, b = before[col].to_numpy(), after[col].to_numpy()
            idx = next(
                i for i in range(len(a)) if not _same(before[col][i : i + 1], after[col][i : i + 1])
            )
            out.append(f"{col}: first difference at row {idx}: {a[idx]!r} -> {b[idx]!r}")
    return out


def compare(directory: Path) -> int:
    """Run every scenario and compare with the tables saved in ``directory``."""
    failed = 0
    n_values = 0
    for name, frames in run_all().items():
        saved = sorted(directory.glob(f"{name}.*.pkl"))
        if {p.name.split(".")[-2] for p in saved} != set(frames):
            print(f"{name}: tables {sorted(frames)} vs saved {[p.name for p in saved]}")
            failed += 1
            continue
        for table, frame in frames.items():
            before = pd.read_pickle(directory / f"{name}.{table}.pkl")
            # Saved by a version of this script that kept columns now left out.
            before = before.drop(columns=sorted(PROVENANCE & set(before.columns)))
            diff = differences(before, frame)
            n_values += frame.size
            if diff:
                failed += 1
                print(f"{name} {table}: DIFFERS")
                for d in diff:
                    print(f"    {d}")
    verdict = "identical" if not failed else f"{failed} tables differ"
    print(f"{len(scenarios())} scenarios, {n_values:,} values compared: {verdict}")
    return 1 if failed else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("action", choices=["save", "compare"])
    p.add_argument("directory", type=Path)
    args = p.parse_args()
    if args.action == "save":
        save(args.directory)
        return 0
    return compare(args.directory)


if __name__ == "__main__":
    sys.exit(main())
