"""The executor: every driver of many runs (``run_many``, sweeps, ``validate``) runs them here.

Three placements share one set of rules, which come from the backends' capabilities
(:mod:`ccfair.backends`) rather than their names:

- :func:`run_in_threads`: threads of this process, results kept in memory
  (:func:`ccfair.api.run_many`, :func:`ccfair.validate.validate`);
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

import contextlib
import json
import logging
import math
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ccfair import _core, backends
from ccfair.backends.base import Backend
from ccfair.errors import RunError, SpecError
from ccfair.limits import MAX_WORKERS_PER_CORE, Limits, as_limits, most_parallel
from ccfair.spec.sweep import Point, Sweep
from ccfair.store.directory import (
    check_schema,
    check_table_folders,
    claim,
    finished_run_ids,
    lock,
    remove_run,
    table_folder,
    write_run_bytes,
)
from ccfair.store.files import remove_stale_temporaries
from ccfair.store.read import verify_run
from ccfair.store.schema import MARKER_TABLE, WRITE_ORDER

__all__ = ["SweepOutcome", "run_in_threads", "run_sweep", "warn_lateness"]


@dataclass
class SweepOutcome:
    """What :func:`run_sweep` did.

    Attributes:
        results_dir: where the results are.
        total: distinct runs of the sweep.
        already: runs that were finished before this call (and were not recomputed).
        executed: run ids computed by this call.
        recomputed: run ids found damaged and computed again.
        failed: run id -> one-line error, for runs that raised.
        interrupted: Ctrl-C stopped the sweep before every run finished.
        wall_s: wall time of this call.
        reruns: attempts made again because a self-checked backend's run was flagged.
        flagged: run ids kept flagged (``runs.reliable`` false) after every attempt.
    """

    results_dir: Path
    total: int
    already: int
    executed: list[str] = field(default_factory=list)
    recomputed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False
    wall_s: float = 0.0
    reruns: int = 0
    flagged: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every run of the sweep is finished (also when a Ctrl-C came as the last ended)."""
        return not self.failed and self.already + len(self.executed) >= self.total

    def summary(self) -> str:
        """One line for terminals.

        Example:
            >>> SweepOutcome(Path("r"), total=2, already=1, executed=["a"]).summary()[:54]
            '2 of 2 runs finished (1 executed now, 1 already there)'
        """
        done = self.already + len(self.executed)
        state = "complete" if self.complete else "incomplete"
        return (
            f"{done} of {self.total} runs finished ({len(self.executed)} executed now, "
            f"{self.already} already there"
            + (f", {len(self.recomputed)} damaged and recomputed" if self.recomputed else "")
            + (f", {len(self.failed)} failed" if self.failed else "")
            + (f", {self.reruns} flagged attempt(s) run again" if self.reruns else "")
            + (f", {len(self.flagged)} kept flagged" if self.flagged else "")
            + f"); {state}; {self.wall_s:.1f} s wall; results in {self.results_dir}"
        )


# --------------------------------------------------------------------------------------------
# Work done in worker processes (top-level functions: picklable, spawn-safe)


