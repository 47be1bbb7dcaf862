"""A link's queue: drop-tail, netem or one of Linux's queue disciplines (CoDel, fq_codel,
PIE, RED), and the discipline's ``qdisc`` table with its units.

The Rust core owns the disciplines' parameters, their defaults (Linux's) and their range
checks (``ccfair._core.qdiscs()``, ``normalize_qdisc``; crates/ccfair-sim/src/qdisc/params.rs).
The engine names a parameter with its unit (``target_ns``, ``memory_limit_bytes``); a spec
writes it without, with a unit as ccfair's specs write quantities elsewhere (``target =
"5ms"``, ``memory_limit = "32MiB"``, ``bandwidth = "50Mbit/s"``, ``quantum = 1514``). This
module maps one onto the other, both ways, from the core's metadata, and checks each value's
type before the core checks its range, so that every error names ``links[i].qdisc.<name>``
and quotes the value as written (docs/spec.md, "Queue disciplines").

Example:
    >>> to_engine("codel", {"target": "10ms", "ecn": True}, ("links", 2))["target_ns"]
    10000000
    >>> from_engine("codel", to_engine("codel", {"target": "10ms"}, ("links", 2)))["target"]
    '10ms'
    >>> label({"queue": "codel", "ecn": True})
    'codel+ecn'
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ccfair import _core
from ccfair.errors import SpecError, format_path, show
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
)

__all__ = [
    "DISCIPLINES",
    "LINUX_LIMIT_PKTS",
    "QUEUES",
    "QdiscParam",
    "check_links",
    "describe",
    "format_markdown",
    "from_engine",
    "label",
    "params",
    "split_queue_value",
    "to_engine",
]

#: Queue disciplines a link's ``queue`` may name (each with a ``qdisc`` table).
DISCIPLINES = ("codel", "fq_codel", "pie", "red")

#: Every value of a link's ``queue``: ``droptail`` (the default), ``netem`` (the buffer also
#: counts the packets in the delay line, docs/model.md "netem queues") and the disciplines.
QUEUES = ("droptail", "netem", *DISCIPLINES)

#: A discipline's packet limit when the link gives no buffer: Linux's defaults
#: (``sch->limit`` set by codel_init 1000, fq_codel_init 10240, pie_init 1000). RED has no
#: packet limit in Linux (tc requires a byte limit); ccfair's RED takes ``limit`` bytes, by
#: default the buffer x 1500 B, so its buffer defaults to a txqueuelen of 1000 packets.
LINUX_LIMIT_PKTS = {"codel": 1000, "fq_codel": 10240, "pie": 1000, "red": 1000}

#: The engine's name suffix for each unit of the core's metadata: ``target_ns`` is written
#: ``target``.
_SUFFIX = {"ns": "_ns", "B": "_bytes", "bit/s": "_bps", "packets": "_pkts", "1/16": "_16ths"}


@dataclass(frozen=True)
class QdiscParam:
    """One parameter of a discipline: the spec's name, the engine's, its unit and meaning.

    Attributes:
        name: as a spec writes it (``target``).
        engine: as the engine's ``RunSpec`` names it (``target_ns``).
        unit: the core's unit (``ns``, ``B``, ``bit/s``, ``packets``, ``queues``, ``1/16``,
            ``fraction`` or ``""`` for switches and choices).
        base: ``integer``, ``number``, ``boolean`` or ``choice``.
        nullable: whether ``null`` (the default: off, or derived) is a value.
        choices: the values of a choice.
        doc: the core's description (Linux's name and default).
        default: the engine's default value.
    """

    name: str
    engine: str
    unit: str
    base: str
    nullable: bool
    choices: tuple[str, ...]
    doc: str
    default: Any

    @property
    def kind(self) -> str:
        """How a spec writes it: ``duration``, ``size``, ``rate``, ``integer``, ``number``,
        ``boolean`` or ``choice``."""
        return {"ns": "duration", "B": "size", "bit/s": "rate"}.get(self.unit, self.base)

    def default_text(self) -> str:
        """The default as a spec would write it (docs, ``ccfair check``)."""
        if self.default is None:
            return "none"
        return _show_value(self.to_spec(self.default))

    def to_spec(self, value: Any) -> Any:
        """An engine value as a spec writes it (``5000000`` ns -> ``"5ms"``)."""
        if value is None or isinstance(value, bool):
            return value
        if self.kind == "duration":
            return format_duration(value)
        if self.kind == "size":
            return format_size(value)
        if self.kind == "rate":
            return format_rate(value)
        return value


def _spec_name(engine: str, unit: str) -> str:
    suffix = _SUFFIX.get(unit)
    if suffix and engine.endswith(suffix):
        return engine[: -len(suffix)]
    return engine


@functools.cache
def _metadata() -> dict[str, tuple[QdiscParam, ...]]:
    meta = json.loads(_core.qdiscs())
    out: dict[str, tuple[QdiscParam, ...]] = {}
    for queue, entry in meta.items():
        defaults = entry["defaults"]
        out[queue] = tuple(
            QdiscParam(
                name=_spec_name(p["name"], p["unit"]),
                engine=p["name"],
                unit=p["unit"],
                base=p["kind"]["base"],
                nullable=bool(p["kind"].get("nullable")),
                choices=tuple(p["kind"].get("choices", ())),
                doc=p["doc"],
                default=defaults.get(p["name"]),
            )
            for p in entry["params"]
        )
    return out


def params(queue: str) -> tuple[QdiscParam, ...]:
    """The parameters of discipline ``queue``, in the core's order.

    Example:
        >>> [p.name for p in params("codel")]
        ['target', 'interval', 'ecn', 'ce_threshold', 'mtu']
    """
    return _metadata()[queue]


def _show_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return show(value)


# --------------------------------------------------------------------------------------------
# Spec table -> engine table


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _quantity(
    parse: Callable[[Any], int | None], hint: str, what: str
) -> Callable[[QdiscParam, Any], int]:
    def convert(p: QdiscParam, value: Any) -> int:
        n = parse(value) if not isinstance(value, bool) else None
        if n is None:
            raise ValueError(f"is not a {what} ({hint})")
        if n < 0:
            raise ValueError(f"is negative; {p.name} must be >= 0")
        if n >= 2**64:
            raise ValueError(f"is too large a {what}")
        return n

    return convert


def _integer(p: QdiscParam, value: Any) -> int:
    if not _is_integer(value):
        unit = f" of {p.unit}" if p.unit and p.unit != "1/16" else ""
        raise ValueError(f"is not a whole number{unit} (an integer >= 0)")
    if value < 0:
        raise ValueError(f"is negative; {p.name} must be >= 0")
    if value >= 2**64:
        raise ValueError("is too large")
    return int(value)


def _number(p: QdiscParam, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("is not a number")
    number = finite_float(value)  # 10**400 is not a float: no OverflowError
    if number is None:
        raise ValueError("is not a finite number")
    return number


def _boolean(p: QdiscParam, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("is not true or false")
    return value


def _choice(p: QdiscParam, value: Any) -> str:
    if value not in p.choices:
        raise ValueError(f"is not one of {', '.join(map(show, p.choices))}")
    return str(value)


_CONVERT: dict[str, Callable[[QdiscParam, Any], Any]] = {
    "duration": _quantity(parse_duration, DURATION_HINT, "duration"),
    "size": _quantity(parse_size, SIZE_HINT, "size"),
    "rate": _quantity(parse_rate, RATE_HINT, "rate"),
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
    "choice": _choice,
}


def to_engine(queue: str, table: Mapping[str, Any] | None, loc: Sequence[str | int]) -> Any:
    """The engine's ``qdisc`` table of a link at ``loc`` whose ``queue`` is ``queue``, from
    the spec's table (``None``: every default), with Linux's defaults filled in by the core;
    ``None`` for drop-tail and netem. Raises :class:`SpecError` at ``<loc>.qdisc.<name>``
    quoting the value as written.

    Example:
        >>> to_engine("fq_codel", {"memory_limit": "4MiB"}, ("links", 0))["memory_limit_bytes"]
        4194304
        >>> to_engine("codel", {"target": -1}, ("links", 3))
        Traceback (most recent call last):
        ...
        ccfair.errors.SpecError: links[3].qdisc.target: -1 is negative; target must be >= 0
    """
    at = (*loc, "qdisc")
    if queue not in DISCIPLINES:
        if table is not None:
            raise SpecError(
                format_path(at),
                dict(table) if isinstance(table, Mapping) else table,
                f"is for a queue discipline, and this link's queue is {show(queue)}; set "
                f"queue to one of {', '.join(DISCIPLINES)}, or leave qdisc out",
            )
        return None
    if table is None:
        table = {}
    if not isinstance(table, Mapping):
        raise SpecError(
            format_path(at),
            table,
            f'is not a table of {queue} options (e.g. {{target = "5ms", ecn = true}})',
        )
    by_name = {p.name: p for p in params(queue)}
    engine: dict[str, Any] = {}
    for key, value in table.items():
        p = by_name.get(key) if isinstance(key, str) else None
        if p is None:
            raise SpecError(
                format_path((*at, str(key))),
                value,
                _unknown(queue, key, value, by_name),
                with_value=False,
            )
        if value is None and p.nullable:
            continue
        try:
            engine[p.engine] = _CONVERT[p.kind](p, value)
        except ValueError as exc:
            raise SpecError(format_path((*at, key)), value, str(exc)) from None
    try:
        return json.loads(_core.normalize_qdisc(queue, json.dumps(engine)))
    except SpecError as exc:
        raise _range_error(queue, exc.path, exc.message, table, at) from None


def _range_error(
    queue: str, engine_key: str, message: str, table: Mapping[str, Any], at: Sequence[str | int]
) -> SpecError:
    """The core's range error on ``engine_key`` as the spec names it."""
    p = next((q for q in params(queue) if q.engine == engine_key), None)
    if p is None:  # pragma: no cover - the core names a parameter of its table
        return SpecError(format_path(at), dict(table), message)
    for q in params(queue):
        message = re.sub(rf"\b{re.escape(q.engine)}\b", q.name, message)
    if table.get(p.name) is None:
        # A default the core derived from the link (RED's limit, thresholds, burst).
        return SpecError(
            format_path((*at, p.name)),
            None,
            f"(derived from the link) {message}",
            with_value=False,
        )
    return SpecError(
        format_path((*at, p.name)),
        table[p.name],
        f"is out of range: {_in_spec_units(p, message)}",
    )


