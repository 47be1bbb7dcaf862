"""Runs in threads of this process, results kept in memory (:func:`ccfair.execution.runs.run_many`,
:func:`ccfair.validate.study.validate`), and the lateness warning after runs that shared the
machine.

A backend's ``interruptible`` and ``stop_all`` stop runs in threads: the first failure (or
Ctrl-C, or SIGTERM where a backend makes it raise) cancels what has not started, asks every
backend in use to stop its runs, waits for them and propagates.

Example:
    >>> run_in_threads(3, lambda i: i * i, jobs=2)
    [0, 1, 4]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from typing import Any

from ccfair import backends
from ccfair.backends.base import Backend

__all__ = ["run_in_threads", "warn_lateness"]


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