def die_with_parent(parent_pid: int) -> None:
    """Make this worker process end when the sweep that started it ends, however it ends
    (SIGTERM, SIGKILL, the OOM killer): its workers must not go on writing into a results
    directory whose lock is gone. Linux's ``PR_SET_PDEATHSIG`` (prctl(2)) sends SIGKILL then;
    a parent already gone (``getppid`` no longer ``parent_pid``) ends it at once. Elsewhere a
    no-op."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1  # include/uapi/linux/prctl.h
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return
    if parent_pid and os.getppid() != parent_pid:
        os._exit(1)


def _worker_init() -> None:
    # Ctrl-C goes to the whole process group; the parent decides how to stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _compute(
    run_id: str,
    spec: dict[str, Any],
    backend: str,
    limits: dict[str, int] | None = None,
    retries: int = 0,
) -> tuple[Any, int]:
    """Run one point: ``(result, attempts)``. A run of a self-checked backend (the kernel's)
    that its self-checks flag is run again, up to ``retries`` times, and only the attempt
    kept is ever written: a reliable one, else the last. Nothing of a flagged attempt reaches
    the results directory, so two attempts' tables can never mix.

    The result is the run's Arrow tables (:func:`ccfair.api.run_tables`): a worker only
    writes or sends them, so it builds no pandas DataFrame (the files are the same)."""
    from ccfair.api import run_tables
    from ccfair.spec.scenario import Scenario

    checked = backends.has(backend, "self_checked")
    attempts = 0
    while True:
        attempts += 1
        result = run_tables(Scenario.from_dict(spec), backend=backend, limits=limits)
        if result.run_id != run_id:
            raise RuntimeError(
                f"run id {result.run_id} differs from the sweep's {run_id}: the scenario does "
                "not normalise the same way in this worker (different ccfair version?)"
            )
        if not checked or result.reliable or attempts > retries:
            return result, attempts


def run_and_save(
    run_id: str,
    spec: dict[str, Any],
    backend: str,
    out: str,
    limits: dict[str, int] | None = None,
    retries: int = 0,
) -> dict[str, Any]:
    """Run one point (see :func:`_compute`) and write it into ``out`` (local workers)."""
    t0 = time.perf_counter()
    result, attempts = _compute(run_id, spec, backend, limits, retries)
    # The sweep checked the directory (schema version, symlinks) once under its lock.
    result.write_tables(Path(out))
    return {
        "run_id": run_id,
        "wall_s": time.perf_counter() - t0,
        "attempts": attempts,
        "reliable": result.reliable,
    }


def run_to_bytes(
    run_id: str,
    spec: dict[str, Any],
    backend: str,
    limits: dict[str, int] | None = None,
    retries: int = 0,
) -> dict[str, Any]:
    """Run one point (see :func:`_compute`) and return its tables as Parquet bytes (cluster
    workers)."""
    t0 = time.perf_counter()
    result, attempts = _compute(run_id, spec, backend, limits, retries)
    tables = result.parquet_bytes()  # the files write_tables() writes
    return {
        "run_id": run_id,
        "wall_s": time.perf_counter() - t0,
        "tables": tables,
        "attempts": attempts,
        "reliable": result.reliable,
    }


def _note_attempts(
    outcome: SweepOutcome, reply: dict[str, Any], say: Callable[[str], None]
) -> None:
    """Count a finished run's reruns and say when it stayed flagged."""
    attempts = int(reply.get("attempts", 1))
    outcome.reruns += attempts - 1
    if not reply.get("reliable", True):
        outcome.flagged.append(reply["run_id"])
        say(
            f"run {reply['run_id']}: flagged by its self-checks in all {attempts} attempt(s); "
            "kept and marked unreliable (runs.selfcheck_flags says why)"
        )


def _worker_versions() -> dict[str, str]:
    return {"version": _core.__version__, "git_revision": _core.__git_revision__}


# --------------------------------------------------------------------------------------------
# Progress


class _Progress:
    def __init__(self, total: int, desc: str, enabled: bool) -> None:
        self.bar = None
        if enabled and total:
            from tqdm import tqdm

            self.bar = tqdm(
                total=total,
                desc=desc,
                unit="run",
                file=sys.stderr,
                mininterval=0.5,
                dynamic_ncols=True,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} runs "
                "[{elapsed}<{remaining}, {rate_fmt}]",
            )

    def update(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# --------------------------------------------------------------------------------------------
# Running


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


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
    if not isinstance(sweep, Sweep):
        raise SpecError("sweep", sweep, "is not a ccfair.Sweep (Sweep.from_dict, Sweep.from_toml)")
    if not isinstance(results_dir, str | os.PathLike) or not str(results_dir):
        raise SpecError("results_dir", results_dir, "is not a directory path")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise SpecError("retries", retries, "is not a number of reruns (an integer >= 0)")
    _check_workers(workers)
    if cluster is not None and not _positive_finite(connect_timeout):
        raise SpecError("connect_timeout", connect_timeout, "is not a positive number of seconds")
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
    specs: dict[str, dict[str, Any]] = {}
    for p in points:
        specs.setdefault(p.run_id, p.scenario.to_dict())
    if cluster is None and backend.checks_scenarios:
        # Before anything runs: every point must be runnable here (for the kernel: an
        # algorithm neither it nor ccfair's BPF programs have, or BPF congestion controls this
        # machine cannot run, is one line now rather than a failure per point later).
        checked: set[str] = set()
        for p in points:
            if p.run_id not in checked:
                checked.add(p.run_id)
                backend.check(p.scenario.resolve())
    # Connect before touching the results directory: a wrong address changes nothing.
    client = _connect(cluster, connect_timeout) if cluster else None
    try:
        with lock(root):
            outcome = _run_locked(
                sweep, root, points, specs, workers, client, progress, say, lim, retries
            )
    finally:
        if client is not None:
            _close_quietly(client)
    outcome.wall_s = time.perf_counter() - t0
    return outcome


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
    specs: dict[str, dict[str, Any]],
    workers: int | None,
    client: Any,
    progress: bool,
    say: Callable[[str], None],
    lim: Limits,
    retries: int,
) -> SweepOutcome:
    """The part of :func:`run_sweep` done while holding the directory's lock."""
    check_schema(root)  # runs of another schema version cannot be mixed with these
    check_table_folders(root, WRITE_ORDER)  # before the claim: nothing written
    claim(root, sweep, points)
    for table in WRITE_ORDER:
        table_folder(root, table)
    remove_stale_temporaries(root)
    finished = set(finished_run_ids(root))
    recomputed = []
    for rid in sorted(finished & specs.keys()):
        problem = verify_run(root, rid)
        if problem is not None:
            say(f"run {rid}: damaged ({problem}); it will be computed again")
            remove_run(root, rid)
            finished.discard(rid)
            recomputed.append(rid)
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
        backend = backends.get(sweep.backend)
        parallel = client is not None or (workers or 1) > 1
        bar = _Progress(len(missing), sweep.name, progress)
        try:
            limits = {"memory": lim.memory, "events": lim.events}
            if client is not None:
                _run_dask(
                    client, missing, specs, sweep.backend, root, outcome, bar, say, limits, retries
                )
            else:
                with backend.session(say, parallel_processes=parallel) as env:
                    _LocalPool(
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
    return outcome


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


def warn_lateness(runs: Iterable[tuple[str, str]], say_late: Callable[[int, str], None]) -> None:
    """After runs that shared the machine: for each real-time backend, count its runs whose
    ``selfcheck_flags`` say the machine could not keep up (lateness or CPU bounds), and if
    any, call ``say_late(count, backend name)``.

    Example:
        >>> warn_lateness([("sim", ""), ("kernel", "forwarder CPU 1.2 > 0.9")], print)
        1 kernel
    """
    late: dict[str, int] = {}
    for name, flags in runs:
        b = backends.get(name)
        if b.real_time and b.is_late(flags):
            late[name] = late.get(name, 0) + 1
    for name, count in late.items():
        say_late(count, name)


def run_in_threads(
    count: int,
    run_one: Callable[[int], Any],
    *,
    jobs: int = 1,
    on_result: Callable[[int, Any], None] | None = None,
    backends_used: Sequence[Backend] = (),
) -> list[Any]:
    """Run ``run_one(0) .. run_one(count - 1)`` in ``jobs`` threads of this process; return
    their results in order, calling ``on_result(i, result)`` as each finishes. The first
    failure (or Ctrl-C, or SIGTERM where a backend makes it raise) cancels what has not
    started, asks every backend in ``backends_used`` to stop its runs, waits for them and
    propagates.

    Example:
        >>> run_in_threads(3, lambda i: i * i, jobs=2)
        [0, 1, 4]
    """
    results: list[Any] = [None] * count
    done_flags = [False] * count
    with ExitStack() as stack:
        for b in backends_used:
            stack.enter_context(b.interruptible())
        pool = stack.enter_context(ThreadPoolExecutor(max_workers=jobs))
        pending: dict[Future[Any], int] = {}
        try:
            for i in range(count):
                pending[pool.submit(run_one, i)] = i
                while len(pending) >= jobs:
                    _collect(pending, results, done_flags, on_result)
            while pending:
                _collect(pending, results, done_flags, on_result)
        except BaseException:
            for fut in pending:
                fut.cancel()
            for b in backends_used:
                b.stop_all()
            wait(list(pending))
            raise
    return [r for r, done in zip(results, done_flags, strict=True) if done]


def _collect(
    pending: dict[Future[Any], int],
    results: list[Any],
    done_flags: list[bool],
    on_result: Callable[[int, Any], None] | None,
) -> None:
    done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
    for fut in done:
        i = pending.pop(fut)
        results[i] = fut.result()
        done_flags[i] = True
        if on_result is not None:
            on_result(i, results[i])


class _Worker:
    """A worker process: ``python -m ccfair._sweep_worker`` reading one task per line
    on stdin and answering one JSON line per task on stdout. A plain subprocess rather than
    multiprocessing, so that nothing of the caller's ``__main__`` is re-imported (scripts
    without a main guard, stdin, notebooks all work)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ccfair._sweep_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            # The worker ends with this process (die_with_parent).
            env={**os.environ, **(env or {}), "CCFAIR_SWEEP_PARENT": str(os.getpid())},
        )
        self.task: str | None = None

    def send(
        self,
        run_id: str,
        spec: dict[str, Any],
        backend: str,
        out: str,
        limits: dict[str, int],
        retries: int,
    ) -> None:
        assert self.proc.stdin is not None
        task = {"run_id": run_id, "spec": spec, "backend": backend, "out": out, "limits": limits}
        line = json.dumps({**task, "retries": retries})
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        self.task = run_id

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _worker_main() -> int:
    """The loop of a local worker process (see :class:`_Worker`)."""
    _worker_init()
    # Keep the protocol stream to ourselves: anything else writing to fd 1 (Python or the
    # Rust engine) goes to stderr instead.
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        task = json.loads(line)
        try:
            res = run_and_save(
                task["run_id"],
                task["spec"],
                task["backend"],
                task["out"],
                task.get("limits"),
                task.get("retries", 0),
            )
            reply = {"ok": True, **res}
        except Exception as exc:  # noqa: BLE001 - reported to the parent as one line
            reply = {"run_id": task["run_id"], "ok": False, "error": _one_line(exc)}
        protocol.write(json.dumps(reply) + "\n")
    return 0


class _LocalPool:
    """Worker processes of one local sweep: each takes the next missing run when it
    replies; a worker that dies fails its run and is replaced (at most twice the pool
    size, so that a worker that cannot start does not loop)."""

    def __init__(
        self,
        workers: int | None,
        missing: list[str],
        specs: dict[str, dict[str, Any]],
        backend: str,
        root: Path,
        outcome: SweepOutcome,
        bar: _Progress,
        say: Callable[[str], None],
        limits: dict[str, int],
        env: dict[str, str] | None,
        retries: int = 0,
    ) -> None:
        self.n = min(workers or os.cpu_count() or 1, len(missing))
        self.queue = list(reversed(missing))  # pop() from the end takes them in order
        self.specs, self.backend, self.root, self.limits = specs, backend, root, limits
        self.retries = retries
        self.outcome, self.bar, self.say, self.env = outcome, bar, say, env
        self.replacements = 0
        self.pool = [_Worker(env) for _ in range(self.n)]
        self.sel = selectors.DefaultSelector()
        for w in self.pool:
            assert w.proc.stdout is not None
            self.sel.register(w.proc.stdout, selectors.EVENT_READ, w)

    def run(self) -> None:
        """Run every missing run; Ctrl-C once finishes the runs in progress, twice abandons
        them."""
        # Ctrl-C is counted by a handler and acted on between replies: a KeyboardInterrupt
        # raised while a reply is being read would lose it, and the run with it.
        with _CtrlC() as ctrl_c:
            try:
                self.start()
                while self.busy():
                    # Two presses may come before the loop sees the first (`timeout -s INT`
                    # relays the signal to the group): interrupted first, in any case, so
                    # that the runs not started are not counted as failed.
                    if ctrl_c.presses and not self.outcome.interrupted:
                        self.outcome.interrupted = True
                        reruns = (
                            ", with their reruns if flagged"
                            if self.retries and backends.has(self.backend, "self_checked")
                            else ""
                        )
                        self.say(
                            f"\ninterrupted: finishing the {len(self.busy())} run(s) in progress"
                            f"{reruns} (press Ctrl-C again to abandon them)"
                        )
                    if ctrl_c.presses >= 2:
                        break  # abandon: a run without its marker file does not count as finished
                    self.step()
                if not self.outcome.interrupted:
                    for rid in reversed(self.queue):  # left over only if workers kept dying
                        self.outcome.failed[rid] = "not run: worker processes kept dying"
            finally:
                self.close()

    def start(self) -> None:
        for w in self.pool:
            self.feed(w)

    def feed(self, w: _Worker) -> None:
        if self.queue and not self.outcome.interrupted:
            rid = self.queue.pop()
            try:
                w.send(
                    rid, self.specs[rid], self.backend, str(self.root), self.limits, self.retries
                )
            except OSError:
                self.outcome.failed[rid] = "a worker process died (killed or out of memory)"
                w.task = None
        else:
            w.task = None
            w.close()

    def busy(self) -> list[_Worker]:
        return [w for w in self.pool if w.task is not None]

    def step(self) -> None:
        for key, _ in self.sel.select(timeout=0.5):
            w: _Worker = key.data
            line = key.fileobj.readline()  # type: ignore[union-attr]
            if not line:  # the worker exited
                self.sel.unregister(key.fileobj)
                self._worker_died(w)
                continue
            reply = json.loads(line)
            if reply["ok"]:
                self.outcome.executed.append(reply["run_id"])
                _note_attempts(self.outcome, reply, self.say)
            else:
                self.outcome.failed[reply["run_id"]] = reply["error"]
                self.say(f"run {reply['run_id']} failed: {reply['error']}")
            self.bar.update()
            self.feed(w)

    def _worker_died(self, w: _Worker) -> None:
        if w.task is None:
            return
        self.outcome.failed[w.task] = "a worker process died (killed or out of memory)"
        self.say(f"run {w.task} failed: {self.outcome.failed[w.task]}")
        self.bar.update()
        w.task = None
        # Replace it, within limits (a worker that cannot start must not loop).
        if self.queue and not self.outcome.interrupted and self.replacements < 2 * self.n:
            self.replacements += 1
            fresh = _Worker(self.env)
            self.pool.append(fresh)
            assert fresh.proc.stdout is not None
            self.sel.register(fresh.proc.stdout, selectors.EVENT_READ, fresh)
            self.feed(fresh)

    def close(self) -> None:
        for w in self.pool:
            w.close()
        for w in self.pool:
            if self.outcome.interrupted and w.task is not None:
                w.kill()
            else:
                try:
                    w.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    w.kill()
        self.sel.close()


class _CtrlC:
    """Counts SIGINTs while active instead of raising KeyboardInterrupt (main thread only;
    elsewhere signals never arrive and nothing is installed)."""

    def __init__(self) -> None:
        self.presses = 0
        self._old: Any = None

    def __enter__(self) -> _CtrlC:
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._count)
        return self

    def _count(self, signum: int, frame: Any) -> None:
        self.presses += 1

    def __exit__(self, *exc: Any) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


def _connect(address: str, timeout: float) -> Any:
    """A Dask client of the scheduler at ``address`` with at least one worker."""
    try:
        from distributed import Client
    except ImportError:
        raise SpecError(
            "--cluster",
            address,
            "needs the dask distributed package: pip install 'ccfair[cluster]'",
        ) from None
    if not isinstance(address, str) or not address:
        raise SpecError("--cluster", address, "is not a scheduler address, e.g. tcp://host:8786")
    with _quiet_dask():
        try:
            client = Client(address, timeout=f"{timeout}s")
        except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, ValueError, ...
            raise SpecError("--cluster", address, f"cannot be reached: {_one_line(exc)}") from None
        try:
            client.wait_for_workers(1, timeout=max(timeout, 60.0))
        except Exception:  # noqa: BLE001 - a timeout, or the scheduler going away
            _close_quietly(client)
            raise SpecError(
                "--cluster", address, "has no workers (none joined within 60 s)"
            ) from None
    return client


def _run_dask(
    client: Any,
    missing: list[str],
    specs: dict[str, dict[str, Any]],
    backend: str,
    root: Path,
    outcome: SweepOutcome,
    bar: _Progress,
    say: Callable[[str], None],
    limits: dict[str, int],
    retries: int = 0,
) -> None:
    from distributed import as_completed

    mine = _worker_versions()
    with _quiet_dask():
        for worker, version in client.run(_worker_versions).items():
            if version != mine:
                say(f"warning: worker {worker} runs ccfair {version}, this process {mine}")
        futures = {
            client.submit(
                run_to_bytes,
                rid,
                specs[rid],
                backend,
                limits,
                retries,
                key=f"ccfair-run-{rid}",
                pure=False,
            ): rid
            for rid in missing
        }
        try:
            for fut in as_completed(list(futures)):
                rid = futures[fut]
                try:
                    res = fut.result()
                except Exception as exc:  # noqa: BLE001 - record and go on with the others
                    if _connection_lost(client, exc):
                        raise _lost(client, outcome) from None
                    outcome.failed[rid] = _one_line(exc)
                    say(f"run {rid} failed: {outcome.failed[rid]}")
                else:
                    write_run_bytes(root, rid, res["tables"])
                    outcome.executed.append(rid)
                    _note_attempts(outcome, res, say)
                bar.update()
                fut.release()
        except KeyboardInterrupt:
            outcome.interrupted = True
            say("\ninterrupted: cancelling the runs on the cluster")
            with contextlib.suppress(Exception):
                client.cancel(list(futures))
        except RunError:
            raise
        except (OSError, TimeoutError) as exc:
            raise _lost(client, outcome, exc) from None
        except Exception as exc:  # noqa: BLE001 - distributed's own errors when the link drops
            if _connection_lost(client, exc):
                raise _lost(client, outcome, exc) from None
            raise


def _connection_lost(client: Any, exc: BaseException) -> bool:
    """Whether ``exc`` means the scheduler is gone (rather than a run failing): the client
    says so, or distributed cancelled the run or closed the link."""
    if getattr(client, "status", "running") not in ("running", "connecting"):
        return True
    lost = ("FutureCancelledError", "CancelledError", "CommClosedError", "StreamClosedError")
    return type(exc).__name__ in lost


def _lost(client: Any, outcome: SweepOutcome, exc: BaseException | None = None) -> RunError:
    """The error of a sweep whose Dask scheduler went away (finished runs are kept)."""
    address = getattr(getattr(client, "scheduler", None), "address", "the scheduler")
    why = f" ({_one_line(exc)})" if exc is not None else ""
    return RunError(
        f"--cluster {address}: lost the connection to the Dask scheduler{why}; "
        f"{len(outcome.executed)} run(s) finished and are kept in {outcome.results_dir}; "
        "rerun the same command to run the rest"
    )


@contextmanager
def _quiet_dask() -> Iterator[None]:
    """Keep distributed's own log records (tracebacks when a connection drops) off the
    terminal while a sweep runs: ccfair reports the failure itself, in one line."""
    # distributed sets levels on its child loggers (distributed.client, ...): quiet each.
    names = ["distributed", "tornado", "asyncio"]
    names += [
        n
        for n in list(logging.root.manager.loggerDict)
        if n.startswith(("distributed.", "tornado.", "asyncio."))
    ]
    loggers = [logging.getLogger(n) for n in names]
    saved = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, was in zip(loggers, saved, strict=True):
            lg.disabled = was


def _close_quietly(client: Any) -> None:
    with _quiet_dask(), contextlib.suppress(Exception):
        client.close(timeout=5)
