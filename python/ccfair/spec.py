"""Scenario specs: parse, validate and resolve a network, its flows and the run parameters.

One schema, three ways in: a TOML file (:meth:`Scenario.from_toml`), a Python dict of the same
shape (:meth:`Scenario.from_dict`), or a builder (:func:`dumbbell`, :func:`parking_lot`).
Every way in validates the whole spec before anything runs and raises
:class:`~ccfair.errors.SpecError` naming the field path and the bad value.

:meth:`Scenario.resolve` produces the engine's ``RunSpec`` JSON (crates/ccfair-sim/src/spec.rs:
integers in ns, bit/s and packets, names replaced by indices, routes as channel ids, CCA
parameters and TCP options normalised by the Rust core) and a normalised user-level record for
provenance. The user-facing schema is documented in docs/spec.md.

Example:
    >>> from ccfair.spec import Scenario
    >>> sc = Scenario.from_toml_str('''
    ... duration = "10s"
    ... [[links]]
    ... between = ["a", "b"]
    ... rate = "10Mbit/s"
    ... delay = "5ms"
    ... [[flows]]
    ... src = "a"
    ... dst = "b"
    ... cca = "reno"
    ... ''')
    >>> r = sc.resolve()
    >>> r.engine_spec["flows"][0]["path"], r.engine_spec["flows"][0]["ack_path"]
    ([0], [1])
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import os
import re
import tomllib
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictInt,
    StrictStr,
    ValidationError,
    model_serializer,
    model_validator,
)

from ccfair import _core, backends
from ccfair.algorithms import names as algorithm_names
from ccfair.errors import SpecError, format_path, show
from ccfair.inputs import check_nesting, load_toml, read_spec_file
from ccfair.limits import MAX_FLOWS, MAX_LINKS, MAX_NAME_CHARS, MAX_NODES
from ccfair.topology import Graph, ack_channels, bdp_packets, buffer_packets
from ccfair.units import (
    DURATION_HINT,
    RATE_HINT,
    SIZE_HINT,
    format_duration,
    format_rate,
    format_size,
    parse_duration,
    parse_rate,
    parse_size,
)

if TYPE_CHECKING:
    from ccfair.api import IdentityJson

__all__ = [
    "SpecError",
    "Scenario",
    "Link",
    "Flow",
    "Buffer",
    "Loss",
    "Measure",
    "Resolved",
    "LinkInfo",
    "FlowInfo",
    "dumbbell",
    "parking_lot",
    "DEFAULT_BUFFER_PKTS",
]

#: Buffer of a link that does not set one: Linux's default txqueuelen.
DEFAULT_BUFFER_PKTS = 1000
_U32_MAX = 2**32 - 1
_U64_MAX = 2**64 - 1
_SEED_LIMIT = 2**63
#: Longest time in a spec, and longest link delay (crates/ccfair-sim/src/spec.rs MAX_TIME_NS,
#: MAX_DELAY_NS): times plus delays stay within the engine's 64-bit clock.
_MAX_TIME_NS = 2**62
_MAX_DELAY_NS = 2**40

# --------------------------------------------------------------------------------------------
# Field types. Quantities are stored as integers in base units (ns, bit/s, bytes) and
# serialised back to the shortest exact string with a unit.


def _duration(what: str, *, positive: bool, most_ns: int = _MAX_TIME_NS) -> Any:
    def check(value: Any) -> int:
        ns = parse_duration(value)
        if ns is None:
            raise ValueError(f"{show(value)} is not a duration ({DURATION_HINT})")
        if positive and ns <= 0:
            raise ValueError(f"{show(value)} is not a positive duration; {what} must be > 0")
        if ns < 0:
            raise ValueError(f"{show(value)} is negative; {what} must be >= 0")
        if ns > most_ns:
            raise ValueError(f"{show(value)} is too long (at most {most_ns / 1e9:.4g} s)")
        return ns

    return Annotated[int, BeforeValidator(check), PlainSerializer(format_duration, return_type=str)]


def _check_rate(value: Any) -> int:
    bps = parse_rate(value)
    if bps is None:
        raise ValueError(f"{show(value)} is not a rate ({RATE_HINT})")
    if bps <= 0:
        raise ValueError(f'{show(value)} is not a positive rate (e.g. "50Mbit/s")')
    if bps > _U64_MAX:
        raise ValueError(f"{show(value)} is too large a rate (at most 2^64-1 bit/s)")
    return bps


def _check_size(value: Any) -> int:
    n = parse_size(value)
    if n is None:
        raise ValueError(f"{show(value)} is not a size ({SIZE_HINT})")
    if n <= 0:
        raise ValueError(f"{show(value)} is not a positive size; size must be >= 1 byte")
    if n > _U64_MAX:
        raise ValueError(f"{show(value)} is too large a size (at most 2^64-1 bytes)")
    return n


def _check_name(value: str) -> str:
    if not value.strip():
        raise ValueError(f"{show(value)} is not a valid name (empty)")
    if len(value) > MAX_NAME_CHARS:
        raise ValueError(f"{show(value)} is longer than {MAX_NAME_CHARS} characters")
    if not value.isprintable():
        raise ValueError(f"{show(value)} is not a valid name (it has control characters)")
    return value


def _check_seed(value: int) -> int:
    if not 0 <= value < _SEED_LIMIT:
        raise ValueError(f"{show(value)} is out of range; seed must be an integer in [0, 2^63)")
    return value


#: Execution backends (the registry of :mod:`ccfair.backends`): the simulator and the real
#: Linux TCP stack (docs/kernel.md).
BACKENDS = backends.names()


def _check_backend(value: str) -> str:
    if value not in backends.REGISTRY:
        raise ValueError(backends.unknown(value))
    return value


#: What a link's buffer counts (docs/model.md, "netem queues"): ``droptail`` the packets queued
#: or in service; ``netem`` also those in the delay line, as netem's ``limit`` does.
QUEUES = ("droptail", "netem")


def _check_queue(value: str) -> str:
    if value not in QUEUES:
        raise ValueError(
            f"{show(value)} is not a queue; queues: droptail (a FIFO before the serialiser, "
            "the default) or netem (the buffer also counts the packets in the delay line)"
        )
    return value


@dataclass(frozen=True)
class Profile:
    """A testbed profile: what a kind of testbed does that the ideal network does not,
    applied under the scenario's own settings (a TCP option or a link's ``queue`` written
    in the scenario wins). docs/spec.md, "Testbed profiles", gives the sources."""

    #: TCP options the testbed's hosts run with (under ``[tcp]`` and each flow's ``tcp``).
    tcp: Mapping[str, Any]
    #: What every link's buffer counts unless the link says (None: ``droptail``).
    queue: str | None
    summary: str


#: Testbed profiles by name (``Scenario.profile``). ``ideal`` is the default behaviour.
PROFILES: dict[str, Profile] = {
    "ideal": Profile({}, None, "the ideal network and hosts of earlier versions"),
    # Stock Linux 6.18 hosts: tcp_rmem 4096 131072 33554432 (tcp_init, net/ipv4/tcp.c) and
    # GSO skbs sized by tcp_tso_autosize (net/ipv4/tcp_output.c), which Linux TCP always
    # builds ("tcp: switch to GSO being always on", 4.12).
    "linux-stock": Profile(
        {"rmem": "linux", "tso": "linux"}, None, "stock Linux hosts: tcp_rmem and TSO/GSO"
    ),
    # Mininet's TCLink (mininet/link.py, TCIntf.bwCmds/delayCmds): per interface an HTB class
    # at the link rate with a netem child "delay D limit max_queue_size"; hosts are network
    # namespaces of a stock kernel (offloads on; TCIntf turns GRO off, a receive-side
    # offload ccfair does not model).
    "mininet-netem": Profile(
        {"rmem": "linux", "tso": "linux"}, "netem", "stock Linux hosts, Mininet TCLink queues"
    ),
    # CORE (coreemu/core, daemon/core/nodes/interface.py, tc_cmd): per interface one netem
    # qdisc "rate R limit N delay D" on veth pairs between namespaces of a stock kernel.
    "core-netem": Profile(
        {"rmem": "linux", "tso": "linux"}, "netem", "stock Linux hosts, CORE netem links"
    ),
}


def _check_profile(value: str) -> str:
    if value not in PROFILES:
        raise ValueError(f"{show(value)} is not a testbed profile; profiles: {', '.join(PROFILES)}")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_probability(value: Any) -> float:
    if not _is_number(value):
        raise ValueError(f"{show(value)} is not a number (a loss probability in [0, 1))")
    if not (math.isfinite(value) and 0.0 <= value < 1.0):
        raise ValueError(f"{show(value)} is not a loss probability in [0, 1)")
    return float(value)


def _check_alpha(value: Any) -> float:
    if not _is_number(value):
        raise ValueError(f"{show(value)} is not a number (a multiple of the BDP)")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{show(value)} is not a positive BDP multiple; bdp (alpha) must be > 0")
    return float(value)


def _check_packets(value: int) -> int:
    if value < 1:
        raise ValueError(f"{show(value)} is below one packet; a buffer holds at least 1 packet")
    if value > _U32_MAX:
        raise ValueError(f"{show(value)} is too many packets (at most {_U32_MAX})")
    return value


Rate = Annotated[int, BeforeValidator(_check_rate), PlainSerializer(format_rate, return_type=str)]
Size = Annotated[int, BeforeValidator(_check_size), PlainSerializer(format_size)]
Name = Annotated[StrictStr, AfterValidator(_check_name)]
Backend = Annotated[StrictStr, AfterValidator(_check_backend)]
Seed = Annotated[StrictInt, AfterValidator(_check_seed)]
Probability = Annotated[float, BeforeValidator(_check_probability)]
Packets = Annotated[StrictInt, AfterValidator(_check_packets)]
Queue = Annotated[StrictStr, AfterValidator(_check_queue)]
ProfileName = Annotated[StrictStr, AfterValidator(_check_profile)]
Alpha = Annotated[float, BeforeValidator(_check_alpha)]
Options = dict[StrictStr, Any]

DurationLike = str | int | float
RateLike = str | int | float
SizeLike = str | int


class _SpecMeta(type(BaseModel)):  # type: ignore[misc]
    """Makes direct construction (``Link(...)``) raise :class:`SpecError`. Only calls of the
    class go through here; pydantic's nested validation does not."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except ValidationError as exc:
            raise _from_pydantic(exc, cls) from None


