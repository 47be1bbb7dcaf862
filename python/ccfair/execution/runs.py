"""Running scenarios: one run (:func:`run`), and a few in threads (:func:`run_many`); the
entry point shared by the CLI and Python users.

Example:
    >>> import ccfair
    >>> r = run(ccfair.dumbbell(2, "reno", duration="2s"))
    >>> r.flows["flow_name"].tolist()
    ['flow1', 'flow2']
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ccfair import backends
from ccfair import limits as _limits
from ccfair.backends.base import Backend
from ccfair.errors import SpecError
from ccfair.execution.threads import run_in_threads, warn_lateness
from ccfair.limits import MAX_WORKERS_PER_CORE, Limits, as_limits, most_parallel
from ccfair.results.run import RunResult, build_result
from ccfair.spec.resolved import Resolved
from ccfair.spec.scenario import Scenario, as_scenario

__all__ = ["run", "run_many", "with_trace"]


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cycle collector off while a run's spec is resolved and its tables built.

    Both create many small objects (a dict or two per flow and link) and free them by
    reference counting; the collector, triggered every few hundred allocations, walked the
    growing heap for nothing: ~0.5 s of a 10,000-flow run (benches/README.md, "Scale", the
    end-to-end cost of many-flow runs). Not paused while the backend runs (a kernel run
    lasts minutes). A collector the caller turned off stays off.

    Example:
        >>> with _gc_paused():
        ...     gc.isenabled()
        False
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


#: What :func:`run` takes: a scenario (or its dict or TOML file), or its resolved record.
Runnable = Resolved | Scenario | dict[str, Any] | str | os.PathLike[str]


def run(
    scenario: Runnable,
    *,
    backend: str | None = None,
    trace: Sequence[str] = (),
    force_bpf: bool = False,
    limits: Limits | dict[str, Any] | None = None,
) -> RunResult:
    """Run one scenario and return its tables.

    ``scenario`` is a :class:`~ccfair.spec.scenario.Scenario` (resolved once: a scenario
    keeps its resolution), a dict or TOML file of one, or a resolved record
    (:meth:`Scenario.resolve`), which runs as it is (a sweep's workers get those).

    ``backend`` names a backend of :mod:`ccfair.backends`: "sim" (the simulator) or
    "kernel" (the real Linux TCP stack in network namespaces, in real time, as root; see
    docs/kernel.md); by default the scenario's own ``backend`` field, else "sim". Raises
    :class:`ccfair.SpecError` (naming the field) before anything runs if the scenario is
    invalid or asks the kernel backend for something this kernel lacks, and
    :class:`~ccfair.backends.kernel.host.KernelError` if the kernel backend cannot run here.
    A kernel run that exceeded its self-check bounds is returned with ``runs.reliable`` false
    and the reasons in ``runs.flags``.

    ``trace`` names flows whose packets are recorded hop by hop (every offer to a link,
    every drop, every arrival) into ``RunResult.trace``: a diagnostic that changes no
    result and is not saved with the tables (docs/results.md, "Traces").

    ``force_bpf`` (kernel backend only) runs bbr and copa as ccfair's BPF programs even when
    unmodified, to compare them with the kernel's own module (docs/kernel.md); such runs
    get their own run ids.

    Before it starts, the run's resource estimate (:func:`ccfair.limits.estimate`) must fit
    ``limits`` (default :class:`ccfair.Limits`: 2 GB of memory, 2e10 events), else
    :class:`ccfair.errors.LimitError` names the field that costs the most; raise a limit
    with e.g. ``limits=ccfair.Limits(memory="8GB")``. A run the engine stops (event limit,
    no progress) or that fails inside the engine raises :class:`ccfair.errors.RunError`
    naming the run.

    The result holds the run's tables as Arrow tables in the schema's exact form; each
    becomes a pandas frame the first time it is read (:class:`~ccfair.results.run.RunResult`),
    so that a caller that only saves or sends the run, as a sweep's worker does, creates no
    DataFrame on the way (benches/README.md, "After the engine", has the costs).

    Example:
        >>> import ccfair
        >>> r = ccfair.run(ccfair.dumbbell(2, "reno", duration="5s"))
        >>> list(r.flows["flow_name"])
        ['flow1', 'flow2']
    """
    resolved, raw, record = _execute(scenario, backend, trace, force_bpf, limits)
    with _gc_paused():
        return build_result(resolved, raw, **record)


def _execute(
    scenario: Runnable,
    backend: str | None,
    trace: Sequence[str],
    force_bpf: bool,
    limits: Limits | dict[str, Any] | None,
) -> tuple[Resolved, Mapping[str, Any], dict[str, Any]]:
    """Check and run one scenario: its resolved spec, the backend's columns and what the
    tables record of the run (the keywords of ``build_result`` / ``build_tables``)."""
    sc = scenario.scenario if isinstance(scenario, Resolved) else as_scenario(scenario)
    b = backends.get(backend or sc.backend or "sim")
    lim = as_limits(limits)
    if isinstance(scenario, Resolved):
        resolved = scenario
    else:
        with _gc_paused():
            resolved = sc.resolve()  # kept by the scenario: resolved once
    if force_bpf:
        backends.require(b, "bpf_programs", "force_bpf", force_bpf)
    identity = b.identity(force_bpf)
    rid = resolved.identity_json.run_id(identity)
    engine_spec = with_trace(resolved, trace)
    if not b.checks_limits:
        _limits.check(engine_spec, lim)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    out = b.run(resolved, rid, engine_spec, lim, force_bpf=force_bpf)
    wall = time.perf_counter() - t0
    record: dict[str, Any] = {
        "run_id": rid,
        "backend": b.name,
        "started_at": started,
        "wall_time_s": wall,
        "selfcheck": out.selfcheck,
        "flags": out.flags,
        "identity": identity,
        "facts": b.provenance(),
    }
    return resolved, out.raw, record


def with_trace(resolved: Resolved, trace: Sequence[str]) -> dict[str, Any]:
    """The engine spec of ``resolved``, asking for a trace of the named flows; a
    :class:`SpecError` for a name that is not a flow.

    Example:
        >>> import ccfair
        >>> with_trace(ccfair.dumbbell(2, "reno").resolve(), ["flow2"])["trace_flows"]
        [1]
    """
    if isinstance(trace, str) or not isinstance(trace, Sequence):
        raise SpecError("trace", trace, "is not a list of flow names")
    names = [f.name for f in resolved.flows]
    indices = []
    for name in trace:
        if not isinstance(name, str):
            raise SpecError("trace", name, "is not a flow name")
        if name not in names:
            raise SpecError("trace", name, f"is not a flow; flows: {', '.join(names[:20])}")
        indices.append(names.index(name))
    spec = dict(resolved.engine_spec)
    if indices:
        spec["trace_flows"] = sorted(set(indices))
    return spec


def run_many(
    scenarios: Sequence[Scenario | dict[str, Any] | str | os.PathLike[str]],
    *,
    backend: str | None = None,
    jobs: int = 1,
    on_result: Callable[[int, RunResult], None] | None = None,
    warn: Callable[[str], None] | None = None,
    limits: Limits | dict[str, Any] | None = None,
) -> list[RunResult]:
    """Run several scenarios; return their results in order.

    Kernel runs happen in real time, by default one at a time. ``jobs`` > 1 runs that many
    at once (threads: the runs release the GIL), which only helps when the machine has
    cores to spare: the forwarder of each run needs a core's worth of prompt wake-ups.
    If any run then exceeds its lateness or CPU bounds, ``warn`` (default: stderr) says
    so and suggests ``jobs = 1``. Ctrl-C or SIGTERM stops every run, each removes its
    namespaces, and the interrupt propagates.

    Example:
        >>> rs = run_many([ccfair.dumbbell(1, "reno", duration="2s")] * 2)  # doctest: +SKIP
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise SpecError("jobs", jobs, "is not a positive integer number of parallel runs")
    if jobs > most_parallel():
        # Each run holds its own engine memory (up to limits.memory) while it runs.
        raise SpecError(
            "jobs",
            jobs,
            f"is more parallel runs than this machine runs usefully "
            f"(at most {MAX_WORKERS_PER_CORE} per core)",
        )
    scs = [as_scenario(s) for s in scenarios]
    if backend is not None:
        backends.get(backend)
    lim = as_limits(limits)
    say = warn or (lambda m: print(f"warning: {m}", file=sys.stderr))
    # Everything is checked before anything runs.
    used: list[Backend] = []
    for sc in scs:
        b = backends.get(backend or sc.backend or "sim")
        _limits.check(sc.resolve().engine_spec, lim)
        if b.checks_scenarios:
            b.check(sc.resolve())
        b.preflight()
        if b not in used:
            used.append(b)
    out = run_in_threads(
        len(scs),
        lambda i: run(scs[i], backend=backend, limits=lim),
        jobs=jobs,
        on_result=on_result,
        backends_used=used,
    )
    if jobs > 1:
        warn_lateness(
            [(r.runs.iloc[0]["backend"], r.runs.iloc[0]["selfcheck_flags"]) for r in out],
            lambda late, name: say(
                f"{late} of {len(out)} {name} runs with {jobs} parallel jobs exceeded their "
                f"lateness or CPU bounds: this machine has no cores to spare for them "
                f"({os.cpu_count()} CPUs); rerun with jobs = 1"
            ),
        )
    return out
