"""Topology builders, registered once: each with its arguments (type, default, meaning), the
sweep's derived parameters it takes (``delay`` -> ``bottleneck_delay``, ...) and its docs.

Sweeps (``[base] builder = "..."``, grid keys), ``ccfair builders`` and docs/builders.md read
:data:`BUILDERS`; adding a builder is its function, its :class:`Builder` entry and a line in
:data:`BUILDERS` (docs/adding-a-builder.md).

Example:
    >>> list(BUILDERS)[:2]
    ['dumbbell', 'parking_lot']
    >>> get("dumbbell").aliases["alpha"]
    'buffer_bdp'
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ccfair.errors import SpecError, close_matches, show
from ccfair.spec.scenario import Scenario
from ccfair.spec.shapes import dumbbell, parking_lot
from ccfair.units import format_duration, parse_duration

__all__ = ["BUILDERS", "Argument", "Builder", "format_markdown", "format_table", "get"]


@dataclass(frozen=True)
class Argument:
    """One keyword argument of a builder: its name, type and default as the function
    declares them, and its meaning."""

    name: str
    kind: str
    default: str
    doc: str


#: Turns a sweep point's derived parameters (other than the aliases) into builder arguments:
#: ``(arguments so far, the point's derived values) -> arguments``.
GridArguments = Callable[[dict[str, Any], Mapping[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Builder:
    """A registered builder.

    Attributes:
        name: the value of ``[base] builder``.
        function: builds the :class:`~ccfair.spec.scenario.Scenario` from keyword arguments.
        summary: one line.
        topology: how nodes, links and flows are named (docs).
        docs: meaning of each argument (every parameter of ``function``).
        aliases: derived grid parameter -> the argument it sets (``alpha`` -> ``buffer_bdp``).
        derived: the other derived grid parameters it takes (``ccas``, ``n_flows``, ...).
        grid_arguments: how those become arguments (:data:`GridArguments`).
        unsupported: derived parameter -> what to do instead (``loss`` of a parking lot).
        example: a call, for the docs.
    """

    name: str
    function: Callable[..., Scenario]
    summary: str
    topology: str
    docs: Mapping[str, str]
    aliases: Mapping[str, str]
    derived: tuple[str, ...] = ()
    grid_arguments: GridArguments | None = None
    unsupported: Mapping[str, str] = field(default_factory=dict)
    example: str = ""

    def parameters(self) -> list[str]:
        """The function's argument names, in order."""
        return list(inspect.signature(self.function).parameters)

    def arguments(self) -> list[Argument]:
        """Every argument with its type, default and meaning."""
        out = []
        for p in inspect.signature(self.function).parameters.values():
            default = "required" if p.default is inspect.Parameter.empty else repr(p.default)
            out.append(Argument(p.name, str(p.annotation), default, self.docs.get(p.name, "")))
        return out

    def call(self, kwargs: dict[str, Any], prefix: str) -> Scenario:
        """Call the builder with arguments from a sweep file; any failure is a SpecError at
        ``<prefix><argument>`` (a wrong type reaches the builder as a TypeError or
        ValueError)."""
        try:
            return self.function(**kwargs)
        except SpecError as exc:
            raise SpecError(
                f"{prefix}{exc.path}", exc.value, exc.message, with_value=False
            ) from None
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
            raise SpecError(
                prefix.rstrip(".") or "base",
                None,
                f"does not fit {self.name}(): {type(exc).__name__}: {' '.join(str(exc).split())}",
                with_value=False,
            ) from None


def get(name: Any, field: str = "base.builder") -> Builder:
    """The builder called ``name``; an unknown name is a :class:`SpecError` at ``field``
    naming the closest builder.

    Example:
        >>> get("dumbell")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ccfair.errors.SpecError: base.builder: "dumbell" is not a builder; did you mean \
"dumbbell"? (builders: dumbbell, parking_lot...)
    """
    if isinstance(name, str) and name in BUILDERS:
        return BUILDERS[name]
    hint = close_matches(str(name), list(BUILDERS))
    more = f'; did you mean "{hint[0]}"?' if hint else ";"
    raise SpecError(
        field,
        name,
        f"{show(name)} is not a builder{more} (builders: {', '.join(BUILDERS)})",
        with_value=False,
    )


