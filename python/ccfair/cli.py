"""The ``ccfair`` command.

Exit status (docs/spec.md, "Errors"): 0 on success; 2 on any failure, with one ``error:``
line on stderr naming the field, file or run and no traceback: bad input (scenario, sweep,
arguments, files, encodings), a resource limit, a results directory that cannot be used or
written, the kernel backend unable to run here, runs that failed, a lost Dask scheduler, and
(saying so) an internal error; 128 + the signal number after SIGINT or SIGTERM (a kernel run
cleans up first). ``--debug`` shows the traceback of an internal error instead (exit 1).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from ccfair import _core, backends
from ccfair.errors import CcfairError, ResultsError, SpecError, shorten

#: Exit status after SIGINT (128 + 2), as shells report it.
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _backend_names() -> list[str]:
    """``--backend`` choices: the registry of :mod:`ccfair.backends`."""
    return list(backends.names())


def _cmd_run(args: argparse.Namespace) -> int:
    from ccfair.execution.runs import run
    from ccfair.spec.scenario import as_scenario
    from ccfair.spec.shapes import default_scenario

    sc = default_scenario() if args.scenario is None else as_scenario(args.scenario)
    overrides = {}
    if args.seed is not None:
        overrides["seed"] = args.seed
    if args.duration is not None:
        overrides["duration"] = args.duration
    if overrides:
        from ccfair.spec.scenario import Scenario

        data = sc.to_dict()
        data.update(overrides)
        if "duration" in overrides:
            # A new duration invalidates a measurement window given for the old one.
            data.pop("measure", None)
        sc = Scenario.from_dict(data)
    b = backends.get(args.backend or sc.backend or "sim")
    backend = b.name
    if b.needs_host_setup:
        # Reject what this machine cannot run, and a missing privilege, before saying
        # anything runs (api.run checks again).
        b.check(sc.resolve())
        b.preflight()
        b.warn_if_busy()
    out = None if args.no_save else args.out
    if out is not None:
        from ccfair.store.directory import check_run_dir

        # Before the run: a directory that cannot take it fails now, not after a long run.
        check_run_dir(out, extra=("trace",) if args.trace else ())
    if not args.quiet:
        where = (
            f" on the {b.name} backend, in real time ({sc.duration / 1e9:g} s)"
            if b.real_time
            else ""
        )
        print(
            f"running {sc.name!r} ({len(sc.flows)} flows, {len(sc.links)} links){where}...",
            flush=True,
        )
    result = run(sc, backend=backend, trace=args.trace or (), limits=_limits_of(args))
    if out is not None:
        from ccfair.store.directory import write_file_atomic

        result.save(out)
        if result.trace is not None:
            path = Path(out) / "trace" / f"{result.run_id}.parquet"
            trace = result.trace
            write_file_atomic(path, lambda tmp: trace.to_parquet(tmp, index=False))
            if not args.quiet:
                print(f"trace: {path} ({len(result.trace)} packet events)")
    if args.json:
        print(result.flows.to_json(orient="records"))
    elif not args.quiet:
        print(result.format_summary())
        if out is not None:
            print(f"results: {out}/ (run {result.run_id}; pandas.read_parquet('{out}/flows'))")
    if not result.reliable and (args.json or args.quiet):
        print(f"warning: {result.format_selfcheck()}", file=sys.stderr)
    return 0


def _limits_of(args: argparse.Namespace) -> object:
    """The :class:`ccfair.Limits` of the --max-* options (defaults for those not given)."""
    from ccfair.limits import Limits

    given = {
        name: getattr(args, f"max_{name}", None)
        for name in ("memory", "events", "runs")
        if getattr(args, f"max_{name}", None) is not None
    }
    try:
        return Limits(**given)
    except SpecError as exc:
        name = exc.path.split(".", 1)[-1]
        raise SpecError(f"--max-{name}", exc.value, exc.message, with_value=False) from None


def _count(text: str) -> int:
    """A count given as an integer or in scientific notation ("2e10")."""
    try:
        value = float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")) or value != int(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(value)


def _add_limit_options(p: argparse.ArgumentParser, *, runs: bool = False) -> None:
    p.add_argument(
        "--max-memory",
        metavar="SIZE",
        help='memory limit of one run, e.g. "8GB" (default 2GB; docs/spec.md, "Limits")',
    )
    p.add_argument(
        "--max-events",
        metavar="N",
        type=_count,
        help="event limit of one run (default 2e10, about half an hour of CPU)",
    )
    if runs:
        p.add_argument(
            "--max-runs", metavar="N", type=_count, help="run limit of a sweep (default 50000)"
        )


def _cmd_check(args: argparse.Namespace) -> int:
    from ccfair.limits import check, estimate
    from ccfair.spec.scenario import as_scenario

    lim = _limits_of(args)
    for path in args.scenario:
        resolved = as_scenario(path).resolve()
        if args.engine:
            print(json.dumps(resolved.engine_spec, indent=2))
            continue
        est = estimate(resolved)
        check(resolved.engine_spec, lim)  # a run ccfair would refuse is not "valid"
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
        print(f"  {est.summary()}")
    return 0


def _cmd_cleanup(args: argparse.Namespace) -> int:
    from ccfair.backends.kernel.host import KernelError, cleanup, missing_capabilities

    missing = missing_capabilities()
    if missing:
        raise KernelError(
            f"ccfair cleanup needs root (it removes network namespaces); this process lacks "
            f"{' and '.join(missing)}"
        )
    removed = cleanup()
    for name in removed:
        print(f"removed namespace {name}")
    print(f"{len(removed)} leftover namespace(s) removed")
    return 0


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


def _cmd_validate(args: argparse.Namespace) -> int:
    from ccfair.validate.points import measured_host_latency
    from ccfair.validate.study import validate

    sim_tcp = dict(_sim_tcp_option(item) for item in args.sim_tcp)
    if args.host_latency:
        sim_tcp["host_latency"] = measured_host_latency(args.host_latency)

    def progress(message: str) -> None:
        if not args.quiet:
            print(message, flush=True)

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
        progress=progress,
        finished_only=args.finished_only,
        sim_tcp=sim_tcp or None,
        reference=args.reference,
    )
    if not args.quiet:
        print(v.format_table())
        print(f"report: {args.out}/validate.md  figures: {args.out}/figures/")
    return 0


def _cmd_ccas(args: argparse.Namespace) -> int:
    from ccfair.algorithms import algorithm, algorithms, format_markdown, format_table

    for name in args.names:
        try:
            algorithm(name)
        except KeyError as exc:
            raise SpecError("ccas", name, str(exc.args[0]), with_value=False) from None
    if args.markdown:
        print(format_markdown(), end="")
    elif args.json:
        chosen = args.names or list(algorithms())
        print(json.dumps([dataclasses.asdict(algorithm(n)) for n in chosen], indent=1))
    else:
        print(format_table(args.names or None))
    return 0


def _cmd_builders(args: argparse.Namespace) -> int:
    from ccfair.spec.builders import format_markdown, format_table, get

    for name in args.names:
        get(name, "builders")
    print(format_markdown() if args.markdown else format_table(args.names or None), end="")
    return 0


def _add_builders_parser(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser(
        "builders",
        help="list the topology builders a sweep base may name, with their arguments",
    )
    b.add_argument("names", nargs="*", metavar="NAME", help="only these builders")
    b.add_argument("--markdown", action="store_true", help="print docs/builders.md (every builder)")
    b.set_defaults(func=_cmd_builders)


def _cmd_bench(args: argparse.Namespace) -> int:
    from ccfair.bench import main as bench_main
    from ccfair.bench import sweep_main

    if args.frontend:
        from ccfair.bench import frontend_main

        scenario = Path(__file__).resolve().parents[2] / "scenarios" / "dumbbell.toml"
        return frontend_main(str(args.frontend_scenario or scenario))
    if args.sweep:
        return sweep_main(args.sweep, quick=args.quick, workers=args.workers)
    if args.report:
        from ccfair.bench import report_main

        return report_main(args.report, quick=args.quick, workers=args.workers)
    return bench_main(
        quick=args.quick, cases=args.case, instructions=args.instructions, history=args.history
    )


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
    from ccfair.store.schema import MARKER_TABLE, TABLES

    clash = name in (*TABLES, MARKER_TABLE, "figures")
    return f"results/sweep-{name}" if clash else f"results/{name}"


def _with_backend(sweep: Any, backend: str | None) -> Any:
    """The sweep on ``backend`` (``--backend``), named ``<name>-<backend>`` when that differs
    from its own, so that its default results directory is its own."""
    import dataclasses

    if backend is None or backend == sweep.backend:
        return sweep
    return dataclasses.replace(sweep, backend=backend, name=f"{sweep.name}-{backend}")


def _cmd_sweep(args: argparse.Namespace) -> int:
    from ccfair.execution.sweeps import run_sweep
    from ccfair.spec.sweep import Sweep

    sweep = _with_backend(Sweep.from_toml(args.spec), args.backend)
    lim = _limits_of(args)
    if args.dry_run:
        from ccfair.limits import estimate_sweep

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


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from ccfair.execution.sweeps import run_sweep
    from ccfair.presets import PRESETS, count_runs, get
    from ccfair.report.page import write_report

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
            profiles=args.profile,
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
        limits=_limits_of(args),
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


def _cmd_report(args: argparse.Namespace) -> int:
    from ccfair.report.page import write_report

    path = write_report(args.results, args.out, log=(lambda msg: None) if args.quiet else None)
    print(path)
    return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from ccfair.present.style import save
    from ccfair.present.timeseries import timeseries
    from ccfair.results.directory import Results
    from ccfair.store.directory import table_folder

    res = Results(args.results)
    ids = res.run_ids if args.all else args.run_ids
    if not ids and len(res.run_ids) == 1:
        ids = res.run_ids  # a directory of one run needs no run id
    if not ids:
        print(
            f"error: plot: {res.root} holds {len(res.run_ids)} runs; give RUN_ID... or --all",
            file=sys.stderr,
        )
        return 2
    unknown = [r for r in ids if r not in set(res.run_ids)]
    if unknown:
        raise ResultsError(f"{res.root}: no finished run {unknown[0]!r}")
    window = _parse_window(args.window)
    if not (args.smooth >= 0 and math.isfinite(args.smooth)):
        raise SpecError("--smooth", args.smooth, "is not a window of 0 or more seconds")
    if args.out is not None and not args.out.strip():
        raise SpecError("--out", args.out, "is not a directory path")
    # The default folder is the results directory's own: a link there is refused.
    out = Path(args.out) if args.out is not None else table_folder(res.root, "figures")
    pts = res.points().drop_duplicates("run_id").set_index("run_id")
    for i, rid in enumerate(ids, 1):
        label = None
        if rid in pts.index and res.grid_keys:
            row = pts.loc[rid]
            label = ", ".join(f"{k}={row[k]}" for k in res.grid_keys) + f", rep {row['rep']}"
        try:
            fig = timeseries(
                res, rid, title=label, flows=args.flows, window=window, smooth_s=args.smooth
            )
        except ValueError as exc:  # a flow or window that does not fit the run
            raise SpecError("plot", None, str(exc), with_value=False) from None
        paths = save(fig, out, f"timeseries-{rid}", formats=args.format)
        if not args.quiet:
            print(f"[{i}/{len(ids)}] {', '.join(str(p) for p in paths)}", flush=True)
    return 0


def _parse_window(text: str | None) -> tuple[float, float] | None:
    """``--window START:END`` in seconds (either may be a duration like ``2s``)."""
    if text is None:
        return None
    from ccfair.units import parse_duration

    def seconds(part: str) -> float:
        try:
            return float(part)
        except ValueError:
            ns = parse_duration(part.strip())
            if ns is None:
                raise SpecError(
                    "--window", text, "is not START:END in seconds, e.g. 5:20"
                ) from None
            return ns / 1e9

    parts = text.split(":")
    if len(parts) != 2:
        raise SpecError("--window", text, "is not START:END in seconds, e.g. 5:20")
    lo, hi = seconds(parts[0]), seconds(parts[1])
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise SpecError("--window", text, "is not a window of finite times, e.g. 5:20")
    if not lo < hi:
        raise SpecError("--window", text, "start is not before end")
    return lo, hi


def _cmd_compare(args: argparse.Namespace) -> int:
    import pandas as pd

    from ccfair.results.directory import Results

    a, b = Results(args.a), Results(args.b)
    try:
        frame = a.compare(b, values=args.metric)
    except SpecError as exc:  # name the option, not the Python argument
        raise SpecError("--metric", exc.value, exc.message, with_value=False) from None
    if frame.empty:  # one error line, exit 2, like every failure (module docstring)
        return _fail(f"compare: {a.root} and {b.root} share no grid point or scenario")
    if args.csv:
        frame.to_csv(args.csv, index=False)
        print(f"{len(frame)} rows -> {args.csv}")
        return 0
    print(f"A = {a.root} ({len(a.run_ids)} runs), B = {b.root} ({len(b.run_ids)} runs)")
    print("diff = B - A; diff_ci95: Welch 95% interval half-width; * where it excludes 0")
    shown = frame.assign(significant=frame["significant"].map({True: "*", False: ""}))
    with pd.option_context("display.max_rows", None, "display.width", 200):
        print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return 0


def _add_compare_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "compare",
        help="line up matching points of two results directories, with differences and CIs",
    )
    c.add_argument("a", metavar="DIR_A", help="results directory A")
    c.add_argument("b", metavar="DIR_B", help="results directory B")
    c.add_argument(
        "--metric", action="append", help="run metric to compare (repeatable; default: main ones)"
    )
    c.add_argument("--csv", metavar="FILE", help="write CSV instead of printing")
    c.set_defaults(func=_cmd_compare)


def _cmd_metrics(args: argparse.Namespace) -> int:
    import pandas as pd

    from ccfair.analysis.models import model_table
    from ccfair.results.directory import Results

    res = Results(args.results)
    if args.table == "points":
        frame = res.points()
    elif args.table == "flows":
        frame = res.flows()
        if not args.per_run:
            frame = res.point_summary(
                frame, ["goodput_mbps", "share_frac", "rtt_p95_ms"], ["flow_name", "cca"]
            )
    elif args.table == "ccas":
        frame = res.ccas()
        if not args.per_run:
            frame = res.point_summary(
                frame, ["per_flow_mbps", "share_frac", "rtt_mean_ms"], ["cca"]
            )
    elif args.table == "harm":
        frame = res.harm()
        if not args.per_run and not frame.empty:
            frame = res.point_summary(
                frame, ["harm_goodput_frac", "harm_rtt_frac"], ["incumbent", "contender"]
            )
    elif args.table == "model":
        frame = model_table(res)
        if not args.per_run and not frame.empty:
            frame = res.point_summary(frame, ["measured", "ware_simple", "ware_full", "x_bdp"])
    else:
        frame = res.runs()
        if not args.per_run:
            values = [
                "goodput_mbps",
                "jain_index",
                *[c for c in frame.columns if c.endswith("_share_frac")],
                "utilisation_frac",
                "loss_frac",
                "qdelay_mean_ms",
            ]
            frame = res.point_summary(frame, values)
    missing = res.incomplete()
    if missing is not None:  # on stderr, once the table is made: CSV and JSON stay as asked
        print(f"warning: {missing}", file=sys.stderr)
    if args.csv:
        frame.to_csv(args.csv, index=False)
        print(f"{len(frame)} rows -> {args.csv}")
    elif args.json:
        print(frame.to_json(orient="records"))
    else:
        with pd.option_context(
            "display.max_rows", None, "display.max_columns", None, "display.width", 200
        ):
            print(frame.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return 0


def _add_run_parser(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("run", help="run a scenario (default: the built-in dumbbell)")
    r.add_argument("scenario", nargs="?", help="scenario TOML file")
    r.add_argument(
        "--out",
        default="results",
        help="results directory for the Parquet tables (default: results)",
    )
    r.add_argument("--no-save", action="store_true", help="print the summary only, write nothing")
    r.add_argument(
        "--trace",
        action="append",
        metavar="FLOW",
        help="record every packet of FLOW hop by hop (repeatable); saved to OUT/trace/",
    )
    r.add_argument(
        "--backend",
        choices=_backend_names(),
        help="execution backend (default: the scenario's backend field, else sim); "
        "kernel runs on real Linux TCP in network namespaces, needs root (docs/kernel.md)",
    )
    r.add_argument("--seed", type=int, help="override the scenario's seed")
    r.add_argument("--duration", help='override the duration, e.g. "10s"')
    r.add_argument("--json", action="store_true", help="print the per-flow table as JSON")
    r.add_argument("--quiet", "-q", action="store_true", help="print nothing")
    _add_limit_options(r)
    r.set_defaults(func=_cmd_run)


def _add_check_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "check",
        help="validate scenario files, show what they resolve to and what they will cost",
    )
    c.add_argument("scenario", nargs="+")
    c.add_argument("--engine", action="store_true", help="print the engine's resolved spec")
    _add_limit_options(c)
    c.set_defaults(func=_cmd_check)


def _add_cleanup_parser(sub: argparse._SubParsersAction) -> None:
    k = sub.add_parser(
        "cleanup",
        help="remove network namespaces left by kernel runs that crashed (needs root)",
    )
    k.set_defaults(func=_cmd_cleanup)


def _add_validate_parser(sub: argparse._SubParsersAction) -> None:
    v = sub.add_parser(
        "validate",
        help="run scenarios on the simulator and on real Linux TCP, and compare (needs root)",
        description="Fidelity study: every point (scenarios, sweep files with their "
        "repetitions, or a preset's grid) runs on both backends; per point and flow the mean "
        "share with its 95% CI on each backend and the difference, a summary per algorithm "
        "pair, heatmaps, overlaid time series and a report section are written to --out. "
        "Finished runs are kept: rerunning resumes (docs/kernel.md).",
    )
    v.add_argument("inputs", nargs="*", metavar="SCENARIO", help="scenario or sweep TOML files")
    v.add_argument("--preset", help="validate a preset's grid (see ccfair reproduce --list)")
    v.add_argument("--quick", action="store_true", help="with --preset: its reduced grid")
    v.add_argument("--out", default="validation", help="output directory (default: validation)")
    _add_retries_option(v)
    v.add_argument(
        "--keep-flagged",
        action="store_true",
        help="keep finished kernel runs the self-checks flagged (reported as such) instead of "
        "running them again",
    )
    v.add_argument(
        "--finished-only",
        action="store_true",
        help="compare only the points whose kernel runs are already in OUT/results (flagged "
        "ones reported as such); starts no kernel run and needs no root",
    )
    v.add_argument("--duration", help='override every scenario\'s duration, e.g. "20s"')
    v.add_argument(
        "--no-match-hz",
        action="store_true",
        help="run the simulator at the scenario's hz instead of the kernel's HZ",
    )
    v.add_argument(
        "--sim-tcp",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a TCP option for the simulator's side only (repeatable; VALUE as in TOML), "
        'e.g. tso="linux" to compare its offload model with Linux\'s own',
    )
    v.add_argument(
        "--reference",
        choices=["kernel", "veth"],
        default="kernel",
        help="the Linux runs' data path: kernel (ccfair's forwarder over TUN devices, the "
        "default) or veth (veth pairs with tc qdiscs as Mininet builds them; delays need netem)",
    )
    v.add_argument(
        "--host-latency",
        metavar="FILE",
        default=None,
        help="give the simulator's hosts the turnaround measured on the testbed (the JSON of "
        "scripts/measure_host_latency.py --out; docs/model.md)",
    )
    v.add_argument("--quiet", "-q", action="store_true", help="print nothing")
    v.set_defaults(func=_cmd_validate)


def _add_ccas_parser(sub: argparse._SubParsersAction) -> None:
    a = sub.add_parser(
        "ccas",
        help="list congestion control algorithms and their parameters (types, units, meanings)",
    )
    a.add_argument("names", nargs="*", metavar="NAME", help="only these algorithms")
    a.add_argument("--json", action="store_true", help="print the metadata as JSON")
    a.add_argument(
        "--markdown", action="store_true", help="print docs/algorithms.md (every algorithm)"
    )
    a.set_defaults(func=_cmd_ccas)


def _add_bench_parser(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bench", help="whole-run benchmarks of the simulator")
    b.add_argument("--quick", action="store_true", help="short runs (smoke test)")
    b.add_argument("--case", action="append", help="run only this case (repeatable)")
    b.add_argument(
        "--instructions",
        action="store_true",
        help="also count the engine's instructions per packet-hop under callgrind (valgrind)",
    )
    b.add_argument(
        "--history",
        metavar="FILE",
        help="append this run's numbers as one JSON line to FILE (e.g. benches/history.jsonl)",
    )
    b.add_argument(
        "--sweep",
        action="append",
        metavar="PRESET",
        help="time a preset's whole sweep from scratch instead (repeatable), e.g. harada-dumbbell",
    )
    b.add_argument(
        "--report",
        action="append",
        metavar="PRESET|DIR",
        help="time writing the report of a results directory, or of a preset's full grid run "
        "with 5 s runs (repeatable; --quick: its quick grid)",
    )
    b.add_argument(
        "--workers", type=int, help="local workers for --sweep and --report (default: cores)"
    )
    b.add_argument(
        "--frontend",
        action="store_true",
        help="time the start of import/--help/check and a quick preset's figures vs its sweep",
    )
    b.add_argument("--frontend-scenario", metavar="FILE", help="scenario for --frontend's check")
    b.set_defaults(func=_cmd_bench)


def _add_retries_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--retries",
        type=int,
        default=2,
        help="run a kernel run the self-checks flag again up to this many times (default 2)",
    )


def _add_sweep_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "sweep",
        help="run every point of a sweep spec (resumable; local processes or a Dask cluster)",
    )
    s.add_argument("spec", help="sweep spec TOML file (see docs/experiments.md)")
    s.add_argument("--out", help="results directory (default: results/<sweep name>)")
    s.add_argument("--workers", type=int, help="local worker processes (default: cores)")
    s.add_argument("--cluster", metavar="ADDRESS", help="Dask scheduler, e.g. tcp://host:8786")
    s.add_argument(
        "--backend", choices=_backend_names(), help="run on this backend (default: the spec's)"
    )
    s.add_argument(
        "--dry-run",
        action="store_true",
        help="list the points, run ids and the resource estimate only",
    )
    s.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    _add_retries_option(s)
    _add_limit_options(s, runs=True)
    s.set_defaults(func=_cmd_sweep)


def _add_reproduce_parser(sub: argparse._SubParsersAction) -> None:
    rp = sub.add_parser(
        "reproduce", help="run a published experiment (preset), then write figures and a report"
    )
    rp.add_argument("name", nargs="?", help="preset name (see --list)")
    rp.add_argument("--list", action="store_true", help="list the presets")
    rp.add_argument("--quick", action="store_true", help="reduced grid, short runs (demo, CI)")
    rp.add_argument("--baselines", action="store_true", help="add own-kind runs (for harm)")
    rp.add_argument(
        "--repetitions",
        type=int,
        metavar="N",
        help="runs per grid point (default: the preset's, see docs/experiments.md)",
    )
    rp.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="NAME",
        help="testbed profile of every run (ideal, linux-stock, mininet-netem, core-netem; "
        "docs/spec.md); repeat it to add a profile axis to the grid",
    )
    rp.add_argument(
        "--backend",
        choices=_backend_names(),
        help="run on this backend (default: sim; kernel = real Linux TCP, as root)",
    )
    rp.add_argument("--out", help="results directory (default: results/<name>[-quick])")
    rp.add_argument("--workers", type=int, help="local worker processes (default: cores)")
    rp.add_argument("--cluster", metavar="ADDRESS", help="Dask scheduler, e.g. tcp://host:8786")
    rp.add_argument("--quiet", "-q", action="store_true", help="no progress or summary")
    _add_retries_option(rp)
    _add_limit_options(rp, runs=True)
    rp.set_defaults(func=_cmd_reproduce)


def _add_report_parser(sub: argparse._SubParsersAction) -> None:
    rep = sub.add_parser("report", help="write the HTML report of a results directory")
    rep.add_argument("results", help="results directory")
    rep.add_argument("--out", help="report file (default: RESULTS/report.html)")
    rep.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    rep.set_defaults(func=_cmd_report)


def _add_plot_parser(sub: argparse._SubParsersAction) -> None:
    pl = sub.add_parser("plot", help="time-series figures of runs (PNG, SVG and PDF by default)")
    pl.add_argument("results", help="results directory")
    pl.add_argument(
        "run_ids", nargs="*", metavar="RUN_ID", help="runs to plot (none: the only run)"
    )
    pl.add_argument("--all", action="store_true", help="every finished run")
    pl.add_argument("--out", help="figure directory (default: RESULTS/figures)")
    pl.add_argument(
        "--format",
        action="append",
        choices=["png", "svg", "pdf"],
        help="file format (repeatable; default png, svg and pdf)",
    )
    pl.add_argument("--flows", nargs="+", metavar="FLOW", help="draw only these flows")
    pl.add_argument("--window", metavar="START:END", help="time window in seconds, e.g. 5:20")
    pl.add_argument(
        "--smooth",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="moving-average window of goodput (default 1; 0 draws the raw samples)",
    )
    pl.add_argument("--quiet", "-q", action="store_true", help="print nothing")
    pl.set_defaults(func=_cmd_plot)


def _add_metrics_parser(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("metrics", help="fairness metrics of a results directory")
    m.add_argument("results", help="results directory")
    m.add_argument(
        "--table",
        choices=["runs", "flows", "ccas", "harm", "model", "points"],
        default="runs",
        help="which table (default: run metrics per grid point)",
    )
    m.add_argument("--per-run", action="store_true", help="one row per run, no aggregation")
    m.add_argument("--csv", metavar="FILE", help="write CSV instead of printing")
    m.add_argument("--json", action="store_true", help="print JSON records")
    m.set_defaults(func=_cmd_metrics)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ccfair`` command."""
    p = _Parser(prog="ccfair", description="Congestion-control fairness lab.")
    p.add_argument("--version", action="version", version=f"ccfair {_core.__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_run_parser(sub)
    _add_check_parser(sub)
    _add_cleanup_parser(sub)
    _add_validate_parser(sub)
    _add_ccas_parser(sub)
    _add_builders_parser(sub)
    _add_bench_parser(sub)
    _add_sweep_parser(sub)
    _add_reproduce_parser(sub)
    _add_report_parser(sub)
    _add_plot_parser(sub)
    _add_compare_parser(sub)
    _add_metrics_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ccfair`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except CcfairError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", 2)
        print(f"interrupted (signal {signum}); cleaned up", file=sys.stderr)
        return 128 + signum
    except OSError as exc:  # a file or directory the user named cannot be used
        if args.debug:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}")
    except MemoryError:
        return _fail("out of memory; lower the run's size or raise the machine's memory")
    except Exception as exc:  # noqa: BLE001 - the CLI must not dump tracebacks on users
        if args.debug:
            raise
        return _fail(
            f"internal error: {type(exc).__name__}: {exc} (a bug in ccfair; rerun with "
            "--debug for the traceback and report it)"
        )


def _fail(message: str) -> int:
    """Print one ``error:`` line (bounded in length) and return the exit status 2."""
    print(f"error: {shorten(' '.join(message.split()), 2000)}", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
