"""The simulator's cost per packet-hop as the number of flows grows (issue 16, "Scale").

CUBIC flows on a dumbbell at 1 Gbit/s (access links at the same rate, 1 ms; bottleneck
18 ms one way, a buffer of 1 BDP), 10 simulated seconds, sampled once a second so that time
series do not dominate; and 10 flows at 10 Gbit/s. Each point runs the engine alone (the
`run_spec` example, no Python) in a fresh process, the points in turn for ``--repeat``
rounds (fastest of each); the table gives packet-hops, wall time,
nanoseconds per packet-hop and their ratio to the 2-flow point (of the fastest runs, and
within each round: the median and range over the rounds of the point's cost over the 2-flow
point's in the same round, which a machine whose speed drifts over minutes moves less),
the peak resident memory
(`/usr/bin/time`) and the part of it that holds packets (packet slots, retransmission
queues, channel buffers and pipes at their peak), with the most packets in the network at
once and that part's bytes per such packet (memory in proportion to what is in flight, not
to configured buffers). With ``--instructions`` each point also
runs under callgrind (instructions per packet-hop, stable on a busy machine; slow: minutes
at 1000 flows).

    cargo build --release -p ccfair-sim --example run_spec
    python3 benches/scale_curve.py --flows 2 10 100 1000 10000 --out /tmp/scale

Every point fits the default limits of a run (docs/spec.md, "Limits"); the script still
passes its own (``--max-memory-gb``, ``--max-events``) so that larger points can be asked
for.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_SPEC = ROOT / "target" / "release" / "examples" / "run_spec"


def spec(n_flows: int, rate: str) -> dict:
    """The engine spec of one point (resolved by ccfair's dumbbell builder)."""
    sys.path.insert(0, str(ROOT / "python"))
    import ccfair

    sc = ccfair.dumbbell(
        n_flows,
        "cubic",
        bottleneck_rate=rate,
        access_rate=rate,
        bottleneck_delay="18ms",
        buffer_bdp=1.0,
        duration="10s",
        sample_interval="1s",
        name=f"scale-{n_flows}",
    )
    return sc.resolve().engine_spec


def run_point(path: Path, memory_gb: float, events: int) -> dict:
    """Run the engine on ``path``; returns packet-hops, wall time and peak RSS."""
    cmd = [
        "/usr/bin/time",
        "-f",
        "rss_kb %M",
        str(RUN_SPEC),
        str(path),
        str(memory_gb),
        str(events),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"error: {path}: {out.stderr.strip()}")
    m = re.search(
        r"wall ([\d.]+) s, (\d+) events, (\d+) packet-hops, peak heap (\d+), "
        r"\d+ timeseries rows, packet state ([\d.]+) MB, at most (\d+) packets in the network",
        out.stdout,
    )
    rss = re.search(r"rss_kb (\d+)", out.stderr)
    if m is None or rss is None:
        raise SystemExit(f"error: {path}: unexpected output {out.stdout[:200]!r}")
    return {
        "wall_s": float(m.group(1)),
        "events": int(m.group(2)),
        "packet_hops": int(m.group(3)),
        "peak_heap": int(m.group(4)),
        "packet_mb": float(m.group(5)),
        "peak_packets": int(m.group(6)),
        "rss_mb": int(rss.group(1)) / 1024,
    }


def ns_per_hop(run: dict) -> float:
    """Wall nanoseconds per packet-hop of one run."""
    return run["wall_s"] * 1e9 / run["packet_hops"]


def round_ratios(point_runs: list[dict], base_runs: list[dict]) -> list[float]:
    """Each round's cost per packet-hop of a point over the base point's in that round.

    >>> round_ratios([{"wall_s": 2.0, "packet_hops": 10}], [{"wall_s": 1.0, "packet_hops": 20}])
    [4.0]
    """
    return [
        ns_per_hop(run) / ns_per_hop(base) for run, base in zip(point_runs, base_runs, strict=True)
    ]


def ratio_summary(ratios: list[float]) -> str:
    """Median [min-max] of per-round ratios, for the table.

    >>> ratio_summary([1.5, 1.25, 2.0])
    '1.50 [1.25-2.00]'
    """
    return f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"


def instructions(path: Path, memory_gb: float, events: int) -> int:
    """Instructions the whole run_spec process executes (callgrind's total)."""
    out = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            str(RUN_SPEC),
            str(path),
            str(memory_gb),
            str(events),
        ],
        capture_output=True,
        text=True,
    )
    m = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or m is None:
        raise SystemExit(f"error: callgrind on {path}: {out.stderr.strip()[-300:]}")
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", type=int, nargs="+", default=[2, 10, 100, 1000, 10000])
    ap.add_argument("--no-10g", action="store_true", help="leave out 10 flows at 10 Gbit/s")
    ap.add_argument("--out", type=Path, required=True, help="directory for the specs")
    ap.add_argument("--repeat", type=int, default=2, help="runs per point (the fastest counts)")
    ap.add_argument("--instructions", action="store_true", help="also count instructions")
    ap.add_argument("--max-memory-gb", type=float, default=200.0)
    ap.add_argument("--max-events", type=int, default=10**12)
    args = ap.parse_args()
    if any(n < 1 or n > 100_000 for n in args.flows):
        print("error: --flows: each must be 1 to 100000", file=sys.stderr)
        return 2
    if not 1 <= args.repeat <= 100:
        print(f"error: --repeat: {args.repeat} is not a count from 1 to 100", file=sys.stderr)
        return 2
    if not 0 < args.max_memory_gb <= 1e6:
        print(f"error: --max-memory-gb: {args.max_memory_gb} is not in (0, 1e6]", file=sys.stderr)
        return 2
    if args.max_events < 1:
        print(f"error: --max-events: {args.max_events} is not a positive count", file=sys.stderr)
        return 2
    if args.out.exists() and not args.out.is_dir():
        print(f"error: --out: {args.out} is not a directory", file=sys.stderr)
        return 2
    if not RUN_SPEC.exists():
        print(
            f"error: {RUN_SPEC} is missing: cargo build --release -p ccfair-sim --example run_spec",
            file=sys.stderr,
        )
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    points = [(n, "1Gbit/s") for n in args.flows]
    if not args.no_10g:
        points.append((10, "10Gbit/s"))
    paths = []
    for n, rate in points:
        path = args.out / f"scale-{rate.split('/')[0]}-{n}.json"
        path.write_text(json.dumps(spec(n, rate)))
        paths.append(path)
    # The points in turn, `--repeat` rounds: the machine's speed drifts over minutes (on a
    # shared VM the 2-flow point took 68 and 121 ns per packet-hop ten minutes apart), and
    # consecutive repeats of one point would put the drift into the ratios.
    runs: list[list[dict]] = [[] for _ in points]
    for round_ in range(args.repeat):
        for k, path in enumerate(paths):
            runs[k].append(run_point(path, args.max_memory_gb, args.max_events))
        print(f"round {round_ + 1} of {args.repeat} done", file=sys.stderr, flush=True)
    base_k = next(
        k for k, (n, rate) in enumerate(points) if n == min(args.flows) and rate == "1Gbit/s"
    )
    rows = []
    for (n, rate), path, point_runs in zip(points, paths, runs, strict=True):
        within = ratio_summary(round_ratios(point_runs, runs[base_k]))
        best = min(point_runs, key=lambda r: r["wall_s"])
        best["rss_mb"] = max(r["rss_mb"] for r in point_runs)
        if args.instructions:
            best["instr"] = instructions(path, args.max_memory_gb, args.max_events)
        rows.append((n, rate, best, within))
        print(f"{n} flows at {rate}: {best}", file=sys.stderr, flush=True)
    base_ns = ns_per_hop(rows[base_k][2])
    print(
        "| flows | bottleneck | packet-hops | wall (s) | ns per packet-hop | ratio |"
        " ratio within rounds | peak heap |"
        " packet state (MB) | packets in the network (peak) | bytes per packet | peak RSS (MB) |"
        + (" instructions per packet-hop |" if args.instructions else "")
    )
    print(
        "|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if args.instructions else "")
    )
    for n, rate, r, within in rows:
        ns = ns_per_hop(r)
        extra = f" {r['instr'] / r['packet_hops']:.0f} |" if args.instructions else ""
        print(
            f"| {n} | {rate} | {r['packet_hops']:,} | {r['wall_s']:.2f} | {ns:.0f} | "
            f"{ns / base_ns:.2f} | {within} | {r['peak_heap']} | {r['packet_mb']:.1f} | "
            f"{r['peak_packets']:,} | {r['packet_mb'] * 1e6 / max(r['peak_packets'], 1):.0f} | "
            f"{r['rss_mb']:.1f} |"
            f"{extra}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
