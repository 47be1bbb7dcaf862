"""``ccfair sweep`` (a sweep spec) and ``ccfair reproduce`` (a preset), into a results
directory, resumably; ``reproduce`` then writes the report.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from ccfair.cli.options import limits_of
from ccfair.errors import SpecError
from ccfair.execution.sweeps import run_sweep
from ccfair.limits import estimate_sweep
from ccfair.presets import PRESETS, count_runs, get
from ccfair.report.page import write_report
from ccfair.spec.sweep import Sweep
from ccfair.store.schema import MARKER_TABLE, TABLES


def _sweep_exit(outcome: object) -> int:
    """Exit status of a sweep: 0 complete, 130 interrupted, 2 if runs failed."""
    if getattr(outcome, "interrupted", False) and not getattr(outcome, "complete", False):
        print(
            "interrupted: finished runs are kept; rerun the same command to run the rest",
            file=sys.stderr,
        )
        return 130
    failed = getattr(outcome, "failed", {})
    if failed:
        print(
            f"error: {len(failed)} run(s) failed; rerun to retry them. First: "
            f"{next(iter(failed.items()))[0]}: {next(iter(failed.values()))}",
            file=sys.stderr,
        )
        return 2
    return 0


def _default_out(name: str) -> str:
    """results/<name>, kept apart from the table folders ``ccfair run`` writes in results/."""
    clash = name in (*TABLES, MARKER_TABLE, "figures")
    return f"results/sweep-{name}" if clash else f"results/{name}"


def _with_backend(sweep: Any, backend: str | None) -> Any:
    """The sweep on ``backend`` (``--backend``), named ``<name>-<backend>`` when that differs
    from its own, so that its default results directory is its own."""
    if backend is None or backend == sweep.backend:
        return sweep
    return dataclasses.replace(sweep, backend=backend, name=f"{sweep.name}-{backend}")


def cmd_sweep(args: argparse.Namespace) -> int:
    sweep = _with_backend(Sweep.from_toml(args.spec), args.backend)
    lim = limits_of(args)
    if args.dry_run:
        points = sweep.expand(limits=lim)
        ids = dict.fromkeys(p.run_id for p in points)
        for p in points:
            extra = f"  baseline={p.baseline}" if p.baseline else ""
            params = "  ".join(f"{k}={v}" for k, v in p.params.items())
            print(f"{p.index:5d}  {p.run_id}  rep={p.rep} seed={p.seed}  {params}{extra}")
        print(f"{len(points)} points, {len(ids)} distinct runs (hash {sweep.spec_hash()})")
        print(estimate_sweep(points))
        return 0
    out = args.out or _default_out(sweep.name)
    outcome = run_sweep(
        sweep,
        out,
        workers=args.workers,
        cluster=args.cluster,
        progress=not args.quiet,
        log=(lambda msg: None) if args.quiet else None,
        limits=lim,
        retries=args.retries,
    )
    if not args.quiet:
        print(f"sweep {sweep.name!r}: {outcome.summary()}")
    return _sweep_exit(outcome)


def cmd_reproduce(args: argparse.Namespace) -> int:
    if args.list or args.name is None:
        if not args.list:
            print("error: reproduce: give a preset NAME or --list", file=sys.stderr)
            return 2
        for p in PRESETS.values():
            print(
                f"{p.name:20s} {count_runs(p.full):4d} runs ({count_runs(p.quick)} with --quick)"
                f"  {p.title}"
            )
            print(f"{'':20s} study: {p.study}")
        return 0
    preset = get(args.name)
    if args.repetitions is not None and args.repetitions < 1:
        raise SpecError("--repetitions", args.repetitions, "is not a positive integer")
    sweep = _with_backend(
        preset.sweep(
            quick=args.quick,
            baselines=args.baselines,
            repetitions=args.repetitions,
            testbeds=args.testbed,
            kernels=args.kernel,
        ),
        args.backend,
    )
    out = args.out or _default_out(sweep.name)
    outcome = run_sweep(
        sweep,
        out,
        workers=args.workers,
        cluster=args.cluster,
        progress=not args.quiet,
        log=(lambda msg: None) if args.quiet else None,
        limits=limits_of(args),
        retries=args.retries,
    )
    if not args.quiet:
        print(f"{preset.name}: {outcome.summary()}")
    status = _sweep_exit(outcome)
    if status != 0:
        return status
    path = write_report(out, log=(lambda msg: None) if args.quiet else None)
    if not args.quiet:
        print(f"report: {path}")
    return 0
