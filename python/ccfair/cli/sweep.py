"""``ccfair sweep`` (a sweep spec) and ``ccfair reproduce`` (a preset), into a results
directory, resumably; ``reproduce`` then writes the report. ``--dry-run`` runs nothing: the
points, the resource estimate and the time the runs will take (:mod:`ccfair.execution.plan`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from ccfair.cli.options import limits_of
from ccfair.cli.output import print_json, say_unless
from ccfair.errors import ResultsError, SpecError
from ccfair.execution.plan import plan_sweep
from ccfair.execution.sweeps import run_sweep
from ccfair.limits import estimate, estimate_sweep, most_parallel, sweep_totals
from ccfair.presets import PRESETS, count_runs, get
from ccfair.report.page import write_report
from ccfair.spec.sweep import Sweep
from ccfair.store.directory import finished_run_ids
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


def _dry_run(
    sweep: Any, args: argparse.Namespace, lim: Any, out: str, *, list_points: bool
) -> dict[str, Any]:
    """What ``--dry-run`` reports: the points, the resource estimate and the time (after a
    short calibration), counting runs already finished in ``out``. Runs nothing, writes
    nothing."""
    if Path(out).exists() and not Path(out).is_dir():
        raise ResultsError(f"{out}: is not a directory (--out)")
    points = sweep.expand(limits=lim)
    estimates = {}
    for p in points:
        if p.run_id not in estimates:
            estimates[p.run_id] = estimate(p.scenario.resolve())
    finished = set(finished_run_ids(out)) if Path(out).is_dir() else set()
    plan = plan_sweep(
        points,
        sweep.backend,
        workers=args.workers,
        finished=finished,
        cluster=args.cluster is not None,
        estimates=estimates,
    )
    doc: dict[str, Any] = {
        "sweep": sweep.name,
        "spec_hash": sweep.spec_hash(),
        "backend": sweep.backend,
        "results_dir": out,
        "points": [
            {
                "index": p.index,
                "run_id": p.run_id,
                "rep": p.rep,
                "seed": p.seed,
                "params": p.params,
                "baseline": p.baseline,
            }
            for p in points
        ],
        "runs": len(estimates),
        "finished": plan.finished,
        "estimate": sweep_totals(points, estimates),
        "time": plan.to_dict(),
    }
    if not args.json:
        if list_points:
            for p in points:
                extra = f"  baseline={p.baseline}" if p.baseline else ""
                params = "  ".join(f"{k}={v}" for k, v in p.params.items())
                print(f"{p.index:5d}  {p.run_id}  rep={p.rep} seed={p.seed}  {params}{extra}")
        print(f"{len(points)} points, {len(estimates)} distinct runs (hash {sweep.spec_hash()})")
        print(estimate_sweep(points, estimates))
        print(plan.summary(out))
    return doc


def _check_workers_option(args: argparse.Namespace) -> None:
    """--workers of a dry run, checked as a sweep checks it (one line, exit 2)."""
    if args.workers is not None and not 1 <= args.workers <= most_parallel():
        raise SpecError(
            "--workers",
            args.workers,
            f"is not a number of worker processes from 1 to {most_parallel()} (this machine)",
        )


def _outcome_doc(outcome: Any) -> dict[str, Any]:
    return {
        "results_dir": str(outcome.results_dir),
        "complete": outcome.complete,
        "total": outcome.total,
        "already": outcome.already,
        "executed": outcome.executed,
        "recomputed": outcome.recomputed,
        "failed": outcome.failed,
        "interrupted": outcome.interrupted,
        "reruns": outcome.reruns,
        "flagged": outcome.flagged,
        "wall_s": outcome.wall_s,
    }


def cmd_sweep(args: argparse.Namespace) -> int:
    sweep = _with_backend(Sweep.from_toml(args.spec), args.backend)
    lim = limits_of(args)
    out = args.out or _default_out(sweep.name)
    if args.dry_run:
        _check_workers_option(args)
        doc = _dry_run(sweep, args, lim, out, list_points=True)
        if args.json:
            print_json(doc)
        return 0
    outcome = run_sweep(
        sweep,
        out,
        workers=args.workers,
        cluster=args.cluster,
        progress=not args.quiet,
        log=say_unless(args.quiet),
        limits=lim,
        retries=args.retries,
    )
    if args.json:
        print_json({"sweep": sweep.name, **_outcome_doc(outcome)})
    elif not args.quiet:
        print(f"sweep {sweep.name!r}: {outcome.summary()}")
    return _sweep_exit(outcome)


def _list_presets(args: argparse.Namespace) -> int:
    presets = [
        {
            "name": p.name,
            "title": p.title,
            "study": p.study,
            "runs": count_runs(p.full),
            "quick_runs": count_runs(p.quick),
        }
        for p in PRESETS.values()
    ]
    if args.json:
        print_json(presets)
        return 0
    for p in presets:
        print(f"{p['name']:20s} {p['runs']:4d} runs ({p['quick_runs']} with --quick)  {p['title']}")
        print(f"{'':20s} study: {p['study']}")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    if args.list:
        return _list_presets(args)
    if args.name is None:
        raise SpecError("reproduce", None, "give a preset NAME or --list", with_value=False)
    preset = get(args.name)
    if args.repetitions is not None and args.repetitions < 1:
        raise SpecError("--repetitions", args.repetitions, "is not a positive integer")
    for option, given in (("--testbed", args.testbed), ("--kernel", args.kernel)):
        twice = next((v for i, v in enumerate(given) if v in given[:i]), None)
        if twice is not None:  # else an error about a grid axis the user never wrote
            raise SpecError(option, twice, "is given twice; give each value once")
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
    if args.dry_run:
        _check_workers_option(args)
        doc = _dry_run(sweep, args, limits_of(args), out, list_points=False)
        if args.json:
            print_json({"preset": preset.name, **doc})
        return 0
    outcome = run_sweep(
        sweep,
        out,
        workers=args.workers,
        cluster=args.cluster,
        progress=not args.quiet,
        log=say_unless(args.quiet),
        limits=limits_of(args),
        retries=args.retries,
    )
    if not args.quiet and not args.json:
        print(f"{preset.name}: {outcome.summary()}")
    status = _sweep_exit(outcome)
    report = None
    if status == 0:
        report = write_report(out, log=say_unless(args.quiet))
    if args.json:
        print_json(
            {"preset": preset.name, "sweep": sweep.name, **_outcome_doc(outcome), "report": report}
        )
    elif report is not None and not args.quiet:
        print(f"report: {report}")
    return status
