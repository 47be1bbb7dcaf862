"""Testbeds and host kernels: what the hosts and links of a real testbed do that ccfair's
idealised network does not.

Two concepts, one name each (docs/spec.md, "Testbeds and host kernels"):

- a **testbed** (``Scenario.testbed``): how the links are emulated (what a buffer counts) and
  the hosts' build configuration (``HZ``), with the host kernel it runs by default;
- a **host kernel** (``Scenario.kernel``): a Linux generation, which decides the TCP
  substrate's settings that differ between kernels (socket buffers, receive window, ACKs,
  segmentation offload, pacing, loss recovery) and each algorithm's default Linux version.

Both apply *under* the scenario's own settings: a TCP option written in ``[tcp]`` or a flow's
``tcp``, an algorithm parameter in ``cca_params`` or a link's own ``queue`` wins.

A scenario that names neither runs on ``linux-stock``: Linux 6.18 hosts as shipped, on
ccfair's drop-tail links. ``ideal`` is the idealised host of earlier ccfair versions (one
segment per skb, socket buffers that never limit, HZ 1000); it has no kernel of its own, and
a kernel named with it chooses only the algorithms' versions (the idealisation is of the
host's TCP substrate, not of the algorithms).

Example:
    >>> TESTBEDS["linux-stock"].kernel, KERNELS["4.15"].cca["bbr"]
    ('6.18', {'version': 'linux-4.15'})
    >>> resolve_host("ideal", None).kernel is None
    True
    >>> ideal = resolve_host("ideal", "4.15")
    >>> ideal.tcp, ideal.cca("bbr")
    ({}, {'version': 'linux-4.15'})
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ccfair.errors import show

__all__ = [
    "DEFAULT_TESTBED",
    "KERNELS",
    "TESTBEDS",
    "Host",
    "Kernel",
    "Testbed",
    "check_kernel",
    "check_testbed",
    "resolve_host",
]


@dataclass(frozen=True)
class Kernel:
    """A host kernel generation: the TCP options and algorithm defaults that differ from
    ccfair's engine defaults on hosts of that kernel.

    Attributes:
        name: the generation (``"6.18"``), as ``kernel = "6.18"`` names it.
        release: the release the settings were read from.
        tcp: TCP options (``[tcp]`` names) of such hosts.
        cca: per algorithm, the parameters of that kernel's version of it.
        summary: one line for tables.
        rack_only: loss detection is RACK only: ``net.ipv4.tcp_recovery`` bit 0 (``tcp.rack
            = false``) has no effect (Linux 6.17 removed the RFC 6675 duplicate-threshold
            code, net/ipv4/tcp_input.c; "tcp: remove obsolete and unused RFC3517/RFC6675
            loss recovery code").
    """

    name: str
    release: str
    tcp: Mapping[str, Any]
    cca: Mapping[str, Mapping[str, Any]]
    summary: str
    rack_only: bool = False


#: Linux 6.18's stock hosts: tcp_rmem 4096 131072 33554432 and tcp_wmem 4096 16384 4194304
#: (net/ipv4/tcp.c, tcp_init; tcp_rmem[2] rose from 6 to 32 MiB in 6.16, "tcp: increase
#: tcp_rmem[2] to 32 MB"), GSO skbs sized by tcp_tso_autosize (net/ipv4/tcp_output.c; Linux
#: TCP always builds them since 4.12). Every other substrate setting is the engine's default,
#: which follows 6.18 (docs/fidelity.md).
_LINUX_6_18 = Kernel(
    "6.18",
    "6.18 (read in 6.18.2; the kernel backend here runs 6.18.44)",
    {"rmem": "linux", "wmem": "linux", "tso": "linux"},
    {},
    "stock Linux 6.18: tcp_rmem max 32 MiB, tcp_wmem max 4 MiB, GSO skbs",
    rack_only=True,
)


#: The source trees the 4.x settings were read in (the studies' own releases could not be).
_RELEASES_READ = {
    "4.13": "4.13 (read in 4.13.9; Katsumata's hosts ran 4.13.2)",
    "4.15": "4.15 (read in 4.15.11; Ogino's hosts ran 4.15.18)",
}


def _linux_4x(name: str, tlp: str, bbr: str) -> Kernel:
    """Linux 4.13 and 4.15 (docs/model.md, "Linux 4.x hosts"): tcp_rmem 4096 87380 6291456
    (tcp_init; rmem[1] became 131072 in 4.20); a receive window of half the buffer
    (tcp_win_from_space with tcp_adv_win_scale 1) with 4.x autotuning and a 20-segment
    initial window (tcp_select_initial_window, tcp_rcv_space_adjust); no SACK compression
    (added in 4.18) and quick ACKs after out-of-order data (removed in 4.18, tcp_data_queue);
    4.x TSO deferral (tcp_tso_should_defer) without 5.18's min_rtt bonus (tcp_tso_autosize);
    the timer pacer before 4.20's EDT (tcp_internal_pacing); 4.x PRR (tcp_cwnd_reduction);
    that kernel's loss-probe schedule (tcp_schedule_loss_probe); 4.x undo rules
    (tcp_init_undo, tcp_packet_delayed, tcp_enter_recovery); BBR of that kernel's
    tcp_bbr.c; CUBIC's HyStart before 5.6 (tcp_cubic.c, hystart_update)."""
    return Kernel(
        name,
        _RELEASES_READ[name],
        {
            "rmem": [4096, 87380, 6291456],
            "wmem": "linux",
            "tso": "linux",
            "tso_defer": "linux-4.x",
            "tso_min_rtt_bonus": False,
            "pacer": "linux-4.x",
            "prr": "linux-4.x",
            "tlp_schedule": tlp,
            "undo_rules": "linux-4.x",
            "rcv_window": "linux-4.x",
            "sack_compression": False,
            "ofo_quickack": True,
        },
        {"bbr": {"version": bbr}, "cubic": {"hystart_version": "linux-4.x"}},
        f"stock Linux {name}: tcp_rmem max 6 MiB with half of it as window, no SACK "
        f"compression, the 4.x pacer, BBR and HyStart of {name}",
    )


#: Host kernels by generation. Settings not listed are the engine's defaults (Linux 6.18).
KERNELS: dict[str, Kernel] = {
    "6.18": _LINUX_6_18,
    "4.15": _linux_4x("4.15", "linux-4.15", "linux-4.15"),
    "4.13": _linux_4x("4.13", "linux-4.13", "linux-4.13"),
}


@dataclass(frozen=True)
class Testbed:
    """A kind of testbed.

    Attributes:
        name: as ``testbed = "..."`` names it.
        kernel: the host kernel it runs unless the scenario names one (None: idealised
            hosts, which have no kernel).
        tcp: TCP options of its hosts' build (``hz``), under the kernel's.
        queue: what every link's buffer counts unless the link says (None: ``droptail``).
        summary: one line for tables.
        source: where its behaviour is documented.
    """

    name: str
    kernel: str | None
    tcp: Mapping[str, Any] = field(default_factory=dict)
    queue: str | None = None
    summary: str = ""
    source: str = ""


#: HZ of Debian's and Ubuntu's generic kernels (CONFIG_HZ_250), as the kernel backend here
#: runs: CUBIC's and BBR's jiffy clocks, the delayed-ACK and retransmission timers.
_DISTRO_HZ = {"hz": 250}

#: Testbeds by name (``Scenario.testbed``).
TESTBEDS: dict[str, Testbed] = {
    "linux-stock": Testbed(
        "linux-stock",
        "6.18",
        _DISTRO_HZ,
        None,
        "stock Linux hosts (Debian/Ubuntu build, HZ 250) on ccfair's drop-tail links",
        "the kernel backend's own hosts: network namespaces of this machine's Linux",
    ),
    "ideal": Testbed(
        "ideal",
        None,
        {},
        None,
        "idealised hosts: one segment per skb, socket buffers that never limit, HZ 1000",
        "ccfair's model before real hosts became the default",
    ),
    # Mininet's TCLink (mininet/link.py, TCIntf.bwCmds/delayCmds): per interface an HTB class
    # at the link rate with a netem child "delay D limit max_queue_size"; hosts are network
    # namespaces of a stock kernel (offloads on; TCIntf turns GRO off, a receive-side
    # offload ccfair does not model).
    "mininet-netem": Testbed(
        "mininet-netem",
        "6.18",
        _DISTRO_HZ,
        "netem",
        "Mininet's TCLink: stock Linux hosts, HTB rate with a netem queue that counts the "
        "delay line",
        "mininet/link.py (TCIntf.bwCmds, delayCmds)",
    ),
    # CORE (coreemu/core, daemon/core/nodes/interface.py, tc_cmd): per interface one netem
    # qdisc "rate R limit N delay D" on veth pairs between namespaces of a stock kernel.
    "core-netem": Testbed(
        "core-netem",
        "6.18",
        _DISTRO_HZ,
        "netem",
        "CORE: stock Linux hosts, one netem qdisc (rate, limit, delay) per interface",
        "coreemu/core daemon/core/nodes/interface.py (tc_cmd)",
    ),
}

#: The testbed of a scenario that names none.
DEFAULT_TESTBED = "linux-stock"


@dataclass(frozen=True)
class Host:
    """A scenario's testbed and host kernel, resolved: the TCP options and algorithm
    parameters they set (under the scenario's own)."""

    testbed: Testbed
    kernel: Kernel | None

    @property
    def tcp(self) -> dict[str, Any]:
        """TCP options of the hosts: the testbed's build, under the kernel's settings (none
        on idealised hosts, whose substrate is the engine's idealisation)."""
        kernel = self.kernel if self.testbed.kernel is not None else None
        return {**self.testbed.tcp, **(kernel.tcp if kernel is not None else {})}

    def cca(self, cca: str) -> Mapping[str, Any]:
        """The kernel's version of algorithm ``cca`` (parameters; empty for ccfair's own)."""
        return self.kernel.cca.get(cca, {}) if self.kernel else {}


def check_testbed(value: str) -> str:
    """``value`` if it names a testbed, else the error naming the testbeds (pydantic
    validator: a ValueError becomes a SpecError on the field)."""
    if value not in TESTBEDS:
        raise ValueError(f"{show(value)} is not a testbed; testbeds: {', '.join(TESTBEDS)}")
    return value


def check_kernel(value: str) -> str:
    """``value`` if it names a modelled host kernel, else the error naming them."""
    if value not in KERNELS:
        raise ValueError(
            f"{show(value)} is not a host kernel ccfair models; kernels: {', '.join(KERNELS)}"
        )
    return value


def resolve_host(testbed: str | None, kernel: str | None) -> Host:
    """The hosts of a scenario with ``testbed`` and ``kernel`` (either None: the default).

    Example:
        >>> h = resolve_host(None, "4.13")
        >>> h.testbed.name, h.kernel.name, h.tcp["rcv_window"]
        ('linux-stock', '4.13', 'linux-4.x')
    """
    bed = TESTBEDS[testbed or DEFAULT_TESTBED]
    name = kernel or bed.kernel
    return Host(bed, KERNELS[name] if name is not None else None)
