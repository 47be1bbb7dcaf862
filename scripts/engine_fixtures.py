"""Write the engine inputs of Python-built scenarios that the Rust tests reuse.

The Rust end-to-end tests (crates/ccfair-sim/tests) need specs of the topologies users
build in Python, on the idealised hosts (``testbed = "ideal"``: the engine's own defaults,
which the Rust tests' snapshots were made with). Rather than rebuild them by hand, they
load what the Python builders produce, stored here as fixtures;
tests/test_engine_fixtures.py fails when a builder's output and its fixture part, and this
script regenerates them:

    python scripts/engine_fixtures.py
"""

from __future__ import annotations

import json
from pathlib import Path

import ccfair

FIXTURES = Path(__file__).resolve().parent.parent / "crates" / "ccfair-sim" / "tests" / "fixtures"


def fixtures() -> dict[str, ccfair.Scenario]:
    """Each fixture's file name and the scenario it stores.

    Example:
        >>> sorted(fixtures())
        ['dumbbell-2flows.json', 'dumbbell-bbr-cubic-a0.5.json']
    """
    return {
        # The fairness table (crates/ccfair-sim/tests/fairness.rs): two flows on a
        # 20 Mbit/s, 24 ms RTT dumbbell (BDP 40 packets); the test sets the algorithms
        # and the bottleneck buffer.
        "dumbbell-2flows.json": ccfair.dumbbell(
            2,
            "reno",
            bottleneck_rate="20Mbit/s",
            bottleneck_delay="10ms",
            buffer_pkts=40,
            duration="20s",
            measure=("5s", "20s"),
            testbed="ideal",
        ),
        # The benchmark's shallow-buffer row (`ccfair bench`, issue 16), whose busy
        # bottleneck delivers packets on a lattice of serialisation times that meets the
        # sampling instants: simultaneous events that tests/feed_ahead.rs must order as the
        # engine does.
        "dumbbell-bbr-cubic-a0.5.json": ccfair.dumbbell(
            2, ["bbr", "cubic"], buffer_bdp=0.5, duration="60s", testbed="ideal"
        ),
    }


def engine_json(scenario: ccfair.Scenario) -> str:
    """The scenario's engine input, indented for review.

    Example:
        >>> '"bottleneck"' in engine_json(ccfair.dumbbell(2, "reno"))
        True
    """
    return json.dumps(scenario.resolve().engine_spec, indent=1, sort_keys=True) + "\n"


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, scenario in fixtures().items():
        (FIXTURES / name).write_text(engine_json(scenario))
        print(FIXTURES / name)


if __name__ == "__main__":
    main()
