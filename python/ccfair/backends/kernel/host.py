"""The kernel backend's host side: what this kernel offers, what ccfair creates on it and how
that is removed, and the signals a run reacts to.

Everything ccfair creates carries the prefix ``ccf`` and the run's tag (the first 8 hex
digits of the run id): namespaces ``ccf-<tag>-<i>-<node>``, TUN devices ``ccf<tag>-<i>``
(inside those namespaces), threads ``ccf<tag>-fw`` / ``-s<flow>`` / ``-r<flow>``. Nothing
else is ever touched. A run records what it creates under :data:`STATE_DIR`, so that a later
start (:func:`cleanup`) removes what a crash left behind.

Example:
    >>> parse_cca_list("reno cubic bbr\\n")
    ['reno', 'cubic', 'bbr']
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ccfair import _core
from ccfair.algorithms import algorithms
from ccfair.errors import CcfairError

__all__ = [
    "BASE_PORT",
    "BPF_ALGORITHMS",
    "BPF_NAME_RE",
    "LINUX_NAME",
    "NETNS_RE",
    "PREFIX",
    "STATE_DIR",
    "KernelError",
    "Terminated",
    "available_ccas",
    "bpf_unavailable",
    "cleanup",
    "kernel_generation",
    "kernel_hz",
    "list_netns",
    "missing_capabilities",
    "parse_cca_list",
    "preflight",
    "running_release",
    "signals_raise",
]

#: Where a run records what it creates, so that a later start can remove what a crash left.
#: A tmpfs: it disappears at reboot together with the namespaces it describes.
STATE_DIR = Path(os.environ.get("CCFAIR_STATE_DIR", "/run/ccfair"))


NETNS_DIR = Path("/run/netns")


#: Names of ccfair's namespaces: ``ccf-<tag>-<host index>-<node name>``.
NETNS_RE = re.compile(r"^ccf-([0-9a-f]{8})-\d+(?:-[A-Za-z0-9_.]*)?$")


#: Hosts get /32 addresses in this prefix, routed through their TUN device. The addresses
#: exist only inside ccfair's namespaces.
PREFIX = "10.200.0.0/16"


#: Receiver port of flow i: BASE_PORT + i.
BASE_PORT = 20000


#: ccfair algorithm name -> Linux module name (net/ipv4/tcp_{cong,cubic,bbr}.c), from the
#: algorithm registry (ccfair.algorithms).
LINUX_NAME = {a.name: a.linux_name for a in algorithms().values() if a.linux_name}


#: ccfair algorithms with a BPF program of ccfair's own (bpf/, docs/kernel.md): a flow that
#: modifies one of them, or asks for one this kernel lacks, runs the program, registered
#: for the run as ``ccf<tag><algorithm>``.
BPF_ALGORITHMS = tuple(sorted(a.name for a in algorithms().values() if a.bpf_program))


#: Names of ccfair's BPF congestion controls (at most 15 bytes, the kernel's limit).
BPF_NAME_RE = re.compile(rf"^ccf([0-9a-f]{{8}})({'|'.join(map(re.escape, BPF_ALGORITHMS))})$")


class KernelError(CcfairError, RuntimeError):
    """The kernel backend cannot run here, or a run failed. The message is one line."""


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived during a kernel run (raised so that cleanup runs, like Ctrl-C).

    Attributes:
        signum: the signal number (``signal.SIGTERM``).
    """

    def __init__(self, signum: int) -> None:
        """Record the signal."""
        super().__init__(f"signal {signum}")
        self.signum = signum


# --------------------------------------------------------------------------------------------
# What this kernel offers


def parse_cca_list(text: str) -> list[str]:
    """Names in ``net.ipv4.tcp_available_congestion_control`` (space separated).

    Example:
        >>> parse_cca_list("reno cubic")
        ['reno', 'cubic']
    """
    return text.split()


def available_ccas() -> list[str]:
    """Congestion controls this kernel offers (tcp(7): tcp_available_congestion_control).

    Example:
        >>> "reno" in available_ccas()  # doctest: +SKIP
        True
    """
    try:
        text = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text()
    except OSError:
        return []
    return parse_cca_list(text)


def running_release() -> str:
    """The running kernel's release (``uname -r``), e.g. ``"6.18.44-fc-v1300"``."""
    return os.uname().release


def kernel_generation(release: str) -> str | None:
    """The host kernel ccfair models (ccfair.testbeds.KERNELS) that a Linux release
    is, or None for a release between them (5.x and 6.0 to 6.15: the kernel backend runs
    it all the same, and the simulator's nearest host is 6.18).

    Example:
        >>> kernel_generation("6.18.44-fc-v1300"), kernel_generation("4.15.18-041518-generic")
        ('6.18', '4.15')
        >>> kernel_generation("5.15.0-91-generic") is None
        True
    """
    m = re.match(r"(\d+)\.(\d+)", release)
    if m is None:
        return None
    version = (int(m.group(1)), int(m.group(2)))
    if version >= (6, 16):  # tcp_rmem[2] 32 MiB, 6.16's autotuning: as 6.18
        return "6.18"
    if version == (4, 13):
        return "4.13"
    if (4, 14) <= version <= (4, 17):  # before 4.18's SACK compression and RACK-only
        return "4.15"
    return None


def kernel_hz() -> int | None:
    """The running kernel's ``CONFIG_HZ`` (from /proc/config.gz or /boot/config-RELEASE), or
    None when the configuration is not readable.

    Example:
        >>> kernel_hz() in (None, 100, 250, 300, 1000)
        True
    """
    text = None
    with contextlib.suppress(OSError):
        text = gzip.open("/proc/config.gz", "rt").read()
    if text is None:
        with contextlib.suppress(OSError):
            text = Path(f"/boot/config-{os.uname().release}").read_text()
    if text is None:
        return None
    m = re.search(r"^CONFIG_HZ=(\d+)$", text, re.MULTILINE)
    return int(m.group(1)) if m else None


