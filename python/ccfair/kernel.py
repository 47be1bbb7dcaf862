"""The kernel backend: a scenario on the real Linux TCP stack (docs/kernel.md).

Every host (a node that is a flow endpoint) becomes a network namespace with one TUN device;
the Rust emulator (crates/ccfair-emu, exposed as ``ccfair._core.Emulation``) holds every TUN
device in one forwarder thread that drives the simulator's own link model against the wall
clock, and runs ccfair's bulk sender and receiver of each flow as threads inside the host
namespaces. This module checks that a scenario can run on this kernel, creates and removes
the namespaces, keeps the record that lets a later start remove what a crash left behind,
and turns the emulator's self-checks into flags on the run.

Everything ccfair creates carries the prefix ``ccf`` and the run's tag (the first 8 hex
digits of the run id): namespaces ``ccf-<tag>-<i>-<node>``, TUN devices ``ccf<tag>-<i>``
(inside those namespaces), threads ``ccf<tag>-fw`` / ``-s<flow>`` / ``-r<flow>``. Nothing
else is ever touched.

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
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ccfair import _core
from ccfair.algorithms import algorithms
from ccfair.errors import CcfairError, SpecError, show

__all__ = [
    "KernelError",
    "Terminated",
    "Bounds",
    "available_ccas",
    "kernel_hz",
    "check_scenario",
    "preflight",
    "cleanup",
    "run_kernel",
    "parse_cca_list",
    "stop_all",
    "machine_turn",
    "machine_load",
    "warn_if_busy",
    "LATENESS_FLAGS",
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
#: A run whose handshake packets were forwarded late (the machine stalled while a flow
#: connected) is run again, at most this many times in all (the emulator's
#: ``max_handshake_lateness_us``); the last attempt keeps what it gets and is flagged.
SETUP_ATTEMPTS = 3
#: The emulator's error prefix for that case (crates/ccfair-emu/src/config.rs).
SETUP_DISTURBED = "handshake disturbed"
#: Kernel runs on one machine take turns (see :func:`machine_turn`); this file is the turn.
TURN_PATH = STATE_DIR / "kernel.lock"
#: Set by a driver that holds the turn for the worker processes it starts (value: its pid).
TURN_ENV = "CCFAIR_KERNEL_TURN_HELD_BY"
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


@dataclass(frozen=True)
class Bounds:
    """Limits a kernel run must stay within to count as reliable (docs/kernel.md).

    Example:
        >>> Bounds().lateness_p99_us
        500.0
    """

    #: 99th percentile of the forwarder's lateness (actual minus scheduled time of every
    #: packet event).
    lateness_p99_us: float = 500.0
    #: 99.9th percentile of the lateness.
    lateness_p999_us: float = 2000.0
    #: CPU time of the forwarder thread over wall time.
    forwarder_cpu: float = 0.8
    #: Achieved over configured rate of every link direction busy for at least
    #: ``rate_min_busy_s`` seconds.
    rate_ratio: float = 0.99
    rate_min_busy_s: float = 1.0
    #: Sampling grid points missed by senders and receivers, as a fraction of all.
    missed_samples: float = 0.01
    #: 99th percentile of the senders' sampling lateness (sample time minus grid point).
    sampling_p99_us: float = 2000.0
    #: Largest lateness of a handshake packet (its RTT sample enters Linux's min RTT). The
    #: emulator aborts an attempt beyond it (``max_handshake_lateness_us``, the same value).
    handshake_max_us: float = 500.0
    #: Largest lateness of any packet event, as a fraction of the smallest round-trip
    #: propagation time of the scenario's flows, and at least ``stall_floor_us``: a stall of
    #: a tenth of an RTT delays a whole window of ACKs (and can end a slow start early).
    stall_rtt_fraction: float = 0.1
    stall_floor_us: float = 1000.0


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


# --------------------------------------------------------------------------------------------
# Scenario checks (before anything starts)

#: TCP options the kernel backend can apply, and how: (where, sysctl or route attribute,
#: value mapping). "sender" = the namespace of the flow's source, "both" = both endpoints.
_SYSCTL_OPTIONS: dict[str, tuple[str, str, Any]] = {
    "sack": ("both", "net/ipv4/tcp_sack", lambda v: "1" if v else "0"),
    "frto": ("sender", "net/ipv4/tcp_frto", lambda v: "2" if v else "0"),
    "reordering": ("sender", "net/ipv4/tcp_reordering", str),
    "min_rtt_wlen_s": ("sender", "net/ipv4/tcp_min_rtt_wlen", str),
    "pacing_ss_ratio": ("sender", "net/ipv4/tcp_pacing_ss_ratio", str),
    "pacing_ca_ratio": ("sender", "net/ipv4/tcp_pacing_ca_ratio", str),
    # Documentation/networking/ip-sysctl.rst: tcp_early_retrans 3 enables TLP, 0 disables;
    # tcp_recovery bit 0x1 is RACK.
    "tlp": ("sender", "net/ipv4/tcp_early_retrans", lambda v: "3" if v else "0"),
    "rack": ("sender", "net/ipv4/tcp_recovery", lambda v: "1" if v else "0"),
}
_ROUTE_OPTIONS: dict[str, tuple[str, Any]] = {
    "init_cwnd": ("initcwnd", str),
    "rto_min_ms": ("rto_min", lambda v: f"{v}ms"),
}


def _tcp_defaults() -> dict[str, Any]:
    return json.loads(_core.normalize_tcp("{}"))


def _cca_defaults(name: str) -> dict[str, Any]:
    return algorithms()[name].defaults()


def flow_program(
    cca: str, params: Mapping[str, Any], offered: list[str], *, force_bpf: bool = False
) -> str:
    """How the kernel backend runs a flow's algorithm: ``"kernel"`` (this kernel's own
    module, unmodified), ``"bpf"`` (ccfair's BPF program: the algorithm is modified, or the
    kernel lacks it, or ``force_bpf``), or ``"none"`` (neither can).

    Example:
        >>> flow_program("copa", {}, ["reno", "cubic", "bbr"])
        'bpf'
        >>> flow_program("bbr", {}, ["reno", "cubic", "bbr"])
        'kernel'
        >>> flow_program("bbr", {"probe_rtt_ms": 100}, ["bbr"])
        'bpf'
    """
    linux = LINUX_NAME.get(cca)
    stock = all(_cca_defaults(cca).get(k) == v for k, v in params.items())
    bpf = cca in BPF_ALGORITHMS
    if linux is not None and linux in offered and stock and not (force_bpf and bpf):
        return "kernel"
    return "bpf" if bpf else "none"


def bpf_unavailable() -> str | None:
    """What this machine lacks to run ccfair's BPF congestion controls (one sentence), or
    None: the programs in this build (clang and libbpf-dev when ccfair was installed),
    libbpf, a kernel with BTF and BPF struct_ops for TCP congestion control.

    Example:
        >>> bpf_unavailable() is None or isinstance(bpf_unavailable(), str)
        True
    """
    return _core.bpf_unavailable()


def check_scenario(
    resolved: Any, *, offered: list[str] | None = None, force_bpf: bool = False
) -> None:
    """Raise :class:`SpecError` if the kernel backend cannot run ``resolved`` as written:
    an algorithm neither this kernel nor ccfair's BPF programs offer, a modification of an
    algorithm without a BPF program (non-default ``cca_params`` of reno or cubic), or a TCP
    option Linux offers no per-namespace setting for; :class:`KernelError` if a flow needs
    a BPF program and this machine cannot run one (saying what is missing).
    ``force_bpf`` runs every algorithm that has a BPF program with it, also unmodified
    (to compare the program with the kernel's module).

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> check_scenario(dumbbell(1, "cubic").resolve(), offered=["reno"])
        Traceback (most recent call last):
        ...
        ccfair.errors.SpecError: flows[0].cca: "cubic" is not available on the kernel \
backend; this kernel offers: reno (and ccfair's BPF programs: bbr, copa)
    """
    offered = available_ccas() if offered is None else offered
    offers = (
        f"this kernel offers: {', '.join(offered) or 'nothing (no /proc/sys/net/ipv4)'} "
        f"(and ccfair's BPF programs: {', '.join(BPF_ALGORITHMS)})"
    )
    profile = resolved.normalized.get("profile")
    if profile is not None:
        raise SpecError(
            "profile",
            profile,
            "is a simulator model for now: the kernel backend's hosts are Linux (its own "
            'GSO skbs, tcp.tso must stay "off") and its links ccfair\'s forwarder; set '
            'tcp.rmem = "linux" and the links\' queue = "netem" for what it can do (issue 14)',
        )
    tcp = _TcpCheck(resolved)
    needs_bpf = []
    for i, f in enumerate(resolved.engine_spec["flows"]):
        if _check_flow_cca(i, f, offered, offers, force_bpf) == "bpf":
            needs_bpf.append(i)
        tcp.check_flow(i, f)
    if needs_bpf:
        missing = bpf_unavailable()
        if missing is not None:
            i = needs_bpf[0]
            raise KernelError(
                f"flows[{i}] ({resolved.engine_spec['flows'][i]['cca']}) needs ccfair's BPF "
                f"congestion control on the kernel backend, and {missing}"
            )


def _check_flow_cca(
    i: int, f: dict[str, Any], offered: list[str], offers: str, force_bpf: bool
) -> str:
    """How flow ``i`` runs its algorithm here (:func:`flow_program`), or the
    :class:`SpecError` of an algorithm or modification this machine cannot run."""
    cca = f["cca"]
    linux = LINUX_NAME.get(cca)
    how = flow_program(cca, f["cca_params"], offered, force_bpf=force_bpf)
    if how == "none" and (linux is None or linux not in offered):
        raise SpecError(f"flows[{i}].cca", cca, f"is not available on the kernel backend; {offers}")
    if how == "none":
        defaults = _cca_defaults(cca)
        for key, value in f["cca_params"].items():
            if defaults.get(key) != value:
                raise SpecError(
                    f"flows[{i}].cca_params.{key}",
                    value,
                    f"is a modification of {cca} that Linux's {linux} does not have "
                    f"(default {show(defaults.get(key))}); the kernel backend runs "
                    f"modified algorithms only as ccfair's BPF programs "
                    f"({', '.join(BPF_ALGORITHMS)})",
                )
    return how


class _TcpCheck:
    """The TCP options of a scenario's flows against what the kernel backend can set: per
    namespace sysctls and per route options, one kernel per host (flows that share a host
    must agree on its settings), HZ fixed by the running kernel."""

    def __init__(self, resolved: Any) -> None:
        self.spec = resolved.engine_spec
        self.sc = resolved.scenario
        self.tcp_defaults = _tcp_defaults()
        self.hz = kernel_hz()
        self.rmem, _ = _socket_buffers(resolved)
        # (host, setting) -> (field that set it, value)
        self.host_settings: dict[tuple[int, str], tuple[str, Any]] = {}

    def check_flow(self, i: int, f: dict[str, Any]) -> None:
        sc = self.sc
        explicit = {**sc.tcp, **sc.flows[i].tcp}
        for key, value in f["tcp"].items():
            where = "tcp" if key in sc.tcp and key not in sc.flows[i].tcp else f"flows[{i}].tcp"
            if key == "hz":
                if key in explicit and self.hz is not None and value != self.hz:
                    raise SpecError(
                        f"{where}.hz",
                        value,
                        f"differs from this kernel's HZ ({self.hz}); the kernel backend runs "
                        "at the kernel's own HZ (leave hz out)",
                    )
            elif key in _SYSCTL_OPTIONS or key in _ROUTE_OPTIONS or key == "rmem":
                self._check_host_setting(i, f, where, key, value)
            elif value != self.tcp_defaults.get(key):
                supported = ", ".join(sorted([*_SYSCTL_OPTIONS, *_ROUTE_OPTIONS]))
                raise SpecError(
                    f"{where}.{key}",
                    value,
                    f"cannot be applied on the kernel backend (Linux has no per-namespace "
                    f"setting for it; default {show(self.tcp_defaults.get(key))}); "
                    f"settable: {supported}",
                )

    def _check_host_setting(
        self, i: int, f: dict[str, Any], where: str, key: str, value: Any
    ) -> None:
        both = key in _SYSCTL_OPTIONS and _SYSCTL_OPTIONS[key][0] == "both"
        # tcp_rmem belongs to the receiving host; compared resolved ("fit" is per host).
        nodes = (f["dst"],) if key == "rmem" else (f["src"], f["dst"]) if both else (f["src"],)
        value = self.rmem[i] if key == "rmem" else value
        for node in nodes:
            seen = self.host_settings.setdefault((node, key), (f"{where}.{key}", value))
            if seen[1] != value:
                raise SpecError(
                    f"{where}.{key}",
                    value,
                    f"differs from {seen[0]} = {show(seen[1])} on host "
                    f"{show(self.spec['nodes'][node])}; flows that share a host share its "
                    "kernel settings",
                )


# --------------------------------------------------------------------------------------------
# Environment


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


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise KernelError(f"ip {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")
    return proc


def list_netns() -> list[str]:
    """Names of the network namespaces bound under /run/netns (as ``ip netns list``)."""
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir())


def _proc_start_time(pid: int) -> int | None:
    """Start time of a process (proc(5) /proc/PID/stat field 22), to tell a live owner from
    a recycled pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces; fields after it follow the last ')'.
    return int(stat[stat.rindex(")") + 2 :].split()[19])


def _owner_alive(state: Mapping[str, Any]) -> bool:
    pid = state.get("pid")
    return isinstance(pid, int) and _proc_start_time(pid) == state.get("start_time")


def _delete_netns(name: str) -> None:
    if not NETNS_RE.match(name):  # pragma: no cover - callers only pass ccfair's names
        raise KernelError(f"refusing to delete namespace {name!r}: not a ccfair namespace")
    _ip("netns", "del", name, check=False)


def _read_state(path: Path) -> dict[str, Any] | None:
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
            state = _read_state(path)
            tag = path.stem
            if state is not None and _owner_alive(state) and not include_live:
                live_tags.add(tag)
                continue
            for name in (state or {}).get("netns", []):
                if NETNS_RE.match(name) and name in list_netns():
                    _delete_netns(name)
                    removed.append(name)
            with contextlib.suppress(OSError):
                path.unlink()
    for name in list_netns():
        m = NETNS_RE.match(name)
        if not m or m.group(1) in live_tags:
            continue
        # A run writes its record before it creates namespaces, so a run that started after
        # the records were read above has one now: look again before deleting.
        state = _read_state(STATE_DIR / f"{m.group(1)}.json")
        if state is not None and _owner_alive(state) and not include_live:
            continue
        _delete_netns(name)
        removed.append(name)
    return removed


# --------------------------------------------------------------------------------------------
# One run


@dataclass
class _Plan:
    tag: str
    netns: list[str]
    config: dict[str, Any]
    hosts: list[dict[str, Any]] = field(default_factory=list)
    #: The veth data path's devices, addresses, routes and qdiscs (None: the TUN path).
    veth: Any = None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", name)[:24]


def _socket_buffers(resolved: Any) -> tuple[list[list[int]], list[int]]:
    """Per flow its receiver's ``tcp_rmem`` (``tcp.rmem`` resolved), per node the socket
    buffer maximum no flow of the node's can fill; the simulator uses the same values
    (``RunSpec::rmem_bytes`` in crates/ccfair-sim/src/spec.rs)."""
    rmem, fit = _core.socket_buffers(json.dumps(resolved.engine_spec))
    return [list(r) for r in rmem], list(fit)


def _host_buffer_sysctls(resolved: Any, node: int) -> list[tuple[str, str]]:
    """tcp_rmem of the flows ``node`` receives (the same for all of them, or
    :func:`check_scenario` refused the scenario), else a fitting one; tcp_wmem always fits:
    the simulator's senders are never limited by their socket buffer."""
    rmem, fit = _socket_buffers(resolved)
    received = [rmem[i] for i, f in enumerate(resolved.engine_spec["flows"]) if f["dst"] == node]
    r = received[0] if received else [4096, 131072, fit[node]]
    return [
        ("net/ipv4/tcp_rmem", " ".join(map(str, r))),
        ("net/ipv4/tcp_wmem", f"4096 16384 {fit[node]}"),
    ]


def _plan(resolved: Any, run_id: str, *, force_bpf: bool = False) -> _Plan:
    spec = resolved.engine_spec
    tag = run_id[:8]
    offered = available_ccas()
    endpoints = sorted({f["src"] for f in spec["flows"]} | {f["dst"] for f in spec["flows"]})
    if len(endpoints) > 999:
        raise KernelError(f"{len(endpoints)} hosts; the kernel backend supports at most 999")
    tcp_defaults = _tcp_defaults()
    hosts = []
    netns = []
    for i, node in enumerate(endpoints):
        name = f"ccf-{tag}-{i}-{_safe(spec['nodes'][node])}"
        n = i + 1
        sysctls = [
            ("net/ipv6/conf/all/disable_ipv6", "1"),
            ("net/ipv6/conf/default/disable_ipv6", "1"),
            ("net/ipv4/tcp_no_metrics_save", "1"),
            *_host_buffer_sysctls(resolved, node),
        ]
        route_options: list[str] = []
        applied: dict[str, str] = {}
        for f in spec["flows"]:
            role = "sender" if f["src"] == node else "receiver" if f["dst"] == node else None
            if role is None:
                continue
            for key, value in f["tcp"].items():
                if key in _SYSCTL_OPTIONS:
                    where, path, conv = _SYSCTL_OPTIONS[key]
                    if role == "sender" or where == "both":
                        applied.setdefault(path, conv(value))
                elif key in _ROUTE_OPTIONS and role == "sender":
                    if value != tcp_defaults.get(key) and key not in applied:
                        attr, conv = _ROUTE_OPTIONS[key]
                        applied[key] = conv(value)
                        route_options += [attr, conv(value)]
        sysctls += [(k, v) for k, v in applied.items() if k.startswith("net/")]
        hosts.append(
            {
                "node": node,
                "netns": name,
                "dev": f"ccf{tag}-{i}",
                "addr": f"10.200.{n >> 8}.{n & 255}",
                "route": PREFIX,
                "route_options": route_options,
                "sysctls": sysctls,
            }
        )
        netns.append(name)
    flows = []
    bpf: dict[str, str] = {}
    for i, f in enumerate(spec["flows"]):
        if flow_program(f["cca"], f["cca_params"], offered, force_bpf=force_bpf) == "bpf":
            name = bpf.setdefault(f["cca"], f"ccf{tag}{f['cca']}")
        else:
            name = LINUX_NAME[f["cca"]]
        flows.append({"port": BASE_PORT + i, "kernel_cca": name})
    config = {
        "tag": tag,
        "spec": spec,
        "hosts": hosts,
        "flows": flows,
        "bpf": [{"algorithm": a, "name": n} for a, n in bpf.items()],
    }
    return _Plan(tag=tag, netns=netns, config=config, hosts=hosts)


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
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while removing what a run created; they act right after."""
    mask = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, mask)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _host_tx_drops(hosts: list[dict[str, Any]]) -> int:
    """Packets the hosts' TUN devices dropped on their way to the forwarder (its queue
    overflowed): must be 0, else losses happened outside the link model."""
    total = 0
    for h in hosts:
        proc = _ip("-n", h["netns"], "-s", "-j", "link", "show", "dev", h["dev"], check=False)
        with contextlib.suppress(ValueError, IndexError, KeyError, TypeError):
            total += int(json.loads(proc.stdout)[0]["stats64"]["tx"]["dropped"])
    return total


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
    import fcntl

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


def run_kernel(
    resolved: Any,
    run_id: str,
    *,
    engine_spec: dict[str, Any] | None = None,
    force_bpf: bool = False,
    datapath: str = "tun",
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run a resolved scenario on this kernel; return the tables (as the simulator's
    ``_core.run`` returns them) and the self-check record.

    ``datapath`` is ``"tun"`` (ccfair's forwarder carries the packets over the simulator's
    link model) or ``"veth"`` (veth pairs with tc qdiscs, :mod:`ccfair.veth`).

    Raises :class:`KernelError` when the environment cannot run it or the run fails,
    ``KeyboardInterrupt`` / :class:`Terminated` on SIGINT / SIGTERM. Whatever happens, the
    namespaces are removed before this returns (and by the next start after a SIGKILL).
    ``engine_spec`` replaces the resolved engine spec (e.g. one asking for a trace).
    ``force_bpf`` runs bbr (and copa) as ccfair's BPF programs even when unmodified (see
    :func:`check_scenario`); the caller keeps such results apart from the others.
    """
    preflight()
    with machine_turn():
        return _run_turn(resolved, run_id, engine_spec, force_bpf, datapath)


def _run_turn(
    resolved: Any,
    run_id: str,
    engine_spec: dict[str, Any] | None,
    force_bpf: bool = False,
    datapath: str = "tun",
) -> tuple[dict[str, Any], dict[str, Any]]:
    cleanup()
    plan = _plan(resolved, run_id, force_bpf=force_bpf)
    if engine_spec is not None:
        plan.config["spec"] = engine_spec
    if datapath == "veth":
        from ccfair import veth

        plan.veth = veth.plan(plan.config["spec"], plan.tag, plan.hosts)
        plan.netns += plan.veth.routers
        plan.config["datapath"] = "veth"
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    state_path = STATE_DIR / f"{plan.tag}.json"
    existing = _read_state(state_path)
    if existing is not None and _owner_alive(existing):
        raise KernelError(
            f"run {run_id} is already executing in process {existing['pid']} (tag {plan.tag})"
        )
    state = {
        "tag": plan.tag,
        "run_id": run_id,
        "pid": os.getpid(),
        "start_time": _proc_start_time(os.getpid()),
        "netns": plan.netns,
        "created": time.time(),
    }
    tmp = state_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, state_path)
    try:
        with _signals_raise():
            for attempt in range(1, SETUP_ATTEMPTS + 1):
                # The last attempt runs whatever the handshakes saw; assess() flags it.
                options = {} if attempt < SETUP_ATTEMPTS else {"max_handshake_lateness_us": 0}
                try:
                    raw, selfcheck = _attempt(plan, options)
                except KernelError as exc:
                    if SETUP_DISTURBED in str(exc) and attempt < SETUP_ATTEMPTS:
                        continue
                    raise
                selfcheck["setup_attempts"] = attempt
                selfcheck["expected_samples"] = _expected_samples(resolved.engine_spec)
                selfcheck["min_base_rtt_us"] = min(f.base_rtt_ns for f in resolved.flows) / 1e3
                return raw, selfcheck
    finally:
        with contextlib.suppress(OSError):
            state_path.unlink()
    raise AssertionError("unreachable")  # pragma: no cover


