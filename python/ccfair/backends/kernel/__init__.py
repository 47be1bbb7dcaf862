"""The kernel backend: the host's Linux TCP stack in network namespaces, in real time
(docs/kernel.md).

This package owns everything of the kernel backend: the host side
(:mod:`~ccfair.backends.kernel.host`: what this kernel offers, namespaces, cleanup), the
scenario checks (:mod:`~ccfair.backends.kernel.checks`), the machine runs share
(:mod:`~ccfair.backends.kernel.machine`), one run (:mod:`~ccfair.backends.kernel.run`) over
TUN devices and ccfair's forwarder, or over veth pairs with tc qdiscs
(:mod:`~ccfair.backends.kernel.veth`), and the self-checks
(:mod:`~ccfair.backends.kernel.selfcheck`). Here it is adapted to the
:class:`~ccfair.backends.base.Backend` interface. It may import the base modules and
:mod:`ccfair.backends.base` only.

Example:
    >>> BACKEND.real_time, BACKEND.bpf_programs, BACKEND.identity(force_bpf=True)
    (True, True, 'kernel-bpf')
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ccfair.backends.base import Backend, BackendRun, ResolvedScenario
from ccfair.backends.kernel.checks import check_scenario
from ccfair.backends.kernel.host import (
    BPF_ALGORITHMS,
    LINUX_NAME,
    available_ccas,
    cleanup,
    kernel_generation,
    kernel_hz,
    preflight,
    running_release,
    signals_raise,
)
from ccfair.backends.kernel.machine import TURN_ENV, machine_turn, warn_if_busy
from ccfair.backends.kernel.run import run_kernel, stop_all
from ccfair.backends.kernel.selfcheck import LATENESS_FLAGS, assess
from ccfair.limits import Limits


class KernelBackend(Backend):
    """Real Linux TCP: needs root, runs in real time, checks its own fidelity per run."""

    name = "kernel"
    summary = "kernel: real Linux TCP of the host in network namespaces, as root, in real time"
    title = "the kernel backend"
    docs = "docs/kernel.md"
    real_time = True
    self_checked = True
    bpf_programs = True
    needs_host_setup = True

    def algorithms_offered(self) -> list[str]:
        """This kernel's own modules that ccfair names, and ccfair's BPF programs."""
        offered = available_ccas()
        linux = [a for a, module in LINUX_NAME.items() if module in offered]
        return sorted({*linux, *BPF_ALGORITHMS})

    #: How the packets travel (:func:`~ccfair.backends.kernel.run.run_kernel`): ccfair's
    #: forwarder over TUN devices here, veth pairs with tc qdiscs in :mod:`ccfair.backends.veth`.
    datapath = "tun"

    def check(
        self,
        resolved: ResolvedScenario,
        *,
        force_bpf: bool = False,
        engine_spec: dict[str, Any] | None = None,
    ) -> None:
        """:func:`~ccfair.backends.kernel.checks.check_scenario` (``engine_spec``: what will
        run, when it differs from the resolved spec; the TUN path takes any)."""
        check_scenario(resolved, force_bpf=force_bpf)

    def preflight(self) -> None:
        """:func:`~ccfair.backends.kernel.host.preflight`: root, /dev/net/tun, ``ip``."""
        preflight()

    def warn_if_busy(self, say: Callable[[str], None] | None = None) -> None:
        """:func:`~ccfair.backends.kernel.machine.warn_if_busy`."""
        warn_if_busy(say)

    def run(
        self,
        resolved: ResolvedScenario,
        run_id: str,
        engine_spec: dict[str, Any],
        limits: Limits,
        *,
        force_bpf: bool = False,
    ) -> BackendRun:
        """Check, run on this kernel (one machine turn), and assess the self-checks."""
        self.check(resolved, force_bpf=force_bpf, engine_spec=engine_spec)
        raw, selfcheck = run_kernel(
            resolved,
            run_id,
            engine_spec=engine_spec,
            force_bpf=force_bpf,
            datapath=self.datapath,
        )
        return BackendRun(raw, selfcheck, assess(selfcheck))

    def identity(self, force_bpf: bool = False) -> str:
        """A forced BPF run is another point than the module's run of the same spec."""
        return "kernel-bpf" if force_bpf else self.name

    def clock_hz(self) -> int | None:
        """This kernel's HZ (:func:`~ccfair.backends.kernel.host.kernel_hz`)."""
        return kernel_hz()

    def host_kernel(self) -> str | None:
        """The generation of this machine's Linux
        (:func:`~ccfair.backends.kernel.host.kernel_generation`)."""
        return kernel_generation(running_release())

    def host_release(self) -> str:
        """This machine's Linux release (``uname -r``)."""
        return running_release()

    @contextmanager
    def session(
        self, say: Callable[[str], None], *, parallel_processes: bool
    ) -> Iterator[dict[str, str]]:
        """Parallel worker processes share this process's turn of the machine
        (:func:`~ccfair.backends.kernel.machine.machine_turn`); afterwards, namespaces of
        abandoned workers are removed."""
        try:
            if parallel_processes:
                with machine_turn(say):
                    yield {TURN_ENV: str(os.getpid())}
            else:
                yield {}
        finally:
            # Abandoned workers were killed with their runs' namespaces in place.
            cleanup()

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """:func:`~ccfair.backends.kernel.host.signals_raise`: SIGTERM raises, so runs clean
        up."""
        with signals_raise():
            yield

    def is_late(self, flags: str) -> bool:
        """A flag of :data:`~ccfair.backends.kernel.selfcheck.LATENESS_FLAGS`: the machine
        could not keep up."""
        return any(f.startswith(LATENESS_FLAGS) for f in flags.split("; "))

    def stop_all(self) -> None:
        """:func:`~ccfair.backends.kernel.run.stop_all`."""
        stop_all()


BACKEND = KernelBackend()