def taking(derived: str) -> list[str]:
    """The builders that take the derived grid parameter ``derived``.

    Example:
        >>> taking("rtt_ratio")
        ['dumbbell']
    """
    return [b.name for b in BUILDERS.values() if derived in b.derived or derived in b.aliases]


# --------------------------------------------------------------------------------------------
# dumbbell


def _dumbbell_grid(kwargs: dict[str, Any], grid: Mapping[str, Any]) -> dict[str, Any]:
    """A dumbbell's ``ccas``, ``n_flows``, ``per_cca`` and ``rtt_ratio``."""
    ccas = grid.get("ccas", kwargs.get("ccas", "cubic"))
    per = grid.get("per_cca")
    if per is not None and (isinstance(per, bool) or not isinstance(per, int) or per < 1):
        raise SpecError("grid.per_cca", per, "is not a positive integer")
    n = grid.get("n_flows")
    if isinstance(ccas, list):
        m = len(ccas)
        if m == 0:
            raise SpecError("grid.ccas", ccas, "is empty; give one algorithm per flow or group")
        if n is None:
            if per is not None:
                n = m * per
            elif "ccas" in grid:
                n = m
            else:
                n = kwargs.get("n_flows", m)
        elif per is not None and n != m * per:
            raise SpecError(
                "grid.n_flows", n, f"contradicts per_cca = {per} with {m} algorithms in ccas"
            )
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise SpecError("grid.n_flows", n, "is not a positive integer")
        if n % m:
            raise SpecError(
                "grid.ccas",
                ccas,
                f"has {m} entries, which do not divide n_flows = {n} into equal groups",
            )
        kwargs["ccas"] = [c for c in ccas for _ in range(n // m)]
    else:
        kwargs["ccas"] = ccas
        if per is not None:
            raise SpecError("grid.per_cca", per, "needs ccas to be a list of algorithms")
        if n is None:
            n = kwargs.get("n_flows", 2)
    kwargs["n_flows"] = n
    if "rtt_ratio" in grid:
        kwargs["access_delay"] = _rtt_spread(kwargs, grid["rtt_ratio"], n)
    return kwargs


def _rtt_spread(kwargs: Mapping[str, Any], ratio: Any, n: int) -> list[str]:
    """Sender access delays that spread base RTTs linearly from flow 1's RTT up to ``ratio``
    times it (the BDP reference, flow 1, keeps the shortest RTT)."""
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not ratio >= 1:
        raise SpecError("grid.rtt_ratio", ratio, "is not a ratio >= 1")

    def ns(key: str, default: str) -> int:
        value = kwargs.get(key, default)
        if isinstance(value, list):
            raise SpecError(
                f"base.{key}", value, "is a per-flow list; rtt_ratio needs one value for all"
            )
        out = parse_duration(value)
        if out is None:
            raise SpecError(f"base.{key}", value, "is not a duration")
        return out

    access = ns("access_delay", "1ms")
    rtt1 = 2 * (access + ns("bottleneck_delay", "18ms") + ns("receiver_delay", "1ms"))
    out = []
    for i in range(n):
        frac = i / (n - 1) if n > 1 else 0.0
        extra = round((ratio - 1) * rtt1 * frac / 2)
        out.append(format_duration(access + extra))
    return out


_QUEUE_DOC = (
    'the bottleneck\'s queue: a name ("droptail", the default, "netem", "codel", '
    '"fq_codel", "pie", "red") or a table of the name and the discipline\'s options '
    '({queue = "codel", ecn = true, target = "5ms"}; docs/spec.md, "Queue disciplines"); '
    "with a discipline and no buffer_bdp or buffer_pkts, the buffer is its Linux limit"
)

_COMMON_DOCS = {
    "start_jitter": "every flow starts at a seeded random offset in [0, start_jitter]",
    "tcp": "the [tcp] table (TCP options of every flow)",
    "testbed": "the testbed (linux-stock, ideal, mininet-netem, core-netem); default linux-stock",
    "kernel": "the hosts' Linux generation (6.18, 4.15, 4.13); default the testbed's",
    "duration": "simulated time of the run",
    "seed": "the scenario seed (random loss, start jitter, algorithms' randomness)",
    "sample_interval": "interval of the time series",
    "measure": "measurement window: (start, end) or {start = ..., end = ...}; "
    "default the whole run",
    "name": "the scenario's name",
}

DUMBBELL = Builder(
    name="dumbbell",
    function=dumbbell,
    summary="n senders -> switch s1 -> bottleneck -> switch s2 -> n receivers",
    topology="Senders h1..hn, switches s1, s2, receivers h{n+1}..h{2n}; flow flow<i> goes "
    "h<i> -> h<n+i>. Links in order: h<i>-s1 (access), bottleneck (s1-s2), s2-h<n+i> "
    "(access). Access links keep the default buffer of 1000 packets.",
    docs={
        "n_flows": "number of flows (and of sender/receiver pairs)",
        "ccas": "the flows' algorithms: one for all, or one per flow",
        "bottleneck_rate": "rate of the bottleneck link",
        "bottleneck_delay": "one-way delay of the bottleneck link",
        "buffer_bdp": "bottleneck buffer in BDPs of the reference flow (default 2.0 when "
        "buffer_pkts is not given)",
        "buffer_pkts": "bottleneck buffer in packets (instead of buffer_bdp)",
        "buffer_reference": "the flow whose path is the BDP reference",
        "bottleneck_loss": "random loss probability of the bottleneck link",
        "bottleneck_queue": _QUEUE_DOC,
        "access_rate": "rate of every access link",
        "access_delay": "one-way delay of the sender access links: one for all, or one per flow",
        "receiver_delay": "one-way delay of the receiver access links: one for all, or one "
        "per flow",
        "starts": "flow start times: one for all, or one per flow",
        "stops": "flow stop times (None: the end of the run): one for all, or one per flow",
        "sizes": "bytes each flow sends (None: unlimited): one for all, or one per flow",
        "cca_params": "algorithm parameters: one table for all flows, or one per flow",
        **_COMMON_DOCS,
    },
    aliases={
        "delay": "bottleneck_delay",
        "alpha": "buffer_bdp",
        "rate": "bottleneck_rate",
        "loss": "bottleneck_loss",
        "bottleneck_queue": "bottleneck_queue",
    },
    derived=("ccas", "n_flows", "per_cca", "rtt_ratio"),
    grid_arguments=_dumbbell_grid,
    example='dumbbell(2, ["reno", "bbr"], bottleneck_delay="2ms", buffer_bdp=2.0)',
)


# --------------------------------------------------------------------------------------------
# parking_lot


def _parking_lot_grid(kwargs: dict[str, Any], grid: Mapping[str, Any]) -> dict[str, Any]:
    """A parking lot's ``ccas``: ``[main_cca, cross_cca]`` or one algorithm for all."""
    if "ccas" in grid:
        ccas = grid["ccas"]
        if isinstance(ccas, str):
            kwargs["main_cca"], kwargs["cross_cca"] = ccas, ccas
        elif isinstance(ccas, list) and len(ccas) == 2 and all(isinstance(c, str) for c in ccas):
            kwargs["main_cca"], kwargs["cross_cca"] = ccas
        else:
            raise SpecError(
                "grid.ccas",
                ccas,
                "is not [main_cca, cross_cca] (or one algorithm for all) for parking_lot",
            )
    return kwargs


PARKING_LOT = Builder(
    name="parking_lot",
    function=parking_lot,
    summary="hops bottlenecks in series; one main flow across all, one cross flow per hop",
    topology="Routers r1..r{k+1}; bottleneck links L1..Lk (Li joins r<i>, r<i+1>) come "
    "first, then the access links; main flow main is h1 -> h{2k+2} across all k "
    "bottlenecks; cross flow cross<i> is h{2i} -> h{2i+1} across only Li, whose buffer is "
    "relative to the BDP of cross<i>.",
    docs={
        "hops": "number of bottleneck links in series",
        "main_cca": "algorithm of the main flow",
        "cross_cca": "algorithm of the cross flows: one for all, or one per hop",
        "rate": "rate of the bottleneck links: one for all, or one per hop",
        "delay": "one-way delay of the bottleneck links: one for all, or one per hop",
        "buffer_bdp": "buffer of L<i> in BDPs of cross<i> (default 2.0 when buffer_pkts is "
        "not given)",
        "buffer_pkts": "buffer of every bottleneck in packets (instead of buffer_bdp)",
        "bottleneck_queue": _QUEUE_DOC.replace("the bottleneck's", "every bottleneck's"),
        "access_rate": "rate of every access link",
        "access_delay": "one-way delay of every access link",
        "main_params": "algorithm parameters of the main flow",
        "cross_params": "algorithm parameters of the cross flows: one table for all, or one "
        "per hop",
        "main_start": "start time of the main flow",
        "cross_starts": "start times of the cross flows: one for all, or one per hop",
        **_COMMON_DOCS,
    },
    aliases={
        "delay": "delay",
        "alpha": "buffer_bdp",
        "rate": "rate",
        "bottleneck_queue": "bottleneck_queue",
    },
    derived=("ccas",),
    grid_arguments=_parking_lot_grid,
    unsupported={"loss": "set links.L1.loss etc. by path"},
    example='parking_lot(2, "bbr", "cubic", delay="18ms", buffer_bdp=2.0)',
)


#: The builders, one line each, in the order of ``ccfair builders``.
BUILDERS: dict[str, Builder] = {b.name: b for b in (DUMBBELL, PARKING_LOT)}


# --------------------------------------------------------------------------------------------
# Documentation: ``ccfair builders`` and docs/builders.md


def format_table(names: list[str] | None = None, width: int = 100) -> str:
    """The builders (or the ``names``) as text for terminals: each with its summary,
    topology, sweep parameters and a table of arguments.

    Example:
        >>> print(format_table(["parking_lot"]).splitlines()[0])
        parking_lot: hops bottlenecks in series; one main flow across all, one cross flow per hop
    """
    out = []
    for b in [get(n, "name") for n in names] if names else BUILDERS.values():
        out.append(f"{b.name}: {b.summary}")
        out += textwrap.wrap(b.topology, width, initial_indent="  ", subsequent_indent="  ")
        sweep = [f"{k} -> {v}" for k, v in b.aliases.items()] + list(b.derived)
        out += textwrap.wrap(
            f"sweep grid keys: {', '.join(sweep)}",
            width,
            initial_indent="  ",
            subsequent_indent="    ",
        )
        for a in b.arguments():
            out.append(f"  {a.name:<18} default {a.default}")
            out += textwrap.wrap(a.doc, width, initial_indent=" " * 6, subsequent_indent=" " * 6)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def format_markdown() -> str:
    """docs/builders.md: every builder with its arguments (``ccfair builders --markdown``)."""
    out = [
        "# Topology builders",
        "",
        "Generated by `ccfair builders --markdown` from the registry "
        "(`python/ccfair/spec/builders.py`); do not edit by hand. A sweep's "
        "`[base] builder = NAME` takes any of the builder's arguments; the derived grid keys "
        "(docs/experiments.md) set "
        "the arguments named here. How to add a builder: [adding-a-builder.md]"
        "(adding-a-builder.md).",
        "",
    ]
    for b in BUILDERS.values():
        out += [f"## `{b.name}`", "", f"{b.summary}.", "", b.topology, ""]
        if b.example:
            out += ["```python", b.example, "```", ""]
        keys = [f"`{k}` sets `{v}`" for k, v in b.aliases.items()]
        keys += [f"`{k}`" for k in b.derived]
        keys += [f"`{k}` is not taken: {why}" for k, why in b.unsupported.items()]
        out += [f"Derived sweep grid keys: {'; '.join(keys)}.", ""]
        out += ["| Argument | Type | Default | Meaning |", "|---|---|---|---|"]
        for a in b.arguments():
            kind = a.kind.replace("|", "\\|")
            out.append(f"| `{a.name}` | `{kind}` | `{a.default}` | {a.doc} |")
        out.append("")
    return "\n".join(out)
