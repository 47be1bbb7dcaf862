"""Execution backends: where a scenario runs, described once.

A backend is a :class:`Backend`: a name, a one-line summary, its capabilities (class
attributes that callers ask instead of comparing names) and the calls every driver of runs
needs (``check``, ``run``, ``provenance``, ...). Each backend is one module of this package
exposing ``BACKEND``; :data:`REGISTRY` lists them, one line each. Adding a backend is a new
module and a line here (docs/adding-a-backend.md).

The registry names its modules rather than importing them, so reading the names (the spec's
validation, the CLI's choices) imports no backend; :func:`get` imports one on first use.

Example:
    >>> names()[:2]
    ('sim', 'kernel')
    >>> get("sim").real_time, get("kernel").real_time
    (False, True)
"""

from __future__ import annotations

import difflib
import functools
import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ccfair.errors import SpecError, show

__all__ = [
    "CAPABILITIES",
    "REGISTRY",
    "Backend",
    "BackendRun",
    "get",
    "names",
    "require",
    "with_capability",
]

#: The backends: name -> the module whose ``BACKEND`` implements it. One line per backend.
REGISTRY: dict[str, str] = {
    "sim": "ccfair.backends.sim",
    "kernel": "ccfair.backends.kernel",
    "veth": "ccfair.backends.veth",
}

#: What a backend can say about itself (the class attributes of :class:`Backend` that
#: drivers ask), with the meaning each error message quotes.
CAPABILITIES: dict[str, str] = {
    "real_time": "runs take wall-clock time and need the machine's cores: one at a time "
    "unless asked, parallel runs share one turn of the machine and are checked for lateness",
    "self_checked": "every run checks its own fidelity (runs.reliable, selfcheck_flags)",
    "bpf_programs": "can run ccfair's BPF programs in place of the host's modules (force_bpf)",
    "needs_host_setup": "needs privileges or devices of this machine (checked by preflight)",
}


@dataclass
class BackendRun:
    """What :meth:`Backend.run` returns: the engine-format tables (as ``_core.run`` returns
    them), the self-check record (None when the backend has none) and the bounds it
    exceeded (one sentence each; empty: reliable)."""

    raw: dict[str, Any]
    selfcheck: dict[str, Any] | None = None
    flags: list[str] = field(default_factory=list)


class Backend:
    """One execution backend. Subclasses set the class attributes and implement
    :meth:`run`; the other methods have the behaviour of a backend that needs nothing of the
    machine (the simulator's).

    Attributes:
        name: the name scenarios, sweeps and ``--backend`` use.
        summary: what it runs, one line (CLI help, reports).
        title: the backend in a sentence ("on the simulator").
        docs: the page that documents it.
        real_time, self_checked, bpf_programs, needs_host_setup: capabilities
            (:data:`CAPABILITIES`).
        checks_limits: :meth:`run` itself refuses a run whose estimate exceeds its limits
            (the simulator's engine does, from the JSON it parses anyway), so a driver need
            not check them first; with thousands of flows that check serialised and parsed
            a spec of megabytes once more.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    title: ClassVar[str]
    docs: ClassVar[str]
    real_time: ClassVar[bool] = False
    self_checked: ClassVar[bool] = False
    bpf_programs: ClassVar[bool] = False
    needs_host_setup: ClassVar[bool] = False
    checks_limits: ClassVar[bool] = False

    def algorithms_offered(self) -> list[str]:
        """The congestion controls this backend can run here."""
        from ccfair.algorithms import names as algorithm_names

        return list(algorithm_names())

    def check(self, resolved: Any, *, force_bpf: bool = False) -> None:
        """Raise :class:`SpecError` (naming the field) if this backend cannot run
        ``resolved`` as written. Called before anything runs."""

    @property
    def checks_scenarios(self) -> bool:
        """Whether :meth:`check` can refuse anything (it is overridden): drivers then
        resolve every scenario once more to ask it before anything runs."""
        return type(self).check is not Backend.check

    def preflight(self) -> None:
        """Raise if this process cannot run the backend at all (privileges, devices)."""

    def warn_if_busy(self, say: Callable[[str], None] | None = None) -> None:
        """Before runs: say if the machine is too busy for them."""

    def run(
        self,
        resolved: Any,
        run_id: str,
        engine_spec: dict[str, Any],
        limits: Any,
        *,
        force_bpf: bool = False,
    ) -> BackendRun:
        """Run one resolved scenario (``engine_spec`` is its engine input, possibly asking
        for a trace); ``limits`` is the :class:`ccfair.Limits` it must fit (checked before
        the call unless the backend ``checks_limits`` itself)."""
        raise NotImplementedError

    def identity(self, force_bpf: bool = False) -> str:
        """The backend part of a run id (:func:`ccfair.api.run_id_of`)."""
        return self.name

    def provenance(self) -> dict[str, str]:
        """Versions and host facts recorded with every run of this backend."""
        # From ccfair.tables, not ccfair.results: a run that builds Arrow tables (a sweep's
        # worker, ccfair.run) must not import pandas for these five strings.
        from ccfair.tables import provenance

        return provenance()

    def clock_hz(self) -> int | None:
        """The TCP clock rate (HZ) runs of this backend have, if fixed by the host."""
        return None

    @contextmanager
    def session(
        self, say: Callable[[str], None], *, parallel_processes: bool
    ) -> Iterator[dict[str, str]]:
        """Around a batch of runs (:mod:`ccfair.executor`): yields environment variables
        for worker processes; ``parallel_processes`` when several local processes run."""
        yield {}

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """Around runs in this process's threads: make termination signals raise."""
        yield

    def stop_all(self) -> None:
        """Ask every run of this process to stop (a thread pool is being abandoned)."""

    def is_late(self, flags: str) -> bool:
        """Whether a run's ``selfcheck_flags`` say the machine could not keep up."""
        return False


