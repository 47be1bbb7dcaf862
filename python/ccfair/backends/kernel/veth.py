"""The kernel backend's veth data path: the links as veth pairs with tc qdiscs, as the
emulators the published studies used build them (docs/kernel.md, "The veth data path").

Every node of the scenario becomes a network namespace (hosts as on the TUN path, routers
too); every link becomes a veth pair between its two nodes' namespaces. Each direction of a
link gets, on the sending end's device:

- ``queue = "netem"``: Mininet's ``TCLink`` (mininet/link.py, ``TCIntf.bwCmds`` and
  ``delayCmds``): an HTB class at the link rate with a netem child ``delay D limit N``, so
  the limit counts the packets in the delay line (the simulator's netem queue,
  crates/ccfair-sim/src/netem.rs).
- ``queue = "droptail"``: a ``pfifo limit N`` under an HTB class at the link rate, and, when
  the link has a delay, a netem qdisc above them that holds only the delay (its limit is
  far above what the delay line holds). A constant delay before a FIFO queue shifts every
  arrival by the same time, so drops and departures are those of the queue followed by the
  delay: the simulator's drop-tail channel.
- ``queue = "codel"``, ``"fq_codel"``, ``"pie"`` or ``"red"``: Linux's own qdisc of that name
  in place of the pfifo, with the link's options as tc's (:func:`discipline_args`); a kernel
  without it is refused by name (:func:`check_scenario`).

Segmentation offload is capped at one segment per skb on every device
(``gso_max_segs 1``), so a qdisc's packet limit counts packets, not 64 KB super-packets.
Routes are per destination host (``ip route add H/32 via ...``); a scenario whose flows
need two routes to one host from one node cannot run here.

The kernel forwards the packets; ccfair's emulator runs only the traffic (the same sender
and receiver threads as on the TUN path). What a qdisc counts (sent, dropped) fills the
``link_summary`` table over the whole run; there are no link samples and no packet traces.

Example:
    >>> device_name("0a1b2c3d", 7, "a")
    'cv0a1b2c3d7a'
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ccfair.backends.base import ResolvedScenario
from ccfair.backends.kernel.host import KernelError, safe_name
from ccfair.errors import SpecError

__all__ = [
    "DISCIPLINES",
    "NETEM_MISSING",
    "VethPlan",
    "check_scenario",
    "device_name",
    "discipline_args",
    "qdisc_missing",
    "plan",
    "setup",
]

#: What a run or a test says when this kernel lacks netem.
NETEM_MISSING = "this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM)"

#: The queue disciplines a link's ``queue`` may name, each Linux's qdisc of the same name.
DISCIPLINES = ("codel", "fq_codel", "pie", "red")


def qdisc_missing(kind: str) -> str:
    """What a run or a test says when this kernel lacks the qdisc ``kind``.

    Example:
        >>> qdisc_missing("fq_codel")
        'this kernel has no fq_codel qdisc (CONFIG_NET_SCH_FQ_CODEL)'
    """
    return f"this kernel has no {kind} qdisc (CONFIG_NET_SCH_{kind.upper()})"


#: Link addresses: link l's two ends are 10.201.0.0/16 + 2l and 2l + 1 (a /31 each).
LINK_NET = (10, 201)
#: Packets a delay-only netem stage may hold: far above any delay line ccfair's limits allow.
DELAY_STAGE_LIMIT = 1_000_000


def device_name(tag: str, link: int, end: str) -> str:
    """The veth device of ``link`` at its ``end`` ("a" or "b"): ``cv<tag><link><end>``, at
    most 15 bytes for the 8-hex-digit tag and up to 4-digit link indices."""
    return f"cv{tag}{link}{end}"


def _link_addr(link: int, end: str) -> str:
    n = 2 * link + (1 if end == "b" else 0)
    return f"{LINK_NET[0]}.{LINK_NET[1]}.{n >> 8}.{n & 255}"


def _channel_ends(spec: Mapping[str, Any], ch: int) -> tuple[int, int, str, str]:
    """(from node, to node, from end, to end) of channel ``ch`` (2l = link l a->b)."""
    link = spec["links"][ch // 2]
    if ch % 2 == 0:
        return link["a"], link["b"], "a", "b"
    return link["b"], link["a"], "b", "a"


def _needs_netem(link: Mapping[str, Any]) -> bool:
    return (
        link.get("queue", "droptail") == "netem"
        or link["delay_ns"] > 0
        or link.get("loss_ab", 0.0) > 0
        or link.get("loss_ba", 0.0) > 0
    )


def check_scenario(
    resolved: ResolvedScenario,
    *,
    netem: bool,
    engine_spec: Mapping[str, Any] | None = None,
    have_qdisc: Callable[[str], bool] | None = None,
) -> None:
    """Raise :class:`SpecError` if the veth data path cannot run ``resolved``: per-packet
    traces, random loss on a link whose queue is not netem (netem loses packets when
    offered, the drop-tail model on the wire), links that need netem on a kernel without
    it, a queue discipline this kernel lacks (``have_qdisc(kind)`` says; None: all there)
    or an option of one that tc cannot set, more than 10,000 links, or flows that need two
    routes to one host from one node. ``engine_spec`` is what will run, when it differs
    from the resolved one (a run that asks for a trace).

    Example:
        >>> from ccfair.spec.shapes import dumbbell
        >>> check_scenario(dumbbell(1, "reno").resolve(), netem=False)
        Traceback (most recent call last):
        ...
        ccfair.errors.SpecError: links[0].delay: "1ms" needs netem on the veth data path, and \
