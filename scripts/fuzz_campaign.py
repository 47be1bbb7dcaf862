"""A fuzz campaign as a hostile user would run it: mutated scenario specs through the Python
API and the CLI, mutated sweep specs, counting aborts, hangs and raw exceptions.

Every input must end as a result within its estimate or as one ccfair error (one line; exit 2
in the CLI). Anything else is a finding: an abort (the process died by a signal), a hang (no
answer within --timeout seconds), a raw exception (not a ccfair error), an exit status other
than 0 or 2, a traceback, or a run above its estimate.

    python3 scripts/fuzz_campaign.py --api 10000 --cli 500 --sweeps 500 --out fuzz.json
    python3 scripts/fuzz_campaign.py --calibrate    # peak memory per engine byte of a run

API specs run in worker subprocesses (so that an abort is caught and counted, not fatal);
each worker records the spec it is on before running it.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

BASE: dict[str, Any] = {
    "name": "fuzz",
    "duration": "2s",
    "sample_interval": "50ms",
    "links": [
        {"between": ["h1", "s1"], "rate": "100Mbit/s", "delay": "1ms"},
        {
            "name": "bottleneck",
            "between": ["s1", "s2"],
            "rate": "10Mbit/s",
            "delay": "5ms",
            "buffer": {"bdp": 1.0, "reference": "f1"},
            "queue": "fq_codel",
            "qdisc": {"target": "5ms", "ecn": True},
        },
        {"between": ["s2", "h2"], "rate": "100Mbit/s", "delay": "1ms"},
        {"between": ["h3", "s1"], "rate": "100Mbit/s", "delay": "3ms"},
    ],
    "testbed": "linux-stock",
    "kernel": "6.18",
    "flows": [
        {"name": "f1", "src": "h1", "dst": "h2", "cca": "cubic", "tcp": {"ecn": 1}},
        {
            "name": "f2",
            "src": "h3",
            "dst": "h2",
            "cca": "bbr",
            "start": "0.5s",
            "tcp": {"rmem": [4096, 131072, 6291456], "rcv_truesize_bytes": 2304},
        },
        {"name": "f3", "src": "h1", "dst": "h2", "cca": "copa", "tcp": {"sack": True}},
    ],
}
SWEEP_BASE: dict[str, Any] = {
    "name": "fz",
    "base": {"builder": "dumbbell", "duration": "1s", "ccas": ["reno", "bbr"]},
    "grid": {
        "alpha": [1, 2],
        "delay": ["2ms", "18ms"],
        "bottleneck_queue": ["fq_codel", {"queue": "codel", "ecn": True}],
        "testbed": ["ideal", "linux-stock"],
    },
    "repetitions": 1,
}
INTERESTING = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2**31 - 1,
    2**32 - 1,
    2**63,
    2**64,
    10**30,
    0.5,
    -0.0,
    1e308,
    float("inf"),
    float("nan"),
    "",
    " ",
    "x",
    "1ns",
    "1e10s",
    "0s",
    "-5ms",
    "1e999999999Mbit/s",
    "１s",
    "1Tbit/s",
    "100Tbit/s",
    "reno",
    "bbr",
    "vegas",
    "h1",
    "s2",
    "../../x",
    "..",
    "/tmp/x",
    "a" * 100_000,
    [],
    {},
    [1, 2, 3],
    {"bdp": 1e9, "reference": "f1"},
    {"init_cwnd": 2**32 - 1},
    "fit",
    "linux",
    [1, 1, 1],
    [4096, 131072, 2**31 - 1],
    {"rmem": [1, 1, 1]},
    {"rmem": "linux", "rcv_truesize_bytes": 2**20},
    {"mss": 536, "rcv_truesize_bytes": 588},
    ["h1", "h1"],
    [[[[[[1]]]]]],
    {"a": {"b": {"c": {"d": 1}}}},
    "len([0]*400000000) > 0",
    "not " * 100 + "alpha",
    "alpha > 1",
    {"file": "/dev/zero"},
    # Round three: numpy scalars as a notebook has them, exotic strings, the new fields.
    np.float64(0.01),
    np.float64("nan"),
    np.float64("inf"),
    np.float64(-0.0),
    np.float32(0.5),
    np.int64(7),
    np.int64(-1),
    np.int64(2**62),
    np.bool_(True),
    np.linspace(0.001, 0.01, 3),
    10**400,
    -(10**400),
    "\ud800",
    "a\udcffb",
    "\x00",
    "a\nb",
    "\u202e\u0645",
    "\t",
    "é" * 300,
    "ideal",
    "linux-stock",
    "mininet-netem",
    "6.18",
    "4.13",
    "4.15",
    "codel",
    "fq_codel",
    "pie",
    "red",
    "droptail",
    {"queue": "codel", "target": "5ms"},
    {"target": "5ms", "ecn": True, "ce_threshold": "1ms"},
    {"limit": 0, "quantum": 2**40},
    {"ecn": 1, "ecn_receiver": 2, "ecn_fallback": False},
    "dctcp",
]


#: Top-level keys a mutation may add or replace (never "backend": the campaign runs the
#: simulator only, as a kernel or veth run needs root and a quiet machine).
API_KEYS = ["tcp", "measure", "nodes", "seed", "testbed", "kernel", "sample_interval"]


def random_value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if r < 0.55 or depth > 3:
        # A copy: mutating a shared pool value in place would change later specs.
        return copy.deepcopy(rng.choice(INTERESTING))
    if r < 0.7:
        return rng.randint(-(2**66), 2**66)
    if r < 0.8:
        return "".join(
            rng.choice("0123456789.eE+-smunbit/kMGTx ") for _ in range(rng.randint(0, 12))
        )
    if r < 0.9:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["a", "rate", "delay", "cca", "x"]): random_value(rng, depth + 1)}


def leaf_paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += leaf_paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += leaf_paths(v, (*prefix, i))
    return out


def mutate(rng: random.Random, doc: Any, keys: list[str]) -> Any:
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        paths = [p for p in leaf_paths(doc) if p]
        choice = rng.random()
        if choice < 0.15 and isinstance(doc, dict):  # a new or known top-level key
            doc[rng.choice(keys)] = random_value(rng)
            continue
        path = rng.choice(paths)
        parent: Any = doc
        for k in path[:-1]:
            parent = parent[k]
        last = path[-1]
        if choice < 0.25 and isinstance(parent, dict):
            del parent[last]
        elif choice < 0.35 and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
        else:
            parent[last] = random_value(rng)
    return doc


def notebook_spec(rng: random.Random) -> dict[str, Any]:
    """A valid spec as a notebook writes it (numpy numbers; the testbed, kernel, queue and
    ECN fields set), sometimes mutated once: inputs that run, so that runs are checked
    against their estimates too."""
    doc = copy.deepcopy(BASE)
    doc["duration"] = np.float64(rng.choice([0.5, 1.0]))
    doc["seed"] = np.int64(rng.randint(0, 2**31))
    doc["links"][1]["delay"] = np.float64(rng.choice([0.001, 0.005, 0.02]))
    doc["links"][1]["buffer"]["bdp"] = np.float32(rng.choice([0.5, 1.0, 4.0]))
    doc["testbed"] = rng.choice(["ideal", "linux-stock", "mininet-netem", "core-netem"])
    doc["kernel"] = rng.choice(["6.18", "4.15", "4.13"])
    if doc["testbed"] == "ideal":
        del doc["kernel"]  # ideal hosts are no kernel's
    queue = rng.choice(["codel", "fq_codel", "pie", "red", "droptail"])
    doc["links"][1]["queue"] = queue
    if queue in ("codel", "fq_codel"):
        doc["links"][1]["qdisc"] = {"target": rng.choice(["1ms", "5ms"]), "ecn": True}
    else:
        del doc["links"][1]["qdisc"]
    doc["flows"][0]["tcp"] = {"ecn": rng.choice([0, 1, 2])}
    return mutate(rng, doc, API_KEYS) if rng.random() < 0.3 else doc


# ---- workers ---------------------------------------------------------------------------------


def api_worker(kind: str, seed: int, start: int, count: int, progress: str) -> None:
    """Run specs start..start+count of a seeded sequence; one JSON line per finding."""
    import ccfair
    from ccfair.errors import CcfairError
    from ccfair.limits import Limits, estimate
    from ccfair.spec.sweep import Sweep

    limits = Limits(memory="500MB", events=500_000)

    def on_alarm(signum: int, frame: Any) -> None:
        raise TimeoutError("hang")

    signal.signal(signal.SIGALRM, on_alarm)
    for i in range(start, start + count):
        rng = random.Random(f"{seed}-{kind}-{i}")
        if kind == "api":
            doc = notebook_spec(rng) if rng.random() < 0.05 else mutate(rng, BASE, API_KEYS)
        else:
            doc = mutate(rng, SWEEP_BASE, ["filters", "baselines", "bottlenecks", "preset"])
        Path(progress).write_text(str(i))
        signal.alarm(int(os.environ.get("FUZZ_TIMEOUT", "120")))
        outcome: dict[str, Any] = {"i": i}
        try:
            if kind == "api":
                sc = ccfair.Scenario.from_dict(doc)
                est = estimate(sc.resolve())
                r = ccfair.run(sc, limits=limits)
                events = int(r.runs["engine_events"].iloc[0])
                over = (
                    len(r.links) != est.link_rows
                    or len(r.timeseries) > est.timeseries_rows
                    or events > est.events
                )
                outcome.update(ok="ran", ratio=events / max(est.events, 1))
                if over:
                    outcome.update(ok="over_estimate", events=events, estimate=est.events)
            else:
                Sweep.from_dict(doc).expand(limits=Limits(runs=300))
                outcome.update(ok="expanded")
        except CcfairError as exc:
            text = str(exc)
            one_line = text and "\n" not in text and len(text) < 5000
            outcome.update(ok="error" if one_line else "bad_message", message=text[:300])
        except TimeoutError:
            outcome.update(ok="hang", spec=repr(doc)[:2000])
        except BaseException as exc:  # noqa: BLE001 - this is what the campaign looks for
            outcome.update(
                ok="raw", error=f"{type(exc).__name__}: {exc}"[:300], spec=repr(doc)[:2000]
            )
        finally:
            signal.alarm(0)
        print(json.dumps(outcome, default=str), flush=True)


def run_api(kind: str, n: int, seed: int, chunk: int = 250) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    start = 0
    with tempfile.TemporaryDirectory() as tmp:
        progress = str(Path(tmp) / "at")
        while start < n:
            count = min(chunk, n - start)
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--worker",
                    kind,
                    str(seed),
                    str(start),
                    str(count),
                    progress,
                ],
                capture_output=True,
                text=True,
            )
            lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
            results += lines
            done = {r["i"] for r in lines}
            if proc.returncode != 0:  # died: the spec it was on is an abort
                at = int(Path(progress).read_text())
                results.append(
                    {
                        "i": at,
                        "ok": "abort",
                        "status": proc.returncode,
                        "stderr": proc.stderr[-500:],
                    }
                )
                start = at + 1
            else:
                start += count
            assert all(start > i for i in done)
            print(f"{kind}: {min(start, n)}/{n}", file=sys.stderr, flush=True)
    return results


def run_cli(n: int, seed: int, timeout: float) -> list[dict[str, Any]]:
    from ccfair.spec.toml import dumps  # the project's own TOML writer

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            rng = random.Random(f"{seed}-cli-{i}")
            doc = mutate(rng, BASE, API_KEYS)
            path = Path(tmp) / f"s{i}.toml"
            try:
                path.write_text(dumps(doc), encoding="utf-8", errors="surrogatepass")
            except Exception:  # noqa: BLE001 - not writable as TOML: write it raw
                path.write_bytes(repr(doc).encode("utf-8", "surrogatepass"))
            cmd = [
                sys.executable,
                "-m",
                "ccfair",
                "run",
                str(path),
                "--out",
                str(Path(tmp) / "out"),
                "-q",
                "--max-events",
                "500000",
                "--max-memory",
                "500MB",
            ]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                results.append({"i": i, "ok": "hang"})
                continue
            err = [ln for ln in p.stderr.splitlines() if ln.strip()]
            if p.returncode == 0:
                ok = "ran"
            elif p.returncode == 2 and len(err) == 1 and err[0].startswith("error: "):
                ok = "error"
            elif p.returncode < 0:
                ok = "abort"
            else:
                ok = "raw"
            out = {"i": i, "ok": ok, "status": p.returncode}
            if ok in ("raw", "abort"):
                out["stderr"] = p.stderr[-500:]
            results.append(out)
            if i % 50 == 0:
                print(f"cli: {i}/{n}", file=sys.stderr, flush=True)
    return results


CALIBRATE_CODE = """
import json, resource, sys, tempfile
import pandas, pyarrow, pyarrow.parquet  # loaded before the baseline: not the run's memory
import ccfair, ccfair.results, ccfair.schema
from ccfair.limits import estimate
sc = ccfair.parking_lot(10, rate="2Mbit/s", access_rate="10Mbit/s", duration=sys.argv[1],
                        sample_interval=sys.argv[2])
