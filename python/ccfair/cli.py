"""The ``ccfair`` command.

Exit status: 0 on success, 2 on bad input (scenario, arguments, results directory), with a
one-line message naming the field and value and no traceback; 1 on an internal error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import NoReturn

from ccfair import _core
from ccfair.errors import SpecError
from ccfair.results import ResultsError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _cmd_run(args: argparse.Namespace) -> int:
    from ccfair.api import as_scenario, default_scenario, run

    sc = default_scenario() if args.scenario is None else as_scenario(args.scenario)
    overrides = {}
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.duration is not None:
        overrides["duration"] = args.duration
    if overrides:
        from ccfair.spec import Scenario

        data = sc.to_dict()
        data.update(overrides)
        if "duration" in overrides:
            # A new duration invalidates a measurement window given for the old one.
            data.pop("measure", None)
        sc = Scenario.from_dict(data)
    if not args.quiet:
        print(f"running {sc.name!r} ({len(sc.flows)} flows, {len(sc.links)} links)...", flush=True)
    result = run(sc, backend=args.backend)
    if args.out is not None:
        result.save(args.out)
    if args.json:
        print(result.flows.to_json(orient="records"))
    elif not args.quiet:
        print(result.format_summary())
        if args.out is not None:
            print(f"results: {args.out} (run {result.run_id})")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from ccfair.api import as_scenario

    for path in args.scenario:
        resolved = as_scenario(path).resolve()
        if args.engine:
            print(json.dumps(resolved.engine_spec, indent=2))
            continue
        print(f"{path}: valid")
        for link in resolved.links:
            bdp = (
                f"{link.buffer_bdp:g} x BDP of {link.reference} ({link.bdp_pkts:.2f} pkt)"
                if link.buffer_bdp is not None
                else "no reference"
            )
            print(
                f"  link {link.name:12s} {link.a}-{link.b}  {link.rate_bps / 1e6:g} Mbit/s  "
                f"{link.delay_ns / 1e6:g} ms  buffer {link.buffer_pkts} pkt ({bdp})"
            )
        for flow in resolved.flows:
            print(
                f"  flow {flow.name:10s} {flow.cca:8s} {'>'.join(flow.node_path)}  "
                f"RTT {flow.base_rtt_ns / 1e6:g} ms  BDP {flow.bdp_pkts:.2f} pkt"
            )
    return 0


def _cmd_ccas(args: argparse.Namespace) -> int:
    for name in _core.known_ccas():
        params = json.loads(_core.normalize_cca(name, "{}"))
        print(f"{name}: {json.dumps(params, sort_keys=True)}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from ccfair.bench import main as bench_main

    return bench_main(quick=args.quick, cases=args.case)


def _sweep_exit(outcome: object) -> int:
    """Exit status of a sweep: 0 complete, 130 interrupted, 1 if runs failed."""
    if getattr(outcome, "interrupted", False):
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
        return 1
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from ccfair.executor import run_sweep
    from ccfair.sweep import Sweep

    sweep = Sweep.from_toml(args.spec)
    if args.dry_run:
        points = sweep.expand()
        ids = dict.fromkeys(p.run_id for p in points)
        for p in points:
            extra = f"  baseline={p.baseline}" if p.baseline else ""
            params = "  ".join(f"{k}={v}" for k, v in p.params.items())
            print(f"{p.index:5d}  {p.run_id}  rep={p.rep} seed={p.seed}  {params}{extra}")
        print(f"{len(points)} points, {len(ids)} distinct runs (hash {sweep.spec_hash()})")
        return 0
    out = args.out or f"results/{sweep.name}"
    outcome = run_sweep(
        sweep, out, workers=args.workers, cluster=args.cluster, progress=not args.quiet
    )
    if not args.quiet:
        print(f"sweep {sweep.name!r}: {outcome.summary()}")
    return _sweep_exit(outcome)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ccfair`` command."""
    p = _Parser(prog="ccfair", description="Congestion-control fairness lab.")
    p.add_argument("--version", action="version", version=f"ccfair {_core.__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="run a scenario (default: the built-in dumbbell)")
    r.add_argument("scenario", nargs="?", help="scenario TOML file")
    r.add_argument("--out", help="results directory to write Parquet tables into")
    r.add_argument("--backend", default="sim", choices=["sim"], help="execution backend")
    r.add_argument("--seed", type=int, help="override the scenario's seed")
    r.add_argument("--duration", help='override the duration, e.g. "10s"')
    r.add_argument("--json", action="store_true", help="print the per-flow table as JSON")
    r.add_argument("--quiet", "-q", action="store_true", help="print nothing")
    r.set_defaults(func=_cmd_run)

    c = sub.add_parser("check", help="validate scenario files and show what they resolve to")
    c.add_argument("scenario", nargs="+")
    c.add_argument("--engine", action="store_true", help="print the engine's resolved spec")
    c.set_defaults(func=_cmd_check)

    a = sub.add_parser("ccas", help="list congestion control algorithms and their parameters")
    a.set_defaults(func=_cmd_ccas)

    b = sub.add_parser("bench", help="whole-run benchmarks of the simulator")
    b.add_argument("--quick", action="store_true", help="short runs (smoke test)")
    b.add_argument("--case", action="append", help="run only this case (repeatable)")
    b.set_defaults(func=_cmd_bench)

    s = sub.add_parser(
        "sweep",
        help="run every point of a sweep spec (resumable; local processes or a Dask cluster)",
    )
    s.add_argument("spec", help="sweep spec TOML file (see docs/experiments.md)")
    s.add_argument("--out", help="results directory (default: results/<sweep name>)")
    s.add_argument("--workers", type=int, help="local worker processes (default: cores)")
    s.add_argument("--cluster", metavar="ADDRESS", help="Dask scheduler, e.g. tcp://host:8786")
    s.add_argument("--dry-run", action="store_true", help="list the points and run ids only")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    s.set_defaults(func=_cmd_sweep)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ccfair`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the CLI must not dump tracebacks on users
        if args.debug:
            raise
        print(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug)", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
