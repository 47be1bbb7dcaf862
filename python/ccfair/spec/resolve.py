"""Resolution: a scenario checked as a whole and resolved, one concern at a time (the run
window, the nodes, the links' ends, the TCP defaults, the flows with their routes, then the
links' buffers), into a :class:`~ccfair.spec.resolved.Resolved`.

Each step may raise :class:`~ccfair.errors.SpecError` naming the field and quoting the value
as the user wrote it. Algorithm parameters and TCP options are normalised by the Rust core
(``ccfair._core.normalize_cca``, ``normalize_tcp``), once per distinct set.

Example:
    >>> from ccfair.spec.shapes import dumbbell
    >>> r = resolve(dumbbell(2, "reno", bottleneck_delay="2ms"), raw=None)
    >>> r.link("bottleneck").buffer_pkts
    67
"""

from __future__ import annotations

import functools
import json
import re
import typing
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ccfair import _core
from ccfair.algorithms import names as algorithm_names
from ccfair.errors import SpecError, close_matches, format_path, show
from ccfair.spec import queues
from ccfair.spec.parts import (
    U32_MAX,
    Buffer,
    Flow,
    Measure,
)
from ccfair.spec.resolved import FlowInfo, LinkInfo, Resolved, to_engine_spec, to_normalized
from ccfair.spec.topology import Graph, ack_channels, bdp_packets, buffer_packets
from ccfair.testbeds import Host, resolve_host
from ccfair.units import format_duration, parse_duration

if TYPE_CHECKING:
    from ccfair.spec.scenario import Scenario

__all__ = ["resolve"]


def _lookup(raw: Any, loc: Sequence[str | int]) -> Any:
    """The value at ``loc`` in the user's input, or a sentinel if absent."""
    node = raw
    for part in loc:
        if isinstance(part, int) and isinstance(node, Sequence) and not isinstance(node, str):
            if not 0 <= part < len(node):
                return _MISSING
            node = node[part]
        elif isinstance(part, str) and isinstance(node, Mapping):
            if part not in node:
                return _MISSING
            node = node[part]
        else:
            return _MISSING
    return node


_MISSING = object()


def _did_you_mean(name: str, choices: Sequence[str]) -> str:
    hint = close_matches(name, choices)
    return f"; did you mean {show(hint[0])}?" if hint else ""


class _Resolver:
    """What the resolution steps share: the scenario, the user's input (to quote values as
    they were written) and, once :func:`_resolve_nodes` has run, the node names."""

    def __init__(self, sc: Scenario, raw: Mapping[str, Any] | None) -> None:
        self.sc = sc
        self.raw = raw
        self.nodes: list[str] = []
        self.node_index: dict[str, int] = {}
        # Options the Rust core normalised, by what they are and their JSON: the flows of
        # a scenario mostly share them (10,000 flows of a dumbbell, one normalisation).
        self.normalized: dict[tuple[str, str], dict[str, Any]] = {}
        # A flow that writes no options of its own gets the scenario's (testbed, kernel,
        # then `tcp`) and its algorithm's kernel version: normalised once per algorithm.
        self.plain_flow_options: dict[str, tuple[_SharedOptions, _SharedOptions]] = {}

    def shown(self, loc: Sequence[str | int], canonical: Any, parse: Any = None) -> Any:
        """The value to quote for ``loc``: as the user wrote it if we have their input and
        it still means the same, else the canonical form."""
        if self.raw is not None:
            written = _lookup(self.raw, loc)
            if written is not _MISSING:
                if parse is None:
                    return written
                try:
                    if parse(written) == parse(canonical):
                        return written
                except (TypeError, ValueError):
                    pass
        return canonical

    def fail(self, loc: Sequence[str | int], value: Any, message: str) -> typing.NoReturn:
        raise SpecError(format_path(loc), value, message)

    def dur(self, loc: Sequence[str | int], ns: int) -> Any:
        return self.shown(loc, format_duration(ns), parse_duration)

    def node(self, loc: Sequence[str | int], name: str) -> int:
        """The index of the node ``name`` written at ``loc``."""
        if name not in self.node_index:
            did = _did_you_mean(name, self.nodes)
            self.fail(loc, name, f"is not a node; nodes: {_names(self.nodes)}{did}")
        return self.node_index[name]


def _names(names: Sequence[str], limit: int = 20) -> str:
    if not names:
        return "none"
    shown_ = ", ".join(names[:limit])
    return shown_ + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _json_options(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, allow_nan=False)


