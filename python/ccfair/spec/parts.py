"""The parts of a scenario and their checks: links, flows, buffers, losses, the measurement
window, and the field types every spec value goes through.

Quantities are stored as integers in base units (ns, bit/s, bytes) and serialised back to the
shortest exact string with a unit; every bad value is a :class:`~ccfair.errors.SpecError`
naming the field (direct construction too: ``Link(...)``). The scenario that holds them is
:class:`ccfair.spec.scenario.Scenario`; docs/spec.md documents the schema.

Example:
    >>> Link(between=["s1", "s2"], rate="50Mbit/s", delay="18ms", buffer=100).rate
    50000000
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, cast

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

from ccfair import backends
from ccfair.errors import show
from ccfair.limits import MAX_NAME_CHARS
from ccfair.spec.pydantic_errors import spec_error_of
from ccfair.spec.queues import DISCIPLINES, LINUX_LIMIT_PKTS, QUEUES
from ccfair.testbeds import check_kernel, check_testbed
from ccfair.units import (
    DURATION_HINT,
    RATE_HINT,
    SIZE_HINT,
    finite_float,
    format_duration,
    format_rate,
    format_size,
    parse_duration,
    parse_rate,
    parse_size,
    plain,
)

__all__ = [
    "DEFAULT_BUFFER_PKTS",
    "QUEUES",
    "Buffer",
    "Flow",
    "Link",
    "Loss",
    "Measure",
]

#: Buffer of a link that does not set one: Linux's default txqueuelen.
DEFAULT_BUFFER_PKTS = 1000
U32_MAX = 2**32 - 1
_U64_MAX = 2**64 - 1
_SEED_LIMIT = 2**63
#: Longest time in a spec, and longest link delay (crates/ccfair-sim/src/spec.rs MAX_TIME_NS,
#: MAX_DELAY_NS): times plus delays stay within the engine's 64-bit clock.
_MAX_TIME_NS = 2**62
_MAX_DELAY_NS = 2**40

# --------------------------------------------------------------------------------------------
# Field types. Quantities are stored as integers in base units (ns, bit/s, bytes) and
# serialised back to the shortest exact string with a unit.


def duration_type(what: str, *, positive: bool, most_ns: int = _MAX_TIME_NS) -> Any:
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


def check_rate(value: Any) -> int:
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


def _check_queue(value: str) -> str:
    if value not in QUEUES:
        raise ValueError(
            f"{show(value)} is not a queue; queues: droptail (a FIFO before the serialiser, "
            "the default), netem (the buffer also counts the packets in the delay line), "
            f"or a queue discipline of Linux's: {', '.join(DISCIPLINES)}"
        )
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_probability(value: Any) -> float:
    if not _is_number(value):
        raise ValueError(f"{show(value)} is not a number (a loss probability in [0, 1))")
    number = finite_float(value)  # 10**400 is not a float: no OverflowError
    if number is None or not 0.0 <= number < 1.0:
        raise ValueError(f"{show(value)} is not a loss probability in [0, 1)")
    return number


def _check_alpha(value: Any) -> float:
    if not _is_number(value):
        raise ValueError(f"{show(value)} is not a number (a multiple of the BDP)")
    number = finite_float(value)
    if number is None or not number > 0:
        raise ValueError(f"{show(value)} is not a positive BDP multiple; bdp (alpha) must be > 0")
    return number


def _check_packets(value: int) -> int:
    if value < 1:
        raise ValueError(f"{show(value)} is below one packet; a buffer holds at least 1 packet")
    if value > U32_MAX:
        raise ValueError(f"{show(value)} is too many packets (at most {U32_MAX})")
    return value


Rate = Annotated[int, BeforeValidator(check_rate), PlainSerializer(format_rate, return_type=str)]
Size = Annotated[int, BeforeValidator(_check_size), PlainSerializer(format_size)]
Name = Annotated[StrictStr, AfterValidator(_check_name)]
Backend = Annotated[StrictStr, AfterValidator(_check_backend)]
Seed = Annotated[StrictInt, AfterValidator(_check_seed)]
Probability = Annotated[float, BeforeValidator(_check_probability)]
Packets = Annotated[StrictInt, AfterValidator(_check_packets)]
Queue = Annotated[StrictStr, AfterValidator(_check_queue)]
TestbedName = Annotated[StrictStr, AfterValidator(check_testbed)]
KernelName = Annotated[StrictStr, AfterValidator(check_kernel)]
Alpha = Annotated[float, BeforeValidator(_check_alpha)]
Options = dict[StrictStr, Any]

DurationLike = str | int | float
RateLike = str | int | float
SizeLike = str | int


if TYPE_CHECKING:  # pydantic's metaclass, by name for type checkers only (private)
    from pydantic._internal._model_construction import ModelMetaclass as _ModelMeta
else:
    _ModelMeta = type(BaseModel)


class _SpecMeta(_ModelMeta):
    """Makes direct construction (``Link(...)``) raise :class:`SpecError`. Only calls of the
    class go through here; pydantic's nested validation does not."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = plain(args), plain(kwargs)  # numpy's numbers as Python's
        try:
            return super().__call__(*args, **kwargs)
        except ValidationError as exc:
            raise spec_error_of(exc, cast("type[BaseModel]", cls)) from None