est = estimate(sc.resolve())
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
r = ccfair.run(sc, limits={"memory": 10**13})
with tempfile.TemporaryDirectory() as out:
    r.save(out)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"duration": sys.argv[1], "rows": est.timeseries_rows + est.link_rows,
                  "engine_bytes": est.timeseries_bytes, "peak_minus_base": peak - base,
                  "estimate_bytes": est.memory_bytes}))
"""


def calibrate(durations: tuple[str, str] = ("30s", "120s"), interval: str = "1ms") -> None:
    """Peak memory of a run per engine byte of its time series (``TIMESERIES_PEAK_TENTHS``
    in estimate.rs): the same 10-hop parking lot at two durations, each in a fresh process,
    and the slope between them, so that fixed costs (libraries, the event queue, packets)
    cancel out."""
    points = []
    for duration in durations:
        out = subprocess.run(
            [sys.executable, "-c", CALIBRATE_CODE, duration, interval],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        points.append(json.loads(out))
        print(out, flush=True)
    small, large = points
    slope = (large["peak_minus_base"] - small["peak_minus_base"]) / (
        large["engine_bytes"] - small["engine_bytes"]
    )
    ratio = large["peak_minus_base"] / large["engine_bytes"]
    print(
        json.dumps({"per_engine_byte_slope": round(slope, 3), "per_engine_byte": round(ratio, 3)})
    )


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        kind, seed, start, count, progress = sys.argv[2:7]
        api_worker(kind, int(seed), int(start), int(count), progress)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--api", type=int, default=10_000, help="scenario specs via the Python API")
    ap.add_argument("--cli", type=int, default=500, help="scenario specs via ccfair run")
    ap.add_argument("--sweeps", type=int, default=500, help="sweep specs via Sweep.expand")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a hang")
    ap.add_argument("--out", help="write every outcome as JSON here")
    ap.add_argument("--calibrate", action="store_true", help="measure memory per engine byte")
    args = ap.parse_args()
    if args.calibrate:
        calibrate()
        return 0
    os.environ["FUZZ_TIMEOUT"] = str(int(args.timeout))
    t0 = time.monotonic()
    found = {
        "api": run_api("api", args.api, args.seed) if args.api else [],
        "cli": run_cli(args.cli, args.seed, args.timeout) if args.cli else [],
        "sweeps": run_api("sweep", args.sweeps, args.seed) if args.sweeps else [],
    }
    bad = ("abort", "hang", "raw", "bad_message", "over_estimate")
    summary = {}
    for kind, rows in found.items():
        counts: dict[str, int] = {}
        for r in rows:
            counts[r["ok"]] = counts.get(r["ok"], 0) + 1
        ratios = [r["ratio"] for r in rows if "ratio" in r]
        summary[kind] = {"total": len(rows), **counts}
        if ratios:
            summary[kind]["events_over_estimate_max"] = round(max(ratios), 4)
    summary["wall_s"] = round(time.monotonic() - t0, 1)
    print(json.dumps(summary, indent=1))
    if args.out:
        Path(args.out).write_text(
            json.dumps({"summary": summary, "outcomes": found}, indent=0, default=str)
        )
    findings = [r for rows in found.values() for r in rows if r["ok"] in bad]
    for r in findings[:10]:
        print(json.dumps(r, default=str)[:800], file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
