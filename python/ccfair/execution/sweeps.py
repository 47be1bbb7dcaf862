"""The executor: every driver of many runs (``run_many``, sweeps, ``validate``) runs them here.

Three placements share one set of rules, which come from the backends' capabilities
(:mod:`ccfair.backends`) rather than their names:

- :func:`run_in_threads`: threads of this process, results kept in memory
  (:func:`ccfair.execution.runs.run_many`, :func:`ccfair.validate.study.validate`);
- local worker processes (crash isolation: a run that kills its process fails alone), each
  running and saving a run (:func:`run_sweep`);
- a Dask cluster (``cluster="tcp://HOST:PORT"``), whose workers return the Parquet bytes that
  this process writes, so workers need no shared file system (:func:`run_sweep`).

The rules: a ``real_time`` backend runs one run at a time unless asked, says beforehand when
the machine is busy, lets parallel worker processes share one turn of the machine, cleans up
after abandoned workers and warns after parallel runs that exceeded their lateness bounds
(:func:`warn_lateness`); a backend's ``interruptible`` and ``stop_all`` stop runs in threads.

The results directory of a sweep holds ``sweep.json`` (the spec, its hash and every point with
its run id) next to the per-run Parquet tables of :mod:`ccfair.store.directory`. Running a sweep:

1. expands and validates every point (nothing runs if one is invalid);
2. takes a lock on the directory (a second sweep into it is refused while the first runs);
3. writes ``sweep.json``, or checks that the one there is this sweep's (same hash), and refuses
   a directory holding another sweep's results;
4. checks every finished run's files (Parquet footers readable, one ``runs`` row naming the
   run); a damaged run is removed and computed again; stray temporary files are deleted;
5. runs the missing ones, each written atomically with its ``runs`` file last, so a run counts
   as finished exactly when it is complete. A sweep killed at any moment (even by SIGKILL)
   loses no finished run, and rerunning it executes only the missing runs.

Local workers are spawned processes (``workers`` defaults to the number of cores, or 1 for a
real-time backend) that run and save a run each.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ccfair import backends
from ccfair.backends.base import Backend
from ccfair.errors import SpecError
from ccfair.execution.cluster import close_quietly, connect, run_dask
from ccfair.execution.outcome import Progress, SweepOutcome
from ccfair.execution.threads import warn_lateness
from ccfair.execution.workers import LocalPool
from ccfair.limits import MAX_WORKERS_PER_CORE, Limits, as_limits, most_parallel
from ccfair.spec.resolved import Resolved
from ccfair.spec.sweep import Point, Sweep
from ccfair.store.directory import (
    check_schema,
    check_table_folders,
    claim,
    finished_run_ids,
    lock,
    remove_run,
    table_folder,
)
from ccfair.store.files import remove_stale_temporaries
from ccfair.store.read import verify_run
from ccfair.store.schema import MARKER_TABLE, WRITE_ORDER

__all__ = ["run_sweep"]


def run_sweep(
    sweep: Sweep,
    results_dir: str | os.PathLike[str],
    *,
    workers: int | None = None,
    cluster: str | None = None,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    connect_timeout: float = 15.0,
    limits: Limits | dict[str, Any] | None = None,
    retries: int = 2,
) -> SweepOutcome:
    """Run every missing point of ``sweep`` into ``results_dir``; returns what was done.

    ``workers`` local processes (default: the number of cores), or the Dask scheduler at
    ``cluster``. Points already finished in ``results_dir`` are not run again. Ctrl-C stops
    after the runs in progress are written (press it again to abandon them); the outcome then
    has ``interrupted`` set.

    Every run must fit ``limits`` (:class:`ccfair.Limits`; the number of runs and each run's
    estimate are checked before anything runs).

    A run of a self-checked backend (the kernel's) that its self-checks flag is run again, up
    to ``retries`` times; the first reliable attempt is kept, else the last, marked
    unreliable (``outcome.flagged``). Runs already finished are kept as they are, flagged or
    not. The simulator's runs are never flagged.

    Raises :class:`SpecError` for an invalid sweep or cluster address (and its subclass
    :class:`~ccfair.errors.LimitError` for a sweep above a limit), :class:`ResultsError` if
    ``results_dir`` belongs to another sweep, is in use or cannot be written, and
    :class:`~ccfair.errors.RunError` if the Dask scheduler is lost (finished runs are kept).

    Example:
        >>> from ccfair.spec.sweep import Sweep
        >>> sw = Sweep.from_dict({"base": {"builder": "dumbbell", "duration": "2s"},
        ...                       "grid": {"alpha": [1, 2]}})
        >>> run_sweep(sw, "results/demo", progress=False).total  # doctest: +SKIP
        2
    """
    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    _check_arguments(sweep, results_dir, retries, workers, cluster, connect_timeout)
    backend = backends.get(sweep.backend)
    if backend.real_time and workers is None and cluster is None:
        # Real-time runs (the kernel's) need prompt wake-ups on a core of their own: one at a
        # time unless asked (docs/kernel.md, "Several runs").
        workers = 1
    if cluster is None:
        backend.warn_if_busy(say)
    lim = as_limits(limits)
    points = sweep.expand(limits=lim)
    root = Path(results_dir)
    # What the workers run: each distinct run's resolved record, as the expansion resolved it.
    specs: dict[str, Resolved] = {}
    for p in points:
        specs.setdefault(p.run_id, p.resolved)
    if cluster is None and backend.checks_scenarios:
        _check_runnable_here(backend, points)
    # Connect before touching the results directory: a wrong address changes nothing.
    client = connect(cluster, connect_timeout) if cluster else None
    try:
        with lock(root):
            outcome = _run_locked(
                sweep, root, points, specs, workers, client, progress, say, lim, retries
            )
    finally:
        if client is not None:
            close_quietly(client)
    outcome.wall_s = time.perf_counter() - t0
    return outcome


def _check_arguments(
    sweep: Any,
    results_dir: Any,
    retries: Any,
    workers: Any,
    cluster: str | None,
    connect_timeout: Any,
) -> None:
    """Every argument is checked before the sweep expands or a directory is touched, so that
    a bad call costs nothing and names its argument."""
    if not isinstance(sweep, Sweep):
        raise SpecError("sweep", sweep, "is not a ccfair.Sweep (Sweep.from_dict, Sweep.from_toml)")
    if not isinstance(results_dir, str | os.PathLike) or not str(results_dir):
        raise SpecError("results_dir", results_dir, "is not a directory path")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise SpecError("retries", retries, "is not a number of reruns (an integer >= 0)")
    _check_workers(workers)
    if cluster is not None and not _positive_finite(connect_timeout):
        raise SpecError("connect_timeout", connect_timeout, "is not a positive number of seconds")


def _check_runnable_here(backend: Backend, points: list[Point]) -> None:
    """Before anything runs, every distinct run must be runnable on this machine (for the
    kernel: an algorithm neither it nor ccfair's BPF programs have, or BPF congestion controls
    this machine cannot run, is one line now rather than a failure per point later)."""
    checked: set[str] = set()
    for p in points:
        if p.run_id not in checked:
            checked.add(p.run_id)
            backend.check(p.resolved)


def _check_workers(workers: Any) -> None:
    """``workers`` is None (one per core) or a positive integer up to
    :data:`~ccfair.limits.MAX_WORKERS_PER_CORE` per core: each is a process of its own
    (about 100 MB), and more than that only compete for the cores."""
    if workers is None:
        return
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SpecError("--workers", workers, "is not a positive number of processes")
    most = most_parallel()
    if workers > most:
        raise SpecError(
            "--workers",
            workers,
            f"is more processes than this machine runs usefully (at most {most}: "
            f"{MAX_WORKERS_PER_CORE} per core)",
        )


def _positive_finite(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def _run_locked(
    sweep: Sweep,
    root: Path,
    points: list[Point],
    specs: dict[str, Resolved],
    workers: int | None,
    client: Any,
    progress: bool,
    say: Callable[[str], None],
    lim: Limits,
    retries: int,
) -> SweepOutcome:
    """The part of :func:`run_sweep` done while holding the directory's lock."""
    _prepare_directory(root, sweep, points)
    finished, recomputed = _intact_finished_runs(root, specs, say)
    missing = [rid for rid in specs if rid not in finished]
    outcome = SweepOutcome(
        results_dir=root,
        total=len(specs),
        already=len(specs) - len(missing),
        recomputed=recomputed,
    )
    where = (
        f"Dask cluster {client.scheduler.address}"
        if client is not None
        else f"{workers or os.cpu_count() or 1} local worker(s)"
    )
    say(
        f"sweep {sweep.name!r} ({sweep.spec_hash()}): {len(specs)} runs, "
        f"{outcome.already} finished, {len(missing)} to run on {where} -> {root}"
    )
    if missing:
        _run_missing(
            sweep, root, missing, specs, workers, client, progress, say, lim, retries, outcome
        )
    return outcome


def _prepare_directory(root: Path, sweep: Sweep, points: list[Point]) -> None:
    """Make the locked directory this sweep's before any run is read or written: same schema,
    no table folder that is a link or a file, ``sweep.json`` claimed, every table folder
    present and no temporary file of a killed writer left."""
    check_schema(root)  # runs of another schema version cannot be mixed with these
    check_table_folders(root, WRITE_ORDER)  # before the claim: nothing written
    claim(root, sweep, points)
    for table in WRITE_ORDER:
        table_folder(root, table)
    remove_stale_temporaries(root)


def _intact_finished_runs(
    root: Path, specs: dict[str, Resolved], say: Callable[[str], None]
) -> tuple[set[str], list[str]]:
    """The finished runs whose files are whole, and the ids of the damaged ones removed (to be
    computed again): a finished run counts only if it can be read back."""
    finished = set(finished_run_ids(root))
    recomputed = []
    for rid in sorted(finished & specs.keys()):
        problem = verify_run(root, rid)
        if problem is not None:
            say(f"run {rid}: damaged ({problem}); it will be computed again")
            remove_run(root, rid)
            finished.discard(rid)
            recomputed.append(rid)
    return finished, recomputed


def _run_missing(
    sweep: Sweep,
    root: Path,
    missing: list[str],
    specs: dict[str, Resolved],
    workers: int | None,
    client: Any,
    progress: bool,
    say: Callable[[str], None],
    lim: Limits,
    retries: int,
    outcome: SweepOutcome,
) -> None:
    """Run the missing runs on the cluster or on local workers, each saved as it finishes,
    recording each in ``outcome``; parallel runs of a real-time backend are checked after."""
    backend = backends.get(sweep.backend)
    parallel = client is not None or (workers or 1) > 1
    bar = Progress(len(missing), sweep.name, progress)
    try:
        limits = {"memory": lim.memory, "events": lim.events}
        if client is not None:
            run_dask(
                client, missing, specs, sweep.backend, root, outcome, bar, say, limits, retries
            )
        else:
            with backend.session(say, parallel_processes=parallel) as env:
                LocalPool(
                    workers,
                    missing,
                    specs,
                    sweep.backend,
                    root,
                    outcome,
                    bar,
                    say,
                    limits,
                    env or None,
                    retries,
                ).run()
    finally:
        bar.close()
    if parallel:
        warn_lateness(
            _saved_flags(root, sweep.backend, outcome.executed),
            lambda late, name: say(
                f"warning: {late} of {len(outcome.executed)} {name} runs exceeded their "
                "lateness or CPU bounds while running in parallel: this machine has no "
                "cores to spare for them; rerun with --workers 1"
            ),
        )


def _saved_flags(root: Path, backend: str, run_ids: list[str]) -> Iterator[tuple[str, str]]:
    """``(backend, selfcheck_flags)`` of saved runs of a self-checked backend (unreadable
    ones are skipped)."""
    if not backends.has(backend, "self_checked"):
        return
    for rid in run_ids:
        try:
            table = pq.read_table(
                root / MARKER_TABLE / f"{rid}.parquet", columns=["selfcheck_flags"]
            )
        except (OSError, ValueError, KeyError):
            continue
        yield backend, str(table.column("selfcheck_flags")[0])
