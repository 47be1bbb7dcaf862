"""The kernel backend's scenario checks, before anything starts: which program runs each
flow's algorithm (this kernel's module or ccfair's BPF program), and the TCP options Linux
can set per namespace or per route.

Example:
    >>> flow_program("copa", {}, ["reno", "cubic", "bbr"])
    'bpf'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ccfair import _core
from ccfair.algorithms import algorithms
from ccfair.backends.base import ResolvedScenario
from ccfair.backends.kernel.host import (
    BPF_ALGORITHMS,
    LINUX_NAME,
    KernelError,
    available_ccas,
    bpf_unavailable,
    kernel_hz,
    running_release,
)
from ccfair.errors import SpecError, show
from ccfair.testbeds import DEFAULT_TESTBED, TESTBEDS

__all__ = [
    "ECN_OPTIONS",
    "ROUTE_OPTIONS",
    "STOCK_RMEM",
    "STOCK_WMEM",
    "SYSCTL_OPTIONS",
    "check_scenario",
    "flow_program",
    "host_ecn",
    "socket_buffers",
    "tcp_defaults",
]

#: TCP options the kernel backend can apply, and how: (where, sysctl or route attribute,
#: value mapping). "sender" = the namespace of the flow's source, "both" = both endpoints.
SYSCTL_OPTIONS: dict[str, tuple[str, str, Any]] = {
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
    # Documentation/networking/ip-sysctl.rst: tcp_ecn_fallback, the sending host's.
    "ecn_fallback": ("sender", "net/ipv4/tcp_ecn_fallback", lambda v: "1" if v else "0"),
}

#: The TCP options that set a host's ``net.ipv4.tcp_ecn`` (:func:`host_ecn`): the sending
#: host's and the receiving host's.
ECN_OPTIONS = ("ecn", "ecn_receiver")


#: Linux 6.18's stock socket buffers (net/ipv4/tcp.c, tcp_init), for a host that neither
#: receives nor sends a flow of its own (``tcp.rmem``/``tcp.wmem`` = "linux").
STOCK_RMEM = [4096, 131072, 33554432]
STOCK_WMEM = [4096, 16384, 4194304]

#: Options that describe how the simulator models a host, at values that the kernel
#: backend's hosts, Linux itself, follow anyway: Linux builds GSO skbs whatever ``tso`` says
#: ("off" is the simulator's idealised host) and defers them by 6.18's rule.
_LINUX_DOES: dict[str, tuple[Any, ...]] = {"tso": ("linux", "off"), "tso_defer": (True,)}

ROUTE_OPTIONS: dict[str, tuple[str, Any]] = {
    "init_cwnd": ("initcwnd", str),
    "rto_min_ms": ("rto_min", lambda v: f"{v}ms"),
}


def tcp_defaults() -> dict[str, Any]:
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


def check_scenario(
    resolved: ResolvedScenario, *, offered: list[str] | None = None, force_bpf: bool = False
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
    _check_host_kernel(resolved.normalized)
    tcp = _TcpCheck(resolved)
    needs_bpf = []
    for i, f in enumerate(resolved.engine_spec["flows"]):
        if _check_flow_cca(i, f, offered, offers, force_bpf) == "bpf":
            needs_bpf.append(i)
        tcp.check_flow(i, f)
    host_ecn(resolved)
    if needs_bpf:
        missing = bpf_unavailable()
        if missing is not None:
            i = needs_bpf[0]
            raise KernelError(
                f"flows[{i}] ({resolved.engine_spec['flows'][i]['cca']}) needs ccfair's BPF "
                f"congestion control on the kernel backend, and {missing}"
            )


#: The host kernels the kernel backend can be: its own Linux is one of these generations
#: (ccfair.testbeds.KERNELS); a 4.x host's receive window, ACKs and pacing are not
#: settings of a 6.x kernel.
RUNNABLE_KERNELS = ("6.18",)


def _check_host_kernel(normalized: Mapping[str, Any]) -> None:
    """The scenario's host kernel must be one the kernel backend's own Linux is (on the
    ideal testbed a kernel names only the algorithms' versions: BBR's run as ccfair's BPF
    program)."""
    kernel = normalized.get("kernel")
    real = TESTBEDS[normalized.get("testbed") or DEFAULT_TESTBED].kernel is not None
    if real and kernel is not None and kernel not in RUNNABLE_KERNELS:
        raise SpecError(
            "kernel",
            kernel,
            f"is a host kernel the kernel backend cannot be: it runs this machine's Linux "
            f"({running_release() or 'unknown release'}), whose TCP is not Linux {kernel}'s "
            f'(receive window, ACKs, pacing); give kernel = "{RUNNABLE_KERNELS[0]}" '
            f"(--kernel {RUNNABLE_KERNELS[0]}), as ccfair validate does, or run it on the "
            "simulator",
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

    def __init__(self, resolved: ResolvedScenario) -> None:
        self.spec = resolved.engine_spec
        self.sc = resolved.scenario
        self.tcp_defaults = tcp_defaults()
        self.hz = kernel_hz()
        self.rmem, self.wmem, _ = socket_buffers(resolved)
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
            elif key in SYSCTL_OPTIONS or key in ROUTE_OPTIONS or key in ("rmem", "wmem"):
                self._check_host_setting(i, f, where, key, value)
            elif key in ECN_OPTIONS:
                pass  # host_ecn() checks them across the flows, below
            elif key in _LINUX_DOES and value in _LINUX_DOES[key]:
                continue
            elif value != self.tcp_defaults.get(key):
                supported = ", ".join(sorted([*SYSCTL_OPTIONS, *ROUTE_OPTIONS, *ECN_OPTIONS]))
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
        both = key in SYSCTL_OPTIONS and SYSCTL_OPTIONS[key][0] == "both"
        # tcp_rmem belongs to the receiving host, tcp_wmem to the sending one; compared
        # resolved ("fit" is per host).
        nodes = (f["dst"],) if key == "rmem" else (f["src"], f["dst"]) if both else (f["src"],)
        value = self.rmem[i] if key == "rmem" else self.wmem[i] if key == "wmem" else value
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


def _option_field(resolved: ResolvedScenario, i: int, key: str) -> str:
    """Where flow ``i``'s TCP option ``key`` comes from: its own ``tcp`` table, else the
    scenario's."""
    sc = resolved.scenario
    if key in sc.flows[i].tcp or key not in sc.tcp:
        return f"flows[{i}].tcp.{key}"
    return f"tcp.{key}"


