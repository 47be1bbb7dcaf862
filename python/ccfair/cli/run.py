"""``ccfair run`` (one scenario, saved into a results directory) and ``ccfair cleanup``
(namespaces a crashed kernel run left).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

from ccfair import backends
from ccfair.backends.kernel.host import KernelError, cleanup, missing_capabilities
from ccfair.cli.options import limits_of
from ccfair.cli.output import print_json, records, say_unless
from ccfair.execution.runs import run, with_trace
from ccfair.spec.scenario import Scenario, as_scenario, resolution_deferred
from ccfair.spec.shapes import default_scenario
from ccfair.store.directory import check_run_dir, write_file_atomic
from ccfair.store.files import arrow_file


def cmd_run(args: argparse.Namespace) -> int:
    overrides = {}
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.duration is not None:
        overrides["duration"] = args.duration
    # With overrides the scenario is validated whole once they are applied: reading it
    # checks types only, so that it is resolved once (spec/scenario.py, resolution_deferred).
    with resolution_deferred() if overrides else contextlib.nullcontext():
        sc = default_scenario() if args.scenario is None else as_scenario(args.scenario)
    if overrides:
        data = sc.to_dict()
        data.update(overrides)
        if "duration" in overrides:
            # A new duration invalidates a measurement window given for the old one.
            data.pop("measure", None)
        sc = Scenario.from_dict(data)
    b = backends.get(args.backend or sc.backend or "sim")
    backend = b.name
    if args.trace:
        with_trace(sc.resolve(), args.trace)  # a flow that is not there: before anything runs
    if b.needs_host_setup:
        # Reject what this machine cannot run, and a missing privilege, before saying
        # anything runs (api.run checks again).
        b.check(sc.resolve())
        b.preflight()
        b.warn_if_busy()
    out = None if args.no_save else args.out
    if out is not None:
        # Before the run: a directory that cannot take it fails now, not after a long run.
        check_run_dir(out, extra=("trace",) if args.trace else ())
    say = say_unless(args.quiet)
    where = (
        f" on the {b.name} backend, in real time ({sc.duration / 1e9:g} s)" if b.real_time else ""
    )
    say(f"running {sc.name!r} ({len(sc.flows)} flows, {len(sc.links)} links){where}...")
    result = run(sc, backend=backend, trace=args.trace or (), limits=limits_of(args))
    if out is not None:
        result.save(out)
        if result.trace is not None:
            path = Path(out) / "trace" / f"{result.run_id}.parquet"
            trace = result.trace
            write_file_atomic(path, lambda tmp: _write_trace(trace, tmp))
            say(f"trace: {path} ({len(result.trace)} packet events)")
    if args.json:
        print_json(records(result.flows))
    elif not args.quiet:
        print(result.format_summary())
        if out is not None:
            print(f"results: {out}/ (run {result.run_id}; pandas.read_parquet('{out}/flows'))")
    if not result.reliable and (args.json or args.quiet):
        print(f"warning: {result.format_selfcheck()}", file=sys.stderr)
    return 0


def _write_trace(trace: Any, path: Path) -> None:
    with arrow_file(path, "wb") as sink:  # a non-UTF-8 --out too
        trace.to_parquet(sink, index=False)


def cmd_cleanup(args: argparse.Namespace) -> int:
    missing = missing_capabilities()
    if missing:
        raise KernelError(
            f"ccfair cleanup needs root (it removes network namespaces); this process lacks "
            f"{' and '.join(missing)}"
        )
    removed = cleanup()
    if args.json:
        print_json({"removed": removed})
        return 0
    for name in removed:
        print(f"removed namespace {name}")
    print(f"{len(removed)} leftover namespace(s) removed")
    return 0