def _json_copy(value: Any) -> Any:
    """A deep copy of a JSON value (dicts, lists, scalars), each flow's own.

    Example:
        >>> a = {"rmem": [1, 2, 3]}
        >>> b = _json_copy(a)
        >>> b["rmem"][0] = 9
        >>> a
        {'rmem': [1, 2, 3]}
    """
    # Scalars are copied in place, not by a call each (10,000 flows of ~20 options).
    if isinstance(value, dict):
        return {k: _json_copy(v) if isinstance(v, dict | list) else v for k, v in value.items()}
    if isinstance(value, list):
        return [_json_copy(v) if isinstance(v, dict | list) else v for v in value]
    return value


def _normalize_via_core(
    r: _Resolver,
    loc: tuple[str | int, ...],
    options: Mapping[str, Any],
    own: Mapping[str, Any],
    call: typing.Callable[[str], str],
    what: str,
) -> dict[str, Any]:
    """Normalise ``options`` with a Rust function. Its :class:`SpecError` names the culprit
    within the table (``beta``, ``rmem[2]``; crates/ccfair-cc/src/params.rs); placed at
    ``loc`` and quoting the value the user wrote (``own``: the keys written at ``loc``)."""
    for key, value in own.items():
        try:
            _json_options({key: value})
        except (TypeError, ValueError):
            r.fail((*loc, key), value, f"is not representable in JSON ({what})")
    options_json = _json_options(options)
    cached = r.normalized.get((what, options_json))
    if cached is not None:
        return dict(_json_copy(cached))
    try:
        normalized: dict[str, Any] = json.loads(call(options_json))
        r.normalized[(what, options_json)] = normalized
        return dict(_json_copy(normalized))
    except SpecError as exc:
        if not exc.path:
            raise SpecError(
                format_path(loc),
                dict(own),
                f"{exc.message} (got {show(dict(own))})",
                with_value=False,
            ) from None
        head = re.match(r"[^.\[]+", exc.path)
        top = head.group(0) if head else exc.path
        message = exc.message
        if top not in own:
            # A check across options (rcv_truesize_bytes against mss) failed on a default:
            # blame the option the user wrote, and say which check failed.
            written = [k for k in getattr(exc, "related", ()) if k in own]
            if written:
                message = f"{exc.path}: {message}"
                top = written[0]
        value = own.get(top, options.get(top))
        path = exc.path if exc.path.startswith(top) else top
        raise SpecError(
            format_path((*loc, path)),
            value,
            f"{message} ({what} {show(top)} = {show(value)})",
            with_value=False,
        ) from None


def resolve(sc: Scenario, raw: Mapping[str, Any] | None) -> Resolved:
    """Check the scenario and resolve it, one concern at a time (each step may raise
    :class:`SpecError`, in this order): the run window, the nodes, the links' ends, the TCP
    defaults, the flows with their routes, then the links' buffers (a buffer may be a
    multiple of a flow's BDP). One :class:`LinkInfo` per link and one :class:`FlowInfo` per
    flow hold everything resolved; the engine's input and the normalised record are
    converted from them."""
    r = _Resolver(sc, raw)
    window = _resolve_window(r)
    r.nodes = _resolve_nodes(r)
    r.node_index = {n: i for i, n in enumerate(r.nodes)}
    ends = _resolve_link_ends(r)
    graph = Graph(len(r.nodes), [(a, b) for _, a, b in ends])
    host = resolve_host(sc.testbed, sc.kernel)
    tcp_default = _normalize_via_core(
        r, ("tcp",), {**host.tcp, **sc.tcp}, sc.tcp, _core.normalize_tcp, "TCP option"
    )
    flows = _resolve_flows(r, graph, host)
    links = _resolve_links(r, ends, flows, host)
    engine_spec = to_engine_spec(sc, window, r.nodes, links, flows)
    queues.check_links(engine_spec, lambda i: _written_qdisc(r, i, sc.links[i].qdisc))
    normalized = to_normalized(sc, window, r.nodes, tcp_default, links, flows, host)
    return Resolved(sc, r.nodes, links, flows, engine_spec, normalized)


# ---- the run window, nodes and links' ends ----


