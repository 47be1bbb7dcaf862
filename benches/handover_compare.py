"""The hand-over after the engine, two ccfair trees alternated (benches/README.md, "After the
engine").

    git archive 1ef47a8 python | tar -x -C /tmp/old
    cp python/ccfair/_core.abi3.so /tmp/old/python/ccfair/
    python3 benches/handover_compare.py /tmp/old/python python --rounds 15

Each round runs one fresh process per tree (their order alternating): the case's engine
once, then the hand-over 1 + ``--repeat`` times (the first untimed): ``build_result``,
``RunResult.save``, the sweep worker's raw columns to files and the Dask worker's Parquet
bytes. A tree without ``ccfair.tables`` (before the Arrow path) times the sweep worker as it
was: ``build_result`` then ``RunResult.write_tables``. Prints median [min-max] in ms, wall
and thread CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tree_args import count_error, tree_error


def child(case: str, repeat: int) -> None:
    from ccfair import _core
    from ccfair.bench import scenario_for

    try:
        from ccfair.results.run import build_result
    except ImportError:  # a tree before the layered package
        from ccfair.results import build_result
    try:  # a tree with a type of its own for a worker's Arrow tables (RunTables)
        from ccfair.tables import build_tables
    except ImportError:  # before the Arrow path, or one result type: a worker's is a RunResult
        build_tables = None
    resolved = scenario_for(case, "60s").resolve()
    t0 = time.perf_counter()
    raw = _core.run(resolved.engine_json)
    engine = time.perf_counter() - t0
    kw = {"run_id": "0123456789abcdef", "backend": "sim", "started_at": "", "wall_time_s": engine}
    out: dict[str, list[float]] = {"engine": [engine * 1e3]}

    def note(key: str, seconds: float) -> None:
        out.setdefault(key, []).append(seconds * 1e3)

    for i in range(repeat + 1):
        with tempfile.TemporaryDirectory() as tmp:
            c0, t0 = time.thread_time(), time.perf_counter()
            r = build_result(resolved, raw, **kw)
            c1, t1 = time.thread_time(), time.perf_counter()
            r.save(Path(tmp, "a"))
            c2, t2 = time.thread_time(), time.perf_counter()
            tables = (
                build_tables(resolved, raw, **kw)
                if build_tables
                else build_result(resolved, raw, **kw)
            )
            t3 = time.perf_counter()
            tables.write_tables(Path(tmp, "b"))
            c4, t4 = time.thread_time(), time.perf_counter()
            tables.parquet_bytes()
            t5 = time.perf_counter()
        if i:
            note("build_result", t1 - t0)
            note("build_result cpu", c1 - c0)
            note("save", t2 - t1)
            note("save cpu", c2 - c1)
            note("sweep worker", t4 - t2)
            note("sweep worker cpu", c4 - c2)
            note("sweep worker: tables", t3 - t2)
            note("dask worker: bytes", t5 - t4)
    print(json.dumps(out))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", help="PYTHONPATH of the tree before")
    ap.add_argument("new", help="PYTHONPATH of the tree after")
    ap.add_argument("--case", default="dumbbell-bbr-vs-cubic-a0.5")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    errors = [
        tree_error("old", args.old),
        tree_error("new", args.new),
        count_error("--rounds", args.rounds, 1000),
        count_error("--repeat", args.repeat, 100),
    ]
    if not any(errors):
        sys.path.insert(0, os.path.abspath(args.new))
        from ccfair.bench import CASES

        names = [c.name for c in CASES]
        if args.case not in names:
            errors.append(f"--case: {args.case!r} is not one of {', '.join(names)}")
    if any(errors):
        print(f"error: {next(e for e in errors if e)}", file=sys.stderr)
        return 2
    trees = [("before", args.old), ("after", args.new)]
    samples: dict[str, dict[str, list[float]]] = {name: {} for name, _ in trees}
    for r in range(args.rounds):
        for name, path in trees if r % 2 == 0 else trees[::-1]:
            out = subprocess.run(
                [sys.executable, __file__, "--child", args.case, str(args.repeat)],
                env={**os.environ, "PYTHONPATH": os.path.abspath(path)},
                capture_output=True,
                text=True,
                check=True,
            )
            for key, values in json.loads(out.stdout.strip().splitlines()[-1]).items():
                samples[name].setdefault(key, []).extend(values)
    print(f"{args.case}, {args.rounds} rounds, ms: median [min-max]")
    for key in samples["after"]:
        cells = []
        for name, _ in trees:
            v = samples[name][key]
            cells.append(f"{name} {statistics.median(v):8.1f} [{min(v):.1f}-{max(v):.1f}]")
        print(f"  {key:22s} " + "   ".join(cells))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(main())
