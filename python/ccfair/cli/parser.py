"""The argument parser of the ``ccfair`` command: every command with its options. Imports
nothing heavy (the backends' registry for ``--backend``'s choices, ``_core`` for the
version): ``ccfair --help`` and argument errors are quick.

A command's options and arguments come in any order (``plot DIR -q RUN_ID``: argparse's
intermixed parsing), ``--debug`` goes before or after the command, and a bad argument is one
``error:`` line with exit status 2, suggesting the closest command or choice in any case
(``ccfair rum``: did you mean "run"?).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from ccfair import _core, backends
from ccfair.errors import did_you_mean, one_line, show

__all__ = ["build_parser"]


class _Parser(argparse.ArgumentParser):
    """An argument error is one line on stderr and exit status 2 (no usage block)."""

    def error(self, message: str) -> NoReturn:
        if not message.startswith(f"{self.prog}: "):
            message = f"{self.prog}: {message.removeprefix('argument ')} (see {self.prog} --help)"
        # argparse quotes arguments whole ("invalid int value: 'xxx...'", "unrecognized
        # arguments: ..."): one_line cuts each long word in the middle.
        print(f"error: {one_line(message)}", file=sys.stderr)
        raise SystemExit(2)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's check of a choice, with the closest one in any case."""
        choices = action.choices
        if choices is None or value in choices:
            return
        names = [str(c) for c in choices]
        if isinstance(action, argparse._SubParsersAction):
            what = f"{show(value)} is not a command"
        else:
            where = "/".join(action.option_strings) or action.metavar or action.dest
            what = f"{where}: {show(value)} is not one of {', '.join(names)}"
        hint = did_you_mean(value, names)
        if isinstance(action, argparse._SubParsersAction):
            hint += f" ({', '.join(names)})"
        raise argparse.ArgumentError(None, f"{self.prog}: {what}{hint}")


class _CommandParser(_Parser):
    """A command's parser: options and positional arguments in any order."""

    _intermixed = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._intermixed:  # the two passes of parse_known_intermixed_args
            return super().parse_known_args(args, namespace)
        self._intermixed = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixed = False


def _backend_names() -> list[str]:
    """``--backend`` choices: the registry of :mod:`ccfair.backends`."""
    return list(backends.names())


def _count(text: str) -> int:
    """A count given as an integer or in scientific notation ("2e10")."""
    try:
        value = float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{show(text)} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")) or value != int(value):
        raise argparse.ArgumentTypeError(f"{show(text)} is not a whole number")
    return int(value)


def _add_json_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--json",
        action="store_true",
        help=f"print {what} as JSON on stdout, and nothing else (docs/cli.md)",
    )


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


def _add_builders_parser(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser(
        "builders",
        help="list the topology builders a sweep base may name, with their arguments",
    )
    b.add_argument("names", nargs="*", metavar="NAME", help="only these builders")
    b.add_argument("--markdown", action="store_true", help="print docs/builders.md (every builder)")
    _add_json_option(b, "the builders with their arguments")


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
    c.add_argument("--csv", metavar="FILE", help="write CSV instead of printing ('-': stdout)")
    _add_json_option(c, "the rows of the table")


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
    _add_json_option(r, "the per-flow table")
    r.add_argument("--quiet", "-q", action="store_true", help="print nothing on stdout")
    _add_limit_options(r)


def _add_check_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "check",
        help="validate scenario files, show what they resolve to and what they will cost",
    )
    c.add_argument("scenario", nargs="+", metavar="FILE", help="scenario TOML files")
    c.add_argument("--engine", action="store_true", help="print the engine's resolved spec")
    _add_json_option(c, "each file's resolution, estimate or error")
    _add_limit_options(c)


def _add_cleanup_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "cleanup",
        help="remove network namespaces left by kernel runs that crashed (needs root)",
    )
    _add_json_option(c, "the namespaces removed")


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
    v.add_argument("--quiet", "-q", action="store_true", help="print nothing on stdout")
    _add_json_option(v, "the per-point comparison and the summary")


