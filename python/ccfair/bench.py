"""Whole-run benchmarks of the simulator (``ccfair bench``).

Each case runs in a fresh subprocess so that its peak memory is its own. Reported: wall
time, simulated seconds per wall second, packet-hops per second (a packet finishing
serialisation on one link is one packet-hop) and memory: the engine's own (peak resident
memory during the run minus the process's peak before it, i.e. simulator state plus the
result columns handed to Python) and the whole process's peak, next to the target
of the issue that set it; speed is a ratio measured in this run, never a pass/fail in tests.

With ``--instructions`` (and valgrind installed) each case also runs 10 simulated seconds under
callgrind, counting only the engine's instructions (from the start of the event loop to the
finished result columns, ``Simulation::run_bounded``), and reports instructions per
packet-hop: a count that, unlike wall time, barely moves on a noisy machine, so a change to
the engine can be judged by it. ``--history FILE`` appends one JSON line per invocation (the
commit, the date and every case's numbers) to ``FILE``, e.g. ``benches/history.jsonl``, so a
regression shows in review.

``--json`` prints the same numbers as one JSON document on stdout instead of the tables
(docs/cli.md); notes go to stderr.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccfair import _core
from ccfair.errors import SpecError
from ccfair.execution.sweeps import run_sweep
from ccfair.presets import PRESETS
from ccfair.report.figures import make_figures, save_figures
from ccfair.report.page import write_report
from ccfair.results.directory import Results
from ccfair.results.run import build_result
from ccfair.spec.resolved import Resolved
from ccfair.spec.shapes import default_scenario, dumbbell, parking_lot
from ccfair.spec.sweep import Sweep
from ccfair.store.directory import finished_run_ids
from ccfair.store.read import load_table


@dataclass(frozen=True)
class Case:
    name: str
    description: str
    target_wall_s: float
    target_mem_mb: float | None


CASES = [
    Case(
        "dumbbell-bbr-vs-cubic-a0.5",
        "dumbbell, BBR vs CUBIC, 50 Mbit/s, RTT 40 ms, 0.5 BDP, 60 s",
        0.3,
        None,
    ),
    Case(
        "dumbbell-bbr-vs-cubic",
        "dumbbell, BBR vs CUBIC, 50 Mbit/s, RTT 40 ms, 2 BDP, 60 s",
        0.3,
        None,
    ),
    Case(
        "dumbbell-bbr-vs-cubic-a16",
        "dumbbell, BBR vs CUBIC, 50 Mbit/s, RTT 40 ms, 16 BDP, 60 s",
        0.3,
        None,
    ),
    Case("dumbbell-cubic", "dumbbell, 2 CUBIC, 50 Mbit/s, RTT 40 ms, 2 BDP, 60 s", 0.3, None),
    Case(
        "parking-lot-10hop-cubic", "10-hop parking lot, 11 CUBIC, D 18 ms, alpha 2, 60 s", 3.0, 100
    ),
    Case(
        "parking-lot-10hop-bbr-main",
        "10-hop parking lot, BBR main flow, 10 CUBIC cross flows, D 18 ms, alpha 2, 60 s",
        3.0,
        100,
    ),
]


def scenario_for(name: str, duration: str) -> Any:
    """The scenario of a benchmark case. The rows keep the hosts they were defined with, the
    idealised ones (``testbed = "ideal"``), so that instruction counts stay comparable with
    benches/history.jsonl across versions."""
    ideal: dict[str, Any] = {"testbed": "ideal", "duration": duration}
    if name == "dumbbell-cubic":
        return dumbbell(2, "cubic", bottleneck_delay="18ms", buffer_bdp=2.0, **ideal)
    alphas = {"dumbbell-bbr-vs-cubic": 2.0, "dumbbell-bbr-vs-cubic-a0.5": 0.5}
    alphas["dumbbell-bbr-vs-cubic-a16"] = 16.0
    if name in alphas:
        return dumbbell(
            2, ["bbr", "cubic"], bottleneck_delay="18ms", buffer_bdp=alphas[name], **ideal
        )
    if name == "parking-lot-10hop-bbr-main":
        return parking_lot(10, "bbr", "cubic", delay="18ms", buffer_bdp=2.0, **ideal)
    if name == "parking-lot-10hop-cubic":
        return parking_lot(10, "cubic", "cubic", delay="18ms", buffer_bdp=2.0, **ideal)
    raise ValueError(f"case: unknown benchmark {name!r}")


def _child(name: str, duration: str, handover: bool = True) -> None:

    resolved = scenario_for(name, duration).resolve()
    spec = resolved.engine_json
    before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    raw = _core.run(spec)
    wall = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    m = {
        "wall_s": wall,
        "sim_s": resolved.engine_spec["duration_ns"] / 1e9,
        "packet_hops": raw["engine"]["packet_hops"],
        "events": raw["engine"]["events"],
        "peak_mb": peak_kb / 1024,
        "engine_mb": (peak_kb - before_kb) / 1024,
    }
    if handover:
        m.update(_handover(resolved, raw, wall))
    print(json.dumps(m))


#: Timed repetitions of the hand-over (after one untimed: it pays for imports a sweep's
#: worker pays once); the medians are reported.
HANDOVER_REPEAT = 5


def _handover(resolved: Resolved, raw: Mapping[str, Any], engine_s: float) -> dict[str, float]:
    """What a run costs after the engine (issue 16, item 2), two ways from the same columns:
    interactive, ``ccfair.run``'s result built (``build_result``: the Arrow tables, converted
    to pandas only when a table is read, which this does not) and saved (``RunResult.save``:
    the unread Arrow tables to Parquet), and a sweep's worker
    (``run_and_save``), the columns built as Arrow tables and written
    (``build_result(...).write_tables``: no frame read, no pandas). Each file is written as
    a sweep writes it (Parquet, fsync, rename). Medians of :data:`HANDOVER_REPEAT`, the two
    ways alternated so that a busy moment of the machine falls on both."""
    facts: dict[str, Any] = {"run_id": "0123456789abcdef", "backend": "sim", "started_at": ""}
    facts["wall_time_s"] = engine_s
    times: dict[str, list[float]] = {"build_s": [], "save_s": [], "sweep_s": []}
    for i in range(HANDOVER_REPEAT + 1):
        with tempfile.TemporaryDirectory(prefix="ccfair-bench-") as tmp:
            t0 = time.perf_counter()
            result = build_result(resolved, raw, **facts)
            t1 = time.perf_counter()
            result.save(Path(tmp, "interactive"))
            t2 = time.perf_counter()
            build_result(resolved, raw, **facts).write_tables(Path(tmp, "sweep"))
            t3 = time.perf_counter()
        if i:
            times["build_s"].append(t1 - t0)
            times["save_s"].append(t2 - t1)
            times["sweep_s"].append(t3 - t2)
    return {k: statistics.median(v) for k, v in times.items()}


def run_case(name: str, duration: str) -> dict[str, Any]:
    """Run one case in a subprocess and return its measurements."""
    out = subprocess.run(
        [sys.executable, "-m", "ccfair.bench", "--child", name, duration],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


#: Simulated time of an instruction count (the issue's measurement: 10 s).
INSTRUCTIONS_DURATION = "10s"
#: The engine function callgrind counts in: the event loop through the finished columns.
ENGINE_FUNCTION = "*Simulation::run_bounded*"


def instructions_per_hop(name: str, duration: str = INSTRUCTIONS_DURATION) -> float | None:
    """Instructions the engine executes per packet-hop on a case (callgrind, counting only
    inside the engine's run), or None without valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    with tempfile.TemporaryDirectory(prefix="ccfair-bench-") as tmp:
        out = subprocess.run(
            [
                valgrind,
                "--tool=callgrind",
                "--collect-atstart=no",
                f"--toggle-collect={ENGINE_FUNCTION}",
                f"--callgrind-out-file={os.path.join(tmp, 'callgrind.out')}",
                sys.executable,
                "-m",
                "ccfair.bench",
                "--child",
                name,
                duration,
                "engine-only",
            ],
            check=True,
            capture_output=True,
            text=True,
        )
    collected = re.search(r"Collected\s*:\s*(\d+)", out.stderr)
    if collected is None:
        raise RuntimeError(f"callgrind reported no count: {out.stderr[-500:]}")
    m = json.loads(out.stdout.strip().splitlines()[-1])
    return int(collected.group(1)) / m["packet_hops"]


def git_revision() -> str | None:
    """The commit the simulator was built from (embedded by crates/ccfair-py/build.rs, with
    ``-dirty`` for uncommitted changes), else that of the checkout this module runs from."""
    if _core.__git_revision__ != "unknown":
        return _core.__git_revision__
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=os.path.dirname(os.path.abspath(__file__)),
            check=True,
            capture_output=True,
            text=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def build_kind() -> str:
    """Which build of the simulator is installed: ``"pgo"`` (scripts/install_pgo.sh) or
    ``"plain"`` (``pip install .``). Results are the same; wall times and instruction
    counts are not, so the benchmark and its history say which one they measured."""
    return "pgo" if _core.BUILD_PGO else "plain"


def history_record(results: dict[str, dict[str, Any]], quick: bool) -> dict[str, Any]:
    """This invocation's numbers as one record: the commit, the date, the build, every case."""
    return {
        "commit": git_revision(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "quick": quick,
        "build": build_kind(),
        "cases": results,
    }


def append_history(path: str, results: dict[str, dict[str, Any]], quick: bool) -> None:
    """Append one line (JSON) with this invocation's numbers to the history file ``path``."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(history_record(results, quick), sort_keys=True) + "\n")


def _printer(as_json: bool) -> Any:
    """``print`` for the text tables, or nothing with ``--json``."""
    return (lambda *args, **kwargs: None) if as_json else print


def _print_json(document: Any) -> None:
    print(json.dumps(document, indent=1, allow_nan=False))


def _selected_cases(cases: list[str] | None) -> list[Case]:
    """The cases asked for (all without ``cases``), in the table's order; an unknown name is
    an error before any case runs."""
    selected = [c for c in CASES if cases is None or c.name in cases]
    unknown = sorted(set(cases or []) - {c.name for c in CASES})
    if unknown:
        raise SpecError(
            "--case", unknown[0], f"is not a case (cases: {', '.join(c.name for c in CASES)})"
        )
    return selected


def _target_text(case: Case, m: dict[str, Any], quick: bool) -> str:
    """The case's target, judged only on full-length runs: quick runs are too short for their
    wall time to say anything."""
    target = f"<= {case.target_wall_s} s"
    if case.target_mem_mb:
        target += f", < {case.target_mem_mb} MB"
    if not quick:
        ok = m["wall_s"] <= case.target_wall_s and (
            case.target_mem_mb is None or m["engine_mb"] < case.target_mem_mb
        )
        target += " (met)" if ok else " (NOT met)"
    return target


def _case_lines(case: Case, m: dict[str, Any], ir: float | None, target: str) -> list[str]:
    """The case's row of the table and the line under it, with what it cost after the engine
    as ratios to the engine's wall time (so that machines of other speeds compare)."""
    after = m.get("build_s", 0.0) + m.get("save_s", 0.0)
    ratio = f"{after / m['wall_s']:.2f}" if "build_s" in m and m["wall_s"] > 0 else "-"
    sweep = f"{m['sweep_s'] / m['wall_s']:.2f}" if "sweep_s" in m and m["wall_s"] > 0 else "-"
    return [
        f"{case.name:28s} {m['wall_s']:8.3f} {m['sim_s'] / m['wall_s']:9.1f} "
        f"{m['packet_hops'] / m['wall_s'] / 1e6:8.2f} {m['engine_mb']:9.1f} "
        f"{m['peak_mb']:8.1f} {'-' if ir is None else f'{ir:.0f}':>9s} {ratio:>9s} "
        f"{sweep:>9s}  {target}",
        f"    {case.description}; {m['packet_hops']:,} packet-hops, {m['events']:,} events",
    ]


def main(
    quick: bool = False,
    cases: list[str] | None = None,
    instructions: bool = False,
    history: str | None = None,
    as_json: bool = False,
) -> int:
    """Run the benchmark cases and print a table (``as_json``: the history record); returns
    an exit status."""
    say = _printer(as_json)  # the tables, not printed with --json
    duration = "5s" if quick else "60s"
    selected = _selected_cases(cases)
    if instructions and shutil.which("valgrind") is None:
        sys.stderr.write("note: valgrind is not installed; instructions per hop are not counted\n")
        instructions = False
    kind = build_kind()
    hint = " (bash scripts/install_pgo.sh: the profile-guided build)" if kind == "plain" else ""
    say(f"simulator build: {kind}{hint}")
    say(
        f"{'case':28s} {'wall s':>8s} {'sim/wall':>9s} {'Mhops/s':>8s} {'engine MB':>9s} "
        f"{'proc MB':>8s} {'instr/hop':>9s} {'after/eng':>9s} {'sweep/eng':>9s}  target"
    )
    results: dict[str, dict[str, Any]] = {}
    for case in selected:
        m = run_case(case.name, duration)
        ir = instructions_per_hop(case.name) if instructions else None
        results[case.name] = {**m, "duration": duration, "instructions_per_hop": ir}
        for line in _case_lines(case, m, ir, _target_text(case, m, quick)):
            say(line)
    say(
        "    after/eng: ccfair.run's tables built (build_result) and saved (RunResult.save), "
        "over the engine's wall time;\n    sweep/eng: a sweep worker's, the engine's columns "
        "written as Parquet through Arrow only (build_result + write_tables, no frame read); "
        f"medians of {HANDOVER_REPEAT}"
    )
    if instructions:
        say(f"    instr/hop: callgrind, {INSTRUCTIONS_DURATION} simulated, engine run only")
    if history:
        append_history(history, results, quick)
        sys.stderr.write(f"appended to {history}\n")
    if as_json:
        _print_json(history_record(results, quick))
    return 0


#: Wall-time targets of whole sweeps (issue "Experiments"), on a 2-core machine.
SWEEP_TARGETS_S = {"harada-dumbbell": 60.0, "harada-10hop": 900.0}


def sweep_main(
    names: list[str], quick: bool = False, workers: int | None = None, as_json: bool = False
) -> int:
    """Run presets' sweeps from scratch in a temporary directory and report their wall time
    next to the targets; returns an exit status."""
    say = _printer(as_json)  # the tables, not printed with --json
    unknown = [n for n in names if n not in PRESETS]
    if unknown:
        raise SpecError("--sweep", unknown[0], f"is not a preset (presets: {', '.join(PRESETS)})")
    rows = []
    say(f"{'sweep':22s} {'runs':>5s} {'wall s':>8s} {'runs/s':>7s} {'sim s/wall s':>12s}  target")
    for name in names:
        sweep = PRESETS[name].sweep(quick=quick)
        with tempfile.TemporaryDirectory(prefix="ccfair-bench-") as tmp:
            outcome = run_sweep(
                sweep, os.path.join(tmp, "r"), workers=workers, progress=False, log=lambda m: None
            )

            runs = load_table(os.path.join(tmp, "r"), "runs")
        sim_s = float(runs["duration_s"].sum())
        target = SWEEP_TARGETS_S.get(name)
        verdict = ""
        if target is not None and not quick:
            verdict = f"<= {target:g} s ({'met' if outcome.wall_s <= target else 'NOT met'})"
        say(
            f"{sweep.name:22s} {outcome.total:5d} {outcome.wall_s:8.1f} "
            f"{outcome.total / outcome.wall_s:7.2f} {sim_s / outcome.wall_s:12.1f}  {verdict}"
        )
        rows.append(
            {
                "sweep": sweep.name,
                "runs": outcome.total,
                "wall_s": outcome.wall_s,
                "sim_s": sim_s,
                "target_wall_s": target,
                "complete": outcome.complete,
            }
        )
        if not outcome.complete:
            sys.stderr.write(f"incomplete: {outcome.summary()}\n")
            break
    if as_json:
        _print_json(rows)
    return 0 if all(r["complete"] for r in rows) else 1


def _check_report_targets(targets: list[str]) -> None:
    """Every target is a results directory or a preset, checked before the first one is
    timed: a typo in the last target must not cost the sweeps of the others."""
    for target in targets:
        if not os.path.isdir(target) and target not in PRESETS:
            raise SpecError(
                "--report",
                target,
                f"is neither a results directory nor a preset ({', '.join(PRESETS)})",
            )


def _short_sweep(preset: str, out: str, quick: bool, workers: int | None) -> tuple[str, str] | None:
    """Run the preset's grid with 5 s runs into ``out``: as many runs and points as the real
    sweep, so the report's work is the same, in a fraction of the time. Returns the results
    directory and its label, or None (said on stderr) if the sweep did not complete."""
    d = PRESETS[preset].sweep_dict(quick=quick)
    d["base"] = {**d["base"], "duration": "5s"}
    outcome = run_sweep(
        Sweep.from_dict(d),
        out,
        workers=workers,
        progress=False,
        log=lambda m: None,
    )
    if not outcome.complete:
        sys.stderr.write(f"incomplete: {outcome.summary()}\n")
        return None
    return out, f"{d['name']} (5 s runs)"


def _time_report(results_dir: str, tmp: str) -> tuple[float, dict[str, float], int, int]:
    """Write the report of ``results_dir`` into ``tmp``, never beside the results (they are
    read only); returns the total time, each step's, the figures drawn and the finished runs."""
    steps: dict[str, float] = {}
    t0 = time.perf_counter()
    write_report(
        results_dir,
        os.path.join(tmp, "report.html"),
        log=lambda m: None,
        figures_dir=os.path.join(tmp, "figures"),
        timings=steps,
    )
    total = time.perf_counter() - t0
    n_figs = len([f for f in os.listdir(os.path.join(tmp, "figures")) if f.endswith(".png")])
    n_runs = len(finished_run_ids(results_dir))
    return total, steps, n_figs, n_runs


def report_main(
    targets: list[str], quick: bool = False, workers: int | None = None, as_json: bool = False
) -> int:
    """Time writing the report of each target: a results directory (read only: the report
    and its figures go to a temporary directory), or a preset, whose grid (full, or quick
    with ``quick``) is first run with 5 s runs into a temporary directory (as many runs and
    points as the real sweep, shorter time series). Prints the time of each step; returns
    an exit status."""
    say = _printer(as_json)  # the tables, not printed with --json
    _check_report_targets(targets)
    rows = []
    say(
        f"{'report of':28s} {'runs':>5s} {'figs':>5s} {'total s':>8s} {'metrics':>8s} "
        f"{'figures':>8s} {'saving':>8s} {'page':>6s}"
    )
    for target in targets:
        with tempfile.TemporaryDirectory(prefix="ccfair-bench-") as tmp:
            results_dir = target
            label = os.path.basename(os.path.normpath(target))
            if not os.path.isdir(target):
                swept = _short_sweep(target, os.path.join(tmp, "r"), quick, workers)
                if swept is None:
                    return 1
                results_dir, label = swept
            total, steps, n_figs, n_runs = _time_report(results_dir, tmp)
        say(
            f"{label:28s} {n_runs:5d} {n_figs:5d} {total:8.1f} {steps.get('metrics', 0):8.1f} "
            f"{steps.get('figures', 0):8.1f} {steps.get('saving figures', 0):8.1f} "
            f"{steps.get('page', 0):6.2f}"
        )
        # Each step's time as "<step>_s": a step named "figures" must not overwrite the
        # count of figures.
        step_times = {f"{name.replace(' ', '_')}_s": t for name, t in steps.items()}
        rows.append(
            {"report_of": label, "runs": n_runs, "figures": n_figs, "total_s": total, **step_times}
        )
    if as_json:
        _print_json(rows)
    return 0


if __name__ == "__main__":
    if len(sys.argv) in (4, 5) and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], handover=sys.argv[4:] != ["engine-only"])
    else:
        sys.exit(main(quick="--quick" in sys.argv))


