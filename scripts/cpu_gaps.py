"""How long each CPU is taken away from a real-time thread: pick the CPU for kernel runs.

A thread under SCHED_FIFO reads the monotonic clock in a busy loop on one CPU and counts the
gaps between two reads (time it did not run: interrupts, kernel work that does not yield on
a kernel without full preemption, a hypervisor descheduling the virtual CPU). It runs in
windows of 0.8 s with 0.2 s of sleep between them, so that Linux's real-time throttling
(sched_rt_runtime_us, 0.95 s per second by default) never cuts in. Run it as root on an
otherwise idle machine, before a study (docs/validation/README.md, "A quiet machine"):

    sudo python3 scripts/cpu_gaps.py --seconds 20

Prints one line per CPU: gaps over 1 ms and over 4 ms, and the largest.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

WINDOW_NS = 800_000_000
PAUSE_S = 0.2


def gaps_on(cpu: int, seconds: float) -> tuple[int, int, float]:
    """(gaps over 1 ms, gaps over 4 ms, largest gap in ms) of a busy loop on ``cpu``.

    Example (as root):
        >>> n1, n4, largest = gaps_on(0, 0.5)  # doctest: +SKIP
    """
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    try:
        clock = time.monotonic_ns
        over_1ms = over_4ms = 0
        largest = 0
        end = clock() + int(seconds * 1e9)
        window = last = clock()
        while True:
            t = clock()
            gap = t - last
            if gap > 1_000_000:
                over_1ms += 1
                over_4ms += gap > 4_000_000
            largest = max(largest, gap)
            last = t
            if t > end:
                return over_1ms, over_4ms, largest / 1e6
            if t - window > WINDOW_NS:
                time.sleep(PAUSE_S)
                window = last = clock()
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=20.0, help="per CPU (default 20)")
    p.add_argument("--cpu", type=int, action="append", help="only this CPU (repeatable)")
    args = p.parse_args(argv)
    allowed = sorted(os.sched_getaffinity(0))
    cpus = args.cpu or allowed
    bad = [c for c in cpus if c not in allowed]
    if bad:
        print(f"error: --cpu {bad[0]} is not one of this process's CPUs {allowed}", file=sys.stderr)
        return 2
    if not 0 < args.seconds <= 3600:
        print(f"error: --seconds {args.seconds} is not in (0, 3600]", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("error: needs root (SCHED_FIFO)", file=sys.stderr)
        return 2
    for cpu in cpus:
        n1, n4, largest = gaps_on(cpu, args.seconds)
        print(f"cpu {cpu}: {n1} gaps over 1 ms, {n4} over 4 ms, largest {largest:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