def _add_ccas_parser(sub: argparse._SubParsersAction) -> None:
    a = sub.add_parser(
        "ccas",
        help="list congestion control algorithms and their parameters (types, units, meanings)",
    )
    a.add_argument("names", nargs="*", metavar="NAME", help="only these algorithms")
    _add_json_option(a, "the algorithms' metadata")
    a.add_argument(
        "--markdown", action="store_true", help="print docs/algorithms.md (every algorithm)"
    )


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
    _add_json_option(b, "the numbers")


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
        help="list the points, run ids, the resource estimate and an estimate of the time "
        "(after a short calibration of this machine); run nothing",
    )
    s.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    _add_json_option(s, "the outcome (with --dry-run: the points and estimates)")
    _add_retries_option(s)
    _add_limit_options(s, runs=True)


def _add_reproduce_parser(sub: argparse._SubParsersAction) -> None:
    rp = sub.add_parser(
        "reproduce", help="run a published experiment (preset), then write figures and a report"
    )
    rp.add_argument("name", nargs="?", help="preset name (see --list)")
    rp.add_argument("--list", action="store_true", help="list the presets")
    rp.add_argument(
        "--dry-run",
        action="store_true",
        help="the number of runs, the resource estimate and an estimate of the time (after a "
        "short calibration of this machine); run nothing",
    )
    rp.add_argument("--quick", action="store_true", help="reduced grid, short runs (demo, CI)")
    rp.add_argument("--baselines", action="store_true", help="add own-kind runs (for harm)")
    rp.add_argument(
        "--repetitions",
        type=int,
        metavar="N",
        help="runs per grid point (default: the preset's, see docs/experiments.md)",
    )
    rp.add_argument(
        "--testbed",
        "--profile",  # its name before testbeds and host kernels were two concepts
        action="append",
        default=[],
        metavar="NAME",
        help="testbed of every run instead of the study's (linux-stock, ideal, mininet-netem, "
        "core-netem; docs/spec.md); repeat it to add a testbed axis to the grid",
    )
    rp.add_argument(
        "--kernel",
        action="append",
        default=[],
        metavar="VERSION",
        help="host kernel of every run instead of the study's (6.18, 4.15, 4.13); repeat it "
        "to add a kernel axis to the grid",
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
    _add_json_option(rp, "the outcome (with --list: the presets; with --dry-run: the estimates)")
    _add_retries_option(rp)
    _add_limit_options(rp, runs=True)


def _add_report_parser(sub: argparse._SubParsersAction) -> None:
    rep = sub.add_parser("report", help="write the HTML report of a results directory")
    rep.add_argument("results", help="results directory")
    rep.add_argument("--out", help="report file (default: RESULTS/report.html)")
    rep.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    _add_json_option(rep, "the report's path")


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
    _add_json_option(pl, "the files written, per run")


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
    m.add_argument("--csv", metavar="FILE", help="write CSV instead of printing ('-': stdout)")
    _add_json_option(m, "the table's rows")


def _add_completion_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "completion",
        help="print the shell completion script (bash or zsh; docs/cli.md)",
        description="Print a completion script for commands, options, choices and names. "
        'bash: eval "$(ccfair completion bash)" in ~/.bashrc; zsh: eval "$(ccfair completion '
        'zsh)" in ~/.zshrc, after compinit.',
    )
    c.add_argument("shell", choices=["bash", "zsh"], help="the shell")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ccfair`` command."""
    p = _Parser(prog="ccfair", description="Congestion-control fairness lab.")
    p.add_argument("--version", action="version", version=f"ccfair {_core.__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_CommandParser
    )
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
    _add_completion_parser(sub)
    for command in sub.choices.values():  # --debug also after the command
        command.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help="show tracebacks of internal errors",
        )
    return p
