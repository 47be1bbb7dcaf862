"""The ``ccfair`` command.

Exit status: 0 on success, 2 on bad input (scenario, arguments, results directory) or when
the kernel backend cannot run here (not root, a missing kernel feature), with a one-line
message naming the field and value and no traceback; 1 on an internal error; 128 + the
signal number after SIGINT or SIGTERM (a kernel run cleans up first).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import NoReturn

from ccfair import _core
from ccfair.errors import SpecError
from ccfair.kernel import KernelError
from ccfair.results import ResultsError

#: Exit status after SIGINT (128 + 2), as shells report it.
EXIT_INTERRUPTED = 130


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
    backend = args.backend or sc.backend or "sim"
    if backend == "kernel":
        from ccfair import kernel

        # Reject what this kernel cannot run, and a missing privilege, before saying
        # anything runs (api.run checks again).
        kernel.check_scenario(sc.resolve())
        kernel.preflight()
    if not args.quiet:
        where = (
            f" on the kernel backend, in real time ({sc.duration / 1e9:g} s)"
            if backend == "kernel"
            else ""
        )
        print(
            f"running {sc.name!r} ({len(sc.flows)} flows, {len(sc.links)} links){where}...",
            flush=True,
        )
    result = run(sc, backend=backend)
    out = None if args.no_save else args.out
    if out is not None:
        result.save(out)
    if args.json:
        print(result.flows.to_json(orient="records"))
    elif not args.quiet:
        print(result.format_summary())
        if out is not None:
            print(f"results: {out}/ (run {result.run_id}; pandas.read_parquet('{out}/flows'))")
    if not result.reliable and (args.json or args.quiet):
        print(f"warning: {result.format_selfcheck()}", file=sys.stderr)
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


def _cmd_cleanup(args: argparse.Namespace) -> int:
    from ccfair import kernel

    missing = kernel.missing_capabilities()
    if missing:
        raise kernel.KernelError(
            f"ccfair cleanup needs root (it removes network namespaces); this process lacks "
            f"{' and '.join(missing)}"
        )
    removed = kernel.cleanup()
    for name in removed:
        print(f"removed namespace {name}")
    print(f"{len(removed)} leftover namespace(s) removed")
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from ccfair.validate import validate

    def progress(message: str) -> None:
        if not args.quiet:
            print(message, flush=True)

    v = validate(
        args.inputs,
        out=args.out,
        jobs=args.jobs,
        duration=args.duration,
        match_hz=not args.no_match_hz,
        progress=progress,
    )
    if not args.quiet:
        print(v.format_table())
        print(f"report: {args.out}/validate.md  figures: {args.out}/figures/")
    return 0


def _cmd_ccas(args: argparse.Namespace) -> int:
    for name in _core.known_ccas():
        params = json.loads(_core.normalize_cca(name, "{}"))
        print(f"{name}: {json.dumps(params, sort_keys=True)}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from ccfair.bench import main as bench_main

    return bench_main(quick=args.quick, cases=args.case)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ccfair`` command."""
    p = _Parser(prog="ccfair", description="Congestion-control fairness lab.")
    p.add_argument("--version", action="version", version=f"ccfair {_core.__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="run a scenario (default: the built-in dumbbell)")
    r.add_argument("scenario", nargs="?", help="scenario TOML file")
    r.add_argument(
        "--out",
        default="results",
        help="results directory for the Parquet tables (default: results)",
    )
    r.add_argument("--no-save", action="store_true", help="print the summary only, write nothing")
    r.add_argument(
        "--backend",
        choices=["sim", "kernel"],
        help="execution backend (default: the scenario's backend field, else sim); "
        "kernel runs on real Linux TCP in network namespaces, needs root (docs/kernel.md)",
    )
    r.add_argument("--seed", type=int, help="override the scenario's seed")
    r.add_argument("--duration", help='override the duration, e.g. "10s"')
    r.add_argument("--json", action="store_true", help="print the per-flow table as JSON")
    r.add_argument("--quiet", "-q", action="store_true", help="print nothing")
    r.set_defaults(func=_cmd_run)

    c = sub.add_parser("check", help="validate scenario files and show what they resolve to")
    c.add_argument("scenario", nargs="+")
    c.add_argument("--engine", action="store_true", help="print the engine's resolved spec")
    c.set_defaults(func=_cmd_check)

    k = sub.add_parser(
        "cleanup",
        help="remove network namespaces left by kernel runs that crashed (needs root)",
    )
    k.set_defaults(func=_cmd_cleanup)

    v = sub.add_parser(
        "validate",
        help="run scenarios on the simulator and on real Linux TCP, and compare (needs root)",
        description="Fidelity check: every scenario runs on both backends; the per-flow "
        "goodput and share differences, overlaid cwnd and RTT time series and a report "
        "section are written to --out (docs/kernel.md).",
    )
    v.add_argument("inputs", nargs="+", metavar="SCENARIO", help="scenario TOML files")
    v.add_argument("--out", default="validation", help="output directory (default: validation)")
    v.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="kernel runs at once (default 1; more only with cores to spare)",
    )
    v.add_argument("--duration", help='override every scenario\'s duration, e.g. "20s"')
    v.add_argument(
        "--no-match-hz",
        action="store_true",
        help="run the simulator at the scenario's hz instead of the kernel's HZ",
    )
    v.add_argument("--quiet", "-q", action="store_true", help="print nothing")
    v.set_defaults(func=_cmd_validate)

    a = sub.add_parser("ccas", help="list congestion control algorithms and their parameters")
    a.set_defaults(func=_cmd_ccas)

    b = sub.add_parser("bench", help="whole-run benchmarks of the simulator")
    b.add_argument("--quick", action="store_true", help="short runs (smoke test)")
    b.add_argument("--case", action="append", help="run only this case (repeatable)")
    b.set_defaults(func=_cmd_bench)
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
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", 2)
        print(f"interrupted (signal {signum}); cleaned up", file=sys.stderr)
        return 128 + signum
    except KernelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - the CLI must not dump tracebacks on users
        if args.debug:
            raise
        print(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug)", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
