"""What resolving a scenario produces (:meth:`ccfair.spec.scenario.Scenario.resolve`): one
:class:`LinkInfo` per link and one :class:`FlowInfo` per flow, the engine's input
(crates/ccfair-sim/src/spec.rs ``RunSpec``: integers in ns, bit/s and packets, names replaced
by indices, routes as channel ids) and the normalised user-level record, converted from them,
held together in a :class:`Resolved`.

Example:
    >>> from ccfair.spec.shapes import dumbbell
    >>> r = dumbbell(2, "reno").resolve()
    >>> r.flow("flow1").node_path, r.engine_spec["flows"][0]["path"]
    (['h1', 's1', 's2', 'h3'], [0, 4, 6])
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ccfair.spec import queues
from ccfair.spec.identity import IdentityJson
from ccfair.spec.parts import Buffer
from ccfair.testbeds import Host
from ccfair.units import format_duration, format_rate, format_size

if TYPE_CHECKING:
    from ccfair.spec.scenario import Scenario

__all__ = [
    "DERIVED_FLOW_KEYS",
    "DERIVED_LINK_KEYS",
    "FlowInfo",
    "LinkInfo",
    "Resolved",
    "to_engine_spec",
    "to_normalized",
]


@dataclass(frozen=True)
class LinkInfo:
    """A resolved link. Channel ``2*index`` carries a->b, ``2*index + 1`` b->a."""

    index: int
    name: str
    a: str
    b: str
    rate_bps: int
    delay_ns: int
    buffer_pkts: int
    #: Buffer as a multiple of the reference flow's BDP (None without a reference).
    buffer_bdp: float | None
    #: BDP in packets of the reference flow (None without a reference).
    bdp_pkts: float | None
    reference: str | None
    loss_ab: float
    loss_ba: float
    #: The queue: "droptail", "netem" or a queue discipline (:data:`ccfair.spec.queues.QUEUES`).
    queue: str = "droptail"
    # Keyword-only: what the engine's input and the normalised record need besides.
    #: Indices of the nodes ``a`` and ``b``.
    a_index: int = field(kw_only=True)
    b_index: int = field(kw_only=True)
    #: The buffer as the scenario writes it.
    buffer: Buffer = field(kw_only=True, repr=False)
    #: A queue discipline's options as the engine takes them, every default filled in
    #: (None for drop-tail and netem).
    qdisc: dict[str, Any] | None = field(default=None, kw_only=True, repr=False)

    @property
    def channels(self) -> tuple[int, int]:
        """(a->b channel, b->a channel)."""
        return (2 * self.index, 2 * self.index + 1)


@dataclass(frozen=True)
class FlowInfo:
    """A resolved flow: its route and the quantities the BDP convention uses."""

    index: int
    name: str
    src: str
    dst: str
    cca: str
    #: Nodes visited by data, src first.
    node_path: list[str]
    #: Channels crossed by data (src to dst) and by ACKs (dst to src).
    path: list[int]
    ack_path: list[int]
    #: Round-trip propagation time: one-way delays of the data path plus the ACK path.
    base_rtt_ns: int
    #: Lowest link rate on the data path.
    bottleneck_rate_bps: int
    #: bottleneck rate x base RTT in 1500-byte packets.
    bdp_pkts: float
    # Keyword-only: what the engine's input and the normalised record need besides.
    #: Indices of the nodes ``src`` and ``dst``.
    src_index: int = field(kw_only=True)
    dst_index: int = field(kw_only=True)
    #: Algorithm parameters and TCP options, complete as the Rust core normalises them.
    cca_params: dict[str, Any] = field(kw_only=True, repr=False)
    tcp: dict[str, Any] = field(kw_only=True, repr=False)
    start_ns: int = field(kw_only=True)
    start_jitter_ns: int = field(kw_only=True)
    #: None: the flow runs to the end (``stop_ns``), or sends without end (``size_bytes``).
    stop_ns: int | None = field(kw_only=True)
    size_bytes: int | None = field(kw_only=True)


@dataclass(frozen=True)
class Resolved:
    """The result of :meth:`Scenario.resolve`.

    Attributes:
        scenario: the scenario resolved.
        nodes: node names; a node's index is its position.
        links, flows: per-link and per-flow resolved information.
        engine_spec: the engine's ``RunSpec`` as a JSON-ready dict.
        normalized: the user-level record for provenance: every field with defaults filled
            in, plus derived values (per link ``buffer_pkts``, ``buffer_bdp``, ``bdp_pkts``;
            per flow ``base_rtt``, ``bdp_pkts``).
    """

    scenario: Scenario
    nodes: list[str]
    links: list[LinkInfo]
    flows: list[FlowInfo]
    engine_spec: dict[str, Any]
    normalized: dict[str, Any] = field(repr=False)

    @property
    def engine_json(self) -> str:
        """``engine_spec`` as compact JSON with sorted keys (stable across runs)."""
        return json.dumps(self.engine_spec, sort_keys=True, separators=(",", ":"))

    @functools.cached_property
    def identity_json(self) -> IdentityJson:
        """What names the run (:class:`ccfair.spec.identity.IdentityJson`), serialised once
        for its run id and its point key."""
        return IdentityJson(self.normalized)

    def link(self, name: str) -> LinkInfo:
        """The link called ``name`` (KeyError if there is none).

        Example:
            >>> from ccfair.spec.shapes import dumbbell
            >>> dumbbell(2, "reno").resolve().link("bottleneck").channels
            (4, 5)
        """
        for info in self.links:
            if info.name == name:
                return info
        raise KeyError(name)

    def flow(self, name: str) -> FlowInfo:
        """The flow called ``name`` (KeyError if there is none).

        Example:
            >>> from ccfair.spec.shapes import dumbbell
            >>> dumbbell(2, "reno").resolve().flow("flow2").path
            [2, 4, 8]
        """
        for info in self.flows:
            if info.name == name:
                return info
        raise KeyError(name)


#: Keys of the normalised record derived by resolution (dropped to rebuild a scenario).
DERIVED_LINK_KEYS = frozenset({"buffer_pkts", "buffer_bdp", "bdp_pkts"})
DERIVED_FLOW_KEYS = frozenset({"base_rtt", "bdp_pkts"})

# --------------------------------------------------------------------------------------------
# Conversions: the engine's input and the normalised record


def to_engine_spec(
    sc: Scenario,
    window: tuple[int, int],
    nodes: list[str],
    links: list[LinkInfo],
    flows: list[FlowInfo],
) -> dict[str, Any]:
    """The engine's ``RunSpec`` (crates/ccfair-sim/src/spec.rs) as a JSON-ready dict."""
    return {
        "duration_ns": sc.duration,
        "seed": sc.seed,
        "sample_interval_ns": sc.sample_interval,
        "measure_start_ns": window[0],
        "measure_end_ns": window[1],
        "nodes": nodes,
        "links": [_engine_link(info) for info in links],
        "flows": [_engine_flow(info) for info in flows],
        # Per-packet traces are a diagnostic a run asks for (ccfair.run(trace=...)).
        "trace_flows": [],
    }