def bpf_unavailable() -> str | None:
    """What this machine lacks to run ccfair's BPF congestion controls (one sentence), or
    None: the programs in this build (clang and libbpf-dev when ccfair was installed),
    libbpf, a kernel with BTF and BPF struct_ops for TCP congestion control.

    Example:
        >>> bpf_unavailable() is None or isinstance(bpf_unavailable(), str)
        True
    """
    return _core.bpf_unavailable()


# --------------------------------------------------------------------------------------------
# The environment: privileges, namespaces, cleanup


def preflight() -> None:
    """Raise :class:`KernelError` unless this process can run the kernel backend: root
    (namespaces and TUN devices need CAP_SYS_ADMIN and CAP_NET_ADMIN), /dev/net/tun and
    iproute2's ``ip``.

    Example:
        >>> preflight()  # doctest: +SKIP
    """
    missing = missing_capabilities()
    if missing:
        raise KernelError(
            "the kernel backend needs root (it creates network namespaces and TUN devices); "
            f"this process lacks {' and '.join(missing)}; run as root, or use "
            'backend = "sim"'
        )
    if not Path("/dev/net/tun").exists():
        raise KernelError("the kernel backend needs /dev/net/tun (CONFIG_TUN); it is missing")
    if shutil.which("ip") is None:
        raise KernelError("the kernel backend needs iproute2's `ip` command; it is not on PATH")


#: capability(7) numbers (include/uapi/linux/capability.h) the kernel backend needs.
_CAPABILITIES = {"CAP_NET_ADMIN": 12, "CAP_SYS_ADMIN": 21}


def missing_capabilities(status: str | None = None) -> list[str]:
    """Capabilities the kernel backend needs that this process's effective set lacks
    (``CapEff`` of /proc/self/status, proc(5)).

    Example:
        >>> missing_capabilities("CapEff:\\t0000000000001000\\n")
        ['CAP_SYS_ADMIN']
    """
    if status is None:
        try:
            status = Path("/proc/self/status").read_text()
        except OSError:
            return list(_CAPABILITIES)
    m = re.search(r"^CapEff:\s*([0-9a-fA-F]+)$", status, re.MULTILINE)
    eff = int(m.group(1), 16) if m else 0
    return [name for name, bit in _CAPABILITIES.items() if not eff >> bit & 1]


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise KernelError(f"ip {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")
    return proc


def list_netns() -> list[str]:
    """Names of the network namespaces bound under /run/netns (as ``ip netns list``)."""
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir())


def proc_start_time(pid: int) -> int | None:
    """Start time of a process (proc(5) /proc/PID/stat field 22), to tell a live owner from
    a recycled pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces; fields after it follow the last ')'.
    return int(stat[stat.rindex(")") + 2 :].split()[19])


def owner_alive(state: Mapping[str, Any]) -> bool:
    pid = state.get("pid")
    return isinstance(pid, int) and proc_start_time(pid) == state.get("start_time")


def delete_netns(name: str) -> None:
    if not NETNS_RE.match(name):  # pragma: no cover - callers only pass ccfair's names
        raise KernelError(f"refusing to delete namespace {name!r}: not a ccfair namespace")
    ip("netns", "del", name, check=False)


def read_state(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def cleanup(*, include_live: bool = False) -> list[str]:
    """Remove what crashed kernel runs left behind; return the namespaces removed.

    A namespace is removed when its name is a ccfair name (``ccf-<tag>-...``) and the process
    that created it is gone (its record in ``STATE_DIR`` names a dead process, or there is
    no record). Records of dead runs are removed with them. Namespaces of live runs are kept
    unless ``include_live``. Nothing else is touched. Runs at the start of every kernel run
    and as ``ccfair cleanup``.

    Example:
        >>> cleanup()  # doctest: +SKIP
        []
    """
    live_tags: set[str] = set()
    removed: list[str] = []
    if STATE_DIR.is_dir():
        for path in sorted(STATE_DIR.glob("*.json")):
            state = read_state(path)
            tag = path.stem
            if state is not None and owner_alive(state) and not include_live:
                live_tags.add(tag)
                continue
            for name in (state or {}).get("netns", []):
                if NETNS_RE.match(name) and name in list_netns():
                    delete_netns(name)
                    removed.append(name)
            with contextlib.suppress(OSError):
                path.unlink()
    for name in list_netns():
        m = NETNS_RE.match(name)
        if not m or m.group(1) in live_tags:
            continue
        # A run writes its record before it creates namespaces, so a run that started after
        # the records were read above has one now: look again before deleting.
        state = read_state(STATE_DIR / f"{m.group(1)}.json")
        if state is not None and owner_alive(state) and not include_live:
            continue
        delete_netns(name)
        removed.append(name)
    return removed


# --------------------------------------------------------------------------------------------
# Names and signals


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", name)[:24]


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """Public form of :func:`_signals_raise` for drivers of several runs (``run_many``)."""
    with _signals_raise():
        yield


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """While a run executes, SIGTERM raises :class:`Terminated` (Ctrl-C already raises
    KeyboardInterrupt), so that cleanup runs. Only the main thread can install handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Terminated(signum)

    old = signal.getsignal(signal.SIGTERM)
    if getattr(old, "_ccfair", False):  # already raising (an outer driver installed it)
        yield
        return
    handler._ccfair = True  # type: ignore[attr-defined]
    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while removing what a run created; they act right after."""
    mask = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, mask)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