this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM)
    """
    spec = resolved.engine_spec if engine_spec is None else engine_spec
    if spec.get("trace_flows"):
        raise SpecError(
            "trace",
            [spec["flows"][i]["name"] for i in spec["trace_flows"]],
            "is not available on the veth data path (no forwarder sees the packets)",
        )
    if len(spec["links"]) > 10_000:
        raise SpecError("links", len(spec["links"]), "the veth data path supports 10,000 links")
    for i, link in enumerate(spec["links"]):
        queue = link.get("queue", "droptail")
        for d in ("ab", "ba"):
            if queue != "netem" and link.get(f"loss_{d}", 0.0) > 0:
                raise SpecError(
                    f"links[{i}].loss",
                    link[f"loss_{d}"],
                    f"random loss on a {'drop-tail' if queue == 'droptail' else queue} link is "
                    "not available on the veth data path "
                    '(netem loses a packet when offered; use queue = "netem")',
                )
        if queue in DISCIPLINES:
            if have_qdisc is not None and not have_qdisc(queue):
                raise SpecError(
                    f"links[{i}].queue",
                    queue,
                    f"needs Linux's {queue} qdisc on the veth data path, and "
                    f'{qdisc_missing(queue)}; the TUN path (backend = "kernel") runs the '
                    "same discipline in ccfair's forwarder",
                )
            _check_tc_options(i, queue, link.get("qdisc") or {})
        if not netem and _needs_netem(link):
            what = "queue" if queue == "netem" else "delay" if link["delay_ns"] else "loss"
            value = {
                "queue": "netem",
                "delay": f"{link['delay_ns'] / 1e6:g}ms",
                "loss": link.get("loss_ab") or link.get("loss_ba"),
            }[what]
            raise SpecError(
                f"links[{i}].{what}",
                value,
                f"needs netem on the veth data path, and {NETEM_MISSING}",
            )
    _routes(spec)


#: Options of ccfair's disciplines that tc cannot set, with the value Linux has: the
#: devices' MTU gives ``psched_mtu`` 1514 B (1500 + the Ethernet header); Linux hashes
#: flows with a random key; PIE's burst allowance is fixed by pie_vars_init.
_LINUX_ONLY: dict[str, dict[str, Any]] = {
    "codel": {"mtu_bytes": 1514},
    "fq_codel": {"mtu_bytes": 1514, "hash": "perturbed"},
    "pie": {"mtu_bytes": 1514, "burst_allowance_ns": 150_000_000},
    "red": {},
}

#: The spec's names of those options (docs/spec.md, "Queue disciplines").
_SPEC_NAME = {"mtu_bytes": "mtu", "hash": "hash", "burst_allowance_ns": "burst_allowance"}


def _check_tc_options(i: int, queue: str, qdisc: Mapping[str, Any]) -> None:
    for key, linux in _LINUX_ONLY[queue].items():
        if key in qdisc and qdisc[key] != linux:
            raise SpecError(
                f"links[{i}].qdisc.{_SPEC_NAME[key]}",
                qdisc[key],
                f"cannot be set on Linux's {queue} qdisc (the veth data path has Linux's "
                f'{linux!r}); the TUN path (backend = "kernel") takes it',
            )


def _us(ns: int) -> str:
    """A time for tc, in microseconds (tc's resolution for these qdiscs' times)."""
    return f"{round(ns / 1e3)}us"


def discipline_args(link: Mapping[str, Any]) -> str:
    """tc's arguments for Linux's own qdisc of the link's discipline, from the engine's
    ``qdisc`` table and the link's buffer (the packet limit; RED's byte limit by default)
    and rate (RED's ``bandwidth`` by default). Options tc would default otherwise are
    written out, so that Linux runs what the simulator runs.

    Example:
        >>> discipline_args({"queue": "codel", "buffer_pkts": 1000, "rate_bps": 50_000_000,
        ...     "qdisc": {"target_ns": 5_000_000, "interval_ns": 100_000_000, "ecn": True,
        ...               "ce_threshold_ns": None, "mtu_bytes": 1514}})
        'codel limit 1000 target 5000us interval 100000us ecn'
    """
    queue = link["queue"]
    q = link.get("qdisc") or {}
    n = link["buffer_pkts"]

    def flag(on: bool, name: str, off: str) -> str:
        return name if on else off

    if queue in ("codel", "fq_codel"):
        args = [queue, f"limit {n}"]
        if queue == "fq_codel":
            args += [f"flows {q['flows']}"]
        args += [f"target {_us(q['target_ns'])}", f"interval {_us(q['interval_ns'])}"]
        if queue == "fq_codel":
            args += [
                f"quantum {q['quantum_bytes']}",
                f"memory_limit {q['memory_limit_bytes']}",
                f"drop_batch {q['drop_batch_pkts']}",
            ]
        args.append(flag(q["ecn"], "ecn", "noecn"))
        if q.get("ce_threshold_ns") is not None:
            args.append(f"ce_threshold {_us(q['ce_threshold_ns'])}")
        return " ".join(args)
    if queue == "pie":
        return " ".join(
            [
                "pie",
                f"limit {n}",
                f"target {_us(q['target_ns'])}",
                f"tupdate {_us(q['tupdate_ns'])}",
                f"alpha {q['alpha_16ths']}",
                f"beta {q['beta_16ths']}",
                flag(q["ecn"], "ecn", "noecn"),
                flag(q["bytemode"], "bytemode", "nobytemode"),
                flag(q["dq_rate_estimator"], "dq_rate_estimator", "no_dq_rate_estimator"),
            ]
        )
    if queue == "red":
        limit = q.get("limit_bytes") or n * 1500
        bandwidth = q.get("bandwidth_bps") or link["rate_bps"]
        args = ["red", f"limit {limit}"]
        for key, name in (("min_bytes", "min"), ("max_bytes", "max")):
            if q.get(key) is not None:
                args.append(f"{name} {q[key]}")
        args.append(f"avpkt {q['avpkt_bytes']}")
        if q.get("burst_pkts") is not None:
            args.append(f"burst {q['burst_pkts']}")
        args += [f"probability {q['probability']!r}", f"bandwidth {bandwidth}bit"]
        args += [name for name in ("ecn", "harddrop", "adaptive") if q.get(name)]
        return " ".join(args)
    raise ValueError(f"{queue!r} is not a queue discipline")  # pragma: no cover


def _routes(spec: Mapping[str, Any]) -> dict[tuple[int, int], int]:
    """(node, destination host) -> the channel that node sends on, from every flow's data
    path (to its dst) and ACK path (to its src). Refuses two channels for one pair."""
    routes: dict[tuple[int, int], int] = {}
    for i, f in enumerate(spec["flows"]):
        for what, path, dest in (
            ("path", f["path"], f["dst"]),
            ("ack_path", f["ack_path"], f["src"]),
        ):
            for ch in path:
                node = _channel_ends(spec, ch)[0]
                have = routes.setdefault((node, dest), ch)
                if have != ch:
                    raise SpecError(
                        f"flows[{i}].{what}",
                        [spec["links"][c // 2]["name"] for c in path],
                        f"leaves {spec['nodes'][node]} towards {spec['nodes'][dest]} over link "
                        f"{spec['links'][ch // 2]['name']} where another flow uses "
                        f"{spec['links'][have // 2]['name']}; the veth data path routes by "
                        "destination host",
                    )
    return routes


@dataclass
class VethPlan:
    """What :func:`setup` creates, in order: extra namespaces (routers), veth pairs, then
    per namespace an ``ip -batch`` script, sysctls and a ``tc -batch`` script."""

    netns: dict[int, str]
    routers: list[str]
    pairs: list[tuple[str, str, str, str]] = field(default_factory=list)
    ip: dict[str, list[str]] = field(default_factory=dict)
    sysctls: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    tc: dict[str, list[str]] = field(default_factory=dict)
    #: Per channel: (namespace, device) whose qdiscs count its packets.
    channels: list[tuple[str, str]] = field(default_factory=list)


def _rate(rate_bps: int) -> str:
    return f"{rate_bps}bit"


def _qdiscs(dev: str, link: Mapping[str, Any], loss: float) -> list[str]:
    """The tc commands of one link direction on device ``dev``."""
    rate = _rate(link["rate_bps"])
    delay = f"{link['delay_ns'] / 1e3:.0f}us"
    loss_opt = f" loss {loss * 100:.6g}%" if loss > 0 else ""
    # quantum: one full packet; the class is alone, so it only silences HTB's warning.
    htb_class = f"htb rate {rate} ceil {rate} quantum 1514"
    # The root's size table removes the Ethernet header from every length the qdiscs see,
    # so rates and byte counts are of IP packets, as the simulator's links count them.
    stab = "stab overhead -14"
    if link.get("queue", "droptail") == "netem":
        return [
            f"qdisc add dev {dev} root handle 1: {stab} htb default 1",
            f"class add dev {dev} parent 1: classid 1:1 {htb_class}",
            f"qdisc add dev {dev} parent 1:1 handle 10: netem delay {delay} "
            f"limit {link['buffer_pkts']}{loss_opt}",
        ]
    # The link's queue: a pfifo of the buffer, or Linux's own queue discipline.
    leaf = (
        discipline_args(link)
        if link.get("queue") in DISCIPLINES
        else f"pfifo limit {link['buffer_pkts']}"
    )
    if link["delay_ns"] == 0:
        return [
            f"qdisc add dev {dev} root handle 1: {stab} htb default 1",
            f"class add dev {dev} parent 1: classid 1:1 {htb_class}",
            f"qdisc add dev {dev} parent 1:1 handle 10: {leaf}",
        ]
    return [
        f"qdisc add dev {dev} root handle 5: {stab} netem delay {delay} limit {DELAY_STAGE_LIMIT}",
        f"qdisc add dev {dev} parent 5:1 handle 1: htb default 1",
        f"class add dev {dev} parent 1: classid 1:1 {htb_class}",
        f"qdisc add dev {dev} parent 1:1 handle 10: {leaf}",
    ]


def plan(spec: Mapping[str, Any], tag: str, hosts: list[dict[str, Any]]) -> VethPlan:
    """The namespaces, devices, addresses, routes and qdiscs of ``spec``. ``hosts`` are the
    TUN path's host entries (:func:`ccfair.backends.kernel.run._plan`); each gets its first
    link's device as ``dev``, and routers get namespaces ``ccf-<tag>-<i>-<node>`` after the
    hosts'."""
    node_netns = {h["node"]: h["netns"] for h in hosts}
    routers = []
    for node, name in enumerate(spec["nodes"]):
        if node not in node_netns:
            i = len(node_netns)
            node_netns[node] = f"ccf-{tag}-{i}-{safe_name(name)}"
            routers.append(node_netns[node])
    p = VethPlan(netns=node_netns, routers=routers)
    for ns in node_netns.values():
        p.ip[ns] = ["link set lo up"]
        p.tc[ns] = []
        p.sysctls[ns] = [
            ("net/ipv4/conf/all/rp_filter", "0"),
            ("net/ipv4/conf/default/rp_filter", "0"),
        ]
    first_dev: dict[int, str] = {}
    for li, link in enumerate(spec["links"]):
        ends = {"a": link["a"], "b": link["b"]}
        devs = {e: device_name(tag, li, e) for e in ends}
        p.pairs.append((devs["a"], node_netns[ends["a"]], devs["b"], node_netns[ends["b"]]))
        for e, node in ends.items():
            ns = node_netns[node]
            first_dev.setdefault(node, devs[e])
            p.ip[ns] += [
                f"link set dev {devs[e]} gso_max_segs 1 gso_max_size 1500",
                f"addr add {_link_addr(li, e)}/31 dev {devs[e]}",
                f"link set dev {devs[e]} up",
            ]
    for ch in range(2 * len(spec["links"])):
        src, _, e_from, _ = _channel_ends(spec, ch)
        link = spec["links"][ch // 2]
        dev = device_name(tag, ch // 2, e_from)
        loss = link.get("loss_ab" if ch % 2 == 0 else "loss_ba", 0.0)
        p.tc[node_netns[src]] += _qdiscs(dev, link, loss)
        p.channels.append((node_netns[src], dev))
    for h in hosts:
        h["dev"] = first_dev.get(h["node"], "lo")
        p.ip[h["netns"]].append(f"addr add {h['addr']}/32 dev {h['dev']}")
    _add_routes(p, spec, tag, hosts)
    _add_forwarding(p, spec)
    return p


def _add_routes(
    p: VethPlan, spec: Mapping[str, Any], tag: str, hosts: list[dict[str, Any]]
) -> None:
    """Each node's route to each destination host its flows' paths reach, over the link
    the path leaves by; a host's own routes carry its address and route options."""
    node_netns = p.netns
    by_node = {h["node"]: h for h in hosts}
    for (node, dest), ch in sorted(_routes(spec).items()):
        _, _, e_from, e_to = _channel_ends(spec, ch)
        li = ch // 2
        extra = ""
        if node in by_node:
            options = " ".join(by_node[node]["route_options"])
            extra = f" src {by_node[node]['addr']} {options}"
        p.ip[node_netns[node]].append(
            f"route add {by_node[dest]['addr']}/32 via {_link_addr(li, e_to)} "
            f"dev {device_name(tag, li, e_from)}{extra}".rstrip()
        )


def _add_forwarding(p: VethPlan, spec: Mapping[str, Any]) -> None:
    """IP forwarding on the nodes that need it: a node forwards when it sends on a path it
    does not start."""
    forwarding = {
        _channel_ends(spec, ch)[0]
        for f in spec["flows"]
        for path in (f["path"], f["ack_path"])
        for ch in path[1:]
    }
    for node in sorted(forwarding):
        p.sysctls[p.netns[node]].append(("net/ipv4/ip_forward", "1"))


def _run(argv: list[str], script: str | None = None) -> None:
    proc = subprocess.run(argv, input=script, capture_output=True, text=True)
    if proc.returncode != 0:
        err = proc.stderr.strip() or f"exit status {proc.returncode}"
        if "qdisc kind is unknown" in err:
            kinds = [k for k in ("netem", *DISCIPLINES) if f" {k} " in f" {script or ''} "]
            if kinds:
                err = "; or ".join(qdisc_missing(k) for k in kinds)
        raise KernelError(f"{' '.join(argv[:3])}: {err}")


def setup(p: VethPlan) -> None:
    """Create what ``p`` describes; the namespaces of the hosts and routers exist already
    (the caller creates and removes them, :func:`ccfair.backends.kernel.run.run_kernel`).
    Devices live in those namespaces and vanish with them."""
    for dev_a, ns_a, dev_b, ns_b in p.pairs:
        _run(
            [
                "ip",
                "link",
                "add",
                dev_a,
                "netns",
                ns_a,
                "type",
                "veth",
                "peer",
                "name",
                dev_b,
                "netns",
                ns_b,
            ]
        )
    for ns, lines in p.ip.items():
        _run(["ip", "-n", ns, "-batch", "-"], "\n".join(lines) + "\n")
    for ns, pairs in p.sysctls.items():
        # /proc/sys/net belongs to the namespace of the process that opens it.
        script = "".join(f"echo {v} > /proc/sys/{k}\n" for k, v in pairs)
        _run(["ip", "netns", "exec", ns, "sh", "-e", "-c", script])
    for ns, lines in p.tc.items():
        if lines:
            _run(["tc", "-n", ns, "-batch", "-"], "\n".join(lines) + "\n")


def qdisc_counts(p: VethPlan) -> list[dict[str, int]]:
    """Per channel what its qdiscs counted (:func:`counts_of` of ``tc -s -j qdisc show``)."""
    out = []
    for ns, dev in p.channels:
        proc = subprocess.run(
            ["tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", dev],
            capture_output=True,
            text=True,
        )
        try:
            qdiscs = json.loads(proc.stdout or "[]")
        except ValueError:
            qdiscs = []
        out.append(counts_of(qdiscs))
    return out


def counts_of(qdiscs: list[dict[str, Any]]) -> dict[str, int]:
    """Packets and bytes the root qdisc sent, and the drops and the packets held at the end
    of the link's queue (handle 10:, the pfifo, Mininet's netem or the queue discipline).
    Only the queue's: a delay stage above it (netem with a child) counts its child's drops
    as its own (sch_netem.c, ``netem_dequeue``), and the packets in its delay line have not
    reached the queue yet. A queue discipline's own statistics (tc's ``xstats``, printed by
    tc's q_codel.c, q_fq_codel.c, q_pie.c and q_red.c) split its drops and count its marks:
    ``limit_drops`` (over its limit), ``marks``, ``ce_marks`` (CoDel's ``ce_threshold``),
    ``new_flows`` and ``overmemory_drops`` (fq_codel), each -1 when the qdisc has none.

    Example:
        >>> counts_of([
        ...     {"handle": "5:", "root": True, "packets": 90, "bytes": 135000, "drops": 10,
        ...      "qlen": 3},
        ...     {"handle": "1:", "packets": 90, "bytes": 135000, "drops": 0, "qlen": 0},
        ...     {"handle": "10:", "packets": 90, "bytes": 135000, "drops": 10, "qlen": 1}])["drops"]
        10
        >>> c = counts_of([{"handle": "10:", "kind": "codel", "root": True, "packets": 9,
        ...     "bytes": 13500, "drops": 4, "qlen": 0, "ecn_mark": 7, "drop_overlimit": 1}])
        >>> c["limit_drops"], c["marks"], c["new_flows"]
        (1, 7, -1)
    """
    counts = {"tx_pkts": 0, "tx_bytes": 0, "drops": 0, "backlog_pkts": 0}
    counts.update(dict.fromkeys(_XSTATS, -1))
    with contextlib.suppress(ValueError, TypeError, KeyError):
        for q in qdiscs:
            if q.get("root"):
                counts["tx_pkts"] = int(q["packets"])
                counts["tx_bytes"] = int(q["bytes"])
            if q.get("handle") == "10:":
                counts["drops"] = int(q["drops"])
                counts["backlog_pkts"] = int(q["qlen"])
                kind = q.get("kind")
                for name, keys in _XSTATS.items():
                    for key, kinds in keys:
                        if key in q and (kinds is None or kind in kinds):
                            counts[name] = int(q[key])
                if kind in DISCIPLINES:
                    for name in ("limit_drops", "marks", "ce_marks"):
                        counts[name] = max(counts[name], 0)
    return counts


#: A queue discipline's statistics in ``tc -s -j`` (tc's print_xstats of each qdisc): ours
#: -> [(tc's key, the qdisc kinds it counts for, None: any)].
_XSTATS: dict[str, list[tuple[str, tuple[str, ...] | None]]] = {
    # Drops over the packet/byte limit: CoDel's and fq_codel's drop_overlimit, PIE's
    # overlimit (pie_qdisc_enqueue's full queue), RED's pdrop (its bfifo child full).
    "limit_drops": [
        ("drop_overlimit", ("codel", "fq_codel")),
        ("overlimit", ("pie",)),
        ("pdrop", ("red",)),
    ],
    # CE marks instead of drops: ecn_mark (CoDel, fq_codel, PIE), RED's marked.
    "marks": [("ecn_mark", ("codel", "fq_codel", "pie")), ("marked", ("red",))],
    "ce_marks": [("ce_mark", ("codel", "fq_codel"))],
    "new_flows": [("new_flow_count", ("fq_codel",))],
    "overmemory_drops": [("drop_overmemory", ("fq_codel",))],
}


def fill_link_summary(
    raw: dict[str, tuple[str, Any]], counts: list[dict[str, int]], spec: Mapping[str, Any]
) -> None:
    """Fill the engine-format ``link_summary`` columns (one row per channel, in order) with
    what the qdiscs counted over the whole run (:func:`qdisc_counts`). netem counts its
    random losses among its drops, so ``drop_random_pkts`` stays 0 and ``drop_queue_pkts``
    holds both."""

    def u64(values: list[int]) -> tuple[str, bytes]:
        return ("u64", np.asarray(values, dtype="<u8").tobytes())

    def f64(values: list[float]) -> tuple[str, bytes]:
        return ("f64", np.asarray(values, dtype="<f8").tobytes())

    duration_s = spec["duration_ns"] / 1e9
    rates = [spec["links"][ch // 2]["rate_bps"] for ch in range(len(counts))]
    arrivals = [c["tx_pkts"] + c["drops"] + c["backlog_pkts"] for c in counts]
    raw["tx_pkts"] = u64([c["tx_pkts"] for c in counts])
    raw["tx_bytes"] = u64([c["tx_bytes"] for c in counts])
    raw["drop_queue_pkts"] = u64([c["drops"] for c in counts])
    raw["arrival_pkts"] = u64(arrivals)
    raw["loss_frac"] = f64(
        [c["drops"] / a if a else float("nan") for c, a in zip(counts, arrivals, strict=True)]
    )
    raw["utilisation_frac"] = f64(
        [c["tx_bytes"] * 8 / (r * duration_s) for c, r in zip(counts, rates, strict=True)]
    )
    # A queue discipline splits its drops into those over its limit and its own decisions,
    # and counts its marks; Linux keeps no sojourn distribution (the sojourn columns stay
    # NaN on the veth path).
    queues = [spec["links"][ch // 2].get("queue", "droptail") for ch in range(len(counts))]
    if any(q in DISCIPLINES for q in queues):
        limit = [c["drops"] if c["limit_drops"] < 0 else c["limit_drops"] for c in counts]
        raw["drop_queue_pkts"] = u64(limit)
        raw["drop_aqm_pkts"] = u64([c["drops"] - n for c, n in zip(counts, limit, strict=True)])
        raw["mark_aqm_pkts"] = u64([max(c["marks"], 0) for c in counts])
        raw["mark_ce_threshold_pkts"] = u64([max(c["ce_marks"], 0) for c in counts])
        raw["fq_new_flow_count"] = f64(
            [
                float(c["new_flows"]) if q == "fq_codel" else float("nan")
                for c, q in zip(counts, queues, strict=True)
            ]
        )
        raw["fq_drop_overmemory_pkts"] = f64(
            [
                float(max(c["overmemory_drops"], 0)) if q == "fq_codel" else float("nan")
                for c, q in zip(counts, queues, strict=True)
            ]
        )