class _Model(BaseModel, metaclass=_SpecMeta):
    """Base of the spec models: unknown keys are errors, and construction errors are
    :class:`SpecError` rather than pydantic's ``ValidationError``."""

    model_config = ConfigDict(extra="forbid", revalidate_instances="never")


class Measure(_Model):
    """Goodput measurement window ``[start, end)``; ``end`` defaults to the duration.

    Example:
        >>> Measure(start="5s").start, Measure(start="5s").end
        (5000000000, None)
    """

    start: _duration("measure.start", positive=False) = 0  # type: ignore[valid-type]
    end: _duration("measure.end", positive=False) | None = None  # type: ignore[valid-type]


class Buffer(_Model):
    """A link's drop-tail buffer (per direction, counting the packet in service).

    Written as an integer number of packets, as ``{bdp = ALPHA, reference = "FLOW"}`` (alpha
    times the BDP of the reference flow's path), or as ``{packets = N, reference = "FLOW"}``
    (packets, with the reference only used to record the equivalent alpha).

    Example:
        >>> Link(between=["a", "b"], rate="1Mbps", delay=0, buffer=100).buffer.packets
        100
        >>> Buffer(bdp=2.0, reference="flow1").model_dump()
        {'bdp': 2.0, 'reference': 'flow1'}
    """

    packets: Packets | None = None
    bdp: Alpha | None = None
    reference: Name | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_scalar(cls, value: Any) -> Any:
        if isinstance(value, Buffer | Mapping):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return {"packets": _check_packets(value)}
        raise ValueError(
            f"{show(value)} is not a buffer: give an integer number of packets (>= 1) "
            'or {bdp = ALPHA, reference = "FLOW"}'
        )

    @model_validator(mode="after")
    def _one_size(self) -> Buffer:
        if (self.packets is None) == (self.bdp is None):
            raise ValueError(
                f"{show(self.model_dump(exclude_none=True))} must give exactly one of "
                "packets and bdp"
            )
        if self.bdp is not None and self.reference is None:
            raise ValueError(
                f"{show(self.model_dump(exclude_none=True))} needs a reference flow for its BDP"
            )
        return self

    @model_serializer
    def _to_plain(self) -> Any:
        if self.bdp is None and self.reference is None:
            return self.packets
        return {
            k: v
            for k, v in (
                ("packets", self.packets),
                ("bdp", self.bdp),
                ("reference", self.reference),
            )
            if v is not None
        }


