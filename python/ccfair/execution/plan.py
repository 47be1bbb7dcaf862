"""How long a sweep will take, before it runs (``ccfair sweep --dry-run``, ``ccfair reproduce
--dry-run``; docs/cli.md, "Dry runs").

Every run's resource estimate (:func:`ccfair.limits.estimate`) counts the engine events it
will take at most; what an event costs depends on the machine and on the scenario's shape.
A short calibration measures it here: a few of the sweep's own runs (at the first, middle
and last sixth of its runs sorted by estimated events), each shortened to two durations, are
run and their tables written as a sweep's worker writes them; a straight line through those
times gives a fixed cost per run and a cost per estimated event, which prices every run of
the sweep. The runs are then handed to the workers in the sweep's order, each to the first
free one, as the local pool does. Runs on a real-time backend (kernel, veth) take their
duration plus :data:`REAL_TIME_SETUP_S` of set-up, whatever the machine.

Example:
    >>> from ccfair.spec.sweep import Sweep
    >>> sw = Sweep.from_dict({"base": {"builder": "dumbbell", "duration": "2s"},
    ...                       "grid": {"alpha": [1, 2]}})
    >>> plan = plan_sweep(sw.expand(), "sim", workers=2, finished=set())
    >>> plan.runs, plan.runs_to_run, plan.workers
    (2, 2, 2)
"""

from __future__ import annotations

import heapq
import os
import tempfile
import time
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ccfair import backends
from ccfair.errors import SpecError
from ccfair.execution.outcome import format_seconds
from ccfair.execution.runs import run
from ccfair.limits import Estimate, estimate
from ccfair.spec.scenario import Scenario
from ccfair.spec.shapes import default_scenario

__all__ = ["REAL_TIME_SETUP_S", "Calibration", "SweepPlan", "calibrate", "plan_sweep"]

#: Set-up and clean-up of one run on a real-time backend (namespaces, devices, the
#: forwarder; docs/kernel.md: a 60 s run takes about 65 s).
REAL_TIME_SETUP_S = 5.0
#: Estimated events of the calibration's longer run of each sampled point, and the shorter
#: run's fraction of it: about 0.3 s and 0.1 s on a 2020s core.
CALIBRATION_EVENTS = 12_000_000
SHORT_FRACTION = 0.2
#: Sampled runs of the sweep (fewer if it has fewer distinct runs).
CALIBRATION_POINTS = 3


@dataclass(frozen=True)
class Calibration:
    """What a run costs on this machine, measured by :func:`calibrate`.

    Attributes:
        run_overhead_s: fixed cost of a run (set-up, writing small tables).
        s_per_event: cost of one estimated engine event (including the tables it fills).
        events_per_s: ``1 / s_per_event``.
        samples: (estimated events, wall seconds) of each calibration run.
        took_s: wall time of the calibration.
    """

    run_overhead_s: float
    s_per_event: float
    events_per_s: float
    samples: list[tuple[int, float]]
    took_s: float

    def seconds(self, events: int) -> float:
        """Wall seconds of one run of ``events`` estimated events."""
        return self.run_overhead_s + self.s_per_event * events


@dataclass(frozen=True)
class SweepPlan:
    """What running a sweep will take.

    Attributes:
        runs: distinct runs of the sweep.
        finished: of them, already finished in the results directory (a rerun skips them).
        runs_to_run: the others.
        backend: the backend they run on.
        workers: parallel workers (``None`` on a Dask cluster, whose size is unknown here).
        cpu_s: the runs to run, one after another.
        wall_s: on ``workers`` (``None`` on a cluster).
        calibration: how seconds were priced (``None`` on a real-time backend).
    """

    runs: int
    finished: int
    runs_to_run: int
    backend: str
    workers: int | None
    cpu_s: float
    wall_s: float | None
    calibration: Calibration | None

    def to_dict(self) -> dict[str, Any]:
        """The plan as a plain dict (``--dry-run --json``'s ``time``)."""
        out = asdict(self)
        if self.calibration is not None:
            out["calibration"]["samples"] = [list(s) for s in self.calibration.samples]
        return out

    def summary(self, out: str | None = None) -> str:
        """Two lines for terminals."""
        where = f" in {out}" if out else ""
        head = (
            f"time: {self.runs} runs ({self.runs_to_run} to run, {self.finished} already "
            f"finished{where})"
        )
        if self.runs_to_run == 0:
            return f"{head}: nothing to run"
        if self.wall_s is None:
            head += f": about {format_seconds(self.cpu_s)} of worker time on the Dask cluster"
        else:
            head += (
                f": about {format_seconds(self.wall_s)} on {self.workers} local worker(s) "
                f"({format_seconds(self.cpu_s)} of run time)"
            )
        c = self.calibration
        if c is None:
            return f"{head}\n  real time: each run's duration + {REAL_TIME_SETUP_S:g} s of set-up"
        return (
            f"{head}\n  calibrated on this machine in {c.took_s:.1f} s ({len(c.samples)} "
            f"shortened runs of the sweep): {c.run_overhead_s * 1e3:.0f} ms per run + "
            f"{c.s_per_event * 1e9:.1f} ns per estimated event"
        )


