"""Measure how fast real hosts react on the kernel backend: the numbers behind the
simulator's host latency model (docs/model.md, "Host latency";
crates/ccfair-sim/src/host.rs).

Runs short two-flow dumbbells (CUBIC and Reno, which Linux does not pace, 50 Mbit/s, one
BDP of buffer) on the kernel backend at bottleneck delays of 2, 18 and 100 ms and pools,
over the runs the self-checks call reliable:

- app wake-up: from a flow's start to its application's connect(), and from the SYN-ACK's
  delivery to the application's return from connect() (both: a sleeping thread woken);
- sender turnaround: an ACK delivered to the sending host to the data it releases;
- receiver turnaround: a data segment delivered to the receiving host to its ACK;
- for reference, the start-to-SYN and SYN-ACK-to-first-data times the network sees.

Needs root and a quiet machine (kernel runs happen in real time). Example:

    sudo python3 scripts/measure_host_latency.py --runs 15 --out host_latency.json
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

import ccfair

PROBS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99,
         0.995, 0.999]


def pooled(quantile_sets: list[dict]) -> list[float]:
    """Quantiles of pooled histograms, approximated by the count-weighted mean of each
    quantile over the runs (Vincent averaging)."""
    weights = np.array([q["count"] for q in quantile_sets], dtype=float)
    values = np.array([q["us"] for q in quantile_sets], dtype=float)
    return list(np.round((weights[:, None] * values).sum(0) / weights.sum(), 1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15, help="runs per bottleneck delay")
    ap.add_argument("--duration", default="3s")
    ap.add_argument("--out", default=None, help="write the pooled numbers as JSON here")
    args = ap.parse_args()
    wake, launch, app_write, rx, tx = [], [], [], [], []
    skipped = 0
    for delay in ("2ms", "18ms", "100ms"):
        for rep in range(args.runs):
            sc = ccfair.dumbbell(
                2, ["cubic", "reno"], bottleneck_delay=delay, buffer_bdp=1.0,
                duration=args.duration, seed=rep + 1, name=f"host-latency-{delay}",
            )
            r = ccfair.run(sc, backend="kernel")
            run = r.runs.iloc[0]
            if not run["reliable"]:
                skipped += 1
                print(f"{delay} #{rep}: unreliable ({run['selfcheck_flags']}), left out", file=sys.stderr)
                continue
            s = json.loads(run["selfcheck_json"])
            fl = r.flows
            starts = [f.start / 1e9 for f in sc.flows]
            synack = fl["syn_sent_s"] + fl["handshake_rtt_ms"] / 1e6
            for i in range(len(fl)):
                wake.append((s["connect_s"][i] - starts[i]) * 1e6)
                wake.append((s["established_s"][i] - synack.iloc[i]) * 1e6)
                launch.append((fl["syn_sent_s"].iloc[i] - starts[i]) * 1e6)
                app_write.append((fl["first_data_sent_s"].iloc[i] - synack.iloc[i]) * 1e6)
            rx.append(s["forwarder"]["receiver_turnaround"])
            tx.append(s["forwarder"]["sender_turnaround"])
            print(f"{delay} #{rep}: ok", file=sys.stderr)
    result = {
        "probs": PROBS,
        "app_wake_us": list(np.round(np.quantile(wake, PROBS), 1)),
        "receiver_turnaround_us": pooled(rx),
        "sender_turnaround_us": pooled(tx),
        "start_to_syn_us": list(np.round(np.quantile(launch, PROBS), 1)),
        "synack_to_first_data_us": list(np.round(np.quantile(app_write, PROBS), 1)),
        "samples": {
            "app_wake": len(wake),
            "receiver_turnaround": int(sum(q["count"] for q in rx)),
            "sender_turnaround": int(sum(q["count"] for q in tx)),
            "runs": len(rx),
            "unreliable_runs_left_out": skipped,
        },
        "kernel": r.runs.iloc[0]["kernel"],
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
