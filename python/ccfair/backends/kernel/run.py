"""One run on the kernel backend: a scenario on the real Linux TCP stack (docs/kernel.md).

Every host (a node that is a flow endpoint) becomes a network namespace with one TUN device;
the Rust emulator (crates/ccfair-emu, exposed as ``ccfair._core.Emulation``) holds every TUN
device in one forwarder thread that drives the simulator's own link model against the wall
clock, and runs ccfair's bulk sender and receiver of each flow as threads inside the host
namespaces. On the veth data path (:mod:`ccfair.backends.kernel.veth`) the kernel forwards
the packets over veth pairs with tc qdiscs instead. This module plans a run (namespaces,
addresses, sysctls, each flow's program), takes the machine's turn, runs it (again when a
handshake was disturbed), removes what it created and returns the tables with the
self-check record.

Example:
    >>> stop_all()  # nothing running: nothing happens
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ccfair import _core
from ccfair.backends.base import ResolvedScenario
from ccfair.backends.kernel import veth
from ccfair.backends.kernel.checks import (
    ROUTE_OPTIONS,
    STOCK_RMEM,
    STOCK_WMEM,
    SYSCTL_OPTIONS,
    flow_program,
    host_ecn,
    socket_buffers,
    tcp_defaults,
)
from ccfair.backends.kernel.host import (
    BASE_PORT,
    LINUX_NAME,
    PREFIX,
    STATE_DIR,
    KernelError,
    available_ccas,
    cleanup,
    delete_netns,
    ip,
    kernel_hz,
    owner_alive,
    preflight,
    proc_start_time,
    read_state,
    safe_name,
    signals_deferred,
    signals_raise,
)
from ccfair.backends.kernel.machine import machine_turn, steal_ms

__all__ = ["run_kernel", "stop_all"]

#: A run whose handshake packets were forwarded late (the machine stalled while a flow
#: connected) is run again, at most this many times in all (the emulator's
#: ``max_handshake_lateness_us``); the last attempt keeps what it gets and is flagged.
SETUP_ATTEMPTS = 3


#: The emulator's error prefix for that case (crates/ccfair-emu/src/config.rs).
SETUP_DISTURBED = "handshake disturbed"


@dataclass
class _Plan:
    tag: str
    netns: list[str]
    config: dict[str, Any]
    hosts: list[dict[str, Any]] = field(default_factory=list)
    #: The veth data path's devices, addresses, routes and qdiscs (None: the TUN path).
    veth: Any = None


def _host_buffer_sysctls(resolved: ResolvedScenario, node: int) -> list[tuple[str, str]]:
    """The socket-buffer sysctls of host ``node``: ``tcp_rmem`` of the flows it receives
    and ``tcp_wmem`` of the flows it sends (each the same for all of them, or
    :func:`check_scenario` refused the scenario), as ``tcp.rmem`` and ``tcp.wmem`` resolve:
    Linux's stock values on a real testbed, large enough never to limit on ``ideal``. A host
    without such a flow gets the stock values."""
    rmem, wmem, _ = socket_buffers(resolved)
    flows = resolved.engine_spec["flows"]
    received = [rmem[i] for i, f in enumerate(flows) if f["dst"] == node]
    sent = [wmem[i] for i, f in enumerate(flows) if f["src"] == node]
    r = received[0] if received else STOCK_RMEM
    w = sent[0] if sent else STOCK_WMEM
    return [
        ("net/ipv4/tcp_rmem", " ".join(map(str, r))),
        ("net/ipv4/tcp_wmem", " ".join(map(str, w))),
    ]


def _host_tcp_options(
    flows: list[dict[str, Any]], node: int, defaults: Mapping[str, Any]
) -> tuple[list[tuple[str, str]], list[str]]:
    """The sysctls and route attributes that the tcp options of host ``node``'s flows set:
    a sysctl on the sender's host (and on the receiver's for an option both ends use; the
    first flow to set it wins), a route attribute on the sender's routes when it differs
    from the option's default."""
    route_options: list[str] = []
    applied: dict[str, str] = {}
    for f in flows:
        role = "sender" if f["src"] == node else "receiver" if f["dst"] == node else None
        if role is None:
            continue
        for key, value in f["tcp"].items():
            if key in SYSCTL_OPTIONS:
                where, path, conv = SYSCTL_OPTIONS[key]
                if role == "sender" or where == "both":
                    applied.setdefault(path, conv(value))
            elif key in ROUTE_OPTIONS and role == "sender":
                if value != defaults.get(key) and key not in applied:
                    attr, conv = ROUTE_OPTIONS[key]
                    applied[key] = conv(value)
                    route_options += [attr, conv(value)]
    return [(k, v) for k, v in applied.items() if k.startswith("net/")], route_options