def plan_sweep(
    points: Sequence[Any],
    backend: str,
    *,
    workers: int | None,
    finished: Collection[str],
    cluster: bool = False,
    estimates: dict[str, Estimate] | None = None,
) -> SweepPlan:
    """The time of the sweep's runs not in ``finished`` on ``backend``: each run's estimate
    priced by :func:`calibrate` (a real-time backend: its duration plus set-up), handed out
    in order to ``workers`` (default: one per core; one on a real-time backend) or, on a
    cluster, only summed. ``estimates`` (run id -> :class:`~ccfair.limits.Estimate`) saves
    estimating runs again.
    """
    runs: dict[str, Any] = {}
    for p in points:
        runs.setdefault(p.run_id, p)
    todo = [p for rid, p in runs.items() if rid not in finished]
    b = backends.get(backend)
    if b.real_time:
        calibration = None
        seconds = [p.scenario.duration / 1e9 + REAL_TIME_SETUP_S for p in todo]
        default_workers = 1
    else:
        known = estimates or {}
        events = {
            p.run_id: (known.get(p.run_id) or estimate(p.scenario.resolve())).events for p in todo
        }
        calibration = calibrate([p.scenario for p in todo], list(events.values()))
        # No calibration when nothing is left to run.
        seconds = (
            [] if calibration is None else [calibration.seconds(events[p.run_id]) for p in todo]
        )
        default_workers = os.cpu_count() or 1
    n_workers = None if cluster else (workers or default_workers)
    return SweepPlan(
        runs=len(runs),
        finished=len(runs) - len(todo),
        runs_to_run=len(todo),
        backend=b.name,
        workers=n_workers,
        cpu_s=float(sum(seconds)),
        wall_s=None if n_workers is None else _makespan(seconds, n_workers),
        calibration=calibration,
    )


def _makespan(seconds: list[float], workers: int) -> float:
    """When the last run ends if each, in order, goes to the first free of ``workers``.

    Example:
        >>> _makespan([3, 1, 1, 1], 2)
        3.0
    """
    free_at = [0.0] * min(workers, max(1, len(seconds)))
    for s in seconds:
        heapq.heappush(free_at, heapq.heappop(free_at) + s)
    return max(free_at)


def calibrate(scenarios: Sequence[Scenario], events: Sequence[int]) -> Calibration | None:
    """Run a few of ``scenarios`` (with their estimated ``events``), shortened, and fit a
    fixed cost per run and a cost per estimated event (least squares); ``None`` without
    scenarios. A scenario that cannot be shortened (a flow starting late) is left out; if
    none can, the built-in dumbbell is measured instead.

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> sc = dumbbell(2, "reno", duration="1s")
        >>> calibrate([sc], [estimate(sc.resolve()).events]).events_per_s > 0
        True
    """
    if not scenarios:
        return None
    t0 = time.perf_counter()
    order = sorted(range(len(scenarios)), key=lambda i: events[i])
    k = min(CALIBRATION_POINTS, len(order))
    picked = sorted({order[(2 * j + 1) * len(order) // (2 * k)] for j in range(k)})
    samples: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory(prefix="ccfair-calibrate-") as tmp:
        for i in picked:
            samples += _measure(scenarios[i], events[i], Path(tmp) / str(i))
        if not samples:
            sc = default_scenario()
            samples = _measure(sc, estimate(sc.resolve()).events, Path(tmp) / "default")
    overhead, per_event = _fit(samples)
    return Calibration(
        run_overhead_s=overhead,
        s_per_event=per_event,
        events_per_s=1.0 / per_event,
        samples=samples,
        took_s=time.perf_counter() - t0,
    )


def _measure(sc: Scenario, events: int, tmp: Path) -> list[tuple[int, float]]:
    """(estimated events, wall seconds) of ``sc`` shortened to about
    :data:`CALIBRATION_EVENTS` and to :data:`SHORT_FRACTION` of that, each run and its tables
    written as a sweep's worker does; ``[]`` if ``sc`` cannot be shortened."""
    per_second = events / (sc.duration / 1e9)
    long_s = min(sc.duration / 1e9, CALIBRATION_EVENTS / max(per_second, 1.0))
    samples = []
    for n, seconds in enumerate((long_s * SHORT_FRACTION, long_s)):
        try:
            short = _shortened(sc, seconds)
            est = estimate(short.resolve()).events
        except SpecError:  # e.g. a flow that would start after the shortened end
            return []
        start = time.perf_counter()
        run(short).write_tables(tmp / str(n))
        samples.append((est, time.perf_counter() - start))
    return samples


def _shortened(sc: Scenario, seconds: float) -> Scenario:
    """``sc`` lasting ``seconds`` (at least two sampling intervals), measured throughout."""
    data = sc.to_dict()
    data["duration"] = f"{max(seconds, 2 * sc.sample_interval / 1e9):.6f}s"
    data.pop("measure", None)
    return Scenario.from_dict(data)


def _fit(samples: list[tuple[int, float]]) -> tuple[float, float]:
    """Least squares ``wall = overhead + per_event x events`` with both at least 0; through
    the origin when the events hardly differ.

    Example:
        >>> _fit([(1000, 2.0), (3000, 4.0)])
        (1.0, 0.001)
    """
    n = len(samples)
    mean_e = sum(e for e, _ in samples) / n
    mean_w = sum(w for _, w in samples) / n
    spread = sum((e - mean_e) ** 2 for e, _ in samples)
    if spread > 0:
        per_event = sum((e - mean_e) * (w - mean_w) for e, w in samples) / spread
        overhead = mean_w - per_event * mean_e
        if per_event > 0 and overhead >= 0:
            return overhead, per_event
    return 0.0, max(mean_w / max(mean_e, 1.0), 1e-12)