class Loss(_Model):
    """Bernoulli packet loss: one probability for both directions, or ``forward`` (a->b)
    and ``reverse`` (b->a).

    Example:
        >>> Link(between=["a", "b"], rate="1Mbps", delay=0, loss=0.01).loss
        Loss(forward=0.01, reverse=0.01)
    """

    forward: Probability = 0.0
    reverse: Probability = 0.0

    @model_validator(mode="before")
    @classmethod
    def _from_scalar(cls, value: Any) -> Any:
        if isinstance(value, Loss | Mapping):
            return value
        if _is_number(value):
            p = _check_probability(value)
            return {"forward": p, "reverse": p}
        raise ValueError(
            f"{show(value)} is not a loss: give a probability in [0, 1) "
            "or {forward = P, reverse = P}"
        )

    @model_serializer
    def _to_plain(self) -> Any:
        if self.forward == self.reverse:
            return self.forward
        return {"forward": self.forward, "reverse": self.reverse}


class Link(_Model):
    """A full-duplex link; ``rate``, ``delay``, ``buffer`` and ``loss`` apply per direction.

    Attributes hold base units: ``rate`` in bit/s, ``delay`` in ns.

    Example:
        >>> Link(between=["s1", "s2"], rate="50Mbit/s", delay="18ms", buffer=100).rate
        50000000
    """

    name: Name | None = None
    between: Annotated[list[Name], Field(min_length=2, max_length=2)]
    rate: Rate
    delay: _duration("delay", positive=False, most_ns=_MAX_DELAY_NS)  # type: ignore[valid-type]
    buffer: Buffer = Field(default_factory=lambda: Buffer(packets=DEFAULT_BUFFER_PKTS))
    loss: Loss = Field(default_factory=Loss)
    #: What ``buffer`` counts: ``"droptail"`` or ``"netem"`` (docs/spec.md); absent: the
    #: scenario's profile decides (``droptail`` without one).
    queue: Queue | None = None


class Flow(_Model):
    """One TCP connection from ``src`` to ``dst``.

    Attributes hold base units: ``start``/``stop`` in ns, ``size`` in bytes.

    Example:
        >>> Flow(src="h1", dst="h3", cca="reno", start="2s").start
        2000000000
    """

    name: Name | None = None
    src: Name
    dst: Name
    cca: Name
    cca_params: Options = Field(default_factory=dict)
    start: _duration("start", positive=False) = 0  # type: ignore[valid-type]
    start_jitter: _duration("start_jitter", positive=False) = 0  # type: ignore[valid-type]
    stop: _duration("stop", positive=False) | None = None  # type: ignore[valid-type]
    size: Size | None = None
    path: Annotated[list[Name], Field(min_length=2)] | None = None
    tcp: Options = Field(default_factory=dict)