def _flow_kernel_ccas(
    flows: list[dict[str, Any]], tag: str, offered: list[str], force_bpf: bool
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Each flow's port and the kernel's name of its algorithm: Linux's own module, or a
    BPF twin loaded under a name of this run (returned too: algorithm -> name)."""
    out = []
    bpf: dict[str, str] = {}
    for i, f in enumerate(flows):
        if flow_program(f["cca"], f["cca_params"], offered, force_bpf=force_bpf) == "bpf":
            name = bpf.setdefault(f["cca"], f"ccf{tag}{f['cca']}")
        else:
            name = LINUX_NAME[f["cca"]]
        out.append({"port": BASE_PORT + i, "kernel_cca": name})
    return out, bpf


def _plan(resolved: ResolvedScenario, run_id: str, *, force_bpf: bool = False) -> _Plan:
    spec = resolved.engine_spec
    tag = run_id[:8]
    offered = available_ccas()
    endpoints = sorted({f["src"] for f in spec["flows"]} | {f["dst"] for f in spec["flows"]})
    if len(endpoints) > 999:
        raise KernelError(f"{len(endpoints)} hosts; the kernel backend supports at most 999")
    defaults = tcp_defaults()
    ecn = host_ecn(resolved)
    hosts = []
    netns = []
    for i, node in enumerate(endpoints):
        name = f"ccf-{tag}-{i}-{safe_name(spec['nodes'][node])}"
        n = i + 1
        sysctls = [
            ("net/ipv6/conf/all/disable_ipv6", "1"),
            ("net/ipv6/conf/default/disable_ipv6", "1"),
            ("net/ipv4/tcp_no_metrics_save", "1"),
            *_host_buffer_sysctls(resolved, node),
            # ECN as the host's flows ask (checks.host_ecn); per network namespace.
            ("net/ipv4/tcp_ecn", str(ecn[node])),
        ]
        option_sysctls, route_options = _host_tcp_options(spec["flows"], node, defaults)
        sysctls += option_sysctls
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
    flows, bpf = _flow_kernel_ccas(spec["flows"], tag, offered, force_bpf)
    config = {
        "tag": tag,
        "spec": spec,
        "hosts": hosts,
        "flows": flows,
        "bpf": [{"algorithm": a, "name": n} for a, n in bpf.items()],
    }
    return _Plan(tag=tag, netns=netns, config=config, hosts=hosts)


def _host_tx_drops(hosts: list[dict[str, Any]]) -> int:
    """Packets the hosts' TUN devices dropped on their way to the forwarder (its queue
    overflowed): must be 0, else losses happened outside the link model."""
    total = 0
    for h in hosts:
        proc = ip("-n", h["netns"], "-s", "-j", "link", "show", "dev", h["dev"], check=False)
        with contextlib.suppress(ValueError, IndexError, KeyError, TypeError):
            total += int(json.loads(proc.stdout)[0]["stats64"]["tx"]["dropped"])
    return total


def run_kernel(
    resolved: ResolvedScenario,
    run_id: str,
    *,
    engine_spec: dict[str, Any] | None = None,
    force_bpf: bool = False,
    datapath: str = "tun",
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run a resolved scenario on this kernel; return the tables (as the simulator's
    ``_core.run`` returns them) and the self-check record.

    ``datapath`` is ``"tun"`` (ccfair's forwarder carries the packets over the simulator's
    link model) or ``"veth"`` (veth pairs with tc qdiscs, :mod:`ccfair.backends.kernel.veth`).

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
    resolved: ResolvedScenario,
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
        plan.veth = veth.plan(plan.config["spec"], plan.tag, plan.hosts)
        plan.netns += plan.veth.routers
        plan.config["datapath"] = "veth"
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    state_path = STATE_DIR / f"{plan.tag}.json"
    existing = read_state(state_path)
    if existing is not None and owner_alive(existing):
        raise KernelError(
            f"run {run_id} is already executing in process {existing['pid']} (tag {plan.tag})"
        )
    state = {
        "tag": plan.tag,
        "run_id": run_id,
        "pid": os.getpid(),
        "start_time": proc_start_time(os.getpid()),
        "netns": plan.netns,
        "created": time.time(),
    }
    tmp = state_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, state_path)
    try:
        with signals_raise():
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
            ip("netns", "add", name)
        if plan.veth is not None:
            veth.setup(plan.veth)
        emu = _core.Emulation(json.dumps({**plan.config, "options": options}))
        with _ACTIVE_LOCK:
            _ACTIVE.add(emu)
        steal_before = steal_ms()
        raw: dict[str, Any] = dict(emu.run())
        steal_after = steal_ms()
        selfcheck = json.loads(raw.pop("selfcheck"))
        if steal_before is not None and steal_after is not None:
            selfcheck["steal_ms"] = steal_after - steal_before
        if plan.veth is None:
            selfcheck["host_tx_drops"] = _host_tx_drops(plan.hosts)
        else:
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
        with signals_deferred():
            if emu is not None:
                with _ACTIVE_LOCK:
                    _ACTIVE.discard(emu)
                emu.close()
            for name in plan.netns:
                delete_netns(name)


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
