"""Wall time of ccfair against ns-3 on the same dumbbell, side by side (issue 16).

For each row (bottleneck one-way delay D, buffer alpha x BDP) this runs, in turn and each in
a fresh process pinned to one CPU (``taskset -c CPU``), the ns-3 program of
benches/ns3/dumbbell.cc and ``ccfair.run()`` on ccfair's ``dumbbell(2, ["bbr", "cubic"],
bottleneck_delay=D, buffer_bdp=alpha)`` (the scenario of ``ccfair bench``'s
``dumbbell-bbr-vs-cubic*`` cases), ``--repeat`` times, alternating which side goes first.
It prints a table of the medians with their spreads (min-max) and each side's per-flow
goodput and shares, so that a run that went wrong shows, and the load average
(/proc/loadavg) before and after each row.

Timed on the ccfair side: the first ``ccfair.run()`` call of the fresh process (scenario
resolution, engine, result tables, and the imports ccfair makes lazily; 10 ms sampling by
default), as the issue's table times it. Reported next to it: the whole process (interpreter
start included), a second ``run()`` in the same process (warm: what a sweep's worker pays
per run) and the engine alone (``runs.wall_time_s``). On the ns-3 side: the whole process
(its set-up takes a few milliseconds).

Usage (build the ns-3 program first with benches/ns3/build.sh)::

    PYTHONPATH=python python benches/ns3/compare.py --row 18:0.5 --row 18:2 --row 18:16
    python benches/ns3/compare.py --row 100:16 --repeat 1 --json out.json

Bad arguments exit with status 2 and one line naming the argument.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_BINARY = HERE / "build" / "dumbbell"
DEFAULT_ROWS = ["18:0.5", "18:2", "18:16"]


@dataclass(frozen=True)
class Row:
    """One scenario of the table: bottleneck one-way delay (ms) and buffer in BDPs."""

    delay_ms: float
    alpha: float

    @property
    def label(self) -> str:
        return f"{self.delay_ms:g} ms, {self.alpha:g} BDP"


@dataclass
class Sample:
    """One timed run of one side."""

    wall_s: float
    run_s: float | None
    cpu_s: float
    flows: list[dict[str, Any]]
    total_mbps: float
    extra: dict[str, Any] = field(default_factory=dict)


def parse_row(text: str) -> Row:
    """``"D:ALPHA"`` (D in ms) as a :class:`Row`; ``argparse.ArgumentTypeError`` if malformed."""
    parts = text.split(":")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected D_MS:ALPHA (e.g. 18:2), got {text!r}")
    try:
        delay, alpha = float(parts[0]), float(parts[1])
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected two numbers D_MS:ALPHA (e.g. 18:2), got {text!r}"
        ) from None
    if not (math.isfinite(delay) and delay > 0):
        raise argparse.ArgumentTypeError(f"D must be a finite number of ms > 0, got {parts[0]!r}")
    if not (math.isfinite(alpha) and alpha > 0):
        raise argparse.ArgumentTypeError(f"alpha must be a finite number > 0, got {parts[1]!r}")
    return Row(delay, alpha)


def _positive(kind: type, what: str) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what}: expected a number, got {text!r}") from None
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"{what}: must be > 0, got {text!r}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="compare.py",
        description="Wall time of ccfair.run() against ns-3 on the BBR-vs-CUBIC dumbbell.",
    )
    p.add_argument(
        "--row",
        action="append",
        type=parse_row,
        metavar="D_MS:ALPHA",
        help="bottleneck one-way delay (ms) and buffer (BDPs); repeatable "
        f"(default: {' '.join(DEFAULT_ROWS)})",
    )
    p.add_argument("--repeat", type=_positive(int, "--repeat"), default=3, help="runs per side")
    p.add_argument(
        "--duration", type=_positive(float, "--duration"), default=60.0, help="simulated s"
    )
    p.add_argument(
        "--sample-ms", type=_positive(float, "--sample-ms"), default=10.0, help="sampling, ms"
    )
    p.add_argument(
        "--ns3-binary", type=Path, default=DEFAULT_BINARY, help="built benches/ns3/dumbbell.cc"
    )
    p.add_argument(
        "--cpu",
        default="0",
        help="CPU list for taskset -c (both sides), or 'none' not to pin (default 0)",
    )
    p.add_argument(
        "--timeout", type=_positive(float, "--timeout"), default=3600.0, help="per run, s"
    )
    p.add_argument(
        "--ns3-arg",
        action="append",
        default=[],
        metavar="--NAME=VALUE",
        help="extra argument for the ns-3 program, e.g. "
        "--ns3-arg=--ns3::TcpSocket::DelAckTimeout=200ms (repeatable)",
    )
    p.add_argument("--json", type=Path, help="also write every sample to this file")
    return p


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, in one line each, what cannot run: a missing ns-3 binary, no taskset."""
    if args.sample_ms / 1e3 > args.duration:
        p.error(f"--sample-ms {args.sample_ms:g} is longer than --duration {args.duration:g} s")
    binary: Path = args.ns3_binary
    if not binary.is_file() or not os.access(binary, os.X_OK):
        p.error(
            f"--ns3-binary: no executable at {binary} (build it with benches/ns3/build.sh; "
            "ns-3 itself: apt-get install libns3-dev)"
        )
    if args.cpu != "none":
        if not all(part.strip().replace("-", "").isdigit() for part in args.cpu.split(",")):
            p.error(f"--cpu: expected a CPU list such as 0 or 0-1, or 'none', got {args.cpu!r}")
        if shutil.which("taskset") is None:
            p.error("--cpu: taskset is not installed (util-linux); pass --cpu none not to pin")
    for extra in args.ns3_arg:
        if not extra.startswith("--") or "=" not in extra:
            p.error(f"--ns3-arg: expected --NAME=VALUE, got {extra!r}")
    if args.json is not None and not args.json.parent.is_dir():
        p.error(f"--json: no directory {args.json.parent}")


