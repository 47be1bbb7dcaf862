"""The first ``ccfair.run()`` of a fresh process, and the ``ccfair run`` command, in two
trees (issue 16: benches/ns3/compare.py times that first call).

Each round starts one fresh process per tree, in alternating order (a busy moment of the
machine falls on both), and reports medians [min-max] over the rounds. ``api``: the scenario
(60 s BBR vs CUBIC, 0.5 BDP, 10 ms samples: compare.py's row) is built before the timer, as
compare.py's child does; then ``run()`` is timed (wall and the process's CPU), then the
first ``r.flows`` (which converts the table, importing pandas if the run did not), then a
second, warm ``run()``; ``*_minus_engine_s`` leave out the engine's own wall time
(``runs.wall_time_s``), whose spread on a shared machine hides the rest. ``cli``: whole
``ccfair run`` processes (the default 30 s scenario), printing the summary without saving,
and quiet into a fresh results directory; wall and CPU (user + system) of the process.

Usage (trees are directories holding the ccfair package, each with its _core built)::

    python3 benches/first_run.py OLD/python NEW/python --rounds 9 --what api
    python3 benches/first_run.py OLD/python NEW/python --rounds 9 --what cli
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from tree_args import count_error, tree_error

CHILD = """
import json, sys, time
t0 = time.perf_counter()
import ccfair
sc = ccfair.dumbbell(2, ["bbr", "cubic"], bottleneck_delay="18ms", buffer_bdp=0.5,
                     duration="60s", sample_interval="10ms")
setup = time.perf_counter() - t0
c0, t0 = time.process_time(), time.perf_counter()
r = ccfair.run(sc)
run_s, run_cpu = time.perf_counter() - t0, time.process_time() - c0
pandas_after_run = "pandas" in sys.modules
c0, t0 = time.process_time(), time.perf_counter()
n = len(r.flows)
flows_s, flows_cpu = time.perf_counter() - t0, time.process_time() - c0
t0 = time.perf_counter()
r2 = ccfair.run(sc)
warm = time.perf_counter() - t0
engine, warm_engine = (float(x.runs["wall_time_s"].iloc[0]) for x in (r, r2))
print(json.dumps({"setup_s": setup, "run_s": run_s, "run_cpu_s": run_cpu,
                  "engine_s": engine, "run_minus_engine_s": run_s - engine,
                  "flows_s": flows_s, "flows_cpu_s": flows_cpu, "warm_run_s": warm,
                  "warm_minus_engine_s": warm - warm_engine,
                  "pandas_after_run": pandas_after_run}))
"""


def _process(cmd: list[str], path: str, cwd: str | None = None) -> tuple[float, float, str]:
    """Run ``cmd`` with ``path`` as PYTHONPATH: its wall time, its CPU (user + system) and
    its stdout."""
    env = dict(os.environ, PYTHONPATH=path)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out.stdout


def measure_api(path: str) -> dict[str, float]:
    wall, cpu, out = _process([sys.executable, "-c", CHILD], path)
    m = json.loads(out.strip().splitlines()[-1])
    m.update(process_s=wall, process_cpu_s=cpu)
    return m


def measure_cli(path: str) -> dict[str, float]:
    cli = [sys.executable, "-m", "ccfair.cli", "run"]
    with tempfile.TemporaryDirectory(prefix="ccfair-first-") as tmp:
        summary_s, summary_cpu, _ = _process([*cli, "--no-save"], path, cwd=tmp)
        quiet_s, quiet_cpu, _ = _process([*cli, "-q", "--out", "r"], path, cwd=tmp)
    return {
        "summary_s": summary_s,
        "summary_cpu_s": summary_cpu,
        "quiet_save_s": quiet_s,
        "quiet_save_cpu_s": quiet_cpu,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old", help="PYTHONPATH of the old tree")
    p.add_argument("new", help="PYTHONPATH of the new tree")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--what", choices=["api", "cli"], default="api")
    args = p.parse_args(argv)
    errors = [
        tree_error("old", args.old),
        tree_error("new", args.new),
        count_error("--rounds", args.rounds, 1000),
    ]
    if any(errors):
        print(f"error: {next(e for e in errors if e)}", file=sys.stderr)
        return 2
    measure = measure_api if args.what == "api" else measure_cli
    trees = {"old": args.old, "new": args.new}
    samples: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for i in range(args.rounds):
        order = ["old", "new"] if i % 2 == 0 else ["new", "old"]
        for name in order:
            samples[name].append(measure(trees[name]))
        print(f"round {i + 1}/{args.rounds}", file=sys.stderr)
    keys = [k for k in samples["old"][0] if isinstance(samples["old"][0][k], float)]
    print(f"{'ms, median [min-max]':24s} {'old':>22s} {'new':>22s}")
    for k in keys:
        cells = []
        for name in ("old", "new"):
            xs = [1e3 * s[k] for s in samples[name]]
            cells.append(f"{statistics.median(xs):6.0f} [{min(xs):4.0f}-{max(xs):4.0f}]")
        print(f"{k:24s} {cells[0]:>22s} {cells[1]:>22s}")
    for name in ("old", "new"):
        flags = {s.get("pandas_after_run") for s in samples[name]} - {None}
        if flags:
            print(f"{name}: pandas imported by run(): {sorted(flags)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
