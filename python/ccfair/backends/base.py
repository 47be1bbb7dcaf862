"""The interface every backend implements: a name, a one-line summary, its capabilities
(class attributes that callers ask instead of comparing names) and the calls every driver of
runs needs (``check``, ``run``, ``provenance``, ...). The registry of the backends is
:mod:`ccfair.backends`; docs/adding-a-backend.md says how to add one.

A backend takes the resolved scenario and its engine input, and returns the engine's tables.
The resolved scenario is a :class:`ccfair.spec.resolved.Resolved`; this layer sits below the
spec (which names backends), so it names what it reads of one by a protocol,
:class:`ResolvedScenario`, which the type checker holds ``Resolved`` to.

Example:
    >>> BackendRun({}).flags
    []
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ccfair import _core
from ccfair.algorithms import names as algorithm_names
from ccfair.limits import Limits

__all__ = [
    "CAPABILITIES",
    "Backend",
    "BackendRun",
    "ResolvedFlow",
    "ResolvedScenario",
    "ScenarioOptions",
    "provenance",
]


class FlowOptions(Protocol):
    """A flow of the scenario as written: its own TCP options."""

    @property
    def tcp(self) -> Mapping[str, Any]: ...


class ScenarioOptions(Protocol):
    """The scenario as written (:class:`ccfair.spec.scenario.Scenario`), as far as a backend
    reads it: the TCP options, the scenario's and each flow's (to name the field an error is
    about)."""

    @property
    def tcp(self) -> Mapping[str, Any]: ...

    @property
    def flows(self) -> Sequence[FlowOptions]: ...


class ResolvedFlow(Protocol):
    """A resolved flow (:class:`ccfair.spec.resolved.FlowInfo`), as far as a backend reads it."""

    @property
    def name(self) -> str: ...

    @property
    def base_rtt_ns(self) -> int: ...


class ResolvedScenario(Protocol):
    """What a backend reads of a resolved scenario (:class:`ccfair.spec.resolved.Resolved`):
    the engine's input, the normalised record, the resolved flows and the scenario itself."""

    @property
    def engine_spec(self) -> dict[str, Any]: ...

    @property
    def normalized(self) -> dict[str, Any]: ...

    @property
    def flows(self) -> Sequence[ResolvedFlow]: ...

    @property
    def scenario(self) -> ScenarioOptions: ...


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

    raw: Mapping[str, Any]
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
        return list(algorithm_names())

    def check(self, resolved: ResolvedScenario, *, force_bpf: bool = False) -> None:
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
        resolved: ResolvedScenario,
        run_id: str,
        engine_spec: dict[str, Any],
        limits: Limits,
        *,
        force_bpf: bool = False,
    ) -> BackendRun:
        """Run one resolved scenario (``engine_spec`` is its engine input, possibly asking
        for a trace); ``limits`` is the :class:`ccfair.Limits` it must fit (checked before
        the call unless the backend ``checks_limits`` itself)."""
        raise NotImplementedError

    def identity(self, force_bpf: bool = False) -> str:
        """The backend part of a run id (:func:`ccfair.spec.identity.run_id_of`)."""
        return self.name

    def provenance(self) -> dict[str, str]:
        """Versions and host facts recorded with every run of this backend."""
        return provenance()

    def clock_hz(self) -> int | None:
        """The TCP clock rate (HZ) runs of this backend have, if fixed by the host."""
        return None

    def host_kernel(self) -> str | None:
        """The host kernel (a generation of ccfair.testbeds.KERNELS) this backend's
        hosts are, if fixed by the machine; None: any (the simulator models each), or a
        release between the modelled generations."""
        return None

    def host_release(self) -> str:
        """The Linux release of this backend's hosts, for reports ("" if none)."""
        return ""

    @contextmanager
    def session(
        self, say: Callable[[str], None], *, parallel_processes: bool
    ) -> Iterator[dict[str, str]]:
        """Around a batch of runs (:mod:`ccfair.execution`): yields environment variables
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


def provenance() -> dict[str, str]:
    """Versions and host facts recorded with every run (:meth:`Backend.provenance`)."""
    return {
        "ccfair_version": _core.__version__,
        "git_revision": _core.__git_revision__,
        "host": platform.node(),
        "machine_release": platform.release(),
        "python": platform.python_version(),
    }