def _median_wall(cmd: list[str], repeat: int = 5) -> float:
    walls = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        walls.append(time.perf_counter() - t0)
    return sorted(walls)[len(walls) // 2]


def frontend_main(
    scenario: str | None = None, preset: str = "harada-dumbbell", as_json: bool = False
) -> int:
    """Front-end speed: the start of ``import ccfair``, ``ccfair --help`` and ``ccfair check``
    of ``scenario`` (default: the built-in scenario, written to a temporary file, so that an
    installed package needs no source tree), median wall time of 5 fresh processes; then a
    preset's quick sweep against the time to draw its report's figures; returns an exit
    status."""
    say = _printer(as_json)  # the tables, not printed with --json
    py = sys.executable
    startup = []
    with tempfile.TemporaryDirectory(prefix="ccfair-bench-") as tmp:
        if scenario is None:
            scenario = os.path.join(tmp, "default.toml")
            Path(scenario).write_text(default_scenario().to_toml(), encoding="utf-8")
        say(f"{'start-up':34s} {'median wall s':>13s}")
        for label, cmd in (
            ("python -c 'import ccfair'", [py, "-c", "import ccfair"]),
            ("ccfair --help", [py, "-m", "ccfair", "--help"]),
            (
                f"ccfair check {os.path.basename(scenario)}",
                [py, "-m", "ccfair", "check", scenario],
            ),
        ):
            wall = _median_wall(cmd)
            startup.append({"command": label, "median_wall_s": wall})
            say(f"{label:34s} {wall:13.3f}")

        out = os.path.join(tmp, "r")
        outcome = run_sweep(
            PRESETS[preset].sweep(quick=True), out, progress=False, log=lambda m: None
        )
        t0 = time.perf_counter()
        figures = make_figures(Results(out))
        save_figures(figures, os.path.join(tmp, "figures"))
        fig_s = time.perf_counter() - t0
    say(
        f"{preset} --quick: sweep {outcome.wall_s:.2f} s ({outcome.total} runs), "
        f"{len(figures)} figures {fig_s:.2f} s (ratio figures/sweep {fig_s / outcome.wall_s:.2f})"
    )
    if as_json:
        _print_json(
            {
                "startup": startup,
                "preset": preset,
                "sweep_runs": outcome.total,
                "sweep_wall_s": outcome.wall_s,
                "figures": len(figures),
                "figures_s": fig_s,
            }
        )
    return 0