def names() -> tuple[str, ...]:
    """The registered backends' names, in registry order.

    Example:
        >>> "sim" in names()
        True
    """
    return tuple(REGISTRY)


@functools.cache
def _load(name: str) -> Backend:
    backend = importlib.import_module(REGISTRY[name]).BACKEND
    if not isinstance(backend, Backend) or backend.name != name:
        raise TypeError(f"{REGISTRY[name]}.BACKEND is not a Backend named {name!r}")
    return backend


def unknown(value: Any) -> str:
    """The message for a value that names no backend, with the closest name.

    Example:
        >>> unknown("kernal")[:52]
        '"kernal" is not a backend; did you mean "kernel"? (b'
    """
    hint = difflib.get_close_matches(str(value), list(REGISTRY), n=1)
    more = f'; did you mean "{hint[0]}"?' if hint else ";"
    return f"{show(value)} is not a backend{more} (backends: {', '.join(REGISTRY)})"


def get(name: Any, field: str = "backend") -> Backend:
    """The backend called ``name``; an unknown name is a :class:`SpecError` at ``field``
    naming the closest backend.

    Example:
        >>> get("sim").name
        'sim'
        >>> get("kernal", "--backend")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ccfair.errors.SpecError: --backend: "kernal" is not a backend; did you mean \
"kernel"? (backends: sim, kernel...)
    """
    if not isinstance(name, str) or name not in REGISTRY:
        raise SpecError(field, name, unknown(name), with_value=False)
    return _load(name)


def with_capability(capability: str) -> list[Backend]:
    """The backends that have ``capability`` (a key of :data:`CAPABILITIES`).

    Example:
        >>> "kernel" in [b.name for b in with_capability("bpf_programs")]
        True
    """
    if capability not in CAPABILITIES:
        raise KeyError(f"{capability!r} is not a capability; capabilities: {list(CAPABILITIES)}")
    return [b for b in map(_load, REGISTRY) if getattr(b, capability)]


def has(name: str, capability: str) -> bool:
    """Whether the backend ``name`` has ``capability``; False for a name no longer
    registered (results saved by another ccfair).

    Example:
        >>> has("kernel", "self_checked"), has("ns3", "self_checked")
        (True, False)
    """
    return name in REGISTRY and bool(getattr(_load(name), capability))


def require(backend: Backend, capability: str, field: str, value: Any) -> None:
    """Refuse ``value`` at ``field`` unless ``backend`` has ``capability``: a
    :class:`SpecError` naming the backends that have it.

    Example:
        >>> require(get("sim"), "bpf_programs", "force_bpf", True)
        Traceback (most recent call last):
        ...
        ccfair.errors.SpecError: force_bpf: true applies to backend "kernel" or "veth" only \
(backend "sim" lacks bpf_programs: can run ccfair's BPF programs in place of the host's \
modules (force_bpf))
    """
    if getattr(backend, capability):
        return
    able = " or ".join(f'"{b.name}"' for b in with_capability(capability)) or "none"
    raise SpecError(
        field,
        value,
        f'applies to backend {able} only (backend "{backend.name}" lacks {capability}: '
        f"{CAPABILITIES[capability]})",
    )
