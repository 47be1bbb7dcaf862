"""Three points that show what the default hosts change, on the simulator (or any backend).

The points (dumbbell, 50 Mbit/s, bottleneck one-way delay 18 ms, 40 s runs):

1. BBR against BBR at RTTs 40 and 80 ms (access delays 1 and 21 ms), 1 BDP: the share of
   the 40 ms flow;
2. Copa against CUBIC at 2 BDP: Copa's share;
3. four BBR flows at 0.5 BDP: Jain's index.

Linux's values (the kernel backend, Linux 6.18, runs that passed their self-checks, measured
before the default hosts changed; docs/model.md, "The hosts a scenario runs by default")
are printed beside the simulator's median over the seeds.

Usage::

    python3 scripts/default_hosts_points.py                  # the default hosts, seeds 1-3
    python3 scripts/default_hosts_points.py --testbed ideal  # the idealised hosts
    python3 scripts/default_hosts_points.py --seeds 6 --duration 40s

Example:
    >>> [name for name, _ in POINTS]
    ['bbr-40ms-share', 'copa-share', 'jain-4-bbr']
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from typing import Any

import ccfair
from ccfair import backends

#: Linux's values of each point (kernel backend, Linux 6.18; repetitions that passed).
#: jain-4-bbr: the median of the four reliable runs on the forwarder that reads its senders
#: in a drawn order (docs/validation/bbr-among-bbr, 3 of 30 s and 1 of 40 s); the single
#: reliable run of the old forwarder gave 0.75.
LINUX = {"bbr-40ms-share": 0.547, "copa-share": 0.29, "jain-4-bbr": 0.856}


def _share_of_first(result: Any) -> float:
    goodput = result.flows["goodput_mbps"]
    return float(goodput.iloc[0] / goodput.sum())


def _jain(result: Any) -> float:
    goodput = result.flows["goodput_mbps"]
    return float(goodput.sum() ** 2 / (len(goodput) * (goodput**2).sum()))


def _points() -> list[tuple[str, tuple[Callable[..., Any], Callable[[Any], float]]]]:
    common = {"bottleneck_delay": "18ms"}

    def bbr_rtts(**kw: Any) -> Any:
        return ccfair.dumbbell(
            2, "bbr", buffer_bdp=1.0, access_delay=["1ms", "21ms"], **common, **kw
        )

    def copa_cubic(**kw: Any) -> Any:
        return ccfair.dumbbell(2, ["copa", "cubic"], buffer_bdp=2.0, **common, **kw)

    def four_bbr(**kw: Any) -> Any:
        return ccfair.dumbbell(4, "bbr", buffer_bdp=0.5, **common, **kw)

    return [
        ("bbr-40ms-share", (bbr_rtts, _share_of_first)),
        ("copa-share", (copa_cubic, _share_of_first)),
        ("jain-4-bbr", (four_bbr, _jain)),
    ]


POINTS = _points()

#: More seeds than this is a mistake, not a study (3 points x seeds runs of 40 s each).
MAX_SEEDS = 100


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--testbed", help="a testbed name (default: the scenario default)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3)")
    parser.add_argument("--duration", default="40s")
    parser.add_argument("--backend", default="sim")
    args = parser.parse_args(argv)
    if not 1 <= args.seeds <= MAX_SEEDS:
        parser.error(f"--seeds {args.seeds} is not in [1, {MAX_SEEDS}]")
    extra = {} if args.testbed is None else {"testbed": args.testbed}
    try:
        # The backend and every scenario are checked before the first run.
        backends.get(args.backend)
        runs = [
            [build(duration=args.duration, seed=seed, **extra) for seed in range(1, args.seeds + 1)]
            for _, (build, _) in POINTS
        ]
    except ccfair.CcfairError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("point            linux  median  (min-max over seeds)")
    for (name, (_, measure)), scenarios in zip(POINTS, runs, strict=True):
        values = []
        for scenario in scenarios:
            values.append(measure(ccfair.run(scenario, backend=args.backend)))
        print(
            f"{name:16s} {LINUX[name]:.3f}  {statistics.median(values):.3f}   "
            f"({min(values):.3f}-{max(values):.3f})",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
