"""Phase of each flow's arrivals at a busy link, from packet traces (either backend).

A drop-tail queue that stays full frees one slot per departure, and the first packet to
arrive after the departure takes it (Floyd and Jacobson, "On traffic phase effects in
packet-switched gateways", 1992). When a link stays busy and its packets have one size, its
departures keep a fixed period, and a flow whose packets reach it from another busy link of
the same rate arrives at a fixed offset in that period: the *phase*, here the time from the
link's last departure (end of serialisation) to the packet's arrival. A flow that arrives
late in the period loses every contested slot to flows that arrive earlier. This script
prints, per run, each flow's median phase at the link (in microseconds and as a fraction of
one full-size packet's service time), how much it moved over the run, and the flow's queue
drops there.

Input: results directories written with traces (`ccfair run SPEC --trace main --trace
cross1 ... --out DIR` writes DIR/trace/<run_id>.parquet next to DIR/runs/). Example, the
2-hop parking lot's second bottleneck (docs/validation/2hop-10m/README.md):

    python3 scripts/trace_phase.py --link L2 DIR [DIR ...]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

import numpy as np
import pandas as pd
from ccfair.units import parse_duration, parse_rate


def link_of(spec: dict, name: str) -> tuple[int, int]:
    """The link's one-way delay (ns) and rate (bit/s)."""
    for link in spec["links"]:
        if link["name"] == name:
            return parse_duration(link["delay"]), parse_rate(link["rate"])
    names = ", ".join(link["name"] for link in spec["links"])
    raise ScriptError(f"--link: no link {name!r} in this run (links: {names})")


class ScriptError(Exception):
    """A problem with the arguments or the directories: one line, exit status 2."""


def phases(trace: pd.DataFrame, link: str, delay_ns: int, direction: str) -> pd.DataFrame:
    """One row per packet arriving at the busy link: flow, time, event, phase (us)."""
    t = trace[(trace.link_name == link) & (trace.direction == direction)]
    departures = np.sort(t[t.event == "arrive"].t_ns.to_numpy() - delay_ns)
    arrivals = t[t.event.isin(["enqueue", "drop_queue"])]
    i = np.searchsorted(departures, arrivals.t_ns.to_numpy(), side="right") - 1
    ok = i >= 0
    arrivals = arrivals[ok]
    phase_us = (arrivals.t_ns.to_numpy() - departures[i[ok]]) / 1e3
    return pd.DataFrame(
        {
            "flow": arrivals.flow_name.to_numpy(),
            "t_s": arrivals.t_ns.to_numpy() / 1e9,
            "event": arrivals.event.to_numpy(),
            "phase_us": phase_us,
        }
    )


def summary(directory: str, link: str, direction: str, after_s: float) -> list[dict]:
    rows = []
    for path in sorted(glob.glob(os.path.join(directory, "trace", "*.parquet"))):
        run_id = os.path.basename(path).removesuffix(".parquet")
        run_path = os.path.join(directory, "runs", f"{run_id}.parquet")
        if not os.path.isfile(run_path):
            raise ScriptError(
                f"{directory}: trace {run_id} has no run table (runs/{run_id}.parquet)"
            )
        run = pd.read_parquet(run_path).iloc[0]
        delay_ns, rate_bps = link_of(json.loads(run["spec_json"]), link)
        service_us = 1500 * 8 / rate_bps * 1e6
        p = phases(pd.read_parquet(path), link, delay_ns, direction)
        busy = p[(p.phase_us < service_us * 1.05) & (p.t_s >= after_s)]
        for flow, g in busy.groupby("flow"):
            halves = [g[g.t_s < g.t_s.median()], g[g.t_s >= g.t_s.median()]]
            rows.append(
                {
                    "run": run_id,
                    "backend": run["backend"],
                    "seed": int(run["seed"]),
                    "flow": flow,
                    "phase_us": round(float(g.phase_us.median()), 1),
                    "phase_frac": round(float(g.phase_us.median()) / service_us, 3),
                    "moved_us": round(
                        abs(float(halves[1].phase_us.median() - halves[0].phase_us.median())), 1
                    ),
                    "drops": int((p[p.flow == flow].event == "drop_queue").sum()),
                }
            )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", help="results directories with trace/ and runs/")
    ap.add_argument("--link", required=True, help="the link's name, e.g. L2")
    ap.add_argument("--direction", default="ab", choices=["ab", "ba"])
    ap.add_argument("--after", type=float, default=5.0, help="seconds to skip (start-up)")
    args = ap.parse_args()
    try:
        rows = [r for d in args.dirs for r in summary(d, args.link, args.direction, args.after)]
    except ScriptError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not rows:
        print("no traced runs found (DIR/trace/*.parquet)", file=sys.stderr)
        return 2
    print(pd.DataFrame(rows).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
