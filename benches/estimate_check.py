"""A run's resource estimate against what runs measure (issue 16, "Scale"; docs/spec.md,
"Limits"; benches/README.md, "Memory and events of many flows").

Each case runs the engine (``_core.run``, limits raised so that nothing is refused) and
compares the packet memory it held at its peak (``engine.packet_state_bytes``: packet
slots, retransmission queues, channel buffers and pipes) with the estimate's packets x
400 bytes, and its events with the estimated events. Exit status 1 if any measurement
exceeds its estimate.

    python3 benches/estimate_check.py            # the grid: 144 dumbbells of 5 s (~1 min)
    python3 benches/estimate_check.py --set extra  # 2000 flows, 30 s, parking lots, 10 Gbit/s
    python3 benches/estimate_check.py --quick    # the two cases closest to the estimate
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

#: Bytes per packet held, as the estimate counts them (crates/ccfair-sim/src/estimate.rs).
PACKET_STATE_BYTES = 400


def dumbbell(
    n: int, cca: str, bdp: float, rate: str, delay: str, duration: str, **more: Any
) -> tuple[str, Any]:
    """A case: a dumbbell of ``n`` flows of ``cca`` over a bottleneck of ``rate``, ``delay``
    and ``bdp`` x BDP, sampled once a second (``more``: other ``ccfair.dumbbell`` arguments),
    and its name."""
    import ccfair

    sc = ccfair.dumbbell(
        n,
        cca,
        buffer_bdp=bdp,
        bottleneck_rate=rate,
        bottleneck_delay=delay,
        duration=duration,
        sample_interval="1s",
        **more,
    )
    extra = " " + " ".join(f"{k}" for k in more) if more else ""
    return f"{cca} n={n} bdp={bdp} {rate} {delay} {duration}{extra}", sc


def grid() -> Iterator[tuple[str, Any]]:
    """Dumbbells: every algorithm x 2/20/200 flows x 0.1/1/8 BDP x two rates x two delays."""
    for cca, n, bdp, rate, delay in itertools.product(
        ["bbr", "cubic", "reno", "copa"],
        [2, 20, 200],
        [0.1, 1, 8],
        ["50Mbit/s", "1Gbit/s"],
        ["2ms", "50ms"],
    ):
        yield dumbbell(n, cca, bdp, rate, delay, "5s")


def extra() -> Iterator[tuple[str, Any]]:
    """Many flows, long runs over shallow buffers, mixed RTTs, parking lots, 10 Gbit/s."""
    import ccfair

    for cca in ["copa", "bbr", "cubic"]:
        for rate, delay, bdp in [
            ("50Mbit/s", "2ms", 0.1),
            ("1Gbit/s", "50ms", 1),
            ("50Mbit/s", "50ms", 0.1),
        ]:
            yield dumbbell(2000, cca, bdp, rate, delay, "5s")
    for cca in ["bbr", "copa"]:
        for n in (2, 20):
            yield dumbbell(n, cca, 0.1, "1Gbit/s", "50ms", "30s")
            mixed = [f"{1 + 20 * (i % 3)}ms" for i in range(n)]
            yield dumbbell(n, cca, 0.1, "1Gbit/s", "2ms", "30s", access_delay=mixed)
    for main, cross in [("bbr", "cubic"), ("cubic", "bbr"), ("copa", "copa")]:
        for bdp in (0.1, 2):
            yield (
                f"parking lot 10 {main}/{cross} bdp={bdp}",
                ccfair.parking_lot(
                    10, main, cross, buffer_bdp=bdp, duration="10s", sample_interval="1s"
                ),
            )
    yield dumbbell(10, "bbr", 1, "10Gbit/s", "18ms", "2s", access_rate="10Gbit/s")
    yield (
        "bbr vs cubic 50Mbit/s bdp=0.5 60s",
        ccfair.dumbbell(2, ["bbr", "cubic"], buffer_bdp=0.5, duration="60s"),
    )


def quick() -> Iterator[tuple[str, Any]]:
    """The two cases of the grid closest to the estimate, 2 s each."""
    yield dumbbell(2, "bbr", 0.1, "1Gbit/s", "2ms", "2s")
    yield dumbbell(20, "copa", 0.1, "1Gbit/s", "50ms", "2s")


def measure(sc: Any) -> tuple[float, float, float]:
    """(measured / estimated packet memory, measured / estimated events, events per hop)."""
    from ccfair import _core
    from ccfair.limits import estimate

    resolved = sc.resolve()
    est = estimate(resolved)
    unlimited = json.dumps({"memory_bytes": 10**15, "events": 10**15})
    engine = _core.run(resolved.engine_json, None, unlimited)["engine"]
    memory = engine["packet_state_bytes"] / (est.packets * PACKET_STATE_BYTES)
    return memory, engine["events"] / est.events, engine["events"] / max(engine["packet_hops"], 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=["grid", "extra", "all"], default="grid")
    ap.add_argument("--quick", action="store_true", help="only the two closest cases, 2 s each")
    args = ap.parse_args()
    if args.quick:
        cases = quick()
    else:
        cases = {"grid": grid, "extra": extra}.get(
            args.set, lambda: itertools.chain(grid(), extra())
        )()
    worst = {"memory": (0.0, ""), "events": (0.0, "")}
    print(f"{'case':48s} {'memory':>7s} {'events':>7s} {'ev/hop':>7s}  (measured / estimated)")
    for name, sc in cases:
        memory, events, per_hop = measure(sc)
        print(f"{name:48s} {memory:7.2f} {events:7.2f} {per_hop:7.2f}", flush=True)
        worst["memory"] = max(worst["memory"], (memory, name))
        worst["events"] = max(worst["events"], (events, name))
    for what, (ratio, name) in worst.items():
        print(f"largest {what} ratio {ratio:.2f} ({name})")
    return 1 if max(r for r, _ in worst.values()) > 1 else 0


if __name__ == "__main__":
    sys.exit(main())