def _resolve_window(r: _Resolver) -> tuple[int, int]:
    """The measurement window ``(start, end)`` in ns, checked with the sample interval
    against the run's duration."""
    sc = r.sc
    duration = sc.duration
    if sc.sample_interval > duration:
        r.fail(
            ("sample_interval",),
            r.dur(("sample_interval",), sc.sample_interval),
            f"is longer than the duration {show(format_duration(duration))}",
        )
    measure = sc.measure or Measure()
    m_start = measure.start
    m_end = duration if measure.end is None else measure.end
    if m_start >= duration:
        r.fail(
            ("measure", "start"),
            r.dur(("measure", "start"), m_start),
            f"is not before the end of the run (duration {show(format_duration(duration))})",
        )
    if m_end > duration:
        r.fail(
            ("measure", "end"),
            r.dur(("measure", "end"), m_end),
            f"is beyond the duration {show(format_duration(duration))}",
        )
    if m_end <= m_start:
        r.fail(
            ("measure", "end"),
            r.dur(("measure", "end"), m_end),
            f"is not after measure.start {show(format_duration(m_start))}",
        )
    return m_start, m_end


def _resolve_nodes(r: _Resolver) -> list[str]:
    """Node names; a node's index is its place: as ``nodes`` lists them, else in the order
    the links first name them."""
    if r.sc.nodes is not None:
        nodes = list(r.sc.nodes)
        seen: dict[str, int] = {}
        for i, n in enumerate(nodes):
            if n in seen:
                r.fail(("nodes", i), n, f"is a duplicate node name (also nodes[{seen[n]}])")
            seen[n] = i
        return nodes
    first: dict[str, None] = {}  # insertion-ordered set: a list lookup was quadratic
    for link in r.sc.links:
        for n in link.between:
            first.setdefault(n)
    return list(first)


def _resolve_link_ends(r: _Resolver) -> list[tuple[str, int, int]]:
    """Per link its name and the indices of its two nodes; no self-loops, no parallel
    links, no duplicate names."""
    out: list[tuple[str, int, int]] = []
    pair_of: dict[frozenset[int], int] = {}
    names_seen: dict[str, int] = {}
    for i, link in enumerate(r.sc.links):
        a = r.node(("links", i, "between", 0), link.between[0])
        b = r.node(("links", i, "between", 1), link.between[1])
        if a == b:
            r.fail(
                ("links", i, "between"),
                list(link.between),
                "is a self-loop; a link joins two different nodes",
            )
        pair = frozenset((a, b))
        if pair in pair_of:
            j = pair_of[pair]
            r.fail(
                ("links", i, "between"),
                list(link.between),
                f"joins the same nodes as links[{j}] ({show(out[j][0])}); "
                "parallel links make routing ambiguous",
            )
        pair_of[pair] = i
        name = link.name if link.name is not None else f"{link.between[0]}-{link.between[1]}"
        if name in names_seen:
            r.fail(
                ("links", i, "name"),
                name,
                f"is a duplicate link name (also links[{names_seen[name]}])",
            )
        names_seen[name] = i
        out.append((name, a, b))
    return out


# ---- flows ----


