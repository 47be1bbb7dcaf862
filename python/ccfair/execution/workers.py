"""Local worker processes of a sweep: each runs and saves one run at a time, so that a run that
kills its process (the OOM killer, a crash in the engine) fails alone.

A worker is a plain subprocess (``python -m ccfair.execution.worker_main``) reading one task
per line on stdin and answering one JSON line per task on stdout, rather than
multiprocessing, so that nothing of the caller's ``__main__`` is re-imported (scripts without
a main guard, stdin, notebooks all work). A worker ends with the sweep that started it. The
run itself (:func:`run_and_save`, :func:`run_to_bytes`) is the same for local and cluster
workers.

A task carries the point's resolved record (:class:`~ccfair.spec.resolved.Resolved`), as the
sweep's expansion resolved it: a worker runs it as it is and resolves nothing (over the pipe
of a local worker it is pickled, as Dask pickles a cluster task's arguments).
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import pickle
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ccfair import backends
from ccfair.execution.outcome import Progress, SweepOutcome, note_attempts, one_line
from ccfair.execution.runs import run
from ccfair.results.run import RunResult
from ccfair.spec.resolved import Resolved
from ccfair.store.directory import run_is_finished

__all__ = ["die_with_parent", "run_and_save", "run_to_bytes"]


def die_with_parent(parent_pid: int) -> None:
    """Make this worker process end when the sweep that started it ends, however it ends
    (SIGTERM, SIGKILL, the OOM killer): its workers must not go on writing into a results
    directory whose lock is gone. Linux's ``PR_SET_PDEATHSIG`` (prctl(2)) sends SIGKILL then;
    a parent already gone (``getppid`` no longer ``parent_pid``) ends it at once. Elsewhere a
    no-op."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1  # include/uapi/linux/prctl.h
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return
    if parent_pid and os.getppid() != parent_pid:
        os._exit(1)


def encode_resolved(resolved: Resolved) -> str:
    """A resolved record as one line of text for a local worker's task: pickled (a record
    of this process for its own child process, never read from elsewhere).

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> r = dumbbell(2, "reno").resolve()
        >>> decode_resolved(encode_resolved(r)).engine_json == r.engine_json
        True
    """
    return base64.b64encode(pickle.dumps(resolved, protocol=pickle.HIGHEST_PROTOCOL)).decode()


def decode_resolved(text: str) -> Resolved:
    """The record :func:`encode_resolved` encoded."""
    resolved = pickle.loads(base64.b64decode(text))
    if not isinstance(resolved, Resolved):
        raise TypeError(f"a worker's task holds a {type(resolved).__name__}, not a Resolved")
    return resolved


def _worker_init() -> None:
    # Ctrl-C goes to the whole process group; the parent decides how to stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _compute(
    run_id: str,
    resolved: Resolved,
    backend: str,
    limits: dict[str, int] | None = None,
    retries: int = 0,
) -> tuple[RunResult, int]:
    """Run one point: ``(result, attempts)``. A run of a self-checked backend (the kernel's)
    that its self-checks flag is run again, up to ``retries`` times, and only the attempt
    kept is ever written: a reliable one, else the last. Nothing of a flagged attempt reaches
    the results directory, so two attempts' tables can never mix.

    The result's tables are the run's Arrow tables (:func:`ccfair.execution.runs.run`): a
    worker only writes or sends them, so it builds no pandas DataFrame."""
    checked = backends.has(backend, "self_checked")
    attempts = 0
    while True:
        attempts += 1
        result = run(resolved, backend=backend, limits=limits)
        if result.run_id != run_id:
            raise RuntimeError(
                f"run id {result.run_id} differs from the sweep's {run_id}: the backend names "
                "its runs differently in this worker (different ccfair version?)"
            )
        if not checked or result.reliable or attempts > retries:
            return result, attempts


def run_and_save(
    run_id: str,
    resolved: Resolved,
    backend: str,
    out: str,
    limits: dict[str, int] | None = None,
    retries: int = 0,
) -> dict[str, Any]:
    """Run one point (see :func:`_compute`) and write it into ``out`` (local workers)."""
    t0 = time.perf_counter()
    result, attempts = _compute(run_id, resolved, backend, limits, retries)
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
    resolved: Resolved,
    backend: str,
    limits: dict[str, int] | None = None,
    retries: int = 0,
) -> dict[str, Any]:
    """Run one point (see :func:`_compute`) and return its tables as Parquet bytes (cluster
    workers)."""
    t0 = time.perf_counter()
    result, attempts = _compute(run_id, resolved, backend, limits, retries)
    tables = result.parquet_bytes()  # the files write_tables() writes
    return {
        "run_id": run_id,
        "wall_s": time.perf_counter() - t0,
        "tables": tables,
        "attempts": attempts,
        "reliable": result.reliable,
    }


class _Worker:
    """A worker process: ``python -m ccfair.execution.worker_main`` reading one task per line
    on stdin and answering one JSON line per task on stdout. A plain subprocess rather than
    multiprocessing, so that nothing of the caller's ``__main__`` is re-imported (scripts
    without a main guard, stdin, notebooks all work)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ccfair.execution.worker_main"],
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
        resolved: Resolved,
        backend: str,
        out: str,
        limits: dict[str, int],
        retries: int,
    ) -> None:
        assert self.proc.stdin is not None
        task = {
            "run_id": run_id,
            "resolved": encode_resolved(resolved),
            "backend": backend,
            "out": out,
            "limits": limits,
        }
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


def worker_main() -> int:
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
                decode_resolved(task["resolved"]),
                task["backend"],
                task["out"],
                task.get("limits"),
                task.get("retries", 0),
            )
            reply = {"ok": True, **res}
        except Exception as exc:  # noqa: BLE001 - reported to the parent as one line
            reply = {"run_id": task["run_id"], "ok": False, "error": one_line(exc)}
        protocol.write(json.dumps(reply) + "\n")
    return 0


class LocalPool:
    """Worker processes of one local sweep: each takes the next missing run when it
    replies; a worker that dies fails its run and is replaced (at most twice the pool
    size, so that a worker that cannot start does not loop)."""

    def __init__(
        self,
        workers: int | None,
        missing: list[str],
        specs: dict[str, Resolved],
        backend: str,
        root: Path,
        outcome: SweepOutcome,
        bar: Progress,
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
                note_attempts(self.outcome, reply, self.say)
            else:
                self.outcome.failed[reply["run_id"]] = reply["error"]
                self.say(f"run {reply['run_id']} failed: {reply['error']}")
            self.bar.update()
            self.feed(w)

    def _worker_died(self, w: _Worker) -> None:
        if w.task is None:
            return
        if run_is_finished(self.root, w.task):
            # Killed after writing the run's marker but before replying: the run is complete
            # on disk and must count as done, not as failed (finished runs are never lost).
            self.outcome.executed.append(w.task)
            self.bar.update()
            w.task = None
            self._replace_worker()
            return
        self.outcome.failed[w.task] = "a worker process died (killed or out of memory)"
        self.say(f"run {w.task} failed: {self.outcome.failed[w.task]}")
        self.bar.update()
        w.task = None
        self._replace_worker()

    def _replace_worker(self) -> None:
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
