"""The kernel backend on the veth data path: the host's Linux TCP stack in network
namespaces joined by veth pairs, with the links as tc qdiscs (HTB for the rate, netem for
the delay and, with ``queue = "netem"``, the queue; Linux's codel, fq_codel, pie or red for a
link with that queue discipline), as Mininet builds them (:mod:`ccfair.backends.kernel.veth`,
docs/kernel.md "The veth data path"). Needs netem for any link with a delay, and each queue
discipline a scenario names; the TUN path (``backend = "kernel"``) needs nothing of the
kind.

Example:
    >>> BACKEND.name, BACKEND.real_time, BACKEND.identity(force_bpf=True)
    ('veth', True, 'veth-bpf')
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from typing import Any

from ccfair.backends.base import ResolvedScenario
from ccfair.backends.kernel import KernelBackend
from ccfair.backends.kernel.host import KernelError, missing_capabilities
from ccfair.backends.kernel.veth import check_scenario


@functools.cache
def qdisc_available(kind: str) -> bool:
    """Whether this kernel offers the qdisc ``kind`` (``netem``, ``codel``, ``fq_codel``,
    ``pie``, ``red``): tried once on the loopback device of a namespace ccfair creates and
    removes (``ccf-<8 hex>-0-qdiscprobe``). False without root.

    Example:
        >>> isinstance(qdisc_available("fq_codel"), bool)  # doctest: +SKIP
        True
    """
    if missing_capabilities():
        return False
    name = f"ccf-{os.getpid() & 0xFFFFFFFF:08x}-0-qdiscprobe"
    if subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode != 0:
        return False
    # A probe of each kind with its mandatory arguments (RED's limit and avpkt).
    args = {"netem": ["delay", "1ms"], "red": ["limit", "150000", "avpkt", "1000"]}
    try:
        proc = subprocess.run(
            ["tc", "-n", name, "qdisc", "add", "dev", "lo", "root", kind, *args.get(kind, [])],
            capture_output=True,
        )
        return proc.returncode == 0
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def netem_available() -> bool:
    """Whether this kernel offers the netem qdisc (:func:`qdisc_available`).

    Example:
        >>> isinstance(netem_available(), bool)  # doctest: +SKIP
        True
    """
    return qdisc_available("netem")


class VethBackend(KernelBackend):
    """Real Linux TCP over veth pairs and tc qdiscs: needs root and (for delays) netem."""

    name = "veth"
    summary = (
        "veth: real Linux TCP in network namespaces over veth pairs with tc qdiscs "
        "(HTB, netem; Mininet's links), as root, in real time"
    )
    title = "the kernel backend's veth data path"
    docs = "docs/kernel.md"
    datapath = "veth"

    def check(
        self,
        resolved: ResolvedScenario,
        *,
        force_bpf: bool = False,
        engine_spec: dict[str, Any] | None = None,
    ) -> None:
        """The kernel backend's checks, then
        :func:`ccfair.backends.kernel.veth.check_scenario`."""
        super().check(resolved, force_bpf=force_bpf)
        check_scenario(
            resolved,
            netem=netem_available(),
            engine_spec=engine_spec,
            have_qdisc=qdisc_available,
        )

    def preflight(self) -> None:
        """The kernel backend's, and tc (iproute2) on PATH."""
        super().preflight()
        if shutil.which("tc") is None:
            raise KernelError("the veth data path needs iproute2's `tc`; it is not on PATH")

    def identity(self, force_bpf: bool = False) -> str:
        """A run over veth pairs is another point than the TUN path's run of the same spec."""
        return "veth-bpf" if force_bpf else self.name


BACKEND = VethBackend()