class SpecModel(BaseModel, metaclass=_SpecMeta):
    """Base of the spec models: unknown keys are errors, and construction errors are
    :class:`SpecError` rather than pydantic's ``ValidationError``."""

    model_config = ConfigDict(extra="forbid", revalidate_instances="never")


class Measure(SpecModel):
    """Goodput measurement window ``[start, end)``; ``end`` defaults to the duration.

    Example:
        >>> Measure(start="5s").start, Measure(start="5s").end
        (5000000000, None)
    """

    start: duration_type("measure.start", positive=False) = 0  # type: ignore[valid-type]
    end: duration_type("measure.end", positive=False) | None = None  # type: ignore[valid-type]


class Buffer(SpecModel):
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


class Loss(SpecModel):
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


class Link(SpecModel):
    """A full-duplex link; ``rate``, ``delay``, ``buffer``, ``loss`` and ``queue`` apply per
    direction.

    Attributes hold base units: ``rate`` in bit/s, ``delay`` in ns. A link that gives no
    ``buffer`` gets Linux's: :data:`DEFAULT_BUFFER_PKTS` (a txqueuelen), or its queue
    discipline's own limit (:data:`ccfair.spec.queues.LINUX_LIMIT_PKTS`).

    Example:
        >>> Link(between=["s1", "s2"], rate="50Mbit/s", delay="18ms", buffer=100).rate
        50000000
    """

    name: Name | None = None
    between: Annotated[list[Name], Field(min_length=2, max_length=2)]
    rate: Rate
    delay: duration_type("delay", positive=False, most_ns=_MAX_DELAY_NS)  # type: ignore[valid-type]
    buffer: Buffer | None = None
    loss: Loss = Field(default_factory=Loss)
    #: The link's queue (:data:`QUEUES`, docs/spec.md): ``"droptail"``, ``"netem"`` or a
    #: queue discipline; absent: the scenario's testbed decides (``droptail`` on
    #: ``linux-stock``).
    queue: Queue | None = None
    #: The queue discipline's options as the spec writes them (``{target = "5ms"}``),
    #: checked and completed with Linux's defaults at resolution
    #: (:func:`ccfair.spec.queues.to_engine`).
    qdisc: Options | None = None

    @model_validator(mode="after")
    def _default_buffer(self) -> Link:
        if self.buffer is None:
            queue = self.queue or "droptail"
            self.buffer = Buffer(packets=LINUX_LIMIT_PKTS.get(queue, DEFAULT_BUFFER_PKTS))
        return self


class Flow(SpecModel):
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
    start: duration_type("start", positive=False) = 0  # type: ignore[valid-type]
    start_jitter: duration_type("start_jitter", positive=False) = 0  # type: ignore[valid-type]
    stop: duration_type("stop", positive=False) | None = None  # type: ignore[valid-type]
    size: Size | None = None
    path: Annotated[list[Name], Field(min_length=2)] | None = None
    tcp: Options = Field(default_factory=dict)
