"""The kernel backend: the host's Linux TCP stack in network namespaces, in real time
(:mod:`ccfair.kernel`, docs/kernel.md). This module only adapts :mod:`ccfair.kernel` to the
:class:`~ccfair.backends.Backend` interface; it imports it on first use.

Example:
    >>> BACKEND.real_time, BACKEND.bpf_programs, BACKEND.identity(force_bpf=True)
    (True, True, 'kernel-bpf')
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ccfair.backends import Backend, BackendRun


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
        from ccfair import kernel

        offered = kernel.available_ccas()
        linux = [a for a, module in kernel.LINUX_NAME.items() if module in offered]
        return sorted({*linux, *kernel.BPF_ALGORITHMS})

    #: How the packets travel (``ccfair.kernel.run_kernel``): ccfair's forwarder over TUN
    #: devices here, veth pairs with tc qdiscs in :mod:`ccfair.backends.veth`.
    datapath = "tun"

    def check(
        self,
        resolved: Any,
        *,
        force_bpf: bool = False,
        engine_spec: dict[str, Any] | None = None,
    ) -> None:
        """:func:`ccfair.kernel.check_scenario` (``engine_spec``: what will run, when it
        differs from the resolved spec; the TUN path takes any)."""
        from ccfair import kernel

        kernel.check_scenario(resolved, force_bpf=force_bpf)

    def preflight(self) -> None:
        """:func:`ccfair.kernel.preflight`: root, /dev/net/tun, ``ip``."""
        from ccfair import kernel

        kernel.preflight()

    def warn_if_busy(self, say: Callable[[str], None] | None = None) -> None:
        """:func:`ccfair.kernel.warn_if_busy`."""
        from ccfair import kernel

        kernel.warn_if_busy(say)

    def run(
        self,
        resolved: Any,
        run_id: str,
        engine_spec: dict[str, Any],
        limits: Any,
        *,
        force_bpf: bool = False,
    ) -> BackendRun:
        """Check, run on this kernel (one machine turn), and assess the self-checks."""
        from ccfair import kernel

        self.check(resolved, force_bpf=force_bpf, engine_spec=engine_spec)
        raw, selfcheck = kernel.run_kernel(
            resolved,
            run_id,
            engine_spec=engine_spec,
            force_bpf=force_bpf,
            datapath=self.datapath,
        )
        return BackendRun(raw, selfcheck, kernel.assess(selfcheck))

    def identity(self, force_bpf: bool = False) -> str:
        """A forced BPF run is another point than the module's run of the same spec."""
        return "kernel-bpf" if force_bpf else self.name

    def clock_hz(self) -> int | None:
        """This kernel's HZ (:func:`ccfair.kernel.kernel_hz`)."""
        from ccfair import kernel

        return kernel.kernel_hz()

    @contextmanager
    def session(
        self, say: Callable[[str], None], *, parallel_processes: bool
    ) -> Iterator[dict[str, str]]:
        """Parallel worker processes share this process's turn of the machine
        (:func:`ccfair.kernel.machine_turn`); afterwards, namespaces of abandoned workers
        are removed."""
        from ccfair import kernel

        try:
            if parallel_processes:
                with kernel.machine_turn(say):
                    yield {kernel.TURN_ENV: str(os.getpid())}
            else:
                yield {}
        finally:
            # Abandoned workers were killed with their runs' namespaces in place.
            kernel.cleanup()

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """:func:`ccfair.kernel.signals_raise`: SIGTERM raises, so runs clean up."""
        from ccfair import kernel

        with kernel.signals_raise():
            yield

    def is_late(self, flags: str) -> bool:
        """A flag of :data:`ccfair.kernel.LATENESS_FLAGS`: the machine could not keep up."""
        from ccfair import kernel

        return any(f.startswith(kernel.LATENESS_FLAGS) for f in flags.split("; "))

    def stop_all(self) -> None:
        """:func:`ccfair.kernel.stop_all`."""
        from ccfair import kernel

        kernel.stop_all()


BACKEND = KernelBackend()