def _pin(cpu: str) -> list[str]:
    return [] if cpu == "none" else ["taskset", "-c", cpu]


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def _children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_ns3(args: argparse.Namespace, row: Row) -> Sample:
    cmd = [
        *_pin(args.cpu),
        str(args.ns3_binary),
        f"--delay-ms={row.delay_ms:g}",
        f"--alpha={row.alpha:g}",
        f"--duration-s={args.duration:g}",
        f"--sample-ms={args.sample_ms:g}",
        *args.ns3_arg,
    ]
    cpu0 = _children_cpu_s()
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    wall = time.perf_counter() - t0
    cpu = _children_cpu_s() - cpu0  # taskset execs the program: one process
    if out.returncode != 0:
        raise RuntimeError(f"ns-3 run failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    extra = {k: r[k] for k in ("buffer_pkts", "bottleneck_drops", "events", "build_profile")}
    return Sample(wall, None, cpu, r["flows"], r["total_goodput_mbps"], extra)


def run_ccfair(args: argparse.Namespace, row: Row) -> Sample:
    cmd = [
        *_pin(args.cpu),
        sys.executable,
        str(Path(__file__).resolve()),
        "_ccfair_child",
        f"{row.delay_ms!r}",
        f"{row.alpha!r}",
        f"{args.duration!r}",
        f"{args.sample_ms!r}",
    ]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"ccfair run failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    extra = {k: r[k] for k in ("buffer_pkts", "engine_s", "warm_run_s")}
    # The process's time without the second, warm run() it makes after the timed one; CPU:
    # the first run()'s own (process_time), comparable with ns-3's whole process.
    return Sample(
        wall - r["warm_run_s"],
        r["run_s"],
        r["run_cpu_s"],
        r["flows"],
        r["total_goodput_mbps"],
        extra,
    )


def ccfair_child(delay_ms: float, alpha: float, duration_s: float, sample_ms: float) -> None:
    """In the fresh process: time ``ccfair.run()`` end to end and print a JSON line."""
    import ccfair

    sc = ccfair.dumbbell(
        2,
        ["bbr", "cubic"],
        bottleneck_delay=f"{delay_ms!r}ms",
        buffer_bdp=alpha,
        duration=f"{duration_s!r}s",
        sample_interval=f"{sample_ms!r}ms",
    )
    c0, t0 = time.process_time(), time.perf_counter()
    result = ccfair.run(sc)
    run_s, run_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    # The first run() in a process also pays for the imports ccfair makes lazily (pandas,
    # pyarrow, ...); a second run() in the same process shows what a sweep's worker pays.
    t0 = time.perf_counter()
    ccfair.run(sc)
    warm_run_s = time.perf_counter() - t0
    flows = [
        {
            "name": str(f["flow_name"]),
            "cca": str(f["cca"]),
            "goodput_mbps": float(f["goodput_mbps"]),
            "share_frac": float(f["share_frac"]),
        }
        for f in result.flows.to_dict("records")
    ]
    links = sc.resolve().engine_spec["links"]
    buffer_pkts = next(link["buffer_pkts"] for link in links if link["name"] == "bottleneck")
    engine_s = float(result.runs["wall_time_s"].iloc[0])
    total = sum(f["goodput_mbps"] for f in flows)
    print(
        json.dumps(
            {
                "run_s": run_s,
                "run_cpu_s": run_cpu_s,
                "warm_run_s": warm_run_s,
                "engine_s": engine_s,
                "flows": flows,
                "total_goodput_mbps": total,
                "buffer_pkts": buffer_pkts,
            }
        )
    )


def _spread(xs: list[float], digits: int = 3) -> str:
    return f"{statistics.median(xs):.{digits}f} [{min(xs):.{digits}f}-{max(xs):.{digits}f}]"


def _flows_text(s: Sample) -> str:
    parts = [f"{f['cca']} {f['goodput_mbps']:.2f} ({f['share_frac']:.3f})" for f in s.flows]
    return ", ".join(parts) + f"; total {s.total_mbps:.2f} Mbit/s"


def run_rows(args: argparse.Namespace, rows: list[Row]) -> list[dict[str, Any]]:
    """Each row's runs, the two sides interleaved; raises RuntimeError if a run fails."""
    report: list[dict[str, Any]] = []
    for row in rows:
        load_before = _loadavg()
        ns3: list[Sample] = []
        cc: list[Sample] = []
        for rep in range(args.repeat):
            order = (run_ns3, run_ccfair) if rep % 2 == 0 else (run_ccfair, run_ns3)
            for side in order:
                s = side(args, row)
                (ns3 if side is run_ns3 else cc).append(s)
                who = "ns-3  " if side is run_ns3 else "ccfair"
                run = f" run() {s.run_s:.3f} s" if s.run_s is not None else ""
                print(f"  {row.label} rep {rep + 1} {who} wall {s.wall_s:.3f} s{run}", flush=True)
        load_after = _loadavg()
        report.append(
            {
                "row": row,
                "ns3": ns3,
                "ccfair": cc,
                "load_before": load_before,
                "load_after": load_after,
            }
        )
        print(f"  load average before {load_before}, after {load_after}", flush=True)
    return report


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_ccfair_child"]:
        ccfair_child(*(float(a) for a in argv[1:5]))
        return 0
    p = build_parser()
    args = p.parse_args(argv)
    check_args(p, args)
    rows: list[Row] = args.row or [parse_row(r) for r in DEFAULT_ROWS]

    print(
        f"# {args.repeat} runs per side, {args.duration:g} s simulated, "
        f"{args.sample_ms:g} ms sampling, taskset -c {args.cpu}; started {time.ctime()}"
    )
    if args.ns3_arg:
        print(f"# ns-3 program arguments: {' '.join(args.ns3_arg)}")
    try:
        report = run_rows(args, rows)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        # A run that fails (ns-3's shared libraries gone, a crash) or overruns --timeout:
        # one line, not a traceback.
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1

    print()
    print(
        "| D, alpha | ns-3 s median [min-max] | ccfair.run() s | ratio of medians "
        "[pairwise min-max] |"
    )
    print("|---|---|---|---|")
    for r in report:
        ns_w = [s.wall_s for s in r["ns3"]]
        cc_r = [s.run_s for s in r["ccfair"] if s.run_s is not None]
        pair = [a / b for a, b in zip(ns_w, cc_r, strict=True)]
        print(
            f"| {r['row'].label} | {_spread(ns_w, 2)} | {_spread(cc_r)} | "
            f"{statistics.median(ns_w) / statistics.median(cc_r):.0f}x "
            f"[{min(pair):.0f}-{max(pair):.0f}] |"
        )
    print()
    print("CPU time (user + sys; less sensitive than wall time to other work on the machine):")
    print()
    print("| D, alpha | ns-3 CPU s | ccfair.run() CPU s | ratio of medians [pairwise min-max] |")
    print("|---|---|---|---|")
    for r in report:
        ns_c = [s.cpu_s for s in r["ns3"]]
        cc_c = [s.cpu_s for s in r["ccfair"]]
        pair = [a / b for a, b in zip(ns_c, cc_c, strict=True)]
        print(
            f"| {r['row'].label} | {_spread(ns_c, 2)} | {_spread(cc_c)} | "
            f"{statistics.median(ns_c) / statistics.median(cc_c):.0f}x "
            f"[{min(pair):.0f}-{max(pair):.0f}] |"
        )
    print()
    print("Where ccfair's time goes (medians [min-max], s) and ns-3's median over each:")
    print()
    print(
        "| D, alpha | ccfair process | run() (fresh process) | run() again (warm) | engine | "
        "ns-3 / process | ns-3 / warm run() | ns-3 / engine |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in report:
        ns_med = statistics.median(s.wall_s for s in r["ns3"])
        cols = {
            "process": [s.wall_s for s in r["ccfair"]],
            "run": [s.run_s for s in r["ccfair"] if s.run_s is not None],
            "warm": [s.extra["warm_run_s"] for s in r["ccfair"]],
            "engine": [s.extra["engine_s"] for s in r["ccfair"]],
        }
        med = {k: statistics.median(v) for k, v in cols.items()}
        print(
            f"| {r['row'].label} | {_spread(cols['process'])} | {_spread(cols['run'])} | "
            f"{_spread(cols['warm'])} | {_spread(cols['engine'])} | "
            f"{ns_med / med['process']:.0f}x | {ns_med / med['warm']:.0f}x | "
            f"{ns_med / med['engine']:.0f}x |"
        )
    print()
    for r in report:
        ns, cc = r["ns3"][-1], r["ccfair"][-1]
        print(
            f"{r['row'].label}: buffer {ns.extra['buffer_pkts']} pkts (ns-3) / "
            f"{cc.extra['buffer_pkts']} (ccfair); load {r['load_before']} -> {r['load_after']}"
        )
        print(
            f"  ns-3   {_flows_text(ns)}; bottleneck drops {ns.extra['bottleneck_drops']}, "
            f"events {ns.extra['events']}, build profile {ns.extra['build_profile']}"
        )
        print(f"  ccfair {_flows_text(cc)}")
        for name, runs in (("ns-3", r["ns3"]), ("ccfair", r["ccfair"])):
            if len({round(s.total_mbps, 6) for s in runs}) > 1:
                print(f"  note: {name}'s goodput differed between repetitions")
    if args.json is not None:
        payload = [
            {
                "delay_ms": r["row"].delay_ms,
                "alpha": r["row"].alpha,
                "load_before": r["load_before"],
                "load_after": r["load_after"],
                "ns3": [vars(s) for s in r["ns3"]],
                "ccfair": [vars(s) for s in r["ccfair"]],
            }
            for r in report
        ]
        args.json.write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