class Scenario(_Model):
    """A whole scenario: network, flows and run parameters (see docs/spec.md).

    Build one with :meth:`from_toml`, :meth:`from_toml_str`, :meth:`from_dict` or a builder
    (:func:`dumbbell`, :func:`parking_lot`); those validate everything, including node
    references, routes and CCA parameters. Constructing the model directly checks types and
    units only; :meth:`resolve` checks the rest.

    Example:
        >>> sc = Scenario.from_dict({
        ...     "duration": "10s",
        ...     "links": [{"between": ["a", "b"], "rate": "10Mbit/s", "delay": "5ms"}],
        ...     "flows": [{"src": "a", "dst": "b", "cca": "reno"}],
        ... })
        >>> Scenario.from_dict(sc.to_dict()) == sc
        True
    """

    name: Name = "scenario"
    #: Where the scenario runs by default ("sim" when absent); ``ccfair run --backend`` and
    #: ``ccfair.run(backend=...)`` override it. Not part of the normalised record: the same
    #: scenario on two backends has one spec and two run ids.
    backend: Backend | None = None
    duration: _duration("duration", positive=True)  # type: ignore[valid-type]
    seed: Seed = 1
    sample_interval: _duration("sample_interval", positive=True) = 10_000_000  # type: ignore[valid-type]
    measure: Measure | None = None
    nodes: list[Name] | None = None
    #: Testbed profile (:data:`PROFILES`); absent or ``"ideal"``: today's ideal network.
    profile: ProfileName | None = None
    tcp: Options = Field(default_factory=dict)
    links: Annotated[list[Link], Field(min_length=1)]
    flows: Annotated[list[Flow], Field(min_length=1)]

    # ---- ways in ----------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scenario:
        """Validate a dict of the TOML schema (fully: types, units, names, routes, CCAs).

        Example:
            >>> Scenario.from_dict({"duration": 5, "links": [{"between": ["a", "b"],
            ...     "rate": 1e6, "delay": 0.001}], "flows": [{"src": "a", "dst": "b",
            ...     "cca": "reno"}]}).duration
            5000000000
        """
        if not isinstance(data, Mapping):
            raise SpecError("", data, "is not a scenario table (a dict of keys)")
        _check_bounds(data)
        try:
            sc = cls.model_validate(dict(data))
        except ValidationError as exc:
            raise _from_pydantic(exc, cls) from None
        _resolve(sc, raw=data)
        return sc

    @classmethod
    def from_toml_str(cls, text: str, *, source: str | None = None) -> Scenario:
        """Parse and validate TOML text; ``source`` (a file name) is recorded on errors.

        Example:
            >>> Scenario.from_toml_str('duration = "1s"\\n[[links]]\\nbetween = ["a", "b"]\\n'
            ...     'rate = "1Mbit/s"\\ndelay = "1ms"\\n[[flows]]\\nsrc = "a"\\ndst = "b"\\n'
            ...     'cca = "reno"\\n').links[0].delay
            1000000
        """
        try:
            data = load_toml(text)
        except tomllib.TOMLDecodeError as exc:
            raise _toml_error(exc, text, source) from None
        except SpecError as exc:
            exc.source = source
            raise
        try:
            return cls.from_dict(data)
        except SpecError as exc:
            exc.source = source
            raise

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> Scenario:
        """Read, parse and validate a TOML scenario file.

        Example:
            >>> sc = Scenario.from_toml("scenarios/dumbbell.toml")  # doctest: +SKIP
        """
        text = read_spec_file(path, "scenario")
        return cls.from_toml_str(text, source=os.fspath(path))

    @classmethod
    def from_normalized(cls, record: Mapping[str, Any]) -> Scenario:
        """Rebuild a scenario from a :attr:`Resolved.normalized` record (derived keys such
        as ``buffer_pkts`` are dropped); it resolves to the same engine spec.

        Example:
            >>> sc = dumbbell(2, "reno")
            >>> Scenario.from_normalized(sc.resolve().normalized).resolve().engine_json == (
            ...     sc.resolve().engine_json)
            True
        """
        d = _strip_none(dict(record))
        d["links"] = [
            {k: v for k, v in _strip_none(link).items() if k not in _DERIVED_LINK_KEYS}
            for link in record.get("links", [])
        ]
        d["flows"] = [
            {k: v for k, v in _strip_none(flow).items() if k not in _DERIVED_FLOW_KEYS}
            for flow in record.get("flows", [])
        ]
        return cls.from_dict(d)

    # ---- ways out ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The spec as a dict of the TOML schema (quantities as strings with units; absent
        optional fields and empty option tables omitted).
        ``Scenario.from_dict(sc.to_dict()) == sc``.

        Example:
            >>> dumbbell(2, "reno").to_dict()["links"][2]["rate"]
            '50Mbit/s'
        """
        d = self.model_dump(exclude_none=True)
        # Empty option tables are the default; leave them out.
        if not d.get("tcp"):
            d.pop("tcp", None)
        for flow in d["flows"]:
            for key in ("cca_params", "tcp"):
                if not flow.get(key):
                    flow.pop(key, None)
        return d

    def to_toml(self) -> str:
        """The spec as TOML text. ``Scenario.from_toml_str(sc.to_toml()) == sc``.

        Example:
            >>> print(dumbbell(1, "reno").to_toml().splitlines()[0])
            name = "dumbbell"
        """
        return _toml_dumps(self.to_dict())

    def resolve(self) -> Resolved:
        """Check everything and compute the engine's run spec and the normalised record.

        Example:
            >>> r = dumbbell(2, "reno", bottleneck_delay="2ms").resolve()
            >>> r.link("bottleneck").buffer_pkts, round(r.link("bottleneck").bdp_pkts, 2)
            (67, 33.33)
        """
        return _resolve(self, raw=None)


def _check_bounds(data: Mapping[str, Any]) -> None:
    """Nesting, string lengths and the number of flows, links and nodes, checked before
    validation so that no input makes validation slow (docs/spec.md, "Limits")."""
    check_nesting(data, "")
    for key, most in (("flows", MAX_FLOWS), ("links", MAX_LINKS), ("nodes", MAX_NODES)):
        items = data.get(key)
        if isinstance(items, list) and len(items) > most:
            raise SpecError(
                key,
                None,
                f"has {len(items)} entries; a scenario has at most {most} {key}",
                with_value=False,
            )


# --------------------------------------------------------------------------------------------
# Resolution


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
    #: What the buffer counts: "droptail" or "netem" (:data:`QUEUES`).
    queue: str = "droptail"
    # Keyword-only: what the engine's input and the normalised record need besides.
    #: Indices of the nodes ``a`` and ``b``.
    a_index: int = field(kw_only=True)
    b_index: int = field(kw_only=True)
    #: The buffer as the scenario writes it.
    buffer: Buffer = field(kw_only=True, repr=False)

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
        """What names the run (:class:`ccfair.api.IdentityJson`), serialised once for its
        run id and its point key."""
        from ccfair.api import IdentityJson

        return IdentityJson(self.normalized)

    def link(self, name: str) -> LinkInfo:
        """The link called ``name`` (KeyError if there is none).

        Example:
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
            >>> dumbbell(2, "reno").resolve().flow("flow2").path
            [2, 4, 8]
        """
        for info in self.flows:
            if info.name == name:
                return info
        raise KeyError(name)


_DERIVED_LINK_KEYS = frozenset({"buffer_pkts", "buffer_bdp", "bdp_pkts"})
_DERIVED_FLOW_KEYS = frozenset({"base_rtt", "bdp_pkts"})


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
    hint = difflib.get_close_matches(name, choices, n=1)
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
        # A flow that writes no options of its own gets the scenario's (profile, then
        # `tcp`) and its algorithm's defaults: normalised once per algorithm, by name.
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
        return _json_copy(cached)
    try:
        normalized = json.loads(call(options_json))
        r.normalized[(what, options_json)] = normalized
        return _json_copy(normalized)
    except SpecError as exc:
        if not exc.path:
            raise SpecError(
                format_path(loc),
                dict(own),
                f"{exc.message} (got {show(dict(own))})",
                with_value=False,
            ) from None
        key = re.match(r"[^.\[]+", exc.path)
        top = key.group(0) if key else exc.path
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


def _resolve(sc: Scenario, raw: Mapping[str, Any] | None) -> Resolved:
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
    profile = PROFILES[sc.profile or "ideal"]
    tcp_default = _normalize_via_core(
        r, ("tcp",), {**profile.tcp, **sc.tcp}, sc.tcp, _core.normalize_tcp, "TCP option"
    )
    flows = _resolve_flows(r, graph, profile)
    links = _resolve_links(r, ends, flows, profile)
    engine_spec = _engine_spec(sc, window, r.nodes, links, flows)
    normalized = _normalized(sc, window, r.nodes, tcp_default, links, flows, profile)
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


def _resolve_flows(r: _Resolver, graph: Graph, profile: Profile) -> list[FlowInfo]:
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
        cca_params, tcp = _flow_options(r, loc, f, known, profile)
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
    r: _Resolver, loc: tuple[str | int, ...], f: Flow, known: Sequence[str], profile: Profile
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A flow's algorithm parameters and TCP options, complete as the Rust core normalises
    them (TCP options: the profile's, under the scenario's ``tcp``, under the flow's)."""
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
        f.cca_params,
        f.cca_params,
        lambda js, cca=f.cca: _core.normalize_cca(cca, js),
        f"{f.cca} parameter",
    )
    tcp = _normalize_via_core(
        r,
        (*loc, "tcp"),
        {**profile.tcp, **r.sc.tcp, **f.tcp},
        f.tcp,
        _core.normalize_tcp,
        "TCP option",
    )
    if plain:
        r.plain_flow_options[f.cca] = (_SharedOptions(cca_params), _SharedOptions(tcp))
    return cca_params, tcp


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
    out = shared.options.copy()
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
    for j, n in enumerate(f.path):
        k = r.node((*loc, "path", j), n)
        if k in node_path:
            r.fail((*loc, "path", j), n, "appears twice in the path; a path must not loop")
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
    r: _Resolver, ends: list[tuple[str, int, int]], flows: list[FlowInfo], profile: Profile
) -> list[LinkInfo]:
    """Every link with its buffer in packets and its queue."""
    by_name = {fl.name: fl for fl in flows}
    links: list[LinkInfo] = []
    for i, link in enumerate(r.sc.links):
        pkts, alpha, bdp = _link_buffer(r, i, link.buffer, by_name)
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
                link.buffer.reference,
                link.loss.forward,
                link.loss.reverse,
                link.queue or profile.queue or "droptail",
                a_index=a,
                b_index=b,
                buffer=link.buffer,
            )
        )
    return links


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
    if pkts > _U32_MAX:
        r.fail(
            ("links", i, "buffer", "bdp"),
            buf.bdp,
            f"x {float(bdp):.6g} packets is too many packets (at most {_U32_MAX})",
        )
    return pkts, buf.bdp, bdp


