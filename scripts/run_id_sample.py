"""Run ids, engine inputs and result digests of a fixed sample of scenarios.

A refactoring check (issue 12): run it before and after a change and diff the outputs; a
change that keeps behaviour bit-identical keeps every line. Each line: what, backend, run id,
a digest of the engine's input (``Resolved.engine_json``) and, for the short runs, a digest of
the flows and time-series tables.

Example:
    python3 scripts/run_id_sample.py > before.txt
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from ccfair.execution.runs import run
from ccfair.presets import PRESETS
from ccfair.spec.identity import run_id_of
from ccfair.spec.scenario import Scenario
from ccfair.spec.shapes import dumbbell, parking_lot
from ccfair.spec.sweep import Sweep

ROOT = Path(__file__).resolve().parents[1]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def scenarios() -> list[tuple[str, Scenario]]:
    """The sample: scenario files, builders with options, every preset's quick grid."""
    out = [
        (p.name, Scenario.from_toml(p))
        for p in sorted((ROOT / "scenarios").glob("*.toml"))
        if "sweep" not in p.name
    ]
    out += [
        ("dumbbell-bbr-cubic", dumbbell(2, ["bbr", "cubic"], duration="3s")),
        ("dumbbell-copa-params", dumbbell(2, "copa", cca_params={"delta": 0.1}, duration="3s")),
        (
            "dumbbell-tcp",
            dumbbell(
                3,
                "reno",
                tcp={"sack": False, "hz": 250},
                duration="3s",
                start_jitter="5ms",
                buffer_pkts=50,
            ),
        ),
        ("parking-lot-2", parking_lot(2, "bbr", "cubic", duration="3s")),
        (
            "bbr-variant",
            dumbbell(2, "bbr", cca_params={"rtprop_trigger": "rtt_ratio"}, duration="3s"),
        ),
    ]
    sweep = Sweep.from_toml(ROOT / "scenarios" / "sweep_dumbbell.toml")
    out += [(f"sweep_dumbbell[{p.index}]", p.scenario) for p in sweep.expand()]
    for name, preset in sorted(PRESETS.items()):
        for p in preset.sweep(quick=True).expand():
            out.append((f"{name}[{p.index}]", p.scenario))
    return out


def main() -> int:
    """Print one line per scenario and backend; short runs also get a result digest."""
    for label, sc in scenarios():
        r = sc.resolve()
        for backend in ("sim", "kernel"):
            print(label, backend, run_id_of(r.normalized, backend), _digest(r.engine_json))
        if label.startswith(("dumbbell-", "parking-lot-", "bbr-variant")):
            res = run(sc)
            flows = res.flows.to_csv(index=False)
            ts = res.timeseries.to_csv(index=False)
            print(label, "results", _digest(flows), _digest(ts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