def _engine_link(info: LinkInfo) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": info.name,
        "a": info.a_index,
        "b": info.b_index,
        "rate_bps": info.rate_bps,
        "delay_ns": info.delay_ns,
        "buffer_pkts": info.buffer_pkts,
        "loss_ab": info.loss_ab,
        "loss_ba": info.loss_ba,
    }
    # Left out at its default, as the engine's serde default (and older engine inputs) have it.
    if info.queue != "droptail":
        out["queue"] = info.queue
    if info.qdisc is not None:
        out["qdisc"] = info.qdisc
    return out


def _engine_flow(info: FlowInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "src": info.src_index,
        "dst": info.dst_index,
        "path": info.path,
        "ack_path": info.ack_path,
        "cca": info.cca,
        "cca_params": info.cca_params,
        "start_ns": info.start_ns,
        "start_jitter_ns": info.start_jitter_ns,
        "stop_ns": info.stop_ns,
        "size_bytes": info.size_bytes,
        "tcp": info.tcp,
    }


def to_normalized(
    sc: Scenario,
    window: tuple[int, int],
    nodes: list[str],
    tcp_default: dict[str, Any],
    links: list[LinkInfo],
    flows: list[FlowInfo],
    host: Host,
) -> dict[str, Any]:
    """The user-level record for provenance (:attr:`Resolved.normalized`)."""
    normalized = {
        "name": sc.name,
        "duration": format_duration(sc.duration),
        "seed": sc.seed,
        "sample_interval": format_duration(sc.sample_interval),
        "measure": {"start": format_duration(window[0]), "end": format_duration(window[1])},
        "nodes": list(nodes),
        "tcp": tcp_default,
        "links": [_link_record(info, host) for info in links],
        "flows": [_flow_record(info) for info in flows],
    }
    # Always recorded: a run says which hosts it modelled (None: idealised, no kernel), and
    # runs of earlier versions, whose default was the idealised host, never share its id.
    normalized["testbed"] = host.testbed.name
    normalized["kernel"] = host.kernel.name if host.kernel is not None else None
    return normalized


def _link_record(info: LinkInfo, host: Host) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": info.name,
        "between": [info.a, info.b],
        "rate": format_rate(info.rate_bps),
        "delay": format_duration(info.delay_ns),
        "buffer": info.buffer.model_dump(),
        "loss": {"forward": info.loss_ab, "reverse": info.loss_ba},
        "buffer_pkts": info.buffer_pkts,
        "buffer_bdp": info.buffer_bdp,
        "bdp_pkts": info.bdp_pkts,
    }
    # At its default the queue is left out, so that run ids of links without it stay what
    # they were; under a testbed that sets it, the record keeps it (a link's own "droptail"
    # must survive Scenario.from_normalized).
    if info.queue != "droptail" or host.testbed.queue is not None:
        out["queue"] = info.queue
    # Only links with a queue discipline have options, so the records of other links (and
    # their run ids) stay what they were.
    if info.qdisc is not None:
        out["qdisc"] = queues.from_engine(info.queue, info.qdisc)
    return out


def _flow_record(info: FlowInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "src": info.src,
        "dst": info.dst,
        "cca": info.cca,
        "cca_params": info.cca_params,
        "start": format_duration(info.start_ns),
        "start_jitter": format_duration(info.start_jitter_ns),
        "stop": None if info.stop_ns is None else format_duration(info.stop_ns),
        "size": None if info.size_bytes is None else format_size(info.size_bytes),
        "path": list(info.node_path),
        "tcp": info.tcp,
        "base_rtt": format_duration(info.base_rtt_ns),
        "bdp_pkts": info.bdp_pkts,
    }