# ---- conversions: the engine's input and the normalised record ----


def _engine_spec(
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
        # Per-packet traces are a diagnostic a run asks for (api.run(trace=...)).
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


def _normalized(
    sc: Scenario,
    window: tuple[int, int],
    nodes: list[str],
    tcp_default: dict[str, Any],
    links: list[LinkInfo],
    flows: list[FlowInfo],
    profile: Profile,
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
        "links": [_link_record(info, profile) for info in links],
        "flows": [_flow_record(info) for info in flows],
    }
    # Absent or "ideal": left out, so that run ids stay what they were.
    if sc.profile not in (None, "ideal"):
        normalized["profile"] = sc.profile
    return normalized


def _link_record(info: LinkInfo, profile: Profile) -> dict[str, Any]:
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
    # they were; under a profile that sets it, the record keeps it (a link's own "droptail"
    # must survive Scenario.from_normalized).
    if info.queue != "droptail" or profile.queue is not None:
        out["queue"] = info.queue
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


# --------------------------------------------------------------------------------------------
# Errors from pydantic and from the TOML parser


_TYPE_WORDS = {
    "int_type": "is not an integer",
    "int_parsing": "is not an integer",
    "int_from_float": "is not an integer",
    "float_type": "is not a number",
    "float_parsing": "is not a number",
    "finite_number": "is not a finite number",
    "string_type": "is not a string",
    "list_type": "is not a list",
    "dict_type": "is not a table (a dict of keys)",
    "model_type": "is not a table (a dict of keys)",
    "model_attributes_type": "is not a table (a dict of keys)",
    "bool_type": "is not a boolean",
}


def _model_at(model: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model class that holds the keys at ``loc`` (for listing allowed keys)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        info = current.model_fields.get(part)
        if info is None:
            return None
        current = _find_model(info.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _find_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _find_model(arg)
        if found is not None:
            return found
    return None


def _from_pydantic(exc: ValidationError, model: type[BaseModel]) -> SpecError:
    errors = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        path = format_path(loc)
        value = err.get("input")
        kind = err["type"]
        if kind == "value_error":
            errors.append(SpecError(path, value, str(err["ctx"]["error"]), with_value=False))
        elif kind == "extra_forbidden":
            parent = _model_at(model, loc[:-1])
            allowed = list(parent.model_fields) if parent is not None else []
            hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            did = f"did you mean {show(hint[0])}? " if hint else ""
            errors.append(
                SpecError(
                    path,
                    value,
                    f"unknown key {show(loc[-1])} (value {show(value)}); {did}"
                    f"allowed keys: {', '.join(allowed)}",
                    with_value=False,
                )
            )
        elif kind == "missing":
            errors.append(SpecError(path, None, "required key is missing", with_value=False))
        elif kind in ("too_short", "too_long"):
            ctx = err.get("ctx", {})
            want = (
                "two node names"
                if loc[-1] == "between"
                else (
                    f"at least {ctx.get('min_length')} item(s)"
                    if kind == "too_short"
                    else f"at most {ctx.get('max_length')} item(s)"
                )
            )
            errors.append(
                SpecError(path, value, f"has {ctx.get('actual_length')} item(s); expected {want}")
            )
        elif kind in _TYPE_WORDS:
            errors.append(SpecError(path, value, _TYPE_WORDS[kind]))
        else:
            errors.append(SpecError(path, value, f"is invalid: {err['msg']}"))
    first = errors[0]
    if len(errors) == 1:
        return first
    more = f" (and {len(errors) - 1} more: " + "; ".join(str(e) for e in errors[1:4])
    more += ", ...)" if len(errors) > 4 else ")"
    return SpecError(first.path, first.value, first.message + more, with_value=False, errors=errors)


def _toml_error(exc: tomllib.TOMLDecodeError, text: str, source: str | None) -> SpecError:
    msg = str(exc)
    m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
    if m:
        line, col = int(m.group(1)), int(m.group(2))
        reason = msg[: m.start()].strip()
    else:  # pragma: no cover - tomllib always reports a position for syntax errors
        line, col, reason = 0, 0, msg
    lines = text.splitlines()
    line_text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    # Invisible characters (a byte-order mark, NUL, other controls) are the usual cause of
    # an error on a line that looks right: show them escaped.
    line_text = "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in line_text
    )
    err = SpecError(
        "",
        line_text,
        f"invalid TOML at line {line}, column {col}: {reason}; the line reads: {line_text}",
        with_value=False,
        source=source,
    )
    err.line, err.column = line, col  # type: ignore[attr-defined]
    return err


def _strip_none(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


# --------------------------------------------------------------------------------------------
# TOML output (the spec's subset: strings, numbers, booleans, lists, tables)

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


def _toml_dumps(d: Mapping[str, Any]) -> str:
    lines: list[str] = []
    tables: list[tuple[str, Mapping[str, Any]]] = []
    arrays: list[tuple[str, Sequence[Mapping[str, Any]]]] = []
    for k, v in d.items():
        if isinstance(v, Mapping) and k == "tcp":
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
            arrays.append((k, v))
        else:
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    for k, table in tables:
        lines += ["", f"[{_toml_key(k)}]"]
        lines += [f"{_toml_key(kk)} = {_toml_value(vv)}" for kk, vv in table.items()]
    for k, items in arrays:
        for item in items:
            lines += ["", f"[[{_toml_key(k)}]]"]
            lines += [f"{_toml_key(kk)} = {_toml_value(vv)}" for kk, vv in item.items()]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Builders


def _per_flow(arg: str, value: Any, n: int, *, scalar_types: tuple[type, ...]) -> list[Any]:
    """Expand a scalar to ``n`` copies, or check a per-item list has ``n`` entries."""
    if value is None or isinstance(value, scalar_types):
        return [value] * n
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        items = list(value)
        if len(items) != n:
            raise SpecError(arg, items, f"has {len(items)} entries; expected {n} (one per item)")
        return items
    raise SpecError(arg, value, "is neither a single value nor a list of per-item values")


def _arg_check(arg: str, value: Any, check: typing.Callable[[Any], Any]) -> None:
    try:
        check(value)
    except ValueError as exc:
        raise SpecError(arg, value, str(exc), with_value=False) from None


def _check_tcp_arg(tcp: Any) -> None:
    if tcp is not None and not isinstance(tcp, Mapping):
        raise SpecError("tcp", tcp, "is not a table of TCP options (e.g. {init_cwnd = 10})")


def _dur_arg(what: str, *, positive: bool = False) -> typing.Callable[[Any], int]:
    def check(value: Any) -> int:
        ns = parse_duration(value)
        if ns is None:
            raise ValueError(f"{show(value)} is not a duration ({DURATION_HINT})")
        if ns < 0 or (positive and ns == 0):
            raise ValueError(f"{show(value)} is not a valid {what}")
        return ns

    return check


def _buffer_entry(
    buffer_bdp: float | None, buffer_pkts: int | None, reference: str
) -> dict[str, Any]:
    if buffer_bdp is not None and buffer_pkts is not None:
        raise SpecError(
            "buffer_pkts",
            buffer_pkts,
            f"and buffer_bdp = {show(buffer_bdp)} are both given; choose one",
        )
    if buffer_pkts is not None:
        return {"packets": buffer_pkts, "reference": reference}
    return {"bdp": 2.0 if buffer_bdp is None else buffer_bdp, "reference": reference}


def _measure_entry(measure: Any) -> Any:
    if measure is None or isinstance(measure, Mapping):
        return measure
    if isinstance(measure, Sequence) and not isinstance(measure, str) and len(measure) == 2:
        return {"start": measure[0], "end": measure[1]}
    raise SpecError("measure", measure, 'is not a window: give (start, end) or {"start": ...}')


def _apply_start_jitter(flows: list[dict[str, Any]], start_jitter: Any) -> None:
    if start_jitter not in (0, None, "0", "0s"):
        _arg_check("start_jitter", start_jitter, _dur_arg("start_jitter"))
        for f in flows:
            f["start_jitter"] = start_jitter


def _flow_entry(
    name: str, src: str, dst: str, cca: str, params: Any, start: Any, stop: Any, size: Any
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "src": src,
        "dst": dst,
        "cca": cca,
        "start": start if start is not None else 0,
    }
    if params:
        entry["cca_params"] = params
    if stop is not None:
        entry["stop"] = stop
    if size is not None:
        entry["size"] = size
    return entry


def dumbbell(
    n_flows: int = 2,
    ccas: str | Sequence[str] = "cubic",
    *,
    bottleneck_rate: RateLike = "50Mbit/s",
    bottleneck_delay: DurationLike = "18ms",
    buffer_bdp: float | None = None,
    buffer_pkts: int | None = None,
    buffer_reference: str = "flow1",
    bottleneck_loss: float = 0.0,
    access_rate: RateLike = "1Gbit/s",
    access_delay: DurationLike | Sequence[DurationLike] = "1ms",
    receiver_delay: DurationLike | Sequence[DurationLike] = "1ms",
    starts: DurationLike | Sequence[DurationLike] = 0,
    start_jitter: DurationLike = 0,
    stops: DurationLike | None | Sequence[DurationLike | None] = None,
    sizes: SizeLike | None | Sequence[SizeLike | None] = None,
    cca_params: Mapping[str, Any] | None | Sequence[Mapping[str, Any] | None] = None,
    tcp: Mapping[str, Any] | None = None,
    duration: DurationLike = "60s",
    seed: int = 1,
    sample_interval: DurationLike = "10ms",
    measure: tuple[DurationLike, DurationLike] | Mapping[str, Any] | None = None,
    name: str = "dumbbell",
) -> Scenario:
    """A dumbbell: ``n_flows`` senders -> switch s1 -> bottleneck -> switch s2 -> receivers.

    Nodes ``h1..hn`` (senders), ``s1``, ``s2``, ``h{n+1}..h{2n}`` (receivers); flow ``flow<i>``
    goes from ``h<i>`` to ``h<n+i>``. Links, in this order: ``h<i>-s1`` (access, rate
    ``access_rate``, delay ``access_delay[i]``), ``bottleneck`` (``s1``-``s2``), then
    ``s2-h<n+i>`` (rate ``access_rate``, delay ``receiver_delay[i]``). Access links keep the
    default buffer (1000 packets). The bottleneck buffer is ``buffer_bdp`` x BDP
    (default 2.0) or ``buffer_pkts`` packets, with ``buffer_reference`` (default flow 1) as
    the BDP reference path either way.

    Per-flow arguments (``ccas``, ``access_delay``, ``receiver_delay``, ``starts``, ``stops``,
    ``sizes``, ``cca_params``) take one value for all flows or a list with one per flow.
    ``start_jitter`` gives every flow a seeded random start offset in ``[0, start_jitter]``.

    Example (docs/experiments.md harada-dumbbell, D = 2 ms, alpha = 2):
        >>> sc = dumbbell(2, ["reno", "reno"], bottleneck_delay="2ms", buffer_bdp=2.0)
        >>> [(f.src, f.dst) for f in sc.flows]
        [('h1', 'h3'), ('h2', 'h4')]
        >>> sc.resolve().link("bottleneck").buffer_pkts
        67
    """
    if isinstance(n_flows, bool) or not isinstance(n_flows, int) or n_flows < 1:
        raise SpecError("n_flows", n_flows, "is not a positive integer number of flows")
    if n_flows > MAX_FLOWS:
        # Checked before anything is built: a huge count would fill memory with flow
        # entries long before the scenario's own bound (_check_bounds) could refuse them.
        raise SpecError(
            "n_flows", n_flows, f"is more flows than a scenario has (at most {MAX_FLOWS})"
        )
    n = n_flows
    cca_list = _per_flow("ccas", ccas, n, scalar_types=(str,))
    acc = _per_flow("access_delay", access_delay, n, scalar_types=(str, int, float))
    rcv = _per_flow("receiver_delay", receiver_delay, n, scalar_types=(str, int, float))
    start_list = _per_flow("starts", starts, n, scalar_types=(str, int, float))
    stop_list = _per_flow("stops", stops, n, scalar_types=(str, int, float))
    size_list = _per_flow("sizes", sizes, n, scalar_types=(str, int))
    params = _per_flow("cca_params", cca_params, n, scalar_types=(Mapping,))
    _arg_check("bottleneck_rate", bottleneck_rate, _check_rate)
    _arg_check("access_rate", access_rate, _check_rate)
    _arg_check("bottleneck_delay", bottleneck_delay, _dur_arg("delay"))
    for arg, values in (("access_delay", acc), ("receiver_delay", rcv)):
        for v in values:
            _arg_check(arg, v, _dur_arg("delay"))
    _arg_check("duration", duration, _dur_arg("duration", positive=True))
    _check_tcp_arg(tcp)

    senders = [f"h{i}" for i in range(1, n + 1)]
    receivers = [f"h{n + i}" for i in range(1, n + 1)]
    links: list[dict[str, Any]] = [
        {"between": [h, "s1"], "rate": access_rate, "delay": d}
        for h, d in zip(senders, acc, strict=True)
    ]
    bottleneck: dict[str, Any] = {
        "name": "bottleneck",
        "between": ["s1", "s2"],
        "rate": bottleneck_rate,
        "delay": bottleneck_delay,
        "buffer": _buffer_entry(buffer_bdp, buffer_pkts, buffer_reference),
    }
    if bottleneck_loss:
        bottleneck["loss"] = bottleneck_loss
    links.append(bottleneck)
    links += [
        {"between": ["s2", h], "rate": access_rate, "delay": d}
        for h, d in zip(receivers, rcv, strict=True)
    ]
    flows = [
        _flow_entry(
            f"flow{i + 1}",
            senders[i],
            receivers[i],
            cca_list[i],
            params[i],
            start_list[i],
            stop_list[i],
            size_list[i],
        )
        for i in range(n)
    ]
    _apply_start_jitter(flows, start_jitter)
    spec: dict[str, Any] = {
        "name": name,
        "duration": duration,
        "seed": seed,
        "sample_interval": sample_interval,
        "nodes": [*senders, "s1", "s2", *receivers],
        "links": links,
        "flows": flows,
    }
    if measure is not None:
        spec["measure"] = _measure_entry(measure)
    if tcp:
        spec["tcp"] = dict(tcp)
    return Scenario.from_dict(spec)


#: The longest parking lot within a scenario's bounds: ``hops + 1`` flows, ``3 x hops + 2``
#: links and ``3 x hops + 3`` nodes (ccfair.limits).
MAX_PARKING_LOT_HOPS = min(MAX_FLOWS - 1, (MAX_LINKS - 2) // 3, (MAX_NODES - 3) // 3)


def parking_lot(
    hops: int = 10,
    main_cca: str = "cubic",
    cross_cca: str | Sequence[str] = "cubic",
    *,
    rate: RateLike | Sequence[RateLike] = "50Mbit/s",
    delay: DurationLike | Sequence[DurationLike] = "18ms",
    buffer_bdp: float | None = None,
    buffer_pkts: int | None = None,
    access_rate: RateLike = "1Gbit/s",
    access_delay: DurationLike = "1ms",
    main_params: Mapping[str, Any] | None = None,
    cross_params: Mapping[str, Any] | None | Sequence[Mapping[str, Any] | None] = None,
    main_start: DurationLike = 0,
    cross_starts: DurationLike | Sequence[DurationLike] = 0,
    start_jitter: DurationLike = 0,
    tcp: Mapping[str, Any] | None = None,
    duration: DurationLike = "60s",
    seed: int = 1,
    sample_interval: DurationLike = "10ms",
    measure: tuple[DurationLike, DurationLike] | Mapping[str, Any] | None = None,
    name: str = "parking-lot",
) -> Scenario:
    """A parking lot of ``hops`` bottlenecks in series (docs/experiments.md harada-2hop/-10hop).

    Routers ``r1..r{k+1}`` in a chain joined by bottleneck links ``L1..Lk`` (``Li`` joins
    ``r<i>`` and ``r<i+1>``; rate ``rate``, delay ``delay``, scalars or one per hop). Main
    flow ``main`` from ``h1`` (at ``r1``) to ``h{2k+2}`` (at ``r{k+1}``) crosses every
    bottleneck; cross flow ``cross<i>`` from ``h{2i}`` (at ``r<i>``) to ``h{2i+1}``
    (at ``r<i+1>``) crosses only ``Li``. Every host has an access link
    (``access_rate``, ``access_delay``, default buffer). ``Li``'s buffer is ``buffer_bdp``
    x BDP (default 2.0) or ``buffer_pkts`` packets, with cross flow ``i`` (the one-hop path)
    as the BDP reference.

    Example (harada-2hop):
        >>> sc = parking_lot(2, "reno", "reno", delay="2ms")
        >>> r = sc.resolve()
        >>> r.flow("main").node_path
        ['h1', 'r1', 'r2', 'r3', 'h6']
        >>> r.flow("cross2").node_path, r.link("L2").buffer_pkts
        (['h4', 'r2', 'r3', 'h5'], 67)
    """
    if isinstance(hops, bool) or not isinstance(hops, int) or hops < 1:
        raise SpecError("hops", hops, "is not a positive integer number of hops")
    if hops > MAX_PARKING_LOT_HOPS:
        # Checked before anything is built (see dumbbell): hops + 1 flows, 3 x hops + 2 links.
        raise SpecError(
            "hops", hops, f"is more hops than a scenario holds (at most {MAX_PARKING_LOT_HOPS})"
        )
    k = hops
    cross = _per_flow("cross_cca", cross_cca, k, scalar_types=(str,))
    rates = _per_flow("rate", rate, k, scalar_types=(str, int, float))
    delays = _per_flow("delay", delay, k, scalar_types=(str, int, float))
    cparams = _per_flow("cross_params", cross_params, k, scalar_types=(Mapping,))
    cstarts = _per_flow("cross_starts", cross_starts, k, scalar_types=(str, int, float))
    for v in rates:
        _arg_check("rate", v, _check_rate)
    for v in delays:
        _arg_check("delay", v, _dur_arg("delay"))
    _arg_check("access_rate", access_rate, _check_rate)
    _arg_check("access_delay", access_delay, _dur_arg("delay"))
    _arg_check("duration", duration, _dur_arg("duration", positive=True))
    _check_tcp_arg(tcp)

    routers = [f"r{i}" for i in range(1, k + 2)]
    hosts = [f"h{i}" for i in range(1, 2 * k + 3)]
    links: list[dict[str, Any]] = [
        {
            "name": f"L{i}",
            "between": [routers[i - 1], routers[i]],
            "rate": rates[i - 1],
            "delay": delays[i - 1],
            "buffer": _buffer_entry(buffer_bdp, buffer_pkts, f"cross{i}"),
        }
        for i in range(1, k + 1)
    ]

    def access(a: str, b: str) -> dict[str, Any]:
        return {"between": [a, b], "rate": access_rate, "delay": access_delay}

    links.append(access("h1", "r1"))
    for i in range(1, k + 1):
        links.append(access(f"h{2 * i}", f"r{i}"))
        links.append(access(f"r{i + 1}", f"h{2 * i + 1}"))
    links.append(access(f"r{k + 1}", f"h{2 * k + 2}"))
    flows = [
        _flow_entry("main", "h1", f"h{2 * k + 2}", main_cca, main_params, main_start, None, None)
    ]
    flows += [
        _flow_entry(
            f"cross{i}",
            f"h{2 * i}",
            f"h{2 * i + 1}",
            cross[i - 1],
            cparams[i - 1],
            cstarts[i - 1],
            None,
            None,
        )
        for i in range(1, k + 1)
    ]
    _apply_start_jitter(flows, start_jitter)
    spec: dict[str, Any] = {
        "name": name,
        "duration": duration,
        "seed": seed,
        "sample_interval": sample_interval,
        "nodes": [*hosts, *routers],
        "links": links,
        "flows": flows,
    }
    if measure is not None:
        spec["measure"] = _measure_entry(measure)
    if tcp:
        spec["tcp"] = dict(tcp)
    return Scenario.from_dict(spec)