def host_ecn(resolved: ResolvedScenario) -> dict[int, int]:
    """Per host (node index) the ``net.ipv4.tcp_ecn`` that serves every flow it sends and
    receives, as the flows' ``tcp.ecn`` (the sender's value) and ``tcp.ecn_receiver`` (the
    receiver's) ask. Linux's values (Documentation/networking/ip-sysctl.rst): 0 neither asks
    for ECN nor accepts it, 1 asks on outgoing connections and accepts on incoming ones,
    2 (the default) only accepts. A sending host asks or does not (1, or 0 / 2); a receiving
    host accepts or refuses (1 / 2, or 0); one value serves a host that does both unless
    one of its flows needs it to ask and another needs it to refuse. A host's own flows
    agree on each role, or :class:`SpecError` names the two flows that disagree.

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> host_ecn(dumbbell(1, "reno", tcp={"ecn": 1}).resolve())
        {0: 1, 3: 2}
    """
    spec = resolved.engine_spec
    # node -> role -> (wanted, flow index, option, value)
    wants: dict[int, dict[str, tuple[bool, int, str, int]]] = {}
    written: dict[int, set[int]] = {}
    for i, f in enumerate(spec["flows"]):
        for role, node, key in (("ask", f["src"], "ecn"), ("accept", f["dst"], "ecn_receiver")):
            value = int(f["tcp"][key])
            want = value == 1 if role == "ask" else value != 0
            written.setdefault(node, set()).add(value)
            seen = wants.setdefault(node, {}).setdefault(role, (want, i, key, value))
            if seen[0] != want:
                _ecn_conflict(resolved, node, (i, key, value), seen[1:])
    out = {}
    for node, roles in sorted(wants.items()):
        ask, accept = roles.get("ask"), roles.get("accept")
        if ask is not None and accept is not None and ask[0] and not accept[0]:
            _ecn_conflict(resolved, node, accept[1:], ask[1:])

        def serves(v: int, ask: Any = ask, accept: Any = accept) -> bool:
            return (ask is None or (v == 1) == ask[0]) and (accept is None or (v != 0) == accept[0])

        # The value the flows wrote, when they all wrote one; else the first that serves.
        mine = written[node]
        one = next(iter(mine)) if len(mine) == 1 else None
        out[node] = (
            one if one is not None and serves(one) else next(v for v in (1, 2, 0) if serves(v))
        )
    return out


def _ecn_conflict(
    resolved: ResolvedScenario, node: int, this: tuple[int, str, int], other: tuple[int, str, int]
) -> None:
    def meaning(key: str, value: int) -> str:
        if key == "ecn":
            return "asks for ECN" if value == 1 else "does not ask for ECN"
        return "refuses ECN" if value == 0 else "accepts ECN"

    (i, key, value), (j, okey, ovalue) = this, other
    name = resolved.engine_spec["nodes"][node]
    raise SpecError(
        _option_field(resolved, i, key),
        value,
        f"{meaning(key, value)} on host {show(name)}, where flows[{j}] "
        f"{meaning(okey, ovalue)} ({_option_field(resolved, j, okey)} = {ovalue}); the kernel "
        "backend's hosts have one net.ipv4.tcp_ecn each (1 asks and accepts, 2 only accepts, "
        "0 refuses)",
    )


def socket_buffers(
    resolved: ResolvedScenario,
) -> tuple[list[list[int]], list[list[int]], list[int]]:
    """Per flow its receiver's ``tcp_rmem`` and its sender's ``tcp_wmem`` (``tcp.rmem``,
    ``tcp.wmem`` resolved), per node the socket buffer maximum no flow of the node's can
    fill; the simulator uses the same values (``RunSpec::rmem_bytes`` and ``wmem_bytes`` in
    crates/ccfair-sim/src/spec.rs)."""
    rmem, wmem, fit = _core.socket_buffers(json.dumps(resolved.engine_spec))
    return [list(r) for r in rmem], [list(w) for w in wmem], list(fit)
