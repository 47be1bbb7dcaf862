"""``ccfair validate`` (the simulator against Linux) and ``ccfair bench`` (benchmarks)."""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path
from typing import Any

from ccfair.bench import frontend_main, report_main, sweep_main
from ccfair.bench import main as bench_main
from ccfair.cli.output import print_json, records, say_unless
from ccfair.errors import SpecError
from ccfair.validate.points import measured_host_latency
from ccfair.validate.study import validate


def _sim_tcp_option(item: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--sim-tcp``: VALUE as a TOML value (a bare word is a string)."""
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise SpecError("--sim-tcp", item, "is not KEY=VALUE (e.g. tso=linux)")
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text
    return key.strip(), value


def cmd_validate(args: argparse.Namespace) -> int:
    sim_tcp = dict(_sim_tcp_option(item) for item in args.sim_tcp)
    if args.host_latency:
        sim_tcp["host_latency"] = measured_host_latency(args.host_latency)

    if not args.inputs and args.preset is None:
        raise SpecError(
            "validate", None, "needs SCENARIO or SWEEP files, or --preset NAME", with_value=False
        )
    v = validate(
        args.inputs,
        preset=args.preset,
        quick=args.quick,
        out=args.out,
        duration=args.duration,
        match_hz=not args.no_match_hz,
        retries=args.retries,
        rerun_flagged=not args.keep_flagged,
        command="ccfair validate " + " ".join(sys.argv[2:]),
        progress=say_unless(args.quiet),
        finished_only=args.finished_only,
        sim_tcp=sim_tcp or None,
        reference=args.reference,
    )
    if args.json:
        print_json(
            {
                "points": records(v.points),
                "summary": records(v.summary),
                "report": Path(args.out) / "validate.md",
                "figures": v.figures,
            }
        )
    elif not args.quiet:
        print(v.format_table())
        print(f"report: {args.out}/validate.md  figures: {args.out}/figures/")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.frontend:
        return frontend_main(args.frontend_scenario, as_json=args.json)
    if args.sweep:
        return sweep_main(args.sweep, quick=args.quick, workers=args.workers, as_json=args.json)
    if args.report:
        return report_main(args.report, quick=args.quick, workers=args.workers, as_json=args.json)
    return bench_main(
        quick=args.quick,
        cases=args.case,
        instructions=args.instructions,
        history=args.history,
        as_json=args.json,
    )
