"""The engine's wall time with two (or more) builds of ccfair's native module, alternated.

Each round starts one fresh process per build, in turn; the process loads that build's
``_core`` extension from its path and times ``_core.run`` (the engine and its result
columns, no Python tables) on each case's 60 s engine spec. Printed: min and median per case
and build. Used for the plain and the profile-guided build (benches/README.md,
"Profile-guided build"): a plain build is ``python/ccfair/_core.abi3.so`` after ``pip install
-e .``; a guided one is in the wheel ``scripts/install_pgo.sh`` builds (or in
``site-packages/ccfair/`` after it installed one).

    python3 benches/build_compare.py --rounds 11 PLAIN.so GUIDED.so
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tree_args import count_error

ROOT = Path(__file__).resolve().parents[1]
CASES = ["dumbbell-bbr-vs-cubic-a0.5", "dumbbell-bbr-vs-cubic-a16", "parking-lot-10hop-bbr-main"]

CHILD = r"""
import importlib.util, json, sys, time
spec = importlib.util.spec_from_file_location("ccfair._core", sys.argv[1])
core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(core)
out = {}
for name, engine_json in json.load(open(sys.argv[2])).items():
    t0 = time.perf_counter()
    core.run(engine_json)
    out[name] = time.perf_counter() - t0
print(json.dumps(out))
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("builds", nargs="+", type=Path, help="paths of _core extension files")
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--case", action="append", choices=CASES, help="default: all")
    args = p.parse_args(argv)
    for b in args.builds:
        if not b.is_file():
            p.error(f"build: {b} is not a file (a built _core extension)")
    why = count_error("--rounds", args.rounds, 1000)
    if why:
        p.error(why)
    sys.path.insert(0, str(ROOT / "python"))
    from ccfair import bench

    cases = args.case or CASES
    specs = {c: bench.scenario_for(c, "60s").resolve().engine_json for c in cases}
    times: dict[Path, dict[str, list[float]]] = {b: {c: [] for c in cases} for b in args.builds}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(specs, f)
        f.flush()
        for _ in range(args.rounds):
            for b in args.builds:
                cmd = [sys.executable, "-c", CHILD, str(b), f.name]
                done = subprocess.run(cmd, capture_output=True, text=True)
                if done.returncode != 0:
                    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                    p.error(f"build: {b} did not load or run as ccfair's _core: {last}")
                for c, t in json.loads(done.stdout).items():
                    times[b][c].append(t)
    for c in cases:
        cells = [
            f"{b}: min {min(times[b][c]):.4f} median {statistics.median(times[b][c]):.4f}"
            for b in args.builds
        ]
        print(f"{c}\n  " + "\n  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
