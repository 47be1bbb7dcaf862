"""The machine kernel runs share: its load (kernel runs happen in real time and need a quiet
machine), the turn kernel runs of different processes take, and the CPU time a hypervisor
takes from it (steal).

Example:
    >>> steal_ms("cpu  10 0 5 100 0 0 0 42 0 0")  # USER_HZ 100
    420.0
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ccfair.backends.kernel.host import STATE_DIR

__all__ = [
    "BUSY_CORES",
    "TURN_ENV",
    "TURN_PATH",
    "machine_load",
    "machine_turn",
    "steal_ms",
    "warn_if_busy",
]

#: Kernel runs on one machine take turns (see :func:`machine_turn`); this file is the turn.
TURN_PATH = STATE_DIR / "kernel.lock"


#: Set by a driver that holds the turn for the worker processes it starts (value: its pid).
TURN_ENV = "CCFAIR_KERNEL_TURN_HELD_BY"


def _cpu_ticks() -> dict[int, tuple[str, int]]:
    """(command name, user + system clock ticks) of every process (proc(5) stat fields 2,
    14 and 15)."""
    out: dict[int, tuple[str, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        head, _, tail = stat.rpartition(")")
        fields = tail.split()
        with contextlib.suppress(ValueError, IndexError):
            out[int(entry.name)] = (head.partition("(")[2], int(fields[11]) + int(fields[12]))
    return out


def machine_load(window_s: float = 0.5) -> list[tuple[str, float]]:
    """CPU used by other processes over the next ``window_s`` seconds, in cores per command
    name, busiest first (this process excluded).

    Example:
        >>> isinstance(machine_load(0.05), list)
        True
    """
    before = _cpu_ticks()
    time.sleep(window_s)
    after = _cpu_ticks()
    hz = os.sysconf("SC_CLK_TCK")
    me = os.getpid()
    per_name: dict[str, float] = {}
    for pid, (name, ticks) in after.items():
        if pid == me or pid not in before:
            continue
        used = (ticks - before[pid][1]) / hz / window_s
        if used > 0:
            per_name[name] = per_name.get(name, 0.0) + used
    return sorted(per_name.items(), key=lambda kv: -kv[1])


#: Other processes using more than this many cores make kernel runs unreliable.
BUSY_CORES = 0.25


def warn_if_busy(say: Any = None, window_s: float = 0.5) -> bool:
    """Before kernel runs: if other processes used more than :data:`BUSY_CORES` of CPU over
    the last ``window_s`` seconds, say so (naming the busiest) and return True. Kernel runs
    happen in real time; on a busy machine they get flagged unreliable.

    Example:
        >>> warn_if_busy(lambda m: None, 0.05) in (True, False)
        True
    """
    load = machine_load(window_s)
    total = sum(cores for _, cores in load)
    if total <= BUSY_CORES:
        return False
    top = ", ".join(f"{name} {cores:.2f}" for name, cores in load[:3])
    (say or (lambda m: print(m, file=sys.stderr, flush=True)))(
        f"warning: this machine is busy: other processes used {total:.2f} cores over the "
        f"last {window_s:g} s ({top}); kernel runs happen in real time and need a quiet "
        "machine, expect runs flagged unreliable (docs/kernel.md)"
    )
    return True


_TURN_LOCK = threading.Lock()


_TURN: dict[str, Any] = {"depth": 0, "fd": None}


@contextlib.contextmanager
def machine_turn(say: Any = None) -> Iterator[None]:
    """Hold this machine's kernel-run turn: kernel runs of different processes (two sweeps,
    a sweep and a test, two users) run one after the other, never on top of each other,
    because a real-time emulation needs the cores to itself and a run disturbed by another
    would only be flagged unreliable. Runs a driver deliberately starts in parallel share
    its turn: threads of one process (``run_many(jobs=N)``) and worker processes whose
    environment names the driver in :data:`TURN_ENV` (``--workers N`` sweeps). When another
    process holds the turn, ``say`` (default: stderr) is told once whom the run waits for.

    Example:
        >>> with machine_turn():  # doctest: +SKIP
        ...     pass
    """
    if os.environ.get(TURN_ENV) == str(os.getppid()):
        yield
        return
    with _TURN_LOCK:
        if _TURN["depth"] == 0:
            _TURN["fd"] = _acquire_turn(say)
        _TURN["depth"] += 1
    try:
        yield
    finally:
        with _TURN_LOCK:
            _TURN["depth"] -= 1
            if _TURN["depth"] == 0:
                os.close(_TURN["fd"])  # closing the descriptor releases the flock
                _TURN["fd"] = None


def _acquire_turn(say: Any) -> int:
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    fd = os.open(TURN_PATH, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            (say or (lambda m: print(m, file=sys.stderr, flush=True)))(
                f"waiting for the kernel run of process {holder} to finish (kernel runs on "
                "one machine take turns; docs/kernel.md)"
            )
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def steal_ms(stat: str | None = None) -> float | None:
    """CPU time the hypervisor has taken from this machine's CPUs since boot, in ms: the
    steal column of /proc/stat (proc(5); in USER_HZ ticks; 0 on bare metal), None without
    /proc/stat. A kernel run records what it grew by
    during the run: on a VM, forwarder stalls of milliseconds track it, and it says that the
    host, not ccfair or this machine's own load, took the CPU (docs/validation/README.md,
    "A quiet machine").

    Example:
        >>> steal_ms("cpu  10 0 5 100 0 0 0 42 0 0")  # USER_HZ 100
        420.0
    """
    if stat is None:
        try:
            with open("/proc/stat", encoding="ascii") as f:
                stat = f.readline()
        except OSError:
            return None
    fields = stat.split("\n", 1)[0].split()
    if len(fields) < 9 or fields[0] != "cpu":
        return None
    return int(fields[8]) * 1000.0 / os.sysconf("SC_CLK_TCK")