#: Emulations running in this process, so that :func:`stop_all` can reach runs executing in
#: worker threads (only the main thread receives signals).
_ACTIVE: set[Any] = set()
_ACTIVE_LOCK = threading.Lock()


def stop_all() -> None:
    """Ask every kernel run of this process to stop; each then removes what it created.

    Example:
        >>> stop_all()  # nothing running: nothing happens
    """
    with _ACTIVE_LOCK:
        for emu in _ACTIVE:
            emu.stop()


def _attempt(plan: _Plan, options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Create the namespaces, run once, remove them (whatever happens)."""
    emu = None
    try:
        for name in plan.netns:
            _ip("netns", "add", name)
        if plan.veth is not None:
            from ccfair import veth

            veth.setup(plan.veth)
        emu = _core.Emulation(json.dumps({**plan.config, "options": options}))
        with _ACTIVE_LOCK:
            _ACTIVE.add(emu)
        steal_before = steal_ms()
        raw = emu.run()
        steal_after = steal_ms()
        selfcheck = json.loads(raw.pop("selfcheck"))
        if steal_before is not None and steal_after is not None:
            selfcheck["steal_ms"] = steal_after - steal_before
        if plan.veth is None:
            selfcheck["host_tx_drops"] = _host_tx_drops(plan.hosts)
        else:
            from ccfair import veth

            veth.fill_link_summary(
                raw["link_summary"], veth.qdisc_counts(plan.veth), plan.config["spec"]
            )
            selfcheck["host_tx_drops"] = 0
            selfcheck["datapath"] = "veth"
            # No forwarder: its lateness, CPU and rates do not exist (NaN in the runs table).
            selfcheck["forwarder"] = {}
        selfcheck["kernel_hz"] = kernel_hz()
        selfcheck["namespaces"] = plan.netns
        # What each flow ran: a module's name, or ccfair's BPF program (ccf<tag><algorithm>).
        selfcheck["kernel_cca"] = [f["kernel_cca"] for f in plan.config["flows"]]
        return raw, selfcheck
    except RuntimeError as exc:
        if isinstance(exc, KernelError):
            raise
        raise KernelError(f"kernel run failed: {exc}") from None
    finally:
        with _signals_deferred():
            if emu is not None:
                with _ACTIVE_LOCK:
                    _ACTIVE.discard(emu)
                emu.close()
            for name in plan.netns:
                _delete_netns(name)


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


def _expected_samples(spec: Mapping[str, Any]) -> int:
    """Grid points the senders and receivers should have sampled (as the simulator does:
    every k x interval <= duration, senders from their flow's start)."""
    iv, dur = spec["sample_interval_ns"], spec["duration_ns"]
    last = dur // iv
    total = 0
    for f in spec["flows"]:
        first = max(1, -(-f["start_ns"] // iv))
        total += max(0, last - first + 1) + last
    return total


#: Flags that say the machine could not keep up (as opposed to, e.g., a host queue drop).
LATENESS_FLAGS = (
    "forwarder lateness",
    "forwarder stall",
    "forwarder CPU",
    "achieved link rate",
    "sampling",
)


def assess(selfcheck: Mapping[str, Any], bounds: Bounds = Bounds()) -> list[str]:
    """The self-check bounds a run exceeded, one short sentence each (empty: reliable).

    Example:
        >>> assess({"forwarder": {"lateness": {"p99_us": 900.0, "p999_us": 1000.0},
        ...     "cpu_frac": 0.1, "rates": []}, "missed_samples": 0, "host_tx_drops": 0})
        ['forwarder lateness p99 900 us > 500 us']
    """
    flags = []
    fwd = selfcheck["forwarder"]
    late = fwd.get("lateness", {})
    if _gt(late.get("p99_us"), bounds.lateness_p99_us):
        flags.append(
            f"forwarder lateness p99 {late['p99_us']:.0f} us > {bounds.lateness_p99_us:.0f} us"
        )
    if _gt(late.get("p999_us"), bounds.lateness_p999_us):
        flags.append(
            f"forwarder lateness p99.9 {late['p999_us']:.0f} us > {bounds.lateness_p999_us:.0f} us"
        )
    if _gt(fwd.get("cpu_frac"), bounds.forwarder_cpu):
        flags.append(f"forwarder CPU {fwd['cpu_frac']:.0%} > {bounds.forwarder_cpu:.0%}")
    handshake = fwd.get("handshake_lateness", {})
    if _gt(handshake.get("max_us"), bounds.handshake_max_us):
        flags.append(
            f"a handshake packet was {handshake['max_us']:.0f} us late (> "
            f"{bounds.handshake_max_us:.0f} us): Linux's min RTT may read high"
        )
    stall_us = stall_bound_us(selfcheck, bounds)
    if _gt(late.get("max_us"), stall_us):
        episodes = fwd.get("stall_episodes") or []
        over = [t for t, ms in episodes if ms * 1e3 > stall_us]
        when = f", beyond the bound at {', '.join(f'{t:.1f}' for t in over[:5])} s" if over else ""
        steal = selfcheck.get("steal_ms") or 0
        host = (
            f"; meanwhile the hypervisor took {steal:.0f} ms of CPU (steal time)" if steal else ""
        )
        flags.append(
            f"forwarder stall: an event {late['max_us'] / 1e3:.1f} ms late (> {stall_us / 1e3:.1f} "
            f"ms, a tenth of the smallest base RTT); {fwd.get('stalls', 0)} stalls over "
            f"{fwd.get('stall_threshold_us', 0) / 1e3:g} ms{when}{host}"
        )
    ratio = rate_ratio_min(selfcheck, bounds)
    if ratio is not None and ratio < bounds.rate_ratio:
        flags.append(f"achieved link rate {ratio:.2%} of configured < {bounds.rate_ratio:.0%}")
    sampling = selfcheck.get("sampling_lateness", {})
    if _gt(sampling.get("p99_us"), bounds.sampling_p99_us):
        flags.append(
            f"sampling lateness p99 {sampling['p99_us']:.0f} us > {bounds.sampling_p99_us:.0f} us"
        )
    expected = selfcheck.get("expected_samples") or 0
    missed = selfcheck.get("missed_samples", 0)
    if expected and missed / expected > bounds.missed_samples:
        flags.append(f"{missed} of {expected} sampling points missed")
    if selfcheck.get("host_tx_drops", 0):
        flags.append(f"{selfcheck['host_tx_drops']} packets dropped by host TUN queues")
    if fwd.get("write_errors", 0):
        flags.append(f"{fwd['write_errors']} failed writes to TUN devices")
    return flags


def stall_bound_us(selfcheck: Mapping[str, Any], bounds: Bounds = Bounds()) -> float:
    """The largest lateness a run may show: ``stall_rtt_fraction`` of its smallest base RTT
    (``min_base_rtt_us`` in the self-check record), at least ``stall_floor_us``.

    Example:
        >>> stall_bound_us({"min_base_rtt_us": 8000.0})
        1000.0
        >>> stall_bound_us({"min_base_rtt_us": 204000.0})
        20400.0
    """
    rtt = selfcheck.get("min_base_rtt_us")
    if not isinstance(rtt, int | float) or rtt != rtt:
        return bounds.stall_floor_us
    return max(bounds.stall_floor_us, bounds.stall_rtt_fraction * rtt)


def rate_ratio_min(selfcheck: Mapping[str, Any], bounds: Bounds = Bounds()) -> float | None:
    """Lowest achieved/configured rate over link directions busy long enough to judge."""
    ratios = [
        r["achieved_bps"] / r["rate_bps"]
        for r in selfcheck["forwarder"].get("rates", [])
        if r["busy_s"] >= bounds.rate_min_busy_s and r["achieved_bps"] is not None
    ]
    return min(ratios) if ratios else None


def _gt(value: Any, bound: float) -> bool:
    return isinstance(value, int | float) and value == value and value > bound