def check_links(engine_spec: Mapping[str, Any], written: Callable[[int], Any]) -> None:
    """Checks of a discipline that need its link (RED's thresholds, computed as tc computes
    them from the buffer and the rate): the core's check of the whole engine spec, run only
    when a link has RED. ``written(i)`` is link ``i``'s ``qdisc`` table as the user wrote it.

    Example:
        >>> check_links({"links": [{"queue": "codel"}]}, lambda i: None)
    """
    if not any(link.get("queue") == "red" for link in engine_spec["links"]):
        return
    try:
        _core.estimate(json.dumps(engine_spec))
    except SpecError as exc:
        m = re.fullmatch(r"links\[(\d+)\]\.qdisc\.(\w+)", exc.path)
        if m is None:
            raise
        i = int(m.group(1))
        queue = engine_spec["links"][i]["queue"]
        table = written(i)
        table = table if isinstance(table, Mapping) else {}
        raise _range_error(queue, m.group(2), exc.message, table, ("links", i, "qdisc")) from None


def _unknown(queue: str, key: Any, value: Any, by_name: Mapping[str, QdiscParam]) -> str:
    names = list(by_name)
    engine = {p.engine: p.name for p in by_name.values()}
    if key in engine:
        hint = f"; write it as {show(engine[key])} with a unit"
    else:
        close = difflib.get_close_matches(str(key), names, n=1)
        hint = f"; did you mean {show(close[0])}?" if close else ""
    return (
        f"unknown {queue} option {show(key)} (value {show(value)}){hint} "
        f"(options: {', '.join(names)})"
    )