def _resolve_flows(r: _Resolver, graph: Graph, host: Host) -> list[FlowInfo]:
    """Every flow: name, endpoints, options, times and route, checked in that order."""
    known = algorithm_names()
    seen: dict[str, int] = {}
    flows: list[FlowInfo] = []
    for i, f in enumerate(r.sc.flows):
        loc: tuple[str | int, ...] = ("flows", i)
        name = f.name if f.name is not None else f"flow{i + 1}"
        if name in seen:
            r.fail((*loc, "name"), name, f"is a duplicate flow name (also flows[{seen[name]}])")
        seen[name] = i
        src = r.node((*loc, "src"), f.src)
        dst = r.node((*loc, "dst"), f.dst)
        if src == dst:
            r.fail((*loc, "dst"), f.dst, "is the flow's src too; a flow needs two endpoints")
        cca_params, tcp = _flow_options(r, loc, f, known, host)
        _check_flow_times(r, loc, f)
        node_path = _flow_route(r, loc, f, src, dst, graph)
        path = graph.channels(node_path)
        ack = ack_channels(path)
        rtt = sum(r.sc.links[ch // 2].delay for ch in path + ack)
        bottleneck = min(r.sc.links[ch // 2].rate for ch in path)
        flows.append(
            FlowInfo(
                i,
                name,
                f.src,
                f.dst,
                f.cca,
                [r.nodes[k] for k in node_path],
                path,
                ack,
                rtt,
                bottleneck,
                float(bdp_packets(bottleneck, rtt)),
                src_index=src,
                dst_index=dst,
                cca_params=cca_params,
                tcp=tcp,
                start_ns=f.start,
                start_jitter_ns=f.start_jitter,
                stop_ns=f.stop,
                size_bytes=f.size,
            )
        )
    return flows


def _flow_options(
    r: _Resolver, loc: tuple[str | int, ...], f: Flow, known: Sequence[str], host: Host
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A flow's algorithm parameters and TCP options, complete as the Rust core normalises
    them (TCP options: the hosts' (testbed and kernel), under the scenario's ``tcp``, under
    the flow's; parameters: the kernel's version of the algorithm, under the flow's)."""
    if f.cca not in known:
        r.fail(
            (*loc, "cca"),
            f.cca,
            f"is not a known congestion control; known: {_names(known)}"
            f"{_did_you_mean(f.cca, known)}",
        )
    plain = not f.cca_params and not f.tcp
    shared = r.plain_flow_options.get(f.cca) if plain else None
    if shared is not None:
        return _copy_options(shared[0]), _copy_options(shared[1])
    cca_params = _normalize_via_core(
        r,
        (*loc, "cca_params"),
        {**host.cca(f.cca), **f.cca_params},
        f.cca_params,
        functools.partial(_core.normalize_cca, f.cca),
        f"{f.cca} parameter",
    )
    tcp = _normalize_via_core(
        r,
        (*loc, "tcp"),
        {**host.tcp, **r.sc.tcp, **f.tcp},
        f.tcp,
        _core.normalize_tcp,
        "TCP option",
    )
    _check_rack(r, loc, f, tcp, host)
    if plain:
        r.plain_flow_options[f.cca] = (_SharedOptions(cca_params), _SharedOptions(tcp))
    return cca_params, tcp


def _check_rack(
    r: _Resolver, loc: tuple[str | int, ...], f: Flow, tcp: dict[str, Any], host: Host
) -> None:
    """Refuse ``rack = false`` on hosts whose Linux has no loss detection without RACK
    (6.17 and later ignore ``net.ipv4.tcp_recovery`` bit 0): the simulator would model code
    those hosts do not have, and the kernel backend would silently run RACK."""
    kernel = host.kernel if host.testbed.kernel is not None else None
    if tcp.get("rack") is not False or kernel is None or not kernel.rack_only:
        return
    where = (*loc, "tcp", "rack") if "rack" in f.tcp else ("tcp", "rack")
    r.fail(
        where,
        False,
        f"has no effect on Linux {kernel.name} hosts: since 6.17 Linux detects losses by RACK "
        'only (net/ipv4/tcp_input.c); choose kernel = "4.15" or "4.13" (or testbed = '
        '"ideal") to study loss detection without RACK',
    )


class _SharedOptions:
    """Normalised options many flows share, and which of them are lists or tables: a
    flow's copy copies the dict and only those (a list such as ``rmem`` is each flow's
    own), not every value through :func:`_json_copy`."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = _json_copy(options)
        self.nested = [k for k, v in options.items() if isinstance(v, dict | list)]


def _copy_options(shared: _SharedOptions) -> dict[str, Any]:
    """A flow's own copy of ``shared``.

    Example:
        >>> shared = _SharedOptions({"mss": 1448, "rmem": [1, 2, 3]})
        >>> a, b = _copy_options(shared), _copy_options(shared)
        >>> a["rmem"][0] = 9
        >>> b, a is b
        ({'mss': 1448, 'rmem': [1, 2, 3]}, False)
    """
    out: dict[str, Any] = shared.options.copy()
    for key in shared.nested:
        out[key] = _json_copy(out[key])
    return out


def _check_flow_times(r: _Resolver, loc: tuple[str | int, ...], f: Flow) -> None:
    """A flow starts (with its jitter) before the end of the run and stops after it starts."""
    duration = r.sc.duration
    if f.start >= duration:
        r.fail(
            (*loc, "start"),
            r.dur((*loc, "start"), f.start),
            f"is not before the end of the run (duration {show(format_duration(duration))})",
        )
    if f.start + f.start_jitter >= duration:
        r.fail(
            (*loc, "start_jitter"),
            r.dur((*loc, "start_jitter"), f.start_jitter),
            "lets the flow start after the end of the run "
            f"(start {show(format_duration(f.start))}, "
            f"duration {show(format_duration(duration))})",
        )
    if f.stop is None:
        return
    if f.stop > duration:
        r.fail(
            (*loc, "stop"),
            r.dur((*loc, "stop"), f.stop),
            f"is beyond the duration {show(format_duration(duration))}",
        )
    if f.stop <= f.start:
        r.fail(
            (*loc, "stop"),
            r.dur((*loc, "stop"), f.stop),
            f"is not after the flow's start {show(format_duration(f.start))}",
        )


def _flow_route(
    r: _Resolver, loc: tuple[str | int, ...], f: Flow, src: int, dst: int, graph: Graph
) -> list[int]:
    """The nodes a flow's data visits, src first: its ``path`` checked hop by hop, or
    the shortest route."""
    if f.path is None:
        found = graph.shortest_path(src, dst)
        if found is None:
            r.fail(
                (*loc, "dst"),
                f.dst,
                f"is unreachable from src {show(f.src)}: no chain of links joins them",
            )
        return found
    node_path: list[int] = []
    visited: set[int] = set()  # a list's `in` made a path of L nodes cost L^2
    for j, n in enumerate(f.path):
        k = r.node((*loc, "path", j), n)
        if k in visited:
            r.fail((*loc, "path", j), n, "appears twice in the path; a path must not loop")
        visited.add(k)
        if node_path and graph.channel(node_path[-1], k) is None:
            r.fail(
                (*loc, "path", j),
                n,
                f"is not linked to the previous node {show(f.path[j - 1])}",
            )
        node_path.append(k)
    if node_path[0] != src:
        r.fail((*loc, "path", 0), f.path[0], f"is not the flow's src {show(f.src)}")
    if node_path[-1] != dst:
        r.fail(
            (*loc, "path", len(f.path) - 1),
            f.path[-1],
            f"is not the flow's dst {show(f.dst)}",
        )
    return node_path


# ---- links with their buffers (after the flows: a buffer may be a multiple of a BDP) ----


def _resolve_links(
    r: _Resolver, ends: list[tuple[str, int, int]], flows: list[FlowInfo], host: Host
) -> list[LinkInfo]:
    """Every link with its queue (and a discipline's options) and its buffer in packets."""
    by_name = {fl.name: fl for fl in flows}
    links: list[LinkInfo] = []
    for i, link in enumerate(r.sc.links):
        queue = link.queue or host.testbed.queue or "droptail"
        qdisc = queues.to_engine(queue, _written_qdisc(r, i, link.qdisc), ("links", i))
        buffer = link.buffer
        assert buffer is not None  # Link fills in the default
        pkts, alpha, bdp = _link_buffer(r, i, buffer, by_name)
        name, a, b = ends[i]
        links.append(
            LinkInfo(
                i,
                name,
                r.nodes[a],
                r.nodes[b],
                link.rate,
                link.delay,
                pkts,
                alpha,
                None if bdp is None else float(bdp),
                buffer.reference,
                link.loss.forward,
                link.loss.reverse,
                queue,
                a_index=a,
                b_index=b,
                buffer=buffer,
                qdisc=qdisc,
            )
        )
    return links


def _written_qdisc(r: _Resolver, i: int, qdisc: Any) -> Any:
    """A link's ``qdisc`` table as the user wrote it, when we have their input (so that
    errors quote it), else as the model holds it."""
    written = _lookup(r.raw, ("links", i, "qdisc")) if r.raw is not None else _MISSING
    return qdisc if written is _MISSING or not isinstance(written, Mapping) else written


def _link_buffer(
    r: _Resolver, i: int, buf: Buffer, flows: Mapping[str, FlowInfo]
) -> tuple[int, float | None, Fraction | None]:
    """Link ``i``'s buffer: packets, the multiple of the reference flow's BDP they are, and
    that BDP in packets (both None without a reference)."""
    bdp: Fraction | None = None
    if buf.reference is not None:
        ref = flows.get(buf.reference)
        if ref is None:
            names = list(flows)
            r.fail(
                ("links", i, "buffer", "reference"),
                buf.reference,
                f"is not a flow; flows: {_names(names)}{_did_you_mean(buf.reference, names)}",
            )
        bdp = bdp_packets(ref.bottleneck_rate_bps, ref.base_rtt_ns)
    if buf.bdp is None:
        assert buf.packets is not None
        # A reference flow with no propagation delay has a BDP of 0: alpha is undefined.
        return buf.packets, None if not bdp else float(buf.packets / bdp), bdp
    assert bdp is not None
    if bdp == 0:
        r.fail(
            ("links", i, "buffer", "bdp"),
            buf.bdp,
            f"is a multiple of {buf.reference}'s BDP, which is 0 packets (its path has no "
            "propagation delay); give the buffer in packets",
        )
    pkts = buffer_packets(buf.bdp, bdp)
    if pkts > U32_MAX:
        r.fail(
            ("links", i, "buffer", "bdp"),
            buf.bdp,
            f"x {float(bdp):.6g} packets is too many packets (at most {U32_MAX})",
        )
    return pkts, buf.bdp, bdp
