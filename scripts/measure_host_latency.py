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

Host latency depends on the machine and on its load: the tables the simulator uses by default
(`"kernel"`) come from the default invocation (3-s runs at 50 Mbit/s, mostly slow start); at
10 Mbit/s in steady state the same machine's receiver takes about four times as long
(docs/model.md). `--rate` and `--duration` measure other regimes, and `--from-results DIR`
pools the turnaround every reliable kernel run in a results directory recorded, without
running anything. The turnaround tables print as a `tcp.host_latency` setting for the
simulator (`{ measured = { receiver_us = [...], sender_us = [...] } }`). Needs root and a
quiet machine (kernel runs happen in real time). Examples:

    sudo python3 scripts/measure_host_latency.py --runs 15 --out host_latency.json
    sudo python3 scripts/measure_host_latency.py --rate 10Mbit/s --duration 20s --runs 3
    python3 scripts/measure_host_latency.py --from-results validation/2hop-10m/results
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

import ccfair
import numpy as np

PROBS = [
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.3,
    0.4,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    0.95,
    0.98,
    0.99,
    0.995,
    0.999,
]


def pooled(quantile_sets: list[dict]) -> list[float]:
    """Quantiles of pooled histograms, approximated by the count-weighted mean of each
    quantile over the runs (Vincent averaging)."""
    sets = [q for q in quantile_sets if q["count"] > 0]  # e.g. no unpaced sender
    weights = np.array([q["count"] for q in sets], dtype=float)
    values = np.array([q["us"] for q in sets], dtype=float)
    return list(np.round((weights[:, None] * values).sum(0) / weights.sum(), 1))


def toml_setting(rx_us: list[float], tx_us: list[float]) -> str:
    """The pooled turnaround tables as a `[tcp]` line for the simulator."""
    fmt = ", ".join
    return (
        "host_latency = { measured = { "
        f"receiver_us = [{fmt(f'{v:g}' for v in rx_us)}], "
        f"sender_us = [{fmt(f'{v:g}' for v in tx_us)}] }} }}"
    )


def from_results(directory: str, out: str | None) -> int:
    """Pool the turnaround tables of every reliable kernel run saved under `directory`."""
    import pandas as pd

    files = glob.glob(os.path.join(directory, "**", "runs", "*.parquet"), recursive=True)
    if not files:
        print(f"--from-results: no runs/*.parquet under {directory!r}", file=sys.stderr)
        return 2
    rx, tx, left_out = [], [], 0
    for f in files:
        try:
            run = pd.read_parquet(f).iloc[0]
            if run["backend"] != "kernel":
                continue
            fw = json.loads(run["selfcheck_json"] or "{}").get("forwarder", {})
        except (OSError, KeyError, IndexError, ValueError, AttributeError):
            left_out += 1  # not a run table of ccfair's (damaged, other schema)
            continue
        if not run["reliable"] or "receiver_turnaround" not in fw:
            left_out += 1
            continue
        rx.append(fw["receiver_turnaround"])
        tx.append(fw["sender_turnaround"])
    if not rx:
        print(f"--from-results: no reliable kernel run under {directory!r}", file=sys.stderr)
        return 2
    result = {
        "probs": PROBS,
        "receiver_turnaround_us": pooled(rx),
        "sender_turnaround_us": pooled(tx),
        "samples": {
            "runs": len(rx),
            "receiver_turnaround": int(sum(q["count"] for q in rx)),
            "sender_turnaround": int(sum(q["count"] for q in tx)),
            "left_out": left_out,
        },
    }
    text = json.dumps(result, indent=1)
    print(text)
    print(toml_setting(result["receiver_turnaround_us"], result["sender_turnaround_us"]))
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15, help="runs per bottleneck delay")
    ap.add_argument("--duration", default="3s")
    ap.add_argument("--rate", default="50Mbit/s", help="bottleneck rate")
    ap.add_argument(
        "--from-results",
        metavar="DIR",
        default=None,
        help="pool the reliable kernel runs saved under DIR instead of running",
    )
    ap.add_argument("--out", default=None, help="write the pooled numbers as JSON here")
    args = ap.parse_args()
    if args.from_results:
        return from_results(args.from_results, args.out)
    if not 1 <= args.runs <= 1000:
        print(f"--runs {args.runs} is not a number of runs in [1, 1000]", file=sys.stderr)
        return 2
    try:  # the rate and duration, checked before any kernel run
        ccfair.dumbbell(2, "cubic", bottleneck_rate=args.rate, duration=args.duration).resolve()
    except ccfair.CcfairError as exc:
        print(f"--rate {args.rate!r} / --duration {args.duration!r}: {exc}", file=sys.stderr)
        return 2
    wake, launch, app_write, rx, tx = [], [], [], [], []
    skipped = 0
    for delay in ("2ms", "18ms", "100ms"):
        for rep in range(args.runs):
            sc = ccfair.dumbbell(
                2,
                ["cubic", "reno"],
                bottleneck_rate=args.rate,
                bottleneck_delay=delay,
                buffer_bdp=1.0,
                duration=args.duration,
                seed=rep + 1,
                name=f"host-latency-{delay}",
            )
            r = ccfair.run(sc, backend="kernel")
            run = r.runs.iloc[0]
            if not run["reliable"]:
                skipped += 1
                print(
                    f"{delay} #{rep}: unreliable ({run['selfcheck_flags']}), left out",
                    file=sys.stderr,
                )
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
    print(toml_setting(result["receiver_turnaround_us"], result["sender_turnaround_us"]))
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