def _in_spec_units(p: QdiscParam, message: str) -> str:
    """The core's range message with the engine's number given its unit (``0 must be > 0``
    -> ``0 ns must be > 0``)."""
    unit = {"ns": "ns", "B": "B", "bit/s": "bit/s"}.get(p.unit)
    if unit is None:
        return message
    return re.sub(r"^(\d+)\b", rf"\1 {unit}", message)


# --------------------------------------------------------------------------------------------
# Engine table -> spec table, descriptions and labels


def from_engine(queue: str, engine: Mapping[str, Any]) -> dict[str, Any]:
    """The spec's form of a complete engine table (the normalised record's ``qdisc``):
    quantities with units, ``null`` values (off, or derived from the link) left out.

    Example:
        >>> from_engine("pie", to_engine("pie", None, ("links", 0)))["tupdate"]
        '15ms'
    """
    out: dict[str, Any] = {}
    for p in params(queue):
        value = engine.get(p.engine)
        if value is not None:
            out[p.name] = p.to_spec(value)
    return out


def describe(queue: str, engine: Mapping[str, Any] | None) -> str:
    """One line for ``ccfair check``: the queue and its parameters as a spec writes them.

    Example:
        >>> describe("codel", to_engine("codel", {"ecn": True}, ("links", 0)))
        'codel target=5ms interval=100ms ecn=true mtu=1514'
        >>> describe("droptail", None)
        'droptail'
    """
    if engine is None or queue not in DISCIPLINES:
        return queue
    items = [f"{k}={_plain(v)}" for k, v in from_engine(queue, engine).items()]
    return " ".join([queue, *items])


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def split_queue_value(value: Any, arg: str) -> tuple[str, dict[str, Any] | None]:
    """A builder's ``bottleneck_queue``: a queue name, or a table with ``queue`` and the
    discipline's options, as (queue, qdisc table or None).

    Example:
        >>> split_queue_value({"queue": "codel", "ecn": True}, "bottleneck_queue")
        ('codel', {'ecn': True})
        >>> split_queue_value("fq_codel", "bottleneck_queue")
        ('fq_codel', None)
    """
    if isinstance(value, str):
        _check_queue_name(value, arg)
        return value, None
    if isinstance(value, Mapping):
        if "queue" not in value:
            raise SpecError(
                arg,
                dict(value),
                f'names no queue; write {{queue = "fq_codel", ...}} (queues: {", ".join(QUEUES)})',
            )
        queue = value["queue"]
        _check_queue_name(queue, f"{arg}.queue")
        options = {k: v for k, v in value.items() if k != "queue"}
        return queue, options or None
    raise SpecError(
        arg,
        value,
        f"is not a queue: give a name ({', '.join(QUEUES)}) or a table such as "
        '{queue = "codel", ecn = true}',
    )


def _check_queue_name(value: Any, path: str) -> None:
    if not isinstance(value, str) or value not in QUEUES:
        hint = difflib.get_close_matches(str(value), QUEUES, n=1)
        more = f"; did you mean {show(hint[0])}?" if hint else ""
        raise SpecError(path, value, f"is not a queue{more} (queues: {', '.join(QUEUES)})")


def label(value: Any) -> str:
    """A readable label of a ``bottleneck_queue`` value for grid points, tables and figures:
    the queue, ``+ecn`` (or ``+noecn``) when the table sets ``ecn``, then the other options.

    Example:
        >>> label("fq_codel"), label({"queue": "fq_codel", "ecn": False})
        ('fq_codel', 'fq_codel+noecn')
        >>> label({"queue": "codel", "ecn": True, "target": "10ms"})
        'codel+ecn(target=10ms)'
    """
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    text = str(value.get("queue", "?"))
    ecn = value.get("ecn")
    if isinstance(ecn, bool):
        text += "+ecn" if ecn else "+noecn"
    rest = [f"{k}={_plain(v)}" for k, v in value.items() if k not in ("queue", "ecn")]
    if rest:
        text += f"({','.join(rest)})"
    return text


# --------------------------------------------------------------------------------------------
# Documentation: docs/spec.md, "Queue disciplines"

#: How each kind of option is written, for the tables of :func:`format_markdown`.
_KIND_TEXT = {
    "duration": "duration",
    "size": "size",
    "rate": "rate",
    "integer": "integer",
    "number": "number",
    "boolean": "true / false",
    "choice": "choice",
}

#: Marks around the generated tables in docs/spec.md.
MARKDOWN_BEGIN = "<!-- generated by ccfair.spec.queues.format_markdown(): do not edit -->"
MARKDOWN_END = "<!-- end of generated tables -->"


def format_markdown() -> str:
    """The options of every queue discipline as Markdown tables, from the core's metadata
    (docs/spec.md holds them between :data:`MARKDOWN_BEGIN` and :data:`MARKDOWN_END`; a
    test keeps them equal).

    Example:
        >>> print(format_markdown().splitlines()[2])
        #### `codel`
    """
    out = [MARKDOWN_BEGIN, ""]
    for queue in DISCIPLINES:
        out += [
            f"#### `{queue}`",
            "",
            "| Option | Type | Default | Meaning |",
            "|---|---|---|---|",
        ]
        for p in params(queue):
            kind = _KIND_TEXT[p.kind]
            if p.kind == "choice":
                kind = " or ".join(f"`{show(c)}`" for c in p.choices)
            elif p.kind == "integer" and p.unit:
                kind = f"integer ({p.unit})"
            elif p.kind == "number" and p.unit:
                kind = f"number ({p.unit})"
            default = "none" if p.default is None else f"`{p.default_text()}`"
            doc = p.doc.replace("|", "\\|")
            out.append(f"| `{p.name}` | {kind} | {default} | {doc} |")
        out.append("")
    out.append(MARKDOWN_END)
    return "\n".join(out) + "\n"
